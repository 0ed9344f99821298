//! JSON configs: a Trainer's `fsdp_config.json` (`"xla": true`, `"xla_fsdp_v2": true`) and
//! accelerate configs written as JSON (`"distributed_type": "XLA"`) select torch_xla as the
//! YAML ones do. Keys are reported where they are written; only accelerate's `distributed_type`
//! is rewritten (its launcher, as in YAML): what replaces the FSDP keys (FSDP2 settings) needs
//! the rest of the file read by a person.

use jsonc_parser::ast::{ObjectPropName, Value};
use jsonc_parser::common::Ranged;
use jsonc_parser::{CollectOptions, ParseOptions};
use ruff_text_size::{TextRange, TextSize};

use crate::migrate::diagnostic::Diagnostic;
use crate::migrate::fix::{Edit, Fix};
use crate::migrate::rules::{Builtin, RuleSet};

/// Larger JSON files are data (datasets, tokenizers), not configs.
const MAX_CONFIG_BYTES: usize = 1 << 20;

pub fn check(text: &str, rules: &RuleSet) -> Vec<Diagnostic> {
    if text.len() > MAX_CONFIG_BYTES || !text.contains("xla") && !text.contains("XLA") && !text.contains("TPU") {
        return Vec::new();
    }
    // Strict JSON, as the configs' readers (json.load) take it; the AST gives each key's place.
    let options = ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let Ok(parsed) = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &options) else { return Vec::new() };
    let Some(document) = &parsed.value else { return Vec::new() };
    let mut out = Vec::new();
    walk(document, &mut |name, value| {
        let ObjectPropName::String(key) = name else { return };
        let rule = rules.dict_key_rules().find(|(_, r)| r.dict_keys.iter().any(|k| *k == key.value)).map(|(id, _)| id);
        let accelerate = match value {
            Value::StringLit(s) if key.value == "distributed_type" && matches!(&*s.value, "XLA" | "TPU") => Some(s),
            _ => None,
        };
        let rule = match (rule, accelerate) {
            (Some(id), _) if is_set(value) => id,
            (_, Some(_)) => match rules.builtin(Builtin::AccelerateConfig) {
                Some(id) => id,
                None => return,
            },
            _ => return,
        };
        let message = rules.rules[rule].message.replace("{name}", &format!("`\"{}\"`", key.value));
        let (fix, note) = accelerate.map_or((None, None), |value| accelerate_fix(value.range(), rules));
        out.push(Diagnostic { rule, range: range(key.range()), message, note, fix });
    });
    out
}

fn range(r: jsonc_parser::common::Range) -> TextRange {
    let offset = |at: usize| TextSize::try_from(at).expect("configs are smaller than 4 GiB");
    TextRange::new(offset(r.start), offset(r.end))
}

/// Every property of every object, in document order: its name and value.
fn walk<'a>(value: &'a Value<'a>, visit: &mut impl FnMut(&'a ObjectPropName<'a>, &'a Value<'a>)) {
    match value {
        Value::Object(object) => {
            for property in &object.properties {
                visit(&property.name, &property.value);
                walk(&property.value, visit);
            }
        }
        Value::Array(array) => array.elements.iter().for_each(|v| walk(v, visit)),
        _ => {}
    }
}

/// The accelerate rule's replacement for the string value written at `value` (`"XLA"` becomes
/// `"MULTI_GPU"`), as in YAML configs.
fn accelerate_fix(value: jsonc_parser::common::Range, rules: &RuleSet) -> (Option<Fix>, Option<String>) {
    let Ok((spec, to)) = rules.literal_fix(Builtin::AccelerateConfig) else { return (None, None) };
    let edit = Edit::replace(range(value), format!("\"{to}\""));
    let fix = Fix { safety: spec.safety, edits: vec![edit], deletes: vec![], imports: vec![], helpers: vec![] };
    (Some(fix), spec.note.clone())
}

/// A setting that turns something on: `true`, a non-empty object or string (`false` does not).
fn is_set(value: &Value) -> bool {
    match value {
        Value::BooleanLit(b) => b.value,
        Value::NullKeyword(_) => false,
        Value::StringLit(s) => !s.value.is_empty() && !s.value.eq_ignore_ascii_case("false"),
        Value::Object(o) => !o.properties.is_empty(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(text: &str) -> Vec<String> {
        let rules = RuleSet::load(&[]).unwrap();
        check(text, &rules).iter().map(|d| rules.rules[d.rule].code.clone()).collect()
    }

    #[test]
    fn trainer_fsdp_and_accelerate_json_configs_are_reported_where_their_keys_are() {
        let fsdp = "{\n  \"fsdp_transformer_layer_cls_to_wrap\": [\"LlamaDecoderLayer\"],\n  \"xla\": true,\n  \"xla_fsdp_v2\": true,\n  \"xla_fsdp_grad_ckpt\": false\n}\n";
        let rules = RuleSet::load(&[]).unwrap();
        let found = check(fsdp, &rules);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(&fsdp[found[0].range], "\"xla\"");
        assert_eq!(&fsdp[found[1].range], "\"xla_fsdp_v2\"");
        assert_eq!(codes("{\"compute_environment\": \"LOCAL_MACHINE\", \"distributed_type\": \"XLA\"}"), ["TPU922"]);
        assert!(found.iter().all(|d| d.fix.is_none()), "FSDP keys are reported, not rewritten");
    }

    #[test]
    fn accelerate_json_configs_get_the_torchrun_launcher() {
        let text =
            "{\"compute_environment\": \"LOCAL_MACHINE\",\n \"distributed_type\" :  \"TPU\", \"num_processes\": 8}";
        let rules = RuleSet::load(&[]).unwrap();
        let found = check(text, &rules);
        let mut edits = found[0].fix.as_ref().expect("a fix").edits.clone();
        let out = crate::migrate::fix::apply(text, &mut edits).expect("one edit");
        assert_eq!(out, text.replace("\"TPU\"", "\"MULTI_GPU\""));
    }

    #[test]
    fn each_key_is_reported_where_the_parser_puts_it() {
        // A key set in one object and unset in another: only the set one is reported.
        let text = "{\"a\": {\"xla\": true}, \"b\": {\"xla\": false}}";
        let rules = RuleSet::load(&[]).unwrap();
        let found = check(text, &rules);
        assert_eq!(found.iter().map(|d| usize::from(d.range.start())).collect::<Vec<_>>(), [7]);
        // The same in a list of configs, and a key whose name is also a value elsewhere.
        let text = "[{\"name\": \"xla\"}, {\"xla\": false}, {\"xla\": {\"mesh\": 8}}]";
        let found = check(text, &rules);
        assert_eq!(found.iter().map(|d| usize::from(d.range.start())).collect::<Vec<_>>(), [35]);
    }

    #[test]
    fn other_json_is_left_alone() {
        for text in [
            "{\"xla\": false}",
            "[\"xla\"]",
            "{\"name\": \"xla\"}",
            "not json: xla",
            "{\"distributed_type\": \"MULTI_GPU\"}",
        ] {
            assert!(codes(text).is_empty(), "{text}");
        }
    }
}
