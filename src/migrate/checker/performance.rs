//! Opt-in performance rules (TPU75x): code that runs correctly on TorchTPU, and slowly.
//!
//! torch_xla traced a whole step and ran it as one graph at `mark_step`, so a loss read or a
//! mask in the middle cost little. TorchTPU runs eagerly: each value the host reads waits for
//! the chip, each data-dependent shape is a new graph under `torch.compile`. These rules are
//! the static side of `xla2tpu run --advise`: what a reader can see without running the step.
//! They look for shapes of code (the innermost loop that calls `backward()` and `step()`, a
//! module's `forward`) rather than names, so they match on migrated code too.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::FxHashSet;

use super::{Checker, Diagnostic};
use crate::migrate::fix::{Edit, Fix, Helper, ImportRequest};
use crate::migrate::rules::{Builtin, RuleId};
use crate::migrate::semantic::ScopeId;

/// Methods that copy a tensor's value to the host.
const SYNC_METHODS: &[&str] = &["item", "tolist", "numpy", "cpu"];
/// Attributes of a tensor known without its value (shape, dtype, device).
const STATIC_ATTRIBUTES: &[&str] =
    &["shape", "dtype", "device", "size", "dim", "ndim", "ndimension", "requires_grad", "is_cuda", "numel"];
/// Calls that print or log their arguments: a tensor among them is read on the host.
const PRINTERS: &[&str] = &["info", "debug", "warning", "error", "log", "set_postfix", "set_description"];
/// Builtins that turn a tensor into a Python value.
const CONVERSIONS: &[&str] = &["print", "float", "int", "bool", "round", "str"];
/// Reductions whose result a test reads on the host (`if mask.any():`).
const VALUE_READS: &[&str] = &[
    "item",
    "any",
    "all",
    "sum",
    "max",
    "min",
    "mean",
    "norm",
    "equal",
    "allclose",
    "isnan",
    "isinf",
    "isfinite",
    "is_nonzero",
    "count_nonzero",
    "amax",
    "amin",
];
/// Ops whose output shape depends on the data.
const DYNAMIC_OPS: &[&str] = &["nonzero", "unique", "unique_consecutive", "masked_select", "argwhere"];
/// Methods that make a boolean mask from a tensor.
const MASK_METHODS: &[&str] = &[
    "bool",
    "eq",
    "ne",
    "gt",
    "ge",
    "lt",
    "le",
    "isnan",
    "isinf",
    "isfinite",
    "logical_not",
    "logical_and",
    "logical_or",
    "logical_xor",
];
/// What compiles a step: with one of these in the file, a `mark_step` loop is not left eager.
const COMPILERS: &[&str] = &["torch.compile", "torch_xla.compile", "torch_xla.experimental.compile"];
/// What selects TorchTPU's deferred eager mode.
const EAGER_MODES: &[&str] = &["torch.tpu.eager_mode", "torch.tpu.set_eager_mode", "torch.tpu.EagerMode"];
const MARK_STEPS: &[&str] = &["torch_xla.core.xla_model.mark_step", "torch_xla.sync"];
/// Methods that put a model or tensors on a device.
const DEVICE_METHODS: &[&str] = &["to", "cuda", "tpu", "prepare", "prepare_model"];
const DATA_LOADERS: &[&str] = &["torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"];

/// The selected performance rules.
#[derive(Default, Clone, Copy)]
struct Selected {
    sync: Option<RuleId>,
    eager_step: Option<RuleId>,
    branch: Option<RuleId>,
    dynamic: Option<RuleId>,
    drop_last: Option<RuleId>,
}

