//! What fixes ask about the file as a whole, gathered in one walk before
//! matching: every function definition (launcher fixes edit the worker they
//! start) and every call's qualified name with its scope (does this file, or
//! this function, create a process group or wrap a model in DDP?).

use rustc_hash::FxHashMap;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextSize};

use crate::migrate::semantic::{ScopeId, Semantic};

#[derive(Default)]
pub(super) struct Inventory<'a> {
    /// Function definitions, by the start of their name (their binding's range).
    pub defs: FxHashMap<TextSize, &'a ast::StmtFunctionDef>,
    /// The callee of every call, with its scope; resolved to qualified names only when a fix
    /// asks (most files never do).
    call_sites: Vec<(ScopeId, &'a ast::ExprCall)>,
    calls: std::cell::OnceCell<FxHashMap<ScopeId, Vec<String>>>,
    creates_group: std::cell::OnceCell<bool>,
    /// The value a name was assigned (`x = torch.randn(3)`), by the start of the name.
    pub values: FxHashMap<TextSize, &'a Expr>,
    /// The annotation of a parameter or annotated name, by the start of the name.
    pub annotations: FxHashMap<TextSize, &'a Expr>,
    /// The file runs as a program: an `if __name__ == "__main__":` block, or calls made at
    /// the top level (a script, a notebook's cells), not only definitions.
    pub is_program: bool,
}

impl<'a> Inventory<'a> {
    pub fn build(module: &'a ast::ModModule, sem: &Semantic) -> Inventory<'a> {
        let mut walker = Walker { sem, scope: 0, inventory: Inventory::default() };
        walker.visit_body(&module.body);
        walker.inventory.is_program = module.body.iter().any(|s| is_main_guard(s) || is_top_level_call(s));
        walker.inventory
    }

    /// Qualified names of the calls made directly in each scope.
    fn calls(&self, sem: &Semantic) -> &FxHashMap<ScopeId, Vec<String>> {
        self.calls.get_or_init(|| {
            let mut calls: FxHashMap<ScopeId, Vec<String>> = FxHashMap::default();
            for &(scope, call) in &self.call_sites {
                if let Some(q) = sem.qualified_name(&call.func, scope) {
                    calls.entry(scope).or_default().push(q.name);
                }
            }
            calls
        })
    }

    /// Every call of the file, with the scope it is made in.
    pub fn call_sites(&self) -> &[(ScopeId, &'a ast::ExprCall)] {
        &self.call_sites
    }

    pub fn scope_calls_any(&self, sem: &Semantic, scope: ScopeId, names: &[String]) -> bool {
        self.calls(sem).get(&scope).is_some_and(|calls| calls.iter().any(|c| names.contains(c)))
    }

    pub fn file_calls(&self, sem: &Semantic, name: &str) -> bool {
        self.calls(sem).values().flatten().any(|c| c == name)
    }

    /// The calls of any of `names` (qualified, or a bare name such as a helper's), in source order.
    pub fn calls_of(&self, sem: &Semantic, names: &[&str]) -> Vec<&'a ast::ExprCall> {
        let mut found: Vec<&'a ast::ExprCall> = self
            .call_sites
            .iter()
            .filter(|(scope, call)| {
                let bare = matches!(&*call.func, Expr::Name(n) if names.contains(&n.id.as_str()));
                bare || sem.qualified_name(&call.func, *scope).is_some_and(|q| names.contains(&q.name.as_str()))
            })
            .map(|(_, call)| *call)
            .collect();
        found.sort_by_key(|call| call.start());
        found
    }

    /// `file_calls`, where `M.*` stands for any name under module M.
    pub fn file_calls_under(&self, sem: &Semantic, pattern: &str) -> bool {
        match pattern.strip_suffix(".*") {
            Some(module) => self
                .calls(sem)
                .values()
                .flatten()
                .any(|c| c.strip_prefix(module).is_some_and(|rest| rest.starts_with('.'))),
            None => self.file_calls(sem, pattern),
        }
    }

    /// Whether the file creates the process group: it calls `init_process_group`, or starts
    /// a worker of its own (a function defined in it) with `xmp.spawn`/`torch_xla.launch`,
    /// whose converted workers create the group first thing. A launcher of a method or of a
    /// function passed in (a framework's launcher) is not converted, so on TorchTPU it
    /// creates nothing, and the collectives beside it would have no group.
    pub fn creates_group(&self, sem: &Semantic) -> bool {
        use crate::migrate::facts::{INIT_PROCESS_GROUP, LAUNCHERS};
        *self.creates_group.get_or_init(|| {
            self.call_sites.iter().any(|&(scope, call)| {
                let Some(q) = sem.qualified_name(&call.func, scope) else { return false };
                if q.name == INIT_PROCESS_GROUP {
                    return true;
                }
                let worker =
                    call.arguments.args.first().or_else(|| call.arguments.find_keyword("fn").map(|k| &k.value));
                LAUNCHERS.contains(&q.name.as_str())
                    && matches!(worker, Some(Expr::Name(name)) if self.local_def(sem, name, scope).is_some())
            })
        })
    }

    /// The function of this file that `name` (used in `scope`) refers to.
    pub fn local_def(&self, sem: &Semantic, name: &ast::ExprName, scope: ScopeId) -> Option<&'a ast::StmtFunctionDef> {
        let binding = sem.unique_binding(&name.id, scope, name.start())?;
        self.defs.get(&sem.bindings[binding].range.start()).copied()
    }
}

