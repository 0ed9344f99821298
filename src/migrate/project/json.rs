//! JSON configs: a Trainer's `fsdp_config.json` (`"xla": true`, `"xla_fsdp_v2": true`) and
//! accelerate configs written as JSON (`"distributed_type": "XLA"`) select torch_xla as the
//! YAML ones do. Keys are reported where they are written; only accelerate's `distributed_type`
//! is rewritten (its launcher, as in YAML): what replaces the FSDP keys (FSDP2 settings) needs
//! the rest of the file read by a person.

use ruff_text_size::{TextRange, TextSize};
use serde_json::Value;

use crate::migrate::checker::Diagnostic;
use crate::migrate::fix::{Edit, Fix};
use crate::migrate::rules::{Builtin, RuleSet};

/// Larger JSON files are data (datasets, tokenizers), not configs.
const MAX_CONFIG_BYTES: usize = 1 << 20;

pub fn check(text: &str, rules: &RuleSet) -> Vec<Diagnostic> {
    if text.len() > MAX_CONFIG_BYTES || !text.contains("xla") && !text.contains("XLA") && !text.contains("TPU") {
        return Vec::new();
    }
    let Ok(document) = serde_json::from_str::<Value>(text) else { return Vec::new() };
    let mut out = Vec::new();
    let mut seen = Vec::new();
    walk(&document, &mut |key, value| {
        if seen.contains(&key.to_string()) {
            return;
        }
        let rule = rules.dict_key_rules().find(|(_, r)| r.dict_keys.iter().any(|k| k == key)).map(|(id, _)| id);
        let accelerate = key == "distributed_type" && value.as_str().is_some_and(|v| matches!(v, "XLA" | "TPU"));
        let rule = match (rule, accelerate) {
            (Some(id), _) if is_set(value) => id,
            (_, true) => match rules.builtin(Builtin::AccelerateConfig) {
                Some(id) => id,
                None => return,
            },
            _ => return,
        };
        seen.push(key.to_string());
        for at in key_positions(text, key) {
            let range = TextRange::new(offset(at), offset(at + key.len() + 2));
            let message = rules.rules[rule].message.replace("{name}", &format!("`\"{key}\"`"));
            let (fix, note) = if accelerate { accelerate_fix(text, at + key.len() + 2, rules) } else { (None, None) };
            out.push(Diagnostic { rule, range, message, note, fix });
        }
    });
    out.sort_by_key(|d| d.range.start());
    out
}

fn offset(at: usize) -> TextSize {
    TextSize::try_from(at).expect("configs are smaller than 4 GiB")
}

/// Every key of every object, with its value.
fn walk(value: &Value, visit: &mut impl FnMut(&str, &Value)) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                visit(k, v);
                walk(v, visit);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, visit)),
        _ => {}
    }
}

/// The accelerate rule's replacement for the string value after the key ending at `after_key`
/// (`"XLA"` becomes `"MULTI_GPU"`), as in YAML configs.
fn accelerate_fix(text: &str, after_key: usize, rules: &RuleSet) -> (Option<Fix>, Option<String>) {
    let Ok((spec, to)) = rules.literal_fix(Builtin::AccelerateConfig) else { return (None, None) };
    // `: "XLA"`: the value is the string after the colon (its escapes cannot matter: it is XLA or TPU).
    let colon = after_key + text[after_key..].find(':').expect("key_positions found a colon");
    let start = colon + 1 + (text[colon + 1..].len() - text[colon + 1..].trim_start().len());
    let Some(len) = text[start + 1..].find('"') else { return (None, None) };
    let edit = Edit::replace(TextRange::new(offset(start), offset(start + len + 2)), format!("\"{to}\""));
    let fix = Fix { safety: spec.safety, edits: vec![edit], deletes: vec![], imports: vec![], helpers: vec![] };
    (Some(fix), spec.note.clone())
}

/// A setting that turns something on: `true`, a non-empty object or string (`false` does not).
fn is_set(value: &Value) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::Null => false,
        Value::String(s) => !s.is_empty() && !s.eq_ignore_ascii_case("false"),
        Value::Object(m) => !m.is_empty(),
        _ => true,
    }
}

/// Where `"key"` is written as a key (followed by `:`).
fn key_positions(text: &str, key: &str) -> Vec<usize> {
    let quoted = format!("\"{key}\"");
    text.match_indices(&quoted)
        .map(|(at, _)| at)
        .filter(|&at| text[at + quoted.len()..].trim_start().starts_with(':'))
        .collect()
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
