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
    /// The one input is a linked executable or shared library
    /// (`icf report BINARY`), read by `icf_object::Object::parse_image`;
    /// `shared` and `exports` then come from the image itself.
    pub linked_image: bool,
    /// With `linked_image`: keep what decoding found in each piece of
    /// code (`icf_object::Image::decoded_code`), for `icf shrink`, which
    /// patches those fields.
    pub keep_decoded_code: bool,
    /// GNU ld and gold search an archive only where it stands on the command
    /// line; lld and mold (the default here) search every archive.
    pub ordered_archives: bool,
    /// mold: of the archive members defining a name, one that defines it
    /// strongly is pulled in before one that defines it weakly.
    pub strong_members_first: bool,
    /// Input files (by index) inside `--whole-archive`: all their members are linked.
    pub whole_archive: Vec<usize>,
    /// A `--gc-sections` link, with the roots its command names: code it
    /// drops is not lifted (see `load/live.rs`).
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
    /// Whether the global symbol `name` is exported. For one name; to ask
    /// of many, [`Exports::index`] once.
    pub fn exports(&self, name: &[u8]) -> bool {
        self.index().exports(name)
    }

    /// The patterns sorted for asking of many names: a linked image's
    /// exports are thousands of plain names (a shared library's whole
    /// dynamic symbol table), which a glob per name and pattern made
    /// quadratic.
    pub fn index(&self) -> ExportIndex<'_> {
        let is_glob = |pattern: &str| pattern.contains(['*', '?', '[']);
        ExportIndex {
            all: self.all,
            names: self
                .patterns
                .iter()
                .filter(|pattern| !is_glob(pattern))
                .map(|name| name.as_bytes())
                .collect(),
            globs: self
                .patterns
                .iter()
                .filter(|pattern| is_glob(pattern))
                .map(String::as_str)
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        !self.all && self.patterns.is_empty()
    }
}

/// [`Exports`] made for asking of many names ([`Exports::index`]).
#[derive(Debug)]
pub struct ExportIndex<'a> {
    all: bool,
    /// The patterns without a glob character: names, matched whole.
    names: rustc_hash::FxHashSet<&'a [u8]>,
    globs: Vec<&'a str>,
}

impl ExportIndex<'_> {
    /// Whether the global symbol `name` is exported.
    pub fn exports(&self, name: &[u8]) -> bool {
        if self.all || self.names.contains(name) {
            return true;
        }
        if self.globs.is_empty() {
            return false;
        }
        let name = String::from_utf8_lossy(name);
        self.globs
            .iter()
            .any(|pattern| crate::linker_script::glob(pattern, &name))
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
    /// Fold only the functions of the section of this name and the jump
    /// tables only they use (`icf shrink`: it removes code from an image's
    /// `.text` and moves nothing else, so a fold anywhere else could not
    /// happen, and a fold that relies on one must not be planned).
    pub only_code_in: Option<String>,
    /// Candidates that keep their own body, by section index and offset
    /// (`icf shrink`: functions a short jump from their neighbour reaches,
    /// which no copy elsewhere could be in reach of).
    pub keep_places: Vec<(u32, u64)>,
    /// Where comparator keys are kept between runs (see [`CacheChoice`]);
    /// `None` lifts every object.
    pub cache: Option<CacheSettings>,
    /// Wrong folds made on purpose after the plan, for testing `icf
    /// verify` (the hidden `--plant-fold`; see `plant.rs`). Empty except
    /// in `cargo xtask fuzz`'s planted builds.
    pub plants: Vec<PlantedFold>,
}

/// What a planted fold does (see `plant.rs`).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum PlantKind {
    Merge,
    Alias,
    Thunk,
    UnalignedThunk,
    Table,
}

impl PlantKind {
    const ALL: [PlantKind; 5] = [
        PlantKind::Merge,
        PlantKind::Alias,
        PlantKind::Thunk,
        PlantKind::UnalignedThunk,
        PlantKind::Table,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PlantKind::Merge => "merge",
            PlantKind::Alias => "alias",
            PlantKind::Thunk => "thunk",
            PlantKind::UnalignedThunk => "unaligned-thunk",
            PlantKind::Table => "table",
        }
    }
}

/// One `--plant-fold KIND:KEPT=MEMBER`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PlantedFold {
    pub kind: PlantKind,
    pub kept: String,
    pub member: String,
}

impl std::str::FromStr for PlantedFold {
    type Err = String;

    fn from_str(text: &str) -> Result<PlantedFold, String> {
        let usage = || format!("`{text}` is not KIND:KEPT=MEMBER");
        let (kind, pair) = text.split_once(':').ok_or_else(usage)?;
        let (kept, member) = pair.split_once('=').ok_or_else(usage)?;
        let kind = PlantKind::ALL
            .into_iter()
            .find(|k| k.name() == kind)
            .ok_or_else(|| {
                let names: Vec<&str> = PlantKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown kind `{kind}` (one of {})", names.join(", "))
            })?;
        if kept.is_empty() || member.is_empty() {
            return Err(usage());
        }
        Ok(PlantedFold {
            kind,
            kept: kept.to_string(),
            member: member.to_string(),
        })
    }
}

