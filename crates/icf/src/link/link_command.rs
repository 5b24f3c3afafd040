//! Understanding a link command line well enough to fold its inputs: which
//! arguments are object files and archives, where the output goes, whether
//! it is a `-shared` or `-r` link, which archives are whole-archive, and
//! which `-l` libraries are static archives in the `-L` directories.
//!
//! Both compiler drivers (gcc, clang, cc, c++) and linkers (ld, ld.bfd,
//! ld.gold, ld.lld, ld.mold, mold) are understood; `@file` response files are
//! expanded. Anything not understood is passed to the real command unchanged.
//!
//! Apple-style (ld64) commands, for Mach-O, are read by [`ld64`]: ld64,
//! ld64.lld, `lld -flavor darwin`, and drivers targeting an Apple platform.
//! [`LinkCommand::format`] says which kind a command is.

mod ld64;

use anyhow::Context;
use std::path::{Path, PathBuf};

/// One input the fold may replace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkInput {
    /// Index of the argument (after response-file expansion) that names it;
    /// for an entry of a `-filelist`, the argument that names the list.
    pub argument: usize,
    /// The file the linker reads (for an ld64 command: found through `-l`,
    /// prefixed by a `-filelist`'s directory, or re-rooted under
    /// `-syslibroot` as ld64.lld does).
    pub path: PathBuf,
    /// Inside `--whole-archive`, or `-force_load` or `-all_load`: every
    /// member is linked.
    pub whole_archive: bool,
    /// Found through `-l`: the argument is replaced by the path.
    pub from_library_flag: bool,
    /// The input is this comma-separated part of a `-Wl,` argument (1 is
    /// the first part after `-Wl`), not the whole argument. Only ld64
    /// commands have inputs inside `-Wl,` (`-Wl,-force_load,lib.a`).
    pub wl_part: Option<usize>,
    /// The input is an entry of one of [`LinkCommand::filelists`]; its
    /// argument names the list, not the input.
    pub filelist: Option<FilelistEntry>,
}

/// Where an input named by a `-filelist` stands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FilelistEntry {
    /// Index in [`LinkCommand::filelists`].
    pub list: usize,
    /// Index in that list's [`Filelist::entries`].
    pub entry: usize,
}

/// An ld64 `-filelist <file>[,<dir>]`: a file naming inputs, one a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filelist {
    /// The argument holding `<file>[,<dir>]`, and its part inside `-Wl,`.
    pub argument: usize,
    pub wl_part: Option<usize>,
    /// The list file.
    pub path: PathBuf,
    /// Every entry as the linker opens it, `<dir>/` prefixed, foldable or not.
    pub entries: Vec<PathBuf>,
}

/// The object format a link command produces, as far as its program and
/// options tell.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LinkFormat {
    /// GNU-style linkers and drivers: ELF.
    Elf,
    /// ld64-style linkers (ld64, ld64.lld) and drivers targeting an Apple
    /// platform: Mach-O.
    MachO,
}

/// A parsed link command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkCommand {
    /// The program and its arguments, response files expanded.
    pub program: String,
    pub args: Vec<String>,
    /// The program is a compiler driver (linker options arrive as `-Wl,`).
    pub is_driver: bool,
    /// ELF (GNU-style command) or Mach-O (ld64-style command).
    pub format: LinkFormat,
    pub inputs: Vec<LinkInput>,
    /// The `-filelist`s of an ld64 command; their foldable entries are in
    /// `inputs` with [`LinkInput::filelist`] set.
    pub filelists: Vec<Filelist>,
    pub output: Option<PathBuf>,
    /// Where in `args` the output is named: (index, the argument is `-oFILE`).
    output_argument: Option<(usize, bool)>,
    /// `-shared`; for ld64, `-dylib` or `-bundle` (a driver's `-dynamiclib`).
    pub shared: bool,
    pub relocatable: bool,
    /// `-q`/`--emit-relocs`: the output keeps its relocations.
    pub emit_relocs: bool,
    /// Which linker the command runs, as far as the command says (`-fuse-ld=`).
    pub linker: LinkerFlavor,
    /// `--gc-sections` (the last of it and `--no-gc-sections` wins); for
    /// ld64, `-dead_strip`.
    pub gc_sections: bool,
    /// What keeps sections alive besides the defaults (see `load/live.rs`):
    /// `--export-dynamic`/`-rdynamic`, `-e`, `-u`; for ld64 `-export_dynamic`,
    /// `-e`, `-u`, `-init` and the names `-exported_symbol(s_list)` give
    /// without wildcards.
    pub gc_roots: crate::load::program::GcRoots,
    /// Symbols exported to the dynamic symbol table (`--export-dynamic`,
    /// `--export-dynamic-symbol`); the lists in `export_lists` add to them.
    /// An ld64 link exports every global unless `-exported_symbol`,
    /// `-exported_symbols_list` or `-no_exported_symbols` restrict it: then
    /// the names and patterns they give (the lists are read while parsing;
    /// one icf cannot read exports everything).
    pub exports: crate::load::program::Exports,
    /// Files naming exported symbols: `--dynamic-list`,
    /// `--export-dynamic-symbol-list` and `--version-script` (GNU syntax;
    /// never set for ld64 commands).
    pub export_lists: Vec<PathBuf>,
    /// `--keep-unique` symbols: the linker must not fold them.
    pub keep_unique: Vec<String>,
    /// `--ignore-data-address-equality`: read-only data may share addresses.
    pub ignore_data_address_equality: bool,
    /// Linker scripts: `-T`, `--script`, `-dT`, `--default-script`.
    pub scripts: Vec<PathBuf>,
    /// ld64's `-ObjC`: archive members that define an Objective-C class or
    /// category (or have Objective-C sections) are loaded whether or not
    /// anything references them.
    pub load_objc_members: bool,
}