impl<'a> Checker<'a> {
    /// Add the findings of the opt-in performance rules named in `opt_in`.
    pub(super) fn report_performance(&self, opt_in: &[String], diagnostics: &mut Vec<Diagnostic>) {
        if opt_in.is_empty() {
            return;
        }
        let on = |b: Builtin| self.rules.builtin(b).filter(|&id| opt_in.contains(&self.rules.rules[id].code));
        let selected = Selected {
            sync: on(Builtin::SyncInTrainingLoop),
            eager_step: on(Builtin::EagerStep),
            branch: on(Builtin::TensorBranch),
            dynamic: on(Builtin::DynamicShape),
            drop_last: on(Builtin::LoaderDropLast),
        };
        let mut facts = FileFacts { checker: self, scope: 0, compiles: false, eager_mode: false, uses_device: false };
        facts.visit_body(&self.module.body);
        let mut finder = Finder {
            checker: self,
            selected,
            steps: step_functions(self.module),
            compiles: facts.compiles,
            eager_mode: facts.eager_mode,
            uses_device: facts.uses_device,
            scope: 0,
            step: None,
            periodic: false,
            forward: false,
            masks: Vec::new(),
            class_body: false,
            found: Vec::new(),
        };
        finder.visit_body(&self.module.body);
        diagnostics.extend(finder.found);
    }

    fn qualified_in(&self, e: &Expr, scope: ScopeId) -> Option<String> {
        self.sem.qualified_name(e, scope).map(|q| q.name)
    }
}

/// First pass: does the file compile anything, choose an eager mode, put work on a device?
struct FileFacts<'c, 'a> {
    checker: &'c Checker<'a>,
    scope: ScopeId,
    compiles: bool,
    eager_mode: bool,
    /// `.to(...)`, `.cuda()`, `device=...`, `accelerator.prepare(...)` or torch_xla: without any,
    /// the file's loops run on the CPU and reading a value costs no sync.
    uses_device: bool,
}

impl<'a> Visitor<'a> for FileFacts<'_, 'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::FunctionDef(def) = stmt {
            let saved = self.scope;
            self.scope = self.checker.sem.scope_of_node(def.range.start()).unwrap_or(saved);
            visitor::walk_stmt(self, stmt);
            self.scope = saved;
        } else {
            visitor::walk_stmt(self, stmt);
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if matches!(expr, Expr::Name(_) | Expr::Attribute(_))
            && let Some(q) = self.checker.qualified_in(expr, self.scope)
        {
            self.compiles |= COMPILERS.contains(&q.as_str());
            self.eager_mode |= EAGER_MODES.contains(&q.as_str());
            self.uses_device |= q.starts_with("torch_xla");
        }
        if let Expr::Call(call) = expr {
            self.uses_device |= call.arguments.find_keyword("device").is_some()
                || matches!(&*call.func, Expr::Attribute(a) if DEVICE_METHODS.contains(&a.attr.as_str()));
        }
        visitor::walk_expr(self, expr);
    }
}

/// The training step being walked: the innermost loop that calls `backward()` and `step()`.
struct Step {
    /// Names of the tensors `backward()` was called on (the loss): reading them is a sync.
    losses: Vec<String>,
}

struct Finder<'c, 'a> {
    checker: &'c Checker<'a>,
    selected: Selected,
    /// The file's step functions, whose calls make a loop a training loop.
    steps: FxHashSet<String>,
    compiles: bool,
    eager_mode: bool,
    uses_device: bool,
    scope: ScopeId,
    step: Option<Step>,
    /// Inside `if step % N == 0:` of the step: code that runs every N steps on purpose.
    periodic: bool,
    /// Walking a module's `forward` method.
    forward: bool,
    /// Names bound to boolean masks in the function (or module) being walked.
    masks: Vec<String>,
    /// Walking a class body's own statements (its methods are modules' `forward`s).
    class_body: bool,
    found: Vec<Diagnostic>,
}

