//! Where everything of the compacted segment goes: the pieces of `.text`
//! (functions kept, removed, turned into thunks, padding dropped), the
//! sections after `.text` in its segment, and the map from every old
//! address to its new one.
//!
//! Rules:
//! - A kept function moves down by a multiple of its alignment. An image
//!   does not record each function's alignment, only the largest of them
//!   (`.text`'s `sh_addralign`), so a function keeps the alignment of its
//!   address up to that: no function needed more, whether or not padding
//!   before it shows it (a function can need 32 and follow one that ends
//!   on a multiple of 32).
//! - Code that runs on past its last instruction (it falls through) keeps
//!   what it runs into right after it, padding included: that piece moves
//!   with it, unaligned, and the plan keeps it (`run_on_into` in `lib.rs`).
//! - A removed function's addresses map to the same offsets in its kept
//!   copy, which is identical code: a pointer into it (a jump table entry,
//!   a return address) lands on the same instruction there.
//! - A thunk's first address maps to the thunk, the rest into the kept copy.
//! - Padding is dropped; an address in it maps to the end of what precedes it.
//! - A pinned piece (`pin.rs`: a field names it, or sits in it, in a way
//!   icf cannot write again) keeps its address, and so does the chain of
//!   pieces running into one another it belongs to; the code before it
//!   closes up and leaves a gap, the code after it closes up behind it.
//! - The sections after `.text` in its segment move down together, by a
//!   multiple of the largest alignment among them (on AArch64 at least a
//!   page, `shape.rs`: an `adrp`'s page kept past its pair still points
//!   into the same data).
//! - A piece (with the chain it heads) moves down one more alignment step
//!   at a time while an instruction of it exposed to a CPU erratum would
//!   land in a page's last words ([`icf_arch::PageEndHazard`]: AArch64's
//!   `adrp` under Cortex-A53 erratum 843419, which only an `adr` of its
//!   page, within 1 MiB, could replace there): a little padding instead of
//!   the function keeping its place.

use icf_arch::{PAGE_END_HAZARD_REACH, PAGE_END_HAZARD_START, PageEndHazard};

/// The first of `new_start`, `new_start + align`, ... at which no hazard
/// of the chain `[start, end)` exposed to its erratum lands in a page's
/// last words (one whose reach runs past the chain's end counts as
/// exposed: what follows it there is another piece); `new_start` when
/// none within a page is.
fn clear_of_page_ends(
    hazards: &[PageEndHazard],
    start: u64,
    end: u64,
    new_start: u64,
    align: u64,
) -> u64 {
    let from = hazards.partition_point(|a| a.address < start);
    let to = hazards.partition_point(|a| a.address < end);
    let exposed: Vec<u64> = hazards[from..to]
        .iter()
        .filter(|a| a.exposed || a.address + PAGE_END_HAZARD_REACH >= end)
        .map(|a| a.address - start)
        .collect();
    if exposed.is_empty() {
        return new_start;
    }
    let clear = |at: u64| {
        exposed
            .iter()
            .all(|&offset| (at + offset) & 0xfff < PAGE_END_HAZARD_START)
    };
    (0..4096 / align.max(4))
        .map(|step| new_start + step * align)
        .find(|&at| clear(at))
        .unwrap_or(new_start)
}

/// What becomes of one piece of `.text`.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Fate {
    /// Moves down, bytes unchanged but for the fields that name moved places.
    Keep,
    /// Alignment padding: dropped.
    Padding,
    /// Removed: its addresses are the kept copy's (the piece's index).
    Alias(usize),
    /// Becomes a jump to the kept copy (the piece's index), of this many bytes.
    Thunk(usize),
}

/// One piece of `.text`, by address.
#[derive(Clone, Debug)]
pub struct Piece {
    pub start: u64,
    pub end: u64,
    pub fate: Fate,
    /// Where it starts in the new `.text` (for padding and removed pieces:
    /// the end of the content before it).
    pub new_start: u64,
    /// For a thunk, its size.
    pub thunk_size: u64,
    pub align: u64,
    /// The code before runs on into it: it follows that code with no gap.
    pub joined: bool,
    /// It keeps its address (and its body: the plan keeps it).
    pub pinned: bool,
}

/// The new place of everything in the segment holding `.text`.
#[derive(Clone, Debug)]
pub struct Layout {
    pub pieces: Vec<Piece>,
    /// Each piece's start, for lookups by address.
    starts: Starts,
    pub text_start: u64,
    pub text_end: u64,
    pub new_text_end: u64,
    /// The addresses after `.text` in its segment: `tail_start..tail_end`.
    pub tail_start: u64,
    pub tail_end: u64,
    /// How far they move down (the segment's shift included: the segment
    /// gets `tail_delta - shift` shorter).
    pub tail_delta: u64,
    /// Jump tables folded with their functions, sorted: (start, end, the
    /// kept copy's start). Their bytes stay; only their symbols move.
    pub data_aliases: Vec<(u64, u64, u64)>,
    /// The exception tables compacted in their own segment, when they are
    /// (`eh_frame::region`).
    pub region: Option<Region>,
    /// How far the whole segment holding `.text` moves down in addresses
    /// ([`Layout::shift_code_down`]); 0 when it keeps its address.
    pub shift: u64,
}