/// `if __name__ == "__main__":`
fn is_main_guard(stmt: &Stmt) -> bool {
    let Stmt::If(i) = stmt else { return false };
    let Expr::Compare(c) = &*i.test else { return false };
    let name = |e: &Expr| matches!(e, Expr::Name(n) if n.id.as_str() == "__name__");
    let main = |e: &Expr| matches!(e, Expr::StringLiteral(s) if s.value.to_str() == "__main__");
    c.comparators.len() == 1
        && ((name(&c.left) && main(&c.comparators[0])) || (main(&c.left) && name(&c.comparators[0])))
}

/// `train()` as a statement of the module itself.
fn is_top_level_call(stmt: &Stmt) -> bool {
    matches!(stmt, Stmt::Expr(e) if e.value.is_call_expr())
}

struct Walker<'s, 'a> {
    sem: &'s Semantic,
    scope: ScopeId,
    inventory: Inventory<'a>,
}

impl Walker<'_, '_> {
    fn within(&mut self, start: TextSize, f: impl FnOnce(&mut Self)) {
        let saved = self.scope;
        if let Some(scope) = self.sem.scope_of_node(start) {
            self.scope = scope;
        }
        f(self);
        self.scope = saved;
    }
}

impl<'a> Visitor<'a> for Walker<'_, 'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                self.inventory.defs.insert(def.name.range.start(), def);
                for p in def.parameters.iter() {
                    if let Some(annotation) = p.annotation() {
                        self.inventory.annotations.insert(p.name().range.start(), annotation);
                    }
                }
                crate::migrate::semantic::visit_function_header(self, def);
                self.within(def.range.start(), |w| w.visit_body(&def.body));
            }
            Stmt::ClassDef(class) => {
                class.decorator_list.iter().for_each(|d| self.visit_decorator(d));
                if let Some(arguments) = &class.arguments {
                    self.visit_arguments(arguments);
                }
                self.within(class.range.start(), |w| w.visit_body(&class.body));
            }
            Stmt::Assign(a) => {
                if let [Expr::Name(target)] = a.targets.as_slice() {
                    self.inventory.values.insert(target.range.start(), &a.value);
                }
                visitor::walk_stmt(self, stmt);
            }
            Stmt::AnnAssign(a) => {
                if let Expr::Name(target) = &*a.target {
                    self.inventory.annotations.insert(target.range.start(), &a.annotation);
                    if let Some(value) = &a.value {
                        self.inventory.values.insert(target.range.start(), value);
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
                self.inventory.call_sites.push((self.scope, call));
                visitor::walk_expr(self, expr);
            }
            Expr::Lambda(_) | Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) | Expr::Generator(_) => {
                self.within(expr.start(), |w| visitor::walk_expr(w, expr));
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}

/// Whether the module calls one of [`crate::migrate::facts::GROUP_CREATORS`] where that creates
/// the group.
pub fn creates_process_group(module: &ast::ModModule) -> bool {
    let sem = Semantic::build(module);
    Inventory::build(module, &sem).creates_group(&sem)
}

/// Whether the module calls `qualified` (resolved through its imports).
pub fn calls(module: &ast::ModModule, qualified: &str) -> bool {
    let sem = Semantic::build(module);
    Inventory::build(module, &sem).file_calls(&sem, qualified)
}