/// The linker a command ends up running; archive resolution differs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LinkerFlavor {
    /// GNU ld or gold: archives are searched where they stand on the command line.
    Ordered,
    /// lld: every archive is searched whatever its position, and a name
    /// pulls in the first member that defines it.
    Unordered,
    /// mold: as lld, but a name pulls in a member that defines it
    /// strongly before one that defines it weakly.
    Mold,
    /// Apple's own ld64 (or ld-prime): archives searched whatever their
    /// position, as lld does; not lld, so lld-only behaviour (re-rooting
    /// inputs under `-syslibroot`, `--icf`) does not apply.
    Ld64,
}

impl LinkerFlavor {
    /// The flavor of the linker named `name` (`ld.lld`, `mold`, `lld`,
    /// `-fuse-ld=`'s value...).
    fn of(name: &str) -> LinkerFlavor {
        if name.contains("mold") {
            LinkerFlavor::Mold
        } else if name.contains("lld") {
            LinkerFlavor::Unordered
        } else {
            LinkerFlavor::Ordered
        }
    }
}

/// Options of a compiler driver that take the next argument as their value.
const DRIVER_VALUE_OPTIONS: &[&str] = &[
    "-o",
    "-x",
    "-MF",
    "-MT",
    "-MQ",
    "-include",
    "-imacros",
    "-isystem",
    "-idirafter",
    "-iprefix",
    "-iquote",
    "-L",
    "-l",
    "-Xlinker",
    "-Xassembler",
    "-Xpreprocessor",
    "-T",
    "-u",
    "-e",
    "-z",
    "-target",
    "--target",
    "-B",
    "-specs",
    "--sysroot",
    "-arch",
    "-framework",
    "-I",
    "-D",
    "-U",
    "-aux-info",
    "--param",
    "-Xclang",
];

/// Options of a linker that take the next argument as their value.
const LINKER_VALUE_OPTIONS: &[&str] = &[
    "-o",
    "-L",
    "-l",
    "-T",
    "-u",
    "-e",
    "-z",
    "-m",
    "-y",
    "-R",
    "-F",
    "-f",
    "-h",
    "-a",
    "-A",
    "-b",
    "-c",
    "-G",
    "-Y",
    "--output",
    "--library-path",
    "--library",
    "--script",
    "--undefined",
    "--entry",
    "--soname",
    "-soname",
    "-rpath",
    "--rpath",
    "-rpath-link",
    "--rpath-link",
    "--dynamic-linker",
    "-dynamic-linker",
    "--version-script",
    "--dynamic-list",
    "--defsym",
    "--wrap",
    "--hash-style",
    "-Map",
    "--Map",
    "--sort-section",
    "--build-id",
    "--plugin",
    "--plugin-opt",
    "--section-start",
    "-Ttext",
    "-Tdata",
    "-Tbss",
    "--exclude-libs",
    "--thread-count",
    "--threads",
    "--icf",
    "--keep-unique",
    "--format",
    "-format",
    "--trace-symbol",
    "--emulation",
    "--print-map",
];

