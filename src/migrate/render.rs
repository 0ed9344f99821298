//! Output: unified diffs, miette diagnostics and machine formats for CI.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use miette::{Diagnostic as MietteDiagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, SourceSpan};
use owo_colors::OwoColorize;
use ruff_text_size::{TextRange, TextSize};
use serde_json::{Value, json};

use crate::baseline::{Anchor, fingerprints};
use crate::migrate::diagnostic::Diagnostic;
use crate::migrate::rules::{Builtin, Rule, Safety};
use crate::source::LineIndex;

/// How `check` prints its findings (`--output-format`, `output-format` in the configuration).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputFormat {
    /// Code frames with help.
    #[default]
    Full,
    /// One line per finding: `path:line:col: CODE message`.
    Concise,
    /// A JSON array of findings, with their fixes.
    Json,
    /// One JSON object per finding, one per line.
    JsonLines,
    /// GitHub Actions annotations (`::error ...`).
    Github,
    /// GitLab Code Quality report (JSON).
    Gitlab,
    /// SARIF 2.1.0, for code-scanning dashboards.
    Sarif,
    /// JUnit XML, one test case per finding.
    Junit,
    /// pylint's `path:line: [CODE] message`.
    Pylint,
}

impl OutputFormat {
    /// The name `--output-format` and the configuration use.
    pub fn name(self) -> String {
        use clap::ValueEnum as _;
        self.to_possible_value().map_or_else(String::new, |v| v.get_name().to_string())
    }
}

/// `findings` in `format`; SARIF also describes `rules`.
pub fn report(format: OutputFormat, findings: &[Finding], rules: &[&Rule]) -> String {
    match format {
        OutputFormat::Full => full(findings),
        OutputFormat::Concise => concise(findings),
        OutputFormat::Json => json(findings),
        OutputFormat::JsonLines => json_lines(findings),
        OutputFormat::Github => github(findings),
        OutputFormat::Gitlab => gitlab(findings),
        OutputFormat::Sarif => sarif(findings, rules),
        OutputFormat::Junit => junit(findings),
        OutputFormat::Pylint => pylint(findings),
    }
}

/// Whether a file's first bytes are an earlier report of `check`, in any output format or as
/// statistics, so that `--output-file` may replace it: nothing else is.
pub fn is_earlier_output(head: &str) -> bool {
    // Coloured output (`--color always > out.txt`) is still ours.
    let plain = anstream::adapter::strip_str(head).to_string();
    let text = plain.trim_start();
    let line = text.lines().next().unwrap_or_default();
    let is_code = |word: &str| {
        let digits = word.trim_start_matches(|c: char| c.is_ascii_uppercase());
        digits.len() < word.len() && !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
    };
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    // `path:line:col: CODE …` (concise) and `path:line: [CODE] …` (pylint).
    let located = line.match_indices(": ").any(|(at, _)| {
        let (before, rest) = (&line[..at], &line[at + 2..]);
        let word = rest.split(' ').next().unwrap_or_default();
        let mut parts = before.rsplit(':');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(col), Some(row), Some(_)) if digits(col) && digits(row) => is_code(word),
            (Some(row), Some(_), _) if digits(row) => {
                word.strip_prefix('[').and_then(|w| w.strip_suffix(']')).is_some_and(is_code)
            }
            _ => false,
        }
    });
    let full = line.split_once('(').is_some_and(|(code, rest)| is_code(code) && rest.ends_with(')'));
    let statistics = {
        let mut columns = line.split('\t');
        columns.next().is_some_and(|n| digits(n.trim())) && columns.next().is_some_and(is_code)
    };
    let json_record = |keys: &[&str]| {
        let inner = text.trim_start_matches('[').trim_start();
        inner.starts_with(']')
            || inner.strip_prefix('{').is_some_and(|r| keys.iter().any(|k| r.trim_start().starts_with(k)))
    };
    text.is_empty()
        || located
        || full
        || statistics
        || line.starts_with("::error title=xla2tpu ")
        || line.starts_with("::warning title=xla2tpu ")
        || (text.starts_with('[') && json_record(&["\"cell\":", "\"check_name\":", "\"code\":"]))
        || (text.starts_with("{\"cell\":") && line.contains("\"code\":\""))
        || (text.starts_with('{')
            && text.contains("sarif-2.1.0")
            && (text.contains("\"ruleId\": \"TPU") || text.contains("xla2tpu")))
        || (text.starts_with("<?xml") && text.contains("<testsuites name=\"xla2tpu\""))
}

