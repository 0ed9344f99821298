//! Values compared with torch_xla's spellings: a device kind (`"TPU"`) that
//! becomes TorchTPU's (`"tpu"`) must take the literals it is compared with
//! along, wherever the comparison is, or the branch silently dies.

use std::collections::BTreeMap;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, CmpOp, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

use super::Checker;
use super::syntax::is_display;
use crate::migrate::fix::Edit;
use crate::migrate::semantic::{ScopeId, Semantic};

impl<'a> Checker<'a> {
    /// With a `compare` table, the edits that carry the comparisons of the
    /// matched value over: where it is an operand (`hw() == "TPU"`), or where
    /// it is assigned to a name and that name is compared (`hw = hw(); if hw
    /// in ("TPU", "NEURON")`). A comparison that could never hold on TorchTPU,
    /// or a use of the name that may be compared out of sight, blocks the fix.
    pub(super) fn compared_literals(
        &self,
        expr: &Expr,
        table: &BTreeMap<String, Option<String>>,
    ) -> Result<Vec<Edit>, String> {
        if table.is_empty() {
            return Ok(vec![]);
        }
        if let Some(cmp) = self.compare.last().filter(|cmp| operands(cmp).any(|o| o.range() == expr.range())) {
            return self.carry_comparison(cmp, expr.range(), table);
        }
        let Some((stmt, _)) = self.assigned_by(expr) else { return Ok(vec![]) };
        let Stmt::Assign(assign) = stmt else { return Ok(vec![]) };
        let Expr::Name(target) = &assign.targets[0] else { return Ok(vec![]) };
        let binding = self.sem.binding_at(target.range.start());
        let body = *self.scope_body.last().ok_or("no enclosing body")?;
        let mut uses = NameUses::new(self.sem, target.id.as_str(), stmt.range(), self.scope);
        uses.visit_body(body);
        let mut edits = Vec::new();
        for (name, scope, parent) in uses.found {
            match self.sem.unique_binding(&target.id, scope, name.start()) {
                Some(b) if Some(b) == binding => {}
                // Reassigned before this use, or a nested function's own name: another value.
                Some(_) => continue,
                None => {
                    return Err(format!(
                        "`{}` may hold another value here, so its comparisons cannot be followed",
                        target.id
                    ));
                }
            }
            match parent {
                Parent::Compare(cmp) => edits.extend(self.carry_comparison(cmp, name, table)?),
                Parent::Shown => {}
                Parent::Nested => {
                    return Err(format!("`{}` is used in a nested function: carry its comparisons by hand", target.id));
                }
                Parent::Other(range) => {
                    return Err(format!(
                        "`{}` is used where it may be compared out of sight (`{}`): compare with lower-case `\"tpu\"` there",
                        target.id,
                        super::shown(self.src(range))
                    ));
                }
            }
        }
        Ok(edits)
    }

    /// The literal edits for one comparison with the matched value as an operand.
    fn carry_comparison(
        &self,
        cmp: &ast::ExprCompare,
        operand: TextRange,
        table: &BTreeMap<String, Option<String>>,
    ) -> Result<Vec<Edit>, String> {
        let membership = cmp.ops.iter().all(|op| matches!(op, CmpOp::In | CmpOp::NotIn));
        let mut edits = Vec::new();
        for other in operands(cmp).filter(|o| o.range() != operand) {
            match other {
                // `hw == "NEURON"`: a kind the new API never returns stays, and the comparison
                // is simply false, as it is on TorchTPU.
                Expr::StringLiteral(lit) => edits.extend(self.carried(lit, table).ok_or_else(|| never(lit))?),
                Expr::Tuple(ast::ExprTuple { elts, .. })
                | Expr::List(ast::ExprList { elts, .. })
                | Expr::Set(ast::ExprSet { elts, .. })
                    if membership =>
                {
                    // `hw in ("TPU", "NEURON")`: a kind TorchTPU never reports is a dead
                    // alternative; one nothing knows (a typo) is a person's to judge.
                    let literals: Vec<&ast::ExprStringLiteral> =
                        elts.iter().filter_map(Expr::as_string_literal_expr).collect();
                    let carried: Vec<Option<Edit>> =
                        literals.iter().filter_map(|lit| self.carried(lit, table)).collect();
                    if let (true, Some(lit)) = (carried.is_empty(), literals.first()) {
                        return Err(never(lit));
                    }
                    edits.extend(carried.into_iter().flatten());
                }
                Expr::NoneLiteral(_) => {
                    return Err("it is compared with `None`, and TorchTPU's device kind is never `None`: test \
                                `torch.accelerator.current_accelerator() is not None` instead"
                        .into());
                }
                _ => {}
            }
        }
        Ok(edits)
    }