impl LinkCommand {
    /// Parses `command` (program first).
    pub fn parse(command: &[String]) -> anyhow::Result<LinkCommand> {
        let (program, rest) = command.split_first().context("the link command is empty")?;
        let args = expand_response_files(rest)?;
        let name = Path::new(program)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let is_linker = name == "ld"
            || name.starts_with("ld.")
            || name.starts_with("ld-")
            || name == "mold"
            || name == "lld"
            || name.starts_with("ld64")
            // `lld-19 -flavor darwin`; other `lld-<N>` commands are read
            // as they always were.
            || (name.starts_with("lld-") && ld64::is_ld64_linker(&name, &args));
        let format = if (is_linker && ld64::is_ld64_linker(&name, &args))
            || (!is_linker && ld64::driver_targets_apple(&args))
        {
            LinkFormat::MachO
        } else {
            LinkFormat::Elf
        };
        let mut parsed = LinkCommand {
            program: program.clone(),
            args,
            is_driver: !is_linker,
            format,
            inputs: Vec::new(),
            filelists: Vec::new(),
            output: None,
            output_argument: None,
            shared: false,
            relocatable: false,
            emit_relocs: false,
            gc_sections: false,
            gc_roots: crate::load::program::GcRoots::default(),
            exports: crate::load::program::Exports::default(),
            export_lists: Vec::new(),
            keep_unique: Vec::new(),
            ignore_data_address_equality: false,
            scripts: Vec::new(),
            load_objc_members: false,
            linker: LinkerFlavor::of(&name),
        };
        match format {
            LinkFormat::Elf => parsed.scan(),
            LinkFormat::MachO => ld64::scan(&mut parsed)?,
        }
        Ok(parsed)
    }

    /// Notes a linker option that decides what `--gc-sections` keeps;
    /// `next` gives the argument after it, for options that take one there.
    fn scan_gc_option(&mut self, option: &str, next: impl Fn() -> Option<String>) {
        match option {
            "--gc-sections" | "-gc-sections" => self.gc_sections = true,
            "--no-gc-sections" | "-no-gc-sections" => self.gc_sections = false,
            "--export-dynamic" | "-export-dynamic" | "-E" => self.gc_roots.export_dynamic = true,
            "-u" | "--undefined" | "-e" | "--entry" => self.gc_roots.symbols.extend(next()),
            _ => {
                let value = ["--undefined=", "--entry=", "-u", "-e"]
                    .iter()
                    .find_map(|prefix| option.strip_prefix(prefix));
                if let Some(value) = value.filter(|v| !v.is_empty()) {
                    self.gc_roots.symbols.push(value.to_string());
                }
            }
        }
    }

    /// Notes a linker option that decides what may fold: exports,
    /// `--keep-unique`, linker scripts. `next` gives the argument after it.
    fn scan_fold_option(&mut self, option: &str, next: impl Fn() -> Option<String>) {
        // Options written `--name value`, `--name=value` or (single-dash
        // forms) `-name value`.
        let valued = |names: &[&str]| -> Option<Option<String>> {
            for name in names {
                if option == *name {
                    return Some(next());
                }
                if let Some(value) = option.strip_prefix(name).and_then(|v| v.strip_prefix('=')) {
                    return Some(Some(value.to_string()));
                }
            }
            None
        };
        if matches!(option, "-q" | "--emit-relocs" | "-emit-relocs") {
            self.emit_relocs = true;
        } else if matches!(option, "--export-dynamic" | "-export-dynamic" | "-E") {
            self.exports.all = true;
        } else if option == "--ignore-data-address-equality" {
            self.ignore_data_address_equality = true;
        } else if let Some(value) = valued(&["--export-dynamic-symbol", "-export-dynamic-symbol"]) {
            self.exports.patterns.extend(value);
        } else if let Some(value) = valued(&[
            "--dynamic-list",
            "-dynamic-list",
            "--export-dynamic-symbol-list",
            "-export-dynamic-symbol-list",
            "--version-script",
            "-version-script",
        ]) {
            self.export_lists.extend(value.map(PathBuf::from));
        } else if let Some(value) = valued(&["--keep-unique", "-keep-unique"]) {
            self.keep_unique.extend(value);
        } else if let Some(value) = valued(&[
            "--script",
            "-script",
            "--default-script",
            "-default-script",
            "-dT",
        ]) {
            self.scripts.extend(value.map(PathBuf::from));
        } else if option == "-T" {
            self.scripts.extend(next().map(PathBuf::from));
        } else if let Some(script) = option.strip_prefix("-T").filter(|rest| {
            // -Ttext=, -Tdata, -Tbss and -Ttext-segment set addresses.
            !rest.is_empty()
                && !["text", "data", "bss"]
                    .iter()
                    .any(|segment| rest.starts_with(segment))
        }) {
            self.scripts.push(PathBuf::from(script));
        }
    }