/// A unified diff with `a/` and `b/` headers; coloured when `color`.
pub fn unified_diff(path: &str, old: &str, new: &str, color: bool) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    // `a//abs/path` reads badly; git-style headers want a relative-looking path.
    let path = path.trim_start_matches('/');
    let text = diff.unified_diff().context_radius(3).header(&format!("a/{path}"), &format!("b/{path}")).to_string();
    if !color {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 256);
    for line in text.split_inclusive('\n') {
        let styled = if line.starts_with("+++") || line.starts_with("---") {
            line.bold().to_string()
        } else if line.starts_with('+') {
            line.green().to_string()
        } else if line.starts_with('-') {
            line.red().to_string()
        } else if line.starts_with("@@") {
            line.cyan().to_string()
        } else {
            line.to_string()
        };
        out.push_str(&styled);
    }
    out
}

/// The diff that creates `path` holding `new` (`--- /dev/null`, as git shows a new file).
pub fn new_file_diff(path: &str, new: &str, color: bool) -> String {
    let path = path.trim_start_matches('/');
    let diff = unified_diff(path, "", new, color);
    // Only the old side's header changes: `--- a/path` becomes `--- /dev/null`.
    diff.replacen(&format!("--- a/{path}"), "--- /dev/null", 1)
}

/// A diagnostic with its positions resolved where the source was at hand (on the worker that
/// checked the file), so the source can be dropped before the report is rendered: memory holds
/// findings, not the tree.
pub struct Located {
    pub diagnostic: Diagnostic,
    /// Where it is in terms that survive edits (baselines, GitLab fingerprints).
    pub anchor: Anchor,
    /// (line, column), 1-based, columns in characters.
    pub start: (usize, usize),
    pub end: (usize, usize),
    /// Start and end of each of the fix's edits.
    pub edits: Vec<((usize, usize), (usize, usize))>,
    /// The code frame of `--output-format full`.
    pub frame: Option<String>,
    /// In a notebook, the cell (1-based) whose text `start` and `end` count lines of.
    pub cell: Option<usize>,
}

impl Located {
    /// `frame`: render the code frame (coloured or not) for `--output-format full`.
    pub fn new(
        path: &str,
        text: &str,
        lines: &LineIndex,
        diagnostic: Diagnostic,
        anchor: Anchor,
        rule: &Rule,
        frame: Option<bool>,
    ) -> Located {
        let at = |offset| lines.line_col(text, offset);
        let edits = diagnostic
            .fix
            .as_ref()
            .map(|fix| fix.edits.iter().map(|e| (at(e.range.start()), at(e.range.end()))).collect())
            .unwrap_or_default();
        let mut located = Located {
            start: at(diagnostic.range.start()),
            end: at(diagnostic.range.end()),
            diagnostic,
            anchor,
            edits,
            frame: None,
            cell: None,
        };
        if let Some(color) = frame {
            let finding = Finding { path, located: &located, rule };
            located.frame = Some(code_frame(&finding, text, lines, color));
        }
        located
    }
}

/// A finding as the renderers see it.
pub struct Finding<'a> {
    pub path: &'a str,
    pub located: &'a Located,
    pub rule: &'a Rule,
}

