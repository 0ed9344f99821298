//! Where a value is only shown to a person, and where a statement is followed by a clock
//! read: two places a torch_xla call has a TorchTPU meaning it lacks elsewhere. A counter
//! printed is a diagnostic (`print(met.counter_value("CompileTime"))`); `xm.mark_step()`
//! just before `time.perf_counter()` waits for the step a benchmark times.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Operator, Stmt};
use ruff_text_size::Ranged;

use super::Checker;
use crate::migrate::rules::{MatchKind, RuleId};

/// Functions that read a clock.
const CLOCKS: &[&str] = &[
    "time.time",
    "time.time_ns",
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.monotonic",
    "time.monotonic_ns",
    "time.process_time",
    "timeit.default_timer",
];

impl<'a> Checker<'a> {
    /// Record `e` as shown, with what it formats: f-string fields, `"…".format(…)` and
    /// `"…" % (…)` arguments, `str(x)`/`repr(x)`.
    pub(super) fn mark_shown(&mut self, e: &'a Expr) {
        self.shown.insert(e.start());
        match e {
            Expr::FString(f) => {
                for part in f.value.iter() {
                    let ast::FStringPart::FString(fs) = part else { continue };
                    for element in fs.elements.iter() {
                        if let ast::InterpolatedStringElement::Interpolation(field) = element {
                            self.mark_shown(&field.expression);
                        }
                    }
                }
            }
            Expr::Call(call) => {
                let formats = match &*call.func {
                    Expr::Attribute(a) => a.attr.id.as_str() == "format" && a.value.is_string_literal_expr(),
                    Expr::Name(n) => matches!(n.id.as_str(), "str" | "repr"),
                    _ => false,
                };
                if formats {
                    for arg in call.arguments.args.iter().chain(call.arguments.keywords.iter().map(|k| &k.value)) {
                        self.mark_shown(arg);
                    }
                }
            }
            Expr::BinOp(b) if b.op == Operator::Mod && b.left.is_string_literal_expr() => match &*b.right {
                Expr::Tuple(t) => t.elts.iter().for_each(|e| self.mark_shown(e)),
                other => self.mark_shown(other),
            },
            _ => {}
        }
    }

    /// Whether the value of `e` is only shown to a person.
    pub(super) fn is_shown(&self, e: &Expr) -> bool {
        self.shown.contains(&e.start())
    }

    /// Whether the statement being checked is followed by a clock read: in the next statement
    /// of its block, or, when it ends a loop's body, in the statement after the loop (torch_xla
    /// calls in between, `met.clear_all()`, are skipped: they go with the migration; another
    /// match of `rule`, the same kind of call, is not).
    pub(super) fn before_clock_read(&self, rule: RuleId) -> bool {
        let depth = self.stmt.len();
        let (Some((sref, _)), Some(body)) = (self.stmt.last(), self.bodies.last()) else { return false };
        let after =
            |stmts: &'a [Stmt], from: usize| stmts[from.min(stmts.len())..].iter().find(|s| !self.is_xla_call(s, rule));
        let next = match after(body, sref.index + 1) {
            Some(next) => Some(next),
            None if depth >= 2 && self.bodies.len() >= 2 => {
                let (outer, loop_stmt) = self.stmt[depth - 2];
                let ends_loop = matches!(loop_stmt, Stmt::For(_) | Stmt::While(_))
                    && self.bodies[self.bodies.len() - 1].as_ptr() == loop_body(loop_stmt).as_ptr();
                ends_loop.then(|| after(self.bodies[self.bodies.len() - 2], outer.index + 1)).flatten()
            }
            None => None,
        };
        next.is_some_and(|stmt| {
            let mut finder = ClockReads { checker: self, found: false };
            finder.visit_stmt(stmt);
            finder.found
        })
    }

    /// `met.clear_all()`: a statement that only calls torch_xla, other than a match of `rule`.
    fn is_xla_call(&self, stmt: &Stmt, rule: RuleId) -> bool {
        let Stmt::Expr(e) = stmt else { return false };
        let Expr::Call(call) = &*e.value else { return false };
        self.sem.qualified_name(&call.func, self.scope).is_some_and(|q| {
            crate::migrate::semantic::aliased(&q.name)
                && self.rules.lookup(MatchKind::Call, &q.name).is_none_or(|(r, _)| r != rule)
        })
    }
}

fn loop_body(stmt: &Stmt) -> &[Stmt] {
    match stmt {
        Stmt::For(f) => &f.body,
        Stmt::While(w) => &w.body,
        _ => &[],
    }
}

struct ClockReads<'c, 'a> {
    checker: &'c Checker<'a>,
    found: bool,
}

impl<'b> Visitor<'b> for ClockReads<'_, '_> {
    fn visit_stmt(&mut self, stmt: &'b Stmt) {
        // A function defined there runs later, if at all.
        if !matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) && !self.found {
            visitor::walk_stmt(self, stmt);
        }
    }

    fn visit_expr(&mut self, expr: &'b Expr) {
        if let Expr::Call(call) = expr
            && self
                .checker
                .sem
                .qualified_name(&call.func, self.checker.scope)
                .is_some_and(|q| CLOCKS.contains(&q.name.as_str()))
        {
            self.found = true;
        }
        if !self.found {
            visitor::walk_expr(self, expr);
        }
    }
}
