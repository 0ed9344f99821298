//! A finding: which rule, where, what it says, and the fix it offers. Data only, below every
//! handler that makes one (the Python checker, the notebook, dependency, launch and config
//! handlers) and everything that reads one (noqa, baselines, rendering).

use ruff_text_size::TextRange;

use crate::migrate::fix::Fix;

/// A rule's index in the loaded rule set: opaque here, so nothing at this level knows a rule.
pub type RuleId = usize;

/// One finding in one file.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    pub rule: RuleId,
    pub range: TextRange,
    pub message: String,
    /// Why no fix is offered (or what to check after an unsafe one).
    pub note: Option<String>,
    pub fix: Option<Fix>,
}
