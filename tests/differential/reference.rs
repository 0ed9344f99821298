//! Recorded references: what each original printed and wrote on torch_xla 2.9 (CPU), kept beside
//! its `run.yaml` so that CI compares migrations against them instead of running torch_xla again.
//!
//! torch_xla's side is deterministic under the pinned versions, so a recording stays valid while
//! nothing it depends on changes: the original's files, the `run.yaml` fields of the original's
//! run, the pins in `difftest/requirements-torch_xla.txt` and how the harness starts the original
//! ([`ORIGINAL_RUN`]). `reference/recorded.json` keeps all of them; a reference whose inputs differ
//! from the program's (stale), is missing, or whose stored outputs were edited, fails the test
//! with the command that records it again: `scripts/record-references NAME`.
//!
//! ```text
//! <program>/reference/recorded.json   versions, inputs (hashes), outputs (hashes)
//! <program>/reference/stdout.txt      the original's stdout, byte for byte
//! <program>/reference/files/<path>    each file of `files:` the original wrote, byte for byte
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libtest_mimic::Failed;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{Launch, Program, RunSpec};

/// How the harness starts an original (`torch_xla_command`, `run_in_temp`): bump it when that
/// changes what an original sees (its environment, arguments, working directory), and every
/// reference goes stale.
pub const ORIGINAL_RUN: u32 = 1;

/// The pins the recordings depend on, relative to the repository.
pub const PINS: &str = "difftest/requirements-torch_xla.txt";

/// The command that (re-)records references, said in every failure.
pub const COMMAND: &str = "scripts/record-references";

#[derive(Serialize, Deserialize)]
struct Recorded {
    /// What the original ran on (informative: the pins' hash is what makes a reference stale).
    versions: BTreeMap<String, String>,
    /// Everything the original's run depends on.
    inputs: Value,
    /// sha256 of each stored output (`stdout.txt`, `files/<path>`): a hand edit fails loudly.
    outputs: BTreeMap<String, String>,
}

