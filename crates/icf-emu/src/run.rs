//! Running a loaded image under unicorn, as a Darwin process would run it
//! with dyld having nothing to do: initializers first, then `main`, which
//! returns to a sentinel page so its return value becomes the exit code.
//!
//! System calls are the Darwin BSD ones the runtime (`fixtures/emu/rt.c`)
//! makes: `write` (4) to fd 1 or 2, captured, and `exit` (1). On x86_64 they
//! come through `syscall` with `rax = 0x2000000 | n` and arguments in rdi,
//! rsi, rdx; on arm64 through `svc #0x80` with `x16 = n` and arguments in
//! x0..x2. Results go back in rax / x0 with the carry flag clear (success).
//! Anything else (another system call, another `svc`, a trap, an access to
//! unmapped or protected memory, an invalid instruction) stops the run with
//! an [`Error::Fault`] naming the PC.
//!
//! Each entry (an initializer or `main`) runs for at most
//! [`Limits::max_instructions`] instructions and [`Limits::timeout`], so a
//! program that loops forever ends in an [`Error::Limit`] instead of hanging
//! the test.
//!
//! Memory: the image's segments with their `initprot` permissions, an
//! 8 MiB stack below `STACK_TOP` and the sentinel page, all far above where
//! `ld64.lld` places images (0x1_0000_0000); `__PAGEZERO` stays unmapped, so
//! a null pointer dereference faults.

use std::path::Path;
use std::time::Duration;

use unicorn_engine::unicorn_const::{HookType, MemType, Mode, Permission, uc_error};
use unicorn_engine::{InsnSysX86, RegisterARM64, RegisterX86, Unicorn};

use crate::loader::{self, Image};
use crate::{Arch, Error, RunOutput};

/// Bounds on one run (each initializer and `main` separately).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Instructions executed before the run is stopped.
    pub max_instructions: u64,
    /// Wall-clock time before the run is stopped.
    pub timeout: Duration,
}

impl Default for Limits {
    /// 100 million instructions or 30 seconds: far more than a test program
    /// needs, little enough that a loop fails the test quickly.
    fn default() -> Limits {
        Limits {
            max_instructions: 100_000_000,
            timeout: Duration::from_secs(30),
        }
    }
}

const PAGE: u64 = 0x1000;
const STACK_TOP: u64 = 0x7ff0_0000_0000;
const STACK_SIZE: u64 = 8 << 20;
/// Where `main` and the initializers return to; the run stops on reaching it.
const SENTINEL: u64 = 0x7ff0_1000_0000;
/// The most a program may write to stdout and stderr together.
const MAX_OUTPUT: usize = 64 << 20;

/// Darwin's syscall class for BSD calls, in bits 24.. of rax on x86_64.
const SYSCALL_CLASS_UNIX: u64 = 2;
const SYS_EXIT: u64 = 1;
const SYS_WRITE: u64 = 4;
/// `svc #0x80`.
const SVC_0X80: u32 = 0xd400_1001;
/// unicorn's (QEMU's) exception number for an AArch64 `svc`.
const EXCP_SWI: u32 = 2;

/// Reads the Mach-O executable at `path` and runs it.
pub fn run_macho_file(path: &Path, limits: &Limits) -> Result<RunOutput, Error> {
    let data = std::fs::read(path).map_err(|error| Error::Io {
        path: path.to_owned(),
        message: error.to_string(),
    })?;
    run_macho(&data, limits)
}

/// Loads the Mach-O executable in `data` and runs it.
pub fn run_macho(data: &[u8], limits: &Limits) -> Result<RunOutput, Error> {
    run_image(&loader::load(data)?, limits)
}

/// What the emulated process has done so far, shared with the hooks.
#[derive(Debug, Default)]
struct Process {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// The value passed to `exit`, once it has been called.
    exit: Option<u64>,
    /// Why the run must stop, found by a hook.
    error: Option<Error>,
    /// The last invalid memory access a hook saw: (kind, pc, address).
    bad_access: Option<(MemType, u64, u64)>,
}

type Emu<'a> = Unicorn<'a, Process>;

