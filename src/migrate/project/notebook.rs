//! Jupyter notebooks (nbformat 4). A third of torch_xla examples in the wild are notebooks
//! (Kaggle, Colab), so they are migrated like scripts: the code cells are joined into one text,
//! separated by a marker line, so that names imported in one cell resolve in the next. IPython
//! lines (`!pip install …`, `%env PJRT_DEVICE=TPU`, `%%bash` cells) go to [`launch`]; the Python
//! engine sees them as comments (or, inside a block, `...` statements) of the same length, so
//! both speak of the same offsets.
//!
//! The JSON is read with `jsonc-parser`, which keeps every value's byte range: only the `source`
//! of an edited cell is rewritten, in the style it had (a list of lines or one string), so the
//! layout, metadata and outputs stay byte for byte what they were.

use jsonc_parser::ast::{Array, Object, Value};
use jsonc_parser::common::Ranged;
use jsonc_parser::{CollectOptions, ParseOptions};
use ruff_text_size::{TextRange, TextSize};

use super::launch;
use crate::migrate::diagnostic::Diagnostic;
use crate::migrate::rules::RuleSet;
use crate::migrate::target::{Magic, MagicKind};
use crate::migrate::{self, Selection};
use crate::source::LineIndex;

/// Ends each code cell in the joined text; a comment, so the Python engine leaves it alone.
const CELL_END: &str = "#%% xla2tpu: end of cell\n";

/// A notebook as far as migration needs it: its code cells and where their sources are.
#[derive(Debug)]
pub struct Notebook<'a> {
    json: &'a str,
    cells: Vec<CodeCell>,
}

/// The whitespace of a list of lines: after `[`, between items (with the comma), before `]`.
#[derive(Debug)]
struct Layout {
    open: String,
    separator: String,
    close: String,
}

#[derive(Debug)]
struct CodeCell {
    /// 1-based position among all cells (markdown too), as a reader counts them.
    number: usize,
    source: String,
    /// The byte range of the `source` value in the JSON.
    value: std::ops::Range<usize>,
    /// `Some` when the source is a list of lines: how the list is laid out.
    lines: Option<Layout>,
}

