//! Name resolution: which import (if any) a name refers to at a given place.
//!
//! Rules match *qualified* names (`torch_xla.core.xla_model.mark_step`), never
//! spellings, so `xm.mark_step()`, `from torch_xla.core.xla_model import
//! mark_step as ms; ms()` and the fully qualified call all match one rule, and
//! a parameter that happens to be called `xm` matches none.
//!
//! The model follows Python's scoping: module, class, function, lambda and
//! comprehension scopes; a name bound anywhere in a function is local to it;
//! functions see their enclosing scopes at call time (late binding), so from a
//! function body every binding of a module-level name counts, while at module
//! level only the bindings before the reference do. Bindings in exclusive
//! branches (`try` body vs `except`, `if` vs `else`) are alternatives: in
//! `try: import torch_xla.core.xla_model as xm / except ImportError: xm = None`
//! a later `xm` may be either, and we treat it as the import.

use rustc_hash::{FxHashMap, FxHashSet};

use ruff_python_ast::name::Name;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::migrate::facts::Export;

/// Python's builtins (3.12, sorted): what an unbound name refers to even after a star import.
const BUILTINS: &[&str] = &[
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "BaseException",
    "BaseExceptionGroup",
    "BlockingIOError",
    "BrokenPipeError",
    "BufferError",
    "BytesWarning",
    "ChildProcessError",
    "ConnectionAbortedError",
    "ConnectionError",
    "ConnectionRefusedError",
    "ConnectionResetError",
    "DeprecationWarning",
    "EOFError",
    "Ellipsis",
    "EncodingWarning",
    "EnvironmentError",
    "Exception",
    "ExceptionGroup",
    "False",
    "FileExistsError",
    "FileNotFoundError",
    "FloatingPointError",
    "FutureWarning",
    "GeneratorExit",
    "IOError",
    "ImportError",
    "ImportWarning",
    "IndentationError",
    "IndexError",
    "InterruptedError",
    "IsADirectoryError",
    "KeyError",
    "KeyboardInterrupt",
    "LookupError",
    "MemoryError",
    "ModuleNotFoundError",
    "NameError",
    "None",
    "NotADirectoryError",
    "NotImplemented",
    "NotImplementedError",
    "OSError",
    "OverflowError",
    "PendingDeprecationWarning",
    "PermissionError",
    "ProcessLookupError",
    "PythonFinalizationError",
    "RecursionError",
    "ReferenceError",
    "ResourceWarning",
    "RuntimeError",
    "RuntimeWarning",
    "StopAsyncIteration",
    "StopIteration",
    "SyntaxError",
    "SyntaxWarning",
    "SystemError",
    "SystemExit",
    "TabError",
    "TimeoutError",
    "True",
    "TypeError",
    "UnboundLocalError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "UnicodeError",
    "UnicodeTranslateError",
    "UnicodeWarning",
    "UserWarning",
    "ValueError",
    "Warning",
    "ZeroDivisionError",
    "__build_class__",
    "__debug__",
    "__doc__",
    "__import__",
    "__name__",
    "abs",
    "aiter",
    "all",
    "anext",
    "any",
    "ascii",
    "bin",
    "bool",
    "breakpoint",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "compile",
    "complex",
    "copyright",
    "credits",
    "delattr",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "eval",
    "exec",
    "exit",
    "filter",
    "float",
    "format",
    "frozenset",
    "getattr",
    "globals",
    "hasattr",
    "hash",
    "help",
    "hex",
    "id",
    "input",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "license",
    "list",
    "locals",
    "map",
    "max",
    "memoryview",
    "min",
    "next",
    "object",
    "oct",
    "open",
    "ord",
    "pow",
    "print",
    "property",
    "quit",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "setattr",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "vars",
    "zip",
];

pub type ScopeId = usize;
pub type BindingId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeKind {
    Module,
    Class,
    Function,
    Comprehension,
}

#[derive(Debug)]
pub struct Scope {
    pub kind: ScopeKind,
    pub parent: Option<ScopeId>,
    names: FxHashMap<Name, Vec<BindingId>>,
    globals: FxHashSet<Name>,
    star_imports: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingKind {
    /// `import a.b as m` (`qualified` = `a.b`), `from a import b` (`a.b`),
    /// `import a.b` (binds `a`, `qualified` = `a`).
    Import { qualified: String },
    /// An assignment of a torch_xla name, followed like the import it aliases: `xs = _xs`,
    /// `sync = torch_xla.sync`, `ws = getattr(xr, "world_size")`.
    Alias { qualified: String },
    /// An assignment of a torch_xla object that cannot be followed (`getattr(xr, "f", None) or
    /// xm.g`, `a if cond else b`): its uses are reported. `origin` is the assigned value.
    Opaque { origin: TextRange },
    /// Any other binding: assignment, parameter, def, class, loop target…
    Other,
}

/// The packages whose names an assignment may alias (the import rule's modules): an alias of
/// anything else stays an ordinary variable.
const ALIASED: &[&str] = &["torch_xla", "torch_xla_py", "optimum.tpu"];

pub fn aliased(qualified: &str) -> bool {
    ALIASED.iter().any(|m| qualified == *m || qualified.starts_with(m) && qualified[m.len()..].starts_with('.'))
}

#[derive(Debug, Clone)]
pub struct Binding {
    pub name: Name,
    pub kind: BindingKind,
    /// Range of the binding node (the alias, the target name, the parameter).
    pub range: TextRange,
    pub scope: ScopeId,
    /// Enclosing branch arms: (start of the branching statement, arm index).
    branches: Vec<(TextSize, u32)>,
    /// Where references start to see it: the end of an assignment statement
    /// (`x = x.float()` reads the previous `x`), else the binding itself.
    visible_from: TextSize,
}

impl Binding {
    pub fn qualified(&self) -> Option<&str> {
        match &self.kind {
            BindingKind::Import { qualified } | BindingKind::Alias { qualified } => Some(qualified),
            BindingKind::Opaque { .. } | BindingKind::Other => None,
        }
    }

