//! How a file writes the code we insert into it: its indentation step and quote style, and the
//! re-layout of our templates (written with four spaces and double quotes) to match. Text only:
//! nothing here knows a rule.

use ruff_python_ast::token::{Token, TokenKind};
use ruff_text_size::{Ranged, TextRange};

/// Templates indent nested lines with four spaces: each line at `indent` plus its depth in the
/// file's `unit`, joined with `newline`.
pub fn reindent(text: &str, indent: &str, unit: &str, newline: &str) -> String {
    text.split('\n')
        .map(|line| {
            let depth = (line.len() - line.trim_start_matches(' ').len()) / 4;
            format!("{indent}{}{}", unit.repeat(depth), &line[depth * 4..])
        })
        .collect::<Vec<_>>()
        .join(newline)
}

/// How a file writes what we insert into it.
pub struct FileStyle {
    /// The indentation step: the most common step between a block and the one it is nested in
    /// (one odd block, a first one indented by 3, does not decide), a tab in a file indented with
    /// tabs, four spaces in a file with no indented block.
    pub unit: &'static str,
    /// More plain strings written `'...'` than `"..."` (docstrings and triple-quoted strings
    /// do not count).
    pub single_quotes: bool,
}

impl FileStyle {
    pub fn read(tokens: &[Token], text: &str) -> FileStyle {
        const SPACES: &str = "                ";
        let mut depths: Vec<usize> = vec![0];
        let mut steps = [0usize; 17];
        let mut tabs = false;
        let (mut single, mut double) = (0usize, 0usize);
        for token in tokens {
            let src = &text[token.range()];
            match token.kind() {
                TokenKind::Indent => {
                    tabs |= src.starts_with('\t');
                    let step = src.len().saturating_sub(*depths.last().unwrap_or(&0));
                    if (1..steps.len()).contains(&step) {
                        steps[step] += 1;
                    }
                    depths.push(src.len());
                }
                TokenKind::Dedent => {
                    depths.pop();
                }
                TokenKind::String => {
                    let quoted = src.trim_start_matches(|c: char| c.is_ascii_alphabetic());
                    if !quoted.starts_with("\"\"\"") && !quoted.starts_with("'''") {
                        single += usize::from(quoted.starts_with('\''));
                        double += usize::from(quoted.starts_with('"'));
                    }
                }
                _ => {}
            }
        }
        // The most common step; on a tie the wider one (four spaces over two).
        let common = (1..steps.len()).filter(|&s| steps[s] > 0).max_by_key(|&s| (steps[s], s));
        let unit = match common {
            _ if tabs => "\t",
            Some(step) => &SPACES[..step],
            None => "    ",
        };
        FileStyle { unit, single_quotes: single > double }
    }
}

/// `text` with each plain double-quoted string (`"tpu:0"`: no prefix, no quote or backslash
/// inside, not triple-quoted) in single quotes; text that does not parse comes back unchanged.
pub fn requote_plain_strings(text: &str) -> String {
    let Ok(parsed) = ruff_python_parser::parse_module(text) else { return text.to_string() };
    let mut out = text.to_string();
    let strings: Vec<TextRange> =
        parsed.tokens().iter().filter(|t| t.kind() == TokenKind::String).map(|t| t.range()).collect();
    for range in strings.into_iter().rev() {
        let s = &text[range];
        let plain = s.len() >= 2 && s.starts_with('"') && s.ends_with('"') && !s.starts_with("\"\"\"");
        if plain && !s[1..s.len() - 1].contains(['\'', '"', '\\']) {
            out.replace_range(std::ops::Range::<usize>::from(range), &format!("'{}'", &s[1..s.len() - 1]));
        }
    }
    out
}
