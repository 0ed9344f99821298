//! Code that only runs with torch_xla: the body of `if is_torch_xla_available():`,
//! `if _XLA_AVAILABLE:` and the like. On TorchTPU such a branch is dead, so
//! converting what is inside it would only look like progress: its findings
//! are reported, with one finding on the guard itself. Deleting torch_xla
//! calls and imports there is still fine (it is dead code either way).

use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::{Ranged, TextRange};

use super::{Checker, Diagnostic};
use crate::migrate::fix::Fix;
use crate::migrate::rules::Builtin;

/// Whether `test` is true exactly when torch_xla is present (`Some(true)`),
/// exactly when it is absent (`Some(false)`, `not is_torch_xla_available()`),
/// or says nothing about it.
/// `retargeted` flags are set by a torch_xla probe that becomes a TorchTPU probe.
pub(super) fn guard_polarity(test: &Expr, retargeted: &dyn Fn(&str) -> bool) -> Option<bool> {
    match test {
        Expr::UnaryOp(u) if u.op == ast::UnaryOp::Not => guard_polarity(&u.operand, retargeted).map(|p| !p),
        // `if is_torch_xla_available() and cond:`: the body still needs torch_xla.
        Expr::BoolOp(b) if b.op == ast::BoolOp::And => {
            b.values.iter().any(|v| guard_polarity(v, retargeted) == Some(true)).then_some(true)
        }
        Expr::Call(c) => is_probe_name(last_name(&c.func)?).then_some(true),
        Expr::Name(_) | Expr::Attribute(_) => {
            let name = last_name(test)?;
            (is_flag_name(name) && !retargeted(name)).then_some(true)
        }
        _ => None,
    }
}

fn last_name(e: &Expr) -> Option<&str> {
    match e {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => Some(a.attr.id.as_str()),
        _ => None,
    }
}

/// `is_torch_xla_available`, `is_torch_tpu_available` (its old, torch_xla meaning), `_is_xla_available`.
fn is_probe_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    (lower.contains("xla") && lower.contains("avail")) || lower.trim_start_matches('_') == "is_torch_tpu_available"
}

/// `_XLA_AVAILABLE`, `TORCH_XLA_AVAILABLE`, `HAS_XLA`, `_USE_XLA`.
fn is_flag_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let bare = lower.trim_start_matches('_');
    (lower.contains("xla") && lower.contains("avail"))
        || matches!(bare, "has_xla" | "use_xla" | "is_xla" | "has_torch_xla" | "xla" | "torch_xla_installed")
}

impl<'a> Checker<'a> {
    /// Record the arms of `if_stmt` that only run with torch_xla.
    pub(super) fn note_xla_guard(&mut self, if_stmt: &'a ast::StmtIf) {
        let body_range = |body: &[ast::Stmt]| match (body.first(), body.last()) {
            (Some(f), Some(l)) => Some(TextRange::new(f.start(), l.end())),
            _ => None,
        };
        let retargeted = |name: &str| self.probe_flags.contains(name);
        match guard_polarity(&if_stmt.test, &retargeted) {
            Some(true) => {
                if let Some(body) = body_range(&if_stmt.body) {
                    self.xla_only.push((if_stmt.test.range(), body));
                }
            }
            Some(false) => {
                // `if not is_torch_xla_available(): … else: <torch_xla code>`
                if let Some(clause) = if_stmt.elif_else_clauses.iter().find(|c| c.test.is_none())
                    && let Some(body) = body_range(&clause.body)
                {
                    self.xla_only.push((if_stmt.test.range(), body));
                }
            }
            None => {}
        }
    }

    /// Withhold the fixes of findings in torch_xla-only branches (deletions
    /// excepted) and report each such branch once.
    pub(super) fn report_xla_only_branches(&mut self, diagnostics: &mut Vec<Diagnostic>) {
        let Some(rule) = self.rules.builtin(Builtin::XlaOnlyBranch) else { return };
        let import = self.rules.builtin(Builtin::Import);
        let mut guards_hit: Vec<TextRange> = Vec::new();
        for d in diagnostics.iter_mut() {
            let Some((test, _)) = self.xla_only.iter().find(|(_, body)| body.contains_range(d.range)) else { continue };
            let deletion_only = |f: &Fix| f.edits.is_empty() && !f.deletes.is_empty();
            if Some(d.rule) == import || d.fix.as_ref().is_none_or(deletion_only) {
                continue;
            }
            d.fix = None;
            d.note = Some(format!(
                "in a branch that only runs with torch_xla (`{}`), so it is dead on TorchTPU: not converted",
                super::shown(self.src(*test))
            ));
            if !guards_hit.contains(test) {
                guards_hit.push(*test);
            }
        }
        // The branch finding says more than a finding on the probe call in its test.
        diagnostics.retain(|d| d.fix.is_some() || !guards_hit.iter().any(|t| t.contains_range(d.range)));
        for test in guards_hit {
            let message = self.message(rule, self.src(test));
            diagnostics.push(Diagnostic { rule, range: test, message, note: None, fix: None });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn polarity(src: &str) -> Option<bool> {
        guard_polarity(ruff_python_parser::parse_expression(src).unwrap().expr(), &|name| name == "_HAS_XLA")
    }

    #[test]
    fn torch_xla_guards_are_recognised_with_their_polarity() {
        assert_eq!(polarity("is_torch_xla_available()"), Some(true));
        assert_eq!(polarity("transformers.utils.is_torch_tpu_available(check_device=False)"), Some(true));
        assert_eq!(polarity("not _XLA_AVAILABLE"), Some(false));
        assert_eq!(polarity("HAS_XLA and args.tpu"), Some(true));
        assert_eq!(polarity("HAS_XLA or args.tpu"), None);
        assert_eq!(polarity("is_available()"), None);
        assert_eq!(polarity("self.use_cuda"), None);
        assert_eq!(polarity("_HAS_XLA"), None, "a probe flag that now means TorchTPU");
    }
}
