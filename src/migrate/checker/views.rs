//! `.view()` of a tensor whose strides may not allow it: a slice that keeps part of an inner
//! dimension (`logits[:, :-1]`) or a transpose. torch_xla tensors had no strides, so such a
//! view always ran; TorchTPU tensors keep their parent's strides, as on CUDA, and `view`
//! raises where they cannot express the new shape. `.reshape` is the same view where one is
//! possible and a copy where it is not.

use ruff_python_ast::{Expr, ExprCall, Number, UnaryOp};
use ruff_text_size::Ranged;

use super::{Checker, Diagnostic};
use crate::migrate::fix::{Edit, Fix};
use crate::migrate::rules::Builtin;

/// Methods whose result shares its input's storage with other strides.
const RESTRIDING: &[&str] = &[
    "transpose",
    "permute",
    "t",
    "swapaxes",
    "swapdims",
    "movedim",
    "moveaxis",
    "expand",
    "narrow",
    "unfold",
    "diagonal",
];

/// Attributes that are transposes (`x.T`, `x.mT`).
const TRANSPOSED: &[&str] = &["T", "mT", "H", "mH"];

impl<'a> Checker<'a> {
    /// `x[:, :-1].view(-1, n)`, `x.transpose(1, 2).view(b, t, -1)`.
    pub(super) fn check_strided_view(&mut self, call: &'a ExprCall) {
        let Expr::Attribute(method) = &*call.func else { return };
        if method.attr.id.as_str() != "view" || !strided(&method.value) {
            return;
        }
        let Some(rule) = self.rules.builtin(Builtin::StridedView) else { return };
        if self.sem.qualified_name(&call.func, self.scope).is_some() {
            return; // a module's function, not a tensor method
        }
        let args = &call.arguments;
        if !args.keywords.is_empty() || args.args.is_empty() {
            return;
        }
        if let [only] = &*args.args
            && is_dtype(only)
        {
            return; // a dtype view reinterprets the bytes: strides do not matter there
        }
        let message = self.message(rule, self.src(method.value.range()));
        let spec = self.rules.literal_fix(Builtin::StridedView).ok();
        let (fix, note) = match (&*args.args, spec) {
            ([only], _) if !is_shape(only) => (
                None,
                Some(format!(
                    "not converted: `{}` may be a dtype; if it is a shape, write `.reshape(...)`",
                    self.src(only.range())
                )),
            ),
            (_, Some((spec, reshape))) => {
                let fix = Fix {
                    safety: spec.safety,
                    edits: vec![Edit::replace(method.attr.range, reshape)],
                    deletes: vec![],
                    imports: vec![],
                    helpers: vec![],
                };
                (Some(fix), spec.note.clone())
            }
            (_, None) => (None, None),
        };
        self.diagnostics.push(Diagnostic { rule, range: call.range(), message, note, fix });
    }
}

/// Whether `e` may be a tensor whose strides differ from a contiguous one's: a slice that
/// keeps part of an inner dimension, or a transpose.
fn strided(e: &Expr) -> bool {
    match e {
        Expr::Subscript(s) => strided_index(&s.slice),
        Expr::Attribute(a) => TRANSPOSED.contains(&a.attr.id.as_str()),
        Expr::Call(c) => matches!(&*c.func, Expr::Attribute(a) if RESTRIDING.contains(&a.attr.id.as_str())),
        _ => false,
    }
}

/// `[:, :-1]`, `[:, 0]`, `[..., 1:]`, `[::2]`: an index whose result may skip elements within
/// a row. Leading integers (`[0, 1:]`) and one leading slice (`[1:3]`, `[2:, :]`) keep a
/// contiguous tensor contiguous.
fn strided_index(index: &Expr) -> bool {
    let items: Vec<&Expr> = match index {
        Expr::Tuple(t) => t.elts.iter().collect(),
        single => vec![single],
    };
    let full = |e: &Expr| matches!(e, Expr::Slice(s) if s.lower.is_none() && s.upper.is_none() && s.step.is_none());
    let mut kept = false; // a dimension before this one was kept
    for item in items {
        match item {
            Expr::NoneLiteral(_) => {}
            Expr::Slice(s) if s.step.is_some() => return true,
            Expr::EllipsisLiteral(_) => kept = true,
            Expr::Slice(_) if !kept => kept = true,
            Expr::Slice(_) if full(item) => {}
            _ if kept => return true, // part of an inner dimension, or one index of it
            _ => {}                   // a leading index
        }
    }
    false
}

/// A torch dtype (`torch.float16`, `torch.int32`): `.view(dtype)` reinterprets, no reshape.
fn is_dtype(e: &Expr) -> bool {
    matches!(e, Expr::Attribute(a) if matches!(&*a.value, Expr::Name(n) if n.id.as_str() == "torch")
        && !matches!(a.attr.id.as_str(), "Size"))
}

/// An argument that is a shape or a size, never a dtype: `-1`, `(b, -1)`, `*shape`,
/// `x.shape`, `x.size()`, `n * m`.
fn is_shape(e: &Expr) -> bool {
    match e {
        Expr::NumberLiteral(n) => matches!(n.value, Number::Int(_)),
        Expr::UnaryOp(u) => u.op == UnaryOp::USub && is_shape(&u.operand),
        Expr::Tuple(_) | Expr::List(_) | Expr::Starred(_) | Expr::BinOp(_) => true,
        Expr::Attribute(a) => a.attr.id.as_str() == "shape",
        Expr::Subscript(s) => matches!(&*s.value, Expr::Attribute(a) if a.attr.id.as_str() == "shape"),
        Expr::Call(c) => match &*c.func {
            Expr::Attribute(a) => matches!(a.attr.id.as_str(), "size" | "Size"),
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> Expr {
        *ruff_python_parser::parse_expression(src).expect("parses").into_syntax().body
    }

    #[test]
    fn slices_that_skip_elements_within_a_row_are_strided() {
        for s in
            ["x[:, :-1]", "x[:, 0]", "x[..., 1:]", "x[::2]", "x[0, :, 1:]", "x[1:, :3]", "x.transpose(1, 2)", "x.T"]
        {
            assert!(strided(&parse(s)), "{s}");
        }
        for s in ["x[1:3]", "x[0]", "x[0, 1:]", "x[2:, :]", "x[:, None]", "x", "x.contiguous()", "x[..., :]"] {
            assert!(!strided(&parse(s)), "{s}");
        }
    }

    #[test]
    fn shapes_are_told_from_dtypes() {
        assert!(is_shape(&parse("-1")) && is_shape(&parse("(b, -1)")) && is_shape(&parse("x.size()")));
        assert!(!is_shape(&parse("n")) && is_dtype(&parse("torch.float16")) && !is_dtype(&parse("n")));
    }
}
