//! Linking: a link command read (GNU-style drivers and linkers, ld64),
//! the plan written over its inputs, the real linker run on the
//! rewritten copies, and what happens after the link (`icf shrink` on an
//! LTO build's output, `icf verify`).

pub(crate) mod after_link;
pub(crate) mod link_command;
pub(crate) mod linker;
pub(crate) mod memo;
pub(crate) mod run;
