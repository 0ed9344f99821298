//! torch_xla's device loaders (`MpDeviceLoader`, `ParallelLoader`) become the
//! plain `DataLoader`, with each batch moved to the device at the top of the
//! loop that consumes it, the idiom TorchTPU's documentation gives. The fix
//! edits the loader and every loop over it, so it is only offered when all of
//! them can be seen: the loader is iterated right where it is built, or held in
//! a name that the same function only iterates (or takes the `len` of) or passes
//! to a function of this file that only iterates it, or held in an attribute of
//! `self` that the class's methods only iterate (torch_xla's example trainers keep
//! `self.train_device_loader`), and so do the methods of its subclasses in the file
//! (a trainer whose subclass owns the loop), and nothing else in the run touches.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};

use super::Checker;
use crate::migrate::fix::Edit;
use crate::migrate::semantic::ScopeId;
use crate::source::{indentation_at, line_start, newline_of};

/// A loop over a loader, the name it iterates, and the scope of the function of
/// this file the loader was passed to (`None`: the function that builds it).
type LoopOver<'a> = (Loop<'a>, &'a str, Option<ScopeId>);

/// A loop that consumes a loader: the expression yielding its batches (inside
/// `enumerate(…)` when wrapped), the target receiving each batch, the body.
struct Loop<'a> {
    batches: &'a Expr,
    target: &'a Expr,
    body: &'a [Stmt],
}

impl<'a> Checker<'a> {
    /// The edits that replace the loader built by `call` with `loader` (the
    /// plain DataLoader's text) and move every batch to the device in each loop
    /// over it. `device` is the device the loader was built for, if named.
    pub(super) fn device_loader_edits(
        &self,
        call: &'a ExprCall,
        loader: &str,
        device: Option<&str>,
        torch: &str,
    ) -> Result<Vec<Edit>, String> {
        let (_, stmt) = *self.stmt.last().ok_or("not in a statement")?;
        let unnamed = || "the device the batches go to is not named".to_string();
        let mut edits = Vec::new();
        match stmt {
            // `for batch in MpDeviceLoader(…)`, `for batch in ParallelLoader(…).per_device_loader(d)`
            Stmt::For(f) => {
                let l = loop_of(f)?;
                let device = match per_device_loader(l.batches) {
                    Some((receiver, d)) if receiver.range() == call.range() => self.src(d.range()).to_string(),
                    None if l.batches.range() == call.range() => device.ok_or_else(unnamed)?.to_string(),
                    _ => return Err("the loader is not what the loop iterates".into()),
                };
                edits.push(Edit::replace(l.batches.range(), loader));
                edits.push(self.move_batch(&l, &device, torch)?);
            }
            // `train_loader = MpDeviceLoader(…)`, then loops over `train_loader`
            // `self.train_device_loader = MpDeviceLoader(…)` in a method, iterated by the others
            Stmt::Assign(a)
                if a.value.range() == call.range() && a.targets.len() == 1 && a.targets[0].is_attribute_expr() =>
            {
                edits.push(Edit::replace(call.range(), loader));
                let Expr::Attribute(holder) = &a.targets[0] else { unreachable!("an attribute") };
                let device = device.ok_or_else(unnamed)?;
                // `self.device` means the same in every method that iterates the loader (they
                // name `self` alike: `attribute_loops` checks), a module global everywhere.
                for l in self.attribute_loops(holder, device)? {
                    let device = match per_device_loader(l.batches) {
                        Some((_, d)) => self.src(d.range()),
                        None => device,
                    };
                    edits.push(self.move_batch(&l, device, torch)?);
                }
            }
            Stmt::Assign(a) if a.value.range() == call.range() && a.targets.len() == 1 => {
                let Expr::Name(holder) = &a.targets[0] else { return Err("the loader is not held in a name".into()) };
                edits.push(Edit::replace(call.range(), loader));
                for (l, name, callee) in self.loops_over(holder)? {
                    let device = match per_device_loader(l.batches) {
                        Some((_, d)) => {
                            edits.push(Edit::replace(l.batches.range(), name));
                            self.src(d.range()).to_string()
                        }
                        None => {
                            let device = device.ok_or_else(unnamed)?;
                            if let Some(scope) = callee {
                                self.visible_in(device, a.range.start(), scope, l.body)?;
                            }
                            device.to_string()
                        }
                    };
                    edits.push(self.move_batch(&l, &device, torch)?);
                }
            }
            _ => return Err("the loader is not iterated by a `for` loop in this function".into()),
        }
        Ok(edits)
    }