impl Finding<'_> {
    /// The file, and in a notebook the cell: `nb.ipynb:cell 3`, as ruff writes it.
    pub fn place(&self) -> String {
        match self.located.cell {
            Some(cell) => format!("{}:cell {cell}", self.path),
            None => self.path.to_string(),
        }
    }
    fn start(&self) -> (usize, usize) {
        self.located.start
    }
    fn end(&self) -> (usize, usize) {
        self.located.end
    }
    fn diagnostic(&self) -> &Diagnostic {
        &self.located.diagnostic
    }

    fn fix_label(&self) -> String {
        match &self.diagnostic().fix {
            Some(fix) => {
                let replacement =
                    fix.edits.iter().find(|e| e.range == self.diagnostic().range).map(|e| e.content.as_str());
                let safety = match fix.safety {
                    Safety::Safe => "fix",
                    Safety::Unsafe => "unsafe fix",
                };
                match replacement {
                    Some(r) if !r.is_empty() && !r.contains('\n') => format!("{safety}: `{r}`"),
                    _ if !fix.deletes.is_empty() => format!("{safety}: delete"),
                    _ => format!("{safety} available"),
                }
            }
            // Not a migration item: code that cannot run on the backend, or the gate's own findings.
            None if matches!(self.rule.builtin, Some(Builtin::ApiOps | Builtin::ApiOpsBackward)) => {
                "no kernel on the backend".to_string()
            }
            None if matches!(self.rule.builtin, Some(Builtin::SyntaxError | Builtin::UnusedNoqa)) => String::new(),
            None => "manual migration".to_string(),
        }
    }

    fn help(&self) -> String {
        match &self.diagnostic().note {
            Some(note) => format!("{}\nnote: {note}", self.rule.help),
            None => self.rule.help.clone(),
        }
    }
}

/// A miette report for one finding.
#[derive(Debug)]
struct Report {
    code: String,
    message: String,
    help: String,
    label: String,
    span: SourceSpan,
    /// `None` when the lines are too long to show.
    source: Option<Excerpt>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Report {}

impl MietteDiagnostic for Report {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(&self.code))
    }
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(&self.help))
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        self.source.as_ref()?;
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(Some(self.label.clone()), self.span))))
    }
}

/// The lines a frame shows (the finding's, and one of context on each side), cut out of the file
/// with their line numbers: miette only needs those, and copying or scanning a whole large file
/// per finding made rendering the serial tail of a run.
#[derive(Debug)]
struct Excerpt {
    name: String,
    text: String,
    /// Byte offset and 0-based line number of `text` in the file.
    base: usize,
    first_line: usize,
}

impl Excerpt {
    const CONTEXT: usize = 1;
    /// A frame of more than this many bytes of code is not drawn.
    const MAX_SHOWN: usize = 4096;

    /// `None` when the lines are longer than [`Self::MAX_SHOWN`].
    fn new(name: &str, text: &str, lines: &LineIndex, range: TextRange) -> Option<Excerpt> {
        let (start, end) = (usize::from(range.start()).min(text.len()), usize::from(range.end()).min(text.len()));
        let mut base = crate::source::line_start(text, start);
        for _ in 0..Self::CONTEXT {
            if base == 0 {
                break;
            }
            base = crate::source::line_start(text, base - 1);
        }
        let mut stop = crate::source::line_end_inclusive(text, end);
        for _ in 0..Self::CONTEXT {
            stop = crate::source::line_end_inclusive(text, stop);
        }
        if stop - base > Self::MAX_SHOWN {
            return None;
        }
        // From the file's line index: counting newlines up to here would scan the file per frame.
        let first_line = lines.line_col(text, TextSize::try_from(base).ok()?).0 - 1;
        // Credentials in an index URL are masked, byte for byte so that the labels stay in place.
        let text = crate::redact::credentials_in_place(&text[base..stop]);
        Some(Excerpt { name: name.to_string(), text, base, first_line })
    }
}

impl miette::SourceCode for Excerpt {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        let local = SourceSpan::new(span.offset().saturating_sub(self.base).into(), span.len());
        let inner = self.text.as_str().read_span(&local, before, after)?;
        let contents = miette::MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            SourceSpan::new((inner.span().offset() + self.base).into(), inner.span().len()),
            inner.line() + self.first_line,
            inner.column(),
            inner.line_count(),
        )
        .with_language("Python");
        Ok(Box::new(contents))
    }
}

/// Full, human output: a code frame per finding (rendered by [`Located::new`]).
pub fn full(findings: &[Finding]) -> String {
    findings.iter().filter_map(|f| f.located.frame.as_deref()).collect()
}

