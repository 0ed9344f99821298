//! `xla2tpu sweep` end to end through the real binary: the offline default, files, formats,
//! exit codes, and `--hub` against a local server on 127.0.0.1 (via HF_ENDPOINT).
mod sweep_support;

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use sweep_support::{Reply, Server, entries, fixtures, page_of};

/// The binary with a clean Hub environment: no token, no offline switch, fast retries, and a
/// cache inside `tmp`.
fn sweep(tmp: &Path) -> Command {
    let mut cmd = Command::cargo_bin("xla2tpu").unwrap();
    cmd.arg("sweep")
        .env_remove("HF_TOKEN")
        .env("HF_TOKEN_PATH", "/nonexistent/xla2tpu-test/token") // no saved token of this machine
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("HF_ENDPOINT")
        .env("XLA2TPU_CACHE_DIR", tmp.join("cache"))
        .env("XLA2TPU_HUB_BACKOFF_MS", "10")
        .env("XLA2TPU_HUB_TIMEOUT_MS", "5000")
        .timeout(std::time::Duration::from_secs(120));
    cmd
}

fn with_fixtures(cmd: &mut Command) -> &mut Command {
    cmd.arg("--models").arg(fixtures().join("models.json")).arg("--profiles").arg(fixtures().join("profiles"))
}

#[test]
fn offline_default_top_5000() {
    let tmp = tempfile::tempdir().unwrap();
    sweep(tmp.path())
        .args(["--top", "5000"])
        .assert()
        .success()
        .stdout(predicate::str::contains("xla2tpu sweep: 5,000 models"))
        .stdout(predicate::str::contains("llmfit-core 1.1.18"))
        .stdout(predicate::str::contains("2026-10-12"))
        .stdout(predicate::str::contains("n/a"))
        .stdout(predicate::str::contains("necessary, not sufficient"));
    assert!(!tmp.path().join("cache").exists(), "the offline default touches no cache");
}

#[test]
fn json_output_file_and_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("report.json");
    let ran = sweep(tmp.path())
        .args(["--top", "300", "--format", "json", "--output"])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("wrote"));
    // The report is in the file: the terminal gets one line, not the report.
    let printed = String::from_utf8(ran.get_output().stdout.clone()).unwrap();
    assert_eq!(printed.lines().count(), 1, "{printed}");
    assert!(printed.starts_with("xla2tpu sweep: 300 models: pass rate "), "{printed}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(json["totals"]["total"]["models"], 300);
    assert_eq!(json["models"].as_array().unwrap().len(), 300);
    assert_eq!(json["source"]["kind"], "embedded");
}

#[test]
fn html_report_on_fixtures_with_compare() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("report.html");
    with_fixtures(&mut sweep(tmp.path()))
        .args(["--compare", "torch_xla-2.9", "--format", "html", "-o"])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("compared with torch_xla-2.9"));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.starts_with("<!doctype html>"));
    assert!(html.contains("&#60;script&#62;alert(1)&#60;/script&#62;") && !html.contains("<script>"));
    assert!(html.contains("Compared with torch_xla-2.9"));
}

#[test]
fn every_format_renders_to_stdout() {
    let tmp = tempfile::tempdir().unwrap();
    for (format, needle) in [
        ("md", "## Top blockers"),
        ("csv", "rank,model_id,downloads,verdict"),
        ("json", "\"totals\""),
        ("text", "fix order"),
    ] {
        with_fixtures(&mut sweep(tmp.path()))
            .args(["--format", format])
            .assert()
            .success()
            .stdout(predicate::str::contains(needle));
    }
}

#[test]
fn fail_under_sets_the_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    // The fixtures pass 6 of 18 PyTorch checkpoints: 33.3%.
    with_fixtures(&mut sweep(tmp.path()))
        .args(["--fail-under", "50"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("below --fail-under 50"));
    with_fixtures(&mut sweep(tmp.path())).args(["--fail-under", "30"]).assert().code(0);
}