    pub fn is_alias(&self) -> bool {
        matches!(self.kind, BindingKind::Alias { .. })
    }
}

/// What a name refers to at one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// An import; `also` lists every binding the name may refer to there.
    Import {
        binding: BindingId,
        also: Vec<BindingId>,
    },
    /// A name provided by `from module import *`.
    Star(String),
    /// A local variable, parameter, def… (not an import).
    Other,
    /// A name holding a torch_xla object that cannot be followed: the value it was assigned,
    /// or, for an alias that may be another value there, that alias's value.
    Opaque(TextRange),
    Unbound,
}

enum Reach {
    Bindings(Vec<BindingId>),
    Star(String),
    Unbound,
}

#[derive(Debug, Default)]
pub struct Semantic {
    pub scopes: Vec<Scope>,
    pub bindings: Vec<Binding>,
    scope_of_node: FxHashMap<TextSize, ScopeId>,
    /// Indexes, so per-match lookups stay O(1) on large files.
    by_start: FxHashMap<TextSize, BindingId>,
    names_of_module: FxHashMap<String, Vec<String>>,
    bound_names: FxHashSet<Name>,
    /// Names some import binds, and whether a star import exists: most references are
    /// neither, and need no scope walk to know they are not an import.
    imported: FxHashSet<Name>,
    star_import: bool,
    /// The source ranges of each branch arm (an arm may have several: `try`
    /// body and `else`), to tell whether a reference sits inside one.
    arms: FxHashMap<(TextSize, u32), Vec<TextRange>>,
    /// The values of alias assignments (by start): the aliased name is used there, not shown.
    alias_values: FxHashMap<TextSize, BindingId>,
    /// The run this file belongs to: its other modules' torch_xla names (a version shim's).
    run: Option<std::sync::Arc<crate::migrate::facts::RunFacts>>,
}

impl Semantic {
    pub fn build(module: &ast::ModModule) -> Semantic {
        Semantic::build_in_run(module, None)
    }

    /// The model of a file of `run`, whose names imported from the run's other modules (`from
    /// compat import xs`) are what those modules bind them to.
    pub fn build_in_run(
        module: &ast::ModModule,
        run: Option<std::sync::Arc<crate::migrate::facts::RunFacts>>,
    ) -> Semantic {
        let sem = Semantic { run, ..Semantic::default() };
        let mut builder = Builder { sem, scope: 0, branches: Vec::new(), assigning: None };
        builder.sem.scopes.push(Scope::new(ScopeKind::Module, None));
        builder.visit_body(&module.body);
        builder.sem
    }

    /// The scope created by the function, lambda, class or comprehension starting at `start`.
    pub fn scope_of_node(&self, start: TextSize) -> Option<ScopeId> {
        self.scope_of_node.get(&start).copied()
    }

    /// Resolve `name` referenced at `offset` inside `scope`.
    pub fn resolve(&self, name: &str, scope: ScopeId, offset: TextSize) -> Resolution {
        match self.reach(name, scope, offset) {
            Reach::Bindings(reach) => {
                if let Some(origin) = reach.iter().find_map(|&b| match &self.bindings[b].kind {
                    BindingKind::Opaque { origin } => Some(*origin),
                    _ => None,
                }) {
                    return Resolution::Opaque(origin);
                }
                // Of alternatives (`try: import a as m` / `except ImportError: import b as m`,
                // a version shim's `if hasattr(…)` arms), the first written: the primary one.
                let import = reach.iter().rev().copied().find(|&b| self.bindings[b].qualified().is_some());
                match import {
                    // An alias that may be another value there (`if new: f = xr.world_size`
                    // / `else: f = my_world_size`) cannot be followed: calling it may not
                    // call torch_xla at all.
                    Some(binding)
                        if self.bindings[binding].is_alias()
                            && reach.iter().any(|&b| self.bindings[b].qualified().is_none()) =>
                    {
                        let other = reach.iter().copied().find(|&b| self.bindings[b].qualified().is_none());
                        Resolution::Opaque(self.bindings[other.unwrap_or(binding)].range)
                    }
                    Some(binding) => Resolution::Import { binding, also: reach },
                    None => Resolution::Other,
                }
            }
            Reach::Star(name) => Resolution::Star(name),
            Reach::Unbound => Resolution::Unbound,
        }
    }

    /// The single binding `name` can refer to at `offset`, if there is exactly one.
    pub fn unique_binding(&self, name: &str, scope: ScopeId, offset: TextSize) -> Option<BindingId> {
        match self.reach(name, scope, offset) {
            Reach::Bindings(reach) if reach.len() == 1 => Some(reach[0]),
            _ => None,
        }
    }

