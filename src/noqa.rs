//! `# noqa` comments: what they say, which findings they silence, which of their codes silence
//! nothing (ruff's RUF100), and adding them for `check --add-noqa`.
//!
//! As in flake8 and ruff, `# noqa` (every code) or `# noqa: TPU110, TPU2` (codes or prefixes) on
//! the first or last line of a finding suppresses it; a line inside a multi-line string, where no
//! comment can go, is covered by the line the string ends on. Codes are `[A-Z]+[0-9]*`; the list
//! ends at the first word that is not one, so `# noqa: TPU110 the device` lists only TPU110.
//! `# xla2tpu: noqa` (or `# xla2tpu: noqa: TPU9`) in any comment of a file, like ruff's
//! `# ruff: noqa`, suppresses every finding (of those codes) in it.
//!
//! Files that are not Python take the directive in their own comments ([`Noqa::of_text`]):
//! at the end of the line in requirements, TOML, YAML and shell scripts (where `#` starts a
//! comment); on a comment line of its own right above the instruction in Dockerfiles and
//! setup.cfg, whose values cannot end with a comment. JSON has no comments.

use rustc_hash::FxHashMap;

use ruff_python_ast::token::{TokenKind, Tokens};
use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::migrate::target::Kind;
use crate::source::line_start;

/// One `# noqa` directive.
#[derive(Debug, Clone)]
pub struct Directive {
    /// From the `#` that starts it to the end of its code list.
    pub range: TextRange,
    /// The `noqa` keyword itself.
    keyword: TextRange,
    /// `None` for a bare `# noqa`; else the listed codes and prefixes.
    pub codes: Option<Vec<String>>,
}

impl Directive {
    fn covers(&self, code: &str) -> Option<Option<usize>> {
        match &self.codes {
            None => Some(None),
            Some(codes) => codes.iter().position(|c| code.starts_with(c.as_str())).map(Some),
        }
    }
}

/// The directives of one file, by line.
#[derive(Debug, Default)]
pub struct Noqa {
    pub directives: Vec<Directive>,
    /// `# xla2tpu: noqa`: the whole file.
    pub file: Option<Directive>,
    /// Line start offset → index in `directives`.
    by_line: FxHashMap<usize, usize>,
    /// Start of a line inside a multi-line string → start of the line the string ends on.
    continued: FxHashMap<usize, usize>,
}

impl Noqa {
    /// Everything `--add-noqa` needs: also where comments can go when no directive exists yet.
    pub fn new(text: &str, tokens: &Tokens) -> Noqa {
        Self::build(text, tokens, true)
    }

    /// Enough to apply and judge existing directives: string continuations are only read when
    /// the file has a directive (most files have none).
    pub fn existing(text: &str, tokens: &Tokens) -> Noqa {
        Self::build(text, tokens, false)
    }

    fn build(text: &str, tokens: &Tokens, placement: bool) -> Noqa {
        let mut noqa = Noqa::default();
        if !placement && !mentions_noqa(text) {
            return noqa; // no directive to find: skip the walk over every token
        }
        for token in tokens.iter().filter(|t| t.kind() == TokenKind::Comment) {
            noqa.add_comment(text, token.range(), line_start(text, token.start().into()));
        }
        if noqa.directives.is_empty() && !placement {
            return noqa;
        }
        // Open f-/t-strings, innermost last: a string is one token, an f-string a run of them.
        let mut open: Vec<TextSize> = Vec::new();
        for token in tokens.iter() {
            let string = match token.kind() {
                TokenKind::FStringStart | TokenKind::TStringStart => {
                    open.push(token.start());
                    continue;
                }
                TokenKind::FStringEnd | TokenKind::TStringEnd => {
                    TextRange::new(open.pop().unwrap_or(token.start()), token.end())
                }
                TokenKind::String if open.is_empty() => token.range(),
                _ => continue,
            };
            let last = line_start(text, string.end().into());
            let mut line = line_start(text, string.start().into());
            while line < last {
                noqa.continued.insert(line, last);
                line = crate::source::line_end_inclusive(text, line);
            }
        }
        noqa
    }

