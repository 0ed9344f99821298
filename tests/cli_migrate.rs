//! Integration tests: the real binary, its stdout, stderr, exit codes and files on disk.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

const TRAIN: &str = r#""""Docstring."""
import torch
import torch_xla.core.xla_model as xm


def step(model, x):
    device = xm.xla_device()  # the device
    y = model(x.to(device))
    xm.mark_step()
    return y
"#;

const TRAIN_FIXED: &str = r#""""Docstring."""
import torch


def step(model, x):
    device = torch.device("tpu:0")  # the device
    y = model(x.to(device))
    return y
"#;

fn bin() -> Command {
    Command::cargo_bin("xla2tpu").expect("binary builds")
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    fs::write(&p, text).unwrap();
    p
}

#[test]
fn migrate_prints_a_unified_diff_and_leaves_the_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "train.py", TRAIN);
    bin()
        .current_dir(dir.path())
        .args(["migrate", "train.py"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--- a/train.py\n+++ b/train.py"))
        .stdout(predicate::str::contains("-    xm.mark_step()\n"))
        .stdout(predicate::str::contains("+    device = torch.device(\"tpu:0\")  # the device\n"))
        .stderr(predicate::str::contains("1 file scanned, 1 would change"));
    assert_eq!(fs::read_to_string(&file).unwrap(), TRAIN);
}

#[test]
fn write_applies_keeps_permissions_and_a_second_run_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "train.py", TRAIN);
    fs::set_permissions(&file, fs::Permissions::from_mode(0o755)).unwrap();
    bin().args(["migrate", "--write"]).arg(&file).assert().success().stdout("");
    assert_eq!(fs::read_to_string(&file).unwrap(), TRAIN_FIXED);
    assert_eq!(fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o755);
    // No temporary files left behind.
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    bin().arg("migrate").arg(&file).assert().success().stdout("").stderr(predicate::str::contains("0 would change"));
}

#[test]
fn bom_and_crlf_survive_a_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let crlf = TRAIN.replace('\n', "\r\n");
    let mut bytes = "\u{feff}".as_bytes().to_vec();
    bytes.extend_from_slice(crlf.as_bytes());
    let file = dir.path().join("w.py");
    fs::write(&file, &bytes).unwrap();
    bin().args(["migrate", "--write"]).arg(&file).assert().success();
    let out = fs::read(&file).unwrap();
    let mut expected = "\u{feff}".as_bytes().to_vec();
    expected.extend_from_slice(TRAIN_FIXED.replace('\n', "\r\n").as_bytes());
    assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&expected));
}

#[test]
fn bad_inputs_are_reported_by_path_and_the_run_continues() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "good.py", TRAIN);
    write(dir.path(), "py2.py", "print 'hello'\nimport torch_xla\n");
    fs::write(dir.path().join("latin1.py"), b"# coding: latin-1\nx = '\xe9'\n").unwrap();
    fs::write(dir.path().join("binary.py"), b"\x7fELF\x00\x00\x01").unwrap();
    let before_py2 = fs::read(dir.path().join("py2.py")).unwrap();
    bin()
        .current_dir(dir.path())
        .args(["migrate", "--write", "."])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("py2.py:1:").and(predicate::str::contains("syntax error")))
        .stderr(predicate::str::contains("latin1.py: not valid UTF-8"))
        .stderr(predicate::str::contains("binary.py: binary file"))
        .stderr(predicate::str::contains("3 files skipped"));
    assert_eq!(fs::read_to_string(dir.path().join("good.py")).unwrap(), TRAIN_FIXED);
    assert_eq!(fs::read(dir.path().join("py2.py")).unwrap(), before_py2);
}

#[test]
fn missing_paths_and_symlink_loops_do_not_stop_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("pkg");
    fs::create_dir(&sub).unwrap();
    write(&sub, "a.py", TRAIN);
    std::os::unix::fs::symlink(&sub, sub.join("loop")).unwrap();
    bin()
        .current_dir(dir.path())
        .args(["check", "--output-format", "concise", "pkg", "does-not-exist.py"])
        .assert()
        .code(2)
        .stdout(predicate::str::contains("pkg/a.py:7:14: TPU101"))
        .stderr(predicate::str::contains("does-not-exist.py"));
}

