//! A link map (`-Map=FILE`): where each input section of a linked image
//! lies, and which input file it came from.
//!
//! An image with its kept relocations (`-q`) says which output section a
//! field names, and an offset in it; a relocation against a section symbol
//! (how an assembler writes a reference to a local symbol) was, in its
//! object, against a section of that same object. So where an address ends
//! an input section of one file and starts one of another, the map tells
//! which of the two a section-symbol field of a given file can mean (see
//! `Checker::side_of_boundary`).
//!
//! Two layouts are read: lld's and mold's (a header naming `VMA`, then per
//! line the address, for lld the load address, the size and the alignment
//! in hexadecimal and decimal, and the output section, input section
//! (`file:(section)`) or symbol, indented by 8 more columns each), and GNU
//! ld's and gold's (an input section line ` NAME  0xADDRESS  0xSIZE FILE`,
//! the name alone on its own line when it is long). Sections the linker
//! made (`<internal>`, `*fill*`, `*ABS*`) belong to no file.

use rustc_hash::FxHashMap;

/// The input sections of a map with bytes, sorted by address.
#[derive(Clone, Debug, Default)]
pub struct InputSections {
    spans: Vec<Span>,
    files: Vec<String>,
    names: Vec<String>,
    name_ids: FxHashMap<String, u32>,
    /// Every span, empty ones too (a zero-sized object's section, which
    /// `spans` leaves out: it neither holds nor bounds anything), by
    /// (file, section name, address): see [`InputSections::named`].
    by_name: Vec<Span>,
    empty: Vec<Span>,
    /// Sections the linker made (`<internal>`: merged strings and
    /// constants, and what it synthesises), sorted; `file` is
    /// [`Span::MADE`].
    made: Vec<Span>,
}

/// One input section in the image: `[start, end)`, its file and its name
/// (ids into the map's tables), and its alignment where the map gives one
/// (lld's and mold's do; 0 where it does not).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: u64,
    pub end: u64,
    pub file: u32,
    pub name: u32,
    pub align: u64,
}

impl Span {
    /// The file of a section the linker made.
    pub const MADE: u32 = u32::MAX;
}

