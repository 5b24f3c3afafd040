//! x86-64 Mach-O relocations (`X86_64_RELOC_*`) as the ELF types with the
//! same field and meaning. Addends are implicit: the field holds them. A
//! PC-relative field counts from its end, 4 bytes on, so an external
//! fixup's ELF addend is the stored value minus 4 (`SIGNED_1/2/4` store it
//! already short of the immediate that follows the field, as ld64 and lld
//! read them).

use crate::macho_reloc::{MachOFixup, MachOMeaning, MachOTranslation};
use object::{elf, macho};

pub(crate) fn meaning(fixup: &MachOFixup) -> Result<MachOMeaning, String> {
    let r_type = macho::RelocationType(fixup.r_type);
    let pc = |elf_type: elf::RelocationType, locate_bias: i64| -> Result<MachOMeaning, String> {
        if !fixup.pc_relative || fixup.length != 2 {
            return Err(format!(
                "{} must be a PC-relative 4-byte field (r_pcrel {}, r_length {})",
                name(r_type),
                fixup.pc_relative,
                fixup.length
            ));
        }
        Ok(MachOMeaning::Fixup(MachOTranslation {
            elf_type: elf_type.0,
            stored: fixup.signed_field(),
            pc_offset: 4,
            locate_bias,
        }))
    };
    match r_type {
        macho::X86_64_RELOC_UNSIGNED => {
            let elf_type = match (fixup.pc_relative, fixup.length) {
                (false, 3) => elf::R_X86_64_64,
                (false, 2) => elf::R_X86_64_32,
                _ => {
                    return Err(format!(
                        "X86_64_RELOC_UNSIGNED must be an absolute 4- or 8-byte field (r_pcrel {}, r_length {})",
                        fixup.pc_relative, fixup.length
                    ));
                }
            };
            Ok(MachOMeaning::Fixup(MachOTranslation {
                elf_type: elf_type.0,
                stored: fixup.signed_field(),
                pc_offset: 0,
                locate_bias: 0,
            }))
        }
        macho::X86_64_RELOC_SIGNED => pc(elf::R_X86_64_PC32, 0),
        macho::X86_64_RELOC_SIGNED_1 => pc(elf::R_X86_64_PC32, 1),
        macho::X86_64_RELOC_SIGNED_2 => pc(elf::R_X86_64_PC32, 2),
        macho::X86_64_RELOC_SIGNED_4 => pc(elf::R_X86_64_PC32, 4),
        macho::X86_64_RELOC_BRANCH => pc(elf::R_X86_64_PLT32, 0),
        macho::X86_64_RELOC_GOT_LOAD => pc(elf::R_X86_64_REX_GOTPCRELX, 0),
        macho::X86_64_RELOC_GOT => pc(elf::R_X86_64_GOTPCREL, 0),
        // `movq _v@TLVP(%rip), %rdi`: the address of the variable's
        // descriptor, read like a GOT entry.
        macho::X86_64_RELOC_TLV => pc(elf::R_X86_64_GOTTPOFF, 0),
        macho::X86_64_RELOC_SUBTRACTOR if !fixup.pc_relative && fixup.length >= 2 => {
            Ok(MachOMeaning::Subtractor)
        }
        _ => Err(format!(
            "unsupported x86-64 Mach-O relocation {} (r_pcrel {}, r_length {})",
            name(r_type),
            fixup.pc_relative,
            fixup.length
        )),
    }
}

fn name(r_type: macho::RelocationType) -> String {
    macho::NAMES_X86_64_RELOC
        .name(r_type)
        .map_or_else(|| format!("type {}", r_type.0), str::to_owned)
}

/// The ELF type of a PC-relative data field of `size` bytes.
pub(crate) fn pc_relative_data(size: u8) -> Option<u32> {
    match size {
        4 => Some(elf::R_X86_64_PC32.0),
        8 => Some(elf::R_X86_64_PC64.0),
        _ => None,
    }
}
