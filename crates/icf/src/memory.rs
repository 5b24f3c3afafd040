//! Giving memory back to the system between phases, so that one phase's
//! freed allocations do not count towards the next phase's peak.

/// Returns the allocator's free pages to the system. glibc's `free` keeps
/// freed chunks resident unless they sit at the top of an arena, so after a
/// phase frees many small allocations (the comparator keys) the resident set
/// would stay at its peak; `malloc_trim` releases the whole free pages inside
/// every arena. Elsewhere this does nothing.
pub fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it
    // touches no memory the program holds.
    unsafe {
        libc::malloc_trim(0);
    }
}
