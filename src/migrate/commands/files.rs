//! What `migrate` and `check` share: finding the files, loading each under the per-file guard,
//! and handing results to the printer in input order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use super::args::CommonArgs;
use crate::config::{Resolver, Settings};
use crate::discover::{Input, discover, discover_each};
use crate::migrate::facts::RunFacts;
use crate::migrate::project;
use crate::migrate::reader::Reader;
use crate::migrate::rules::RuleSet;
use crate::migrate::target::Kind;
use crate::migrate::{self, Problem, Selection};
use crate::source::{LineIndex, SourceFile};
use crate::timings::{Phase, time};

/// A file that could be read and decoded, with what applies to it.
pub(super) struct Loaded {
    pub(super) input: Input,
    /// How it is read: by its name; standard input and unknown names are Python.
    pub(super) kind: Kind,
    pub(super) source: SourceFile,
    pub(super) settings: Arc<Settings>,
    pub(super) selection: Selection,
}

impl Loaded {
    pub(super) fn rules(&self) -> &RuleSet {
        &self.settings.rules
    }
}

/// What the run's files establish together, gathered by a second walk only if a file asks.
pub(super) fn run_facts(common: &CommonArgs, resolver: &Arc<Resolver>) -> Arc<RunFacts> {
    let paths = common.paths.clone();
    // Weak: the facts live in every file's selection, the resolver in the run.
    let resolver = Arc::downgrade(resolver);
    Arc::new(RunFacts::walking(Reader, move |visit| {
        let Some(resolver) = resolver.upgrade() else { return };
        discover_each(&paths, resolver.no_ignore(), resolver.clone(), |input| {
            if let Input::File(p) = input {
                visit(p);
            }
        });
    }))
}

/// The files to process; undiscoverable or excluded ones become error lines and the run goes on.
pub(super) fn discover_all(common: &CommonArgs, resolver: &Arc<Resolver>, errors: &mut Vec<String>) -> Vec<Input> {
    let found = discover(&common.paths, resolver.no_ignore(), resolver.clone());
    errors.extend(found.errors.iter().map(|(p, e)| format!("{p}: {e}")));
    found.inputs
}

/// Run `work` on every input on the thread pool while the walk is still going; undiscoverable
/// or excluded paths become error lines. Results come back in input order, so output is the
/// same whatever the scheduling, and each holds only what the report needs.
pub(super) fn process_all<T: Send + Isolated>(
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
pub(super) fn process_in_order<T: Send + Isolated>(
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
pub(super) trait Isolated {
    fn internal_error(input: &Input, panic: crate::isolate::Panic) -> Self;
}

/// `work` on one input, under the per-file guard: every pass of every file kind runs inside it.
pub(super) fn guarded<T: Isolated>(input: Input, work: impl Fn(Input) -> T) -> T {
    let shown = input.clone();
    crate::isolate::catch(|| work(input)).unwrap_or_else(|panic| T::internal_error(&shown, panic))
}

pub(super) fn internal_error_line(input: &Input, panic: &crate::isolate::Panic) -> String {
    format!("{}: internal error, file left unchanged: {panic}. Please report this with the file.", input.display())
}

/// Marks [`Finished::all`] when dropped, on unwinding too.
pub(super) struct AllDone<'a, T> {
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
pub(super) struct Finished<T> {
    waiting: BTreeMap<usize, T>,
    /// The index the printer takes next.
    next: usize,
    /// Every input is done.
    all: bool,
}

pub(super) fn load(input: Input, resolver: &Resolver, run: &Arc<RunFacts>) -> Result<Loaded, String> {
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

pub(super) fn syntax_location(text: &str, e: &ruff_python_parser::ParseError) -> (usize, usize) {
    LineIndex::new(text).line_col(text, e.location.start())
}

pub(super) fn describe_problem(path: &str, text: &str, problem: &Problem) -> String {
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

/// The warning for a run that found no file to read: a gate pointed at the wrong directory
/// would otherwise pass in silence.
pub(super) fn nothing_found(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    format!(
        "no file xla2tpu reads in {} (Python, notebooks, requirements, pyproject.toml, setup.cfg, environment.yml, shell scripts, Dockerfiles, YAML, JSON): nothing was checked",
        shown.join(", ")
    )
}

/// What of a file no handler reads, as warning lines: a Dockerfile's here-documents.
pub(super) fn unchecked_parts(l: &Loaded, path: &str) -> Vec<String> {
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
