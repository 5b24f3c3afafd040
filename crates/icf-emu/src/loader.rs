//! Loading a linked 64-bit Mach-O executable (`MH_EXECUTE`, x86_64 or arm64)
//! the way dyld would for a program that imports nothing: every segment but
//! `__PAGEZERO` at its `vmaddr` (slide 0), `vmsize` bytes with the part past
//! `filesize` zero-filled, pointer fixups applied, the entry point from
//! `LC_MAIN` and the initializers (`__mod_init_func` pointers or
//! `__init_offsets`) that dyld runs before it.
//!
//! Everything read from the file is checked: a malformed image is an
//! [`Error::Malformed`], never a panic, and the total size mapped is bounded
//! so a huge `vmsize` cannot exhaust memory.

use object::Endianness;
use object::macho;
use object::read::macho::{MachHeader, Section as _, Segment as _};

use crate::fixups;
use crate::segment::LoadedSegment;
pub use crate::segment::Segment;
use crate::{Arch, Error};

/// The most memory an image may ask to have mapped (all segments together).
const MAX_IMAGE_SIZE: u64 = 1 << 30;

/// A loaded image: what to map, where to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub arch: Arch,
    /// The address of `main` (from `LC_MAIN`).
    pub entry: u64,
    /// The segments to map, in load-command order, `__PAGEZERO` left out.
    pub segments: Vec<Segment>,
    /// Functions dyld calls before `main`, in order.
    pub initializers: Vec<u64>,
}

/// Reads and lays out the Mach-O executable in `data`.
pub fn load(data: &[u8]) -> Result<Image, Error> {
    let header = macho::MachHeader64::<Endianness>::parse(data, 0).map_err(|_| {
        Error::Malformed("not a 64-bit Mach-O file (bad magic or shorter than a header)".to_owned())
    })?;
    let endian = header
        .endian()
        .map_err(|error| Error::Malformed(error.to_string()))?;
    if endian != Endianness::Little {
        return Err(Error::Unsupported("big-endian Mach-O".to_owned()));
    }
    let filetype = header.filetype(endian);
    if filetype != macho::MH_EXECUTE {
        return Err(Error::Unsupported(format!(
            "file type {filetype} is not MH_EXECUTE ({}): only linked executables load",
            macho::MH_EXECUTE
        )));
    }
    let arch = arch_of(header.cputype(endian), header.cpusubtype(endian))?;

    let mut segments: Vec<LoadedSegment<'_>> = Vec::new();
    let mut segment_count = 0usize;
    let mut entryoff: Option<u64> = None;
    let mut chained_fixups = None;
    let mut dyld_info = None;
    let mut dysymtab = None;
    let mut total_size = 0u64;

    let mut commands = header
        .load_commands(endian, data, 0)
        .map_err(|error| Error::Malformed(error.to_string()))?;
    while let Some(command) = commands
        .next()
        .map_err(|error| Error::Malformed(error.to_string()))?
    {
        let malformed = |error: object::Error| Error::Malformed(error.to_string());
        match command.cmd() {
            macho::LC_SEGMENT_64 => {
                let Some((segment, _)) = command.segment_64().map_err(malformed)? else {
                    continue;
                };
                let index = segment_count;
                segment_count += 1;
                if let Some(loaded) = load_segment(segment, endian, data, index, &mut total_size)? {
                    segments.push(loaded);
                }
            }
            macho::LC_SEGMENT => {
                return Err(Error::Malformed(
                    "a 32-bit LC_SEGMENT in a 64-bit image".to_owned(),
                ));
            }
            macho::LC_MAIN => {
                if let Some(main) = command.entry_point().map_err(malformed)? {
                    if entryoff.is_some() {
                        return Err(Error::Malformed("more than one LC_MAIN".to_owned()));
                    }
                    entryoff = Some(main.entryoff.get(endian));
                }
            }
            macho::LC_UNIXTHREAD | macho::LC_THREAD => {
                return Err(Error::Unsupported(
                    "LC_UNIXTHREAD entry (only LC_MAIN is supported)".to_owned(),
                ));
            }
            macho::LC_DYLD_CHAINED_FIXUPS => {
                chained_fixups = command.dyld_chained_fixups().map_err(malformed)?;
            }
            macho::LC_DYLD_INFO | macho::LC_DYLD_INFO_ONLY => {
                dyld_info = command.dyld_info().map_err(malformed)?;
            }
            macho::LC_DYSYMTAB => {
                dysymtab = command.dysymtab().map_err(malformed)?;
            }
            _ => {}
        }
    }
    check_overlaps(&segments)?;

    // LC_MAIN's entryoff is an offset from the start of __TEXT, which maps
    // the file from offset 0 (the mach header).
    let text_vmaddr = segments
        .iter()
        .find(|loaded| loaded.segment.name == "__TEXT")
        .map(|loaded| loaded.segment.vmaddr)
        .ok_or_else(|| Error::Malformed("no __TEXT segment".to_owned()))?;
    let entryoff = entryoff.ok_or_else(|| Error::Malformed("no LC_MAIN".to_owned()))?;
    let entry = text_vmaddr
        .checked_add(entryoff)
        .ok_or_else(|| Error::Malformed(format!("LC_MAIN entryoff {entryoff:#x} overflows")))?;
    let entry_is_code = segments.iter().any(|loaded| {
        loaded.segment.prot & macho::VM_PROT_EXECUTE.0 != 0 && contains(&loaded.segment, entry, 1)
    });
    if !entry_is_code {
        return Err(Error::Malformed(format!(
            "entry point {entry:#x} (LC_MAIN entryoff {entryoff:#x}) is not in an executable segment"
        )));
    }

    if let Some(dysymtab) = dysymtab {
        let external = dysymtab.nextrel.get(endian);
        if external != 0 {
            return Err(Error::Unsupported(format!(
                "{external} external relocations (imports bound the pre-dyld-info way)"
            )));
        }
    }
    if let Some(info) = dyld_info {
        // At slide 0 a rebase changes nothing: the file already holds the
        // preferred addresses. Binds are imports.
        fixups::check_dyld_info_binds(info, endian, data)?;
    }
    if let Some(command) = chained_fixups {
        fixups::apply_chained_fixups(command, endian, data, text_vmaddr, &mut segments)?;
    }

    let initializers = initializers(header, endian, data, text_vmaddr, &segments)?;
    Ok(Image {
        arch,
        entry,
        segments: segments.into_iter().map(|loaded| loaded.segment).collect(),
        initializers,
    })
}