/// One finding's miette frame, with a line of context.
fn code_frame(f: &Finding, text: &str, lines: &LineIndex, color: bool) -> String {
    let theme = if color { GraphicalTheme::unicode() } else { GraphicalTheme::unicode_nocolor() };
    let handler = GraphicalReportHandler::new_themed(theme).with_context_lines(1);
    let range = f.diagnostic().range;
    // Generated code can put thousands of findings on one 100 KB line: a frame each would print
    // (and hold) the line thousands of times. Past a screenful, the location stands in for it.
    let source = Excerpt::new(f.path, text, lines, range);
    let label = f.fix_label();
    let message = match &source {
        Some(_) => f.diagnostic().message.clone(),
        None => {
            let (line, col) = f.start();
            let shown = if label.is_empty() { String::new() } else { format!("; {label}") };
            format!("{} ({}:{line}:{col}; the line is too long to show{shown})", f.diagnostic().message, f.path)
        }
    };
    let report = Report {
        code: format!("{}({})", f.rule.code, f.rule.name),
        message,
        help: f.help(),
        label,
        span: SourceSpan::new(usize::from(range.start()).into(), usize::from(range.len())),
        source,
    };
    let mut out = String::new();
    let _ = handler.render_report(&mut out, &report);
    out.push('\n');
    out
}

/// One line per finding: `path:line:col: CODE message`.
pub fn concise(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let (line, col) = f.start();
        let marker = match &f.diagnostic().fix {
            Some(fix) if fix.safety == Safety::Safe => " [*]",
            Some(_) => " [unsafe fix]",
            None => "",
        };
        let _ = writeln!(out, "{}:{line}:{col}: {}{marker} {}", f.place(), f.rule.code, f.diagnostic().message);
    }
    out
}

pub fn json(findings: &[Finding]) -> String {
    let items: Vec<Value> = findings.iter().map(finding_json).collect();
    serde_json::to_string_pretty(&items).unwrap_or_default() + "\n"
}

/// The objects of [`json`], one per line, for tools that stream.
pub fn json_lines(findings: &[Finding]) -> String {
    findings.iter().map(|f| finding_json(f).to_string() + "\n").collect()
}

/// pylint's parseable format: `path:line: [CODE] message`.
pub fn pylint(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let _ = writeln!(out, "{}:{}: [{}] {}", f.place(), f.start().0, f.rule.code, f.diagnostic().message);
    }
    out
}

fn finding_json(f: &Finding) -> Value {
    let loc = |(row, column): (usize, usize)| json!({"row": row, "column": column});
    let fix = f.diagnostic().fix.as_ref().map(|fix| {
        let edits: Vec<Value> = fix
            .edits
            .iter()
            .zip(&f.located.edits)
            .map(|(e, at)| {
                json!({
                    "content": e.content,
                    "location": loc(at.0),
                    "end_location": loc(at.1),
                })
            })
            .collect();
        json!({"applicability": fix.safety, "edits": edits, "deletes_statement": !fix.deletes.is_empty(),
               "adds_imports": fix.imports.iter().map(|i| i.statement()).collect::<Vec<_>>()})
    });
    json!({
        "code": f.rule.code,
        "name": f.rule.name,
        "message": f.diagnostic().message,
        "help": f.rule.help,
        "note": f.diagnostic().note,
        "filename": f.path,
        "cell": f.located.cell,
        "location": loc(f.start()),
        "end_location": loc(f.end()),
        "fix": fix,
    })
}

/// GitHub Actions workflow commands (annotations on the PR diff).
pub fn github(findings: &[Finding]) -> String {
    let escape = |s: &str| s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A");
    let prop = |s: &str| escape(s).replace(':', "%3A").replace(',', "%2C");
    let mut out = String::new();
    for f in findings {
        let ((line, col), (end_line, end_col)) = (f.start(), f.end());
        let _ = writeln!(
            out,
            "::error title={},file={},line={line},col={col},endLine={end_line},endColumn={end_col}::{}",
            prop(&format!("xla2tpu ({})", f.rule.code)),
            prop(f.path),
            escape(&format!("{} {}", f.rule.code, f.diagnostic().message))
        );
    }
    out
}

