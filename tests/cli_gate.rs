//! Configuring and gating `check` the way Python teams use ruff: `[tool.xla2tpu]`, `# noqa`
//! upkeep, baselines, CI report formats, statistics, diffs and completions. Every test runs the
//! real binary in a scratch project.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

/// Three findings: TPU001 (line 2), TPU101 (line 5, safe fix), TPU110 (line 7, safe fix).
const TRAIN: &str = "import torch
import torch_xla.core.xla_model as xm

def step(model, x):
    device = xm.xla_device()  # the device
    y = model(x.to(device))
    xm.mark_step()
    return y
";

/// A scratch project: a temporary directory and files in it.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        Project { dir: tempfile::tempdir().expect("temp dir") }
    }

    fn with(self, path: &str, text: &str) -> Project {
        self.write(path, text);
        self
    }

    fn write(&self, path: &str, text: &str) {
        let p = self.path(path);
        fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        fs::write(p, text).expect("write");
    }

    fn read(&self, path: &str) -> String {
        fs::read_to_string(self.path(path)).expect("read")
    }

    fn path(&self, path: &str) -> PathBuf {
        self.dir.path().join(path)
    }

    fn xla2tpu(&self, args: &[&str]) -> Command {
        let mut cmd = Command::cargo_bin("xla2tpu").expect("binary builds");
        cmd.current_dir(self.dir.path()).args(args).env("NO_COLOR", "1");
        cmd
    }

    /// `check --output-format concise ARGS`: stdout, and the exit code.
    fn concise(&self, args: &[&str]) -> (String, i32) {
        let out = self.xla2tpu(&["check", "--output-format", "concise"]).args(args).output().expect("runs");
        (String::from_utf8(out.stdout).expect("UTF-8"), out.status.code().expect("exit code"))
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.xla2tpu(args).output().expect("runs");
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
    }
}

/// `path:line:col: CODE` of each concise line.
fn locations(concise: &str) -> Vec<String> {
    concise.lines().map(|l| l.split(' ').next().unwrap_or_default().to_string() + " " + code(l)).collect()
}

fn code(concise_line: &str) -> &str {
    concise_line.split(' ').nth(1).unwrap_or_default()
}

#[test]
fn each_file_follows_the_closest_configuration_above_it() {
    let p = Project::new()
        .with("pyproject.toml", "[tool.xla2tpu]\nignore = [\"TPU0\"]\n")
        .with("train.py", TRAIN)
        // A pyproject.toml without our table is skipped on the way up.
        .with("lib/pyproject.toml", "[project]\nname = \"lib\"\n")
        .with("lib/train.py", TRAIN)
        .with("nested/xla2tpu.toml", "select = [\"TPU110\"]\n")
        .with("nested/deeper/train.py", TRAIN);
    let (out, code) = p.concise(&["."]);
    assert_eq!(code, 1);
    assert_eq!(
        locations(&out),
        [
            "lib/train.py:5:14: TPU101",
            "lib/train.py:7:5: TPU110",
            "nested/deeper/train.py:7:5: TPU110",
            "train.py:5:14: TPU101",
            "train.py:7:5: TPU110",
        ]
    );
    // `xla2tpu.toml` wins over `pyproject.toml` in the same directory.
    p.write("nested/deeper/pyproject.toml", "[tool.xla2tpu]\nselect = [\"TPU0\"]\n");
    p.write("nested/deeper/xla2tpu.toml", "select = [\"TPU101\"]\n");
    let (out, _) = p.concise(&["nested"]);
    assert_eq!(locations(&out), ["nested/deeper/train.py:5:14: TPU101"]);
    // --isolated: no configuration at all.
    let (out, _) = p.concise(&["--isolated", "nested"]);
    assert_eq!(out.lines().count(), 3, "{out}");
}

#[test]
fn command_line_flags_override_the_configuration() {
    let p = Project::new()
        .with("pyproject.toml", "[tool.xla2tpu]\nselect = [\"TPU110\"]\noutput-format = \"pylint\"\n")
        .with("train.py", TRAIN);
    // output-format from the configuration.
    p.xla2tpu(&["check", "train.py"])
        .assert()
        .code(1)
        .stdout(predicate::str::is_match(r"^train\.py:7: \[TPU110\] [^\n]+\n$").expect("regex"));
    // --select replaces the configured selection, --extend-select adds to it, --ignore removes.
    let codes = |args: &[&str]| -> Vec<String> { p.concise(args).0.lines().map(|l| code(l).to_string()).collect() };
    assert_eq!(codes(&["train.py"]), ["TPU110"]);
    assert_eq!(codes(&["--select", "TPU101", "train.py"]), ["TPU101"]);
    assert_eq!(codes(&["--extend-select", "TPU0", "train.py"]), ["TPU001", "TPU110"]);
    assert_eq!(codes(&["--extend-select", "TPU0", "--ignore", "TPU110", "train.py"]), ["TPU001"]);
    // --output-format beats the configuration; --config picks another file.
    let items = p.json(&["check", "--output-format", "json", "train.py"]);
    assert_eq!(items.as_array().map(Vec::len), Some(1));
    p.write("other.toml", "select = [\"TPU101\"]\n");
    assert_eq!(codes(&["--config", "other.toml", "train.py"]), ["TPU101"]);
}

