//! `cargo run --release -p icf-verify --example verify -- PLAIN FOLDED [all] [odr]`:
//! the library alone, timed, for measuring large binaries without building
//! the whole `icf` command. Assumes both paths are linked ELF images.

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [plain, folded, rest @ ..] = args.as_slice() else {
        eprintln!("usage: verify PLAIN FOLDED [all] [odr]");
        std::process::exit(2);
    };
    let mode = if rest.iter().any(|a| a == "all") {
        icf_verify::Mode::All
    } else {
        icf_verify::Mode::Safe
    };
    let started = Instant::now();
    match icf_verify::verify(
        plain.as_ref(),
        folded.as_ref(),
        &icf_verify::VerifyOptions {
            mode,
            assume_odr: rest.iter().any(|a| a == "odr"),
            plain_map: None,
            folded_map: None,
        },
    ) {
        Ok(outcome) => {
            print!("{outcome}");
            eprintln!("{:.2} s", started.elapsed().as_secs_f64());
            std::process::exit(i32::from(!outcome.passed()));
        }
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(1);
        }
    }
}