/// SARIF 2.1.0, for code-scanning dashboards.
pub fn sarif(findings: &[Finding], rules: &[&Rule]) -> String {
    let rule_entries: Vec<Value> = rules
        .iter()
        .map(|r| {
            json!({
                "id": r.code,
                "name": r.name,
                "shortDescription": {"text": r.help},
                "fullDescription": {"text": r.explanation},
                "help": {"text": r.help, "markdown": r.explanation},
            })
        })
        .collect();
    let results: Vec<Value> = findings
        .iter()
        .map(|f| {
            let ((line, col), (end_line, end_col)) = (f.start(), f.end());
            json!({
                "ruleId": f.rule.code,
                "level": "error",
                "message": {"text": f.diagnostic().message},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": portable(f.path)},
                    "region": {"startLine": line, "startColumn": col, "endLine": end_line, "endColumn": end_col}
                }}],
            })
        })
        .collect();
    let doc = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "xla2tpu", "version": env!("CARGO_PKG_VERSION"), "rules": rule_entries}},
            // Our columns count characters, not SARIF's default UTF-16 code units.
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// A path as CI systems want it: `/`-separated and, when under the working directory, relative.
fn portable(path: &str) -> String {
    let p = std::path::Path::new(path);
    let relative = std::env::current_dir().ok().and_then(|cwd| p.strip_prefix(cwd).ok().map(|r| r.to_path_buf()));
    relative.as_deref().unwrap_or(p).to_string_lossy().replace('\\', "/")
}

/// GitLab Code Quality: the fields GitLab documents (description, check_name, fingerprint,
/// severity, location.path, location.lines.begin), with fingerprints that survive edits so the
/// merge-request widget tells new findings from old ones.
pub fn gitlab(findings: &[Finding]) -> String {
    let paths: Vec<String> = findings.iter().map(|f| portable(f.path)).collect();
    let prints =
        fingerprints(findings.iter().zip(&paths).map(|(f, p)| (f.rule.code.as_str(), p.as_str(), &f.located.anchor)));
    let items: Vec<Value> = findings
        .iter()
        .zip(paths)
        .zip(prints)
        .map(|((f, path), fingerprint)| {
            json!({
                "description": format!("{} {}", f.rule.code, f.diagnostic().message),
                "check_name": f.rule.code,
                "fingerprint": fingerprint,
                "severity": "major",
                "location": {"path": path, "lines": {"begin": f.start().0, "end": f.end().0}},
            })
        })
        .collect();
    serde_json::to_string_pretty(&items).unwrap_or_default() + "\n"
}

/// JUnit XML as ruff writes it: a test suite per file, a failing test case per finding.
pub fn junit(findings: &[Finding]) -> String {
    let mut by_file: BTreeMap<&str, Vec<&Finding>> = BTreeMap::new();
    for f in findings {
        by_file.entry(f.path).or_default().push(f);
    }
    let mut w = quick_xml::Writer::new_with_indent(Vec::new(), b' ', 2);
    write_junit(&mut w, findings.len(), &by_file).expect("writing to memory cannot fail");
    String::from_utf8(w.into_inner()).expect("XML from UTF-8 strings") + "\n"
}

type XmlWriter = quick_xml::Writer<Vec<u8>>;

fn write_junit(w: &mut XmlWriter, count: usize, by_file: &BTreeMap<&str, Vec<&Finding>>) -> std::io::Result<()> {
    use quick_xml::events::{BytesDecl, Event};
    // A clean run still has one (passing) test case.
    let (tests, failures) = (count.max(1).to_string(), count.to_string());
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    w.create_element("testsuites")
        .with_attributes([("name", "xla2tpu"), ("tests", &tests), ("failures", &failures), ("errors", "0")])
        .write_inner_content(|w| {
            if by_file.is_empty() {
                // So dashboards show a clean run rather than an empty report.
                w.create_element("testsuite")
                    .with_attributes([("name", "xla2tpu"), ("tests", "1"), ("failures", "0"), ("errors", "0")])
                    .write_inner_content(|w| {
                        let case = w.create_element("testcase");
                        case.with_attributes([("name", "No findings"), ("classname", "xla2tpu")])
                            .write_empty()
                            .map(drop)
                    })?;
            }
            by_file.iter().try_for_each(|(path, findings)| junit_suite(w, path, findings))
        })
        .map(drop)
}

