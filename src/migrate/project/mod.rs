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

use std::collections::BTreeMap;
use std::path::Path;

use ruff_text_size::{TextRange, TextSize};
use serde::Deserialize;

use crate::migrate::checker::Diagnostic;
use crate::migrate::facts::RunFacts;
use crate::migrate::fix::{self, Edit};
use crate::migrate::rules::{Builtin, RuleSet, Safety};
use crate::migrate::{MAX_PASSES, Selection};
use crate::noqa::Noqa;

/// How a file is read and which handler migrates it, decided by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Python,
    /// `setup.py`: Python, and its `install_requires` are dependencies.
    SetupPy,
    Notebook,
    /// `requirements*.txt`, `constraints*.txt`, `requirements/*.txt`, `requirements*.in`.
    Requirements,
    Pyproject,
    SetupCfg,
    /// conda's `environment.yml`.
    CondaEnv,
    Shell,
    Dockerfile,
    /// Other YAML: job specs (`env:` lists), accelerate configs.
    Yaml,
    /// JSON configs: `fsdp_config.json`, accelerate configs.
    Json,
}

impl Kind {
    /// The kind of `path`, or `None` for files no handler reads.
    pub fn of(path: &Path) -> Option<Kind> {
        let name = path.file_name()?.to_str()?;
        let lower = name.to_ascii_lowercase();
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let in_requirements_dir =
            path.parent().and_then(Path::file_name).is_some_and(|d| d.eq_ignore_ascii_case("requirements"));
        Some(match (lower.as_str(), ext.as_deref()) {
            ("setup.py", _) => Kind::SetupPy,
            (_, Some("py" | "pyi")) => Kind::Python,
            (_, Some("ipynb")) => Kind::Notebook,
            ("pyproject.toml", _) => Kind::Pyproject,
            ("setup.cfg", _) => Kind::SetupCfg,
            (n, Some("txt" | "in")) if n.starts_with("requirements") || n.starts_with("constraints") => {
                Kind::Requirements
            }
            (n, Some("txt")) if n.ends_with("requirements.txt") || in_requirements_dir => Kind::Requirements,
            (n, Some("yml" | "yaml")) if n.starts_with("environment") || n.starts_with("conda") => Kind::CondaEnv,
            (_, Some("yml" | "yaml")) => Kind::Yaml,
            (_, Some("json")) => Kind::Json,
            (_, Some("sh" | "bash" | "zsh")) => Kind::Shell,
            ("dockerfile" | "containerfile", _) => Kind::Dockerfile,
            (n, _) if n.starts_with("dockerfile.") || n.ends_with(".dockerfile") => Kind::Dockerfile,
            _ => return None,
        })
    }

    /// Read by the Python engine (setup.py also by [`deps`]).
    pub fn is_python(self) -> bool {
        matches!(self, Kind::Python | Kind::SetupPy)
    }

    /// Whether the file is the project's own (its sources, dependencies, notebooks), so that one
    /// that does not load is an error; other YAML may be a template of another tool (Helm).
    pub fn owned_by_project(self) -> bool {
        !matches!(self, Kind::Yaml | Kind::Json)
    }

    /// What the file is, for messages and the report's per-type totals.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Python => "python",
            Kind::SetupPy => "setup.py",
            Kind::Notebook => "notebook",
            Kind::Requirements => "requirements",
            Kind::Pyproject => "pyproject.toml",
            Kind::SetupCfg => "setup.cfg",
            Kind::CondaEnv => "conda environment",
            Kind::Shell => "shell script",
            Kind::Dockerfile => "Dockerfile",
            Kind::Yaml => "YAML",
            Kind::Json => "JSON",
        }
    }
}

/// A notebook line that IPython runs as a shell command or a magic, not as Python; its range
/// is the whole line (without the newline) in the text the checker sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Magic {
    pub range: TextRange,
    pub kind: MagicKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MagicKind {
    /// `!cmd`, `%pip …`, `%sh …`, or a line of a `%%bash` / `%%sh` / `%%script bash` cell: the
    /// shell command starts at `command` (after the `!`, `%`, or nothing in a shell cell).
    Shell { command: TextSize },
    /// `%env NAME=VALUE` or `%env NAME VALUE`: `name` is the variable's range.
    Env { name: TextRange },
}

/// The TorchTPU release the rules assume (`--target-version`): what installing it means.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    format: String,
    pub version: String,
    /// What users install: `torch-tpu`.
    pub distribution: String,
    pub requires_python: String,
    /// The wheel's `Requires-Dist`, verbatim.
    pub requires_dist: Vec<String>,
}

/// Target descriptions shipped with xla2tpu, `rules/targets/torchtpu-<version>.yaml`.
static TARGETS: include_dir::Dir = include_dir::include_dir!("$CARGO_MANIFEST_DIR/rules/targets");

/// The TorchTPU release the rules assume unless `--target-version` says otherwise.
pub const DEFAULT_TARGET: &str = "0.2.0";

impl Target {
    pub fn load(version: &str) -> anyhow::Result<Target> {
        let known = || {
            let mut v: Vec<String> = TARGETS
                .files()
                .filter_map(|f| f.path().file_stem()?.to_str()?.strip_prefix("torchtpu-").map(String::from))
                .collect();
            v.sort();
            v.join(", ")
        };
        let file = TARGETS
            .get_file(format!("torchtpu-{version}.yaml"))
            .ok_or_else(|| anyhow::anyhow!("no TorchTPU target version {version}; known: {}", known()))?;
        let target: Target = yaml_serde::from_str(file.contents_utf8().unwrap_or_default())?;
        anyhow::ensure!(
            target.format == "xla2tpu-target/1",
            "{}: unknown format {}",
            file.path().display(),
            target.format
        );
        Ok(target)
    }

