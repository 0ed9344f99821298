//! Every public API of torch_xla 2.9 and optimum-tpu (`rules/surface/*.tsv`) has a disposition:
//! a rule that names it, its module (`a.b.*`) or its environment variable. The catch-all
//! "unmapped" rule (TPU000) does not count: it only says nobody decided.

use std::path::Path;

use serde::Deserialize;
use xla2tpu::migrate::rules::{Builtin, MatchKind, RuleSet};

#[derive(Debug, Deserialize)]
struct Entry {
    module: String,
    name: String,
    kind: String,
    removed_in: String,
}

impl Entry {
    fn qualified(&self) -> String {
        if self.module.is_empty() { self.name.clone() } else { format!("{}.{}", self.module, self.name) }
    }
}

fn surface() -> Vec<(String, Entry)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("rules/surface");
    let mut entries = Vec::new();
    for file in ["torch_xla-2.9.tsv", "optimum-tpu.tsv"] {
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(b'\t')
            .comment(Some(b'#'))
            .from_path(dir.join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        for row in reader.deserialize() {
            entries.push((file.to_string(), row.unwrap_or_else(|e| panic!("{file}: {e}"))));
        }
    }
    entries
}

fn under(name: &str, modules: &[String]) -> bool {
    modules.iter().any(|m| name == m || name.strip_prefix(m.as_str()).is_some_and(|r| r.starts_with('.')))
}

/// The rule that decides what becomes of `entry`, if any.
fn disposition(rules: &RuleSet, entry: &Entry) -> Option<String> {
    let code = |id: usize| rules.rules[id].code.clone();
    match entry.kind.as_str() {
        "env" | "env:unchanged" => rules.env_rules().find(|(_, r)| r.env.contains(&entry.name)).map(|(id, _)| code(id)),
        // Importing is all a program does with a module itself; its members are entries of their own.
        "module" => {
            rules.builtin(Builtin::Import).filter(|&id| under(&entry.qualified(), &rules.rules[id].modules)).map(code)
        }
        // `*`: every member of the module, including ones no rule names.
        _ if entry.name == "*" => rules.lookup_any(&format!("{}.any_member", entry.module)).map(code),
        _ => rules.lookup_any(&entry.qualified()).map(code),
    }
}

#[test]
fn every_public_api_has_a_rule() {
    let rules = RuleSet::load(&[]).expect("embedded rules load");
    let mut uncovered = Vec::new();
    let mut unchanged_flagged = Vec::new();
    let entries = surface();
    for (file, entry) in &entries {
        let rule = disposition(&rules, entry);
        match (entry.kind.as_str(), rule) {
            ("env:unchanged", Some(code)) => unchanged_flagged.push(format!("{file}: {} ({code})", entry.name)),
            ("env:unchanged", None) | (_, Some(_)) => {}
            (_, None) => {
                let removed = if entry.removed_in.is_empty() {
                    String::new()
                } else {
                    format!(", removed in {}", entry.removed_in)
                };
                uncovered.push(format!("{file}: {} ({}{removed})", entry.qualified(), entry.kind));
            }
        }
    }
    assert!(entries.len() > 250, "the surface lists {} entries; the API docs list more", entries.len());
    assert!(
        unchanged_flagged.is_empty(),
        "TorchTPU reads these the same way, yet a rule flags them:\n{}",
        unchanged_flagged.join("\n")
    );
    assert!(
        uncovered.is_empty(),
        "{} of {} public APIs have no rule (only TPU000 would report them):\n{}",
        uncovered.len(),
        entries.len(),
        uncovered.join("\n")
    );
}

#[test]
fn a_module_rule_covers_members_no_rule_names() {
    let rules = RuleSet::load(&[]).expect("embedded rules load");
    let (set, _) = rules.lookup(MatchKind::Call, "torch_xla.backends.set_mat_mul_precision").expect("TPU303");
    let (private, _) = rules.lookup(MatchKind::Call, "torch_xla._XLAC._xla_sync_multi").expect("a rule for _XLAC");
    assert_ne!(rules.rules[private].code, rules.rules[set].code);
    // A name the module rule's module only prefixes as a string is not a member.
    assert!(rules.lookup_any("torch_xla._XLACX.f").is_none());
    // A rule naming a member wins over the module's rule.
    let (named, _) = rules.lookup(MatchKind::Call, "torch_xla._XLAC._xla_set_mat_mul_precision").expect("TPU303");
    assert_eq!(rules.rules[named].code, "TPU303");
}