    fn reach(&self, name: &str, scope: ScopeId, offset: TextSize) -> Reach {
        let mut current = scope;
        let mut own = true;
        loop {
            let s = &self.scopes[current];
            if s.globals.contains(name) && current != 0 {
                current = 0;
                own = false;
                continue;
            }
            if let Some(ids) = s.names.get(name) {
                let at = if own { Some(offset) } else { None };
                let reach = self.reaching(ids, at);
                if !reach.is_empty() {
                    return Reach::Bindings(reach);
                }
                if own && s.kind != ScopeKind::Module && s.kind != ScopeKind::Class {
                    return Reach::Unbound; // a local used before assignment
                }
            }
            if current == 0 {
                return match s.star_imports.last() {
                    // `ValueError` after `from m import *` is the builtin: a module that
                    // re-exports a builtin's name is rare, reporting every builtin is not.
                    Some(_) if BUILTINS.binary_search(&name).is_ok() => Reach::Unbound,
                    Some(module) => Reach::Star(format!("{module}.{name}")),
                    None => Reach::Unbound,
                };
            }
            // Functions do not see the bodies of enclosing classes.
            let mut parent = s.parent.expect("non-module scope has a parent");
            while self.scopes[parent].kind == ScopeKind::Class {
                parent = self.scopes[parent].parent.expect("class scope has a parent");
            }
            current = parent;
            own = false;
        }
    }

    /// The bindings that may be live at `at` (a reference in the same scope),
    /// or at any time (`None`: a reference from a nested function, which runs
    /// later): walking back from the latest binding, each one may reach until
    /// one that certainly ran on the way there, which hides all earlier ones.
    /// A binding certainly ran when every branch arm it sits in (an `if`/`try`
    /// /`match` arm, a loop body) also contains the reference.
    fn reaching(&self, ids: &[BindingId], at: Option<TextSize>) -> Vec<BindingId> {
        let mut reach: Vec<BindingId> = Vec::new();
        for &id in ids.iter().rev() {
            let b = &self.bindings[id];
            if at.is_some_and(|pos| b.visible_from >= pos) {
                continue;
            }
            reach.push(id);
            let certain = match at {
                Some(pos) => b.branches.iter().all(|arm| self.arm_contains(*arm, pos)),
                None => b.branches.is_empty(),
            };
            if certain {
                break;
            }
        }
        reach
    }

    fn arm_contains(&self, arm: (TextSize, u32), offset: TextSize) -> bool {
        self.arms.get(&arm).is_some_and(|ranges| ranges.iter().any(|r| r.contains(offset)))
    }

    /// The fully qualified name of `expr` (a name or attribute chain rooted in an import).
    pub fn qualified_name(&self, expr: &Expr, scope: ScopeId) -> Option<Qualified> {
        match expr {
            Expr::Name(name) if !self.star_import && !self.imported.contains(name.id.as_str()) => None,
            Expr::Name(name) => match self.resolve(&name.id, scope, name.range.start()) {
                Resolution::Import { binding, also } => Some(Qualified {
                    name: modern_module(self.bindings[binding].qualified().unwrap_or_default()),
                    bindings: also,
                }),
                Resolution::Star(name) => Some(Qualified { name: modern_module(&name), bindings: Vec::new() }),
                Resolution::Other | Resolution::Opaque(_) | Resolution::Unbound => None,
            },
            Expr::Attribute(attr) => {
                let mut q = self.qualified_name(&attr.value, scope)?;
                // `compat.xs` of `import compat`: what the run's module binds `xs` to.
                if let Some(Export::Qualified(export)) = self.export(&q.name, &attr.attr.id) {
                    q.name = export;
                    return Some(q);
                }
                q.name.push('.');
                q.name.push_str(&attr.attr.id);
                q.name = modern_module(&q.name);
                Some(q)
            }
            _ => None,
        }
    }

    /// A name that refers to exactly `module` at `offset` in `scope`, if one exists.
    ///
    /// Only an import written before `offset` counts: code a fix inserts there may run
    /// before a later import does (a function called above it, a later notebook cell).
    /// An import at or after `since` (a notebook's last kernel restart before `offset`) only.
    pub fn name_for_module(
        &self,
        module: &str,
        scope: ScopeId,
        offset: TextSize,
        since: Option<TextSize>,
    ) -> Option<String> {
        self.names_of_module
            .get(module)?
            .iter()
            .find(|name| match self.resolve(name, scope, offset) {
                Resolution::Import { binding, .. } => {
                    let b = &self.bindings[binding];
                    b.qualified() == Some(module)
                        && b.range.start() < offset
                        && since.is_none_or(|s| b.range.start() >= s)
                }
                _ => false,
            })
            .cloned()
    }

    /// Whether every binding of `name` in the file imports `module` (so importing it once
    /// more, earlier, changes nothing).
    pub fn binds_only_module(&self, name: &str, module: &str) -> bool {
        self.bindings.iter().filter(|b| b.name.as_str() == name).all(|b| b.qualified() == Some(module))
    }

    /// The binding created by the import alias (or target) starting at `start`.
    pub fn binding_at(&self, start: TextSize) -> Option<BindingId> {
        self.by_start.get(&start).copied()
    }

