//! `migrate --report FILE`: what a team has to do once the diff is applied, ordered the way
//! the work is done (rules/report/work.yaml), then what was changed, then totals. Markdown for
//! people, JSON for tools; the extension decides.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::migrate::rules::RuleSet;
use crate::migrate::target::Kind;
use crate::output::count;

/// One place the migration left for someone: a manual item, or a fix waiting for `--unsafe-fixes`.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cell: Option<usize>,
    /// 1-based, in the file (or the cell) as it was before the migration.
    pub line: usize,
    pub column: usize,
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Item {
    /// `path:line:col`, or `nb.ipynb:cell 3:line:col`.
    pub fn place(&self) -> String {
        match self.cell {
            Some(cell) => format!("{}:cell {cell}:{}:{}", self.path, self.line, self.column),
            None => format!("{}:{}:{}", self.path, self.line, self.column),
        }
    }
}

/// `path` relative to `root` when under it (`train.py`, not `/home/me/project/train.py`).
fn relative(path: &str, root: &Path) -> String {
    Path::new(path).strip_prefix(root).map_or_else(|_| path.to_string(), |p| p.display().to_string())
}

/// What the migration did to one file.
#[derive(Debug, Clone, Default)]
pub struct FileOutcome {
    pub path: String,
    pub kind: Option<Kind>,
    pub changed: bool,
    pub applied: BTreeMap<String, usize>,
    pub manual: Vec<Item>,
    /// Fixes not applied because they are unsafe and `--unsafe-fixes` was not given.
    pub unsafe_fixes: Vec<Item>,
    /// torch_xla imports kept because names they bind are still used by what is left.
    pub kept_imports: Vec<Item>,
    pub error: Option<String>,
}

impl FileOutcome {
    /// The same outcome with paths shown relative to the project root the run was given.
    fn relative_to(&self, root: &Path) -> FileOutcome {
        let mut shown = self.clone();
        shown.path = relative(&self.path, root);
        for item in shown.manual.iter_mut().chain(&mut shown.unsafe_fixes).chain(&mut shown.kept_imports) {
            item.path = relative(&item.path, root);
        }
        shown
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkFile {
    format: String,
    kinds: Vec<Work>,
}

/// A kind of work, and the rule code prefixes that belong to it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Work {
    title: String,
    why: String,
    codes: Vec<String>,
}

const WORK: &str = include_str!("../../rules/report/work.yaml");

fn kinds_of_work() -> Vec<Work> {
    let file: WorkFile = yaml_serde::from_str(WORK).expect("rules/report/work.yaml is valid (tested)");
    assert_eq!(file.format, "xla2tpu-work/1");
    file.kinds
}

/// The index in `kinds` of the kind a rule code belongs to: the longest matching prefix.
fn kind_of_work(kinds: &[Work], code: &str) -> usize {
    kinds
        .iter()
        .enumerate()
        .flat_map(|(i, k)| k.codes.iter().filter(|p| code.starts_with(p.as_str())).map(move |p| (p.len(), i)))
        .max()
        .map_or(kinds.len() - 1, |(_, i)| i)
}

/// Everything the report says, in the order it says it.
#[derive(Debug, Serialize)]
struct Report<'a> {
    tool: String,
    target: String,
    totals: Totals,
    /// What needs a person, by kind of work, in the order to do it.
    work: Vec<WorkGroup<'a>>,
    /// Fixes that change behaviour and wait for `--unsafe-fixes`.
    unsafe_fixes: Vec<&'a Item>,
    /// Imports that go once the items using them are done.
    kept_imports: Vec<&'a Item>,
    errors: Vec<FileError<'a>>,
    behaviour: Vec<Behaviour<'a>>,
    changed: Vec<Changed<'a>>,
    per_rule: Vec<RuleTotal>,
    per_file_type: Vec<TypeTotal>,
}

#[derive(Debug, Serialize)]
struct Totals {
    files: usize,
    changed: usize,
    fixes: usize,
    manual: usize,
    unsafe_fixes: usize,
    errors: usize,
}