impl InputSections {
    /// Reads a map in either layout; an error says why it is not one.
    pub fn parse(text: &str) -> Result<InputSections, String> {
        let mut sections = InputSections::default();
        let mut ids: FxHashMap<String, u32> = FxHashMap::default();
        let mut name_ids: FxHashMap<String, u32> = FxHashMap::default();
        let mut names: Vec<String> = Vec::new();
        // An id per distinct string, allocating only for a new one.
        fn id_of(ids: &mut FxHashMap<String, u32>, key: &str) -> u32 {
            if let Some(&id) = ids.get(key) {
                return id;
            }
            let id = ids.len() as u32;
            ids.insert(key.to_owned(), id);
            id
        }
        let mut add = |start: u64, size: u64, align: u64, file: &str, name: &str| {
            let name = match name_ids.get(name) {
                Some(&id) => id,
                None => {
                    names.push(name.to_owned());
                    let id = name_ids.len() as u32;
                    name_ids.insert(name.to_owned(), id);
                    id
                }
            };
            let mut span = Span {
                start,
                end: start.saturating_add(size),
                file: Span::MADE,
                name,
                align,
            };
            if file.starts_with('<') {
                if size > 0 {
                    sections.made.push(span);
                }
                return;
            }
            if file.starts_with('*') {
                return;
            }
            span.file = id_of(&mut ids, file);
            match size {
                0 => sections.empty.push(span),
                _ => sections.spans.push(span),
            }
        };
        let header = text.lines().find(|line| !line.trim().is_empty());
        match header {
            Some(header) if header.contains("VMA") => {
                // lld: VMA LMA Size Align; mold: VMA Size Align.
                let numbers = if header.contains("LMA") { 4 } else { 3 };
                // Sections not loaded (at address 0: relocations, symbols,
                // debug info) list offsets, not addresses.
                let mut loaded = false;
                for line in text.lines().skip_while(|l| !l.contains("VMA")).skip(1) {
                    match vma_line(line, numbers) {
                        Some(VmaLine::Output(address)) => loaded = address != 0,
                        Some(VmaLine::Input(start, size, align, file, name)) if loaded => {
                            add(start, size, align, file, name)
                        }
                        _ => {}
                    }
                }
            }
            Some(_) => {
                let mut pending: Option<&str> = None;
                // As above: an output section at address 0 is not loaded.
                let mut loaded = false;
                let mut output_named = false;
                for line in text.lines() {
                    if line.starts_with('.') {
                        let address = line.split_whitespace().nth(1).and_then(hex);
                        output_named = address.is_none();
                        loaded = address.is_some_and(|a| a != 0);
                        pending = None;
                        continue;
                    }
                    if std::mem::take(&mut output_named) {
                        let address = line.split_whitespace().next().and_then(hex);
                        loaded = address.is_some_and(|a| a != 0);
                        continue;
                    }
                    match gnu_line(line, pending.is_some()) {
                        GnuLine::Named(name) => pending = Some(name),
                        GnuLine::Section(name, start, size, file) => {
                            if loaded {
                                add(start, size, 0, file, name.or(pending).unwrap_or(""));
                            }
                            pending = None;
                        }
                        GnuLine::Other => pending = None,
                    }
                }
            }
            None => return Err("the link map is empty".into()),
        }
        if sections.spans.is_empty() {
            return Err(
                "no input section found: not a link map lld, mold, GNU ld or gold wrote".into(),
            );
        }
        let mut files = vec![String::new(); ids.len()];
        for (file, id) in ids {
            files[id as usize] = file;
        }
        sections.files = files;
        sections.names = names;
        sections.name_ids = name_ids;
        sections.spans.sort_by_key(|span| (span.start, span.end));
        let mut by_name: Vec<Span> = sections
            .spans
            .iter()
            .chain(&sections.empty)
            .copied()
            .collect();
        by_name.sort_by_key(|span| (span.file, span.name, span.start, span.end));
        sections.by_name = by_name;
        sections.empty.sort_by_key(|span| span.start);
        sections.made.sort_by_key(|span| (span.start, span.end));
        Ok(sections)
    }

    /// The input sections with bytes starting in `start..end`, by address.
    pub fn spans_between(&self, start: u64, end: u64) -> &[Span] {
        let from = self.spans.partition_point(|span| span.start < start);
        let to = self.spans.partition_point(|span| span.start < end);
        &self.spans[from..to]
    }

    /// The sections the linker made starting in `start..end`, by address.
    pub fn made_between(&self, start: u64, end: u64) -> &[Span] {
        let from = self.made.partition_point(|span| span.start < start);
        let to = self.made.partition_point(|span| span.start < end);
        &self.made[from..to]
    }

    /// Why this map does not describe an image whose executable section
    /// `text` (`name`, `start..end`) holds `functions` (address, size),
    /// if it does not: a map of another link, or of this program linked
    /// again, lists no input section there, or puts one so that a function
    /// starting in it runs past its end (a function never spans two input
    /// sections). Its places, alignments and files would be another
    /// image's.
    pub fn mismatch(
        &self,
        (name, start, end): (&str, u64, u64),
        functions: impl IntoIterator<Item = (u64, u64)>,
    ) -> Option<String> {
        if self.spans_between(start, end).is_empty() {
            return Some(format!(
                "it lists no input section in {name} ({start:#x}..{end:#x}): it is not this image's"
            ));
        }
        functions.into_iter().find_map(|(address, size)| {
            let span = self.span_at(address)?;
            (address.saturating_add(size) > span.end).then(|| {
                format!(
                    "it does not describe this image: the function at {address:#x} ({size} bytes, \
                     in {name}) runs past the input section the map puts at {:#x}..{:#x}",
                    span.start, span.end
                )
            })
        })
    }

