//! A whole project migrated as a new user would: `xla2tpu migrate --write` on every project
//! under `corpus/projects/*/input/` (package code, a training script, a Kaggle-style notebook,
//! requirements.txt, pyproject.toml, a launch script, a Dockerfile, a Lightning script, an
//! accelerate config, a Kubernetes job). What must hold:
//!
//! - with `--unsafe-fixes` the tree equals `expected/`, byte for byte;
//! - every output still loads as its kind (Python parses; JSON, TOML and YAML load);
//! - a second run changes nothing;
//! - no torch_xla / optimum-tpu / PJRT reference is left that the report does not list, with or
//!   without `--unsafe-fixes`: each line still mentioning one is an item of the report of a run
//!   on the migrated tree, which locates items in that tree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use xla2tpu::migrate::project;
use xla2tpu::migrate::target::Kind;

fn projects() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/projects");
    let mut found: Vec<PathBuf> =
        std::fs::read_dir(root).expect("corpus/projects").flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    found.sort();
    found
}

/// Every file under `dir`, by its path relative to `dir`.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("readable").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).expect("readable");
                files.insert(p.strip_prefix(dir).expect("inside").to_path_buf(), bytes);
            }
        }
    }
    files
}

fn copy(from: &Path, to: &Path) {
    for (rel, bytes) in tree(from) {
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().expect("a parent")).expect("mkdir");
        std::fs::write(dest, bytes).expect("write");
    }
}

/// `xla2tpu migrate --write [extra] --report report.json .` in `dir`; the report, parsed.
fn migrate(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let report = dir.join("..").join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_xla2tpu"))
        .current_dir(dir)
        .args(["migrate", "--isolated", "--write", "--report"])
        .arg(&report)
        .args(extra)
        .arg(".")
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "migrate failed in {}:\n{stderr}", dir.display());
    assert!(stderr.contains("report: "), "the summary names the report:\n{stderr}");
    serde_json::from_slice(&std::fs::read(&report).expect("the report was written")).expect("the report is JSON")
}

/// What still mentions torch_xla and friends: the patterns of a reference a team must act on.
const REFERENCES: &[&str] = &[
    r"torch[_-]?xla",
    r"optimum[-_.\[]tpu",
    r"pjrt",
    r"\bxrt_",
    r"libtpu",
    r"\bxla_(use|downcast|persistent|ir|hlo|save|metrics)",
    r"xla_(dist|spawn|multiprocessing)",
    r"xla(fsdp)?strategy",
    r"distributed_type:\s*(xla|tpu)",
    r#"accelerator\s*=\s*["']tpu"#,
    r"\bxmp?\.",
];

/// `from lightning.pytorch.strategies import XLAStrategy`: importing a framework's torch_xla
/// class works on TorchTPU; its uses are what must be reported (a torch_xla import fails, and is).
fn imports_a_framework(line: &str) -> bool {
    let line = line.trim_start();
    let module =
        line.strip_prefix("from ").or_else(|| line.strip_prefix("import ")).and_then(|r| r.split_whitespace().next());
    module.is_some_and(|m| !m.starts_with("torch_xla") && !m.starts_with("optimum"))
}

/// (path, cell, line) of every line of the tree that mentions a reference.
fn references(dir: &Path) -> BTreeSet<(String, Option<usize>, usize, String)> {
    let pattern = regex::Regex::new(&format!("(?i){}", REFERENCES.join("|"))).expect("valid");
    let mut found = BTreeSet::new();
    for (rel, bytes) in tree(dir) {
        let path = rel.display().to_string();
        let text = String::from_utf8_lossy(&bytes).to_string();
        let mut scan = |cell: Option<usize>, text: &str| {
            for (i, line) in text.lines().enumerate() {
                if pattern.is_match(line) && !imports_a_framework(line) {
                    found.insert((path.clone(), cell, i + 1, line.trim().to_string()));
                }
            }
        };
        if Kind::of(&rel) == Some(Kind::Notebook) {
            let nb: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            for (i, cell) in nb["cells"].as_array().expect("cells").iter().enumerate() {
                let source = match &cell["source"] {
                    serde_json::Value::Array(lines) => lines.iter().filter_map(|l| l.as_str()).collect::<String>(),
                    s => s.as_str().unwrap_or("").to_string(),
                };
                scan(Some(i + 1), &source);
            }
        } else {
            scan(None, &text);
        }
    }
    found
}

/// (path, cell, line) of every item the report lists: the manual ones, the unsafe fixes and
/// the imports kept for them.
fn reported(report: &serde_json::Value) -> BTreeSet<(String, Option<usize>, usize)> {
    let manual = report["work"].as_array().expect("work").iter().flat_map(|g| g["items"].as_array().expect("items"));
    let unsafe_fixes = report["unsafe_fixes"].as_array().expect("unsafe_fixes");
    let kept_imports = report["kept_imports"].as_array().expect("kept_imports");
    manual
        .chain(unsafe_fixes)
        .chain(kept_imports)
        .map(|i| {
            let path = i["path"].as_str().expect("path").trim_start_matches("./").to_string();
            (path, i["cell"].as_u64().map(|c| c as usize), i["line"].as_u64().expect("line") as usize)
        })
        .collect()
}

fn assert_loads(dir: &Path) {
    for (rel, bytes) in tree(dir) {
        let text = String::from_utf8(bytes).expect("UTF-8");
        if let Some(kind) = Kind::of(&rel) {
            project::validate(kind, &text).unwrap_or_else(|e| panic!("{}: {e}", rel.display()));
        }
        if rel.extension().is_some_and(|e| e == "json" || e == "ipynb") {
            serde_json::from_str::<serde_json::Value>(&text).unwrap_or_else(|e| panic!("{}: {e}", rel.display()));
        }
    }
}

