//! The engine's robustness properties, written once and used by the fuzz target
//! (`fuzz/fuzz_targets/pipeline.rs`), the replay of its corpus (`tests/fuzz_corpus.rs`) and the
//! mutation test (`tests/mutation.rs`). For any text:
//!
//! 1. nothing panics: the unisolated engine functions are called, so the library's own catch of
//!    panics (`migrate_isolated`, `check_file`) cannot hide one;
//! 2. a text that parses gives outputs that parse (migration with safe and with unsafe fixes,
//!    `check --add-noqa`), and one that does not is reported and returned unchanged;
//! 3. migration is idempotent, converges, and reverts no fix (a reverted fix is a rule bug);
//! 4. a text with no torch_xla / optimum-tpu reference ([`may_reference_xla`]) is returned
//!    byte-identical;
//! 5. every offset the engine reports lies on a character boundary of the text it refers to
//!    (code frames, line:col and baselines slice the text there).
//!
//! A violated property panics with a message saying which, as a fuzz target must.

#![allow(dead_code)] // each user needs a different part

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;

use ruff_python_ast::token::TokenKind;
use ruff_python_parser::parse_module;
use ruff_text_size::{Ranged, TextRange, TextSize};
use xla2tpu::baseline::Anchor;
use xla2tpu::migrate::render::{self, Finding, Located};
use xla2tpu::migrate::rules::RuleSet;
use xla2tpu::migrate::{Migration, Problem, Selection, lint, migrate};
use xla2tpu::noqa::{self, Known, Noqa};
use xla2tpu::source::{LineIndex, SourceFile};

/// The built-in rules, loaded once.
pub fn rules() -> &'static RuleSet {
    static RULES: OnceLock<RuleSet> = OnceLock::new();
    RULES.get_or_init(|| RuleSet::load(&[]).expect("the embedded rules load"))
}

/// What one input turned out to be, for the callers' counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The bytes are a Python source (UTF-8 without NUL bytes).
    pub decoded: bool,
    pub parsed: bool,
    /// The unsafe migration changed the text.
    pub changed: bool,
}

/// Decode `bytes` as the CLI does (NUL bytes and invalid UTF-8 are refused, a BOM is set
/// aside), then check every property on the text.
pub fn check_bytes(bytes: &[u8]) -> Outcome {
    let Ok(source) = SourceFile::from_bytes(PathBuf::from("input.py"), bytes.to_vec()) else {
        return Outcome::default();
    };
    assert_eq!(source.encode(&source.text), bytes, "decoding and encoding an unchanged file must give its bytes");
    check_text(&source.text)
}

/// Every property on one decoded text (without its BOM).
pub fn check_text(text: &str) -> Outcome {
    let parsed = parse_module(text).is_ok();
    check_findings(text, parsed);
    check_migration(text, parsed, &everything());
    let m = check_migration(text, parsed, &Selection { unsafe_fixes: true, ..everything() });
    Outcome { decoded: true, parsed, changed: m.output != text }
}

/// Whether `text` may name torch_xla or optimum-tpu, so that a rule may fix something in it.
/// Every rule matches a qualified name, an environment variable or a string containing `xla`,
/// `tpu`, `pjrt` or `xrt` (see `rules/*.yaml`; TPU8xx, TPU002 and TPU003, the ones that match
/// plain PyTorch, have no fix). Text can spell those without the substring, so this is
/// conservative: besides any of them in any case it counts
/// - a backslash (a string escape such as `"\x78la"` is compared by value),
/// - the letters around punctuation and blanks (`"x" "la"` is one string, `xla`),
/// - any non-ASCII character (identifiers are NFKC-normalised: `ｘla` is `xla`).
pub fn may_reference_xla(text: &str) -> bool {
    if text.contains('\\') || !text.is_ascii() {
        return true;
    }
    let letters: String = text.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect();
    ["xla", "tpu", "pjrt", "xrt"].iter().any(|needle| letters.contains(needle))
}

fn everything() -> Selection {
    // Every file parsed, so that a text that does not parse is always refused.
    Selection { parse_every_file: true, ..Selection::default() }
}

/// Panics unless `range` is a valid slice of `text`.
fn assert_in(text: &str, range: TextRange, what: &str) {
    assert!(
        text.get(usize::from(range.start())..usize::from(range.end())).is_some(),
        "{what}: range {range:?} is not a slice of the {}-byte text",
        text.len()
    );
}