    /// The edit carrying one compared literal over (`None`: it stays, never matching);
    /// `None` outside when the table does not know it.
    fn carried(&self, lit: &ast::ExprStringLiteral, table: &BTreeMap<String, Option<String>>) -> Option<Option<Edit>> {
        let new = table.get(lit.value.to_str())?.as_ref();
        let quote = if self.src(lit.range).ends_with('\'') { '\'' } else { '"' };
        Some(new.map(|new| Edit::replace(lit.range, format!("{quote}{new}{quote}"))))
    }
}

fn never(lit: &ast::ExprStringLiteral) -> String {
    format!(
        "it is compared with {:?}, a value xla2tpu cannot carry over: check that comparison by hand",
        lit.value.to_str()
    )
}

fn operands(cmp: &ast::ExprCompare) -> impl Iterator<Item = &Expr> {
    std::iter::once(&*cmp.left).chain(cmp.comparators.iter())
}

/// Where a use of the name sits.
enum Parent<'a> {
    /// A direct operand of this comparison.
    Compare(&'a ast::ExprCompare),
    /// Only shown to a person: an f-string field, `print(...)`, a logger call.
    Shown,
    /// Inside a nested function or class.
    Nested,
    /// Anything else (passed on, returned, stored): enclosing expression's range.
    Other(TextRange),
}

/// The loads of one name after its assignment, in a function body (or the
/// module), with the scope each is resolved in.
struct NameUses<'a> {
    sem: &'a Semantic,
    name: &'a str,
    after: TextRange,
    scope: ScopeId,
    found: Vec<(TextRange, ScopeId, Parent<'a>)>,
    parents: Vec<&'a Expr>,
    nested: usize,
}

impl<'a> NameUses<'a> {
    fn new(sem: &'a Semantic, name: &'a str, after: TextRange, scope: ScopeId) -> Self {
        NameUses { sem, name, after, scope, found: Vec::new(), parents: Vec::new(), nested: 0 }
    }

    fn classify(&self, name: &Expr) -> Parent<'a> {
        if self.nested > 0 {
            return Parent::Nested;
        }
        match self.parents.last() {
            Some(Expr::Compare(cmp)) if operands(cmp).any(|o| o.range() == name.range()) => Parent::Compare(cmp),
            Some(Expr::FString(_)) => Parent::Shown,
            Some(Expr::Call(call)) if is_display(&call.func) => Parent::Shown,
            Some(parent) => Parent::Other(parent.range()),
            None => Parent::Other(name.range()),
        }
    }
}

impl<'a> Visitor<'a> for NameUses<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {
                let saved = self.scope;
                self.scope = self.sem.scope_of_node(stmt.start()).unwrap_or(saved);
                self.nested += 1;
                visitor::walk_stmt(self, stmt);
                self.nested -= 1;
                self.scope = saved;
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Name(n) = expr {
            if n.id.as_str() == self.name && n.ctx == ast::ExprContext::Load && n.start() >= self.after.end() {
                self.found.push((n.range, self.scope, self.classify(expr)));
            }
            return;
        }
        let lambda = matches!(expr, Expr::Lambda(_));
        let saved = self.scope;
        if lambda {
            self.scope = self.sem.scope_of_node(expr.start()).unwrap_or(saved);
        }
        self.nested += usize::from(lambda);
        // An f-string's fields are nested in interpolation elements, not expressions:
        // remember the f-string itself as the parent of what it shows.
        self.parents.push(expr);
        visitor::walk_expr(self, expr);
        self.parents.pop();
        self.nested -= usize::from(lambda);
        self.scope = saved;
    }
}