/// Sorted addresses (the pieces' starts), searched by address: a few
/// million lookups in an LLVM-size program (every field's place and
/// target, every symbol, every kept relocation). A binary search over all
/// of them cost 4% of shrink's time; a bucket of `2^BUCKET_SHIFT` bytes
/// says which few starts an address can follow.
#[derive(Clone, Debug)]
struct Starts {
    starts: Vec<u64>,
    /// For each bucket `b` (and one past the last): how many starts lie
    /// at or before `first + (b << BUCKET_SHIFT)`.
    before_bucket: Vec<u32>,
}

const BUCKET_SHIFT: u32 = 8;

impl Starts {
    fn new(starts: Vec<u64>) -> Starts {
        debug_assert!(starts.is_sorted());
        let (Some(&first), Some(&last)) = (starts.first(), starts.last()) else {
            return Starts {
                starts,
                before_bucket: Vec::new(),
            };
        };
        let buckets = ((last - first) >> BUCKET_SHIFT) + 2;
        // An index is at most the number of pieces; a `.text` of more
        // than 2^32 pieces keeps the plain search (no buckets).
        let before_bucket = if u32::try_from(starts.len()).is_ok() {
            let mut at = 0;
            (0..buckets)
                .map(|bucket| {
                    let edge = first.saturating_add(bucket << BUCKET_SHIFT);
                    while starts.get(at).is_some_and(|&start| start <= edge) {
                        at += 1;
                    }
                    at as u32
                })
                .collect()
        } else {
            Vec::new()
        };
        Starts {
            starts,
            before_bucket,
        }
    }

    /// The index of the last start at or before `address`.
    fn last_at_or_before(&self, address: u64) -> Option<usize> {
        let first = *self.starts.first()?;
        let bucket = (address.checked_sub(first)? >> BUCKET_SHIFT) as usize;
        let (low, high) = match (
            self.before_bucket.get(bucket),
            self.before_bucket.get(bucket + 1),
        ) {
            (Some(&low), Some(&high)) => (low as usize, high as usize),
            _ => (0, self.starts.len()),
        };
        let within = self.starts[low..high].partition_point(|&start| start <= address);
        (low + within).checked_sub(1)
    }
}

/// A run of read-only sections compacted besides `.text`, to the end of
/// the segment holding them: the exception tables, whose removed
/// functions' FDEs are dropped and whose `.eh_frame_hdr` table gets
/// shorter, and the sections after them, moved down keeping their
/// alignment. The segment gets shorter; nothing else in it moves.
#[derive(Clone, Debug)]
pub struct Region {
    /// The `PT_LOAD` holding it.
    pub segment: usize,
    /// Old addresses: `start..end` (`end` the segment's).
    pub start: u64,
    pub end: u64,
    /// The runs of bytes kept: (old start, old end, new start), sorted and
    /// disjoint; bytes between them are dropped.
    pub runs: Vec<(u64, u64, u64)>,
    /// Where the segment's content ends now.
    pub new_end: u64,
    /// Read-only constants removed as copies of others
    /// (`data_fold`): (start, end, the kept copy's start), sorted. Their
    /// addresses are the kept copy's.
    pub redirects: Vec<(u64, u64, u64)>,
    /// PC-relative fields in data naming a constant, by place: the start
    /// of the input section each names (`data_fold`).
    pub anchors: std::collections::HashMap<u64, u64>,
    /// Exception tables dropped as copies of others (their FDEs name
    /// the copy kept; `redirects` holds them too).
    pub shared_exception_tables: usize,
    /// Something else starts at `end`: the next segment, when the linker
    /// lays segments out back to back in addresses as in the file (mold
    /// does when the region's segment ends on a page). An address equal to
    /// `end` is then that segment's (its first section, a PLT entry, a
    /// symbol at its start) and stays, rather than one past the region's
    /// content, which follows the content ([`Layout::map_end_of`]).
    pub end_starts_next: bool,
}

impl Region {
    /// The run holding `address`, or the index of the first after it.
    fn run(&self, address: u64) -> Result<usize, usize> {
        let after = self.runs.partition_point(|&(start, _, _)| start <= address);
        match after.checked_sub(1) {
            Some(i) if address < self.runs[i].1 => Ok(i),
            _ => Err(after),
        }
    }