impl<'a> Finder<'_, 'a> {
    fn qualified(&self, e: &Expr) -> Option<String> {
        self.checker.qualified_in(e, self.scope)
    }

    /// A finding; with a fix, the note of the rule's fix variant (what to check after it).
    fn report(&mut self, rule: RuleId, range: TextRange, spelled: &str, fix: Option<Fix>) {
        let message = self.checker.message(rule, spelled);
        let note = fix.as_ref().and_then(|_| self.checker.rule(rule).fixes.first()?.note.clone());
        self.found.push(Diagnostic { rule, range, message, note, fix });
    }

    fn src(&self, range: TextRange) -> &'a str {
        self.checker.src(range)
    }

    /// Whether the host runs this code in every step (in a step, not only every N steps) of
    /// a loop that trains on a device.
    fn every_step(&self) -> bool {
        self.step.is_some() && !self.periodic && self.uses_device
    }

    fn visit_loop(&mut self, stmt: &'a Stmt, body: &'a [Stmt]) {
        let training = TrainingCalls::of(body, &self.steps, true);
        // An epoch loop around the batch loop is not the step: the innermost one is.
        let innermost = training.is_training() && !body_has_training_loop(body, &self.steps);
        if !innermost {
            visitor::walk_stmt(self, stmt);
            return;
        }
        let saved = (self.step.replace(Step { losses: training.losses }), self.periodic);
        self.periodic = false;
        visitor::walk_stmt(self, stmt);
        (self.step, self.periodic) = saved;
    }

    /// `.item()`, `.tolist()`, `.numpy()`, `.cpu()` in the step.
    fn check_sync_call(&mut self, expr: &'a Expr, call: &'a ast::ExprCall) {
        let Some(rule) = self.selected.sync.filter(|_| self.every_step()) else { return };
        if let Expr::Attribute(attr) = &*call.func
            && SYNC_METHODS.contains(&attr.attr.as_str())
            && call.arguments.is_empty()
        {
            // `x.detach().cpu().numpy()` is one copy: reported at the outermost call.
            if !self.found.iter().any(|d| d.rule == rule && d.range.contains_range(expr.range())) {
                self.report(rule, expr.range(), self.src(expr.range()), None);
            }
            return;
        }
        // print(loss), logger.info(f"{loss}"), float(loss)
        let printer = match &*call.func {
            Expr::Name(n) => CONVERSIONS.contains(&n.id.as_str()),
            Expr::Attribute(a) => PRINTERS.contains(&a.attr.as_str()),
            _ => false,
        };
        if printer && let Some(step) = &self.step {
            let read = call
                .arguments
                .args
                .iter()
                .chain(call.arguments.keywords.iter().map(|k| &k.value))
                .find_map(|arg| reads_value(arg, &step.losses));
            if let Some(name) = read {
                let spelled = format!("{}({name})", self.src(call.func.range()));
                self.report(rule, expr.range(), &spelled, None);
            }
        }
    }

    /// `if loss < best:` in the step; `if mask.any():` in `forward`.
    fn check_test(&mut self, test: &'a Expr) {
        if let (Some(rule), Some(step)) = (self.selected.sync.filter(|_| self.every_step()), &self.step)
            && let Some(name) = reads_value(test, &step.losses)
        {
            self.report(rule, test.range(), &format!("if {name}"), None);
            return;
        }
        if let Some(rule) = self.selected.branch.filter(|_| self.forward)
            && let Some(read) = self.value_read(test)
        {
            self.report(rule, test.range(), self.src(read), None);
        }
    }

    /// A reduction read on the host inside `test` (`x.any()`, `torch.isnan(x).all()`).
    fn value_read(&self, test: &'a Expr) -> Option<TextRange> {
        struct Reads<'f, 'c, 'a> {
            finder: &'f Finder<'c, 'a>,
            found: Option<TextRange>,
        }
        impl<'b> Visitor<'b> for Reads<'_, '_, '_> {
            fn visit_expr(&mut self, expr: &'b Expr) {
                if self.found.is_some() {
                    return;
                }
                match expr {
                    // `x is None` and `isinstance(x, T)` read no value.
                    Expr::Compare(c) if c.ops.iter().all(|op| matches!(op, ast::CmpOp::Is | ast::CmpOp::IsNot)) => {
                        return;
                    }
                    Expr::Call(call) => {
                        let read = match &*call.func {
                            Expr::Attribute(a) => {
                                VALUE_READS.contains(&a.attr.as_str())
                                    && match self.finder.qualified(&call.func) {
                                        Some(q) => is_torch_read(&q),
                                        // A method on a value: not `self.cfg.max()`, not a module's function.
                                        None => !matches!(&*a.value, Expr::Name(n) if n.id.as_str() == "self"),
                                    }
                            }
                            func => self.finder.qualified(func).is_some_and(|q| is_torch_read(&q)),
                        };
                        if read {
                            self.found = Some(expr.range());
                            return;
                        }
                    }
                    _ => {}
                }
                visitor::walk_expr(self, expr);
            }
        }
        let mut reads = Reads { finder: self, found: None };
        reads.visit_expr(test);
        reads.found
    }

    /// `torch.nonzero(x)`, `x.unique()`, `torch.where(mask)`, `x[mask]` in `forward` or a step.
    fn check_dynamic(&mut self, expr: &'a Expr) {
        let Some(rule) = self.selected.dynamic.filter(|_| self.forward || self.every_step()) else { return };
        let masks = &self.masks;
        match expr {
            Expr::Call(call) => {
                let name = match (&*call.func, self.qualified(&call.func)) {
                    (_, Some(q)) => q.strip_prefix("torch.").filter(|n| DYNAMIC_OPS.contains(n)).map(str::to_string),
                    (Expr::Attribute(a), None) if DYNAMIC_OPS.contains(&a.attr.as_str()) => Some(a.attr.to_string()),
                    _ => None,
                };
                let one_argument_where = self.qualified(&call.func).as_deref() == Some("torch.where")
                    && call.arguments.args.len() == 1
                    && call.arguments.keywords.is_empty();
                if name.is_some() || one_argument_where {
                    self.report(rule, expr.range(), self.src(expr.range()), None);
                }
            }
            Expr::Subscript(sub) if sub.ctx.is_load() => {
                let indices: Vec<&Expr> = match &*sub.slice {
                    Expr::Tuple(t) => t.elts.iter().collect(),
                    one => vec![one],
                };
                if indices.iter().any(|i| makes_mask(i, masks)) {
                    self.report(rule, expr.range(), self.src(expr.range()), None);
                }
            }
            _ => {}
        }
    }

    /// `xm.mark_step()` ending a training step in a file that compiles nothing.
    fn check_mark_step(&mut self, expr: &'a Expr, callee: &Expr) {
        let Some(rule) = self.selected.eager_step else { return };
        if self.step.is_none() || self.compiles || self.eager_mode {
            return;
        }
        if self.qualified(callee).is_some_and(|q| MARK_STEPS.contains(&q.as_str()) || q == "torch_xla.step") {
            let fix = self.deferred_eager_fix(rule);
            self.report(rule, expr.range(), self.src(callee.range()), fix);
        }
    }

    /// The rule's statement (deferred eager mode), once below the imports.
    fn deferred_eager_fix(&self, rule: RuleId) -> Option<Fix> {
        let (spec, text) = self.checker.rules.literal_fix(Builtin::EagerStep).ok()?;
        // The statement names `torch`: only where `torch` can only mean the module.
        if !self.checker.sem.binds_only_module("torch", "torch") {
            return None;
        }
        debug_assert_eq!(self.checker.rules.builtin(Builtin::EagerStep), Some(rule));
        Some(Fix {
            safety: spec.safety,
            edits: Vec::new(),
            deletes: Vec::new(),
            imports: vec![ImportRequest { module: "torch".into(), alias: None }],
            helpers: vec![Helper::inline("torch.tpu.eager_mode", text)],
        })
    }

    /// `DataLoader(ds, batch_size=8)` in a file that compiles: the last, smaller batch recompiles.
    fn check_loader(&mut self, expr: &'a Expr, call: &'a ast::ExprCall) {
        let Some(rule) = self.selected.drop_last.filter(|_| self.compiles) else { return };
        if !self.qualified(&call.func).is_some_and(|q| DATA_LOADERS.contains(&q.as_str())) {
            return;
        }
        let args = &call.arguments;
        // `**kwargs` may hold drop_last; positional arguments past batch_size are not guessed at.
        if args.keywords.iter().any(|k| k.arg.is_none()) || args.args.len() > 2 {
            return;
        }
        if args.find_keyword("batch_sampler").is_some() {
            return;
        }
        let batch_size = args.find_keyword("batch_size").map(|k| &k.value).or(args.args.get(1));
        if batch_size.is_some_and(Expr::is_none_literal_expr) {
            return;
        }
        let edit = match args.find_keyword("drop_last").map(|k| &k.value) {
            Some(Expr::BooleanLiteral(b)) if b.value => return,
            Some(Expr::BooleanLiteral(b)) => Edit::replace(b.range(), "True"),
            Some(_) => return, // computed: the author decides
            None => {
                let last = args.args.iter().map(Ranged::end).chain(args.keywords.iter().map(Ranged::end)).max();
                match last {
                    Some(end) => Edit::insert(end, ", drop_last=True"),
                    None => Edit::insert(args.end() - TextSize::from(1), "drop_last=True"),
                }
            }
        };
        let fix = self.checker.rules.literal_fix(Builtin::LoaderDropLast).ok().map(|(spec, _)| Fix {
            safety: spec.safety,
            edits: vec![edit],
            deletes: Vec::new(),
            imports: Vec::new(),
            helpers: Vec::new(),
        });
        self.report(rule, expr.range(), self.src(call.func.range()), fix);
    }
}

