//! `migrate`, `check` and `rule`: files in, diffs and diagnostics out.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
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
use crate::output::{ColorChoice, OutputFile, count};
use crate::source::{LineIndex, SourceFile};
use crate::timings::{Phase, time};

/// Rules of `rules/gate.yaml` that no matcher finds: `check` reports them itself.

#[derive(Debug, clap::Args)]
pub struct CommonArgs {
    /// Files or directories to process (`-` reads standard input) [default: .]
    pub paths: Vec<PathBuf>,
    /// Read standard input as this file: its name decides how it is read (`requirements.txt`,
    /// a notebook, …), which configuration applies and what findings show.
    #[arg(long, value_name = "PATH")]
    pub stdin_filename: Option<PathBuf>,

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

    /// Colour the output: auto colours a terminal, unless NO_COLOR is set; FORCE_COLOR or
    /// CLICOLOR_FORCE colour wherever it goes.
    #[arg(long, value_enum, default_value_t, help_heading = "Output")]
    pub color: ColorChoice,
    /// Print the findings (or the diff) and errors, nothing else: no warnings, no summary.
    #[arg(short, long, conflicts_with = "verbose", help_heading = "Output")]
    pub quiet: bool,
    /// Also name every file as it is done, and where the run's time went.
    #[arg(short, long, help_heading = "Output")]
    pub verbose: bool,
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
    /// What the command line leaves to defaults, settled once: `.` when no path is given
    /// (standard input with `--stdin-filename`), and the colour of the standard streams.
    fn settle(&mut self) {
        if self.paths.is_empty() {
            self.paths.push(PathBuf::from(if self.stdin_filename.is_some() { "-" } else { "." }));
        }
        self.color.apply();
    }

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
            outputs: Vec::new(),
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
    /// and totals (Markdown for `.md`, JSON for `.json`). It replaces only an earlier report.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 no findings, 1 findings (new ones with --baseline), 2 usage, configuration or I/O error.

Examples:
  xla2tpu check src/                                      findings with code frames
  xla2tpu check --output-format sarif -o xla2tpu.sarif    for GitHub code scanning
  xla2tpu check --fix src/                                apply the safe fixes, then report the rest
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
    /// Write the findings (or statistics) to this file instead of standard output. It replaces
    /// only an earlier report and is never checked itself.
    #[arg(short, long, value_name = "FILE", help_heading = "Output")]
    pub output_file: Option<PathBuf>,
    /// Print the number of findings per rule instead of the findings.
    #[arg(long, help_heading = "Output")]
    pub statistics: bool,
    /// Print the diff `migrate` would apply instead of the findings; exit 1 if there is one.
    #[arg(long, conflicts_with_all = ["statistics", "add_noqa", "baseline", "write_baseline"], help_heading = "Output")]
    pub diff: bool,
    /// Apply the safe fixes first, as `xla2tpu migrate --write` does, then report what is left.
    #[arg(long, conflicts_with_all = ["diff", "add_noqa", "write_baseline"], help_heading = "Output")]
    pub fix: bool,
    /// With --diff or --fix: include the unsafe fixes.
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
        Input::Stdin(name) => {
            let bytes = crate::source::read_limited(std::io::stdin().lock()).map_err(|e| failed(&e))?;
            SourceFile::from_bytes(name.clone().unwrap_or_else(|| PathBuf::from("-")), bytes)
        }
        Input::File(path) => time(Phase::Read, || SourceFile::read(path)),
    }
    .map_err(|e| failed(&e))?;
    if cfg!(debug_assertions) && source.text.contains(migrate::PANIC_ON_READ_MARKER) {
        panic!("fault injected for testing");
    }
    let settings = time(Phase::Walk, || match input.name() {
        None => resolver.global(),
        Some(path) => resolver.for_path(path),
    })
    .map_err(|e| failed(&e))?;
    let mut selection = settings.selection(&resolver.absolute(input.name().unwrap_or(Path::new("-"))));
    selection.run = Some(run.clone());
    // Unknown names (and standard input without one) are Python.
    let kind = input.name().and_then(Kind::of).unwrap_or(Kind::Python);
    // Only a file that would be parsed: one no rule can match costs a scan of its text.
    if kind.is_python()
        && source.text.len() > crate::source::MAX_PYTHON_BYTES
        && (selection.parse_every_file || migrate::may_match(&source.text, &settings.rules, &selection))
    {
        return Err(failed(&format_args!(
            "{:.1} MiB of Python is over the {} MiB limit for one file (parsing takes about 60 times that in memory); skipped",
            source.text.len() as f64 / f64::from(1 << 20),
            crate::source::MAX_PYTHON_BYTES >> 20
        )));
    }
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

