//! Execution profiles (`corpus/exec/<library>/<name>.json`, schema 1): each profiled type's
//! tiny-config model run on the emulated TorchTPU 0.2.0 by `python -m xla2tpu_tracer execute`
//! (a CPU reference, then inference and a training step on `tpu`, in float32 and under bf16
//! autocast). An op profile says what a model dispatches on the CPU; this says whether it ran
//! on the device, or where it first failed. Parsing is lenient, as for op profiles.
use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use include_dir::{Dir, include_dir};
use serde::{Deserialize, Serialize};

/// `corpus/exec`, compiled in like the op profiles: `sweep` answers with both verdicts offline.
static EMBEDDED: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/corpus/exec");

/// The two precisions every type runs in.
pub const FLOAT32: &str = "float32";
pub const BF16: &str = "bf16-autocast";

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
pub enum ExecStatus {
    /// Inference and the training step ran on the device for every class.
    #[serde(rename = "pass")]
    Pass,
    /// Inference ran on the device; training did not run for some class (it fails on the CPU
    /// reference too, so the harness cannot say).
    #[serde(rename = "pass-inference")]
    PassInference,
    /// Ran on the device, but only the text path: an input the model takes (image, video,
    /// audio) was never fed, so its encoder did not run (set by `sweep` from the op profile).
    #[serde(rename = "partial")]
    Partial,
    /// Failed on the device where the CPU reference ran.
    #[serde(rename = "fail")]
    Fail,
    /// Not known: no execution profile, the CPU reference failed, timeout, memory cap, or a
    /// TorchTPU API the emulator cannot run.
    #[default]
    #[serde(rename = "unknown")]
    Unknown,
}

impl ExecStatus {
    pub const ALL: [ExecStatus; 5] =
        [ExecStatus::Pass, ExecStatus::PassInference, ExecStatus::Partial, ExecStatus::Fail, ExecStatus::Unknown];

    pub fn label(self) -> &'static str {
        match self {
            ExecStatus::Pass => "pass",
            ExecStatus::PassInference => "pass-inference",
            ExecStatus::Partial => "partial",
            ExecStatus::Fail => "fail",
            ExecStatus::Unknown => "unknown",
        }
    }

    /// How bad, for combining the profiles of one model: a failure outweighs not knowing,
    /// which outweighs a partial pass.
    pub fn severity(self) -> u8 {
        match self {
            ExecStatus::Pass => 0,
            ExecStatus::PassInference => 1,
            ExecStatus::Partial => 2,
            ExecStatus::Unknown => 3,
            ExecStatus::Fail => 4,
        }
    }
}

/// The first failure of a run on the device.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct ExecFailure {
    pub class: String,
    /// `inference` or `train`.
    pub phase: String,
    /// `inference`, `forward`, `backward`, `optimizer` or `to_device`.
    pub step: String,
    /// `missing_op`, `device_mix`, `dtype`, `api_raises`, `not_emulated` or `other`.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// The library's file and line (`transformers/models/x/modeling_x.py:123`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    pub message: String,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct PrecisionRun {
    pub status: ExecStatus,
    pub failure: Option<ExecFailure>,
    pub reason: Option<String>,
    /// What the emulator ran but could not vouch for (an integer `histc`, whose TorchTPU
    /// dtype coverage the wheel does not show): a pass that rests on it says so.
    pub unchecked: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Execution {
    pub schema: u32,
    pub id: String,
    pub library: String,
    pub name: String,
    pub method: String,
    pub classes: Vec<String>,
    /// `float32` and `bf16-autocast`.
    pub precisions: BTreeMap<String, PrecisionRun>,
    pub versions: BTreeMap<String, String>,
}

impl Execution {
    pub fn run(&self, precision: &str) -> Option<&PrecisionRun> {
        self.precisions.get(precision)
    }
}

#[derive(Debug, Default)]
pub struct Executions {
    by_id: BTreeMap<String, Execution>,
    /// Where they came from, for reports.
    source: String,
    errors: Vec<String>,
}

