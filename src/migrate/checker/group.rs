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

/// Ray Train's trainer, whose `train_loop_per_worker` runs in a worker Ray has joined to the
/// process group (`TorchConfig`'s backend, on any number of workers).
const RAY_TORCH_TRAINERS: &[&str] = &["ray.train.torch.TorchTrainer", "ray.train.torch.torch_trainer.TorchTrainer"];

/// The rank and world size of a process a framework set up, as that framework spells them.
pub(super) struct Process {
    pub rank: String,
    pub world_size: String,
}

/// The framework classes whose methods run in a process the framework has set up.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Managed {
    LightningModule,
    LightningDataModule,
    /// transformers' `Trainer` and its subclasses (TRL's trainers).
    Trainer,
    TrainerCallback,
}

/// How deep a chain of the file's own classes (`class Base(L.LightningModule)`, `class
/// Model(Base)`) is followed to the framework's class.
const MAX_CLASS_DEPTH: u32 = 3;

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
            let callee = self.sem.qualified_name(&call.func, scope).map(|q| q.name);
            let launcher = callee.as_deref().is_some_and(|q| LAUNCHERS.contains(&q));
            if callee.as_deref().is_some_and(|q| RAY_TORCH_TRAINERS.contains(&q)) {
                let worker = call
                    .arguments
                    .args
                    .first()
                    .or_else(|| call.arguments.find_keyword("train_loop_per_worker").map(|k| &k.value));
                if let Some(Expr::Name(name)) = worker
                    && is_def(name, scope)
                {
                    uses += 1;
                }
            } else if launcher {
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

    /// Where a framework has set up this process (its distributed state, and on several
    /// processes its process group) before the match at `at` runs, and how it names the rank
    /// and world size there: a hook of a `LightningModule`/`LightningDataModule` that Lightning
    /// calls during fit, a method of a transformers/TRL `Trainer` subclass or of a
    /// `TrainerCallback`, or code after `accelerator = Accelerator(...)` in the same function.
    /// On one process none of them creates a group, so `dist.get_rank()` would raise there.
    pub(super) fn framework_process(&self, at: TextSize) -> Option<Process> {
        let path: Path<'a> = self.bodies.iter().zip(&self.stmt).map(|(body, (sref, _))| (*body, sref.index)).collect();
        if !self.in_function_body(&path, self.scope) {
            return None;
        }
        // The innermost function on the path, and what encloses it.
        let def_level = path.iter().rposition(|&(body, i)| matches!(body[i], Stmt::FunctionDef(_)));
        let function_levels = def_level.map_or(0, |l| l + 1);
        // `accelerator = Accelerator(...)` earlier on the path, within the function.
        for level in (function_levels..path.len()).rev() {
            let (body, index) = path[level];
            for stmt in body[..index].iter().rev() {
                if let Some(name) = self.accelerator_created(stmt)
                    && self.binds_only(&name.id, name.start(), at)
                {
                    let name = &name.id;
                    return Some(Process {
                        rank: format!("{name}.process_index"),
                        world_size: format!("{name}.num_processes"),
                    });
                }
            }
        }
        let def_level = def_level?;
        let (body, index) = path[def_level];
        let Stmt::FunctionDef(def) = &body[index] else { return None };
        let (outer, at_class) = path[def_level.checked_sub(1)?];
        let Stmt::ClassDef(class) = &outer[at_class] else { return None };
        if !def.decorator_list.is_empty() || def.is_async {
            return None;
        }
        let kind = self.managed_class(class, 0)?;
        let method = def.name.id.as_str();
        // Fabric calls a module's hooks only when the program does (`fabric.call`), with no
        // Trainer attached.
        let fabric = || {
            ["lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric"]
                .iter()
                .any(|f| self.inventory.file_calls(self.sem, f))
        };
        let hook = match kind {
            Managed::LightningModule | Managed::LightningDataModule => lightning_hook(method) && !fabric(),
            Managed::Trainer => method != "__init__" && !method.starts_with("__"),
            Managed::TrainerCallback => method.starts_with("on_"),
        };
        // A hook the file calls itself (`dm.setup()` before `trainer.fit`) may run before the
        // framework set anything up.
        if !hook || (kind != Managed::Trainer && self.called_as_method(method)) {
            return None;
        }
        let params: Vec<&ast::Parameter> =
            def.parameters.posonlyargs.iter().chain(&def.parameters.args).map(|p| &p.parameter).collect();
        // The parameter the expression reads (`self`, a callback's `args`), never rebound.
        let param = |i: usize| {
            let p = params.get(i)?;
            self.binds_only(&p.name.id, p.name.start(), at).then(|| p.name.id.to_string())
        };
        Some(match kind {
            Managed::LightningModule => {
                let s = param(0)?;
                Process { rank: format!("{s}.global_rank"), world_size: format!("{s}.trainer.world_size") }
            }
            Managed::LightningDataModule => {
                let s = param(0)?;
                Process { rank: format!("{s}.trainer.global_rank"), world_size: format!("{s}.trainer.world_size") }
            }
            Managed::Trainer => {
                let s = param(0)?;
                Process { rank: format!("{s}.args.process_index"), world_size: format!("{s}.args.world_size") }
            }
            Managed::TrainerCallback => {
                // Callbacks are called as `on_event(args, state, control, **kwargs)`.
                let a = param(1)?;
                Process { rank: format!("{a}.process_index"), world_size: format!("{a}.world_size") }
            }
        })
    }

    /// Whether `name` at `at` (in the current scope) can only be the binding made at `start`.
    fn binds_only(&self, name: &str, start: TextSize, at: TextSize) -> bool {
        self.sem.unique_binding(name, self.scope, at).is_some_and(|b| self.sem.bindings[b].range.start() == start)
    }

    /// The name `stmt` binds to a new `accelerate.Accelerator`: `accelerator = Accelerator(...)`.
    fn accelerator_created(&self, stmt: &'a Stmt) -> Option<&'a ast::ExprName> {
        let Stmt::Assign(assign) = stmt else { return None };
        let ([Expr::Name(target)], Expr::Call(call)) = (assign.targets.as_slice(), &*assign.value) else {
            return None;
        };
        let callee = self.sem.qualified_name(&call.func, self.scope)?.name;
        matches!(callee.as_str(), "accelerate.Accelerator" | "accelerate.accelerator.Accelerator").then_some(target)
    }

    /// Which framework class `class` derives from, through imports (`L.LightningModule`) or
    /// the file's own top-level classes.
    fn managed_class(&self, class: &ast::StmtClassDef, depth: u32) -> Option<Managed> {
        if depth >= MAX_CLASS_DEPTH {
            return None;
        }
        let own = self.sem.scope_of_node(class.range.start())?;
        let scope = self.sem.scopes[own].parent?;
        let bases = class.arguments.as_ref().map(|a| &a.args[..]).unwrap_or_default();
        bases.iter().find_map(|base| {
            if let Some(q) = self.sem.qualified_name(base, scope) {
                return managed(&q.name);
            }
            let Expr::Name(name) = base else { return None };
            let mut local = self.module.body.iter().filter_map(|s| match s {
                Stmt::ClassDef(c) if c.name.id == name.id => Some(c),
                _ => None,
            });
            match (local.next(), local.next()) {
                (Some(parent), None) if !std::ptr::eq(parent, class) => self.managed_class(parent, depth + 1),
                _ => None,
            }
        })
    }

    /// Whether the file calls a method named `method` on anything but `self` or `super()`.
    fn called_as_method(&self, method: &str) -> bool {
        self.inventory.call_sites().iter().any(|&(_, call)| match &*call.func {
            Expr::Attribute(attr) if attr.attr.id.as_str() == method => match &*attr.value {
                Expr::Name(n) => n.id.as_str() != "self",
                Expr::Call(c) => !matches!(&*c.func, Expr::Name(n) if n.id.as_str() == "super"),
                _ => true,
            },
            _ => false,
        })
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

/// The framework class a qualified base class name is, if any.
fn managed(qualified: &str) -> Option<Managed> {
    let (package, rest) = qualified.split_once('.')?;
    let class = rest.rsplit('.').next()?;
    match package {
        "lightning" | "pytorch_lightning" => match class {
            "LightningModule" => Some(Managed::LightningModule),
            "LightningDataModule" => Some(Managed::LightningDataModule),
            _ => None,
        },
        "transformers" if class == "TrainerCallback" => Some(Managed::TrainerCallback),
        "transformers" | "trl" if class.ends_with("Trainer") => Some(Managed::Trainer),
        _ => None,
    }
}

/// The hooks Lightning calls once the strategy has set the process up (during fit, validate,
/// test, predict). `on_load_checkpoint` also runs from `load_from_checkpoint`, without a Trainer.
fn lightning_hook(method: &str) -> bool {
    matches!(
        method,
        "training_step"
            | "validation_step"
            | "test_step"
            | "predict_step"
            | "configure_optimizers"
            | "setup"
            | "teardown"
            | "train_dataloader"
            | "val_dataloader"
            | "test_dataloader"
            | "predict_dataloader"
    ) || method.starts_with("on_") && method != "on_load_checkpoint"
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
