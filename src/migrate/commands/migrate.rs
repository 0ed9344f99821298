//! `migrate`: each input through the fixes to a diff or a write, then the summary and report.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use ruff_text_size::TextSize;

use super::args::{CommonArgs, MigrateArgs, flag};
use super::files::*;
use crate::config::{Overrides, Resolver};
use crate::discover::Input;
use crate::migrate::diagnostic::Diagnostic;
use crate::migrate::facts::RunFacts;
use crate::migrate::project;
use crate::migrate::render::{self};
use crate::migrate::report;
use crate::migrate::rules::{Builtin, RuleSet, Safety};
use crate::migrate::target::Kind;
use crate::migrate::{self, Problem};
use crate::output::{OutputFile, count};
use crate::source::LineIndex;
use crate::timings::{Phase, time};

pub fn migrate(mut args: MigrateArgs) -> anyhow::Result<ExitCode> {
    args.common.settle();
    let report = args.report.as_deref().map(claim_report).transpose()?;
    let mut overrides = args.common.overrides(flag(args.unsafe_fixes, args.no_unsafe_fixes), None);
    overrides.helper_module = args.helper_module.clone();
    overrides.outputs.extend(report.iter().filter_map(|r| r.id).chain(crate::output::stdout_file()));
    let run =
        MigrateRun { write: args.write, exit_non_zero_on_fix: args.exit_non_zero_on_fix, report, before_check: false };
    run_migrate(&args.common, overrides, run)
}

/// `--report FILE`: its extension says the format, and it replaces only an earlier report.
fn claim_report(path: &Path) -> anyhow::Result<OutputFile> {
    report::Format::of(path)?;
    OutputFile::claim(path, "migration report", report::is_report)
}

/// What a `migrate` run does besides migrating.
pub(super) struct MigrateRun {
    pub(super) write: bool,
    /// Exit 1 when a file was (or would be) changed.
    pub(super) exit_non_zero_on_fix: bool,
    pub(super) report: Option<OutputFile>,
    /// `check --fix`: the check that follows lists what is left, so only the summary is said.
    pub(super) before_check: bool,
}