/// Runs `image`'s initializers and then its `main`.
pub fn run_image(image: &Image, limits: &Limits) -> Result<RunOutput, Error> {
    let mut emu = new_emulator(image.arch)?;
    map_image(&mut emu, image)?;
    install_hooks(&mut emu, image.arch)?;
    for &initializer in &image.initializers {
        if let Some(output) = run_entry(&mut emu, image.arch, initializer, limits)? {
            return Ok(output);
        }
    }
    let output = run_entry(&mut emu, image.arch, image.entry, limits)?;
    // `main` returned: its return value is the exit status.
    let status = match output {
        Some(output) => return Ok(output),
        None => match image.arch {
            Arch::X86_64 => reg(&emu, RegisterX86::RAX)?,
            Arch::Arm64 => reg(&emu, RegisterARM64::X0)?,
        },
    };
    let process = emu.get_data_mut();
    Ok(RunOutput {
        exit_code: (status & 0xff) as i32,
        stdout: std::mem::take(&mut process.stdout),
        stderr: std::mem::take(&mut process.stderr),
    })
}

fn emulator_error(what: &str) -> impl Fn(uc_error) -> Error + '_ {
    move |error| Error::Emulator(format!("{what}: {error:?}"))
}

fn new_emulator<'a>(arch: Arch) -> Result<Emu<'a>, Error> {
    let emu = match arch {
        Arch::X86_64 => Unicorn::new_with_data(
            unicorn_engine::unicorn_const::Arch::X86,
            Mode::MODE_64,
            Process::default(),
        ),
        Arch::Arm64 => Unicorn::new_with_data(
            unicorn_engine::unicorn_const::Arch::ARM64,
            Mode::ARM,
            Process::default(),
        ),
    }
    .map_err(emulator_error("opening the engine"))?;
    if arch == Arch::Arm64 {
        set_max_arm64_cpu(&emu)?;
    }
    Ok(emu)
}

unsafe extern "C" {
    /// `uc_err uc_ctl(uc_engine *uc, uc_control_type control, ...)`; the
    /// 2.0.1 Rust bindings do not wrap it.
    fn uc_ctl(uc: *mut std::ffi::c_void, control: u32, ...) -> u32;
}

/// Selects QEMU's "max" AArch64 CPU (ARMv8.0 to v8.4 features) instead of
/// unicorn's default Cortex-A72 (v8.0): clang's `arm64-apple-macos` target
/// compiles for the Apple M1 and may use the later instructions.
fn set_max_arm64_cpu(emu: &Emu<'_>) -> Result<(), Error> {
    // UC_CTL_WRITE(UC_CTL_CPU_MODEL, 1): type 7, one argument, write.
    const UC_CTL_CPU_MODEL_WRITE: u32 = 7 | (1 << 26) | (1 << 30);
    const UC_CPU_ARM64_MAX: std::ffi::c_int = 3;
    // SAFETY: the handle is the live engine `emu` owns; the control takes
    // one int argument and is allowed right after uc_open, before any other
    // call, which is where this runs.
    let result = unsafe { uc_ctl(emu.get_handle(), UC_CTL_CPU_MODEL_WRITE, UC_CPU_ARM64_MAX) };
    if result != 0 {
        return Err(Error::Emulator(format!(
            "selecting the max AArch64 CPU: error {result}"
        )));
    }
    Ok(())
}