impl<'a> Visitor<'a> for Finder<'_, 'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                let saved_scope = self.scope;
                self.scope = self.checker.sem.scope_of_node(def.range.start()).unwrap_or(saved_scope);
                // A function defined in the loop is not run by it; `forward` is a module's.
                let saved = (self.step.take(), self.periodic, self.forward, self.class_body);
                let masks = std::mem::take(&mut self.masks);
                self.forward = def.name.as_str() == "forward" && self.class_body;
                self.class_body = false;
                visitor::walk_stmt(self, stmt);
                (self.step, self.periodic, self.forward, self.class_body) = saved;
                self.masks = masks;
                self.scope = saved_scope;
            }
            Stmt::ClassDef(_) => {
                let saved = (self.step.take(), std::mem::take(&mut self.forward), self.class_body);
                self.class_body = true;
                visitor::walk_stmt(self, stmt);
                (self.step, self.forward, self.class_body) = saved;
            }
            Stmt::For(f) => self.visit_loop(stmt, &f.body),
            Stmt::While(w) => {
                self.check_test(&w.test);
                self.visit_loop(stmt, &w.body);
            }
            Stmt::If(i) => {
                self.check_test(&i.test);
                self.visit_expr(&i.test);
                let saved = self.periodic;
                self.periodic |= self.step.is_some() && is_periodic(&i.test);
                self.visit_body(&i.body);
                self.periodic = saved;
                for clause in &i.elif_else_clauses {
                    if let Some(test) = &clause.test {
                        self.check_test(test);
                        self.visit_expr(test);
                    }
                    self.visit_body(&clause.body);
                }
            }
            Stmt::Assert(a) => {
                self.check_test(&a.test);
                visitor::walk_stmt(self, stmt);
            }
            Stmt::Assign(a) => {
                // `mask = x > 0`: indexing with `mask` is boolean indexing.
                if let [Expr::Name(target)] = a.targets.as_slice()
                    && makes_mask(&a.value, &self.masks)
                {
                    self.masks.push(target.id.to_string());
                }
                visitor::walk_stmt(self, stmt);
            }
            Stmt::With(w) => {
                for item in &w.items {
                    if let Expr::Call(call) = &item.context_expr {
                        self.check_mark_step(&item.context_expr, &call.func);
                    }
                }
                visitor::walk_stmt(self, stmt);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Call(call) => {
                self.check_sync_call(expr, call);
                self.check_dynamic(expr);
                self.check_loader(expr, call);
                if !matches!(self.qualified(&call.func).as_deref(), Some("torch_xla.step")) {
                    self.check_mark_step(expr, &call.func);
                }
            }
            Expr::Subscript(_) => self.check_dynamic(expr),
            Expr::If(i) => self.check_test(&i.test),
            // A lambda's body does not run where it is written.
            Expr::Lambda(_) => return,
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}