    /// Read the comment at `range`: a file-level directive, or a directive for the line
    /// starting at `line`.
    fn add_comment(&mut self, text: &str, range: TextRange, line: usize) {
        let comment = &text[range];
        // The file-level directive is a comment line of its own, as ruff's.
        let own_line = text[line_start(text, range.start().into())..usize::from(range.start())].trim().is_empty();
        if let Some(d) = parse_file_level(comment, range.start()).filter(|_| own_line) {
            self.file.get_or_insert(d);
        } else if let Some(d) = parse(comment, range.start()) {
            self.by_line.insert(line, self.directives.len());
            self.directives.push(d);
        }
    }

    /// The directives of a file of another kind than Python, in that kind's comments (see the
    /// module's documentation); `None` for a kind that has no comments.
    pub fn of_text(kind: Kind, text: &str) -> Option<Noqa> {
        let style = Style::of(kind)?;
        let mut noqa = Noqa::default();
        if !mentions_noqa(text) {
            return Some(noqa);
        }
        let lines = text_lines(text);
        let comments = text_comments(kind, &lines);
        // A line continued with `\` is covered by (and takes its comment on) the last line of
        // its instruction; above-the-line kinds key everything on the instruction's first line.
        let mut first = 0;
        for (i, &(start, line)) in lines.iter().enumerate() {
            let continued_from = i > 0 && continues(lines[i - 1].1);
            if !continued_from {
                first = i;
            }
            if style == Style::Trailing && continues(line) {
                let last = (i..lines.len()).find(|&j| !continues(lines[j].1)).unwrap_or(lines.len() - 1);
                noqa.continued.insert(start, lines[last].0);
            } else if style == Style::Above && continued_from {
                noqa.continued.insert(start, lines[first].0);
            }
        }
        for (i, comment) in comments.iter().enumerate() {
            let Some(range) = comment else { continue };
            let own_line = lines[i].0;
            let keyed = match style {
                Style::Trailing => own_line,
                // A directive on a comment line covers the next line that is not a comment.
                Style::Above => match (i + 1..lines.len()).find(|&j| !is_comment_line(kind, lines[j].1)) {
                    Some(j) => lines[j].0,
                    None => continue,
                },
            };
            noqa.add_comment(text, *range, keyed);
        }
        Some(noqa)
    }

    /// The directives of a notebook's shell lines (`!pip install …`, `%pip`, `%%bash` cells),
    /// given as ranges of the joined cells `text`, whose ends they take like a shell script's;
    /// and the file-level directive of any comment line.
    pub fn of_shell_lines(text: &str, ranges: impl Iterator<Item = TextRange>) -> Noqa {
        let mut noqa = Noqa::default();
        for range in ranges {
            let lines = text_lines(&text[range]);
            let base = usize::from(range.start());
            for (i, &(start, line)) in lines.iter().enumerate() {
                if continues(line) {
                    let last = (i..lines.len()).find(|&j| !continues(lines[j].1)).unwrap_or(lines.len() - 1);
                    noqa.continued.insert(base + start, base + lines[last].0);
                }
                if let Some(hash) = quoted_comment(Kind::Shell, line) {
                    let at = |o: usize| TextSize::try_from(base + o).expect("file sizes fit in u32");
                    noqa.add_comment(text, TextRange::new(at(start + hash), at(start + line.len())), base + start);
                }
            }
        }
        for (start, line) in text_lines(text) {
            if noqa.file.is_none() && line.trim_start().starts_with('#') {
                let hash = start + line.len() - line.trim_start().len();
                let at = |o: usize| TextSize::try_from(o).expect("file sizes fit in u32");
                noqa.file = parse_file_level(&text[hash..start + line.len()], at(hash));
            }
        }
        noqa
    }