    /// The requirement this release puts on `name` (e.g. `torch`), verbatim.
    pub fn requirement_on(&self, name: &str) -> Option<&str> {
        self.requires_dist.iter().map(String::as_str).find(|r| {
            let n = r.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')).next();
            n.is_some_and(|n| n.replace('_', "-").eq_ignore_ascii_case(name))
        })
    }
}

impl Default for Target {
    fn default() -> Self {
        Target::load(DEFAULT_TARGET).expect("the default target is embedded")
    }
}

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

/// The findings of the selected rules, in the order of the text.
fn selected(mut diagnostics: Vec<Diagnostic>, rules: &RuleSet, selection: &Selection) -> Vec<Diagnostic> {
    diagnostics.retain(|d| selection.enabled(&rules.rules[d.rule].code));
    diagnostics.sort_by_key(|d| (d.range.start(), d.rule));
    diagnostics
}

/// The outcome of migrating a non-Python file's text.
#[derive(Debug, Default)]
pub struct TextMigration {
    pub output: String,
    pub applied: BTreeMap<String, usize>,
    /// Findings left in the output (no applicable fix), located in the output.
    pub remaining: Vec<Diagnostic>,
    /// The input does not load as its kind; nothing was changed.
    pub invalid: Option<String>,
    /// Fixes dropped because the file would no longer load: (rule code, offset in the input, why).
    pub reverted: Vec<(String, TextSize, String)>,
    passes: Vec<Vec<Edit>>,
}

impl TextMigration {
    /// Where `offset` in the output came from in the input.
    pub fn original_offset(&self, offset: TextSize) -> TextSize {
        self.passes.iter().rev().fold(offset, |at, edits| fix::map_back(edits, at))
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

/// [`migrate`] with the findings and the check that the text still loads given as functions
/// (a notebook's IPython lines are checked this way, on its joined cells).
pub fn migrate_with(
    original: &str,
    check: impl Fn(&str) -> Vec<Diagnostic>,
    validate: impl Fn(&str) -> Result<(), String>,
    rules: &RuleSet,
    selection: &Selection,
) -> TextMigration {
    let mut m = TextMigration { output: original.to_string(), ..TextMigration::default() };
    if let Err(e) = validate(original) {
        m.invalid = Some(e);
        return m;
    }
    // The input was validated above and every pass's result below: no need to parse it again here.
    let lint = |text: &str| selected(check(text), rules, selection);
    let applies = |d: &Diagnostic| d.fix.as_ref().is_some_and(|f| selection.applies(f));
    for _ in 0..MAX_PASSES {
        let diagnostics = lint(&m.output);
        let dropped = |d: &Diagnostic| {
            let at = m.original_offset(d.range.start());
            m.reverted.iter().any(|(code, offset, _)| *code == rules.rules[d.rule].code && *offset == at)
        };
        let fixable: Vec<&Diagnostic> = diagnostics.iter().filter(|d| applies(d) && !dropped(d)).collect();
        if fixable.is_empty() {
            m.remaining = diagnostics;
            return m;
        }
        // Non-overlapping fixes, first come first served; the others wait for the next pass.
        let mut chosen: Vec<&Diagnostic> = Vec::new();
        let mut taken: Vec<TextRange> = Vec::new();
        for d in fixable {
            let edits = &d.fix.as_ref().expect("fixable").edits;
            let free = |e: &Edit| taken.iter().all(|t| t.end() <= e.range.start() || e.range.end() <= t.start());
            if edits.iter().all(free) {
                taken.extend(edits.iter().map(|e| e.range));
                chosen.push(d);
            }
        }
        let attempt = |ds: &[&Diagnostic]| -> Result<(String, Vec<Edit>), String> {
            let mut edits: Vec<Edit> = ds.iter().flat_map(|d| d.fix.as_ref().expect("fixable").edits.clone()).collect();
            let out = fix::apply(&m.output, &mut edits).ok_or_else(|| "its edits overlap".to_string())?;
            validate(&out)?;
            Ok((out, edits))
        };
        let (output, edits, applied) = match attempt(&chosen) {
            Ok((out, edits)) => (out, edits, chosen),
            Err(_) => {
                // Drop the fixes that break the file on their own; apply the rest.
                let mut good = Vec::new();
                for d in chosen {
                    match attempt(&[d]) {
                        Ok(_) => good.push(d),
                        Err(why) => {
                            let at = m.original_offset(d.range.start());
                            m.reverted.push((rules.rules[d.rule].code.clone(), at, why));
                        }
                    }
                }
                match attempt(&good) {
                    Ok((out, edits)) => (out, edits, good),
                    Err(_) => continue, // together they still fail: the next pass retries without the dropped ones
                }
            }
        };
        for d in &applied {
            *m.applied.entry(rules.rules[d.rule].code.clone()).or_default() += 1;
        }
        m.output = output;
        m.passes.push(edits);
    }
    m.remaining = lint(&m.output);
    m
}

/// What the handlers' unit tests share.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::OnceLock;

    use super::Kind;
    use crate::migrate::Selection;
    use crate::migrate::rules::RuleSet;

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
