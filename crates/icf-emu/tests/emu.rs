//! The emulation harness, end to end: programs built by the real tools for
//! all four targets, Mach-O ones loaded and run in unicorn, ELF ones run
//! natively and under qemu-aarch64. Needs clang-19, lld-19 and qemu-user
//! (`cargo xtask install-deps`); a missing tool fails the test, it is
//! never skipped.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use icf_emu::build::{Platform, build_program, compile, link, runtime_dir, scratch_dir};
use icf_emu::{Arch, Error, Limits, RunOutput, load, run_macho, run_macho_file, run_program};
use object::{Object, ObjectSymbol};

const SAMPLE_STDOUT: &str = "init = 7
add3(7) = 10
twice(7) = 14
square(7) = 49
negate(7) = -7
classify sum = 1452807
fib(20) = 6765
hex = 0xdeadbeef
";

const MACHO_TARGETS: [Platform; 2] = [Platform::MachoX86_64, Platform::MachoArm64];

/// Plain links give classic dyld info; `-fixup_chains` gives chained fixups.
const FIXUP_KINDS: [&[&str]; 2] = [&[], &["-fixup_chains"]];

fn source(name: &str) -> PathBuf {
    runtime_dir().join(name)
}

/// `[start, end)` of the function `name` in the linked image: from its
/// symbol to the next symbol in the same section (Mach-O symbols carry no
/// size).
fn function_range(image: &Path, name: &str) -> (u64, u64) {
    let data = std::fs::read(image).expect("reading the image");
    let file = object::File::parse(&*data).expect("parsing the image");
    let symbol = file
        .symbols()
        .find(|symbol| symbol.name() == Ok(name))
        .unwrap_or_else(|| panic!("{name} not in {}", image.display()));
    let start = symbol.address();
    let end = file
        .symbols()
        .filter(|other| other.section_index() == symbol.section_index())
        .map(|other| other.address())
        .filter(|&address| address > start)
        .min()
        .unwrap_or(start + 0x100);
    (start, end)
}

fn symbol_address(image: &Path, name: &str) -> u64 {
    function_range(image, name).0
}

#[test]
fn the_sample_prints_the_same_on_every_target() {
    let dir = scratch_dir("sample");
    let expected = RunOutput {
        exit_code: 42,
        stdout: SAMPLE_STDOUT.as_bytes().to_vec(),
        stderr: b"done\n".to_vec(),
    };
    let mut runs = 0;
    for platform in Platform::ALL {
        let kinds: &[&[&str]] = if platform.macho_arch().is_some() {
            &FIXUP_KINDS
        } else {
            &[&[]]
        };
        for link_args in kinds {
            let out = dir.join(format!("{}{}", platform.label(), link_args.join("")));
            std::fs::create_dir_all(&out).expect("creating the output directory");
            let program = build_program(&[source("sample.c")], platform, &out, &[], link_args);
            let output = run_program(&program, platform, &Limits::default())
                .unwrap_or_else(|error| panic!("{}: {error}", program.display()));
            assert_eq!(
                output,
                expected,
                "{} {link_args:?}: stdout {:?}",
                platform.label(),
                output.stdout_text()
            );
            runs += 1;
        }
    }
    assert_eq!(runs, 6);
}

#[test]
fn chained_fixups_are_decoded_into_addresses() {
    let dir = scratch_dir("chained");
    for platform in MACHO_TARGETS {
        for link_args in FIXUP_KINDS {
            let out = dir.join(format!("{}{}", platform.label(), link_args.join("")));
            std::fs::create_dir_all(&out).expect("creating the output directory");
            let program = build_program(&[source("sample.c")], platform, &out, &[], link_args);
            let data = std::fs::read(&program).expect("reading the program");
            let image = load(&data).unwrap_or_else(|error| panic!("{error}"));
            assert_eq!(Some(image.arch), platform.macho_arch());
            assert_eq!(image.entry, symbol_address(&program, "_main"));
            assert_eq!(image.initializers, vec![symbol_address(&program, "_init")]);

            // ops[] = {add3, twice, square, negate}: after loading, each slot
            // holds the function's address.
            let ops = symbol_address(&program, "_ops");
            let segment = image
                .segments
                .iter()
                .find(|segment| {
                    (segment.vmaddr..segment.vmaddr + segment.data.len() as u64).contains(&ops)
                })
                .expect("ops is in a segment");
            let at = (ops - segment.vmaddr) as usize;
            let file = object::File::parse(&*data).expect("parsing the program");
            let raw_segment = file
                .segments()
                .find(|raw| object::ObjectSegment::address(raw) == segment.vmaddr)
                .expect("the same segment in the file");
            let raw = object::ObjectSegment::data(&raw_segment).expect("segment data");
            for (slot, function) in ["_add3", "_twice", "_square", "_negate"]
                .into_iter()
                .enumerate()
            {
                let range = at + slot * 8..at + slot * 8 + 8;
                let loaded =
                    u64::from_le_bytes(segment.data[range.clone()].try_into().expect("8 bytes"));
                let stored = u64::from_le_bytes(raw[range].try_into().expect("8 bytes"));
                let address = symbol_address(&program, function);
                assert_eq!(
                    loaded,
                    address,
                    "{} {link_args:?}: ops[{slot}]",
                    platform.label()
                );
                if link_args.is_empty() {
                    // Classic dyld info: the file already holds the address.
                    assert_eq!(stored, address);
                } else {
                    // A chain entry: the platform plus the link to the next one.
                    assert_ne!(
                        stored,
                        address,
                        "{}: ops[{slot}] not chained",
                        platform.label()
                    );
                }
            }
        }
    }
}

