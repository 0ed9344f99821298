//! What an SPMD program (`xr.use_spmd()`) did as one process driving every chip, and does not
//! as one process per chip:
//! - it was started with plain `python`; migrated, it must be started by torchrun, and where no
//!   launch script of the run starts it (TPU925 converts those) the report says so (TPU926);
//! - every value it read was the global batch's; split, a process reads its slice's (TPU234).

use rustc_hash::FxHashSet;

use ruff_python_ast::visitor::Visitor;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

use super::{Checker, Diagnostic};
use crate::migrate::facts::{SPMD_HELPER_NAME, USE_SPMD};
use crate::migrate::rules::Builtin;
use crate::migrate::semantic::{ScopeId, Semantic};

impl Checker<'_> {
    /// TPU926 at the program's first `use_spmd()` (or, migrated, the call TPU216 made of it),
    /// unless a launch script of the run starts an SPMD program.
    pub(super) fn report_unlaunched_spmd(&self, diagnostics: &mut Vec<Diagnostic>) {
        let Some(rule) = self.rules.builtin(Builtin::SpmdUnlaunched) else { return };
        let last = USE_SPMD.rsplit('.').next().unwrap_or(USE_SPMD);
        if !self.text.contains(last) && !self.text.contains(SPMD_HELPER_NAME) {
            return;
        }
        if self.run.is_some_and(|run| run.launches_spmd_program()) {
            return;
        }
        // Not the calls inside the rules' helpers (`torchtpu_device_mesh` makes the process one of
        // the job's too): the program's own.
        let helpers: Vec<_> = self
            .inventory
            .defs
            .values()
            .filter(|d| self.rules.is_shared_helper(d.name.as_str()))
            .map(|d| d.range())
            .collect();
        let calls = self.inventory.calls_of(self.sem, &[USE_SPMD, SPMD_HELPER_NAME]);
        let Some(call) = calls.into_iter().find(|c| !helpers.iter().any(|h| h.contains_range(c.range()))) else {
            return;
        };
        let message = self.message(rule, &self.text[call.func.range()]);
        diagnostics.push(Diagnostic { rule, range: call.range(), message, note: None, fix: None });
    }
}

/// Where an SPMD program splits a batch (`xs.mark_sharding(x, mesh, ("data", None))`, or the
/// helper TPU228 makes of it): under SPMD `x` stayed the global batch, migrated each process
/// holds its slice.
const SPLITS: &[&str] =
    &["torch_xla.distributed.spmd.mark_sharding", "torch_xla.experimental.xla_sharding.mark_sharding"];
const SHARD_HELPER: &str = "torchtpu_shard_batch";

/// Reading a tensor's value, or showing it.
const READ_METHODS: &[&str] = &["item", "tolist", "numpy"];
/// A logger's or a metrics writer's methods (`logger.info(...)`, `writer.add_scalar(...)`).
const LOG_METHODS: &[&str] = &["debug", "info", "warning", "log", "add_scalar", "add_scalars"];
/// Methods that put a value into a container (`losses.append(loss)`).
const COLLECTING: &[&str] = &["append", "extend", "add", "update", "insert"];

/// The values of one function (or the module's top level) computed from a split batch, walked
/// in source order: names bound from the batch or a value computed from it, until a statement
/// makes them global (`loss.backward()`, which TPU231 turns into the global mean;
/// `dist.all_reduce(t, ...)`) or rebinds them.
struct SliceFlow<'s> {
    sem: &'s Semantic,
    scope: ScopeId,
    /// Functions of the file returning a value computed from a split batch, by name.
    returning: &'s FxHashSet<String>,
    tainted: FxHashSet<String>,
    /// Whether the body returns such a value.
    returns: bool,
    reads: Vec<TextRange>,
}

impl<'s> SliceFlow<'s> {
    /// The flow of `body`, walked.
    fn of(sem: &'s Semantic, scope: ScopeId, returning: &'s FxHashSet<String>, body: &[Stmt]) -> Self {
        let mut flow =
            SliceFlow { sem, scope, returning, tainted: FxHashSet::default(), returns: false, reads: Vec::new() };
        flow.body(body);
        flow
    }

    fn qualified(&self, e: &Expr) -> Option<String> {
        self.sem.qualified_name(e, self.scope).map(|q| q.name)
    }