    fn scan(&mut self) {
        let value_options = if self.is_driver {
            DRIVER_VALUE_OPTIONS
        } else {
            LINKER_VALUE_OPTIONS
        };
        let mut search_dirs: Vec<PathBuf> = Vec::new();
        let mut libraries: Vec<(usize, String, bool, bool)> = Vec::new();
        let mut whole_archive = false;
        let mut static_only = false;
        let mut index = 0;
        while index < self.args.len() {
            let arg = self.args[index].clone();
            // Linker options, directly or through the driver's -Wl, and -Xlinker.
            let linker_options: Vec<String> = if let Some(list) = arg.strip_prefix("-Wl,") {
                list.split(',').map(str::to_string).collect()
            } else if arg == "-Xlinker" {
                self.args.get(index + 1).cloned().into_iter().collect()
            } else if !self.is_driver {
                vec![arg.clone()]
            } else {
                Vec::new()
            };
            // A linker run directly takes an option's value as the next argument.
            let following = self.args.get(index + 1).cloned();
            let is_driver = self.is_driver;
            for (position, option) in linker_options.iter().enumerate() {
                let next = || {
                    if is_driver {
                        linker_options.get(position + 1).cloned()
                    } else {
                        following.clone()
                    }
                };
                self.scan_gc_option(option, next);
                self.scan_fold_option(option, next);
                match option.as_str() {
                    "--whole-archive" | "-whole-archive" => whole_archive = true,
                    "--no-whole-archive" | "-no-whole-archive" => whole_archive = false,
                    "-Bstatic" | "-static" | "-dn" | "-non_shared" => static_only = true,
                    "-Bdynamic" | "-dy" | "-call_shared" => static_only = false,
                    "-shared" | "--shared" | "-Bshareable" => self.shared = true,
                    "-r" | "--relocatable" | "-Ur" => self.relocatable = true,
                    _ => {}
                }
                if let Some(dir) = option.strip_prefix("-L") {
                    if !dir.is_empty() {
                        search_dirs.push(PathBuf::from(dir));
                    }
                }
            }
            if self.is_driver {
                // The driver passes these to the linker itself.
                if matches!(arg.as_str(), "-rdynamic" | "-u" | "-e")
                    || (arg.starts_with("-u") && arg.len() > 2)
                {
                    let following = self.args.get(index + 1).cloned();
                    let next = || following.clone();
                    let option = if arg == "-rdynamic" {
                        "--export-dynamic".to_string()
                    } else {
                        arg.clone()
                    };
                    self.scan_gc_option(&option, next);
                    self.scan_fold_option(&option, next);
                }
                if arg.starts_with("-T") {
                    let following = self.args.get(index + 1).cloned();
                    self.scan_fold_option(&arg, || following.clone());
                }
                match arg.as_str() {
                    "-shared" => self.shared = true,
                    "-r" => self.relocatable = true,
                    "-static" | "-static-pie" => static_only = true,
                    _ => {}
                }
                if let Some(linker) = arg.strip_prefix("-fuse-ld=") {
                    self.linker = LinkerFlavor::of(linker);
                }
            }
            if arg.starts_with("-Wl,") || arg == "-Xlinker" {
                index += if arg == "-Xlinker" { 2 } else { 1 };
                continue;
            }
            if arg == "-o" || arg == "--output" {
                self.output = self.args.get(index + 1).map(PathBuf::from);
                self.output_argument = Some((index + 1, false));
                index += 2;
                continue;
            }
            if let Some(output) = arg.strip_prefix("-o").filter(|o| !o.is_empty()) {
                self.output = Some(PathBuf::from(output));
                self.output_argument = Some((index, true));
                index += 1;
                continue;
            }
            if arg == "-L" || arg == "--library-path" {
                if let Some(dir) = self.args.get(index + 1) {
                    search_dirs.push(PathBuf::from(dir));
                }
                index += 2;
                continue;
            }
            if let Some(dir) = arg.strip_prefix("-L").filter(|d| !d.is_empty()) {
                if self.is_driver {
                    search_dirs.push(PathBuf::from(dir));
                }
                index += 1;
                continue;
            }
            if arg == "-l" || arg == "--library" {
                if let Some(name) = self.args.get(index + 1) {
                    libraries.push((index, name.clone(), static_only, whole_archive));
                }
                index += 2;
                continue;
            }
            if let Some(name) = arg.strip_prefix("-l").filter(|n| !n.is_empty()) {
                libraries.push((index, name.to_string(), static_only, whole_archive));
                index += 1;
                continue;
            }
            if arg.starts_with('-') {
                index += if value_options.contains(&arg.as_str()) {
                    2
                } else {
                    1
                };
                continue;
            }
            if is_foldable_input(Path::new(&arg)) {
                self.inputs.push(LinkInput {
                    argument: index,
                    path: PathBuf::from(&arg),
                    whole_archive,
                    from_library_flag: false,
                    wl_part: None,
                    filelist: None,
                });
            }
            index += 1;
        }
        for (argument, name, static_only, whole_archive) in libraries {
            if let Some(path) = find_static_library(&search_dirs, &name, static_only) {
                self.inputs.push(LinkInput {
                    argument,
                    path,
                    whole_archive,
                    from_library_flag: true,
                    wl_part: None,
                    filelist: None,
                });
            }
        }
        self.inputs.sort_by_key(|input| input.argument);
    }

