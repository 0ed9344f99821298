//! `migrate`, `check` and `rule`: files in, diffs and diagnostics out. One file per command's
//! wiring; `files` holds what the two file commands share and `args` their arguments, below them.

pub mod args;
pub mod check;
mod files;
pub mod migrate;
pub mod rule;