#[test]
fn per_file_ignores_and_excludes() {
    let p = Project::new()
        .with(
            "pyproject.toml",
            "[tool.xla2tpu]\nextend-exclude = [\"generated\", \"scripts/old_*.py\"]\n\n[tool.xla2tpu.per-file-ignores]\n\"tests/*\" = [\"TPU1\"]\n\"__init__.py\" = [\"TPU0\"]\n",
        )
        .with("src/train.py", TRAIN)
        .with("src/__init__.py", "import torch_xla\n")
        .with("tests/test_train.py", TRAIN)
        .with("generated/train.py", TRAIN)
        .with("scripts/old_train.py", TRAIN)
        .with("scripts/train.py", TRAIN)
        .with(".venv/lib/train.py", TRAIN)
        .with("venv/lib/train.py", TRAIN);
    let files = p.xla2tpu(&["check", "--show-files"]).output().expect("runs");
    assert_eq!(
        String::from_utf8_lossy(&files.stdout).lines().collect::<Vec<_>>(),
        ["pyproject.toml", "scripts/train.py", "src/__init__.py", "src/train.py", "tests/test_train.py"],
        "extend-exclude adds to the default excludes (virtualenvs); dependency files are checked too"
    );
    let (out, _) = p.concise(&["."]);
    let found: Vec<String> = locations(&out);
    assert!(found.contains(&"tests/test_train.py:2:1: TPU001".to_string()), "{out}");
    assert!(!found.iter().any(|l| l.starts_with("tests/") && l.contains("TPU1")), "{out}");
    assert!(!found.iter().any(|l| l.starts_with("src/__init__.py")), "{out}");
    // A file named on the command line is checked, unless --force-exclude (pre-commit) says not to.
    assert_eq!(p.concise(&["generated/train.py"]).1, 1);
    p.xla2tpu(&["check", "--force-exclude", "generated/train.py", "scripts/old_train.py"])
        .assert()
        .code(0)
        .stderr(predicate::str::contains("0 files checked"));
    // `exclude` replaces the defaults: virtualenvs are walked again (hidden ones with --no-ignore).
    p.write("pyproject.toml", "[tool.xla2tpu]\nexclude = [\"generated\"]\n");
    let files = p.xla2tpu(&["check", "--show-files"]).output().expect("runs");
    let files = String::from_utf8_lossy(&files.stdout).to_string();
    assert!(files.contains("\nvenv/lib/train.py") && !files.contains(".venv"), "{files}");
}

#[test]
fn configured_rule_directories_and_unsafe_fixes() {
    let p = Project::new()
        .with(
            "tools/rules/ours.yaml",
            "rules:\n  - code: ORG001\n    name: our-sync\n    match:\n      call: [ourlib.sync]\n    message: \"`{name}` wraps xm.mark_step\"\n    help: delete it\n    fix:\n      - safety: safe\n        delete: true\n    explanation: Ours.\n",
        )
        .with("pyproject.toml", "[tool.xla2tpu]\nrules = [\"tools/rules\"]\nunsafe-fixes = true\n")
        .with("src/a.py", "import ourlib\nimport torch_xla.core.xla_model as xm\nourlib.sync()\nprint(xm.get_ordinal())\n");
    // The rules directory is relative to the configuration, not to the working directory.
    let mut check = p.xla2tpu(&["check", "--output-format", "concise", "a.py"]);
    check.current_dir(p.path("src")).assert().code(1).stdout(predicate::str::contains("a.py:3:1: ORG001"));
    // unsafe-fixes = true: the rank query is converted (a helper: no process group here); --no-unsafe-fixes turns it off again.
    p.xla2tpu(&["migrate", "--no-unsafe-fixes", "src/a.py"])
        .assert()
        .success()
        .stdout(predicate::str::contains("-ourlib.sync()").and(predicate::str::contains("get_rank").not()));
    p.xla2tpu(&["migrate", "src/a.py"]).assert().success().stdout(predicate::str::contains("+print(torchtpu_rank())"));
}

