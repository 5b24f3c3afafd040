//! Comparator keys kept between links: a link that meets an object it has
//! seen before, in the same surroundings, reads the object's keys
//! ([`Body`]) from icf's cache (`icf-cache`) instead of lifting it.
//!
//! A key must be exactly what lifting would give, so an entry is named by
//! everything lifting and narrowing read ([`KeyCache::key`]):
//!
//! - this build of icf (`ICF_BUILD_ID`, a hash of the analysis's sources);
//! - the object's bytes (an archive member's own bytes), by their hash,
//!   which a file's stamp keeps between links ([`KnownHashes`]);
//! - the run of candidates (code, or read-only data) and their places;
//! - for every symbol of the object, what the link resolves it to (this
//!   object's section, another object's section, a name left to the link,
//!   an absolute value) with its offset, and the places references into
//!   that section narrow to: its pieces (which depend on liveness) and its
//!   mergeable elements with their contents.
//!
//! Nothing else reaches a key: the lifter reads the object's bytes, its
//! relocations through the resolved symbols, and its own entry points;
//! narrowing reads the places of the sections named. Another object is
//! named by where it is in the link (its file's name without the
//! directory, member, and how many objects of that file name and member
//! come before it), not by its bytes: what it contributes to a key is the
//! places above, so an object that only calls into a changed one keeps its
//! entry as long as the pieces it calls stay where they were, and the
//! same objects linked from another directory keep every entry.
//!
//! Consecutive runs of one input file and kind (code, or data) are stored
//! together, as one pack named by their keys in order ([`Pack`]): creating cache files
//! is most of what writing the cache costs, and an archive holds hundreds
//! of objects. A pack is written by a thread of its own while the analysis
//! and then the linker go on ([`PendingWrites`]).
//!
//! A run's payload stores its entries (`entry::Entry`: a key lifted, or a
//! function's sketch, each with its shape) in candidate order, as the
//! second pass left them; a later link lifts a sketched entry whose shape
//! another candidate of that link shares. Each body's reference targets
//! are written as descriptions that outlive the link ([`Descriptor`]:
//! a section of an object, a candidate by its object, section and extent,
//! a name, a constant by content), turned back into this link's target
//! numbers when read. A description that names nothing in this link is a
//! miss: the object is lifted.

use crate::analyse::candidates::{CandidateInfo, Places, object_runs};
use crate::analyse::entry::Entry;
use crate::load::objects::ObjectId;
use crate::load::program::Program;
use crate::load::targets::{ExtendedTargets, Target};
use crate::options::CacheSettings;
use icf_cache::{Key, KeyHasher, Store, content_hash};
use icf_fold::body::Body;
use icf_fold::leb128::{Reader, Writer};
use icf_ir::TargetId;
use icf_object::SectionIndex;
use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Names a run's key; bump the version when the payload changes.
const DOMAIN: &str = "icf comparator keys 2";
/// How a run's payload marks each entry (see [`KeyCache::write`]).
const LIFTED_WITHOUT_SHAPE: u8 = 0;
const LIFTED_WITH_SHAPE: u8 = 1;
const SKETCHED: u8 = 2;
/// Names a pack's key (see [`Pack`]).
const PACK_DOMAIN: &str = "icf comparator key pack 1";

/// What the cache did in one analysis.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub dir: std::path::PathBuf,
    /// Runs of candidates (an object's functions, or its data) looked up.
    pub runs: u64,
    /// Runs read from the cache.
    pub hits: u64,
    /// Candidates whose keys were read rather than lifted.
    pub candidates_read: u64,
    /// Candidates lifted.
    pub candidates_lifted: u64,
    /// Entries (packs of runs, see `Pack`) written, by a thread that
    /// may still be writing them (see [`PendingWrites`]), and their bytes.
    pub written: u64,
    pub bytes_written: u64,
    /// Time spent hashing the objects' bytes (or finding their hashes).
    pub hashing: Duration,
    /// Objects loaded, and of them those whose bytes were hashed: the
    /// others' hashes were kept by an earlier link of the same file
    /// (`KnownHashes`).
    pub objects: u64,
    pub objects_hashed: u64,
}

/// One run's entries between the two passes: where its pack holds it, and
/// whether they were read from the cache.
pub(crate) struct RunEntries {
    run: Range<usize>,
    entries: Vec<Entry>,
    /// The run's pack and its position there; `None` when the run is not
    /// cached.
    place: Option<(usize, usize)>,
    read: bool,
}

impl RunEntries {
    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The run's first candidate.
    pub(crate) fn start(&self) -> usize {
        self.run.start
    }
}

