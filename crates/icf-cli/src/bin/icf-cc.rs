//! `icf-cc`: a linker for rustc and build systems that folds, then links.
//! `icf-cc ARGS...` is `icf link -- ${ICF_CC:-cc} ARGS...`, so
//! `RUSTFLAGS="-C linker=icf-cc" cargo build --release` folds every binary.
//!
//! Settings come from the environment, since the caller passes linker
//! arguments only: `ICF_CC` (the real driver, default `cc`), `ICF_MODE`
//! (`safe` or `all`, default `safe`), `ICF_REPORT` (write the JSON report
//! there), `ICF_STRICT=1` (fail instead of linking unfolded), `ICF_VERBOSE=1`
//! (phase timings on stderr), `ICF_AFTER_LINK=1` (fold the linked image, as
//! for LTO inputs, `icf link --after-link`), and those of `icf link`'s cache: `ICF_CACHE_DIR`,
//! `ICF_CACHE_SIZE`, `ICF_CACHE=0` (see the README).

use std::process::ExitCode;

fn main() -> ExitCode {
    let driver = std::env::var("ICF_CC").unwrap_or_else(|_| "cc".to_string());
    let mode = match std::env::var("ICF_MODE").as_deref() {
        Ok("all") => icf::Mode::All,
        Ok("safe") | Err(_) => icf::Mode::Safe,
        Ok(other) => {
            eprintln!("icf-cc: error: ICF_MODE must be `safe` or `all`, not `{other}`");
            return ExitCode::FAILURE;
        }
    };
    let options = icf::LinkOptions {
        plan: icf::PlanOptions {
            mode,
            ..icf::PlanOptions::default()
        },
        report: std::env::var_os("ICF_REPORT").map(Into::into),
        strict: std::env::var("ICF_STRICT").is_ok_and(|v| v == "1"),
        want_report: false,
        cache: icf::CacheChoice::Default,
        verbose: std::env::var("ICF_VERBOSE").is_ok_and(|v| v == "1"),
        verify: None,
        after_link: Some(icf_shrink::after_link(
            mode,
            std::env::var("ICF_AFTER_LINK").is_ok_and(|v| v == "1"),
        )),
    };
    let mut command = vec![driver];
    command.extend(std::env::args().skip(1));
    match icf::link(&command, &options) {
        Ok(outcome) => {
            if let Some(reason) = &outcome.fallback {
                eprintln!("icf-cc: warning: linking without folding: {reason}");
            }
            match outcome.status.code() {
                Some(0) => ExitCode::SUCCESS,
                Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
                None => ExitCode::FAILURE,
            }
        }
        Err(error) => {
            eprintln!("icf-cc: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