    /// The input section holding `address`.
    pub fn span_at(&self, address: u64) -> Option<Span> {
        let after = self.spans.partition_point(|span| span.start <= address);
        let span = self.spans.get(after.checked_sub(1)?)?;
        (address < span.end).then_some(*span)
    }

    /// Whether an empty input section named `name` from a file of key
    /// `file_key` (see [`InputSections::file_key`]) lies at `address`.
    pub fn empty_at(&self, address: u64, file_key: &str, name: &str) -> bool {
        let at = self.empty.partition_point(|span| span.start < address);
        self.empty[at..]
            .iter()
            .take_while(|span| span.start == address)
            .any(|span| {
                self.file_key(span.file) == file_key && self.section_name(span.name) == name
            })
    }

    /// The empty input sections at `address`.
    pub fn empty_spans_at(&self, address: u64) -> impl Iterator<Item = Span> + '_ {
        let at = self.empty.partition_point(|span| span.start < address);
        self.empty[at..]
            .iter()
            .take_while(move |span| span.start == address)
            .copied()
    }

    /// The input sections of `file` named `name`, empty ones too.
    pub fn named(&self, file: u32, name: &str) -> impl Iterator<Item = Span> + '_ {
        let spans = match self.name_ids.get(name) {
            Some(&id) => {
                let key = |span: &Span| (span.file, span.name);
                let from = self.by_name.partition_point(|span| key(span) < (file, id));
                let to = self.by_name.partition_point(|span| key(span) <= (file, id));
                &self.by_name[from..to]
            }
            None => &[],
        };
        spans.iter().copied()
    }

    /// The name of section name `id`, as the map wrote it.
    pub fn section_name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
    }

    /// The file of the input section holding `address`.
    pub fn file_at(&self, address: u64) -> Option<u32> {
        self.span_at(address).map(|span| span.file)
    }

    /// The file of the input section ending exactly at `address`, when
    /// one does.
    pub fn file_ending_at(&self, address: u64) -> Option<u32> {
        let after = self.spans.partition_point(|span| span.start < address);
        self.spans[..after]
            .iter()
            .rev()
            .take(8)
            .find(|span| span.end == address)
            .map(|span| span.file)
    }

    /// The file of the input section starting exactly at `address`, when
    /// one does.
    pub fn file_starting_at(&self, address: u64) -> Option<u32> {
        let at = self.spans.partition_point(|span| span.start < address);
        self.spans
            .get(at)
            .filter(|span| span.start == address)
            .map(|span| span.file)
    }

    /// How many files the map names.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// The name of file `id`, as the map wrote it.
    pub fn file_name(&self, id: u32) -> &str {
        self.files.get(id as usize).map_or("", String::as_str)
    }

    /// File `id` without the directories of its path: `libx.a(b.o)` or
    /// `a.o`, the same for a link of the same inputs copied elsewhere (as
    /// `icf link` hands the linker its rewritten files).
    pub fn file_key(&self, id: u32) -> &str {
        let name = self.files.get(id as usize).map_or("", String::as_str);
        let path_end = name.find('(').unwrap_or(name.len());
        let base = name[..path_end].rfind('/').map_or(0, |slash| slash + 1);
        &name[base..]
    }
}

/// What an lld or mold line lists.
enum VmaLine<'a> {
    /// An output section, at this address.
    Output(u64),
    /// An input section: its address, size, alignment, file and name.
    Input(u64, u64, u64, &'a str, &'a str),
}

