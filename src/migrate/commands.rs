//! `migrate`, `check` and `rule`: files in, diffs and diagnostics out.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use rayon::prelude::*;
use ruff_python_ast::token::TokenKind;
use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::baseline::{Anchor, Baseline, Entry};
use crate::config::{Overrides, Resolver, Settings};
use crate::discover::{Input, discover, discover_each};
use crate::migrate::checker::Diagnostic;
use crate::migrate::facts::RunFacts;
use crate::migrate::project::{self, Kind};
use crate::migrate::render::{self, Finding, Located, OutputFormat};
use crate::migrate::report;
use crate::migrate::rules::{Builtin, Rule, RuleId, RuleSet, Safety};
use crate::migrate::{self, Problem, Selection};
use crate::noqa::{Additions, Known, Noqa};
use crate::source::{LineIndex, SourceFile};
use crate::timings::{Phase, time};

/// Rules of `rules/gate.yaml` that no matcher finds: `check` reports them itself.

#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    fn enabled(self, stream_is_tty: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => stream_is_tty && std::env::var_os("NO_COLOR").is_none(),
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct CommonArgs {
    /// Files or directories to process (`-` reads standard input).
    #[arg(default_value = ".")]
    pub paths: Vec<PathBuf>,

    /// Only these rule codes or prefixes (e.g. `TPU1,TPU214`); replaces the configured selection.
    #[arg(long, value_delimiter = ',', value_name = "CODE", help_heading = "Rule selection")]
    pub select: Option<Vec<String>>,
    /// Also these rule codes or prefixes.
    #[arg(long, value_delimiter = ',', value_name = "CODE", help_heading = "Rule selection")]
    pub extend_select: Vec<String>,
    /// Skip these rule codes or prefixes.
    #[arg(long, value_delimiter = ',', value_name = "CODE", help_heading = "Rule selection")]
    pub ignore: Vec<String>,
    /// A directory of extra rule files (`*.yaml`), loaded after the built-in ones; repeatable,
    /// replaces the configured `rules`.
    #[arg(long, value_name = "DIR", help_heading = "Rule selection")]
    pub rules: Vec<PathBuf>,

    /// Skip files and directories matching these globs (replaces the configured `exclude`).
    #[arg(long, value_delimiter = ',', value_name = "GLOB", help_heading = "File selection")]
    pub exclude: Option<Vec<String>>,
    /// Also skip files and directories matching these globs.
    #[arg(long, value_delimiter = ',', value_name = "GLOB", help_heading = "File selection")]
    pub extend_exclude: Vec<String>,
    /// Apply the excludes to files named on the command line too (pre-commit names every file).
    #[arg(long, overrides_with = "no_force_exclude", help_heading = "File selection")]
    pub force_exclude: bool,
    #[arg(long, overrides_with = "force_exclude", hide = true)]
    pub no_force_exclude: bool,
    /// Also walk files that .gitignore, hidden directories or the default excludes would hide.
    #[arg(long, help_heading = "File selection")]
    pub no_ignore: bool,

    /// Use this configuration file (pyproject.toml or xla2tpu.toml) for every path.
    #[arg(long, value_name = "FILE", help_heading = "Configuration")]
    pub config: Option<PathBuf>,
    /// Ignore every configuration file.
    #[arg(long, conflicts_with = "config", help_heading = "Configuration")]
    pub isolated: bool,
    /// Judge PyTorch calls (TPU8xx) against this backend registry: a built-in name
    /// (`torchtpu-0.2.0`, `torch_xla-2.9`) or an `xla2tpu-backend/1` file [default: torchtpu-0.2.0]
    #[arg(long, value_name = "NAME|PATH", help_heading = "Configuration")]
    pub backend: Option<String>,
    /// Migrate to this TorchTPU release: rules that do not apply to it are off [default: 0.2.0]
    #[arg(long, value_name = "VERSION", help_heading = "Configuration")]
    pub target_version: Option<String>,

    /// Colour the output: auto colours a terminal unless NO_COLOR is set.
    #[arg(long, value_enum, default_value_t, help_heading = "Output")]
    pub color: ColorChoice,
}

/// `--flag` / `--no-flag`: `None` when neither was given, so the configuration decides.
fn flag(yes: bool, no: bool) -> Option<bool> {
    if yes {
        Some(true)
    } else if no {
        Some(false)
    } else {
        None
    }
}