#[test]
fn errors_exit_2_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.csv");
    std::fs::write(&bad, "model_id,downloads\na,many\n").unwrap();
    sweep(tmp.path()).arg("--models").arg(&bad).assert().code(2).stderr(predicate::str::contains("bad.csv: line 2"));
    sweep(tmp.path())
        .args(["--backend", "nope-1.0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown backend"));
    sweep(tmp.path()).arg("--refresh").assert().code(2);
    sweep(tmp.path()).args(["--models", "x.json", "--hub"]).assert().code(2);
}

#[test]
fn hub_live_then_cached_then_offline() {
    let server = Server::start(|base, target, _| match page_of(base, target, 60, 25) {
        // A hostile id on the first page.
        Reply::Page { body, next } if !target.contains("cursor=") => {
            let mut page: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap();
            page[1]["id"] = "../../etc/passwd".into();
            page[2]["id"] = "<script>alert(1)</script>".into();
            Reply::Page { body: serde_json::to_string(&page).unwrap(), next }
        }
        other => other,
    });
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("hub.html");
    sweep(tmp.path())
        .env("HF_ENDPOINT", server.url())
        .args(["--hub", "--top", "60", "--format", "html", "--output"])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("xla2tpu sweep: 60 models"));
    assert_eq!(server.hits(), 3);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains(&server.url()), "the report names the hub it listed");
    assert!(html.contains("&#60;script&#62;alert(1)&#60;/script&#62;") && !html.contains("<script>"));
    assert!(html.contains("../../etc/passwd"));

    // Nothing written outside the cache and the output.
    let mut written: Vec<String> =
        walk(tmp.path()).into_iter().map(|p| p.strip_prefix(tmp.path()).unwrap().display().to_string()).collect();
    written.sort();
    assert_eq!(written.len(), 4, "{written:?}");
    assert_eq!(written.last().unwrap(), "out/hub.html");
    assert!(written[..3].iter().all(|p| p.starts_with("cache/hub/page-")), "{written:?}");

    // A re-run costs no requests; HF_HUB_OFFLINE works from the cache.
    sweep(tmp.path()).env("HF_ENDPOINT", server.url()).args(["--hub", "--top", "60"]).assert().success();
    sweep(tmp.path())
        .env("HF_ENDPOINT", server.url())
        .env("HF_HUB_OFFLINE", "1")
        .args(["--hub", "--top", "60"])
        .assert()
        .success();
    assert_eq!(server.hits(), 3);
    sweep(tmp.path())
        .env("HF_ENDPOINT", server.url())
        .env("HF_HUB_OFFLINE", "1")
        .args(["--hub", "--refresh", "--top", "60"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("HF_HUB_OFFLINE"));
}

