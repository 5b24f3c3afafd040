//! The report model and its renderings: text (a table like cargo-bloat's),
//! JSON (versioned, schema in docs/report-schema.md) and lld's
//! `--print-icf-sections` lines.

use crate::analyse::analysis::Analysis;
use crate::analyse::analysis::Plan;
use icf_fold::CandidateId;
use icf_fold::compare::{Difference, Step, first_difference};
use icf_fold::plan::{Action, KeepReason, Mode};
use icf_object::{ImageKind, PointerSource};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Bumped whenever a field changes meaning or disappears.
pub const REPORT_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub version: u32,
    pub mode: String,
    pub inputs: Vec<String>,
    pub totals: Totals,
    pub groups: Vec<Group>,
    pub near_duplicates: Vec<NearDuplicate>,
    pub timings_ms: TimingsMs,
    /// Sizes of the linked binary, when the report comes from a build (`cargo xtask icf`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<BinarySizes>,
    /// When the input is one linked executable or shared library: what
    /// the estimate rests on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSummary>,
    /// What limited folding that the user should know (a linker script icf
    /// cannot read keeps every input section apart).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Functions a shrink after the link kept whole and at their address
    /// instead of refusing the image, by why (`icf-shrink`'s `PinKind`
    /// names); a note says the same in words.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kept_in_place: BTreeMap<String, usize>,
}

/// A linked image the report estimates for (`icf report BINARY`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageSummary {
    /// `executable`, `PIE executable` or `shared library`.
    pub kind: String,
    /// Where pointers in data were learned: `kept relocations`,
    /// `dynamic relocations` or `scanned words`.
    pub pointers: String,
    /// No `.symtab`: functions from `.dynsym` and `.eh_frame`.
    pub stripped: bool,
    /// Functions `.eh_frame` describes that no symbol names.
    pub unnamed_functions: usize,
}