    /// Whether the directives suppress `code` at `range`.
    pub fn covers(&self, text: &str, range: TextRange, code: &str) -> bool {
        self.file.as_ref().is_some_and(|d| d.covers(code).is_some()) || self.find(text, range, code).is_some()
    }

    /// `diagnostics` without those the directives suppress.
    pub fn retain_uncovered(
        &self,
        text: &str,
        diagnostics: &mut Vec<crate::migrate::diagnostic::Diagnostic>,
        rules: &crate::migrate::rules::RuleSet,
    ) {
        if self.file.is_none() && self.directives.is_empty() {
            return;
        }
        diagnostics.retain(|d| !self.covers(text, d.range, &rules.rules[d.rule].code));
    }

    /// The line whose end can carry a comment for the line starting at `line`.
    fn comment_line(&self, line: usize) -> usize {
        self.continued.get(&line).copied().unwrap_or(line)
    }

    /// The directive that suppresses `code` at `range`, and which of its codes does
    /// (`None` for a bare `# noqa`).
    pub fn find(&self, text: &str, range: TextRange, code: &str) -> Option<(usize, Option<usize>)> {
        [range.start(), range.end()].into_iter().find_map(|offset| {
            let i = *self.by_line.get(&self.comment_line(line_start(text, offset.into())))?;
            self.directives[i].covers(code).map(|c| (i, c))
        })
    }

    /// The directive on the line starting at `line`.
    fn on_line(&self, line: usize) -> Option<&Directive> {
        self.by_line.get(&line).map(|&i| &self.directives[i])
    }

    /// Whether any directive lists codes (only those can be unused: a bare `# noqa` may be
    /// there for another linter).
    pub fn lists_codes(&self) -> bool {
        self.directives.iter().any(|d| d.codes.as_ref().is_some_and(|c| !c.is_empty()))
    }

    /// `text` with every `noqa` keyword blanked out (same length, so offsets hold): linting it
    /// shows what the directives suppress.
    pub fn mask(&self, text: &str) -> String {
        let mut masked = text.to_string();
        for d in self.directives.iter().chain(&self.file) {
            masked.replace_range(std::ops::Range::<usize>::from(d.keyword), "____");
        }
        masked
    }

    /// Directives with codes that suppress nothing. `findings` are every (range, code) the file
    /// would have without its directives; `rules` says what each listed code is.
    pub fn unused(&self, text: &str, findings: &[(TextRange, &str)], rules: &dyn Fn(&str) -> Known) -> Vec<Unused> {
        let mut used: Vec<Vec<bool>> =
            self.directives.iter().map(|d| vec![false; d.codes.as_ref().map_or(0, Vec::len)]).collect();
        for &(range, code) in findings {
            if let Some((d, Some(c))) = self.find(text, range, code) {
                used[d][c] = true;
            }
        }
        let mut out = Vec::new();
        for (d, used) in self.directives.iter().zip(used) {
            let mut report = Unused { range: d.range, ..Unused::default() };
            for (code, used) in d.codes.iter().flatten().zip(used) {
                match rules(code) {
                    _ if used => {}
                    Known::Enabled => report.unused.push(code.clone()),
                    Known::Disabled => report.disabled.push(code.clone()),
                    Known::Unknown => report.unknown.push(code.clone()),
                    Known::Foreign => {}
                }
            }
            if !(report.unused.is_empty() && report.disabled.is_empty() && report.unknown.is_empty()) {
                out.push(report);
            }
        }
        out
    }
}

/// What a code in a directive refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// A code or prefix of at least one enabled rule.
    Enabled,
    /// Only of rules not selected for this file.
    Disabled,
    /// Looks like one of ours (same letters as a loaded rule) but matches no rule.
    Unknown,
    /// Another tool's code (`F401`, `E501`): none of our business.
    Foreign,
}

