//! Input files: memory-mapped, and split into the ELF objects they hold. A
//! plain object holds itself; an archive (`.a`, `.rlib`) holds its ELF
//! members. Members that are not ELF objects (`lib.rmeta`, LLVM bitcode) are
//! listed as skipped, with the reason, rather than treated as errors.

use crate::error::{Error, Result};
use object::read::archive::ArchiveFile;
use std::path::{Path, PathBuf};

/// An input file mapped into memory. The mapping is read-only and private:
/// icf never writes to its inputs.
#[derive(Debug)]
pub struct InputFile {
    pub path: PathBuf,
    map: Option<memmap2::Mmap>,
    /// Which file was mapped, to know it again ([`InputFile::reopen`]).
    identity: Option<FileIdentity>,
    /// What the file system said of the mapped file ([`InputFile::stamp`]).
    stamp: Option<FileStamp>,
}

/// What the file system says of a file, as ninja, cargo and ccache's direct
/// mode tell an unchanged file: device, inode, size, and modification and
/// status-change times. The status-change time cannot be set back, so a
/// file rewritten in place and given its old modification time (`cp -p`,
/// `touch -r`) has another stamp. Two writes within the times' resolution
/// may share one: a stamp is trusted only once both times are older than
/// a margin ([`FileStamp::settled`], git's "racily clean").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileStamp {
    pub device: u64,
    pub inode: u64,
    pub len: u64,
    /// Seconds and nanoseconds since the epoch.
    pub modified: (i64, i64),
    pub changed: (i64, i64),
}

impl FileStamp {
    #[cfg(unix)]
    pub fn of(metadata: &std::fs::Metadata) -> Option<FileStamp> {
        use std::os::unix::fs::MetadataExt;
        Some(FileStamp {
            device: metadata.dev(),
            inode: metadata.ino(),
            len: metadata.len(),
            modified: (metadata.mtime(), metadata.mtime_nsec()),
            changed: (metadata.ctime(), metadata.ctime_nsec()),
        })
    }

    /// Without inode numbers and status-change times no file is known again.
    #[cfg(not(unix))]
    pub fn of(_metadata: &std::fs::Metadata) -> Option<FileStamp> {
        None
    }

    /// How long after its last change a file is trusted by its stamp.
    pub const SETTLED_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

    /// Whether both times lie at least [`FileStamp::SETTLED_AFTER`] before
    /// `now`: a later write would then change the stamp.
    pub fn settled(&self, now: std::time::SystemTime) -> bool {
        let margin = Self::SETTLED_AFTER;
        let Ok(now) = now.duration_since(std::time::UNIX_EPOCH) else {
            return false;
        };
        let as_nanos =
            |(seconds, nanos): (i64, i64)| i128::from(seconds) * 1_000_000_000 + i128::from(nanos);
        let limit = now.as_nanos() as i128 - margin.as_nanos() as i128;
        as_nanos(self.modified) <= limit && as_nanos(self.changed) <= limit
    }

    /// The stamp as words, for hashing into a key.
    pub fn words(&self) -> [u64; 7] {
        [
            self.device,
            self.inode,
            self.len,
            self.modified.0 as u64,
            self.modified.1 as u64,
            self.changed.0 as u64,
            self.changed.1 as u64,
        ]
    }
}

/// What tells one file from another, and one version of a file from the
/// next: device, inode, size and modification time.
#[derive(Debug, PartialEq, Eq)]
struct FileIdentity {
    device: u64,
    inode: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileIdentity {
    #[cfg(unix)]
    fn of(metadata: &std::fs::Metadata) -> Option<FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        Some(FileIdentity {
            device: metadata.dev(),
            inode: metadata.ino(),
            len: metadata.len(),
            modified: metadata.modified().ok(),
        })
    }

    /// Without inode numbers no file is known again.
    #[cfg(not(unix))]
    fn of(_metadata: &std::fs::Metadata) -> Option<FileIdentity> {
        None
    }
}

