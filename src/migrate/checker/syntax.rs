//! Questions about one statement or call that need nothing but its syntax: the checker's
//! walk asks them before any rule runs, so they sit below every rule module.

use rustc_hash::FxHashSet;

use ruff_python_ast::{self as ast, Expr, Stmt};

/// `except ImportError` (or broader) handlers: the `try` probes for a module.
pub(super) fn catches_import_error(t: &ast::StmtTry) -> bool {
    let catches = |e: &Expr| match e {
        Expr::Name(n) => matches!(n.id.as_str(), "ImportError" | "ModuleNotFoundError" | "Exception" | "BaseException"),
        _ => false,
    };
    t.handlers.iter().any(|h| {
        let ast::ExceptHandler::ExceptHandler(h) = h;
        match h.type_.as_deref() {
            None => true,
            Some(Expr::Tuple(t)) => t.elts.iter().any(catches),
            Some(e) => catches(e),
        }
    })
}

/// `try: import x` whose handlers only `pass`, reset the imported names, or import another
/// module under them (`except ImportError: import torch_xla.experimental.xla_sharding as xs`,
/// a version shim's older spelling).
pub(super) fn try_only_guards_imports(t: &ast::StmtTry) -> bool {
    if !t.orelse.is_empty() || !t.finalbody.is_empty() {
        return false;
    }
    let mut bound: FxHashSet<&str> = FxHashSet::default();
    for stmt in &t.body {
        match stmt {
            // `xs = _xs`: another name for what the body imported.
            Stmt::Assign(a)
                if matches!(&*a.targets, [Expr::Name(_)]) && root_name(&a.value).is_some_and(|r| bound.contains(r)) =>
            {
                bound.extend(a.targets.iter().filter_map(|t| Some(t.as_name_expr()?.id.as_str())));
            }
            Stmt::Import(i) => bound.extend(i.names.iter().map(|a| {
                a.asname.as_ref().map_or_else(|| a.name.id.split('.').next().unwrap_or_default(), |n| n.id.as_str())
            })),
            Stmt::ImportFrom(i) => {
                bound.extend(i.names.iter().map(|a| a.asname.as_ref().unwrap_or(&a.name).id.as_str()))
            }
            _ => return false,
        }
    }
    t.handlers.iter().all(|h| {
        let ast::ExceptHandler::ExceptHandler(h) = h;
        h.body.iter().all(|s| match s {
            Stmt::Pass(_) => true,
            Stmt::Expr(e) => matches!(*e.value, Expr::EllipsisLiteral(_)),
            Stmt::Assign(a) => {
                a.targets.iter().all(|t| matches!(t, Expr::Name(n) if bound.contains(n.id.as_str())))
                    && matches!(*a.value, Expr::NoneLiteral(_) | Expr::BooleanLiteral(_))
            }
            Stmt::Import(i) => i.names.iter().all(|a| a.asname.as_ref().is_some_and(|n| bound.contains(n.id.as_str()))),
            Stmt::ImportFrom(i) => {
                i.names.iter().all(|a| bound.contains(a.asname.as_ref().unwrap_or(&a.name).id.as_str()))
            }
            _ => false,
        })
    })
}

/// The name an attribute chain starts from (`xs` of `xs.mark_sharding`).
fn root_name(e: &Expr) -> Option<&str> {
    match e {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => root_name(&a.value),
        _ => None,
    }
}

/// Names a `try` statement assigns (`_HAS_XLA = True` in its body or handlers).
pub(super) fn assigned_names(t: &ast::StmtTry) -> Vec<&str> {
    let handlers = t.handlers.iter().flat_map(|h| {
        let ast::ExceptHandler::ExceptHandler(h) = h;
        h.body.iter()
    });
    t.body
        .iter()
        .chain(handlers)
        .chain(t.orelse.iter())
        .filter_map(|s| s.as_assign_stmt())
        .flat_map(|a| a.targets.iter())
        .filter_map(|target| target.as_name_expr().map(|n| n.id.as_str()))
        .collect()
}

/// `print(...)` and `logger.info(...)`-style calls only show a value.
pub(super) fn is_display(func: &Expr) -> bool {
    match func {
        Expr::Name(n) => n.id.as_str() == "print",
        Expr::Attribute(a) => {
            matches!(a.attr.id.as_str(), "debug" | "info" | "warning" | "warn" | "error" | "critical" | "master_print")
        }
        _ => false,
    }
}