pub fn migrate(mut args: MigrateArgs) -> anyhow::Result<ExitCode> {
    args.common.settle();
    let report = args.report.as_deref().map(claim_report).transpose()?;
    let mut overrides = args.common.overrides(flag(args.unsafe_fixes, args.no_unsafe_fixes), None);
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
struct MigrateRun {
    write: bool,
    /// Exit 1 when a file was (or would be) changed.
    exit_non_zero_on_fix: bool,
    report: Option<OutputFile>,
    /// `check --fix`: the check that follows lists what is left, so only the summary is said.
    before_check: bool,
}

/// `migrate`, `check --diff` (never writes, exits 1 on a change) and `check --fix`.
fn run_migrate(common: &CommonArgs, overrides: Overrides, how: MigrateRun) -> anyhow::Result<ExitCode> {
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
        written += usize::from(r.written);
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

/// The warning for a run that found no file to read: a gate pointed at the wrong directory
/// would otherwise pass in silence.
fn nothing_found(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    format!(
        "no file xla2tpu reads in {} (Python, notebooks, requirements, pyproject.toml, setup.cfg, environment.yml, shell scripts, Dockerfiles, YAML, JSON): nothing was checked",
        shown.join(", ")
    )
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
    out.warnings.extend(unchecked_parts(&l, &path));
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
        return out;
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
    /// `--stdin-filename`: the name standard input is read as.
    stdin_name: Option<PathBuf>,
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
    let input = input.named(mode.stdin_name.as_deref());
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
    let checked = check_file(&l, mode.add_noqa);
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
    if let Some(additions) = &checked.noqa {
        add_noqa(&l, additions, &mut out);
    }
    out.settings = Some(l.settings);
    out
}

/// `--add-noqa`: write the directives, warn about findings no line can take one for, and keep
/// only those (and all, if the file could not be written) as the file's findings.
fn add_noqa(l: &Loaded, additions: &Additions, out: &mut FileCheck) {
    let Input::File(path) = &l.input else { return };
    let text = &l.source.text;
    let lines = LineIndex::new(text);
    for range in &additions.unplaceable {
        let (line, col) = lines.line_col(text, range.start());
        let why = match l.kind {
            Kind::Json => "JSON has no comments (use per-file-ignores)",
            _ => "no line of this finding can end with a comment",
        };
        out.warnings.push(format!("{}:{line}:{col}: {why}; not suppressed", path.display()));
    }
    if !additions.edits.is_empty() {
        let new = additions.apply(text);
        // A directive in another kind's syntax must leave the file loading as before, and
        // silence what it was added for; otherwise the file is left as it is.
        if !l.kind.is_python() {
            let left = project::lint(l.kind, &new, l.rules(), &l.selection);
            if !left.is_ok_and(|left| left.len() <= additions.unplaceable.len()) {
                out.warnings.push(format!(
                    "{}: a `# noqa` comment here would change what the file says; no directive added",
                    path.display()
                ));
                return;
            }
        }
        match crate::write::replace_if_unchanged(path, &l.source.encode(text), &l.source.encode(&new)) {
            Ok(()) => out.noqa_added = additions.edits.len(),
            Err(e) => return out.error = Some(format!("{}: {e:#}", path.display())),
        }
    }
    out.findings.retain(|f| additions.unplaceable.contains(&f.diagnostic.range));
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
    let project::Findings { kept: mut found, all, noqa } = match crate::isolate::catch(|| {
        project::lint_all(kind, text, rules, &l.selection)
    }) {
        Ok(Ok(found)) => found,
        Ok(Err(e)) if !kind.owned_by_project() => return out.warnings.push(format!("{}: {e}; file skipped", out.path)),
        Ok(Err(e)) => return out.error = Some(format!("{}: {e}; file skipped", out.path)),
        Err(panic) => return out.error = Some(describe_problem(&out.path, text, &Problem::Internal(panic))),
    };
    out.warnings.extend(unchecked_parts(l, &out.path));
    let noqa = noqa.unwrap_or_default();
    let all: Vec<(TextRange, &str)> = all.iter().map(|d| (d.range, rules.rules[d.rule].code.as_str())).collect();
    let additions = mode.add_noqa.then(|| {
        let left: Vec<(TextRange, &str)> = found.iter().map(|d| (d.range, rules.rules[d.rule].code.as_str())).collect();
        crate::noqa::text_additions(kind, text, &noqa, &left)
    });
    if !mode.add_noqa {
        found.extend(unused_directives(text, &noqa, rules, &l.selection, &all));
        found.sort_by_key(|d| (d.range.start(), d.rule));
    }
    let lines = LineIndex::new(text);
    out.findings = found
        .into_iter()
        .map(|d| {
            let anchor = Anchor::new(text, &[], d.range.start());
            let rule = &rules.rules[d.rule];
            Located::new(&out.path, text, &lines, d, anchor, rule, mode.frames)
        })
        .collect();
    if let Some(additions) = &additions {
        add_noqa(l, additions, out);
    }
}

/// What of a file no handler reads, as warning lines: a Dockerfile's here-documents.
fn unchecked_parts(l: &Loaded, path: &str) -> Vec<String> {
    if l.kind != Kind::Dockerfile {
        return Vec::new();
    }
    project::launch::dockerfile::heredoc_lines(&l.source.text)
        .into_iter()
        .map(|line| {
            format!("{path}:{line}: the here-document (`<<EOF`) of this instruction is not checked; review it by hand")
        })
        .collect()
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
        // setup.py's requirements, under the guard of their own: the Python findings stand
        // either way. Its `# noqa` comments are Python's, read below.
        let (deps, deps_error): (project::Findings, _) = match l.kind {
            Kind::SetupPy => match crate::isolate::catch(|| project::lint_all(l.kind, text, rules, &l.selection)) {
                Ok(Ok(deps)) => (deps, None),
                Ok(Err(_)) => (project::Findings::default(), None),
                Err(panic) => {
                    (project::Findings::default(), Some(describe_problem(&path, text, &Problem::Internal(panic))))
                }
            },
            _ => (project::Findings::default(), None),
        };
        let (mut diagnostics, parsed, existing) = match migrate::lint(text, rules, &l.selection) {
            // Nothing can match, so there is no directive (`noqa` is one of the words) to read either.
            Ok(None) if deps.all.is_empty() => return Checked { error: deps_error, ..Checked::default() },
            Ok(None) => match ruff_python_parser::parse_module(text) {
                Ok(parsed) => {
                    let noqa = Noqa::existing(text, parsed.tokens());
                    (Vec::new(), parsed, noqa)
                }
                Err(e) => return syntax_error(l, &e),
            },
            Ok(Some(linted)) => (linted.diagnostics, linted.parsed, linted.noqa),
            Err(e) => return syntax_error(l, &e),
        };
        let tokens = parsed.tokens();
        // `--add-noqa` also needs where comments can go, which the checker's reading skips.
        let noqa = if add_noqa { Noqa::new(text, tokens) } else { existing };
        let code = |d: &Diagnostic| rules.rules[d.rule].code.as_str();
        diagnostics.extend(deps.kept);
        let mut checked = Checked { error: deps_error, ..Checked::default() };
        if add_noqa {
            let findings: Vec<(TextRange, &str)> = diagnostics.iter().map(|d| (d.range, code(d))).collect();
            checked.noqa = Some(crate::noqa::additions(text, tokens, &noqa, &findings));
        } else {
            let deps: Vec<(TextRange, &str)> = deps.all.iter().map(|d| (d.range, code(d))).collect();
            diagnostics.extend(unused_noqa(text, &noqa, rules, &l.selection, &deps));
        }
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
/// `also`: findings of other passes over the file (setup.py's requirements), which the
/// directives may be there for.
fn unused_noqa(
    text: &str,
    noqa: &Noqa,
    rules: &RuleSet,
    selection: &Selection,
    also: &[(TextRange, &str)],
) -> Vec<Diagnostic> {
    if !noqa.lists_codes() || selected(rules, Builtin::UnusedNoqa, selection).is_none() {
        return Vec::new();
    }
    // With its directives blanked out, a file may hold nothing any rule can match: then every
    // code it lists is unused.
    let Ok(linted) = migrate::lint(&noqa.mask(text), rules, selection) else {
        return Vec::new();
    };
    let all = linted.map(|l| l.diagnostics).unwrap_or_default();
    let mut findings: Vec<(TextRange, &str)> =
        all.iter().map(|d| (d.range, rules.rules[d.rule].code.as_str())).collect();
    findings.extend_from_slice(also);
    unused_directives(text, noqa, rules, selection, &findings)
}

/// TPU003 for each directive code of `noqa` that none of `findings` (every finding the file
/// would have without its directives) uses.
fn unused_directives(
    text: &str,
    noqa: &Noqa,
    rules: &RuleSet,
    selection: &Selection,
    findings: &[(TextRange, &str)],
) -> Vec<Diagnostic> {
    let Some(rule) = selected(rules, Builtin::UnusedNoqa, selection) else {
        return Vec::new();
    };
    let known = |code: &str| {
        let mut matching = rules.rules.iter().filter(|r| r.code.starts_with(code)).peekable();
        if matching.peek().is_none() {
            return if rules.is_our_family(code) { Known::Unknown } else { Known::Foreign };
        }
        if matching.any(|r| selection.enabled(&r.code)) { Known::Enabled } else { Known::Disabled }
    };
    noqa.unused(text, findings, &known)
        .into_iter()
        .map(|u| Diagnostic { rule, range: u.range, message: u.message(), note: None, fix: None })
        .collect()
}

pub fn check(mut args: CheckArgs) -> anyhow::Result<ExitCode> {
    args.common.settle();
    let unsafe_fixes = flag(args.unsafe_fixes, args.no_unsafe_fixes);
    let mut overrides = args.common.overrides(unsafe_fixes, args.output_format);
    if args.diff {
        let run = MigrateRun { write: false, exit_non_zero_on_fix: true, report: None, before_check: false };
        return run_migrate(&args.common, overrides, run);
    }
    let mut out = anstream::stdout();
    if args.show_settings {
        let path = args.common.paths.first().map_or(Path::new("."), PathBuf::as_path);
        // A setting shown for a file that is not there would describe nothing.
        let meta =
            std::fs::metadata(path).with_context(|| format!("cannot show the settings of {}", path.display()))?;
        let resolver = Resolver::new(overrides)?;
        let settings = if meta.is_dir() { resolver.for_dir(path)? } else { resolver.for_path(path)? };
        out.write_all(settings.describe(path, &path.display().to_string()).as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    let stdin = args.common.paths.iter().any(|p| p.as_os_str() == "-");
    if stdin && (args.add_noqa || args.fix) {
        bail!(
            "{} edits files in place; it cannot take standard input (as a filter: `xla2tpu migrate --write -`)",
            if args.fix { "--fix" } else { "--add-noqa" }
        );
    }
    // Claimed before anything is read: a refused output costs nothing, and neither it nor a
    // redirected standard output is read back as an input.
    let output = args
        .output_file
        .as_deref()
        .map(|path| OutputFile::claim(path, "report of xla2tpu check", render::is_earlier_output))
        .transpose()?;
    let baseline_out = args
        .write_baseline
        .as_deref()
        .map(|path| OutputFile::claim(path, "xla2tpu baseline", Baseline::is_baseline))
        .transpose()?;
    overrides.outputs.extend(
        [&output, &baseline_out].into_iter().flatten().filter_map(|o| o.id).chain(crate::output::stdout_file()),
    );
    // `--fix`: what `migrate --write` does, then the check of what is left.
    let fixed = match args.fix {
        true => {
            let run = MigrateRun { write: true, exit_non_zero_on_fix: false, report: None, before_check: true };
            Some(run_migrate(&args.common, overrides.clone(), run)?)
        }
        false => None,
    };
    let resolver = Arc::new(Resolver::new(overrides)?);
    let mut errors = Vec::new();
    if args.show_files {
        for input in discover_all(&args.common, &resolver, &mut errors) {
            crate::output::tolerate_closed_reader(writeln!(out, "{}", input.display()))?;
        }
        return Ok(finish(&errors, false, false));
    }
    let baseline = args.baseline.as_deref().map(Baseline::read).transpose()?;
    let format = resolver.global()?.output_format.unwrap_or_default();
    // A file gets no escapes; a terminal (or FORCE_COLOR) gets colour.
    let color = output.is_none() && crate::output::stdout_colored();
    let mode = CheckMode {
        add_noqa: args.add_noqa,
        frames: (format == OutputFormat::Full && !args.statistics).then_some(color),
        stdin_name: args.common.stdin_filename.clone(),
    };
    let mut report = Report { file: output, buffer: Vec::new(), stdout: out, reader_gone: false };
    let say = Say { quiet: args.common.quiet, verbose: args.common.verbose, paths: &args.common.paths };
    // `check --fix` fails when the fixes could not be written, whatever is left.
    let exit_zero = args.exit_zero;
    let fix_failed = fixed.is_some_and(|code| code != ExitCode::SUCCESS);

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
        let mut err = anstream::stderr();
        let (mut tally, mut file_errors, mut written) = (Tally::default(), Vec::new(), Ok(()));
        let walk_errors = process_in_order(
            &args.common,
            &resolver,
            |input| check_input(input, &resolver, &run, &mode),
            |f: FileCheck| {
                say.file(&mut err, &f);
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
                    written = report.write(text.as_bytes());
                }
            },
        );
        written?;
        report.finish()?;
        errors.extend(walk_errors.into_iter().chain(file_errors));
        return tally.close(&errors, "", exit_zero, &say).map(|code| if fix_failed { ExitCode::from(2) } else { code });
    }
    let files = process_all(&args.common, &resolver, &mut errors, |input| check_input(input, &resolver, &run, &mode));
    let mut err = anstream::stderr();
    for f in &files {
        say.file(&mut err, f);
        errors.extend(f.error.clone());
    }
    let loaded: Vec<&FileCheck> = files.iter().filter(|f| f.settings.is_some()).collect();

    if args.add_noqa {
        for e in &errors {
            writeln!(err, "error: {e}")?;
        }
        let added: usize = files.iter().map(|f| f.noqa_added).sum();
        let edited = files.iter().filter(|f| f.noqa_added > 0).count();
        // What no comment could silence is still a finding: listed, and the run fails on it.
        let left: Vec<Finding> = loaded
            .iter()
            .flat_map(|f| f.findings.iter().map(|located| (*f, located)))
            .map(|(f, located)| Finding { path: &f.path, located, rule: &f.rules().rules[located.diagnostic.rule] })
            .collect();
        report.write(render::report(format, &left, &[]).as_bytes())?;
        report.finish()?;
        let mut line = format!("Added {} to {}", count(added, "noqa directive"), count(edited, "file"));
        if !left.is_empty() {
            line += &format!("; {} could not be silenced by a comment (listed above)", count(left.len(), "finding"));
        }
        if !args.common.quiet {
            writeln!(err, "{line}.")?;
        }
        return Ok(finish(&errors, !left.is_empty(), exit_zero));
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

    if let Some(file) = &baseline_out {
        let mut baseline = Baseline::empty(&file.path);
        baseline.extend(entries(&baseline));
        file.write(baseline.to_json().as_bytes())?;
        for e in &errors {
            writeln!(err, "error: {e}")?;
        }
        if !args.common.quiet {
            writeln!(
                err,
                "{} checked: wrote {} to {}",
                count(loaded.len(), "file"),
                count(baseline.len(), "finding"),
                file.path.display()
            )?;
        }
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
                "; {} gone: rewrite it with --write-baseline to shrink it",
                if comparison.gone == 1 {
                    "1 baseline entry is".to_string()
                } else {
                    format!("{} baseline entries are", comparison.gone)
                }
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
    let text = time(Phase::Render, || {
        if args.statistics {
            render::statistics(&findings, matches!(format, OutputFormat::Json | OutputFormat::JsonLines))
        } else {
            render::report(format, &findings, &rules)
        }
    });
    report.write(text.as_bytes())?;
    report.finish()?;

    let mut tally = Tally { files: loaded.len(), ..Tally::default() };
    tally.count(&findings);
    tally.close(&errors, &baseline_note, exit_zero, &say).map(|code| if fix_failed { ExitCode::from(2) } else { code })
}

/// Where `check` prints its report: standard output, where a reader that stopped reading ends
/// the printing but not the run, or the `--output-file`, written whole at the end.
struct Report {
    file: Option<OutputFile>,
    buffer: Vec<u8>,
    stdout: anstream::Stdout,
    reader_gone: bool,
}

impl Report {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.file.is_some() {
            self.buffer.extend_from_slice(bytes);
        } else if !self.reader_gone {
            match self.stdout.write_all(bytes) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => self.reader_gone = true,
                other => other?,
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        match &self.file {
            Some(file) => file.write(&self.buffer),
            None if self.reader_gone => Ok(()),
            None => Ok(crate::output::tolerate_closed_reader(self.stdout.flush())?),
        }
    }
}

/// What `check` says on standard error besides its report: `-q` only errors, `-v` also each file.
struct Say<'a> {
    quiet: bool,
    verbose: bool,
    paths: &'a [PathBuf],
}

impl Say<'_> {
    /// A file's warnings (and, verbose, its name) as it is done.
    fn file(&self, err: &mut impl Write, f: &FileCheck) {
        if self.verbose && f.settings.is_some() {
            let _ = writeln!(err, "{}", f.path);
        }
        if !self.quiet {
            for w in &f.warnings {
                let _ = writeln!(err, "warning: {w}");
            }
        }
    }
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
    fn close(self, errors: &[String], baseline_note: &str, exit_zero: bool, say: &Say) -> anyhow::Result<ExitCode> {
        let mut err = anstream::stderr();
        for e in errors {
            writeln!(err, "error: {e}")?;
        }
        let Tally { files, findings, safe, unsafe_ } = self;
        if !say.quiet {
            writeln!(
                err,
                "{} checked: {}{baseline_note} ({safe} fixable with `xla2tpu check --fix` or `xla2tpu migrate --write`, {unsafe_} more with `--unsafe-fixes`){}",
                count(files, "file"),
                count(findings, "finding"),
                if errors.is_empty() { String::new() } else { format!("; {}", count(errors.len(), "error")) }
            )?;
            if files == 0 && errors.is_empty() {
                writeln!(err, "warning: {}", nothing_found(say.paths))?;
            }
        }
        if let Some(timings) = crate::timings::report().or_else(|| say.verbose.then(crate::timings::breakdown)) {
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