/// A directive with codes that suppress nothing.
#[derive(Debug, Default)]
pub struct Unused {
    pub range: TextRange,
    pub unused: Vec<String>,
    pub disabled: Vec<String>,
    pub unknown: Vec<String>,
}

impl Unused {
    /// ruff's wording: "unused `noqa` directive (unused: `TPU110`; unknown: `TPU999`)".
    pub fn message(&self) -> String {
        let list = |codes: &[String]| codes.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ");
        let parts: Vec<String> =
            [("unused", &self.unused), ("non-enabled", &self.disabled), ("unknown", &self.unknown)]
                .into_iter()
                .filter(|(_, codes)| !codes.is_empty())
                .map(|(what, codes)| format!("{what}: {}", list(codes)))
                .collect();
        format!("unused `noqa` directive ({})", parts.join("; "))
    }
}

/// The directive in a comment token's text, if any (`at`: the comment's offset).
/// Whether `noqa` appears in any letter case (directives are case-insensitive): a SIMD search
/// for its 16 spellings, much faster than walking every token of a file that has none.
pub fn mentions_noqa(text: &str) -> bool {
    static SPELLINGS: std::sync::LazyLock<aho_corasick::AhoCorasick> = std::sync::LazyLock::new(|| {
        let spellings = (0..16u8).map(|mask| {
            "noqa"
                .bytes()
                .enumerate()
                .map(|(i, b)| if mask >> i & 1 == 1 { b.to_ascii_uppercase() } else { b } as char)
                .collect::<String>()
        });
        aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostFirst)
            .build(spellings)
            .expect("literals")
    });
    SPELLINGS.is_match(text)
}

fn parse(comment: &str, at: TextSize) -> Option<Directive> {
    directive(comment, at, "")
}

/// `# xla2tpu: noqa` or `# xla2tpu: noqa: CODES`, for the whole file.
fn parse_file_level(comment: &str, at: TextSize) -> Option<Directive> {
    directive(comment, at, "xla2tpu:")
}

/// A directive whose `noqa` keyword follows `#`, blanks and `prefix` (and blanks after it).
fn directive(comment: &str, at: TextSize, prefix: &str) -> Option<Directive> {
    let lower = comment.to_ascii_lowercase();
    // `# noqa` may follow another comment on the line: `# the device  # noqa: TPU101`.
    let (hash, keyword) = lower.match_indices('#').find_map(|(hash, _)| {
        let after = lower[hash + 1..].trim_start().strip_prefix(prefix)?;
        let keyword = lower.len() - after.trim_start().len();
        let next = lower[keyword..].strip_prefix("noqa")?.chars().next();
        (!next.is_some_and(|c| c.is_alphanumeric() || c == '_')).then_some((hash, keyword))
    })?;
    let offset = |i: usize| at + TextSize::try_from(i).expect("comments are short");
    let range_of = |start: usize, end: usize| TextRange::new(offset(start), offset(end));
    let mut end = keyword + 4;
    let codes = match comment[end..].trim_start().strip_prefix(':') {
        None => None,
        Some(list) => {
            // Codes separated by commas and blanks, up to the first word that is not one.
            end = comment.len() - list.len();
            let (mut codes, mut rest) = (Vec::new(), list);
            loop {
                rest = rest.trim_start_matches([',', ' ', '\t']);
                let word = &rest[..rest.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(rest.len())];
                if !is_code(word) {
                    break;
                }
                codes.push(word.to_string());
                rest = &rest[word.len()..];
                end = comment.len() - rest.len();
            }
            Some(codes)
        }
    };
    Some(Directive { range: range_of(hash, end), keyword: range_of(keyword, keyword + 4), codes })
}

/// flake8's code syntax, prefixes included: capitals, then digits.
fn is_code(word: &str) -> bool {
    let digits = word.trim_start_matches(|c: char| c.is_ascii_uppercase());
    digits.len() < word.len() && digits.chars().all(|c| c.is_ascii_digit())
}

