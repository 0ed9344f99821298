//! Every fixture under `corpus/migrate/*/` and `corpus/rules/*/`: `input.py`
//! migrated with unsafe fixes must equal `expected.py`; the output must parse;
//! a second run must change nothing (idempotence); the safe-only run must also
//! parse and converge. Findings on each input are pinned as insta snapshots.

use std::path::{Path, PathBuf};

use xla2tpu::migrate::rules::RuleSet;
use xla2tpu::migrate::{Selection, lint, migrate};
use xla2tpu::source::{LineIndex, SourceFile};

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut dirs = Vec::new();
    for family in ["migrate", "rules"] {
        let Ok(entries) = std::fs::read_dir(root.join(family)) else { continue };
        for e in entries.flatten() {
            if e.path().join("input.py").is_file() {
                dirs.push(e.path());
            }
        }
    }
    dirs.sort();
    dirs
}

/// The rules on by default, plus the fixture's own rule when it is opt-in (`corpus/rules/TPU751`).
fn selection(dir: &Path, rules: &RuleSet) -> Selection {
    let code = dir.file_name().unwrap_or_default().to_string_lossy();
    let opt_in = rules.by_code(&code).filter(|r| r.opt_in).map(|r| vec![r.code.clone()]).unwrap_or_default();
    Selection { opt_in, ..Selection::default() }
}

fn all_fixes(dir: &Path, rules: &RuleSet) -> Selection {
    Selection { unsafe_fixes: true, ..selection(dir, rules) }
}

#[test]
fn corpus_is_large_enough() {
    let migrate = fixtures().iter().filter(|d| d.parent().is_some_and(|p| p.ends_with("migrate"))).count();
    assert!(migrate >= 30, "corpus/migrate has {migrate} programs; the corpus promises at least 30");
}

#[test]
fn every_fixture_migrates_to_its_expected_output() {
    let rules = RuleSet::load(&[]).expect("embedded rules load");
    let mut failures = Vec::new();
    for dir in fixtures() {
        let name = dir.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(&dir).display().to_string();
        let input = SourceFile::read(&dir.join("input.py")).expect("fixture is UTF-8");
        let expected_path = dir.join("expected.py");
        let expected = std::fs::read(&expected_path).unwrap_or_else(|_| panic!("{name}: missing expected.py"));
        let m = migrate(&input.text, &rules, &all_fixes(&dir, &rules));
        assert!(m.problem.is_none(), "{name}: {:?}", m.problem);
        if input.encode(&m.output) != expected {
            let expected = String::from_utf8_lossy(&expected);
            let diff = similar::TextDiff::from_lines(expected.as_ref(), m.output.as_str())
                .unified_diff()
                .header("expected.py", "actual")
                .to_string();
            failures.push(format!("{name}:\n{diff}"));
            continue;
        }
        ruff_python_parser::parse_module(&m.output).unwrap_or_else(|e| panic!("{name}: output does not parse: {e}"));
        let again = migrate(&m.output, &rules, &all_fixes(&dir, &rules));
        assert_eq!(again.output, m.output, "{name}: a second run changed the output");
        assert!(again.applied.is_empty(), "{name}: a second run applied {:?}", again.applied);
        let safe = migrate(&input.text, &rules, &selection(&dir, &rules));
        assert!(safe.problem.is_none(), "{name} (safe fixes): {:?}", safe.problem);
        ruff_python_parser::parse_module(&safe.output)
            .unwrap_or_else(|e| panic!("{name}: safe output does not parse: {e}"));
        assert_eq!(
            migrate(&safe.output, &rules, &selection(&dir, &rules)).output,
            safe.output,
            "{name}: safe run not idempotent"
        );
    }
    assert!(failures.is_empty(), "{} fixtures differ from expected.py:\n\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn findings_on_every_input_are_pinned() {
    let rules = RuleSet::load(&[]).expect("embedded rules load");
    for dir in fixtures() {
        let input = SourceFile::read(&dir.join("input.py")).expect("fixture is UTF-8");
        // `None`: no rule can match the input (a negative fixture), so there is nothing to pin.
        let linted = lint(&input.text, &rules, &selection(&dir, &rules)).expect("fixture parses");
        let diagnostics = linted.map(|l| l.diagnostics).unwrap_or_default();
        let lines = LineIndex::new(&input.text);
        let report: Vec<String> = diagnostics
            .iter()
            .map(|d| {
                let (line, col) = lines.line_col(&input.text, d.range.start());
                let fix = match &d.fix {
                    Some(f) => format!("{:?}", f.safety).to_lowercase(),
                    None => "manual".into(),
                };
                let note = d.note.as_deref().map(|n| format!(" -- {n}")).unwrap_or_default();
                format!("{line}:{col} {} [{fix}] {}{note}", rules.rules[d.rule].code, d.message)
            })
            .collect();
        let family = dir.parent().and_then(|p| p.file_name()).unwrap_or_default().to_string_lossy().to_string();
        let name = format!("{family}__{}", dir.file_name().unwrap_or_default().to_string_lossy());
        insta::assert_snapshot!(name, report.join("\n"));
    }
}

#[test]
fn every_rule_has_a_fixture() {
    let rules = RuleSet::load(&[]).expect("embedded rules load");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/rules");
    let missing: Vec<&str> = rules
        .rules
        .iter()
        .map(|r| r.code.as_str())
        // Rules of other files keep theirs as a tree, `input/` and `expected/` (tests/project_files.rs).
        .filter(|code| !root.join(code).join("input.py").is_file() && !root.join(code).join("input").is_dir())
        .collect();
    assert!(missing.is_empty(), "rules without a corpus/rules/<CODE>/input.py or input/ fixture: {missing:?}");
}