impl CommonArgs {
    fn overrides(&self, unsafe_fixes: Option<bool>, output_format: Option<OutputFormat>) -> Overrides {
        Overrides {
            select: self.select.clone(),
            extend_select: self.extend_select.clone(),
            ignore: self.ignore.clone(),
            exclude: self.exclude.clone(),
            extend_exclude: self.extend_exclude.clone(),
            force_exclude: flag(self.force_exclude, self.no_force_exclude),
            rules: self.rules.clone(),
            unsafe_fixes,
            output_format,
            no_ignore: self.no_ignore,
            config: self.config.clone(),
            isolated: self.isolated,
            backend: self.backend.clone(),
            target_version: self.target_version.clone(),
        }
    }
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  xla2tpu migrate src/                         print the diff of the safe fixes
  xla2tpu migrate --write src/                 apply them
  xla2tpu migrate --write --unsafe-fixes src/  also the fixes whose behaviour may differ")]
pub struct MigrateArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Write the changes to the files instead of printing a diff.
    #[arg(long)]
    pub write: bool,
    /// Also apply fixes whose behaviour may differ (see each rule's explanation).
    #[arg(long, overrides_with = "no_unsafe_fixes")]
    pub unsafe_fixes: bool,
    #[arg(long, overrides_with = "unsafe_fixes", hide = true)]
    pub no_unsafe_fixes: bool,
    /// Exit 1 when a file was (or, without --write, would be) changed.
    #[arg(long)]
    pub exit_non_zero_on_fix: bool,
    /// Also write a migration report: what needs a person, by kind of work, then what changed
    /// and totals (JSON for `.json`, Markdown otherwise).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 no findings, 1 findings (new ones with --baseline), 2 usage, configuration or I/O error.

Examples:
  xla2tpu check src/                                      findings with code frames
  xla2tpu check --output-format sarif . > xla2tpu.sarif   for GitHub code scanning
  xla2tpu check --write-baseline .xla2tpu-baseline.json   record today's findings
  xla2tpu check --baseline .xla2tpu-baseline.json         then fail only on new ones
  xla2tpu check --show-settings src/train.py              the configuration that applies"
)]
pub struct CheckArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// How to print findings [default: full, or `output-format` from the configuration].
    #[arg(long, value_enum, help_heading = "Output")]
    pub output_format: Option<OutputFormat>,
    /// Print the number of findings per rule instead of the findings.
    #[arg(long, help_heading = "Output")]
    pub statistics: bool,
    /// Print the diff `migrate` would apply instead of the findings; exit 1 if there is one.
    #[arg(long, conflicts_with_all = ["statistics", "add_noqa", "baseline", "write_baseline"], help_heading = "Output")]
    pub diff: bool,
    /// With --diff: include the unsafe fixes.
    #[arg(long, overrides_with = "no_unsafe_fixes", help_heading = "Output")]
    pub unsafe_fixes: bool,
    #[arg(long, overrides_with = "unsafe_fixes", hide = true)]
    pub no_unsafe_fixes: bool,
    /// Exit 0 even when there are findings.
    #[arg(long, help_heading = "Output")]
    pub exit_zero: bool,

    /// Fail only on findings that are not in this baseline file.
    #[arg(long, value_name = "FILE", help_heading = "Gating")]
    pub baseline: Option<PathBuf>,
    /// Record today's findings in this baseline file, and exit 0.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["baseline", "add_noqa"], help_heading = "Gating")]
    pub write_baseline: Option<PathBuf>,
    /// Add `# noqa: CODE` comments on the lines of today's findings, and exit 0.
    #[arg(long, help_heading = "Gating")]
    pub add_noqa: bool,

    /// Print the settings that apply to the (first) path, and exit.
    #[arg(long, help_heading = "Configuration")]
    pub show_settings: bool,
    /// Print the files that would be checked, and exit.
    #[arg(long, help_heading = "Configuration")]
    pub show_files: bool,
}

#[derive(Debug, clap::Args)]
pub struct RuleArgs {
    /// A rule code (e.g. TPU110); omit to list every rule.
    pub code: Option<String>,
    /// Extra rule files to load, as for migrate/check [default: the configured `rules`].
    #[arg(long, value_name = "DIR")]
    pub rules: Option<PathBuf>,
}

/// A file that could be read and decoded, with what applies to it.
struct Loaded {
    input: Input,
    /// How it is read: by its name; standard input and unknown names are Python.
    kind: Kind,
    source: SourceFile,
    settings: Arc<Settings>,
    selection: Selection,
}

impl Loaded {
    fn rules(&self) -> &RuleSet {
        &self.settings.rules
    }
}

/// What the run's files establish together, gathered by a second walk only if a file asks.
fn run_facts(common: &CommonArgs, resolver: &Arc<Resolver>) -> Arc<RunFacts> {
    let paths = common.paths.clone();
    // Weak: the facts live in every file's selection, the resolver in the run.
    let resolver = Arc::downgrade(resolver);
    Arc::new(RunFacts::walking(move |visit| {
        let Some(resolver) = resolver.upgrade() else { return };
        discover_each(&paths, resolver.no_ignore(), resolver.clone(), |input| {
            if let Input::File(p) = input {
                visit(p);
            }
        });
    }))
}

/// The files to process; undiscoverable or excluded ones become error lines and the run goes on.
fn discover_all(common: &CommonArgs, resolver: &Arc<Resolver>, errors: &mut Vec<String>) -> Vec<Input> {
    let found = discover(&common.paths, resolver.no_ignore(), resolver.clone());
    errors.extend(found.errors.iter().map(|(p, e)| format!("{p}: {e}")));
    found.inputs
}

/// Run `work` on every input on the thread pool while the walk is still going; undiscoverable
/// or excluded paths become error lines. Results come back in input order, so output is the
/// same whatever the scheduling, and each holds only what the report needs.
fn process_all<T: Send + Isolated>(
    common: &CommonArgs,
    resolver: &Arc<Resolver>,
    errors: &mut Vec<String>,
    work: impl Fn(Input) -> T + Sync + Send,
) -> Vec<T> {
    let (tx, rx) = std::sync::mpsc::channel::<Input>();
    let (mut results, walk_errors) = std::thread::scope(|scope| {
        let walker = scope.spawn(move || {
            time(Phase::Walk, || {
                discover_each(&common.paths, resolver.no_ignore(), resolver.clone(), |input| {
                    let _ = tx.send(input); // the receiver lives until every input is taken
                })
            })
        });
        let results: Vec<(Input, T)> =
            rx.into_iter().par_bridge().map(|input| (input.clone(), guarded(input, &work))).collect();
        (results, walker.join().expect("the walk does not panic"))
    });
    errors.extend(walk_errors.iter().map(|(p, e)| format!("{p}: {e}")));
    results.sort_by(|a, b| a.0.cmp(&b.0));
    results.into_iter().map(|(_, t)| t).collect()
}

