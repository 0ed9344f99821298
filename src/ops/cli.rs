//! `xla2tpu ops …`: check a model type against a backend, diff backends, show an op, and the two
//! commands that shell out to Python (`dump-backend`, `trace`, in `tools.rs`).
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use clap::{Subcommand, ValueEnum};
use serde::Serialize;

use super::tools::{DumpArgs, TraceArgs};
use super::{
    Completeness, DEFAULT_BACKEND, Evaluation, IndexEntry, Profile, Profiles, Registry, Support, api, evaluate,
    op_support, op_support_with_inner,
};
use crate::output::{OutputFile, count};

#[derive(Debug, clap::Args)]
pub struct OpsArgs {
    /// Read profiles from this corpus directory instead of the embedded one (e.g. after `ops trace`).
    #[arg(long, global = true, value_name = "DIR")]
    profiles: Option<PathBuf>,
    #[command(subcommand)]
    command: OpsCommand,
}

#[derive(Debug, Subcommand)]
enum OpsCommand {
    /// Which ops a model type needs that a backend lacks, and why. Exit status 1 if any, 3 if none
    /// is missing but the profile is partial (a class or phase was not traced).
    Check(CheckArgs),
    /// What a user moving from one backend to another loses and gains.
    Diff(DiffArgs),
    /// An op's class on each backend and the profiles that use it.
    Show(ShowArgs),
    /// Regenerate a backend TSV from a Python environment with the backend installed.
    DumpBackend(DumpArgs),
    /// Re-run the Python tracer (tracer/.venv) to refresh corpus/ops, or trace Hub configs
    /// one by one (--configs DIR, --hub --top N; locally or on Ray with --ray ADDRESS).
    Trace(TraceArgs),
}

#[derive(Clone, Copy, Debug, Default, ValueEnum)]
enum Format {
    #[default]
    Text,
    Json,
}

/// Where and how `ops check/diff/show` print their result, as in `check` and `sweep`.
#[derive(Debug, clap::Args)]
struct Output {
    /// How to print the result (`--format` is the same option).
    #[arg(long = "output-format", alias = "format", value_enum, default_value_t)]
    format: Format,
    /// Write the result to this file instead of standard output. It replaces only an earlier
    /// `ops` result (`--output` is the same option).
    #[arg(short, long = "output-file", alias = "output", value_name = "FILE")]
    output_file: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct CheckArgs {
    /// Model type (`bert`), profile id (`transformers/bert`) or Hub id (`google-bert/bert-base-uncased`).
    model: String,
    /// Builtin backend name or path to a backend TSV.
    #[arg(long, default_value = DEFAULT_BACKEND)]
    backend: String,
    #[command(flatten)]
    out: Output,
}

#[derive(Debug, clap::Args)]
struct DiffArgs {
    /// Backend migrated from (builtin name or TSV path).
    from: String,
    /// Backend migrated to.
    to: String,
    /// List every op that changes, not just the first ones.
    #[arg(long)]
    all: bool,
    #[command(flatten)]
    out: Output,
}

#[derive(Debug, clap::Args)]
struct ShowArgs {
    /// Op name, `aten::` optional (`addmm`, `aten::add.Tensor`).
    op: String,
    #[command(flatten)]
    out: Output,
}

pub fn run(args: OpsArgs) -> anyhow::Result<ExitCode> {
    // Claimed before anything is read: a refused file costs nothing.
    let output = match &args.command {
        OpsCommand::Check(CheckArgs { out, .. })
        | OpsCommand::Diff(DiffArgs { out, .. })
        | OpsCommand::Show(ShowArgs { out, .. }) => out.output_file.as_deref(),
        OpsCommand::DumpBackend(_) | OpsCommand::Trace(_) => None,
    };
    let output = output.map(|path| OutputFile::claim(path, "ops result", is_earlier_result)).transpose()?;
    let owned;
    let profiles = match &args.profiles {
        Some(dir) => {
            owned = Profiles::from_dir(dir)?;
            &owned
        }
        None => Profiles::embedded(),
    };
    for err in profiles.load_errors() {
        eprintln!("warning: skipped unreadable profile {err}");
    }
    match args.command {
        OpsCommand::Check(a) => check(profiles, &a, output.as_ref()),
        OpsCommand::Diff(a) => diff(profiles, &a, output.as_ref()),
        OpsCommand::Show(a) => show(profiles, &a, output.as_ref()),
        OpsCommand::DumpBackend(a) => super::tools::dump_backend(&a),
        OpsCommand::Trace(a) => super::tools::trace(&a),
    }
}

/// Prints a report as text or JSON, to standard output (where a closed pipe, `| head`, is not
/// an error) or to the `--output-file`.
fn emit(
    format: Format,
    file: Option<&OutputFile>,
    value: &impl Serialize,
    render: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    use std::io::Write;
    let text = match format {
        Format::Json => serde_json::to_string_pretty(value)? + "\n",
        Format::Text => render(),
    };
    match file {
        Some(file) => file.write(text.as_bytes()),
        None => Ok(crate::output::tolerate_closed_reader(std::io::stdout().lock().write_all(text.as_bytes()))?),
    }
}

/// Whether `head` begins an earlier result of `ops check`, `diff` or `show`, as text or JSON.
fn is_earlier_result(head: &str) -> bool {
    let first = head.lines().next().unwrap_or_default();
    let json_key = head.strip_prefix("{\n  \"").and_then(|rest| rest.split('"').next());
    let verdict = |v: &str| ["PASS", "FAIL", "INCOMPLETE"].iter().any(|w| v.starts_with(w));
    matches!(json_key, Some("query" | "from" | "op"))
        || first.starts_with("Migrating from ")
        || first.starts_with("note: model type '")
        || first.split_once(": ").is_some_and(|(who, v)| who.contains(" on ") && verdict(v))
        || (first.contains("::") && !first.contains(' ') && head.contains("\nUsed by "))
}

// ---------------------------------------------------------------------------------------- check

/// A profile found for the user's query; `guessed_from` is set when it came from a Hub id's name.
struct Resolved<'p> {
    profile: &'p Profile,
    guessed_from: Option<String>,
}