#[test]
fn hub_failure_names_url_and_status() {
    let server = Server::start(|_, target, _| {
        if target.contains("cursor=") {
            Reply::Status { code: 503, retry_after: None }
        } else {
            Reply::Page {
                body: serde_json::to_string(&entries(0..5)).unwrap(),
                next: Some("/api/models?cursor=1".into()),
            }
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    sweep(tmp.path())
        .env("HF_ENDPOINT", server.url())
        .args(["--hub", "--top", "50"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!("{}/api/models?cursor=1", server.url())))
        .stderr(predicate::str::contains("503"));
    assert_eq!(server.hits(), 1 + 5, "one page, then five tries of the failing one");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

#[test]
fn exact_and_bf16_directories_through_the_binary() {
    let tmp = tempfile::tempdir().unwrap();
    // Per-config output as `ops trace --configs` writes it: Llama-3.2-1B traced from its own
    // config, with a complete coverage record.
    let exact = tmp.path().join("exact");
    std::fs::create_dir_all(exact.join("profiles")).unwrap();
    let mut own: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("profiles/transformers/llama.json")).unwrap())
            .unwrap();
    own["id"] = "config/0123abcd".into();
    own["coverage"] = serde_json::json!({"LlamaForCausalLM": {"inference": "ok", "forward": "ok", "backward": "ok"}});
    std::fs::write(exact.join("profiles/0123abcd.json"), own.to_string()).unwrap();
    std::fs::write(
        exact.join("index.json"),
        r#"{"schema": 1, "models": {"meta-llama/Llama-3.2-1B": {"config": "0123abcd", "status": "ok"}}}"#,
    )
    .unwrap();
    let csv = tmp.path().join("r.csv");
    with_fixtures(&mut sweep(tmp.path()))
        .arg("--exact")
        .arg(&exact)
        .arg("--bf16-profiles")
        .arg(fixtures().join("profiles"))
        .args(["--format", "csv", "--output"])
        .arg(&csv)
        .assert()
        .success();
    with_fixtures(&mut sweep(tmp.path()))
        .arg("--exact")
        .arg(&exact)
        .arg("--bf16-profiles")
        .arg(fixtures().join("profiles"))
        .assert()
        .success()
        .stdout(predicate::str::contains("--exact: 1 model"))
        .stdout(predicate::str::contains("bf16 under TorchTPU autocast"));
    let text = std::fs::read_to_string(&csv).unwrap();
    let row = text.lines().find(|l| l.contains("meta-llama/Llama-3.2-1B,")).unwrap();
    assert!(row.contains("config/0123abcd") && row.contains(",true,,pass,"), "{row}");

    // A missing --exact directory is an error naming it; --no-bf16 drops the column.
    with_fixtures(&mut sweep(tmp.path()))
        .arg("--exact")
        .arg(tmp.path().join("nope"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nope"));
    with_fixtures(&mut sweep(tmp.path()))
        .args(["--no-bf16", "--format", "csv"])
        .assert()
        .success()
        .stdout(predicate::str::contains("verdict_bf16").not());
}

/// `--executions` joins the committed execution profiles: every PyTorch checkpoint gets an
/// execution status, the statuses add up, and a model passes both verdicts only if it passes each.
#[test]
fn executions_join_the_op_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let exec_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/exec");
    let out =
        sweep(tmp.path()).args(["--top", "1000", "--format", "json", "--executions"]).arg(&exec_dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let x = &report["execution"];
    let statuses = ["pass", "pass-inference", "partial", "fail", "unknown"];
    let counted: u64 = statuses.iter().map(|s| x["totals"][s]["models"].as_u64().unwrap()).sum();
    let models = report["models"].as_array().unwrap();
    let pytorch: Vec<_> = models.iter().filter(|m| m["verdict"] != "n/a").collect();
    assert_eq!(counted as usize, pytorch.len());
    assert!(pytorch.iter().all(|m| statuses.contains(&m["execution"]["status"].as_str().unwrap())));
    let both = pytorch.iter().filter(|m| m["verdict"] == "pass" && m["execution"]["status"] == "pass").count();
    let rate = x["both_rate"]["by_count"].as_f64().unwrap();
    assert!((rate - 100.0 * both as f64 / pytorch.len() as f64).abs() < 1e-9);
    // A failed run names its kind, and the disagreement table counts only one-sided passes.
    let failed = pytorch.iter().find(|m| m["execution"]["status"] == "fail").expect("a failing run in the top 1000");
    assert!(failed["execution"]["failure"]["kind"].is_string());
    for d in x["disagreements"].as_array().unwrap() {
        assert_ne!(d["op_verdict"] == "pass", d["execution"] == "pass");
    }
    assert!(models.iter().filter(|m| m["verdict"] == "n/a").all(|m| m.get("execution").is_none()));
}

/// The default answer has both verdicts (issue 46): the execution verdicts are built in, every
/// format leads with the same figures over the same denominator, and a pass that rests on what
/// the emulator could not check is a line of its own. `--no-executions` leaves them out and
/// `--executions DIR` takes a fresh run.
#[test]
fn the_default_answer_is_op_coverage_and_runs_on_the_chip_over_one_denominator() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = sweep(tmp.path()).args(["--top", "5000"]).args(args).output().expect("runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let json: serde_json::Value = serde_json::from_str(&run(&["--format", "json"])).expect("JSON");
    let h = &json["headline"];
    let pytorch = h["pytorch"]["models"].as_u64().expect("a denominator");
    assert_eq!(
        pytorch,
        json["totals"]["total"]["models"].as_u64().unwrap()
            - json["totals"]["not_applicable"]["models"].as_u64().unwrap()
    );
    let figure = |key: &str| {
        let rate = &h[key];
        (
            format!("{:.1}%", rate["by_count"].as_f64().unwrap()),
            format!("{:.1}%", rate["by_downloads"].as_f64().unwrap()),
        )
    };
    let figures = ["op_coverage", "runs", "both"].map(figure);
    assert_eq!(figures[0].0, format!("{:.1}%", json["totals"]["pass_rate"]["by_count"].as_f64().unwrap()));
    assert!(json["execution"]["source"].as_str().unwrap().contains("[embedded]"));
    let text = run(&[]);
    let md = run(&["--format", "md"]);
    let html = run(&["--format", "html"]);
    let denominator = format!("of {} PyTorch checkpoints", xla2tpu::sweep::tally::thousands(pytorch as usize));
    for (format, out) in [("text", &text), ("md", &md), ("html", &html)] {
        assert!(out.contains(&denominator), "{format}: {denominator}");
        for (label, (count, downloads)) in
            ["op coverage passes", "runs on the emulated chip", "both"].iter().zip(&figures)
        {
            let line = out.lines().find(|l| l.contains(label)).unwrap_or_else(|| panic!("{format}: no `{label}`"));
            assert!(line.contains(count.as_str()) && line.contains(downloads.as_str()), "{format}: {line}");
        }
    }
    // The chart's pass bar is the card's share (the same denominator), not a share of all models.
    let op_by_downloads = &figures[0].1;
    assert!(html.contains(&format!("title=\"pass: {op_by_downloads}\"")), "chart and card disagree");
    // A pass resting on what the emulator could not check is a row of its own in every format,
    // naming what it rests on (the built-in runs have none since int32 histc was settled from
    // the wheel, so a run directory holds one).
    let runs = tmp.path().join("runs");
    std::fs::create_dir_all(runs.join("transformers")).unwrap();
    std::fs::write(
        runs.join("transformers/qwen3.json"),
        r#"{"schema": 1, "id": "transformers/qwen3", "library": "transformers", "name": "qwen3",
        "precisions": {"float32": {"status": "pass", "unchecked": ["aten::frobnicate on int8: not checked"]},
        "bf16-autocast": {"status": "pass"}}}"#,
    )
    .unwrap();
    let runs = runs.to_str().unwrap();
    for format in ["text", "md", "html"] {
        let out = run(&["--format", format, "--executions", runs]);
        assert!(out.lines().any(|l| l.contains("pass, unchecked") && l.contains("aten::frobnicate")), "{format}");
        assert!(out.contains("both, resting on nothing unchecked"), "{format}");
    }
    let csv = run(&["--format", "csv", "--executions", runs]);
    assert!(csv.lines().next().unwrap().contains("execution_rests_on"));
    assert!(csv.lines().any(|l| l.contains("Qwen/") && l.contains("aten::frobnicate on int8")));
    // Off, and from a directory.
    let off = run(&["--no-executions"]);
    assert!(off.contains("op coverage passes") && off.contains("left out: --no-executions"), "{off}");
    assert!(!off.lines().any(|l| l.contains("runs on the emulated chip") && l.contains("by count")), "{off}");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/exec");
    let from_dir: serde_json::Value =
        serde_json::from_str(&run(&["--format", "json", "--executions", dir.to_str().unwrap()])).unwrap();
    assert_eq!(from_dir["headline"], json["headline"], "the embedded runs are corpus/exec");
}
