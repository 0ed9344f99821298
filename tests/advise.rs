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

/// The static side (`check --select TPU75`) agrees with what the runs measure: each of its
/// findings on `corpus/advise` sits where the run marks the same hazard, the advice applied
/// (`after.py`, `clean/`) leaves none, and each marked sync, dynamic shape and graph break is
/// found, except in `step_marker`, whose step is a function named only at run time.
#[test]
fn check_finds_statically_what_the_runs_measure() {
    let statically = |kind: &str| -> &[&str] {
        match kind {
            "host_sync" => &["TPU751", "TPU753"],
            "graph_break" => &["TPU753"],
            "dynamic_shape" => &["TPU754"],
            "recompile" => &["TPU755"],
            _ => &[],
        }
    };
    let mut problems = Vec::new();
    for dir in std::fs::read_dir(corpus()).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()) {
        for program in std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()) {
            if program.extension().is_none_or(|e| e != "py") {
                continue;
            }
            let source = std::fs::read_to_string(&program).unwrap();
            let out = Command::cargo_bin("xla2tpu")
                .unwrap()
                .args(["check", "--select", "TPU75", "--output-format", "json"])
                .arg(&program)
                .output()
                .unwrap();
            let found: serde_json::Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{}: {e}\n{}", program.display(), String::from_utf8_lossy(&out.stderr)));
            let found: Vec<(String, u64)> = found
                .as_array()
                .unwrap()
                .iter()
                .map(|d| (d["code"].as_str().unwrap().to_string(), d["location"]["row"].as_u64().unwrap()))
                .collect();
            let marks = expected(&source);
            let name = program.strip_prefix(corpus()).unwrap().display().to_string();
            for (code, line) in &found {
                let explained = marks.iter().any(|(kind, at)| {
                    statically(kind).contains(&code.as_str()) && (code == "TPU755" || *at == Some(*line as u32))
                });
                if !explained {
                    problems.push(format!("{name}:{line}: {code} where the run marks no such hazard"));
                }
            }
            if dir.ends_with("step_marker") {
                continue;
            }
            for (kind, at) in &marks {
                let codes = statically(kind);
                let seen =
                    found.iter().any(|(c, l)| codes.contains(&c.as_str()) && (c == "TPU755" || Some(*l as u32) == *at));
                if !codes.is_empty() && !seen {
                    problems.push(format!("{name}:{at:?}: the run's {kind} has no {codes:?} finding"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `migrate`'s fast form (TPU752's unsafe fix, issue 23 item 3) on a corpus program that ended
/// each step with `mark_step`: the migrated program runs on the emulator in deferred eager mode,
/// and the advice on it is the plain migration's without the ops-dispatched-alone finding.
#[test]
fn the_fast_form_runs_deferred_and_loses_only_the_eager_finding() {
    let Some(_) = skip::tracer_python() else { return };
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/migrate/defect_06b_del_torch_xla");
    let dir = tempfile::tempdir().unwrap();
    let (plain, fast) = (dir.path().join("plain.py"), dir.path().join("fast.py"));
    std::fs::copy(source.join("expected.py"), &plain).unwrap();
    std::fs::copy(source.join("input.py"), &fast).unwrap();
    Command::cargo_bin("xla2tpu")
        .unwrap()
        .args(["migrate", "--extend-select", "TPU752", "--unsafe-fixes", "--write"])
        .arg(&fast)
        .assert()
        .success();
    let migrated = std::fs::read_to_string(&fast).unwrap();
    assert!(migrated.contains("torch.tpu.eager_mode = torch.tpu.EagerMode.DEFER_AND_FUSE"), "{migrated}");
    assert!(!migrated.contains("mark_step"), "{migrated}");
    let (Some((plain, _)), Some((fast, stderr))) = (advise(&plain), advise(&fast)) else { return };
    assert!(plain.iter().any(|(kind, _)| kind == "eager_dispatch"), "{plain:?}");
    let mut want = plain.clone();
    want.retain(|(kind, _)| kind != "eager_dispatch");
    // The fast form's lines are shifted by the statement it adds: the kinds are compared.
    let kinds = |f: &Findings| -> BTreeSet<String> { f.iter().map(|(k, _)| k.clone()).collect() };
    assert_eq!(kinds(&fast), kinds(&want), "{stderr}");
}

/// The advice's code examples are code people paste: each runs on the emulator, in a context
/// that gives the names it uses (`tests/fixtures/advice_examples.py`).
#[test]
fn every_code_example_of_the_advice_runs_on_the_emulator() {
    let Some(python) = skip::tracer_python() else { return };
    let examples = xla2tpu::run::advise::examples();
    assert!(examples.len() >= 15, "every kind of finding brings its example: {examples:?}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("examples.json"), serde_json::to_string(&examples).unwrap()).unwrap();
    let runner = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/advice_examples.py");
    let output = Command::cargo_bin("xla2tpu")
        .unwrap()
        .current_dir(dir.path())
        .env("XLA2TPU_CACHE_DIR", Path::new(env!("CARGO_MANIFEST_DIR")).join("target/xla2tpu-test-cache"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["run", "--"])
        .arg(&python)
        .arg(&runner)
        .arg("examples.json")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