    /// Whether anything in the file binds `name`.
    pub fn is_bound_anywhere(&self, name: &str) -> bool {
        self.bound_names.contains(name)
    }

    /// Whether the file imports exactly `qualified` (`from m import X` → `m.X`).
    pub fn imports_name(&self, qualified: &str) -> bool {
        self.names_of_module.contains_key(qualified)
    }

    /// What `name` of the run's module `module` is, if a torch_xla name.
    fn export(&self, module: &str, name: &str) -> Option<Export> {
        if aliased(module) {
            return None;
        }
        self.run.as_ref()?.export(module, name)
    }

    /// The names bound at the module's top level.
    pub fn module_names(&self) -> impl Iterator<Item = &str> {
        self.scopes[0].names.keys().map(Name::as_str)
    }

    /// The alias binding whose assigned value starts at `start` (`_xs` of `xs = _xs`).
    pub fn alias_value(&self, start: TextSize) -> Option<BindingId> {
        self.alias_values.get(&start).copied()
    }

    /// Where the torch_xla object `name` holds at `offset` came from, when it cannot be followed.
    pub fn opaque_origin(&self, name: &str, scope: ScopeId, offset: TextSize) -> Option<TextRange> {
        if !self.bound_names.contains(name) {
            return None;
        }
        match self.resolve(name, scope, offset) {
            Resolution::Opaque(origin) => Some(origin),
            _ => None,
        }
    }
}

/// Visit what a `def` evaluates in the *enclosing* scope: decorators,
/// parameter defaults and annotations, the return annotation.
pub fn visit_function_header<'a, V: Visitor<'a> + ?Sized>(v: &mut V, def: &'a ast::StmtFunctionDef) {
    for d in &def.decorator_list {
        v.visit_decorator(d);
    }
    for p in def.parameters.iter() {
        if let Some(default) = p.default() {
            v.visit_expr(default);
        }
        if let Some(annotation) = p.annotation() {
            v.visit_annotation(annotation);
        }
    }
    if let Some(returns) = &def.returns {
        v.visit_annotation(returns);
    }
}

/// A resolved qualified name, with the bindings it went through.
#[derive(Debug, Clone)]
pub struct Qualified {
    pub name: String,
    pub bindings: Vec<BindingId>,
}

impl Scope {
    fn new(kind: ScopeKind, parent: Option<ScopeId>) -> Scope {
        Scope { kind, parent, names: FxHashMap::default(), globals: FxHashSet::default(), star_imports: Vec::new() }
    }
}

struct Builder {
    sem: Semantic,
    scope: ScopeId,
    branches: Vec<(TextSize, u32)>,
    /// Set while binding an assignment's targets: the end of the statement.
    assigning: Option<TextSize>,
}

impl Builder {
    fn bind(&mut self, name: &str, kind: BindingKind, range: TextRange) {
        self.bind_in(self.scope, name, kind, range);
    }

    fn bind_in(&mut self, scope: ScopeId, name: &str, kind: BindingKind, range: TextRange) {
        let scope = if self.sem.scopes[scope].globals.contains(name) { 0 } else { scope };
        let id = self.sem.bindings.len();
        self.sem.by_start.insert(range.start(), id);
        // Identifiers are inline `Name`s (no allocation up to 16 bytes): this runs for every binding.
        let name = Name::new(name);
        self.sem.bound_names.insert(name.clone());
        if let BindingKind::Alias { .. } | BindingKind::Opaque { .. } = &kind {
            self.sem.imported.insert(name.clone()); // resolved like an import's name
        }
        if let BindingKind::Import { qualified } = &kind {
            self.sem.imported.insert(name.clone());
            let names = self.sem.names_of_module.entry(qualified.clone()).or_default();
            if !names.iter().any(|n| *n == name) {
                names.push(name.to_string());
                names.sort();
            }
        }
        let visible_from = self.assigning.unwrap_or(range.start());
        self.sem.bindings.push(Binding {
            name: name.clone(),
            kind,
            range,
            scope,
            branches: self.branches.clone(),
            visible_from,
        });
        self.sem.scopes[scope].names.entry(name).or_default().push(id);
    }

    fn push_scope(&mut self, kind: ScopeKind, start: TextSize) -> ScopeId {
        let id = self.sem.scopes.len();
        self.sem.scopes.push(Scope::new(kind, Some(self.scope)));
        self.sem.scope_of_node.insert(start, id);
        id
    }

    /// Run `f` inside a new scope; branch arms do not cross scope boundaries.
    fn in_scope(&mut self, kind: ScopeKind, start: TextSize, f: impl FnOnce(&mut Self)) {
        let saved_scope = self.scope;
        let saved_branches = std::mem::take(&mut self.branches);
        self.scope = self.push_scope(kind, start);
        f(self);
        self.scope = saved_scope;
        self.branches = saved_branches;
    }

    fn in_arm(&mut self, stmt: TextSize, arm: u32, body: &[Stmt]) {
        if let (Some(first), Some(last)) = (body.first(), body.last()) {
            let range = TextRange::new(first.start(), last.end());
            self.sem.arms.entry((stmt, arm)).or_default().push(range);
        }
        self.branches.push((stmt, arm));
        self.visit_body(body);
        self.branches.pop();
    }