#[test]
fn bad_configuration_is_an_error_naming_the_file_and_key() {
    let p = Project::new().with("train.py", TRAIN);
    let fails = |config: &str, file: &str, expected: &[&str]| {
        p.write(file, config);
        let assert = p.xla2tpu(&["check", "train.py"]).assert().code(2);
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        for e in expected {
            assert!(stderr.contains(e), "{e:?} not in {stderr:?}");
        }
        fs::remove_file(p.path(file)).expect("rm");
    };
    fails(
        "[tool.ruff]\nline-length = 100\n\n[tool.xla2tpu]\nselct = [\"TPU1\"]\n",
        "pyproject.toml",
        &["pyproject.toml:5:1: `tool.xla2tpu.selct`", "unknown field `selct`, expected one of"],
    );
    fails(
        "select = \"TPU1\"\n",
        "xla2tpu.toml",
        &["xla2tpu.toml:1:10: `select`: invalid type: string \"TPU1\", expected a sequence"],
    );
    fails("output-format = \"xml\"\n", "xla2tpu.toml", &["xla2tpu.toml:1:17: `output-format`: unknown variant `xml`"]);
    fails(
        "[tool.xla2tpu]\nignore = [\"TPU99\"]\n",
        "pyproject.toml",
        &["pyproject.toml: `ignore`: `TPU99` matches no rule"],
    );
    fails("[tool.xla2tpu\n", "pyproject.toml", &["pyproject.toml:1:", "invalid TOML"]);
    p.xla2tpu(&["check", "--select", "TPX", "train.py"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--select: `TPX` matches no rule"));
}

#[test]
fn show_settings_prints_what_applies_to_a_file() {
    let p = Project::new()
        .with(
            "pyproject.toml",
            "[tool.xla2tpu]\nselect = [\"TPU1\"]\nbackend = \"torch_xla-2.9\"\n[tool.xla2tpu.per-file-ignores]\n\"tests/*\" = [\"TPU110\"]\n",
        )
        .with("tests/test_a.py", TRAIN);
    p.xla2tpu(&["check", "--show-settings", "tests/test_a.py"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Settings for tests/test_a.py"))
        .stdout(predicate::str::contains(format!("configuration     {}", p.path("pyproject.toml").display())))
        .stdout(predicate::str::contains("per-file-ignores  TPU110 (tests/*)"))
        .stdout(predicate::str::contains("TPU101, TPU102").and(predicate::str::contains("TPU110,").not()))
        .stdout(predicate::str::contains("backend           torch_xla-2.9"));
}

#[test]
fn backend_in_the_configuration_is_the_default_for_ops_and_sweep() {
    let p = Project::new().with("pyproject.toml", "[tool.xla2tpu]\nbackend = \"torch_xla-2.9\"\n");
    p.xla2tpu(&["ops", "check", "bert"])
        .assert()
        .stdout(predicate::str::contains("transformers/bert on torch_xla-2.9"));
    p.xla2tpu(&["ops", "check", "bert", "--backend", "torchtpu-0.2.0"])
        .assert()
        .stdout(predicate::str::contains("transformers/bert on torchtpu-0.2.0"));
    let report = p.json(&["sweep", "--top", "3", "--format", "json"]);
    assert!(report.to_string().contains("torch_xla-2.9"), "the sweep report names its backend");
}

#[test]
fn add_noqa_suppresses_every_finding_once_and_keeps_comments() {
    let src = "import torch_xla.core.xla_model as xm\r\nx = 1  # noqa: F401\r\nxm.mark_step()  # noqa: F401\r\ndevice = xm.xla_device()  # the device\r\nt = xm.all_reduce(\r\n    xm.REDUCE_SUM, [1])\r\n";
    let p = Project::new().with("train.py", src);
    p.xla2tpu(&["check", "--add-noqa", "."])
        .assert()
        .success()
        .stderr(predicate::str::contains("Added 4 noqa directives to 1 file."));
    assert_eq!(
        p.read("train.py"),
        "import torch_xla.core.xla_model as xm  # noqa: TPU001\r\nx = 1  # noqa: F401\r\nxm.mark_step()  # noqa: F401, TPU110\r\ndevice = xm.xla_device()  # the device  # noqa: TPU101\r\nt = xm.all_reduce(  # noqa: TPU207\r\n    xm.REDUCE_SUM, [1])\r\n"
    );
    p.xla2tpu(&["check", "train.py"]).assert().code(0);
    p.xla2tpu(&["check", "--add-noqa", "."])
        .assert()
        .success()
        .stderr(predicate::str::contains("Added 0 noqa directives"));
    assert!(p.read("train.py").contains("# noqa: F401, TPU110\r\n"), "a second run changes nothing");
}

#[test]
fn add_noqa_goes_after_a_multiline_string_not_inside_it() {
    let src = "import torch\nhelp = f\"\"\"runs on {torch.device('xla')}\nand more\"\"\"\n";
    let p = Project::new().with("a.py", src);
    p.xla2tpu(&["check", "--add-noqa", "--select", "TPU1", "a.py"]).assert().success();
    let out = p.read("a.py");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[1].ends_with('}') && lines[2].starts_with("and more\"\"\"  # noqa: TPU1"), "{out}");
    p.xla2tpu(&["check", "--select", "TPU1", "a.py"]).assert().code(0);
}

#[test]
fn unused_and_unknown_noqa_codes_are_findings() {
    let src =
        "import torch\nx = torch.ones(2)  # noqa: TPU110, F401, T201, TPU999\ny = 1  # noqa\nz = 2  # noqa: TPU701\n";
    let p = Project::new().with("a.py", src);
    p.xla2tpu(&["check", "--output-format", "concise", "a.py"])
        .assert()
        .code(1)
        .stdout("a.py:2:20: TPU003 unused `noqa` directive (unused: `TPU110`; unknown: `TPU999`)\na.py:4:8: TPU003 unused `noqa` directive (unused: `TPU701`)\n");
    // A rule that is not selected is named as such; TPU003 itself can be ignored.
    p.xla2tpu(&["check", "--output-format", "concise", "--ignore", "TPU7", "a.py"])
        .assert()
        .stdout(predicate::str::contains("a.py:4:8: TPU003 unused `noqa` directive (non-enabled: `TPU701`)"));
    p.xla2tpu(&["check", "--ignore", "TPU003", "a.py"]).assert().code(0);
    // A used directive is not reported.
    p.write("b.py", "import torch_xla.core.xla_model as xm  # noqa: TPU001\nxm.mark_step()  # noqa: TPU110\n");
    p.xla2tpu(&["check", "b.py"]).assert().code(0);
}

#[test]
fn a_syntax_error_is_a_finding_a_gate_can_decide_about() {
    let p = Project::new().with("py2.py", "import torch_xla\nprint 'hello'\n").with("ok.py", "import torch\n");
    p.xla2tpu(&["check", "--output-format", "concise", "."])
        .assert()
        .code(1)
        .stdout(predicate::str::starts_with("py2.py:2:7: TPU002 syntax error, file not checked: "))
        .stderr(predicate::str::contains("2 files checked: 1 finding"));
    p.write("pyproject.toml", "[tool.xla2tpu.per-file-ignores]\n\"py2.py\" = [\"TPU002\"]\n");
    p.xla2tpu(&["check", "."]).assert().code(0).stderr(
        predicate::str::contains("warning: py2.py:2:7: syntax error, file not checked")
            .and(predicate::str::contains("TPU002 is not selected")),
    );
    // A file no rule can match is not parsed, unless the configuration names TPU002.
    p.write("pyproject.toml", "");
    p.write("legacy.py", "print 'no accelerator here'\n");
    p.xla2tpu(&["check", "--output-format", "concise", "legacy.py"]).assert().code(0);
    p.write("pyproject.toml", "[tool.xla2tpu]\nextend-select = [\"TPU002\"]\n");
    p.xla2tpu(&["check", "--output-format", "concise", "legacy.py"])
        .assert()
        .code(1)
        .stdout(predicate::str::starts_with("legacy.py:1:7: TPU002 syntax error, file not checked: "));
    p.xla2tpu(&["check", "--show-settings", "legacy.py"])
        .assert()
        .stdout(predicate::str::contains("syntax errors     reported in every file (TPU002 named)"));
}

#[test]
fn files_no_rule_can_match_are_not_parsed_unless_tpu002_is_named() {
    let p = Project::new()
        .with("train.py", "import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
        .with("util.py", "import torch\n# cross attention, then median pooling\ncross = torch.cat([a, b])\n")
        .with("README.py", "print('nothing here')\n");
    // `XLA2TPU_TIMINGS=1` prints each phase's calls: one file parsed of three.
    let parsed = |extra: &[&str]| {
        let out = p.xla2tpu(&[&["check"][..], extra, &["."]].concat()).env("XLA2TPU_TIMINGS", "1").output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let line = err.lines().find(|l| l.starts_with("timings (")).unwrap_or_else(|| panic!("{err}")).to_string();
        assert!(line.contains("read ") && line.contains("semantic model "), "{line}");
        line.split("parse ").nth(1).and_then(|r| r.split(['(', ')']).nth(1)).expect("parse count").to_string()
    };
    assert_eq!(parsed(&[]), "1");
    assert_eq!(parsed(&["--extend-select", "TPU002"]), "3");
}

#[test]
fn a_baseline_fails_only_on_new_findings_and_shrinks() {
    let p = Project::new().with("train.py", TRAIN).with("other.py", "import torch_xla\n");
    p.xla2tpu(&["check", "--write-baseline", ".xla2tpu-baseline.json"])
        .assert()
        .success()
        .stderr(predicate::str::contains("wrote 4 findings to .xla2tpu-baseline.json"));
    let baseline: Value = serde_json::from_str(&p.read(".xla2tpu-baseline.json")).expect("JSON");
    assert_eq!(baseline["version"], 1);
    assert_eq!(
        baseline["findings"][3],
        serde_json::json!({"rule": "TPU110", "path": "train.py", "code": "xm.mark_step()", "context": baseline["findings"][3]["context"]})
    );
    let gate = |args: &[&str]| {
        p.xla2tpu(&["check", "--output-format", "concise", "--baseline", ".xla2tpu-baseline.json"]).args(args).assert()
    };

    gate(&[]).code(0).stdout("").stderr(predicate::str::contains("0 findings not in the baseline (4 known)"));
    // Edits elsewhere and moved lines: still known.
    let moved = format!(
        "\"\"\"A docstring.\"\"\"\n\n\nHELPER = 1\n{}",
        TRAIN.replace(
            "    y = model(x.to(device))\n    xm.mark_step()\n",
            "    xm.mark_step()\n\n    y = model(x.to(device))  # moved\n"
        )
    );
    p.write("train.py", &moved);
    gate(&[]).code(0);
    // A new finding fails the gate, and only it is shown.
    p.write("train.py", &format!("{moved}\ndef again():\n    xm.mark_step()\n"));
    gate(&[]).code(1).stdout(predicate::str::is_match(r"^train\.py:16:5: TPU110 [^\n]+\n$").expect("regex"));
    // Fixed findings leave entries behind: the gate says the file can shrink.
    p.write("train.py", "import torch\n");
    gate(&[]).code(0).stderr(predicate::str::contains("3 baseline entries are gone"));
    // A run over some files (pre-commit) does not count the others' entries as gone.
    p.write("train.py", TRAIN);
    gate(&["other.py"])
        .code(0)
        .stderr(predicate::str::contains("(1 known)").and(predicate::str::contains("gone").not()));
    // Rewriting shrinks it; rewriting an unchanged baseline changes nothing.
    p.write("other.py", "import torch\n");
    p.xla2tpu(&["check", "--write-baseline", ".xla2tpu-baseline.json"]).assert().success();
    let before = p.read(".xla2tpu-baseline.json");
    assert_eq!(serde_json::from_str::<Value>(&before).expect("JSON")["findings"].as_array().map(Vec::len), Some(3));
    p.xla2tpu(&["check", "--write-baseline", ".xla2tpu-baseline.json"]).assert().success();
    assert_eq!(p.read(".xla2tpu-baseline.json"), before);
    p.write("bad.json", "{\"findings\": 3}");
    p.xla2tpu(&["check", "--baseline", "bad.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.json is not an xla2tpu baseline"));
}

#[test]
fn gitlab_code_quality_has_the_documented_fields_and_stable_fingerprints() {
    let p = Project::new().with("src/train.py", TRAIN);
    let report = p.json(&["check", "--output-format", "gitlab", "."]);
    let items = report.as_array().expect("an array");
    assert_eq!(items.len(), 3);
    for item in items {
        for field in ["description", "check_name", "fingerprint", "severity"] {
            assert!(item[field].is_string(), "{field} in {item}");
        }
        assert!(
            ["info", "minor", "major", "critical", "blocker"].contains(&item["severity"].as_str().unwrap_or_default())
        );
        assert_eq!(item["location"]["path"], "src/train.py");
        assert!(item["location"]["lines"]["begin"].is_u64());
    }
    assert_eq!(items[2]["check_name"], "TPU110");
    assert_eq!(items[2]["location"]["lines"]["begin"], 7);
    let prints = |report: &Value| -> Vec<String> {
        report
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| i["fingerprint"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let before = prints(&report);
    assert_eq!(before.iter().collect::<std::collections::BTreeSet<_>>().len(), 3, "unique");
    p.write("src/train.py", &format!("# a new first line\n{TRAIN}"));
    assert_eq!(
        prints(&p.json(&["check", "--output-format", "gitlab", "."])),
        before,
        "a shifted line keeps its fingerprint"
    );
}

#[test]
fn sarif_validates_against_the_sarif_2_1_0_schema() {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sarif/sarif-schema-2.1.0.json");
    let schema: Value = serde_json::from_str(&fs::read_to_string(schema_path).expect("vendored schema")).expect("JSON");
    let validator = jsonschema::draft4::new(&schema).expect("a valid draft-04 schema");
    let p = Project::new().with("train.py", TRAIN).with("py2.py", "print 'x'\n").with("clean.py", "import torch\n");
    for args in [vec!["."], vec!["clean.py"]] {
        let sarif = p.json(&[&["check", "--output-format", "sarif"][..], &args].concat());
        let errors: Vec<String> =
            validator.iter_errors(&sarif).map(|e| format!("{} at {}", e, e.instance_path())).collect();
        assert!(errors.is_empty(), "{errors:#?}");
        assert_eq!(sarif["runs"][0]["tool"]["driver"]["name"], "xla2tpu");
    }
    // The schema does reject a broken log, so the check above can fail.
    let broken = serde_json::json!({"version": "2.1.0", "runs": [{"results": []}]});
    assert!(!validator.is_valid(&broken));
}

#[test]
fn junit_json_lines_and_pylint_formats() {
    let p = Project::new().with("train.py", TRAIN).with("other.py", "import torch_xla\n");
    let out = p.xla2tpu(&["check", "--output-format", "junit", "."]).output().expect("runs");
    let xml = String::from_utf8(out.stdout).expect("UTF-8");
    let mut reader = quick_xml::Reader::from_str(&xml);
    let (mut suites, mut cases, mut failures) = (0, Vec::new(), 0);
    loop {
        match reader.read_event().expect("well-formed XML") {
            quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e) => match e.name().as_ref() {
                "testsuite" => suites += 1,
                "testcase" => cases.push(e.try_get_attribute("name").expect("attr").expect("name").value.to_string()),
                "failure" => failures += 1,
                _ => {}
            },
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!((suites, failures), (2, 4));
    assert_eq!(cases, ["xla2tpu.TPU001", "xla2tpu.TPU001", "xla2tpu.TPU101", "xla2tpu.TPU110"]);

    let out = p.xla2tpu(&["check", "--output-format", "json-lines", "."]).output().expect("runs");
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    assert_eq!(
        lines.iter().map(|l| l["code"].as_str().unwrap_or_default()).collect::<Vec<_>>(),
        ["TPU001", "TPU001", "TPU101", "TPU110"]
    );

    let out = p.xla2tpu(&["check", "--output-format", "pylint", "train.py"]).output().expect("runs");
    let pylint = String::from_utf8_lossy(&out.stdout).to_string();
    let re = regex::Regex::new(r"^train\.py:\d+: \[TPU\d{3}\] .+$").expect("regex");
    assert_eq!(pylint.lines().filter(|l| re.is_match(l)).count(), 3, "{pylint}");
}

#[test]
fn statistics_count_findings_per_rule() {
    let p = Project::new().with("a.py", TRAIN).with("b.py", TRAIN);
    p.xla2tpu(&["check", "--statistics", "."])
        .assert()
        .code(1)
        .stdout("2\tTPU001\t    xla-import\n2\tTPU101\t[*] xla-device\n2\tTPU110\t[*] mark-step\n");
    let stats = p.json(&["check", "--statistics", "--output-format", "json", "."]);
    assert_eq!(stats[2], serde_json::json!({"code": "TPU110", "name": "mark-step", "count": 2, "fixable": true}));
}

#[test]
fn check_diff_and_exit_non_zero_on_fix() {
    let p = Project::new().with("train.py", TRAIN).with("clean.py", "import torch\n");
    p.xla2tpu(&["check", "--diff", "."])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("--- a/train.py").and(predicate::str::contains("-    xm.mark_step()")));
    assert_eq!(p.read("train.py"), TRAIN, "--diff writes nothing");
    p.xla2tpu(&["check", "--diff", "clean.py"]).assert().code(0).stdout("");
    p.xla2tpu(&["migrate", "--write", "--exit-non-zero-on-fix", "."]).assert().code(1);
    p.xla2tpu(&["migrate", "--write", "--exit-non-zero-on-fix", "."]).assert().code(0);
    p.xla2tpu(&["migrate", "--write", "."]).assert().code(0);
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    for (shell, marker) in [("bash", "complete -F"), ("zsh", "#compdef xla2tpu"), ("fish", "complete -c xla2tpu")] {
        let out = Command::cargo_bin("xla2tpu").expect("binary").args(["completions", shell]).output().expect("runs");
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && script.contains(marker), "{shell}: {script:.200}");
        assert!(
            script.contains("write-baseline") && script.contains("migrate"),
            "{shell} completes subcommands and flags"
        );
    }
}

#[test]
fn help_groups_the_check_options() {
    let out = Command::cargo_bin("xla2tpu").expect("binary").args(["check", "--help"]).output().expect("runs");
    let help = String::from_utf8_lossy(&out.stdout);
    for heading in ["Rule selection:", "File selection:", "Configuration:", "Output:", "Gating:", "Examples:"] {
        assert!(help.contains(heading), "{heading} in {help}");
    }
}

/// A file in every kind `check` reads, each with one torch_xla finding.
const REQUIREMENTS: &str = "torch_xla[tpu]==2.5.0\nnumpy\n";
const DOCKERFILE: &str = "FROM python:3.11-slim\nENV PJRT_DEVICE=TPU\nRUN pip install numpy\n";
const SHELL: &str = "#!/bin/sh\nexport PJRT_DEVICE=TPU\npython train.py\n";
const JOB: &str = "env:\n  - name: PJRT_DEVICE\n    value: TPU\n";
const PYPROJECT: &str = "[project]\nname = \"x\"\ndependencies = [\n  \"torch_xla[tpu]\",\n]\n";
const SETUP_CFG: &str = "[options]\ninstall_requires =\n    torch_xla[tpu]\n";

/// A notebook whose cells hold `lines`, one code cell each.
fn notebook(cells: &[&str]) -> String {
    let cells: Vec<Value> = cells
        .iter()
        .map(|source| serde_json::json!({"cell_type": "code", "metadata": {}, "execution_count": null, "outputs": [], "source": source}))
        .collect();
    serde_json::json!({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}).to_string()
}

/// Each kind's own `# noqa` syntax silences its finding, in `check` and in `migrate`; a listed
/// code that silences nothing is TPU003, as in Python.
#[test]
fn noqa_comments_in_each_kind_of_file() {
    let p = Project::new()
        .with("requirements.txt", "torch_xla[tpu]==2.5.0  # noqa: TPU901\nnumpy  # noqa: TPU905\n")
        .with("pyproject.toml", "[project]\nname = \"x\"\ndependencies = [\n  \"torch_xla[tpu]\",  # noqa: TPU9\n]\n")
        .with("Dockerfile", "FROM python:3.11-slim\n# noqa: TPU501\nENV PJRT_DEVICE=TPU\nRUN pip install numpy\n")
        .with("run.sh", "#!/bin/sh\nexport PJRT_DEVICE=TPU  # noqa\npython train.py\n")
        .with("k8s/job.yaml", "env:\n  - name: PJRT_DEVICE  # noqa: TPU501\n    value: TPU\n")
        .with("setup.cfg", "[options]\ninstall_requires =\n    # noqa: TPU901\n    torch_xla[tpu]\n")
        .with(
            "setup.py",
            "from setuptools import setup\nsetup(install_requires=[\"torch_xla[tpu]\"])  # noqa: TPU901\n",
        )
        .with("nb.ipynb", &notebook(&["!pip install torch_xla[tpu]  # noqa: TPU901\n", "x = 1"]));
    let (out, code) = p.concise(&["."]);
    assert_eq!(locations(&out), ["requirements.txt:2:8: TPU003"], "{out}");
    assert_eq!(code, 1);
    // `migrate` leaves what a directive silences as it is.
    let before: Vec<String> = [
        "requirements.txt",
        "pyproject.toml",
        "Dockerfile",
        "run.sh",
        "k8s/job.yaml",
        "setup.cfg",
        "setup.py",
        "nb.ipynb",
    ]
    .iter()
    .map(|f| p.read(f))
    .collect();
    p.xla2tpu(&["migrate", "--write", "."]).assert().success().stderr(predicate::str::contains("0 changed"));
    let after: Vec<String> = [
        "requirements.txt",
        "pyproject.toml",
        "Dockerfile",
        "run.sh",
        "k8s/job.yaml",
        "setup.cfg",
        "setup.py",
        "nb.ipynb",
    ]
    .iter()
    .map(|f| p.read(f))
    .collect();
    assert_eq!(before, after);
    // A directive away from its finding silences nothing: a Dockerfile's goes right above.
    p.write("Dockerfile", "FROM python:3.11-slim\n# noqa: TPU501\n\nENV PJRT_DEVICE=TPU\n");
    assert_eq!(locations(&p.concise(&["Dockerfile"]).0), ["Dockerfile:2:1: TPU003", "Dockerfile:4:5: TPU501"]);
}

/// `# xla2tpu: noqa` on a line of its own silences the whole file (or the codes it lists), as
/// ruff's `# ruff: noqa`; in a comment after code it is no such directive.
#[test]
fn a_file_level_directive_silences_the_whole_file() {
    let p = Project::new()
        .with("train.py", &format!("# xla2tpu: noqa\n{TRAIN}"))
        .with("requirements.txt", &format!("# xla2tpu: noqa: TPU9\n{REQUIREMENTS}"))
        .with("Dockerfile", &format!("# xla2tpu: noqa\n{DOCKERFILE}"))
        .with("other.py", "import torch_xla  # xla2tpu: noqa\n");
    let (out, _) = p.concise(&["."]);
    assert_eq!(locations(&out), ["other.py:1:1: TPU001"], "{out}");
    p.write("requirements.txt", &format!("# xla2tpu: noqa: TPU5\n{REQUIREMENTS}"));
    assert_eq!(locations(&p.concise(&["requirements.txt"]).0), ["requirements.txt:2:1: TPU901"]);
    p.xla2tpu(&["migrate", "--write", "train.py", "Dockerfile"]).assert().success();
    assert!(p.read("train.py").contains("xm.mark_step()") && p.read("Dockerfile").contains("PJRT_DEVICE"));
}

/// `--add-noqa` writes each kind's directive; what no comment can silence (a notebook, JSON) is
/// listed and fails the run instead of being reported as done.
#[test]
fn add_noqa_covers_every_kind_and_fails_on_what_it_cannot_silence() {
    let p = Project::new()
        .with("requirements.txt", REQUIREMENTS)
        .with("pyproject.toml", PYPROJECT)
        .with("Dockerfile", DOCKERFILE)
        .with("run.sh", SHELL)
        .with("k8s/job.yaml", JOB)
        .with("setup.cfg", SETUP_CFG)
        .with("setup.py", "from setuptools import setup\nsetup(install_requires=[\"torch_xla[tpu]\"])\n");
    p.xla2tpu(&["check", "--add-noqa", "."])
        .assert()
        .success()
        .stderr(predicate::str::contains("Added 7 noqa directives to 7 files."));
    assert_eq!(p.read("requirements.txt"), "torch_xla[tpu]==2.5.0  # noqa: TPU901\nnumpy\n");
    assert_eq!(
        p.read("Dockerfile"),
        "FROM python:3.11-slim\n# noqa: TPU501\nENV PJRT_DEVICE=TPU\nRUN pip install numpy\n"
    );
    assert_eq!(p.read("setup.cfg"), "[options]\ninstall_requires =\n    # noqa: TPU901\n    torch_xla[tpu]\n");
    assert_eq!(p.read("k8s/job.yaml"), "env:\n  - name: PJRT_DEVICE  # noqa: TPU501\n    value: TPU\n");
    let pyproject: toml::Table = toml::from_str(&p.read("pyproject.toml")).expect("still TOML");
    assert_eq!(pyproject["project"]["dependencies"][0].as_str(), Some("torch_xla[tpu]"), "the value is unchanged");
    p.xla2tpu(&["check", "."]).assert().code(0);

    p.write("nb.ipynb", &notebook(&["!pip install torch_xla[tpu]\n", "import torch_xla"]));
    p.write("fsdp_config.json", "{\"xla\": true}\n");
    let out = p.xla2tpu(&["check", "--add-noqa", "--output-format", "concise", "."]).output().expect("runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "findings are left: {stderr}");
    assert!(stdout.lines().all(|l| l.starts_with("nb.ipynb") || l.starts_with("fsdp_config.json")), "{stdout}");
    assert!(stderr.contains("could not be silenced by a comment (listed above)"), "{stderr}");
}

/// The hooks pass pre-commit every file `check` reads, and only those (a named file of another
/// kind would be read as Python).
#[test]
fn the_pre_commit_hooks_name_every_kind_check_reads() {
    let hooks: yaml_serde::Value = yaml_serde::from_str(
        &fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".pre-commit-hooks.yaml")).expect("hooks"),
    )
    .expect("YAML");
    let names = [
        "a.py",
        "b.pyi",
        "nb.ipynb",
        "requirements.txt",
        "requirements-dev.txt",
        "dev-requirements.txt",
        "requirements/base.txt",
        "constraints.in",
        "pyproject.toml",
        "setup.cfg",
        "environment.yml",
        "k8s/job.yaml",
        "ci.yml",
        "run.sh",
        "x.bash",
        "Dockerfile",
        "docker/Dockerfile.gpu",
        "app.dockerfile",
        "Containerfile",
        "fsdp_config.json",
        "README.md",
        "notes.txt",
        "ruff.toml",
        "tox.ini",
        "Makefile",
        "docs/conf.cfg",
    ];
    let p = Project::new();
    for name in names {
        p.write(name, "x = 1\n");
    }
    let shown = p.xla2tpu(&["check", "--show-files", "--no-ignore", "."]).output().expect("runs");
    let read: Vec<String> = String::from_utf8_lossy(&shown.stdout).lines().map(String::from).collect();
    for hook in hooks.as_sequence().expect("a list of hooks") {
        assert!(hook.get("types_or").is_none(), "{hook:?}");
        let files = regex::Regex::new(hook["files"].as_str().expect("a files pattern")).expect("a regex");
        let mut passed: Vec<String> = names.iter().filter(|n| files.is_match(n)).map(|n| n.to_string()).collect();
        passed.sort();
        let mut expected = read.clone();
        expected.sort();
        assert_eq!(passed, expected, "{}", hook["id"].as_str().unwrap_or_default());
    }
}

/// `-o/--output-file` writes the report of every format, byte for byte what standard output
/// gets; a report (or a redirected standard output) in the tree is never read as an input.
#[test]
fn output_file_writes_every_format_and_is_never_read_back() {
    let p = Project::new().with("train.py", TRAIN).with("requirements.txt", REQUIREMENTS);
    for format in ["full", "concise", "json", "json-lines", "github", "gitlab", "sarif", "junit", "pylint"] {
        let printed = p.xla2tpu(&["check", "--output-format", format, "."]).output().expect("runs").stdout;
        let file = format!("report-{format}.json");
        p.xla2tpu(&["check", "--output-format", format, "-o", &file, "."]).assert().code(1).stdout("");
        assert_eq!(p.read(&file).as_bytes(), printed, "{format}");
        // Written again over the earlier report, which is not checked as a JSON config.
        p.xla2tpu(&["check", "--output-format", format, "--output-file", &file, "."])
            .assert()
            .code(1)
            .stderr(predicate::str::contains("2 files checked").and(predicate::str::contains("warning").not()));
        fs::remove_file(p.path(&file)).expect("remove");
    }
    p.xla2tpu(&["check", "--statistics", "-o", "stats.txt", "."]).assert().code(1).stdout("");
    assert!(p.read("stats.txt").contains("TPU901"));
    // The README's redirect: the shell creates the file (empty) before the run walks the tree.
    for _ in 0..2 {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "{} check --output-format gitlab --exit-zero . > gl-code-quality-report.json",
                bin().display()
            ))
            .current_dir(p.path(""))
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && !stderr.contains("warning") && stderr.contains("2 files checked"), "{stderr}");
    }
    let report: Value = serde_json::from_str(&p.read("gl-code-quality-report.json")).expect("JSON");
    assert_eq!(report.as_array().map(Vec::len), Some(4));
}

/// The path of the built binary.
fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("xla2tpu")
}

