//! Functions that never return (`abort`, `__stack_chk_fail`, `__cxa_throw`,
//! C++'s `std::__throw_*`, Rust's panics), known by name: the places code
//! calls them at, their own symbols and the PLT entries that bind them.
//! What follows a call to one is not the call's continuation but another
//! block, reached along other paths, so the AArch64 page analysis
//! (`aarch64_flow.rs`) does not carry the caller's registers into it.
//! Main assumption: a function of one of these names is the one the C, C++
//! or Rust runtime defines.

use crate::decode;
use crate::image::{Image, SectionRole, Slot, SymbolKind};

/// C and POSIX functions, and the C++ ABI's, that never return.
const NAMES: [&str; 30] = [
    "abort",
    "exit",
    "_exit",
    "_Exit",
    "quick_exit",
    "__stack_chk_fail",
    "__assert_fail",
    "__assert_perror_fail",
    "__fortify_fail",
    "__chk_fail",
    "__libc_fatal",
    "longjmp",
    "_longjmp",
    "siglongjmp",
    "__longjmp_chk",
    "pthread_exit",
    "err",
    "errx",
    "verr",
    "verrx",
    "__cxa_throw",
    "__cxa_rethrow",
    "__cxa_bad_cast",
    "__cxa_bad_typeid",
    "__cxa_pure_virtual",
    "__cxa_deleted_virtual",
    "__cxa_throw_bad_array_new_length",
    "__cxa_call_unexpected",
    "_Unwind_Resume",
    "_ZSt9terminatev",
];

/// Functions that never return and that each program defines for itself,
/// hidden (so local in a linked image): clang's landing pad for
/// `noexcept`, `__cxa_begin_catch` then `std::terminate`. The name is
/// reserved to the implementation.
const HIDDEN_NAMES: [&str; 1] = ["__clang_call_terminate"];

/// Mangled prefixes of functions that never return: C++'s
/// `std::__throw_*`, LLVM's fatal errors, Rust's panics and
/// `handle_alloc_error`.
const PREFIXES: [&str; 6] = [
    "_ZN4llvm18report_fatal_error",
    "_ZN4llvm25llvm_unreachable_internal",
    "_ZN4core9panicking",
    "_ZN4core6option13unwrap_failed",
    "_ZN4core6result13unwrap_failed",
    "_ZN5alloc5alloc18handle_alloc_error",
];

/// Whether the function named `name` never returns.
pub(crate) fn never_returns(name: &str) -> bool {
    let name = name.split('@').next().unwrap_or(name);
    NAMES.contains(&name)
        || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
        || is_std_throw(name)
}

/// `std::__throw_*` (`_ZSt` + length + `__throw_`).
fn is_std_throw(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("_ZSt") else {
        return false;
    };
    rest.trim_start_matches(|c: char| c.is_ascii_digit())
        .starts_with("__throw_")
}

/// The places in `image` a call goes to a function that never returns
/// (its global symbol, or a PLT entry binding its name), sorted.
pub(crate) fn noreturn_entries(image: &Image) -> Vec<u64> {
    let mut entries: Vec<u64> = image
        .symbols
        .iter()
        // A program's own static function may take one of these names.
        .filter(|s| {
            s.kind == SymbolKind::Function
                && ((s.global && never_returns(&s.name)) || HIDDEN_NAMES.contains(&s.name.as_str()))
        })
        .map(|s| s.address)
        .collect();
    for (index, section) in image.sections.iter().enumerate() {
        let SectionRole::Plt { entry_size } = section.role else {
            continue;
        };
        if !section.executable || entry_size == 0 {
            continue;
        }
        let end = section.address.saturating_add(section.size);
        for entry in (section.address..end).step_by(entry_size as usize) {
            if let Some(Slot::Named(name, _)) = decode::plt_slot(image, index, entry)
                && never_returns(name)
            {
                entries.push(entry);
            }
        }
    }
    entries.sort_unstable();
    entries.dedup();
    entries
}

#[cfg(test)]
mod tests {
    use super::never_returns;

    #[test]
    fn runtime_functions_that_never_return_are_known_by_name() {
        for name in [
            "abort",
            "__stack_chk_fail@GLIBC_2.17",
            "_ZSt20__throw_length_errorPKc",
            "_ZN4llvm18report_fatal_errorEPKcb",
            "_ZN4core9panicking5panic17h0123456789abcdefE",
        ] {
            assert!(never_returns(name), "{name}");
        }
        for name in [
            "malloc",
            "_ZSt4endlIcSt11char_traitsIcEERSt13basic_ostreamIT_T0_ES6_",
            "exit_group_helper",
        ] {
            assert!(!never_returns(name), "{name}");
        }
    }
}
