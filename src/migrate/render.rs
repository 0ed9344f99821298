//! Output: unified diffs, miette diagnostics and machine formats for CI.

use std::fmt::Write as _;

use miette::{
    Diagnostic as MietteDiagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceSpan,
};
use owo_colors::OwoColorize;
use serde_json::{Value, json};

use crate::migrate::checker::Diagnostic;
use crate::migrate::rules::{Rule, RuleSet};
use crate::source::LineIndex;

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

/// A finding with everything needed to show it.
pub struct Finding<'a> {
    pub path: &'a str,
    pub text: &'a str,
    pub lines: &'a LineIndex,
    pub diagnostic: &'a Diagnostic,
    pub rule: &'a Rule,
}

impl Finding<'_> {
    fn start(&self) -> (usize, usize) {
        self.lines.line_col(self.text, self.diagnostic.range.start())
    }
    fn end(&self) -> (usize, usize) {
        self.lines.line_col(self.text, self.diagnostic.range.end())
    }

    fn fix_label(&self) -> String {
        match &self.diagnostic.fix {
            Some(fix) => {
                let replacement =
                    fix.edits.iter().find(|e| e.range == self.diagnostic.range).map(|e| e.content.as_str());
                let safety = match fix.safety {
                    crate::migrate::rules::Safety::Safe => "fix",
                    crate::migrate::rules::Safety::Unsafe => "unsafe fix",
                };
                match replacement {
                    Some(r) if !r.is_empty() && !r.contains('\n') => format!("{safety}: `{r}`"),
                    _ if !fix.deletes.is_empty() => format!("{safety}: delete"),
                    _ => format!("{safety} available"),
                }
            }
            None => "manual migration".to_string(),
        }
    }

    fn help(&self) -> String {
        match &self.diagnostic.note {
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
    source: NamedSource<String>,
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
        Some(&self.source)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(Some(self.label.clone()), self.span))))
    }
}

/// Full, human output: a code frame per finding.
pub fn full(findings: &[Finding], color: bool) -> String {
    let theme = if color { GraphicalTheme::unicode() } else { GraphicalTheme::unicode_nocolor() };
    let handler = GraphicalReportHandler::new_themed(theme).with_context_lines(1);
    let mut out = String::new();
    for f in findings {
        let range = f.diagnostic.range;
        let report = Report {
            code: format!("{}({})", f.rule.code, f.rule.name),
            message: f.diagnostic.message.clone(),
            help: f.help(),
            label: f.fix_label(),
            span: SourceSpan::new(usize::from(range.start()).into(), usize::from(range.len())),
            source: NamedSource::new(f.path, f.text.to_string()).with_language("Python"),
        };
        let _ = handler.render_report(&mut out, &report);
        out.push('\n');
    }
    out
}

/// One line per finding: `path:line:col: CODE message`.
pub fn concise(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let (line, col) = f.start();
        let marker = match &f.diagnostic.fix {
            Some(fix) if fix.safety == crate::migrate::rules::Safety::Safe => " [*]",
            Some(_) => " [unsafe fix]",
            None => "",
        };
        let _ = writeln!(out, "{}:{line}:{col}: {}{marker} {}", f.path, f.rule.code, f.diagnostic.message);
    }
    out
}

pub fn json(findings: &[Finding]) -> String {
    let items: Vec<Value> = findings.iter().map(finding_json).collect();
    serde_json::to_string_pretty(&items).unwrap_or_default() + "\n"
}

fn finding_json(f: &Finding) -> Value {
    let loc = |(row, column): (usize, usize)| json!({"row": row, "column": column});
    let fix = f.diagnostic.fix.as_ref().map(|fix| {
        let edits: Vec<Value> = fix
            .edits
            .iter()
            .map(|e| {
                json!({
                    "content": e.content,
                    "location": loc(f.lines.line_col(f.text, e.range.start())),
                    "end_location": loc(f.lines.line_col(f.text, e.range.end())),
                })
            })
            .collect();
        json!({"applicability": fix.safety, "edits": edits, "deletes_statement": !fix.deletes.is_empty(),
               "adds_imports": fix.imports.iter().map(|i| i.statement()).collect::<Vec<_>>()})
    });
    json!({
        "code": f.rule.code,
        "name": f.rule.name,
        "message": f.diagnostic.message,
        "help": f.rule.help,
        "note": f.diagnostic.note,
        "filename": f.path,
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
            escape(&format!("{} {}", f.rule.code, f.diagnostic.message))
        );
    }
    out
}

/// SARIF 2.1.0, for code-scanning dashboards.
pub fn sarif(findings: &[Finding], rules: &RuleSet) -> String {
    let rule_entries: Vec<Value> = rules
        .rules
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
                "message": {"text": f.diagnostic.message},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": f.path.replace('\\', "/")},
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
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}
