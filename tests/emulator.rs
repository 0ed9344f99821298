//! The TorchTPU emulator's own test suite (`emulator/tests`, pytest), run in
//! the pinned torch 2.15 venv that `tracer/setup_venv.sh` creates (CI sets
//! `XLA2TPU_REQUIRE_TRACER=1`, so a missing venv fails there).

use std::path::Path;
use std::process::Command;

#[path = "support/skip.rs"]
mod skip;

#[test]
fn emulator_test_suite_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(python) = skip::tracer_python() else { return };
    let out = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "emulator/tests"])
        .current_dir(root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .expect("pytest runs");
    assert!(
        out.status.success(),
        "emulator tests failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
