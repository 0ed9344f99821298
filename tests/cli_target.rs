//! `--target-version` and the `torchtpu` range of rules: the binary, end to end.

use std::fs;

use assert_cmd::Command;
use predicates::prelude::*;

fn bin() -> Command {
    Command::cargo_bin("xla2tpu").expect("binary builds")
}

/// A rule for a TorchTPU release after the only known one: it must not apply to 0.2.0.
const FUTURE_RULE: &str = r#"rules:
  - code: TST001
    name: future-only
    torchtpu: ">=0.3"
    match:
      call: [torch.tpu.future_api]
    message: "`{name}` is reported"
    help: "nothing"
    explanation: "only after 0.2"
  - code: TST002
    name: current
    torchtpu: "==0.2.*"
    match:
      call: [torch.tpu.current_api]
    message: "`{name}` is reported"
    help: "nothing"
    explanation: "0.2 releases"
"#;

#[test]
fn an_unknown_target_version_is_an_error_listing_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.py"), "import torch\n").unwrap();
    bin()
        .current_dir(dir.path())
        .args(["check", "--isolated", "--target-version", "9.9.9", "a.py"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--target-version").and(predicate::str::contains("known: 0.2.0")));
}

#[test]
fn rules_whose_range_excludes_the_target_do_not_apply() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules");
    fs::create_dir(&rules).unwrap();
    fs::write(rules.join("extra.yaml"), FUTURE_RULE).unwrap();
    fs::write(dir.path().join("a.py"), "import torch\ntorch.tpu.future_api()\ntorch.tpu.current_api()\n").unwrap();
    bin()
        .current_dir(dir.path())
        .args(["check", "--isolated", "--rules", "rules", "--target-version", "0.2.0", "--output-format", "concise"])
        .arg("a.py")
        .assert()
        .code(1)
        .stdout(predicate::str::contains("TST002").and(predicate::str::contains("TST001").not()));
}

#[test]
fn the_target_version_comes_from_the_configuration_too() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("pyproject.toml"), "[tool.xla2tpu]\ntarget-version = \"0.1\"\n").unwrap();
    fs::write(dir.path().join("a.py"), "import torch\n").unwrap();
    bin()
        .current_dir(dir.path())
        .args(["check", "a.py"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("target-version").and(predicate::str::contains("known: 0.2.0")));
    fs::write(dir.path().join("pyproject.toml"), "[tool.xla2tpu]\ntarget-version = \"0.2.0\"\n").unwrap();
    bin()
        .current_dir(dir.path())
        .args(["check", "--show-settings", "a.py"])
        .assert()
        .success()
        .stdout(predicate::str::contains("target-version    0.2.0"));
}
