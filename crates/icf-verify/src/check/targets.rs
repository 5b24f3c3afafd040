//! Where each target of a compared pair lands: the places an address
//! names in PLAIN and in FOLDED (a function, a PLT entry, data, a jump
//! table), whether they correspond (the same function or object, the same
//! side of an input-section boundary, a counterpart through the link map),
//! and the bindings of addresses the program may observe.

use super::*;

impl Checker<'_> {
    /// Does FOLDED's target stand for PLAIN's? An address one past the end
    /// of a data object is two things at once: that end (its identity, and
    /// what lies before it: a loop's bound) and the start of what follows
    /// (what lies after it: a string, or a jump table placed right after an
    /// array). A kept relocation naming the object settles it: the end.
    /// So does a jump table of another function starting there (no code
    /// but its own reads a function's jump table). Otherwise the start is
    /// tried first, then the end, unless the start is the function's own
    /// jump table, which the code certainly reads.
    pub(super) fn check_target(&mut self, check: &TargetCheck) -> Result<(), Failure> {
        if self.same_empty_object(check) {
            // Nothing to read or run there; its identity is all it has.
            let function = self.plain.is_code(check.plain_target);
            return self.record(check, check.plain_target, check.folded_target, function);
        }
        let (ends, starts): (Vec<Place>, Vec<Place>) = classify(
            self.plain,
            self.folded,
            check.plain_target,
            check.plain_field,
        )
        .into_iter()
        .partition(|place| {
            matches!(*place, Place::Symbol(id, offset) if self.plain.symbol(id).ends_at_offset(offset))
        });
        if ends.is_empty() || starts.is_empty() {
            return self.check_places(check, if starts.is_empty() { &ends } else { &starts });
        }
        match self.side_of_boundary(check, &ends) {
            Some(Side::End) => self.check_places(check, &ends),
            Some(Side::Start) => self.check_places(check, &starts),
            // The code may read either way from the address: the bytes
            // before it and after it must both correspond. A choice of one
            // reading, made to prove more, is how a fold whose code reads
            // one side was once proved by the bytes of the other.
            None => match (
                self.check_places(check, &ends),
                self.check_places(check, &starts),
            ) {
                (Ok(()), Ok(())) => Ok(()),
                // Of two failures, a merged address is the more telling.
                (Err(end), Err(start))
                    if start.local.kind == DifferenceKind::SignificantAddressesMerged
                        && end.local.kind != DifferenceKind::SignificantAddressesMerged =>
                {
                    Err(start)
                }
                (Err(failure), _) | (_, Err(failure)) => Err(failure),
            },
        }
    }

    /// With both link maps and PLAIN's input objects: whether the field
    /// names a zero-sized object in both images, the same input section of
    /// the same file at each target. Its address is all the code can use:
    /// no byte before or after it is the object's. In data, Rust's unit
    /// statics (`log`'s `NOP`; the image keeps no symbol for one); in code,
    /// LLVM's empty body of an unreachable function (`llvm_unreachable` in
    /// a release build), which runs into whatever the linker placed next,
    /// so nothing the program does can depend on what that is.
    pub(super) fn same_empty_object(&self, check: &TargetCheck) -> bool {
        let (Some(objects), Some(plain_map), Some(folded_map)) = (
            &self.plain.input_objects,
            &self.plain.input_sections,
            &self.folded.input_sections,
        ) else {
            return false;
        };

        objects
            .empty_named_at(plain_map, check.plain_field, check.plain_target)
            .is_some_and(|(file, name)| folded_map.empty_at(check.folded_target, file, &name))
    }

    /// With PLAIN's link map, for a field a section-symbol relocation
    /// names: an assembler writes such a relocation against a section of
    /// its own object, so where the target ends an input section of
    /// another file than the code's and starts one of the code's file, the
    /// field means what starts there (and the end, the other way round).
    pub(super) fn side_by_file(&self, check: &TargetCheck) -> Option<Side> {
        let sections = self.plain.input_sections.as_ref()?;
        let own = sections.file_at(check.plain_field)?;
        let ending = sections.file_ending_at(check.plain_target)?;
        let starting = sections.file_starting_at(check.plain_target)?;
        match (ending == own, starting == own) {
            (false, true) => Some(Side::Start),
            (true, false) => Some(Side::End),
            _ => None,
        }
    }

    /// Which side of an address that ends one data object (`ends`) and
    /// starts another place the code reaches from it, when something says
    /// so for certain; `None` when the code may read either side.
    ///
    /// - A kept relocation (`-q`) naming the object that ends there, or the
    ///   one that starts there: the compiler named that object, and code
    ///   reaches only the object it names. One naming a section symbol (as
    ///   anchors and local labels are written) names no global object, so
    ///   where only globals end there it means what starts there. With
    ///   PLAIN's link map, one naming a section symbol means the side that
    ///   lies in an input section of the code's own file
    ///   ([`Checker::side_by_file`]).
    /// - A call or jump, a jump table of the site's own function, or an
    ///   access of a known width at the address itself: the code reads
    ///   forward, what starts there.
    /// - An address that does not escape and whose every access, through
    ///   it and the pointers derived from it, reads at known offsets on one
    ///   side of it ([`Reach`], from the escape scans).
    pub(super) fn side_of_boundary(&self, check: &TargetCheck, ends: &[Place]) -> Option<Side> {
        let reloc = self.plain.emitted.get(&check.plain_field);
        // A section symbol names no global object: the compiler would
        // have named the global whose end it meant. A symbol ThinLTO
        // promoted (`<name>.llvm.<n>`) was a hidden global in its object,
        // whichever binding the linker gave it in the image (lld makes
        // hidden symbols local).
        let was_global = |id: SymbolId| {
            let symbol = self.plain.symbol(id);
            symbol.file.is_none() || promoted_by_thinlto(&symbol.name)
        };
        if reloc.is_some_and(|r| r.section_symbol)
            && ends
                .iter()
                .all(|place| matches!(*place, Place::Symbol(id, _) if was_global(id)))
        {
            return Some(Side::Start);
        }
        if reloc.is_some_and(|r| r.section_symbol)
            && let Some(side) = self.side_by_file(check)
        {
            return Some(side);
        }
        // The input object the map names says which section its
        // relocation named, with or without a kept one (which may name a
        // label of no size, or no symbol).
        if let (Some(objects), Some(sections)) =
            (&self.plain.input_objects, &self.plain.input_sections)
            && let Some(named) = objects.named_at(sections, check.plain_field, check.plain_target)
        {
            return Some(match named {
                Named::Ending => Side::End,
                Named::Starting => Side::Start,
            });
        }
        if let Some(id) = reloc.and_then(|reloc| reloc.symbol) {
            let symbol = self.plain.symbol(id);
            if ends.contains(&Place::Symbol(id, symbol.size)) {
                return Some(Side::End);
            }
            if (symbol.address..symbol.end()).contains(&check.plain_target) {
                return Some(Side::Start);
            }
        }
        if self.fat_pointer_length(check).is_some() {
            return Some(Side::Start);
        }
        let forward_access = check.use_ == Use::Access && check.width > 0;
        if matches!(check.use_, Use::Call | Use::Jump)
            || forward_access
            || check.reach == Reach::Forward
        {
            return Some(Side::Start);
        }
        if check.reach == Reach::Backward {
            return Some(Side::End);
        }
        // Another function's jump table starting there says nothing of
        // what this code reads: an index of unknown sign may read either.
        let own_table = self
            .plain
            .jump_table_at(check.plain_target)
            .iter()
            .any(|t| {
                check
                    .functions
                    .is_some_and(|(function, _)| t.function == function.start)
            });
        if own_table || self.is_jump_table(check) {
            return Some(Side::Start);
        }
        None
    }

    /// With [`VerifyOptions::assume_odr`]: whether `ps` and `fs` are one
    /// unit's and another's internal constant of the same name (libstdc++'s
    /// `std::piecewise_construct` before C++17), referenced from a
    /// vague-linkage C++ function (an inline function: a strong one has one
    /// definition, and the rule says nothing of its constants). An
    /// inline function that names it is one function in every unit, by the
    /// one-definition rule, whichever unit's copy the linker keeps: PLAIN's
    /// and FOLDED's links may keep different ones, so the constant they name
    /// is the same entity, its address no identity of its own.
    pub(super) fn odr_namesakes(&self, check: &TargetCheck, ps: &Symbol, fs: &Symbol) -> bool {
        self.assume_odr
            && ps.name == fs.name
            && ps.file.is_some()
            && fs.file.is_some()
            && check
                .functions
                .is_some_and(|(function, _)| self.plain.vague_linkage_function_at(function.start))
    }

    /// Whether PLAIN's target is a jump table of the function holding the
    /// site: its first entry (an offset from the table, or an address)
    /// sends an indirect jump somewhere in that function.
    pub(super) fn is_jump_table(&self, check: &TargetCheck) -> bool {
        let Some((function, _)) = check.functions else {
            return false;
        };
        let table = check.plain_target;
        let relative = self
            .plain
            .read_u32(table)
            .map(|v| table.wrapping_add(v as i32 as i64 as u64));
        let absolute = self.plain.read_u64(table);
        let targets = self.plain.jump_targets_in(function.start, function.end);
        [relative, absolute]
            .into_iter()
            .flatten()
            .any(|target| targets.binary_search(&target).is_ok())
    }

    /// Whether FOLDED's target stands for one of `plain_places`, PLAIN's
    /// interpretations of its target.
    pub(super) fn check_places(
        &mut self,
        check: &TargetCheck,
        plain_places: &[Place],
    ) -> Result<(), Failure> {
        // Several symbols holding the target (one object overlapping
        // another, `A` and `A_hi = A + 8`) are several extents the code may
        // read: each must correspond, not just one.
        let holding: Vec<Place> = plain_places
            .iter()
            .filter(|place| {
                matches!(**place, Place::Symbol(id, offset) if !self.plain.symbol(id).ends_at_offset(offset))
            })
            .cloned()
            .collect();
        if holding.len() > 1 {
            for place in holding {
                self.check_places(check, std::slice::from_ref(&place))?;
            }
            return Ok(());
        }
        // The same symbol at the same offset.
        for place in plain_places {
            if let Place::Symbol(id, offset) = *place
                && let Some(counterpart) = self.folded.counterpart(self.plain, id)
                && self.folded.symbol(counterpart).address.wrapping_add(offset)
                    == check.folded_target
            {
                let plain_symbol = self.plain.symbol(id);
                if !plain_symbol.is_anonymous_constant() && !plain_symbol.is_rust_function() {
                    self.record(
                        check,
                        plain_symbol.address,
                        self.folded.symbol(counterpart).address,
                        plain_symbol.kind == SymbolKind::Function,
                    )?;
                }
                return Ok(());
            }
        }
        let folded_places = classify(
            self.folded,
            self.plain,
            check.folded_target,
            check.folded_field,
        );
        let mut first_reason: Option<(DifferenceKind, String)> = None;
        for plain_place in plain_places {
            for folded_place in &folded_places {
                match self.places_correspond(check, plain_place, folded_place)? {
                    None => return Ok(()),
                    Some(reason) => {
                        first_reason.get_or_insert(reason);
                    }
                }
            }
        }
        let (kind, why) = first_reason.unwrap_or((
            DifferenceKind::TargetsDiffer,
            "no interpretation of the targets matches".to_string(),
        ));
        Err(self.fail(
            check,
            kind,
            format!(
                "{} in PLAIN vs {} in FOLDED: {why}",
                self.plain.describe(check.plain_target),
                self.folded.describe(check.folded_target)
            ),
        ))
    }

    /// `Ok(None)` when the two places correspond (obligations queued),
    /// `Ok(Some(reason))` when they do not, `Err` for a failure that no
    /// other interpretation can excuse (a significant address merged).
    pub(super) fn places_correspond(
        &mut self,
        check: &TargetCheck,
        plain_place: &Place,
        folded_place: &Place,
    ) -> Result<Option<(DifferenceKind, String)>, Failure> {
        let differ = |why: &str| Ok(Some((DifferenceKind::TargetsDiffer, why.to_string())));
        match (plain_place, folded_place) {
            (Place::Symbol(p, p_offset), Place::Symbol(f, f_offset)) => {
                let (ps, fs) = (self.plain.symbol(*p), self.folded.symbol(*f));
                let p_code = self.plain.sections[ps.section].executable;
                let f_code = self.folded.sections[fs.section].executable;
                match (p_code, f_code) {
                    (true, true) => {
                        self.obligation(check, ps.address, fs.address, *p_offset, *f_offset);
                        // A Rust function has no address identity (see
                        // `Symbol::is_rust_function`).
                        if !ps.is_rust_function() {
                            self.record(check, ps.address, fs.address, true)?;
                        }
                        Ok(None)
                    }
                    (false, false) => {
                        if self.plain.sections[ps.section].writable
                            || self.folded.sections[fs.section].writable
                        {
                            // The same object: a namesake local of the same
                            // size and initial contents, which PLAIN's could
                            // not be paired with by name (several in one
                            // file), bound one to one from here on.
                            let namesake = self.folded.counterpart(self.plain, *p).is_none()
                                && ps.name == fs.name
                                && ps.size == fs.size
                                && p_offset == f_offset
                                && ps.file.is_some()
                                && fs.file.is_some()
                                && self.plain.sections[ps.section].writable
                                && self.folded.sections[fs.section].writable;
                            if !namesake {
                                return differ("writable data must be the same object");
                            }
                            if let Some(reason) =
                                self.compare_data(check, ps.address, fs.address, ps.size)
                            {
                                return Ok(Some((DifferenceKind::DataDiffers, reason)));
                            }
                            self.bind(check, ps.address, fs.address)?;
                            return Ok(None);
                        }
                        if p_offset != f_offset || ps.size != fs.size {
                            return differ("different offsets or sizes of read-only data");
                        }
                        if let Some(reason) =
                            self.compare_data(check, ps.address, fs.address, ps.size)
                        {
                            return Ok(Some((DifferenceKind::DataDiffers, reason)));
                        }
                        // A compiler's anonymous constant has no address
                        // identity (see `Symbol::is_anonymous_constant`).
                        if !ps.is_anonymous_constant() && !self.odr_namesakes(check, ps, fs) {
                            self.record(check, ps.address, fs.address, false)?;
                        }
                        Ok(None)
                    }
                    _ => differ("code against data"),
                }
            }
            (Place::Plt(a), Place::Plt(b)) if a == b => Ok(None),
            (Place::Plt(a), Place::Plt(b)) => Ok(Some((
                DifferenceKind::TargetsDiffer,
                format!("entries binding different symbols ({a} vs {b})"),
            ))),
            (Place::GotNamed(a, x), Place::GotNamed(b, y)) if a == b && x == y => Ok(None),
            (Place::GotNamed(a, x), Place::GotNamed(b, y)) => Ok(Some((
                DifferenceKind::TargetsDiffer,
                format!(
                    "slots bound to different symbols ({} vs {})",
                    image::plus(a, *x as u64),
                    image::plus(b, *y as u64)
                ),
            ))),
            (Place::GotAddress(a), Place::GotAddress(b)) => {
                // The slot holds an address: it is a pointer like any other,
                // except that a call or jump through it only runs it.
                let use_ = match check.use_ {
                    Use::Call | Use::Jump => check.use_,
                    Use::Deref => Use::Access,
                    _ => Use::Address,
                };
                // The code's field stays: a relocation a `-q` link kept
                // there (`foo@GOTPCREL`, `:got_lo12:foo`) names the
                // symbol whose address the slot holds.
                self.queue.push(TargetCheck {
                    plain_target: *a,
                    folded_target: *b,
                    use_,
                    width: 0,
                    // What a dereferenced pointer's accesses read (the
                    // scan followed the loaded pointer).
                    reach: if check.use_ == Use::Deref {
                        check.reach
                    } else {
                        Reach::Unknown
                    },
                    ..*check
                });
                Ok(None)
            }
            (Place::Section(p, p_offset), Place::Section(f, f_offset)) => {
                let (ps, fs) = (&self.plain.sections[*p], &self.folded.sections[*f]);
                if ps.name != fs.name {
                    return differ("different sections");
                }
                if ps.executable {
                    // Unnamed code: compare it as a function of its own.
                    self.obligation(check, check.plain_target, check.folded_target, 0, 0);
                    // A PLAIN local FOLDED no longer names is compared as
                    // unnamed code: still a Rust function without identity.
                    if !in_rust_function(self.plain, check.plain_target) {
                        self.record(check, check.plain_target, check.folded_target, true)?;
                    }
                    return Ok(None);
                }
                if ps.writable {
                    if p_offset != f_offset {
                        return differ("writable data at another offset of its section");
                    }
                    self.record(check, check.plain_target, check.folded_target, false)?;
                    return Ok(None);
                }
                if let Some(reason) = self.compare_unnamed_data(check, access_limit(check)) {
                    return Ok(Some((DifferenceKind::DataDiffers, reason)));
                }
                // Read-only data without a name is the compiler's (string
                // literals, jump tables, constant pools): the language does
                // not promise distinct addresses for it, and linkers merge
                // it (`SHF_MERGE`), so its address is not recorded.
                Ok(None)
            }
            // Unnamed read-only data (no address identity) kept as a named
            // object's copy: PLAIN's piece, compared as unnamed data. (One
            // past the object's end is no place in it: that is the section
            // place FOLDED offers as well.)
            (Place::Section(p, _), Place::Symbol(f, f_offset))
                if *f_offset < self.folded.symbol(*f).size
                    && !self.plain.sections[*p].executable
                    && !self.plain.sections[*p].writable
                    && self.plain.sections[*p].name
                        == self.folded.sections[self.folded.symbol(*f).section].name
                    && !self.folded.sections[self.folded.symbol(*f).section].writable =>
            {
                match self.compare_unnamed_data(check, access_limit(check)) {
                    Some(reason) => Ok(Some((DifferenceKind::DataDiffers, reason))),
                    None => Ok(None),
                }
            }
            // The fold changes a section's size, not which section ends;
            // code may read back from the end (`__stop_foo[-1]`), so the
            // last piece of a data section, from the last symbol holding
            // its last byte (else from its start), must be the same.
            (Place::SectionEnd(p), Place::SectionEnd(f))
                if self.plain.sections[*p].name == self.folded.sections[*f].name =>
            {
                let (ps, fs) = (&self.plain.sections[*p], &self.folded.sections[*f]);
                if ps.executable {
                    return Ok(None);
                }
                let (plain_end, folded_end) = (ps.address + ps.size, fs.address + fs.size);
                let last = self
                    .plain
                    .symbols_around(plain_end - 1)
                    .0
                    .iter()
                    .map(|&id| self.plain.symbol(id).address)
                    .max()
                    .unwrap_or(ps.address)
                    .max(ps.address);
                let len = plain_end - last;
                let Some(folded_start) = folded_end
                    .checked_sub(len)
                    .filter(|&start| start >= fs.address)
                else {
                    return differ("the section's last piece is longer than FOLDED's section");
                };
                match self.compare_data(check, last, folded_start, len) {
                    Some(reason) => Ok(Some((DifferenceKind::DataDiffers, reason))),
                    None => Ok(None),
                }
            }
            (Place::Outside(a), Place::Outside(b)) if a == b => Ok(None),
            _ => differ("they are different kinds of places"),
        }
    }

    /// Queues the pair (`plain_start`, `folded_start`) unless known, and the
    /// check that interior offsets land on the same instruction.
    pub(super) fn obligation(
        &mut self,
        check: &TargetCheck,
        plain_start: u64,
        folded_start: u64,
        plain_offset: u64,
        folded_offset: u64,
    ) {
        let key = (plain_start, folded_start);
        if let std::collections::hash_map::Entry::Vacant(entry) = self.pairs.entry(key) {
            entry.insert(PairState::Pending);
            let via = Some(self.step(check));
            self.next_wave.push(PairTask {
                plain: code_extent(self.plain, plain_start),
                folded_start,
                via,
                root: check.root,
            });
        }
        if plain_offset != 0 || folded_offset != 0 {
            self.interior.push(InteriorCheck {
                key,
                plain_offset,
                folded_offset,
                check: *check,
            });
        }
    }

    pub(super) fn check_interiors(&mut self) -> Result<(), Failure> {
        let pending = std::mem::take(&mut self.interior);
        for item in pending {
            match self.pairs.get(&item.key) {
                Some(PairState::Done {
                    folded_start,
                    plain_offsets,
                    folded_offsets,
                }) => {
                    let plain_index = offset_index(plain_offsets, item.plain_offset);
                    let folded_index = item
                        .key
                        .1
                        .checked_add(item.folded_offset)
                        .and_then(|a| a.checked_sub(*folded_start))
                        .and_then(|o| offset_index(folded_offsets, o));
                    if plain_index.is_none() || plain_index != folded_index {
                        return Err(self.fail(
                            &item.check,
                            DifferenceKind::TargetsDiffer,
                            format!(
                                "{} in PLAIN and {} in FOLDED are not the same instruction of equal code",
                                self.plain.describe(item.key.0 + item.plain_offset),
                                self.folded.describe(item.key.1 + item.folded_offset)
                            ),
                        ));
                    }
                }
                _ => self.interior.push(item),
            }
        }
        Ok(())
    }

    /// Records that PLAIN's address `plain` is FOLDED's `folded` when the
    /// check observes the address, and fails when that merges two addresses
    /// PLAIN keeps apart or splits one.
    pub(super) fn record(
        &mut self,
        check: &TargetCheck,
        plain: u64,
        folded: u64,
        function: bool,
    ) -> Result<(), Failure> {
        let observed = match check.use_ {
            Use::Address => !(function && self.mode == Mode::All),
            Use::VtableSlot => !function,
            Use::Call | Use::Jump | Use::Access | Use::Deref => false,
        };
        // A program may rely on the alignment a function is declared
        // with (`aligned(N)`), and see it in any address it takes, in
        // every mode (mode all gives up distinct addresses, not that).
        if function
            && check.use_ == Use::Address
            && let Ok(found) = self
                .plain
                .declared_alignments
                .binary_search_by_key(&plain, |&(address, _)| address)
        {
            let alignment = self.plain.declared_alignments[found].1;
            if folded % alignment != 0 {
                return Err(self.fail(
                    check,
                    DifferenceKind::AlignmentLost,
                    format!(
                        "{} is declared aligned to {alignment} and its address is observed, but {} is not",
                        self.plain.describe(plain),
                        self.folded.describe(folded)
                    ),
                ));
            }
        }
        if !observed {
            return Ok(());
        }
        self.bind(check, plain, folded)
    }

    /// Binds PLAIN's address `plain` to FOLDED's `folded` for good, and
    /// fails when that merges two addresses PLAIN keeps apart or splits one.
    pub(super) fn bind(
        &mut self,
        check: &TargetCheck,
        plain: u64,
        folded: u64,
    ) -> Result<(), Failure> {
        let site = check.root;
        if let Some(&(other_plain, other_site)) = self.folded_to_plain.get(&folded)
            && other_plain != plain
        {
            return Err(self.fail(
                check,
                DifferenceKind::SignificantAddressesMerged,
                format!(
                    "{} and {} have distinct addresses in PLAIN that are observed, but both are {} in FOLDED (the first observed from {})",
                    self.plain.describe(other_plain),
                    self.plain.describe(plain),
                    self.folded.describe(folded),
                    self.roots
                        .get(other_site)
                        .map_or("another root", |root| root.name.as_str())
                ),
            ));
        }
        if let Some(&(other_folded, _)) = self.plain_to_folded.get(&plain)
            && other_folded != folded
        {
            return Err(self.fail(
                check,
                DifferenceKind::SignificantAddressesMerged,
                format!(
                    "the address of {} is observed as {} and as {} in FOLDED",
                    self.plain.describe(plain),
                    self.folded.describe(other_folded),
                    self.folded.describe(folded)
                ),
            ));
        }
        self.plain_to_folded.insert(plain, (folded, site));
        self.folded_to_plain.insert(folded, (plain, site));
        Ok(())
    }
}

