//! x86-64: what kept relocations say (see `crate::relocate`), writing a
//! field again, and the padding between functions.

use crate::relocate::{KeptReloc, write_data};
use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic};
use object::elf;

pub(super) fn kept(r_type: u32) -> KeptReloc {
    match elf::RelocationType(r_type) {
        elf::R_X86_64_64 => KeptReloc::Address { size: 8 },
        elf::R_X86_64_32 | elf::R_X86_64_32S => KeptReloc::Address { size: 4 },
        elf::R_X86_64_16 => KeptReloc::Address { size: 2 },
        elf::R_X86_64_8 => KeptReloc::Address { size: 1 },
        elf::R_X86_64_PC8
        | elf::R_X86_64_PC16
        | elf::R_X86_64_PC32
        | elf::R_X86_64_PLT32
        | elf::R_X86_64_PC64
        | elf::R_X86_64_GOTPCREL
        | elf::R_X86_64_GOTPC32
        | elf::R_X86_64_GOTPC64
        | elf::R_X86_64_GOTPCREL64 => KeptReloc::PcRelative,
        elf::R_X86_64_GOTPCRELX | elf::R_X86_64_REX_GOTPCRELX | elf::R_X86_64_CODE_4_GOTPCRELX => {
            KeptReloc::RelaxableGotLoad
        }
        elf::R_X86_64_GOT32 | elf::R_X86_64_GOT64 => KeptReloc::GotOffset,
        _ => KeptReloc::Other,
    }
}

pub(super) fn write(r_type: u32, field: &mut [u8], place: u64, value: u64) -> Result<(), String> {
    let delta = value.wrapping_sub(place) as i64;
    match elf::RelocationType(r_type) {
        elf::R_X86_64_64 => write_data(field, 8, value as i64, true),
        elf::R_X86_64_32 => write_data(field, 4, value as i64, false),
        elf::R_X86_64_32S => write_data(field, 4, value as i64, true),
        elf::R_X86_64_PC64 => write_data(field, 8, delta, true),
        elf::R_X86_64_PC8 => write_data(field, 1, delta, true),
        elf::R_X86_64_PC16 => write_data(field, 2, delta, true),
        elf::R_X86_64_PC32
        | elf::R_X86_64_PLT32
        | elf::R_X86_64_GOTPCREL
        | elf::R_X86_64_GOTPCRELX
        | elf::R_X86_64_REX_GOTPCRELX
        | elf::R_X86_64_CODE_4_GOTPCRELX => write_data(field, 4, delta, true),
        _ => Err(format!("icf does not write relocation type {r_type}")),
    }
}

/// What fills the gaps between functions: `int3`, one byte at a time, so
/// a decoder that runs past a function's end stops at the next one.
pub(super) const FILL: &[u8] = &[0xcc];

/// `nop`s of any length, `int3`, and zero bytes.
pub(super) fn is_padding(bytes: &[u8]) -> bool {
    if bytes.iter().all(|&b| b == 0 || b == 0xcc) {
        return true;
    }
    let mut decoder = Decoder::new(64, bytes, DecoderOptions::NONE);
    decoder
        .iter()
        .all(|i| !i.is_invalid() && matches!(i.mnemonic(), Mnemonic::Nop | Mnemonic::Int3))
        && {
            // The last instruction must end exactly at the end.
            let mut decoder = Decoder::new(64, bytes, DecoderOptions::NONE);
            let mut end = 0;
            for i in decoder.iter() {
                end = i.next_ip() as usize;
            }
            end == bytes.len()
        }
}

/// Whether the last instruction of `code`, decoded from its start, lets
/// control go on past it: [`EndWatch`] on a decode of its own, what the
/// tests hold the linked-code scan's answer to.
#[cfg(test)]
pub(super) fn runs_off_the_end(code: &[u8]) -> bool {
    let mut end = EndWatch::new(code, 0);
    let mut decoder = Decoder::new(64, code, DecoderOptions::NONE);
    for instruction in decoder.iter() {
        end.see(&instruction);
    }
    end.runs_off()
}