#[test]
fn check_exit_codes_gate() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "clean.py", "import torch\nx = torch.ones(2, device='cuda')\n");
    write(dir.path(), "dirty.py", TRAIN);
    bin().current_dir(dir.path()).args(["check", "clean.py"]).assert().code(0);
    bin().current_dir(dir.path()).args(["check", "dirty.py"]).assert().code(1);
    bin().current_dir(dir.path()).args(["check", "--exit-zero", "dirty.py"]).assert().code(0);
    bin().current_dir(dir.path()).args(["check", "--no-such-flag"]).assert().code(2);
}

#[test]
fn check_full_output_has_code_frames_and_help() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "dirty.py", TRAIN);
    bin()
        .current_dir(dir.path())
        .args(["check", "--color", "never", "dirty.py"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("TPU110(mark-step)"))
        .stdout(predicate::str::contains("xm.mark_step()"))
        .stdout(predicate::str::contains("fix: delete"))
        .stdout(predicate::str::contains("help: delete it"))
        .stderr(predicate::str::contains("1 file checked: 3 findings (2 fixable"));
}

#[test]
fn check_machine_formats() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "dirty.py", TRAIN);
    let out = bin().current_dir(dir.path()).args(["check", "--output-format", "json", "dirty.py"]).output().unwrap();
    let items: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let codes: Vec<&str> = items.as_array().unwrap().iter().map(|i| i["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["TPU001", "TPU101", "TPU110"]);
    assert_eq!(items[1]["location"], serde_json::json!({"row": 7, "column": 14}));
    assert_eq!(items[1]["fix"]["applicability"], "safe");

    bin().current_dir(dir.path()).args(["check", "--output-format", "github", "dirty.py"]).assert().stdout(
        predicate::str::contains(
            "::error title=xla2tpu (TPU110),file=dirty.py,line=9,col=5,endLine=9,endColumn=19::TPU110",
        ),
    );

    let out = bin().current_dir(dir.path()).args(["check", "--output-format", "sarif", "dirty.py"]).output().unwrap();
    let sarif: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 3);
    assert!(sarif["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap().len() > 40);
}

#[test]
fn stdin_in_both_modes() {
    bin()
        .args(["migrate", "-"])
        .write_stdin(TRAIN)
        .assert()
        .success()
        .stdout(predicate::str::contains("--- a/<stdin>"));
    bin().args(["migrate", "--write", "-"]).write_stdin(TRAIN).assert().success().stdout(TRAIN_FIXED);
    bin().args(["migrate", "--write", "-"]).write_stdin(TRAIN_FIXED).assert().success().stdout(TRAIN_FIXED);
    bin()
        .args(["check", "-", "--output-format", "concise"])
        .write_stdin(TRAIN)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("<stdin>:9:5: TPU110"));
}

#[test]
fn select_and_ignore_by_code_or_prefix() {
    bin()
        .args(["migrate", "--write", "--select", "TPU11", "-"])
        .write_stdin(TRAIN)
        .assert()
        .success()
        .stdout(predicate::str::contains("xm.xla_device()").and(predicate::str::contains("mark_step").not()));
    bin()
        .args(["check", "--ignore", "TPU0,TPU101", "--output-format", "concise", "-"])
        .write_stdin(TRAIN)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("TPU110").and(predicate::str::contains("TPU101").not()));
}