fn arch_of(cputype: macho::CpuType, cpusubtype: macho::CpuSubtype) -> Result<Arch, Error> {
    match cputype {
        macho::CPU_TYPE_X86_64 => Ok(Arch::X86_64),
        macho::CPU_TYPE_ARM64 => {
            if cpusubtype.id() == macho::CPU_SUBTYPE_ARM64E {
                Err(Error::Unsupported(
                    "arm64e (pointer authentication)".to_owned(),
                ))
            } else {
                Ok(Arch::Arm64)
            }
        }
        other => Err(Error::Unsupported(format!(
            "CPU type {:#x} (only x86_64 and arm64)",
            other.0
        ))),
    }
}

/// The segment as it will be mapped, or `None` for one that maps nothing
/// (`__PAGEZERO`, and any other segment without size or permissions: its
/// only purpose is to keep an address range unmapped).
fn load_segment<'data>(
    segment: &'data macho::SegmentCommand64<Endianness>,
    endian: Endianness,
    data: &'data [u8],
    index: usize,
    total_size: &mut u64,
) -> Result<Option<LoadedSegment<'data>>, Error> {
    let name = String::from_utf8_lossy(segment.name()).into_owned();
    let vmaddr = segment.vmaddr(endian);
    let vmsize = segment.vmsize(endian);
    let filesize = segment.filesize(endian);
    let prot = segment.initprot(endian).0;
    if vmsize == 0 || prot == 0 {
        if filesize != 0 {
            return Err(Error::Malformed(format!(
                "segment {name} maps nothing but has {filesize:#x} file bytes"
            )));
        }
        return Ok(None);
    }
    if filesize > vmsize {
        return Err(Error::Malformed(format!(
            "segment {name}: filesize {filesize:#x} exceeds vmsize {vmsize:#x}"
        )));
    }
    if vmaddr.checked_add(vmsize).is_none() {
        return Err(Error::Malformed(format!(
            "segment {name}: {vmaddr:#x} + {vmsize:#x} overflows"
        )));
    }
    *total_size = total_size.saturating_add(vmsize);
    if *total_size > MAX_IMAGE_SIZE {
        return Err(Error::Malformed(format!(
            "segments ask for more than {MAX_IMAGE_SIZE:#x} bytes of memory"
        )));
    }
    let file_bytes = segment.data(endian, data).map_err(|_| {
        let fileoff = segment.fileoff(endian);
        Error::Malformed(format!(
            "segment {name}: file range {fileoff:#x}+{filesize:#x} is past the end of the file ({:#x} bytes)",
            data.len()
        ))
    })?;
    let size = usize::try_from(vmsize)
        .map_err(|_| Error::Malformed(format!("segment {name}: vmsize {vmsize:#x}")))?;
    let mut bytes = vec![0u8; size];
    bytes[..file_bytes.len()].copy_from_slice(file_bytes);
    Ok(Some(LoadedSegment {
        index,
        file_bytes,
        segment: Segment {
            name,
            vmaddr,
            data: bytes,
            prot,
        },
    }))
}