    /// The command with its output (where [`LinkCommand::parse`] found it:
    /// `-o FILE`, `--output FILE`, `-oFILE`) replaced by `output`; `None`
    /// when it names none there.
    pub fn with_output(&self, output: &Path) -> Option<Vec<String>> {
        let (index, attached) = self.output_argument?;
        let mut args = self.args.clone();
        let output = output.display().to_string();
        *args.get_mut(index)? = if attached {
            format!("-o{output}")
        } else {
            output
        };
        Some(args)
    }

    /// Whether the command writes a link map itself (`-Map`).
    pub fn writes_map(&self) -> bool {
        self.args.iter().any(|arg| {
            let arg = arg.strip_prefix("-Wl,").unwrap_or(arg);
            arg.split(',')
                .any(|part| part.starts_with("-Map") || part.starts_with("--Map"))
        })
    }

    /// `args` with a link map written to `map` added (`-Map`, through
    /// `-Wl,` for a driver).
    pub fn with_map(&self, mut args: Vec<String>, map: &Path) -> Vec<String> {
        let flag = format!("-Map={}", map.display());
        args.push(if self.is_driver {
            format!("-Wl,{flag}")
        } else {
            flag
        });
        args
    }

    /// The command's arguments writing to `output` and keeping the
    /// relocations (`--emit-relocs`, through `-Wl,` for a driver), for a
    /// link `icf shrink` folds after it is made.
    pub fn with_output_and_relocations(&self, output: &Path) -> Option<Vec<String>> {
        let mut args = self.with_output(output)?;
        if !self.emit_relocs {
            args.push(
                if self.is_driver {
                    "-Wl,--emit-relocs"
                } else {
                    "--emit-relocs"
                }
                .to_string(),
            );
        }
        Some(args)
    }

    /// The command with each input in `replacements` (argument index → path) substituted.
    ///
    /// An argument index names one input only when the input is the whole
    /// argument, which every input of a GNU-style command is. A replacement
    /// whose argument holds an input inside a `-Wl,` part (unless it is
    /// that argument's only input) or a `-filelist` (whose rewritten list
    /// needs a directory to live in) cannot be applied here: then the whole
    /// command comes back unchanged, so a link never gets half a fold. Use
    /// [`LinkCommand::with_replaced_inputs`] for ld64 commands.
    pub fn with_inputs(&self, replacements: &[(usize, PathBuf)]) -> Vec<String> {
        let whole_arguments_only = replacements.iter().all(|(argument, _)| {
            self.inputs
                .iter()
                .all(|i| i.argument != *argument || (i.wl_part.is_none() && i.filelist.is_none()))
        });
        if !whole_arguments_only {
            let mut by_input: Vec<Option<PathBuf>> = vec![None; self.inputs.len()];
            for (argument, path) in replacements {
                let mut at_argument = self
                    .inputs
                    .iter()
                    .enumerate()
                    .filter(|(_, i)| i.argument == *argument);
                match (at_argument.next(), at_argument.next()) {
                    (Some((index, input)), None) if input.filelist.is_none() => {
                        by_input[index] = Some(path.clone());
                    }
                    _ => return self.args.clone(),
                }
            }
            return self
                .rewrite(|index, _| by_input.get(index).cloned().flatten(), None)
                .unwrap_or_else(|_| self.args.clone());
        }
        let mut args = self.args.clone();
        for (argument, path) in replacements {
            if let Some(arg) = args.get_mut(*argument) {
                *arg = path.display().to_string();
            }
            // `-l name` takes two arguments: the name goes, the path stays.
            if self
                .args
                .get(*argument)
                .is_some_and(|a| a == "-l" || a == "--library")
                && *argument + 1 < args.len()
            {
                args[*argument + 1] = String::new();
            }
        }
        args.retain(|a| !a.is_empty());
        args
    }

