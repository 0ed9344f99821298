//! The migrate/check engine. Per file: parse → resolve ([`semantic`]) →
//! match ([`checker`]) → fix ([`fix`]), to a fixpoint; [`render`] and
//! [`commands`] turn results into diffs, diagnostics and files.
//!
//! Ruff's guarantees: all non-overlapping edits of a pass are applied
//! together, the result is re-parsed, and passes repeat until nothing is left
//! to fix (bounded). A pass that breaks the syntax reverts the whole file.

pub mod checker;
pub mod commands;
pub mod fix;
pub mod render;
pub mod rules;
pub mod semantic;

use std::collections::{BTreeMap, BTreeSet};

use ruff_python_ast::{self as ast, Stmt};
use ruff_python_parser::{ParseError, Parsed, parse_module};
use ruff_text_size::{Ranged, TextSize};

use crate::source::{line_end_inclusive, newline_of};
use checker::{CheckResult, Diagnostic, check};
use fix::{Edit, Fix, ImportRequest};
use rules::{RuleSet, Safety};

/// Passes before we give up on converging (ruff's test harness uses 10).
pub const MAX_PASSES: usize = 10;

/// Which findings to report and which fixes to apply.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Codes or prefixes to keep (empty = all).
    pub select: Vec<String>,
    /// Codes or prefixes to drop.
    pub ignore: Vec<String>,
    pub unsafe_fixes: bool,
}

impl Selection {
    pub fn enabled(&self, code: &str) -> bool {
        let hit = |list: &[String]| list.iter().any(|p| code.starts_with(p.as_str()) || p == "ALL");
        (self.select.is_empty() || hit(&self.select)) && !hit(&self.ignore)
    }

    fn applies(&self, fix: &Fix) -> bool {
        fix.safety == Safety::Safe || self.unsafe_fixes
    }
}

/// The outcome of migrating one file's text.
#[derive(Debug)]
pub struct Migration {
    pub output: String,
    /// Fixes applied, by rule code.
    pub applied: BTreeMap<String, usize>,
    /// What is left in the output: findings without an applicable fix.
    pub remaining: Vec<Diagnostic>,
    pub problem: Option<Problem>,
}

#[derive(Debug)]
pub enum Problem {
    /// The input does not parse; nothing was changed.
    Syntax(ParseError),
    /// A fix broke the syntax; the file was left unchanged (a bug in a rule).
    FixBrokeSyntax { rules: Vec<String>, error: ParseError },
    /// Still changing after `MAX_PASSES` passes; the last output is kept.
    NoConvergence { rules: Vec<String> },
}

/// Lint only: the findings for `text`.
pub fn lint(
    text: &str,
    rules: &RuleSet,
    selection: &Selection,
) -> Result<(Vec<Diagnostic>, Parsed<ast::ModModule>), ParseError> {
    let parsed = parse_module(text)?;
    let CheckResult { mut diagnostics, .. } = check(&parsed, text, rules);
    diagnostics.retain(|d| selection.enabled(&rules.rules[d.rule].code));
    Ok((diagnostics, parsed))
}

/// Apply fixes to a fixpoint.
pub fn migrate(original: &str, rules: &RuleSet, selection: &Selection) -> Migration {
    let mut text = original.to_string();
    let mut applied: BTreeMap<String, usize> = BTreeMap::new();
    let mut last_rules: Vec<String> = Vec::new();
    for pass in 0..=MAX_PASSES {
        let parsed = match parse_module(&text) {
            Ok(parsed) => parsed,
            Err(error) if pass == 0 => return unchanged(original, Problem::Syntax(error)),
            Err(error) => return unchanged(original, Problem::FixBrokeSyntax { rules: last_rules, error }),
        };
        let CheckResult { mut diagnostics, blocks } = check(&parsed, &text, rules);
        diagnostics.retain(|d| selection.enabled(&rules.rules[d.rule].code));
        let fixable: Vec<&Diagnostic> =
            diagnostics.iter().filter(|d| d.fix.as_ref().is_some_and(|f| selection.applies(f))).collect();
        if fixable.is_empty() {
            let remaining = diagnostics;
            return Migration { output: text, applied, remaining, problem: None };
        }
        if pass == MAX_PASSES {
            let rules_left = fixable.iter().map(|d| rules.rules[d.rule].code.clone()).collect::<BTreeSet<_>>();
            return Migration {
                output: text,
                applied,
                remaining: diagnostics.clone(),
                problem: Some(Problem::NoConvergence { rules: rules_left.into_iter().collect() }),
            };
        }
        let fixes: Vec<&Fix> = fixable.iter().filter_map(|d| d.fix.as_ref()).collect();
        let chosen = fix::choose(&fixes, &text, &blocks);
        let mut edits: Vec<Edit> = Vec::new();
        let mut deletes = BTreeSet::new();
        let mut imports: BTreeSet<ImportRequest> = BTreeSet::new();
        last_rules.clear();
        for &i in &chosen {
            let f = fixes[i];
            edits.extend(f.edits.iter().cloned());
            deletes.extend(f.deletes.iter().copied());
            imports.extend(f.imports.iter().cloned());
            let code = rules.rules[fixable[i].rule].code.clone();
            *applied.entry(code.clone()).or_default() += 1;
            last_rules.push(code);
        }
        last_rules.sort();
        last_rules.dedup();
        edits.extend(fix::plan_deletions(&text, &blocks, &deletes));
        if !imports.is_empty() {
            edits.push(import_edit(parsed.syntax(), &text, &imports));
        }
        let next = fix::apply(&text, &mut edits);
        if next == text {
            return Migration { output: text, applied, remaining: diagnostics, problem: None };
        }
        text = next;
    }
    unreachable!("the loop returns by its last pass")
}