    /// Where `address` (in the region) goes: into its run, or for a
    /// dropped byte, where the next run starts.
    fn map(&self, address: u64) -> u64 {
        let after = self
            .redirects
            .partition_point(|&(start, _, _)| start <= address);
        if let Some(&(start, end, kept)) = after.checked_sub(1).map(|i| &self.redirects[i])
            && address < end
        {
            return self.map(kept + (address - start));
        }
        match self.run(address) {
            Ok(i) => self.runs[i].2 + (address - self.runs[i].0),
            Err(next) => self.runs.get(next).map_or(self.new_end, |run| run.2),
        }
    }

    /// Whether `start..end` moves as one block: outside the region, or in
    /// one run of it.
    pub fn rigid(&self, start: u64, end: u64) -> bool {
        let inside = |a: u64| (self.start..self.end).contains(&a);
        if !inside(start)
            && !inside(end.saturating_sub(1))
            && (end <= self.start || start >= self.end)
        {
            return true;
        }
        matches!((self.run(start), self.run(end.saturating_sub(1).max(start))), (Ok(a), Ok(b)) if a == b)
    }

    /// How long `start..end` is in the output: from where its first kept
    /// byte goes to just past its last, with any padding between its runs
    /// (what keeps a table after a dropped one aligned).
    pub fn new_size(&self, start: u64, end: u64) -> u64 {
        let mut overlapping = self
            .runs
            .iter()
            .filter(|&&(from, to, _)| from < end && to > start);
        let Some(&first) = overlapping.next() else {
            return 0;
        };
        let (first_from, _, first_new) = first;
        let (last_from, last_to, last_new) = overlapping.next_back().copied().unwrap_or(first);
        let new_start = first_new + (start.max(first_from) - first_from);
        let new_end = last_new + (last_to.min(end) - last_from);
        new_end.saturating_sub(new_start)
    }

    /// How much shorter the segment is.
    pub fn freed(&self) -> u64 {
        self.end - self.new_end
    }
}

/// No function is aligned beyond a page.
const MAX_ALIGNMENT: u64 = 4096;

fn own_alignment(address: u64) -> u64 {
    if address == 0 {
        MAX_ALIGNMENT
    } else {
        (1u64 << address.trailing_zeros()).min(MAX_ALIGNMENT)
    }
}

/// The alignment each function of `.text` needs. An image records only
/// the largest (`.text`'s `sh_addralign`), so without more a function
/// keeps the alignment of its address up to that: no function needed
/// more. The link map (lld's and mold's list each input section's
/// alignment) says what the compiler asked for: a function that starts
/// an input section needs that section's alignment, and one inside it
/// at most that and the alignment of its offset in it. A function at a
/// multiple of 64 whose section asked for 4 then closes up to the code
/// before it instead of keeping 64 (AArch64's opt_lite: 37 KB of
/// padding).
#[derive(Clone, Debug)]
pub struct Alignments {
    text_align: u64,
    /// The input sections of `.text` the map gives an alignment for:
    /// (start, end, alignment), sorted and disjoint.
    sections: Vec<(u64, u64, u64)>,
}

impl Alignments {
    /// Every function keeps the alignment of its address, up to
    /// `text_align`.
    pub fn inferred(text_align: u64) -> Alignments {
        Alignments {
            text_align: text_align.max(1),
            sections: Vec::new(),
        }
    }

    /// As the map's input sections `spans` (sorted, disjoint, with bytes)
    /// say, where it gives an alignment; inferred elsewhere (what the
    /// linker made: thunks, patches).
    pub fn from_map(text_align: u64, spans: &[icf_linkmap::Span]) -> Alignments {
        let sections = spans
            .iter()
            .filter(|span| span.align.is_power_of_two())
            .map(|span| (span.start, span.end, span.align))
            .collect();
        Alignments {
            text_align: text_align.max(1),
            sections,
        }
    }

    /// What a function starting at `address` needs.
    pub fn of(&self, address: u64) -> u64 {
        let inferred = own_alignment(address).min(self.text_align);
        let after = self
            .sections
            .partition_point(|&(start, _, _)| start <= address);
        match after.checked_sub(1).map(|i| self.sections[i]) {
            Some((start, end, align)) if address < end => {
                let within = match address - start {
                    0 => align,
                    offset => own_alignment(offset).min(align),
                };
                inferred.min(within)
            }
            _ => inferred,
        }
    }
}