/// Whether `name` is a local symbol ThinLTO promoted to a hidden global
/// so that other modules can reach it: `<name>.llvm.<digits>`.
pub(super) fn promoted_by_thinlto(name: &str) -> bool {
    name.rsplit_once(".llvm.").is_some_and(|(base, digits)| {
        !base.is_empty() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    })
}

/// What `address` is in `image`, best interpretation first: the symbol a
/// kept relocation names, the symbols containing it, those ending at it;
/// a PLT entry; a GOT slot; a place in a section; a number. The place in
/// its section is also offered when no symbol containing it exists in
/// `other` (a symbol the fold added, like icf's `__icf.*` names for a kept
/// copy of read-only data, or one it removed): such a name says nothing
/// about what the place is.
pub(super) fn classify(image: &Image, other: &Image, address: u64, field: u64) -> Vec<Place> {
    let mut places = Vec::new();
    let section = image.section_at(address);
    if let Some(index) = section {
        let role = image.sections[index].role;
        if let SectionRole::Plt { .. } = role {
            if let Some(place) = plt_entry(image, index, address) {
                places.push(place);
                return places;
            }
        } else if matches!(role, SectionRole::Got | SectionRole::LazyGot) {
            match image.dynamic.get(&address) {
                Some(image::Slot::Named(name, addend)) => {
                    places.push(Place::GotNamed(name.clone(), *addend))
                }
                Some(image::Slot::Address(a)) => places.push(Place::GotAddress(*a)),
                None => match image.read_u64(address) {
                    Some(value) => places.push(Place::GotAddress(value)),
                    None => places.push(Place::Section(index, 0)),
                },
            }
            return places;
        }
    }
    let (containing, ending) = image.symbols_around(address);
    if let Some(reloc) = image.emitted.get(&field)
        && let Some(id) = reloc.symbol
    {
        let s = image.symbol(id);
        if (s.address..=s.end()).contains(&address) {
            places.push(Place::Symbol(id, address - s.address));
        }
    }
    let has_known_container = containing
        .iter()
        .any(|&id| other.counterpart(image, id).is_some());
    // One past the end is a place of data only: past a function's end is
    // the next code, whatever that is.
    let data_ending = ending
        .into_iter()
        .filter(|id| image.symbol(*id).kind == SymbolKind::Object);
    for id in containing {
        let place = Place::Symbol(id, address - image.symbol(id).address);
        if !places.contains(&place) {
            places.push(place);
        }
    }
    // What starts here comes before what ends here: reading on from the
    // address reads what starts there.
    if !has_known_container {
        match section {
            Some(index) => places.push(Place::Section(
                index,
                address - image.sections[index].address,
            )),
            None => places.push(Place::Outside(address)),
        }
    }
    places.extend(
        image
            .sections
            .iter()
            .enumerate()
            .filter(|(_, s)| s.alloc && s.size > 0 && s.address.saturating_add(s.size) == address)
            .map(|(index, _)| Place::SectionEnd(index)),
    );
    for id in data_ending {
        let place = Place::Symbol(id, address - image.symbol(id).address);
        if !places.contains(&place) {
            places.push(place);
        }
    }
    places
}

/// How far an unnamed piece of data may be compared for `check`: the bytes
/// its accesses read when that is known (at most, none before it), else
/// without a limit.
pub(super) fn access_limit(check: &TargetCheck) -> u64 {
    if check.use_ == Use::Access && check.width > 0 {
        check.width
    } else {
        u64::MAX
    }
}

/// The symbol a PLT entry jumps to (see [`decode::plt_slot`]).
pub(super) fn plt_entry(image: &Image, section: usize, address: u64) -> Option<Place> {
    match decode::plt_slot(image, section, address)? {
        image::Slot::Named(name, _) => Some(Place::Plt(name.clone())),
        image::Slot::Address(a) => Some(Place::GotAddress(*a)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinlto_promotes_a_local_to_name_dot_llvm_dot_digits() {
        assert!(promoted_by_thinlto("helper.llvm.1234567"));
        assert!(!promoted_by_thinlto("helper.llvm."));
        assert!(!promoted_by_thinlto(".llvm.12"));
        assert!(!promoted_by_thinlto("helper.llvm.12a"));
        assert!(!promoted_by_thinlto("helper"));
    }
}