/// A fresh reference, ready to compare against.
pub struct Reference {
    pub stdout: String,
    /// Where the original's written files are (`files/<path>`).
    pub files: PathBuf,
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The requirement lines of a pins file, without comments, sorted: a comment edit or a reordering
/// changes no recording.
fn pins_hash(text: &str) -> String {
    let mut lines: Vec<&str> =
        text.lines().map(|l| l.split('#').next().unwrap_or("").trim()).filter(|l| !l.is_empty()).collect();
    lines.sort_unstable();
    sha256(lines.join("\n").as_bytes())
}

/// The `run.yaml` fields that change the original's run, and only those (`tolerance`, `mask`,
/// `rename`, the migration's `env` and chips are read when comparing, not when recording).
fn original_run(spec: &RunSpec) -> Value {
    let launch = if spec.spmd { Launch::Python } else { spec.launch };
    let mut run = json!({ "launch": format!("{launch:?}").to_lowercase(), "args": spec.args });
    let fields = [
        ("nproc", (launch == Launch::Torchrun).then(|| json!(spec.nproc))),
        ("torch_xla_env", (!spec.torch_xla_env.is_empty()).then(|| json!(spec.torch_xla_env))),
        ("script", spec.script.as_ref().map(|s| json!(s))),
        ("pythonpath", (!spec.pythonpath.is_empty()).then(|| json!(spec.pythonpath))),
        ("files", (!spec.files.is_empty()).then(|| json!(spec.files))),
    ];
    for (key, value) in fields {
        if let Some(value) = value {
            run[key] = value;
        }
    }
    run
}

/// What a recording of `original` (the program's `input` side) depends on.
pub fn inputs(root: &Path, spec: &RunSpec, original: &Program) -> Result<Value, Failed> {
    let pins = std::fs::read_to_string(root.join(PINS)).map_err(|e| format!("{PINS}: {e}"))?;
    let program: BTreeMap<String, String> =
        original.files.iter().map(|(path, bytes)| (source_name(spec, path), sha256(bytes))).collect();
    Ok(json!({
        "original_run": ORIGINAL_RUN,
        "pins": { PINS: pins_hash(&pins) },
        "run": original_run(spec),
        "program": program,
    }))
}

/// The file a person edits: `input.py` runs as `program.py`, a project's files from `input/`.
fn source_name(spec: &RunSpec, path: &Path) -> String {
    match spec.script {
        None => "input.py".into(),
        Some(_) => format!("input/{}", path.display()),
    }
}

/// Why the recorded inputs are not the program's, in words (`input.py changed`, `run.yaml's args`).
fn differences(recorded: &Value, now: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if recorded["original_run"] != now["original_run"] {
        out.push("the harness starts originals differently (ORIGINAL_RUN in tests/differential/reference.rs)".into());
    }
    if recorded["pins"] != now["pins"] {
        out.push(format!("{PINS} changed"));
    }
    let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
    let (was, is) = (&recorded["run"], &now["run"]);
    let mut fields = keys(was);
    fields.extend(keys(is));
    fields.sort();
    fields.dedup();
    for field in fields.iter().filter(|f| was[f.as_str()] != is[f.as_str()]) {
        out.push(format!("run.yaml's `{field}` changed"));
    }
    let (was, is) = (&recorded["program"], &now["program"]);
    let mut files = keys(was);
    files.extend(keys(is));
    files.sort();
    files.dedup();
    for file in files {
        let what = match (was.get(&file), is.get(&file)) {
            (Some(a), Some(b)) if a == b => continue,
            (Some(_), Some(_)) => "changed",
            (None, _) => "was added",
            (_, None) => "was removed",
        };
        out.push(format!("{file} {what}"));
    }
    if out.is_empty() {
        out.push("recorded.json is not one this harness writes".into());
    }
    out
}

fn display(dir: &Path, root: &Path) -> String {
    dir.strip_prefix(root).unwrap_or(dir).display().to_string()
}

fn fix(dir: &Path) -> String {
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    format!("record it with `{COMMAND} {name}` (needs difftest/.venv) and commit its reference/ directory")
}

/// The program's recorded reference, if it is fresh and intact; otherwise why not, with the fix.
pub fn load(root: &Path, dir: &Path, spec: &RunSpec, original: &Program) -> Result<Reference, Failed> {
    let at = dir.join("reference");
    let shown = display(&at, root);
    let Ok(text) = std::fs::read_to_string(at.join("recorded.json")) else {
        return Err(
            format!("{} has no recorded torch_xla reference ({shown}/): {}", display(dir, root), fix(dir)).into()
        );
    };
    let recorded: Recorded =
        serde_json::from_str(&text).map_err(|e| format!("{shown}/recorded.json: {e}; {}", fix(dir)))?;
    let now = inputs(root, spec, original)?;
    if recorded.inputs != now {
        let why = differences(&recorded.inputs, &now).join("; ");
        return Err(format!(
            "{shown} is STALE: {why}. The recorded output no longer describes this program: {}",
            fix(dir)
        )
        .into());
    }
    // The stored outputs are the recorded ones, and all of them.
    let mut stored: BTreeMap<String, String> = BTreeMap::new();
    for path in super::walk(&at).into_iter().filter(|p| *p != at.join("recorded.json")) {
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        stored.insert(path.strip_prefix(&at).expect("inside").display().to_string(), sha256(&bytes));
    }
    if stored != recorded.outputs {
        return Err(format!(
            "{shown}'s stored outputs are not the recorded ones (edited by hand?): the files {:?} hash to {:?}, \
             recorded.json says {:?}: {}",
            stored.keys().collect::<Vec<_>>(),
            stored.values().map(|h| &h[..12]).collect::<Vec<_>>(),
            recorded.outputs.values().map(|h| &h[..h.len().min(12)]).collect::<Vec<_>>(),
            fix(dir)
        )
        .into());
    }
    let stdout = std::fs::read(at.join("stdout.txt")).map_err(|e| format!("{shown}/stdout.txt: {e}"))?;
    // As a live run's output is read: bytes, lossily as text.
    Ok(Reference { stdout: String::from_utf8_lossy(&stdout).into_owned(), files: at.join("files") })
}

/// The versions in `python`'s environment (read from package metadata, without importing torch),
/// checked against the pins a recording will claim: a venv that drifted from them is re-installed
/// before anything is recorded.
pub fn versions(root: &Path, python: &Path) -> Result<BTreeMap<String, String>, Failed> {
    static ONCE: OnceLock<Result<BTreeMap<String, String>, String>> = OnceLock::new();
    ONCE.get_or_init(|| {
        const CHECK: &str = r##"
import json, platform, re, sys
from importlib.metadata import version, PackageNotFoundError
wrong = []
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, pinned = re.split(r"\s*==\s*", line)
    try:
        got = version(name)
    except PackageNotFoundError:
        got = None
    if got != pinned:
        wrong.append(f"{name}: {got or 'not installed'}, pinned {pinned}")
print(json.dumps({"wrong": wrong, "versions": {"python": platform.python_version(), "torch": version("torch"), "torch_xla": version("torch_xla")}}))
"##;
        let out = std::process::Command::new(python)
            .args(["-c", CHECK])
            .arg(root.join(PINS))
            .output()
            .map_err(|e| format!("{}: {e}", python.display()))?;
        if !out.status.success() {
            return Err(format!("reading difftest/.venv's versions failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        if let Some(wrong) = report["wrong"].as_array().filter(|w| !w.is_empty()) {
            return Err(format!(
                "difftest/.venv does not match {PINS} ({}): run difftest/setup_venv.sh before recording",
                wrong.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")
            ));
        }
        serde_json::from_value(report["versions"].clone()).map_err(|e| e.to_string())
    })
    .clone()
    .map_err(Failed::from)
}

/// Write the reference of the program in `dir`: the original's `stdout` and, from `ran_in`, the
/// `files` it wrote. Replaces the previous reference as a whole.
pub fn write(
    dir: &Path,
    versions: BTreeMap<String, String>,
    inputs: Value,
    stdout: &[u8],
    ran_in: &Path,
    files: &[String],
) -> Result<(), Failed> {
    let staging = tempfile::Builder::new().prefix(".reference-").tempdir_in(dir).map_err(|e| e.to_string())?;
    let mut outputs = BTreeMap::new();
    let mut put = |name: String, bytes: &[u8]| -> Result<(), Failed> {
        let dest = staging.path().join(&name);
        std::fs::create_dir_all(dest.parent().expect("inside")).map_err(|e| e.to_string())?;
        std::fs::write(&dest, bytes).map_err(|e| e.to_string())?;
        outputs.insert(name, sha256(bytes));
        Ok(())
    };
    put("stdout.txt".into(), stdout)?;
    for name in files {
        let bytes = std::fs::read(ran_in.join(name)).map_err(|_| format!("torch_xla did not write {name}"))?;
        put(format!("files/{name}"), &bytes)?;
    }
    let recorded = Recorded { versions, inputs, outputs };
    let json = serde_json::to_string_pretty(&recorded).map_err(|e| e.to_string())? + "\n";
    std::fs::write(staging.path().join("recorded.json"), json).map_err(|e| e.to_string())?;
    let target = dir.join("reference");
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(|e| format!("{}: {e}", target.display()))?;
    }
    std::fs::rename(staging.keep(), &target).map_err(|e| format!("{}: {e}", target.display()))?;
    Ok(())
}
