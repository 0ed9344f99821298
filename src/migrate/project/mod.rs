//! A project is more than `.py` files: notebooks, dependency lists, launch scripts, container
//! files and configs select torch_xla too. Each kind of file has a handler that finds what it
//! says about torch_xla and proposes byte-range edits on its text, as the Python checker does;
//! the driver here applies them to a fixpoint and checks that the result still loads.
//!
//! - [`notebook`]: `.ipynb` code cells go through the Python engine; `!`/`%` lines through [`launch`].
//! - [`deps`]: requirements files, `pyproject.toml`, `setup.cfg`, `setup.py`, `environment.yml`.
//! - [`launch`]: shell scripts, Dockerfiles, YAML job specs and accelerate configs.
//! - [`json`]: JSON configs (a Trainer's `fsdp_config.json`, accelerate configs).

pub mod deps;
pub mod hardware;
pub mod json;
pub mod launch;
pub mod notebook;
mod text;

use text::selected;
pub use text::{TextMigration, migrate_with};

use serde::Deserialize;

use crate::migrate::diagnostic::Diagnostic;
use crate::migrate::facts::RunFacts;
use crate::migrate::rules::{Builtin, RuleSet, Safety};
use crate::migrate::selection::Selection;
use crate::migrate::target::Kind;
use crate::noqa::Noqa;

/// The findings of a non-Python file (notebooks go through [`notebook`]).
pub fn check(kind: Kind, text: &str, rules: &RuleSet, run: Option<&RunFacts>) -> Vec<Diagnostic> {
    let mut found = match kind {
        Kind::Requirements | Kind::Pyproject | Kind::SetupCfg | Kind::CondaEnv | Kind::SetupPy => {
            deps::check(kind, text, rules, run)
        }
        Kind::Shell | Kind::Dockerfile | Kind::Yaml => launch::check(kind, text, rules, run),
        Kind::Json => json::check(text, rules),
        Kind::Python | Kind::Notebook => return Vec::new(),
    };
    hardware::leave_alone(text, rules, run, &mut found);
    found
}

/// YAML's parser refuses nesting past 128 levels, but only after scanning it all, in time
/// quadratic in the depth (100,000 levels: minutes): deeper flow collections are refused first.
pub const MAX_YAML_FLOW_DEPTH: usize = 512;

