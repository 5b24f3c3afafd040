//! Apple-style (ld64) link commands, for Mach-O: Apple's ld64 and ld-prime,
//! ld64.lld, `lld -flavor darwin`, and compiler drivers targeting an Apple
//! platform.
//!
//! A command is first turned into the arguments its linker receives,
//! each remembering where it stands in the command ([`Token`]): a linker's
//! own arguments; for a driver, the parts of its `-Wl,` arguments, the values
//! of `-Xlinker`, the bare files it passes on, and the Darwin options clang
//! hands to ld64 (`-dynamiclib` becomes `-dylib`, `-rdynamic`
//! `-export_dynamic`, `--sysroot` or `-isysroot` `-syslibroot`). Those are
//! then read the way ld64.lld reads them (its option table is the reference
//! for which options take values and how many), so that an option's value
//! is never taken for an input.
//!
//! Assumptions, where ld64 and ld64.lld differ or the command cannot tell:
//! - libraries (`-l`, `-weak-l`, `-needed-l`, `-reexport-l`, `-hidden-l`,
//!   `-upward-l`, `-lazy-l`) are searched in the `-L` directories, then
//!   `/usr/lib` and `/usr/local/lib` (unless `-Z`); an absolute directory is
//!   searched under each `-syslibroot` where it exists there, else as it is,
//!   and the default ones only under the roots (ld64.lld's rules). Each
//!   directory is tried for `lib<name>.tbd`, `.dylib`, `.so`, then `.a`
//!   (`-search_paths_first`, the default); with `-search_dylibs_first`
//!   every directory is tried for the dylib kinds before any for `.a`; with
//!   `-static` only `.a` is looked for. `-l<file>.o` names an object in the
//!   directories. Only an archive or object found this way is an input;
//!   dylibs and text stubs are left alone, as are frameworks.
//! - `-filelist <file>[,<dir>]`: when `<file>,<dir>` does not name a file,
//!   the text after the last comma is the directory (ld64's rule; ld64.lld
//!   has no `,<dir>` form). Lines are trimmed, and empty ones and those
//!   starting with `#` skipped (ld64.lld's rule). A list icf cannot read is
//!   an error: the inputs it names are unknown.
//! - With ld64.lld, an absolute input path not ending in `.o` is read under
//!   the first `-syslibroot` it exists in, as ld64.lld re-roots it.
//! - `-all_load` makes every input whole (ld64.lld applies it to archives
//!   named on the command line, in filelists and found through `-l`).
//!   `-ObjC` is recorded in [`LinkCommand::load_objc_members`].
//! - The output is shared (`-dylib`, `-bundle`) or an executable by the last
//!   of `-dylib`, `-bundle` and `-execute`.
//! - Exports: every global, unless `-exported_symbol`,
//!   `-exported_symbols_list` or `-no_exported_symbols` name what is
//!   exported (`-unexported_symbol` still leaves all others exported, so
//!   icf takes all). `-alias <name> <alias>` exports `<name>`'s address.

use super::{
    Filelist, FilelistEntry, LinkCommand, LinkFormat, LinkInput, LinkerFlavor, is_foldable_input,
};
use anyhow::Context;
use std::path::{Path, PathBuf};

/// Whether the linker `name` (a file name), run with `args`, is ld64-style:
/// `ld64*` (ld64, ld64.lld, ld64.lld-19), any linker given `-arch`, lld
/// told `-flavor darwin` (or `darwinnew`, `ld64`, `ld64.lld`), and on an
/// Apple host plain `ld`.
pub(super) fn is_ld64_linker(name: &str, args: &[String]) -> bool {
    let flavor = (name == "lld" || name.starts_with("lld-"))
        && args.first().is_some_and(|a| a == "-flavor")
        && args.get(1).is_some_and(|f| {
            matches!(
                f.to_ascii_lowercase().as_str(),
                "darwin" | "darwinnew" | "ld64" | "ld64.lld" | "ld64.lld.darwinnew"
            )
        });
    name.starts_with("ld64")
        || flavor
        || args.iter().any(|a| a == "-arch")
        || (cfg!(target_vendor = "apple") && name == "ld")
}

/// Whether a compiler driver run with `args` targets an Apple platform: its
/// target (`-target t`, `--target t`, `--target=t`, `-target=t`) names
/// `apple`, `darwin`, `macos` or `ios`, or it is given `-arch` (only Apple's
/// toolchains take it). Without a target, a driver on an Apple host does.
pub(super) fn driver_targets_apple(args: &[String]) -> bool {
    let mut target = None;
    let mut arch = false;
    let mut index = 0;
    while index < args.len() {
        let arg = args[index].as_str();
        if arg == "-target" || arg == "--target" {
            target = args.get(index + 1).map(String::as_str);
            index += 1;
        } else if let Some(value) = arg
            .strip_prefix("--target=")
            .or_else(|| arg.strip_prefix("-target="))
        {
            target = Some(value);
        } else if arg == "-arch" {
            arch = true;
            index += 1;
        } else if arg == "-Xlinker" {
            index += 1;
        }
        index += 1;
    }
    match target {
        Some(target) => {
            let target = target.to_ascii_lowercase();
            ["apple", "darwin", "macos", "ios"]
                .iter()
                .any(|word| target.contains(word))
        }
        None => arch || cfg!(target_vendor = "apple"),
    }
}

/// One argument as the linker receives it, and where it stands in the
/// command: an argument, or a part of a `-Wl,` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Token {
    text: String,
    argument: usize,
    wl_part: Option<usize>,
}

impl Token {
    fn whole(text: &str, argument: usize) -> Token {
        Token {
            text: text.to_string(),
            argument,
            wl_part: None,
        }
    }
}

