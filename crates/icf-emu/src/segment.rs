//! A segment of a loaded image: what the loader hands the runner, and how
//! the fixups see one while the loader lays the image out.

/// One segment, its contents final (fixups applied).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub name: String,
    pub vmaddr: u64,
    /// `vmsize` bytes: the file's bytes, then zeros.
    pub data: Vec<u8>,
    /// `VM_PROT_*` bits of `initprot` (read 1, write 2, execute 4).
    pub prot: u32,
}

/// A segment as the fixups see it: its index among all `LC_SEGMENT_64`
/// commands (chained fixups count `__PAGEZERO` too) and its file bytes.
pub(crate) struct LoadedSegment<'data> {
    pub index: usize,
    pub file_bytes: &'data [u8],
    pub segment: Segment,
}