    /// Every loop over `holder` in the enclosing function, and in the functions of
    /// this file it is passed to (`train_loop_fn(loader, epoch)`): each loop with
    /// the name it iterates and, for a followed function, that function's scope.
    /// Any other use (but `len(holder)`) makes the loader unconvertible.
    fn loops_over(&self, holder: &'a ast::ExprName) -> Result<Vec<LoopOver<'a>>, String> {
        let body = *self.scope_body.last().ok_or("no enclosing body")?;
        let mut uses = Uses::new(holder.id.as_str());
        uses.visit_body(body);
        if let Some(other) = uses.other {
            let line = self.src(other);
            return Err(format!("`{}` is used outside a `for` loop over it (`{line}`)", holder.id));
        }
        let mut loops: Vec<LoopOver<'a>> = uses.loops.into_iter().map(|l| (l, holder.id.as_str(), None)).collect();
        for (call, index) in uses.passed {
            let (def, scope) = self.local_function(call).ok_or_else(|| {
                format!(
                    "`{}` is passed to `{}`, which is not a function of this file",
                    holder.id,
                    self.src(call.func.range())
                )
            })?;
            let (param, inner) = self.parameter_loops(def, index, &holder.id)?;
            loops.extend(inner.into_iter().map(|l| (l, param, Some(scope))));
        }
        if loops.is_empty() {
            return Err(format!("no `for` loop over `{}` in this function", holder.id));
        }
        Ok(loops)
    }

    /// The loops over the parameter at `position` of `def`, which receives the loader `holder`:
    /// the parameter only iterated (or measured with `len`), never used otherwise or passed on.
    fn parameter_loops(
        &self,
        def: &'a ast::StmtFunctionDef,
        position: usize,
        holder: &str,
    ) -> Result<(&'a str, Vec<Loop<'a>>), String> {
        let param = def
            .parameters
            .posonlyargs
            .iter()
            .chain(def.parameters.args.iter())
            .nth(position)
            .ok_or_else(|| format!("`{}` takes no parameter for `{holder}`", def.name.id))?
            .name()
            .id
            .as_str();
        let mut inner = Uses::new(param);
        inner.visit_body(&def.body);
        if let Some(other) = inner.other.or(inner.passed.first().map(|(c, _)| c.range())) {
            return Err(format!(
                "`{param}` (the loader `{holder}` passed to `{}`) is used outside a `for` loop over it (`{}`)",
                def.name.id,
                self.src(other)
            ));
        }
        Ok((param, inner.loops))
    }

    /// The `self` of `self.loader`.
    fn holder_base(&self, holder: &'a ast::ExprAttribute) -> Result<&'a str, String> {
        match &*holder.value {
            Expr::Name(base) => Ok(base.id.as_str()),
            _ => Err("the loader is not held in an attribute of `self`".into()),
        }
    }

    /// Every loop over `self.<attr>` in the methods of the class whose method builds it, and of
    /// the classes of this file that subclass it (a trainer's subclass that overrides the
    /// training loop iterates the same attribute). The device must be something every such
    /// method can name (`self.device` where they call `self` alike, a module global), nothing
    /// else in the file may touch the attribute, and no class of another file of the run may
    /// subclass the class and iterate it there (its batches would stay on the CPU).
    fn attribute_loops(&self, holder: &'a ast::ExprAttribute, device: &str) -> Result<Vec<Loop<'a>>, String> {
        let base = self.holder_base(holder)?;
        let attr = holder.attr.id.as_str();
        let class = enclosing_class(&self.module.body, holder.start())
            .ok_or("the loader is held in an attribute outside a class")?;
        let device_is_self = device.strip_prefix(base).is_some_and(|rest| rest.starts_with('.'));
        let device_is_global = self.sem.unique_binding(device, 0, holder.start()).is_some();
        if !device_is_self && !device_is_global {
            return Err(format!("the device `{device}` is not visible in the methods that iterate `{base}.{attr}`"));
        }
        if let Some(at) = self.run.and_then(|r| r.subclass_loading(class.name.id.as_str(), attr)) {
            return Err(format!(
                "`{at}` subclasses `{}` and uses `.{attr}` there, in another file: converted here alone, its loop \
                 would get the batches on the CPU; move each batch to the device in both (`{base}.{attr}` then \
                 holds the plain loader)",
                class.name.id
            ));
        }
        let mut loops = Vec::new();
        let mut accounted: Vec<TextRange> = Vec::new();
        for lineage in family(&self.module.body, class) {
            let own = lineage[0];
            for stmt in &own.body {
                let Stmt::FunctionDef(def) = stmt else { continue };
                let Some(this) = def.parameters.posonlyargs.iter().chain(def.parameters.args.iter()).next() else {
                    continue;
                };
                let this = this.name().id.as_str();
                let mut uses = Uses::attribute(this, attr);
                uses.visit_body(&def.body);
                if let Some(other) = uses.other {
                    return Err(format!(
                        "`{this}.{attr}` is used outside a `for` loop over it (`{}`)",
                        self.src(other)
                    ));
                }
                if !uses.loops.is_empty() && device_is_self && this != base {
                    return Err(format!(
                        "`{}` names `self` differently from the method that builds the loader",
                        def.name.id
                    ));
                }
                accounted.extend(uses.accounted);
                loops.extend(uses.loops);
                // `self.train_loop_fn(self.train_device_loader, epoch)`: followed into that method,
                // the one `self` has: the class's own, else the nearest of the classes it derives from.
                for (call, index) in uses.passed {
                    let Expr::Attribute(m) = &*call.func else { continue };
                    let method = lineage.iter().find_map(|c| {
                        c.body.iter().find_map(|s| match s {
                            Stmt::FunctionDef(f) if f.name.id == m.attr.id => Some(f),
                            _ => None,
                        })
                    });
                    let method =
                        method.ok_or_else(|| format!("`{}` is not a method of this class", self.src(m.range())))?;
                    let own = method.parameters.posonlyargs.iter().chain(method.parameters.args.iter()).next();
                    if device_is_self && own.is_none_or(|p| p.name().id.as_str() != base) {
                        return Err(format!(
                            "`{}` names `self` differently from the method that builds the loader",
                            method.name.id
                        ));
                    }
                    // The call's arguments start after `self`.
                    let (_, inner) = self.parameter_loops(method, index + 1, &format!("{this}.{attr}"))?;
                    loops.extend(inner);
                }
            }
        }
        let mut everywhere = AttributeLoads { attr, found: Vec::new() };
        everywhere.visit_body(&self.module.body);
        if let Some(other) = everywhere.found.iter().find(|r| !accounted.contains(r)) {
            return Err(format!("`.{attr}` is used outside the class's loops over it (`{}`)", self.src(*other)));
        }
        if loops.is_empty() {
            return Err(format!("no `for` loop over `{base}.{attr}` in the class's methods"));
        }
        // A method a subclass overrides is visited in both: its loops are edited once.
        loops.sort_by_key(|l| l.body.first().map(Ranged::start));
        loops.dedup_by_key(|l| l.body.first().map(Ranged::start));
        Ok(loops)
    }

    /// The function of this file a call calls (by its name), and its scope.
    fn local_function(&self, call: &ExprCall) -> Option<(&'a ast::StmtFunctionDef, ScopeId)> {
        let Expr::Name(name) = &*call.func else { return None };
        let def = self.local_def(name)?;
        Some((def, self.sem.scope_of_node(def.range.start())?))
    }

    /// A device named where the loader is built must mean the same thing in the
    /// function whose loops now move the batches (a closure variable, a global).
    fn visible_in(&self, device: &str, at: TextSize, scope: ScopeId, body: &[Stmt]) -> Result<(), String> {
        let here = self.sem.unique_binding(device, self.scope, at);
        let there = body.first().and_then(|s| self.sem.unique_binding(device, scope, s.start()));
        if here.is_some() && here == there {
            Ok(())
        } else {
            Err(format!("the device `{device}` is not visible where the loader's batches are used"))
        }
    }

    /// `T = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(D), T)`
    /// first thing in the loop body: moves every tensor of the batch, whatever
    /// its structure (a tensor, a tuple, a dict), as the device loader did.
    fn move_batch(&self, l: &Loop<'a>, device: &str, torch: &str) -> Result<Edit, String> {
        let first = l.body.first().ok_or("empty loop body")?;
        let at = line_start(self.text, first.start().into());
        if !self.text[at..usize::from(first.start())].trim().is_empty() {
            return Err("the loop body shares its line with the `for`".into());
        }
        let target = self.src(l.target.range());
        let value = match l.target {
            Expr::Tuple(t) if !t.parenthesized => format!("({target})"),
            _ => target.to_string(),
        };
        let indent = indentation_at(self.text, first.start().into());
        let newline = newline_of(self.text);
        let statement = format!(
            "{indent}{target} = {torch}.utils._pytree.tree_map_only({torch}.Tensor, lambda t: t.to({device}), {value}){newline}"
        );
        Ok(Edit::insert(TextSize::try_from(at).map_err(|e| e.to_string())?, statement))
    }
}

/// The loops over one name (or `self.<attr>`) in a function body (not in nested functions or
/// classes, which have their own names), and the first other use of it.
struct Uses<'a> {
    name: &'a str,
    /// `Some(attr)`: the holder is `<name>.<attr>`, and it is never followed into calls.
    attr: Option<&'a str>,
    loops: Vec<Loop<'a>>,
    /// Calls the name is passed to as a positional argument, with its position.
    passed: Vec<(&'a ExprCall, usize)>,
    other: Option<TextRange>,
    /// The holder's uses that are loops over it or its `len`.
    accounted: Vec<TextRange>,
}

impl<'a> Uses<'a> {
    fn new(name: &'a str) -> Self {
        Uses { name, attr: None, loops: Vec::new(), passed: Vec::new(), other: None, accounted: Vec::new() }
    }

    fn attribute(base: &'a str, attr: &'a str) -> Self {
        Uses { attr: Some(attr), ..Uses::new(base) }
    }

    fn is_holder(&self, e: &Expr) -> bool {
        let is_name =
            |e: &Expr| matches!(e, Expr::Name(n) if n.id.as_str() == self.name && n.ctx == ast::ExprContext::Load);
        match self.attr {
            None => is_name(e),
            Some(attr) => matches!(e, Expr::Attribute(a)
                if a.attr.id.as_str() == attr && a.ctx == ast::ExprContext::Load && is_name(&a.value)),
        }
    }
}

/// Every load of `.<attr>` in the file.
struct AttributeLoads<'a> {
    attr: &'a str,
    found: Vec<TextRange>,
}

impl<'a> Visitor<'a> for AttributeLoads<'a> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Attribute(a) = expr
            && a.attr.id.as_str() == self.attr
            && a.ctx == ast::ExprContext::Load
        {
            self.found.push(a.range());
        }
        visitor::walk_expr(self, expr);
    }
}

