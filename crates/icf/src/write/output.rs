//! An output file being written, whose unchanged bytes go from the input file
//! to the output inside the kernel (`copy_file_range`) instead of through
//! icf's memory.
//!
//! Most of what `icf fold` writes, and part of what `icf link` writes, is an
//! input's bytes as they were: whole unchanged files, unchanged archive
//! members. Written from the mapping, each such byte is faulted in (the
//! mapping's pages were given back after parsing), copied into a buffer and
//! copied again into the page cache. [`OutputFile`] notices a write of a
//! slice of the input's mapping and has the kernel copy that range from the
//! input file instead; the archive writer and everything else keep writing
//! slices, unaware of it.
//!
//! Assumption: the input file holds the bytes icf mapped. The file is opened
//! again by path and used only if it is still the file that was mapped
//! ([`InputFile::reopen`]); inputs are never written by icf. Whatever the
//! kernel refuses (another file system, no such call, a file system without
//! the operation) is written from the mapping, so the bytes are the same
//! either way.

use icf_object::InputFile;
use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};

/// Below this many bytes a slice of the input is buffered like any other:
/// flushing the buffer and one more system call cost more than the copy.
const MIN_KERNEL_COPY: usize = 32 * 1024;

/// Copies up to `len` bytes of `from`, from `offset`, to `to`'s current
/// position, advancing it; returns how many were copied (0 at the end of
/// `from`).
pub(crate) type CopyRange =
    fn(from: &File, offset: u64, to: &File, len: usize) -> io::Result<usize>;

/// The input file whose mapped bytes may be copied by the kernel.
struct Source<'a> {
    file: File,
    mapped: &'a [u8],
}

/// An output file, buffered, that copies slices of its source's mapping
/// from the source file (see the module header).
pub(crate) struct OutputFile<'a> {
    out: BufWriter<File>,
    source: Option<Source<'a>>,
    copy: CopyRange,
}

impl<'a> OutputFile<'a> {
    /// `out`, taking slices of `source`'s mapping from `source`'s file when
    /// it is still the mapped file.
    pub(crate) fn new(out: File, source: Option<&'a InputFile>) -> OutputFile<'a> {
        OutputFile::with_copy(out, source, copy_file_range)
    }

    /// [`OutputFile::new`] copying with `copy` (tests stand in a kernel that
    /// refuses).
    pub(crate) fn with_copy(
        out: File,
        source: Option<&'a InputFile>,
        copy: CopyRange,
    ) -> OutputFile<'a> {
        let source = source.and_then(|input| {
            Some(Source {
                file: input.reopen()?,
                mapped: input.data(),
            })
        });
        OutputFile {
            out: BufWriter::with_capacity(1 << 20, out),
            source,
            copy,
        }
    }

    /// Flushes the buffer and hands back the file.
    pub(crate) fn into_file(self) -> io::Result<File> {
        self.out.into_inner().map_err(|e| e.into_error())
    }

    /// Where `bytes` start in the source file, when they are a slice of its
    /// mapping worth a kernel copy.
    fn source_offset(&self, bytes: &[u8]) -> Option<u64> {
        let source = self.source.as_ref()?;
        if bytes.len() < MIN_KERNEL_COPY {
            return None;
        }
        let start = (bytes.as_ptr() as usize).checked_sub(source.mapped.as_ptr() as usize)?;
        let end = start.checked_add(bytes.len())?;
        (end <= source.mapped.len()).then_some(start as u64)
    }

    /// Writes `bytes`, which are the source file's from `offset`: copied by
    /// the kernel as far as it goes, the rest from the mapping. After a
    /// refusal no further copy is tried; a real write error shows when the
    /// rest is written.
    fn copy_from_source(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.out.flush()?;
        let mut done = 0;
        if let Some(source) = &self.source {
            while done < bytes.len() {
                match (self.copy)(
                    &source.file,
                    offset + done as u64,
                    self.out.get_ref(),
                    bytes.len() - done,
                ) {
                    // The file ends early: not the mapped file after all.
                    Ok(0) => {
                        self.source = None;
                        break;
                    }
                    Ok(copied) => done += copied.min(bytes.len() - done),
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        self.source = None;
                        break;
                    }
                }
            }
        }
        self.out.write_all(&bytes[done..])
    }
}

impl Write for OutputFile<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self.source_offset(bytes) {
            Some(offset) => {
                self.copy_from_source(offset, bytes)?;
                Ok(bytes.len())
            }
            None => self.out.write(bytes),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self.source_offset(bytes) {
            Some(offset) => self.copy_from_source(offset, bytes),
            None => self.out.write_all(bytes),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The archive writer asks for a position only in formats icf does not
/// write; the buffer is flushed first, so the file's position is the stream's.
impl Seek for OutputFile<'_> {
    fn seek(&mut self, position: SeekFrom) -> io::Result<u64> {
        self.out.seek(position)
    }
}

/// `copy_file_range(2)` from `offset` of `from` to the position of `to`.
#[cfg(target_os = "linux")]
fn copy_file_range(from: &File, offset: u64, to: &File, len: usize) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let mut offset =
        libc::loff_t::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: both descriptors are open files borrowed for the call;
    // `offset` is a valid loff_t the kernel updates; a null output offset
    // means the output file's own position, which the kernel advances.
    let copied = unsafe {
        libc::copy_file_range(
            from.as_raw_fd(),
            &mut offset,
            to.as_raw_fd(),
            std::ptr::null_mut(),
            len,
            0,
        )
    };
    usize::try_from(copied).map_err(|_| io::Error::last_os_error())
}