fn check_overlaps(segments: &[LoadedSegment<'_>]) -> Result<(), Error> {
    let mut ranges: Vec<(u64, u64, &str)> = segments
        .iter()
        .map(|loaded| {
            let segment = &loaded.segment;
            (
                segment.vmaddr,
                segment.vmaddr + segment.data.len() as u64,
                segment.name.as_str(),
            )
        })
        .collect();
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        if let [(_, first_end, first), (second_start, _, second)] = pair {
            if second_start < first_end {
                return Err(Error::Malformed(format!(
                    "segments {first} and {second} overlap"
                )));
            }
        }
    }
    Ok(())
}

fn contains(segment: &Segment, address: u64, size: u64) -> bool {
    address >= segment.vmaddr
        && address
            .checked_add(size)
            .is_some_and(|end| end <= segment.vmaddr + segment.data.len() as u64)
}

/// The loaded bytes at `address..address + size`, if one segment holds them all.
pub(crate) fn bytes_at<'a>(
    segments: &'a [LoadedSegment<'_>],
    address: u64,
    size: u64,
) -> Option<&'a [u8]> {
    let segment = &segments
        .iter()
        .find(|loaded| contains(&loaded.segment, address, size))?
        .segment;
    let start = usize::try_from(address - segment.vmaddr).ok()?;
    segment
        .data
        .get(start..start.checked_add(usize::try_from(size).ok()?)?)
}

/// The initializers dyld runs before `main`: the pointers in
/// `S_MOD_INIT_FUNC_POINTERS` sections (read after fixups) and the 32-bit
/// image offsets in `S_INIT_FUNC_OFFSETS` sections (lld's `-init_offsets`,
/// its default with chained fixups).
fn initializers(
    header: &macho::MachHeader64<Endianness>,
    endian: Endianness,
    data: &[u8],
    text_vmaddr: u64,
    segments: &[LoadedSegment<'_>],
) -> Result<Vec<u64>, Error> {
    let malformed = |error: object::Error| Error::Malformed(error.to_string());
    let mut result = Vec::new();
    let mut commands = header.load_commands(endian, data, 0).map_err(malformed)?;
    while let Some(command) = commands.next().map_err(malformed)? {
        let Some((segment, section_data)) = command.segment_64().map_err(malformed)? else {
            continue;
        };
        for section in segment.sections(endian, section_data).map_err(malformed)? {
            let kind = section.flags(endian).typ();
            let name = String::from_utf8_lossy(section.name());
            let (addr, size) = (section.addr(endian), section.size(endian));
            let entry_size = match kind {
                macho::S_MOD_INIT_FUNC_POINTERS => 8,
                macho::S_INIT_FUNC_OFFSETS => 4,
                macho::S_THREAD_LOCAL_VARIABLES
                | macho::S_THREAD_LOCAL_REGULAR
                | macho::S_THREAD_LOCAL_ZEROFILL => {
                    return Err(Error::Unsupported(format!(
                        "thread-local section {name} (dyld sets thread-locals up)"
                    )));
                }
                _ => continue,
            };
            if size % entry_size != 0 {
                return Err(Error::Malformed(format!(
                    "initializer section {name}: size {size:#x} is not a multiple of {entry_size}"
                )));
            }
            let bytes = bytes_at(segments, addr, size).ok_or_else(|| {
                Error::Malformed(format!(
                    "initializer section {name} at {addr:#x}+{size:#x} is not inside a mapped segment"
                ))
            })?;
            for chunk in bytes.chunks_exact(entry_size as usize) {
                let address = match *chunk {
                    [a, b, c, d] => {
                        text_vmaddr.wrapping_add(u64::from(u32::from_le_bytes([a, b, c, d])))
                    }
                    [a, b, c, d, e, f, g, h] => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
                    _ => continue,
                };
                result.push(address);
            }
        }
    }
    Ok(result)
}
