//! How a file writes the code we insert into it: its indentation step and quote style, and the
//! re-layout of our templates (written with four spaces and double quotes) to match, and the
//! breaking of calls our fixes made too long. Text and syntax only: nothing here knows a rule.

use ruff_python_ast::statement_visitor::{StatementVisitor, walk_stmt};
use ruff_python_ast::token::{Token, TokenKind};
use ruff_python_ast::{self as ast};
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

/// The width `ruff format` keeps lines to (its default, and PEP 8's limit plus ten percent).
pub const LINE_LENGTH: usize = 88;

/// The edits that break the calls our fixes made too long, as `ruff format` breaks them: the
/// arguments on their own line (`x = f(\n    a, b\n)`), else one per line with a trailing comma.
/// Only in a file with no line past [`LINE_LENGTH`] (one a formatter keeps, so the break is its
/// style), only lines that are not in `original` (a line the user wrote long stays), and only a
/// one-line statement that is a call or assigns one, with nothing after it on its line: anything
/// else is left as it is.
pub fn break_long_calls(original: &str, text: &str, module: &ast::ModModule, unit: &str) -> Vec<(TextRange, String)> {
    let width = |line: &str| line.trim_end_matches(['\r', '\n']).chars().count();
    // A formatter leaves comments long: only long code says the file is not formatted.
    if original.lines().any(|l| width(l) > LINE_LENGTH && !l.trim_start().starts_with('#')) {
        return Vec::new();
    }
    let theirs: std::collections::HashSet<&str> = original.lines().collect();
    let newline = crate::source::newline_of(text);
    let mut calls = Calls(Vec::new());
    calls.visit_body(&module.body);
    let mut edits = Vec::new();
    for (stmt, call) in calls.0 {
        let (start, end) = (usize::from(stmt.start()), usize::from(stmt.end()));
        let line_start = crate::source::line_start(text, start);
        let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
        let line = &text[line_start..line_end];
        if width(line) <= LINE_LENGTH
            || theirs.contains(line.trim_end_matches('\r'))
            || !text[end..line_end].trim().is_empty()
            || text[start..end].contains('\n')
            || usize::from(call.end()) != end
        {
            continue;
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        let (open, close) = (usize::from(call.arguments.start()), usize::from(call.arguments.end()));
        let inner = text[open + 1..close - 1].trim();
        if inner.is_empty() || width(&text[line_start..=open]) > LINE_LENGTH {
            continue;
        }
        let inside = format!("{indent}{unit}");
        let hugged = format!("{inside}{inner}");
        let args: Vec<(&str, bool)> = call
            .arguments
            .iter_source_order()
            .map(|a| match a {
                ast::ArgOrKeyword::Arg(e) => (&text[a.range()], is_atom(e)),
                ast::ArgOrKeyword::Keyword(k) => (&text[a.range()], is_atom(&k.value)),
            })
            .collect();
        // What does not fit even on a line of its own stays long where ruff cannot break it (a
        // string, a name); where it could (a call, a list), ruff would: not ours to guess.
        let fits = |line: &str, atom: bool| atom || width(line) <= LINE_LENGTH;
        let replacement = if !inner.ends_with(',') && (width(&hugged) <= LINE_LENGTH || args.len() == 1) {
            if !fits(&hugged, args.len() == 1 && args[0].1) {
                continue;
            }
            format!("{newline}{hugged}{newline}{indent}")
        } else {
            if args.iter().any(|(a, atom)| !fits(&format!("{inside}{a},"), *atom)) {
                continue;
            }
            let listed: String = args.iter().map(|(a, _)| format!("{newline}{inside}{a},")).collect();
            format!("{listed}{newline}{indent}")
        };
        let range = TextRange::new(
            call.arguments.start() + ruff_text_size::TextSize::from(1),
            call.arguments.end() - ruff_text_size::TextSize::from(1),
        );
        edits.push((range, replacement));
    }
    edits
}

/// An expression `ruff format` never breaks across lines: a literal, a name, `a.b.c`.
fn is_atom(expr: &ast::Expr) -> bool {
    match expr {
        ast::Expr::StringLiteral(_)
        | ast::Expr::BytesLiteral(_)
        | ast::Expr::FString(_)
        | ast::Expr::NumberLiteral(_)
        | ast::Expr::BooleanLiteral(_)
        | ast::Expr::NoneLiteral(_)
        | ast::Expr::Name(_) => true,
        ast::Expr::Attribute(a) => is_atom(&a.value),
        _ => false,
    }
}

/// Every simple statement that is a call, or assigns one to one target: (statement, call).
struct Calls<'a>(Vec<(&'a ast::Stmt, &'a ast::ExprCall)>);

impl<'a> StatementVisitor<'a> for Calls<'a> {
    fn visit_stmt(&mut self, stmt: &'a ast::Stmt) {
        let call = match stmt {
            ast::Stmt::Expr(e) => e.value.as_call_expr(),
            ast::Stmt::Assign(a) if a.targets.len() == 1 => a.value.as_call_expr(),
            _ => None,
        };
        if let Some(call) = call {
            self.0.push((stmt, call));
        }
        walk_stmt(self, stmt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broken(original: &str, text: &str) -> String {
        let parsed = ruff_python_parser::parse_module(text).expect("parses");
        let mut out = text.to_string();
        let mut edits = break_long_calls(original, text, parsed.syntax(), "    ");
        edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start()));
        for (range, content) in edits {
            out.replace_range(std::ops::Range::<usize>::from(range), &content);
        }
        out
    }

    #[test]
    fn calls_a_fix_made_too_long_break_as_ruff_breaks_them() {
        let long = format!("x = f({})\n", "a".repeat(83));
        // On a line of its own, the arguments fit: hugged.
        assert_eq!(broken("x = 1\n", &long), format!("x = f(\n    {}\n)\n", "a".repeat(83)));
        // They do not: one a line, with the trailing comma.
        let args = format!("{}, {}", "a".repeat(50), "b".repeat(50));
        assert_eq!(
            broken("x = 1\n", &format!("f({args})\n")),
            format!("f(\n    {},\n    {},\n)\n", "a".repeat(50), "b".repeat(50))
        );
        // One string that fits nowhere: hugged, left long, as ruff leaves it.
        let text = format!("print(f\"{}\")\n", "s".repeat(90));
        assert_eq!(broken("x = 1\n", &text), format!("print(\n    f\"{}\"\n)\n", "s".repeat(90)));
    }

    #[test]
    fn what_the_user_wrote_long_or_ruff_would_break_elsewhere_stays() {
        let long = format!("x = f({})\n", "a".repeat(83));
        // The line was the user's, or the file has long code of its own: their style.
        assert_eq!(broken(&long, &long), long);
        assert_eq!(broken(&format!("y = {}\n", "1".repeat(90)), &long), long);
        // A long comment does not count: formatters leave comments alone.
        assert_ne!(broken(&format!("# {}\n", "c".repeat(90)), &long), long);
        // A trailing comment, or a call ruff would break inside: not ours to guess.
        let commented = format!("x = f({})  # why\n", "a".repeat(83));
        assert_eq!(broken("x = 1\n", &commented), commented);
        let nested = format!("f(g({}))\n", "a".repeat(90));
        assert_eq!(broken("x = 1\n", &nested), nested);
    }
}