/// A linked binary before and after folding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinarySizes {
    pub path: String,
    pub file_before: u64,
    pub file_after: u64,
    pub stripped_before: u64,
    pub stripped_after: u64,
    pub text_before: u64,
    pub text_after: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Totals {
    pub objects: usize,
    pub functions: usize,
    pub code_bytes: u64,
    pub data_pieces: usize,
    pub data_bytes: u64,
    /// Functions compared byte-exactly because part of them could not be lifted.
    pub opaque_functions: usize,
    /// Classes with more than one member.
    pub classes: usize,
    /// Bytes of code in those classes beyond one copy each: what `--mode all` could remove.
    pub foldable_bytes: u64,
    pub aliases: usize,
    pub thunks: usize,
    /// Members that keep their body although identical.
    pub kept_unique: usize,
    pub saved_bytes: u64,
    pub saved_code_bytes: u64,
    pub saved_data_bytes: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Group {
    pub kind: String,
    pub size: u64,
    pub saved: u64,
    pub members: Vec<Member>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Member {
    pub name: String,
    pub symbol: String,
    pub object: String,
    pub section: String,
    pub size: u64,
    /// `kept`, `alias`, `thunk` or `keep`.
    pub action: String,
    /// Why it keeps its body, or why its address is significant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NearDuplicate {
    pub size: u64,
    /// One member of each class that shares the structural hash.
    pub functions: Vec<String>,
    /// The first difference between the first two.
    pub first_difference: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TimingsMs {
    pub load: f64,
    pub lift: f64,
    pub partition: f64,
    pub plan: f64,
    pub rounds: u32,
}

/// What [`Report::to_text`] lists.
#[derive(Clone, Copy, Debug)]
pub struct TextOptions {
    /// How many groups, largest saving first.
    pub groups_shown: usize,
    /// Under each name, the objects (archive members) its members come from.
    pub objects: bool,
}

/// What the report says of a linked image.
fn image_summary(image: &icf_object::Image<'_>) -> ImageSummary {
    ImageSummary {
        kind: match image.kind {
            ImageKind::Executable => "executable",
            ImageKind::PositionIndependentExecutable => "PIE executable",
            ImageKind::SharedLibrary => "shared library",
        }
        .to_string(),
        pointers: match image.pointers {
            PointerSource::KeptRelocations => "kept relocations",
            PointerSource::DynamicRelocations => "dynamic relocations",
            PointerSource::ScannedWords => "scanned words",
        }
        .to_string(),
        stripped: image.stripped,
        unnamed_functions: image.unnamed_functions,
    }
}

/// What the first note of a linked image's report says the figures are
/// (`icf shrink` says instead that they are folds it made).
pub const IMAGE_ESTIMATE: &str =
    ": what `icf link` would save on its inputs, estimated as if each function had its own section";

/// The notes a linked image's report starts with: that it is an
/// estimate, and what it rests on.
fn image_notes(image: &ImageSummary) -> Vec<String> {
    let pointers = match image.pointers.as_str() {
        "kept relocations" => "from the relocations -Wl,-q kept",
        "dynamic relocations" => "from its dynamic relocations",
        _ => {
            "by value: a non-PIE executable does not say which words of its data are \
             pointers, so every aligned word equal to a function's address counts as one \
             (relink with -Wl,-q to know)"
        }
    };
    let mut notes = vec![format!(
        "a linked {}{IMAGE_ESTIMATE}; pointers to functions in its data are known {pointers}",
        image.kind
    )];
    if image.stripped {
        notes.push(format!(
            "no .symtab: functions are those of .dynsym, .eh_frame and the direct calls from code neither covers ({} unnamed)",
            image.unnamed_functions
        ));
    }
    notes
}

/// How many near-duplicate groups a report lists.
const NEAR_DUPLICATES_SHOWN: usize = 50;

impl Analysis<'_, '_> {
    /// One member of a class in the report: its names, place, size, and
    /// what the plan does with it and why.
    fn member(&self, decision: &icf_fold::plan::Decision, plan: &Plan) -> Member {
        let program = self.program;
        let info = &self.candidates[decision.candidate.index()];
        let (action, reason) = match &decision.action {
            Action::Kept => ("kept", None),
            Action::Alias => ("alias", None),
            Action::Thunk(reason) => (
                "thunk",
                Some(self.thunk_reason(reason, plan, decision.candidate)),
            ),
            Action::Keep(reason) => (
                "keep",
                Some(self.keep_reason(reason, plan, decision.candidate)),
            ),
        };
        Member {
            name: self.name(decision.candidate),
            symbol: self.raw_name(decision.candidate),
            object: program.object_name(info.object),
            section: program
                .object(info.object)
                .object
                .section(info.section)
                .name_lossy(),
            size: info.size(),
            action: action.to_string(),
            reason,
        }
    }

    /// The report of `plan`; `load` is the time spent loading the program.
    pub fn report(&self, plan: &Plan, load: std::time::Duration) -> Report {
        let program = self.program;
        let mut totals = Totals {
            objects: program.objects.len(),
            ..Totals::default()
        };
        totals.opaque_functions = self.opaque_functions;
        for info in &self.candidates {
            if info.is_code() {
                totals.functions += 1;
                totals.code_bytes += info.size();
            } else {
                totals.data_pieces += 1;
                totals.data_bytes += info.size();
            }
        }
        for class in &plan.classes {
            let kept = &self.candidates[class.kept.index()];
            totals.classes += 1;
            if kept.is_code() {
                totals.foldable_bytes += kept.size() * (class.decisions.len() as u64 - 1);
            }
            for decision in &class.decisions {
                match &decision.action {
                    Action::Kept => {}
                    Action::Alias => totals.aliases += 1,
                    Action::Thunk(_) => totals.thunks += 1,
                    Action::Keep(_) => totals.kept_unique += 1,
                }
                if self.candidates[decision.candidate.index()].is_code() {
                    totals.saved_code_bytes += decision.saved;
                } else {
                    totals.saved_data_bytes += decision.saved;
                }
            }
        }
        // Names (demangled) and reasons, in parallel: a large C++ program
        // folds thousands of functions.
        let mut groups: Vec<Group> = plan
            .classes
            .par_iter()
            .map(|class| {
                let kept = &self.candidates[class.kept.index()];
                let members = class
                    .decisions
                    .iter()
                    .map(|decision| self.member(decision, plan))
                    .collect();
                Group {
                    kind: if kept.is_code() { "code" } else { "data" }.to_string(),
                    size: kept.size(),
                    saved: class.saved(),
                    members,
                }
            })
            .collect();
        totals.saved_bytes = totals.saved_code_bytes + totals.saved_data_bytes;
        groups.sort_by(|a, b| {
            b.saved
                .cmp(&a.saved)
                .then(b.size.cmp(&a.size))
                .then_with(|| a.members[0].name.cmp(&b.members[0].name))
        });

        Report {
            version: REPORT_VERSION,
            mode: match plan.mode {
                Mode::Safe => "safe",
                Mode::All => "all",
            }
            .to_string(),
            inputs: program
                .inputs
                .files
                .iter()
                .map(|f| f.path.display().to_string())
                .collect(),
            totals,
            groups,
            near_duplicates: self.near_duplicates(),
            binary: None,
            notes: self.notes(),
            kept_in_place: BTreeMap::new(),
            image: self.program.image().map(image_summary),
            timings_ms: TimingsMs {
                load: load.as_secs_f64() * 1e3,
                lift: self.timings.lift.as_secs_f64() * 1e3,
                partition: self.timings.partition.as_secs_f64() * 1e3,
                plan: self.timings.plan.as_secs_f64() * 1e3,
                rounds: self.partition.rounds,
            },
        }
    }

    /// What limited folding: a linker script icf cannot map to output
    /// sections; for a linked image, what the estimate rests on.
    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(Err(reason)) = &self.program.options.linker_scripts {
            notes.push(format!(
                "{reason}: icf cannot tell which output section each input section lands in, \
                 so no two input sections fold together"
            ));
        }
        if let Some(image) = self.program.image() {
            notes.extend(image_notes(&image_summary(image)));
        }
        notes
    }

    /// Code classes that share a structural hash but not a class: the same
    /// modulo constants and call targets, largest first.
    fn near_duplicates(&self) -> Vec<NearDuplicate> {
        // One representative per class, bucketed by hash.
        let mut by_hash: BTreeMap<u64, Vec<CandidateId>> = BTreeMap::new();
        for (index, info) in self.candidates.iter().enumerate() {
            let class = self.partition.class_of[index];
            if info.is_code() && class.0 as usize == index && info.size() > 0 {
                by_hash
                    .entry(self.partition.hashes[index])
                    .or_default()
                    .push(CandidateId(index as u32));
            }
        }
        let mut shown: Vec<&Vec<CandidateId>> = by_hash
            .values()
            .filter(|classes| classes.len() > 1)
            .collect();
        let weight = |classes: &[CandidateId]| {
            self.candidates[classes[0].index()].size() * classes.len() as u64
        };
        shown.sort_by_key(|classes| std::cmp::Reverse(weight(classes)));
        shown.truncate(NEAR_DUPLICATES_SHOWN);
        // Each lifts two functions again, the largest first: in parallel.
        shown
            .into_par_iter()
            .map(|classes| NearDuplicate {
                size: self.candidates[classes[0].index()].size(),
                functions: classes.iter().map(|&c| self.name(c)).collect(),
                first_difference: self
                    .difference(classes[0], classes[1])
                    .map_or_else(|| "identical".to_string(), |(_, text)| text),
            })
            .collect()
    }

    /// Where two candidates first differ under the final classes, with one
    /// line saying so; `None` when they are equal. Lifts both again.
    pub fn difference(
        &self,
        left: CandidateId,
        right: CandidateId,
    ) -> Option<(Difference, String)> {
        let (l, r) = (self.lift_candidate(left), self.lift_candidate(right));
        let candidate = |function, id: CandidateId| icf_fold::Candidate {
            function,
            attrs: &self.attrs[id.index()],
        };
        let difference =
            first_difference(candidate(&l, left), candidate(&r, right), &self.class_map())?;
        let text = self.describe_step((left, &l), (right, &r), &difference.step);
        Some((difference, text))
    }

    /// One line saying where two candidates differ.
    fn describe_step(
        &self,
        (left, l): (CandidateId, &icf_ir::Function),
        (right, r): (CandidateId, &icf_ir::Function),
        step: &Step,
    ) -> String {
        let inst_text = |f: &icf_ir::Function, block: u32, inst: u32| -> String {
            let Some(block) = f.blocks.get(block as usize) else {
                return "(none)".to_string();
            };
            let Some(inst) = f.block_insts(block).get(inst as usize) else {
                return "(none)".to_string();
            };
            let mut out = String::new();
            let names = |target, addend| self.describe_target(target, addend);
            icf_ir::print::print_inst(f, inst, icf_arch::syntax(f.arch), &names, &mut out);
            out
        };
        let (la, ra) = (&self.attrs[left.index()], &self.attrs[right.index()]);
        match step {
            Step::Kind => "one is code, the other data".to_string(),
            Step::Arch => "different architectures".to_string(),
            Step::SectionClass => format!(
                "output sections differ: {} vs {}",
                self.section_classes[la.section_class as usize], self.section_classes[ra.section_class as usize]
            ),
            Step::Unwind => "unwind descriptions (CIE/FDE instructions) differ".to_string(),
            Step::LayoutSensitivity => {
                "only one has places referred to from outside (jump tables), so only one needs identical layout".to_string()
            }
            Step::UnwindRef { index } => {
                let text = |attrs: &icf_fold::Attrs| {
                    attrs
                        .refs
                        .get(*index as usize)
                        .map_or("(none)".to_string(), |r| self.describe_target(r.target, r.addend))
                };
                format!("personality or exception table differs: {} vs {}", text(la), text(ra))
            }
            Step::BlockCount => format!("{} blocks vs {}", l.blocks.len(), r.blocks.len()),
            Step::Successors { block } => format!("block {block} has different successors"),
            Step::Reached { block } => format!("block {block} is reached from the entry in only one"),
            Step::Opcode { block, inst }
            | Step::Flags { block, inst }
            | Step::OperandCount { block, inst }
            | Step::Operand { block, inst, .. } => format!(
                "block {block} instruction {inst}: `{}` vs `{}`",
                inst_text(l, *block, *inst),
                inst_text(r, *block, *inst)
            ),
            Step::Layout { block, inst } => format!("block {block} instruction {inst} is at a different offset"),
            Step::BlockLength { block } => format!("block {block} is longer in one"),
            Step::FallThrough => {
                let text = |f: &icf_ir::Function| {
                    f.fall_through.map_or("nothing".to_string(), |r| {
                        let r = f.ref_(r);
                        self.describe_target(r.target, r.addend)
                    })
                };
                format!("falls through to {} vs {}", text(l), text(r))
            }
        }
    }
}

impl Analysis<'_, '_> {
    /// Why a member became a thunk rather than an alias.
    fn thunk_reason(&self, reason: &KeepReason, plan: &Plan, candidate: CandidateId) -> String {
        match reason {
            KeepReason::SignificantAddress => match &plan.significance[candidate.index()] {
                Some(why) => self.describe_significance(why),
                None => "address is significant".to_string(),
            },
            KeepReason::OwnSymbols => {
                "keeps its own symbols (COMDAT group, or a global that cannot move)".to_string()
            }
            KeepReason::ThroughIdentity => {
                "its COMDAT group's instances differ between units: it jumps to whichever instance of the kept function the link keeps".to_string()
            }
            other => self.keep_reason(other, plan, candidate),
        }
    }

    fn keep_reason(&self, reason: &KeepReason, plan: &Plan, candidate: CandidateId) -> String {
        match reason {
        KeepReason::NoSafeKeptCopy => {
            "every copy is a COMDAT instance the link may discard, and not all instances are identical".to_string()
        }
        KeepReason::InstanceOfKeptGroup => "another instance of the kept copy's COMDAT group".to_string(),
        KeepReason::ThroughIdentity => "a thunk to the kept function would not be smaller".to_string(),
        KeepReason::KeepUnique => "--keep-unique".to_string(),
        KeepReason::Ineligible(why) => why.clone(),
        KeepReason::OwnSymbols => {
            "keeps its own symbols (COMDAT group, or a global that cannot move); a thunk would not be smaller".to_string()
        }
        KeepReason::KeptCopyMayNotLoad => "the kept copy's archive member might not be linked".to_string(),
        KeepReason::TableOfUnfoldedFunction => {
            "a jump table folds with its function, which keeps its own body".to_string()
        }
        KeepReason::Planted { keep_alignment } => format!(
            "a wrong fold planted by --plant-fold{}",
            if *keep_alignment { "" } else { ", without its function's alignment" }
        ),
        KeepReason::SignificantAddress => match &plan.significance[candidate.index()] {
            Some(why) => format!("{}; a thunk would not be smaller", self.describe_significance(why)),
            None => "address is significant".to_string(),
        },
    }
    }
}

impl Report {
    /// Names the input `from` `to` instead, wherever the report names it
    /// (the image `icf link` folds after the link lives in a file of its
    /// own until it becomes the output).
    pub fn rename_input(&mut self, from: &str, to: &str) {
        for input in &mut self.inputs {
            if input == from {
                *input = to.to_string();
            }
        }
        for member in self.groups.iter_mut().flat_map(|group| &mut group.members) {
            if member.object == from {
                member.object = to.to_string();
            }
        }
    }
}

impl Report {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// What the report is on: `N objects`, or `a linked KIND`.
    fn inputs_described(&self) -> String {
        match &self.image {
            Some(image) => format!("a linked {}", image.kind),
            None => format!("{} objects", self.totals.objects),
        }
    }

    /// The report as a table for people: one line per name within each
    /// group, like cargo-llvm-lines' copies.
    pub fn to_text(&self, options: &TextOptions) -> String {
        let groups_shown = options.groups_shown;
        let t = &self.totals;
        let mut out = String::new();
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        let percent = |part: u64, whole: u64| 100.0 * part as f64 / whole.max(1) as f64;
        let _ = writeln!(
            out,
            "icf report, mode {}: {}, {} functions ({} bytes), {} read-only data pieces ({} bytes)",
            self.mode,
            self.inputs_described(),
            t.functions,
            t.code_bytes,
            t.data_pieces,
            t.data_bytes
        );
        let _ = writeln!(
            out,
            "{} classes of identical candidates; {} aliases, {} thunks, {} kept unique",
            t.classes, t.aliases, t.thunks, t.kept_unique
        );
        let _ = writeln!(
            out,
            "saved {} bytes of code ({:.2}% of code), {} bytes of data; identical code beyond one copy: {} bytes ({:.2}%)",
            t.saved_code_bytes,
            percent(t.saved_code_bytes, t.code_bytes),
            t.saved_data_bytes,
            t.foldable_bytes,
            percent(t.foldable_bytes, t.code_bytes)
        );
        if t.opaque_functions > 0 {
            let _ = writeln!(
                out,
                "{} functions compared byte-exactly (not fully lifted)",
                t.opaque_functions
            );
        }
        out.push('\n');
        let _ = writeln!(out, "{:>8} {:>7} {:>7}  Group", "Saved", "Size", "Members");
        for group in self.groups.iter().take(groups_shown) {
            write_group(&mut out, group, options.objects);
        }
        if self.groups.len() > groups_shown {
            let _ = writeln!(
                out,
                "... and {} more groups (--format json lists all)",
                self.groups.len() - groups_shown
            );
        }
        if !self.near_duplicates.is_empty() {
            let _ = writeln!(
                out,
                "\nNear-duplicates (same structure, different constants or callees):"
            );
            for near in self.near_duplicates.iter().take(10) {
                let _ = writeln!(
                    out,
                    "{:>8} x{}  {}\n{:>12}{}",
                    near.size,
                    near.functions.len(),
                    shorten_list(&counted_names(&near.functions), 3),
                    "",
                    near.first_difference
                );
            }
        }
        let ms = &self.timings_ms;
        let _ = writeln!(
            out,
            "\ntime: load {:.1} ms, lift {:.1} ms, partition {:.1} ms ({} rounds), plan {:.1} ms",
            ms.load, ms.lift, ms.partition, ms.rounds, ms.plan
        );
        out
    }

    /// lld's `--print-icf-sections` format: the kept section, then every section folded into it.
    pub fn to_icf_sections(&self) -> String {
        let mut out = String::new();
        for group in &self.groups {
            let removed: Vec<&Member> = group
                .members
                .iter()
                .filter(|m| m.action == "alias")
                .collect();
            if removed.is_empty() {
                continue;
            }
            let kept = &group.members[0];
            let _ = writeln!(out, "selected section {}:({})", kept.object, kept.section);
            for member in removed {
                let _ = writeln!(
                    out,
                    "  removing identical section {}:({})",
                    member.object, member.section
                );
            }
        }
        out
    }
}

impl Report {
    /// Reads a report written with `--format json`.
    pub fn from_json(text: &str) -> Result<Report, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The size a CI gate watches: the folded binary's `.text` when the report
    /// has one, else the code left after folding.
    pub fn folded_size(&self) -> u64 {
        match &self.binary {
            Some(binary) => binary.text_after,
            None => self.totals.code_bytes - self.totals.saved_code_bytes,
        }
    }

    /// The report as GitHub-flavoured markdown (step summaries, PR comments),
    /// with deltas against `baseline` in bloaty's style.
    pub fn to_markdown(&self, baseline: Option<&Report>, groups_shown: usize) -> String {
        let t = &self.totals;
        let mut out = String::from("## icf size report\n\n");
        for note in &self.notes {
            let _ = writeln!(out, "> **Note:** {note}\n");
        }
        let delta_header = if baseline.is_some() {
            " vs baseline |"
        } else {
            ""
        };
        let delta_rule = if baseline.is_some() { "---:|" } else { "" };
        let _ = writeln!(
            out,
            "| | before | after | saved |{delta_header}\n|---|---:|---:|---:|{delta_rule}"
        );
        let mut row = |label: &str, before: u64, after: u64, old_after: Option<u64>| {
            let saved = format!(
                "{} ({})",
                signed(after as i64 - before as i64),
                percent(after as i64 - before as i64, before)
            );
            let _ = write!(out, "| {label} | {before} | {after} | {saved} |");
            if let Some(old) = old_after {
                let _ = write!(
                    out,
                    " {} ({}) |",
                    signed(after as i64 - old as i64),
                    percent(after as i64 - old as i64, old)
                );
            } else if baseline.is_some() {
                out.push_str(" |");
            }
            out.push('\n');
        };
        match &self.binary {
            Some(b) => {
                let old = baseline.and_then(|r| r.binary.as_ref());
                row(
                    "file",
                    b.file_before,
                    b.file_after,
                    old.map(|o| o.file_after),
                );
                row(
                    "stripped",
                    b.stripped_before,
                    b.stripped_after,
                    old.map(|o| o.stripped_after),
                );
                row(
                    "`.text`",
                    b.text_before,
                    b.text_after,
                    old.map(|o| o.text_after),
                );
            }
            None => {
                let old = baseline.map(|r| r.totals.code_bytes - r.totals.saved_code_bytes);
                row("code", t.code_bytes, t.code_bytes - t.saved_code_bytes, old);
            }
        }
        let _ = writeln!(
            out,
            "\nMode `{}`: {} functions in {}; {} classes of identical code and data; \
             {} aliases, {} thunks, {} kept unique; {} bytes of code and {} of data saved.\n",
            self.mode,
            t.functions,
            self.inputs_described(),
            t.classes,
            t.aliases,
            t.thunks,
            t.kept_unique,
            t.saved_code_bytes,
            t.saved_data_bytes
        );
        if !self.groups.is_empty() {
            let _ = writeln!(
                out,
                "### Largest groups\n\n| saved | size | members | kept copy |\n|---:|---:|---:|---|"
            );
            for group in self.groups.iter().take(groups_shown) {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    group.saved,
                    group.size,
                    group.members.len(),
                    group
                        .members
                        .first()
                        .map_or_else(String::new, |kept| markdown_code(&kept.name))
                );
            }
            if self.groups.len() > groups_shown {
                let _ = writeln!(
                    out,
                    "\n{} more groups in the JSON report.",
                    self.groups.len() - groups_shown
                );
            }
        }
        out
    }
}

/// `+N`, `-N` or `0`.
fn signed(value: i64) -> String {
    if value > 0 {
        format!("+{value}")
    } else {
        value.to_string()
    }
}

/// A change as a percentage of `base`, with its sign.
fn percent(change: i64, base: u64) -> String {
    if base == 0 {
        return "n/a".to_string();
    }
    let value = 100.0 * change as f64 / base as f64;
    if value > 0.0 {
        format!("+{value:.2}%")
    } else {
        format!("{value:.2}%")
    }
}

/// Inline code that survives any characters a demangled name holds.
fn markdown_code(text: &str) -> String {
    let text = text.replace('|', "\\|");
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

/// The column where a group's names start, after `Saved`, `Size` and `Members`.
const NAME_COLUMN: usize = 26;

/// The members of a group that share a (demangled) name.
struct NameLine<'r> {
    name: &'r str,
    members: Vec<&'r Member>,
}

/// A group's members by name: the most frequent name first, then by name.
fn members_by_name(members: &[Member]) -> Vec<NameLine<'_>> {
    let mut by_name: BTreeMap<&str, Vec<&Member>> = BTreeMap::new();
    for member in members {
        by_name
            .entry(member.name.as_str())
            .or_default()
            .push(member);
    }
    let mut lines: Vec<NameLine<'_>> = by_name
        .into_iter()
        .map(|(name, members)| NameLine { name, members })
        .collect();
    // A stable sort: names of the same count stay in order.
    lines.sort_by_key(|line| std::cmp::Reverse(line.members.len()));
    lines
}

