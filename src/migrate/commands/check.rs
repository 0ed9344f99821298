//! `check`: each input's findings, filtered by noqa and the baseline, in the chosen format.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use ruff_python_ast::token::TokenKind;
use ruff_text_size::{Ranged, TextRange, TextSize};

use super::args::{CheckArgs, flag};
use super::files::*;
use super::migrate::{MigrateRun, run_migrate};
use crate::baseline::{Anchor, Baseline, Entry};
use crate::config::{Resolver, Settings};
use crate::discover::Input;
use crate::migrate::diagnostic::Diagnostic;
use crate::migrate::facts::RunFacts;
use crate::migrate::project;
use crate::migrate::render::{self, Finding, Located, OutputFormat};
use crate::migrate::rules::{Builtin, Rule, RuleId, RuleSet, Safety};
use crate::migrate::target::Kind;
use crate::migrate::{self, Problem, Selection};
use crate::noqa::{Additions, Known, Noqa};
use crate::output::{OutputFile, count};
use crate::source::LineIndex;
use crate::timings::{Phase, time};

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
