//! `# noqa` comments, as the checker sees them: a finding they cover is dropped.
//! Parsing and the rest (unused codes, `--add-noqa`) live in [`crate::noqa`].

use ruff_python_ast as ast;
use ruff_python_parser::Parsed;
use ruff_text_size::TextRange;

use crate::noqa::Noqa;

/// `# noqa` (all codes) or `# noqa: TPU110, TPU2` (codes or prefixes) on the
/// first or last line of a finding suppresses it, as in ruff and flake8.
pub(super) struct Suppressions(Noqa);

impl Suppressions {
    pub(super) fn new(text: &str, parsed: &Parsed<ast::ModModule>) -> Suppressions {
        Suppressions(Noqa::existing(text, parsed.tokens()))
    }

    /// The directives, for the caller's own use (`check` reports unused ones).
    pub(super) fn into_inner(self) -> Noqa {
        self.0
    }

    pub(super) fn covers(&self, text: &str, range: TextRange, code: &str) -> bool {
        self.0.covers(text, range, code)
    }
}
