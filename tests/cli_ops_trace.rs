//! `xla2tpu ops trace --configs DIR | --hub --top N [--ray ADDRESS]`: the Hub configs are
//! listed and fetched from a local server on 127.0.0.1 (404, malformed JSON, other libraries,
//! the cache), laid out as DIR/<owner>/<name>/config.json and handed to the tracer's `exact`.
//! Most tests run a stand-in for the tracer's Python that records what it was given; the last
//! one runs the real tracer (skipped without tracer/.venv unless XLA2TPU_REQUIRE_TRACER is set).
#[path = "support/skip.rs"]
mod skip;
mod sweep_support;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use sweep_support::{Reply, Server};

const BERT: &str = r#"{"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 32,
  "num_hidden_layers": 3, "num_attention_heads": 4, "intermediate_size": 37, "vocab_size": 1124,
  "max_position_embeddings": 128, "type_vocab_size": 2}"#;
const LLAMA: &str = r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
  "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 3,
  "vocab_size": 1000, "max_position_embeddings": 256}"#;

/// A listing of six models: two good transformers configs, a 404, a malformed file, and two
/// repositories of other libraries.
fn hub() -> Server {
    Server::start(|_, target, _| {
        let model = |id: &str, lib: &str, mt: Option<&str>| {
            let mut e = serde_json::json!({"id": id, "downloads": 100, "library_name": lib, "tags": [lib]});
            if let Some(mt) = mt {
                e["config"] = serde_json::json!({"model_type": mt});
            }
            e
        };
        let body = |s: &str| Reply::Page { body: s.to_string(), next: None };
        match target {
            t if t.starts_with("/api/models?") => body(
                &serde_json::json!([
                    model("org/bert-a", "transformers", Some("bert")),
                    model("org/llama-b", "transformers", Some("llama")),
                    model("org/missing", "transformers", Some("bert")),
                    model("org/bad", "transformers", Some("bert")),
                    model("org/pipe", "diffusers", None),
                    model("timm/resnet", "timm", None),
                ])
                .to_string(),
            ),
            "/org/bert-a/resolve/main/config.json" => body(BERT),
            "/org/llama-b/resolve/main/config.json" => body(LLAMA),
            "/org/bad/resolve/main/config.json" => body("{\"model_type\": \"bert\", "),
            _ => Reply::Status { code: 404, retry_after: None },
        }
    })
}