/// One group of the text report: its sizes and most frequent name on one
/// line, its other names under it, and, with `objects`, the objects each
/// name's members come from under the name.
fn write_group(out: &mut String, group: &Group, objects: bool) {
    let lines = members_by_name(&group.members);
    let counts = CountColumn::for_lines(&lines);
    let _ = write!(
        out,
        "{:>8} {:>7} {:>7}  ",
        group.saved,
        group.size,
        group.members.len()
    );
    if lines.is_empty() {
        let _ = writeln!(out, "({})", group.kind);
    }
    for (index, line) in lines.iter().enumerate() {
        if index > 0 {
            let _ = write!(out, "{:width$}", "", width = NAME_COLUMN);
        }
        let _ = write!(out, "{}{}", counts.prefix(line.members.len()), line.name);
        if index == 0 {
            let _ = write!(out, " ({})", group.kind);
        }
        let _ = writeln!(out, "{}", annotations(&line.members));
        if objects {
            let indent = NAME_COLUMN + counts.width() + 2;
            for object in object_lines(&line.members) {
                let _ = writeln!(out, "{:indent$}{object}", "");
            }
        }
    }
}

/// The `N x ` in front of a shared name, as wide as the group's largest
/// count so that its names line up; nothing when every name is unique.
struct CountColumn {
    digits: usize,
}