fn junit_suite(w: &mut XmlWriter, path: &str, findings: &[&Finding]) -> std::io::Result<()> {
    let n = findings.len().to_string();
    let classname = path.strip_suffix(".py").unwrap_or(path).replace('/', ".");
    w.create_element("testsuite")
        .with_attributes([("name", path), ("tests", &n), ("failures", &n), ("errors", "0")])
        .write_inner_content(|w| {
            for f in findings {
                let (line, col) = f.start();
                let (name, line_s, col_s) = (format!("xla2tpu.{}", f.rule.code), line.to_string(), col.to_string());
                let text = format!("line {line}, col {col}, {}", f.diagnostic().message);
                w.create_element("testcase")
                    .with_attributes([
                        ("name", name.as_str()),
                        ("classname", &classname),
                        ("file", path),
                        ("line", &line_s),
                        ("column", &col_s),
                    ])
                    .write_inner_content(|w| {
                        let failure =
                            w.create_element("failure").with_attribute(("message", f.diagnostic().message.as_str()));
                        failure.write_text_content(quick_xml::events::BytesText::new(&text)).map(drop)
                    })?;
            }
            Ok(())
        })
        .map(drop)
}

/// `--statistics`: findings per rule, most frequent first (ruff's layout: count, code, `[*]` when
/// `migrate` fixes them, name). `json` gives the same as a JSON array.
pub fn statistics(findings: &[Finding], json: bool) -> String {
    let mut by_rule: BTreeMap<&str, (usize, bool, &str)> = BTreeMap::new();
    for f in findings {
        let entry = by_rule.entry(&f.rule.code).or_insert((0, true, &f.rule.name));
        entry.0 += 1;
        entry.1 &= f.diagnostic().fix.as_ref().is_some_and(|x| x.safety == Safety::Safe);
    }
    let mut rows: Vec<(&str, usize, bool, &str)> =
        by_rule.into_iter().map(|(c, (n, fix, name))| (c, n, fix, name)).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    if json {
        let items: Vec<Value> = rows
            .iter()
            .map(|(code, count, fix, name)| json!({"code": code, "name": name, "count": count, "fixable": fix}))
            .collect();
        return serde_json::to_string_pretty(&items).unwrap_or_default() + "\n";
    }
    let width = rows.iter().map(|r| r.1.to_string().len()).max().unwrap_or(1);
    let mut out = String::new();
    for (code, count, fix, name) in rows {
        let _ = writeln!(out, "{count:>width$}\t{code}\t{}{name}", if fix { "[*] " } else { "    " });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::is_earlier_output;

    #[test]
    fn only_reports_are_earlier_outputs() {
        for report in [
            "",
            "a.py:2:1: TPU001 import of `torch_xla`\n",
            "nb.ipynb:cell 3:2:1: TPU101 [*] `xm.xla_device()`\n",
            "a.py:2: [TPU001] import of `torch_xla`\n",
            "TPU001(xla-import)\n\n  × import\n",
            "::error title=xla2tpu (TPU001),file=a.py::TPU001 import\n",
            "[]\n",
            "[\n  {\n    \"check_name\": \"TPU001\",\n",
            "[\n  {\n    \"cell\": null,\n    \"code\": \"TPU001\",\n",
            "{\"cell\":null,\"code\":\"TPU001\",\"end_location\":{}}\n",
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"xla2tpu\" tests=\"0\">\n",
            "2\tTPU001\t    xla-import\n",
            "\u{1b}[31mTPU001(xla-import)\u{1b}[0m\n",
        ] {
            assert!(is_earlier_output(report), "{report:?}");
        }
        for other in [
            "import torch_xla\n",
            "# My project\n\nRun `xla2tpu check`: TPU001 …\n",
            "[project]\nname = \"x\"\n",
            "torch_xla[tpu]==2.5.0  # noqa: TPU901\n",
            "FROM python:3.11\n",
            "{\"xla\": true}\n",
            "[1, 2]\n",
            "x = 1  # noqa: TPU110\n",
        ] {
            assert!(!is_earlier_output(other), "{other:?}");
        }
    }
}