/// ld64 options that take values, with how many (from ld64.lld's option
/// table, which lists ld64's, and ld64's own for the few lld takes for
/// flags). Options not here take none, apart from the joined ones
/// (`-l<name>`, `-L<dir>`, `-F<dir>`, `-O<n>`, `-y<sym>`, `--icf=...`).
const LD64_VALUE_OPTIONS: &[(&str, usize)] = &[
    ("-A", 1),
    ("-F", 1),
    ("-L", 1),
    ("-O", 1),
    ("-U", 1),
    ("-Y", 1),
    ("-add_ast_path", 1),
    ("-add_empty_section", 2),
    ("-add_linker_option", 1),
    ("-alias", 2),
    ("-alias_list", 1),
    ("-allowable_client", 1),
    ("-arch", 1),
    ("-bitcode_process_mode", 1),
    ("-bitcode_symbol_map", 1),
    ("-bridgeos_version_min", 1),
    ("-bundle_loader", 1),
    ("-cache_path_lto", 1),
    ("-client_name", 1),
    ("-commons", 1),
    ("-compatibility_version", 1),
    ("-current_version", 1),
    ("-dependency_info", 1),
    ("-dirty_data_list", 1),
    ("-dot", 1),
    ("-driverkit_version_min", 1),
    ("-dtrace", 1),
    ("-dyld_env", 1),
    ("-dylib_compatibility_version", 1),
    ("-dylib_current_version", 1),
    ("-dylib_file", 1),
    ("-dylib_install_name", 1),
    ("-dylinker_install_name", 1),
    ("-e", 1),
    ("-executable_path", 1),
    ("-exported_symbol", 1),
    ("-exported_symbols_list", 1),
    ("-exported_symbols_order", 1),
    ("-filelist", 1),
    ("-final_output", 1),
    ("-flavor", 1),
    ("-force_load", 1),
    ("-force_symbol_not_weak", 1),
    ("-force_symbol_weak", 1),
    ("-force_symbols_coalesce_list", 1),
    ("-force_symbols_not_weak_list", 1),
    ("-force_symbols_weak_list", 1),
    ("-framework", 1),
    ("-headerpad", 1),
    ("-image_base", 1),
    ("-init", 1),
    ("-install_name", 1),
    ("-interposable_list", 1),
    ("-ios_simulator_version_min", 1),
    ("-ios_version_min", 1),
    ("-iosmac_version_min", 1),
    ("-iphoneos_version_min", 1),
    ("-kext_objects_dir", 1),
    ("-lazy_framework", 1),
    ("-lazy_library", 1),
    ("-load_hidden", 1),
    ("-lto_library", 1),
    ("-maccatalyst_version_min", 1),
    ("-macos_version_min", 1),
    ("-macosx_version_min", 1),
    ("-map", 1),
    ("-max_default_common_align", 1),
    ("-max_relative_cache_size_lto", 1),
    ("-mcpu", 1),
    ("-mllvm", 1),
    ("-move_to_ro_segment", 2),
    ("-move_to_rw_segment", 2),
    ("-multiply_defined", 1),
    ("-multiply_defined_unused", 1),
    ("-needed_framework", 1),
    ("-needed_library", 1),
    ("-non_global_symbols_no_strip_list", 1),
    ("-non_global_symbols_strip_list", 1),
    ("-o", 1),
    ("-objc_abi_version", 1),
    ("-object_path_lto", 1),
    ("-order_file", 1),
    ("-oso_prefix", 1),
    ("-pagezero_size", 1),
    ("-platform_version", 3),
    ("-prune_after_lto", 1),
    ("-prune_interval_lto", 1),
    ("-read_only_relocs", 1),
    ("-reexport_framework", 1),
    ("-reexport_library", 1),
    ("-reexported_symbols_list", 1),
    ("-rename_section", 4),
    ("-rename_segment", 2),
    ("-rpath", 1),
    ("-sdk_version", 1),
    ("-sect_diff_relocs", 1),
    ("-sectalign", 3),
    ("-sectcreate", 3),
    ("-section_order", 2),
    ("-sectobjectsymbols", 2),
    ("-sectorder", 3),
    ("-seg1addr", 1),
    ("-seg_addr_table", 1),
    ("-seg_addr_table_filename", 1),
    ("-seg_page_size", 2),
    ("-segaddr", 2),
    ("-segalign", 1),
    ("-segcreate", 3),
    ("-segment_order", 1),
    ("-segprot", 3),
    ("-segs_read_only_addr", 1),
    ("-segs_read_write_addr", 1),
    ("-snapshot_dir", 1),
    ("-source_version", 1),
    ("-stack_addr", 1),
    ("-stack_size", 1),
    ("-sub_library", 1),
    ("-sub_umbrella", 1),
    ("-syslibroot", 1),
    ("-tvos_simulator_version_min", 1),
    ("-tvos_version_min", 1),
    ("-u", 1),
    ("-uikitformac_version_min", 1),
    ("-umbrella", 1),
    ("-unaligned_pointers", 1),
    ("-undefined", 1),
    ("-unexported_symbol", 1),
    ("-unexported_symbols_list", 1),
    ("-upward_framework", 1),
    ("-upward_library", 1),
    ("-watchos_simulator_version_min", 1),
    ("-watchos_version_min", 1),
    ("-weak_framework", 1),
    ("-weak_library", 1),
    ("-weak_reference_mismatches", 1),
    ("-why_live", 1),
    // lld's own, written `--name value` as well as `--name=value`.
    ("--icf", 1),
    ("--reproduce", 1),
    ("--ignore-auto-link-option", 1),
];

/// How many values the ld64 option `option` takes, if it is one that takes any.
fn value_count(option: &str) -> Option<usize> {
    LD64_VALUE_OPTIONS
        .iter()
        .find(|(name, _)| *name == option)
        .map(|&(_, count)| count)
}

/// Options a clang driver targeting Darwin hands to ld64 as they are, with
/// the number of values each takes (clang's Darwin linker options).
const DARWIN_DRIVER_OPTIONS: &[(&str, usize)] = &[
    ("-ObjC", 0),
    ("-Z", 0),
    ("-all_load", 0),
    ("-allowable_client", 1),
    ("-arch", 1),
    ("-bind_at_load", 0),
    ("-bundle", 0),
    ("-bundle_loader", 1),
    ("-client_name", 1),
    ("-compatibility_version", 1),
    ("-current_version", 1),
    ("-dead_strip", 0),
    ("-dylib_file", 1),
    ("-dylinker", 0),
    ("-dylinker_install_name", 1),
    ("-dynamic", 0),
    ("-e", 1),
    ("-exported_symbols_list", 1),
    ("-filelist", 1),
    ("-flat_namespace", 0),
    ("-force_flat_namespace", 0),
    ("-force_load", 1),
    ("-framework", 1),
    ("-headerpad_max_install_names", 0),
    ("-image_base", 1),
    ("-init", 1),
    ("-install_name", 1),
    ("-lazy_framework", 1),
    ("-lazy_library", 1),
    ("-multi_module", 0),
    ("-multiply_defined", 1),
    ("-multiply_defined_unused", 1),
    ("-pagezero_size", 1),
    ("-r", 0),
    ("-read_only_relocs", 1),
    ("-reexport_framework", 1),
    ("-reexport_library", 1),
    ("-rpath", 1),
    ("-alias_list", 1),
    ("-sectalign", 3),
    ("-sectcreate", 3),
    ("-sectobjectsymbols", 2),
    ("-sectorder", 3),
    ("-seg1addr", 1),
    ("-seg_addr_table", 1),
    ("-seg_addr_table_filename", 1),
    ("-segaddr", 2),
    ("-segcreate", 3),
    ("-segprot", 3),
    ("-segs_read_only_addr", 1),
    ("-segs_read_write_addr", 1),
    ("-single_module", 0),
    ("-static", 0),
    ("-sub_library", 1),
    ("-sub_umbrella", 1),
    ("-twolevel_namespace", 0),
    ("-u", 1),
    ("-umbrella", 1),
    ("-undefined", 1),
    ("-unexported_symbols_list", 1),
    ("-weak_framework", 1),
    ("-weak_library", 1),
    ("-weak_reference_mismatches", 1),
    ("-whatsloaded", 0),
    ("-whyload", 0),
];

/// Driver options (besides the common ones in `DRIVER_VALUE_OPTIONS`) that
/// take the next argument as a value the linker never sees.
const DARWIN_DRIVER_VALUE_OPTIONS: &[&str] = &[
    "-arch_only",
    "-iframework",
    "-iwithsysroot",
    "-mllvm",
    "-index-store-path",
    "-resource-dir",
    "-working-directory",
    "-darwin-target-variant",
    "-target-variant",
    "-ivfsoverlay",
    "-isystem-after",
    "-iwithprefix",
    "-iwithprefixbefore",
    "-gcc-toolchain",
    "--gcc-toolchain",
];

/// What a driver's own options say that its linker arguments do not.
#[derive(Debug, Default)]
struct DriverFacts {
    /// `-fuse-ld=` or `--ld-path=`.
    linker: Option<String>,
    /// `-isysroot`, and `--sysroot` (which clang prefers as `-syslibroot`).
    isysroot: Option<String>,
    sysroot: Option<String>,
}

/// The arguments a linker run directly receives.
fn linker_tokens(args: &[String]) -> Vec<Token> {
    args.iter()
        .enumerate()
        .map(|(index, arg)| Token::whole(arg, index))
        .collect()
}