/// How a run of code ends, watched instruction by instruction (invalid
/// ones too) as it is decoded from its start: what [`runs_off_the_end`]
/// tells, without a decode of its own where the code is decoded anyway.
pub(super) struct EndWatch {
    /// Where the code is linked.
    address: u64,
    len: u64,
    /// Where the zero bytes a linker pads with begin: no code. The last
    /// instruction is the last that starts before them (it may end in
    /// zeros of its own).
    zeros: u64,
    /// The last instruction before them that is no `nop` (trailing `nop`s
    /// are padding it runs through).
    last: Option<Instruction>,
}

impl EndWatch {
    pub(super) fn new(code: &[u8], address: u64) -> EndWatch {
        let zeros = code
            .iter()
            .rposition(|&b| b != 0)
            .map_or(0, |last| last + 1);
        EndWatch {
            address,
            len: code.len() as u64,
            zeros: zeros as u64,
            last: None,
        }
    }

    /// The next instruction decoded.
    pub(super) fn see(&mut self, instruction: &Instruction) {
        if instruction.ip().wrapping_sub(self.address) >= self.zeros {
            return;
        }
        if instruction.is_invalid() || instruction.mnemonic() != Mnemonic::Nop {
            self.last = Some(*instruction);
        }
    }

    /// Whether the code's last instruction lets control go on past it.
    pub(super) fn runs_off(&self) -> bool {
        let Some(last) = &self.last else {
            return false;
        };
        if last.is_invalid() || last.next_ip().wrapping_sub(self.address) > self.len {
            // Undecodable, or cut short: assume it goes on.
            return true;
        }
        !matches!(
            last.flow_control(),
            FlowControl::Return
                | FlowControl::UnconditionalBranch
                | FlowControl::IndirectBranch
                | FlowControl::Interrupt
                | FlowControl::Exception
                | FlowControl::Call
                | FlowControl::IndirectCall
        ) && last.mnemonic() != Mnemonic::Hlt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_written_from_the_place_and_checked() {
        let mut field = [0u8; 4];
        write(elf::R_X86_64_PLT32.0, &mut field, 0x1001, 0x1000 - 4).expect("fits");
        assert_eq!(i32::from_le_bytes(field), -5);
        assert!(write(elf::R_X86_64_32.0, &mut field, 0, 1 << 33).is_err());
        let mut short = [0u8; 1];
        assert!(write(elf::R_X86_64_PC8.0, &mut short, 0, 200).is_err());
    }

    #[test]
    fn a_function_ending_in_a_conditional_jump_runs_off_its_end() {
        assert!(!runs_off_the_end(&[0x48, 0x89, 0xf8, 0xc3])); // mov; ret
        assert!(!runs_off_the_end(&[0xeb, 0xfe])); // jmp .
        assert!(!runs_off_the_end(&[0x0f, 0x0b])); // ud2
        assert!(!runs_off_the_end(&[0xe8, 0, 0, 0, 0])); // call (of a function that never returns)
        assert!(runs_off_the_end(&[0x74, 0x02])); // je
        assert!(runs_off_the_end(&[0x83, 0xc7, 0x01])); // add $1, %edi
        assert!(!runs_off_the_end(&[0xe9, 0, 0, 0, 0, 0x90, 0x90])); // jmp; nop; nop
        assert!(runs_off_the_end(&[0x74, 0x02, 0x90])); // je; nop
        assert!(!runs_off_the_end(&[0xc3, 0x90, 0, 0, 0, 0])); // ret; nop; zeros
    }

    #[test]
    fn padding_is_nops_traps_and_zeros() {
        assert!(is_padding(&[
            0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0x90, 0xcc
        ]));
        assert!(is_padding(&[0x0f, 0x1f, 0x80, 0, 0, 0, 0]));
        assert!(!is_padding(&[0x0f, 0x1f, 0x80, 0, 0])); // cut short
        assert!(!is_padding(&[0xc3]));
    }
}