    /// The command with each input for which `replacement` gives a path
    /// replaced by that path, for commands of either format:
    ///
    /// - an input that is a whole argument: the argument becomes the path
    ///   (for `-l name` in two arguments, the name goes too);
    /// - an input inside `-Wl,a,b,c`: that part becomes the path (an error
    ///   if the path holds a comma, which `-Wl,` cannot carry);
    /// - an entry of a `-filelist`: a new list is written under `dir`
    ///   (`icf-filelist-<n>`, or `-<k>` after it if that is taken), holding every entry of the old one in order,
    ///   `<dir>/`-prefixed as the linker read it, replaced ones by their new
    ///   path; the `-filelist` value becomes the new list's path, without
    ///   `,<dir>`. The command line keeps its length, which is why linkers
    ///   are given filelists; the list must live as long as the link.
    pub fn with_replaced_inputs(
        &self,
        replacement: impl Fn(&LinkInput) -> Option<PathBuf>,
        dir: &Path,
    ) -> anyhow::Result<Vec<String>> {
        self.rewrite(|_, input| replacement(input), Some(dir))
    }

    /// [`LinkCommand::with_replaced_inputs`], `replacement` given each
    /// input's index as well; without `dir`, replacing a filelist entry is
    /// an error.
    fn rewrite(
        &self,
        replacement: impl Fn(usize, &LinkInput) -> Option<PathBuf>,
        dir: Option<&Path>,
    ) -> anyhow::Result<Vec<String>> {
        // Each argument as its pieces: a `-Wl,` argument that has a part
        // replaced is split at its commas (piece 0 is "-Wl"); any other
        // argument is one piece. `None` marks a piece removed.
        let mut pieces: Vec<Vec<Option<String>>> =
            self.args.iter().map(|a| vec![Some(a.clone())]).collect();
        let mut set = |argument: usize, wl_part: Option<usize>, text: Option<String>| {
            let Some(slot) = pieces.get_mut(argument) else {
                return Ok(());
            };
            let position = match wl_part {
                None => 0,
                Some(part) => {
                    if slot.len() == 1 {
                        *slot = self.args[argument]
                            .split(',')
                            .map(|p| Some(p.to_string()))
                            .collect();
                    }
                    if text.as_deref().is_some_and(|t| t.contains(',')) {
                        anyhow::bail!(
                            "cannot put {} in the argument {}: -Wl, splits it at its commas",
                            text.unwrap_or_default(),
                            self.args[argument]
                        );
                    }
                    part
                }
            };
            if let Some(piece) = slot.get_mut(position) {
                *piece = text;
            }
            Ok(())
        };
        let mut new_entries: Vec<Vec<Option<PathBuf>>> = self
            .filelists
            .iter()
            .map(|list| vec![None; list.entries.len()])
            .collect();
        for (index, input) in self.inputs.iter().enumerate() {
            let Some(path) = replacement(index, input) else {
                continue;
            };
            if let Some(entry) = input.filelist {
                if let Some(slot) = new_entries
                    .get_mut(entry.list)
                    .and_then(|entries| entries.get_mut(entry.entry))
                {
                    *slot = Some(path);
                }
                continue;
            }
            set(
                input.argument,
                input.wl_part,
                Some(path.display().to_string()),
            )?;
            // `-l name` takes two arguments: the name goes, the path stays.
            if input.from_library_flag
                && input.wl_part.is_none()
                && self
                    .args
                    .get(input.argument)
                    .is_some_and(|a| a == "-l" || a == "--library")
            {
                set(input.argument + 1, None, None)?;
            }
        }
        for (number, (list, replaced)) in self.filelists.iter().zip(&new_entries).enumerate() {
            if replaced.iter().all(Option::is_none) {
                continue;
            }
            let dir = dir.context(
                "a -filelist entry is replaced, but there is no directory for the new list",
            )?;
            let mut text = Vec::new();
            for (entry, new) in list.entries.iter().zip(replaced) {
                let path = new.as_ref().unwrap_or(entry);
                let bytes = path.as_os_str().as_encoded_bytes();
                if bytes.contains(&b'\n') {
                    anyhow::bail!("cannot write {} into a -filelist", path.display());
                }
                text.extend_from_slice(bytes);
                text.push(b'\n');
            }
            let new_list = write_new_file(dir, &format!("icf-filelist-{number}"), &text)?;
            set(
                list.argument,
                list.wl_part,
                Some(new_list.display().to_string()),
            )?;
        }
        let mut args = Vec::with_capacity(self.args.len());
        for argument in pieces {
            if argument.len() == 1 {
                args.extend(argument.into_iter().flatten());
            } else if argument[1..].iter().any(Option::is_some) {
                let kept: Vec<String> = argument.into_iter().flatten().collect();
                args.push(kept.join(","));
            }
        }
        Ok(args)
    }
}