fn map_image(emu: &mut Emu<'_>, image: &Image) -> Result<(), Error> {
    let reserved = [
        (STACK_TOP - STACK_SIZE, STACK_TOP, "the stack"),
        (SENTINEL, SENTINEL + PAGE, "the return sentinel"),
    ];
    for segment in &image.segments {
        let start = segment.vmaddr & !(PAGE - 1);
        let end = (segment.vmaddr + segment.data.len() as u64)
            .checked_next_multiple_of(PAGE)
            .ok_or_else(|| Error::Malformed(format!("segment {} wraps", segment.name)))?;
        if let Some((_, _, what)) = reserved
            .iter()
            .find(|(low, high, _)| start < *high && *low < end)
        {
            return Err(Error::Unsupported(format!(
                "segment {} at {start:#x}..{end:#x} overlaps {what}",
                segment.name
            )));
        }
        let size = usize::try_from(end - start)
            .map_err(|_| Error::Malformed(format!("segment {} is too large", segment.name)))?;
        let context = format!("mapping segment {} at {start:#x}", segment.name);
        emu.mem_map(start, size, Permission::ALL)
            .map_err(|error| Error::Emulator(format!("{context}: {error:?}")))?;
        emu.mem_write(segment.vmaddr, &segment.data)
            .map_err(|error| Error::Emulator(format!("{context}: {error:?}")))?;
        let prot = Permission::from_bits_truncate(segment.prot) & Permission::ALL;
        emu.mem_protect(start, size, prot)
            .map_err(|error| Error::Emulator(format!("{context}: {error:?}")))?;
    }
    emu.mem_map(
        STACK_TOP - STACK_SIZE,
        STACK_SIZE as usize,
        Permission::READ | Permission::WRITE,
    )
    .map_err(emulator_error("mapping the stack"))?;
    // The sentinel holds traps, in case execution ever runs into it.
    let trap: &[u8] = match image.arch {
        Arch::X86_64 => &[0xcc],                  // int3
        Arch::Arm64 => &[0x00, 0x00, 0x20, 0xd4], // brk #0
    };
    emu.mem_map(SENTINEL, PAGE as usize, Permission::ALL)
        .map_err(emulator_error("mapping the sentinel"))?;
    emu.mem_write(SENTINEL, &trap.repeat((PAGE as usize) / trap.len()))
        .map_err(emulator_error("writing the sentinel"))?;
    emu.mem_protect(SENTINEL, PAGE as usize, Permission::READ | Permission::EXEC)
        .map_err(emulator_error("protecting the sentinel"))
}

fn install_hooks(emu: &mut Emu<'_>, arch: Arch) -> Result<(), Error> {
    emu.add_mem_hook(HookType::MEM_INVALID, 1, 0, |emu, kind, address, _, _| {
        let pc = emu.pc_read().unwrap_or(0);
        emu.get_data_mut().bad_access = Some((kind, pc, address));
        false
    })
    .map_err(emulator_error("adding the memory hook"))?;
    match arch {
        Arch::X86_64 => {
            emu.add_insn_sys_hook(InsnSysX86::SYSCALL, 1, 0, x86_64_syscall)
                .map_err(emulator_error("adding the syscall hook"))?;
            emu.add_intr_hook(|emu, number| {
                let pc = emu.pc_read().unwrap_or(0);
                stop(
                    emu,
                    fault(pc, format!("interrupt {number} (int3, int or a trap)")),
                );
            })
            .map_err(emulator_error("adding the interrupt hook"))?;
        }
        Arch::Arm64 => {
            emu.add_intr_hook(arm64_exception)
                .map_err(emulator_error("adding the interrupt hook"))?;
        }
    }
    Ok(())
}

fn fault(pc: u64, what: String) -> Error {
    Error::Fault {
        pc,
        address: None,
        what,
    }
}

/// Records why the run ends (the first reason wins) and stops the engine.
fn stop(emu: &mut Emu<'_>, error: Error) {
    let process = emu.get_data_mut();
    if process.error.is_none() {
        process.error = Some(error);
    }
    // Cannot fail for a running engine; if it did, the error is already kept.
    let _ = emu.emu_stop();
}

fn x86_64_syscall(emu: &mut Emu<'_>) {
    let pc = emu.pc_read().unwrap_or(0);
    let read = |emu: &Emu<'_>, register| emu.reg_read(register).unwrap_or(0);
    let rax = read(emu, RegisterX86::RAX);
    let args = [
        read(emu, RegisterX86::RDI),
        read(emu, RegisterX86::RSI),
        read(emu, RegisterX86::RDX),
    ];
    if rax >> 24 != SYSCALL_CLASS_UNIX {
        stop(
            emu,
            fault(pc, format!("syscall {rax:#x} outside the BSD class")),
        );
        return;
    }
    if let Some(result) = syscall(emu, pc, rax & 0xff_ffff, args) {
        let rflags = read(emu, RegisterX86::RFLAGS);
        let written = emu
            .reg_write(RegisterX86::RAX, result)
            .and_then(|()| emu.reg_write(RegisterX86::RFLAGS, rflags & !1));
        if let Err(error) = written {
            stop(
                emu,
                Error::Emulator(format!("writing the syscall result: {error:?}")),
            );
        }
    }
}

