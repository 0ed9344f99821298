//! Environment variables a program reads as values. A variable torch_xla read (`PJRT_DEVICE`)
//! is often the project's own switch too: a launcher sets it and the application tests
//! `os.environ.get("PJRT_DEVICE")` to pick its accelerator path. Deleting the assignment, which
//! is right for torch_xla's sake, would then turn the switch off and train on the CPU, so
//! assignments stay while any file of the run reads the variable ([`crate::migrate::facts`]).

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprContext, Stmt};
use ruff_text_size::{Ranged, TextSize};

use super::{Checker, Diagnostic, Site};
use crate::migrate::notes::{kept_note, python_read_advice, read_note};
use crate::migrate::rules::FixAction;
use crate::migrate::semantic::{ScopeId, Semantic};

/// Accessors that only read (`os.environ.get`), and those that also write: their result, when
/// used, is a read (`x = os.environ.setdefault("X", "1")`).
const READERS: &[&str] = &["os.environ.get", "os.getenv"];
const READ_WRITERS: &[&str] = &["os.environ.setdefault", "os.environ.pop"];

/// The variables (named by string literals) a module reads as values, with where: `os.environ["X"]`
/// loaded, `os.environ.get("X")`, `os.getenv("X")`, `"X" in os.environ`, and a used result of
/// `os.environ.setdefault("X", …)` or `.pop("X")`.
pub fn env_reads(module: &ast::ModModule) -> Vec<(String, TextSize)> {
    let sem = Semantic::build(module);
    let mut reads = Reads { sem: &sem, scope: 0, found: Vec::new() };
    reads.visit_body(&module.body);
    reads.found
}

struct Reads<'s> {
    sem: &'s Semantic,
    scope: ScopeId,
    found: Vec<(String, TextSize)>,
}

impl Reads<'_> {
    fn qualified(&self, e: &Expr) -> Option<String> {
        self.sem.qualified_name(e, self.scope).map(|q| q.name)
    }
}