/// Elsewhere the kernel copies nothing: every byte is written from the mapping.
#[cfg(not(target_os = "linux"))]
fn copy_file_range(_from: &File, _offset: u64, _to: &File, _len: usize) -> io::Result<usize> {
    Err(io::ErrorKind::Unsupported.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("icf-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating the scratch directory");
        dir
    }

    /// Writes a few owned bytes, large and small slices of the input's
    /// mapping and a slice of another buffer through an [`OutputFile`]
    /// copying with `copy`; returns what the file holds and what it should.
    fn write_mixed(name: &str, copy: CopyRange) -> (Vec<u8>, Vec<u8>) {
        let dir = scratch(name);
        let input_path = dir.join("input");
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 31 % 253) as u8).collect();
        std::fs::write(&input_path, &bytes).expect("writing the input");
        let input = InputFile::open(&input_path).expect("mapping the input");
        let data = input.data();
        let other = vec![7u8; 100_000];
        let pieces: [&[u8]; 6] = [
            b"!<arch>\n",
            &data[1000..200_000],
            &data[5..105],
            &other,
            &data[200_001..],
            &data[..MIN_KERNEL_COPY],
        ];
        let output_path = dir.join("output");
        let mut out = OutputFile::with_copy(
            File::create(&output_path).expect("creating the output"),
            Some(&input),
            copy,
        );
        for piece in pieces {
            out.write_all(piece).expect("writing");
        }
        drop(out.into_file().expect("flushing"));
        let written = std::fs::read(&output_path).expect("reading the output");
        let _ = std::fs::remove_dir_all(&dir);
        (written, pieces.concat())
    }

    static KERNEL_COPIES: AtomicUsize = AtomicUsize::new(0);

    #[test]
    fn slices_of_the_input_are_copied_by_the_kernel_and_the_bytes_are_the_same() {
        fn counting(from: &File, offset: u64, to: &File, len: usize) -> io::Result<usize> {
            KERNEL_COPIES.fetch_add(1, Ordering::Relaxed);
            copy_file_range(from, offset, to, len)
        }
        let (written, expected) = write_mixed("kernel", counting);
        assert_eq!(written, expected);
        // Three large slices of the mapping; the small one and the other
        // buffer are written.
        assert!(KERNEL_COPIES.load(Ordering::Relaxed) >= 3);
    }

    #[test]
    fn what_the_kernel_refuses_is_written_from_the_mapping() {
        fn refuses(_: &File, _: u64, _: &File, _: usize) -> io::Result<usize> {
            Err(io::Error::from_raw_os_error(libc::EXDEV))
        }
        fn ends_early(_: &File, _: u64, _: &File, _: usize) -> io::Result<usize> {
            Ok(0)
        }
        /// Part of each range, then a refusal: the rest is written.
        fn partly(from: &File, offset: u64, to: &File, len: usize) -> io::Result<usize> {
            if offset % 2 == 0 {
                copy_file_range(from, offset, to, len.min(4097))
            } else {
                Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
            }
        }
        fn interrupted_once(from: &File, offset: u64, to: &File, len: usize) -> io::Result<usize> {
            static CALLS: AtomicUsize = AtomicUsize::new(0);
            if CALLS.fetch_add(1, Ordering::Relaxed) == 0 {
                return Err(io::ErrorKind::Interrupted.into());
            }
            copy_file_range(from, offset, to, len)
        }
        for (name, copy) in [
            ("refuses", refuses as CopyRange),
            ("ends-early", ends_early),
            ("partly", partly),
            ("interrupted", interrupted_once),
        ] {
            let (written, expected) = write_mixed(name, copy);
            assert!(written == expected, "{name}: the bytes differ");
        }
    }

    #[test]
    fn a_replaced_input_is_not_copied_from() {
        let dir = scratch("replaced");
        let input_path = dir.join("input");
        std::fs::write(&input_path, vec![1u8; 100_000]).expect("writing the input");
        let input = InputFile::open(&input_path).expect("mapping the input");
        // Renamed over: the path names another file than the one mapped.
        let replacement = dir.join("replacement");
        std::fs::write(&replacement, vec![2u8; 100_000]).expect("writing");
        std::fs::rename(&replacement, &input_path).expect("renaming");
        fn never(_: &File, _: u64, _: &File, _: usize) -> io::Result<usize> {
            panic!("copied from a file that is not the mapped one")
        }
        let output_path = dir.join("output");
        let mut out = OutputFile::with_copy(
            File::create(&output_path).expect("creating the output"),
            Some(&input),
            never,
        );
        out.write_all(input.data()).expect("writing");
        drop(out.into_file().expect("flushing"));
        assert_eq!(
            std::fs::read(&output_path).expect("reading"),
            vec![1u8; 100_000]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