/// The cache, opened for one analysis.
pub(crate) struct KeyCache<'a, 'b, 'data> {
    store: Store,
    program: &'a Program<'data>,
    candidates: &'a [CandidateInfo],
    places: &'a Places,
    targets: &'a ExtendedTargets<'b, 'data>,
    /// The bytes' hash of each object the link loads: an entry's own
    /// object is named by its bytes.
    hashes: Vec<Option<u128>>,
    /// Every object's name in this link: its file, member and how many
    /// objects of that file and member came before it. Other objects are
    /// named so (their bytes may change without changing what references
    /// into them narrow to, which the key holds instead).
    names: Vec<u128>,
    /// The object with each name.
    objects: HashMap<u128, ObjectId>,
    /// Every run of candidates (one object's functions, or its data), in
    /// candidate order, and the pack holding each.
    runs: Vec<Range<usize>>,
    run_pack: Vec<usize>,
    packs: Vec<Pack>,
    counters: [AtomicU64; 6],
    hashing: Duration,
    /// Objects whose bytes were hashed (the others' hashes were known).
    objects_hashed: u64,
    /// Entries to write, to the thread that writes them ([`PendingWrites`]).
    queue: std::sync::mpsc::SyncSender<(Key, Vec<Vec<u8>>)>,
    writer: std::thread::JoinHandle<()>,
}

/// Up to [`RUNS_PER_PACK`] runs of one input file and kind (code, or data),
/// stored together as one entry: a link creates a few cache files per
/// input file rather than one per object (an archive holds hundreds), and
/// creating files is most of what writing the cache costs.
struct Pack {
    /// Indices into [`KeyCache::runs`], consecutive.
    runs: Range<usize>,
    /// Named by its runs' keys in order; `None` when a run cannot be cached.
    key: Option<Key>,
    state: Mutex<PackState>,
}

/// What one pack holds while its runs are done. A pack is read when its
/// first run is asked for and dropped when its last run is done, so that
/// only the packs in progress are in memory, not the whole cache.
#[derive(Default)]
struct PackState {
    /// Whether the stored pack was looked for yet.
    looked: bool,
    /// The stored pack, and where each run's payload lies in it.
    found: Option<(Vec<u8>, Vec<Range<usize>>)>,
    /// Payloads of runs lifted so far.
    lifted: Vec<Option<Vec<u8>>>,
    /// Runs still to come: the last one done writes the pack when any run
    /// was lifted, and drops what the pack held.
    remaining: usize,
}

/// Entries still being written when the analysis is done: the thread
/// writing them (and then keeping the cache within its limit) runs on while
/// the link does, and dropping this waits for it.
#[derive(Debug)]
pub struct PendingWrites(Option<std::thread::JoinHandle<()>>);

impl PendingWrites {
    /// Waits until every entry is written.
    pub fn wait(mut self) {
        self.join();
    }

    fn join(&mut self) {
        if let Some(writer) = self.0.take() {
            // A writer that failed has written what it could; the cache
            // is only ever short of entries.
            let _ = writer.join();
        }
    }
}

impl Drop for PendingWrites {
    fn drop(&mut self) {
        self.join();
    }
}

/// How many packs may wait for the writer: enough to keep lifting from
/// waiting on the disk, few enough not to hold every entry in memory.
const QUEUED_PACKS: usize = 4;
/// At most this many runs share a pack: an archive of hundreds of objects
/// is a few packs, each small enough to hold while its runs are done.
const RUNS_PER_PACK: usize = 32;

const RUNS: usize = 0;
const HITS: usize = 1;
const READ: usize = 2;
const LIFTED: usize = 3;
const WRITTEN: usize = 4;
const BYTES: usize = 5;

