//! Matching: walk one parsed file, resolve every reference, and turn rule
//! matches into diagnostics that carry their fix (if one is safe to offer).

use rustc_hash::{FxHashMap, FxHashSet};

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprCall, ExprContext, Stmt};
use ruff_python_parser::Parsed;
use ruff_text_size::{Ranged, TextRange, TextSize};

mod api_calls;
mod autocast;
mod cell_magic;
mod compare;
pub mod env;
mod fixes;
mod group;
mod guards;
pub mod hardware;
mod imports;
pub mod inventory;
pub mod loaders;
mod noqa;
mod performance;
mod spmd;
mod strings;
mod syntax;
mod timing;
mod views;

use noqa::Suppressions;
use syntax::{catches_import_error, try_only_guards_imports};

use crate::migrate::diagnostic::Diagnostic;
use crate::migrate::fix::{Block, Fix, StmtRef};
use crate::migrate::rules::template::{Bound, arg_matches};
use crate::migrate::rules::{Builtin, MatchKind, Rule, RuleId, RuleSet};
use crate::migrate::semantic::{BindingId, Qualified, ScopeId, Semantic};

/// The removal of an import whose names are all still used, for `migrate` to apply in the
/// same pass as the fixes that remove those uses: only when, after them, none of `names` is
/// left anywhere in the text as a word (see `migrate::Pass::with_contingent`). Without it an
/// import goes one pass after its last use, and a file costs a parse and a check more.
#[derive(Debug)]
pub struct Contingent {
    /// The import statement: its finding (TPU001) must be among those kept.
    pub range: TextRange,
    pub fix: Fix,
    /// The names the statement binds.
    pub names: Vec<String>,
    /// Not a torch_xla import: one of the user's (`import os`) that this pass's fixes may leave
    /// unused. It has no finding; it goes only with the last uses the fixes remove.
    pub unreported: bool,
}

/// Words without which no performance rule can match (the opt-in rules' prefilter).
const PERFORMANCE_WORDS: &[&str] = &["backward", "forward", "DataLoader"];

pub fn performance_may_match(text: &str) -> bool {
    PERFORMANCE_WORDS.iter().any(|w| text.contains(w))
}

/// A branch that only runs with torch_xla.
pub(super) struct XlaBranch {
    /// The guard's test, and the branch's statements.
    pub(super) test: TextRange,
    pub(super) body: TextRange,
    /// When the branch may be only device selection (imports and assignments under a bare
    /// probe call): the guard's fix, and the assignments, each of which must select the device.
    pub(super) device: Option<(Fix, Vec<TextRange>)>,
}

pub struct CheckResult {
    pub diagnostics: Vec<Diagnostic>,
    /// Import removals that wait on this pass's other fixes (see [`Contingent`]).
    pub contingent: Vec<Contingent>,
    pub blocks: Vec<Block>,
    /// The file's `# noqa` directives, read once here and reused by `check`.
    pub noqa: crate::noqa::Noqa,
}

/// Environment accessors whose first argument names a variable.
const ENV_CALLS: &[&str] =
    &["os.environ.get", "os.environ.setdefault", "os.environ.pop", "os.getenv", "os.putenv", "os.unsetenv"];

pub fn check(
    parsed: &Parsed<ast::ModModule>,
    text: &str,
    rules: &RuleSet,
    selection: &crate::migrate::selection::Selection,
) -> CheckResult {
    let run = selection.run.as_deref();
    let module = parsed.syntax();
    let sem = Semantic::build_in_run(module, selection.run.clone());
    let mut checker = Checker {
        text,
        rules,
        run,
        helper_module: selection.helper_module.clone(),
        sem: &sem,
        parsed_tokens: parsed,
        scope: 0,
        blocks: Vec::new(),
        stmt: Vec::new(),
        operand: Vec::new(),
        used: FxHashSet::default(),
        owned: FxHashSet::default(),
        import_sites: Vec::new(),
        diagnostics: Vec::new(),
        guarded_try_bodies: FxHashSet::default(),
        compare: Vec::new(),
        inventory: inventory::Inventory::build(module, &sem),
        literals_seen: FxHashSet::default(),
        keyword_of: FxHashMap::default(),
        argument_of: FxHashMap::default(),
        shown: FxHashSet::default(),
        alias_sites: Vec::new(),
        bodies: Vec::new(),
        xla_autocast: 0,
        class_arguments: FxHashSet::default(),
        annotation: 0,
        xla_only: Vec::new(),
        probe_flags: FxHashSet::default(),
        fstring_quotes: Vec::new(),
        scope_body: vec![&module.body],
        module,
        all_names: std::cell::OnceCell::new(),
        style: std::cell::OnceCell::new(),
        contingent: Vec::new(),
        slice_reads: std::cell::OnceCell::new(),
    };
    checker.visit_block(&module.body, None);
    checker.report_imports();
    let mut diagnostics = std::mem::take(&mut checker.diagnostics);
    checker.report_xla_only_branches(&mut diagnostics);
    checker.report_unlaunched_spmd(&mut diagnostics);
    checker.report_slice_reads(&mut diagnostics);
    checker.report_other_hardware(&mut diagnostics);
    checker.report_performance(&selection.opt_in, &mut diagnostics);
    let suppressed = Suppressions::new(text, parsed);
    diagnostics.retain(|d| !suppressed.covers(text, d.range, &rules.rules[d.rule].code));
    diagnostics.sort_by_key(|d| (d.range.start(), d.rule));
    CheckResult { diagnostics, contingent: checker.contingent, blocks: checker.blocks, noqa: suppressed.into_inner() }
}