#[test]
fn a_fault_is_an_error_naming_the_pc() {
    let dir = scratch_dir("fault");
    // (-DFAULT=n, the faulting address if the error names one, what it says)
    let cases: [(u32, Option<u64>, &str); 4] = [
        (1, Some(16), "write to unmapped memory"),
        (2, Some(0x40), "execution of unmapped memory"),
        (3, None, ""),
        (4, None, "write to read-only memory"),
    ];
    for platform in MACHO_TARGETS {
        for (fault, address, what) in cases {
            let out = dir.join(format!("{}-{fault}", platform.label()));
            std::fs::create_dir_all(&out).expect("creating the output directory");
            let define = format!("-DFAULT={fault}");
            let program = build_program(&[source("fault.c")], platform, &out, &[&define], &[]);
            let (start, end) = function_range(&program, "_crash");
            let started = Instant::now();
            let error =
                run_macho_file(&program, &Limits::default()).expect_err("the program faults");
            assert!(started.elapsed() < Duration::from_secs(10));
            let label = format!("{} FAULT={fault}: {error}", platform.label());
            eprintln!("{label}");
            let Error::Fault {
                pc,
                address: faulting_address,
                what: message,
            } = &error
            else {
                panic!("{label}: not a fault");
            };
            if fault == 2 {
                // A jump to nowhere: the PC is the bad platform itself.
                assert_eq!(*pc, 0x40, "{label}");
            } else {
                assert!(
                    (start..end).contains(pc),
                    "{label}: pc not in crash {start:#x}..{end:#x}"
                );
            }
            match fault {
                4 => {
                    // The address is the string literal, wherever __cstring is.
                    assert!(
                        faulting_address.is_some_and(|a| a > 0x1_0000_0000),
                        "{label}"
                    );
                }
                _ => assert_eq!(*faulting_address, address, "{label}"),
            }
            if fault == 3 {
                let trap = match platform.macho_arch() {
                    Some(Arch::Arm64) => "brk",
                    _ => "invalid instruction",
                };
                assert!(message.contains(trap), "{label}");
            } else {
                assert_eq!(message, what, "{label}");
            }
            assert!(error.to_string().contains(&format!("{pc:#x}")), "{label}");
        }
    }
    // The same programs die by a signal as ELF, natively and under qemu.
    for platform in [Platform::LinuxX86_64, Platform::LinuxAarch64] {
        for (fault, _, _) in cases {
            let out = dir.join(format!("{}-{fault}", platform.label()));
            std::fs::create_dir_all(&out).expect("creating the output directory");
            let define = format!("-DFAULT={fault}");
            let program = build_program(&[source("fault.c")], platform, &out, &[&define], &[]);
            match run_program(&program, platform, &Limits::default()) {
                Err(Error::Signal { signal, stdout, .. }) => {
                    assert!(
                        [4, 5, 11].contains(&signal),
                        "{} FAULT={fault}: signal {signal}",
                        platform.label()
                    );
                    assert_eq!(stdout, b"before\n");
                }
                other => panic!("{} FAULT={fault}: {other:?}", platform.label()),
            }
        }
    }
}

#[test]
fn an_infinite_loop_is_stopped_by_the_instruction_bound() {
    let dir = scratch_dir("loop-count");
    for platform in MACHO_TARGETS {
        let program = build_program(&[source("loop.c")], platform, &dir, &[], &[]);
        let (start, end) = function_range(&program, "_spin");
        let limits = Limits {
            max_instructions: 1_000_000,
            timeout: Duration::from_secs(60),
        };
        let started = Instant::now();
        let error = run_macho_file(&program, &limits).expect_err("the loop never ends");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{}",
            platform.label()
        );
        match error {
            Error::Limit { pc: Some(pc), .. } => {
                assert!(
                    (start..end).contains(&pc),
                    "{}: pc {pc:#x}",
                    platform.label()
                );
            }
            other => panic!("{}: {other:?}", platform.label()),
        }
    }
}