impl<'a, 'b, 'data> KeyCache<'a, 'b, 'data> {
    /// The cache in `settings.dir`, or `None` when the directory cannot be
    /// made (the analysis then lifts everything).
    pub(crate) fn open(
        settings: &CacheSettings,
        program: &'a Program<'data>,
        candidates: &'a [CandidateInfo],
        places: &'a Places,
        targets: &'a ExtendedTargets<'b, 'data>,
    ) -> Option<KeyCache<'a, 'b, 'data>> {
        let store = Store::open(&settings.dir, settings.limit).ok()?;
        let started = Instant::now();
        let known = KnownHashes::read(program, &store);
        let hashes: Vec<Option<u128>> = program
            .objects
            .par_iter()
            .enumerate()
            .map_init(
                || program.pending_release(),
                |released, (index, object)| {
                    object.loaded.then(|| {
                        if let Some(hash) = known.of(program, ObjectId(index as u32)) {
                            return hash;
                        }
                        let hash = analysed_bytes_hash(&object.object);
                        program.release_object_pages_later(released, ObjectId(index as u32));
                        hash
                    })
                },
            )
            .collect();
        let (hashes_written, objects_hashed) = known.updates(program, &hashes);
        // Named by file name, not path: the same objects linked from
        // another directory (a second build tree, a moved checkout) keep
        // their names, and so does every entry naming them. Two files of
        // one name differ by their ordinal, so names stay one per object.
        let mut seen: HashMap<(&[u8], Option<&str>), u64> = HashMap::default();
        let names: Vec<u128> = program
            .objects
            .iter()
            .map(|object| {
                let path = program.file_path(object.file);
                let file_name = path.file_name().unwrap_or(path.as_os_str());
                let file_name = file_name.as_encoded_bytes();
                let ordinal = seen
                    .entry((file_name, object.member.as_deref()))
                    .or_default();
                let name = KeyHasher::new("object")
                    .bytes(file_name)
                    .bytes(object.member.as_deref().unwrap_or_default().as_bytes())
                    .u64(*ordinal)
                    .finish();
                *ordinal += 1;
                u128::from_le_bytes(name.0)
            })
            .collect();
        let objects = names
            .iter()
            .enumerate()
            .map(|(index, &name)| (name, ObjectId(index as u32)))
            .collect();
        let (queue, entries) = std::sync::mpsc::sync_channel::<(Key, Vec<Vec<u8>>)>(QUEUED_PACKS);
        let writing = store.clone();
        let writer = std::thread::Builder::new()
            .name("icf-cache-writer".into())
            .spawn(move || {
                let mut wrote = false;
                for (key, parts) in entries {
                    let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
                    wrote |= writing.put_parts(&key, &parts).is_ok();
                }
                if wrote {
                    let _ = writing.evict();
                }
            })
            .ok()?;
        for (key, payload) in hashes_written {
            let _ = queue.send((key, vec![payload]));
        }
        let mut cache = KeyCache {
            queue,
            writer,
            store,
            program,
            candidates,
            places,
            targets,
            hashes,
            names,
            objects,
            runs: object_runs(candidates),
            run_pack: Vec::new(),
            packs: Vec::new(),
            counters: Default::default(),
            hashing: started.elapsed(),
            objects_hashed,
        };
        cache.find_packs();
        Some(cache)
    }

    /// Groups the runs into packs, names each, and reads those the cache
    /// holds.
    fn find_packs(&mut self) {
        let mut has_runs = vec![false; self.program.objects.len()];
        for run in &self.runs {
            has_runs[self.candidates[run.start].object.index()] = true;
        }
        let surroundings: Vec<Option<Key>> = has_runs
            .par_iter()
            .enumerate()
            .map(|(index, &has)| has.then(|| self.surroundings(ObjectId(index as u32)))?)
            .collect();
        let keys: Vec<Option<Key>> = self
            .runs
            .par_iter()
            .map(|run| self.key(run.clone(), &surroundings))
            .collect();
        let program = self.program;
        let candidates = self.candidates;
        let pack_of = |run: &Range<usize>| {
            let candidate = &candidates[run.start];
            (program.object(candidate.object).file, candidate.is_code())
        };
        let mut packs = Vec::new();
        let mut start = 0;
        let groups = self
            .runs
            .chunk_by(|a, b| pack_of(a) == pack_of(b))
            .flat_map(|group| group.chunks(RUNS_PER_PACK));
        for group in groups {
            let runs = start..start + group.len();
            start = runs.end;
            let key =
                keys[runs.clone()]
                    .iter()
                    .try_fold(KeyHasher::new(PACK_DOMAIN), |mut pack, key| {
                        pack.bytes(&(*key)?.0);
                        Some(pack)
                    });
            packs.push((runs, key.map(|k| k.finish())));
        }
        self.run_pack = packs
            .iter()
            .enumerate()
            .flat_map(|(index, (runs, _))| runs.clone().map(move |_| index))
            .collect();
        self.packs = packs
            .into_iter()
            .map(|(runs, key)| {
                let count = runs.len();
                Pack {
                    runs,
                    key,
                    state: Mutex::new(PackState {
                        lifted: vec![None; count],
                        remaining: count,
                        ..PackState::default()
                    }),
                }
            })
            .collect();
    }

    fn count(&self, counter: usize, by: u64) {
        self.counters[counter].fetch_add(by, Ordering::Relaxed);
    }

    /// The first pass over `run` (candidates of one object): its entries
    /// from the cache, or from `first`. Each run then goes through
    /// [`KeyCache::settle`], which stores it.
    pub(crate) fn entries(&self, run: Range<usize>, first: impl Fn(usize) -> Entry) -> RunEntries {
        self.count(RUNS, 1);
        let place = self
            .runs
            .binary_search_by_key(&run.start, |r| r.start)
            .ok()
            .map(|index| {
                (
                    self.run_pack[index],
                    index - self.packs[self.run_pack[index]].runs.start,
                )
            });
        if let Some((pack, position)) = place
            && let Some(payload) = self.stored_payload(&self.packs[pack], position)
            && let Some(entries) = self.read(&payload, run.clone())
        {
            self.count(HITS, 1);
            self.count(READ, entries.len() as u64);
            return RunEntries {
                run,
                entries,
                place,
                read: true,
            };
        }
        let entries: Vec<Entry> = run.clone().map(first).collect();
        let lifted = entries
            .iter()
            .filter(|e| matches!(e, Entry::Lifted { .. }))
            .count();
        self.count(LIFTED, lifted as u64);
        RunEntries {
            run,
            entries,
            place,
            read: false,
        }
    }

    /// The second pass over a run (`second` says whether it lifted an
    /// entry), which is then stored with the rest of its pack when
    /// anything in it was not read from the cache; its keys.
    pub(crate) fn settle(
        &self,
        run: RunEntries,
        second: impl Fn(usize, Entry) -> (Entry, bool),
    ) -> Vec<Body> {
        let RunEntries {
            run,
            entries,
            place,
            read,
        } = run;
        let mut lifted = 0;
        let entries: Vec<Entry> = entries
            .into_iter()
            .zip(run.clone())
            .map(|(entry, index)| {
                let (entry, was_lifted) = second(index, entry);
                lifted += usize::from(was_lifted);
                entry
            })
            .collect();
        self.count(LIFTED, lifted as u64);
        if let Some((pack, position)) = place {
            let pack = &self.packs[pack];
            // A run without a lasting description is stored empty: its
            // pack then never reads back (an empty payload is not a run's).
            let payload = (!read || lifted > 0).then(|| {
                pack.key
                    .and_then(|_| self.write(run, &entries))
                    .unwrap_or_default()
            });
            self.done(pack, position, payload);
        }
        entries.into_iter().map(Entry::into_body).collect()
    }

    /// Records that run `position` of `pack` is done (with its new payload
    /// when it was lifted); the last run of a pack in which any run was
    /// lifted sends the whole pack to the writer.
    fn done(&self, pack: &Pack, position: usize, lifted: Option<Vec<u8>>) {
        let Some(key) = pack.key else { return };
        let Ok(mut state) = pack.state.lock() else {
            return;
        };
        if let Some(payload) = lifted {
            state.lifted[position] = Some(payload);
        }
        state.remaining -= 1;
        if state.remaining > 0 {
            return;
        }
        let state = std::mem::take(&mut *state);
        if state.lifted.iter().all(Option::is_none) {
            return;
        }
        // The pack's bytes: the number of runs, then each run's payload
        // after its length. Sent in pieces, each payload as it is, rather
        // than copied into one buffer: in a cold LLVM link those copies
        // were 20 MiB of the peak.
        let mut count = Writer::default();
        count.unsigned(state.lifted.len() as u64);
        let mut parts = Vec::with_capacity(1 + 2 * state.lifted.len());
        parts.push(count.bytes);
        for (position, payload) in state.lifted.into_iter().enumerate() {
            let payload = match (payload, &state.found) {
                (Some(payload), _) => payload,
                (None, Some((found, ranges))) => found[ranges[position].clone()].to_vec(),
                (None, None) => return,
            };
            let mut length = Writer::default();
            length.unsigned(payload.len() as u64);
            parts.push(length.bytes);
            parts.push(payload);
        }
        self.count(WRITTEN, 1);
        self.count(BYTES, parts.iter().map(|part| part.len() as u64).sum());
        let _ = self.queue.send((key, parts));
    }

    /// The stored payload of run `position` of `pack`, reading the pack
    /// from the cache when this is the first run asked for.
    fn stored_payload(&self, pack: &Pack, position: usize) -> Option<Vec<u8>> {
        let key = pack.key?;
        let mut state = pack.state.lock().ok()?;
        if !state.looked {
            state.looked = true;
            state.found = self
                .store
                .get(&key)
                .and_then(|payload| split_pack(payload, pack.runs.len()));
        }
        let (found, ranges) = state.found.as_ref()?;
        Some(found[ranges.get(position)?.clone()].to_vec())
    }

    /// Says what the cache did; the entries it queued are still being
    /// written (see [`PendingWrites`]).
    pub(crate) fn finish(self) -> (CacheStats, PendingWrites) {
        let [runs, hits, read, lifted, written, bytes] = self.counters.map(AtomicU64::into_inner);
        drop(self.queue);
        let stats = CacheStats {
            dir: self.store.dir().to_path_buf(),
            runs,
            hits,
            candidates_read: read,
            candidates_lifted: lifted,
            written,
            bytes_written: bytes,
            hashing: self.hashing,
            objects: self.hashes.iter().flatten().count() as u64,
            objects_hashed: self.objects_hashed,
        };
        (stats, PendingWrites(Some(self.writer)))
    }

    /// The name of `run`'s entry (see the module header); `None` when the
    /// run cannot be cached (an object it depends on shares its bytes
    /// with another).
    fn key(&self, run: Range<usize>, surroundings: &[Option<Key>]) -> Option<Key> {
        let object = self.candidates.get(run.start)?.object;
        let mut key = KeyHasher::new(DOMAIN);
        key.bytes(env!("ICF_BUILD_ID").as_bytes());
        key.u128((*self.hashes.get(object.index())?)?);
        key.bytes(&(*surroundings.get(object.index())?)?.0);
        key.u64(run.len() as u64);
        for candidate in &self.candidates[run] {
            key.u64(u64::from(candidate.is_code()))
                .u64(u64::from(candidate.section.0))
                .u64(candidate.start)
                .u64(candidate.end);
        }
        Some(key.finish())
    }

    /// What the link around `object` gives its keys: what each of its
    /// symbols resolves to, and the places references into each section
    /// they name narrow to (see the module header). `None` when a symbol
    /// resolves to something without a lasting description.
    fn surroundings(&self, object: ObjectId) -> Option<Key> {
        let loaded = self.program.object(object);
        let mut key = KeyHasher::new("surroundings");
        key.u64(loaded.symbol_refs.len() as u64);
        // Many symbols name one section (its section symbol, each function
        // in it): its places are hashed once.
        let mut places: HashMap<(ObjectId, SectionIndex), Key> = HashMap::default();
        for symbol in &loaded.symbol_refs {
            key.u64(symbol.base as u64);
            match self.targets.get(symbol.target) {
                Target::Section {
                    object: to,
                    section,
                } => {
                    key.u64(0);
                    self.name_object(&mut key, object, to)?;
                    key.u64(u64::from(section.0));
                    let digest = places
                        .entry((to, section))
                        .or_insert_with(|| self.places_digest(to, section));
                    key.bytes(&digest.0);
                }
                Target::Symbol { name } => {
                    key.u64(1).bytes(name);
                }
                Target::Absolute => {
                    key.u64(2);
                }
                Target::Candidate(_) | Target::Pinned(_) | Target::Constant { .. } => return None,
            }
        }
        Some(key.finish())
    }

    /// A hash of the places references into `section` of `object` narrow
    /// to: its pieces, and its mergeable elements with their contents.
    fn places_digest(&self, object: ObjectId, section: SectionIndex) -> Key {
        let mut digest = KeyHasher::new("places");
        let pieces = self.places.pieces(object, section);
        digest.u64(pieces.len() as u64);
        for piece in pieces {
            digest.u64(piece.start).u64(piece.end);
        }
        let constants = self.places.constants(object, section);
        digest.u64(constants.len() as u64);
        for &(start, constant) in constants {
            digest.u64(start);
            if let Target::Constant {
                entsize,
                strings,
                content,
            } = self.targets.get(constant)
            {
                digest
                    .u64(u64::from(entsize))
                    .u64(u64::from(strings))
                    .bytes(content);
            }
        }
        digest.finish()
    }

    /// `to` as seen from `from`: itself, or another object by its name.
    fn name_object(&self, key: &mut KeyHasher, from: ObjectId, to: ObjectId) -> Option<()> {
        if to == from {
            key.u64(0);
        } else {
            key.u64(1).u128(*self.names.get(to.index())?);
        }
        Some(())
    }

    /// The payload storing `bodies`, the keys of `run`; `None` when a
    /// target has no lasting description.
    fn write(&self, run: Range<usize>, entries: &[Entry]) -> Option<Vec<u8>> {
        let from = self.candidates.get(run.start)?.object;
        let mut numbers: HashMap<TargetId, u32> = HashMap::default();
        let mut order = Vec::new();
        for entry in entries {
            for r in entry.body().refs() {
                numbers.entry(r.target).or_insert_with(|| {
                    order.push(r.target);
                    (order.len() - 1) as u32
                });
            }
        }
        let mut objects: Vec<u128> = Vec::new();
        let mut descriptors = Writer::default();
        for &target in &order {
            self.describe(from, target, &mut objects, &mut descriptors)?;
        }
        let mut out = Writer::default();
        out.unsigned(entries.len() as u64);
        out.unsigned(objects.len() as u64);
        for name in &objects {
            out.bytes.extend_from_slice(&name.to_le_bytes());
        }
        out.unsigned(order.len() as u64);
        out.bytes.extend_from_slice(&descriptors.bytes);
        let mut payload = out.bytes;
        for entry in entries {
            // Each entry: whether it was lifted and has a shape (see
            // `read`), the shape, the body.
            let (tag, shape) = match entry {
                Entry::Lifted { shape: None, .. } => (LIFTED_WITHOUT_SHAPE, None),
                Entry::Lifted { shape, .. } => (LIFTED_WITH_SHAPE, *shape),
                Entry::Sketched { shape, .. } => (SKETCHED, Some(*shape)),
            };
            payload.push(tag);
            if let Some(shape) = shape {
                payload.extend_from_slice(&shape.to_le_bytes());
            }
            entry
                .body()
                .write_to(&mut payload, |target| numbers[&target]);
        }
        Some(payload)
    }

    /// Writes `target`, referred to from object `from`, as a [`Descriptor`].
    fn describe(
        &self,
        from: ObjectId,
        target: TargetId,
        objects: &mut Vec<u128>,
        out: &mut Writer,
    ) -> Option<()> {
        let mut object_number = |object: ObjectId| -> Option<u64> {
            if object == from {
                return Some(0);
            }
            let name = *self.names.get(object.index())?;
            let at = match objects.iter().position(|&n| n == name) {
                Some(at) => at,
                None => {
                    objects.push(name);
                    objects.len() - 1
                }
            };
            Some(at as u64 + 1)
        };
        match self.targets.get(target) {
            Target::Section { object, section } => {
                out.unsigned(Descriptor::Section as u64);
                out.unsigned(object_number(object)?);
                out.unsigned(u64::from(section.0));
            }
            Target::Symbol { name } => {
                out.unsigned(Descriptor::Symbol as u64);
                out.counted(name);
            }
            Target::Absolute => out.unsigned(Descriptor::Absolute as u64),
            Target::Candidate(index) => {
                let candidate = self.candidates.get(index as usize)?;
                out.unsigned(Descriptor::Candidate as u64);
                out.unsigned(object_number(candidate.object)?);
                out.unsigned(u64::from(candidate.section.0));
                out.unsigned(candidate.start);
                out.unsigned(candidate.end);
            }
            Target::Constant {
                entsize,
                strings,
                content,
            } => {
                out.unsigned(Descriptor::Constant as u64);
                out.unsigned(u64::from(entsize));
                out.unsigned(u64::from(strings));
                out.counted(content);
            }
            Target::Pinned(_) => return None,
        }
        Some(())
    }

    /// The entries a payload stores for `run`, with this link's targets;
    /// `None` if it is not such a payload or names what this link lacks.
    fn read(&self, payload: &[u8], run: Range<usize>) -> Option<Vec<Entry>> {
        let from = self.candidates.get(run.start)?.object;
        let mut r = Reader(payload);
        let count = usize::try_from(r.unsigned()?).ok()?;
        if count != run.len() {
            return None;
        }
        let object_count = usize::try_from(r.unsigned()?).ok()?;
        let mut objects = Vec::with_capacity(object_count.min(r.0.len() / 16));
        for _ in 0..object_count {
            let name = u128::from_le_bytes(r.bytes(16)?.try_into().ok()?);
            objects.push(*self.objects.get(&name)?);
        }
        let object = |number: u64| -> Option<ObjectId> {
            match number {
                0 => Some(from),
                n => objects.get(usize::try_from(n - 1).ok()?).copied(),
            }
        };
        let target_count = usize::try_from(r.unsigned()?).ok()?;
        let mut targets = Vec::with_capacity(target_count.min(r.0.len()));
        for _ in 0..target_count {
            targets.push(self.resolve(&mut r, &object)?);
        }
        let mut input = r.0;
        let mut entries = Vec::with_capacity(count);
        for index in run {
            let (&tag, rest) = input.split_first()?;
            input = rest;
            let mut shape = || -> Option<u64> {
                let (bytes, rest) = input.split_first_chunk::<8>()?;
                input = rest;
                Some(u64::from_le_bytes(*bytes))
            };
            let shape = match tag {
                LIFTED_WITHOUT_SHAPE => None,
                LIFTED_WITH_SHAPE | SKETCHED => Some(shape()?),
                _ => return None,
            };
            let body = Body::read_from(&mut input, |n| targets.get(n as usize).copied())?;
            // A body alone is a sketched entry's, and stands for this
            // link's candidate.
            entries.push(match (tag, shape) {
                (SKETCHED, Some(shape)) if body.alone => Entry::Sketched {
                    body: body.alone_as(index as u32),
                    shape,
                },
                (LIFTED_WITHOUT_SHAPE | LIFTED_WITH_SHAPE, shape) if !body.alone => {
                    Entry::Lifted { body, shape }
                }
                _ => return None,
            });
        }
        input.is_empty().then_some(entries)
    }

    /// This link's target for the [`Descriptor`] at the front of `r`.
    fn resolve(
        &self,
        r: &mut Reader<'_>,
        object: &impl Fn(u64) -> Option<ObjectId>,
    ) -> Option<TargetId> {
        let targets = self.targets;
        let tag = r.unsigned()?;
        let section = |r: &mut Reader<'_>| -> Option<SectionIndex> {
            Some(SectionIndex(u32::try_from(r.unsigned()?).ok()?))
        };
        if tag == Descriptor::Section as u64 {
            let object = object(r.unsigned()?)?;
            let section = section(r)?;
            find(targets, &Target::Section { object, section })
        } else if tag == Descriptor::Symbol as u64 {
            find(targets, &Target::Symbol { name: r.counted()? })
        } else if tag == Descriptor::Absolute as u64 {
            find(targets, &Target::Absolute)
        } else if tag == Descriptor::Candidate as u64 {
            let object = object(r.unsigned()?)?;
            let section = section(r)?;
            let (start, end) = (r.unsigned()?, r.unsigned()?);
            let pieces = self.places.pieces(object, section);
            let first = pieces.partition_point(|p| p.start < start);
            let piece = pieces[first..]
                .iter()
                .take_while(|p| p.start == start)
                .find(|p| p.end == end)?;
            self.places
                .candidate_targets
                .get(piece.candidate.index())
                .copied()
        } else if tag == Descriptor::Constant as u64 {
            let entsize = u32::try_from(r.unsigned()?).ok()?;
            let strings = match r.unsigned()? {
                0 => false,
                1 => true,
                _ => return None,
            };
            let content = r.counted()?;
            find(
                targets,
                &Target::Constant {
                    entsize,
                    strings,
                    content,
                },
            )
        } else {
            None
        }
    }
}