/// `migrate`, `check --diff` (never writes, exits 1 on a change) and `check --fix`.
pub(super) fn run_migrate(common: &CommonArgs, overrides: Overrides, how: MigrateRun) -> anyhow::Result<ExitCode> {
    let MigrateRun { write, exit_non_zero_on_fix, report, before_check } = how;
    let resolver = Arc::new(Resolver::new(overrides)?);
    let mut errors = Vec::new();
    let color = crate::output::stdout_colored();

    // Each worker reads, migrates, renders and writes its file; what comes back is small.
    let run = run_facts(common, &resolver);
    if write {
        // Read before any file is written: the migration turns these configs into `MULTI_GPU`
        // and removes `use_spmd()`, and a launch script checked after that would no longer see
        // what it launched.
        run.accelerate_xla_configs();
        run.spmd_programs();
        run.env_read(""); // the project's own switches: their assignments stay
        run.other_hardware(); // the migration deletes `PJRT_DEVICE=TPU`
        run.read_exports();
    }
    let stdin_name = common.stdin_filename.as_deref();
    let results = process_all(common, &resolver, &mut errors, |input| {
        migrate_input(input.named(stdin_name), &resolver, &run, write, color)
    });

    let results = share_helpers(results, write, color);

    let mut stdout = anstream::stdout();
    let mut err = anstream::stderr();
    let (mut scanned, mut written) = (0usize, 0usize);
    let mut warnings = Vec::new();
    let mut outcomes = Vec::with_capacity(results.len());
    let mut reader_gone = false;
    for r in results {
        if common.verbose && r.scanned {
            writeln!(err, "{}", r.outcome.path)?;
        }
        if !reader_gone && let Err(e) = stdout.write_all(&r.stdout) {
            reader_gone = e.kind() == std::io::ErrorKind::BrokenPipe;
            if !reader_gone {
                return Err(e.into());
            }
        }
        scanned += usize::from(r.scanned);
        written += usize::from(r.written) + usize::from(r.module_written);
        warnings.extend(r.warnings);
        errors.extend(r.outcome.error.clone());
        outcomes.push(r.outcome);
    }
    crate::output::tolerate_closed_reader(stdout.flush())?;

    if !common.quiet {
        for w in &warnings {
            writeln!(err, "warning: {w}")?;
        }
    }
    for e in &errors {
        writeln!(err, "error: {e}")?;
    }
    let manual: Vec<&report::Item> = outcomes.iter().flat_map(|o| &o.manual).collect();
    if !manual.is_empty() && !common.quiet && !before_check {
        writeln!(err, "Left for manual migration:")?;
        for m in &manual {
            let note = m.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
            writeln!(err, "  {}: {} {}{note}", m.place(), m.code, m.message)?;
        }
    }
    let mut applied: BTreeMap<&str, usize> = BTreeMap::new();
    for (code, n) in outcomes.iter().flat_map(|o| &o.applied) {
        *applied.entry(code).or_default() += n;
    }
    let changed = outcomes.iter().filter(|o| o.changed).count();
    let unsafe_available: usize = outcomes.iter().map(|o| o.unsafe_fixes.len()).sum();
    let fixes: usize = applied.values().sum();
    let by_rule: Vec<String> = applied.iter().map(|(c, n)| format!("{c} ×{n}")).collect();
    let verb = if write { "changed" } else { "would change" };
    let mut summary = format!(
        "{} scanned, {changed} {verb}{}; {}{}",
        count(scanned, "file"),
        if write { format!(" ({written} written)") } else { String::new() },
        count(fixes, "fix"),
        if by_rule.is_empty() { String::new() } else { format!(" ({})", by_rule.join(", ")) },
    );
    if !before_check {
        summary += &format!(
            "; {} manual migration{}",
            if manual.len() == 1 { "1 item needs".to_string() } else { format!("{} items need", manual.len()) },
            if unsafe_available > 0 {
                format!("; {} available with --unsafe-fixes", count(unsafe_available, "unsafe fix"))
            } else {
                String::new()
            },
        );
    }
    if !errors.is_empty() {
        summary += &format!("; {} skipped with errors", count(errors.len(), "file"));
    }
    if let Some(out) = &report {
        let rules = resolver.global()?.rules.clone();
        // One directory given: it is the project, and the report names files inside it.
        let root = match common.paths.as_slice() {
            [dir] if dir.is_dir() => Some(dir.as_path()),
            _ => None,
        };
        out.write(report::render(&out.path, &outcomes, &rules, root).as_bytes())
            .with_context(|| format!("cannot write the report to {}", out.path.display()))?;
        summary += &format!("; report: {}", out.path.display());
    }
    if !common.quiet {
        writeln!(err, "{summary}")?;
        if scanned == 0 && errors.is_empty() {
            writeln!(err, "warning: {}", nothing_found(&common.paths))?;
        }
        if !before_check {
            for line in not_ready(&outcomes, &resolver.global()?.rules, write) {
                writeln!(err, "warning: {line}")?;
            }
        }
    }
    if let Some(timings) = crate::timings::report().or_else(|| common.verbose.then(crate::timings::breakdown)) {
        writeln!(err, "{timings}")?;
    }
    Ok(if !errors.is_empty() {
        ExitCode::from(2)
    } else if exit_non_zero_on_fix && changed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What a migration leaves that keeps the project from installing or running on TorchTPU, said
/// plainly after the summary: a run with the safe fixes only can leave both.
fn not_ready(outcomes: &[report::FileOutcome], rules: &RuleSet, write: bool) -> Vec<String> {
    use Builtin::*;
    let blocking: Vec<&str> =
        [DepTorchXla, DepLibtpu, DepTpuIndex, DepTorchPin, DepTorchCompanion, DepOptimumTpu, DepJaxTpu, DepPython]
            .into_iter()
            .filter_map(|b| rules.builtin(b))
            .map(|id| rules.rules[id].code.as_str())
            .collect();
    let import = rules.builtin(Import).map(|id| rules.rules[id].code.as_str());
    let (mut lines, mut unsafe_left, mut manual_left) = (Vec::new(), 0usize, 0usize);
    let mut requirements = Vec::new();
    let mut importing = Vec::new();
    for o in outcomes {
        let mut blocked =
            |item: &report::Item| blocking.contains(&item.code.as_str()).then(|| item.place() + " " + &item.code);
        requirements.extend(o.manual.iter().chain(&o.unsafe_fixes).filter_map(&mut blocked));
        if !o.kept_imports.is_empty() || o.manual.iter().any(|i| Some(i.code.as_str()) == import) {
            importing.push(o.path.as_str());
            unsafe_left += o.unsafe_fixes.len();
            manual_left += o.manual.len();
        }
    }
    let does = if write { "does" } else { "would" };
    if !requirements.is_empty() {
        lines.push(format!(
            "the project {does} not install TorchTPU yet: {} left that torch-tpu conflicts with ({}); see the items above",
            count(requirements.len(), "requirement"),
            requirements.join(", ")
        ));
    }
    if !importing.is_empty() {
        let one = importing.len() == 1;
        let (verb, it) = match (write, one) {
            (true, true) => ("still imports", "it does"),
            (true, false) => ("still import", "they do"),
            (false, true) => ("would still import", "it would"),
            (false, false) => ("would still import", "they would"),
        };
        let mut work = Vec::new();
        if unsafe_left > 0 {
            work.push(format!("{} (--unsafe-fixes)", count(unsafe_left, "unsafe fix")));
        }
        if manual_left > 0 {
            work.push(count(manual_left, "manual item"));
        }
        lines.push(format!(
            "{} {verb} torch_xla, which TorchTPU does not install ({}): {it} not run on TorchTPU until {} done",
            count(importing.len(), "file"),
            importing.join(", "),
            match (work.is_empty(), unsafe_left + manual_left) {
                (true, _) => "the uses left are".to_string(),
                (false, 1) => work.join(" and ") + " is",
                (false, _) => work.join(" and ") + " are",
            },
        ));
    }
    lines
}

/// What `migrate` keeps of one file: what to print and report, not its source.
#[derive(Default)]
struct FileMigration {
    /// Read and decoded (counted as scanned).
    scanned: bool,
    written: bool,
    outcome: report::FileOutcome,
    warnings: Vec<String>,
    /// The diff, or (`--write -`) the migrated text, for standard output.
    stdout: Vec<u8>,
    /// A file whose helpers would go to its directory's helper module: finished (diffed or
    /// written) once the run knows which other files share it ([`share_helpers`]).
    pending: Option<Box<(Loaded, Migrated)>>,
    /// The helper module written after it (its directory's last file).
    module_written: bool,
}

impl FileMigration {
    /// The file whose finish waits for [`share_helpers`].
    fn pending_file(&self) -> Option<&Path> {
        match &self.pending.as_ref()?.0.input {
            Input::File(p) => Some(p),
            Input::Stdin(_) => None,
        }
    }
}

/// Something a migration left: (notebook cell, line, column, diagnostic), located in the input.
type Left = (Option<usize>, usize, usize, Diagnostic);

/// One file's migration, whatever its kind: the new text, and what is left, located in the input.
struct Migrated {
    output: String,
    applied: BTreeMap<String, usize>,
    remaining: Vec<Left>,
    /// Fixes dropped because they broke the file, as warning lines.
    reverted: Vec<String>,
    /// Diffs by the file's own rendering (a notebook's are per cell); `None`: a diff of the text.
    diff: Option<String>,
    /// The helpers it imports from the project's helper module, by name.
    helpers: BTreeMap<String, crate::migrate::fix::Helper>,
}

fn migrate_input(input: Input, resolver: &Resolver, run: &Arc<RunFacts>, write: bool, color: bool) -> FileMigration {
    let path = input.display();
    let mut out = FileMigration {
        outcome: report::FileOutcome { path: path.clone(), ..Default::default() },
        ..Default::default()
    };
    let mut l = match load(input, resolver, run) {
        Ok(l) => l,
        Err(e) => {
            out.outcome.error = Some(e);
            return out;
        }
    };
    out.scanned = true;
    out.outcome.kind = Some(l.kind);
    l.selection.helper_module = helper_import(&l);
    let migrated = match l.kind {
        Kind::Python | Kind::SetupPy => migrate_python(&l, &path, &mut out.warnings),
        Kind::Notebook => migrate_notebook(&l, &path, color),
        kind => migrate_text(&l, kind, &path),
    };
    let m = match migrated {
        Ok(m) => m,
        Err(e) => {
            out.outcome.error = Some(e);
            return out;
        }
    };
    if !m.helpers.is_empty() {
        out.pending = Some(Box::new((l, m)));
        return out;
    }
    finish(&mut out, &l, m, write, color);
    out
}

/// How a file imports the project's helper module, if its helpers may live there: a script
/// of a directory that is no package (`python x.py` puts that directory on `sys.path`), or a
/// package module that never runs as a script (`from ._torchtpu import ...`). Notebooks,
/// standard input and `setup.py` keep theirs.
fn helper_import(l: &Loaded) -> Option<String> {
    let name = l.settings.helper_module.as_str();
    let Input::File(path) = &l.input else { return None };
    if name.is_empty() || l.kind != Kind::Python || path.file_stem().is_some_and(|s| s == name) {
        return None;
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.join("__init__.py").is_file() {
        return Some(name.to_string());
    }
    // In a package: a relative import fails in a module run as `python pkg/x.py`.
    let script = path.file_name().is_some_and(|f| f == "__main__.py") || l.source.text.contains("__main__");
    (!script).then(|| format!(".{name}"))
}

/// What a migration of `l` leaves, and its diff or write.
fn finish(out: &mut FileMigration, l: &Loaded, m: Migrated, write: bool, color: bool) {
    if cfg!(debug_assertions) && l.source.text.contains(crate::migrate::PANIC_ON_FINISH_MARKER) {
        panic!("fault injected for testing");
    }
    let path = out.outcome.path.clone();
    out.warnings.extend(m.reverted);
    out.warnings.extend(unchecked_parts(l, &path));
    let rules = l.rules();
    let import_rule = rules.builtin(Builtin::Import);
    for (cell, line, column, d) in m.remaining {
        // An import kept because its names are still used is a consequence, not a task: the
        // report lists it apart, and the run after its uses are migrated deletes it.
        let kept_import = Some(d.rule) == import_rule
            && d.fix.is_none()
            && d.note.as_deref().is_some_and(|n| n.contains("still used"));
        let item = report::Item {
            path: path.clone(),
            cell,
            line,
            column,
            code: rules.rules[d.rule].code.clone(),
            message: d.message,
            note: d.note,
        };
        match &d.fix {
            _ if kept_import => out.outcome.kept_imports.push(item),
            Some(f) if f.safety == Safety::Unsafe => out.outcome.unsafe_fixes.push(item),
            _ => out.outcome.manual.push(item),
        }
    }
    if m.output == l.source.text {
        if write && matches!(l.input, Input::Stdin(_)) {
            // As a filter, `--write -` always prints the (unchanged) source.
            out.stdout = l.source.encode(&m.output);
        }
        return;
    }
    out.outcome.changed = true;
    out.outcome.applied = m.applied;
    match (&l.input, write) {
        (Input::Stdin(_), true) => out.stdout = l.source.encode(&m.output),
        (Input::File(p), true) => {
            match crate::write::replace_if_unchanged(p, &l.source.encode(&l.source.text), &l.source.encode(&m.output)) {
                Ok(()) => out.written = true,
                Err(e) => out.outcome.error = Some(format!("{path}: {e:#}")),
            }
        }
        (_, false) => {
            let diff = m.diff.unwrap_or_else(|| {
                time(Phase::Render, || render::unified_diff(&path, &l.source.text, &m.output, color))
            });
            out.stdout = diff.into_bytes();
        }
    }
}

/// The first line of a helper module xla2tpu writes: how a later run knows the file is its own.
const HELPER_MODULE_DOC: &str =
    "\"\"\"TorchTPU helpers, written by xla2tpu once for the migrated files beside it.\"\"\"";

/// Files whose helpers may go to their directory's helper module: where two or more of a
/// directory need helpers (or xla2tpu's module is already there), they import them from it and
/// the module is written (or extended) once, before them; elsewhere, or when the module cannot
/// be made, each file is migrated again with its helpers inline. A file of that name xla2tpu did
/// not write is left alone, said once. Every step runs under the per-file guard.
fn share_helpers(mut results: Vec<FileMigration>, write: bool, color: bool) -> Vec<FileMigration> {
    let mut groups: BTreeMap<(std::path::PathBuf, String), Vec<usize>> = BTreeMap::new();
    for (i, r) in results.iter().enumerate() {
        if let (Some(p), Some(pending)) = (r.pending_file(), &r.pending)
            && let Some(import) = &pending.0.selection.helper_module
        {
            let dir = p.parent().unwrap_or(Path::new("")).to_path_buf(); // "": the working directory
            groups.entry((dir, import.clone())).or_default().push(i);
        }
    }
    for ((dir, import), members) in groups {
        let name = import.trim_start_matches('.');
        let module_path = dir.join(format!("{name}.py"));
        let shown = module_path.display().to_string();
        let existing = std::fs::read(&module_path).ok();
        let ours = existing.as_deref().map(|b| String::from_utf8_lossy(b).starts_with(HELPER_MODULE_DOC));
        if ours == Some(false) {
            results[members[0]].warnings.push(format!(
                "{shown}: not written by xla2tpu; the helpers of {} stay in each file",
                count(members.len(), "file")
            ));
        }
        let shared = ours != Some(false) && (ours.is_some() || members.len() >= 2);
        let old = existing.map(|b| String::from_utf8_lossy(&b).into_owned());
        let module = shared.then(|| module_text(&results, &members, old.as_deref()));
        let module = match module {
            Some(Err(panic)) => {
                let first = &mut results[members[0]];
                first.warnings.push(format!("{shown}: internal error, helpers kept in each file: {panic}"));
                None
            }
            Some(Ok(new)) if write && old.as_deref() != Some(new.as_str()) => {
                // The module first: a file importing from a module that could not be written
                // would not run. When it fails, the files keep their helpers. A new module
                // belongs to the owner of the files it serves.
                let sibling = results[members[0]].pending_file().expect("members are files").to_path_buf();
                let done = match &old {
                    Some(old) => crate::write::replace_if_unchanged(&module_path, old.as_bytes(), new.as_bytes()),
                    None => crate::write::create_new(&module_path, new.as_bytes(), &sibling),
                };
                let last = &mut results[*members.last().expect("a member")];
                match done {
                    Ok(()) => last.module_written = true,
                    Err(e) => last.outcome.error = Some(format!("{shown}: {e:#}")),
                }
                last.module_written.then_some(new)
            }
            Some(Ok(new)) => Some(new),
            None => None,
        };
        for &i in &members {
            let r = &mut results[i];
            let (mut l, m) = *r.pending.take().expect("pending");
            let input = l.input.clone();
            let done = crate::isolate::catch(|| match module {
                Some(_) => finish(r, &l, m, write, color),
                None => {
                    l.selection.helper_module = None;
                    let path = r.outcome.path.clone();
                    match migrate_python(&l, &path, &mut r.warnings) {
                        Ok(m) => finish(r, &l, m, write, color),
                        Err(e) => r.outcome.error = Some(e),
                    }
                }
            });
            if let Err(panic) = done {
                let module_written = r.module_written;
                *r = FileMigration { module_written, ..FileMigration::internal_error(&input, panic) };
            }
        }
        if let Some(new) = module.filter(|new| !write && old.as_deref() != Some(new.as_str())) {
            let diff = match &old {
                Some(old) => render::unified_diff(&shown, old, &new, color),
                None => render::new_file_diff(&shown, &new, color),
            };
            results[*members.last().expect("a member")].stdout.extend(diff.into_bytes());
        }
    }
    results
}

/// The helper module of a group's pending files, under the guard.
fn module_text(
    results: &[FileMigration],
    members: &[usize],
    old: Option<&str>,
) -> Result<String, crate::isolate::Panic> {
    let mut helpers: BTreeMap<String, crate::migrate::fix::Helper> = BTreeMap::new();
    for pending in members.iter().filter_map(|&i| results[i].pending.as_ref()) {
        for (n, h) in &pending.1.helpers {
            helpers.entry(n.clone()).or_insert_with(|| h.clone());
        }
    }
    crate::isolate::catch(|| helper_module_text(old, &helpers))
}

/// The helper module: `existing` (one xla2tpu wrote) with the helpers it lacks added, or a new
/// one: the docstring, the helpers' imports, then each helper once.
fn helper_module_text(existing: Option<&str>, helpers: &BTreeMap<String, crate::migrate::fix::Helper>) -> String {
    let defined = |text: &str, name: &str| {
        text.lines().any(|l| l.starts_with(&format!("def {name}(")) || l.starts_with(&format!("class {name}")))
    };
    let mut text = existing.map_or_else(|| format!("{HELPER_MODULE_DOC}\n"), str::to_string);
    let new: Vec<&crate::migrate::fix::Helper> = helpers.values().filter(|h| !defined(&text, &h.name)).collect();
    if new.is_empty() {
        return text;
    }
    // Imports go after the docstring and the imports already there.
    let mut imports: Vec<String> = new
        .iter()
        .flat_map(|h| h.module.iter().flat_map(|m| m.imports.iter().map(|r| r.statement())))
        .filter(|line| !text.lines().any(|l| l == line))
        .collect();
    let stdlib = |line: &String| {
        let root = line.split_whitespace().nth(1).unwrap_or("").split('.').next().unwrap_or("");
        !matches!(root, "torch" | "fsspec" | "numpy" | "transformers" | "accelerate" | "lightning")
    };
    imports.sort_by_key(|l| (!stdlib(l), l.clone()));
    imports.dedup();
    // After the imports already there, or the docstring and a blank line (ruff's format).
    let mut offset = 0;
    let mut after_imports = None;
    for line in text.split_inclusive('\n') {
        if line.starts_with("def ") || line.starts_with("class ") || line.starts_with('@') {
            break;
        }
        offset += line.len();
        if line.starts_with("import ") || line.starts_with("from ") {
            after_imports = Some(offset);
        }
    }
    let added: String = imports.iter().map(|l| format!("{l}\n")).collect();
    match after_imports {
        Some(at) => text.insert_str(at, &added),
        None => {
            let at = text.find('\n').map_or(text.len(), |i| i + 1);
            text.insert_str(at, &format!("\n{added}"));
        }
    }
    let mut text = text.trim_end().to_string();
    text.push('\n');
    for h in new {
        text.push_str("\n\n");
        text.push_str(h.text.trim_end());
        text.push('\n');
    }
    text
}

/// A Python file through the engine; `setup.py` then also through the dependency handler.
fn migrate_python(l: &Loaded, path: &str, warnings: &mut Vec<String>) -> Result<Migrated, String> {
    let (text, rules) = (&l.source.text, l.rules());
    let mut m = migrate::migrate_isolated(text, rules, &l.selection);
    if let Some(problem) = &m.problem {
        let line = describe_problem(path, text, problem);
        match problem {
            Problem::NoConvergence { .. } => warnings.push(line),
            _ => return Err(line),
        }
    }
    // Locations refer to the user's file as it was, not to the rewritten text. Most files have
    // none to locate, so the index is built on the first.
    let lines = std::cell::LazyCell::new(|| LineIndex::new(text));
    let at = |offset: TextSize| lines.line_col(text, offset);
    let mut reverted: Vec<String> = m
        .reverted
        .iter()
        .map(|r| {
            let (line, col) = at(r.offset);
            format!(
                "{path}:{line}:{col}: internal error: the {} fix was not applied because {}; the rest of the file was migrated. Please report this with the file.",
                r.rule, r.reason
            )
        })
        .collect();
    let mut remaining = located(&m.remaining, |offset| at(m.original_offset(offset)));
    let mut output = std::mem::take(&mut m.output);
    let mut applied = std::mem::take(&mut m.applied);
    let helpers = std::mem::take(&mut m.helpers);
    if l.kind == Kind::SetupPy {
        // Its requirements, in the engine's output: located back through both migrations.
        let deps = crate::isolate::catch(|| project::migrate(Kind::SetupPy, &output, rules, &l.selection))
            .map_err(|panic| describe_problem(path, text, &Problem::Internal(panic)))?;
        let (left, dropped) = text_leftovers(&deps, path, |offset| at(m.original_offset(offset)));
        remaining.extend(left);
        reverted.extend(dropped);
        for (code, n) in deps.applied {
            *applied.entry(code).or_default() += n;
        }
        output = deps.output;
    }
    remaining.sort_by_key(|(_, line, col, _)| (*line, *col));
    Ok(Migrated { output, applied, remaining, reverted, diff: None, helpers })
}

/// A notebook: its code cells through the engine, its IPython lines through the launch handler.
fn migrate_notebook(l: &Loaded, path: &str, color: bool) -> Result<Migrated, String> {
    let m = project::notebook::migrate(&l.source.text, l.rules(), &l.selection).map_err(|e| format!("{path}: {e}"))?;
    let diff = m
        .changed
        .iter()
        .map(|(cell, old, new)| {
            // A cell's last line has no newline; the diff need not say so each time.
            let (old, new) = (format!("{}\n", old.trim_end_matches('\n')), format!("{}\n", new.trim_end_matches('\n')));
            render::unified_diff(&format!("{path}:cell {cell}"), &old, &new, color)
        })
        .collect();
    Ok(Migrated {
        output: m.output,
        applied: m.applied,
        remaining: m.remaining.into_iter().map(|(cell, line, col, d)| (Some(cell), line, col, d)).collect(),
        reverted: m
            .reverted
            .into_iter()
            .map(|(rule, cell, line, why)| format!("{path}:cell {cell}:{line}: the {rule} fix was not applied: {why}"))
            .collect(),
        diff: Some(diff),
        helpers: BTreeMap::new(),
    })
}

/// What is left, each with its (line, column) in the input: `at` maps an offset of the output.
fn located(remaining: &[Diagnostic], at: impl Fn(TextSize) -> (usize, usize)) -> Vec<Left> {
    remaining
        .iter()
        .map(|d| {
            let (line, col) = at(d.range.start());
            (None, line, col, d.clone())
        })
        .collect()
}

/// Dependency files, launch scripts, container files and configs.
fn migrate_text(l: &Loaded, kind: Kind, path: &str) -> Result<Migrated, String> {
    let (text, rules) = (&l.source.text, l.rules());
    let m = crate::isolate::catch(|| project::migrate(kind, text, rules, &l.selection))
        .map_err(|panic| describe_problem(path, text, &Problem::Internal(panic)))?;
    if let Some(invalid) = m.invalid {
        let line = format!("{path}: {invalid}; file skipped");
        if !kind.owned_by_project() {
            // A Helm template or another tool's YAML is not ours to fail a run on.
            return Ok(Migrated {
                output: m.output,
                applied: m.applied,
                remaining: Vec::new(),
                reverted: vec![line],
                diff: None,
                helpers: BTreeMap::new(),
            });
        }
        return Err(line);
    }
    let lines = LineIndex::new(text);
    let (remaining, reverted) = text_leftovers(&m, path, |offset| lines.line_col(text, offset));
    Ok(Migrated { output: m.output, applied: m.applied, remaining, reverted, diff: None, helpers: BTreeMap::new() })
}

/// What a text migration left, and the fixes it dropped (as warning lines); `at` locates an
/// offset of the text that migration was given in the user's file.
fn text_leftovers(
    m: &project::TextMigration,
    path: &str,
    at: impl Fn(TextSize) -> (usize, usize),
) -> (Vec<Left>, Vec<String>) {
    let remaining = located(&m.remaining, |offset| at(m.original_offset(offset)));
    let reverted = m
        .reverted
        .iter()
        .map(|(code, offset, why)| {
            let (line, col) = at(*offset);
            format!("{path}:{line}:{col}: the {code} fix was not applied: {why}")
        })
        .collect();
    (remaining, reverted)
}

impl Isolated for FileMigration {
    fn internal_error(input: &Input, panic: crate::isolate::Panic) -> Self {
        let error = Some(internal_error_line(input, &panic));
        FileMigration {
            outcome: report::FileOutcome { path: input.display(), error, ..Default::default() },
            ..Default::default()
        }
    }
}
