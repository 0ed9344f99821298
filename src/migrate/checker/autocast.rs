//! `softmax` and `log_softmax` inside a torch_xla autocast region. torch_xla's autocast ran
//! them in float32; TorchTPU 0.2.0's registers no policy for them, so once the region is
//! TorchTPU's (TPU102, TPU301) a bf16 input gives a bf16 result. A float32 input keeps the old
//! result under both.

use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;

use super::{Checker, Diagnostic};
use crate::migrate::fix::{Edit, Fix};
use crate::migrate::rules::Builtin;

/// The functions whose first argument (`input`) autocast cast to float32 under torch_xla.
const SOFTMAX: &[&str] = &[
    "torch.nn.functional.softmax",
    "torch.nn.functional.log_softmax",
    "torch.softmax",
    "torch.log_softmax",
    "torch.special.softmax",
    "torch.special.log_softmax",
];

/// Autocast context managers whose device type is the argument `device_type` (or the first).
const AUTOCAST: &[&str] = &["torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"];

impl<'a> Checker<'a> {
    /// Whether `expr` opens a torch_xla autocast region: `torch_xla.amp.autocast(...)`, or
    /// `torch.autocast` for the `"xla"` device.
    pub(super) fn opens_xla_autocast(&self, expr: &Expr) -> bool {
        let Expr::Call(call) = expr else { return false };
        let Some(q) = self.sem.qualified_name(&call.func, self.scope) else { return false };
        if q.name == "torch_xla.amp.autocast" {
            return true;
        }
        if !AUTOCAST.contains(&q.name.as_str()) {
            return false;
        }
        let device = call.arguments.find_argument_value("device_type", 0);
        matches!(device, Some(Expr::StringLiteral(s)) if matches!(s.value.to_str().split(':').next(), Some("xla")))
    }

    /// A softmax in a torch_xla autocast region: give it a float32 input.
    pub(super) fn check_autocast_softmax(&mut self, call: &'a ExprCall) {
        let Some(rule) = self.rules.builtin(Builtin::AutocastSoftmax) else { return };
        if call.arguments.find_keyword("dtype").is_some() {
            return; // it names its own dtype
        }
        let input = match &*call.func {
            Expr::Attribute(a) if matches!(a.attr.id.as_str(), "softmax" | "log_softmax") => {
                match self.sem.qualified_name(&call.func, self.scope) {
                    Some(q) if SOFTMAX.contains(&q.name.as_str()) => call.arguments.find_argument_value("input", 0),
                    Some(_) => None,
                    None => Some(&*a.value), // `logits.softmax(-1)`
                }
            }
            func => match self.sem.qualified_name(func, self.scope) {
                Some(q) if SOFTMAX.contains(&q.name.as_str()) => call.arguments.find_argument_value("input", 0),
                _ => None,
            },
        };
        let Some(input) = input else { return };
        if is_float32(input) {
            return;
        }
        let spelled = self.src(call.func.range()).to_string();
        let message = self.message(rule, &spelled);
        let (fix, note) = match self.rules.literal_fix(Builtin::AutocastSoftmax) {
            Ok((spec, float)) => {
                let edits = float_input(self.src(input.range()), input, float);
                let fix = Fix { safety: spec.safety, edits, deletes: vec![], imports: vec![], helpers: vec![] };
                (Some(fix), spec.note.clone())
            }
            Err(_) => (None, None),
        };
        self.diagnostics.push(Diagnostic { rule, range: call.range(), message, note, fix });
    }
}

/// `x.float()`, `x.to(torch.float32)`, `x.float32()`: already a float32 input.
fn is_float32(e: &Expr) -> bool {
    let Expr::Call(call) = e else { return false };
    let Expr::Attribute(a) = &*call.func else { return false };
    match a.attr.id.as_str() {
        "float" => call.arguments.is_empty(),
        "to" | "type" => call
            .arguments
            .args
            .iter()
            .chain(call.arguments.keywords.iter().map(|k| &k.value))
            .any(|v| matches!(v, Expr::Attribute(t) if matches!(t.attr.id.as_str(), "float32" | "float"))),
        _ => false,
    }
}

/// The edits making `input` (whose text is `text`) a float32 operand: `.float()` after it,
/// parenthesised when it is not an atom.
fn float_input(text: &str, input: &Expr, float: &str) -> Vec<Edit> {
    let atom = matches!(input, Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_))
        || text.starts_with('(') && text.ends_with(')');
    if atom {
        vec![Edit::insert(input.end(), float)]
    } else {
        vec![Edit::insert(input.start(), "("), Edit::insert(input.end(), format!("){float}"))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edits(src: &str) -> String {
        let parsed = ruff_python_parser::parse_expression(src).expect("parses");
        let mut out = src.to_string();
        let mut e = float_input(src, parsed.expr(), ".float()");
        e.sort_by_key(|e| std::cmp::Reverse(e.range.start()));
        for edit in e {
            out.insert_str(edit.range.start().to_usize(), &edit.content);
        }
        out
    }

    #[test]
    fn the_input_becomes_float32_parenthesised_when_needed() {
        assert_eq!(edits("logits"), "logits.float()");
        assert_eq!(edits("out.logits[:, -1]"), "out.logits[:, -1].float()");
        assert_eq!(edits("a @ b"), "(a @ b).float()");
        assert_eq!(edits("-x"), "(-x).float()");
    }

    #[test]
    fn a_float32_input_is_recognised() {
        let is = |s: &str| is_float32(ruff_python_parser::parse_expression(s).expect("parses").expr());
        assert!(is("x.float()") && is("x.to(torch.float32)") && is("x.to(dtype=torch.float)"));
        assert!(!is("x.half()") && !is("x.to(torch.bfloat16)") && !is("x"));
    }
}