    /// Whether `e` computes from a split batch (a slice, migrated).
    fn sliced(&self, e: &Expr) -> bool {
        let mut found = false;
        Finder(&mut |x: &Expr| {
            found |= match x {
                Expr::Name(n) => self.tainted.contains(n.id.as_str()),
                Expr::Call(c) => match &*c.func {
                    Expr::Name(f) => self.returning.contains(f.id.as_str()) || f.id.as_str() == SHARD_HELPER,
                    Expr::Attribute(f) => self.returning.contains(f.attr.id.as_str()),
                    _ => false,
                },
                _ => false,
            };
        })
        .visit_expr(e);
        found
    }

    /// The first read in `e` of a value computed from a split batch: a value's (`loss.item()`)
    /// rather than the `print` showing it.
    fn read_in(&self, e: &Expr) -> Option<TextRange> {
        let (mut first, mut shown) = (None, None);
        let mut visit = |x: &Expr| {
            let Expr::Call(c) = x else { return };
            let args = || c.arguments.args.iter().chain(c.arguments.keywords.iter().map(|k| &k.value));
            let builtin = |names: &[&str]| {
                matches!(&*c.func, Expr::Name(f) if names.contains(&f.id.as_str())) && self.qualified(&c.func).is_none()
            };
            let (value, show) = match &*c.func {
                Expr::Attribute(m) if READ_METHODS.contains(&m.attr.id.as_str()) => (self.sliced(&m.value), false),
                Expr::Attribute(m) if LOG_METHODS.contains(&m.attr.id.as_str()) => (false, true),
                _ if builtin(&["float", "int"]) => (args().any(|a| self.sliced(a)), false),
                _ => (false, builtin(&["print"])),
            };
            if value {
                first.get_or_insert(c.range());
            } else if show && args().any(|a| self.sliced(a)) {
                shown.get_or_insert(c.range());
            }
        };
        Finder(&mut visit).visit_expr(e);
        first.or(shown)
    }

    fn read(&mut self, e: &Expr) {
        if let Some(r) = self.read_in(e) {
            self.reads.push(r);
        }
    }

    fn bind(&mut self, target: &Expr, tainted: bool) {
        match target {
            Expr::Name(n) if tainted => {
                self.tainted.insert(n.id.to_string());
            }
            Expr::Name(n) => {
                self.tainted.remove(n.id.as_str());
            }
            Expr::Tuple(t) => t.elts.iter().for_each(|e| self.bind(e, tainted)),
            Expr::List(l) => l.elts.iter().for_each(|e| self.bind(e, tainted)),
            Expr::Starred(s) => self.bind(&s.value, tainted),
            _ => {}
        }
    }

    fn body(&mut self, body: &[Stmt]) {
        for stmt in body {
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::Expr(e) => {
                self.read(&e.value);
                let Expr::Call(call) = &*e.value else { return };
                let first = call.arguments.args.first();
                let name = |e: Option<&Expr>| match e {
                    Some(Expr::Name(n)) => Some(n.id.to_string()),
                    _ => None,
                };
                let callee = self.qualified(&call.func);
                if callee.as_deref().is_some_and(|q| SPLITS.contains(&q))
                    && let Some(n) = name(first)
                {
                    self.tainted.insert(n);
                } else if callee.as_deref() == Some("torch.distributed.all_reduce")
                    && let Some(n) = name(first)
                {
                    self.tainted.remove(&n);
                } else if let Expr::Attribute(m) = &*call.func {
                    let receiver = name(Some(&m.value));
                    if m.attr.id.as_str() == "backward"
                        && let Some(n) = receiver
                    {
                        self.tainted.remove(&n);
                    } else if COLLECTING.contains(&m.attr.id.as_str())
                        && call.arguments.args.iter().any(|a| self.sliced(a))
                        && let Some(n) = receiver
                    {
                        self.tainted.insert(n);
                    }
                }
            }
            Stmt::Assign(a) => {
                self.read(&a.value);
                let global = matches!(&*a.value, Expr::Call(c) if matches!(&*c.func, Expr::Name(f) if f.id.as_str() == "torchtpu_backward"));
                let tainted = !global && self.sliced(&a.value);
                a.targets.iter().for_each(|t| self.bind(t, tainted));
            }
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    self.read(v);
                    let tainted = self.sliced(v);
                    self.bind(&a.target, tainted);
                }
            }
            Stmt::AugAssign(a) => {
                self.read(&a.value);
                if self.sliced(&a.value) {
                    self.bind(&a.target, true);
                }
            }
            Stmt::For(f) => {
                self.read(&f.iter);
                let tainted = self.sliced(&f.iter);
                self.bind(&f.target, tainted);
                self.body(&f.body);
                self.body(&f.orelse);
            }
            Stmt::While(w) => {
                self.read(&w.test);
                self.body(&w.body);
                self.body(&w.orelse);
            }
            Stmt::If(i) => {
                self.read(&i.test);
                self.body(&i.body);
                for clause in &i.elif_else_clauses {
                    if let Some(test) = &clause.test {
                        self.read(test);
                    }
                    self.body(&clause.body);
                }
            }
            Stmt::With(w) => {
                for item in &w.items {
                    self.read(&item.context_expr);
                }
                self.body(&w.body);
            }
            Stmt::Try(t) => {
                self.body(&t.body);
                for handler in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = handler;
                    self.body(&h.body);
                }
                self.body(&t.orelse);
                self.body(&t.finalbody);
            }
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    self.read(v);
                    self.returns |= self.sliced(v);
                }
            }
            _ => {}
        }
    }
}

