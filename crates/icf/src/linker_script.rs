//! Which output section a linker script puts each input section in, as far
//! as folding needs it: two functions may fold only when the link places
//! them in the same output section (a script can put twins in sections of
//! their own, and a program can see where they are).
//!
//! Understood: the `SECTIONS` command with output section descriptions
//! whose input section descriptions are `FILE(PATTERNS)`, possibly inside
//! `KEEP(...)` and `SORT*(...)`, with assignments and data statements
//! between them, and `INSERT AFTER|BEFORE`. Other commands (`MEMORY`,
//! `PHDRS`, `ENTRY`, `OUTPUT_FORMAT`...) are skipped. Anything else in
//! `SECTIONS` (`EXCLUDE_FILE`, `INCLUDE`, overlays) makes the script one
//! icf cannot map: [`parse`] fails, and the caller keeps every input
//! section apart.
//!
//! An input section no rule matches is placed by the linker: by the
//! default rules when the script is inserted into the default script, in
//! an output section of its own name otherwise (an orphan).

use std::fmt::Write as _;

/// The output-section rules of one or more linker scripts, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScriptMap {
    rules: Vec<Rule>,
    /// Every script was `INSERT`ed into the default one: sections no rule
    /// matches go where the default script puts them.
    inserted: bool,
}

/// One input section description: a file pattern and section patterns.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    output: String,
    file: String,
    sections: Vec<String>,
}

/// Where an input section goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement<'a> {
    /// Into the output section a rule names.
    Output(&'a str),
    /// Where the linker's default rules put it (`.text.foo` in `.text`).
    Default,
    /// Into an output section of its own name.
    Orphan,
    /// icf cannot tell: a file pattern that linkers could read as naming
    /// the archive or the member comes first.
    Unknown,
}

/// Whether a file pattern names a file.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Match {
    Yes,
    No,
    /// It names the archive and not the member, or the other way round.
    Maybe,
}

impl ScriptMap {
    /// The rules of `scripts`, in order, each given with its file name for errors.
    pub fn parse_all(scripts: &[(String, String)]) -> Result<ScriptMap, String> {
        let mut map = ScriptMap {
            rules: Vec::new(),
            inserted: true,
        };
        for (name, text) in scripts {
            let script = parse(text).map_err(|e| format!("{name}: {e}"))?;
            map.rules.extend(script.rules);
            map.inserted &= script.inserted;
        }
        Ok(map)
    }

    /// Where the input section `section` of the object file `file` (its
    /// file name, `archive.a(member.o)` for an archive member) goes.
    pub fn placement(&self, file: &str, section: &str) -> Placement<'_> {
        for rule in &self.rules {
            if !rule.sections.iter().any(|p| glob(p, section)) {
                continue;
            }
            match file_matches(&rule.file, file) {
                Match::Yes => return Placement::Output(&rule.output),
                Match::No => {}
                Match::Maybe => return Placement::Unknown,
            }
        }
        if self.inserted {
            Placement::Default
        } else {
            Placement::Orphan
        }
    }
}

/// Whether file pattern `pattern` names `file` (`archive(member)` for an
/// archive member), compared without directories: `*` names every file,
/// `archive:member` (either side may be empty) an archive's members, and a
/// plain pattern a file, or a member when it names the member and the
/// archive alike.
fn file_matches(pattern: &str, file: &str) -> Match {
    let yes = |matched: bool| if matched { Match::Yes } else { Match::No };
    if pattern == "*" {
        return Match::Yes;
    }
    let base = |path: &str| path.rsplit('/').next().unwrap_or(path).to_string();
    let member = file
        .strip_suffix(')')
        .and_then(|f| f.split_once('('))
        .map(|(archive, member)| (base(archive), member.to_string()));
    let any = |p: &str, name: &str| p.is_empty() || glob(p, name);
    match (pattern.split_once(':'), member) {
        (Some((archive, inner)), Some((a, m))) => yes(any(archive, &a) && any(inner, &m)),
        (Some((archive, inner)), None) => yes(archive.is_empty() && any(inner, &base(file))),
        (None, Some((a, m))) => match (glob(pattern, &m), glob(pattern, &a)) {
            (true, true) => Match::Yes,
            (false, false) => Match::No,
            _ => Match::Maybe,
        },
        (None, None) => yes(glob(pattern, &base(file))),
    }
}

/// Shell-style matching of `*`, `?` and `[...]` classes.
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    glob_at(&p, &t)
}

