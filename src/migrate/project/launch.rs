//! Launch scripts, Dockerfiles and YAML job specs: environment variables torch_xla read,
//! torch_xla launchers, and framework configs that select torch_xla.

use super::{Kind, Magic};
use crate::migrate::checker::Diagnostic;
use crate::migrate::rules::RuleSet;

/// The findings of a `Kind::Shell`, `Dockerfile` or `Yaml` file.
pub fn check(_kind: Kind, _text: &str, _rules: &RuleSet) -> Vec<Diagnostic> {
    Vec::new()
}

/// The findings of a notebook's shell and `%env` lines (ranges in the notebook's checked text).
pub fn check_magics(_text: &str, _magics: &[Magic], _rules: &RuleSet) -> Vec<Diagnostic> {
    Vec::new()
}