#[test]
fn user_rules_extend_the_builtin_ones() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules");
    fs::create_dir(&rules).unwrap();
    write(
        &rules,
        "ours.yaml",
        r#"rules:
  - code: ORG001
    name: our-sync
    match:
      call: [ourlib.tpu.sync_everything]
    message: "`{name}` wraps xm.mark_step"
    help: "delete it"
    fix:
      - safety: safe
        delete: true
    explanation: Our wrapper around mark_step.
"#,
    );
    let src = "from ourlib.tpu import sync_everything\n\nsync_everything()\nprint(1)\n";
    bin()
        .args(["migrate", "--write", "--rules"])
        .arg(&rules)
        .arg("-")
        .write_stdin(src)
        .assert()
        .success()
        .stdout("from ourlib.tpu import sync_everything\n\nprint(1)\n");
    write(&rules, "bad.yaml", "rules:\n  - code: nope\n");
    bin()
        .args(["check", "--rules"])
        .arg(&rules)
        .arg("-")
        .write_stdin(src)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.yaml"));
}

#[test]
fn rule_explains_itself() {
    bin()
        .args(["rule", "TPU110"])
        .assert()
        .success()
        .stdout(predicate::str::contains("# TPU110 (mark-step)"))
        .stdout(predicate::str::contains("Fix: safe"));
    bin().args(["rule", "TPU999"]).assert().code(2).stderr(predicate::str::contains("no rule TPU999"));
}

#[test]
fn noqa_comments_suppress_findings_and_fixes() {
    let src = "import torch_xla.core.xla_model as xm\nxm.mark_step()  # noqa: TPU110\nxm.wait_device_ops()  # noqa: F401\nxm.mark_step()  # noqa\n";
    bin()
        .args(["check", "--output-format", "concise", "-"])
        .write_stdin(src)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("TPU112").and(predicate::str::contains("TPU110").not()));
    bin()
        .args(["migrate", "--write", "-"])
        .write_stdin(src)
        .assert()
        .success()
        .stdout("import torch_xla.core.xla_model as xm\nimport torch\nxm.mark_step()  # noqa: TPU110\ntorch.accelerator.synchronize()  # noqa: F401\nxm.mark_step()  # noqa\n");
}

#[test]
fn a_file_that_crashes_the_engine_is_reported_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let bad = format!("import torch_xla.core.xla_model as xm\n{}\nxm.mark_step()\n", xla2tpu::migrate::PANIC_MARKER);
    write(dir.path(), "a_bad.py", &bad);
    let good = write(dir.path(), "b_good.py", TRAIN);
    for command in ["migrate", "check"] {
        bin()
            .arg(command)
            .arg(dir.path())
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                "a_bad.py: internal error, file left unchanged: fault injected for testing",
            ))
            .stdout(predicate::str::contains("b_good.py"));
    }
    bin().args(["migrate", "--write"]).arg(dir.path()).assert().code(2);
    assert_eq!(fs::read_to_string(dir.path().join("a_bad.py")).unwrap(), bad, "the crashing file is untouched");
    assert_eq!(fs::read_to_string(&good).unwrap(), TRAIN_FIXED, "the other file is migrated");
}

#[test]
fn manual_items_point_at_the_lines_of_the_original_file() {
    let dir = tempfile::tempdir().unwrap();
    // Fixes above the manual item change the line count (three lines become one).
    let src = "import torch_xla.core.xla_model as xm\nxm.mark_step()\nxm.mark_step()\nt = xm.all_reduce(xm.REDUCE_SUM, [1])\n";
    let path = write(dir.path(), "train.py", src);
    bin()
        .args(["migrate", "--unsafe-fixes"])
        .arg(&path)
        .assert()
        .success()
        .stderr(predicate::str::contains("train.py:4:5: TPU207"));
}

#[test]
fn launchers_that_cannot_be_converted_are_reported_with_why() {
    let dir = tempfile::tempdir().unwrap();
    let src = "import torch_xla.distributed.xla_multiprocessing as xmp\nfrom worker import run\n\nxmp.spawn(run, nprocs=4)\nxmp.spawn(print, args=(), nprocs=None)\n";
    let path = write(dir.path(), "launch.py", src);
    bin()
        .args(["migrate", "--unsafe-fixes"])
        .arg(&path)
        .assert()
        .success()
        .stderr(predicate::str::contains("launch.py:4:1: TPU212"))
        .stderr(predicate::str::contains("the worker `run` is not a function defined in this file"))
        .stderr(predicate::str::contains("launch.py:5:1: TPU212"))
        // `nprocs=None` alone is converted (every attached chip): the worker is what stops it.
        .stderr(predicate::str::contains("the worker `print` is not a function defined in this file"))
        .stderr(predicate::str::contains("2 items need manual migration"));
}