fn glob_at(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => (0..=t.len()).any(|skip| glob_at(&p[1..], &t[skip..])),
        Some('?') => !t.is_empty() && glob_at(&p[1..], &t[1..]),
        Some('[') => {
            let Some(close) = p.iter().position(|&c| c == ']') else {
                return t.first() == Some(&'[') && glob_at(&p[1..], &t[1..]);
            };
            let Some(&c) = t.first() else {
                return false;
            };
            let class = &p[1..close];
            let (negated, class) = match class.first() {
                Some('!' | '^') => (true, &class[1..]),
                _ => (false, class),
            };
            let mut found = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == '-' {
                    found |= class[i] <= c && c <= class[i + 2];
                    i += 3;
                } else {
                    found |= class[i] == c;
                    i += 1;
                }
            }
            found != negated && glob_at(&p[close + 1..], &t[1..])
        }
        Some(&c) => t.first() == Some(&c) && glob_at(&p[1..], &t[1..]),
    }
}

/// The tokens of a script: names and patterns, and punctuation.
fn tokens(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    let mut current = String::new();
    let flush = |current: &mut String, out: &mut Vec<String>| {
        if !current.is_empty() {
            out.push(std::mem::take(current));
        }
    };
    while let Some((at, c)) = chars.next() {
        if c == '/' && chars.peek().is_some_and(|&(_, n)| n == '*') {
            flush(&mut current, &mut out);
            let end = text[at + 2..]
                .find("*/")
                .ok_or_else(|| "a comment is not closed".to_string())?;
            let resume = at + 2 + end + 2;
            while chars.peek().is_some_and(|&(i, _)| i < resume) {
                chars.next();
            }
            continue;
        }
        if c == '"' {
            flush(&mut current, &mut out);
            let mut quoted = String::new();
            loop {
                match chars.next() {
                    Some((_, '"')) => break,
                    Some((_, c)) => quoted.push(c),
                    None => return Err("a quoted name is not closed".to_string()),
                }
            }
            out.push(quoted);
            continue;
        }
        if c.is_whitespace() {
            flush(&mut current, &mut out);
        } else if "{}();:,=><".contains(c) {
            flush(&mut current, &mut out);
            out.push(c.to_string());
        } else {
            current.push(c);
        }
    }
    flush(&mut current, &mut out);
    Ok(out)
}

/// The global names (or glob patterns) a dynamic list or a version script
/// exports, `None` when icf cannot tell (an `extern "C++"` block names
/// demangled patterns; a malformed list).
pub fn exported_names(text: &str) -> Option<Vec<String>> {
    let tokens = tokens(text).ok()?;
    let mut names = Vec::new();
    let mut depth = 0usize;
    let mut global = true;
    let mut index = 0;
    while let Some(token) = tokens.get(index) {
        let following = tokens.get(index + 1).map(String::as_str);
        match token.as_str() {
            "{" => {
                depth += 1;
                global = true;
            }
            "}" => depth = depth.checked_sub(1)?,
            ";" => {}
            "extern" => return None,
            "global" | "local" if following == Some(":") => {
                global = token == "global";
                index += 1;
            }
            name if depth == 1 && global && following == Some(";") => {
                names.push(name.to_string());
            }
            // A version node's name, or its parent's, outside the braces.
            _ if depth == 0 => {}
            _ if depth == 1 && !global => {}
            _ => return None,
        }
        index += 1;
    }
    (depth == 0).then_some(names)
}

/// Parses one script (see the module documentation).
pub fn parse(text: &str) -> Result<ScriptMap, String> {
    let tokens = tokens(text)?;
    let mut parser = Parser {
        tokens: &tokens,
        at: 0,
    };
    let mut map = ScriptMap::default();
    while let Some(token) = parser.next() {
        match token {
            "SECTIONS" => {
                parser.expect("{")?;
                parser.sections(&mut map.rules)?;
            }
            "INSERT" => map.inserted = true,
            // Commands with a braced body or a parenthesized argument.
            _ => match parser.peek() {
                Some("{") => parser.skip_balanced("{", "}")?,
                Some("(") => parser.skip_balanced("(", ")")?,
                _ => {}
            },
        }
    }
    Ok(map)
}

struct Parser<'t> {
    tokens: &'t [String],
    at: usize,
}