/// One line of lld's or mold's map (`None`: a symbol, or no entry).
fn vma_line(line: &str, numbers: usize) -> Option<VmaLine<'_>> {
    let mut rest = line;
    let mut values = [0u64; 4];
    for (index, value) in values.iter_mut().take(numbers).enumerate() {
        let trimmed = rest.trim_start();
        let end = trimmed.find(' ')?;
        let word = &trimmed[..end];
        // Addresses are hexadecimal (mold writes `0x`), so are lld's
        // sizes; mold's sizes and every alignment are decimal.
        let decimal = index + 1 == numbers || (numbers == 3 && index == 1);
        *value = match word.strip_prefix("0x") {
            Some(digits) => u64::from_str_radix(digits, 16).ok()?,
            None if decimal => word.parse().ok()?,
            None => u64::from_str_radix(word, 16).ok()?,
        };
        rest = &trimmed[end..];
    }
    // One space, then 8 more for an input section (none for an output
    // section, 16 for a symbol).
    let text = rest.strip_prefix(' ')?;
    if !text.starts_with(' ') {
        return Some(VmaLine::Output(values[0]));
    }
    let name = text.strip_prefix("        ")?;
    if name.starts_with(' ') {
        return None;
    }
    let (file, section) = name.strip_suffix(')')?.rsplit_once(":(")?;
    let (size, align) = (values[numbers - 2], values[numbers - 1]);
    Some(VmaLine::Input(values[0], size, align, file, section))
}

/// `0x` and hexadecimal digits, read.
fn hex(word: &str) -> Option<u64> {
    word.strip_prefix("0x")
        .and_then(|digits| u64::from_str_radix(digits, 16).ok())
}

enum GnuLine<'a> {
    /// An input section's name alone: its figures are on the next line.
    Named(&'a str),
    /// An input section: its name (`None` when alone on the line
    /// before), address, size and file.
    Section(Option<&'a str>, u64, u64, &'a str),
    Other,
}