struct Checker<'a> {
    text: &'a str,
    rules: &'a RuleSet,
    /// What the run's other files establish, when this file is part of a run.
    run: Option<&'a crate::migrate::facts::RunFacts>,
    /// The project's helper module this file imports helpers from (`Selection::helper_module`).
    helper_module: Option<String>,
    sem: &'a Semantic,
    parsed_tokens: &'a Parsed<ast::ModModule>,
    scope: ScopeId,
    blocks: Vec<Block>,
    /// The statements enclosing the current expression, innermost last.
    stmt: Vec<(StmtRef, &'a Stmt)>,
    /// For each expression being walked: is it an operand (needs parentheses
    /// around a non-atomic replacement)?
    operand: Vec<Operand>,
    used: FxHashSet<BindingId>,
    /// Arguments of a call a rule already reported (their constants are the rule's business).
    owned: FxHashSet<TextSize>,
    import_sites: Vec<(StmtRef, &'a Stmt)>,
    diagnostics: Vec<Diagnostic>,
    /// Bodies of `try:` blocks whose `except ImportError` does real work (sets
    /// a flag…): removing their imports must keep the probe meaningful.
    guarded_try_bodies: FxHashSet<usize>,
    /// The comparisons enclosing the current expression, innermost last.
    compare: Vec<&'a ast::ExprCompare>,
    inventory: inventory::Inventory<'a>,
    /// String literals a positional check already judged (device arguments, dict keys).
    literals_seen: FxHashSet<TextSize>,
    /// The keyword each keyword-argument literal is the value of.
    keyword_of: FxHashMap<TextSize, &'a str>,
    /// The qualified callee of the call each argument (by its start) is passed to.
    argument_of: FxHashMap<TextSize, String>,
    /// Expressions (by their start) whose value is only shown to a person (`print(x)`).
    shown: FxHashSet<TextSize>,
    /// Assignments that alias a torch_xla name (`xs = _xs`), with the binding each makes.
    alias_sites: Vec<(StmtRef, &'a Stmt, BindingId)>,
    /// The bodies being walked, innermost last (with `stmt`: what follows a statement).
    bodies: Vec<&'a [Stmt]>,
    /// Depth of torch_xla autocast regions (`with torch.autocast("xla"):`) being walked.
    xla_autocast: u32,
    /// Arguments (by their start) of class tests (`isinstance`) and of the rules' shared helpers:
    /// a class named there creates no instance (see `creates_no_instance`).
    class_arguments: FxHashSet<TextSize>,
    /// Depth of annotations being walked (a class named there creates no instance).
    annotation: u32,
    /// Branches that only run with torch_xla.
    xla_only: Vec<XlaBranch>,
    /// Flags set by a `try: import torch_xla…` that becomes a TorchTPU probe:
    /// branches they guard are TorchTPU branches after the migration, not dead code.
    probe_flags: FxHashSet<&'a str>,
    /// Quote characters of the f-strings enclosing the current expression:
    /// before Python 3.12 a replacement field cannot reuse them.
    fstring_quotes: Vec<Option<char>>,
    /// The body of the function (or module) being checked, innermost last.
    scope_body: Vec<&'a [Stmt]>,
    module: &'a ast::ModModule,
    /// Every identifier used or bound anywhere, so a new import alias never clashes. Only fixes
    /// that add an import ask, so it is collected then, not for every file.
    all_names: std::cell::OnceCell<FxHashSet<&'a str>>,
    /// The file's indentation step and quote preference, read from its tokens once.
    style: std::cell::OnceCell<crate::migrate::style::FileStyle>,
    contingent: Vec<Contingent>,
    /// Reads of values computed from a split batch (TPU234), found before the walk: they keep
    /// the split from being converted.
    slice_reads: std::cell::OnceCell<Vec<SliceRead<'a>>>,
}

/// A statement reading values computed from a split batch (TPU234), and the expressions to
/// make global for SPMD's reading, each with its helper (`None` when one cannot be).
#[derive(Debug, Clone)]
struct SliceRead<'a> {
    /// The first read (a call, or the size a `+=` counts).
    at: &'a Expr,
    wraps: Option<Vec<(TextRange, &'static str)>>,
}

/// Where a match sits, for building its fix.
struct Site<'a> {
    rule: RuleId,
    target: Option<&'a str>,
    expr: &'a Expr,
    call: Option<&'a ExprCall>,
    /// The spelling used in the source, for messages.
    spelled: String,
    /// The qualified name a call rule matched (fix variants may apply to some names only).
    callee: Option<String>,
}

impl<'a> Checker<'a> {
    fn all_names(&self) -> &FxHashSet<&'a str> {
        self.all_names.get_or_init(|| {
            struct Names<'a>(FxHashSet<&'a str>);
            impl<'a> Visitor<'a> for Names<'a> {
                fn visit_expr(&mut self, expr: &'a Expr) {
                    if let Expr::Name(name) = expr {
                        self.0.insert(name.id.as_str());
                    }
                    visitor::walk_expr(self, expr);
                }
            }
            let mut names = Names(self.sem.bindings.iter().map(|b| b.name.as_str()).collect());
            names.visit_body(&self.module.body);
            names.0
        })
    }

    fn src(&self, range: TextRange) -> &'a str {
        &self.text[range]
    }

    fn rule(&self, id: RuleId) -> &'a Rule {
        &self.rules.rules[id]
    }

    /// The function of this file that `name` (used in the current scope) refers to.
    fn local_def(&self, name: &ast::ExprName) -> Option<&'a ast::StmtFunctionDef> {
        self.inventory.local_def(self.sem, name, self.scope)
    }

    /// Whether the function (or module) being checked calls one of `names`.
    fn function_calls_any(&self, names: &[String]) -> bool {
        self.inventory.scope_calls_any(self.sem, self.scope, names)
    }

    /// Whether `worker` certainly creates the process group itself: one of its
    /// own top-level statements calls `init_process_group` (then a launcher fix
    /// must not create a second one before it). A call behind a condition or in
    /// another function does not count: the worker may run without it.
    fn worker_creates_process_group(&self, worker: &ast::StmtFunctionDef) -> bool {
        let scope = self.sem.scope_of_node(worker.range.start()).unwrap_or(self.scope);
        worker.body.iter().any(|stmt| {
            let value = match stmt {
                Stmt::Expr(e) => &e.value,
                Stmt::Assign(a) => &a.value,
                _ => return false,
            };
            matches!(&**value, Expr::Call(call)
                if self.sem.qualified_name(&call.func, scope).is_some_and(|q| q.name == crate::migrate::facts::INIT_PROCESS_GROUP))
        })
    }

    fn visit_block(&mut self, body: &'a [Stmt], owner: Option<(StmtRef, bool)>) {
        let block = self.blocks.len();
        self.blocks.push(Block { stmts: body.iter().map(Ranged::range).collect(), owner });
        self.bodies.push(body);
        for (index, stmt) in body.iter().enumerate() {
            let sref = StmtRef { block, index };
            self.stmt.push((sref, stmt));
            self.visit_statement(stmt, sref);
            self.stmt.pop();
        }
        self.bodies.pop();
    }

    fn in_scope_of(&mut self, start: TextSize, f: impl FnOnce(&mut Self)) {
        let saved = self.scope;
        if let Some(scope) = self.sem.scope_of_node(start) {
            self.scope = scope;
        }
        f(self);
        self.scope = saved;
    }

    fn visit_statement(&mut self, stmt: &'a Stmt, sref: StmtRef) {
        let owner = Some((sref, false));
        match stmt {
            Stmt::FunctionDef(def) => {
                self.check_device_defaults(&def.parameters);
                crate::migrate::semantic::visit_function_header(self, def);
                self.scope_body.push(&def.body);
                self.in_scope_of(def.range.start(), |c| c.visit_block(&def.body, owner));
                self.scope_body.pop();
            }
            Stmt::ClassDef(class) => {
                class.decorator_list.iter().for_each(|d| self.visit_expr(&d.expression));
                if let Some(arguments) = &class.arguments {
                    self.visit_arguments(arguments);
                }
                self.in_scope_of(class.range.start(), |c| c.visit_block(&class.body, owner));
            }
            Stmt::If(if_stmt) => {
                self.note_xla_guard(if_stmt);
                self.visit_expr(&if_stmt.test);
                // Dropped when every arm empties, if no test does anything.
                let droppable = is_pure(&if_stmt.test)
                    && if_stmt.elif_else_clauses.iter().all(|c| c.test.as_ref().is_none_or(is_pure));
                self.visit_block(&if_stmt.body, Some((sref, droppable)));
                for clause in &if_stmt.elif_else_clauses {
                    if let Some(test) = &clause.test {
                        self.visit_expr(test);
                    }
                    self.visit_block(&clause.body, Some((sref, droppable)));
                }
            }
            Stmt::Try(try_stmt) => {
                let droppable = try_only_guards_imports(try_stmt);
                if !droppable && catches_import_error(try_stmt) {
                    self.guarded_try_bodies.insert(self.blocks.len());
                    // Its flag (`_HAS_XLA = True`) will then mean "TorchTPU is here".
                    self.probe_flags.extend(syntax::assigned_names(try_stmt));
                }
                self.visit_block(&try_stmt.body, Some((sref, droppable)));
                for handler in &try_stmt.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = handler;
                    if let Some(t) = &h.type_ {
                        self.visit_expr(t);
                    }
                    self.visit_block(&h.body, owner);
                }
                self.visit_block(&try_stmt.orelse, owner);
                self.visit_block(&try_stmt.finalbody, owner);
            }
            Stmt::For(for_stmt) => {
                self.visit_expr(&for_stmt.iter);
                self.visit_expr(&for_stmt.target);
                self.visit_block(&for_stmt.body, owner);
                self.visit_block(&for_stmt.orelse, owner);
            }
            Stmt::While(while_stmt) => {
                self.visit_expr(&while_stmt.test);
                self.visit_block(&while_stmt.body, owner);
                self.visit_block(&while_stmt.orelse, owner);
            }
            Stmt::With(with) => {
                let autocast = u32::from(with.items.iter().any(|i| self.opens_xla_autocast(&i.context_expr)));
                self.check_with(with);
                self.xla_autocast += autocast;
                self.visit_block(&with.body, owner);
                self.xla_autocast -= autocast;
            }
            Stmt::Match(m) => {
                self.visit_expr(&m.subject);
                for case in &m.cases {
                    if let Some(guard) = &case.guard {
                        self.visit_expr(guard);
                    }
                    self.visit_block(&case.body, owner);
                }
            }
            Stmt::Import(_) | Stmt::ImportFrom(_) => self.import_sites.push((sref, stmt)),
            Stmt::Assign(assign) => {
                if let [Expr::Name(target)] = &*assign.targets
                    && let Some(binding) = self.sem.binding_at(target.range.start())
                    && self.sem.bindings[binding].is_alias()
                {
                    self.alias_sites.push((sref, stmt, binding));
                }
                self.check_assigned_device(&assign.targets.iter().collect::<Vec<_>>(), &assign.value);
                if self.is_probe(&assign.value) || self.reads_switch(&assign.value) {
                    // `_xla = find_spec("torch_xla") is not None`: a flag the probe's fix retargets.
                    self.probe_flags.extend(assign.targets.iter().filter_map(|t| Some(t.as_name_expr()?.id.as_str())));
                }
                visitor::walk_stmt(self, stmt);
            }
            Stmt::AnnAssign(assign) => {
                if let Some(value) = &assign.value {
                    self.check_assigned_device(&[&assign.target], value);
                }
                visitor::walk_stmt(self, stmt);
            }
            Stmt::Delete(del) => {
                self.check_delete(del, sref);
                visitor::walk_stmt(self, stmt);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    /// Whether `expr` contains a call to a torch_xla availability probe (a rule with `probe: true`).
    fn is_probe(&self, expr: &'a Expr) -> bool {
        struct Finder<'c, 'a> {
            checker: &'c Checker<'a>,
            found: bool,
        }
        impl<'b> Visitor<'b> for Finder<'_, '_> {
            fn visit_expr(&mut self, expr: &'b Expr) {
                if let Expr::Call(call) = expr
                    && let Some(q) = self.checker.sem.qualified_name(&call.func, self.checker.scope)
                    && let Some((rule, _)) = self.checker.rules.lookup(MatchKind::Call, &q.name)
                    && self.checker.rule(rule).probe
                    && self.checker.match_condition_holds(rule, call)
                {
                    self.found = true;
                }
                visitor::walk_expr(self, expr);
            }
        }
        let mut finder = Finder { checker: self, found: false };
        finder.visit_expr(expr);
        finder.found
    }

    fn mark_used(&mut self, q: &Qualified) {
        self.used.extend(q.bindings.iter().copied());
    }

    // ---- matching -------------------------------------------------------

    fn visit_call(&mut self, expr: &'a Expr, call: &'a ExprCall) {
        // `ws = getattr(xr, "world_size")`: an alias's value uses the object, shows nothing.
        if self.sem.alias_value(expr.start()).is_some()
            && let Some(q) = call.arguments.args.first().and_then(|o| self.sem.qualified_name(o, self.scope))
        {
            self.mark_used(&q);
            return;
        }
        self.check_cell_magic(call);
        for kw in call.arguments.keywords.iter() {
            if let (Some(arg), Expr::StringLiteral(lit)) = (&kw.arg, &kw.value) {
                self.keyword_of.insert(lit.range.start(), arg.id.as_str());
            }
        }
        if self.xla_autocast > 0 {
            self.check_autocast_softmax(call);
        }
        self.check_strided_view(call);
        if syntax::is_display(&call.func) {
            for arg in &call.arguments.args {
                self.mark_shown(arg);
            }
        }
        let q = self.sem.qualified_name(&call.func, self.scope);
        if q.is_none()
            && let Expr::Name(callee) = &*call.func
            && (matches!(callee.id.as_str(), "isinstance" | "issubclass") || self.rules.is_shared_helper(&callee.id))
        {
            self.class_arguments.extend(call.arguments.args.iter().map(Ranged::start));
        }
        if let Some(q) = &q {
            self.mark_used(q);
            let args = call.arguments.args.iter().chain(call.arguments.keywords.iter().map(|k| &k.value));
            for arg in args {
                self.argument_of.insert(arg.start(), q.name.clone());
            }
            if ENV_CALLS.contains(&q.name.as_str())
                && let Some(first) = call.arguments.args.first()
            {
                self.check_env(expr, first);
            }
            if let Some((rule, target)) = self.rules.lookup(MatchKind::Call, &q.name) {
                if self.match_condition_holds(rule, call) {
                    let spelled = self.src(call.func.range()).to_string();
                    self.report(Site { rule, target, expr, call: Some(call), spelled, callee: Some(q.name.clone()) });
                    match self.edited_arguments(rule, call) {
                        // `TrainingArguments(..., torch_compile_backend="openxla")`: the rule
                        // sets or drops some keywords; the others are anyone's.
                        Some(edited) => {
                            self.owned.extend(edited);
                            self.operand.push(Operand::No);
                            self.visit_arguments(&call.arguments);
                            self.operand.pop();
                        }
                        None => self.visit_owned_arguments(call),
                    }
                } else if self.unbindable_may_match(rule, call) {
                    // `TrainingArguments(**config)`: the arguments may be the ones the rule is about.
                    // A rule on the name itself converts it (`instances`); else a person must look.
                    if self.rules.lookup(MatchKind::Reference, &q.name).is_none() {
                        let spelled = self.src(call.func.range()).to_string();
                        self.report(Site {
                            rule,
                            target,
                            expr,
                            call: Some(call),
                            spelled,
                            callee: Some(q.name.clone()),
                        });
                    } else {
                        self.visit_reference(&call.func);
                    }
                    self.visit_owned_arguments(call);
                } else {
                    // e.g. `torch.compile(backend="inductor")`: not ours, and not a bare reference either.
                    self.check_device_arguments(call, Some(q));
                    self.operand.push(Operand::No);
                    self.visit_arguments(&call.arguments);
                    self.operand.pop();
                }
                return;
            }
        }
        // `pipe.enable_xla_flash_attention()`: a method of a library object, matched by its name.
        if q.is_none()
            && let Expr::Attribute(method) = &*call.func
            && let Some(rule) = self.rules.method_rule(method.attr.id.as_str())
            && self.in_files_calling_holds(rule)
            && self.receiver_from_holds(rule, &method.value)
        {
            let spelled = self.src(call.func.range()).to_string();
            self.report(Site { rule, target: None, expr, call: Some(call), spelled, callee: None });
            self.visit_expr(&method.value);
            self.visit_owned_arguments(call);
            return;
        }
        self.check_device_arguments(call, q.as_ref());
        match &q {
            Some(q) => self.check_api_call(call, &q.name, false),
            None => {
                if let Some(api) = self.tensor_method(call) {
                    self.check_api_call(call, &api, true);
                }
            }
        }
        let unmapped = self.rules.builtin(Builtin::Unmapped);
        if let (Some(q), Some(rule)) = (&q, unmapped)
            && in_modules(&q.name, &self.rule(rule).modules)
        {
            // Arguments of a torch_xla call nobody converts stay torch_xla's (`xm.REDUCE_SUM` in them too).
            self.operand.push(Operand::Tight);
            self.visit_expr(&call.func);
            self.operand.pop();
            self.visit_owned_arguments(call);
            return;
        }
        self.walk_with_operand(expr);
    }

    /// Whether a method rule's file condition holds (`in_files_calling`, or none). A name
    /// without a module is a helper a fix defined in the file (the migrated form of the call).
    fn in_files_calling_holds(&self, rule: RuleId) -> bool {
        let names = &self.rule(rule).in_files_calling;
        names.is_empty()
            || names.iter().any(|n| match n.contains('.') {
                true => self.inventory.file_calls(self.sem, n),
                false => self.sem.is_bound_anywhere(n),
            })
    }

    /// Whether a method rule's receiver condition holds (`receiver_from`, or none): the
    /// receiver is a name whose binding here was assigned a call to one of the names.
    fn receiver_from_holds(&self, rule: RuleId, receiver: &Expr) -> bool {
        let names = &self.rule(rule).receiver_from;
        if names.is_empty() {
            return true;
        }
        let Expr::Name(name) = receiver else { return false };
        let Some(binding) = self.sem.unique_binding(name.id.as_str(), self.scope, name.start()) else { return false };
        let start = self.sem.bindings[binding].range.start();
        let Some(Expr::Call(call)) = self.inventory.values.get(&start) else { return false };
        match &*call.func {
            Expr::Name(callee) if names.iter().any(|n| !n.contains('.') && n == callee.id.as_str()) => true,
            func => self.sem.qualified_name(func, self.scope).is_some_and(|q| names.contains(&q.name)),
        }
    }

    fn visit_owned_arguments(&mut self, call: &'a ExprCall) {
        for arg in call.arguments.args.iter() {
            self.owned.insert(arg.start());
        }
        for kw in call.arguments.keywords.iter() {
            self.owned.insert(kw.value.start());
        }
        self.operand.push(Operand::No);
        self.visit_arguments(&call.arguments);
        self.operand.pop();
    }

    /// Where every fix of the rule edits keywords in place (`args:`): the arguments those
    /// fixes set or drop (the rule's), by their start. `None` for any other fix.
    fn edited_arguments(&self, rule: RuleId, call: &ExprCall) -> Option<Vec<TextSize>> {
        use crate::migrate::rules::FixAction;
        let rule = self.rule(rule);
        let mut params: Vec<&str> = Vec::new();
        for fix in &rule.fixes {
            let FixAction::Args { set, remove, .. } = &fix.action else { return None };
            params.extend(set.iter().map(|(p, _)| p.as_str()).chain(remove.iter().map(String::as_str)));
        }
        let bound = rule.signature.as_ref()?.bind(call).ok()?;
        (!rule.fixes.is_empty()).then(|| params.iter().filter_map(|p| Some(bound.values.get(*p)?.start())).collect())
    }

    /// A call whose arguments cannot be bound (`**config`, `*args`) where the rule's condition
    /// holds for a call passing none of them: what it unpacks may be what the rule is about.
    fn unbindable_may_match(&self, rule: RuleId, call: &'a ExprCall) -> bool {
        let rule = self.rule(rule);
        let Some(signature) = &rule.signature else { return false };
        if (rule.when.is_empty() && rule.when_any.is_empty()) || signature.bind(call).is_ok() {
            return false;
        }
        // What is known: the keywords written out and the items of an unpacked dict literal.
        // Positional arguments are not placed (one after `*args` cannot be): they count as omitted.
        let mut known = Bound::default();
        for kw in &call.arguments.keywords {
            match (&kw.arg, self.unpacked_mapping(&kw.value)) {
                (Some(name), _) => {
                    known.values.insert(name.to_string(), &kw.value);
                }
                (None, Unpacked::Literal(dict)) => {
                    for item in &dict.items {
                        if let Some(Expr::StringLiteral(key)) = &item.key {
                            known.values.insert(key.value.to_str().to_string(), &item.value);
                        }
                    }
                }
                // `**get_fsdp_training_args(model)`: the rule converting that call says what it holds.
                (None, Unpacked::Converted) => return false,
                (None, Unpacked::Unknown) => {}
            }
        }
        self.when_holds(&rule.when, &known)
            && (rule.when_any.is_empty() || rule.when_any.iter().any(|w| self.when_holds(w, &known)))
    }

    /// What a `**mapping` argument is: a dict literal, what a call some rule converts returns
    /// (directly or through the one name bound to it), or unknown.
    fn unpacked_mapping(&self, value: &'a Expr) -> Unpacked<'a> {
        let value = match value {
            Expr::Name(name) => {
                let binding = self.sem.unique_binding(&name.id, self.scope, name.start());
                let at = binding.map(|b| self.sem.bindings[b].range.start());
                match at.and_then(|at| self.inventory.values.get(&at)) {
                    Some(assigned) => *assigned,
                    None => return Unpacked::Unknown,
                }
            }
            other => other,
        };
        match value {
            Expr::Dict(dict) => Unpacked::Literal(dict),
            Expr::Call(c)
                if self
                    .sem
                    .qualified_name(&c.func, self.scope)
                    .is_some_and(|q| self.rules.lookup(MatchKind::Call, &q.name).is_some()) =>
            {
                Unpacked::Converted
            }
            _ => Unpacked::Unknown,
        }
    }

    /// Whether a reference to a class creates no instance: a class test (`isinstance`), an
    /// annotation, or the argument of one of the rules' helpers (already converted).
    fn creates_no_instance(&self, expr: &Expr) -> bool {
        self.annotation > 0 || self.class_arguments.contains(&expr.start())
    }

    fn match_condition_holds(&self, rule: RuleId, call: &ExprCall) -> bool {
        let rule = self.rule(rule);
        if rule.when.is_empty() && rule.when_any.is_empty() {
            return true;
        }
        let Some(Ok(bound)) = rule.signature.as_ref().map(|s| s.bind(call)) else { return false };
        self.when_holds(&rule.when, &bound)
            && (rule.when_any.is_empty() || rule.when_any.iter().any(|w| self.when_holds(w, &bound)))
    }

    fn when_holds(&self, when: &crate::migrate::rules::When, bound: &Bound) -> bool {
        when.iter().all(|(param, accepted)| match bound.varargs.get(param) {
            // `*args`: every argument it collected must match.
            Some(items) => items.iter().all(|e| self.argument_fits(e, accepted)),
            None => match bound.values.get(param) {
                Some(e) => self.argument_fits(e, accepted),
                None => arg_matches(None, accepted),
            },
        })
    }

    /// Whether an argument is one of the `accepted` values; `"$list_name"` (which needs the
    /// semantic model) is a bare name its function only ever binds to a list.
    fn argument_fits(&self, e: &Expr, accepted: &[Option<String>]) -> bool {
        arg_matches(Some(self.src(e.range())), accepted)
            || accepted.iter().any(|a| a.as_deref() == Some("$list_name"))
                && matches!(e, Expr::Name(name) if self.names_a_list(name))
    }

    /// Whether every binding of `name` (in the function that uses it, or the module) gives it a
    /// list: `x = []`, `x = [f(t) for t in ts]`, `x = list(...)`, `x += [...]`; appends do
    /// not rebind it. A parameter, a loop target or any other value makes it unknown.
    fn names_a_list(&self, name: &ast::ExprName) -> bool {
        let bound_in = |scope: ScopeId| self.sem.bindings.iter().filter(move |b| b.scope == scope && b.name == name.id);
        let (scope, body) = match (bound_in(self.scope).next(), bound_in(0).next()) {
            (Some(_), _) => (self.scope, *self.scope_body.last().expect("a body is being checked")),
            (None, Some(_)) => (0, self.module.body.as_slice()),
            (None, None) => return false,
        };
        let mut lists = FxHashSet::default();
        list_assignments(body, &name.id, self.sem, scope, &mut lists);
        bound_in(scope).all(|b| lists.contains(&b.range.start()))
    }

    /// Where the match sits with respect to branches only some ranks take, within its function.
    fn rank_branch(&self) -> crate::migrate::rules::RankBranch {
        use crate::migrate::rules::RankBranch;
        for pair in self.stmt.windows(2).rev() {
            let ((_, outer), (_, inner)) = (pair[0], pair[1]);
            let Stmt::If(branch) = outer else {
                if matches!(outer, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                    break;
                }
                continue;
            };
            let at = inner.start();
            let in_body = branch.body.iter().any(|s| s.range().contains(at));
            // The tests that decided to run `inner`: the `if`'s, then each `elif` up to its clause.
            let mut tests = vec![&*branch.test];
            if !in_body {
                for clause in &branch.elif_else_clauses {
                    tests.extend(clause.test.as_ref());
                    if clause.body.iter().any(|s| s.range().contains(at)) {
                        break;
                    }
                }
            }
            if tests.iter().any(|t| reads_rank(t)) {
                return match (in_body, self.master_test(&branch.test)) {
                    (true, Some(true)) => RankBranch::LocalMaster,
                    (true, Some(false)) => RankBranch::GlobalMaster,
                    _ => RankBranch::Inside,
                };
            }
        }
        RankBranch::Outside
    }

    /// Whether `test` picks a master: `Some(true)` for this host's ordinal 0
    /// (`xm.is_master_ordinal()`, `xm.get_local_ordinal() == 0`), `Some(false)` for the global
    /// one (`xm.is_master_ordinal(local=False)`, `xm.get_ordinal() == 0`, `dist.get_rank() == 0`).
    fn master_test(&self, test: &Expr) -> Option<bool> {
        let qualified = |call: &ExprCall| self.sem.qualified_name(&call.func, self.scope).map(|q| q.name);
        match test {
            Expr::Call(call) => {
                let local = match (call.arguments.args.as_ref(), call.arguments.keywords.as_ref()) {
                    ([], []) => true,
                    ([only], []) => bool_literal(only)?,
                    ([], [kw]) if kw.arg.as_ref().is_some_and(|a| a == "local") => bool_literal(&kw.value)?,
                    _ => return None,
                };
                (qualified(call)? == "torch_xla.core.xla_model.is_master_ordinal").then_some(local)
            }
            Expr::Compare(cmp) if cmp.ops.len() == 1 && cmp.ops[0] == ast::CmpOp::Eq => {
                let zero = |e: &Expr| matches!(e, Expr::NumberLiteral(n) if n.value.as_int().and_then(|i| i.as_u8()) == Some(0));
                let ordinal = match (&*cmp.left, &cmp.comparators[0]) {
                    (Expr::Call(call), other) | (other, Expr::Call(call))
                        if zero(other) && call.arguments.is_empty() =>
                    {
                        call
                    }
                    _ => return None,
                };
                match qualified(ordinal)?.as_str() {
                    "torch_xla.core.xla_model.get_local_ordinal" | "torch_xla.runtime.local_ordinal" => Some(true),
                    "torch_xla.core.xla_model.get_ordinal"
                    | "torch_xla.runtime.global_ordinal"
                    | "torch.distributed.get_rank" => Some(false),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// A name or attribute chain in load position. Returns true if it resolved
    /// (its inner parts need no separate visit).
    fn visit_reference(&mut self, expr: &'a Expr) -> bool {
        let Some(q) = self.sem.qualified_name(expr, self.scope) else {
            if let Expr::Name(name) = expr {
                self.report_opaque_use(name);
            }
            return false;
        };
        self.mark_used(&q);
        if self.sem.alias_value(expr.start()).is_some() {
            return true; // `xs = _xs`: followed to the alias's uses, which are checked there
        }
        let spelled = || self.src(expr.range()).to_string();
        if let Some((rule, target)) = self.rules.lookup(MatchKind::Reference, &q.name) {
            if self.rule(rule).instances && self.creates_no_instance(expr) {
                return true;
            }
            if !self.owned.contains(&expr.start()) {
                let spelled = spelled();
                self.report(Site { rule, target, expr, call: None, spelled, callee: Some(q.name.clone()) });
            }
        } else if let Some(rule) = self.rules.lookup_any(&q.name) {
            let message = self.message(rule, &spelled());
            self.diagnostics.push(Diagnostic {
                rule,
                range: expr.range(),
                message,
                note: Some(
                    "referenced without being called here (passed or stored as a value): rewrite the use by hand"
                        .into(),
                ),
                fix: None,
            });
        } else if let Some(rule) = self.rules.builtin(Builtin::Unmapped)
            && in_modules(&q.name, &self.rule(rule).modules)
        {
            let message = self.rule(rule).message.replace("{name}", &spelled()).replace("{qualified}", &q.name);
            self.diagnostics.push(Diagnostic { rule, range: expr.range(), message, note: None, fix: None });
        }
        true
    }

    fn check_with(&mut self, with: &'a ast::StmtWith) {
        for item in &with.items {
            let Expr::Call(call) = &item.context_expr else {
                self.visit_expr(&item.context_expr);
                continue;
            };
            let q = self.sem.qualified_name(&call.func, self.scope);
            let matched = q.as_ref().and_then(|q| self.rules.lookup(MatchKind::With, &q.name));
            match (q, matched) {
                (Some(q), Some((rule, _))) => {
                    self.mark_used(&q);
                    let spelled = self.src(call.func.range()).to_string();
                    let (fix, note) = if with.items.len() == 1 && item.optional_vars.is_none() {
                        self.unwrap_fix(rule, with, call)
                    } else {
                        (None, Some("the `with` has other items or an `as` target: unwrap it by hand".into()))
                    };
                    let message = self.message(rule, &spelled);
                    self.diagnostics.push(Diagnostic { rule, range: item.context_expr.range(), message, note, fix });
                    self.visit_owned_arguments(call);
                }
                _ => self.visit_expr(&item.context_expr),
            }
            if let Some(vars) = &item.optional_vars {
                self.visit_expr(vars);
            }
        }
    }

    fn check_device_arguments(&mut self, call: &'a ExprCall, q: Option<&Qualified>) {
        let is_device_ctor =
            q.is_some_and(|q| matches!(q.name.as_str(), "torch.device" | "torch.autocast" | "torch.amp.autocast"));
        let is_to = matches!(&*call.func, Expr::Attribute(a) if a.attr.id.as_str() == "to");
        let callee = q.map(|q| q.name.as_str());
        if (is_device_ctor || is_to)
            && let Some(first) = call.arguments.args.first()
        {
            self.check_device_literal(first, callee);
        }
        for kw in call.arguments.keywords.iter() {
            if kw.arg.as_ref().is_some_and(|a| matches!(a.id.as_str(), "device" | "map_location" | "device_type")) {
                self.check_device_literal(&kw.value, callee);
            }
        }
    }

    fn walk_with_operand(&mut self, expr: &'a Expr) {
        self.operand.push(operator_context(expr));
        visitor::walk_expr(self, expr);
        self.operand.pop();
    }

    // ---- imports --------------------------------------------------------
}

impl<'a> Visitor<'a> for Checker<'a> {
    fn visit_annotation(&mut self, expr: &'a Expr) {
        // A string annotation (`"pl.MpDeviceLoader"`) still uses its imports.
        if let Expr::StringLiteral(lit) = expr {
            if let Ok(parsed) = ruff_python_parser::parse_expression(lit.value.to_str()) {
                let mut names = NameCollector::default();
                names.visit_expr(parsed.expr());
                for name in names.0 {
                    if let crate::migrate::semantic::Resolution::Import { also, .. } =
                        self.sem.resolve(&name, self.scope, lit.range.start())
                    {
                        self.used.extend(also);
                    }
                }
            }
            return;
        }
        self.annotation += 1;
        self.visit_expr(expr);
        self.annotation -= 1;
    }

    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        // Only reached for statements nested in expressions' walk (none in
        // practice); blocks go through `visit_block`.
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Call(call) => self.visit_call(expr, call),
            Expr::Name(ast::ExprName { ctx: ExprContext::Load, .. }) => {
                self.visit_reference(expr);
            }
            Expr::Name(ast::ExprName { ctx: ExprContext::Del, .. }) => {
                // `del torch_xla` needs the binding: the import must stay.
                if let Some(q) = self.sem.qualified_name(expr, self.scope) {
                    self.mark_used(&q);
                }
            }
            Expr::Attribute(attr) if attr.ctx == ExprContext::Load => {
                // `f().b.b.b…`: no link of a chain whose root is not a name is a reference, and
                // asking each link would walk the rest of the chain again (quadratic on a
                // generated 300,000-link chain). Visit the root once.
                let mut root = &*attr.value;
                while let Expr::Attribute(inner) = root {
                    root = &inner.value;
                }
                if !matches!(root, Expr::Name(_)) {
                    self.operand.push(Operand::Tight); // the object of an attribute access
                    self.visit_expr(root);
                    self.operand.pop();
                } else if !self.visit_reference(expr) {
                    self.walk_with_operand(expr);
                }
            }
            Expr::Attribute(attr) if attr.ctx == ExprContext::Store => {
                // `torch.backends.tpu.flag = True`: reference rules apply to targets too.
                match self.sem.qualified_name(expr, self.scope) {
                    Some(q) if self.rules.lookup(MatchKind::Reference, &q.name).is_some() => {
                        self.mark_used(&q);
                        let (rule, target) = self.rules.lookup(MatchKind::Reference, &q.name).unwrap_or_default();
                        let spelled = self.src(expr.range()).to_string();
                        self.report(Site { rule, target, expr, call: None, spelled, callee: None });
                    }
                    Some(q) => self.mark_used(&q),
                    None => self.walk_with_operand(expr),
                }
            }
            Expr::Subscript(sub) => {
                if self.sem.qualified_name(&sub.value, self.scope).is_some_and(|q| q.name == "os.environ") {
                    self.check_env(expr, &sub.slice);
                }
                self.walk_with_operand(expr);
            }
            Expr::Compare(cmp) => {
                // `t.device.type == "xla"`
                let operands: Vec<&Expr> = std::iter::once(&*cmp.left).chain(cmp.comparators.iter()).collect();
                let is_type = |e: &&Expr| matches!(e, Expr::Attribute(a) if a.attr.id.as_str() == "type");
                if operands.iter().any(is_type) {
                    for e in operands.iter().filter(|e| !is_type(e)) {
                        self.check_device_literal(e, None);
                    }
                }
                self.check_env_membership(expr, cmp);
                self.compare.push(cmp);
                self.walk_with_operand(expr);
                self.compare.pop();
            }
            Expr::StringLiteral(lit) => self.check_string_literal(lit),
            Expr::FString(f) => {
                self.check_fstring(f);
                let quote = fstring_quote(self.src(f.range));
                self.fstring_quotes.push(quote);
                self.walk_with_operand(expr);
                self.fstring_quotes.pop();
            }
            Expr::Dict(dict) => {
                self.check_dict(dict);
                self.walk_with_operand(expr);
            }
            Expr::Lambda(_) | Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) | Expr::Generator(_) => {
                self.in_scope_of(expr.start(), |c| c.walk_with_operand(expr));
            }
            _ => self.walk_with_operand(expr),
        }
    }
}

/// The quote an f-string is delimited by; `None` when triple-quoted (either
/// quote may then appear inside its replacement fields).
fn fstring_quote(raw: &str) -> Option<char> {
    let body = raw.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    if body.starts_with("\"\"\"") || body.starts_with("'''") {
        return None;
    }
    body.chars().next()
}

/// What a `**mapping` argument holds, as far as the file says.
enum Unpacked<'a> {
    Literal(&'a ast::ExprDict),
    /// What a call some rule converts returns: that rule's business.
    Converted,
    Unknown,
}

/// Names used in an expression parsed from a string annotation.
#[derive(Default)]
struct NameCollector(Vec<String>);

impl<'b> Visitor<'b> for NameCollector {
    fn visit_expr(&mut self, expr: &'b Expr) {
        if let Expr::Name(n) = expr {
            self.0.push(n.id.to_string());
        }
        visitor::walk_expr(self, expr);
    }
}

fn in_modules(name: &str, modules: &[String]) -> bool {
    modules.iter().any(|m| name == m || name.strip_prefix(m.as_str()).is_some_and(|r| r.starts_with('.')))
}

/// Expressions whose children are operands: a non-atomic replacement there needs parentheses.
/// Source quoted in a message or note, cut to a readable length: generated code nests a call in
/// thousands of others, and quoting each whole would make the report quadratic in the file.
pub(super) fn shown(code: &str) -> std::borrow::Cow<'_, str> {
    const MAX: usize = 80;
    match code.char_indices().nth(MAX) {
        None => code.into(),
        Some((cut, _)) => format!("{}…", &code[..cut]).into(),
    }
}

/// What a replacement needs to stand as an operand: nothing, parentheses unless it is atomic,
/// or only against what binds looser than `not` (an `and`/`or` operand: `a and b == 0`; under
/// `not` a comparison keeps them, `not (a == 0)`, as people write it).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Operand {
    No,
    Tight,
    Boolean,
}