/// The arguments a driver targeting Darwin hands its linker, as far as
/// they matter here, and what its own options say.
fn driver_tokens(args: &[String]) -> (Vec<Token>, DriverFacts) {
    let mut tokens = Vec::new();
    let mut facts = DriverFacts::default();
    let mut index = 0;
    while index < args.len() {
        let arg = args[index].as_str();
        let next = args.get(index + 1).map(String::as_str);
        // Pushes the option and its `count` values as whole arguments.
        let pass = |tokens: &mut Vec<Token>, text: &str, count: usize| {
            tokens.push(Token::whole(text, index));
            for value in 1..=count {
                if let Some(v) = args.get(index + value) {
                    tokens.push(Token::whole(v, index + value));
                }
            }
            1 + count
        };
        let step = if let Some(list) = arg.strip_prefix("-Wl,") {
            for (part, text) in list.split(',').enumerate() {
                if !text.is_empty() {
                    tokens.push(Token {
                        text: text.to_string(),
                        argument: index,
                        wl_part: Some(part + 1),
                    });
                }
            }
            1
        } else if arg == "-Xlinker" {
            if let Some(value) = next {
                tokens.push(Token::whole(value, index + 1));
            }
            2
        } else if let Some(linker) = arg
            .strip_prefix("-fuse-ld=")
            .or_else(|| arg.strip_prefix("--ld-path="))
        {
            facts.linker = Some(linker.to_string());
            1
        } else if arg == "-isysroot" {
            facts.isysroot = next.map(str::to_string);
            2
        } else if let Some(root) = arg.strip_prefix("-isysroot").filter(|r| !r.is_empty()) {
            facts.isysroot = Some(root.to_string());
            1
        } else if arg == "--sysroot" {
            facts.sysroot = next.map(str::to_string);
            2
        } else if let Some(root) = arg.strip_prefix("--sysroot=") {
            facts.sysroot = Some(root.to_string());
            1
        } else if arg == "-dynamiclib" || arg == "-shared" {
            pass(&mut tokens, "-dylib", 0)
        } else if arg == "-rdynamic" {
            pass(&mut tokens, "-export_dynamic", 0)
        } else if arg == "-o" || arg == "-l" || arg == "-L" || arg == "-F" {
            // `-l name` stays two arguments: ld64 takes `-lname`, but the
            // replacement keeps the driver's form (see `LinkCommand::rewrite`).
            pass(&mut tokens, arg, 1)
        } else if let Some(&(name, count)) = DARWIN_DRIVER_OPTIONS.iter().find(|(n, _)| *n == arg) {
            pass(&mut tokens, name, count)
        } else if let Some(output) = arg.strip_prefix("-o").filter(|_| !arg.starts_with("-obj")) {
            tokens.push(Token::whole("-o", index));
            tokens.push(Token::whole(output, index));
            1
        } else if let Some(symbol) = arg.strip_prefix("-u").filter(|_| arg != "-undef") {
            tokens.push(Token::whole("-u", index));
            tokens.push(Token::whole(symbol, index));
            1
        } else if ["-l", "-L", "-F", "-weak-l", "-reexport-l"]
            .iter()
            .any(|prefix| arg.starts_with(prefix))
        {
            pass(&mut tokens, arg, 0)
        } else if super::DRIVER_VALUE_OPTIONS.contains(&arg)
            || DARWIN_DRIVER_VALUE_OPTIONS.contains(&arg)
            || arg.starts_with("-Xarch_")
        {
            2
        } else if arg.starts_with('-') {
            1
        } else {
            pass(&mut tokens, arg, 0)
        };
        index += step;
    }
    (tokens, facts)
}

/// A library named by `-l` (or a variant), to look for once every search
/// directory is known.
#[derive(Debug)]
struct Library {
    name: String,
    token: Token,
}

/// A file the command names directly (a bare argument, `-force_load`,
/// `-load_hidden`), to check once the roots are known.
#[derive(Debug)]
struct Named {
    path: String,
    token: Token,
    force_load: bool,
}

/// A `-filelist` value, to read once the roots are known.
#[derive(Debug)]
struct ListSpec {
    spec: String,
    token: Token,
}

/// How the `-l` libraries are searched for.
#[derive(Debug, Default)]
struct Search {
    /// `-L` directories, in order.
    dirs: Vec<String>,
    /// `-syslibroot` directories, in order.
    roots: Vec<String>,
    /// `-Z`: no `/usr/lib`, `/usr/local/lib`.
    no_default_dirs: bool,
    /// `-search_dylibs_first` (the last of it and `-search_paths_first` wins).
    dylibs_first: bool,
    /// `-static`: archives only.
    static_only: bool,
}

/// Reads an ld64-style command into `command`: its tokens, what they say
/// (outputs, roots, exports, inputs by name, list or library), the inputs
/// found where ld64 finds them, and what the output exports.
pub(super) fn scan(command: &mut LinkCommand) -> anyhow::Result<()> {
    debug_assert_eq!(command.format, LinkFormat::MachO);
    let tokens = tokens_of(command);
    let arguments = read_arguments(command, &tokens);
    find_inputs(command, &arguments)?;
    read_exports(command, &arguments);
    Ok(())
}

/// What ld64 reads: a driver's command as the linker sees it (with the
/// linker it runs, and its sysroot as `-syslibroot`), or the linker's own.
fn tokens_of(command: &mut LinkCommand) -> Vec<Token> {
    let tokens = if command.is_driver {
        let (tokens, facts) = driver_tokens(&command.args);
        command.linker = facts
            .linker
            .as_deref()
            .map_or(LinkerFlavor::Ld64, LinkerFlavor::of);
        // clang passes `--sysroot`, else `-isysroot`, as `-syslibroot`
        // (placed past the last argument: it names no input).
        let mut tokens = tokens;
        if let Some(root) = facts.sysroot.or(facts.isysroot) {
            tokens.push(Token::whole("-syslibroot", command.args.len()));
            tokens.push(Token::whole(&root, command.args.len()));
        }
        tokens
    } else {
        linker_tokens(&command.args)
    };
    // ld64 itself, or a name that says nothing (`ld`, `-fuse-ld=ld`).
    if command.linker == LinkerFlavor::Ordered {
        command.linker = LinkerFlavor::Ld64;
    }
    tokens
}

/// What an ld64 command's arguments say beyond what `read_arguments`
/// records in the command itself.
#[derive(Default)]
struct Arguments {
    search: Search,
    libraries: Vec<Library>,
    named: Vec<Named>,
    lists: Vec<ListSpec>,
    /// `-all_load` (the last of it and `-noall_load` wins).
    all_load: bool,
    /// An export list or option limits what the output exports.
    export_restricted: bool,
    exported_lists: Vec<PathBuf>,
}

/// Reads `tokens`: the output, `-dead_strip` and its roots, the output's
/// type and exports into `command`; inputs, lists, libraries and where
/// to search for them into what it returns.
fn read_arguments(command: &mut LinkCommand, tokens: &[Token]) -> Arguments {
    let mut arguments = Arguments::default();
    let mut index = 0;
    while index < tokens.len() {
        let token = &tokens[index];
        let text = token.text.as_str();
        let value = |n: usize| tokens.get(index + n);
        let value_text = |n: usize| value(n).map(|t| t.text.clone());
        let mut step = 1;
        match text {
            "-o" => {
                command.output = value_text(1).map(PathBuf::from);
                step = 2;
            }
            "-dead_strip" => command.gc_sections = true,
            "-r" => command.relocatable = true,
            "-dylib" | "-bundle" => command.shared = true,
            "-execute" => command.shared = false,
            "-e" | "-u" | "-init" => {
                command.gc_roots.symbols.extend(value_text(1));
                step = 2;
            }
            "-export_dynamic" => command.gc_roots.export_dynamic = true,
            "-exported_symbol" => {
                arguments.export_restricted = true;
                if let Some(symbol) = value_text(1) {
                    add_exported(command, &symbol);
                }
                step = 2;
            }
            "-exported_symbols_list" => {
                arguments.export_restricted = true;
                arguments
                    .exported_lists
                    .extend(value_text(1).map(PathBuf::from));
                step = 2;
            }
            "-no_exported_symbols" => arguments.export_restricted = true,
            "-alias" => {
                command.exports.patterns.extend(value_text(1));
                step = 3;
            }
            "-force_load" | "-load_hidden" => {
                if let Some(path) = value(1) {
                    arguments.named.push(Named {
                        path: path.text.clone(),
                        token: path.clone(),
                        force_load: text == "-force_load",
                    });
                }
                step = 2;
            }
            "-all_load" => arguments.all_load = true,
            "-noall_load" => arguments.all_load = false,
            "-ObjC" => command.load_objc_members = true,
            "-filelist" => {
                if let Some(spec) = value(1) {
                    arguments.lists.push(ListSpec {
                        spec: spec.text.clone(),
                        token: spec.clone(),
                    });
                }
                step = 2;
            }
            "-L" => {
                arguments.search.dirs.extend(value_text(1));
                step = 2;
            }
            "-syslibroot" => {
                arguments.search.roots.extend(value_text(1));
                step = 2;
            }
            "-Z" => arguments.search.no_default_dirs = true,
            "-search_paths_first" => arguments.search.dylibs_first = false,
            "-search_dylibs_first" => arguments.search.dylibs_first = true,
            "-static" => arguments.search.static_only = true,
            // `-l name`, as two whole arguments (a driver's form).
            "-l" => {
                if let Some(name) = value(1).filter(|name| {
                    token.wl_part.is_none()
                        && name.wl_part.is_none()
                        && name.argument == token.argument + 1
                }) {
                    arguments.libraries.push(Library {
                        name: name.text.clone(),
                        token: token.clone(),
                    });
                    step = 2;
                }
            }
            _ => {
                if let Some(count) = value_count(text) {
                    step = 1 + count;
                } else if let Some(name) = library_name(text) {
                    arguments.libraries.push(Library {
                        name: name.to_string(),
                        token: token.clone(),
                    });
                } else if let Some(dir) = text.strip_prefix("-L") {
                    arguments.search.dirs.push(dir.to_string());
                } else if !text.starts_with('-') && !text.is_empty() {
                    arguments.named.push(Named {
                        path: text.to_string(),
                        token: token.clone(),
                        force_load: false,
                    });
                }
            }
        }
        index += step;
    }

    arguments
}