/// Whether `q` is a torch function that reads a value (`torch.any`, `torch.equal`).
fn is_torch_read(q: &str) -> bool {
    q.strip_prefix("torch.").is_some_and(|name| VALUE_READS.contains(&name))
}

/// What a loop body calls, as far as training goes: `backward()` and `step()`, directly or
/// through a step function of the file (`loss = self.train_step(batch)`).
struct TrainingCalls<'s> {
    /// The file's step functions (see [`step_functions`]).
    steps: &'s FxHashSet<String>,
    /// Look inside nested loops (a loop body), or not (a function's own step).
    loops: bool,
    backward: bool,
    step: bool,
    losses: Vec<String>,
}

impl<'s> TrainingCalls<'s> {
    fn of(body: &[Stmt], steps: &'s FxHashSet<String>, loops: bool) -> TrainingCalls<'s> {
        let mut calls = TrainingCalls { steps, loops, backward: false, step: false, losses: Vec::new() };
        for stmt in body {
            calls.visit_stmt(stmt);
        }
        calls
    }

    fn is_training(&self) -> bool {
        self.backward && self.step
    }

    /// `train_step(batch)` or `self.train_step(batch)`, a step function of the file.
    fn calls_step_function(&self, e: &Expr) -> bool {
        let Expr::Call(call) = e else { return false };
        match &*call.func {
            Expr::Name(n) => self.steps.contains(n.id.as_str()),
            Expr::Attribute(a) => {
                matches!(&*a.value, Expr::Name(n) if n.id.as_str() == "self") && self.steps.contains(a.attr.as_str())
            }
            _ => false,
        }
    }
}

impl<'b> Visitor<'b> for TrainingCalls<'_> {
    fn visit_stmt(&mut self, stmt: &'b Stmt) {
        match stmt {
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            Stmt::For(_) | Stmt::While(_) if !self.loops => {}
            // loss = self.train_step(batch): the step function's result is the loss.
            Stmt::Assign(a) if self.calls_step_function(&a.value) => {
                if let [Expr::Name(n)] = a.targets.as_slice()
                    && !self.losses.iter().any(|l| l == n.id.as_str())
                {
                    self.losses.push(n.id.to_string());
                }
                visitor::walk_stmt(self, stmt);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'b Expr) {
        if self.calls_step_function(expr) {
            (self.backward, self.step) = (true, true);
        }
        // `torchtpu_optimizer_step(opt)`: what `xm.optimizer_step(opt)` became in a migrated file.
        if let Expr::Call(call) = expr
            && let Expr::Name(n) = &*call.func
            && n.id.as_str() == "torchtpu_optimizer_step"
        {
            self.step = true;
        }
        if let Expr::Call(call) = expr
            && let Expr::Attribute(attr) = &*call.func
        {
            match attr.attr.as_str() {
                "backward" => {
                    self.backward = true;
                    // loss.backward(), scaler.scale(loss).backward(), accelerator.backward(loss)
                    let loss = match (&*attr.value, call.arguments.args.first()) {
                        (Expr::Name(n), None) => Some(n),
                        (Expr::Call(inner), None) => inner.arguments.args.first().and_then(Expr::as_name_expr),
                        (_, Some(arg)) => arg.as_name_expr(),
                        _ => None,
                    };
                    if let Some(n) = loss
                        && !self.losses.iter().any(|l| l == n.id.as_str())
                    {
                        self.losses.push(n.id.to_string());
                    }
                }
                "step" | "optimizer_step" => self.step = true,
                _ => {}
            }
        }
        visitor::walk_expr(self, expr);
    }
}

/// Whether a loop nested in `body` is itself a training loop.
fn body_has_training_loop(body: &[Stmt], steps: &FxHashSet<String>) -> bool {
    struct Loops<'s>(bool, &'s FxHashSet<String>);
    impl<'b> Visitor<'b> for Loops<'_> {
        fn visit_stmt(&mut self, stmt: &'b Stmt) {
            match stmt {
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                Stmt::For(ast::StmtFor { body, .. }) | Stmt::While(ast::StmtWhile { body, .. })
                    if TrainingCalls::of(body, self.1, true).is_training() =>
                {
                    self.0 = true;
                }
                _ => visitor::walk_stmt(self, stmt),
            }
        }
    }
    let mut loops = Loops(false, steps);
    for stmt in body {
        loops.visit_stmt(stmt);
    }
    loops.0
}

