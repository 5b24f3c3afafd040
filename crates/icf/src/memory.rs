//! Giving memory back to the system between phases, so that one phase's
//! freed allocations, or the input pages it read, do not count towards the
//! next phase's peak.

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

/// How many slices [`map_releasing_inputs`] maps in.
const SLICES: usize = 8;

/// Maps `items` in parallel (with each one's index), a slice at a time,
/// and returns the inputs' pages to the system after each slice: for a
/// phase that reads names, which lie all over the inputs' string tables,
/// while the comparator keys are still held (the significance verdicts).
/// Items in input order keep each slice's pages within a few files, so
/// few come back.
pub(crate) fn map_releasing_inputs<T: Sync, R: Send>(
    inputs: &crate::Inputs,
    items: &[T],
    map: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    use rayon::prelude::*;
    let slice = items.len().div_ceil(SLICES).max(1);
    let mut mapped = Vec::with_capacity(items.len());
    for (number, part) in items.chunks(slice).enumerate() {
        let first = number * slice;
        mapped.par_extend(
            part.par_iter()
                .enumerate()
                .map(|(index, item)| map(first + index, item)),
        );
        inputs.release_resident_pages();
    }
    mapped
}

/// [`map_releasing_inputs`] for a pass that must run in order (it builds
/// one result): `visit` each of `items`, returning the inputs' pages to
/// the system after each slice.
pub(crate) fn for_each_releasing_inputs<T>(
    inputs: &crate::Inputs,
    items: &[T],
    mut visit: impl FnMut(&T),
) {
    for part in items.chunks(items.len().div_ceil(SLICES).max(1)) {
        part.iter().for_each(&mut visit);
        inputs.release_resident_pages();
    }
}