/// The deepest nesting of `[`/`{` that open a flow collection (after `:`, `-`, `,`, `?`, another
/// opener, or at the start of a line). Closers inside strings only lower the count, so a file
/// is never found deeper than it is.
fn flow_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut previous = b'\n';
    for &b in text.as_bytes() {
        match b {
            b'[' | b'{' if matches!(previous, b'\n' | b':' | b'-' | b',' | b'?' | b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if !matches!(b, b' ' | b'\t' | b'\r') {
            previous = b;
        }
    }
    deepest
}

/// Whether `text` still loads as a file of this kind; the message says why not.
pub fn validate(kind: Kind, text: &str) -> Result<(), String> {
    match kind {
        Kind::Pyproject => text.parse::<toml_edit::DocumentMut>().map(drop).map_err(|e| format!("invalid TOML: {e}")),
        Kind::CondaEnv | Kind::Yaml => {
            if flow_depth(text) > MAX_YAML_FLOW_DEPTH {
                return Err(format!(
                    "invalid YAML: flow collections nested more than {MAX_YAML_FLOW_DEPTH} levels deep (the limit; the parser takes quadratic time on them)"
                ));
            }
            // Several documents (`---`) are normal in job specs.
            for doc in yaml_serde::Deserializer::from_str(text) {
                yaml_serde::Value::deserialize(doc).map_err(|e| format!("invalid YAML: {e}"))?;
            }
            Ok(())
        }
        Kind::SetupPy | Kind::Python => {
            ruff_python_parser::parse_module(text).map(drop).map_err(|e| format!("invalid Python: {}", e.error))
        }
        Kind::Notebook => notebook::validate(text),
        Kind::Json => {
            serde_json::from_str::<serde_json::Value>(text).map(drop).map_err(|e| format!("invalid JSON: {e}"))
        }
        Kind::Requirements | Kind::SetupCfg | Kind::Shell | Kind::Dockerfile => Ok(()),
    }
}

/// The selected findings of a non-Python file that its `# noqa` directives leave; `Err` when the
/// file does not load as its kind.
pub fn lint(kind: Kind, text: &str, rules: &RuleSet, selection: &Selection) -> Result<Vec<Diagnostic>, String> {
    lint_all(kind, text, rules, selection).map(|f| f.kept)
}

/// A non-Python file's findings, for a caller that judges its directives too.
#[derive(Default)]
pub struct Findings {
    /// What `check` reports and `migrate` fixes: the selected findings the directives leave.
    pub kept: Vec<Diagnostic>,
    /// Every selected finding, silenced or not.
    pub all: Vec<Diagnostic>,
    /// The file's directives (`None` for a kind without comments).
    pub noqa: Option<Noqa>,
}

/// [`lint`], with what the directives silenced; `Err` when the file does not load as its kind.
pub fn lint_all(kind: Kind, text: &str, rules: &RuleSet, selection: &Selection) -> Result<Findings, String> {
    validate(kind, text)?;
    Ok(findings(kind, text, rules, selection))
}

fn findings(kind: Kind, text: &str, rules: &RuleSet, selection: &Selection) -> Findings {
    let found = check(kind, text, rules, selection.run.as_deref());
    let xla = rules.builtin(Builtin::DepTorchXla);
    let rewrites_xla = |found: &[Diagnostic]| {
        found.iter().any(|d| Some(d.rule) == xla && d.fix.as_ref().is_some_and(|f| selection.applies(f)))
    };
    let xla_here = rewrites_xla(&found);
    let all = selected(found, rules, selection);
    let noqa = suppressions(kind, text);
    let mut kept = all.clone();
    if let Some(noqa) = &noqa {
        noqa.retain_uncovered(text, &mut kept, rules);
    }
    // TPU904's fix is safe because TPU901's rewrite to torch-tpu moves torch anyway. Where that
    // rewrite is not made (not selected, silenced), torch_xla stays, and moving torch alone is a
    // change of its own.
    if xla_here && !rewrites_xla(&kept) {
        let pin = rules.builtin(Builtin::DepTorchPin);
        for d in kept.iter_mut().filter(|d| Some(d.rule) == pin) {
            if let Some(fix) = d.fix.as_mut().filter(|f| f.safety == Safety::Safe) {
                fix.safety = Safety::Unsafe;
                d.note = rules.rules[d.rule].fixes.first().and_then(|f| f.note.clone());
            }
        }
    }
    Findings { kept, all, noqa }
}

/// The directives that silence findings in a file of this kind: `setup.py`'s Python comments,
/// another kind's own comments.
pub fn suppressions(kind: Kind, text: &str) -> Option<Noqa> {
    match kind {
        // Parsed only when it may hold a directive.
        Kind::SetupPy if !crate::noqa::mentions_noqa(text) => Some(Noqa::default()),
        Kind::SetupPy => {
            ruff_python_parser::parse_module(text).ok().map(|parsed| Noqa::existing(text, parsed.tokens()))
        }
        kind => Noqa::of_text(kind, text),
    }
}

/// Apply the selected fixes of a non-Python file to a fixpoint; every pass's result must still
/// load, and a fix that breaks it is dropped and reported, never written.
pub fn migrate(kind: Kind, original: &str, rules: &RuleSet, selection: &Selection) -> TextMigration {
    migrate_with(
        original,
        |text| findings(kind, text, rules, selection).kept,
        |text| validate(kind, text),
        rules,
        selection,
    )
}

/// What the handlers' unit tests share.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::OnceLock;

    use crate::migrate::rules::RuleSet;
    use crate::migrate::selection::Selection;
    use crate::migrate::target::Kind;

    pub fn rules() -> &'static RuleSet {
        static RULES: OnceLock<RuleSet> = OnceLock::new();
        RULES.get_or_init(|| RuleSet::load(&[]).expect("embedded rules load"))
    }

    /// `text` migrated with unsafe fixes; no fix may be dropped for breaking it.
    pub fn migrated(kind: Kind, text: &str) -> String {
        let m = super::migrate(kind, text, rules(), &Selection { unsafe_fixes: true, ..Selection::default() });
        assert!(m.invalid.is_none() && m.reverted.is_empty(), "{text:?}: {:?} {:?}", m.invalid, m.reverted);
        m.output
    }
}
