//! Where this process has certainly joined the process group, so ranks and world size are the
//! group's (`dist.get_rank()`), not a guess from torchrun's variables.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprContext, Stmt};
use ruff_text_size::{Ranged, TextSize};

use super::Checker;
use crate::migrate::facts::{INIT_PROCESS_GROUP, LAUNCHERS};
use crate::migrate::semantic::{ScopeId, ScopeKind};

/// How many calls deep a function may be from the worker (or the group's creation) it runs
/// under: `_mp_fn` → `train` → `train_loop_fn`.
const MAX_CALL_DEPTH: u32 = 3;

/// The statements enclosing a place, outermost first: each body and the index in it.
type Path<'a> = Vec<(&'a [Stmt], usize)>;

impl<'a> Checker<'a> {
    /// Whether the match runs after this process joined the process group: a statement before
    /// it on its path (in its block or an enclosing one, within its function) creates the group,
    /// or its function runs only that way (a worker a converted launcher of this file starts, or
    /// a function called only from such places).
    pub(super) fn group_joined(&self) -> bool {
        let path: Path<'a> = self.bodies.iter().zip(&self.stmt).map(|(body, (sref, _))| (*body, sref.index)).collect();
        self.joined_on(&path, self.scope, 0)
    }

    fn joined_on(&self, path: &[(&'a [Stmt], usize)], scope: ScopeId, depth: u32) -> bool {
        for level in (0..path.len()).rev() {
            let (body, index) = path[level];
            // The last creation or destruction of the group before this statement decides.
            let mut joined = false;
            for stmt in &body[..index] {
                if let Some(effect) = self.group_effect(stmt, scope) {
                    joined = effect;
                }
            }
            if joined {
                return self.in_function_body(path, scope);
            }
            if level > 0 {
                let (outer, at) = path[level - 1];
                match &outer[at] {
                    Stmt::FunctionDef(def) => {
                        return self.in_function_body(path, scope) && self.runs_joined(def, depth);
                    }
                    Stmt::ClassDef(_) => return false,
                    _ => {}
                }
            }
        }
        false
    }

    /// Whether `scope` is the scope of the innermost function on `path` (or the module), or a
    /// comprehension in it: a lambda's body runs later, wherever it is called.
    fn in_function_body(&self, path: &[(&'a [Stmt], usize)], mut scope: ScopeId) -> bool {
        let def = path.iter().rev().skip(1).find_map(|&(body, at)| match &body[at] {
            Stmt::FunctionDef(def) => Some(def.range.start()),
            _ => None,
        });
        let own = match def {
            Some(start) => self.sem.scope_of_node(start),
            None => Some(0),
        };
        while self.sem.scopes[scope].kind == ScopeKind::Comprehension {
            let Some(parent) = self.sem.scopes[scope].parent else { break };
            scope = parent;
        }
        own == Some(scope)
    }

    /// `Some(true)` for a statement that creates the process group (`init_process_group(...)`,
    /// also under `if not dist.is_initialized():`), `Some(false)` for one that destroys it.
    fn group_effect(&self, stmt: &Stmt, scope: ScopeId) -> Option<bool> {
        let call_to = |stmt: &Stmt| match stmt {
            Stmt::Expr(e) => match &*e.value {
                Expr::Call(call) => self.sem.qualified_name(&call.func, scope).map(|q| q.name),
                _ => None,
            },
            _ => None,
        };
        if let Stmt::If(branch) = stmt
            && branch.elif_else_clauses.is_empty()
            && let Expr::UnaryOp(not) = &*branch.test
            && not.op == ast::UnaryOp::Not
            && let Expr::Call(test) = &*not.operand
            && test.arguments.is_empty()
            && self.sem.qualified_name(&test.func, scope).is_some_and(|q| q.name == "torch.distributed.is_initialized")
            && let [only] = branch.body.as_slice()
        {
            return (call_to(only).as_deref() == Some(INIT_PROCESS_GROUP)).then_some(true);
        }
        match call_to(stmt)?.as_str() {
            INIT_PROCESS_GROUP => Some(true),
            "torch.distributed.destroy_process_group" => Some(false),
            _ => None,
        }
    }

    /// Whether every run of `def` follows this process joining the group: it is the worker of
    /// a launcher this file converts (whose prelude joins the group first thing, unless the
    /// worker creates it itself), or it is only called (by name) where the group was joined.
    /// Any other use of its name (passed elsewhere, exported) may run it without a group.
    fn runs_joined(&self, def: &'a ast::StmtFunctionDef, depth: u32) -> bool {
        if depth >= MAX_CALL_DEPTH || !def.decorator_list.is_empty() {
            return false;
        }
        let is_def = |name: &ast::ExprName, scope| {
            self.inventory.local_def(self.sem, name, scope).is_some_and(|d| std::ptr::eq(d, def))
        };
        let mut uses = 0;
        for &(scope, call) in self.inventory.call_sites() {
            let launcher =
                self.sem.qualified_name(&call.func, scope).is_some_and(|q| LAUNCHERS.contains(&q.name.as_str()));
            if launcher {
                let worker =
                    call.arguments.args.first().or_else(|| call.arguments.find_keyword("fn").map(|k| &k.value));
                if let Some(Expr::Name(name)) = worker
                    && is_def(name, scope)
                {
                    if self.worker_creates_process_group(def) {
                        return false; // no prelude: only what follows its own creation is joined
                    }
                    uses += 1;
                }
            } else if let Expr::Name(name) = &*call.func
                && is_def(name, scope)
            {
                if !self.joined_on(&self.path_to(call.start()), scope, depth + 1) {
                    return false;
                }
                uses += 1;
            }
        }
        uses > 0 && uses == self.loads_of(&def.name.id)
    }

    /// The statements enclosing `offset`, outermost first.
    fn path_to(&self, offset: TextSize) -> Path<'a> {
        let mut path = Vec::new();
        let mut body: &'a [Stmt] = &self.module.body;
        while let Some(index) = body.iter().position(|s| s.range().contains(offset)) {
            path.push((body, index));
            match child_bodies(&body[index]).into_iter().find(|b| b.iter().any(|s| s.range().contains(offset))) {
                Some(inner) => body = inner,
                None => break,
            }
        }
        path
    }

    /// How many times the file reads the name `id` (anywhere, any scope).
    fn loads_of(&self, id: &str) -> usize {
        struct Loads<'n>(&'n str, usize);
        impl<'a> Visitor<'a> for Loads<'_> {
            fn visit_expr(&mut self, e: &'a Expr) {
                if let Expr::Name(n) = e
                    && n.ctx == ExprContext::Load
                    && n.id.as_str() == self.0
                {
                    self.1 += 1;
                }
                visitor::walk_expr(self, e);
            }
        }
        let mut loads = Loads(id, 0);
        loads.visit_body(&self.module.body);
        loads.1
    }
}

/// The blocks of statements directly inside `stmt`.
fn child_bodies(stmt: &Stmt) -> Vec<&[Stmt]> {
    match stmt {
        Stmt::FunctionDef(d) => vec![&d.body],
        Stmt::ClassDef(c) => vec![&c.body],
        Stmt::If(i) => std::iter::once(&i.body[..]).chain(i.elif_else_clauses.iter().map(|c| &c.body[..])).collect(),
        Stmt::For(f) => vec![&f.body, &f.orelse],
        Stmt::While(w) => vec![&w.body, &w.orelse],
        Stmt::With(w) => vec![&w.body],
        Stmt::Try(t) => std::iter::once(&t.body[..])
            .chain(t.handlers.iter().map(|h| {
                let ast::ExceptHandler::ExceptHandler(h) = h;
                &h.body[..]
            }))
            .chain([&t.orelse[..], &t.finalbody[..]])
            .collect(),
        Stmt::Match(m) => m.cases.iter().map(|c| &c.body[..]).collect(),
        _ => Vec::new(),
    }
}