fn arm64_exception(emu: &mut Emu<'_>, number: u32) {
    let pc = emu.pc_read().unwrap_or(0);
    // An svc is taken after the instruction (pc is the next one); brk and
    // undefined instructions at it.
    let instruction_pc = if number == EXCP_SWI {
        pc.wrapping_sub(4)
    } else {
        pc
    };
    let mut instruction = [0u8; 4];
    let is_svc_0x80 = number == EXCP_SWI
        && emu.mem_read(instruction_pc, &mut instruction).is_ok()
        && u32::from_le_bytes(instruction) == SVC_0X80;
    if !is_svc_0x80 {
        let what = match number {
            EXCP_SWI => format!(
                "svc {:#010x} (only svc #0x80 is a Darwin system call)",
                u32::from_le_bytes(instruction)
            ),
            7 => "brk (a trap, e.g. __builtin_trap)".to_owned(),
            1 => "undefined instruction".to_owned(),
            other => format!("exception {other}"),
        };
        stop(emu, fault(instruction_pc, what));
        return;
    }
    let read = |emu: &Emu<'_>, register| emu.reg_read(register).unwrap_or(0);
    let number = read(emu, RegisterARM64::X16);
    let args = [
        read(emu, RegisterARM64::X0),
        read(emu, RegisterARM64::X1),
        read(emu, RegisterARM64::X2),
    ];
    if let Some(result) = syscall(emu, instruction_pc, number, args) {
        // Success: x0 = result, carry (NZCV bit 29) clear.
        let nzcv = read(emu, RegisterARM64::NZCV);
        let written = emu
            .reg_write(RegisterARM64::X0, result)
            .and_then(|()| emu.reg_write(RegisterARM64::NZCV, nzcv & !(1 << 29)));
        if let Err(error) = written {
            stop(
                emu,
                Error::Emulator(format!("writing the syscall result: {error:?}")),
            );
        }
    }
}

/// Performs Darwin system call `number`; returns its result, or `None`
/// when the run stops (exit, or an error recorded).
fn syscall(emu: &mut Emu<'_>, pc: u64, number: u64, [fd, buf, len]: [u64; 3]) -> Option<u64> {
    if emu.get_data().exit.is_some() {
        // The engine stops only at the end of the block: ignore anything
        // the program still does after exit.
        return None;
    }
    match number {
        SYS_EXIT => {
            emu.get_data_mut().exit = Some(fd);
            let _ = emu.emu_stop();
            None
        }
        SYS_WRITE => {
            let process = emu.get_data();
            let written = process.stdout.len() + process.stderr.len();
            let Some(len) = usize::try_from(len)
                .ok()
                .filter(|len| written.saturating_add(*len) <= MAX_OUTPUT)
            else {
                stop(
                    emu,
                    fault(
                        pc,
                        format!("write of {len:#x} bytes: over {MAX_OUTPUT} bytes of output"),
                    ),
                );
                return None;
            };
            let mut bytes = vec![0u8; len];
            if emu.mem_read(buf, &mut bytes).is_err() {
                stop(
                    emu,
                    Error::Fault {
                        pc,
                        address: Some(buf),
                        what: format!("write of {len} bytes from unreadable memory"),
                    },
                );
                return None;
            }
            let process = emu.get_data_mut();
            match fd {
                1 => process.stdout.extend_from_slice(&bytes),
                2 => process.stderr.extend_from_slice(&bytes),
                other => {
                    stop(emu, fault(pc, format!("write to file descriptor {other}")));
                    return None;
                }
            }
            Some(len as u64)
        }
        other => {
            stop(emu, fault(pc, format!("unsupported system call {other}")));
            None
        }
    }
}

fn reg<R: Into<i32>>(emu: &Emu<'_>, register: R) -> Result<u64, Error> {
    emu.reg_read(register)
        .map_err(emulator_error("reading a register"))
}