impl InputFile {
    pub fn open(path: impl Into<PathBuf>) -> Result<InputFile> {
        let path = path.into();
        let file = std::fs::File::open(&path)
            .map_err(|e| Error::new(format!("cannot open: {e}")).with_file(&path))?;
        let metadata = file
            .metadata()
            .map_err(|e| Error::new(format!("cannot stat: {e}")).with_file(&path))?;
        let len = metadata.len();
        // An empty file cannot be mapped; it is reported as truncated when parsed.
        let map = if len == 0 {
            None
        } else {
            // SAFETY: the mapping is read-only. Another process truncating the
            // file while we read it is outside what any linker defends against.
            let map = unsafe { memmap2::Mmap::map(&file) }
                .map_err(|e| Error::new(format!("cannot map: {e}")).with_file(&path))?;
            Some(map)
        };
        Ok(InputFile {
            path,
            map,
            identity: FileIdentity::of(&metadata),
            stamp: FileStamp::of(&metadata),
        })
    }

    /// What the file system said of the mapped file when it was opened
    /// (not of whatever the path names now); `None` on systems without
    /// inode numbers.
    pub fn stamp(&self) -> Option<FileStamp> {
        self.stamp
    }

    pub fn data(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// The mapped file opened again for reading, when the path still names
    /// the very file that was mapped, unchanged (same device, inode, size and
    /// modification time): then reading it gives [`InputFile::data`]'s bytes.
    /// `None` when it cannot be opened or may be another file, and on systems
    /// without inode numbers. For copying an input's bytes without reading
    /// them through the mapping; the mapping holds no descriptor open, so a
    /// link of thousands of inputs does not run out of them.
    pub fn reopen(&self) -> Option<std::fs::File> {
        let identity = self.identity.as_ref()?;
        let file = std::fs::File::open(&self.path).ok()?;
        let now = FileIdentity::of(&file.metadata().ok()?)?;
        (now == *identity).then_some(file)
    }

    /// Gives back the pages of the mapping that have been read, so they stop
    /// counting towards the resident set; the kernel keeps them in its page
    /// cache, and a later read faults them in again with the same bytes.
    /// Called between phases that read the inputs, where holding them would
    /// otherwise add the inputs' whole size to the peak. Best effort: a
    /// kernel that refuses the advice costs memory, not correctness.
    pub fn release_resident_pages(&self) {
        if let Some(map) = &self.map {
            // SAFETY: the mapping is a read-only shared mapping of a file
            // (`Mmap::map`) that icf never writes through. MADV_DONTNEED on
            // such a mapping only drops the process's page-table entries: the
            // next read of a borrowed slice faults the same file bytes back
            // in, so no borrow observes a change. (The advice is unsafe in
            // general because, on private or anonymous mappings, it discards
            // written pages and reads then see zeros.)
            let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }

    /// [`InputFile::release_resident_pages`] for the pages that hold `bytes`,
    /// a slice of [`InputFile::data`] (one archive member, say). Pages it
    /// shares with neighbouring bytes are released too; they fault back in
    /// unchanged when read. A slice from elsewhere is ignored.
    pub fn release_resident_range(&self, bytes: &[u8]) {
        if let Some(range) = self.offsets_of(bytes) {
            self.release_offsets(range);
        }
    }

    /// Where `bytes` lies in the mapping, if it is a non-empty slice of it.
    fn offsets_of(&self, bytes: &[u8]) -> Option<std::ops::Range<usize>> {
        let map = self.map.as_ref()?;
        let start = (bytes.as_ptr() as usize).wrapping_sub(map.as_ptr() as usize);
        if bytes.is_empty() || start >= map.len() || map.len() - start < bytes.len() {
            return None;
        }
        Some(start..start + bytes.len())
    }

    fn release_offsets(&self, range: std::ops::Range<usize>) {
        let Some(map) = &self.map else { return };
        // SAFETY: as in `release_resident_pages`; memmap2 widens the range
        // to whole pages inside the mapping.
        let _ = unsafe {
            map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, range.start, range.len())
        };
    }
}

/// Ranges of input files to give back ([`InputFile::release_resident_range`]),
/// gathered so that neighbouring ranges of one file reach the kernel as one
/// call. Each call that drops pages makes the kernel flush the translation
/// buffers of every core running one of icf's threads: on opt_lite, one
/// call per archive member (about 1,700 in a relink) cost more than the
/// pages they gave back. One worker's members are mostly neighbours (rayon
/// hands each worker consecutive items), so a range grows until the next
/// one is elsewhere or it reaches [`PendingRelease::MOST`]; what is left is
/// released when the value is dropped.
#[derive(Debug)]
pub struct PendingRelease<'a> {
    files: &'a [InputFile],
    /// The file and the byte offsets not yet released.
    pending: Option<(usize, std::ops::Range<usize>)>,
}