fn resolve<'p>(profiles: &'p Profiles, query: &str) -> anyhow::Result<Resolved<'p>> {
    if let Some(profile) = profiles.find(query) {
        return Ok(Resolved { profile, guessed_from: None });
    }
    let no_profile = |failure: &IndexEntry| {
        anyhow::anyhow!(
            "{} has no profile: tracing ended with status '{}'{}{}",
            failure.id,
            failure.status,
            if failure.method.is_empty() { String::new() } else { format!(" ({})", failure.method) },
            if failure.reason.is_empty() { String::new() } else { format!(": {}", failure.reason) },
        )
    };
    if let Some(failure) = profiles.find_failure(query) {
        return Err(no_profile(failure));
    }
    // A Hub id: without config.json its model_type is unknown; accept the longest prefix of the
    // repo name, cut at a `-`, `_` or `.`, that is a known profile name
    // (`bert-base-uncased` → `bert`, `Llama-2-7b-hf` → `llama`).
    // The `timm` org publishes timm models: try `<org>/<prefix>` as a profile id first.
    if let Some((org, repo)) = query.split_once('/') {
        let cuts = repo.char_indices().filter(|(_, c)| matches!(c, '-' | '_' | '.')).map(|(i, _)| i);
        let mut prefixes: Vec<&str> = cuts.map(|i| &repo[..i]).collect();
        prefixes.push(repo);
        let found =
            prefixes.iter().rev().find_map(|p| profiles.get(&format!("{org}/{p}")).or_else(|| profiles.find(p)));
        if let Some(profile) = found {
            return Ok(Resolved { profile, guessed_from: Some(query.to_string()) });
        }
        if let Some(failure) = prefixes.iter().rev().find_map(|p| profiles.find_failure(p)) {
            return Err(no_profile(failure).context(format!("{query} looks like model type '{}'", failure.name)));
        }
        bail!(
            "no profile matches {query:?}: as a Hub id its model_type is only known from its config.json, which \
             `ops check` does not fetch; resolve it with `xla2tpu sweep` (--hub), then run `ops check <model_type>`"
        );
    }
    bail!(
        "no profile for {query:?} ({} known; `xla2tpu ops trace --only {query}` can add one)",
        count(profiles.ids().len(), "profile")
    )
}

#[derive(Serialize)]
struct CheckReport<'a> {
    query: &'a str,
    /// Set when the model type was guessed from a Hub id's repo name.
    guessed_model_type_from: Option<&'a str>,
    profile: ProfileInfo<'a>,
    backend: BackendInfo<'a>,
    evaluation: Evaluation,
}

#[derive(Serialize)]
struct ProfileInfo<'a> {
    id: &'a str,
    name: &'a str,
    classes: &'a [String],
    status: &'a str,
    method: &'a str,
    versions: &'a BTreeMap<String, String>,
}

#[derive(Serialize)]
struct BackendInfo<'a> {
    name: &'a str,
    provenance: &'a str,
}