/// One line of GNU ld's or gold's memory map; `after_name` when the line
/// before held an input section's name alone.
fn gnu_line(line: &str, after_name: bool) -> GnuLine<'_> {
    let Some(body) = line.strip_prefix(' ') else {
        return GnuLine::Other;
    };
    let words: Vec<&str> = body.split_whitespace().collect();
    let starts_with_name = !body.starts_with(' ');
    let figures = if starts_with_name {
        words.get(1..)
    } else if after_name {
        Some(&words[..])
    } else {
        None
    };
    match (starts_with_name, figures) {
        (true, Some([])) => GnuLine::Named(words[0]),
        (_, Some([address, size, file, ..])) => match (hex(address), hex(size)) {
            (Some(address), Some(size)) => {
                GnuLine::Section(starts_with_name.then_some(words[0]), address, size, file)
            }
            _ => GnuLine::Other,
        },
        _ => GnuLine::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_lld_s_map() {
        let map = "             VMA              LMA     Size Align Out     In      Symbol
             2a8              2a8       1c     1 .interp
             2a8              2a8       1c     1         <internal>:(.interp)
            1000             1000       30    16 .text
            1000             1000       10    16         a.o:(.text.f)
            1000             1000        0     1                 f
            1010             1010       20    16         lib.a(b.o):(.text.g)
            2000             2000       10     4 .bss
            2000             2000        8     4         a.o:(.bss.x)
            2008             2008        8     4         lib.a(b.o):(.bss.y)
               0                0       30     8 .rela.text
            1000             1000       18     8         c.o:(.rela.text)
";
        let sections = InputSections::parse(map).expect("read");
        let a = sections.file_at(0x1004).expect("in a.o");
        let b = sections.file_at(0x1010).expect("in b.o");
        assert_eq!(sections.file_name(a), "a.o");
        assert_eq!(sections.file_name(b), "lib.a(b.o)");
        assert_eq!(sections.file_key(b), "lib.a(b.o)");
        assert_eq!(sections.file_ending_at(0x2008), Some(a));
        assert_eq!(sections.file_starting_at(0x2008), Some(b));
        let f = sections
            .named(a, ".text.f")
            .map(|s| s.start)
            .collect::<Vec<_>>();
        assert_eq!(f, [0x1000], "by file and name");
        let y = sections.span_at(0x200c).expect("in .bss.y");
        assert_eq!(sections.section_name(y.name), ".bss.y");
        assert_eq!(sections.file_at(0x2a8), None, "what the linker made");
        let made = sections.made_between(0x2a0, 0x300);
        assert_eq!((made.len(), made[0].start, made[0].align), (1, 0x2a8, 1));
        assert_eq!(sections.section_name(made[0].name), ".interp");
        let between: Vec<(u64, u64)> = sections
            .spans_between(0x1000, 0x2000)
            .iter()
            .map(|span| (span.start, span.align))
            .collect();
        assert_eq!(between, [(0x1000, 16), (0x1010, 16)]);
        assert_eq!(sections.file_at(0x1030), None);
        assert_eq!(
            sections.file_at(0x1008),
            Some(a),
            "offsets of what is not loaded"
        );
    }

    #[test]
    fn reads_mold_s_map() {
        // As mold 1.10 writes it: `0x` addresses, decimal sizes.
        let map = "               VMA       Size Align Out     In      Symbol
          0x201000         48    16 .text
          0x201000         16    16         a.o:(.text.f)
          0x201010         32    16         b.o:(.text)
          0x202000         64     8 .rodata
          0x202000         64     8         <internal>:(.rodata.str1.1)
";
        let sections = InputSections::parse(map).expect("read");
        assert_eq!(
            sections.file_ending_at(0x201010),
            sections.file_at(0x201000)
        );
        assert_ne!(sections.file_at(0x201000), sections.file_at(0x201010));
        assert_eq!(sections.file_at(0x20102f), sections.file_at(0x201010));
        assert_eq!(sections.file_at(0x201030), None, "48 bytes, not 0x48");
        let made = sections.made_between(0x202000, 0x203000);
        assert_eq!((made[0].end, made[0].align), (0x202040, 8));
    }

    #[test]
    fn reads_gnu_ld_s_map() {
        let map = "Archive member included to satisfy reference by file (symbol)

Linker script and memory map

.text           0x0000000000401000       0x44
 *(.text.unlikely .text.*_unlikely .text.unlikely.*)
 .text          0x0000000000401000       0x14 a.o
                0x0000000000401000                main
 .text.a_rather_long_section_name
                0x0000000000401014       0x20 /usr/lib/libx.a(b.o)
 *fill*         0x0000000000401034        0xc 
 .text          0x0000000000401040        0x4 c.o

.comment        0x0000000000000000       0x2b
 .comment       0x0000000000000000       0x2b d.o
.debug_a_rather_long_name
                0x0000000000000000       0x10
 .debug_a_rather_long_name
                0x0000000000000000       0x10 e.o
";
        let sections = InputSections::parse(map).expect("read");
        let b = sections.file_at(0x401020).expect("b.o");
        assert_eq!(sections.file_name(b), "/usr/lib/libx.a(b.o)");
        assert_eq!(sections.file_key(b), "libx.a(b.o)");
        assert_eq!(
            sections.file_ending_at(0x401014),
            sections.file_at(0x401000)
        );
        assert_eq!(sections.file_starting_at(0x401014), Some(b));
        let long = sections.span_at(0x401014).expect("b's section");
        assert_eq!(
            sections.section_name(long.name),
            ".text.a_rather_long_section_name",
            "a name alone on its line"
        );
        assert_eq!(sections.named(b, ".text").count(), 0);
        assert_eq!(sections.file_at(0x401038), None, "fill");
        assert!(sections.file_at(0x401040).is_some());
        assert_eq!(sections.file_at(0), None, "not loaded");
    }

    #[test]
    fn what_is_no_map_says_so() {
        assert!(InputSections::parse("").is_err());
        assert!(InputSections::parse("hello\nworld\n").is_err());
    }
}