#[test]
fn an_infinite_loop_is_stopped_by_the_timeout() {
    let dir = scratch_dir("loop-time");
    let limits = Limits {
        max_instructions: u64::MAX,
        timeout: Duration::from_millis(300),
    };
    for platform in Platform::ALL {
        let program = build_program(&[source("loop.c")], platform, &dir, &[], &[]);
        let started = Instant::now();
        let error = run_program(&program, platform, &limits).expect_err("the loop never ends");
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(20),
            "{}: {elapsed:?}",
            platform.label()
        );
        match (platform.macho_arch(), error) {
            (Some(_), Error::Limit { pc: Some(_), .. }) | (None, Error::Limit { pc: None, .. }) => {
            }
            (_, other) => panic!("{}: {other:?}", platform.label()),
        }
    }
}

#[test]
fn an_import_is_refused_by_name() {
    let dir = scratch_dir("import");
    for platform in MACHO_TARGETS {
        let object = compile(&source("import.c"), platform, &dir, &[]);
        for link_args in FIXUP_KINDS {
            let program = dir.join(format!("import.{}{}", platform.label(), link_args.join("")));
            let mut args = vec!["-U", "_imported_thing"];
            args.extend_from_slice(link_args);
            link(platform, std::slice::from_ref(&object), &program, &args);
            let error = run_macho_file(&program, &Limits::default()).expect_err("it imports");
            assert_eq!(
                error,
                Error::Import {
                    symbol: "_imported_thing".to_owned()
                },
                "{} {link_args:?}",
                platform.label()
            );
        }
    }
}

#[test]
fn malformed_images_are_errors_not_panics() {
    let dir = scratch_dir("malformed");
    let platform = Platform::MachoArm64;
    let program = build_program(
        &[source("sample.c")],
        platform,
        &dir,
        &[],
        &["-fixup_chains"],
    );
    let data = std::fs::read(&program).expect("reading the program");
    assert!(run_macho(&data, &Limits::default()).is_ok());

    assert!(matches!(load(b""), Err(Error::Malformed(_))));
    assert!(matches!(
        load(b"\x7fELF not mach-o"),
        Err(Error::Malformed(_))
    ));
    assert!(matches!(load(&data[..100]), Err(Error::Malformed(_))));
    assert!(matches!(load(&data[..0x1000]), Err(Error::Malformed(_))));

    // An object file is Mach-O but not an executable.
    let object = compile(&source("sample.c"), platform, &dir, &[]);
    let object = std::fs::read(object).expect("reading the object");
    assert!(
        matches!(load(&object), Err(Error::Unsupported(message)) if message.contains("MH_EXECUTE"))
    );

    // An entry point outside the image.
    let mut bad_entry = data.clone();
    let main_command = find_load_command(&bad_entry, 0x8000_0028).expect("LC_MAIN");
    bad_entry[main_command + 8..main_command + 16].copy_from_slice(&0x7fff_0000u64.to_le_bytes());
    assert!(
        matches!(load(&bad_entry), Err(Error::Malformed(message)) if message.contains("entry point"))
    );

    // Every prefix and many single-byte corruptions: an error or an image,
    // never a panic.
    for len in (0..data.len()).step_by(7) {
        assert!(load(&data[..len]).is_err(), "prefix of {len} bytes loaded");
    }
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let header_and_commands = 0x1000.min(data.len());
    for _ in 0..5000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mut corrupted = data.clone();
        // Mostly the header and load commands, sometimes the fixups.
        let at = if state % 4 == 0 {
            (state >> 8) as usize % data.len()
        } else {
            (state >> 8) as usize % header_and_commands
        };
        corrupted[at] ^= (state >> 40) as u8 | 1;
        let _ = load(&corrupted);
    }
}

/// The file offset of the first load command with `cmd`.
fn find_load_command(data: &[u8], cmd: u32) -> Option<usize> {
    let read = |at: usize| Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?));
    let count = read(16)?;
    let mut at = 32;
    for _ in 0..count {
        if read(at)? == cmd {
            return Some(at);
        }
        at += read(at + 4)? as usize;
    }
    None
}

#[test]
fn armv8_1_instructions_that_clang_emits_for_the_m1_run() {
    let dir = scratch_dir("m1");
    let platform = Platform::MachoArm64;
    let program = build_program(&[source("m1.c")], platform, &dir, &[], &[]);
    let output = run_program(&program, platform, &Limits::default())
        .unwrap_or_else(|error| panic!("{}: {error}", program.display()));
    assert_eq!(output.stdout_text(), "5\n");
    assert_eq!(output.exit_code, 0);
}