impl CountColumn {
    fn for_lines(lines: &[NameLine<'_>]) -> CountColumn {
        let largest = lines
            .iter()
            .map(|line| line.members.len())
            .filter(|&count| count > 1)
            .max();
        CountColumn {
            digits: largest.map_or(0, |count| count.to_string().len()),
        }
    }

    fn width(&self) -> usize {
        match self.digits {
            0 => 0,
            digits => digits + " x ".len(),
        }
    }

    fn prefix(&self, count: usize) -> String {
        if count > 1 {
            format!("{count:>digits$} x ", digits = self.digits)
        } else {
            " ".repeat(self.width())
        }
    }
}

/// Whether a member simply folds: it is the kept copy or an alias of it.
fn simply_folds(member: &Member) -> bool {
    matches!(member.action.as_str(), "kept" | "alias")
}

/// What happens to members that do not simply fold, and why, counted:
/// ` [thunk: address taken in main]`, ` [2 keep: …]`.
fn annotations(members: &[&Member]) -> String {
    let mut outcomes: BTreeMap<(&str, Option<&str>), usize> = BTreeMap::new();
    for member in members.iter().filter(|member| !simply_folds(member)) {
        *outcomes
            .entry((member.action.as_str(), member.reason.as_deref()))
            .or_default() += 1;
    }
    outcomes
        .into_iter()
        .map(|((action, reason), count)| {
            let count = if count > 1 {
                format!("{count} ")
            } else {
                String::new()
            };
            let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
            format!(" [{count}{action}{reason}]")
        })
        .collect()
}

/// Where a name's members come from, one line per object (with a count when
/// it holds several); the kept copy and members that do not simply fold say
/// what they are.
fn object_lines(members: &[&Member]) -> Vec<String> {
    let mut objects: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for member in members {
        *objects
            .entry((member.object.as_str(), member.action.as_str()))
            .or_default() += 1;
    }
    objects
        .into_iter()
        .map(|((object, action), count)| {
            let count = if count > 1 {
                format!("{count} x ")
            } else {
                String::new()
            };
            let action = if action == "alias" {
                String::new()
            } else {
                format!(" ({action})")
            };
            format!("{count}{object}{action}")
        })
        .collect()
}

/// Each distinct name once, in the order of its first appearance, with
/// `N x ` in front when several share it (instances of one generic).
fn counted_names(names: &[String]) -> Vec<String> {
    let mut counted: Vec<(&String, usize)> = Vec::new();
    for name in names {
        match counted.iter_mut().find(|(seen, _)| *seen == name) {
            Some((_, count)) => *count += 1,
            None => counted.push((name, 1)),
        }
    }
    counted
        .into_iter()
        .map(|(name, count)| match count {
            1 => name.clone(),
            _ => format!("{count} x {name}"),
        })
        .collect()
}

/// The first `shown` names, then how many more.
fn shorten_list(names: &[String], shown: usize) -> String {
    if names.len() <= shown {
        return names.join(", ");
    }
    format!(
        "{}, and {} more",
        names[..shown].join(", "),
        names.len() - shown
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_duplicates_count_the_instances_of_one_name() {
        let names: Vec<String> = ["run", "search", "run", "run", "fill"]
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(counted_names(&names), ["3 x run", "search", "fill"]);
        assert_eq!(
            shorten_list(&counted_names(&names), 2),
            "3 x run, search, and 1 more"
        );
    }

    fn member(name: &str, object: &str, action: &str, reason: Option<&str>) -> Member {
        Member {
            name: name.to_string(),
            symbol: format!("_sym_{name}"),
            object: object.to_string(),
            section: format!(".text.{name}"),
            size: 100,
            action: action.to_string(),
            reason: reason.map(str::to_string),
        }
    }

    fn report_of(members: Vec<Member>) -> Report {
        Report {
            version: REPORT_VERSION,
            mode: "safe".to_string(),
            inputs: Vec::new(),
            totals: Totals::default(),
            groups: vec![Group {
                kind: "code".to_string(),
                size: 100,
                saved: 100 * (members.len() as u64).saturating_sub(1),
                members,
            }],
            near_duplicates: Vec::new(),
            timings_ms: TimingsMs::default(),
            binary: None,
            image: None,
            notes: Vec::new(),
            kept_in_place: BTreeMap::new(),
        }
    }

    /// The lines under the table's heading, up to the blank line.
    fn group_lines(report: &Report, objects: bool) -> Vec<String> {
        let options = TextOptions {
            groups_shown: 10,
            objects,
        };
        report
            .to_text(&options)
            .lines()
            .skip_while(|line| !line.ends_with("Members  Group"))
            .skip(1)
            .take_while(|line| !line.is_empty())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn names_are_counted_most_frequent_first_with_their_names_aligned() {
        let mut members = vec![member("unique", "u.o", "kept", None)];
        for (name, copies) in [("drop<A>", 12), ("drop<C>", 3), ("drop<B>", 3)] {
            for copy in 0..copies {
                members.push(member(name, &format!("{copy}.o"), "alias", None));
            }
        }
        assert_eq!(
            group_lines(&report_of(members), false),
            [
                "    1800     100      19  12 x drop<A> (code)",
                "                           3 x drop<B>",
                "                           3 x drop<C>",
                "                               unique",
            ]
        );
    }

    #[test]
    fn unique_names_print_without_a_count() {
        let members = vec![
            member("sub0", "a.o", "kept", None),
            member("sub1", "a.o", "keep", Some("address taken in main")),
        ];
        assert_eq!(
            group_lines(&report_of(members), false),
            [
                "     100     100       2  sub0 (code)",
                "                          sub1 [keep: address taken in main]",
            ]
        );
    }

    #[test]
    fn members_that_do_not_simply_fold_are_counted_by_outcome() {
        let members = vec![
            member("f", "a.o", "kept", None),
            member("f", "b.o", "alias", None),
            member("f", "c.o", "thunk", Some("address taken in g")),
            member("f", "d.o", "thunk", Some("address taken in g")),
            member("f", "e.o", "keep", Some("--keep-unique")),
        ];
        assert_eq!(
            group_lines(&report_of(members), false),
            [
                "     400     100       5  5 x f (code) [keep: --keep-unique] [2 thunk: address taken in g]"
            ]
        );
    }

    #[test]
    fn objects_are_listed_two_columns_in_from_their_name_on_request() {
        let members = vec![
            member("f", "lib.a(x.o)", "alias", None),
            member("f", "lib.a(x.o)", "alias", None),
            member("f", "main.o", "kept", None),
            member("f", "y.o", "thunk", Some("address taken in g")),
            member("g", "y.o", "alias", None),
        ];
        let report = report_of(members);
        assert_eq!(
            group_lines(&report, true),
            [
                "     400     100       5  4 x f (code) [thunk: address taken in g]",
                "                                2 x lib.a(x.o)",
                "                                main.o (kept)",
                "                                y.o (thunk)",
                "                              g",
                "                                y.o",
            ]
        );
        // Without the flag, only the names.
        assert_eq!(group_lines(&report, false).len(), 2);
    }

    #[test]
    fn a_group_without_members_still_prints_its_sizes() {
        // A JSON report written by hand or by another tool may hold one.
        let report = report_of(Vec::new());
        assert_eq!(
            group_lines(&report, true),
            ["       0     100       0  (code)"]
        );
    }

    #[test]
    fn json_still_lists_every_member() {
        let members = vec![
            member("f", "a.o", "kept", None),
            member("f", "b.o", "alias", None),
        ];
        let json = report_of(members).to_json();
        let back = Report::from_json(&json).expect("the JSON report reads back");
        let objects: Vec<&str> = back.groups[0]
            .members
            .iter()
            .map(|member| member.object.as_str())
            .collect();
        assert_eq!(objects, ["a.o", "b.o"]);
    }
}
