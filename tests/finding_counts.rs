//! The findings `check` reports on every program we own (`corpus/`), counted per rule. The
//! streaming pipeline and the prefilter that lets most files skip the semantic model must not
//! change a single one: a speed-up that loses a finding fails here.

use assert_cmd::Command;
use serde_json::Value;

#[test]
fn findings_per_rule_on_the_corpus_are_pinned() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::cargo_bin("xla2tpu")
        .expect("binary")
        .current_dir(root)
        .args(["check", "--isolated", "--statistics", "--output-format", "json", "corpus"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "findings exist, no errors: {stderr}");
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON statistics");
    let counts: Vec<String> = rows.iter().map(|r| format!("{} {}", r["code"].as_str().unwrap(), r["count"])).collect();
    let total: u64 = rows.iter().map(|r| r["count"].as_u64().unwrap()).sum();
    assert!(total > 500, "the corpus has hundreds of findings, got {total}");
    // Files the prefilter skips still parse: the summary counts every file as checked.
    let files = stderr.split(" files checked").next().and_then(|n| n.trim().rsplit(' ').next()?.parse::<usize>().ok());
    assert!(files.is_some_and(|n| n > 100), "{stderr}");
    insta::assert_yaml_snapshot!(counts);
}

/// The opt-in performance rules (TPU75x) on the same programs: each finding was read when the
/// rules were written (most are a training loop's `print(loss.item())`), so a change is a
/// decision. Without `--select TPU75` they report nothing (the test above).
#[test]
fn performance_findings_on_the_corpus_are_pinned() {
    let out = Command::cargo_bin("xla2tpu")
        .expect("binary")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["check", "--isolated", "--select", "TPU75", "--statistics", "--output-format", "json", "corpus"])
        .output()
        .expect("runs");
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON statistics");
    let counts: Vec<String> = rows.iter().map(|r| format!("{} {}", r["code"].as_str().unwrap(), r["count"])).collect();
    assert!(counts.iter().all(|c| c.starts_with("TPU75")), "{counts:?}");
    insta::assert_yaml_snapshot!(counts);
}
