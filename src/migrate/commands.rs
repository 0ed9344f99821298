//! `migrate`, `check` and `rule`: files in, diffs and diagnostics out.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use rayon::prelude::*;

use crate::discover::{Input, discover};
use crate::migrate::checker::Diagnostic;
use crate::migrate::render::{self, Finding};
use crate::migrate::rules::{RuleSet, Safety};
use crate::migrate::{self, Problem, Selection};
use crate::source::{LineIndex, SourceFile};

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
    /// Only these rule codes or prefixes (e.g. `TPU1,TPU214`).
    #[arg(long, value_delimiter = ',')]
    pub select: Vec<String>,
    /// Skip these rule codes or prefixes.
    #[arg(long, value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// A directory of extra rule files (`*.yaml`) to load after the built-in ones.
    #[arg(long, value_name = "DIR")]
    pub rules: Option<PathBuf>,
    /// Also walk files that .gitignore, hidden directories or virtualenvs would hide.
    #[arg(long)]
    pub no_ignore: bool,
    #[arg(long, value_enum, default_value_t)]
    pub color: ColorChoice,
}

#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Write the changes to the files instead of printing a diff.
    #[arg(long)]
    pub write: bool,
    /// Also apply fixes whose behaviour may differ (see each rule's explanation).
    #[arg(long)]
    pub unsafe_fixes: bool,
}

#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub enum OutputFormat {
    /// Code frames with help (miette).
    #[default]
    Full,
    /// One line per finding.
    Concise,
    Json,
    /// GitHub Actions annotations.
    Github,
    Sarif,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[arg(long, value_enum, default_value_t)]
    pub output_format: OutputFormat,
    /// Exit 0 even when there are findings.
    #[arg(long)]
    pub exit_zero: bool,
}

#[derive(Debug, clap::Args)]
pub struct RuleArgs {
    /// A rule code (e.g. TPU110); omit to list every rule.
    pub code: Option<String>,
    /// Extra rule files to load, as for migrate/check.
    #[arg(long, value_name = "DIR")]
    pub rules: Option<PathBuf>,
}

/// A file that could be read and decoded.
struct Loaded {
    input: Input,
    source: SourceFile,
}

/// Read every input; unreadable ones become error lines and the run goes on.
fn load_all(common: &CommonArgs, errors: &mut Vec<String>) -> Vec<Loaded> {
    let found = discover(&common.paths, common.no_ignore);
    errors.extend(found.errors.iter().map(|(p, e)| format!("{p}: {e}")));
    let results: Vec<(Input, Result<SourceFile, String>)> = found
        .inputs
        .into_par_iter()
        .map(|input| {
            let result = match &input {
                Input::Stdin => {
                    let mut bytes = Vec::new();
                    std::io::stdin()
                        .read_to_end(&mut bytes)
                        .map_err(|e| e.to_string())
                        .and_then(|_| SourceFile::from_bytes(PathBuf::from("-"), bytes).map_err(|e| e.to_string()))
                }
                Input::File(path) => SourceFile::read(path).map_err(|e| e.to_string()),
            };
            (input, result)
        })
        .collect();
    let mut loaded = Vec::new();
    for (input, result) in results {
        match result {
            Ok(source) => loaded.push(Loaded { input, source }),
            Err(e) => errors.push(format!("{}: {e}", input.display())),
        }
    }
    loaded
}

fn selection(common: &CommonArgs, unsafe_fixes: bool) -> Selection {
    Selection { select: common.select.clone(), ignore: common.ignore.clone(), unsafe_fixes }
}