fn operator_context(expr: &Expr) -> Operand {
    match expr {
        Expr::BoolOp(_) => Operand::Boolean,
        Expr::BinOp(_)
        | Expr::UnaryOp(_)
        | Expr::Compare(_)
        | Expr::Await(_)
        | Expr::Attribute(_)
        | Expr::Subscript(_)
        | Expr::Starred(_)
        // `a if c else b` nested in another conditional changes how it groups.
        | Expr::If(_) => Operand::Tight,
        _ => Operand::No,
    }
}

/// A test that can be dropped together with its body: names, attributes,
/// constants and `is_*_available()`-style checks.
fn is_pure(expr: &Expr) -> bool {
    match expr {
        Expr::Name(_)
        | Expr::BooleanLiteral(_)
        | Expr::NoneLiteral(_)
        | Expr::StringLiteral(_)
        | Expr::NumberLiteral(_) => true,
        Expr::Attribute(a) => is_pure(&a.value),
        Expr::UnaryOp(u) => is_pure(&u.operand),
        Expr::BoolOp(b) => b.values.iter().all(is_pure),
        Expr::Compare(c) => is_pure(&c.left) && c.comparators.iter().all(is_pure),
        Expr::Call(c) => {
            let name = match &*c.func {
                Expr::Name(n) => n.id.as_str(),
                Expr::Attribute(a) => a.attr.id.as_str(),
                _ => return false,
            };
            // `hasattr(torch_xla, "sync")`: a version shim's feature test.
            let asks = name.starts_with("is_") && name.ends_with("available")
                || matches!(&*c.func, Expr::Name(n) if n.id.as_str() == "hasattr");
            asks && c.arguments.args.iter().all(is_pure) && c.arguments.keywords.iter().all(|k| is_pure(&k.value))
        }
        _ => false,
    }
}