#[derive(Debug, Serialize)]
struct WorkGroup<'a> {
    title: String,
    why: String,
    items: Vec<ItemWithHelp<'a>>,
}

#[derive(Debug, Serialize)]
struct ItemWithHelp<'a> {
    #[serde(flatten)]
    item: &'a Item,
    /// What to do: the rule's one-line guidance.
    help: &'a str,
    /// The command that explains the rule in full.
    explain: String,
}

#[derive(Debug, Serialize)]
struct FileError<'a> {
    path: &'a str,
    error: &'a str,
}

/// An applied rule after which the program works differently on purpose, and where it applied.
#[derive(Debug, Serialize)]
struct Behaviour<'a> {
    code: &'a str,
    files: Vec<&'a str>,
    changes: &'a str,
}

#[derive(Debug, Serialize)]
struct Changed<'a> {
    path: &'a str,
    file_type: &'a str,
    fixes: &'a BTreeMap<String, usize>,
}

#[derive(Debug, Serialize)]
struct RuleTotal {
    code: String,
    name: String,
    applied: usize,
    manual: usize,
    unsafe_fixes: usize,
}

#[derive(Debug, Serialize)]
struct TypeTotal {
    file_type: String,
    files: usize,
    changed: usize,
    fixes: usize,
    manual: usize,
}

fn build<'a>(files: &'a [FileOutcome], rules: &'a RuleSet) -> Report<'a> {
    let kinds = kinds_of_work();
    let help = |code: &str| rules.by_code(code).map_or("", |r| r.help.as_str());
    let mut groups: Vec<Vec<ItemWithHelp>> = kinds.iter().map(|_| Vec::new()).collect();
    for item in files.iter().flat_map(|f| &f.manual) {
        let explain = format!("xla2tpu rule {}", item.code);
        groups[kind_of_work(&kinds, &item.code)].push(ItemWithHelp { item, help: help(&item.code), explain });
    }
    let work = kinds
        .into_iter()
        .zip(groups)
        .filter(|(_, items)| !items.is_empty())
        .map(|(k, items)| WorkGroup { title: k.title, why: k.why, items })
        .collect();

    let mut per_rule: BTreeMap<String, RuleTotal> = BTreeMap::new();
    fn total<'m>(per_rule: &'m mut BTreeMap<String, RuleTotal>, rules: &RuleSet, code: &str) -> &'m mut RuleTotal {
        per_rule.entry(code.to_string()).or_insert_with(|| RuleTotal {
            code: code.to_string(),
            name: rules.by_code(code).map_or_else(String::new, |r| r.name.clone()),
            applied: 0,
            manual: 0,
            unsafe_fixes: 0,
        })
    }
    let mut per_type: BTreeMap<&str, TypeTotal> = BTreeMap::new();
    for f in files {
        for (code, n) in &f.applied {
            total(&mut per_rule, rules, code).applied += n;
        }
        for i in &f.manual {
            total(&mut per_rule, rules, &i.code).manual += 1;
        }
        for i in &f.unsafe_fixes {
            total(&mut per_rule, rules, &i.code).unsafe_fixes += 1;
        }
        let label = f.kind.map_or("unreadable", Kind::label);
        let t = per_type.entry(label).or_insert_with(|| TypeTotal {
            file_type: label.to_string(),
            files: 0,
            changed: 0,
            fixes: 0,
            manual: 0,
        });
        t.files += 1;
        t.changed += usize::from(f.changed);
        t.fixes += f.applied.values().sum::<usize>();
        t.manual += f.manual.len();
    }
    let totals = Totals {
        files: files.len(),
        changed: files.iter().filter(|f| f.changed).count(),
        fixes: files.iter().flat_map(|f| f.applied.values()).sum(),
        manual: files.iter().map(|f| f.manual.len()).sum(),
        unsafe_fixes: files.iter().map(|f| f.unsafe_fixes.len()).sum(),
        errors: files.iter().filter(|f| f.error.is_some()).count(),
    };
    Report {
        tool: format!("xla2tpu {}", env!("CARGO_PKG_VERSION")),
        target: format!("{} {}", rules.target.distribution, rules.target.version),
        totals,
        work,
        unsafe_fixes: files.iter().flat_map(|f| &f.unsafe_fixes).collect(),
        kept_imports: files.iter().flat_map(|f| &f.kept_imports).collect(),
        errors: files
            .iter()
            .filter_map(|f| f.error.as_deref().map(|error| FileError { path: &f.path, error }))
            .collect(),
        behaviour: rules
            .rules
            .iter()
            .filter_map(|rule| {
                let changes = rule.changes.as_deref()?;
                let files: Vec<&str> =
                    files.iter().filter(|f| f.applied.contains_key(&rule.code)).map(|f| f.path.as_str()).collect();
                (!files.is_empty()).then_some(Behaviour { code: &rule.code, files, changes })
            })
            .collect(),
        changed: files
            .iter()
            .filter(|f| f.changed)
            .map(|f| Changed { path: &f.path, file_type: f.kind.map_or("", Kind::label), fixes: &f.applied })
            .collect(),
        per_rule: per_rule.into_values().collect(),
        per_file_type: per_type.into_values().collect(),
    }
}

