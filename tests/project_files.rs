//! Fixtures of the rules for files other than `.py` (TPU9xx, and TPU5xx in launch scripts):
//! `corpus/rules/<CODE>/input/<file>` migrated with unsafe fixes must equal
//! `corpus/rules/<CODE>/expected/<file>`; the output must still load as its kind; a second run
//! changes nothing; and every rule the fixture is for is found in its input. The file's name
//! decides its kind (`Dockerfile`, `requirements.txt`, `job.yaml`…), as it does for `migrate`.

use std::path::{Path, PathBuf};

use xla2tpu::migrate::Selection;
use xla2tpu::migrate::project;
use xla2tpu::migrate::rules::RuleSet;
use xla2tpu::migrate::target::Kind;
use xla2tpu::source::SourceFile;

/// (fixture directory, input file) for every non-Python file under `corpus/rules/*/input/`.
fn inputs() -> Vec<(PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/rules");
    let mut found = Vec::new();
    for rule in std::fs::read_dir(&root).expect("corpus/rules").flatten() {
        let Ok(files) = std::fs::read_dir(rule.path().join("input")) else { continue };
        for file in files.flatten() {
            let kind = Kind::of(&file.path());
            if kind.is_some_and(|k| !k.is_python() && k != Kind::Notebook) {
                found.push((rule.path(), file.path()));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_project_file_fixture_migrates_to_its_expected_output() {
    let rules = RuleSet::load(&[]).expect("embedded rules load");
    let mut failures = Vec::new();
    for (dir, input) in inputs() {
        // The fixture's input tree is the run: a launch line may depend on its other files.
        let tree = dir.join("input");
        let run = xla2tpu::migrate::facts::RunFacts::new(xla2tpu::migrate::reader::Reader, move || {
            std::fs::read_dir(&tree).into_iter().flatten().flatten().map(|e| e.path()).collect()
        });
        let all = Selection { unsafe_fixes: true, run: Some(std::sync::Arc::new(run)), ..Selection::default() };
        let name = input.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(&input).display().to_string();
        let kind = Kind::of(&input).expect("filtered");
        let source = SourceFile::read(&input).expect("fixture is UTF-8");
        let expected_path = dir.join("expected").join(input.file_name().expect("a file"));
        let expected =
            std::fs::read(&expected_path).unwrap_or_else(|_| panic!("{name}: missing {}", expected_path.display()));
        let m = project::migrate(kind, &source.text, &rules, &all);
        assert!(m.invalid.is_none(), "{name}: {:?}", m.invalid);
        assert!(m.reverted.is_empty(), "{name}: fixes reverted: {:?}", m.reverted);
        if source.encode(&m.output) != expected {
            let expected = String::from_utf8_lossy(&expected);
            let diff = similar::TextDiff::from_lines(expected.as_ref(), m.output.as_str())
                .unified_diff()
                .header("expected", "actual")
                .to_string();
            failures.push(format!("{name}:\n{diff}"));
            continue;
        }
        project::validate(kind, &m.output).unwrap_or_else(|e| panic!("{name}: output does not load: {e}"));
        let again = project::migrate(kind, &m.output, &rules, &all);
        assert_eq!(again.output, m.output, "{name}: a second run changed the output");
        assert!(again.applied.is_empty(), "{name}: a second run applied {:?}", again.applied);
        // The fixture exercises its own rule.
        let code = dir.file_name().expect("a code").to_string_lossy().to_string();
        if rules.by_code(&code).is_some() {
            let found = project::lint(kind, &source.text, &rules, &Selection::default()).expect("input loads");
            let hit = found.iter().any(|d| rules.rules[d.rule].code == code) || m.applied.contains_key(&code);
            assert!(hit, "{name}: the fixture of {code} does not trigger {code}");
        }
    }
    assert!(failures.is_empty(), "{} fixtures differ from expected:\n\n{}", failures.len(), failures.join("\n"));
}