fn unchanged(original: &str, problem: Problem) -> Migration {
    Migration { output: original.to_string(), applied: BTreeMap::new(), remaining: Vec::new(), problem: Some(problem) }
}

/// One insertion with every import a pass needs, placed in the file's import
/// block: after the docstring and `__future__` imports, after the leading run
/// of top-level imports.
fn import_edit(module: &ast::ModModule, text: &str, imports: &BTreeSet<ImportRequest>) -> Edit {
    let newline = newline_of(text);
    let mut anchor: Option<TextSize> = None;
    for (i, stmt) in module.body.iter().enumerate() {
        let is_docstring = i == 0 && matches!(stmt, Stmt::Expr(e) if e.value.is_string_literal_expr());
        // `__future__` imports are imports too, so new lines always land after them.
        if is_docstring || matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_)) {
            anchor = Some(stmt.end());
        } else {
            break;
        }
    }
    let lines: String = imports.iter().map(|r| format!("{}{newline}", r.statement())).collect();
    match anchor {
        Some(end) => {
            let at = line_end_inclusive(text, end.into());
            if at == text.len() && !text.ends_with('\n') {
                // The anchor is the last line and has no newline of its own.
                Edit::insert(TextSize::try_from(at).unwrap_or_default(), format!("{newline}{}", lines.trim_end()))
            } else {
                Edit::insert(TextSize::try_from(at).unwrap_or_default(), lines)
            }
        }
        None => Edit::insert(TextSize::from(0), lines),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str) -> String {
        let rules = RuleSet::load(None).expect("rules");
        migrate(src, &rules, &Selection { unsafe_fixes: true, ..Selection::default() }).output
    }

    #[test]
    fn new_imports_go_after_docstring_and_future_imports() {
        let src = "\"\"\"Doc.\"\"\"\nfrom __future__ import annotations\nimport torch_xla.core.xla_model as xm\n\nprint(xm.get_ordinal())\n";
        assert_eq!(
            run(src),
            "\"\"\"Doc.\"\"\"\nfrom __future__ import annotations\nimport torch.distributed as dist\n\nprint(dist.get_rank() if dist.is_initialized() else 0)\n"
        );
    }

    #[test]
    fn existing_aliases_are_reused() {
        let src = "import torch.distributed as d\nimport torch_xla.core.xla_model as xm\nn = xm.xrt_world_size()\n";
        assert_eq!(run(src), "import torch.distributed as d\nn = d.get_world_size() if d.is_initialized() else 1\n");
    }

    #[test]
    fn replacements_are_parenthesised_in_operator_context() {
        let src = "import torch_xla.core.xla_model as xm\nx = 2 * xm.get_ordinal()\n";
        assert_eq!(
            run(src),
            "import torch.distributed as dist\nx = 2 * (dist.get_rank() if dist.is_initialized() else 0)\n"
        );
    }

    #[test]
    fn a_syntax_error_is_reported_and_nothing_changes() {
        let rules = RuleSet::load(None).expect("rules");
        let m = migrate("print 'py2'\nimport torch_xla\n", &rules, &Selection::default());
        assert!(matches!(m.problem, Some(Problem::Syntax(_))));
        assert_eq!(m.output, "print 'py2'\nimport torch_xla\n");
    }
}