/// The starts of the targets named `name` that `body` (not its nested functions or classes)
/// assigns a list to.
fn list_assignments(body: &[Stmt], name: &str, sem: &Semantic, scope: ScopeId, out: &mut FxHashSet<TextSize>) {
    let is_list = |value: &Expr| match value {
        Expr::List(_) | Expr::ListComp(_) => true,
        Expr::Call(call) => matches!(&*call.func, Expr::Name(f) if f.id.as_str() == "list"
            && sem.resolve("list", scope, f.start()) == crate::migrate::semantic::Resolution::Unbound),
        _ => false,
    };
    for stmt in body {
        let (targets, value): (Vec<&Expr>, Option<&Expr>) = match stmt {
            Stmt::Assign(a) => (a.targets.iter().collect(), Some(&a.value)),
            Stmt::AnnAssign(a) => (vec![&a.target], a.value.as_deref()),
            Stmt::AugAssign(a) if a.op == ast::Operator::Add => (vec![&a.target], Some(&a.value)),
            _ => (vec![], None),
        };
        if value.is_some_and(is_list) {
            for target in targets {
                if let Expr::Name(n) = target
                    && n.id.as_str() == name
                {
                    out.insert(n.start());
                }
            }
        }
        match stmt {
            Stmt::If(s) => {
                list_assignments(&s.body, name, sem, scope, out);
                for clause in &s.elif_else_clauses {
                    list_assignments(&clause.body, name, sem, scope, out);
                }
            }
            Stmt::For(s) => {
                list_assignments(&s.body, name, sem, scope, out);
                list_assignments(&s.orelse, name, sem, scope, out);
            }
            Stmt::While(s) => {
                list_assignments(&s.body, name, sem, scope, out);
                list_assignments(&s.orelse, name, sem, scope, out);
            }
            Stmt::With(s) => list_assignments(&s.body, name, sem, scope, out),
            Stmt::Try(s) => {
                list_assignments(&s.body, name, sem, scope, out);
                for handler in &s.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = handler;
                    list_assignments(&h.body, name, sem, scope, out);
                }
                list_assignments(&s.orelse, name, sem, scope, out);
                list_assignments(&s.finalbody, name, sem, scope, out);
            }
            _ => {}
        }
    }
}

fn bool_literal(e: &Expr) -> Option<bool> {
    match e {
        Expr::BooleanLiteral(b) => Some(b.value),
        _ => None,
    }
}

/// Whether a branch's test reads a rank: a name, attribute or string naming one
/// (`xm.is_master_ordinal()`, `rank == 0`, `args.local_rank in (-1, 0)`, `os.environ["RANK"]`,
/// `accelerator.is_main_process`).
fn reads_rank(test: &Expr) -> bool {
    struct Reads(bool);
    impl<'a> Visitor<'a> for Reads {
        fn visit_expr(&mut self, e: &'a Expr) {
            let word = match e {
                Expr::Name(n) => Some(n.id.to_lowercase()),
                Expr::Attribute(a) => Some(a.attr.id.to_lowercase()),
                Expr::StringLiteral(s) => Some(s.value.to_str().to_lowercase()),
                _ => None,
            };
            self.0 |= word.is_some_and(|w| {
                ["rank", "ordinal", "master", "main_process", "process_zero"].iter().any(|k| w.contains(k))
            });
            visitor::walk_expr(self, e);
        }
    }
    let mut reads = Reads(false);
    reads.visit_expr(test);
    reads.0
}