/// Finds the inputs `arguments` name: files by path, `-filelist` entries
/// and `-l` libraries where ld64 finds them (rerooted under
/// `-syslibroot` for another linker), in command-line order.
fn find_inputs(command: &mut LinkCommand, arguments: &Arguments) -> anyhow::Result<()> {
    let roots = system_roots(&arguments.search.roots);
    let reroots = command.linker != LinkerFlavor::Ld64;
    let reroot = |path: PathBuf| -> PathBuf {
        if reroots {
            reroot_path(path, &roots)
        } else {
            path
        }
    };
    let mut inputs: Vec<LinkInput> = Vec::new();
    for file in &arguments.named {
        let path = reroot(PathBuf::from(&file.path));
        if is_foldable_input(&path) {
            inputs.push(LinkInput {
                argument: file.token.argument,
                path,
                whole_archive: file.force_load,
                from_library_flag: false,
                wl_part: file.token.wl_part,
                filelist: None,
            });
        }
    }
    for spec in &arguments.lists {
        let (list_path, dir) = split_filelist_spec(&spec.spec);
        let text = std::fs::read(&list_path)
            .with_context(|| format!("reading the -filelist {}", list_path.display()))?;
        let list = command.filelists.len();
        let entries: Vec<PathBuf> = filelist_lines(&text)
            .map(|line| {
                let line = path_from_bytes(line);
                reroot(match &dir {
                    // `<dir>/<line>`, as ld64 builds it, even for an
                    // absolute line (which `Path::join` would keep alone).
                    Some(dir) => {
                        let mut joined = std::ffi::OsString::from(dir);
                        joined.push("/");
                        joined.push(line.as_os_str());
                        PathBuf::from(joined)
                    }
                    None => line,
                })
            })
            .collect();
        for (entry, path) in entries.iter().enumerate() {
            if is_foldable_input(path) {
                inputs.push(LinkInput {
                    argument: spec.token.argument,
                    path: path.clone(),
                    whole_archive: false,
                    from_library_flag: false,
                    wl_part: spec.token.wl_part,
                    filelist: Some(FilelistEntry { list, entry }),
                });
            }
        }
        command.filelists.push(Filelist {
            argument: spec.token.argument,
            wl_part: spec.token.wl_part,
            path: list_path,
            entries,
        });
    }
    let dirs = library_dirs(&arguments.search, &roots);
    for library in &arguments.libraries {
        if let Some(path) = find_library(&dirs, &library.name, &arguments.search) {
            inputs.push(LinkInput {
                argument: library.token.argument,
                path,
                whole_archive: false,
                from_library_flag: true,
                wl_part: library.token.wl_part,
                filelist: None,
            });
        }
    }
    if arguments.all_load {
        for input in &mut inputs {
            input.whole_archive = true;
        }
    }
    inputs.sort_by_key(|input| {
        (
            input.argument,
            input.wl_part,
            input.filelist.map(|f| (f.list, f.entry)),
        )
    });
    command.inputs = inputs;

    Ok(())
}

/// What the output exports: the names of `-exported_symbols_list`s (all,
/// when one cannot be read), or every global when nothing restricts it.
fn read_exports(command: &mut LinkCommand, arguments: &Arguments) {
    for list in &arguments.exported_lists {
        match std::fs::read(list) {
            Ok(text) => {
                for symbol in filelist_lines(&text) {
                    add_exported(command, &String::from_utf8_lossy(symbol));
                }
            }
            Err(_) => command.exports.all = true,
        }
    }
    // Every global of a Mach-O image is in its export trie unless a list
    // says otherwise, an executable's too: dlsym finds it, and a bundle
    // linked with -bundle_loader refers to it directly. So each is an
    // address another image may take and compare (icf verify says the
    // same), whatever the output's type.
    if !arguments.export_restricted {
        command.exports.all = true;
    }
}

/// Notes `symbol` (a name or an ld64 wildcard pattern) as exported; a plain
/// name is a `-dead_strip` root too, as ld64 keeps exported symbols.
fn add_exported(command: &mut LinkCommand, symbol: &str) {
    command.exports.patterns.push(symbol.to_string());
    if !symbol.contains(['*', '?', '[']) {
        command.gc_roots.symbols.push(symbol.to_string());
    }
}

/// The library `-l<name>`, `-weak-l<name>`, `-needed-l<name>`,
/// `-reexport-l<name>`, `-hidden-l<name>`, `-upward-l<name>` or
/// `-lazy-l<name>` names (the attribute only changes how a dylib is linked).
fn library_name(option: &str) -> Option<&str> {
    [
        "-weak-l",
        "-needed-l",
        "-reexport-l",
        "-hidden-l",
        "-upward-l",
        "-lazy-l",
        "-l",
    ]
    .iter()
    .find_map(|prefix| option.strip_prefix(prefix))
    .filter(|name| !name.is_empty())
}

/// The `-syslibroot`s that count: none if the last is `/`; one empty root
/// when there are none, so that every search goes through a root.
fn system_roots(roots: &[String]) -> Vec<String> {
    if roots.is_empty() || roots.last().is_some_and(|r| r == "/") {
        vec![String::new()]
    } else {
        roots.to_vec()
    }
}

/// The absolute `path` under `root` (`Path::join` alone would drop the
/// root); the empty root leaves it as it is.
fn under_root(root: &str, path: &Path) -> PathBuf {
    if root.is_empty() {
        return path.to_path_buf();
    }
    Path::new(root).join(path.strip_prefix("/").unwrap_or(path))
}

/// An input path as ld64.lld opens it: an absolute one not ending in `.o`
/// under the first root it exists in.
fn reroot_path(path: PathBuf, roots: &[String]) -> PathBuf {
    if !path.is_absolute() || path.as_os_str().as_encoded_bytes().ends_with(b".o") {
        return path;
    }
    roots
        .iter()
        .map(|root| under_root(root, &path))
        .find(|candidate| candidate.exists())
        .unwrap_or(path)
}

/// The directories `-l` searches, in order (see the module's assumptions).
fn library_dirs(search: &Search, roots: &[String]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for dir in &search.dirs {
        let mut found = false;
        if dir.starts_with('/') {
            for root in roots {
                let candidate = under_root(root, Path::new(dir));
                if candidate.is_dir() {
                    dirs.push(candidate);
                    found = true;
                }
            }
        }
        if !found && Path::new(dir).is_dir() {
            dirs.push(PathBuf::from(dir));
        }
    }
    if !search.no_default_dirs {
        for default in ["/usr/lib", "/usr/local/lib"] {
            for root in roots {
                let candidate = under_root(root, Path::new(default));
                if candidate.is_dir() {
                    dirs.push(candidate);
                }
            }
        }
    }
    dirs
}