/// Strict JSON: nbformat writes nothing else, and a lenient parse could hide a broken file.
fn strict() -> ParseOptions {
    ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// A notebook's code cells as the Python engine reads them (IPython lines as comments), and its
/// IPython lines as written; `None` when it is not a notebook this module can read.
pub fn python_and_magics(json: &str) -> Option<(String, Vec<String>)> {
    let joined = Notebook::parse(json).ok()?.joined().ok()?;
    let masked = mask(&joined);
    Some((masked.python, masked.lines.into_iter().map(|(_, original)| original).collect()))
}

/// Whether `json` is a notebook this module can read.
pub fn validate(json: &str) -> Result<(), String> {
    Notebook::parse(json).map(drop)
}

impl<'a> Notebook<'a> {
    pub fn parse(json: &'a str) -> Result<Notebook<'a>, String> {
        let parsed = jsonc_parser::parse_to_ast(json, &CollectOptions::default(), &strict())
            .map_err(|e| format!("invalid JSON: {e}"))?;
        let root = parsed.value.as_ref().and_then(Value::as_object).ok_or("not a notebook: no top-level object")?;
        let format = root.get_number("nbformat").map(|n| n.value).ok_or("not a notebook: no `nbformat`")?;
        if format != "4" {
            return Err(format!(
                "nbformat {format} is not supported; convert it with `jupyter nbconvert --to notebook --nbformat 4`"
            ));
        }
        let cells = root.get_array("cells").ok_or("not a notebook: no `cells` list")?;
        if !is_python(root) {
            return Ok(Notebook { json, cells: Vec::new() }); // an R or Julia notebook: nothing of ours
        }
        let mut code = Vec::new();
        for (i, cell) in cells.elements.iter().enumerate() {
            let cell = cell.as_object().ok_or_else(|| format!("cell {}: not an object", i + 1))?;
            if cell.get_string("cell_type").is_none_or(|t| t.value != "code") {
                continue;
            }
            let source = cell.get("source").ok_or_else(|| format!("cell {}: no `source`", i + 1))?;
            code.push(CodeCell::read(i + 1, &source.value, json)?);
        }
        Ok(Notebook { json, cells: code })
    }

    /// The code cells joined, each ended by [`CELL_END`].
    pub fn joined(&self) -> Result<String, String> {
        let mut text = String::new();
        for cell in &self.cells {
            if cell.source.lines().any(|l| format!("{l}\n") == CELL_END) {
                return Err(format!("cell {} contains xla2tpu's cell marker", cell.number));
            }
            text.push_str(&cell.source);
            if !cell.source.is_empty() && !cell.source.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(CELL_END);
        }
        Ok(text)
    }

    /// The notebook with the code cells' sources taken from `joined` (as [`Notebook::joined`]
    /// made it, then edited); cells whose source is unchanged keep their bytes.
    pub fn with_joined(&self, joined: &str) -> Result<String, String> {
        let sources = split(joined);
        if sources.len() != self.cells.len() {
            return Err("the cell markers did not survive the migration".to_string());
        }
        let mut out = String::with_capacity(self.json.len());
        let mut last = 0;
        for (cell, new) in self.cells.iter().zip(sources) {
            let new = cell.own(new);
            if new == cell.source {
                continue;
            }
            out.push_str(&self.json[last..cell.value.start]);
            out.push_str(&cell.encode(new));
            last = cell.value.end;
        }
        out.push_str(&self.json[last..]);
        Ok(out)
    }

    /// (cell number, old source, new source) of each code cell `joined` changes.
    fn changed_cells<'s>(&'s self, joined: &'s str) -> Vec<(usize, &'s str, &'s str)> {
        self.cells
            .iter()
            .zip(split(joined))
            .map(|(cell, new)| (cell.number, cell.source.as_str(), cell.own(new)))
            .filter(|(_, old, new)| old != new)
            .collect()
    }
}

/// Where each code cell's text is in a joined text, found once for all the findings of a run.
struct Spans(Vec<(usize, std::ops::Range<usize>)>);

impl Spans {
    fn of(nb: &Notebook, joined: &str) -> Spans {
        let mut at = 0;
        let spans = nb.cells.iter().zip(split(joined)).map(|(cell, text)| {
            let range = at..at + text.len();
            at = range.end + CELL_END.len();
            (cell.number, range)
        });
        Spans(spans.collect())
    }

    /// Where an offset of `joined` is: (cell number, 1-based line in the cell, the cell's text).
    fn locate(&self, joined: &str, offset: TextSize) -> (usize, usize, std::ops::Range<usize>) {
        let offset = usize::from(offset).min(joined.len());
        let within = self.0.iter().find(|(_, r)| offset < r.end + CELL_END.len()).or(self.0.last());
        let Some((number, range)) = within.cloned() else { return (0, 1, 0..0) };
        let line = joined[range.start..offset.max(range.start)].matches('\n').count() + 1;
        (number, line, range)
    }
}

/// The kernel is Python, or says nothing (Kaggle and Colab exports often omit it).
fn is_python(root: &Object) -> bool {
    let Some(meta) = root.get_object("metadata") else { return true };
    let language = meta
        .get_object("kernelspec")
        .and_then(|k| k.get_string("language"))
        .or_else(|| meta.get_object("language_info").and_then(|l| l.get_string("name")));
    language.is_none_or(|l| l.value.eq_ignore_ascii_case("python"))
}

impl CodeCell {
    /// `new`, this cell's text in a joined text, as its own source: the joined text ended every
    /// cell with a newline, and the cell may not have had one.
    fn own<'s>(&self, new: &'s str) -> &'s str {
        if self.source.ends_with('\n') { new } else { new.strip_suffix('\n').unwrap_or(new) }
    }

    fn read(number: usize, value: &Value, json: &str) -> Result<CodeCell, String> {
        let bad = || format!("cell {number}: `source` is neither a string nor a list of strings");
        let range = value.range();
        match value {
            Value::StringLit(s) => {
                Ok(CodeCell { number, source: s.value.to_string(), value: range.start..range.end, lines: None })
            }
            Value::Array(Array { elements, range }) => {
                let mut source = String::new();
                for e in elements {
                    source.push_str(&e.as_string_lit().ok_or_else(bad)?.value);
                }
                let layout = match (elements.first(), elements.get(1), elements.last()) {
                    (Some(first), second, Some(last)) => {
                        let open = json[range.start + 1..first.range().start].to_string();
                        let separator = match second {
                            Some(second) => json[first.range().end..second.range().start].to_string(),
                            None if open.is_empty() => ", ".to_string(),
                            None => format!(",{open}"),
                        };
                        Layout { open, separator, close: json[last.range().end..range.end - 1].to_string() }
                    }
                    // An empty list: nbformat's own layout, indented one past the line of `[`.
                    _ => {
                        let line = &json[crate::source::line_start(json, range.start)..range.start];
                        let indent: String = line.chars().take_while(|c| c.is_whitespace()).collect();
                        Layout {
                            open: format!("\n{indent} "),
                            separator: format!(",\n{indent} "),
                            close: format!("\n{indent}"),
                        }
                    }
                };
                Ok(CodeCell { number, source, value: range.start..range.end, lines: Some(layout) })
            }
            _ => Err(bad()),
        }
    }

    /// `source` as JSON, in this cell's style.
    fn encode(&self, source: &str) -> String {
        let string = |s: &str| serde_json::to_string(s).expect("a string always serialises");
        match &self.lines {
            None => string(source),
            Some(_) if source.is_empty() => "[]".to_string(),
            Some(Layout { open, separator, close }) => {
                let items: Vec<String> = source.split_inclusive('\n').map(string).collect();
                format!("[{open}{}{close}]", items.join(separator))
            }
        }
    }
}

/// The cells of a joined text (each without its end marker).
fn split(joined: &str) -> Vec<&str> {
    let mut cells = Vec::new();
    let mut start = 0;
    let mut at = 0;
    for line in joined.split_inclusive('\n') {
        if line == CELL_END {
            cells.push(&joined[start..at]);
            start = at + line.len();
        }
        at += line.len();
    }
    cells
}

/// A joined text as the Python engine sees it: IPython lines turned into Python of the same
/// length ([`comment_out`]); and the IPython lines themselves, for [`launch`].
struct Masked {
    python: String,
    magics: Vec<Magic>,
    /// (masked line, original line) in order, to put the originals back after the engine ran.
    lines: Vec<(String, String)>,
    /// Cells that are not Python once their IPython lines are masked: left whole, and reported.
    unreadable: Vec<Unreadable>,
}

/// A code cell the Python engine cannot read.
struct Unreadable {
    /// Where the cell starts in the joined text.
    at: TextSize,
    error: String,
}