/// The names of the file's step functions: functions and methods that call `backward()` and
/// `step()` outside any loop of their own (one training step, called from a loop elsewhere).
fn step_functions(module: &ast::ModModule) -> FxHashSet<String> {
    struct Defs(FxHashSet<String>);
    impl<'b> Visitor<'b> for Defs {
        fn visit_stmt(&mut self, stmt: &'b Stmt) {
            if let Stmt::FunctionDef(def) = stmt
                && TrainingCalls::of(&def.body, &FxHashSet::default(), false).is_training()
            {
                self.0.insert(def.name.to_string());
            }
            visitor::walk_stmt(self, stmt);
        }
    }
    let mut defs = Defs(FxHashSet::default());
    defs.visit_body(&module.body);
    defs.0
}

/// `step % 100 == 0`: a test that holds every N steps.
fn is_periodic(test: &Expr) -> bool {
    struct Modulo(bool);
    impl<'b> Visitor<'b> for Modulo {
        fn visit_expr(&mut self, expr: &'b Expr) {
            if matches!(expr, Expr::BinOp(b) if b.op == ast::Operator::Mod) {
                self.0 = true;
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut modulo = Modulo(false);
    modulo.visit_expr(test);
    modulo.0
}

/// The first of `names` whose value `expr` reads: the bare name, or an attribute of it that is
/// not known without the value (`loss.shape` is; `loss.item()` is reported on its own).
fn reads_value(expr: &Expr, names: &[String]) -> Option<String> {
    struct Reads<'n> {
        names: &'n [String],
        found: Option<String>,
    }
    impl<'b> Visitor<'b> for Reads<'_> {
        fn visit_expr(&mut self, expr: &'b Expr) {
            if self.found.is_some() {
                return;
            }
            match expr {
                Expr::Compare(c) if c.ops.iter().all(|op| matches!(op, ast::CmpOp::Is | ast::CmpOp::IsNot)) => {}
                Expr::Attribute(a)
                    if matches!(&*a.value, Expr::Name(n) if self.names.iter().any(|l| l == n.id.as_str()))
                        && (STATIC_ATTRIBUTES.contains(&a.attr.as_str())
                            || SYNC_METHODS.contains(&a.attr.as_str())) => {}
                Expr::Name(n) if self.names.iter().any(|l| l == n.id.as_str()) => {
                    self.found = Some(n.id.to_string());
                }
                _ => visitor::walk_expr(self, expr),
            }
        }
    }
    let mut reads = Reads { names, found: None };
    reads.visit_expr(expr);
    reads.found
}

/// Whether `e` makes a boolean mask: a comparison, a mask method, `~`/`not` of one, or a name
/// bound to one.
fn makes_mask(e: &Expr, masks: &[String]) -> bool {
    match e {
        Expr::Compare(c) => !c
            .ops
            .iter()
            .any(|op| matches!(op, ast::CmpOp::Is | ast::CmpOp::IsNot | ast::CmpOp::In | ast::CmpOp::NotIn)),
        Expr::UnaryOp(u) if u.op == ast::UnaryOp::Invert => makes_mask(&u.operand, masks),
        Expr::BinOp(b) if matches!(b.op, ast::Operator::BitAnd | ast::Operator::BitOr) => {
            makes_mask(&b.left, masks) || makes_mask(&b.right, masks)
        }
        Expr::Call(call) => {
            matches!(&*call.func, Expr::Attribute(a) if MASK_METHODS.contains(&a.attr.as_str()))
        }
        Expr::Name(n) => masks.iter().any(|m| m == n.id.as_str()),
        // A row of a mask (`keep[step]`).
        Expr::Subscript(s) => makes_mask(&s.value, masks),
        _ => false,
    }
}
