//! `icf explain A B`: why two candidates do or do not fold. The answer is the
//! first step at which the comparator tells them apart; when that step is a
//! reference whose targets are in different classes, the explanation follows
//! the two targets, recursively, until it reaches the difference that started it.

use crate::analyse::analysis::Analysis;
use crate::analyse::candidates::Origin;
use icf_fold::CandidateId;
use rustc_hash::FxHashSet as HashSet;
use std::fmt::Write;

/// How deep an explanation follows references.
const MAX_DEPTH: usize = 8;

impl Analysis<'_, '_> {
    /// Candidates named `query`: mangled, demangled, or demangled without the
    /// Rust hash for code; the symbol or section name for data. Copies with
    /// the same name in several objects are told apart with `NAME@OBJECT`,
    /// where OBJECT is part of the object's name (`foo@cgu.03`).
    pub fn find(&self, query: &str) -> Vec<CandidateId> {
        let found = self.find_named(query, None);
        if !found.is_empty() {
            return found;
        }
        match query.rsplit_once('@') {
            Some((name, object)) => self.find_named(name, Some(object)),
            None => Vec::new(),
        }
    }

    fn find_named(&self, name: &str, object: Option<&str>) -> Vec<CandidateId> {
        (0..self.candidates.len() as u32)
            .map(CandidateId)
            .filter(|&id| {
                let info = &self.candidates[id.index()];
                if object.is_some_and(|o| !self.program.object_name(info.object).contains(o)) {
                    return false;
                }
                match info.origin {
                    Origin::Function(index) => crate::report::dump::matches_name(
                        self.program,
                        self.program.function(index),
                        Some(name),
                    ),
                    Origin::Data => self.raw_name(id) == name || self.name(id) == name,
                }
            })
            .collect()
    }

    /// Why `left` and `right` fold or do not.
    pub fn explain(&self, left: CandidateId, right: CandidateId) -> String {
        let mut out = String::new();
        let mut seen = HashSet::default();
        self.explain_into(left, right, 0, &mut seen, &mut out);
        out
    }

    fn explain_into(
        &self,
        left: CandidateId,
        right: CandidateId,
        depth: usize,
        seen: &mut HashSet<(CandidateId, CandidateId)>,
        out: &mut String,
    ) {
        let indent = "  ".repeat(depth);
        let (ln, rn) = (self.name(left), self.name(right));
        if left == right {
            let _ = writeln!(out, "{indent}{ln} is the same candidate on both sides");
            return;
        }
        let class = self.partition.class_of[left.index()];
        if class == self.partition.class_of[right.index()] {
            let members = self
                .partition
                .class_of
                .iter()
                .filter(|&&c| c == class)
                .count();
            let _ = writeln!(
                out,
                "{indent}{ln} and {rn} are identical: they fold (a class of {members})"
            );
            return;
        }
        let Some((difference, text)) = self.difference(left, right) else {
            // Equal under the final classes but split earlier cannot happen at a fixpoint.
            let _ = writeln!(
                out,
                "{indent}{ln} and {rn} compare equal but were split: please report this"
            );
            return;
        };
        let _ = writeln!(out, "{indent}{ln} and {rn} differ: {text}");
        let Some((lt, rt)) = difference.targets else {
            return;
        };
        let pinned = [lt, rt].map(|t| self.pinned_candidate(t));
        if pinned.iter().any(Option::is_some) {
            for candidate in pinned.into_iter().flatten() {
                let _ = writeln!(
                    out,
                    "{indent}  {} must keep its own address there: {}",
                    self.name(candidate),
                    self.why_pinned(candidate)
                );
            }
            return;
        }
        let (Some(lc), Some(rc)) = (self.candidate_of(lt), self.candidate_of(rt)) else {
            let _ = writeln!(
                out,
                "{indent}  the references name {} and {}: different symbols or sections",
                self.describe_target(lt, 0),
                self.describe_target(rt, 0)
            );
            return;
        };
        if depth + 1 >= MAX_DEPTH || !seen.insert((lc, rc)) {
            return;
        }
        let _ = writeln!(
            out,
            "{indent}  because {} and {} are not identical:",
            self.name(lc),
            self.name(rc)
        );
        self.explain_into(lc, rc, depth + 2, seen, out);
    }
}