/// Cell magics whose body is shell.
const SHELL_CELLS: &[&str] = &["%%bash", "%%sh", "%%script bash", "%%script sh", "%%system"];
/// Cell magics whose body is Python.
const PYTHON_CELLS: &[&str] = &["%%time", "%%timeit", "%%capture", "%%prun", "%%debug"];

/// What a cell is, from its first line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CellKind {
    /// Python, possibly under a `%%time`-like magic.
    Python,
    /// A `%%bash`-like cell: every line is a shell command.
    Shell,
    /// `%%writefile`, `%%html`…: not Python, and nothing of ours.
    Other,
}

impl CellKind {
    fn of(cell: &str) -> CellKind {
        let first = cell.lines().next().unwrap_or("").trim();
        if !first.starts_with("%%") || PYTHON_CELLS.iter().any(|c| first.starts_with(c)) {
            CellKind::Python
        } else if SHELL_CELLS.iter().any(|c| first == *c || first.starts_with(&format!("{c} "))) {
            CellKind::Shell
        } else {
            CellKind::Other
        }
    }
}

fn mask(joined: &str) -> Masked {
    let mut m = Masked {
        python: String::with_capacity(joined.len()),
        magics: Vec::new(),
        lines: Vec::new(),
        unreadable: Vec::new(),
    };
    let mut at = 0usize;
    for cell in split(joined) {
        let mut part = mask_cell(cell, at, false);
        // A cell IPython would run but Python cannot read (a shell command without `!`):
        // it is left as it is, and the other cells are still migrated.
        if let Err(e) = ruff_python_parser::parse_module(&part.python) {
            m.unreadable
                .push(Unreadable { at: TextSize::try_from(at).unwrap_or_default(), error: e.error.to_string() });
            part = mask_cell(cell, at, true);
        }
        m.python.push_str(&part.python);
        m.magics.extend(part.magics);
        m.lines.extend(part.lines);
        if restarts_kernel(cell) {
            // The engine puts what later cells need after it (same length: offsets stay).
            m.python.push_str(crate::migrate::target::KERNEL_RESTART);
            m.lines.push((crate::migrate::target::KERNEL_RESTART.to_string(), CELL_END.to_string()));
        } else {
            m.python.push_str(CELL_END);
        }
        at += cell.len() + CELL_END.len();
    }
    m
}

/// The Python program a `%%writefile train.py` cell writes: where it starts in the cell (after
/// the magic's line). Appends (`-a`) write part of a file, other files are not Python.
fn written_program(cell: &str) -> Option<usize> {
    let first = cell.lines().next()?;
    let args = first.trim().strip_prefix("%%writefile")?;
    let path = args.trim().trim_matches(['"', '\'']);
    let appends = args.split_whitespace().any(|w| w.starts_with('-'));
    (args.starts_with([' ', '\t']) && !appends && path.ends_with(".py"))
        .then(|| first.len() + 1)
        .filter(|&at| at <= cell.len())
}

/// Each `%%writefile` program cell of a joined text: (the program's start in it, the program).
fn written_programs(joined: &str) -> Vec<(usize, &str)> {
    let mut at = 0;
    let mut found = Vec::new();
    for cell in split(joined) {
        if let Some(body) = written_program(cell) {
            found.push((at + body, &cell[body..]));
        }
        at += cell.len() + CELL_END.len();
    }
    found
}

/// Whether running `cell` restarts the kernel (Kaggle and Colab do it after a `!pip install`),
/// or clears its names: what earlier cells bound is gone for the cells after it.
fn restarts_kernel(cell: &str) -> bool {
    const RESTARTS: &[&str] = &["os._exit(", "do_shutdown(", "os.kill(os.getpid()"];
    cell.lines().map(str::trim_start).any(|line| {
        let code = line.split('#').next().unwrap_or("");
        line.starts_with("%reset") || RESTARTS.iter().any(|r| code.contains(r))
    })
}