/// How an entry writes a reference target: a tag, then its fields.
///
/// - `Section`: object number (0 for the entry's own object, else one
///   past its index in the entry's list of object names), section index;
/// - `Symbol`: the name;
/// - `Absolute`;
/// - `Candidate`: object number, section index, start and end offsets;
/// - `Constant`: element size, whether strings, content.
#[derive(Copy, Clone, Debug)]
enum Descriptor {
    Section = 0,
    Symbol = 1,
    Absolute = 2,
    Candidate = 3,
    Constant = 4,
}

/// [`ExtendedTargets::find`] for a target borrowing from an entry rather
/// than from the inputs.
fn find<'t>(targets: &ExtendedTargets<'_, 't>, target: &Target<'t>) -> Option<TargetId> {
    targets.find(target)
}

/// Where each of `count` run payloads lies in a stored pack; `None` when
/// it is not such a pack.
fn split_pack(pack: Vec<u8>, count: usize) -> Option<(Vec<u8>, Vec<Range<usize>>)> {
    let mut r = Reader(&pack);
    if usize::try_from(r.unsigned()?).ok()? != count {
        return None;
    }
    let mut ranges = Vec::with_capacity(count);
    for _ in 0..count {
        let payload = r.counted()?;
        let start = payload.as_ptr() as usize - pack.as_ptr() as usize;
        ranges.push(start..start + payload.len());
    }
    if !r.0.is_empty() {
        return None;
    }
    Some((pack, ranges))
}