fn assert_every_reference_is_reported(dir: &Path, extra: &[&str]) {
    let report = migrate(dir, extra);
    assert_eq!(report["totals"]["fixes"], 0, "a second run applied fixes: {report:#}");
    let listed = reported(&report);
    let missing: Vec<String> = references(dir)
        .into_iter()
        .filter(|(path, cell, line, _)| !listed.contains(&(path.clone(), *cell, *line)))
        .map(|(path, cell, line, text)| match cell {
            Some(c) => format!("{path}:cell {c}:{line}: {text}"),
            None => format!("{path}:{line}: {text}"),
        })
        .collect();
    assert!(missing.is_empty(), "references neither rewritten nor reported ({extra:?}):\n{}", missing.join("\n"));
}

#[test]
fn projects_migrate_to_their_expected_trees_and_leave_nothing_unreported() {
    let projects = projects();
    assert!(!projects.is_empty(), "corpus/projects holds at least one project");
    for project in projects {
        let name = project.file_name().expect("a name").to_string_lossy().to_string();
        let tmp = tempfile::tempdir().expect("tempdir");

        // Everything, as the expected tree shows it.
        let all = tmp.path().join("all");
        copy(&project.join("input"), &all);
        let first = migrate(&all, &["--unsafe-fixes"]);
        let (got, want) = (tree(&all), tree(&project.join("expected")));
        let differ: Vec<String> = got
            .keys()
            .chain(want.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|rel| got.get(*rel) != want.get(*rel))
            .map(|rel| {
                let text = |t: &BTreeMap<PathBuf, Vec<u8>>| t.get(rel).map(|b| String::from_utf8_lossy(b).to_string());
                let diff =
                    similar::TextDiff::from_lines(&text(&want).unwrap_or_default(), &text(&got).unwrap_or_default())
                        .unified_diff()
                        .header("expected", "actual")
                        .to_string();
                format!("{}:\n{diff}", rel.display())
            })
            .collect();
        assert!(differ.is_empty(), "{name}: the migrated tree differs from expected/:\n{}", differ.join("\n"));
        assert!(first["totals"]["errors"] == 0, "{name}: {first:#}");
        assert_loads(&all);
        assert_every_reference_is_reported(&all, &["--unsafe-fixes"]);
        assert_eq!(tree(&all), want, "{name}: a second run changed files");

        // Safe fixes only: less is rewritten, so more is listed.
        let safe = tmp.path().join("safe");
        copy(&project.join("input"), &safe);
        migrate(&safe, &[]);
        assert_loads(&safe);
        let before = tree(&safe);
        assert_every_reference_is_reported(&safe, &[]);
        assert_eq!(tree(&safe), before, "{name}: a second safe run changed files");

        // The report a team reads, pinned for review.
        let md = tmp.path().join("report.md");
        let input = tmp.path().join("fresh");
        copy(&project.join("input"), &input);
        let out = Command::new(env!("CARGO_BIN_EXE_xla2tpu"))
            .current_dir(&input)
            .args(["migrate", "--isolated", "--report"])
            .arg(&md)
            .arg(".")
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        insta::assert_snapshot!(format!("project_report_{name}"), std::fs::read_to_string(&md).expect("written"));
    }
}

/// A project for other hardware torch_xla drove, whose application code says nothing about it:
/// only its launch script (and the packages it installs) select AWS Neuron. Its Python is
/// generic torch_xla (`xm.xla_device()`), which the rules would turn into TorchTPU code; the run
/// decides for every file (issue 43 item 21). With a TPU selected somewhere in it, the same
/// project is a TPU project (one that also supports Neuron): it is migrated.
#[test]
fn a_project_whose_launch_script_alone_selects_other_hardware_is_left_alone() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let write = |rel: &str, text: &str| {
        let path = tmp.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "train.py",
        "import torch\nimport torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\nx = torch.ones(2, device=device)\nxm.mark_step()\nprint(x.cpu())\n",
    );
    write(
        "scripts/run.sh",
        "#!/bin/bash\nexport PJRT_DEVICE=NEURON\nneuron_parallel_compile torchrun --nproc_per_node=2 train.py\n",
    );
    write("requirements.txt", "torch_xla==2.1.2\n");
    let before = tree(tmp.path());
    let report = migrate(tmp.path(), &["--unsafe-fixes"]);
    assert_eq!(tree(tmp.path()), before, "nothing of a Neuron project is rewritten");
    let items: Vec<(String, String, String)> = report["work"]
        .as_array()
        .expect("work")
        .iter()
        .flat_map(|g| g["items"].as_array().expect("items").iter())
        .map(|i| {
            let path = i["path"].as_str().expect("path").trim_start_matches("./").to_string();
            (path, i["code"].as_str().expect("code").to_string(), i["message"].as_str().unwrap_or_default().to_string())
        })
        .collect();
    for file in ["train.py", "scripts/run.sh", "requirements.txt"] {
        let found: Vec<_> = items.iter().filter(|(p, _, _)| p == file).collect();
        assert!(
            found.len() == 1 && found[0].1 == "TPU713" && found[0].2.contains("`NEURON`"),
            "{file}: one TPU713 item, got {found:?}"
        );
    }

    // The same project with a TPU launch script next to the Neuron one: migrated.
    write("scripts/run_tpu.sh", "#!/bin/bash\nexport PJRT_DEVICE=TPU\ntorchrun --nproc_per_node=4 train.py\n");
    migrate(tmp.path(), &["--unsafe-fixes"]);
    let train = std::fs::read_to_string(tmp.path().join("train.py")).expect("read");
    assert!(train.contains("torch.device(\"tpu:0\")") && !train.contains("torch_xla"), "{train}");
}
