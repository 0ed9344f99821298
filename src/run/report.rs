//! What the emulator saw, merged over every process of a run.
//!
//! Each emulated process appends JSON Lines to `<dir>/<pid>.jsonl` as things
//! happen (schema `xla2tpu-emulator/1`, documented in `emulator/README.md`),
//! so the first incompatibility survives a crash or `os._exit`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::advice::Advice;
use super::site::Site;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct Frame {
    pub file: String,
    pub line: u32,
    #[serde(default)]
    pub function: String,
}

/// One line of a process's event file.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Event {
    Start {
        pid: u32,
        #[serde(default)]
        argv: Vec<String>,
        #[serde(default)]
        torch: String,
        time: f64,
    },
    Incompatibility(Incompatibility),
    Warning(Warning),
    Exception(ExceptionEvent),
    Summary(Summary),
    Advice(Box<Advice>),
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Incompatibility {
    pub kind: String,
    pub message: String,
    #[serde(default)]
    pub op: Option<String>,
    /// The op argument at fault (the off-device tensor of a `device_mismatch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument: Option<String>,
    #[serde(flatten)]
    pub at: Site,
    #[serde(default)]
    pub function: Option<String>,
    #[serde(default)]
    pub stack: Vec<Frame>,
    #[serde(default)]
    pub time: f64,
    /// Filled in when merging: which process saw it.
    #[serde(default)]
    pub pid: u32,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Warning {
    pub kind: String,
    pub message: String,
    #[serde(flatten)]
    pub at: Site,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ExceptionEvent {
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    #[serde(flatten)]
    pub at: Site,
    #[serde(default)]
    pub pid: u32,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct HostSync {
    pub kind: String,
    pub count: u64,
    #[serde(flatten)]
    pub at: Site,
    #[serde(default)]
    pub function: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, Default)]
pub struct Summary {
    #[serde(default)]
    pub rank: Option<u32>,
    #[serde(default)]
    pub world_size: Option<u32>,
    #[serde(default)]
    pub device_initialized: bool,
    #[serde(default)]
    pub ops: BTreeMap<String, u64>,
    #[serde(default)]
    pub host_syncs: Vec<HostSync>,
}

/// One emulated process.
#[derive(Debug, Clone, Serialize)]
pub struct Process {
    pub pid: u32,
    pub argv: Vec<String>,
    pub started: f64,
    /// None when the process ended without writing its summary (killed).
    pub summary: Option<Summary>,
    pub exception: Option<ExceptionEvent>,
    /// What `--advise` counted, per step and call site.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advice: Option<Advice>,
}

/// Everything a run saw, in start order.
#[derive(Debug, Clone, Serialize, Default)]
pub struct RunReport {
    pub torch: Option<String>,
    pub processes: Vec<Process>,
    /// Every incompatibility, earliest first.
    pub incompatibilities: Vec<Incompatibility>,
    pub warnings: Vec<Warning>,
    /// Unreadable lines, by file (a process killed mid-write leaves one).
    pub problems: Vec<String>,
}

/// Whether a file's first bytes are those of an earlier `--report` (which the next may replace):
/// a JSON object whose first key is the report's first, in name order or in the fields' order.
pub fn is_report(head: &str) -> bool {
    head.strip_prefix('{').map(str::trim_start).is_some_and(|rest| {
        ["\"advice\": {", "\"incompatibilities\": ["].iter().any(|key| rest.starts_with(key))
            || (rest.starts_with("\"torch\": ") && rest.contains("\"processes\": ["))
    })
}

impl RunReport {
    /// Read every `*.jsonl` in `dir`.
    pub fn read(dir: &Path) -> RunReport {
        let mut report = RunReport::default();
        let mut files: Vec<_> = match std::fs::read_dir(dir) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect(),
            Err(e) => {
                report.problems.push(format!("{}: {e}", dir.display()));
                return report;
            }
        };
        files.sort();
        for file in files {
            let text = match std::fs::read_to_string(&file) {
                Ok(t) => t,
                Err(e) => {
                    report.problems.push(format!("{}: {e}", file.display()));
                    continue;
                }
            };
            report.add_process(&file, &text);
        }
        report.processes.sort_by(|a, b| a.started.total_cmp(&b.started));
        report.incompatibilities.sort_by(|a, b| a.time.total_cmp(&b.time));
        report
    }

    fn add_process(&mut self, file: &Path, text: &str) {
        let mut process =
            Process { pid: 0, argv: vec![], started: f64::MAX, summary: None, exception: None, advice: None };
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let event: Event = match serde_json::from_str(line) {
                Ok(e) => e,
                Err(e) => {
                    self.problems.push(format!("{}:{}: {e}", file.display(), n + 1));
                    continue;
                }
            };
            match event {
                Event::Start { pid, argv, torch, time } => {
                    process.pid = pid;
                    process.argv = argv;
                    process.started = time;
                    if !torch.is_empty() {
                        self.torch.get_or_insert(torch);
                    }
                }
                Event::Incompatibility(mut i) => {
                    i.pid = process.pid;
                    self.incompatibilities.push(i);
                }
                Event::Warning(w) => {
                    let seen = self.warnings.iter().any(|x| x.kind == w.kind && x.at == w.at);
                    if !seen {
                        self.warnings.push(w);
                    }
                }
                Event::Exception(mut e) => {
                    e.pid = process.pid;
                    process.exception.get_or_insert(e);
                }
                Event::Summary(s) => process.summary = Some(s),
                Event::Advice(a) => process.advice = Some(*a),
            }
        }
        self.processes.push(process);
    }

    pub fn first_incompatibility(&self) -> Option<&Incompatibility> {
        self.incompatibilities.first()
    }

    /// Ops executed on emulated chips, summed over processes, most frequent first.
    pub fn ops(&self) -> Vec<(String, u64)> {
        let mut total: BTreeMap<&str, u64> = BTreeMap::new();
        for s in self.processes.iter().filter_map(|p| p.summary.as_ref()) {
            for (op, n) in &s.ops {
                *total.entry(op).or_default() += n;
            }
        }
        let mut ops: Vec<(String, u64)> = total.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        ops.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        ops
    }

    /// Host syncs merged by (kind, site) over processes, most frequent first.
    pub fn host_syncs(&self) -> Vec<HostSync> {
        let mut merged: Vec<HostSync> = Vec::new();
        for s in self.processes.iter().filter_map(|p| p.summary.as_ref()) {
            for h in &s.host_syncs {
                match merged.iter_mut().find(|m| m.kind == h.kind && m.at == h.at) {
                    Some(m) => m.count += h.count,
                    None => merged.push(h.clone()),
                }
            }
        }
        merged.sort_by_key(|h| std::cmp::Reverse(h.count));
        merged
    }

    /// The process whose advice a person reads: rank 0 (else the first process that counted
    /// steps, else the first that counted anything), and how many processes counted.
    pub fn advice(&self) -> Option<(&Process, &Advice)> {
        let with: Vec<(&Process, &Advice)> =
            self.processes.iter().filter_map(|p| p.advice.as_ref().map(|a| (p, a))).collect();
        with.iter()
            .find(|(p, _)| p.summary.as_ref().and_then(|s| s.rank) == Some(0))
            .or_else(|| with.iter().find(|(_, a)| !a.steps.is_empty()))
            .or(with.first())
            .copied()
    }

    /// Ranks seen (from each process's default process group), sorted.
    pub fn ranks(&self) -> Vec<(u32, Option<u32>)> {
        let mut ranks: Vec<(u32, Option<u32>)> = self
            .processes
            .iter()
            .filter_map(|p| p.summary.as_ref())
            .filter_map(|s| s.rank.map(|r| (r, s.world_size)))
            .collect();
        ranks.sort();
        ranks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_processes_and_orders_incompatibilities_by_time() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("11.jsonl"),
            concat!(
                r#"{"event":"start","schema":"xla2tpu-emulator/1","pid":11,"argv":["t.py"],"torch":"2.15.0","time":1.0}"#,
                "\n",
                r#"{"event":"incompatibility","kind":"missing_op","message":"m","op":"aten::median","file":"/x/t.py","line":9,"function":"f","stack":[],"time":3.0}"#,
                "\n",
                r#"{"event":"summary","rank":1,"world_size":2,"device_initialized":true,"ops":{"aten::add.Tensor":2},"host_syncs":[{"kind":"item","count":2,"file":"/x/t.py","line":5}]}"#,
                "\n"
            ),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("10.jsonl"),
            concat!(
                r#"{"event":"start","pid":10,"time":0.5}"#,
                "\n",
                r#"{"event":"incompatibility","kind":"internal_api","message":"n","time":2.0}"#,
                "\n",
                r#"{"event":"summary","rank":0,"world_size":2,"ops":{"aten::add.Tensor":3,"aten::mm":1},"host_syncs":[{"kind":"item","count":1,"file":"/x/t.py","line":5}]}"#,
                "\n",
                "{\"event\":\"summ" // a process killed mid-write
            ),
        )
        .unwrap();
        let r = RunReport::read(dir.path());
        assert_eq!(r.processes.iter().map(|p| p.pid).collect::<Vec<_>>(), vec![10, 11]);
        assert_eq!(r.first_incompatibility().map(|i| (i.kind.as_str(), i.pid)), Some(("internal_api", 10)));
        assert_eq!(r.ops()[0], ("aten::add.Tensor".to_string(), 5));
        assert_eq!(r.host_syncs()[0].count, 3);
        assert_eq!(r.ranks(), vec![(0, Some(2)), (1, Some(2))]);
        assert_eq!(r.torch.as_deref(), Some("2.15.0"));
        assert_eq!(r.problems.len(), 1);
    }
}