/// An output replaces only an earlier report of its kind: never a source file, an input of the
/// run or a README; `migrate --report` writes the format its extension names, or refuses.
#[test]
fn report_files_replace_only_earlier_reports() {
    let p = Project::new().with("train.py", TRAIN).with("README.md", "# My project\n");
    for args in [
        &["migrate", "--report", "README.md", "."][..],
        &["migrate", "--report", "README.md", "train.py"],
        &["check", "-o", "train.py", "."],
        &["check", "--output-file", "README.md", "."],
        &["check", "--write-baseline", "README.md", "."],
    ] {
        p.xla2tpu(args).assert().code(2).stderr(
            predicate::str::contains("exists and is not an earlier").and(predicate::str::contains("not overwritten")),
        );
    }
    assert_eq!((p.read("README.md"), p.read("train.py")), ("# My project\n".to_string(), TRAIN.to_string()));
    p.xla2tpu(&["migrate", "--report", "x.html", "."])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("Markdown (`.md`) or JSON (`.json`)"));
    assert!(!p.path("x.html").exists());
    for report in ["report.md", "report.json"] {
        p.xla2tpu(&["migrate", "--report", report, "."]).assert().success();
        p.xla2tpu(&["migrate", "--report", report, "."]).assert().success();
    }
    assert!(p.read("report.md").starts_with("# Migration report\n"));
    p.xla2tpu(&["check", "--write-baseline", "base.json", "."]).assert().success();
    p.xla2tpu(&["check", "--write-baseline", "base.json", "."]).assert().success();
    // An earlier report of another kind is not one either.
    p.xla2tpu(&["check", "-o", "report.md", "."]).assert().code(2);
}