impl<'a> PendingRelease<'a> {
    /// The most bytes held back before they are released: a bound on what
    /// the gathering adds to the resident set, per worker.
    pub const MOST: usize = 8 << 20;
    /// A gap between two ranges small enough to release along with them
    /// (an archive member's header, say).
    const GAP: usize = 64 << 10;

    pub fn new(files: &'a [InputFile]) -> PendingRelease<'a> {
        PendingRelease {
            files,
            pending: None,
        }
    }

    /// Schedules the pages holding `bytes`, a slice of `files[file]`'s
    /// data, for release. A slice from elsewhere is ignored.
    pub fn add(&mut self, file: usize, bytes: &[u8]) {
        let Some(range) = self.files.get(file).and_then(|f| f.offsets_of(bytes)) else {
            return;
        };
        if let Some((pending_file, pending)) = &mut self.pending
            && *pending_file == file
            && range.start >= pending.start
            && range.start <= pending.end.saturating_add(Self::GAP)
        {
            pending.end = pending.end.max(range.end);
            if pending.len() >= Self::MOST {
                self.flush();
            }
            return;
        }
        self.flush();
        self.pending = Some((file, range));
    }

    /// Releases what is pending now.
    pub fn flush(&mut self) {
        if let Some((file, range)) = self.pending.take() {
            self.files[file].release_offsets(range);
        }
    }
}

impl Drop for PendingRelease<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// What kind of container a file is, from its first bytes.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum FileKind {
    Elf,
    Archive,
    ThinArchive,
    /// LLVM bitcode (`-flto`, `-C embed-bitcode` only rlibs).
    Bitcode,
    /// A Mach-O object or image, or a universal (fat) file.
    MachO,
    Unknown,
}

impl FileKind {
    pub fn detect(data: &[u8]) -> FileKind {
        if data.starts_with(b"\x7fELF") {
            FileKind::Elf
        } else if data.starts_with(b"!<arch>\n") {
            FileKind::Archive
        } else if data.starts_with(b"!<thin>\n") {
            FileKind::ThinArchive
        } else if data.starts_with(b"BC\xc0\xde") || data.starts_with(b"\xde\xc0\x17\x0b") {
            FileKind::Bitcode
        } else if [
            [0xcf, 0xfa, 0xed, 0xfe],
            [0xce, 0xfa, 0xed, 0xfe],
            [0xca, 0xfe, 0xba, 0xbe],
        ]
        .iter()
        .any(|magic| data.starts_with(magic))
        {
            FileKind::MachO
        } else {
            FileKind::Unknown
        }
    }
}

/// One object inside an input: the file itself, or an archive member.
#[derive(Clone, Debug)]
pub struct ObjectSource<'data> {
    /// The archive member's name, `None` for a plain object file.
    pub member: Option<String>,
    pub data: &'data [u8],
    /// Where `data` starts in the file.
    pub file_offset: u64,
}

/// A member that was not read, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedMember {
    pub member: String,
    pub reason: &'static str,
}

/// The objects of one input file.
#[derive(Clone, Debug, Default)]
pub struct InputObjects<'data> {
    pub objects: Vec<ObjectSource<'data>>,
    pub skipped: Vec<SkippedMember>,
    pub is_archive: bool,
}

/// Lists the objects (ELF or Mach-O) in `data`, read from `path`.
/// Whether `data` is a linked ELF image: an executable or a shared
/// library (`ET_EXEC`, `ET_DYN`), which `icf report` reads alone.
pub fn is_linked_image(data: &[u8]) -> bool {
    // e_type sits at offset 16, little-endian (the reader checks the rest).
    data.starts_with(&object::elf::ELFMAG) && matches!(data.get(16..18), Some([2 | 3, 0]))
}