/// A Kaggle-style notebook: two code cells share an import; a markdown cell counts in the numbering.
const NOTEBOOK: &str = r##"{
 "cells": [
  {"cell_type": "markdown", "metadata": {}, "source": ["# TPU\n"]},
  {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [], "source": ["import torch\n", "import torch_xla.core.xla_model as xm"]},
  {"cell_type": "code", "execution_count": 2, "metadata": {"scrolled": true}, "outputs": [{"output_type": "stream", "name": "stdout", "text": ["xla:0\n"]}],
   "source": ["device = xm.xla_device()\n", "t = xm.all_reduce(xm.REDUCE_SUM, [torch.ones(1)])\n", "print(device)"]}
 ],
 "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

#[test]
fn notebooks_are_checked_and_migrated_cell_by_cell() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "train.ipynb", NOTEBOOK);
    bin()
        .args(["check", "--output-format", "concise"])
        .arg(dir.path())
        .assert()
        .code(1)
        .stdout(predicate::str::contains("train.ipynb:cell 3:1:10: TPU101 [*]"))
        .stdout(predicate::str::contains("train.ipynb:cell 3:2:5: TPU207"));
    bin()
        .arg("migrate")
        .arg(dir.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("+++ b/").and(predicate::str::contains("train.ipynb:cell 3")))
        .stdout(predicate::str::contains("+device = torch.device(\"tpu:0\")"))
        .stderr(predicate::str::contains("train.ipynb:cell 3:2:5: TPU207"));
    bin().args(["migrate", "--write"]).arg(&path).assert().success();
    let migrated = fs::read_to_string(&path).unwrap();
    // Only the edited cell's source changed; outputs, metadata and layout are the user's.
    let untouched =
        |s: &str| s.replace("\"device = xm.xla_device()\\n\"", "\"device = torch.device(\\\"tpu:0\\\")\\n\"");
    assert_eq!(migrated, untouched(NOTEBOOK));
    bin().args(["migrate", "--write"]).arg(&path).assert().success().stderr(predicate::str::contains("0 fixes"));
}

#[test]
fn the_report_orders_work_and_the_summary_names_it() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "train.py",
        "import torch_xla.core.xla_model as xm\nxm.mark_step()\nt = xm.all_reduce(xm.REDUCE_SUM, [1])\n",
    );
    write(dir.path(), "nb.ipynb", NOTEBOOK);
    let report = dir.path().join("report.md");
    bin()
        .current_dir(dir.path())
        .args(["migrate", "--report", "report.md", "."])
        .assert()
        .success()
        .stderr(predicate::str::contains("2 items need manual migration; report: report.md"));
    let md = fs::read_to_string(&report).unwrap();
    assert!(md.contains("### 1. Distributed (2)"), "{md}");
    assert!(md.contains("| `nb.ipynb:cell 3:2:5` | TPU207 (`xla2tpu rule TPU207`) |"), "{md}");
    assert!(md.contains("| `train.py:3:5` | TPU207"), "{md}");
    assert!(md.contains("| notebook | 1 | 1 |"), "{md}");
    let json = dir.path().join("report.json");
    bin().current_dir(dir.path()).args(["migrate", "--report", "report.json", "."]).assert().success();
    let parsed: serde_json::Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(parsed["totals"]["manual"], 2);
    assert_eq!(parsed["work"][0]["items"][0]["cell"], 3);
    // Given the project by an absolute path, the report still names files inside it.
    let elsewhere = tempfile::tempdir().unwrap();
    bin().current_dir(elsewhere.path()).args(["migrate", "--report", "r.md"]).arg(dir.path()).assert().success();
    let md = fs::read_to_string(elsewhere.path().join("r.md")).unwrap();
    assert!(md.contains("| `train.py:3:5` | TPU207"), "{md}");
    assert!(!md.contains(&dir.path().display().to_string()), "{md}");
}