/// The file `-l<name>` links, if it is an archive or object icf may fold:
/// `None` when the search finds a dylib or text stub first, or nothing.
fn find_library(dirs: &[PathBuf], name: &str, search: &Search) -> Option<PathBuf> {
    let found = if name.ends_with(".o") {
        dirs.iter().map(|d| d.join(name)).find(|p| p.exists())
    } else {
        const DYLIBS: &[&str] = &["tbd", "dylib", "so"];
        let look = |extensions: &[&str]| {
            dirs.iter().find_map(|dir| {
                extensions
                    .iter()
                    .map(|extension| dir.join(format!("lib{name}.{extension}")))
                    .find(|p| p.exists())
            })
        };
        if search.static_only {
            look(&["a"])
        } else if search.dylibs_first {
            look(DYLIBS).or_else(|| look(&["a"]))
        } else {
            look(&["tbd", "dylib", "so", "a"])
        }
    };
    found.filter(|path| {
        (name.ends_with(".o") || path.extension().is_some_and(|e| e == "a"))
            && is_foldable_input(path)
    })
}

/// The list file and directory prefix a `-filelist` value names: `<file>`
/// if it is a file, else `<file>,<dir>` split at the last comma.
fn split_filelist_spec(spec: &str) -> (PathBuf, Option<String>) {
    if !Path::new(spec).is_file()
        && let Some((file, dir)) = spec.rsplit_once(',')
    {
        return (PathBuf::from(file), Some(dir.to_string()));
    }
    (PathBuf::from(spec), None)
}

/// The entries of a filelist or exported-symbols list: lines, trimmed of
/// ASCII whitespace, without empty ones and `#` comments.
fn filelist_lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    text.split(|&b| b == b'\n')
        .map(<[u8]>::trim_ascii)
        .filter(|line| !line.is_empty() && !line.starts_with(b"#"))
}