/// Writes `bytes` to a file of `dir` that did not exist, named `name` or,
/// when that is taken (by a rewritten input of that name, say), `name-1`,
/// `name-2`...; its path.
fn write_new_file(dir: &Path, name: &str, bytes: &[u8]) -> anyhow::Result<PathBuf> {
    use std::io::Write;
    for attempt in 0.. {
        let path = match attempt {
            0 => dir.join(name),
            n => dir.join(format!("{name}-{n}")),
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                file.write_all(bytes)
                    .with_context(|| format!("writing {}", path.display()))?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
        }
    }
    unreachable!("the attempts never end")
}

/// Relocatable objects and static archives, by contents: `.o`, `.a`, `.rlib`
/// and anything else that starts like one, including the kinds icf cannot
/// fold (LLVM bitcode, raw or in the wrapper Darwin's clang writes, thin
/// archives), so the user hears why nothing folded.
/// Shared libraries and linker scripts pass through.
fn is_foldable_input(path: &Path) -> bool {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let mut magic = [0u8; 18];
    let Ok(read) = file.read(&mut magic) else {
        return false;
    };
    let magic = &magic[..read];
    // Archives, LLVM bitcode and Mach-O objects (and universal files) are
    // inputs too, though icf folds none of the last two: reading them fails
    // with an error that names them, which --strict turns into a failure.
    if magic.starts_with(b"!<arch>\n")
        || magic.starts_with(b"!<thin>\n")
        || magic.starts_with(b"BC\xc0\xde")
        || magic.starts_with(&[0xde, 0xc0, 0x17, 0x0b])
        || magic.starts_with(&[0xcf, 0xfa, 0xed, 0xfe])
        || magic.starts_with(&[0xce, 0xfa, 0xed, 0xfe])
        || magic.starts_with(&[0xca, 0xfe, 0xba, 0xbe])
    {
        return true;
    }
    // ELF, ET_REL (e_type 1 at offset 16, little-endian).
    magic.starts_with(b"\x7fELF") && magic.len() >= 18 && magic[16] == 1 && magic[17] == 0
}

/// `lib<name>.a` in the search directories, unless a shared `lib<name>.so`
/// comes first and dynamic libraries are allowed; `-l:file` names a file.
fn find_static_library(dirs: &[PathBuf], name: &str, static_only: bool) -> Option<PathBuf> {
    if let Some(file) = name.strip_prefix(':') {
        return dirs
            .iter()
            .map(|d| d.join(file))
            .find(|p| p.is_file() && is_foldable_input(p));
    }
    for dir in dirs {
        if !static_only && dir.join(format!("lib{name}.so")).exists() {
            return None;
        }
        let archive = dir.join(format!("lib{name}.a"));
        if archive.is_file() {
            return Some(archive);
        }
    }
    None
}

/// Expands `@file` arguments (GNU quoting: whitespace separates, quotes and
/// backslashes escape), recursively.
pub fn expand_response_files(args: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::with_capacity(args.len());
    for arg in args {
        match arg.strip_prefix('@') {
            Some(file) if Path::new(file).is_file() => {
                let text = std::fs::read_to_string(file)
                    .with_context(|| format!("reading response file {file}"))?;
                out.extend(expand_response_files(&split_response_file(&text))?);
            }
            _ => out.push(arg.clone()),
        }
    }
    Ok(out)
}