/// Where a kind of file that is not Python takes its directives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// At the end of the finding's line.
    Trailing,
    /// On a comment line of its own right above the instruction (Dockerfile, setup.cfg).
    Above,
}

impl Style {
    fn of(kind: Kind) -> Option<Style> {
        match kind {
            Kind::Requirements | Kind::Pyproject | Kind::CondaEnv | Kind::Yaml | Kind::Shell => Some(Style::Trailing),
            Kind::Dockerfile | Kind::SetupCfg => Some(Style::Above),
            Kind::Python | Kind::SetupPy | Kind::Notebook | Kind::Json => None,
        }
    }
}

/// (start offset, text without its line break) of each line.
fn text_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        out.push((start, line.trim_end_matches(['\n', '\r'])));
        start += line.len();
    }
    out
}

/// A line whose instruction goes on after it (`\` at its end).
fn continues(line: &str) -> bool {
    line.trim_end().ends_with('\\')
}

/// A line that holds only a comment, by the kind's syntax.
fn is_comment_line(kind: Kind, line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with('#') || (kind == Kind::SetupCfg && t.starts_with(';'))
}

/// The comment of each line (from its `#` to the line's end), by the kind's syntax: a `#` that
/// is not inside quotes and starts a word (requirements, YAML, shell) or anywhere outside
/// strings (TOML, whose multi-line strings are followed across lines); in Dockerfiles and
/// setup.cfg only a line that is all comment.
fn text_comments(kind: Kind, lines: &[(usize, &str)]) -> Vec<Option<TextRange>> {
    let at = |o: usize| TextSize::try_from(o).expect("file sizes fit in u32");
    // TOML: the delimiter of a multi-line string still open at the end of the previous line.
    let mut open: Option<&str> = None;
    lines
        .iter()
        .map(|&(start, line)| {
            let hash = match kind {
                Kind::Dockerfile | Kind::SetupCfg => {
                    is_comment_line(kind, line).then(|| line.len() - line.trim_start().len())
                }
                Kind::Pyproject => toml_comment(line, &mut open),
                Kind::Requirements => line
                    .match_indices('#')
                    .map(|(i, _)| i)
                    .find(|&i| i == 0 || line[..i].ends_with(char::is_whitespace)),
                _ => quoted_comment(kind, line),
            }?;
            Some(TextRange::new(at(start + hash), at(start + line.len())))
        })
        .collect()
}

/// Where a TOML line's comment starts: outside basic and literal strings, following
/// multi-line strings (`\"\"\"`, `\'\'\'`) from line to line through `open`.
fn toml_comment(line: &str, open: &mut Option<&'static str>) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if let Some(delim) = *open {
            match line[i..].find(delim) {
                Some(end) => {
                    // A basic string's `\"""` does not close it.
                    let escaped = delim == "\"\"\"" && line[..i + end].ends_with('\\');
                    i += end + 3;
                    if !escaped {
                        *open = None;
                    }
                    continue;
                }
                None => return None,
            }
        }
        match bytes[i] {
            b'#' => return Some(i),
            b'"' | b'\'' => {
                let quote = bytes[i];
                let triple = if quote == b'"' { "\"\"\"" } else { "\'\'\'" };
                if line[i..].starts_with(triple) {
                    *open = Some(triple);
                    i += 3;
                    continue;
                }
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += if quote == b'"' && bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// Where a YAML or shell line's comment starts: a `#` at the start of a word, outside quotes.
/// In YAML a quote opens a string only where a value starts (`it's` is plain text).
fn quoted_comment(kind: Kind, line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let word_start = |i: usize| {
        i == 0
            || bytes[i - 1].is_ascii_whitespace()
            || (kind == Kind::Shell && matches!(bytes[i - 1], b';' | b'&' | b'|' | b'(' | b')'))
    };
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'#' if word_start(i) => return Some(i),
            b'"' | b'\''
                if kind == Kind::Shell || word_start(i) || matches!(bytes[i - 1], b'[' | b'{' | b',' | b':') =>
            {
                let quote = bytes[i];
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += if quote == b'"' && bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'\\' if kind == Kind::Shell => i += 2,
            _ => i += 1,
        }
    }
    None
}

/// What `check --add-noqa` does to one file.
#[derive(Debug, Default)]
pub struct Additions {
    /// Insertions (offset, text), ascending.
    pub edits: Vec<(TextSize, String)>,
    /// Findings that no line can carry a comment for (a line continued with `\`).
    pub unplaceable: Vec<TextRange>,
}

impl Additions {
    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (at, insertion) in self.edits.iter().rev() {
            out.insert_str(usize::from(*at), insertion);
        }
        out
    }
}

