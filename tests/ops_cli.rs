//! `xla2tpu ops …` through the real binary. Fixture tests (hand-made corpus and backend under
//! tests/fixtures/ops) always run; tests on the real traced corpus skip until it exists.
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> PathBuf {
    root().join("tests/fixtures/ops")
}

/// `xla2tpu ops --profiles <fixture corpus> ARGS...`
fn ops_fixture(args: &[&str]) -> Command {
    let mut cmd = Command::cargo_bin("xla2tpu").unwrap();
    cmd.arg("ops").arg("--profiles").arg(fixtures().join("corpus")).args(args);
    cmd
}

fn mini_backend() -> String {
    fixtures().join("backends/mini-1.tsv").to_string_lossy().into_owned()
}

/// Snapshots live with the other ops fixtures (tests/fixtures/ops/snapshots).
fn snapshot(name: &str, out: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("fixtures/ops/snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(name, out));
}

fn stdout_of(mut cmd: Command, code: i32) -> String {
    let out = cmd.assert().code(code).get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}

#[test]
fn check_passing_model_text() {
    let out = stdout_of(ops_fixture(&["check", "good", "--backend", &mini_backend()]), 0);
    snapshot("ops_check_pass", &out);
}

#[test]
fn check_training_only_failure_keeps_inference_and_exits_1() {
    let out = stdout_of(ops_fixture(&["check", "transformers/trainbad", "--backend", &mini_backend()]), 1);
    snapshot("ops_check_training_only", &out);
}

#[test]
fn check_json_has_verdict_missing_ops_and_provenance() {
    let out = stdout_of(ops_fixture(&["check", "timm/broken", "--backend", &mini_backend(), "--format", "json"]), 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["evaluation"]["pass"], false);
    assert_eq!(v["evaluation"]["inference_ok"], false);
    assert_eq!(v["evaluation"]["missing"][0]["op"], "aten::erfc");
    assert_eq!(v["evaluation"]["missing"][0]["reason"], "structured delegate aten::erfc.out has no kernel");
    assert_eq!(v["profile"]["versions"]["timm"], "1.0.31");
    assert_eq!(v["profile"]["method"], "default/cpu");
    assert_eq!(v["backend"]["name"], "mini-1");
}

#[test]
fn check_against_builtin_torchtpu_resolves_sdpa() {
    let out = stdout_of(ops_fixture(&["check", "good"]), 0);
    assert!(out.contains("transformers/good on torchtpu-0.2.0: PASS"), "{out}");
    assert!(out.contains("aten::_scaled_dot_product_fused_attention_overrideable"), "{out}");
}

#[test]
fn check_hub_id_guesses_model_type_from_the_repo_name() {
    let out = stdout_of(ops_fixture(&["check", "someorg/good-base-uncased", "--backend", &mini_backend()]), 0);
    assert!(out.starts_with("note: model type 'good' guessed from the Hub id someorg/good-base-uncased"), "{out}");
}

#[test]
fn check_hub_id_cuts_at_underscores_and_dots_too() {
    // `train_bad` is a profile name; the longest matching prefix wins over `train`.
    let out = stdout_of(ops_fixture(&["check", "org/Train_Bad.v2-7b", "--backend", &mini_backend()]), 1);
    assert!(out.contains("model type 'train_bad' guessed"), "{out}");
}

#[test]
fn check_unknown_hub_id_asks_for_sweep_resolution() {
    ops_fixture(&["check", "someorg/mystery-7b"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("config.json").and(predicate::str::contains("sweep")));
}

#[test]
fn check_failed_trace_explains_why_there_is_no_profile() {
    ops_fixture(&["check", "crashy"]).assert().code(2).stderr(
        predicate::str::contains("transformers/crashy has no profile: tracing ended with status 'crash'")
            .and(predicate::str::contains("killed: RSS > 6000 MB")),
    );
}

#[test]
fn check_hub_id_of_a_failed_type_explains_the_failure() {
    ops_fixture(&["check", "org/crashy-13b"]).assert().code(2).stderr(
        predicate::str::contains("org/crashy-13b looks like model type 'crashy'")
            .and(predicate::str::contains("killed: RSS > 6000 MB")),
    );
}

#[test]
fn check_unknown_backend_lists_builtins() {
    ops_fixture(&["check", "good", "--backend", "nope-1.0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("torchtpu-0.2.0").and(predicate::str::contains("torch_xla-2.9")));
}

#[test]
fn diff_fixture_backend_against_torchtpu() {
    let out = stdout_of(ops_fixture(&["diff", &mini_backend(), "torchtpu-0.2.0"]), 0);
    // timm/broken needs aten::median (missing on both) and aten::erfc (missing on both):
    // stays failing. trainbad fails on mini (fused_attn_backward) and passes on TorchTPU.
    assert!(
        out.contains("Now passing (were missing): 1\n  transformers/trainbad: aten::_scaled_dot_product_flash_attention_for_cpu_backward"),
        "{out}"
    );
    assert!(out.contains("model types passing: 1 -> 2"), "{out}");
    assert!(out.contains("Ops used by profiles, gained (1):\n  aten::_scaled_dot_product_flash_attention_for_cpu_backward  (1 model type)"), "{out}");
}

#[test]
fn diff_torch_xla_to_torchtpu_json() {
    let out = stdout_of(ops_fixture(&["diff", "torch_xla-2.9", "torchtpu-0.2.0", "--format", "json"]), 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let lost: Vec<&str> = v["all_lost"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
    let gained: Vec<&str> = v["all_gained"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
    // Anchors that follow directly from the two tables.
    assert!(gained.contains(&"aten::histc"), "TorchTPU has a kernel, torch_xla does not");
    // torch_xla differentiates native_layer_norm itself, so its backward kernel is no gain.
    assert!(!gained.contains(&"aten::native_layer_norm_backward"));
    assert!(lost.contains(&"aten::mish"), "torch_xla registers mish; TorchTPU's mish.out is missing");
    assert!(lost.contains(&"aten::erfc"), "torch_xla registers erfc; TorchTPU's erfc.out is missing");
    assert!(!lost.contains(&"aten::addmm") && !gained.contains(&"aten::addmm"), "both have addmm");
    assert_eq!(v["profiles"], 3);
}

#[test]
fn show_op_on_every_backend() {
    let out = stdout_of(ops_fixture(&["show", "_scaled_dot_product_fused_attention_overrideable"]), 0);
    snapshot("ops_show_sdpa_overrideable", &out);
}

#[test]
fn show_lists_profiles_using_the_op() {
    let out = stdout_of(ops_fixture(&["show", "aten::index_select"]), 0);
    assert!(out.contains("Inside composite ops in 1 more: transformers/good"), "{out}");
    let out = stdout_of(ops_fixture(&["show", "mm"]), 0);
    assert!(
        out.contains("Used by 2 profiles\n  transformers/good (12 calls)\n  transformers/trainbad (3 calls)"),
        "{out}"
    );
    let out = stdout_of(ops_fixture(&["show", "aten::median"]), 0);
    assert!(out.contains("Used by 1 profile\n  timm/broken (1 call)\n"), "{out}");
}

#[test]
fn show_judges_a_composite_by_the_ops_its_kernel_calls() {
    // No model profile records aten::kthvalue; the API table saw its kernel call
    // aten::kthvalue.values, which TorchTPU 0.2.0 lacks, so it is missing, not "unverified".
    let out = stdout_of(ops_fixture(&["show", "aten::kthvalue"]), 0);
    assert!(out.contains("missing: its composite kernel calls aten::kthvalue.values, without a kernel"), "{out}");
}

#[test]
fn show_without_overload_suggests_overloads() {
    ops_fixture(&["show", "add"]).assert().code(2).stderr(predicate::str::contains("aten::add.Tensor"));
}

#[test]
fn dump_backend_reports_a_missing_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    ops_fixture(&["dump-backend", "--python", "/nonexistent/python", "--output"])
        .arg(dir.path().join("x.tsv"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/nonexistent/python"));
    assert!(!dir.path().join("x.tsv").exists(), "no file written on failure");
}

/// A stand-in interpreter: a shell script that ignores its arguments and prints `body`.
#[cfg(unix)]
fn fake_python(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("python");
    std::fs::write(&path, format!("#!/bin/sh\ncat <<'EOF'\n{body}EOF\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[cfg(unix)]
#[test]
fn dump_backend_writes_what_the_script_prints_once_it_parses() {
    let dir = tempfile::tempdir().unwrap();
    let tsv = std::fs::read_to_string(fixtures().join("backends/mini-1.tsv")).unwrap();
    let python = fake_python(dir.path(), &tsv);
    let out = dir.path().join("new-backend.tsv");
    ops_fixture(&["dump-backend", "--python"])
        .arg(&python)
        .arg("--output")
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("(13 ops, 4 with a backend kernel)"));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), tsv);
}

#[cfg(unix)]
#[test]
fn dump_backend_rejects_output_that_is_not_a_backend_tsv() {
    let dir = tempfile::tempdir().unwrap();
    let python = fake_python(dir.path(), "Traceback: something went wrong\n");
    let out = dir.path().join("x.tsv");
    ops_fixture(&["dump-backend", "--python"])
        .arg(&python)
        .arg("--output")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does not parse"));
    assert!(!out.exists());
}

/// `dump-backend --output` replaces only an earlier backend table, through a symlink too, and
/// never an input of the run or another file.
#[cfg(unix)]
#[test]
fn dump_backend_replaces_only_an_earlier_table() {
    let dir = tempfile::tempdir().unwrap();
    let tsv = std::fs::read_to_string(fixtures().join("backends/mini-1.tsv")).unwrap();
    let python = fake_python(dir.path(), &tsv);
    let dump = |output: &Path| {
        let mut cmd = ops_fixture(&["dump-backend", "--python"]);
        cmd.arg(&python).arg("--registered").arg(dir.path().join("kernels.txt")).arg("--output").arg(output);
        cmd
    };
    std::fs::write(dir.path().join("kernels.txt"), "aten::mm\n").unwrap();
    std::fs::write(dir.path().join("notes.md"), "# notes\n").unwrap();
    for input in ["kernels.txt", "notes.md"] {
        dump(&dir.path().join(input))
            .assert()
            .code(2)
            .stderr(predicate::str::contains("is not an earlier backend table; not overwritten"));
    }
    assert_eq!(std::fs::read_to_string(dir.path().join("kernels.txt")).unwrap(), "aten::mm\n");
    assert_eq!(std::fs::read_to_string(dir.path().join("notes.md")).unwrap(), "# notes\n");
    // An earlier table, reached through a symlink: written through it, the link stays.
    let table = dir.path().join("old.tsv");
    std::fs::write(&table, "# format: xla2tpu-backend/1\n# backend: old\nop\tclass\teffective\tstructured_delegate\n")
        .unwrap();
    let link = dir.path().join("link.tsv");
    std::os::unix::fs::symlink(&table, &link).unwrap();
    dump(&link).assert().success();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(&table).unwrap(), tsv);
}

/// `ops check/diff/show -o FILE` write what standard output gets, and replace only an earlier
/// `ops` result.
#[test]
fn ops_results_go_to_the_output_file_and_replace_only_earlier_ones() {
    let dir = tempfile::tempdir().unwrap();
    let backend = mini_backend();
    let commands: [&[&str]; 3] =
        [&["check", "good", "--backend", &backend], &["diff", &backend, "torchtpu-0.2.0"], &["show", "mm"]];
    for command in commands {
        for format in ["text", "json"] {
            let mut print = ops_fixture(command);
            print.args(["--output-format", format]);
            let printed = stdout_of(print, 0);
            let file = dir.path().join(format!("{}.{format}", command[0]));
            for _ in 0..2 {
                ops_fixture(command).args(["--output-format", format, "-o"]).arg(&file).assert().success().stdout("");
                assert_eq!(std::fs::read_to_string(&file).unwrap(), printed, "{command:?} {format}");
            }
        }
    }
    let readme = dir.path().join("README.md");
    std::fs::write(&readme, "# My project\n").unwrap();
    ops_fixture(&["show", "mm", "--output-file"])
        .arg(&readme)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not an earlier ops result; not overwritten"));
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), "# My project\n");
}

#[test]
fn trace_without_venv_points_to_setup_script() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join("tracer/xla2tpu_tracer")).unwrap();
    ops_fixture(&["trace", "--only", "bert", "--repo"])
        .arg(repo.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("tracer/setup_venv.sh"));
}

// ------------------------------------------------------------------ real corpus (corpus/ops)

/// Read from disk (`--profiles corpus/ops`): the embedded copy only picks up new files on a
/// rebuild. Skips models the tracer has not produced yet.
fn real_profile_or_skip(model: &str) -> bool {
    let present = root().join(format!("corpus/ops/transformers/{model}.json")).is_file();
    if !present {
        eprintln!("SKIP: corpus/ops has no transformers/{model} profile yet (run `xla2tpu ops trace --only {model}`)");
    }
    present
}

fn real_check(model: &str) -> serde_json::Value {
    let mut cmd = Command::cargo_bin("xla2tpu").unwrap();
    cmd.arg("ops").arg("--profiles").arg(root().join("corpus/ops"));
    let out = cmd.args(["check", model, "--format", "json"]).output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn real_profiles_llama_bert_whisper_vit_pass_on_torchtpu() {
    // All four need SDPA (CPU flash kernel -> the overrideable kernel on TPU, forward and backward),
    // embeddings, norms, matmuls via .out delegates: all present in TorchTPU 0.2.0.
    for model in ["llama", "bert", "whisper", "vit"] {
        if !real_profile_or_skip(model) {
            continue;
        }
        let v = real_check(model);
        let e = &v["evaluation"];
        assert_eq!(e["missing"], serde_json::json!([]), "{model}: {v:#}");
        assert_eq!(e["pass"], true, "{model}");
        assert_eq!(v["profile"]["id"], format!("transformers/{model}"));
        assert!(v["profile"]["versions"]["torch"].is_string(), "{model}: provenance missing");
        let notes = e["notes"].to_string();
        assert!(
            notes.contains("_scaled_dot_product_fused_attention_overrideable"),
            "{model}: SDPA not resolved: {notes}"
        );
    }
}