    fn bind_target(&mut self, target: &Expr) {
        match target {
            Expr::Name(name) => self.bind(&name.id, BindingKind::Other, name.range),
            Expr::Tuple(t) => t.elts.iter().for_each(|e| self.bind_target(e)),
            Expr::List(l) => l.elts.iter().for_each(|e| self.bind_target(e)),
            Expr::Starred(s) => self.bind_target(&s.value),
            _ => {}
        }
    }

    fn bind_parameters(&mut self, parameters: &ast::Parameters) {
        for p in parameters.iter() {
            let name = p.name();
            self.bind(&name.id, BindingKind::Other, name.range);
        }
    }

    /// What an assigned value is when it is a torch_xla object rather than a value torch_xla
    /// computed: an alias of a name (`_xs`, `torch_xla.sync`, `getattr(xr, "world_size")`), or,
    /// when it cannot be followed, opaque (`getattr(xr, "f", None) or xm.g`, `a if c else b`).
    fn torch_xla_object(&self, value: &Expr) -> Option<BindingKind> {
        match value {
            Expr::Name(_) | Expr::Attribute(_) => {
                let q = self.sem.qualified_name(value, self.scope)?;
                aliased(&q.name).then_some(BindingKind::Alias { qualified: q.name })
            }
            Expr::Call(call) if matches!(&*call.func, Expr::Name(n) if n.id.as_str() == "getattr") => {
                let args = &call.arguments;
                let object = args.args.first()?;
                let inner = self.torch_xla_object(object)?;
                match (inner, &*args.args, args.keywords.is_empty()) {
                    (BindingKind::Alias { qualified }, [_, Expr::StringLiteral(attr)], true) => {
                        Some(BindingKind::Alias { qualified: format!("{qualified}.{}", attr.value.to_str()) })
                    }
                    _ => Some(BindingKind::Opaque { origin: value.range() }),
                }
            }
            Expr::BoolOp(b) => b
                .values
                .iter()
                .any(|v| self.torch_xla_object(v).is_some())
                .then_some(BindingKind::Opaque { origin: value.range() }),
            Expr::If(e) => [&e.body, &e.orelse]
                .iter()
                .any(|v| self.torch_xla_object(v).is_some())
                .then_some(BindingKind::Opaque { origin: value.range() }),
            _ => None,
        }
    }

    /// The innermost scope that is not a comprehension (where a walrus binds).
    fn walrus_scope(&self) -> ScopeId {
        let mut s = self.scope;
        while self.sem.scopes[s].kind == ScopeKind::Comprehension {
            s = self.sem.scopes[s].parent.unwrap_or(0);
        }
        s
    }

    fn visit_comprehension_scope(&mut self, start: TextSize, generators: &[ast::Comprehension], elts: &[&Expr]) {
        self.in_scope(ScopeKind::Comprehension, start, |b| {
            for g in generators {
                b.visit_expr(&g.iter);
                b.bind_target(&g.target);
                for cond in &g.ifs {
                    b.visit_expr(cond);
                }
            }
            for e in elts {
                b.visit_expr(e);
            }
        });
    }
}

/// torch_xla's 2019 package, `torch_xla_py`, under the name its modules moved to: rules
/// match the modern qualified names, so code that never moved on is still migrated.
/// (`torch_xla_py.xla_model.mark_step` → `torch_xla.core.xla_model.mark_step`.)
fn modern_module(name: &str) -> String {
    const MOVED: &[(&str, &str)] = &[
        ("xla_model", "core.xla_model"),
        ("xla_env_vars", "core.xla_env_vars"),
        ("functions", "core.functions"),
        ("data_parallel", "distributed.data_parallel"),
        ("parallel_loader", "distributed.parallel_loader"),
        ("xla_multiprocessing", "distributed.xla_multiprocessing"),
        ("xla_dist", "distributed.xla_dist"),
        ("utils", "utils.utils"),
        ("keyd_queue", "utils.keyd_queue"),
        ("metrics", "debug.metrics"),
        ("model_comparator", "debug.model_comparator"),
    ];
    let Some(rest) = name.strip_prefix("torch_xla_py") else { return name.to_string() };
    let Some(rest) = rest.strip_prefix('.') else {
        return if rest.is_empty() { "torch_xla".to_string() } else { name.to_string() };
    };
    let (module, tail) = rest.split_once('.').map_or((rest, ""), |(m, t)| (m, t));
    let moved = MOVED.iter().find(|(old, _)| *old == module).map_or(module, |(_, new)| new);
    let tail = if tail.is_empty() { String::new() } else { format!(".{tail}") };
    format!("torch_xla.{moved}{tail}")
}