pub fn list_objects<'data>(path: &Path, data: &'data [u8]) -> Result<InputObjects<'data>> {
    match FileKind::detect(data) {
        FileKind::Elf => Ok(InputObjects {
            objects: vec![ObjectSource { member: None, data, file_offset: 0 }],
            skipped: Vec::new(),
            is_archive: false,
        }),
        FileKind::Archive => list_archive_members(data).map_err(|e| e.with_file(path)),
        FileKind::ThinArchive => Err(Error::new(
            "thin archives are not supported: their members live in other files; pass those object files instead",
        )
        .with_file(path)),
        FileKind::Bitcode => {
            Err(Error::new("LLVM bitcode (LTO) cannot be folded: build without -flto").with_file(path))
        }
        FileKind::MachO if crate::object::is_macho(data) => Ok(InputObjects {
            objects: vec![ObjectSource { member: None, data, file_offset: 0 }],
            skipped: Vec::new(),
            is_archive: false,
        }),
        FileKind::MachO => Err(Error::new(
            "a universal (fat) or 32-bit Mach-O file: icf reads 64-bit objects; pass the single-architecture object (lipo -thin)",
        )
        .with_file(path)),
        FileKind::Unknown if data.len() < 4 => {
            Err(Error::new("file is too short to be an object or an archive").with_file(path))
        }
        FileKind::Unknown => Err(Error::new("not an ELF object or an archive (unknown magic)").with_file(path)),
    }
}

fn list_archive_members(data: &[u8]) -> Result<InputObjects<'_>> {
    let archive = ArchiveFile::parse(data).map_err(|e| {
        Error::new(format!("bad archive member header: {e}")).at_offset(first_bad_header(data))
    })?;
    let mut result = InputObjects {
        is_archive: true,
        ..InputObjects::default()
    };
    // Members follow each other; the end of the last good one is where a broken header starts.
    let mut next_header = 8u64;
    for member in archive.members() {
        let member = member.map_err(|e| {
            Error::new(format!("bad archive member header: {e}")).at_offset(next_header)
        })?;
        let name = String::from_utf8_lossy(member.name()).into_owned();
        let (offset, size) = member.file_range();
        next_header = (offset + size + 1) & !1;
        let member_data = member.data(data).map_err(|e| {
            Error::new(format!("archive member data out of bounds: {e}"))
                .with_member(&name)
                .at_offset(offset)
        })?;
        // rustc wraps an rlib's metadata in an ELF object; it holds no code.
        if name == "lib.rmeta" {
            result.skipped.push(SkippedMember {
                member: name,
                reason: "Rust metadata",
            });
            continue;
        }
        match FileKind::detect(member_data) {
            FileKind::Elf | FileKind::MachO
                if member_data.starts_with(b"\x7fELF") || crate::object::is_macho(member_data) =>
            {
                result.objects.push(ObjectSource {
                    member: Some(name),
                    data: member_data,
                    file_offset: offset,
                })
            }
            FileKind::Bitcode => result.skipped.push(SkippedMember {
                member: name,
                reason: "LLVM bitcode",
            }),
            _ => result.skipped.push(SkippedMember {
                member: name,
                reason: "not an ELF or 64-bit Mach-O object",
            }),
        }
    }
    Ok(result)
}

/// The offset of the first member header that does not parse: 60 bytes
/// ending in "`\n", with a decimal size that stays inside the file.
fn first_bad_header(data: &[u8]) -> u64 {
    let mut offset = 8usize;
    while offset < data.len() {
        let Some(header) = data.get(offset..offset + 60) else {
            return offset as u64;
        };
        let size = std::str::from_utf8(&header[48..58])
            .ok()
            .and_then(|s| s.trim_end().parse::<usize>().ok());
        let (Some(size), b"`\n") = (size, &header[58..60]) else {
            return offset as u64;
        };
        let Some(next) = (offset + 60).checked_add(size) else {
            return offset as u64;
        };
        if next > data.len() {
            return offset as u64;
        }
        offset = next + (next & 1);
    }
    offset as u64
}

#[cfg(test)]
mod tests {
    use super::{InputFile, PendingRelease};