/// `class` and every class of the module that derives from it, directly or through another
/// (named by its bare name in the bases): each as its lineage, the class first, then the classes
/// it derives from up to `class`.
fn family<'a>(body: &'a [Stmt], class: &'a ast::StmtClassDef) -> Vec<Vec<&'a ast::StmtClassDef>> {
    let mut all = Vec::new();
    Classes(&mut all).visit_body(body);
    let mut lineages = vec![vec![class]];
    let mut i = 0;
    while i < lineages.len() {
        let parent = lineages[i][0];
        for c in &all {
            let derives = c.bases().iter().any(|b| matches!(b, Expr::Name(n) if n.id == parent.name.id));
            if derives && !lineages.iter().any(|l| std::ptr::eq(l[0], *c)) {
                let mut lineage = vec![*c];
                lineage.extend(lineages[i].iter().copied());
                lineages.push(lineage);
            }
        }
        i += 1;
    }
    lineages
}

/// Every class defined in a body, nested ones too.
struct Classes<'r, 'a>(&'r mut Vec<&'a ast::StmtClassDef>);

impl<'a> Visitor<'a> for Classes<'_, 'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::ClassDef(c) = stmt {
            self.0.push(c);
        }
        visitor::walk_stmt(self, stmt);
    }
}

/// The innermost class whose body holds `at`.
fn enclosing_class(body: &[Stmt], at: TextSize) -> Option<&ast::StmtClassDef> {
    let stmt = body.iter().find(|s| s.range().contains(at))?;
    let inner = |b| enclosing_class(b, at);
    match stmt {
        Stmt::ClassDef(c) => inner(&c.body).or(Some(c)),
        Stmt::FunctionDef(f) => inner(&f.body),
        Stmt::If(i) => inner(&i.body).or_else(|| i.elif_else_clauses.iter().find_map(|c| inner(&c.body))),
        Stmt::Try(t) => inner(&t.body).or_else(|| inner(&t.orelse)),
        _ => None,
    }
}

