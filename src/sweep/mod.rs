//! `xla2tpu sweep`: model sources, resolution to profiles, verdicts and reports (owned by the sweep work).
pub mod cli;