fn check(profiles: &Profiles, args: &CheckArgs, output: Option<&OutputFile>) -> anyhow::Result<ExitCode> {
    let registry = Registry::load(&args.backend)?;
    let resolved = resolve(profiles, &args.model)?;
    let p = resolved.profile;
    let report = CheckReport {
        query: &args.model,
        guessed_model_type_from: resolved.guessed_from.as_deref(),
        profile: ProfileInfo {
            id: &p.id,
            name: &p.name,
            classes: &p.classes,
            status: &p.status,
            method: &p.method,
            versions: &p.versions,
        },
        backend: BackendInfo { name: registry.name(), provenance: registry.provenance() },
        evaluation: evaluate(&registry, p),
    };
    emit(args.out.format, output, &report, || render_check(&report))?;
    // 0 only for a pass the profile can prove; 3 when nothing is missing but the trace is partial.
    Ok(match (report.evaluation.pass, report.evaluation.coverage.completeness) {
        (false, _) => ExitCode::from(1),
        (true, Completeness::Complete) => ExitCode::SUCCESS,
        (true, _) => ExitCode::from(3),
    })
}

fn render_check(r: &CheckReport) -> String {
    use std::fmt::Write;
    let e = &r.evaluation;
    let mut out = String::new();
    if let Some(hub) = r.guessed_model_type_from {
        let _ = writeln!(
            out,
            "note: model type '{}' guessed from the Hub id {hub}'s name; its config.json is authoritative (xla2tpu sweep --hub)",
            r.profile.name
        );
    }
    let verdict = match (e.pass, e.inference_ok, e.coverage.completeness) {
        (true, _, Completeness::Complete) => "PASS".to_string(),
        (true, _, Completeness::InferenceOnly) => {
            "PASS-INFERENCE (no recorded op is missing, but training was not traced for every class)".to_string()
        }
        (true, _, Completeness::Incomplete) => {
            "INCOMPLETE (no recorded op is missing, but inference was not traced for every class: nothing is proven)"
                .to_string()
        }
        (false, true, _) => "FAIL (inference OK: the missing ops are only used in training)".to_string(),
        (false, false, _) => "FAIL (inference affected)".to_string(),
    };
    let _ = writeln!(out, "{} on {}: {verdict}", e.profile_id, e.backend);
    let _ = writeln!(out, "  traced: {}", e.coverage.note);
    if !e.missing.is_empty() {
        let _ = writeln!(out, "\nMissing ops ({}):", e.missing.len());
        for m in &e.missing {
            let _ = writeln!(out, "  {}  [{}]\n      {}", m.op, m.phases.join(", "), m.reason);
        }
    }
    for (title, items) in [("Warnings", &e.warnings), ("Notes", &e.notes)] {
        if !items.is_empty() {
            let _ = writeln!(out, "\n{title}:");
            for item in items.iter() {
                let _ = writeln!(out, "  - {item}");
            }
        }
    }
    let p = &r.profile;
    let versions: Vec<String> = p.versions.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let _ = writeln!(out, "\nProfile: {} ({}), traced {}, status {}", p.id, p.classes.join(", "), p.method, p.status);
    if !versions.is_empty() {
        let _ = writeln!(out, "  {}", versions.join(", "));
    }
    let _ = writeln!(out, "Backend: {}", r.backend.name);
    if let Some(first) = r.backend.provenance.lines().next() {
        let _ = writeln!(out, "  {first}");
    }
    out
}

// ----------------------------------------------------------------------------------------- diff

#[derive(Serialize, Default)]
struct DiffReport {
    from: String,
    to: String,
    /// Model types that pass on `from` and fail on `to`, with the ops that break them.
    now_failing: BTreeMap<String, Vec<String>>,
    /// Model types that fail on `from` and pass on `to`, with the ops that broke them on `from`.
    now_passing: BTreeMap<String, Vec<String>>,
    pass_counts: [usize; 2],
    profiles: usize,
    /// Ops recorded in profiles: op → profiles affected (lost: missing only on `to`).
    seen_lost: BTreeMap<String, Vec<String>>,
    seen_gained: BTreeMap<String, Vec<String>>,
    /// Every op either registry knows.
    all_lost: Vec<String>,
    all_gained: Vec<String>,
    all_ops: usize,
}