/// Names a file's entry of object hashes (see [`KnownHashes`]).
const HASHES_DOMAIN: &str = "icf object hashes 1";

/// The hashes of the objects of every input file whose stamp
/// ([`icf_object::FileStamp`]: device, inode, size, modification and
/// status-change times) an earlier link kept with them: a relink after
/// one object changed hashes that object, not every archive around it.
/// A file changed within [`icf_object::FileStamp::SETTLED_AFTER`]
/// is hashed, and its hashes not kept, as is a thin archive (its members
/// are other files). The stamp is the mapped file's, taken when it was
/// opened, and the key holds this build of icf (the hash's rule may
/// change).
struct KnownHashes {
    /// Per input file: its entry's key, and the hashes it holds by each
    /// object's (offset, length) in the file; `None` when the file is not
    /// settled.
    files: Vec<Option<(Key, Hashes)>>,
}

/// Object hashes by the object's (offset, length) in its file.
type Hashes = HashMap<(u64, u64), u128>;

impl KnownHashes {
    fn read(program: &Program<'_>, store: &Store) -> KnownHashes {
        let now = std::time::SystemTime::now();
        let files = program
            .inputs
            .files
            .par_iter()
            .map(|file| {
                let stamp = file.stamp().filter(|stamp| stamp.settled(now))?;
                if file.data().starts_with(b"!<thin>\n") {
                    return None;
                }
                let mut key = KeyHasher::new(HASHES_DOMAIN);
                key.bytes(env!("ICF_BUILD_ID").as_bytes())
                    .bytes(file.path.as_os_str().as_encoded_bytes());
                for word in stamp.words() {
                    key.u64(word);
                }
                let key = key.finish();
                let known = store
                    .get(&key)
                    .and_then(|payload| decode_hashes(&payload))
                    .unwrap_or_default();
                Some((key, known))
            })
            .collect();
        KnownHashes { files }
    }