/// [`process_all`] for a report printed as it goes: `sink` gets each result in input order as soon
/// as it and those before it are done. The walk of one argument meets its files in that order
/// ([`discover_each`]) and the workers take them in the order met, so the walk still overlaps the
/// work; with several arguments the inputs are sorted first. Only the results finished ahead of a
/// file still in progress wait in memory, so the peak does not grow with the tree, where
/// `process_all` holds every result. Returns the walk's errors.
fn process_in_order<T: Send + Isolated>(
    common: &CommonArgs,
    resolver: &Arc<Resolver>,
    work: impl Fn(Input) -> T + Sync,
    mut sink: impl FnMut(T),
) -> Vec<String> {
    // Bounded, so a walk far ahead of the workers does not hold the whole tree's paths either;
    // in batches, so the walk and the workers do not wake each other for every file.
    const BATCH: usize = 32;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Input>>(1024 / BATCH);
    // Results by input index, and the index the printer needs next: a worker wakes the printer
    // only with that one, not for every file.
    let finished = std::sync::Mutex::new(Finished { waiting: BTreeMap::new(), next: 0, all: false });
    let ready = std::sync::Condvar::new();
    let walk_errors = std::thread::scope(|scope| {
        let walker = scope.spawn(move || {
            // `tx` moves here: the workers' input ends with the walk.
            let mut batch = Vec::with_capacity(BATCH);
            // `None` sends what is left.
            let mut send = |input: Option<Input>| {
                let last = input.is_none();
                batch.extend(input);
                if batch.len() == BATCH || (last && !batch.is_empty()) {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    let _ = crate::timings::excluded(Phase::Walk, || tx.send(full)); // taken until the last input
                }
            };
            time(Phase::Walk, || {
                let errors = if common.paths.len() == 1 {
                    discover_each(&common.paths, resolver.no_ignore(), resolver.clone(), |input| send(Some(input)))
                } else {
                    let found = discover(&common.paths, resolver.no_ignore(), resolver.clone());
                    found.inputs.into_iter().for_each(|input| send(Some(input)));
                    found.errors
                };
                send(None);
                errors
            })
        });
        let (work, finished, ready) = (&work, &finished, &ready);
        scope.spawn(move || {
            // However the workers end, the printer hears that they did: it never waits for a
            // result no worker will deliver.
            let _done = AllDone { finished, ready };
            // `par_bridge` takes the inputs one at a time, in order, as workers become free.
            rx.into_iter().flatten().enumerate().par_bridge().for_each(|(i, input)| {
                let result = guarded(input, work);
                let mut f = finished.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                f.waiting.insert(i, result);
                if i == f.next {
                    ready.notify_one();
                }
            });
        });
        loop {
            let mut f = finished.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            while !f.all && !f.waiting.contains_key(&f.next) {
                f = ready.wait(f).unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            let mut due = Vec::new();
            let taken = &mut *f;
            if taken.all && !taken.waiting.contains_key(&taken.next) {
                // Only a result that can never come leaves a gap once every worker is done.
                taken.next = taken.waiting.keys().next().copied().unwrap_or(taken.next);
            }
            while let Some(result) = taken.waiting.remove(&taken.next) {
                due.push(result);
                taken.next += 1;
            }
            let all = f.all && f.waiting.is_empty();
            drop(f); // printing does not hold up the workers
            due.into_iter().for_each(&mut sink);
            if all {
                break;
            }
        }
        walker.join().expect("the walk does not panic")
    });
    walk_errors.iter().map(|(p, e)| format!("{p}: {e}")).collect()
}

/// A file's result when its worker panicked outside every narrower guard: an error naming the
/// file, so the run goes on and the report still has a line for it.
trait Isolated {
    fn internal_error(input: &Input, panic: crate::isolate::Panic) -> Self;
}

/// `work` on one input, under the per-file guard: every pass of every file kind runs inside it.
fn guarded<T: Isolated>(input: Input, work: impl Fn(Input) -> T) -> T {
    let shown = input.clone();
    crate::isolate::catch(|| work(input)).unwrap_or_else(|panic| T::internal_error(&shown, panic))
}

fn internal_error_line(input: &Input, panic: &crate::isolate::Panic) -> String {
    format!("{}: internal error, file left unchanged: {panic}. Please report this with the file.", input.display())
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

impl Isolated for FileCheck {
    fn internal_error(input: &Input, panic: crate::isolate::Panic) -> Self {
        FileCheck {
            path: input.display(),
            input: input.path(),
            settings: None,
            findings: Vec::new(),
            error: Some(internal_error_line(input, &panic)),
            warnings: Vec::new(),
            noqa_added: 0,
        }
    }
}

/// Marks [`Finished::all`] when dropped, on unwinding too.
struct AllDone<'a, T> {
    finished: &'a std::sync::Mutex<Finished<T>>,
    ready: &'a std::sync::Condvar,
}

impl<T> Drop for AllDone<'_, T> {
    fn drop(&mut self) {
        self.finished.lock().unwrap_or_else(std::sync::PoisonError::into_inner).all = true;
        self.ready.notify_one();
    }
}

/// What [`process_in_order`]'s workers have finished and its printer has not taken yet.
struct Finished<T> {
    waiting: BTreeMap<usize, T>,
    /// The index the printer takes next.
    next: usize,
    /// Every input is done.
    all: bool,
}