/// A path from a filelist's bytes: as they are on Unix, where paths are
/// bytes; as UTF-8 (lossily) elsewhere.
fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of test files, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!(
                "icf-ld64-{name}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("scratch directory");
            Scratch(dir)
        }

        /// Writes `relative` (parents created) with `bytes`; its path.
        fn file(&self, relative: &str, bytes: &[u8]) -> String {
            let path = self.0.join(relative);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("parent directory");
            }
            std::fs::write(&path, bytes).expect("test file");
            path.display().to_string()
        }

        /// A file that starts like a 64-bit Mach-O object.
        fn object(&self, relative: &str) -> String {
            self.file(
                relative,
                &[
                    0xcf, 0xfa, 0xed, 0xfe, 0x0c, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0,
                ],
            )
        }

        /// A file that starts like a static archive.
        fn archive(&self, relative: &str) -> String {
            self.file(relative, b"!<arch>\n")
        }

        fn dir(&self, relative: &str) -> String {
            let path = self.0.join(relative);
            std::fs::create_dir_all(&path).expect("directory");
            path.display().to_string()
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn parse(command: &[&str]) -> LinkCommand {
        let command: Vec<String> = command.iter().map(|s| s.to_string()).collect();
        LinkCommand::parse(&command).expect("parse")
    }

    fn input_paths(command: &LinkCommand) -> Vec<String> {
        command
            .inputs
            .iter()
            .map(|i| i.path.display().to_string())
            .collect()
    }

    #[test]
    fn which_commands_are_ld64() {
        let macho = |command: &[&str]| parse(command).format == LinkFormat::MachO;
        assert!(macho(&["ld64.lld-19", "-o", "x"]));
        assert!(macho(&["/usr/bin/ld64.lld", "-o", "x"]));
        assert!(macho(&["ld64", "-o", "x"]));
        assert!(macho(&["ld", "-arch", "arm64", "-o", "x"]));
        assert!(macho(&["lld", "-flavor", "darwin", "-o", "x"]));
        let versioned = parse(&["lld-19", "-flavor", "darwin", "-o", "x"]);
        assert!(versioned.format == LinkFormat::MachO && !versioned.is_driver);
        assert_eq!(versioned.output, Some(PathBuf::from("x")));
        assert!(macho(&[
            "clang-19",
            "-target",
            "arm64-apple-macos11",
            "m.o"
        ]));
        assert!(macho(&["clang", "--target=x86_64-apple-darwin", "m.o"]));
        assert!(macho(&["clang++", "-target=arm64-apple-ios14", "m.o"]));
        assert!(macho(&["cc", "-arch", "arm64", "m.o"]));
        if !cfg!(target_vendor = "apple") {
            assert!(!macho(&["ld", "-o", "x", "m.o"]));
            assert!(!macho(&["ld.lld", "-o", "x", "m.o"]));
            assert!(!macho(&["lld", "-flavor", "gnu", "-o", "x"]));
            assert!(!macho(&["clang", "m.o"]));
            assert!(!macho(&["clang", "-target", "aarch64-linux-gnu", "m.o"]));
        }
        // An explicit non-Apple target wins over the host.
        assert!(!macho(&[
            "clang",
            "--target=x86_64-unknown-linux-gnu",
            "m.o"
        ]));
    }

    #[test]
    fn the_linker_flavor_of_ld64_commands() {
        assert_eq!(
            parse(&["ld64.lld-19", "-arch", "arm64"]).linker,
            LinkerFlavor::Unordered
        );
        assert_eq!(parse(&["ld", "-arch", "arm64"]).linker, LinkerFlavor::Ld64);
        assert_eq!(
            parse(&["ld64", "-arch", "arm64"]).linker,
            LinkerFlavor::Ld64
        );
        let target = ["clang-19", "-target", "arm64-apple-macos11"];
        assert_eq!(parse(&target).linker, LinkerFlavor::Ld64);
        assert_eq!(
            parse(&[&target[..], &["-fuse-ld=lld"]].concat()).linker,
            LinkerFlavor::Unordered
        );
        assert_eq!(
            parse(&[&target[..], &["--ld-path=/opt/bin/ld64.lld"]].concat()).linker,
            LinkerFlavor::Unordered
        );
    }

    /// Every option the brief and ld64.lld's table say takes values, given
    /// a foldable file as each value: none of them may become an input,
    /// and the object after them must.
    #[test]
    fn option_values_are_not_inputs() {
        let scratch = Scratch::new("values");
        let value = scratch.object("value.o");
        let main = scratch.object("main.o");
        // The ones the task names, then the whole table.
        let named: &[(&str, usize)] = &[
            ("-arch", 1),
            ("-platform_version", 3),
            ("-syslibroot", 1),
            ("-install_name", 1),
            ("-rpath", 1),
            ("-framework", 1),
            ("-weak_framework", 1),
            ("-F", 1),
            ("-L", 1),
            ("-o", 1),
            ("-e", 1),
            ("-u", 1),
            ("-exported_symbol", 1),
            ("-unexported_symbol", 1),
            ("-exported_symbols_list", 1),
            ("-unexported_symbols_list", 1),
            ("-order_file", 1),
            ("-map", 1),
            ("-lto_library", 1),
            ("-object_path_lto", 1),
            ("-mllvm", 1),
            ("-sectcreate", 3),
            ("-sectalign", 3),
            ("-alias", 2),
            ("-alias_list", 1),
            ("-current_version", 1),
            ("-compatibility_version", 1),
            ("-headerpad", 1),
            ("-macos_version_min", 1),
            ("-ios_version_min", 1),
            ("-undefined", 1),
            ("-dylib_file", 1),
            ("-stack_size", 1),
            ("-pagezero_size", 1),
            ("-image_base", 1),
            ("-seg1addr", 1),
            ("-sub_library", 1),
            ("-umbrella", 1),
            ("-allowable_client", 1),
            ("-client_name", 1),
            ("-bundle_loader", 1),
            ("-dependency_info", 1),
            ("-cache_path_lto", 1),
            ("-mcpu", 1),
            ("-add_ast_path", 1),
            ("-why_live", 1),
            ("-exported_symbols_order", 1),
            ("-sectorder", 3),
            ("-segprot", 3),
            ("-iosmac_version_min", 1),
            ("-oso_prefix", 1),
            ("--icf", 1),
        ];
        for &(option, count) in named.iter().chain(LD64_VALUE_OPTIONS) {
            if matches!(option, "-force_load" | "-load_hidden" | "-filelist") {
                continue; // their values are inputs (tested below)
            }
            let mut command = vec!["ld64.lld-19", option];
            command.extend(std::iter::repeat_n(value.as_str(), count));
            command.push(&main);
            let parsed = parse(&command);
            assert_eq!(
                input_paths(&parsed),
                [main.as_str()],
                "{option} takes {count}"
            );
            assert_eq!(parsed.inputs[0].argument, 1 + count, "{option}");
        }
        // Options without a value take nothing.
        for flag in [
            "-reproducible",
            "-w",
            "-no_deduplicate",
            "--icf=all",
            "-dead_strip",
            "-ObjC",
            "-Z",
            "-demangle",
            "-adhoc_codesign",
            "-t",
        ] {
            let parsed = parse(&["ld64.lld-19", flag, &main]);
            assert_eq!(input_paths(&parsed), [main.as_str()], "{flag}");
        }
        // The count matters: -platform_version's third value is not an input.
        let parsed = parse(&[
            "ld64.lld-19",
            "-platform_version",
            "macos",
            "11.0",
            &value,
            &main,
        ]);
        assert_eq!(input_paths(&parsed), [main.as_str()]);
    }

    #[test]
    fn outputs_kinds_and_roots() {
        let command = parse(&[
            "ld64.lld-19",
            "-arch",
            "arm64",
            "-dylib",
            "-o",
            "libx.dylib",
            "-dead_strip",
            "-e",
            "_start",
            "-u",
            "_kept",
            "-init",
            "_setup",
            "-export_dynamic",
            "-ObjC",
        ]);
        assert_eq!(command.output, Some(PathBuf::from("libx.dylib")));
        assert!(command.shared && !command.relocatable && command.gc_sections);
        assert!(command.gc_roots.export_dynamic && command.load_objc_members);
        assert_eq!(command.gc_roots.symbols, ["_start", "_kept", "_setup"]);
        assert!(!command.is_driver);
        assert!(parse(&["ld64.lld-19", "-bundle"]).shared);
        assert!(!parse(&["ld64.lld-19", "-dylib", "-execute"]).shared);
        assert!(parse(&["ld64.lld-19", "-r"]).relocatable);
        assert!(!parse(&["ld64.lld-19", "-arch", "arm64"]).gc_sections);
    }

    #[test]
    fn exports_are_every_global_unless_a_list_says() {
        let scratch = Scratch::new("exports");
        // An executable's globals are exported as a dylib's are.
        assert!(parse(&["ld64.lld-19", "-arch", "arm64"]).exports.all);
        assert!(
            parse(&["ld64.lld-19", "-arch", "arm64", "-dylib"])
                .exports
                .all
        );
        let command = parse(&[
            "ld64.lld-19",
            "-exported_symbol",
            "_api",
            "-exported_symbol",
            "_v*",
        ]);
        assert!(!command.exports.all);
        assert_eq!(command.exports.patterns, ["_api", "_v*"]);
        assert_eq!(
            command.gc_roots.symbols,
            ["_api"],
            "a pattern is not a root"
        );
        let list = scratch.file("exports.txt", b"# exported\n_one\n  _two  \n\n");
        let command = parse(&["ld64.lld-19", "-exported_symbols_list", &list]);
        assert!(!command.exports.all);
        assert_eq!(command.exports.patterns, ["_one", "_two"]);
        assert!(command.export_lists.is_empty());
        let missing = scratch.0.join("missing.txt").display().to_string();
        assert!(
            parse(&["ld64.lld-19", "-exported_symbols_list", &missing])
                .exports
                .all
        );
        assert!(!parse(&["ld64.lld-19", "-no_exported_symbols"]).exports.all);
        // -unexported_symbol leaves every other global exported.
        assert!(
            parse(&["ld64.lld-19", "-unexported_symbol", "_x"])
                .exports
                .all
        );
    }

    #[test]
    fn force_load_and_all_load_make_archives_whole() {
        let scratch = Scratch::new("whole");
        let forced = scratch.archive("forced.a");
        let plain = scratch.archive("plain.a");
        let object = scratch.object("main.o");
        let command = parse(&["ld64.lld-19", &object, "-force_load", &forced, &plain]);
        assert_eq!(
            input_paths(&command),
            [object.as_str(), forced.as_str(), plain.as_str()]
        );
        let whole: Vec<bool> = command.inputs.iter().map(|i| i.whole_archive).collect();
        assert_eq!(whole, [false, true, false]);
        assert_eq!(command.inputs[1].argument, 2, "the value is the input");
        let command = parse(&["ld64.lld-19", &object, &plain, "-all_load"]);
        assert!(command.inputs.iter().all(|i| i.whole_archive));
        let command = parse(&["ld64.lld-19", &plain, "-all_load", "-noall_load"]);
        assert!(!command.inputs[0].whole_archive);
        // -load_hidden names an input that is not whole.
        let command = parse(&["ld64.lld-19", "-load_hidden", &plain]);
        assert_eq!(input_paths(&command), [plain.as_str()]);
        assert!(!command.inputs[0].whole_archive);
    }

    #[test]
    fn filelists_with_and_without_a_directory() {
        let scratch = Scratch::new("filelist");
        let a = scratch.object("objs/a.o");
        let b = scratch.object("objs/b.o");
        let stub = scratch.file("objs/libz.tbd", b"--- !tapi-tbd\n");
        let list = scratch.file(
            "list.txt",
            format!("{a}\n# comment\n\n  {b}  \n{stub}\n").as_bytes(),
        );
        let command = parse(&["ld64.lld-19", "-filelist", &list, "-o", "out"]);
        assert_eq!(input_paths(&command), [a.as_str(), b.as_str()]);
        assert!(command.inputs.iter().all(|i| i.argument == 1));
        assert_eq!(
            command
                .inputs
                .iter()
                .map(|i| i.filelist)
                .collect::<Vec<_>>(),
            [
                Some(FilelistEntry { list: 0, entry: 0 }),
                Some(FilelistEntry { list: 0, entry: 1 })
            ]
        );
        assert_eq!(command.filelists.len(), 1);
        assert_eq!(
            command.filelists[0].entries.len(),
            3,
            "the stub is an entry, not an input"
        );

        // `<file>,<dir>`: relative entries under the directory.
        let relative = scratch.file("relative.txt", b"a.o\nb.o\n");
        let objs = scratch.0.join("objs").display().to_string();
        let spec = format!("{relative},{objs}");
        let command = parse(&["ld64.lld-19", "-filelist", &spec]);
        assert_eq!(
            input_paths(&command),
            [format!("{objs}/a.o"), format!("{objs}/b.o")]
        );
        assert_eq!(command.filelists[0].path, PathBuf::from(&relative));

        // A list icf cannot read: the inputs are unknown, so no fold.
        let missing = scratch.0.join("missing.txt").display().to_string();
        let args: Vec<String> = ["ld64.lld-19", "-filelist", &missing]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert!(LinkCommand::parse(&args).is_err());
    }

    #[test]
    fn a_replaced_filelist_entry_gets_a_new_list() {
        let scratch = Scratch::new("newlist");
        let a = scratch.object("objs/a.o");
        scratch.object("objs/b.o");
        let relative = scratch.file("relative.txt", b"a.o\nb.o\n");
        let objs = scratch.0.join("objs").display().to_string();
        let spec = format!("{relative},{objs}");
        let out = scratch.dir("out");
        let command = parse(&["ld64.lld-19", "-filelist", &spec, "-o", "prog"]);
        let folded = PathBuf::from(&out).join("b-folded.o");
        let args = command
            .with_replaced_inputs(
                |input| (input.path == Path::new(&objs).join("b.o")).then(|| folded.clone()),
                Path::new(&out),
            )
            .expect("rewritten");
        let new_list = PathBuf::from(&out).join("icf-filelist-0");
        assert_eq!(
            args,
            ["-filelist", &new_list.display().to_string(), "-o", "prog"]
        );
        let written = std::fs::read_to_string(&new_list).expect("new list");
        assert_eq!(written, format!("{a}\n{}\n", folded.display()));
        // A file of that name already there (an input called so): another name.
        let again = command
            .with_replaced_inputs(|input| Some(input.path.clone()), Path::new(&out))
            .expect("rewritten again");
        assert_eq!(again[1], format!("{}-1", new_list.display()));
        // The argument-keyed API cannot say which entry: nothing changes.
        assert_eq!(command.with_inputs(&[(1, folded.clone())]), command.args);
        // Nothing replaced: no list written, the command as it was.
        let unchanged = command
            .with_replaced_inputs(|_| None, Path::new(&scratch.dir("none")))
            .expect("unchanged");
        assert_eq!(unchanged, command.args);
    }

    #[test]
    fn libraries_are_searched_the_ld64_way() {
        let scratch = Scratch::new("search");
        let first = scratch.dir("first");
        let second = scratch.dir("second");
        let archive = scratch.archive("first/libfoo.a");
        scratch.file("second/libfoo.dylib", b"dylib");
        scratch.file("first/libbar.tbd", b"--- !tapi-tbd\n");
        scratch.archive("first/libbar.a");
        let late = scratch.archive("second/libbaz.a");
        let search = |extra: &[&str]| {
            let mut command = vec!["ld64.lld-19", "-Z", "-L", &first, &format!("-L{second}")]
                .into_iter()
                .map(str::to_string)
                .collect::<Vec<_>>();
            command.extend(extra.iter().map(|s| s.to_string()));
            LinkCommand::parse(&command).expect("parse")
        };
        // Each directory for .tbd, .dylib, .so, then .a: first/libfoo.a
        // comes before second/libfoo.dylib.
        let command = search(&["-lfoo"]);
        assert_eq!(input_paths(&command), [archive.as_str()]);
        assert!(command.inputs[0].from_library_flag);
        assert_eq!(command.inputs[0].argument, 4);
        assert_eq!(
            input_paths(&search(&["-search_paths_first", "-lfoo"])),
            [archive.as_str()]
        );
        // Dylibs in every directory first: second/libfoo.dylib wins.
        assert!(search(&["-search_dylibs_first", "-lfoo"]).inputs.is_empty());
        // A .tbd beside the .a wins.
        assert!(search(&["-lbar"]).inputs.is_empty());
        // ...unless the link is -static.
        assert_eq!(input_paths(&search(&["-static", "-lbar"])).len(), 1);
        // The variants search the same way.
        for option in [
            "-weak-lbaz",
            "-needed-lbaz",
            "-reexport-lbaz",
            "-hidden-lbaz",
        ] {
            assert_eq!(input_paths(&search(&[option])), [late.as_str()], "{option}");
        }
        assert!(search(&["-lnothing"]).inputs.is_empty());
        // -l<file>.o names an object in the directories.
        let crt = scratch.object("second/crt1.o");
        assert_eq!(input_paths(&search(&["-lcrt1.o"])), [crt]);
        // Options that merely start with -l are not libraries.
        assert!(
            search(&["-lto_library", "foo", "-lazy_library", "x"])
                .inputs
                .is_empty()
        );
    }

    #[test]
    fn syslibroot_prefixes_absolute_and_default_directories() {
        let scratch = Scratch::new("sdk");
        let sdk = scratch.dir("SDK");
        let system = scratch.archive("SDK/usr/lib/libsys.a");
        scratch.file("SDK/usr/lib/libSystem.tbd", b"--- !tapi-tbd\n");
        let local = scratch.archive("SDK/usr/local/lib/liblocal.a");
        // An absolute -L under the root wins over the same path outside it.
        let outside = scratch.dir("opt/lib");
        scratch.archive("opt/lib/libopt.a");
        let inside = scratch.archive(&format!("SDK/{}/libopt.a", outside.trim_start_matches('/')));
        let command = parse(&[
            "ld64.lld-19",
            "-syslibroot",
            &sdk,
            "-L",
            &outside,
            "-lsys",
            "-lSystem",
            "-llocal",
            "-lopt",
        ]);
        assert_eq!(input_paths(&command), [system.clone(), local, inside]);
        // -Z drops the default directories; a last root of / drops the roots.
        assert!(
            parse(&["ld64.lld-19", "-syslibroot", &sdk, "-Z", "-lsys"])
                .inputs
                .is_empty()
        );
        let unrooted = parse(&[
            "ld64.lld-19",
            "-syslibroot",
            &sdk,
            "-syslibroot",
            "/",
            "-L",
            &outside,
            "-lopt",
        ]);
        assert_eq!(input_paths(&unrooted), [format!("{outside}/libopt.a")]);
        // ld64.lld reads an absolute input (not a .o) under the root;
        // Apple's ld reads it where it is.
        let outside = scratch.archive("abs/libq.a");
        let inside = scratch.archive(&format!("SDK/{}", outside.trim_start_matches('/')));
        let lld = parse(&["ld64.lld-19", "-syslibroot", &sdk, &outside]);
        assert_eq!(input_paths(&lld), [inside]);
        assert_eq!(lld.inputs[0].argument, 2);
        let ld = parse(&["ld", "-arch", "arm64", "-syslibroot", &sdk, &outside]);
        assert_eq!(input_paths(&ld), [outside]);
        let object = scratch.object("abs/q.o");
        scratch.object(&format!("SDK/{}", object.trim_start_matches('/')));
        let lld = parse(&["ld64.lld-19", "-syslibroot", &sdk, &object]);
        assert_eq!(input_paths(&lld), [object], "objects are not re-rooted");
        assert!(system.ends_with("SDK/usr/lib/libsys.a"));
    }

    #[test]
    fn a_driver_targeting_apple_with_lld() {
        let scratch = Scratch::new("driver");
        let main = scratch.object("main.o");
        let forced = scratch.archive("forced.a");
        let lib = scratch.archive("lib/libdep.a");
        let libdir = scratch.0.join("lib").display().to_string();
        let command = parse(&[
            "clang-19",
            "-target",
            "arm64-apple-macos11",
            "-fuse-ld=lld",
            "-O2",
            "-Wl,-dead_strip",
            &main,
            &format!("-Wl,-force_load,{forced},-why_live,{main}"),
            "-L",
            &libdir,
            "-l",
            "dep",
            "-Xlinker",
            "-exported_symbol",
            "-Xlinker",
            "_api",
            "-dynamiclib",
            "-o",
            "libout.dylib",
        ]);
        assert_eq!(command.format, LinkFormat::MachO);
        assert!(command.is_driver && command.gc_sections && command.shared);
        assert_eq!(command.linker, LinkerFlavor::Unordered);
        assert_eq!(command.output, Some(PathBuf::from("libout.dylib")));
        assert_eq!(command.exports.patterns, ["_api"]);
        assert_eq!(
            input_paths(&command),
            [main.as_str(), forced.as_str(), lib.as_str()]
        );
        let forced_input = &command.inputs[1];
        assert!(forced_input.whole_archive);
        assert_eq!((forced_input.argument, forced_input.wl_part), (6, Some(2)));

        // Replacing: the -Wl, part, and `-l dep` (two arguments) by a path.
        let out = scratch.dir("out");
        let new_forced = format!("{out}/forced.a");
        let new_lib = format!("{out}/libdep.a");
        let new_main = format!("{out}/main.o");
        let args = command
            .with_replaced_inputs(
                |input| {
                    Some(PathBuf::from(match input.path.display().to_string() {
                        p if p == forced => &new_forced,
                        p if p == lib => &new_lib,
                        _ => &new_main,
                    }))
                },
                Path::new(&out),
            )
            .expect("rewritten");
        assert_eq!(args[5], new_main);
        assert_eq!(
            args[6],
            format!("-Wl,-force_load,{new_forced},-why_live,{main}")
        );
        assert_eq!(
            args[7..10],
            ["-L".to_string(), libdir.clone(), new_lib.clone()]
        );
        assert_eq!(args[10], "-Xlinker");
        assert_eq!(args.len(), command.args.len() - 1, "the library name went");
        // The argument-keyed API can replace an argument's only input.
        let args = command.with_inputs(&[(6, PathBuf::from(&new_forced))]);
        assert_eq!(
            args[6],
            format!("-Wl,-force_load,{new_forced},-why_live,{main}")
        );
        // A path with a comma cannot go into -Wl,.
        assert!(
            command
                .with_replaced_inputs(
                    |input| input.wl_part.map(|_| PathBuf::from("/tmp/a,b.a")),
                    Path::new(&out)
                )
                .is_err()
        );
    }

    #[test]
    fn driver_options_that_reach_ld64() {
        let scratch = Scratch::new("driveropts");
        let main = scratch.object("main.o");
        let value = scratch.object("value.o");
        let sdk = scratch.dir("SDK");
        let system = scratch.archive("SDK/usr/lib/libsys.a");
        let exports = scratch.file("exports.o", b"_go\n");
        // Values of driver and Darwin options are not inputs.
        let command = parse(&[
            "clang",
            "--target=arm64-apple-macos11",
            "-isysroot",
            &sdk,
            "-sectcreate",
            "__TEXT",
            "__info",
            &value,
            "-segprot",
            "__DATA",
            "rw",
            &value,
            "-bundle_loader",
            &value,
            "-framework",
            &value,
            "-x",
            &value,
            "-Xclang",
            &value,
            "-exported_symbols_list",
            &exports,
            "-rdynamic",
            &main,
            "-lsys",
            "-e",
            "_go",
            "-u_need",
        ]);
        assert_eq!(input_paths(&command), [main.as_str(), system.as_str()]);
        assert!(command.gc_roots.export_dynamic);
        assert_eq!(command.gc_roots.symbols, ["_go", "_need", "_go"]);
        // --sysroot is the library root when both are given, as clang does.
        let other = scratch.dir("Other");
        let command = parse(&[
            "clang",
            "-arch",
            "arm64",
            "-isysroot",
            &sdk,
            &format!("--sysroot={other}"),
            "-lsys",
        ]);
        assert!(command.inputs.is_empty());
        // `-force_load` and `-filelist` as driver options.
        let forced = scratch.archive("f.a");
        let list = scratch.file("list", main.as_bytes());
        let command = parse(&[
            "clang",
            "-arch",
            "arm64",
            "-force_load",
            &forced,
            "-filelist",
            &list,
        ]);
        assert_eq!(input_paths(&command), [forced, main]);
        assert!(command.inputs[0].whole_archive);
        assert!(command.inputs[1].filelist.is_some());
    }

    #[test]
    fn response_files_hold_ld64_arguments() {
        let scratch = Scratch::new("response");
        let main = scratch.object("main.o");
        let forced = scratch.archive("forced.a");
        let list = scratch.file("list", main.as_bytes());
        let response = scratch.file(
            "link.rsp",
            format!("-arch arm64 -platform_version macos 11.0 11.0\n-dead_strip -force_load '{forced}'\n-filelist {list} -o out\n").as_bytes(),
        );
        let command = parse(&["ld64.lld-19", &format!("@{response}")]);
        assert_eq!(command.format, LinkFormat::MachO);
        assert!(command.gc_sections);
        assert_eq!(command.output, Some(PathBuf::from("out")));
        assert_eq!(input_paths(&command), [forced, main]);
        assert_eq!(command.args[7], "-force_load");
        assert_eq!(command.inputs[0].argument, 8);
    }

    /// The rewritten command is one ld64.lld accepts, and reads the
    /// replacements: the originals are gone when it runs.
    #[test]
    fn ld64_lld_links_the_rewritten_command() {
        let scratch = Scratch::new("real");
        let compile = |name: &str, source: &str| {
            let c = scratch.file(&format!("{name}.c"), source.as_bytes());
            let o = scratch.0.join(format!("objs/{name}.o"));
            std::fs::create_dir_all(scratch.0.join("objs")).expect("objs");
            let status = std::process::Command::new("clang-19")
                .args(["-target", "arm64-apple-macos11", "-O2", "-c", &c, "-o"])
                .arg(&o)
                .status()
                .expect("clang-19");
            assert!(status.success());
            o.display().to_string()
        };
        compile("a", "int a(int x) { return x + 1; }\n");
        compile("b", "int b(int x) { return x + 2; }\n");
        let member = compile("m", "int m(int x) { return x + 3; }\n");
        let archive = scratch.0.join("libm3.a").display().to_string();
        let status = std::process::Command::new("llvm-ar-19")
            .args(["rcs", &archive, &member])
            .status()
            .expect("llvm-ar-19");
        assert!(status.success());
        let list = scratch.file("list", b"a.o\nb.o\n");
        let objs = scratch.0.join("objs").display().to_string();
        let output = scratch.0.join("out.dylib").display().to_string();
        let command: Vec<String> = [
            "clang-19",
            "-target",
            "arm64-apple-macos11",
            "-fuse-ld=lld",
            "-dynamiclib",
            "-nostdlib",
            "-Wl,-dead_strip",
            "-Xlinker",
            "-filelist",
            "-Xlinker",
            &format!("{list},{objs}"),
            &format!("-Wl,-force_load,{archive}"),
            "-o",
            &output,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let parsed = LinkCommand::parse(&command).expect("parse");
        assert_eq!(parsed.inputs.len(), 3);
        let copies = scratch.dir("copies");
        let copy_of = |input: &LinkInput| {
            let name = input.path.file_name().expect("a file name");
            PathBuf::from(&copies).join(name)
        };
        for input in &parsed.inputs {
            std::fs::copy(&input.path, copy_of(input)).expect("copy");
            std::fs::remove_file(&input.path).expect("remove the original");
        }
        let args = parsed
            .with_replaced_inputs(|input| Some(copy_of(input)), Path::new(&copies))
            .expect("rewritten");
        let status = std::process::Command::new(&parsed.program)
            .args(&args)
            .status()
            .expect("clang-19");
        assert!(status.success(), "{args:?}");
        let symbols = std::process::Command::new("llvm-nm-19")
            .args(["-gU", &output])
            .output()
            .expect("llvm-nm-19");
        let symbols = String::from_utf8_lossy(&symbols.stdout);
        for name in ["_a", "_b", "_m"] {
            assert!(
                symbols.lines().any(|l| l.ends_with(&format!(" {name}"))),
                "{symbols}"
            );
        }
    }

    #[test]
    fn gnu_commands_read_as_before() {
        let scratch = Scratch::new("gnu");
        let main = scratch.object("main.o");
        let command = parse(&["ld.lld", "-o", "out", &main, "-arch"]);
        // `-arch` makes any linker ld64-style; without it, ELF.
        assert_eq!(command.format, LinkFormat::MachO);
        let command = parse(&["ld.lld", "-o", "out", &main, "--gc-sections"]);
        assert_eq!(command.format, LinkFormat::Elf);
        assert!(command.gc_sections && command.filelists.is_empty());
        assert!(
            !command.exports.all,
            "an ELF executable exports nothing by default"
        );
        assert_eq!(command.linker, LinkerFlavor::Unordered);
        assert_eq!(input_paths(&command), [main]);
        assert_eq!(command.inputs[0].wl_part, None);
    }
}
