//! Does a backend support every op a profile recorded? The rules, in the order `check` applies them:
//!
//! 1. backend kernel → supported;
//! 2. composite-explicit with a structured `.out` delegate → whatever the delegate is;
//! 3. composite-explicit without delegate → supported iff all recorded `inner` ops are
//!    (no `inner` recorded: supported by its default kernel, noted as unverified);
//! 4. composite-implicit → supported through its decomposition (profiles are post-decomposition,
//!    so it only appears when the tracing device had its own kernel), noted;
//! 5. missing_fallback → missing, with the backend's fallback behaviour as the reason;
//! 6. not in the registry: non-aten → ignored (noted); aten → missing, "unknown to this registry".
//!
//! Ops tagged with a device-neutral requirement are replaced by the backend's resolution of it,
//! and backward ops the backend never calls (it differentiates the forward op itself, listed under
//! `own_backward` in its neutral file) are noted instead of checked.
use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::coverage::Coverage;
use super::neutral::cpu_requirement;
use super::profile::{OpRecord, Profile};
use super::registry::{Class, Registry};

#[derive(Clone, Debug, Serialize)]
pub struct Evaluation {
    pub profile_id: String,
    pub backend: String,
    /// No op is missing.
    pub pass: bool,
    /// No missing op is used at inference (e.g. only a backward kernel is missing).
    pub inference_ok: bool,
    pub missing: Vec<MissingOp>,
    /// Things that work but hurt on a TPU: host syncs, dynamic shapes, float64.
    pub warnings: Vec<String>,
    /// How verdicts were reached where it is not a plain kernel lookup.
    pub notes: Vec<String>,
    /// What the profile proves: a profile without training (or without a class) cannot prove a pass.
    pub coverage: Coverage,
}

#[derive(Clone, Debug, Serialize)]
pub struct MissingOp {
    pub op: String,
    pub reason: String,
    pub phases: Vec<String>,
}

/// The verdict on one op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Support {
    Yes,
    /// Supported, with a caveat worth telling the user.
    Noted(String),
    /// Not counted at all (non-aten ops the registry does not describe).
    Ignored(String),
    No(String),
}

impl Support {
    pub fn is_missing(&self) -> bool {
        matches!(self, Support::No(_))
    }
}

/// One op on its own (no profile context, so composite ops count as unverified-supported).
pub fn op_support(registry: &Registry, op: &str) -> Support {
    Checker::new(registry, &[], false).check(op)
}

/// `op_support` for an op whose composite kernel was recorded calling `inner`.
pub fn op_support_with_inner(registry: &Registry, op: &str, inner: Vec<String>) -> Support {
    let record = OpRecord { op: op.to_string(), inner: Some(inner), ..OpRecord::default() };
    Checker::new(registry, std::slice::from_ref(&record), false).check(op)
}

/// The ops of `records` the backend lacks, sorted: what [`evaluate`] reports as missing,
/// without the notes and coverage (the API table judges thousands of call shapes at start-up).
pub fn missing_ops(registry: &Registry, records: &[OpRecord]) -> Vec<MissingOp> {
    missing_and_notes(&mut Checker::new(registry, records, true), records)
}

fn missing_and_notes(checker: &mut Checker, records: &[OpRecord]) -> Vec<MissingOp> {
    let mut missing = Vec::new();
    for record in records {
        match checker.check(&record.op) {
            Support::Yes => {}
            Support::Noted(note) | Support::Ignored(note) => checker.note(note, Some(&record.op)),
            Support::No(reason) => {
                missing.push(MissingOp { op: record.op.clone(), reason, phases: record.phases.clone() })
            }
        }
    }
    missing.sort_by(|a, b| a.op.cmp(&b.op));
    missing
}

/// Evaluates one profile against one backend.
pub fn evaluate(registry: &Registry, profile: &Profile) -> Evaluation {
    let mut checker = Checker::new(registry, &profile.ops, true);
    let missing = missing_and_notes(&mut checker, &profile.ops);
    let inference_ok = missing.iter().all(|m| !m.phases.is_empty() && !m.phases.iter().any(|p| p == "inference"));
    let mut notes: Vec<String> = checker
        .notes
        .into_iter()
        .map(|(note, ops)| if ops.is_empty() { note } else { format!("{note}: {}", ops.join(", ")) })
        .collect();
    notes.extend(profile.notes.iter().map(|n| format!("profile: {n}")));
    Evaluation {
        profile_id: profile.id.clone(),
        backend: registry.name().to_string(),
        pass: missing.is_empty(),
        inference_ok,
        missing,
        warnings: warnings(profile),
        notes,
        coverage: Coverage::of(profile),
    }
}

struct Checker<'a> {
    registry: &'a Registry,
    /// `inner` ops recorded in this profile, by op.
    inner: HashMap<&'a str, &'a [String]>,
    /// Device-neutral tags recorded in this profile, by op; they also apply where the op shows up
    /// as another op's inner op.
    neutral_of: HashMap<&'a str, &'a str>,
    /// Verdicts so far; `None` marks an op being checked (breaks cycles in `inner`).
    memo: HashMap<String, Option<Support>>,
    /// Note text -> ops it applies to, so one caveat shared by many ops is one line.
    notes: BTreeMap<String, Vec<String>>,
    /// Map untagged CPU-specific ops through the tracer's naming table (profile context only:
    /// a single-op query is about the registry entry itself).
    cpu_names: bool,
}

impl<'a> Checker<'a> {
    fn new(registry: &'a Registry, records: &'a [OpRecord], cpu_names: bool) -> Self {
        Checker {
            registry,
            inner: records.iter().filter_map(|r| Some((r.op.as_str(), r.inner.as_deref()?))).collect(),
            neutral_of: records.iter().filter_map(|r| Some((r.op.as_str(), r.neutral.as_deref()?))).collect(),
            memo: HashMap::new(),
            notes: BTreeMap::new(),
            cpu_names,
        }
    }