fn load(input: Input, resolver: &Resolver, run: &Arc<RunFacts>) -> Result<Loaded, String> {
    let failed = |e: &dyn std::fmt::Display| format!("{}: {e:#}", input.display());
    let source = match &input {
        Input::Stdin => {
            let mut bytes = Vec::new();
            std::io::stdin().read_to_end(&mut bytes).map_err(|e| failed(&e))?;
            SourceFile::from_bytes(PathBuf::from("-"), bytes)
        }
        Input::File(path) => time(Phase::Read, || SourceFile::read(path)),
    }
    .map_err(|e| failed(&e))?;
    if cfg!(debug_assertions) && source.text.contains(migrate::PANIC_ON_READ_MARKER) {
        panic!("fault injected for testing");
    }
    let settings = time(Phase::Walk, || match &input {
        Input::Stdin => resolver.global(),
        Input::File(path) => resolver.for_path(path),
    })
    .map_err(|e| failed(&e))?;
    let mut selection = settings.selection(&resolver.absolute(&input.path()));
    selection.run = Some(run.clone());
    let kind = match &input {
        Input::Stdin => Kind::Python,
        Input::File(path) => Kind::of(path).unwrap_or(Kind::Python),
    };
    Ok(Loaded { input, kind, source, settings, selection })
}

fn syntax_location(text: &str, e: &ruff_python_parser::ParseError) -> (usize, usize) {
    LineIndex::new(text).line_col(text, e.location.start())
}

fn describe_problem(path: &str, text: &str, problem: &Problem) -> String {
    match problem {
        Problem::Syntax(e) => {
            let (line, col) = syntax_location(text, e);
            format!("{path}:{line}:{col}: syntax error, file skipped: {} (is it Python 2?)", e.error)
        }
        Problem::NoConvergence { rules } => format!(
            "{path}: fixes did not converge after {} passes (rules {}); the last result is kept",
            migrate::MAX_PASSES,
            rules.join(", ")
        ),
        Problem::Internal(panic) => {
            format!("{path}: internal error, file left unchanged: {panic}. Please report this with the file.")
        }
    }
}

pub fn migrate(args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let overrides = args.common.overrides(flag(args.unsafe_fixes, args.no_unsafe_fixes), None);
    run_migrate(&args.common, overrides, args.write, args.exit_non_zero_on_fix, args.report.as_deref())
}

/// `migrate`, and `check --diff` (never writes, exits 1 on a change).
fn run_migrate(
    common: &CommonArgs,
    overrides: Overrides,
    write: bool,
    exit_non_zero_on_fix: bool,
    report: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let resolver = Arc::new(Resolver::new(overrides)?);
    let mut errors = Vec::new();
    let color = common.color.enabled(std::io::stdout().is_terminal());

    // Each worker reads, migrates, renders and writes its file; what comes back is small.
    let run = run_facts(common, &resolver);
    if write {
        // Read before any file is written: the migration turns these configs into `MULTI_GPU`
        // and removes `use_spmd()`, and a launch script checked after that would no longer see
        // what it launched.
        run.accelerate_xla_configs();
        run.spmd_programs();
        run.read_exports();
    }
    let results =
        process_all(common, &resolver, &mut errors, |input| migrate_input(input, &resolver, &run, write, color));

    let mut stdout = anstream::stdout();
    let (mut scanned, mut written) = (0usize, 0usize);
    let mut warnings = Vec::new();
    let mut outcomes = Vec::with_capacity(results.len());
    for r in results {
        stdout.write_all(&r.stdout)?;
        scanned += usize::from(r.scanned);
        written += usize::from(r.written);
        warnings.extend(r.warnings);
        errors.extend(r.outcome.error.clone());
        outcomes.push(r.outcome);
    }
    stdout.flush()?;

    let mut err = anstream::stderr();
    for w in &warnings {
        writeln!(err, "warning: {w}")?;
    }
    for e in &errors {
        writeln!(err, "error: {e}")?;
    }
    let manual: Vec<&report::Item> = outcomes.iter().flat_map(|o| &o.manual).collect();
    if !manual.is_empty() {
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
    write!(
        err,
        "{scanned} files scanned, {changed} {verb}{}; {fixes} fixes{}; {} items need manual migration{}{}",
        if write { format!(" ({written} written)") } else { String::new() },
        if by_rule.is_empty() { String::new() } else { format!(" ({})", by_rule.join(", ")) },
        manual.len(),
        if unsafe_available > 0 {
            format!("; {unsafe_available} unsafe fixes available with --unsafe-fixes")
        } else {
            String::new()
        },
        if errors.is_empty() { String::new() } else { format!("; {} files skipped with errors", errors.len()) },
    )?;
    if let Some(path) = report {
        let rules = resolver.global()?.rules.clone();
        // One directory given: it is the project, and the report names files inside it.
        let root = match common.paths.as_slice() {
            [dir] if dir.is_dir() => Some(dir.as_path()),
            _ => None,
        };
        crate::write::create(path, report::render(path, &outcomes, &rules, root).as_bytes())
            .with_context(|| format!("cannot write the report to {}", path.display()))?;
        write!(err, "; report: {}", path.display())?;
    }
    writeln!(err)?;
    if let Some(timings) = crate::timings::report() {
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
}

fn migrate_input(input: Input, resolver: &Resolver, run: &Arc<RunFacts>, write: bool, color: bool) -> FileMigration {
    let path = input.display();
    let mut out = FileMigration {
        outcome: report::FileOutcome { path: path.clone(), ..Default::default() },
        ..Default::default()
    };
    let l = match load(input, resolver, run) {
        Ok(l) => l,
        Err(e) => {
            out.outcome.error = Some(e);
            return out;
        }
    };
    out.scanned = true;
    out.outcome.kind = Some(l.kind);
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
    out.warnings.extend(m.reverted);
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
        if write && l.input == Input::Stdin {
            // As a filter, `--write -` always prints the (unchanged) source.
            out.stdout = l.source.encode(&m.output);
        }
        return out;
    }
    out.outcome.changed = true;
    out.outcome.applied = m.applied;
    match (&l.input, write) {
        (Input::Stdin, true) => out.stdout = l.source.encode(&m.output),
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
    out
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
    Ok(Migrated { output, applied, remaining, reverted, diff: None })
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
            });
        }
        return Err(line);
    }
    let lines = LineIndex::new(text);
    let (remaining, reverted) = text_leftovers(&m, path, |offset| lines.line_col(text, offset));
    Ok(Migrated { output: m.output, applied: m.applied, remaining, reverted, diff: None })
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