/// The comments that suppress every finding: a new `  # noqa: CODE` at the end of the finding's
/// line, or the code appended to the directive already there. `findings` are the (range, code)
/// pairs still reported.
pub fn additions(text: &str, tokens: &Tokens, noqa: &Noqa, findings: &[(TextRange, &str)]) -> Additions {
    // Line start → codes to add, in finding order.
    let mut wanted: std::collections::BTreeMap<usize, Vec<&str>> = Default::default();
    let mut unplaceable = Vec::new();
    for &(range, code) in findings {
        let line = [range.start(), range.end()]
            .into_iter()
            .map(|o| noqa.comment_line(line_start(text, o.into())))
            .find(|&line| can_take_comment(text, tokens, line));
        match line {
            Some(line) => {
                let codes = wanted.entry(line).or_default();
                if !codes.contains(&code) {
                    codes.push(code);
                }
            }
            None => unplaceable.push(range),
        }
    }
    let edits = wanted
        .into_iter()
        .map(|(line, codes)| edit(text, noqa, line, &codes, (content_end(text, line), "  # noqa: ")))
        .collect();
    Additions { edits, unplaceable }
}

/// The insertion that adds `codes` for the line starting at `line`: into its directive, or as
/// a new one (`new`: where, and what precedes the list).
fn edit(text: &str, noqa: &Noqa, line: usize, codes: &[&str], new: (TextSize, &str)) -> (TextSize, String) {
    let list = codes.join(", ");
    // A bare `# noqa` lets nothing through, so a line with findings has none or a list.
    let mut edit = match noqa.on_line(line).and_then(|d| Some((d.range.end(), d.codes.as_ref()?))) {
        Some((end, listed)) if listed.is_empty() => (end, format!(" {list}")),
        Some((end, _)) => (end, format!(", {list}")),
        None => (new.0, format!("{}{list}", new.1)),
    };
    // `#noqa:o` lists nothing and ends at the colon: glued to the `o`, the code we add
    // would read `TPU001o`, no code at all, and suppress nothing.
    if text[usize::from(edit.0)..].starts_with(|c: char| c.is_ascii_alphanumeric()) {
        edit.1.push(' ');
    }
    edit
}