    fn note(&mut self, text: String, op: Option<&str>) {
        let ops = self.notes.entry(text).or_default();
        ops.extend(op.map(String::from));
    }

    fn check(&mut self, op: &str) -> Support {
        match self.memo.get(op) {
            Some(Some(done)) => return done.clone(),
            Some(None) => return Support::Yes, // cycle: judged by the ops around it
            None => {}
        }
        self.memo.insert(op.to_string(), None);
        let verdict = self.classify(op);
        self.memo.insert(op.to_string(), Some(verdict.clone()));
        verdict
    }

    fn classify(&mut self, op: &str) -> Support {
        if let Some(req) = self.neutral_of.get(op).copied() {
            return self.check_neutral(req, op);
        }
        let verdict = self.lookup(op);
        // An untagged CPU-specific op (e.g. inside an inner list) that the backend lacks: check
        // what it stands for instead, when the backend resolves that requirement.
        if verdict.is_missing()
            && self.cpu_names
            && let Some(req) = cpu_requirement(op).filter(|r| self.registry.neutral.get(r).is_some())
        {
            return self.check_neutral(&req, op);
        }
        verdict
    }

    /// The registry's own verdict on an op (rules 1-6).
    fn lookup(&mut self, op: &str) -> Support {
        if let Some(forward) = self.registry.neutral.own_backward(op) {
            return Support::Noted(format!(
                "not called on {}: it differentiates {forward} with its own autograd kernel",
                self.registry.name()
            ));
        }
        let Some(entry) = self.registry.get(op) else {
            return if op.starts_with("aten::") {
                Support::No("unknown to this registry".into())
            } else {
                Support::Ignored("not an aten op and not in the registry; ignored".into())
            };
        };
        match entry.class {
            Class::Kernel => Support::Yes,
            Class::MissingFallback => Support::No(self.registry.fallback_reason().to_string()),
            Class::CompositeImplicit => Support::Noted(
                "CompositeImplicit op recorded (the tracing device had its own kernel); runs through its decomposition here".into(),
            ),
            Class::CompositeExplicit => match entry.delegate.clone() {
                Some(delegate) => match self.check(&delegate) {
                    Support::No(_) => Support::No(format!("structured delegate {delegate} has no kernel")),
                    _ => Support::Yes,
                },
                None => self.check_composite(op),
            },
        }
    }

    /// A composite-explicit op without delegate runs its default kernel, i.e. its inner ops.
    fn check_composite(&mut self, op: &str) -> Support {
        let Some(inner) = self.inner.get(op).copied() else {
            return Support::Noted("composite default kernel; its inner ops were not recorded (unverified)".into());
        };
        let failing: Vec<String> = inner
            .iter()
            .filter_map(|i| match self.check(i) {
                // The backend's plain "no kernel" reason is said once, by the caller.
                Support::No(why) if why == self.registry.fallback_reason() => Some(i.clone()),
                Support::No(why) => Some(format!("{i} ({why})")),
                _ => None,
            })
            .collect();
        if failing.is_empty() {
            Support::Yes
        } else {
            Support::No(format!("its composite kernel calls {}, without a kernel", failing.join("; ")))
        }
    }

    /// Resolves a device-neutral requirement through the backend's map.
    fn check_neutral(&mut self, req: &str, op: &str) -> Support {
        let registry = self.registry;
        let backend = registry.name();
        let Some(resolution) = registry.neutral.get(req) else {
            self.note(
                format!(
                    "no resolution for device-neutral requirement '{req}' on {backend}; checked the recorded op itself"
                ),
                Some(op),
            );
            return self.lookup(op);
        };
        let targets = resolution.ops.join(", ");
        self.note(format!("{op} is the tracing CPU's kernel for '{req}'; on {backend} that is {targets}"), None);
        if let Some(note) = &resolution.note {
            self.note(format!("'{req}': {note}"), None);
        }
        let failing: Vec<String> = resolution
            .ops
            .iter()
            .filter_map(|o| match self.check(o) {
                Support::No(why) => Some(format!("{o}: {why}")),
                _ => None,
            })
            .collect();
        if failing.is_empty() {
            Support::Yes
        } else {
            Support::No(format!(
                "device-neutral requirement '{req}' resolves to {targets} here; {}",
                failing.join("; ")
            ))
        }
    }
}

fn warnings(profile: &Profile) -> Vec<String> {
    let mut out = Vec::new();
    if !profile.host_syncs.is_empty() {
        out.push(format!(
            "host syncs: {} (.item()/data-dependent control flow; each forces a device-to-host round trip)",
            profile.host_syncs.join(", ")
        ));
    }
    if !profile.dynamic_shape_ops.is_empty() {
        out.push(format!(
            "dynamic-shape ops: {} (output shape depends on data; expect recompilation or host syncs on TPU)",
            profile.dynamic_shape_ops.join(", ")
        ));
    }
    let f64_ops: Vec<&str> =
        profile.ops.iter().filter(|r| r.dtypes.iter().any(|d| d == "float64")).map(|r| r.op.as_str()).collect();
    if !f64_ops.is_empty() {
        out.push(format!(
            "float64 tensors in {} (TPUs have no native float64; expect emulation or downcasting)",
            f64_ops.join(", ")
        ));
    }
    if !profile.status.is_empty() && profile.status != "ok" {
        out.push(format!(
            "profile status is '{}': part of the model (a class or the backward pass) failed to trace, so ops may be absent",
            profile.status
        ));
    }
    out
}