/// How `check`'s workers treat each file.
struct CheckMode {
    /// `--add-noqa`: write the directives instead of reporting.
    add_noqa: bool,
    /// Render code frames (coloured or not) for `--output-format full`.
    frames: Option<bool>,
}

/// What `check` keeps of one file: its findings, located, not its source.
struct FileCheck {
    /// As shown to the user.
    path: String,
    /// As read (`-` for stdin), for baselines.
    input: PathBuf,
    /// `None` when the file could not be read.
    settings: Option<Arc<Settings>>,
    findings: Vec<Located>,
    error: Option<String>,
    warnings: Vec<String>,
    /// `--add-noqa`: directives written into the file.
    noqa_added: usize,
}

impl FileCheck {
    fn rules(&self) -> &RuleSet {
        &self.settings.as_ref().expect("only loaded files have findings").rules
    }
}

fn check_input(input: Input, resolver: &Resolver, run: &Arc<RunFacts>, mode: &CheckMode) -> FileCheck {
    let mut out = FileCheck {
        path: input.display(),
        input: input.path(),
        settings: None,
        findings: Vec::new(),
        error: None,
        warnings: Vec::new(),
        noqa_added: 0,
    };
    let l = match load(input, resolver, run) {
        Ok(l) => l,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    match l.kind {
        Kind::Python | Kind::SetupPy => {}
        Kind::Notebook => {
            check_notebook(&l, mode, &mut out);
            out.settings = Some(l.settings);
            return out;
        }
        kind => {
            check_text(&l, kind, mode, &mut out);
            out.settings = Some(l.settings);
            return out;
        }
    }
    let mut checked = check_file(&l, mode.add_noqa);
    if l.kind == Kind::SetupPy && checked.error.is_none() {
        // Its requirements, under the guard of their own: the Python findings stand either way.
        match crate::isolate::catch(|| project::lint(Kind::SetupPy, &l.source.text, l.rules(), &l.selection)) {
            Ok(Ok(deps)) => {
                checked.anchors.extend(deps.iter().map(|d| Anchor::new(&l.source.text, &[], d.range.start())));
                checked.diagnostics.extend(deps);
            }
            Ok(Err(_)) => {}
            Err(panic) => {
                checked.error = Some(describe_problem(&out.path, &l.source.text, &Problem::Internal(panic)));
            }
        }
    }
    out.error = checked.error;
    out.warnings.extend(checked.warning);
    if !checked.diagnostics.is_empty() {
        let (text, rules) = (&l.source.text, l.rules());
        out.findings = time(Phase::Render, || {
            let lines = LineIndex::new(text);
            checked
                .diagnostics
                .into_iter()
                .zip(checked.anchors)
                .map(|(d, anchor)| {
                    let rule = &rules.rules[d.rule];
                    Located::new(&out.path, text, &lines, d, anchor, rule, mode.frames)
                })
                .collect()
        });
    }
    if let (Some(additions), Input::File(path)) = (&checked.noqa, &l.input) {
        let lines = LineIndex::new(&l.source.text);
        for range in &additions.unplaceable {
            let (line, col) = lines.line_col(&l.source.text, range.start());
            out.warnings.push(format!(
                "{}:{line}:{col}: no line of this finding can end with a comment; not suppressed",
                path.display()
            ));
        }
        if !additions.edits.is_empty() {
            let text = additions.apply(&l.source.text);
            match crate::write::replace_if_unchanged(path, &l.source.encode(&l.source.text), &l.source.encode(&text)) {
                Ok(()) => out.noqa_added = additions.edits.len(),
                Err(e) => out.error = Some(format!("{}: {e:#}", path.display())),
            }
        }
    }
    out.settings = Some(l.settings);
    out
}

/// A notebook's findings, each located in its cell (`nb.ipynb:cell 3:2:1`). `--add-noqa` leaves
/// notebooks alone: a comment added to a cell would be a change of its own.
fn check_notebook(l: &Loaded, mode: &CheckMode, out: &mut FileCheck) {
    let rules = l.rules();
    let nb = match project::notebook::Notebook::parse(&l.source.text) {
        Ok(nb) => nb,
        Err(e) => return out.error = Some(format!("{}: {e}; file skipped", out.path)),
    };
    let found = match crate::isolate::catch(|| project::notebook::lint(&nb, rules, &l.selection)) {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => return out.error = Some(format!("{}: {e}", out.path)),
        Err(panic) => return out.error = Some(describe_problem(&out.path, &l.source.text, &Problem::Internal(panic))),
    };
    out.findings = found
        .into_iter()
        .map(|f| {
            let lines = LineIndex::new(&f.source);
            let anchor = Anchor::new(&f.source, &[], f.diagnostic.range.start());
            let place = format!("{}:cell {}", out.path, f.cell);
            let rule = &rules.rules[f.diagnostic.rule];
            let mut located = Located::new(&place, &f.source, &lines, f.diagnostic, anchor, rule, mode.frames);
            located.cell = Some(f.cell);
            located
        })
        .collect();
}

/// A dependency file, launch script, container file or config.
fn check_text(l: &Loaded, kind: Kind, mode: &CheckMode, out: &mut FileCheck) {
    let (text, rules) = (&l.source.text, l.rules());
    let found = match crate::isolate::catch(|| project::lint(kind, text, rules, &l.selection)) {
        Ok(Ok(found)) => found,
        Ok(Err(e)) if !kind.owned_by_project() => return out.warnings.push(format!("{}: {e}; file skipped", out.path)),
        Ok(Err(e)) => return out.error = Some(format!("{}: {e}; file skipped", out.path)),
        Err(panic) => return out.error = Some(describe_problem(&out.path, text, &Problem::Internal(panic))),
    };
    let lines = LineIndex::new(text);
    out.findings = found
        .into_iter()
        .map(|d| {
            let anchor = Anchor::new(text, &[], d.range.start());
            let rule = &rules.rules[d.rule];
            Located::new(&out.path, text, &lines, d, anchor, rule, mode.frames)
        })
        .collect();
}

/// One file's check.
#[derive(Default)]
struct Checked {
    diagnostics: Vec<Diagnostic>,
    /// One per diagnostic.
    anchors: Vec<Anchor>,
    /// `--add-noqa`: the comments to add.
    noqa: Option<Additions>,
    error: Option<String>,
    warning: Option<String>,
}

/// A builtin rule, when it is loaded and selected for this file.
fn selected(rules: &RuleSet, builtin: Builtin, selection: &Selection) -> Option<RuleId> {
    rules.builtin(builtin).filter(|&id| selection.enabled(&rules.rules[id].code))
}

fn check_file(l: &Loaded, add_noqa: bool) -> Checked {
    let (text, rules, path) = (&l.source.text, l.rules(), l.input.display());
    let outcome = crate::isolate::catch(|| {
        migrate::fault_injection_point(text);
        let (mut diagnostics, parsed, existing) = match migrate::lint(text, rules, &l.selection) {
            // Nothing can match, so there is no directive (`noqa` is one of the words) to read either.
            Ok(None) => return Checked::default(),
            Ok(Some(linted)) => (linted.diagnostics, linted.parsed, linted.noqa),
            Err(e) => return syntax_error(l, &e),
        };
        let tokens = parsed.tokens();
        // `--add-noqa` also needs where comments can go, which the checker's reading skips.
        let noqa = if add_noqa { Noqa::new(text, tokens) } else { existing };
        let mut checked = Checked::default();
        if add_noqa {
            let findings: Vec<(TextRange, &str)> =
                diagnostics.iter().map(|d| (d.range, rules.rules[d.rule].code.as_str())).collect();
            checked.noqa = Some(crate::noqa::additions(text, tokens, &noqa, &findings));
        }
        diagnostics.extend(unused_noqa(text, &noqa, rules, &l.selection));
        diagnostics.sort_by_key(|d| (d.range.start(), d.rule));
        let comments: Vec<TextRange> =
            tokens.iter().filter(|t| t.kind() == TokenKind::Comment).map(|t| t.range()).collect();
        // One anchor per line, however many findings it holds (generated code can have thousands).
        let mut by_line: rustc_hash::FxHashMap<usize, Anchor> = rustc_hash::FxHashMap::default();
        checked.anchors = diagnostics
            .iter()
            .map(|d| {
                let line = crate::source::line_start(text, d.range.start().into());
                by_line.entry(line).or_insert_with(|| Anchor::new(text, &comments, d.range.start())).clone()
            })
            .collect();
        checked.diagnostics = diagnostics;
        checked
    });
    outcome.unwrap_or_else(|panic| Checked {
        error: Some(describe_problem(&path, text, &Problem::Internal(panic))),
        ..Checked::default()
    })
}

/// A file that does not parse is a finding (TPU002), so a gate can decide about it; with TPU002
/// not selected it is only a warning.
fn syntax_error(l: &Loaded, e: &ruff_python_parser::ParseError) -> Checked {
    let (text, path) = (&l.source.text, l.input.display());
    match selected(l.rules(), Builtin::SyntaxError, &l.selection) {
        Some(rule) => {
            let at = e.location.start().min(TextSize::try_from(text.len()).unwrap_or_default());
            let diagnostic = Diagnostic {
                rule,
                range: TextRange::empty(at),
                message: format!("syntax error, file not checked: {} (is it Python 2?)", e.error),
                note: None,
                fix: None,
            };
            Checked { anchors: vec![Anchor::new(text, &[], at)], diagnostics: vec![diagnostic], ..Checked::default() }
        }
        None => {
            let (line, col) = syntax_location(text, e);
            let code =
                l.rules().builtin(Builtin::SyntaxError).map_or("the syntax-error rule", |id| &l.rules().rules[id].code);
            let warning =
                format!("{path}:{line}:{col}: syntax error, file not checked: {} ({code} is not selected)", e.error);
            Checked { warning: Some(warning), ..Checked::default() }
        }
    }
}

/// `# noqa` codes that suppress nothing (TPU003). The checker drops what directives cover, so
/// the file is linted once more with its directives blanked out to see what they would cover;
/// only files whose directives list codes pay for that.
fn unused_noqa(text: &str, noqa: &Noqa, rules: &RuleSet, selection: &Selection) -> Vec<Diagnostic> {
    let Some(rule) = selected(rules, Builtin::UnusedNoqa, selection) else {
        return Vec::new();
    };
    if !noqa.lists_codes() {
        return Vec::new();
    }
    // With its directives blanked out, a file may hold nothing any rule can match: then every
    // code it lists is unused.
    let Ok(linted) = migrate::lint(&noqa.mask(text), rules, selection) else {
        return Vec::new();
    };
    let all = linted.map(|l| l.diagnostics).unwrap_or_default();
    let findings: Vec<(TextRange, &str)> = all.iter().map(|d| (d.range, rules.rules[d.rule].code.as_str())).collect();
    let known = |code: &str| {
        let mut matching = rules.rules.iter().filter(|r| r.code.starts_with(code)).peekable();
        if matching.peek().is_none() {
            return if rules.is_our_family(code) { Known::Unknown } else { Known::Foreign };
        }
        if matching.any(|r| selection.enabled(&r.code)) { Known::Enabled } else { Known::Disabled }
    };
    noqa.unused(text, &findings, &known)
        .into_iter()
        .map(|u| Diagnostic { rule, range: u.range, message: u.message(), note: None, fix: None })
        .collect()
}

pub fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let unsafe_fixes = flag(args.unsafe_fixes, args.no_unsafe_fixes);
    let overrides = args.common.overrides(unsafe_fixes, args.output_format);
    if args.diff {
        return run_migrate(&args.common, overrides, false, true, None);
    }
    let resolver = Arc::new(Resolver::new(overrides)?);
    if args.show_settings {
        let path = args.common.paths.first().map_or(Path::new("."), PathBuf::as_path);
        let settings = if path.is_dir() { resolver.for_dir(path)? } else { resolver.for_path(path)? };
        print!("{}", settings.describe(path, &path.display().to_string()));
        return Ok(ExitCode::SUCCESS);
    }
    let mut errors = Vec::new();
    if args.show_files {
        for input in discover_all(&args.common, &resolver, &mut errors) {
            println!("{}", input.display());
        }
        return Ok(finish(&errors, false, false));
    }
    if args.add_noqa && args.common.paths.iter().any(|p| p.as_os_str() == "-") {
        bail!("--add-noqa edits files in place; it cannot take standard input");
    }
    let baseline = args.baseline.as_deref().map(Baseline::read).transpose()?;
    let format = resolver.global()?.output_format.unwrap_or_default();
    let color = args.common.color.enabled(std::io::stdout().is_terminal());
    let mode = CheckMode {
        add_noqa: args.add_noqa,
        frames: (format == OutputFormat::Full && !args.statistics).then_some(color),
    };

    // Each worker reads, checks and locates (renders) its file; only findings come back.
    let run = run_facts(&args.common, &resolver);
    // A report of one line or frame per finding is printed as the files are done, in path order,
    // so memory does not grow with the tree; a baseline, statistics, `--add-noqa` and the
    // whole-document formats (JSON, SARIF, …) need every finding first.
    let line_per_finding = matches!(
        format,
        OutputFormat::Full
            | OutputFormat::Concise
            | OutputFormat::JsonLines
            | OutputFormat::Pylint
            | OutputFormat::Github
    );
    if line_per_finding && baseline.is_none() && args.write_baseline.is_none() && !args.statistics && !args.add_noqa {
        let (mut err, mut out) = (anstream::stderr(), anstream::stdout());
        let (mut tally, mut file_errors, mut written) = (Tally::default(), Vec::new(), Ok(()));
        let walk_errors = process_in_order(
            &args.common,
            &resolver,
            |input| check_input(input, &resolver, &run, &mode),
            |f: FileCheck| {
                for w in &f.warnings {
                    let _ = writeln!(err, "warning: {w}");
                }
                file_errors.extend(f.error.clone());
                if f.settings.is_none() {
                    return;
                }
                tally.files += 1;
                if f.findings.is_empty() {
                    return;
                }
                let rules = f.rules();
                let findings: Vec<Finding> = (f.findings.iter())
                    .map(|located| Finding { path: &f.path, located, rule: &rules.rules[located.diagnostic.rule] })
                    .collect();
                tally.count(&findings);
                let text = time(Phase::Render, || render::report(format, &findings, &[]));
                if written.is_ok() {
                    written = out.write_all(text.as_bytes());
                }
            },
        );
        written?;
        out.flush()?;
        errors.extend(walk_errors.into_iter().chain(file_errors));
        return tally.close(&errors, "", args.exit_zero);
    }
    let files = process_all(&args.common, &resolver, &mut errors, |input| check_input(input, &resolver, &run, &mode));
    let mut err = anstream::stderr();
    for f in &files {
        for w in &f.warnings {
            writeln!(err, "warning: {w}")?;
        }
        errors.extend(f.error.clone());
    }
    let loaded: Vec<&FileCheck> = files.iter().filter(|f| f.settings.is_some()).collect();

    if args.add_noqa {
        for e in &errors {
            writeln!(err, "error: {e}")?;
        }
        let added: usize = files.iter().map(|f| f.noqa_added).sum();
        let edited = files.iter().filter(|f| f.noqa_added > 0).count();
        writeln!(err, "Added {added} noqa directives to {edited} files.")?;
        return Ok(finish(&errors, false, false));
    }

    let mut findings: Vec<Finding> = Vec::new();
    // The index in `loaded` of each finding's file.
    let mut owners: Vec<usize> = Vec::new();
    for (i, f) in loaded.iter().enumerate() {
        let rules = f.rules();
        for located in &f.findings {
            findings.push(Finding { path: &f.path, located, rule: &rules.rules[located.diagnostic.rule] });
            owners.push(i);
        }
    }
    // The findings as `baseline` records them.
    let entries = |baseline: &Baseline| -> Vec<Entry> {
        let recorded: Vec<String> = loaded.iter().map(|f| baseline.path_of(&f.input)).collect();
        findings
            .iter()
            .zip(&owners)
            .map(|(f, &i)| Entry {
                rule: f.rule.code.clone(),
                path: recorded[i].clone(),
                anchor: f.located.anchor.clone(),
            })
            .collect()
    };

    if let Some(file) = &args.write_baseline {
        let mut baseline = Baseline::empty(file);
        baseline.extend(entries(&baseline));
        crate::write::create(file, baseline.to_json().as_bytes())?;
        for e in &errors {
            writeln!(err, "error: {e}")?;
        }
        writeln!(err, "{} files checked: wrote {} findings to {}", loaded.len(), baseline.len(), file.display())?;
        return Ok(finish(&errors, false, false));
    }

    let mut baseline_note = String::new();
    if let Some(baseline) = &baseline {
        let checked_paths: BTreeSet<String> = loaded.iter().map(|f| baseline.path_of(&f.input)).collect();
        let comparison = baseline.compare(&entries(baseline), &checked_paths);
        let new: BTreeSet<usize> = comparison.new.into_iter().collect();
        findings = findings.into_iter().enumerate().filter(|(i, _)| new.contains(i)).map(|(_, f)| f).collect();
        baseline_note = format!(" not in the baseline ({} known", comparison.known);
        if comparison.gone > 0 {
            baseline_note += &format!(
                "; {} baseline entries are gone: rewrite it with --write-baseline to shrink it",
                comparison.gone
            );
        }
        baseline_note.push(')');
    }

    // Every rule the findings may name, once (files may have different rule directories).
    let mut rules: Vec<&Rule> = Vec::new();
    let mut seen = BTreeSet::new();
    for f in &loaded {
        rules.extend(f.rules().rules.iter().filter(|r| seen.insert(r.code.as_str())));
    }
    time(Phase::Render, || -> std::io::Result<()> {
        let out = if args.statistics {
            render::statistics(&findings, matches!(format, OutputFormat::Json | OutputFormat::JsonLines))
        } else {
            render::report(format, &findings, &rules)
        };
        let mut stdout = anstream::stdout();
        stdout.write_all(out.as_bytes())?;
        stdout.flush()
    })?;

    let mut tally = Tally { files: loaded.len(), ..Tally::default() };
    tally.count(&findings);
    tally.close(&errors, &baseline_note, args.exit_zero)
}