/// One cell masked, starting at `at` in the joined text; `whole` masks every line.
fn mask_cell(cell: &str, mut at: usize, whole: bool) -> Masked {
    let mut m = Masked {
        python: String::with_capacity(cell.len()),
        magics: Vec::new(),
        lines: Vec::new(),
        unreadable: Vec::new(),
    };
    let offset = |n: usize| TextSize::try_from(n).unwrap_or_default();
    let kind = CellKind::of(cell);
    // `%%writefile`, `%%html`…: never Python here, whatever their indentation (a written
    // program is migrated on its own, see `written_programs`).
    let whole = whole || kind == CellKind::Other;
    // An IPython line ending in `\` continues on the next line (`!pip install a \`), which
    // belongs to the same command: `Some(index of its magic)`, or `Some(None)` if no handler reads it.
    let mut continuing: Option<Option<usize>> = None;
    // A shell cell's here-documents still to come (delimiter, whether `<<-` strips tabs): their
    // bodies are data (a file being written, a program fed to `python -`), not commands.
    let mut heredocs: std::collections::VecDeque<(String, bool)> = std::collections::VecDeque::new();
    for (i, line) in cell.split_inclusive('\n').enumerate() {
        let body = line.trim_end_matches(['\n', '\r']);
        let indent = body.len() - body.trim_start().len();
        let trimmed = &body[indent..];
        let start = offset(at + indent);
        let continuation = continuing.is_some();
        if kind == CellKind::Shell && i > 0 && !whole {
            if let Some((delimiter, strip_tabs)) = heredocs.front() {
                let end = if *strip_tabs { body.trim_start_matches('\t') } else { body };
                if end == delimiter {
                    heredocs.pop_front();
                }
                let masked = comment_out(line, 0, indent);
                m.lines.push((masked.clone(), line.to_string()));
                m.python.push_str(&masked);
                at += line.len();
                continue;
            }
            heredocs.extend(super::launch::shell::heredoc_delimiters(trimmed));
        }
        let ipython = match (kind, continuing) {
            (_, Some(magic)) => {
                if let Some(g) = magic.and_then(|g| m.magics.get_mut(g)) {
                    g.range = TextRange::new(g.range.start(), offset(at + body.len()));
                }
                Some(None)
            }
            _ if whole => Some(None),
            _ if trimmed.is_empty() => None,
            _ if i == 0 && trimmed.starts_with("%%") => Some(None), // the cell magic itself
            (CellKind::Python, _) => line_magic(trimmed, start),
            (CellKind::Shell, _) => Some(Some(MagicKind::Shell { command: start })),
            (CellKind::Other, _) => Some(None),
        };
        match ipython {
            Some(handled) => {
                if let Some(kind) = handled {
                    m.magics.push(Magic { range: TextRange::new(offset(at), offset(at + body.len())), kind });
                }
                continuing = match (kind, trimmed.ends_with('\\')) {
                    // A shell cell's lines are commands of their own; a continued line joins the last.
                    (_, true) if continuation => continuing,
                    (CellKind::Python, true) => Some(handled.map(|_| m.magics.len() - 1)),
                    _ => None,
                };
                // A comment can sit at any indentation; a statement (`...#`) only at its block's.
                let masked = comment_out(line, if whole || continuation { 0 } else { indent }, indent);
                m.lines.push((masked.clone(), line.to_string()));
                m.python.push_str(&masked);
            }
            None => m.python.push_str(line),
        }
        at += line.len();
    }
    m
}

/// What an IPython line is: `None` for Python; `Some(None)` for a magic no handler reads.
fn line_magic(trimmed: &str, start: TextSize) -> Option<Option<MagicKind>> {
    let after = |n: usize| start + TextSize::try_from(n).unwrap_or_default();
    if let Some(rest) = trimmed.strip_prefix('!') {
        let skip = 1 + usize::from(rest.starts_with('!'));
        return Some(Some(MagicKind::Shell { command: after(skip) }));
    }
    if let Some(rest) = trimmed.strip_prefix('%') {
        let word = rest.split_whitespace().next().unwrap_or("");
        return Some(match word {
            "pip" | "conda" | "sx" | "system" | "sh" => Some(MagicKind::Shell {
                command: after(if matches!(word, "pip" | "conda") { 1 } else { 1 + word.len() + 1 }),
            }),
            "env" => {
                let args = rest[word.len()..].trim_start(); // `NAME=VALUE` or `NAME VALUE`
                let name_at = trimmed.len() - args.len();
                let name_len = args.find(|c: char| c == '=' || c.is_whitespace()).unwrap_or(args.len());
                (name_len > 0).then(|| MagicKind::Env {
                    name: TextRange::at(after(name_at), TextSize::try_from(name_len).unwrap_or_default()),
                })
            }
            _ => None,
        });
    }
    // `files = !ls`, and `x?` / `?x` help lookups.
    let assigned = trimmed.split_once('=').is_some_and(|(lhs, rhs)| {
        lhs.trim().chars().all(|c| c.is_alphanumeric() || c == '_' || c == ',' || c == ' ')
            && !lhs.trim().is_empty()
            && (rhs.trim_start().starts_with('!') || rhs.trim_start().starts_with('%'))
    });
    (assigned || trimmed.starts_with('?') || trimmed.ends_with('?')).then_some(None)
}

/// `line` as Python of the same length, so every offset stays where it was: a comment at the top
/// level (imports a fix adds then still go below the cell's `!pip install`), and inside a block a
/// `...#` statement, because an IPython line can be a block's whole body
/// (`if IN_COLAB:\n    !pip install …`). Indented lines of fewer than four bytes become a comment.
fn comment_out(line: &str, block_indent: usize, indent: usize) -> String {
    let content = line.trim_end_matches(['\n', '\r']);
    if content.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\x0c')) {
        return line.to_string(); // a blank line is Python already
    }
    // `block_indent` 0: a comment whatever the indentation (a whole cell is being masked), so
    // at the start of the line, where no character Python does not indent with (a vertical
    // tab) can come before it.
    let indent = if block_indent == 0 { 0 } else { indent };
    let body = &content[indent..];
    let (marker, min) = if block_indent > 0 && body.len() >= 4 { ("...#", 4) } else { ("#", 1) };
    // The characters the marker replaces: at least `min` bytes, on a character boundary.
    let cut = body.char_indices().map(|(i, _)| i).find(|&i| i >= min).unwrap_or(body.len());
    let masked = format!("{}{marker}{}{}", &line[..indent], " ".repeat(cut - marker.len()), &line[indent + cut..]);
    // Python ends a line at a lone CR too: one inside the line would end the comment early.
    let end = masked.trim_end_matches(['\n', '\r']).len();
    if masked[..end].contains('\r') { masked[..end].replace('\r', " ") + &masked[end..] } else { masked }
}

