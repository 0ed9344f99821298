//! `check` knows the operator registry (TPU801/TPU802) on the real binary: the
//! calls it flags, the ones it leaves alone, `--backend`, and agreement with the
//! emulator, which refuses exactly the ops the lint names.

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

#[path = "support/skip.rs"]
mod skip;

const LOSSES: &str = r#"import torch
import torch.nn.functional as F


def robust(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    err = (pred - target).abs()
    return torch.median(err) + torch.nansum(err)


def fine(x):
    return torch.mean(x) + torch.matmul(x, x).sum() + F.softmax(x, -1).sum() + F.layer_norm(x, (4,)).sum()


def deliberate(x):
    return torch.median(x.cpu())
"#;

fn check(dir: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("xla2tpu")
        .unwrap()
        .current_dir(dir)
        .args(["check", "--output-format", "concise", "--isolated"])
        .args(extra)
        .arg("losses.py")
        .assert()
}

#[test]
fn missing_kernels_are_flagged_and_supported_calls_are_not() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("losses.py"), LOSSES).unwrap();
    check(dir.path(), &[])
        .code(1)
        .stdout(predicate::str::contains("losses.py:7:12: TPU801 `torch.median` runs `aten::median`"))
        .stdout(predicate::str::contains("losses.py:7:32: TPU801 `torch.nansum` runs `aten::nansum`"))
        .stdout(predicate::str::contains(":11:").not())
        .stdout(predicate::str::contains(":15:").not());
}

#[test]
fn the_backend_decides() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("losses.py"), LOSSES).unwrap();
    // torch_xla 2.9 has no kernel for median or nansum either, and says what it does instead.
    check(dir.path(), &["--backend", "torch_xla-2.9"])
        .code(1)
        .stdout(predicate::str::contains("which has no torch_xla-2.9 kernel"));
    // A registry with every op (a copy of TorchTPU's where median and nansum have kernels).
    let registry =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("rules/backends/torchtpu-0.2.0.tsv"))
            .unwrap()
            .replace("aten::median\tmissing_fallback\tmissing_fallback", "aten::median\ttpu_kernel\ttpu_kernel")
            .replace("aten::nansum\tmissing_fallback\tmissing_fallback", "aten::nansum\ttpu_kernel\ttpu_kernel");
    std::fs::write(dir.path().join("patched.tsv"), registry).unwrap();
    check(dir.path(), &["--backend", "patched.tsv"]).code(0);
    // The configuration's `backend` is the default.
    std::fs::write(dir.path().join("xla2tpu.toml"), "backend = \"patched.tsv\"\n").unwrap();
    Command::cargo_bin("xla2tpu").unwrap().current_dir(dir.path()).args(["check", "losses.py"]).assert().code(0);
}

#[test]
fn every_flagged_call_is_refused_by_the_emulator() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(python) = skip::tracer_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    for (call, op) in [
        ("torch.median(x)", "aten::median"),
        ("torch.nansum(x)", "aten::nansum"),
        ("torch.trace(x)", "aten::trace"),
        ("torch.nn.functional.mish(x)", "aten::mish"),
        ("torch.special.erfc(x)", "aten::erfc"),
    ] {
        let program = format!("import torch\nx = torch.ones(3, 3, device='tpu')\nprint({call})\n");
        std::fs::write(dir.path().join("losses.py"), &program).unwrap();
        check(dir.path(), &[]).code(1).stdout(predicate::str::contains(format!("runs `{op}`")));
        Command::cargo_bin("xla2tpu")
            .unwrap()
            .current_dir(dir.path())
            .env("XLA2TPU_CACHE_DIR", root.join("target/xla2tpu-test-cache"))
            .args(["run", "--"])
            .arg(&python)
            .arg("losses.py")
            .assert()
            .code(1)
            .stderr(predicate::str::contains("losses.py:3"))
            .stderr(predicate::str::contains("not implemented for TPU"));
    }
}
