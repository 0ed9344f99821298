//! Which findings a run reports and which fixes it applies (`--select`, `--ignore`,
//! `--unsafe-fixes`), and the run's facts a file is checked with.

use crate::migrate::facts::RunFacts;
use crate::migrate::fix::{Fix, Safety};

/// Which findings to report and which fixes to apply.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Codes or prefixes to keep (empty = all).
    pub select: Vec<String>,
    /// Codes or prefixes to drop.
    pub ignore: Vec<String>,
    /// The opt-in rules (TPU75x) to analyse: they run only when named here, so an empty
    /// `select` (every rule) still leaves them off.
    pub opt_in: Vec<String>,
    pub unsafe_fixes: bool,
    /// Parse every file, even one no rule can match, so that its syntax errors are reported
    /// (TPU002 named in `select` or `extend-select`). Otherwise such a file, which cannot hold
    /// a torch_xla reference, is not parsed at all.
    pub parse_every_file: bool,
    /// What the other files of this run establish (a process group), asked for on demand;
    /// `None` for a file checked on its own.
    pub run: Option<std::sync::Arc<RunFacts>>,
    /// The project's helper module, as this file imports it (`_torchtpu`, `._torchtpu`):
    /// helpers a fix needs are imported from there instead of defined in the file.
    pub helper_module: Option<String>,
}

impl Selection {
    pub fn enabled(&self, code: &str) -> bool {
        let hit = |list: &[String]| list.iter().any(|p| code.starts_with(p.as_str()) || p == "ALL");
        (self.select.is_empty() || hit(&self.select)) && !hit(&self.ignore)
    }

    pub(crate) fn applies(&self, fix: &Fix) -> bool {
        fix.safety == Safety::Safe || self.unsafe_fixes
    }
}