impl Executions {
    /// The execution profiles compiled into the binary (`corpus/exec`), parsed on first use.
    pub fn embedded() -> &'static Executions {
        static CELL: std::sync::OnceLock<Executions> = std::sync::OnceLock::new();
        CELL.get_or_init(|| {
            let mut out = Executions { source: "corpus/exec [embedded]".to_string(), ..Default::default() };
            let mut stack = vec![&EMBEDDED];
            while let Some(dir) = stack.pop() {
                stack.extend(dir.dirs());
                for file in dir.files().filter(|f| f.path().extension().is_some_and(|e| e == "json")) {
                    out.add(&file.path().to_string_lossy(), file.contents());
                }
            }
            out
        })
    }

    /// Execution profiles in a directory written by `python -m xla2tpu_tracer execute --out DIR`.
    pub fn from_dir(dir: &Path) -> anyhow::Result<Executions> {
        let mut out = Executions { source: dir.display().to_string(), ..Default::default() };
        let read = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
        for lib in read.flatten().filter(|e| e.path().is_dir()) {
            for file in std::fs::read_dir(lib.path())?.flatten() {
                let path = file.path();
                if path.extension().is_some_and(|e| e == "json") {
                    match std::fs::read(&path) {
                        Ok(bytes) => out.add(&path.display().to_string(), &bytes),
                        Err(e) => out.errors.push(format!("{}: {e}", path.display())),
                    }
                }
            }
        }
        Ok(out)
    }

    fn add(&mut self, path: &str, bytes: &[u8]) {
        if path.ends_with("index.json") {
            return;
        }
        match serde_json::from_slice::<Execution>(bytes) {
            Ok(e) if !e.id.is_empty() => {
                self.by_id.insert(e.id.clone(), e);
            }
            Ok(_) => self.errors.push(format!("{path}: no id")),
            Err(e) => self.errors.push(format!("{path}: {e}")),
        }
    }

    pub fn get(&self, id: &str) -> Option<&Execution> {
        self.by_id.get(id)
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn load_errors(&self) -> &[String] {
        &self.errors
    }

    /// The versions the runs were made with (emulator, torch, libraries), merged over files.
    pub fn versions(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for e in self.by_id.values() {
            for (k, v) in &e.versions {
                out.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_failure_and_orders_statuses() {
        let json = br#"{"schema": 1, "id": "timm/x", "library": "timm", "name": "x", "status": "fail",
            "precisions": {"float32": {"status": "fail", "failure": {"class": "X", "phase": "inference",
            "step": "inference", "kind": "device_mix", "op": "aten::mm", "site": "timm/models/x.py:3",
            "message": "RuntimeError: ..."}}, "bf16-autocast": {"status": "unknown", "reason": "timeout"}}}"#;
        let mut ex = Executions::default();
        ex.add("timm/x.json", json);
        let e = ex.get("timm/x").expect("parsed");
        let f = e.run(FLOAT32).and_then(|r| r.failure.as_ref()).expect("failure");
        assert_eq!((f.kind.as_str(), f.op.as_deref()), ("device_mix", Some("aten::mm")));
        assert_eq!(e.run(BF16).map(|r| r.status), Some(ExecStatus::Unknown));
        assert!(ExecStatus::Fail.severity() > ExecStatus::Unknown.severity());
        ex.add("bad.json", b"{");
        assert_eq!(ex.load_errors().len(), 1);
    }

    #[test]
    fn the_embedded_runs_are_corpus_exec() {
        let ex = Executions::embedded();
        assert!(ex.load_errors().is_empty(), "{:?}", ex.load_errors());
        let on_disk = Executions::from_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/exec")).expect("reads");
        assert_eq!(ex.len(), on_disk.len());
        assert!(ex.len() > 700, "{} runs", ex.len());
        assert_eq!(ex.get("transformers/bert").map(|e| e.run(FLOAT32).map(|r| r.status)), Some(Some(ExecStatus::Pass)));
    }
}