fn describe_problem(path: &str, text: &str, problem: &Problem) -> String {
    match problem {
        Problem::Syntax(e) => {
            let (line, col) = LineIndex::new(text).line_col(text, e.location.start());
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
    let rules = RuleSet::load(args.common.rules.as_deref())?;
    let selection = selection(&args.common, args.unsafe_fixes);
    let mut errors = Vec::new();
    let loaded = load_all(&args.common, &mut errors);
    let color = args.common.color.enabled(std::io::stdout().is_terminal());

    let results: Vec<(Loaded, migrate::Migration)> = loaded
        .into_par_iter()
        .map(|l| {
            let m = migrate::migrate_isolated(&l.source.text, &rules, &selection);
            (l, m)
        })
        .collect();

    let mut stdout = anstream::stdout();
    let (mut changed, mut written) = (0usize, 0usize);
    let mut applied: BTreeMap<String, usize> = BTreeMap::new();
    let mut manual: Vec<String> = Vec::new();
    let mut unsafe_available = 0usize;
    let mut warnings = Vec::new();
    for (l, m) in &results {
        let path = l.input.display();
        if let Some(problem) = &m.problem {
            let line = describe_problem(&path, &l.source.text, problem);
            match problem {
                Problem::NoConvergence { .. } => warnings.push(line),
                _ => {
                    errors.push(line);
                    continue;
                }
            }
        }
        // Locations refer to the user's file as it was, not to the rewritten text.
        let lines = LineIndex::new(&l.source.text);
        for r in &m.reverted {
            let (line, col) = lines.line_col(&l.source.text, r.offset);
            warnings.push(format!(
                "{path}:{line}:{col}: internal error: the {} fix was not applied because {}; the rest of the file was migrated. Please report this with the file.",
                r.rule, r.reason
            ));
        }
        let import_rule = rules.builtin(crate::migrate::rules::Builtin::Import);
        for d in &m.remaining {
            // An import kept because its names are still used is a consequence, not a task.
            if Some(d.rule) == import_rule
                && d.fix.is_none()
                && d.note.as_deref().is_some_and(|n| n.contains("still used"))
            {
                continue;
            }
            match &d.fix {
                Some(f) if f.safety == Safety::Unsafe => unsafe_available += 1,
                _ => {
                    let (line, col) = lines.line_col(&l.source.text, m.original_offset(d.range.start()));
                    let note = d.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
                    manual.push(format!("{path}:{line}:{col}: {} {}{note}", rules.rules[d.rule].code, d.message));
                }
            }
        }
        if m.output == l.source.text {
            if args.write && l.input == Input::Stdin {
                // As a filter, `--write -` always prints the (unchanged) source.
                stdout.write_all(&l.source.encode(&m.output))?;
            }
            continue;
        }
        changed += 1;
        for (code, n) in &m.applied {
            *applied.entry(code.clone()).or_default() += n;
        }
        match (&l.input, args.write) {
            (Input::Stdin, true) => stdout.write_all(&l.source.encode(&m.output))?,
            (Input::File(p), true) => match crate::write::replace(p, &l.source.encode(&m.output)) {
                Ok(()) => written += 1,
                Err(e) => errors.push(format!("{path}: {e:#}")),
            },
            (_, false) => write!(stdout, "{}", render::unified_diff(&path, &l.source.text, &m.output, color))?,
        }
    }
    stdout.flush()?;

    let mut err = anstream::stderr();
    for w in &warnings {
        writeln!(err, "warning: {w}")?;
    }
    for e in &errors {
        writeln!(err, "error: {e}")?;
    }
    if !manual.is_empty() {
        writeln!(err, "Left for manual migration:")?;
        for m in &manual {
            writeln!(err, "  {m}")?;
        }
    }
    let fixes: usize = applied.values().sum();
    let by_rule: Vec<String> = applied.iter().map(|(c, n)| format!("{c} ×{n}")).collect();
    let verb = if args.write { "changed" } else { "would change" };
    writeln!(
        err,
        "{} files scanned, {changed} {verb}{}; {fixes} fixes{}; {} items need manual migration{}{}",
        results.len(),
        if args.write { format!(" ({written} written)") } else { String::new() },
        if by_rule.is_empty() { String::new() } else { format!(" ({})", by_rule.join(", ")) },
        manual.len(),
        if unsafe_available > 0 {
            format!("; {unsafe_available} unsafe fixes available with --unsafe-fixes")
        } else {
            String::new()
        },
        if errors.is_empty() { String::new() } else { format!("; {} files skipped with errors", errors.len()) },
    )?;
    Ok(if errors.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

pub fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let rules = RuleSet::load(args.common.rules.as_deref())?;
    let selection = selection(&args.common, false);
    let mut errors = Vec::new();
    let loaded = load_all(&args.common, &mut errors);
    let color = args.common.color.enabled(std::io::stdout().is_terminal());

    let results: Vec<(Loaded, Result<Vec<Diagnostic>, String>)> = loaded
        .into_par_iter()
        .map(|l| {
            let path = l.input.display();
            let r = match crate::isolate::catch(|| {
                migrate::fault_injection_point(&l.source.text);
                migrate::lint(&l.source.text, &rules, &selection)
            }) {
                Ok(Ok((d, _))) => Ok(d),
                Ok(Err(e)) => Err(describe_problem(&path, &l.source.text, &Problem::Syntax(e))),
                Err(panic) => Err(describe_problem(&path, &l.source.text, &Problem::Internal(panic))),
            };
            (l, r)
        })
        .collect();

    let paths: Vec<String> = results.iter().map(|(l, _)| l.input.display()).collect();
    let indexes: Vec<LineIndex> = results.iter().map(|(l, _)| LineIndex::new(&l.source.text)).collect();
    let mut findings = Vec::new();
    for (i, (l, r)) in results.iter().enumerate() {
        match r {
            Ok(diags) => findings.extend(diags.iter().map(|d| Finding {
                path: &paths[i],
                text: &l.source.text,
                lines: &indexes[i],
                diagnostic: d,
                rule: &rules.rules[d.rule],
            })),
            Err(e) => errors.push(e.clone()),
        }
    }
    let out = match args.output_format {
        OutputFormat::Full => render::full(&findings, color),
        OutputFormat::Concise => render::concise(&findings),
        OutputFormat::Json => render::json(&findings),
        OutputFormat::Github => render::github(&findings),
        OutputFormat::Sarif => render::sarif(&findings, &rules),
    };
    let mut stdout = anstream::stdout();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()?;

    let mut err = anstream::stderr();
    for e in &errors {
        writeln!(err, "error: {e}")?;
    }
    let safe = findings.iter().filter(|f| f.diagnostic.fix.as_ref().is_some_and(|x| x.safety == Safety::Safe)).count();
    let unsafe_ =
        findings.iter().filter(|f| f.diagnostic.fix.as_ref().is_some_and(|x| x.safety == Safety::Unsafe)).count();
    writeln!(
        err,
        "{} files checked: {} findings ({safe} fixable with `xla2tpu migrate --write`, {unsafe_} more with `--unsafe-fixes`){}",
        results.len(),
        findings.len(),
        if errors.is_empty() { String::new() } else { format!("; {} errors", errors.len()) }
    )?;
    Ok(if !errors.is_empty() {
        ExitCode::from(2)
    } else if !findings.is_empty() && !args.exit_zero {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn rule(args: RuleArgs) -> anyhow::Result<ExitCode> {
    let rules = RuleSet::load(args.rules.as_deref())?;
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
            writeln!(out, "{fix}\n\n{}", rule.explanation.trim_end())?;
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
                writeln!(out, "{}  {fix}  {:<22} {}", r.code, r.name, r.help)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