/// A collective in library code is converted only where a process group can exist on its
/// path: on its own the module creates none and is reported; in a run with the program that
/// spawns the workers calling it, it is converted.
#[test]
fn a_library_collective_converts_only_in_a_run_that_creates_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "engine.py",
        "import torch_xla.core.xla_model as xm\n\n\ndef sync():\n    xm.rendezvous(\"sync\")\n",
    );
    bin()
        .current_dir(dir.path())
        .args(["migrate", "--unsafe-fixes", "engine.py"])
        .assert()
        .success()
        .stdout(predicate::str::contains("dist.barrier()").not())
        .stderr(predicate::str::contains("TPU206").and(predicate::str::contains("no process group exists")));
    write(
        dir.path(),
        "train.py",
        "import torch_xla.distributed.xla_multiprocessing as xmp\nimport engine\n\n\ndef _mp_fn(index):\n    engine.sync()\n\n\nif __name__ == \"__main__\":\n    xmp.spawn(_mp_fn, args=())\n",
    );
    bin()
        .current_dir(dir.path())
        .args(["migrate", "--unsafe-fixes", "."])
        .assert()
        .success()
        .stdout(predicate::str::contains("+        dist.barrier()"))
        .stderr(predicate::str::contains("no process group exists").not());
}

/// `accelerate launch --config_file F` without TPU flags launches torch_xla when F, a config of
/// the run, says `distributed_type: XLA`: the launch gets TorchTPU's topology and one process per
/// chip with the config (TPU923), also under `--write`, where the config itself is rewritten
/// (TPU922) before the script is read. A config of another kind, or one outside the run, is left.
#[test]
fn an_accelerate_launch_of_an_xla_config_of_the_run_is_converted_with_it() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("configs")).unwrap();
    fs::create_dir_all(dir.path().join("scripts")).unwrap();
    write(
        dir.path(),
        "configs/tpu.yaml",
        "compute_environment: LOCAL_MACHINE\ndistributed_type: XLA\nnum_processes: 8\nmixed_precision: bf16\n",
    );
    write(
        dir.path(),
        "configs/gpu.yaml",
        "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\n",
    );
    let script = concat!(
        "cd \"$(dirname \"$0\")/..\"\n",
        "accelerate launch --config_file configs/tpu.yaml --num_processes 8 train.py --max-steps 100\n",
        "accelerate launch --config_file configs/gpu.yaml train.py\n",
        "accelerate launch --config_file /etc/elsewhere/tpu.yaml train.py\n",
    );
    let launch = write(dir.path(), "scripts/launch.sh", script);
    bin().current_dir(dir.path()).args(["migrate", "--unsafe-fixes", "--write", "."]).assert().success();
    let migrated = fs::read_to_string(&launch).unwrap();
    let lines: Vec<&str> = migrated.lines().collect();
    assert_eq!(lines[1], "eval \"$(python -m torch.tpu.distributed | sed 's/^/export /')\"", "{migrated}");
    assert_eq!(
        lines[2],
        "accelerate launch $([ \"$WORLD_SIZE\" -gt 1 ] && echo --multi_gpu) --num_processes=\"$WORLD_SIZE\" --config_file configs/tpu.yaml train.py --max-steps 100",
        "{migrated}"
    );
    assert_eq!(
        lines[3..],
        [
            "accelerate launch --config_file configs/gpu.yaml train.py",
            "accelerate launch --config_file /etc/elsewhere/tpu.yaml train.py"
        ]
    );
    assert!(fs::read_to_string(dir.path().join("configs/tpu.yaml")).unwrap().contains("distributed_type: MULTI_GPU"));
    // A second run changes nothing.
    bin()
        .current_dir(dir.path())
        .args(["migrate", "--unsafe-fixes", "."])
        .assert()
        .success()
        .stderr(predicate::str::contains("0 would change"));
}