/// Calls the function at `entry` with a fresh stack and the sentinel as
/// return address. `Ok(None)`: it returned. `Ok(Some(output))`: the program
/// called `exit`.
fn run_entry(
    emu: &mut Emu<'_>,
    arch: Arch,
    entry: u64,
    limits: &Limits,
) -> Result<Option<RunOutput>, Error> {
    // argv, envp and the "apple" strings: each an empty, NULL-ended array.
    let vectors = STACK_TOP - 64;
    emu.mem_write(vectors, &[0u8; 64])
        .map_err(emulator_error("writing the stack"))?;
    let set = |emu: &mut Emu<'_>, pairs: &[(i32, u64)]| {
        pairs.iter().try_for_each(|&(register, value)| {
            emu.reg_write(register, value)
                .map_err(emulator_error("setting up registers"))
        })
    };
    match arch {
        Arch::X86_64 => {
            // At a function's first instruction rsp + 8 is 16-byte aligned.
            let rsp = vectors - 8;
            emu.mem_write(rsp, &SENTINEL.to_le_bytes())
                .map_err(emulator_error("writing the return address"))?;
            set(
                emu,
                &[
                    (RegisterX86::RSP as i32, rsp),
                    (RegisterX86::RBP as i32, 0),
                    (RegisterX86::RDI as i32, 0),
                    (RegisterX86::RSI as i32, vectors),
                    (RegisterX86::RDX as i32, vectors + 8),
                    (RegisterX86::RCX as i32, vectors + 16),
                ],
            )?;
        }
        Arch::Arm64 => set(
            emu,
            &[
                (RegisterARM64::SP as i32, vectors),
                (RegisterARM64::X29 as i32, 0),
                (RegisterARM64::X30 as i32, SENTINEL),
                (RegisterARM64::X0 as i32, 0),
                (RegisterARM64::X1 as i32, vectors),
                (RegisterARM64::X2 as i32, vectors + 8),
                (RegisterARM64::X3 as i32, vectors + 16),
            ],
        )?,
    }

    let timeout = u64::try_from(limits.timeout.as_micros()).unwrap_or(u64::MAX);
    let count = usize::try_from(limits.max_instructions).unwrap_or(usize::MAX);
    let clock = std::time::Instant::now();
    let started = emu.emu_start(entry, SENTINEL, timeout, count);
    let elapsed = clock.elapsed();
    let pc = emu.pc_read().unwrap_or(0);
    let process = emu.get_data_mut();
    if let Some(error) = process.error.take() {
        return Err(error);
    }
    if let Some(status) = process.exit {
        return Ok(Some(RunOutput {
            exit_code: (status & 0xff) as i32,
            stdout: std::mem::take(&mut process.stdout),
            stderr: std::mem::take(&mut process.stderr),
        }));
    }
    if let Err(error) = started {
        return Err(match process.bad_access.take() {
            Some((kind, access_pc, address)) => Error::Fault {
                pc: access_pc,
                address: Some(address),
                what: access_name(kind).to_owned(),
            },
            None => fault(pc, stop_reason(error)),
        });
    }
    if pc == SENTINEL {
        return Ok(None);
    }
    // Which limit stopped it tells a loop (always the instruction count)
    // from a starved machine (the clock).
    let what = if elapsed >= limits.timeout {
        format!(
            "not finished after {:?} (the wall-clock limit; {} instructions allowed)",
            elapsed, limits.max_instructions
        )
    } else {
        format!(
            "not finished after {} instructions (the instruction limit, reached in {:?})",
            limits.max_instructions, elapsed
        )
    };
    Err(Error::Limit { pc: Some(pc), what })
}

/// What an error from `uc_emu_start` without a recorded bad access means.
fn stop_reason(error: uc_error) -> String {
    match error {
        uc_error::INSN_INVALID => {
            "invalid instruction (ud2 or __builtin_trap, or bytes that are not code)".to_owned()
        }
        uc_error::EXCEPTION => "unhandled CPU exception".to_owned(),
        other => format!("emulation stopped with {other:?}"),
    }
}

fn access_name(kind: MemType) -> &'static str {
    match kind {
        MemType::READ_UNMAPPED => "read of unmapped memory",
        MemType::WRITE_UNMAPPED => "write to unmapped memory",
        MemType::FETCH_UNMAPPED => "execution of unmapped memory",
        MemType::READ_PROT => "read of unreadable memory",
        MemType::WRITE_PROT => "write to read-only memory",
        MemType::FETCH_PROT => "execution of non-executable memory",
        MemType::READ | MemType::WRITE | MemType::FETCH | MemType::READ_AFTER => "memory access",
    }
}
