//! Calls to the public PyTorch API whose ATen ops the backend lacks (TPU8xx):
//! `torch.median(x)` raises "not implemented for TPU" on TorchTPU 0.2.0. The
//! knowledge is generated (`rules/api/`: which ops each call shape dispatches)
//! and judged against the backend registry, so the lint and the emulator agree.
//!
//! Function forms resolve through imports like every rule. A method form
//! (`x.median()`) is only judged when `x` is known to be a tensor here: a
//! parameter annotated `torch.Tensor`, or a name bound to what a `torch`
//! function returned; `median` on a NumPy array or a DataFrame is not ours.

use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;

use super::{Checker, Diagnostic};
use crate::migrate::rules::Builtin;
use crate::migrate::rules::template::string_value;

impl<'a> Checker<'a> {
    /// Judge a call of `api` (qualified; `torch.Tensor.x` for methods).
    pub(super) fn check_api_call(&mut self, call: &'a ExprCall, api: &str, method: bool) {
        let Some(table) = self.rules.api_ops.clone() else { return };
        if !table.knows(api) || call.arguments.args.iter().any(Expr::is_starred_expr) {
            return;
        }
        let subject = match (&*call.func, method) {
            (Expr::Attribute(a), true) => Some(&*a.value),
            _ => call.arguments.args.first(),
        };
        if subject.is_some_and(on_cpu) {
            return;
        }
        let keywords: Vec<(&str, Option<&str>)> = call
            .arguments
            .keywords
            .iter()
            .filter_map(|k| {
                // A value written as one plain literal (`mode="trilinear"`), which the prefilter
                // finds in the file's bytes ([`crate::ops::api::ApiOps::needles`]); a spelling
                // that hides it (escapes, implicit concatenation) is a value not known here.
                let value = match &k.value {
                    Expr::StringLiteral(_) => {
                        string_value(self.src(k.value.range()).trim_start_matches(['r', 'R', 'u', 'U']))
                    }
                    _ => None,
                };
                Some((k.arg.as_ref()?.id.as_str(), value))
            })
            .collect();
        let positional = call.arguments.args.len() + usize::from(method);
        let Some((backward_only, missing)) = table.certain_gap(api, positional, &keywords) else { return };
        let builtin = if backward_only { Builtin::ApiOpsBackward } else { Builtin::ApiOps };
        let Some(rule) = self.rules.builtin(builtin) else { return };
        let (op, why) = &missing[0];
        let spelled = self.src(call.func.range());
        let message = self
            .rule(rule)
            .message
            .replace("{name}", spelled)
            .replace("{op}", op)
            .replace("{backend}", table.backend());
        // What the backend does without a kernel (TorchTPU raises; torch_xla fell back to the CPU).
        // A composite op names the op inside it that lacks a kernel (`aten::kthvalue` → `.values`);
        // a structured delegate is the same op's `out=` form, not worth naming.
        let fallback = table.fallback();
        let consequence = match why.as_str() {
            why if why == fallback || why.starts_with("structured delegate") => fallback.to_string(),
            why => format!("{why}; {fallback}"),
        };
        let note = match table.alternative(api) {
            Some(alt) => format!("{consequence}; instead: `{}`", alt.replacement),
            None => format!(
                "{consequence}; move this computation to the CPU deliberately (`.cpu()`), or see `xla2tpu ops show {op}`"
            ),
        };
        self.diagnostics.push(Diagnostic { rule, range: call.range(), message, note: Some(note), fix: None });
    }

    /// `x.median()` where `x` is known to be a tensor: the API `torch.Tensor.median`.
    pub(super) fn tensor_method(&self, call: &ExprCall) -> Option<String> {
        let Expr::Attribute(attr) = &*call.func else { return None };
        self.is_tensor(&attr.value).then(|| format!("torch.Tensor.{}", attr.attr.id))
    }

    fn is_tensor(&self, e: &Expr) -> bool {
        self.is_tensor_within(e, 8)
    }

    /// Whether `e` certainly evaluates to a tensor: a name bound to one (annotated, or assigned a
    /// tensor expression), a `torch` call, or arithmetic, negation or indexing on a tensor
    /// (`(p * q).nansum()`). `depth` bounds chains of names bound from names.
    fn is_tensor_within(&self, e: &Expr, depth: u8) -> bool {
        match e {
            Expr::Name(name) => {
                let Some(binding) = self.sem.unique_binding(&name.id, self.scope, name.start()) else { return false };
                let at = self.sem.bindings[binding].range.start();
                let annotated = self.inventory.annotations.get(&at).is_some_and(|a| self.names_tensor_type(a));
                annotated
                    || (depth > 0
                        && self.inventory.values.get(&at).is_some_and(|v| self.is_tensor_within(v, depth - 1)))
            }
            Expr::Call(_) => self.returns_tensor(e, depth),
            // Tensor operators win over NumPy's (`__array_priority__`), so one tensor operand suffices.
            Expr::BinOp(b) if depth > 0 => {
                self.is_tensor_within(&b.left, depth - 1) || self.is_tensor_within(&b.right, depth - 1)
            }
            Expr::UnaryOp(u) if depth > 0 && !u.op.is_not() => self.is_tensor_within(&u.operand, depth - 1),
            Expr::Subscript(s) if depth > 0 => self.is_tensor_within(&s.value, depth - 1),
            _ => false,
        }
    }

    fn names_tensor_type(&self, annotation: &Expr) -> bool {
        self.sem.qualified_name(annotation, self.scope).is_some_and(|q| q.name == "torch.Tensor")
    }

    /// A call of a `torch` function (`torch.randn(…)`, `F.softmax(…)`), or a
    /// method of a known tensor that returns one (`x.float()`).
    fn returns_tensor(&self, value: &Expr, depth: u8) -> bool {
        let Expr::Call(call) = value else { return false };
        if let Some(q) = self.sem.qualified_name(&call.func, self.scope) {
            return self.rules.api_ops.as_ref().is_some_and(|t| t.knows(&q.name))
                || TENSOR_FACTORIES.contains(&q.name.as_str());
        }
        matches!(&*call.func, Expr::Attribute(a) if TENSOR_METHODS.contains(&a.attr.id.as_str()) && self.is_tensor_within(&a.value, depth))
    }
}

/// Factories the generated table leaves out (random and creation functions).
const TENSOR_FACTORIES: &[&str] = &[
    "torch.tensor",
    "torch.as_tensor",
    "torch.from_numpy",
    "torch.randn",
    "torch.rand",
    "torch.randint",
    "torch.zeros",
    "torch.ones",
    "torch.empty",
    "torch.full",
    "torch.arange",
    "torch.linspace",
];

/// Tensor methods that return a tensor on the same device, for chains like `x.float().median()`.
const TENSOR_METHODS: &[&str] = &["float", "double", "half", "detach", "clone", "contiguous", "view", "reshape"];

/// `t.cpu()`, `t.to("cpu")`: computing on the CPU on purpose, as the advice says.
fn on_cpu(e: &Expr) -> bool {
    let Expr::Call(c) = e else { return false };
    let Expr::Attribute(a) = &*c.func else { return false };
    match a.attr.id.as_str() {
        "cpu" | "numpy" => true,
        "to" => c
            .arguments
            .args
            .first()
            .or(c
                .arguments
                .keywords
                .iter()
                .find(|k| k.arg.as_ref().is_some_and(|n| n.id.as_str() == "device"))
                .map(|k| &k.value))
            .is_some_and(|d| matches!(d, Expr::StringLiteral(s) if s.value.to_str() == "cpu")),
        _ => false,
    }
}