fn diff(profiles: &Profiles, args: &DiffArgs, output: Option<&OutputFile>) -> anyhow::Result<ExitCode> {
    let (from, to) = (Registry::load(&args.from)?, Registry::load(&args.to)?);
    let mut r = DiffReport { from: from.name().into(), to: to.name().into(), ..Default::default() };
    for profile in profiles.iter() {
        let (a, b) = (evaluate(&from, profile), evaluate(&to, profile));
        r.profiles += 1;
        r.pass_counts[0] += usize::from(a.pass);
        r.pass_counts[1] += usize::from(b.pass);
        let missing = |e: &Evaluation| e.missing.iter().map(|m| m.op.clone()).collect::<BTreeSet<_>>();
        let (ma, mb) = (missing(&a), missing(&b));
        for op in mb.difference(&ma) {
            r.seen_lost.entry(op.clone()).or_default().push(profile.id.clone());
        }
        for op in ma.difference(&mb) {
            r.seen_gained.entry(op.clone()).or_default().push(profile.id.clone());
        }
        match (a.pass, b.pass) {
            (true, false) => {
                r.now_failing.insert(profile.id.clone(), mb.into_iter().collect());
            }
            (false, true) => {
                r.now_passing.insert(profile.id.clone(), ma.into_iter().collect());
            }
            _ => {}
        }
    }
    let all: BTreeSet<&str> = from.ops().chain(to.ops()).map(|(op, _)| op).collect();
    r.all_ops = all.len();
    for op in all {
        match (op_support(&from, op).is_missing(), op_support(&to, op).is_missing()) {
            (false, true) => r.all_lost.push(op.to_string()),
            (true, false) => r.all_gained.push(op.to_string()),
            _ => {}
        }
    }
    emit(args.out.format, output, &r, || render_diff(&r, args.all))?;
    Ok(ExitCode::SUCCESS)
}

fn render_diff(r: &DiffReport, all: bool) -> String {
    use std::fmt::Write;
    const SHOWN: usize = 25;
    let mut out = String::new();
    let _ = writeln!(out, "Migrating from {} to {} ({})", r.from, r.to, count(r.profiles, "profile"));
    let _ = writeln!(out, "  model types passing: {} -> {}", r.pass_counts[0], r.pass_counts[1]);
    for (title, map) in [("Now failing (missing ops)", &r.now_failing), ("Now passing (were missing)", &r.now_passing)]
    {
        let _ = writeln!(out, "\n{title}: {}", map.len());
        for (id, ops) in map {
            let _ = writeln!(out, "  {id}: {}", ops.join(", "));
        }
    }
    for (title, map) in [("Ops used by profiles, lost", &r.seen_lost), ("Ops used by profiles, gained", &r.seen_gained)]
    {
        let mut rows: Vec<_> = map.iter().collect();
        rows.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
        let _ = writeln!(out, "\n{title} ({}):", rows.len());
        for (op, ids) in rows {
            let _ = writeln!(out, "  {op}  ({})", count(ids.len(), "model type"));
        }
    }
    for (title, ops) in [("All ops, lost", &r.all_lost), ("All ops, gained", &r.all_gained)] {
        let _ = writeln!(out, "\n{title} ({} of {}):", ops.len(), r.all_ops);
        let limit = if all { ops.len() } else { SHOWN };
        for op in ops.iter().take(limit) {
            let _ = writeln!(out, "  {op}");
        }
        if ops.len() > limit {
            let _ = writeln!(out, "  … {} more (--all)", ops.len() - limit);
        }
    }
    out
}

// ----------------------------------------------------------------------------------------- show

#[derive(Serialize)]
struct ShowReport {
    op: String,
    backends: Vec<BackendView>,
    /// Profiles recording the op directly, with counts.
    used_by: Vec<(String, u64)>,
    /// Profiles where it appears only inside a composite op.
    inner_of: Vec<String>,
}

#[derive(Serialize)]
struct BackendView {
    backend: String,
    class: Option<String>,
    effective: Option<String>,
    delegate: Option<String>,
    verdict: String,
    /// Device-neutral requirements that resolve to this op here.
    neutral: Vec<String>,
}