impl<'t> Parser<'t> {
    fn peek(&self) -> Option<&'t str> {
        self.tokens.get(self.at).map(String::as_str)
    }

    fn next(&mut self) -> Option<&'t str> {
        let token = self.peek();
        self.at += 1;
        token
    }

    fn expect(&mut self, wanted: &str) -> Result<(), String> {
        match self.next() {
            Some(token) if token == wanted => Ok(()),
            other => Err(format!("expected `{wanted}`, found {}", describe(other))),
        }
    }

    /// Skips from an opening token to its matching closing one.
    fn skip_balanced(&mut self, open: &str, close: &str) -> Result<(), String> {
        self.expect(open)?;
        let mut depth = 1;
        while depth > 0 {
            match self.next() {
                Some(t) if t == open => depth += 1,
                Some(t) if t == close => depth -= 1,
                Some(_) => {}
                None => return Err(format!("`{open}` is not closed")),
            }
        }
        Ok(())
    }

    /// The statements of `SECTIONS { ... }`, after its `{`.
    fn sections(&mut self, rules: &mut Vec<Rule>) -> Result<(), String> {
        loop {
            let statement_start = self.at;
            // A statement ends at `;` (an assignment, ENTRY(...)) or is an
            // output section description: NAME ... : ... { ... }.
            let mut saw_colon = false;
            loop {
                match self.peek() {
                    None => return Err("SECTIONS is not closed".to_string()),
                    Some("}") if self.at == statement_start => {
                        self.next();
                        return Ok(());
                    }
                    Some(";") => {
                        self.next();
                        break;
                    }
                    Some("(") => self.skip_balanced("(", ")")?,
                    Some(":") => {
                        saw_colon = true;
                        self.next();
                    }
                    Some("{") if saw_colon => {
                        let output = self.tokens[statement_start].clone();
                        if output == "OVERLAY" {
                            return Err("OVERLAY is not supported".to_string());
                        }
                        self.next();
                        self.output_section(&output, rules)?;
                        self.after_output_section();
                        break;
                    }
                    Some("{") => {
                        return Err(format!(
                            "unexpected `{{` after {}",
                            describe(self.tokens.get(statement_start).map(String::as_str))
                        ));
                    }
                    Some(_) => {
                        self.next();
                    }
                }
            }
        }
    }

    /// What may follow an output section's `}`: `> region`, `AT > region`,
    /// `:phdr`, `= fill`, `,`.
    fn after_output_section(&mut self) {
        loop {
            match self.peek() {
                Some(">" | ":" | "=") => {
                    self.next();
                    self.next();
                }
                Some("AT") => {
                    self.next();
                }
                Some(",") => {
                    self.next();
                }
                _ => return,
            }
        }
    }

    /// The input section descriptions of output section `output`, after its `{`.
    fn output_section(&mut self, output: &str, rules: &mut Vec<Rule>) -> Result<(), String> {
        loop {
            match self.peek() {
                None => return Err(format!("output section {output} is not closed")),
                Some("}") => {
                    self.next();
                    return Ok(());
                }
                Some(";") => {
                    self.next();
                }
                Some(keyword @ ("EXCLUDE_FILE" | "INCLUDE" | "INPUT_SECTION_FLAGS")) => {
                    return Err(format!(
                        "{keyword} in output section {output} is not supported"
                    ));
                }
                Some("KEEP") => {
                    self.next();
                    self.expect("(")?;
                    self.input_description(output, rules)?;
                    self.expect(")")?;
                }
                Some(
                    "BYTE" | "SHORT" | "LONG" | "QUAD" | "SQUAD" | "FILL" | "ASSERT" | "PROVIDE"
                    | "PROVIDE_HIDDEN" | "HIDDEN",
                ) => {
                    self.next();
                    if self.peek() == Some("(") {
                        self.skip_balanced("(", ")")?;
                    }
                }
                Some(_) if self.tokens.get(self.at + 1).is_some_and(|t| t == "=") => {
                    // An assignment: up to its `;`.
                    while !matches!(self.next(), Some(";") | None) {}
                }
                Some(_) => self.input_description(output, rules)?,
            }
        }
    }

    /// `FILE(PATTERNS)`, the sections possibly inside `SORT*(...)`; a bare
    /// file pattern (all its sections) too.
    fn input_description(&mut self, output: &str, rules: &mut Vec<Rule>) -> Result<(), String> {
        // `archive:member`, `archive:` and `:member` arrive as several tokens.
        let mut file = self.next().unwrap_or_default().to_string();
        if file == ":" {
            file.push_str(self.next().unwrap_or_default());
        } else if self.peek() == Some(":") {
            self.next();
            file.push(':');
            if self.peek() != Some("(") {
                file.push_str(self.next().unwrap_or_default());
            }
        }
        if self.peek() != Some("(") {
            rules.push(Rule {
                output: output.to_string(),
                file,
                sections: vec!["*".to_string()],
            });
            return Ok(());
        }
        self.next();
        let mut sections = Vec::new();
        loop {
            match self.next() {
                None => return Err(format!("an input section list of {output} is not closed")),
                Some(")") => break,
                Some("EXCLUDE_FILE") => {
                    return Err("EXCLUDE_FILE is not supported".to_string());
                }
                Some(sort) if sort.starts_with("SORT") => {
                    self.expect("(")?;
                    loop {
                        match self.next() {
                            Some(")") => break,
                            Some("(") => {
                                self.at -= 1;
                                self.skip_balanced("(", ")")?;
                                // SORT(SORT(...)): the inner list was skipped whole.
                                return Err("nested SORT is not supported".to_string());
                            }
                            Some(pattern) => sections.push(pattern.to_string()),
                            None => return Err("SORT is not closed".to_string()),
                        }
                    }
                }
                Some(pattern) => sections.push(pattern.to_string()),
            }
        }
        rules.push(Rule {
            output: output.to_string(),
            file,
            sections,
        });
        Ok(())
    }
}