impl<'a> Visitor<'a> for Uses<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            // `loader = itertools.islice(loader, n)`: the same batches, fewer of them.
            Stmt::Assign(a)
                if self.attr.is_none()
                    && matches!(a.targets.as_slice(), [Expr::Name(t)] if t.id.as_str() == self.name)
                    && matches!(&*a.value, Expr::Call(c)
                        if (matches!(&*c.func, Expr::Name(f) if f.id.as_str() == "islice")
                            || matches!(&*c.func, Expr::Attribute(f) if f.attr.id.as_str() == "islice"))
                        && c.arguments.args.first().is_some_and(|first| self.is_holder(first))) =>
            {
                let Expr::Call(c) = &*a.value else { unreachable!("a call") };
                c.arguments.args.iter().skip(1).for_each(|arg| self.visit_expr(arg));
            }
            Stmt::For(f) => match loop_of(f) {
                Ok(l)
                    if self.is_holder(l.batches)
                        || per_device_loader(l.batches).is_some_and(|(r, _)| self.is_holder(r)) =>
                {
                    let holder = per_device_loader(l.batches).map_or(l.batches, |(r, _)| r);
                    self.accounted.push(holder.range());
                    // The loop itself is ours; its body may still use the name otherwise.
                    self.visit_expr(&f.target);
                    self.visit_body(&f.body);
                    self.visit_body(&f.orelse);
                    self.loops.push(l);
                }
                _ => visitor::walk_stmt(self, stmt),
            },
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            // `len(loader)`: the DataLoader has the same length.
            Expr::Call(c)
                if matches!(&*c.func, Expr::Name(n) if n.id.as_str() == "len")
                    && c.arguments.args.len() == 1
                    && self.is_holder(&c.arguments.args[0]) =>
            {
                self.accounted.push(c.arguments.args[0].range());
            }
            // `train_loop_fn(loader, epoch)` (`self.train_loop_fn(self.loader, epoch)` for an
            // attribute): followed into that function.
            Expr::Call(c)
                if match (&*c.func, self.attr) {
                    (Expr::Name(_), None) => true,
                    (Expr::Attribute(m), Some(_)) => matches!(&*m.value, Expr::Name(n) if n.id.as_str() == self.name),
                    _ => false,
                } && c.arguments.args.iter().any(|a| self.is_holder(a)) =>
            {
                for (index, arg) in c.arguments.args.iter().enumerate() {
                    if self.is_holder(arg) {
                        self.accounted.push(arg.range());
                        self.passed.push((c, index));
                    } else {
                        self.visit_expr(arg);
                    }
                }
                c.arguments.keywords.iter().for_each(|k| self.visit_expr(&k.value));
            }
            e if self.is_holder(e) => {
                self.other.get_or_insert(e.range());
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}