/// Calls `f` on every expression a walk reaches (not into nested scopes' bodies: those are
/// expressions only here, lambdas and comprehensions, read as part of their statement).
struct Finder<'f>(&'f mut dyn FnMut(&Expr));

impl<'x> ruff_python_ast::visitor::Visitor<'x> for Finder<'_> {
    fn visit_expr(&mut self, e: &'x Expr) {
        (self.0)(e);
        ruff_python_ast::visitor::walk_expr(self, e);
    }
}

/// Every function body of the module (methods and nested functions too), with its scope.
fn bodies<'a>(body: &'a [Stmt], sem: &Semantic, out: &mut Vec<(&'a ast::StmtFunctionDef, ScopeId)>) {
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(f) => {
                if let Some(scope) = sem.scope_of_node(f.start()) {
                    out.push((f, scope));
                }
                bodies(&f.body, sem, out);
            }
            Stmt::ClassDef(c) => bodies(&c.body, sem, out),
            Stmt::If(i) => {
                bodies(&i.body, sem, out);
                i.elif_else_clauses.iter().for_each(|c| bodies(&c.body, sem, out));
            }
            _ => {}
        }
    }
}

/// The reads (TPU234) of values computed from a split batch, in a file that splits one: each
/// the first in its statement, in source order.
fn find_slice_reads(module: &ast::ModModule, sem: &Semantic, text: &str) -> Vec<TextRange> {
    if !text.contains("mark_sharding") && !text.contains(SHARD_HELPER) {
        return Vec::new();
    }
    let mut functions = Vec::new();
    bodies(&module.body, sem, &mut functions);
    let mut returning = FxHashSet::default();
    // Which functions return a slice's value, to a fixed point (a helper returning the split
    // batch, a method returning a value computed from it).
    loop {
        let found: Vec<String> = functions
            .iter()
            .filter(|(f, scope)| SliceFlow::of(sem, *scope, &returning, &f.body).returns)
            .map(|(f, _)| f.name.id.to_string())
            .collect();
        if found.len() == returning.len() {
            break;
        }
        returning.extend(found);
    }
    let mut reads = SliceFlow::of(sem, 0, &returning, &module.body).reads;
    for (f, scope) in &functions {
        reads.extend(SliceFlow::of(sem, *scope, &returning, &f.body).reads);
    }
    reads.sort_by_key(|r| r.start());
    reads.dedup();
    reads
}

impl Checker<'_> {
    /// The reads of a split batch's values in this file ([`find_slice_reads`]), found once.
    pub(super) fn slice_reads(&self) -> &[TextRange] {
        self.slice_reads.get_or_init(|| find_slice_reads(self.parsed_tokens.syntax(), self.sem, self.text))
    }

    /// TPU234 at each read [`find_slice_reads`] found.
    pub(super) fn report_slice_reads(&self, diagnostics: &mut Vec<Diagnostic>) {
        let Some(rule) = self.rules.builtin(Builtin::SpmdSliceRead) else { return };
        for &range in self.slice_reads() {
            let message = self.message(rule, &self.text[range]);
            diagnostics.push(Diagnostic { rule, range, message, note: None, fix: None });
        }
    }
}