    /// Where `object` lies in its file: (offset, length).
    fn place(program: &Program<'_>, object: ObjectId) -> Option<(usize, (u64, u64))> {
        let loaded = program.objects.get(object.index())?;
        let file = program.inputs.files.get(loaded.file)?.data();
        let data = loaded.object.data;
        let offset = (data.as_ptr() as usize).checked_sub(file.as_ptr() as usize)?;
        (offset <= file.len() && file.len() - offset >= data.len())
            .then_some((loaded.file, (offset as u64, data.len() as u64)))
    }

    /// `object`'s hash, when its file's entry holds it.
    fn of(&self, program: &Program<'_>, object: ObjectId) -> Option<u128> {
        let (file, place) = Self::place(program, object)?;
        let (_, known) = self.files.get(file)?.as_ref()?;
        known.get(&place).copied()
    }

    /// The entries to write (each settled file's that lacked a hash
    /// `hashes` holds), and how many objects were hashed.
    fn updates(
        &self,
        program: &Program<'_>,
        hashes: &[Option<u128>],
    ) -> (Vec<(Key, Vec<u8>)>, u64) {
        let mut by_file: Vec<Vec<((u64, u64), u128)>> = vec![Vec::new(); self.files.len()];
        let mut hashed = 0;
        for (index, hash) in hashes.iter().enumerate() {
            let Some(hash) = *hash else { continue };
            let object = ObjectId(index as u32);
            let Some((file, place)) = Self::place(program, object) else {
                hashed += 1;
                continue;
            };
            match self.files.get(file).and_then(Option::as_ref) {
                Some((_, known)) if known.get(&place) == Some(&hash) => {}
                _ => hashed += 1,
            }
            by_file[file].push((place, hash));
        }
        let writes = self
            .files
            .iter()
            .zip(by_file)
            .filter_map(|(entry, objects)| {
                let (key, known) = entry.as_ref()?;
                let complete = objects
                    .iter()
                    .all(|(place, hash)| known.get(place) == Some(hash));
                (!complete).then(|| {
                    // What the entry held, and what this link hashed.
                    let mut all: Hashes = known.clone();
                    all.extend(objects);
                    (*key, encode_hashes(&all))
                })
            })
            .collect();
        (writes, hashed)
    }
}