/// [`additions`] for a file of another kind: the directive at the end of the finding's line (the
/// last of a continued one), or on a line of its own above the instruction (Dockerfile,
/// setup.cfg), indented as it is. A kind without comments (JSON) can take none.
pub fn text_additions(kind: Kind, text: &str, noqa: &Noqa, findings: &[(TextRange, &str)]) -> Additions {
    let Some(style) = Style::of(kind) else {
        return Additions { edits: Vec::new(), unplaceable: findings.iter().map(|f| f.0).collect() };
    };
    let mut wanted: std::collections::BTreeMap<usize, Vec<&str>> = Default::default();
    let mut unplaceable = Vec::new();
    for &(range, code) in findings {
        let line = [range.start(), range.end()]
            .into_iter()
            .map(|o| noqa.comment_line(line_start(text, o.into())))
            .find(|&line| style == Style::Above || !continues(&text[line..usize::from(content_end(text, line))]));
        match line {
            Some(line) => {
                let codes = wanted.entry(line).or_default();
                if !codes.contains(&code) {
                    codes.push(code);
                }
            }
            None => unplaceable.push(range),
        }
    }
    let edits = wanted
        .into_iter()
        .map(|(line, codes)| {
            if style == Style::Trailing || noqa.on_line(line).is_some() {
                return edit(text, noqa, line, &codes, (content_end(text, line), "  # noqa: "));
            }
            // A line of its own, indented as the instruction and ending as its line does.
            let content = &text[line..];
            let indent = &content[..content.len() - content.trim_start_matches([' ', '\t']).len()];
            let crlf = content.find('\n').is_some_and(|i| content[..i].ends_with('\r'));
            let at = TextSize::try_from(line).expect("file sizes fit in u32");
            (at, format!("{indent}# noqa: {}{}", codes.join(", "), if crlf { "\r\n" } else { "\n" }))
        })
        .collect();
    Additions { edits, unplaceable }
}

/// Where a trailing comment goes on the line starting at `line`: after its last non-blank character.
fn content_end(text: &str, line: usize) -> TextSize {
    let eol = text[line..].find('\n').map_or(text.len(), |i| line + i);
    let content = text[line..eol].trim_end();
    TextSize::try_from(line + content.len()).expect("file sizes fit in u32")
}