/// Put the IPython lines back after the Python engine rewrote the masked text.
fn unmask(python: &str, lines: &[(String, String)]) -> Result<String, String> {
    let mut out = String::with_capacity(python.len());
    let mut next = lines.iter().peekable();
    for line in python.split_inclusive('\n') {
        match next.peek() {
            Some((masked, original)) if masked == line => {
                out.push_str(original);
                next.next();
            }
            _ => out.push_str(line),
        }
    }
    match next.next() {
        None => Ok(out),
        Some((_, original)) => Err(format!("the IPython line `{}` did not survive the migration", original.trim())),
    }
}

impl Masked {
    /// One finding (the syntax-error rule) per cell the Python engine cannot read.
    fn unreadable_findings(&self, rules: &RuleSet) -> Vec<Diagnostic> {
        let Some(rule) = rules.builtin(crate::migrate::rules::Builtin::SyntaxError) else { return vec![] };
        self.unreadable
            .iter()
            .map(|u| Diagnostic {
                rule,
                range: TextRange::empty(u.at),
                message: format!("this cell is not Python once its IPython lines are set aside: {}", u.error),
                note: Some("the cell is left as it is; the other cells are migrated".into()),
                fix: None,
            })
            .collect()
    }
}

/// The findings of a notebook's IPython lines that their `# noqa` comments (shell comments: a
/// `%env` line has none, its value runs to the end of the line) and the notebook's
/// `# xla2tpu: noqa` leave.
fn magic_findings(joined: &str, magics: &[Magic], rules: &RuleSet, selection: &Selection) -> Vec<Diagnostic> {
    let mut found = launch::check_magics(joined, magics, rules, selection.run.as_deref());
    if !found.is_empty() {
        let shell = magics.iter().filter(|m| matches!(m.kind, MagicKind::Shell { .. })).map(|m| m.range);
        crate::noqa::Noqa::of_shell_lines(joined, shell).retain_uncovered(joined, &mut found, rules);
    }
    found
}

/// A finding in a notebook: the diagnostic with its range in its cell's text, and the cell.
pub struct CellFinding {
    pub cell: usize,
    /// The cell's source, which the diagnostic's ranges refer to.
    pub source: String,
    pub diagnostic: Diagnostic,
}

/// Every selected finding of a notebook, in its cell's coordinates.
pub fn lint(nb: &Notebook, rules: &RuleSet, selection: &Selection) -> Result<Vec<CellFinding>, String> {
    let joined = nb.joined()?;
    let spans = Spans::of(nb, &joined);
    let masked = mask(&joined);
    let mut diagnostics = match migrate::lint(&masked.python, rules, selection) {
        Ok(linted) => linted.map(|l| l.diagnostics).unwrap_or_default(),
        Err(e) => {
            let (cell, line, _) = spans.locate(&joined, e.location.start());
            return Err(format!("cell {cell}, line {line}: syntax error, notebook not checked: {}", e.error));
        }
    };
    diagnostics.extend(magic_findings(&joined, &masked.magics, rules, selection));
    diagnostics.extend(masked.unreadable_findings(rules));
    // A program a `%%writefile` cell writes is a file of its own: checked as one.
    for (start, program) in written_programs(&joined) {
        let Ok(Some(linted)) = migrate::lint(program, rules, selection) else { continue };
        let shift = TextSize::try_from(start).unwrap_or_default();
        diagnostics.extend(linted.diagnostics.into_iter().map(|mut d| {
            d.range += shift;
            if let Some(fix) = &mut d.fix {
                fix.edits.iter_mut().for_each(|e| e.range += shift);
            }
            d
        }));
    }
    Ok(super::text::selected(diagnostics, rules, selection).into_iter().map(|d| in_cell(&spans, &joined, d)).collect())
}

/// `d` moved from the joined text into its cell's own text.
fn in_cell(spans: &Spans, joined: &str, mut d: Diagnostic) -> CellFinding {
    let (cell, _, text) = spans.locate(joined, d.range.start());
    let source = joined[text.clone()].to_string();
    let start = TextSize::try_from(text.start).unwrap_or_default();
    let local = |r: TextRange| {
        let end = TextSize::try_from(source.len()).unwrap_or_default();
        TextRange::new(r.start().saturating_sub(start).min(end), r.end().saturating_sub(start).min(end))
    };
    d.range = local(d.range);
    if let Some(fix) = &mut d.fix {
        for e in &mut fix.edits {
            e.range = local(e.range);
        }
    }
    CellFinding { cell, source, diagnostic: d }
}

/// The outcome of migrating a notebook.
#[derive(Default)]
pub struct NotebookMigration {
    /// The notebook's new JSON (equal to the input when nothing changed).
    pub output: String,
    /// (cell number, old source, new source) of each cell the migration changed, for diffs.
    pub changed: Vec<(usize, String, String)>,
    pub applied: std::collections::BTreeMap<String, usize>,
    /// What is left: (cell, line, column in characters, diagnostic), located in the original.
    pub remaining: Vec<(usize, usize, usize, Diagnostic)>,
    /// Fixes dropped because they broke the cell: (rule, cell, line, why).
    pub reverted: Vec<(String, usize, usize, String)>,
}