/// A migration with the safe fixes only leaves dependencies that install, or says plainly that
/// they do not yet; so with torch_xla imports that the unsafe fixes would remove.
#[test]
fn a_safe_only_migration_installs_or_says_it_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let migrate =
        |args: &[&str]| bin().current_dir(dir.path()).args(["migrate", "--write"]).args(args).arg(".").assert();
    // torch was pinned for torch_xla: torch-tpu requires another torch, so the pin moves with it.
    let old = "torch~=2.5.0\ntorch_xla[tpu]~=2.5.0\n-f https://storage.googleapis.com/libtpu-releases/index.html\n";
    write(dir.path(), "requirements.txt", old);
    migrate(&[]).success().stderr(predicate::str::contains("warning").not());
    let new = fs::read_to_string(dir.path().join("requirements.txt")).unwrap();
    assert_eq!(new, "torch>=2.11.0,<=2.15.0\ntorch-tpu==0.2.0\n");
    // The torch it asks for is one torch-tpu 0.2.0 installs with (its Requires-Dist).
    let target =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("rules/targets/torchtpu-0.2.0.yaml")).unwrap();
    let wanted = target.lines().find_map(|l| l.trim().strip_prefix("- torch>=")).expect("torch-tpu requires torch");
    assert_eq!(format!(">={wanted}"), new.lines().next().unwrap().trim_start_matches("torch"));

    // Where torch_xla stays (its rule not selected), moving torch alone is a change of its own.
    write(dir.path(), "requirements.txt", old);
    migrate(&["--ignore", "TPU901"]).success();
    assert!(fs::read_to_string(dir.path().join("requirements.txt")).unwrap().starts_with("torch~=2.5.0\ntorch_xla"));

    // A torchvision pinned for the old torch is a person's choice: the result does not install yet.
    write(dir.path(), "requirements.txt", "torch~=2.5.0\ntorchvision==0.20.0\ntorch_xla[tpu]~=2.5.0\n");
    migrate(&[]).success().stderr(predicate::str::contains(
        "warning: the project does not install TorchTPU yet: 1 requirement left that torch-tpu conflicts with (requirements.txt:2:1 TPU905)",
    ));
    // torch_xla imports kept for uses only the unsafe fixes migrate: the program does not run yet.
    fs::remove_file(dir.path().join("requirements.txt")).unwrap();
    write(dir.path(), "train.py", "import torch_xla.runtime as xr\nprint(xr.world_size())\n");
    migrate(&[]).success().stderr(predicate::str::contains(
        "warning: 1 file still imports torch_xla, which TorchTPU does not install (train.py): it does not run on TorchTPU until 1 unsafe fix (--unsafe-fixes) is done",
    ));
    migrate(&["--unsafe-fixes"]).success().stderr(predicate::str::contains("warning").not());
}

/// A script printing its rank on rank 0: what `xm.master_print` and `xr.global_ordinal()` become
/// needs two helpers.
const RANK_SCRIPT: &str = r#"import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr


def report(loss):
    xm.master_print(f"rank {xr.global_ordinal()} loss={loss:.6f}")


if __name__ == "__main__":
    report(1.0)
"#;

/// Without `__main__`: a package module others import.
const RANK_MODULE: &str = r#"import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr


def report(loss):
    xm.master_print(f"rank {xr.global_ordinal()} loss={loss:.6f}")
"#;

fn migrate_in(dir: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    bin().current_dir(dir).args(["migrate", "--unsafe-fixes"]).args(args).assert().success()
}

