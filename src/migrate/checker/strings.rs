//! String literals that name torch_xla things: device strings (`"xla"`,
//! `"xla:0"`), Dynamo backend names (`"openxla"`), and torch_xla settings
//! keys in dicts (`fsdp_config={"xla": True}`). A literal in a position whose
//! meaning is known is fixed; anywhere else it is reported, never guessed at.

use ruff_python_ast::{self as ast, Expr};

use super::{Checker, Diagnostic};
use crate::migrate::rules::RuleId;

/// Names whose value is a device: a string assigned to them is a device string.
fn names_a_device(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains("device") || lower == "dev" || lower.starts_with("dev_") || lower.ends_with("_dev")
}

impl<'a> Checker<'a> {
    /// A literal in a device position (`torch.device(…)`, `.to(…)`, `device=`,
    /// `t.device.type == …`, `DEVICE = …`, `def f(device="xla")`), passed to `callee` if known.
    pub(super) fn check_device_literal(&mut self, expr: &'a Expr, callee: Option<&str>) {
        let Expr::StringLiteral(lit) = expr else { return };
        if lit.value.is_implicit_concatenated() {
            return;
        }
        self.literals_seen.insert(lit.range.start());
        let value = lit.value.to_str();
        let found: Vec<(RuleId, String, String)> = self
            .rules
            .device_string_rules()
            .filter_map(|(id, r)| {
                let ds = r.device_string.as_ref()?;
                let index = device_index(value, &ds.from)?;
                Some((id, index.to_string(), ds.to.clone()))
            })
            .collect();
        for (rule, index, to) in found {
            let raw = self.src(lit.range);
            let new_value = match index.as_str() {
                "" => Some(to),
                "0" => Some(format!("{to}:0")),
                _ => None, // another chip of this process: TorchTPU gives each process one chip
            };
            let (fix, note) = match new_value {
                Some(v) => self.literal_fix(rule, lit.range, &requote(raw, &v), callee),
                None => (
                    None,
                    Some(format!(
                        "`{value}` names a specific chip; on TorchTPU each process sees exactly one chip, `tpu:0`"
                    )),
                ),
            };
            let message = self.message(rule, raw);
            self.diagnostics.push(Diagnostic { rule, range: lit.range, message, note, fix });
        }
    }

    /// Any other string literal: a device string outside a known device
    /// position, or a value a `string` rule knows (fixed when it is the value
    /// of one of the rule's keywords).
    pub(super) fn check_string_literal(&mut self, lit: &'a ast::ExprStringLiteral) {
        if lit.value.is_implicit_concatenated()
            || self.literals_seen.contains(&lit.range.start())
            || self.owned.contains(&lit.range.start())
        {
            return;
        }
        let value = lit.value.to_str();
        let raw = self.src(lit.range);
        let device_rule = self
            .rules
            .device_string_rules()
            .find(|(_, r)| r.device_string.as_ref().is_some_and(|ds| device_index(value, &ds.from).is_some()));
        if let Some((rule, _)) = device_rule {
            let message = self.message(rule, raw);
            let note = Some(
                "not in a device position xla2tpu recognises: if it names a device, write \"tpu\"; if it selects torch_xla some other way, migrate that by hand".into(),
            );
            self.diagnostics.push(Diagnostic { rule, range: lit.range, message, note, fix: None });
            return;
        }
        let Some((rule, to, keywords)) = self.rules.string_rules().find_map(|(id, r)| {
            let m = r.string.as_ref()?;
            m.values.iter().any(|v| v == value).then_some((id, m.to.clone(), &m.keywords))
        }) else {
            return;
        };
        let keyword = self.keyword_of.get(&lit.range.start()).copied();
        let (fix, note) = match (keyword, to) {
            (Some(k), Some(to)) if keywords.iter().any(|w| w == k) => {
                self.literal_fix(rule, lit.range, &requote(raw, &to), None)
            }
            _ => (None, Some("not the value of a keyword xla2tpu knows: check what it selects".to_string())),
        };
        let message = self.message(rule, value);
        self.diagnostics.push(Diagnostic { rule, range: lit.range, message, note, fix });
    }