impl<'a> Visitor<'a> for Reads<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                let saved = self.scope;
                self.scope = self.sem.scope_of_node(def.range.start()).unwrap_or(saved);
                visitor::walk_stmt(self, stmt);
                self.scope = saved;
            }
            // `os.environ.setdefault("X", "1")` as a statement only writes; a `get` there does nothing.
            Stmt::Expr(e) if matches!(&*e.value, Expr::Call(c) if self.qualified(&c.func).is_some_and(|q| READERS.contains(&q.as_str()) || READ_WRITERS.contains(&q.as_str()))) =>
            {
                let Expr::Call(call) = &*e.value else { unreachable!("a call") };
                visitor::walk_arguments(self, &call.arguments);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        let literal = |e: &Expr| match e {
            Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
            _ => None,
        };
        match expr {
            Expr::Subscript(sub)
                if sub.ctx == ExprContext::Load && self.qualified(&sub.value).as_deref() == Some("os.environ") =>
            {
                self.found.extend(literal(&sub.slice).map(|v| (v, expr.start())));
            }
            Expr::Call(call)
                if self
                    .qualified(&call.func)
                    .is_some_and(|q| READERS.contains(&q.as_str()) || READ_WRITERS.contains(&q.as_str())) =>
            {
                self.found.extend(call.arguments.args.first().and_then(literal).map(|v| (v, expr.start())));
            }
            Expr::Compare(cmp) if is_membership_in_environ(cmp, &|e| self.qualified(e)) => {
                self.found.extend(literal(&cmp.left).map(|v| (v, expr.start())));
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}

/// What an env access does with its variable.
enum Access {
    Read,
    Write,
    /// `os.environ.get("X")` as a statement.
    Neither,
}

/// `"X" in os.environ` / `"X" not in os.environ`.
fn is_membership_in_environ(cmp: &ast::ExprCompare, qualified: &dyn Fn(&Expr) -> Option<String>) -> bool {
    matches!((cmp.ops.as_ref(), cmp.comparators.as_ref()), ([ast::CmpOp::In | ast::CmpOp::NotIn], [environ])
        if qualified(environ).as_deref() == Some("os.environ"))
}

impl<'a> Checker<'a> {
    /// `"PJRT_DEVICE" in os.environ`: a read the accessors' matching does not see.
    pub(super) fn check_env_membership(&mut self, expr: &'a Expr, cmp: &'a ast::ExprCompare) {
        if is_membership_in_environ(cmp, &|e| self.sem.qualified_name(e, self.scope).map(|q| q.name)) {
            self.check_env(expr, &cmp.left);
        }
    }

    pub(super) fn check_env(&mut self, expr: &'a Expr, name: &'a Expr) {
        let Expr::StringLiteral(lit) = name else { return };
        let var = lit.value.to_str();
        let Some((rule, _)) = self.rules.env_rules().find(|(_, r)| r.env.iter().any(|e| e == var)) else { return };
        let site = Site { rule, target: None, expr, call: None, spelled: var.to_string(), callee: None };
        let deletes = self.rule(rule).fixes.iter().any(|f| matches!(f.action, FixAction::Delete));
        if !deletes {
            self.report(site);
            return;
        }
        let note = match self.env_access(expr) {
            Access::Read => Some(read_note(var, &python_read_advice())),
            Access::Write => self.env_read_elsewhere(var).map(|at| kept_note(&at, var)),
            Access::Neither => None,
        };
        match note {
            Some(note) => {
                let message = self.message(rule, var);
                self.diagnostics.push(Diagnostic { rule, range: expr.range(), message, note: Some(note), fix: None });
            }
            None => self.report(site),
        }
    }

    /// Whether `expr` reads a variable whose assignments fixes would delete (`PJRT_DEVICE`): the
    /// project's own switch, whose assignments now stay. A flag set from it
    /// (`use_xla = bool(os.environ.get("PJRT_DEVICE"))`) still says "on the accelerator" after the
    /// migration, so the branches it guards are TorchTPU code, not dead torch_xla code.
    pub(super) fn reads_switch(&self, expr: &Expr) -> bool {
        let mut reads = Reads { sem: self.sem, scope: self.scope, found: Vec::new() };
        reads.visit_expr(expr);
        reads.found.iter().any(|(var, _)| {
            self.rules.env_rules().any(|(_, r)| {
                r.env.iter().any(|e| e == var) && r.fixes.iter().any(|f| matches!(f.action, FixAction::Delete))
            })
        })
    }

    /// What the env access `expr` does with the variable.
    fn env_access(&self, expr: &Expr) -> Access {
        let statement = self.expression_statement(expr).is_some();
        match expr {
            Expr::Subscript(sub) if sub.ctx == ExprContext::Load => Access::Read,
            Expr::Subscript(_) => Access::Write,
            Expr::Compare(_) => Access::Read,
            Expr::Call(call) => match self.sem.qualified_name(&call.func, self.scope).map(|q| q.name) {
                Some(q) if READERS.contains(&q.as_str()) && !statement => Access::Read,
                Some(q) if READERS.contains(&q.as_str()) => Access::Neither,
                Some(q) if READ_WRITERS.contains(&q.as_str()) && !statement => Access::Read,
                _ => Access::Write, // `setdefault`/`pop` statements, `os.putenv`, `os.unsetenv`
            },
            _ => Access::Neither,
        }
    }

    /// Where the run (or, on its own, this file) reads `var` as a value: `app.py:12`, `line 12`.
    fn env_read_elsewhere(&self, var: &str) -> Option<String> {
        if let Some(run) = self.run
            && let Some(at) = run.env_read(var)
        {
            return Some(format!("`{at}`"));
        }
        let (_, at) = env_reads(self.module).into_iter().find(|(v, _)| v == var)?;
        let line = self.text[..usize::from(at)].matches('\n').count() + 1;
        Some(format!("line {line} of this file"))
    }
}