    /// The resident size of the mapping that starts at `start`, from
    /// `/proc/self/smaps` (Linux): this mapping's alone, whatever other
    /// threads of the test binary map or touch.
    #[cfg(target_os = "linux")]
    fn resident_kib(start: *const u8) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("reading smaps");
        let header = format!("{:x}-", start as usize);
        let mut lines = smaps.lines().skip_while(|line| !line.starts_with(&header));
        lines.next().expect("the mapping is listed");
        let rss = lines
            .find(|line| line.starts_with("Rss:"))
            .expect("the mapping has an Rss line");
        rss.split_whitespace()
            .nth(1)
            .and_then(|kib| kib.parse().ok())
            .expect("Rss is a number of KiB")
    }

    #[test]
    #[cfg(unix)]
    fn an_input_reopens_only_while_it_is_the_mapped_file() {
        let path = std::env::temp_dir().join(format!("icf-reopen-{}", std::process::id()));
        std::fs::write(&path, b"mapped bytes").expect("writing the test file");
        let input = InputFile::open(&path).expect("mapping the test file");
        assert!(input.reopen().is_some());
        // Written again in place, to the same size: another version.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, b"other  bytes").expect("writing the test file");
        assert!(input.reopen().is_none());
        std::fs::remove_file(&path).expect("removing the test file");
        assert!(input.reopen().is_none());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn released_pages_leave_the_resident_set_and_read_back_unchanged() {
        let path = std::env::temp_dir().join(format!("icf-release-{}", std::process::id()));
        let bytes: Vec<u8> = (0..1024 * 1024u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &bytes).expect("writing the test file");
        let input = InputFile::open(&path).expect("mapping the test file");
        let data = input.data();
        let start = data.as_ptr();
        assert_eq!(data, bytes.as_slice());
        let touched = resident_kib(start);
        assert!(
            touched >= 1024,
            "reading every byte makes it resident: {touched} KiB"
        );

        // Half the file: that half leaves (whole pages, so at most a page
        // either side of it stays), the bytes read back the same.
        input.release_resident_range(&data[..512 * 1024]);
        let half = resident_kib(start);
        assert!((512..=520).contains(&half), "half released: {half} KiB");
        assert_eq!(input.data(), bytes.as_slice());

        // A slice of another buffer, or an empty one, releases nothing.
        let resident = resident_kib(start);
        input.release_resident_range(&bytes[..4096]);
        input.release_resident_range(&data[..0]);
        assert_eq!(resident_kib(start), resident);

        input.release_resident_pages();
        assert_eq!(resident_kib(start), 0);
        assert_eq!(input.data(), bytes.as_slice());
        std::fs::remove_file(&path).expect("removing the test file");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn gathered_ranges_are_released_when_the_next_is_elsewhere_and_at_the_end() {
        let path = std::env::temp_dir().join(format!("icf-gather-{}", std::process::id()));
        let bytes: Vec<u8> = (0..1024 * 1024u32).map(|i| (i * 13 % 251) as u8).collect();
        std::fs::write(&path, &bytes).expect("writing the test file");
        let files = [InputFile::open(&path).expect("mapping the test file")];
        let data = files[0].data();
        let start = data.as_ptr();
        assert_eq!(data, bytes.as_slice());
        assert!(resident_kib(start) >= 1024);

        let mut released = PendingRelease::new(&files);
        // Two neighbours, a member header's gap apart: held back together.
        released.add(0, &data[..100 * 1024]);
        released.add(0, &data[100 * 1024 + 60..300 * 1024]);
        released.add(0, &bytes[..4096]);
        released.add(1, &data[..4096]);
        assert!(resident_kib(start) >= 1024, "nothing released yet");
        // A range far on: the two go, as one.
        released.add(0, &data[900 * 1024..]);
        let left = resident_kib(start);
        assert!((724..=732).contains(&left), "300 KiB released: {left} KiB");
        // The last goes when the gatherer does.
        drop(released);
        let left = resident_kib(start);
        assert!((600..=608).contains(&left), "424 KiB released: {left} KiB");
        assert_eq!(files[0].data(), bytes.as_slice());
        std::fs::remove_file(&path).expect("removing the test file");
    }
}