/// An entry of [`KnownHashes`]: per object, its offset, length and hash,
/// little-endian (32 bytes each), ordered by offset.
fn encode_hashes(hashes: &Hashes) -> Vec<u8> {
    let mut sorted: Vec<_> = hashes.iter().collect();
    sorted.sort_unstable();
    let mut payload = Vec::with_capacity(sorted.len() * 32);
    for (&(offset, len), &hash) in sorted {
        payload.extend(offset.to_le_bytes());
        payload.extend(len.to_le_bytes());
        payload.extend(hash.to_le_bytes());
    }
    payload
}

/// [`encode_hashes`]'s payload read back; `None` if it is not one.
fn decode_hashes(payload: &[u8]) -> Option<Hashes> {
    if payload.len() % 32 != 0 {
        return None;
    }
    let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]));
    Some(
        payload
            .chunks_exact(32)
            .map(|entry| {
                let hash = u128::from_le_bytes(entry[16..].try_into().unwrap_or([0; 16]));
                ((word(&entry[..8]), word(&entry[8..16])), hash)
            })
            .collect(),
    )
}

/// The hash of an object's bytes but the contents of its `.debug*`
/// sections and their relocations, which nothing before the rewrite reads
/// (the reader leaves those relocations unread, see `relocs_deferred`) and
/// which are most of a `-g` object. Their place and size stay in: the
/// section headers are hashed.
fn analysed_bytes_hash(object: &icf_object::Object<'_>) -> u128 {
    let data = object.data;
    let base = data.as_ptr() as usize;
    let mut skipped: Vec<Range<usize>> = Vec::new();
    for section in &object.sections {
        if section.is_alloc() || !section.name.starts_with(b".debug") {
            continue;
        }
        let mut skip = |bytes: &[u8]| {
            let start = (bytes.as_ptr() as usize).wrapping_sub(base);
            if !bytes.is_empty() && start < data.len() && data.len() - start >= bytes.len() {
                skipped.push(start..start + bytes.len());
            }
        };
        skip(section.data);
        if let Some(relocations) = section.reloc_section {
            skip(object.section(relocations).data);
        }
    }
    if skipped.is_empty() {
        return content_hash(data);
    }
    skipped.sort_by_key(|r| r.start);
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut at = 0;
    for range in skipped {
        if range.start > at {
            hasher.update(&data[at..range.start]);
        }
        at = at.max(range.end);
    }
    hasher.update(&data[at..]);
    hasher.digest128()
}