/// Migrate a notebook: IPython lines first (their findings then point at the user's lines),
/// then the Python engine on the result.
pub fn migrate(json: &str, rules: &RuleSet, selection: &Selection) -> Result<NotebookMigration, String> {
    let nb = Notebook::parse(json)?;
    let joined = nb.joined()?;
    let spans = Spans::of(&nb, &joined);
    let magic = super::text::migrate_with(
        &joined,
        |t| magic_findings(t, &mask(t).magics, rules, selection),
        |t| if split(t).len() == nb.cells.len() { Ok(()) } else { Err("a cell marker was edited".into()) },
        rules,
        selection,
    );
    let masked = mask(&magic.output);
    let python = migrate::migrate_isolated(&masked.python, rules, selection);
    if let Some(problem) = &python.problem {
        match problem {
            migrate::Problem::Syntax(e) => {
                let (cell, line, _) = spans.locate(&joined, magic.original_offset(e.location.start()));
                return Err(format!("cell {cell}, line {line}: syntax error, notebook left unchanged: {}", e.error));
            }
            migrate::Problem::Internal(panic) => {
                return Err(format!("internal error, notebook left unchanged: {panic}"));
            }
            migrate::Problem::NoConvergence { .. } => {}
        }
    }
    let mut after = unmask(&python.output, &masked.lines)?;
    // A program a `%%writefile` cell writes is migrated as a file of its own (the passes above
    // saw the cell as opaque, and left it as it was).
    let mut programs = Vec::new();
    for (start, program) in written_programs(&joined) {
        let m = migrate::migrate_isolated(program, rules, selection);
        if m.problem.as_ref().is_some_and(|p| !matches!(p, migrate::Problem::NoConvergence { .. })) {
            continue;
        }
        programs.push((start, program.to_string(), m));
    }
    if programs.iter().any(|(_, old, m)| m.output != *old) {
        let mut cells: Vec<String> = split(&after).into_iter().map(str::to_string).collect();
        for (start, old, m) in &programs {
            let (cell, _, _) = spans.locate(&joined, TextSize::try_from(*start).unwrap_or_default());
            let Some(index) = nb.cells.iter().position(|c| c.number == cell) else { continue };
            if let Some(text) = cells.get_mut(index).filter(|t| t.ends_with(old.as_str())) {
                text.truncate(text.len() - old.len());
                text.push_str(&m.output);
            }
        }
        after = cells.iter().map(|c| format!("{c}{CELL_END}")).collect();
    }
    let lines = LineIndex::new(&joined);
    let at = |offset: TextSize| {
        let (cell, line, text) = spans.locate(&joined, offset);
        let (_, col) = lines.line_col(&joined, offset.max(TextSize::try_from(text.start).unwrap_or_default()));
        (cell, line, col)
    };
    let mut out = NotebookMigration::default();
    for d in &magic.remaining {
        let (cell, line, col) = at(magic.original_offset(d.range.start()));
        out.remaining.push((cell, line, col, d.clone()));
    }
    for d in &python.remaining {
        let (cell, line, col) = at(magic.original_offset(python.original_offset(d.range.start())));
        out.remaining.push((cell, line, col, d.clone()));
    }
    for d in super::text::selected(masked.unreadable_findings(rules), rules, selection) {
        let (cell, line, col) = at(magic.original_offset(d.range.start()));
        out.remaining.push((cell, line, col, d));
    }
    for (start, _, m) in &programs {
        let shift = TextSize::try_from(*start).unwrap_or_default();
        for d in &m.remaining {
            let (cell, line, col) = at(m.original_offset(d.range.start()) + shift);
            out.remaining.push((cell, line, col, d.clone()));
        }
        for r in &m.reverted {
            let (cell, line, _) = at(r.offset + shift);
            out.reverted.push((r.rule.clone(), cell, line, r.reason.clone()));
        }
    }
    out.remaining.sort_by_key(|(cell, line, col, _)| (*cell, *line, *col));
    for (rule, offset, why) in &magic.reverted {
        let (cell, line, _) = at(*offset);
        out.reverted.push((rule.clone(), cell, line, why.clone()));
    }
    for r in &python.reverted {
        let (cell, line, _) = at(magic.original_offset(r.offset));
        out.reverted.push((r.rule.clone(), cell, line, r.reason.clone()));
    }
    out.applied = magic.applied;
    let programs_applied = programs.iter().flat_map(|(_, _, m)| m.applied.iter().map(|(c, n)| (c.clone(), *n)));
    for (code, n) in python.applied.into_iter().chain(programs_applied) {
        *out.applied.entry(code).or_default() += n;
    }
    out.output = nb.with_joined(&after)?;
    validate(&out.output).map_err(|e| format!("internal error, notebook left unchanged: the result {e}"))?;
    out.changed =
        nb.changed_cells(&after).into_iter().map(|(cell, old, new)| (cell, old.to_string(), new.to_string())).collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NB: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "metadata": {},
   "source": ["# Train on TPU\n", "Kaggle style."]
  },
  {
   "cell_type": "code",
   "execution_count": 1,
   "metadata": {},
   "outputs": [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}],
   "source": [
    "!pip install torch_xla[tpu]\n",
    "%env PJRT_DEVICE=TPU\n",
    "import torch_xla.core.xla_model as xm"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 2,
   "metadata": {"collapsed": false},
   "outputs": [],
   "source": "device = xm.xla_device()\nx = 1.5e-05\n"
  }
 ],
 "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

    #[test]
    fn joins_code_cells_and_puts_them_back_byte_for_byte() {
        let nb = Notebook::parse(NB).unwrap();
        let joined = nb.joined().unwrap();
        assert_eq!(split(&joined).len(), 2);
        assert!(joined.starts_with("!pip install torch_xla[tpu]\n%env PJRT_DEVICE=TPU\nimport torch_xla"));
        assert_eq!(nb.with_joined(&joined).unwrap(), NB, "an unchanged notebook is byte-stable");
    }

    #[test]
    fn an_edited_cell_keeps_its_style_and_the_rest_its_bytes() {
        let nb = Notebook::parse(NB).unwrap();
        let joined = nb.joined().unwrap().replace("xm.xla_device()", "torch.device(\"tpu:0\")");
        let out = nb.with_joined(&joined).unwrap();
        assert!(out.contains(r#""source": "device = torch.device(\"tpu:0\")\nx = 1.5e-05\n""#), "{out}");
        let joined = nb.joined().unwrap().replace("%env PJRT_DEVICE=TPU\n", "");
        let out = nb.with_joined(&joined).unwrap();
        assert!(
            out.contains(
                "[\n    \"!pip install torch_xla[tpu]\\n\",\n    \"import torch_xla.core.xla_model as xm\"\n   ]"
            ),
            "{out}"
        );
        assert!(out.contains(r#""outputs": [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}]"#));
        validate(&out).unwrap();
    }

    #[test]
    fn ipython_lines_are_python_of_the_same_length() {
        let joined = "!pip install x\n%env A=1\nimport os\n%matplotlib inline\n#%% xla2tpu: end of cell\n%%bash\necho é\n#%% xla2tpu: end of cell\n";
        let m = mask(joined);
        assert_eq!(m.python.len(), joined.len());
        assert!(m.python.starts_with("#pip install x\n#env A=1\nimport os\n#matplotlib inline\n"), "{}", m.python);
        assert!(ruff_python_parser::parse_module(&m.python).is_ok());
        let kinds: Vec<_> = m.magics.iter().map(|g| (&joined[g.range], g.kind)).collect();
        assert_eq!(kinds.len(), 3, "{kinds:?}");
        assert!(
            matches!(kinds[0].1, MagicKind::Shell { command } if &joined[usize::from(command)..14] == "pip install x")
        );
        assert!(matches!(kinds[1].1, MagicKind::Env { name } if &joined[name] == "A"));
        assert!(
            matches!(kinds[2].1, MagicKind::Shell { command } if joined[usize::from(command)..].starts_with("echo é"))
        );
        assert_eq!(unmask(&m.python, &m.lines).unwrap(), joined);
    }

    #[test]
    fn an_ipython_line_may_be_a_whole_block() {
        let joined = "if IN_COLAB:\n    !pip install x\nfor f in files:\n    %time é\n#%% xla2tpu: end of cell\n";
        let m = mask(joined);
        assert_eq!(m.python.len(), joined.len());
        assert!(ruff_python_parser::parse_module(&m.python).is_ok(), "{}", m.python);
        assert_eq!(unmask(&m.python, &m.lines).unwrap(), joined);
    }

    #[test]
    fn migrates_code_across_cells_and_locates_what_is_left() {
        let rules = RuleSet::load(&[]).unwrap();
        let m = migrate(NB, &rules, &Selection::default()).unwrap();
        let after: String = m.changed.iter().map(|(_, _, new)| new.as_str()).collect();
        assert!(after.contains("device = torch.device(\"tpu:0\")"), "{after}");
        assert!(!after.contains("import torch_xla"), "{after}");
        validate(&m.output).unwrap();
        assert!(m.output.contains(r#""outputs": [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}]"#));
        let again = migrate(&m.output, &rules, &Selection::default()).unwrap();
        assert_eq!(again.output, m.output, "a second run changes nothing");
    }

    #[test]
    fn continued_magics_and_unreadable_cells_do_not_stop_the_notebook() {
        // A `!pip` line continued with a backslash, then a cell that is a shell command
        // without `!`: before, the whole notebook failed to parse and was skipped.
        let nb = r##"{
 "cells": [
  {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
   "source": ["!pip install torch~=2.9.0 \\\n", "    torch_xla[tpu]~=2.9.0\n", "import torch_xla.core.xla_model as xm"]},
  {"cell_type": "code", "execution_count": 2, "metadata": {}, "outputs": [],
   "source": ["pip install -q datasets\n", "  --upgrade"]},
  {"cell_type": "code", "execution_count": 3, "metadata": {}, "outputs": [],
   "source": "device = xm.xla_device()\n"}
 ],
 "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;
        let rules = RuleSet::load(&[]).unwrap();
        let m = migrate(nb, &rules, &Selection::default()).unwrap();
        let after: String = m.changed.iter().map(|(_, _, new)| new.as_str()).collect();
        assert!(after.contains("device = torch.device(\"tpu:0\")"), "{after}");
        assert!(!after.contains("import torch_xla"), "{after}");
        // The continued line is one command: its torch_xla requirement is the pip handler's.
        assert!(!after.contains("torch_xla[tpu]"), "{after}");
        let unreadable: Vec<_> = m
            .remaining
            .iter()
            .filter(|(_, _, _, d)| rules.rules[d.rule].builtin == Some(crate::migrate::rules::Builtin::SyntaxError))
            .collect();
        assert_eq!(unreadable.len(), 1, "one finding for the unreadable cell");
        assert!(m.output.contains(r#""source": ["pip install -q datasets\n", "  --upgrade"]"#), "left as it is");
        validate(&m.output).unwrap();
        let again = migrate(&m.output, &rules, &Selection::default()).unwrap();
        assert_eq!(again.output, m.output, "a second run changes nothing");
        let findings = lint(&Notebook::parse(nb).unwrap(), &rules, &Selection::default()).unwrap();
        assert!(findings.iter().any(|f| f.cell == 2 && f.diagnostic.message.contains("not Python")), "lint too");
    }

    /// A notebook of code cells, as nbformat writes it.
    fn notebook(cells: &[&str]) -> String {
        let cells: Vec<serde_json::Value> = cells
            .iter()
            .map(|c| serde_json::json!({"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": c}))
            .collect();
        let nb = serde_json::json!({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5});
        serde_json::to_string_pretty(&nb).unwrap()
    }

    fn cells_of(json: &str) -> Vec<String> {
        let nb: serde_json::Value = serde_json::from_str(json).unwrap();
        nb["cells"].as_array().unwrap().iter().map(|c| c["source"].as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn what_later_cells_need_is_not_put_in_a_cell_that_restarts_the_kernel() {
        let rules = RuleSet::load(&[]).unwrap();
        let all = Selection { unsafe_fixes: true, ..Selection::default() };
        for restart in ["import os\nos._exit(0)\n", "get_ipython().kernel.do_shutdown(True)\n", "%reset -f\n"] {
            let nb = notebook(&[
                &format!("!pip install torch_xla[tpu]\nimport os\n{restart}"),
                "import torch\nimport torch_xla.runtime as xr\n",
                "print(xr.world_size())\nprint(torch.ones(1))\n",
            ]);
            let m = migrate(&nb, &rules, &all).unwrap();
            let cells = cells_of(&m.output);
            assert!(
                !cells[0].contains("import torch.distributed") && cells[0].ends_with(restart),
                "{restart}: {cells:?}"
            );
            // `os` from before the restart is gone too: imported again where it is used.
            assert!(cells[1].starts_with("import os\nimport torch\nimport torch.distributed as dist\n"), "{cells:?}");
            assert!(cells[1].contains("def torchtpu_world_size():"), "{cells:?}");
            assert!(cells[2].contains("torchtpu_world_size()"), "{cells:?}");
            assert_eq!(migrate(&m.output, &rules, &all).unwrap().output, m.output, "a second run changes nothing");
        }
        // Code before the restart still gets its imports at the top.
        let nb = notebook(&[
            "import torch_xla.runtime as xr\nprint(xr.world_size())\n%reset -f\n",
            "import torch_xla.runtime as xr\nprint(xr.global_ordinal())\n",
        ]);
        let cells = cells_of(&migrate(&nb, &rules, &all).unwrap().output);
        assert!(cells[0].starts_with("import os\nimport torch.distributed as dist\n"), "{cells:?}");
        assert!(cells[1].starts_with("import os\nimport torch.distributed as dist\n"), "{cells:?}");
    }

    #[test]
    fn a_program_a_writefile_cell_writes_is_migrated_as_a_file_of_its_own() {
        let rules = RuleSet::load(&[]).unwrap();
        let all = Selection { unsafe_fixes: true, ..Selection::default() };
        let program = "import torch\nimport torch_xla.core.xla_model as xm\n\n\ndef main():\n    \
                       device = xm.xla_device()\n\n    print(torch.ones(2, device=device))\n    xm.mark_step()\n";
        let nb = notebook(&[
            "import torch_xla.core.xla_model as xm\n",
            &format!("%%writefile train.py\n{program}"),
            &format!("%%writefile -a train.py\n{program}"),
            "!python train.py\n",
        ]);
        let findings = lint(&Notebook::parse(&nb).unwrap(), &rules, &all).unwrap();
        let in_program: Vec<(usize, String)> = findings
            .iter()
            .filter(|f| f.cell == 2)
            .map(|f| (f.cell, rules.rules[f.diagnostic.rule].code.clone()))
            .collect();
        assert_eq!(in_program.len(), 3, "the import, the device, the step: {in_program:?}");
        assert!(findings.iter().all(|f| rules.rules[f.diagnostic.rule].code != "TPU002"), "not Python, not an error");
        let m = migrate(&nb, &rules, &all).unwrap();
        let cells = cells_of(&m.output);
        assert_eq!(
            cells[1],
            "%%writefile train.py\nimport torch\n\n\ndef main():\n    device = torch.device(\"tpu:0\")\n\n    print(torch.ones(2, device=device))\n"
        );
        assert_eq!(cells[2], format!("%%writefile -a train.py\n{program}"), "a part of a file: left as it is");
        // Its own namespace: the notebook's `xm` import is not kept for it.
        assert!(!cells[0].contains("import"), "{cells:?}");
        assert_eq!(migrate(&m.output, &rules, &all).unwrap().output, m.output, "a second run changes nothing");
    }

    #[test]
    fn bad_notebooks_are_errors_not_panics() {
        for bad in [
            "",
            "[]",
            "{",
            r#"{"nbformat": 3, "cells": []}"#,
            r#"{"nbformat": 4}"#,
            r#"{"nbformat": 4, "cells": [{"cell_type": "code", "source": 3}]}"#,
            r#"{"nbformat": 4, "cells": [],}"#,
        ] {
            assert!(Notebook::parse(bad).is_err(), "{bad}");
        }
        let r = r#"{"nbformat": 4, "cells": [{"cell_type": "code", "source": "!"}], "metadata": {"kernelspec": {"language": "R"}}}"#;
        assert!(Notebook::parse(r).unwrap().cells.is_empty());
    }
}
