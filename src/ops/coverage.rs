//! What a profile proves: which classes ran which phases, under which config, tensors and
//! versions. An op missing from a profile is either not needed or was never traced; only the
//! coverage tells the two apart, so a verdict is never stronger than the coverage behind it.
use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::profile::Profile;

/// The three traced phases, in run order (a phase is skipped once an earlier one fails).
pub const PHASES: [&str; 3] = ["inference", "forward", "backward"];

/// How much of the model a profile covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Completeness {
    /// Nothing proven for inference: a class failed or skipped inference.
    Incomplete,
    /// Every class ran inference; training (forward or backward) failed or was skipped somewhere.
    InferenceOnly,
    /// Every class ran inference, training forward and backward.
    Complete,
}

impl Completeness {
    pub fn label(self) -> &'static str {
        match self {
            Completeness::Incomplete => "incomplete",
            Completeness::InferenceOnly => "inference-only",
            Completeness::Complete => "complete",
        }
    }
}

/// One class's phases, `"ok" | "failed" | "not_run"` by phase name.
pub type ClassCoverage = BTreeMap<String, String>;

/// The coverage of one profile, as recorded by the tracer or derived from its status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Coverage {
    pub completeness: Completeness,
    /// Class → phase → state. Empty when the profile predates per-phase coverage.
    pub classes: BTreeMap<String, ClassCoverage>,
    /// `tiny`, `layers`, `default` (type profiles) or the exact config's source.
    pub config: String,
    /// `cpu` (real tensors), `fake` (FakeTensor), `meta`.
    pub tensors: String,
    /// `float32` or `bf16-autocast`.
    pub precision: String,
    /// One line a reader can check: classes and phases, config, tensors, precision, versions.
    pub note: String,
}

impl Coverage {
    pub fn of(p: &Profile) -> Coverage {
        let classes = p.coverage.clone().unwrap_or_default();
        let completeness = completeness(&p.status, &classes);
        let (config, tensors) = match (&p.config_source, p.method.split_once('/')) {
            (Some(src), Some((_, t))) => (src.clone(), t.to_string()),
            (Some(src), None) => (src.clone(), p.method.clone()),
            (None, Some((c, t))) => (c.to_string(), t.to_string()),
            (None, None) => (p.method.clone(), String::new()),
        };
        let precision = p.precision.clone().unwrap_or_else(|| "float32".to_string());
        let note = note(p, &classes, completeness, &config, &tensors, &precision);
        Coverage { completeness, classes, config, tensors, precision, note }
    }
}

/// `ok` status alone is trusted only when there is no per-phase record to contradict it; a
/// recorded failure always wins, and a partial profile without a record proves nothing.
fn completeness(status: &str, classes: &BTreeMap<String, ClassCoverage>) -> Completeness {
    let ok = |c: &ClassCoverage, phase: &str| c.get(phase).is_some_and(|s| s == "ok");
    if classes.is_empty() {
        return if status == "ok" { Completeness::Complete } else { Completeness::Incomplete };
    }
    if !classes.values().all(|c| ok(c, "inference")) {
        Completeness::Incomplete
    } else if status == "ok" && classes.values().all(|c| PHASES.iter().all(|p| ok(c, p))) {
        Completeness::Complete
    } else {
        Completeness::InferenceOnly
    }
}

fn note(
    p: &Profile,
    classes: &BTreeMap<String, ClassCoverage>,
    completeness: Completeness,
    config: &str,
    tensors: &str,
    precision: &str,
) -> String {
    let mut o = String::new();
    if classes.is_empty() {
        let _ = write!(o, "{} (status {}, no per-phase record)", p.classes.join(", "), p.status);
    } else {
        let full = classes.values().filter(|c| PHASES.iter().all(|ph| c.get(*ph).is_some_and(|s| s == "ok"))).count();
        let _ = write!(o, "{full}/{} classes fully traced", classes.len());
        let gaps: Vec<String> = classes
            .iter()
            .filter_map(|(class, c)| {
                let bad: Vec<String> = PHASES
                    .iter()
                    .filter_map(|ph| match c.get(*ph).map(String::as_str) {
                        Some("ok") => None,
                        Some(state) => Some(format!("{ph} {}", state.replace('_', " "))),
                        None => Some(format!("{ph} not recorded")),
                    })
                    .collect();
                (!bad.is_empty()).then(|| format!("{class}: {}", bad.join(", ")))
            })
            .collect();
        if !gaps.is_empty() {
            let _ = write!(o, " ({})", gaps.join("; "));
        }
    }
    let config = match config {
        "tiny" => "tiny default config",
        "layers" => "default config, depth reduced",
        "default" => "default config",
        other => other,
    };
    let tensors = match tensors {
        "cpu" => "real tensors",
        "fake" => "FakeTensor",
        "meta" => "meta tensors",
        other => other,
    };
    let _ = write!(o, "; {config}, {tensors}; {precision}");
    let versions: Vec<String> =
        p.versions.iter().filter(|(k, _)| *k != "python").map(|(k, v)| format!("{k} {v}")).collect();
    if !versions.is_empty() {
        let _ = write!(o, "; {}", versions.join(", "));
    }
    if completeness != Completeness::Complete && classes.is_empty() {
        o.push_str("; partial profile: which phases ran is not recorded");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(status: &str, coverage: &[(&str, [&str; 3])]) -> Profile {
        Profile {
            status: status.into(),
            method: "tiny/cpu".into(),
            classes: coverage.iter().map(|(c, _)| c.to_string()).collect(),
            coverage: (!coverage.is_empty()).then(|| {
                coverage
                    .iter()
                    .map(|(c, states)| {
                        (
                            c.to_string(),
                            PHASES.iter().zip(states).map(|(p, s)| (p.to_string(), s.to_string())).collect(),
                        )
                    })
                    .collect()
            }),
            versions: [("torch".to_string(), "2.15.0".to_string())].into(),
            ..Profile::default()
        }
    }

    #[test]
    fn a_partial_profile_is_never_complete() {
        let all_ok = ["ok", "ok", "ok"];
        assert_eq!(Coverage::of(&profile("ok", &[("A", all_ok), ("B", all_ok)])).completeness, Completeness::Complete);
        let no_backward = profile("partial", &[("A", all_ok), ("B", ["ok", "ok", "failed"])]);
        assert_eq!(Coverage::of(&no_backward).completeness, Completeness::InferenceOnly);
        let head_failed = profile("partial", &[("A", ["failed", "not_run", "not_run"]), ("B", all_ok)]);
        let c = Coverage::of(&head_failed);
        assert_eq!(c.completeness, Completeness::Incomplete);
        assert!(
            c.note.starts_with("1/2 classes fully traced (A: inference failed, forward not run, backward not run)")
        );
        assert!(c.note.contains("tiny default config, real tensors; float32; torch 2.15.0"), "{}", c.note);
        // A status that disagrees with an all-ok record is not trusted either.
        assert_eq!(Coverage::of(&profile("partial", &[("A", all_ok)])).completeness, Completeness::InferenceOnly);
        // No record: ok is taken at its word, partial proves nothing.
        assert_eq!(Coverage::of(&profile("ok", &[])).completeness, Completeness::Complete);
        assert_eq!(Coverage::of(&profile("partial", &[])).completeness, Completeness::Incomplete);
    }
}