/// A comment can end this line unless its line break is inside a token (a multi-line string)
/// or escaped by a trailing backslash.
fn can_take_comment(text: &str, tokens: &Tokens, line: usize) -> bool {
    let end = content_end(text, line);
    let at = |o: usize| TextSize::try_from(o).expect("file sizes fit in u32");
    let break_at = text[usize::from(end)..].find(['\r', '\n']).map(|i| at(usize::from(end) + i));
    // The last token starting at or before the line break: a string that runs on covers it.
    let inside = break_at.is_some_and(|nl| {
        let i = tokens.partition_point(|t| t.start() <= nl);
        i > 0 && tokens[i - 1].end() > nl && !tokens[i - 1].kind().is_any_newline()
    });
    let commented = tokens[..tokens.partition_point(|t| t.start() < end)]
        .iter()
        .rev()
        .take_while(|t| t.start() >= at(line))
        .any(|t| t.kind() == TokenKind::Comment);
    !inside && (commented || !text[line..usize::from(end)].ends_with('\\'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(comment: &str) -> Option<Vec<String>> {
        parse(comment, TextSize::default()).expect("a directive").codes
    }

    #[test]
    fn noqa_is_found_in_any_letter_case() {
        assert!(mentions_noqa("x = 1  # nOqA: TPU110\n"));
        assert!(mentions_noqa("x = 1  # NOQA\n"));
        assert!(!mentions_noqa("x = 1  # no qa\n"));
    }

    #[test]
    fn directives_are_parsed_like_flake8() {
        assert_eq!(codes("# noqa"), None);
        assert_eq!(codes("#NOQA"), None);
        assert_eq!(codes("# noqa: TPU110, TPU2"), Some(vec!["TPU110".into(), "TPU2".into()]));
        assert_eq!(codes("# noqa:TPU110 F401 the device"), Some(vec!["TPU110".into(), "F401".into()]));
        assert_eq!(codes("# the device  # noqa: TPU101"), Some(vec!["TPU101".into()]));
        assert_eq!(codes("# noqa:"), Some(vec![]));
        assert!(parse("# noqabc", TextSize::default()).is_none());
        assert!(parse("# see the noqa docs", TextSize::default()).is_none());
    }

    #[test]
    fn a_line_inside_a_multiline_string_is_covered_by_the_line_it_ends_on() {
        let text = "x = f\"\"\"{'xla'}\nmore\"\"\"  # noqa: TPU102\ny = 1  # noqa: TPU1\n";
        let parsed = ruff_python_parser::parse_module(text).expect("parses");
        let noqa = Noqa::new(text, parsed.tokens());
        let xla = TextRange::at(TextSize::from(9), TextSize::from(5));
        assert_eq!(&text[xla], "'xla'");
        assert_eq!(noqa.find(text, xla, "TPU102"), Some((0, Some(0))));
        assert_eq!(noqa.find(text, xla, "TPU101"), None);
        let y = TextRange::at(TextSize::try_from(text.find('y').unwrap()).unwrap(), TextSize::from(1));
        assert_eq!(noqa.find(text, y, "TPU110"), Some((1, Some(0))));
    }

    /// The comment each kind's syntax starts on `line`, as text.
    fn comment_of(kind: Kind, line: &str) -> Option<String> {
        let lines = text_lines(line);
        text_comments(kind, &lines)[0].map(|r| line[r].to_string())
    }

    #[test]
    fn each_kind_has_its_own_comments() {
        let req = Kind::Requirements;
        assert_eq!(comment_of(req, "torch_xla  # noqa").as_deref(), Some("# noqa"));
        assert_eq!(comment_of(req, "pkg @ git+https://x/y.git#egg=pkg"), None, "a URL fragment");
        assert_eq!(comment_of(Kind::Pyproject, "a = \"x # y\"  # noqa").as_deref(), Some("# noqa"));
        assert_eq!(comment_of(Kind::Pyproject, "a = 'x # y'").as_deref(), None);
        assert_eq!(comment_of(Kind::Yaml, "command: echo it's # noqa").as_deref(), Some("# noqa"));
        assert_eq!(comment_of(Kind::Yaml, "value: \"a # b\"").as_deref(), None);
        assert_eq!(comment_of(Kind::Yaml, "url: http://x/#frag").as_deref(), None);
        assert_eq!(comment_of(Kind::Shell, "echo 'a # b' \"c # d\" e\\#f;# noqa").as_deref(), Some("# noqa"));
        assert_eq!(comment_of(Kind::Dockerfile, "ENV A=1 # not a comment"), None);
        assert_eq!(comment_of(Kind::Dockerfile, "  # noqa: TPU501").as_deref(), Some("# noqa: TPU501"));
        assert_eq!(comment_of(Kind::SetupCfg, "; noqa").as_deref(), Some("; noqa"));
    }

    #[test]
    fn toml_multiline_strings_hold_no_comments() {
        let text = "a = \"\"\"\nnot # a comment\n\"\"\"  # noqa\n";
        let lines = text_lines(text);
        let found: Vec<Option<&str>> =
            text_comments(Kind::Pyproject, &lines).into_iter().map(|r| r.map(|r| &text[r])).collect();
        assert_eq!(found, [None, None, Some("# noqa")]);
    }

    #[test]
    fn a_file_level_directive_is_a_line_of_its_own() {
        let text = "x  # xla2tpu: noqa\n  # xla2tpu: NOQA: TPU9, TPU5\n";
        let noqa = Noqa::of_text(Kind::Shell, text).expect("shell has comments");
        let file = noqa.file.expect("the second line's");
        assert_eq!(file.codes, Some(vec!["TPU9".to_string(), "TPU5".to_string()]));
        assert!(noqa.directives.is_empty(), "`xla2tpu: noqa` is not a line directive");
    }

    #[test]
    fn a_directive_range_ends_after_its_codes() {
        let comment = "# noqa: TPU110, F401 because";
        let d = parse(comment, TextSize::from(10)).expect("a directive");
        assert_eq!(d.range, TextRange::new(10.into(), 30.into()));
        assert_eq!(&comment[usize::from(d.keyword.start()) - 10..usize::from(d.keyword.end()) - 10], "noqa");
    }
}