/// What a report is written as, by its file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Json,
}

impl Format {
    /// `.md`/`.markdown` or `.json`; anything else (`x.html`) is refused rather than written in
    /// a format its name does not say.
    pub fn of(path: &Path) -> anyhow::Result<Format> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("md" | "markdown") => Ok(Format::Markdown),
            Some("json") => Ok(Format::Json),
            _ => anyhow::bail!(
                "--report {}: the report is Markdown (`.md`) or JSON (`.json`); name the file with one of these extensions",
                path.display()
            ),
        }
    }
}

/// Whether a file's first bytes are those of an earlier report (which `--report` may replace).
pub fn is_report(head: &str) -> bool {
    (head.starts_with(MARKDOWN_TITLE) && head.contains("xla2tpu "))
        || head.strip_prefix('{').is_some_and(|rest| rest.trim_start().starts_with("\"tool\": \"xla2tpu "))
}

const MARKDOWN_TITLE: &str = "# Migration report\n";

/// The report for `path`, in the format its extension says ([`Format::of`]).
pub fn render(path: &Path, files: &[FileOutcome], rules: &RuleSet, root: Option<&Path>) -> String {
    let shown: Vec<FileOutcome>;
    let files = match root {
        Some(root) => {
            shown = files.iter().map(|f| f.relative_to(root)).collect();
            &shown
        }
        None => files,
    };
    let report = build(files, rules);
    match Format::of(path) {
        Ok(Format::Json) => serde_json::to_string_pretty(&report).expect("the report serialises") + "\n",
        _ => markdown(&report),
    }
}

/// Text from files and findings as one line of Markdown that renders as that text: its code
/// spans (a backtick run and the next run of the same length, as CommonMark pairs them) kept,
/// everything else escaped, so a file name or message can neither close a span early nor
/// become HTML (`<script>`), a link or a table column.
fn text(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ");
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    while let Some(start) = rest.find('`') {
        escape_into(&mut out, &rest[..start]);
        let run = rest[start..].len() - rest[start..].trim_start_matches('`').len();
        let after = &rest[start + run..];
        match closing_run(after, run) {
            Some(end) => {
                out.push_str(&rest[start..start + run]);
                out.push_str(&after[..end].replace('|', "\\|"));
                out.push_str(&rest[start..start + run]);
                rest = &after[end + run..];
            }
            None => {
                out.push_str(&"\\`".repeat(run));
                rest = after;
            }
        }
    }
    escape_into(&mut out, rest);
    out
}

/// Where in `s` a run of exactly `n` backticks starts.
fn closing_run(s: &str, n: usize) -> Option<usize> {
    let mut at = 0;
    while let Some(i) = s[at..].find('`') {
        let start = at + i;
        let len = s[start..].len() - s[start..].trim_start_matches('`').len();
        if len == n {
            return Some(start);
        }
        at = start + len;
    }
    None
}

fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        if matches!(c, '\\' | '<' | '>' | '&' | '[' | ']' | '|') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// `s` as one inline code span (a path, a place): a fence longer than any backtick run in it.
fn code(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ").replace('|', "\\|");
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{s}{pad}{fence}")
}

fn markdown(r: &Report) -> String {
    let mut out = String::new();
    let t = &r.totals;
    let _ = writeln!(out, "{MARKDOWN_TITLE}");
    let _ = writeln!(
        out,
        "{} read {} for {}: {} changed by {}. **{} a person**{}{}.\n",
        r.tool,
        count(t.files, "file"),
        r.target,
        t.changed,
        count(t.fixes, "fix"),
        if t.manual == 1 { "1 item needs".to_string() } else { format!("{} items need", t.manual) },
        match t.unsafe_fixes {
            0 => String::new(),
            1 => ", and 1 fix that may change behaviour waits for `--unsafe-fixes`".to_string(),
            n => format!(", and {n} fixes that may change behaviour wait for `--unsafe-fixes`"),
        },
        match t.errors {
            0 => String::new(),
            1 => "; 1 file could not be migrated".to_string(),
            n => format!("; {n} files could not be migrated"),
        },
    );

    let _ = writeln!(out, "## What needs a person\n");
    if r.work.is_empty() {
        let _ = writeln!(out, "Nothing: every torch_xla use found was rewritten.\n");
    }
    for (n, group) in r.work.iter().enumerate() {
        let _ = writeln!(out, "### {}. {} ({})\n\n{}\n", n + 1, group.title, group.items.len(), group.why);
        let _ = writeln!(out, "| Where | Rule | What | What to do |\n|---|---|---|---|");
        // The same item in one file (an import used 29 times) is one row listing its lines.
        let mut rows: Vec<(&ItemWithHelp, Vec<&Item>)> = Vec::new();
        for i in &group.items {
            let same = |(first, _): &&mut (&ItemWithHelp, Vec<&Item>)| {
                let f = first.item;
                (&f.path, f.cell, &f.code, &f.message, &f.note)
                    == (&i.item.path, i.item.cell, &i.item.code, &i.item.message, &i.item.note)
            };
            match rows.iter_mut().find(same) {
                Some((_, places)) => places.push(i.item),
                None => rows.push((i, vec![i.item])),
            }
        }
        for (i, places) in rows {
            let what = match &i.item.note {
                Some(note) => format!("{} ({note})", i.item.message),
                None => i.item.message.clone(),
            };
            let place = match places.as_slice() {
                [one] => code(&one.place()),
                [first, rest @ ..] => {
                    const SHOWN: usize = 8;
                    let mut lines: Vec<String> = rest.iter().take(SHOWN).map(|p| p.line.to_string()).collect();
                    if rest.len() > SHOWN {
                        lines.push(format!("… {} more", rest.len() - SHOWN));
                    }
                    format!("{} ×{}, also lines {}", code(&first.place()), places.len(), lines.join(", "))
                }
                [] => unreachable!("a row has its first item"),
            };
            let _ =
                writeln!(out, "| {place} | {} (`{}`) | {} | {} |", i.item.code, i.explain, text(&what), text(i.help));
        }
        let _ = writeln!(out);
    }
    if !r.unsafe_fixes.is_empty() {
        let _ = writeln!(
            out,
            "## Fixes waiting for `--unsafe-fixes` ({})\n\nEach may change behaviour; `xla2tpu rule CODE` says how. Review, then run `xla2tpu migrate --write --unsafe-fixes`.\n",
            r.unsafe_fixes.len()
        );
        let _ = writeln!(out, "| Where | Rule | What |\n|---|---|---|");
        for i in &r.unsafe_fixes {
            let _ = writeln!(out, "| {} | {} | {} |", code(&i.place()), i.code, text(&i.message));
        }
        let _ = writeln!(out);
    }
    if !r.kept_imports.is_empty() {
        let _ = writeln!(
            out,
            "## Imports kept for what is left ({})\n\nThey bind names the items above still use; `xla2tpu migrate` deletes each once its uses are gone.\n",
            r.kept_imports.len()
        );
        for i in &r.kept_imports {
            let _ = writeln!(out, "- {}: {}", code(&i.place()), text(&i.message));
        }
        let _ = writeln!(out);
    }
    if !r.errors.is_empty() {
        let _ = writeln!(out, "## Files that could not be migrated ({})\n", r.errors.len());
        for e in &r.errors {
            let _ = writeln!(out, "- {}: {}", code(e.path), text(e.error));
        }
        let _ = writeln!(out);
    }
    if !r.behaviour.is_empty() {
        let _ = writeln!(
            out,
            "## What behaves differently ({})\n\nFixes that were applied and change how the program runs, on purpose.\n\n| Rule | Files | What changes |\n|---|---|---|",
            r.behaviour.len()
        );
        for b in &r.behaviour {
            let files: Vec<String> = b.files.iter().map(|f| code(f)).collect();
            let _ = writeln!(out, "| {} | {} | {} |", b.code, files.join(", "), text(b.changes.trim()));
        }
        out.push('\n');
    }
    let _ = writeln!(out, "## What was changed ({})\n", count(r.changed.len(), "file"));
    if !r.changed.is_empty() {
        let _ = writeln!(out, "| File | Type | Fixes |\n|---|---|---|");
        for c in &r.changed {
            let fixes: Vec<String> = c.fixes.iter().map(|(code, n)| format!("{code} ×{n}")).collect();
            let _ = writeln!(out, "| {} | {} | {} |", code(c.path), c.file_type, fixes.join(", "));
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "## Totals\n\n| Rule | Name | Applied | Left for a person | Waiting for --unsafe-fixes |\n|---|---|---:|---:|---:|"
    );
    for t in &r.per_rule {
        let _ = writeln!(out, "| {} | {} | {} | {} | {} |", t.code, t.name, t.applied, t.manual, t.unsafe_fixes);
    }
    let _ = writeln!(out, "\n| File type | Files | Changed | Fixes | Left for a person |\n|---|---:|---:|---:|---:|");
    for t in &r.per_file_type {
        let _ = writeln!(out, "| {} | {} | {} | {} | {} |", t.file_type, t.files, t.changed, t.fixes, t.manual);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_belongs_to_a_kind_of_work_by_its_longest_prefix() {
        let kinds = kinds_of_work();
        let title = |code: &str| kinds[kind_of_work(&kinds, code)].title.as_str();
        assert_eq!(title("TPU211"), "Data loading");
        assert_eq!(title("TPU212"), "Launch");
        assert_eq!(title("TPU207"), "Distributed");
        assert_eq!(title("TPU504"), "SPMD and sharding");
        assert_eq!(title("TPU501"), "Environment");
        assert_eq!(title("TPU901"), "Dependencies");
        let rules = RuleSet::load(&[]).unwrap();
        // Only TPU0xx, the catch-all, may land in the last group.
        for r in &rules.rules {
            let i = kind_of_work(&kinds, &r.code);
            assert!(i < kinds.len() - 1 || r.code.starts_with("TPU0"), "{} has no kind of work", r.code);
        }
    }

    #[test]
    fn applied_fixes_that_change_behaviour_are_explained_with_their_files() {
        let rules = RuleSet::load(&[]).unwrap();
        let applied = |path: &str, code: &str| FileOutcome {
            path: path.into(),
            kind: Some(Kind::Python),
            changed: true,
            applied: BTreeMap::from([(code.to_string(), 1)]),
            ..FileOutcome::default()
        };
        let files = vec![applied("train.py", "TPU712"), applied("eval.py", "TPU712"), applied("util.py", "TPU110")];
        let md = render(Path::new("r.md"), &files, &rules, None);
        let row = md.lines().find(|l| l.starts_with("| TPU712 | `train.py`, `eval.py` |")).expect(&md);
        assert!(row.contains("dataloader_drop_last=True") && row.contains("tpu_metrics_debug"), "{row}");
        assert!(!md.contains("| TPU110 | `util.py`"), "a rule without `changes` is not listed: {md}");
        let json: serde_json::Value = serde_json::from_str(&render(Path::new("r.json"), &files, &rules, None)).unwrap();
        assert_eq!(json["behaviour"][0]["files"], serde_json::json!(["train.py", "eval.py"]));
        // Nothing applied that changes behaviour: no section.
        let md = render(Path::new("r.md"), &files[2..], &rules, None);
        assert!(!md.contains("What behaves differently"), "{md}");
    }

    #[test]
    fn orders_work_and_counts_per_rule_and_file_type() {
        let rules = RuleSet::load(&[]).unwrap();
        let item = |path: &str, code: &str| Item {
            path: path.into(),
            cell: None,
            line: 3,
            column: 1,
            code: code.into(),
            message: format!("{code} | here"),
            note: None,
        };
        let files = vec![
            FileOutcome {
                path: "train.py".into(),
                kind: Some(Kind::Python),
                changed: true,
                applied: BTreeMap::from([("TPU110".to_string(), 2)]),
                manual: vec![item("train.py", "TPU207"), item("train.py", "TPU502")],
                ..FileOutcome::default()
            },
            FileOutcome {
                path: "nb.ipynb".into(),
                kind: Some(Kind::Notebook),
                manual: vec![Item { cell: Some(4), ..item("nb.ipynb", "TPU211") }],
                ..FileOutcome::default()
            },
        ];
        let md = render(Path::new("r.md"), &files, &rules, None);
        let env = md.find("### 1. Environment (1)").expect(&md);
        let dist = md.find("### 2. Distributed (1)").expect(&md);
        let data = md.find("### 3. Data loading (1)").expect(&md);
        assert!(env < dist && dist < data, "{md}");
        assert!(md.contains("| `nb.ipynb:cell 4:3:1` | TPU211 (`xla2tpu rule TPU211`) |"), "{md}");
        assert!(md.contains("TPU207 \\| here"), "table cells are escaped: {md}");
        assert!(md.contains("| TPU110 | mark-step | 2 | 0 | 0 |"), "{md}");
        assert!(md.contains("| notebook | 1 | 0 | 0 | 1 |"), "{md}");
        let json: serde_json::Value = serde_json::from_str(&render(Path::new("r.json"), &files, &rules, None)).unwrap();
        assert_eq!(json["totals"]["manual"], 3);
        assert_eq!(json["work"][2]["items"][0]["cell"], 4);
        assert_eq!(json["work"][0]["title"], "Environment");
    }

    #[test]
    fn one_item_repeated_in_a_file_is_one_row_with_its_lines() {
        let rules = RuleSet::load(&[]).unwrap();
        let at = |line: usize| Item {
            path: "lib.py".into(),
            cell: None,
            line,
            column: 5,
            code: "TPU116".into(),
            message: "`xu.getenv_as` is a torch_xla utility".into(),
            note: None,
        };
        let manual: Vec<Item> = (1..=12).map(|n| at(n * 10)).collect();
        let files =
            vec![FileOutcome { path: "lib.py".into(), kind: Some(Kind::Python), manual, ..FileOutcome::default() }];
        let md = render(Path::new("r.md"), &files, &rules, None);
        assert_eq!(md.matches("| TPU116 (`xla2tpu rule TPU116`)").count(), 1, "{md}");
        assert!(md.contains("| `lib.py:10:5` ×12, also lines 20, 30, 40, 50, 60, 70, 80, 90, … 3 more |"), "{md}");
        // The JSON keeps every item: tools count them.
        let json: serde_json::Value = serde_json::from_str(&render(Path::new("r.json"), &files, &rules, None)).unwrap();
        assert_eq!(json["totals"]["manual"], 12);
    }
}
