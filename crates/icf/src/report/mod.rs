//! Reporting: what a plan folds and saves (text, JSON, markdown), why two
//! functions do not fold, and the IR dumps.

pub(crate) mod dump;
pub(crate) mod explain;
pub(crate) mod savings;