/// `for T in X` or `for i, T in enumerate(X)`: X and T.
fn loop_of(f: &ast::StmtFor) -> Result<Loop<'_>, String> {
    let (batches, target) = match &*f.iter {
        Expr::Call(c) if matches!(&*c.func, Expr::Name(n) if n.id.as_str() == "enumerate") => {
            let inner = c.arguments.args.first().ok_or("enumerate() without an argument")?;
            match &*f.target {
                Expr::Tuple(t) if t.elts.len() == 2 => (inner, &t.elts[1]),
                _ => return Err("the loop's target is not `index, batch`".into()),
            }
        }
        iter => (iter, &*f.target),
    };
    Ok(Loop { batches, target, body: &f.body })
}

/// `x.per_device_loader(d)` → `(x, d)`.
fn per_device_loader(e: &Expr) -> Option<(&Expr, &Expr)> {
    let Expr::Call(c) = e else { return None };
    let Expr::Attribute(a) = &*c.func else { return None };
    (a.attr.id.as_str() == "per_device_loader" && c.arguments.args.len() == 1)
        .then(|| (&*a.value, &c.arguments.args[0]))
}

/// Where a class of `module` derives from a class named `class` that the module does not define
/// itself (`class Mine(lib.Trainer)`, the class imported), and uses `.attr` in its body.
pub fn subclass_loading(module: &ast::ModModule, class: &str, attr: &str) -> Option<TextSize> {
    let mut all = Vec::new();
    Classes(&mut all).visit_body(&module.body);
    if all.iter().any(|c| c.name.id.as_str() == class) {
        return None;
    }
    let named = |b: &Expr| match b {
        Expr::Name(n) => n.id.as_str() == class,
        Expr::Attribute(a) => a.attr.id.as_str() == class,
        _ => false,
    };
    all.into_iter().find_map(|c| {
        let mut loads = AttributeLoads { attr, found: Vec::new() };
        loads.visit_body(&c.body);
        (c.bases().iter().any(named) && !loads.found.is_empty()).then(|| c.range.start())
    })
}
