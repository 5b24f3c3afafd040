//! Understanding a link command line well enough to fold its inputs: which
//! arguments are object files and archives, where the output goes, whether
//! it is a `-shared` or `-r` link, which archives are whole-archive, and
//! which `-l` libraries are static archives in the `-L` directories.
//!
//! Both compiler drivers (gcc, clang, cc, c++) and linkers (ld, ld.bfd,
//! ld.gold, ld.lld, ld.mold, mold) are understood; `@file` response files are
//! expanded. Anything not understood is passed to the real command unchanged.

use anyhow::Context;
use std::path::{Path, PathBuf};

/// One input the fold may replace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkInput {
    /// Index of the argument (after response-file expansion) that names it.
    pub argument: usize,
    pub path: PathBuf,
    /// Inside `--whole-archive`: every member is linked.
    pub whole_archive: bool,
    /// Found through `-l`: the argument is replaced by the path.
    pub from_library_flag: bool,
}

/// A parsed link command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkCommand {
    /// The program and its arguments, response files expanded.
    pub program: String,
    pub args: Vec<String>,
    /// The program is a compiler driver (linker options arrive as `-Wl,`).
    pub is_driver: bool,
    pub inputs: Vec<LinkInput>,
    pub output: Option<PathBuf>,
    pub shared: bool,
    pub relocatable: bool,
    /// Which linker the command runs, as far as the command says (`-fuse-ld=`).
    pub linker: LinkerFlavor,
    /// `--gc-sections` (the last of it and `--no-gc-sections` wins).
    pub gc_sections: bool,
    /// What keeps sections alive besides the defaults (see [`crate::live`]):
    /// `--export-dynamic`/`-rdynamic`, `-e`, `-u`.
    pub gc_roots: crate::program::GcRoots,
    /// Symbols exported to the dynamic symbol table (`--export-dynamic`,
    /// `--export-dynamic-symbol`); the lists in `export_lists` add to them.
    pub exports: crate::program::Exports,
    /// Files naming exported symbols: `--dynamic-list`,
    /// `--export-dynamic-symbol-list` and `--version-script`.
    pub export_lists: Vec<PathBuf>,
    /// `--keep-unique` symbols: the linker must not fold them.
    pub keep_unique: Vec<String>,
    /// `--ignore-data-address-equality`: read-only data may share addresses.
    pub ignore_data_address_equality: bool,
    /// Linker scripts: `-T`, `--script`, `-dT`, `--default-script`.
    pub scripts: Vec<PathBuf>,
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
            || name.starts_with("ld64");
        let mut parsed = LinkCommand {
            program: program.clone(),
            args,
            is_driver: !is_linker,
            inputs: Vec::new(),
            output: None,
            shared: false,
            relocatable: false,
            gc_sections: false,
            gc_roots: crate::program::GcRoots::default(),
            exports: crate::program::Exports::default(),
            export_lists: Vec::new(),
            keep_unique: Vec::new(),
            ignore_data_address_equality: false,
            scripts: Vec::new(),
            linker: LinkerFlavor::of(&name),
        };
        parsed.scan();
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
        if matches!(option, "--export-dynamic" | "-export-dynamic" | "-E") {
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
                index += 2;
                continue;
            }
            if let Some(output) = arg.strip_prefix("-o").filter(|o| !o.is_empty()) {
                self.output = Some(PathBuf::from(output));
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
                });
            }
        }
        self.inputs.sort_by_key(|input| input.argument);
    }

    /// The command with each input in `replacements` (argument index → path) substituted.
    pub fn with_inputs(&self, replacements: &[(usize, PathBuf)]) -> Vec<String> {
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
}

/// Relocatable objects and static archives, by contents: `.o`, `.a`, `.rlib`
/// and anything else that starts like one, including the kinds icf cannot
/// fold (LLVM bitcode, thin archives), so the user hears why nothing folded.
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
        assert!(command.shared && command.relocatable && command.is_driver);
        assert_eq!(command.linker, LinkerFlavor::Unordered);
        assert!(command.inputs.is_empty());
    }

    #[test]
    fn linker_command_with_attached_output() {
        let command =
            LinkCommand::parse(&strings(&["ld.gold", "-ofoo", "--soname", "x.so"])).expect("parse");
        assert_eq!(command.output, Some(PathBuf::from("foo")));
        assert!(!command.is_driver);
        assert_eq!(command.linker, LinkerFlavor::Ordered);
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
