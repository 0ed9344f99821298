//! `# noqa` comments: what they say, which findings they silence, which of their codes silence
//! nothing (ruff's RUF100), and adding them for `check --add-noqa`.
//!
//! As in flake8 and ruff, `# noqa` (every code) or `# noqa: TPU110, TPU2` (codes or prefixes) on
//! the first or last line of a finding suppresses it; a line inside a multi-line string, where no
//! comment can go, is covered by the line the string ends on. Codes are `[A-Z]+[0-9]*`; the list
//! ends at the first word that is not one, so `# noqa: TPU110 the device` lists only TPU110.

use rustc_hash::FxHashMap;

use ruff_python_ast::token::{TokenKind, Tokens};
use ruff_text_size::{Ranged, TextRange, TextSize};

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
            if let Some(d) = parse(&text[token.range()], token.start()) {
                noqa.by_line.insert(line_start(text, token.start().into()), noqa.directives.len());
                noqa.directives.push(d);
            }
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
        for d in &self.directives {
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
fn mentions_noqa(text: &str) -> bool {
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
    let lower = comment.to_ascii_lowercase();
    // `# noqa` may follow another comment on the line: `# the device  # noqa: TPU101`.
    let (hash, keyword) = lower.match_indices('#').find_map(|(hash, _)| {
        let after = &lower[hash + 1..];
        let keyword = hash + 1 + (after.len() - after.trim_start().len());
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
    let mut edits = Vec::new();
    for (line, codes) in wanted {
        let list = codes.join(", ");
        // A bare `# noqa` lets nothing through, so a line with findings has none or a list.
        let mut edit = match noqa.on_line(line).and_then(|d| Some((d.range.end(), d.codes.as_ref()?))) {
            Some((end, listed)) if listed.is_empty() => (end, format!(" {list}")),
            Some((end, _)) => (end, format!(", {list}")),
            None => (content_end(text, line), format!("  # noqa: {list}")),
        };
        // `#noqa:o` lists nothing and ends at the colon: glued to the `o`, the code we add
        // would read `TPU001o`, no code at all, and suppress nothing.
        if text[usize::from(edit.0)..].starts_with(|c: char| c.is_ascii_alphanumeric()) {
            edit.1.push(' ');
        }
        edits.push(edit);
    }
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

    #[test]
    fn a_directive_range_ends_after_its_codes() {
        let comment = "# noqa: TPU110, F401 because";
        let d = parse(comment, TextSize::from(10)).expect("a directive");
        assert_eq!(d.range, TextRange::new(10.into(), 30.into()));
        assert_eq!(&comment[usize::from(d.keyword.start()) - 10..usize::from(d.keyword.end()) - 10], "noqa");
    }
}