/// A checkout whose tracer "python" records its arguments, PYTHONPATH and the configs it got.
fn fake_repo(tmp: &Path) -> (PathBuf, PathBuf) {
    let repo = tmp.join("repo");
    let record = tmp.join("record");
    std::fs::create_dir_all(repo.join("tracer/xla2tpu_tracer")).unwrap();
    std::fs::create_dir_all(repo.join("tracer/.venv/bin")).unwrap();
    std::fs::create_dir_all(&record).unwrap();
    let python = repo.join("tracer/.venv/bin/python");
    std::fs::write(
        &python,
        r#"#!/bin/sh
printf '%s\n' "$@" > "$XLA2TPU_TEST_RECORD/args"
printf '%s\n' "$PYTHONPATH" > "$XLA2TPU_TEST_RECORD/pythonpath"
prev=""
for a in "$@"; do
    if [ "$prev" = "--configs" ]; then rm -rf "$XLA2TPU_TEST_RECORD/configs"; cp -R "$a" "$XLA2TPU_TEST_RECORD/configs"; fi
    prev="$a"
done
"#,
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (repo, record)
}

fn ops_trace(tmp: &Path, server: &Server, record: &Path) -> Command {
    let mut cmd = Command::cargo_bin("xla2tpu").unwrap();
    cmd.args(["ops", "trace"])
        .env_remove("HF_TOKEN")
        .env("HF_TOKEN_PATH", "/nonexistent/xla2tpu-test/token") // no saved token of this machine
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("PYTHONPATH")
        .env("HF_ENDPOINT", server.url())
        .env("XLA2TPU_CACHE_DIR", tmp.join("cache"))
        .env("XLA2TPU_HUB_BACKOFF_MS", "10")
        .env("XLA2TPU_HUB_TIMEOUT_MS", "5000")
        .env("XLA2TPU_TEST_RECORD", record)
        .timeout(std::time::Duration::from_secs(120));
    cmd
}

fn config_hits(server: &Server, id: &str) -> usize {
    let target = format!("/{id}/resolve/main/config.json");
    server.requests.lock().unwrap().iter().filter(|r| r.target == target).count()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn hub_configs_are_fetched_cached_and_handed_to_exact() {
    let server = hub();
    let tmp = tempfile::tempdir().unwrap();
    let (repo, record) = fake_repo(tmp.path());
    let out = tmp.path().join("out");
    let run = |extra: &[&str]| {
        ops_trace(tmp.path(), &server, &record)
            .arg("--repo")
            .arg(&repo)
            .args(["--hub", "--top", "6", "--ray", "127.0.0.1:6390", "--jobs", "3", "--out"])
            .arg(&out)
            .args(extra)
            .assert()
            .success()
    };

    let first = run(&[]);
    let stderr = String::from_utf8_lossy(&first.get_output().stderr).to_string();
    let url = |id: &str| format!("{}/{id}/resolve/main/config.json", server.url());
    assert!(stderr.contains(&url("org/missing")) && stderr.contains("404"), "{stderr}");
    assert!(stderr.contains(&url("org/bad")) && stderr.contains("invalid JSON"), "{stderr}");
    assert!(
        stderr.contains("2 configs (0 from the cache, 4 requests), 2 not transformers (skipped), 2 failed"),
        "{stderr}"
    );
    assert_eq!(config_hits(&server, "org/missing"), 1, "a 404 is not retried");
    assert_eq!(config_hits(&server, "org/pipe") + config_hits(&server, "timm/resnet"), 0);

    let args = lines(&record.join("args"));
    let configs = args.iter().position(|a| a == "--configs").map(|i| &args[i + 1]).expect("--configs passed");
    assert_eq!(&args[..3], ["-m", "xla2tpu_tracer", "exact"]);
    for pair in [["--out", out.to_str().unwrap()], ["--ray", "127.0.0.1:6390"], ["--jobs", "3"]] {
        assert!(args.windows(2).any(|w| w == pair), "{pair:?} not in {args:?}");
    }
    assert!(!Path::new(configs).exists(), "the temp configs dir is removed after the run");
    let got = record.join("configs");
    assert_eq!(std::fs::read_to_string(got.join("org/bert-a/config.json")).unwrap(), BERT);
    assert_eq!(std::fs::read_to_string(got.join("org/llama-b/config.json")).unwrap(), LLAMA);
    let mut laid_out: Vec<_> = walk(&got);
    laid_out.sort();
    assert_eq!(laid_out, ["org/bert-a/config.json", "org/llama-b/config.json"]);
    assert_eq!(lines(&record.join("pythonpath")), [repo.join("tracer").to_str().unwrap()]);

    // Re-run: the listing and the good configs come from the cache; the failures are retried.
    let second = run(&[]);
    let stderr = String::from_utf8_lossy(&second.get_output().stderr).to_string();
    assert!(stderr.contains("2 configs (2 from the cache, 2 requests)"), "{stderr}");
    assert_eq!((config_hits(&server, "org/bert-a"), config_hits(&server, "org/bad")), (1, 2));

    // --refresh fetches again.
    run(&["--refresh"]);
    assert_eq!(config_hits(&server, "org/bert-a"), 2);
}

fn walk(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out
}

#[test]
fn offline_without_cached_configs_names_each_url() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, record) = fake_repo(tmp.path());
    // Cache the listing only.
    let list_only = Server::start(|_, target, _| {
        if target.starts_with("/api/models?") {
            Reply::Page { body: r#"[{"id": "org/bert-a", "library_name": "transformers"}]"#.into(), next: None }
        } else {
            Reply::Status { code: 404, retry_after: None }
        }
    });
    let _ = ops_trace(tmp.path(), &list_only, &record)
        .arg("--repo")
        .arg(&repo)
        .args(["--hub", "--top", "1", "--out"])
        .arg(tmp.path().join("out"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("no config.json could be fetched"));
    ops_trace(tmp.path(), &list_only, &record)
        .env("HF_HUB_OFFLINE", "1")
        .arg("--repo")
        .arg(&repo)
        .args(["--hub", "--top", "1", "--out"])
        .arg(tmp.path().join("out"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("HF_HUB_OFFLINE").and(predicate::str::contains("/org/bert-a/resolve/main")));
}

#[test]
fn configs_dir_is_passed_as_is_and_flags_are_checked() {
    let server = hub();
    let tmp = tempfile::tempdir().unwrap();
    let (repo, record) = fake_repo(tmp.path());
    let dir = tmp.path().join("cfgs");
    std::fs::create_dir_all(dir.join("org/x")).unwrap();
    std::fs::write(dir.join("org/x/config.json"), BERT).unwrap();
    ops_trace(tmp.path(), &server, &record)
        .arg("--repo")
        .arg(&repo)
        .arg("--configs")
        .arg(&dir)
        .arg("--out")
        .arg(tmp.path().join("out"))
        .args(["--", "--memory-mb", "3000"])
        .assert()
        .success();
    let args = lines(&record.join("args"));
    assert!(args.windows(2).any(|w| w == ["--configs", dir.to_str().unwrap()]), "{args:?}");
    assert!(args.windows(2).any(|w| w == ["--memory-mb", "3000"]), "{args:?}");
    assert_eq!(server.hits(), 0, "--configs needs no network");

    let fail = |args: &[&str], msg: &str| {
        ops_trace(tmp.path(), &server, &record)
            .arg("--repo")
            .arg(&repo)
            .args(args)
            .assert()
            .failure()
            .stderr(predicate::str::contains(msg.to_string()));
    };
    fail(&["--configs", dir.to_str().unwrap()], "--out OUT is required");
    fail(&["--ray", "127.0.0.1:1"], "use it with --configs DIR or --hub");
    fail(&["--hub", "--out", "o"], "--top");
    fail(&["--hub", "--top", "3", "--configs", "d", "--out", "o"], "cannot be used with");
}

/// The real tracer behind the real binary: one tiny config traced into OUT.
#[test]
fn real_tracer_traces_a_configs_dir() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if skip::tracer_python().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cfgs");
    std::fs::create_dir_all(dir.join("org/bert-a")).unwrap();
    std::fs::write(dir.join("org/bert-a/config.json"), BERT).unwrap();
    let out = tmp.path().join("out");
    Command::cargo_bin("xla2tpu")
        .unwrap()
        .args(["ops", "trace", "--repo"])
        .arg(root)
        .arg("--configs")
        .arg(&dir)
        .arg("--out")
        .arg(&out)
        .args(["--jobs", "1", "--", "--log-dir"])
        .arg(tmp.path().join("logs"))
        .env("HF_HUB_OFFLINE", "1")
        .timeout(std::time::Duration::from_secs(300))
        .assert()
        .success();
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("index.json")).unwrap()).unwrap();
    let entry = &index["models"]["org/bert-a"];
    assert_eq!(entry["status"], "ok", "{index}");
    let key = entry["config"].as_str().unwrap();
    let profile: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join(format!("profiles/{key}.json"))).unwrap()).unwrap();
    assert_eq!(profile["id"], format!("config/{key}"));
    assert_eq!(profile["models"], serde_json::json!(["org/bert-a"]));
    assert_eq!(profile["config_source"], "hub config.json, depth reduced to 2 (num_hidden_layers 3 -> 2)");

    // The contract with `sweep --exact`: the model is judged by its own profile, and says so.
    let list = tmp.path().join("list.csv");
    std::fs::write(&list, "model_id,downloads,model_type,library_name\norg/bert-a,10,bert,transformers\n").unwrap();
    let report = tmp.path().join("r.json");
    Command::cargo_bin("xla2tpu")
        .unwrap()
        .args(["sweep", "--format", "json", "--models"])
        .arg(&list)
        .arg("--exact")
        .arg(&out)
        .arg("--output")
        .arg(&report)
        .assert()
        .success()
        .stdout(predicates::str::contains("--exact: 1 model"));
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let row = &r["models"][0];
    assert_eq!(row["exact"], true);
    assert_eq!(row["profiles"], serde_json::json!([format!("config/{key}")]));
    let note = row["confidence"][0].as_str().unwrap();
    assert!(note.contains("hub config.json, depth reduced to 2") && note.contains("real tensors"), "{note}");
}
