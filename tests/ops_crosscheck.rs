//! The committed op profiles (`corpus/ops`, a TorchDispatchMode recorder, sometimes on
//! FakeTensor/meta) against an independent re-tracing of every type on real tensors with
//! the PyTorch profiler (`corpus/crosscheck`, see its README). Reads both from disk; no
//! Python. A profile that misses ops the independent method saw is where a false `pass`
//! comes from, so:
//! - every profiled type has a crosscheck file, and at most 1% of them failed to run;
//! - overall agreement (sum |P ∩ X| / sum |X|) is at least 99%;
//! - no type is under 90%.
//!
//! The way to fix a failure here is a better profile (re-trace that type with real
//! tensors, fix its inputs/config), not a weaker check.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

fn load(dir: &str) -> BTreeMap<String, Value> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut out = BTreeMap::new();
    for lib in std::fs::read_dir(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display())) {
        let lib = lib.expect("dir entry").path();
        if !lib.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&lib).expect("library dir") {
            let p = f.expect("dir entry").path();
            if p.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).expect("readable"))
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let id = v["id"].as_str().unwrap_or_else(|| panic!("{}: no id", p.display())).to_string();
            out.insert(id, v);
        }
    }
    out
}

fn strs(v: &Value) -> impl Iterator<Item = &str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str)
}

/// Op names in a profile, plus `neutral:<name>` for device-specific kernels.
fn profile_keys(p: &Value) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for op in p["ops"].as_array().expect("ops") {
        let name = op["op"].as_str().expect("op name");
        keys.insert(name.to_string());
        if let Some(n) = op["neutral"].as_str() {
            keys.insert(format!("neutral:{n}"));
        }
    }
    keys
}

/// (matched, seen, missed) of one crosscheck file against its profile. An op the
/// crosscheck saw counts as matched when the profile has it, one of its overload
/// `candidates` (the profiler names packets), one of its dispatch-mode `equivalent`s, or
/// its neutral name.
fn compare(profile: &Value, cross: &Value) -> (usize, usize, Vec<String>) {
    let have = profile_keys(profile);
    let (mut matched, mut seen, mut missed) = (0, 0, Vec::new());
    for op in cross["ops"].as_array().expect("ops") {
        let name = op["op"].as_str().expect("op name");
        if !name.starts_with("aten::") {
            continue;
        }
        seen += 1;
        let mut keys: Vec<String> = strs(&op["candidates"]).map(str::to_string).collect();
        if keys.is_empty() {
            keys.push(name.to_string());
        }
        keys.extend(strs(&op["equivalent"]).map(str::to_string));
        if let Some(n) = op["neutral"].as_str() {
            keys.push(format!("neutral:{n}"));
        }
        if keys.iter().any(|k| have.contains(k)) {
            matched += 1;
        } else {
            missed.push(name.to_string());
        }
    }
    (matched, seen, missed)
}

#[test]
fn profiles_agree_with_the_independent_crosscheck() {
    let profiles = load("corpus/ops");
    let cross = load("corpus/crosscheck");
    assert!(profiles.len() > 600, "only {} profiles", profiles.len());

    let missing: Vec<&String> = profiles.keys().filter(|id| !cross.contains_key(*id)).collect();
    assert!(missing.is_empty(), "profiled types without a crosscheck file: {missing:?}");

    let failures: Vec<String> = profiles
        .keys()
        .filter_map(|id| {
            let x = &cross[id];
            let status = x["status"].as_str().unwrap_or("");
            (status != "ok" && status != "partial")
                .then(|| format!("{id}: {status}: {}", x["reason"].as_str().unwrap_or("")))
        })
        .collect();
    assert!(
        failures.len() * 100 <= profiles.len(),
        "{} of {} crosschecks failed (limit 1%):\n{}",
        failures.len(),
        profiles.len(),
        failures.join("\n")
    );

    let (mut matched, mut seen) = (0usize, 0usize);
    let mut under = Vec::new();
    for (id, p) in &profiles {
        let x = &cross[id];
        if !matches!(x["status"].as_str(), Some("ok" | "partial")) {
            continue;
        }
        let (m, s, missed) = compare(p, x);
        matched += m;
        seen += s;
        if s > 0 && (m as f64) < 0.9 * s as f64 {
            under.push(format!("{id}: {m}/{s}, missed {}", missed.join(", ")));
        }
    }
    let overall = matched as f64 / seen.max(1) as f64;
    assert!(under.is_empty(), "types under 90% agreement:\n{}", under.join("\n"));
    assert!(overall >= 0.99, "overall agreement {:.2}% ({matched}/{seen}) < 99%", 100.0 * overall);
}

#[test]
fn compare_counts_a_missed_op_and_accepts_candidates_and_equivalents() {
    let profile: Value = serde_json::from_str(
        r#"{"ops": [{"op": "aten::view"}, {"op": "aten::min.other"},
                    {"op": "aten::_scaled_dot_product_flash_attention_for_cpu", "neutral": "sdpa"}]}"#,
    )
    .unwrap();
    let cross: Value = serde_json::from_str(
        r#"{"ops": [{"op": "aten::_reshape_alias", "equivalent": ["aten::view"]},
                    {"op": "aten::min", "candidates": ["aten::min.dim", "aten::min.other"]},
                    {"op": "aten::_scaled_dot_product_flash_attention_for_cpu", "neutral": "sdpa"},
                    {"op": "aten::nonzero"}, {"op": "prim::device"}]}"#,
    )
    .unwrap();
    assert_eq!(compare(&profile, &cross), (3, 4, vec!["aten::nonzero".to_string()]));
}
