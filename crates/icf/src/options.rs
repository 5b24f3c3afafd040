//! What the link command says about the link, as far as it changes what
//! references mean, which archive members are part of the link and which
//! symbols are exported or kept; and what the user asks of the plan.

use icf_fold::plan::Mode;

/// How the objects will be linked, as far as it changes what references mean
/// and which archive members are part of the link.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// A `-shared` link: exported (default-visibility) globals may be interposed.
    pub shared: bool,
    /// GNU ld and gold search an archive only where it stands on the command
    /// line; lld and mold (the default here) search every archive.
    pub ordered_archives: bool,
    /// mold: of the archive members defining a name, one that defines it
    /// strongly is pulled in before one that defines it weakly.
    pub strong_members_first: bool,
    /// Input files (by index) inside `--whole-archive`: all their members are linked.
    pub whole_archive: Vec<usize>,
    /// A `--gc-sections` link, with the roots its command names: code it
    /// drops is not lifted (see [`crate::live`]).
    pub gc_sections: Option<GcRoots>,
    /// Symbols the link exports to the dynamic symbol table besides what
    /// `-shared` exports: their addresses may be compared through `dlsym`.
    pub exports: Exports,
    /// The output sections the link command's linker scripts put input
    /// sections in: `Err` with the reason when icf cannot tell (then no
    /// two input sections fold together).
    pub linker_scripts: Option<Result<crate::linker_script::ScriptMap, String>>,
}

/// What a link exports to the dynamic symbol table (`--export-dynamic`,
/// `--export-dynamic-symbol`, `--dynamic-list`, version scripts).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exports {
    /// Every default-visibility global (`--export-dynamic`, or a list icf
    /// could not read).
    pub all: bool,
    /// Names and glob patterns of exported symbols.
    pub patterns: Vec<String>,
}

impl Exports {
    /// Whether the global symbol `name` is exported.
    pub fn exports(&self, name: &[u8]) -> bool {
        if self.all {
            return true;
        }
        let name = String::from_utf8_lossy(name);
        self.patterns
            .iter()
            .any(|pattern| crate::linker_script::glob(pattern, &name))
    }

    pub fn is_empty(&self) -> bool {
        !self.all && self.patterns.is_empty()
    }
}

/// What the link command says about its roots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcRoots {
    /// `--export-dynamic` (or `-rdynamic`): every default-visibility global is a root.
    pub export_dynamic: bool,
    /// The entry symbol (`-e`) and `-u` symbols.
    pub symbols: Vec<String>,
}

/// What the user asked of the plan.
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    pub mode: Mode,
    /// Symbols (mangled or demangled) that must keep their own body.
    pub keep_unique: Vec<String>,
    /// Read-only data may share an address with its twins even where the
    /// address is significant (lld's `--ignore-data-address-equality`);
    /// otherwise data keeps its address in every mode.
    pub ignore_data_address_equality: bool,
}