/// `check`: the findings, their code frames and anchors, `--add-noqa` and unused `# noqa`
/// (TPU003). Mirrors `check_file` in `src/migrate/commands/check.rs` with the public pieces it uses.
fn check_findings(text: &str, parsed: bool) {
    let rules = rules();
    let selection = everything();
    let (diagnostics, parsed_module) = match lint(text, rules, &selection) {
        Ok(Some(linted)) => (linted.diagnostics, linted.parsed),
        Ok(None) => {
            // No rule can match it: nothing to report, but (every file parsed) it parses.
            assert!(parsed, "lint accepted a text that does not parse");
            // The prefilter is sound: the checker itself finds nothing in such a text.
            let module = parse_module(text).expect("parses");
            let found = xla2tpu::migrate::checker::check(&module, text, rules, &xla2tpu::migrate::Selection::default())
                .diagnostics;
            assert!(found.is_empty(), "the prefilter skipped a text with findings: {:?}", found);
            return;
        }
        Err(e) => {
            assert!(!parsed, "lint refused a text that parses: {e}");
            // TPU002 points at the error; its offset is clamped to the text.
            let at = e.location.start().min(TextSize::try_from(text.len()).unwrap_or_default());
            Anchor::new(text, &[], at);
            LineIndex::new(text).line_col(text, at);
            return;
        }
    };
    assert!(parsed, "lint accepted a text that does not parse");
    let tokens = parsed_module.tokens();
    let noqa = Noqa::new(text, tokens);
    for d in &diagnostics {
        assert_in(text, d.range, &format!("finding {}", rules.rules[d.rule].code));
    }

    // --add-noqa: the directives go where comments can, so the file still parses, and checking
    // it again finds nothing that was placed.
    let findings: Vec<(TextRange, &str)> =
        diagnostics.iter().map(|d| (d.range, rules.rules[d.rule].code.as_str())).collect();
    let additions = noqa::additions(text, tokens, &noqa, &findings);
    if !additions.edits.is_empty() {
        let with_noqa = additions.apply(text);
        let Ok(linted) = lint(&with_noqa, rules, &selection) else {
            panic!("--add-noqa broke the file:\n{with_noqa}");
        };
        let after = linted.map(|l| l.diagnostics).unwrap_or_default();
        assert!(
            after.len() <= additions.unplaceable.len(),
            "--add-noqa left {} findings, {} of them unplaceable:\n{with_noqa}",
            after.len(),
            additions.unplaceable.len()
        );
    }

    // TPU003: the file with its directives blanked out must still parse.
    let unused = if noqa.lists_codes() {
        let masked = noqa.mask(text);
        let Ok(linted) = lint(&masked, rules, &selection) else {
            panic!("blanking the noqa directives broke the file:\n{masked}");
        };
        let all = linted.map(|l| l.diagnostics).unwrap_or_default();
        let findings: Vec<(TextRange, &str)> =
            all.iter().map(|d| (d.range, rules.rules[d.rule].code.as_str())).collect();
        let codes: BTreeSet<&str> = rules.rules.iter().map(|r| r.code.as_str()).collect();
        let known = |code: &str| {
            if codes.iter().any(|c| c.starts_with(code)) { Known::Enabled } else { Known::Unknown }
        };
        noqa.unused(text, &findings, &known)
    } else {
        Vec::new()
    };
    for u in &unused {
        assert_in(text, u.range, "unused noqa");
        u.message();
    }
    // What `check` prints: line:col, anchors and code frames.
    let comments: Vec<TextRange> =
        tokens.iter().filter(|t| t.kind() == TokenKind::Comment).map(|t| t.range()).collect();
    let lines = LineIndex::new(text);
    let located: Vec<Located> = diagnostics
        .iter()
        .map(|d| {
            let (rule, anchor) = (&rules.rules[d.rule], Anchor::new(text, &comments, d.range.start()));
            Located::new("input.py", text, &lines, d.clone(), anchor, rule, Some(false))
        })
        .collect();
    let shown: Vec<Finding> = located
        .iter()
        .map(|l| Finding { path: "input.py", located: l, rule: &rules.rules[l.diagnostic.rule] })
        .collect();
    render::full(&shown);
    render::concise(&shown);
}