#[test]
fn scripts_of_one_directory_share_one_helper_module() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.py", RANK_SCRIPT);
    write(dir.path(), "b.py", RANK_SCRIPT);
    let out = migrate_in(dir.path(), &["."]).get_output().stdout.clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("--- /dev/null\n+++ b/_torchtpu.py\n"), "{out}");
    assert_eq!(out.matches("+def torchtpu_rank():").count(), 1, "{out}");
    assert_eq!(out.matches("+from _torchtpu import torchtpu_rank, torchtpu_rank0_print\n").count(), 2, "{out}");
    assert!(!dir.path().join("_torchtpu.py").exists(), "a diff writes nothing");

    migrate_in(dir.path(), &["--write", "."]).stderr(predicate::str::contains("3 written"));
    let module = fs::read_to_string(dir.path().join("_torchtpu.py")).unwrap();
    assert!(module.starts_with("\"\"\"TorchTPU helpers, written by xla2tpu"), "{module}");
    assert!(!fs::read_to_string(dir.path().join("a.py")).unwrap().contains("def torchtpu_"));
    // A second run changes nothing; a file needing one more helper extends the module.
    migrate_in(dir.path(), &["."]).stdout("").stderr(predicate::str::contains("0 would change"));
    write(dir.path(), "c.py", "import torch_xla.runtime as xr\n\nprint(xr.world_size())\n");
    migrate_in(dir.path(), &["--write", "."]);
    let extended = fs::read_to_string(dir.path().join("_torchtpu.py")).unwrap();
    assert!(extended.starts_with(&module), "only added to:\n{extended}");
    assert_eq!(extended.matches("def torchtpu_world_size():").count(), 1, "{extended}");
    assert_eq!(extended.matches("def torchtpu_rank():").count(), 1, "{extended}");
    let c = fs::read_to_string(dir.path().join("c.py")).unwrap();
    assert_eq!(c, "from _torchtpu import torchtpu_world_size\n\nprint(torchtpu_world_size())\n");
    migrate_in(dir.path(), &["."]).stdout("");
}

#[test]
fn helpers_stay_inline_where_a_module_cannot_serve() {
    // A file alone in its directory, the helper module turned off, or a user's own file of that name.
    let alone = tempfile::tempdir().unwrap();
    write(alone.path(), "a.py", RANK_SCRIPT);
    migrate_in(alone.path(), &["."])
        .stdout(predicate::str::contains("+def torchtpu_rank():").and(predicate::str::contains("_torchtpu.py").not()));
    let off = tempfile::tempdir().unwrap();
    write(off.path(), "a.py", RANK_SCRIPT);
    write(off.path(), "b.py", RANK_SCRIPT);
    let out = migrate_in(off.path(), &["--helper-module", "", "."]).get_output().stdout.clone();
    assert_eq!(String::from_utf8(out).unwrap().matches("+def torchtpu_rank():").count(), 2);
    let taken = tempfile::tempdir().unwrap();
    write(taken.path(), "a.py", RANK_SCRIPT);
    write(taken.path(), "b.py", RANK_SCRIPT);
    write(taken.path(), "_torchtpu.py", "HELPERS = 1\n");
    migrate_in(taken.path(), &["--write", "."]).stderr(predicate::str::contains(
        "_torchtpu.py: not written by xla2tpu; the helpers of 2 files stay in each file",
    ));
    assert_eq!(fs::read_to_string(taken.path().join("_torchtpu.py")).unwrap(), "HELPERS = 1\n");
    assert!(fs::read_to_string(taken.path().join("b.py")).unwrap().contains("\ndef torchtpu_rank():"));
}

#[test]
fn package_modules_import_helpers_relatively_and_its_scripts_keep_them() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("pkg")).unwrap();
    write(dir.path(), "pkg/__init__.py", "");
    write(dir.path(), "pkg/a.py", RANK_MODULE);
    write(dir.path(), "pkg/b.py", RANK_MODULE);
    write(dir.path(), "pkg/run.py", RANK_SCRIPT); // `python pkg/run.py`: no relative import there
    migrate_in(dir.path(), &["--write", "."]);
    for module in ["a.py", "b.py"] {
        let text = fs::read_to_string(dir.path().join("pkg").join(module)).unwrap();
        assert!(text.starts_with("from ._torchtpu import torchtpu_rank, torchtpu_rank0_print\n"), "{text}");
    }
    assert!(fs::read_to_string(dir.path().join("pkg/run.py")).unwrap().contains("\ndef torchtpu_rank():"));
    assert!(dir.path().join("pkg/_torchtpu.py").is_file());
}
