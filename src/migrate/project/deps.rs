//! Dependency files: torch_xla, libtpu and optimum-tpu requirements become `torch-tpu` with a
//! torch constraint the target release supports (TPU9xx).

use ruff_text_size::TextRange;

use super::Kind;
use crate::migrate::checker::Diagnostic;
use crate::migrate::rules::RuleSet;

/// The findings of a dependency file (`Kind::Requirements`, `Pyproject`, `SetupCfg`, `CondaEnv`,
/// `SetupPy`).
pub fn check(_kind: Kind, _text: &str, _rules: &RuleSet) -> Vec<Diagnostic> {
    Vec::new()
}

/// The findings of one `pip install …` command whose words are at `command` in `text` (a shell
/// line, a Dockerfile `RUN`, a notebook `!pip` line).
pub fn pip_install(_text: &str, _command: TextRange, _rules: &RuleSet) -> Vec<Diagnostic> {
    Vec::new()
}