/// `migrate`, with `selection`: the output's properties, then a second run on it.
fn check_migration(text: &str, parsed: bool, selection: &Selection) -> Migration {
    let kind = if selection.unsafe_fixes { "unsafe" } else { "safe" };
    let rules = rules();
    let m = migrate(text, rules, selection);
    if !parsed {
        assert!(
            matches!(m.problem, Some(Problem::Syntax(_))),
            "{kind}: a syntax error must be reported: {:?}",
            m.problem
        );
        assert_eq!(m.output, text, "{kind}: a file that does not parse must be returned unchanged");
        assert!(m.applied.is_empty(), "{kind}: fixes applied to a file that does not parse");
        return m;
    }
    assert!(m.problem.is_none(), "{kind}: {:?}", m.problem);
    assert!(m.reverted.is_empty(), "{kind}: fixes reverted (a rule produced a broken file): {:?}", m.reverted);
    if let Err(e) = parse_module(&m.output) {
        panic!("{kind}: the output does not parse ({e}):\n{}", m.output);
    }
    if !may_reference_xla(text) {
        assert_eq!(m.output, text, "{kind}: a file without a torch_xla reference was changed");
    }
    assert_eq!(
        m.output == text,
        m.applied.is_empty(),
        "{kind}: applied {:?} but the text changed or did not",
        m.applied
    );
    // Manual items are shown at their place in the original text.
    for d in &m.remaining {
        assert_in(&m.output, d.range, &format!("{kind}: remaining {}", rules.rules[d.rule].code));
        let original = m.original_offset(d.range.start());
        assert_in(
            text,
            TextRange::empty(original),
            &format!("{kind}: original offset of {}", rules.rules[d.rule].code),
        );
        LineIndex::new(text).line_col(text, original);
    }
    if m.output != text {
        render::unified_diff("input.py", text, &m.output, false);
        let again = migrate(&m.output, rules, selection);
        assert!(again.problem.is_none(), "{kind}: second run: {:?}", again.problem);
        assert!(
            again.output == m.output && again.applied.is_empty(),
            "{kind}: not idempotent: a second run applied {:?}\n--- first output\n{}\n--- second output\n{}",
            again.applied,
            m.output,
            again.output
        );
    }
    m
}

/// A notebook whose first cell is `cell` and whose second is a plain torch_xla cell, as JSON.
pub fn notebook_with(cell: &str) -> String {
    let code = |source: &str| serde_json::json!({"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": source});
    serde_json::json!({
        "cells": [code(cell), code("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5
    })
    .to_string()
}

/// One notebook code cell, any text (Python 2, `%%writefile`, shell cells, blank lines, broken
/// magics): the unisolated notebook passes never panic, the migrated notebook still loads, and
/// the well-formed second cell is migrated whatever the first holds (a cell that does not parse
/// and holds a blank line once aborted the whole run, issue 42 item 2).
pub fn check_notebook_cell(bytes: &[u8]) {
    let Ok(cell) = std::str::from_utf8(bytes) else { return };
    let json = notebook_with(cell);
    let selection = Selection { unsafe_fixes: true, ..Selection::default() };
    let nb = xla2tpu::migrate::project::notebook::Notebook::parse(&json).expect("a notebook built by the test loads");
    let _ = xla2tpu::migrate::project::notebook::lint(&nb, rules(), &selection);
    let m = xla2tpu::migrate::project::notebook::migrate(&json, rules(), &selection)
        .unwrap_or_else(|e| panic!("a notebook that loads could not be migrated: {e}"));
    if let Err(e) = xla2tpu::migrate::project::notebook::validate(&m.output) {
        panic!("the migrated notebook does not load: {e}");
    }
    let out: serde_json::Value = serde_json::from_str(&m.output).expect("validated");
    let second = &out["cells"][1]["source"];
    let second = second
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| second.as_array().into_iter().flatten().filter_map(|l| l.as_str()).collect::<String>());
    assert!(!second.contains("mark_step"), "the second cell was not migrated:\n{}", m.output);
}

/// One requirement string, any text, as `setup.py`'s `install_requires`, a requirements line
/// and a `pyproject.toml` dependency: the unisolated dependency passes never panic (PEP 508's
/// parser once panicked on `torch.)`, and `check` hung on the lost worker, issue 42 item 1), and
/// a migrated file still loads as its kind.
pub fn check_requirement(bytes: &[u8]) {
    use xla2tpu::migrate::project;
    use xla2tpu::migrate::target::Kind;
    let Ok(requirement) = std::str::from_utf8(bytes) else { return };
    // As a Python string literal and a TOML one: escaped, so the files themselves stay valid.
    let quoted = serde_json::to_string(requirement).expect("a string serialises");
    let files = [
        (Kind::SetupPy, format!("from setuptools import setup\nsetup(name=\"x\", install_requires=[{quoted}])\n")),
        (Kind::Requirements, format!("{}\n", requirement.replace(['\n', '\r'], " "))),
        (Kind::Pyproject, format!("[project]\nname = \"x\"\ndependencies = [{quoted}]\n")),
    ];
    let selection = Selection { unsafe_fixes: true, ..Selection::default() };
    for (kind, text) in files {
        if project::validate(kind, &text).is_err() {
            continue; // not this kind's syntax (a TOML-invalid escape): nothing to migrate
        }
        let _ = project::lint(kind, &text, rules(), &selection);
        let m = project::migrate(kind, &text, rules(), &selection);
        if let Err(e) = project::validate(kind, &m.output) {
            panic!("{kind:?}: the migration of {text:?} does not load: {e}\n{}", m.output);
        }
    }
}