/// What `check`'s closing line counts.
#[derive(Default)]
struct Tally {
    files: usize,
    findings: usize,
    safe: usize,
    unsafe_: usize,
}

impl Tally {
    fn count(&mut self, findings: &[Finding]) {
        self.findings += findings.len();
        for fix in findings.iter().filter_map(|f| f.located.diagnostic.fix.as_ref()) {
            *(if fix.safety == Safety::Safe { &mut self.safe } else { &mut self.unsafe_ }) += 1;
        }
    }

    /// The errors, the closing line and the timings on standard error; the exit code.
    fn close(self, errors: &[String], baseline_note: &str, exit_zero: bool) -> anyhow::Result<ExitCode> {
        let mut err = anstream::stderr();
        for e in errors {
            writeln!(err, "error: {e}")?;
        }
        let Tally { files, findings, safe, unsafe_ } = self;
        writeln!(
            err,
            "{files} files checked: {findings} findings{baseline_note} ({safe} fixable with `xla2tpu migrate --write`, {unsafe_} more with `--unsafe-fixes`){}",
            if errors.is_empty() { String::new() } else { format!("; {} errors", errors.len()) }
        )?;
        if let Some(timings) = crate::timings::report() {
            writeln!(err, "{timings}")?;
        }
        Ok(finish(errors, findings > 0, exit_zero))
    }
}