    /// `f"xla:{xm.get_ordinal()}"`: a device string built at run time. Every
    /// TorchTPU process has one chip, `tpu:0`, so it becomes `"tpu"`.
    pub(super) fn check_fstring(&mut self, f: &'a ast::ExprFString) {
        let Some((rule, r)) = self.rules.device_string_rules().next() else { return };
        let Some(ds) = r.device_string.as_ref() else { return };
        let parts: Vec<&ast::FStringPart> = f.value.iter().collect();
        let [ast::FStringPart::FString(fs)] = parts.as_slice() else { return };
        let elements: Vec<&ast::InterpolatedStringElement> = fs.elements.iter().collect();
        let [ast::InterpolatedStringElement::Literal(prefix), ast::InterpolatedStringElement::Interpolation(_)] =
            elements.as_slice()
        else {
            return;
        };
        if prefix.value.as_ref() != format!("{}:", ds.from) {
            return;
        }
        let raw = self.src(f.range);
        let quote = if raw.ends_with('\'') { '\'' } else { '"' };
        let (fix, _) = self.literal_fix(rule, f.range, &format!("{quote}{}{quote}", ds.to), None);
        let fix = fix.map(|mut fix| {
            fix.safety = crate::migrate::rules::Safety::Unsafe;
            fix
        });
        let note =
            Some(format!("every TorchTPU process sees one chip, `{}:0`: the index no longer selects anything", ds.to));
        let message = self.message(rule, raw);
        self.diagnostics.push(Diagnostic { rule, range: f.range, message, note, fix });
    }

    /// A dict literal: values under device-like keys are device positions;
    /// keys a `dict_key` rule knows are reported (`fsdp_config={"xla": True}`).
    pub(super) fn check_dict(&mut self, dict: &'a ast::ExprDict) {
        for item in &dict.items {
            let Some(Expr::StringLiteral(key)) = &item.key else { continue };
            self.literals_seen.insert(key.range.start());
            let name = key.value.to_str();
            if names_a_device(name) {
                self.check_device_literal(&item.value, None);
            }
            if let Some((rule, _)) = self.rules.dict_key_rules().find(|(_, r)| r.dict_keys.iter().any(|k| k == name)) {
                let message = self.message(rule, self.src(key.range));
                self.diagnostics.push(Diagnostic { rule, range: key.range, message, note: None, fix: None });
            }
        }
    }

    /// `DEVICE = "xla"`, `self.device: str = "xla:0"`.
    pub(super) fn check_assigned_device(&mut self, targets: &[&'a Expr], value: &'a Expr) {
        let is_device = |t: &&Expr| match t {
            Expr::Name(n) => names_a_device(&n.id),
            Expr::Attribute(a) => names_a_device(&a.attr.id),
            _ => false,
        };
        if targets.len() == 1 && targets.iter().all(is_device) {
            self.check_device_literal(value, None);
        }
    }

    /// `def f(device="xla")`.
    pub(super) fn check_device_defaults(&mut self, parameters: &'a ast::Parameters) {
        for p in parameters.iter() {
            if let Some(default) = p.default()
                && names_a_device(&p.name().id)
            {
                self.check_device_literal(default, None);
            }
        }
    }
}

/// `xla` → `Some("")`, `xla:3` → `Some("3")`; anything else (`xla://`) is not a device string.
fn device_index<'v>(value: &'v str, from: &str) -> Option<&'v str> {
    if value == from {
        return Some("");
    }
    let index = value.strip_prefix(from)?.strip_prefix(':')?;
    (!index.is_empty() && index.chars().all(|c| c.is_ascii_digit())).then_some(index)
}

/// A literal with `value`, keeping the original's prefix and quotes.
fn requote(raw: &str, value: &str) -> String {
    let Some(quote_at) = raw.find(['"', '\'']) else { return format!("\"{value}\"") };
    let (prefix, body) = raw.split_at(quote_at);
    let quote = &body[..if body.starts_with("\"\"\"") || body.starts_with("'''") { 3 } else { 1 }];
    format!("{prefix}{quote}{value}{quote}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_strings_are_xla_or_xla_with_an_index() {
        assert_eq!(device_index("xla", "xla"), Some(""));
        assert_eq!(device_index("xla:1", "xla"), Some("1"));
        assert_eq!(device_index("xla://", "xla"), None);
        assert_eq!(device_index("xla_fsdp_v2", "xla"), None);
        assert_eq!(requote("r'xla'", "tpu"), "r'tpu'");
        assert!(names_a_device("DEVICE") && names_a_device("dev") && names_a_device("train_device"));
        assert!(!names_a_device("backend"));
    }
}