/// A gate pointed at nothing must not pass in silence.
#[test]
fn a_gate_pointed_at_nothing_does_not_pass() {
    let p = Project::new().with("docs/index.md", "# docs\n");
    p.xla2tpu(&["check", "does-not-exist"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does-not-exist: No such file or directory"));
    p.xla2tpu(&["check", "--show-settings", "missing.py"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("missing.py"));
    for command in ["check", "migrate"] {
        p.xla2tpu(&[command, "docs"])
            .assert()
            .code(0)
            .stderr(predicate::str::contains("warning: no file xla2tpu reads in docs"));
    }
}

/// `--color always` colours a pipe; FORCE_COLOR and CLICOLOR_FORCE do when no flag is given,
/// NO_COLOR and `--color never` turn it off.
#[test]
fn colour_follows_the_flag_and_the_environment() {
    let p = Project::new().with("train.py", TRAIN);
    let coloured = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = Command::cargo_bin("xla2tpu").expect("binary");
        cmd.current_dir(p.path("")).args(["check"]).args(args).arg("train.py");
        for var in ["NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE", "CLICOLOR"] {
            cmd.env_remove(var);
        }
        cmd.envs(env.iter().copied());
        let out = cmd.output().expect("runs");
        out.stdout.contains(&0x1b)
    };
    assert!(!coloured(&[], &[]), "a pipe is not a terminal");
    assert!(coloured(&["--color", "always"], &[]));
    assert!(coloured(&[], &[("FORCE_COLOR", "1")]));
    assert!(coloured(&[], &[("CLICOLOR_FORCE", "1")]));
    assert!(!coloured(&[], &[("FORCE_COLOR", "1"), ("NO_COLOR", "1")]));
    assert!(!coloured(&["--color", "never"], &[("FORCE_COLOR", "1")]));
    assert!(coloured(&["--color", "always"], &[("NO_COLOR", "1")]), "the flag beats the environment");
}

/// `check | head`: the reader stopped, nothing failed; the status is still the findings'.
#[test]
fn a_reader_that_stops_early_is_not_an_error() {
    let p = Project::new();
    for i in 0..200 {
        p.write(&format!("f{i:03}.py"), TRAIN);
    }
    for (command, status) in [
        ("check --output-format concise .", 1),
        ("check --output-format json .", 1),
        ("check --show-files .", 0),
        ("migrate .", 0),
        ("rule", 0),
    ] {
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("{} {command} | head -n 1 >/dev/null; echo \"status ${{PIPESTATUS[0]}}\"", bin().display()))
            .current_dir(p.path(""))
            .output()
            .expect("runs");
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(stdout.trim(), format!("status {status}"), "{command}: {stderr}");
        assert!(!stderr.contains("Broken pipe") && !stderr.contains("error"), "{command}: {stderr}");
    }
}

/// `-q` prints the findings and errors only; `-v` also each file and the time per phase.
#[test]
fn quiet_and_verbose() {
    let p = Project::new().with("train.py", TRAIN).with("empty/notes.md", "");
    p.xla2tpu(&["check", "-q", "--output-format", "concise", "."])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("train.py:7:5: TPU110"))
        .stderr("");
    p.xla2tpu(&["migrate", "--quiet", "."])
        .assert()
        .success()
        .stdout(predicate::str::contains("--- a/train.py"))
        .stderr("");
    p.xla2tpu(&["check", "-v", "--output-format", "concise", "."])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("train.py\n").and(predicate::str::contains("timings")));
    p.xla2tpu(&["check", "-q", "-v", "."]).assert().code(2);
}