impl std::fmt::Display for PlantedFold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}={}", self.kind.name(), self.kept, self.member)
    }
}

/// Whether and where to keep comparator keys between runs (icf's cache).
/// A cached key is exactly the key icf would compute, so this never
/// changes a plan; it only saves lifting objects seen before.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CacheChoice {
    /// No cache.
    Off,
    /// `ICF_CACHE_DIR` if set; else `icf-cache` in the build's target
    /// directory (the nearest directory above the output holding cargo's
    /// `CACHEDIR.TAG`); else the user's cache directory
    /// (`$XDG_CACHE_HOME/icf`, `~/.cache/icf`). `ICF_CACHE=0` turns it off.
    #[default]
    Default,
    /// This directory.
    Dir(std::path::PathBuf),
}

/// A cache directory and how large it may grow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheSettings {
    pub dir: std::path::PathBuf,
    /// Bytes of entries kept after each run (`ICF_CACHE_SIZE`, default 2 GiB).
    pub limit: u64,
}

/// The cache size when `ICF_CACHE_SIZE` does not say.
const DEFAULT_CACHE_LIMIT: u64 = 2 << 30;

impl CacheChoice {
    /// The settings this choice means for a link writing `output` (none for
    /// other commands), reading the environment.
    pub fn resolve(&self, output: Option<&std::path::Path>) -> Option<CacheSettings> {
        let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let dir = match self {
            CacheChoice::Off => return None,
            CacheChoice::Dir(dir) => dir.clone(),
            CacheChoice::Default => {
                if env("ICF_CACHE").is_some_and(|v| v == "0" || v == "off") {
                    return None;
                }
                env("ICF_CACHE_DIR")
                    .map(Into::into)
                    .or_else(|| {
                        output
                            .and_then(target_directory)
                            .map(|t| t.join("icf-cache"))
                    })
                    .or_else(|| {
                        env("XDG_CACHE_HOME")
                            .map(std::path::PathBuf::from)
                            .or_else(|| {
                                env("HOME").map(|h| std::path::Path::new(&h).join(".cache"))
                            })
                            .map(|base| base.join("icf"))
                    })?
            }
        };
        let limit = env("ICF_CACHE_SIZE")
            .and_then(|v| parse_size(&v.to_string_lossy()))
            .unwrap_or(DEFAULT_CACHE_LIMIT);
        Some(CacheSettings { dir, limit })
    }
}

/// The nearest directory holding `output` that cargo marked as its target
/// directory (`CACHEDIR.TAG`).
fn target_directory(output: &std::path::Path) -> Option<std::path::PathBuf> {
    let output = std::path::absolute(output).ok()?;
    output
        .ancestors()
        .skip(1)
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .map(std::path::Path::to_path_buf)
}

/// `1000`, `64K`, `512M`, `2G` (powers of 1024).
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().last()? {
        (at, 'k' | 'K') => (&text[..at], 1 << 10),
        (at, 'm' | 'M') => (&text[..at], 1 << 20),
        (at, 'g' | 'G') => (&text[..at], 1 << 30),
        _ => (text, 1),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plants_read_as_kind_kept_member() {
        let plant: PlantedFold = "unaligned-thunk:f1_0=f1_2".parse().expect("a plant");
        assert_eq!(plant.kind, PlantKind::UnalignedThunk);
        assert_eq!(
            (plant.kept.as_str(), plant.member.as_str()),
            ("f1_0", "f1_2")
        );
        assert_eq!(plant.to_string(), "unaligned-thunk:f1_0=f1_2");
        assert!("alias:f=".parse::<PlantedFold>().is_err());
        assert!("fold:f=g".parse::<PlantedFold>().is_err());
        assert!("alias f=g".parse::<PlantedFold>().is_err());
    }

    #[test]
    fn sizes_read_with_units() {
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("2g"), Some(2 << 30));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn the_cache_goes_in_cargos_target_directory() {
        let root = std::env::temp_dir().join(format!("icf-target-dir-{}", std::process::id()));
        let deps = root.join("target/release/deps");
        std::fs::create_dir_all(&deps).expect("making directories");
        std::fs::write(
            root.join("target/CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55",
        )
        .expect("writing the tag");
        assert_eq!(
            target_directory(&deps.join("rg-0123")),
            Some(root.join("target"))
        );
        assert_eq!(target_directory(&root.join("a.out")), None);
        std::fs::remove_dir_all(&root).expect("cleaning up");
    }

    #[test]
    fn an_export_index_answers_as_the_patterns_do() {
        let exports = Exports {
            all: false,
            patterns: ["main", "api_*", "v?", "[ab]x"].map(String::from).to_vec(),
        };
        let index = exports.index();
        for (name, exported) in [
            ("main", true),
            ("mai", false),
            ("main2", false),
            ("api_", true),
            ("api_open", true),
            ("v1", true),
            ("v12", false),
            ("ax", true),
            ("cx", false),
        ] {
            assert_eq!(index.exports(name.as_bytes()), exported, "{name}");
            assert_eq!(exports.exports(name.as_bytes()), exported, "{name}");
        }
        let all = Exports {
            all: true,
            patterns: Vec::new(),
        };
        assert!(all.index().exports(b"anything"));
        assert!(!Exports::default().index().exports(b"main"));
    }
}