/// 2 on errors, else 1 on findings (unless `--exit-zero`), else 0.
fn finish(errors: &[String], findings: bool, exit_zero: bool) -> ExitCode {
    if !errors.is_empty() {
        ExitCode::from(2)
    } else if findings && !exit_zero {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

pub fn rule(args: RuleArgs) -> anyhow::Result<ExitCode> {
    // Without --rules, the rules configured for the working directory.
    let rules = match &args.rules {
        Some(dir) => Arc::new(RuleSet::load(std::slice::from_ref(dir))?),
        None => Resolver::new(Overrides::default())?.global()?.rules.clone(),
    };
    let mut out = anstream::stdout();
    match args.code {
        Some(code) => {
            let rule = rules.by_code(&code).with_context(|| format!("no rule {code}; `xla2tpu rule` lists them"))?;
            writeln!(out, "# {} ({})\n", rule.code, rule.name)?;
            writeln!(out, "{}\n", rule.help)?;
            let fix = match rule.fixes.iter().map(|f| f.safety).min() {
                Some(Safety::Safe) => "Fix: safe (applied by `migrate`)",
                Some(Safety::Unsafe) => "Fix: unsafe (applied by `migrate --unsafe-fixes`)",
                None => "Fix: none (reported with guidance)",
            };
            if let Some(range) = &rule.torchtpu {
                writeln!(out, "Applies to TorchTPU {range}\n")?;
            }
            if rule.opt_in {
                let family = &rule.code[..rule.code.len() - 1];
                writeln!(
                    out,
                    "Opt-in: enabled only when named (`--extend-select {family}` or `{}`), not by `ALL`\n",
                    rule.code
                )?;
            }
            writeln!(out, "{fix}\n\n{}", rule.explanation.trim_end())?;
            if let Some(changes) = &rule.changes {
                writeln!(out, "\nWhat behaves differently after the fix: {}", changes.trim_end())?;
            }
        }
        None => {
            let mut sorted: Vec<_> = rules.rules.iter().collect();
            sorted.sort_by(|a, b| a.code.cmp(&b.code));
            for r in sorted {
                let fix = match r.fixes.iter().map(|f| f.safety).min() {
                    Some(Safety::Safe) => "safe  ",
                    Some(Safety::Unsafe) => "unsafe",
                    None => "manual",
                };
                let help = if r.opt_in { format!("(opt-in) {}", r.help) } else { r.help.clone() };
                writeln!(out, "{}  {fix}  {:<22} {help}", r.code, r.name)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
