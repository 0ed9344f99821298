//! `# noqa` comments.

use ruff_python_ast as ast;
use ruff_python_ast::token::TokenKind;
use ruff_python_parser::Parsed;
use ruff_text_size::{Ranged, TextRange};

/// `# noqa` (all codes) or `# noqa: TPU110, TPU2` (codes or prefixes) on the
/// first or last line of a finding suppresses it, as in ruff and flake8.
pub(super) struct Suppressions {
    /// (line start offset, codes; empty = all)
    lines: std::collections::HashMap<usize, Vec<String>>,
}

impl Suppressions {
    pub(super) fn new(text: &str, parsed: &Parsed<ast::ModModule>) -> Suppressions {
        let mut lines = std::collections::HashMap::new();
        for t in parsed.tokens().iter().filter(|t| t.kind() == TokenKind::Comment) {
            let comment = &text[t.range()];
            let Some(at) = comment.to_ascii_lowercase().find("noqa") else { continue };
            let rest = comment[at + 4..].trim_start();
            let line = crate::source::line_start(text, t.start().into());
            match rest.strip_prefix(':') {
                // `# noqa: TPU110, F401`: only the listed codes (other tools' codes never match ours).
                Some(list) => lines.entry(line).or_insert_with(Vec::new).extend(
                    list.split([',', ' '])
                        .map(str::trim)
                        .filter(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_alphanumeric()))
                        .map(str::to_string),
                ),
                // A bare `# noqa` silences everything on the line.
                None => {
                    lines.insert(line, vec![String::new()]);
                }
            }
        }
        Suppressions { lines }
    }

    pub(super) fn covers(&self, text: &str, range: TextRange, code: &str) -> bool {
        [range.start(), range.end()].iter().any(|offset| {
            let line = crate::source::line_start(text, usize::from(*offset));
            self.lines
                .get(&line)
                .is_some_and(|codes| codes.iter().any(|c| c.is_empty() || code.starts_with(c.as_str())))
        })
    }
}
