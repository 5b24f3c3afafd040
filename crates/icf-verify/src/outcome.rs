//! What a verification is asked ([`VerifyOptions`], [`Mode`]) and what it
//! answers: an [`Outcome`] with its [`Stats`] and, when the images differ,
//! the first [`Difference`] found and where.

use std::fmt;

/// Whether distinct, observed function addresses must stay distinct.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// They must (icf's and lld's `--icf=safe`).
    #[default]
    Safe,
    /// Only data addresses must stay distinct (`--icf=all`).
    All,
}

/// How to verify.
#[derive(Clone, Debug, Default)]
pub struct VerifyOptions {
    pub mode: Mode,
    /// Trust C++'s one-definition rule for vague-linkage functions: a
    /// FOLDED function whose code is a thunk to another function is
    /// accepted without comparing bodies when PLAIN's function, FOLDED's
    /// and the thunk's target are all vague-linkage functions (`STB_WEAK`
    /// in the image's symbol table, with a C++ mangled name `_Z`; in an
    /// image whose symbol table keeps no binding at all, as mold makes
    /// every symbol of an executable local, any `_Z` function). icf
    /// folds a class of COMDAT instances that differ between units (other
    /// inlining, other optimization levels) through the kept function's
    /// identity, so the thunk reaches whichever instance the link keeps:
    /// correct under the rule (every definition of an inline function
    /// behaves alike), but not provable from the two images, whose
    /// instances may be compiled differently. Such thunks are counted in
    /// [`Stats::thunks_assumed_by_odr`]. By the same rule, a C++
    /// function's reference to one unit's internal constant stands for
    /// another unit's constant of the same name and content (libstdc++'s
    /// `std::piecewise_construct` before C++17, named from inline functions
    /// whose kept copy the two links may take from different units): no
    /// address identity is recorded for it. Everything else is checked as
    /// without the option. Off by default (`icf verify --assume-odr`).
    pub assume_odr: bool,
    /// PLAIN's link map (`-Map`; `icf verify --plain-map`): which input
    /// file each input section came from, so that an address ending one
    /// file's section and starting another's is read as the object a
    /// section-symbol relocation of the code's own file can name
    /// (`icf-linkmap`), and where both are one file's, the relocation in
    /// the input object the map names says which (`icf-linkmap`).
    /// Without it, both readings must hold.
    pub plain_map: Option<std::path::PathBuf>,
    /// FOLDED's link map (`--folded-map`): with PLAIN's, each local
    /// symbol of either image belongs to the input file the map puts its
    /// section in, so locals of one name pair by file even where the
    /// objects carry no `STT_FILE` symbol.
    pub folded_map: Option<std::path::PathBuf>,
}

/// Counts of what a run checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// PLAIN function symbols compared.
    pub functions_checked: usize,
    /// PLAIN functions whose FOLDED symbol shares its address with another's.
    pub aliases_followed: usize,
    /// PLAIN functions whose FOLDED code is a thunk that was followed.
    pub thunks_followed: usize,
    /// Pairs whose FOLDED code is a thunk between vague-linkage functions,
    /// accepted without comparing bodies ([`VerifyOptions::assume_odr`]).
    pub thunks_assumed_by_odr: usize,
    /// Pairs of code ranges proved equal (roots and the targets they led to).
    pub pairs_proved_equal: usize,
    /// PLAIN data objects compared with their FOLDED namesakes.
    pub data_objects_checked: usize,
    /// PLAIN local functions and objects FOLDED has no symbol for (folded
    /// into another unit's copy): checked only where they are used.
    pub locals_without_symbol: usize,
    /// PLAIN global functions and objects the link does not export that
    /// FOLDED lacks (`--gc-sections` dropped them once the fold left them
    /// unused): checked only where they are used.
    pub unexported_without_symbol: usize,
}

/// Why two programs differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DifferenceKind {
    /// FOLDED lacks a function or object of PLAIN.
    MissingInFolded,
    /// Two instructions differ (opcode, operands, prefixes, bytes).
    InstructionsDiffer,
    /// One side has more instructions than the other.
    CodeLengthDiffers,
    /// The targets of two equal instructions do not correspond.
    TargetsDiffer,
    /// Read-only data (or a data object) differs in content.
    DataDiffers,
    /// Addresses PLAIN keeps distinct and observes are one in FOLDED (or
    /// one observed address became two).
    SignificantAddressesMerged,
    /// An observed function address lost the alignment its declaration
    /// asks for (`__attribute__((aligned(N)))`, from DWARF).
    AlignmentLost,
    /// Two functions with equal code have exception tables that say
    /// different things (landing pads, or the types they catch).
    HandlersDiffer,
}

/// One place on the way to a difference, in both images.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    pub plain: Location,
    pub folded: Location,
}

/// A place in one image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub address: u64,
    /// `symbol+offset` (or `section+offset`).
    pub place: String,
    /// The instruction there, disassembled with its targets, when it is code.
    pub instruction: Option<String>,
}

/// The first difference found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The PLAIN function (or data object) whose check failed.
    pub function: String,
    pub kind: DifferenceKind,
    /// Why, in words.
    pub detail: String,
    /// From the root's instruction to the place of the difference: each
    /// step but the last is a reference whose targets had to verify equal.
    pub path: Vec<Site>,
}

/// The result of a verification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub stats: Stats,
    /// `None` when FOLDED was proved to do what PLAIN does.
    pub difference: Option<Difference>,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.difference.is_none()
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} functions checked ({} aliases, {} thunks followed), {} code pairs proved equal, {} data objects",
            self.functions_checked,
            self.aliases_followed,
            self.thunks_followed,
            self.pairs_proved_equal,
            self.data_objects_checked
        )?;
        if self.thunks_assumed_by_odr > 0 {
            write!(
                f,
                ", {} thunks assumed by the one-definition rule",
                self.thunks_assumed_by_odr
            )?;
        }
        if self.locals_without_symbol > 0 {
            write!(
                f,
                ", {} locals without a FOLDED symbol (checked where used)",
                self.locals_without_symbol
            )?;
        }
        if self.unexported_without_symbol > 0 {
            write!(
                f,
                ", {} unexported globals FOLDED dropped (checked where used)",
                self.unexported_without_symbol
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for DifferenceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DifferenceKind::MissingInFolded => "missing in FOLDED",
            DifferenceKind::InstructionsDiffer => "instructions differ",
            DifferenceKind::CodeLengthDiffers => "code length differs",
            DifferenceKind::TargetsDiffer => "targets do not correspond",
            DifferenceKind::DataDiffers => "data differs",
            DifferenceKind::SignificantAddressesMerged => "significant addresses merged",
            DifferenceKind::AlignmentLost => "declared alignment lost",
            DifferenceKind::HandlersDiffer => "exception handlers differ",
        })
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:#x})", self.place, self.address)?;
        if let Some(instruction) = &self.instruction {
            write!(f, ": {instruction}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} differs: {}: {}",
            self.function, self.kind, self.detail
        )?;
        for (depth, site) in self.path.iter().enumerate() {
            let indent = "  ".repeat(depth + 1);
            let lead = if depth + 1 == self.path.len() {
                "at"
            } else {
                "via"
            };
            writeln!(f, "{indent}{lead} PLAIN  {}", site.plain)?;
            writeln!(f, "{indent}   FOLDED {}", site.folded)?;
        }
        Ok(())
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.difference {
            None => writeln!(f, "verified: {}", self.stats),
            Some(difference) => write!(f, "{difference}"),
        }
    }
}