impl<'a> Visitor<'a> for Builder {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Import(import) => {
                for alias in &import.names {
                    let (name, qualified) = match &alias.asname {
                        Some(asname) => (asname.id.to_string(), alias.name.id.to_string()),
                        None => {
                            let first = alias.name.id.split('.').next().unwrap_or_default();
                            (first.to_string(), first.to_string())
                        }
                    };
                    self.bind(&name, BindingKind::Import { qualified }, alias.range);
                }
            }
            Stmt::ImportFrom(import) => {
                // The run's own modules: a torch_xla name one binds is that name here too
                // (`from compat import xs`, `from .compat import xs`).
                let own = |alias: &ast::Alias| {
                    let module = import.module.as_ref()?;
                    self.sem.export(module.id.as_str(), alias.name.id.as_str())
                };
                let exports: Vec<Option<Export>> = import.names.iter().map(own).collect();
                if exports.iter().any(Option::is_some) {
                    for (alias, export) in import.names.iter().zip(exports) {
                        let name = alias.asname.as_ref().unwrap_or(&alias.name);
                        let kind = match export {
                            Some(Export::Qualified(qualified)) => BindingKind::Import { qualified },
                            Some(Export::Opaque) => BindingKind::Opaque { origin: import.range },
                            None if import.level > 0 => BindingKind::Other,
                            None => BindingKind::Import {
                                qualified: format!(
                                    "{}.{}",
                                    import.module.as_ref().map_or("", |m| m.id.as_str()),
                                    alias.name.id
                                ),
                            },
                        };
                        self.bind(&name.id, kind, alias.range);
                    }
                    return;
                }
                // Relative imports are the project's own modules, never torch_xla.
                let Some(module) = import.module.as_ref().filter(|_| import.level == 0) else {
                    for alias in &import.names {
                        let name = alias.asname.as_ref().unwrap_or(&alias.name);
                        self.bind(&name.id, BindingKind::Other, alias.range);
                    }
                    return;
                };
                for alias in &import.names {
                    if alias.name.id.as_str() == "*" {
                        let scope = self.scope;
                        self.sem.scopes[scope].star_imports.push(module.id.to_string());
                        self.sem.star_import = true;
                        continue;
                    }
                    let name = alias.asname.as_ref().unwrap_or(&alias.name);
                    let qualified = format!("{}.{}", module.id, alias.name.id);
                    self.bind(&name.id, BindingKind::Import { qualified }, alias.range);
                }
            }
            Stmt::FunctionDef(def) => {
                visit_function_header(self, def);
                self.bind(&def.name.id, BindingKind::Other, def.name.range);
                self.in_scope(ScopeKind::Function, def.range.start(), |b| {
                    b.bind_parameters(&def.parameters);
                    b.visit_body(&def.body);
                });
            }
            Stmt::ClassDef(class) => {
                for d in &class.decorator_list {
                    self.visit_decorator(d);
                }
                if let Some(arguments) = &class.arguments {
                    self.visit_arguments(arguments);
                }
                self.bind(&class.name.id, BindingKind::Other, class.name.range);
                self.in_scope(ScopeKind::Class, class.range.start(), |b| b.visit_body(&class.body));
            }
            Stmt::Global(global) => {
                let scope = self.scope;
                for name in &global.names {
                    self.sem.scopes[scope].globals.insert(name.id.clone());
                }
            }
            Stmt::Assign(assign) => {
                self.visit_expr(&assign.value);
                self.assigning = Some(assign.range.end());
                // A class attribute is read as `self.name`, where no alias is followed.
                let followed = self.sem.scopes[self.scope].kind != ScopeKind::Class;
                match (&*assign.targets, self.torch_xla_object(&assign.value).filter(|_| followed)) {
                    ([Expr::Name(target)], Some(kind)) => {
                        if let BindingKind::Alias { .. } = kind {
                            self.sem.alias_values.insert(assign.value.start(), self.sem.bindings.len());
                        }
                        self.bind(&target.id, kind, target.range);
                    }
                    _ => assign.targets.iter().for_each(|t| {
                        self.bind_target(t);
                        self.visit_expr(t);
                    }),
                }
                self.assigning = None;
            }
            Stmt::AnnAssign(assign) => {
                if let Some(value) = &assign.value {
                    self.visit_expr(value);
                }
                self.visit_annotation(&assign.annotation);
                self.assigning = Some(assign.range.end());
                self.bind_target(&assign.target);
                self.assigning = None;
            }
            Stmt::AugAssign(assign) => {
                self.visit_expr(&assign.value);
                self.assigning = Some(assign.range.end());
                self.bind_target(&assign.target);
                self.assigning = None;
            }
            Stmt::For(for_stmt) => {
                // A loop body may not run at all: its bindings are conditional.
                let start = for_stmt.range.start();
                self.visit_expr(&for_stmt.iter);
                self.branches.push((start, 0));
                self.bind_target(&for_stmt.target);
                self.branches.pop();
                self.in_arm(start, 0, &for_stmt.body);
                self.in_arm(start, 1, &for_stmt.orelse);
            }
            Stmt::While(while_stmt) => {
                let start = while_stmt.range.start();
                self.visit_expr(&while_stmt.test);
                self.in_arm(start, 0, &while_stmt.body);
                self.in_arm(start, 1, &while_stmt.orelse);
            }
            Stmt::With(with) => {
                for item in &with.items {
                    self.visit_expr(&item.context_expr);
                    if let Some(vars) = &item.optional_vars {
                        self.bind_target(vars);
                    }
                }
                self.visit_body(&with.body);
            }
            Stmt::If(if_stmt) => {
                let start = if_stmt.range.start();
                self.visit_expr(&if_stmt.test);
                self.in_arm(start, 0, &if_stmt.body);
                for (i, clause) in if_stmt.elif_else_clauses.iter().enumerate() {
                    if let Some(test) = &clause.test {
                        self.visit_expr(test);
                    }
                    self.in_arm(start, i as u32 + 1, &clause.body);
                }
            }
            Stmt::Try(try_stmt) => {
                let start = try_stmt.range.start();
                self.in_arm(start, 0, &try_stmt.body);
                for (i, handler) in try_stmt.handlers.iter().enumerate() {
                    let ast::ExceptHandler::ExceptHandler(h) = handler;
                    if let Some(t) = &h.type_ {
                        self.visit_expr(t);
                    }
                    self.branches.push((start, i as u32 + 1));
                    if let Some(name) = &h.name {
                        self.bind(&name.id, BindingKind::Other, name.range);
                    }
                    self.visit_body(&h.body);
                    self.branches.pop();
                }
                self.in_arm(start, 0, &try_stmt.orelse);
                self.visit_body(&try_stmt.finalbody);
            }
            Stmt::Match(m) => {
                self.visit_expr(&m.subject);
                let start = m.range.start();
                for (i, case) in m.cases.iter().enumerate() {
                    self.branches.push((start, i as u32));
                    self.visit_match_case(case);
                    self.branches.pop();
                }
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(_) => {}
            Expr::Named(named) => {
                self.visit_expr(&named.value);
                if let Expr::Name(name) = &*named.target {
                    let scope = self.walrus_scope();
                    self.bind_in(scope, &name.id, BindingKind::Other, name.range);
                }
            }
            Expr::Lambda(lambda) => {
                if let Some(parameters) = &lambda.parameters {
                    for p in parameters.iter() {
                        if let Some(default) = p.default() {
                            self.visit_expr(default);
                        }
                    }
                }
                self.in_scope(ScopeKind::Function, lambda.range.start(), |b| {
                    if let Some(parameters) = &lambda.parameters {
                        b.bind_parameters(parameters);
                    }
                    b.visit_expr(&lambda.body);
                });
            }
            Expr::ListComp(c) => self.visit_comprehension_scope(c.range.start(), &c.generators, &[&c.elt]),
            Expr::SetComp(c) => self.visit_comprehension_scope(c.range.start(), &c.generators, &[&c.elt]),
            Expr::Generator(c) => self.visit_comprehension_scope(c.range.start(), &c.generators, &[&c.elt]),
            Expr::DictComp(c) => {
                let mut elts: Vec<&Expr> = vec![&c.value];
                elts.extend(c.key.as_deref());
                self.visit_comprehension_scope(c.range.start(), &c.generators, &elts)
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruff_python_parser::parse_module;

    /// The qualified name of the expression `probe` at its `n`th occurrence, resolved in its scope.
    fn resolve_at(src: &str, needle: &str, n: usize) -> Option<String> {
        let parsed = parse_module(src).expect("parses");
        let sem = Semantic::build(parsed.syntax());
        let offset = src.match_indices(needle).nth(n).expect("needle present").0;
        let at = TextSize::try_from(offset).unwrap();
        // Innermost scope whose node starts before the needle (functions/lambdas are keyed by start).
        let scope = sem
            .scope_of_node
            .iter()
            .filter(|(start, _)| **start <= at)
            .max_by_key(|(start, _)| **start)
            .map(|(_, s)| *s)
            .filter(|_| src[..offset].lines().last().is_some_and(|l| l.starts_with(' ')))
            .unwrap_or(0);
        let expr = ruff_python_parser::parse_expression(needle).expect("expression");
        // Re-parse the needle at its position: resolve its root name there.
        match expr.expr() {
            Expr::Attribute(a) => {
                let Expr::Name(root) = &*a.value else { return None };
                match sem.resolve(&root.id, scope, at) {
                    Resolution::Import { binding, .. } => {
                        Some(format!("{}.{}", sem.bindings[binding].qualified()?, a.attr.id))
                    }
                    Resolution::Star(q) => Some(format!("{q}.{}", a.attr.id)),
                    _ => None,
                }
            }
            Expr::Name(n) => match sem.resolve(&n.id, scope, at) {
                Resolution::Import { binding, .. } => sem.bindings[binding].qualified().map(str::to_string),
                Resolution::Star(q) => Some(q),
                _ => None,
            },
            _ => None,
        }
    }

    #[test]
    fn torch_xla_py_names_resolve_to_their_modern_modules() {
        // End to end (imports, aliases, attribute chains): corpus/migrate/defect_r2_11_torch_xla_py.
        assert_eq!(modern_module("torch_xla_py.xla_model.mark_step"), "torch_xla.core.xla_model.mark_step");
        assert_eq!(
            modern_module("torch_xla_py.data_parallel.DataParallel"),
            "torch_xla.distributed.data_parallel.DataParallel"
        );
        assert_eq!(modern_module("torch_xla_py.utils"), "torch_xla.utils.utils");
        assert_eq!(modern_module("torch_xla_py"), "torch_xla");
        assert_eq!(modern_module("torch_xla_pyx.a"), "torch_xla_pyx.a");
        assert_eq!(modern_module("torch_xla_py.new_thing.f"), "torch_xla.new_thing.f");
        assert_eq!(modern_module("torch_xla.core.xla_model"), "torch_xla.core.xla_model");
    }

    #[test]
    fn aliases_resolve_to_qualified_names() {
        let src = "import torch_xla.core.xla_model as xm\nfrom torch_xla.core import xla_model as xm2\nfrom torch_xla.core.xla_model import mark_step as ms\nxm.mark_step\nxm2.mark_step\nms\n";
        assert_eq!(resolve_at(src, "xm.mark_step", 0).as_deref(), Some("torch_xla.core.xla_model.mark_step"));
        assert_eq!(resolve_at(src, "xm2.mark_step", 0).as_deref(), Some("torch_xla.core.xla_model.mark_step"));
        assert_eq!(resolve_at(src, "ms", 1).as_deref(), Some("torch_xla.core.xla_model.mark_step"));
    }

    #[test]
    fn a_parameter_shadows_the_import() {
        let src = "import torch_xla.core.xla_model as xm\ndef f(xm):\n    xm.mark_step\ndef g():\n    xm.mark_step\n";
        assert_eq!(resolve_at(src, "xm.mark_step", 0), None);
        assert_eq!(resolve_at(src, "xm.mark_step", 1).as_deref(), Some("torch_xla.core.xla_model.mark_step"));
    }

    #[test]
    fn try_except_fallback_is_an_alternative_not_a_shadow() {
        let src = "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\nxm.mark_step\n";
        assert_eq!(resolve_at(src, "xm.mark_step", 0).as_deref(), Some("torch_xla.core.xla_model.mark_step"));
        let rebound = "import torch_xla.core.xla_model as xm\nxm = object()\nxm.mark_step\n";
        assert_eq!(resolve_at(rebound, "xm.mark_step", 0), None);
    }

    #[test]
    fn functions_see_module_imports_made_after_them() {
        let src = "def f():\n    xm.mark_step\nimport torch_xla.core.xla_model as xm\n";
        assert_eq!(resolve_at(src, "xm.mark_step", 0).as_deref(), Some("torch_xla.core.xla_model.mark_step"));
        let module_level = "xm.mark_step\nimport torch_xla.core.xla_model as xm\n";
        assert_eq!(resolve_at(module_level, "xm.mark_step", 0), None);
    }

    #[test]
    fn an_assignment_reads_the_previous_binding() {
        let src = "import torch_xla.core.xla_model as xm\nxm = xm.mark_step\n";
        assert_eq!(resolve_at(src, "xm.mark_step", 0).as_deref(), Some("torch_xla.core.xla_model.mark_step"));
    }

    #[test]
    fn aliases_of_torch_xla_names_are_followed() {
        let src = "import torch_xla.distributed.spmd as _xs\nimport torch_xla.runtime as xr\nxs = _xs\nws = getattr(xr, \"world_size\")\nxs.mark_sharding\nws\n";
        assert_eq!(resolve_at(src, "xs.mark_sharding", 0).as_deref(), Some("torch_xla.distributed.spmd.mark_sharding"));
        assert_eq!(resolve_at(src, "ws", 1).as_deref(), Some("torch_xla.runtime.world_size"));
        // Only torch_xla's names: any other assignment stays a variable.
        let other = "import torch\nF = torch.nn.functional\nF.softmax\n";
        assert_eq!(resolve_at(other, "F.softmax", 0), None);
    }

    #[test]
    fn a_class_attribute_is_no_alias() {
        let src = "import torch_xla.core.xla_model as xm\nclass T:\n    sync = xm.mark_step\n";
        let parsed = parse_module(src).expect("parses");
        let sem = Semantic::build(parsed.syntax());
        assert!(sem.bindings.iter().all(|b| !b.is_alias()));
    }

    #[test]
    fn what_cannot_be_followed_is_opaque() {
        let src = "import torch_xla.runtime as xr\nimport torch_xla.core.xla_model as xm\nf = getattr(xr, \"global_ordinal\", None) or xm.get_ordinal\nf\n";
        let parsed = parse_module(src).expect("parses");
        let sem = Semantic::build(parsed.syntax());
        let at = TextSize::try_from(src.rfind('f').unwrap()).unwrap();
        assert!(matches!(sem.resolve("f", 0, at), Resolution::Opaque(_)));
        // An alias in one arm and another value in the other: calling it may not call torch_xla.
        let arms = "import torch_xla.runtime as xr\nif new:\n    f = xr.world_size\nelse:\n    f = mine\nf\n";
        let parsed = parse_module(arms).expect("parses");
        let sem = Semantic::build(parsed.syntax());
        let at = TextSize::try_from(arms.rfind('f').unwrap()).unwrap();
        assert!(matches!(sem.resolve("f", 0, at), Resolution::Opaque(_)));
    }

    #[test]
    fn star_imports_supply_unbound_names() {
        let src = "from torch_xla.core.xla_model import *\nmark_step\n";
        assert_eq!(resolve_at(src, "mark_step", 0).as_deref(), Some("torch_xla.core.xla_model.mark_step"));
    }

    #[test]
    fn builtins_are_not_supplied_by_star_imports() {
        // torch_xla/distributed/spmd/debugging.py: `raise ValueError` after a star import.
        let src = "from torch_xla.distributed.spmd.xla_sharding import *\nValueError\n";
        assert_eq!(resolve_at(src, "ValueError", 0), None);
        assert!(super::BUILTINS.is_sorted(), "binary search needs a sorted list");
    }
}