/// `--stdin-filename` reads standard input as that file: its kind, configuration and name.
#[test]
fn stdin_filename_reads_standard_input_as_that_file() {
    let p = Project::new().with("pyproject.toml", "[tool.xla2tpu.per-file-ignores]\n\"tests/*\" = [\"TPU1\"]\n");
    p.xla2tpu(&["check", "--output-format", "concise", "--stdin-filename", "requirements.txt"])
        .write_stdin(REQUIREMENTS)
        .assert()
        .code(1)
        .stdout(
            "requirements.txt:1:1: TPU901 [*] `torch_xla[tpu]==2.5.0` installs torch_xla, which TorchTPU replaces\n",
        );
    let ignored = p
        .xla2tpu(&["check", "--output-format", "concise", "--stdin-filename", "tests/test_x.py", "-"])
        .write_stdin(TRAIN)
        .output()
        .expect("runs");
    let codes: Vec<String> = String::from_utf8_lossy(&ignored.stdout)
        .lines()
        .map(|l| format!("{} {}", &l[..l.find(':').unwrap_or(0)], code(l)))
        .collect();
    assert_eq!(codes, ["tests/test_x.py TPU001"], "per-file-ignores apply by that name");
    p.xla2tpu(&["migrate", "--write", "--stdin-filename", "requirements.txt", "-"])
        .write_stdin(REQUIREMENTS)
        .assert()
        .success()
        .stdout("torch-tpu==0.2.0\nnumpy\n");
}

/// `check --fix`, as ruff users type it: the safe fixes, then what is left.
#[test]
fn check_fix_applies_the_safe_fixes_then_reports_the_rest() {
    const TRAIN: &str = "import torch_xla.core.xla_model as xm\nimport torch_xla.runtime as xr\nd = xm.xla_device()\nprint(xr.world_size())\n";
    let p = Project::new().with("train.py", TRAIN);
    p.xla2tpu(&["check", "--fix", "--output-format", "concise", "."])
        .assert()
        .code(1)
        .stdout(
            "train.py:1:1: TPU001 import of `torch_xla.runtime`, which is not installed alongside TorchTPU\n\
             train.py:4:7: TPU201 [unsafe fix] `xr.world_size()` returns the number of XLA replicas\n",
        )
        .stderr(predicate::str::contains("1 file scanned, 1 changed (1 written); 2 fixes"));
    assert!(p.read("train.py").contains("torch.device(\"tpu:0\")"));
    p.xla2tpu(&["check", "--fix", "-"])
        .write_stdin(TRAIN)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("migrate --write -"));
}