impl Layout {
    /// Lays out `pieces` (covering `.text` from `text_start` to `text_end`,
    /// sorted, fates set, `thunk_size` set for thunks; each needing what
    /// `alignments` says) and the tail of the segment `tail_start..tail_end`,
    /// whose content must keep alignment `tail_align`. `hazards`: the
    /// instructions of `.text` a CPU erratum keeps out of page ends
    /// ([`icf_arch::Architecture::page_end_hazards`]).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        mut pieces: Vec<Piece>,
        text_start: u64,
        text_end: u64,
        alignments: &Alignments,
        tail_start: u64,
        tail_end: u64,
        tail_align: u64,
        hazards: &[PageEndHazard],
    ) -> anyhow::Result<Layout> {
        // What each piece needs, and a kept copy what every member folded
        // into it needs: an alias's address is the kept copy's.
        let needs = |piece: &Piece| alignments.of(piece.start);
        let mut required: Vec<u64> = pieces.iter().map(needs).collect();
        for (index, piece) in pieces.iter().enumerate() {
            if let Fate::Alias(kept) = piece.fate {
                required[kept] = required[kept].max(required[index]);
            }
        }
        // A piece the kept code before it runs into moves with that code:
        // the chain moves as one, by a multiple of what each of its pieces
        // needs.
        let joined: Vec<bool> = (0..pieces.len())
            .map(|i| pieces[i].joined && i > 0 && pieces[i - 1].fate == Fate::Keep)
            .collect();
        // A chain keeps its place when one of its pieces does.
        for i in (1..pieces.len()).rev() {
            if joined[i] && pieces[i].pinned {
                pieces[i - 1].pinned = true;
            }
        }
        for i in 1..pieces.len() {
            if joined[i] && pieces[i - 1].pinned {
                pieces[i].pinned = true;
            }
        }
        let mut chain_align = required.clone();
        for i in (1..pieces.len()).rev() {
            if joined[i] {
                chain_align[i - 1] = chain_align[i - 1].max(chain_align[i]);
            }
        }
        // Where the chain each piece heads ends (its own end when alone).
        let mut chain_ends: Vec<u64> = pieces.iter().map(|piece| piece.end).collect();
        for i in (1..pieces.len()).rev() {
            if joined[i] {
                chain_ends[i - 1] = chain_ends[i];
            }
        }
        let mut cursor = text_start;
        for (index, piece) in pieces.iter_mut().enumerate() {
            let size = match piece.fate {
                Fate::Padding | Fate::Alias(_) => {
                    piece.new_start = cursor;
                    continue;
                }
                Fate::Thunk(_) => piece.thunk_size,
                Fate::Keep => piece.end - piece.start,
            };
            if joined[index] {
                piece.align = 1;
                piece.new_start = cursor;
            } else if piece.pinned {
                if cursor > piece.start {
                    anyhow::bail!(
                        "the function at {:#x} must keep its place, and the code before it, \
                         aligned for the functions folded into it, no longer fits before it",
                        piece.start
                    );
                }
                piece.align = 1;
                piece.new_start = piece.start;
            } else {
                // Alone, a multiple of its alignment; at the head of a chain,
                // the first place at or after the cursor that is where it
                // was, modulo the chain's alignment, so that every piece of
                // the chain keeps its own.
                let align = chain_align[index];
                let chained = joined.get(index + 1).copied().unwrap_or(false);
                let residue = if chained { piece.start % align } else { 0 };
                piece.align = align;
                piece.new_start = cursor + (residue + align - cursor % align) % align;
                if !hazards.is_empty() {
                    let chain_end = chain_ends[index];
                    piece.new_start =
                        clear_of_page_ends(hazards, piece.start, chain_end, piece.new_start, align);
                }
            }
            cursor = piece.new_start + size;
        }
        let freed = text_end - cursor;
        let tail_delta = if tail_start > tail_end {
            0
        } else {
            freed / tail_align * tail_align
        };
        Ok(Layout {
            starts: Starts::new(pieces.iter().map(|piece| piece.start).collect()),
            pieces,
            text_start,
            text_end,
            new_text_end: cursor,
            tail_start,
            tail_end,
            tail_delta,
            data_aliases: Vec::new(),
            region: None,
            shift: 0,
        })
    }

    /// Moves everything laid out in the segment holding `.text` (which
    /// `.text` starts) down by `distance` more, a multiple of a page and
    /// of every alignment in it, so that nothing's place in its page or
    /// its alignment changes: the segment closes up behind the one
    /// before it, which got shorter (`write::code_shift`). No piece may
    /// be pinned: a pinned piece keeps its address.
    pub fn shift_code_down(&mut self, distance: u64) {
        if distance == 0 {
            return;
        }
        debug_assert!(self.pieces.iter().all(|piece| !piece.pinned));
        for piece in &mut self.pieces {
            piece.new_start -= distance;
        }
        self.new_text_end -= distance;
        self.tail_delta += distance;
        self.shift += distance;
    }

    /// Where a symbol of data at `address` goes: into the kept copy of a
    /// folded table, else nowhere.
    pub fn data_symbol(&self, address: u64) -> Option<u64> {
        let after = self
            .data_aliases
            .partition_point(|&(start, _, _)| start <= address);
        let &(start, end, kept) = self.data_aliases.get(after.checked_sub(1)?)?;
        (address < end).then(|| kept + (address - start))
    }

    /// The piece holding `address` in `.text`.
    fn piece_at(&self, address: u64) -> Option<&Piece> {
        self.piece_index_at(address)
            .map(|index| &self.pieces[index])
    }

    /// The index of the piece holding `address` in `.text`.
    pub fn piece_index_at(&self, address: u64) -> Option<usize> {
        if !(self.text_start..self.text_end).contains(&address) {
            return None;
        }
        self.starts.last_at_or_before(address)
    }

    /// Where the place at `address` is after compaction.
    pub fn map(&self, address: u64) -> u64 {
        if let Some(piece) = self.piece_at(address) {
            let offset = address - piece.start;
            return match piece.fate {
                Fate::Keep => piece.new_start + offset,
                Fate::Padding => piece.new_start,
                Fate::Alias(kept) => self.pieces[kept].new_start + offset,
                Fate::Thunk(_) if offset == 0 => piece.new_start,
                Fate::Thunk(kept) => self.pieces[kept].new_start + offset,
            };
        }
        if (self.text_end..self.tail_start).contains(&address) {
            return self.new_text_end;
        }
        // The segment's end is the next segment's start: it stays.
        if (self.tail_start..self.tail_end).contains(&address) {
            return address - self.tail_delta;
        }
        // The region's end is its last section's end (a `__stop_` symbol):
        // it follows the content, unless it is where the next segment
        // starts.
        if let Some(region) = &self.region
            && (region.start..=region.end).contains(&address)
            && !(address == region.end && region.end_starts_next)
        {
            return region.map(address);
        }
        address
    }

    /// Where the end of something that ends at `address` goes: as
    /// [`Layout::map`], but the region's end follows its content even
    /// where the next segment starts there (a symbol of a section in the
    /// region that marks the section's end).
    pub fn map_end_of(&self, address: u64) -> u64 {
        match &self.region {
            Some(region) if address == region.end => region.map(address),
            _ => self.map(address),
        }
    }

    /// Whether the bytes at `address` are carried into the output (not
    /// in a removed function, a thunk's old body, dropped padding or a
    /// dropped FDE).
    pub fn is_carried(&self, address: u64) -> bool {
        let dropped = self.region.as_ref().is_some_and(|region| {
            (region.start..region.end).contains(&address) && region.run(address).is_err()
        });
        !dropped
            && self
                .piece_at(address)
                .is_none_or(|piece| piece.fate == Fate::Keep)
    }

    /// The first address of the piece of `.text` holding `address`.
    pub fn piece_start(&self, address: u64) -> Option<u64> {
        self.piece_at(address).map(|piece| piece.start)
    }

    /// The size of the thunk the piece holding `address` becomes.
    pub fn thunk_size_at(&self, address: u64) -> Option<u64> {
        self.piece_at(address)
            .filter(|piece| matches!(piece.fate, Fate::Thunk(_)))
            .map(|piece| piece.thunk_size)
    }

    /// The fate of the piece of `.text` holding `address`.
    pub fn fate_at(&self, address: u64) -> Option<Fate> {
        self.piece_at(address).map(|piece| piece.fate)
    }

    /// Where a section that started at `address` starts: `.text` stays
    /// (but for the segment's shift), the sections after it move with
    /// the tail.
    pub fn new_section_address(&self, address: u64) -> u64 {
        if address == self.text_start {
            address - self.shift
        } else {
            self.map(address)
        }
    }

    /// Whether `address` is not inside `.text` (where pieces move apart).
    pub fn is_outside_text(&self, address: u64) -> bool {
        !(self.text_start..self.text_end).contains(&address)
    }

    /// The functions folded into a kept copy whose alignment the copy's new
    /// address does not keep (a copy that must follow the code running into
    /// it could not be aligned for its aliases), as (its address, the kept
    /// copy's new address).
    pub fn misaligned_aliases(&self, alignments: &Alignments) -> Vec<(u64, u64)> {
        self.pieces
            .iter()
            .filter_map(|piece| {
                let Fate::Alias(kept) = piece.fate else {
                    return None;
                };
                let need = alignments.of(piece.start);
                let at = self.pieces[kept].new_start;
                (at % need != 0).then_some((piece.start, at))
            })
            .collect()
    }

    /// Where the `S + A` of the kept relocation at `place` goes: with
    /// the input section its symbol lies in, where `data_fold` knows it
    /// (a PC-relative field in data, whose `S + A` need not lie in that
    /// section), else as [`Layout::map`].
    pub fn map_named(&self, place: u64, meaning: u64) -> u64 {
        match self
            .region
            .as_ref()
            .and_then(|region| region.anchors.get(&place))
        {
            Some(&anchor) => self.map(anchor).wrapping_add(meaning.wrapping_sub(anchor)),
            None => self.map(meaning),
        }
    }

    /// Whether anything at `address` moves.
    pub fn moves(&self, address: u64) -> bool {
        self.map(address) != address
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn a_kept_copy_is_aligned_as_the_most_aligned_function_folded_into_it() {
        // f at 0x1010 (16), g at 0x1100 (256 with .text aligned to 256) an alias of f.
        let pieces = vec![
            piece(0x1000, 0x1010, Fate::Keep),
            piece(0x1010, 0x1020, Fate::Keep),
            piece(0x1020, 0x1100, Fate::Padding),
            piece(0x1100, 0x1110, Fate::Alias(1)),
        ];
        let layout =
            lay_out(pieces, (0x1000, 0x1110), 256, (0x1110, 0x1200), 16).expect("laid out");
        assert_eq!(layout.map(0x1010), 0x1100);
        assert_eq!(layout.map(0x1100), 0x1100);
        assert!(
            layout
                .misaligned_aliases(&Alignments::inferred(256))
                .is_empty()
        );
    }

    /// [`Layout::new`] of `pieces` in `.text` at `text` (aligned to
    /// `text_align`, functions' alignment inferred), with the tail at
    /// `tail`, and no erratum hazards.
    fn lay_out(
        pieces: Vec<Piece>,
        (text_start, text_end): (u64, u64),
        text_align: u64,
        (tail_start, tail_end): (u64, u64),
        tail_align: u64,
    ) -> anyhow::Result<Layout> {
        Layout::new(
            pieces,
            text_start,
            text_end,
            &Alignments::inferred(text_align),
            tail_start,
            tail_end,
            tail_align,
            &[],
        )
    }

    /// A layout of an empty `.text` at 0x1000, with nothing after it.
    fn empty_layout() -> Layout {
        lay_out(Vec::new(), (0x1000, 0x1000), 1, (0x1000, 0x1000), 1).expect("laid out")
    }

    /// A piece laid out nowhere yet (a thunk of 5 bytes).
    pub(crate) fn piece(start: u64, end: u64, fate: Fate) -> Piece {
        Piece {
            start,
            end,
            fate,
            new_start: 0,
            thunk_size: 5,
            align: 1,
            joined: false,
            pinned: false,
        }
    }

    #[test]
    fn kept_functions_close_up_keeping_alignment_and_aliases_map_into_the_kept_copy() {
        // 0x1000 f (kept, 0x30), pad, 0x1040 g (alias of f), pad, 0x1080 h (kept),
        // 0x10a3 i (kept right after h), 0x10b0 j thunk of f.
        let pieces = vec![
            piece(0x1000, 0x1030, Fate::Keep),
            piece(0x1030, 0x1040, Fate::Padding),
            piece(0x1040, 0x1070, Fate::Alias(0)),
            piece(0x1070, 0x1080, Fate::Padding),
            piece(0x1080, 0x10a3, Fate::Keep),
            piece(0x10a3, 0x10b0, Fate::Keep),
            piece(0x10b0, 0x10e0, Fate::Thunk(0)),
        ];
        let layout = lay_out(pieces, (0x1000, 0x10e0), 32, (0x10e0, 0x1200), 16).expect("laid out");
        assert_eq!(layout.map(0x1010), 0x1010);
        assert_eq!(layout.map(0x1048), 0x1008, "into the kept copy");
        // h at 0x1080 keeps 32 (.text's alignment), i at an odd address 1.
        assert_eq!(layout.map(0x1080), 0x1040);
        assert_eq!(layout.map(0x10a3), 0x1063);
        // j: 16-aligned.
        assert_eq!(layout.map(0x10b0), 0x1070);
        assert_eq!(
            layout.map(0x10b4),
            0x1004,
            "inside a thunk is inside the kept copy"
        );
        assert_eq!(layout.new_text_end, 0x1075);
        assert_eq!(layout.tail_delta, 0x60);
        assert_eq!(layout.map(0x1100), 0x10a0);
        assert_eq!(
            layout.map(0x1035),
            0x1030,
            "padding maps to the end before it"
        );
        assert!(
            layout
                .misaligned_aliases(&Alignments::inferred(32))
                .is_empty()
        );
        assert!(!layout.is_carried(0x1048));
        assert!(layout.is_carried(0x1090));
    }

    #[test]
    fn a_pinned_piece_and_the_chain_it_is_in_keep_their_place_and_the_rest_closes_up() {
        // f kept, g alias of f, h kept runs on into i (pinned), j kept after.
        let mut pieces = vec![
            piece(0x1000, 0x1010, Fate::Keep),
            piece(0x1010, 0x1020, Fate::Alias(0)),
            piece(0x1020, 0x1028, Fate::Keep),
            piece(0x1028, 0x1030, Fate::Keep),
            piece(0x1030, 0x1040, Fate::Alias(0)),
            piece(0x1040, 0x1050, Fate::Keep),
        ];
        pieces[3].joined = true;
        pieces[3].pinned = true;
        let layout = lay_out(pieces, (0x1000, 0x1050), 16, (0x1050, 0x1060), 16).expect("laid out");
        assert_eq!(layout.map(0x1020), 0x1020, "h runs into i: the chain stays");
        assert_eq!(layout.map(0x1028), 0x1028);
        assert!(layout.pieces[2].pinned);
        assert_eq!(layout.map(0x1040), 0x1030, "j closes up behind i");
        assert_eq!(layout.new_text_end, 0x1040);
    }

    /// A `Span` of the map: `start..end` aligned to `align`.
    fn span(start: u64, end: u64, align: u64) -> icf_linkmap::Span {
        icf_linkmap::Span {
            start,
            end,
            file: 0,
            name: 0,
            align,
        }
    }

    #[test]
    fn the_map_says_what_alignment_a_function_asked_for() {
        // .text aligned to 64; f's section (0x1000..0x1080) asked for 4 and
        // holds g at 0x1040 too; h's (0x1080..0x10c0) asked for 64; what the
        // map does not list (0x10c0.., a linker's thunk) keeps its address's.
        let alignments =
            Alignments::from_map(64, &[span(0x1000, 0x1080, 4), span(0x1080, 0x10c0, 64)]);
        assert_eq!(alignments.of(0x1000), 4);
        assert_eq!(alignments.of(0x1040), 4);
        assert_eq!(alignments.of(0x1080), 64);
        // Inside a section: at most its offset's alignment.
        assert_eq!(alignments.of(0x10a0), 32);
        assert_eq!(alignments.of(0x10c0), 64);
        assert_eq!(alignments.of(0x10c8), 8);
        // Never more than the address has, whatever a map says.
        let wrong = Alignments::from_map(64, &[span(0x1004, 0x1010, 16)]);
        assert_eq!(wrong.of(0x1004), 4);
        assert_eq!(Alignments::inferred(64).of(0x1040), 64);
    }

    #[test]
    fn a_function_at_a_multiple_of_64_that_asked_for_4_closes_up() {
        // f 0x1000..0x1010 and g 0x1040..0x1050 kept, padding between; g's
        // section asked for 4.
        let pieces = || {
            vec![
                piece(0x1000, 0x1010, Fate::Keep),
                piece(0x1010, 0x1040, Fate::Padding),
                piece(0x1040, 0x1050, Fate::Keep),
            ]
        };
        let from_map =
            Alignments::from_map(64, &[span(0x1000, 0x1010, 16), span(0x1040, 0x1050, 4)]);
        let layout = Layout::new(pieces(), 0x1000, 0x1050, &from_map, 0x1050, 0x1060, 16, &[])
            .expect("laid out");
        assert_eq!(layout.map(0x1040), 0x1010);
        let inferred = Alignments::inferred(64);
        let layout = Layout::new(pieces(), 0x1000, 0x1050, &inferred, 0x1050, 0x1060, 16, &[])
            .expect("laid out");
        assert_eq!(layout.map(0x1040), 0x1040);
    }

    #[test]
    fn an_exposed_adrp_is_kept_out_of_a_page_s_last_two_words() {
        // C moves down by 16 (B is removed): its adrp at 0x2008 would land
        // at 0x1ff8, a page's second-last word; one more step clears it.
        let pieces = || {
            vec![
                piece(0x1000, 0x1010, Fate::Keep),
                piece(0x1010, 0x1020, Fate::Alias(0)),
                piece(0x1020, 0x2100, Fate::Keep),
            ]
        };
        let laid_out = |hazards: &[PageEndHazard]| {
            Layout::new(
                pieces(),
                0x1000,
                0x2100,
                &Alignments::inferred(16),
                0x2100,
                0x2200,
                16,
                hazards,
            )
            .expect("laid out")
            .pieces[2]
                .new_start
        };
        assert_eq!(laid_out(&[]), 0x1010);
        let exposed = PageEndHazard {
            address: 0x2008,
            exposed: true,
        };
        assert_eq!(laid_out(&[exposed]), 0x1020);
        // Not followed by a load or store through its register: no need.
        let safe = PageEndHazard {
            exposed: false,
            ..exposed
        };
        assert_eq!(laid_out(&[safe]), 0x1010);
    }

    #[test]
    fn a_pinned_piece_the_code_before_cannot_fit_under_is_an_error() {
        // f at 0x1010 must be aligned to 256 for its alias at 0x1100, and
        // so lands at 0x1100, past pinned g at 0x1020.
        let mut pieces = vec![
            piece(0x1000, 0x1010, Fate::Keep),
            piece(0x1010, 0x1020, Fate::Keep),
            piece(0x1020, 0x1030, Fate::Keep),
            piece(0x1030, 0x1100, Fate::Padding),
            piece(0x1100, 0x1110, Fate::Alias(1)),
        ];
        pieces[2].pinned = true;
        assert!(lay_out(pieces, (0x1000, 0x1110), 256, (0x1110, 0x1200), 16).is_err());
    }

    #[test]
    fn the_exception_tables_region_maps_kept_runs_and_closes_over_dropped_bytes() {
        let mut layout = empty_layout();
        // 0x100..0x140 stays, 0x140..0x180 (an FDE) is dropped, 0x180..0x200
        // moves down to 0x140.
        layout.region = Some(Region {
            segment: 0,
            start: 0x100,
            end: 0x200,
            runs: vec![(0x100, 0x140, 0x100), (0x180, 0x200, 0x140)],
            new_end: 0x1c0,
            redirects: Vec::new(),
            anchors: Default::default(),
            shared_exception_tables: 0,
            end_starts_next: false,
        });
        assert_eq!(layout.map(0x120), 0x120);
        assert_eq!(
            layout.map(0x150),
            0x140,
            "a dropped byte: where the next run starts"
        );
        assert_eq!(layout.map(0x190), 0x150);
        assert_eq!(layout.map(0x200), 0x1c0, "the end follows the content");
        assert_eq!(layout.map(0x300), 0x300);
        assert!(!layout.is_carried(0x150));
        assert!(layout.is_carried(0x190));
        let region = layout.region.as_ref().expect("set");
        assert!(region.rigid(0x180, 0x1a0));
        assert!(!region.rigid(0x130, 0x190));
        assert!(region.rigid(0x20, 0x80), "outside");
        assert_eq!(region.new_size(0x100, 0x200), 0xc0);
        assert_eq!(region.new_size(0x140, 0x180), 0, "nothing of it kept");
        assert_eq!(region.freed(), 0x40);
        // The next segment starts where the region ends (mold, a page
        // end): the address there is its, and stays; an end of what the
        // region holds still follows the content.
        layout.region.as_mut().expect("set").end_starts_next = true;
        assert_eq!(layout.map(0x200), 0x200, "the next segment's start stays");
        assert_eq!(layout.map_end_of(0x200), 0x1c0);
        assert_eq!(layout.map(0x1ff), 0x1bf);
    }

    #[test]
    fn a_section_s_new_size_counts_the_padding_between_its_runs() {
        // A table of 9 bytes at 0x107 is dropped; the next, at 0x110,
        // keeps its offset modulo 4 and lands at 0x108, not 0x107.
        let region = Region {
            segment: 0,
            start: 0x100,
            end: 0x120,
            runs: vec![(0x100, 0x107, 0x100), (0x110, 0x120, 0x108)],
            new_end: 0x118,
            redirects: Vec::new(),
            anchors: Default::default(),
            shared_exception_tables: 0,
            end_starts_next: false,
        };
        assert_eq!(region.new_size(0x100, 0x120), 0x18);
        assert_eq!(
            region.new_size(0x104, 0x114),
            8,
            "from its first kept byte to its last"
        );
    }

    #[test]
    fn a_removed_constant_s_addresses_are_its_kept_copy_s() {
        // 0x100..0x110 kept, 0x110..0x120 a copy of it (removed), 0x120..
        // moves down to 0x110.
        let mut layout = empty_layout();
        layout.region = Some(Region {
            segment: 0,
            start: 0x100,
            end: 0x200,
            runs: vec![(0x100, 0x110, 0x100), (0x120, 0x200, 0x110)],
            new_end: 0x1f0,
            redirects: vec![(0x110, 0x120, 0x100)],
            anchors: Default::default(),
            shared_exception_tables: 0,
            end_starts_next: false,
        });
        assert_eq!(layout.map(0x110), 0x100);
        assert_eq!(layout.map(0x11c), 0x10c, "an offset into it");
        assert_eq!(layout.map(0x120), 0x110, "the next one's start");
        assert!(!layout.is_carried(0x118));
    }

    #[test]
    fn a_bucketed_search_finds_what_a_binary_search_finds() {
        // Pieces of every size, empty ones (two starts at one address)
        // and gaps of many buckets among them.
        let mut starts = vec![0x1000u64];
        let mut seed = 0x9e37_79b9_u64;
        for _ in 0..2000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            let step = match seed >> 60 {
                0 => 0,
                1 => 0x3000 + (seed >> 40) % 0x1000,
                _ => (seed >> 32) % 0x300,
            };
            starts.push(starts[starts.len() - 1] + step);
        }
        let last = starts[starts.len() - 1];
        let index = Starts::new(starts.clone());
        let mut addresses: Vec<u64> = (0..0x1100).collect();
        addresses.extend((0x1000..last + 0x400).step_by(7));
        addresses.extend([last, last + 1, u64::MAX]);
        for address in addresses {
            let expected = starts.partition_point(|&s| s <= address).checked_sub(1);
            assert_eq!(index.last_at_or_before(address), expected, "{address:#x}");
        }
        assert_eq!(Starts::new(Vec::new()).last_at_or_before(5), None);
    }
}
