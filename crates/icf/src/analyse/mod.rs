//! Phases 2 to 5, analysing and planning: the candidates and the places
//! their references narrow to, each candidate's comparator key (lifted,
//! sketched where it cannot fold, or read from icf's cache) and attributes, whose address is significant,
//! the partition (`icf-fold`) and the plan, with the facts about COMDAT
//! groups and archive members the plan needs; [`analysis::Analysis::run`]
//! runs them in order.

pub(crate) mod analysis;
pub(crate) mod attributes;
pub(crate) mod candidates;
pub(crate) mod comdat;
pub(crate) mod data_uses;
pub(crate) mod entry;
pub(crate) mod key_cache;
pub(crate) mod keys;
pub(crate) mod lift_memo;
pub(crate) mod member_facts;
pub(crate) mod narrow;
pub(crate) mod plant;
pub(crate) mod significance;
