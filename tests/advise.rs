//! `xla2tpu run --advise` on the purpose-built programs of `corpus/advise/` (one hazard each, with
//! the advice applied, and a clean one): the findings must be exactly those the program marks
//! (`# advise: KIND` at a line, `# advise-expect: KIND` for findings without one). Runs the real
//! binary on the embedded emulator; needs the torch 2.15 venv (`tracer/.venv`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

#[path = "support/skip.rs"]
mod skip;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/advise")
}

/// Findings as (kind, line): a line for those at a call site.
type Findings = BTreeSet<(String, Option<u32>)>;

/// (kind, line) the program says its run must report.
fn expected(source: &str) -> Findings {
    let mut out = BTreeSet::new();
    for (n, line) in source.lines().enumerate() {
        if let Some(kinds) = line.trim_start().strip_prefix("# advise-expect:") {
            out.extend(kinds.split(',').map(|k| (k.trim().to_string(), None)));
        } else if let Some((_, kinds)) = line.split_once("# advise:") {
            out.extend(kinds.split(',').map(|k| (k.trim().to_string(), Some(n as u32 + 1))));
        }
    }
    out
}

fn extra_args(source: &str) -> Vec<String> {
    source
        .lines()
        .find_map(|l| l.strip_prefix("# advise-args:"))
        .map(|a| a.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Runs `program` with `--advise`; returns the findings as (kind, line) and the text shown.
fn advise(program: &Path) -> Option<(Findings, String)> {
    let python = skip::tracer_python()?;
    let source = std::fs::read_to_string(program).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/xla2tpu-test-cache");
    let output = Command::cargo_bin("xla2tpu")
        .unwrap()
        .current_dir(dir.path())
        .env("XLA2TPU_CACHE_DIR", cache)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["run", "--advise", "--report"])
        .arg(&report)
        .args(extra_args(&source))
        .arg("--")
        .arg(&python)
        .arg(program)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(0), "{}: the program must run as it is\n{stderr}", program.display());
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let findings = json["advice"]["findings"].as_array().unwrap_or_else(|| panic!("no advice in the report\n{stderr}"));
    let name = program.file_name().unwrap().to_str().unwrap();
    let found = findings
        .iter()
        .map(|f| {
            let line = f["line"].as_u64().map(|l| l as u32);
            if let Some(file) = f["file"].as_str() {
                assert!(file.ends_with(name), "a finding outside the program: {f}");
            }
            (f["kind"].as_str().unwrap().to_string(), line)
        })
        .collect();
    Some((found, stderr))
}

fn case(name: &str) {
    let dir = corpus().join(name);
    for file in ["before.py", "after.py"] {
        let program = dir.join(file);
        if !program.exists() {
            assert_eq!(file, "after.py", "{name} needs a before.py");
            continue;
        }
        let want = expected(&std::fs::read_to_string(&program).unwrap());
        let Some((got, stderr)) = advise(&program) else { return };
        assert_eq!(got, want, "{name}/{file}: findings (left) differ from the marks (right)\n{stderr}");
        if file == "before.py" && name != "clean" {
            assert!(want.iter().any(|(_, line)| line.is_some()), "{name}/before.py marks no hazard");
            assert!(stderr.contains("help:"), "{name}: the text gives no help\n{stderr}");
        }
    }
}

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { case(stringify!($name)); })*
        const CASES: &[&str] = &[$(stringify!($name)),*];
    };
}

cases!(
    item_every_step,
    branch_on_tensor,
    cpu_every_step,
    mask_built_on_cpu,
    same_tensor_moved,
    boolean_mask,
    foreach_false,
    recompile_last_batch,
    graph_break,
    step_marker,
    clean,
);

#[test]
fn every_corpus_program_is_a_case() {
    let mut on_disk: Vec<String> = std::fs::read_dir(corpus())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CASES.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
fn the_text_names_the_line_the_cost_and_the_fix() {
    let Some((_, text)) = advise(&corpus().join("item_every_step/before.py")) else { return };
    assert!(text.contains("xla2tpu run --advise: 6 steps (optimizer steps)"), "{text}");
    assert!(text.contains("`.item()` reads a value from the chip at "), "{text}");
    assert!(text.contains("item_every_step/before.py:14 (1 per step, in 5 of 5 steps): ~100 µs/step"), "{text}");
    assert!(text.contains("running_loss += loss.detach()"), "{text}");
    assert!(text.contains("estimated host time these cost per step"), "{text}");
}

#[test]
fn marks_are_read_as_written() {
    let src = "# advise-expect: eager_dispatch\nx = 1\ny.item()  # advise: host_sync, transfer\n";
    let want: BTreeSet<(String, Option<u32>)> =
        [("eager_dispatch".to_string(), None), ("host_sync".to_string(), Some(3)), ("transfer".to_string(), Some(3))]
            .into_iter()
            .collect();
    assert_eq!(expected(src), want);
    assert_eq!(extra_args("# advise-args: --step-marker f\n"), vec!["--step-marker", "f"]);
}