fn split_response_file(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut current = String::new();
    let mut in_arg = false;
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') => {
                if let Some(next) = chars.next() {
                    current.push(next);
                    in_arg = true;
                }
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_arg = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_arg {
                    args.push(std::mem::take(&mut current));
                    in_arg = false;
                }
            }
            (None, c) => {
                current.push(c);
                in_arg = true;
            }
        }
    }
    if in_arg {
        args.push(current);
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn response_files_split_like_gnu() {
        assert_eq!(
            split_response_file("a 'b c' \"d\\\"e\" f\\ g\n"),
            strings(&["a", "b c", "d\"e", "f g"])
        );
    }

    #[test]
    fn driver_options_and_outputs() {
        let command = LinkCommand::parse(&strings(&[
            "cc",
            "-m64",
            "-o",
            "out",
            "-Wl,--whole-archive",
            "-shared",
            "-Wl,--no-whole-archive",
            "-fuse-ld=lld",
            "-x",
            "c",
            "-Wl,-r",
        ]))
        .expect("parse");
        assert_eq!(command.output, Some(PathBuf::from("out")));
        let elsewhere = command.with_output(Path::new("plain")).expect("an output");
        assert_eq!(&elsewhere[1..3], strings(&["-o", "plain"]).as_slice());
        assert!(command.shared && command.relocatable && command.is_driver);
        assert_eq!(command.linker, LinkerFlavor::Unordered);
        assert!(command.inputs.is_empty());
    }

    #[test]
    fn linker_command_with_attached_output() {
        let command =
            LinkCommand::parse(&strings(&["ld.gold", "-ofoo", "--soname", "x.so"])).expect("parse");
        assert_eq!(command.output, Some(PathBuf::from("foo")));
        assert_eq!(
            command.with_output(Path::new("bar")),
            Some(strings(&["-obar", "--soname", "x.so"]))
        );
        assert!(!command.is_driver);
        assert_eq!(command.linker, LinkerFlavor::Ordered);
    }

    /// Both replacement APIs give a GNU command the same arguments: the
    /// object, `-l x` (two arguments, the name goes) and `-lx` replaced.
    #[test]
    fn gnu_inputs_are_replaced_alike_by_argument_and_by_input() {
        let dir = std::env::temp_dir().join(format!("icf-gnu-replace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch");
        let mut elf = b"\x7fELF".to_vec();
        elf.resize(16, 0);
        elf.extend([1, 0]);
        let object = dir.join("main.o");
        std::fs::write(&object, &elf).expect("object");
        std::fs::write(dir.join("libx.a"), b"!<arch>\n").expect("archive");
        let lib_dir = dir.display().to_string();
        let command = LinkCommand::parse(&strings(&[
            "cc",
            object.to_str().expect("utf-8"),
            "-L",
            &lib_dir,
            "-l",
            "x",
            "-lx",
            "-o",
            "out",
        ]))
        .expect("parse");
        assert_eq!(command.format, LinkFormat::Elf);
        assert_eq!(command.inputs.len(), 3);
        let new = |input: &LinkInput| PathBuf::from(format!("/new/{}", input.argument));
        let by_argument: Vec<(usize, PathBuf)> = command
            .inputs
            .iter()
            .map(|i| (i.argument, new(i)))
            .collect();
        let old_way = command.with_inputs(&by_argument);
        let new_way = command
            .with_replaced_inputs(|i| Some(new(i)), &dir)
            .expect("rewritten");
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            old_way,
            strings(&["/new/0", "-L", &lib_dir, "/new/3", "/new/5", "-o", "out"])
        );
        assert_eq!(new_way, old_way);
    }

    #[test]
    fn gc_sections_and_its_roots() {
        let command = LinkCommand::parse(&strings(&[
            "cc",
            "-Wl,--gc-sections,-u,hook,--entry=start_here",
            "-rdynamic",
            "-u",
            "kept",
            "-o",
            "out",
        ]))
        .expect("parse");
        assert!(command.gc_sections);
        assert!(command.gc_roots.export_dynamic);
        assert_eq!(
            command.gc_roots.symbols,
            strings(&["hook", "start_here", "kept"])
        );
        let linker = LinkCommand::parse(&strings(&[
            "ld.lld",
            "--gc-sections",
            "-ugone",
            "-u",
            "also",
            "--no-gc-sections",
            "-o",
            "out",
        ]))
        .expect("parse");
        assert!(!linker.gc_sections);
        assert_eq!(linker.gc_roots.symbols, strings(&["gone", "also"]));
    }
}