fn show(profiles: &Profiles, args: &ShowArgs, output: Option<&OutputFile>) -> anyhow::Result<ExitCode> {
    let op = if args.op.contains("::") { args.op.clone() } else { format!("aten::{}", args.op) };
    // What the op's composite kernel calls, as some trace recorded it (a model's or an API's).
    let inner = profiles
        .iter()
        .flat_map(|p| &p.ops)
        .find(|r| r.op == op && r.inner.is_some())
        .and_then(|r| r.inner.clone())
        .or_else(|| api::recorded_inner(&op));
    let mut backends = Vec::new();
    for name in Registry::builtin_names() {
        let reg = Registry::builtin(name)?;
        let entry = reg.get(&op);
        backends.push(BackendView {
            backend: reg.name().to_string(),
            class: entry.map(|e| e.class_name.clone()),
            effective: entry.map(|e| e.effective.clone()),
            delegate: entry.and_then(|e| e.delegate.clone()),
            verdict: match inner.clone().map_or_else(|| op_support(&reg, &op), |i| op_support_with_inner(&reg, &op, i))
            {
                Support::Yes => "supported".into(),
                Support::Noted(n) => format!("supported ({n})"),
                Support::Ignored(n) => format!("ignored ({n})"),
                Support::No(n) => format!("missing: {n}"),
            },
            neutral: reg.neutral.iter().filter(|(_, r)| r.ops.contains(&op)).map(|(k, _)| k.to_string()).collect(),
        });
    }
    if backends.iter().all(|b| b.class.is_none()) {
        let reg = Registry::builtin(DEFAULT_BACKEND)?;
        let prefix = format!("{op}.");
        let mut overloads: Vec<&str> = reg.ops().map(|(o, _)| o).filter(|o| o.starts_with(&prefix)).collect();
        overloads.sort_unstable();
        if overloads.is_empty() {
            bail!("{op} is not in any builtin registry");
        }
        bail!("{op} has no default overload; try one of: {}", overloads.join(", "));
    }
    let mut used_by = Vec::new();
    let mut inner_of = Vec::new();
    for p in profiles.iter() {
        if let Some(rec) = p.ops.iter().find(|r| r.op == op) {
            used_by.push((p.id.clone(), rec.count));
        } else if p.ops.iter().any(|r| r.inner.as_ref().is_some_and(|i| i.contains(&op))) {
            inner_of.push(p.id.clone());
        }
    }
    let report = ShowReport { op, backends, used_by, inner_of };
    emit(args.out.format, output, &report, || render_show(&report))?;
    Ok(ExitCode::SUCCESS)
}

fn render_show(r: &ShowReport) -> String {
    use std::fmt::Write;
    let mut out = format!("{}\n", r.op);
    for b in &r.backends {
        let class = b.class.as_deref().unwrap_or("(not in registry)");
        let _ = write!(out, "  {}: {class}", b.backend);
        if b.effective.as_deref().is_some_and(|e| Some(e) != b.class.as_deref()) {
            let _ = write!(out, " -> {}", b.effective.as_deref().unwrap_or_default());
        }
        if let Some(d) = &b.delegate {
            let _ = write!(out, " (delegate {d})");
        }
        let _ = writeln!(out, "\n      {}", b.verdict);
        if !b.neutral.is_empty() {
            let neutral = count(b.neutral.len(), "device-neutral requirement");
            let _ = writeln!(out, "      resolves {neutral}: {}", b.neutral.join(", "));
        }
    }
    let _ = writeln!(out, "Used by {}", count(r.used_by.len(), "profile"));
    for (id, calls) in &r.used_by {
        let _ = writeln!(out, "  {id} ({})", count(*calls, "call"));
    }
    if !r.inner_of.is_empty() {
        let _ = writeln!(out, "Inside composite ops in {} more: {}", r.inner_of.len(), r.inner_of.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_and_show_count_in_words() {
        let mut r = DiffReport { profiles: 1, ..Default::default() };
        r.seen_lost.insert("aten::a".into(), vec!["x".into(), "y".into()]);
        r.seen_gained.insert("aten::b".into(), vec!["x".into()]);
        let text = render_diff(&r, false);
        assert!(text.contains("(1 profile)\n"), "{text}");
        assert!(text.contains("aten::a  (2 model types)") && text.contains("aten::b  (1 model type)"), "{text}");
        let view = |neutral: &[&str]| BackendView {
            backend: "b".into(),
            class: None,
            effective: None,
            delegate: None,
            verdict: "v".into(),
            neutral: neutral.iter().map(|n| n.to_string()).collect(),
        };
        let show = ShowReport {
            op: "aten::a".into(),
            backends: vec![view(&["n"]), view(&["n", "m"])],
            used_by: vec![("x".into(), 1)],
            inner_of: Vec::new(),
        };
        let text = render_show(&show);
        assert!(text.contains("resolves 1 device-neutral requirement: n\n"), "{text}");
        assert!(text.contains("resolves 2 device-neutral requirements: n, m\n"), "{text}");
        assert!(text.contains("Used by 1 profile\n  x (1 call)\n"), "{text}");
    }
}