fn describe(token: Option<&str>) -> String {
    let mut out = String::new();
    match token {
        Some(token) => {
            let _ = write!(out, "`{token}`");
        }
        None => out.push_str("the end of the script"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_in_order_and_orphans() {
        let map = parse(
            "/* twins apart */ SECTIONS {\n  . = 0x10000;\n  .twins_a : { start_a = .; *(.text.twin_a) end_a = .; }\n  .text : { KEEP(*(.text.keep*)) *(SORT(.text.*)) *(.text) } > ROM AT > FLASH :text =0x90909090\n  .data : ALIGN(16) { crt*.o(.data) *(.data .data.*) }\n}",
        )
        .expect("parses");
        assert_eq!(
            map.placement("a.o", ".text.twin_a"),
            Placement::Output(".twins_a")
        );
        assert_eq!(
            map.placement("a.o", ".text.keepme"),
            Placement::Output(".text")
        );
        assert_eq!(map.placement("a.o", ".text.f"), Placement::Output(".text"));
        assert_eq!(map.placement("crt1.o", ".data"), Placement::Output(".data"));
        assert_eq!(map.placement("x.o", ".rodata"), Placement::Orphan);
    }

    #[test]
    fn an_inserted_script_leaves_the_rest_to_the_default_rules() {
        let map =
            parse("SECTIONS { .hot : { *(.text.hot_*) } } INSERT AFTER .text;").expect("parses");
        assert_eq!(
            map.placement("a.o", ".text.hot_1"),
            Placement::Output(".hot")
        );
        assert_eq!(map.placement("a.o", ".text.cold"), Placement::Default);
    }

    #[test]
    fn file_patterns_name_files_and_archive_members() {
        let map = parse("SECTIONS { .a : { libx.a:y.o(.text*) } .b : { *z.o(.text*) } }")
            .expect("parses");
        assert_eq!(
            map.placement("/p/libx.a(y.o)", ".text.f"),
            Placement::Output(".a")
        );
        assert_eq!(
            map.placement("/p/libx.a(q.o)", ".text.f"),
            Placement::Orphan
        );
        assert_eq!(
            map.placement("/q/baz.o", ".text.f"),
            Placement::Output(".b")
        );
    }

    #[test]
    fn what_it_cannot_map_is_an_error() {
        assert!(parse("SECTIONS { .t : { *(EXCLUDE_FILE(a.o) .text) } }").is_err());
        assert!(parse("SECTIONS { OVERLAY : { .a { *(.a) } } }").is_err());
        assert!(parse("SECTIONS { .t : { *(.text) }").is_err());
    }

    #[test]
    fn exported_names_of_dynamic_lists_and_version_scripts() {
        assert_eq!(
            exported_names("{\n  twin_a;\n  twin_b;\n};\n"),
            Some(vec!["twin_a".to_string(), "twin_b".to_string()])
        );
        assert_eq!(
            exported_names("V1 { global: f; g*; local: *; }; V2 { h; } V1;"),
            Some(vec!["f".to_string(), "g*".to_string(), "h".to_string()])
        );
        assert_eq!(exported_names("{ extern \"C++\" { ns::*; }; };"), None);
        assert_eq!(exported_names("{ f; "), None);
    }

    #[test]
    fn globs() {
        assert!(glob(".text.*", ".text.f"));
        assert!(!glob(".text.*", ".text"));
        assert!(glob(".text[0-9]", ".text7"));
        assert!(!glob(".text[!0-9]", ".text7"));
        assert!(glob("?x*", "ax"));
    }
}
