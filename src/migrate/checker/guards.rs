//! Code that only runs with torch_xla: the body of `if is_torch_xla_available():`,
//! `if _XLA_AVAILABLE:` and the like. On TorchTPU such a branch is dead, so
//! converting what is inside it would only look like progress: its findings
//! are reported, with one finding on the guard itself. Deleting torch_xla
//! calls and imports there is still fine (it is dead code either way).
//!
//! One shape is converted instead: a branch that only selects the device
//! (`if is_torch_xla_available(): device = xm.xla_device()`). Its guard becomes
//! a test for a TorchTPU device, and its device call is converted with it.

use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

use super::{Checker, Diagnostic, Site, XlaBranch};
use crate::migrate::fix::Fix;
use crate::migrate::rules::{Builtin, FixAction, RuleId};

/// Rules (by name) whose fixes select the device: the findings a device-selection branch may hold.
const DEVICE_SELECTION: &[&str] = &["xla-device", "xla-device-string"];

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
        let test = if_stmt.test.range();
        match guard_polarity(&if_stmt.test, &retargeted) {
            Some(true) => {
                if let Some(body) = body_range(&if_stmt.body) {
                    let device = self.device_guard_fix(if_stmt);
                    self.xla_only.push(XlaBranch { test, body, device });
                }
            }
            Some(false) => {
                // `if not is_torch_xla_available(): … else: <torch_xla code>`
                if let Some(clause) = if_stmt.elif_else_clauses.iter().find(|c| c.test.is_none())
                    && let Some(body) = body_range(&clause.body)
                {
                    self.xla_only.push(XlaBranch { test, body, device: None });
                }
            }
            None => {}
        }
    }

    /// The fix of a guard whose branch may only select the device: a bare probe call over
    /// imports and assignments. Whether each assignment does select the device is only known
    /// once the branch's findings are in ([`Self::report_xla_only_branches`]).
    fn device_guard_fix(&self, if_stmt: &'a ast::StmtIf) -> Option<(Fix, Vec<TextRange>)> {
        let Expr::Call(call) = &*if_stmt.test else { return None };
        let mut assignments = Vec::new();
        for stmt in &if_stmt.body {
            match stmt {
                Stmt::Import(_) | Stmt::ImportFrom(_) => {}
                Stmt::Assign(_) | Stmt::AnnAssign(_) => assignments.push(stmt.range()),
                _ => return None,
            }
        }
        let rule = self.rules.builtin(Builtin::XlaOnlyBranch)?;
        let spec = self.rule(rule).fixes.first().filter(|f| matches!(f.action, FixAction::Replace(_)))?;
        let site =
            Site { rule, target: None, expr: &if_stmt.test, call: Some(call), spelled: String::new(), callee: None };
        let fix = self.try_action(&site, self.rule(rule), spec, &Default::default()).ok()?;
        (!assignments.is_empty()).then_some((fix, assignments))
    }

    /// Withhold the fixes of findings in torch_xla-only branches (deletions
    /// excepted) and report each such branch once.
    pub(super) fn report_xla_only_branches(&mut self, diagnostics: &mut Vec<Diagnostic>) {
        let Some(rule) = self.rules.builtin(Builtin::XlaOnlyBranch) else { return };
        let import = self.rules.builtin(Builtin::Import);
        let converted: Vec<&XlaBranch> =
            self.xla_only.iter().filter(|b| self.selects_device_only(b, diagnostics, import)).collect();
        let mut guards_hit: Vec<TextRange> = Vec::new();
        for d in diagnostics.iter_mut() {
            let Some(branch) = self.xla_only.iter().find(|b| b.body.contains_range(d.range)) else { continue };
            let deletion_only = |f: &Fix| f.edits.is_empty() && !f.deletes.is_empty();
            if Some(d.rule) == import || d.fix.as_ref().is_none_or(deletion_only) {
                continue;
            }
            if !converted.iter().any(|c| c.test == branch.test) {
                d.fix = None;
                d.note = Some(format!(
                    "in a branch that only runs with torch_xla (`{}`), so it is dead on TorchTPU: not converted",
                    super::shown(self.src(branch.test))
                ));
            }
            if !guards_hit.contains(&branch.test) {
                guards_hit.push(branch.test);
            }
        }
        // The branch finding says more than a finding on the probe call in its test.
        diagnostics.retain(|d| d.fix.is_some() || !guards_hit.iter().any(|t| t.contains_range(d.range)));
        for test in guards_hit {
            let message = self.message(rule, self.src(test));
            let fix = converted.iter().find(|c| c.test == test).and_then(|c| c.device.as_ref()).map(|(f, _)| f.clone());
            let note = fix.as_ref().and_then(|_| self.rule(rule).fixes.first()?.note.clone());
            diagnostics.push(Diagnostic { rule, range: test, message, note, fix });
        }
    }

    /// Whether every assignment of the branch selects the device (a finding of a
    /// [`DEVICE_SELECTION`] rule with a fix) and nothing else in it but imports is a finding.
    fn selects_device_only(&self, branch: &XlaBranch, diagnostics: &[Diagnostic], import: Option<RuleId>) -> bool {
        let Some((_, assignments)) = &branch.device else { return false };
        let inside: Vec<&Diagnostic> =
            diagnostics.iter().filter(|d| branch.body.contains_range(d.range) && Some(d.rule) != import).collect();
        let selects = |d: &&Diagnostic| d.fix.is_some() && DEVICE_SELECTION.contains(&self.rule(d.rule).name.as_str());
        inside.iter().all(selects) && assignments.iter().all(|a| inside.iter().any(|d| a.contains_range(d.range)))
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
