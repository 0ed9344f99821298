//! Dependency files: torch_xla, libtpu and optimum-tpu requirements become `torch-tpu` with a
//! torch constraint the target release supports (TPU9xx).
//!
//! Each kind of file is read into [`Entry`]s (a requirement with where and how it is written, a
//! package index, a Python constraint); the findings are decided on those, the same way for every
//! kind, so a requirements line, a Poetry table entry and a `pip install` word get the same rules.
//! Edits are byte ranges of the original text: comments and formatting stay as they were.

use std::str::FromStr;

use pep508_rs::pep440_rs::{VersionSpecifiers, release_specifiers_to_ranges};
use pep508_rs::{ExtraName, PackageName, Requirement, VersionOrUrl};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{TextRange, TextSize};
use rustc_hash::FxHashMap;
use toml_edit::{Item, TableLike, Value};

use crate::migrate::diagnostic::Diagnostic;
use crate::migrate::facts::RunFacts;
use crate::migrate::fix::{Edit, Fix};
use crate::migrate::rules::{Builtin, RuleSet, Safety};
use crate::migrate::target::Kind;
use crate::source::{line_end_inclusive, line_start};

/// Distributions (normalised) that TorchTPU replaces, and those it installs itself.
const TORCH_XLA: &[&str] = &["torch-xla"];
const TPU_RUNTIME: &[&str] = &["libtpu", "libtpu-nightly", "cloud-tpu-client"];
/// Built against one torch release each: their pins follow torch's.
const TORCH_COMPANIONS: &[&str] = &["torchvision", "torchaudio"];
/// The first accelerate that finds the `tpu` device: 1.16.0 asks `torch.accelerator` for the
/// current accelerator (`accelerate.utils.imports.get_torch_accelerator_backend`); 1.15.0 knows
/// a fixed list without `tpu`, so `Accelerator()` and the Trainer put the model on the CPU.
const ACCELERATE_FINDS_TPU: &str = ">=1.16.0";
/// The first transformers whose Trainer runs on the `tpu` device: up to 5.8 `TrainingArguments`
/// sets up the CPU where accelerate found the chip (the model moves, the batches stay: a device
/// mix-up at the first step); 5.9 to 5.19 find the chip through `torch.tpu.is_available()`, which
/// TorchTPU keeps internal (it raises); 5.20.0 asks `torch.accelerator`.
const TRANSFORMERS_FINDS_TPU: &str = ">=5.20.0";
/// Where libtpu and torch_xla wheels were published before PyPI (find-links pages, buckets).
const TPU_WHEEL_URLS: &[&str] = &[
    "storage.googleapis.com/libtpu-releases",
    "storage.googleapis.com/libtpu-wheels",
    "storage.googleapis.com/jax-releases/libtpu_releases",
    "storage.googleapis.com/pytorch-xla-releases",
    "storage.googleapis.com/tpu-pytorch",
];
/// pip options naming a package index or find-links location (`-f URL`, `--index-url=URL`).
const INDEX_OPTIONS: &[&str] =
    &["-f", "--find-links", "-i", "--index-url", "--extra-index-url", "--index", "--default-index"];
/// Other `pip install` / `uv pip install` options that take a separate value.
#[rustfmt::skip]
const VALUE_OPTIONS: &[&str] = &[
    "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-t", "--target", "--platform",
    "--python-version", "--implementation", "--abi", "--root", "--prefix", "--src", "--upgrade-strategy", "-C",
    "--config-settings", "--global-option", "--no-binary", "--only-binary", "--progress-bar", "--log", "--cache-dir",
    "--proxy", "--retries", "--timeout", "--exists-action", "--trusted-host", "--cert", "--client-cert", "--report",
    "--root-user-action", "--python", "-p", "--keyring-provider", "--use-feature", "--use-deprecated",
    "--resolution", "--index-strategy", "--prerelease", "--extra",
];

/// The findings of a dependency file (`Kind::Requirements`, `Pyproject`, `SetupCfg`, `CondaEnv`,
/// `SetupPy`).
pub fn check(kind: Kind, text: &str, rules: &RuleSet, run: Option<&RunFacts>) -> Vec<Diagnostic> {
    let entries = match kind {
        Kind::Requirements => requirements(text),
        Kind::Pyproject => pyproject(text),
        Kind::SetupCfg => setup_cfg(text),
        Kind::CondaEnv => conda_env(text),
        Kind::SetupPy => setup_py(text),
        _ => Vec::new(),
    };
    findings(&entries, rules, false, run)
}

/// The findings of one `pip install …` command whose words are at `command` in `text` (a shell
/// line, a Dockerfile `RUN`, a notebook `!pip` line).
pub fn pip_install(text: &str, command: TextRange, rules: &RuleSet, run: Option<&RunFacts>) -> Vec<Diagnostic> {
    let end = usize::from(command.end()).min(text.len());
    let start = usize::from(command.start()).min(end);
    if !text.is_char_boundary(start) || !text.is_char_boundary(end) {
        return Vec::new();
    }
    let (words, _) = shell_words(text, start, end, true);
    let Some(first) = install_args(&words) else { return Vec::new() };
    let mut entries = Vec::new();
    let mut installs = 0; // packages and requirement files: the command needs one
    let mut i = first;
    while i < words.len() {
        let word = &words[i];
        // Removing a word takes the blank before it (`install` precedes every argument).
        let removal = |last: usize| TextRange::new(words[i - 1].range.end(), words[last].range.end());
        if word.value.starts_with('-') {
            if let Some((last, value)) = index_option(&words, i) {
                if is_tpu_wheel_url(value) {
                    let range = TextRange::new(word.range.start(), words[last].range.end());
                    entries.push(Entry::Index { shown: text[range].to_string(), range, remove: Some(removal(last)) });
                }
                i = last + 1;
                continue;
            }
            let takes_value = VALUE_OPTIONS.contains(&word.value.as_str());
            if let Some(value) = words.get(i + 1).filter(|_| installs_unseen(&word.value)) {
                let shown = text[TextRange::new(word.range.start(), value.range.end())].to_string();
                entries.push(Entry::Opaque { shown, file: requirement_file(&word.value, &value.value) });
            }
            installs += usize::from(installs_unseen(&word.value));
            i += if takes_value { 2 } else { 1 };
            continue;
        }
        installs += 1;
        let written = Written::Word { quote: word.quote };
        match dep(&word.value, &text[word.range], word.range, written, Some(removal(i))) {
            Some(d) => entries.push(Entry::Dep(d)),
            None => entries.push(Entry::Opaque { shown: text[word.range].to_string(), file: None }),
        }
        i += 1;
    }
    if installs == 1 {
        // `pip install libtpu` must not become `pip install`: report it, the command goes by hand.
        for entry in &mut entries {
            if let Entry::Dep(d) = entry {
                d.remove = None;
            }
        }
    }
    // A script installs in several commands: `jax[tpu]` or accelerate on one line, torch_xla on
    // another (the whole text is searched only for a command that installs one of them).
    let context = |d: &Dep| is_jax_tpu(d) || d.name.as_ref() == "accelerate";
    let needs_context = entries.iter().any(|e| matches!(e, Entry::Dep(d) if context(d)));
    let installs_xla_elsewhere = needs_context && {
        let lower = text.to_ascii_lowercase();
        ["torch_xla", "torch-xla", "torch_tpu", "torch-tpu"].iter().any(|n| lower.contains(n))
    };
    findings(&entries, rules, installs_xla_elsewhere, run)
}

/// The finding of a Python version a file fixes outside requirements, such as a Dockerfile's
/// `FROM python:3.10-slim`: `version` is the `major.minor` it names, `range` where it is written.
pub fn python_version(text: &str, range: TextRange, version: &str, rules: &RuleSet) -> Vec<Diagnostic> {
    let Ok(specifiers) = VersionSpecifiers::from_str(&format!("=={version}.*")) else { return Vec::new() };
    let shown = text.get(usize::from(range.start())..usize::from(range.end())).unwrap_or(version).to_string();
    findings(&[Entry::Python { shown, range, specifiers }], rules, false, None)
}

/// Something a dependency file says that TPU9xx rules look at.
#[derive(Debug)]
enum Entry {
    Dep(Dep),
    /// A find-links or index location of the old TPU wheel buckets (only those are kept).
    Index {
        shown: String,
        range: TextRange,
        remove: Option<TextRange>,
    },
    /// What installs requirements the file does not show (`-e .`, `-r base.txt`, a checkout's
    /// path, a VCS URL): they may still require torch_xla, and so need the old TPU indexes.
    Opaque {
        shown: String,
        /// `-r FILE`: the requirements file it installs.
        file: Option<String>,
    },
    /// A Python version constraint (`requires-python`, `python_requires`, conda `python=3.10`).
    Python {
        shown: String,
        range: TextRange,
        specifiers: VersionSpecifiers,
    },
}

/// One requirement, as written.
#[derive(Debug)]
struct Dep {
    /// Its text in the file, for messages.
    shown: String,
    range: TextRange,
    name: PackageName,
    extras: Vec<ExtraName>,
    /// `None` when there is no version constraint or it is neither PEP 440 nor Poetry's (a URL).
    specifiers: Option<VersionSpecifiers>,
    /// What a rewrite keeps after the name and version: ` ; python_version >= "3.10"`.
    tail: String,
    written: Written,
    /// What deleting the requirement removes (its line, its list item), when it can go.
    remove: Option<TextRange>,
    /// Hash-checking options after it (`--hash=sha256:…`): they name the old wheel's files.
    hashes: Option<TextRange>,
}

/// How a requirement is written, so that a replacement is written the same way.
#[derive(Debug)]
enum Written {
    /// Its text at `range` is the requirement itself (a requirements line, a string's content).
    Text,
    /// A shell word: a replacement is quoted as it was, or with `"` when it needs quotes.
    Word { quote: Option<char> },
    /// A Poetry table entry `name = "spec"` / `name = {version = "spec", …}`, with the inline
    /// table's entries a rewrite keeps (`markers`, `python`, `optional`), verbatim.
    Poetry { key: TextRange, value: TextRange, keep: Vec<String> },
    /// Not rewritable in place (escapes in a string, a continuation line inside, a conda package).
    Fixed,
}

/// A requirement string (PEP 508, or a wheel URL or path, whose file name names the
/// distribution) read into a [`Dep`]; `None` when it is neither.
fn dep(requirement: &str, shown: &str, range: TextRange, written: Written, remove: Option<TextRange>) -> Option<Dep> {
    let requirement = requirement.trim();
    let (name, extras, specifiers, tail) = match parse_requirement(requirement) {
        Some(r) => {
            let url = matches!(r.version_or_url, Some(VersionOrUrl::Url(_)));
            let specifiers = match r.version_or_url {
                Some(VersionOrUrl::VersionSpecifier(s)) if !s.is_empty() => Some(s),
                _ => None,
            };
            (r.name, r.extras, specifiers, marker_tail(requirement, url).to_string())
        }
        None => (wheel_name(requirement)?, Vec::new(), None, String::new()),
    };
    Some(Dep { shown: shown.to_string(), range, name, extras, specifiers, tail, written, remove, hashes: None })
}

/// A PEP 508 requirement, or `None`. pep508_rs 0.9 panics on a name or extra its grammar takes
/// and its name check refuses (`torch.)`, `a-)`, `a.[x]`, `torch_xla[tpu. 1.0`: a trailing `.`,
/// `-` or `_`), so the name and the extras are checked first.
fn parse_requirement(requirement: &str) -> Option<Requirement<pep508_rs::VerbatimUrl>> {
    // It also slices inside a non-ASCII character of a marker (`python_version > '3.8'é`); PEP
    // 508's names, versions and marker variables are ASCII.
    if !requirement.is_ascii() {
        return None;
    }
    let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
    let name_len = requirement.find(|c: char| !name_char(c)).unwrap_or(requirement.len());
    PackageName::from_str(&requirement[..name_len]).ok()?;
    if let Some(extras) = requirement[name_len..].trim_start().strip_prefix('[') {
        let extras = extras.split(']').next().unwrap_or(extras);
        for extra in extras.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let len = extra.find(|c: char| !name_char(c)).unwrap_or(extra.len());
            pep508_rs::ExtraName::from_str(&extra[..len]).ok()?;
        }
    }
    Requirement::from_str(requirement).ok()
}

/// The environment marker of a requirement that parsed, with the blank before its `;`. After a
/// URL the `;` must follow a blank (PEP 508); before one, no `;` can occur but the marker's.
fn marker_tail(requirement: &str, url: bool) -> &str {
    let semicolon = if url {
        requirement.match_indices(';').map(|(i, _)| i).find(|&i| requirement[..i].ends_with([' ', '\t']))
    } else {
        requirement.find(';')
    };
    semicolon.map_or("", |i| &requirement[requirement[..i].trim_end().len()..])
}

/// The distribution a wheel URL or path installs: `torch_xla-2.5.0-cp310-….whl` is torch_xla.
fn wheel_name(location: &str) -> Option<PackageName> {
    let file = location.rsplit(['/', '\\']).next()?;
    let stem = file.get(..file.len().checked_sub(4)?).filter(|_| file.to_ascii_lowercase().ends_with(".whl"))?;
    PackageName::from_str(stem.split('-').next()?).ok()
}

fn is_tpu_wheel_url(url: &str) -> bool {
    TPU_WHEEL_URLS.iter().any(|u| url.contains(u))
}

/// Whether a torchvision / torchaudio pin admits no release built for a torch the target
/// supports: once torch has moved (a run with `--unsafe-fixes` rewrote its pin), the
/// companion's own pin still says which torch it was built for. torchvision `0.M` is built
/// for torch `2.(M-15)` (`0.26` for `2.11`), torchaudio `2.N` for torch `2.N`.
fn companion_outside(d: &Dep, torch: Option<&VersionSpecifiers>) -> bool {
    let (Some(specifiers), Some(torch)) = (&d.specifiers, torch) else { return false };
    let as_torch = |v: &pep508_rs::pep440_rs::Version| -> Option<String> {
        let release = v.release();
        let (major, minor) = (*release.first()?, *release.get(1)?);
        let rest: String = release.iter().skip(2).map(|n| format!(".{n}")).collect();
        match d.name.as_ref() {
            "torchvision" if major == 0 && minor >= 15 => Some(format!("2.{}{rest}", minor - 15)),
            "torchvision" if major == 0 => Some(format!("1.{}{rest}", minor.saturating_sub(1))),
            "torchaudio" if major == 0 => Some(format!("1.{minor}{rest}")),
            "torchaudio" => Some(format!("{major}.{minor}{rest}")),
            _ => None,
        }
    };
    let mapped: Option<Vec<String>> =
        specifiers.iter().map(|s| Some(format!("{}{}", s.operator(), as_torch(s.version())?))).collect();
    let Some(mapped) = mapped.and_then(|m| VersionSpecifiers::from_str(&m.join(",")).ok()) else { return false };
    release_specifiers_to_ranges(mapped).intersection(&release_specifiers_to_ranges(torch.clone())).is_empty()
}

/// Whether a requirement admits no release of `first` (`ACCELERATE_FINDS_TPU`, …): all too old.
fn admits_none(d: &Dep, first: &str) -> bool {
    let (Some(specifiers), Ok(finds)) = (&d.specifiers, VersionSpecifiers::from_str(first)) else {
        return false;
    };
    release_specifiers_to_ranges(specifiers.clone()).intersection(&release_specifiers_to_ranges(finds)).is_empty()
}

/// `jax[tpu]`: jax with the libtpu it pins.
fn is_jax_tpu(d: &Dep) -> bool {
    d.name.as_ref() == "jax" && d.extras.iter().any(|e| e.as_ref() == "tpu")
}

fn named(name: &PackageName, names: &[&str]) -> bool {
    names.contains(&name.as_ref())
}

/// Decide the findings of a file's entries: what each requirement means next to the others.
/// `xla_elsewhere`: the file installs torch_xla or TorchTPU in another command (a script's
/// other `pip install` line), which `jax[tpu]` conflicts with and an old accelerate fails on, as
/// in one list.
fn findings(entries: &[Entry], rules: &RuleSet, xla_elsewhere: bool, run: Option<&RunFacts>) -> Vec<Diagnostic> {
    let target = &rules.target;
    let deps: Vec<&Dep> = entries.iter().filter_map(|e| if let Entry::Dep(d) = e { Some(d) } else { None }).collect();
    let distribution = PackageName::from_str(&target.distribution).ok();
    let has = |names: &[&str]| deps.iter().any(|d| named(&d.name, names));
    let has_xla = has(TORCH_XLA);
    let torch_target = target.requirement_on("torch").and_then(parse_requirement);
    let torch_spec = torch_target.as_ref().and_then(|r| match &r.version_or_url {
        Some(VersionOrUrl::VersionSpecifier(s)) => Some(s.clone()),
        _ => None,
    });
    let torch_outside = |d: &Dep| {
        d.name.as_ref() == "torch"
            && d.specifiers.as_ref().zip(torch_spec.as_ref()).is_some_and(|(s, t)| {
                release_specifiers_to_ranges(s.clone())
                    .intersection(&release_specifiers_to_ranges(t.clone()))
                    .is_empty()
            })
    };
    let torch_moves = has_xla || deps.iter().any(|d| torch_outside(d));
    let pinned = |d: &Dep| {
        use pep508_rs::pep440_rs::Operator::*;
        let upper = |s: &pep508_rs::pep440_rs::VersionSpecifier| {
            matches!(s.operator(), Equal | EqualStar | ExactEqual | TildeEqual | LessThan | LessThanEqual)
        };
        d.specifiers.as_ref().is_some_and(|s| s.iter().any(upper))
    };
    let companions: Vec<&str> =
        deps.iter().filter(|d| named(&d.name, TORCH_COMPANIONS) && pinned(d)).map(|d| d.shown.as_str()).collect();
    let has_torch = has(&["torch"]);
    // A file already migrated (or written for TorchTPU): it installs the target or pins torch
    // inside the target's range. A plain PyTorch file's companion pins are not ours to judge.
    let targets_torchtpu = distribution.as_ref().is_some_and(|n| deps.iter().any(|d| d.name == *n))
        || deps.iter().any(|d| {
            d.name.as_ref() == "torch"
                && d.specifiers.as_ref().zip(torch_spec.as_ref()).is_some_and(|(s, t)| {
                    let own = release_specifiers_to_ranges(s.clone());
                    !own.is_empty() && own.subset_of(&release_specifiers_to_ranges(t.clone()))
                })
        });
    // torch_xla here becomes the target (TPU901's fix is safe), or the target is here already.
    let installs_target = has_xla || distribution.as_ref().is_some_and(|n| deps.iter().any(|d| d.name == *n));
    let has_transformers = has(&["transformers"]);
    let has_jax_tpu = deps.iter().any(|d| is_jax_tpu(d));
    let python_ranges = VersionSpecifiers::from_str(&target.requires_python).ok().map(release_specifiers_to_ranges);

    // Each entry's findings, in order; the indexes' wait for what the requirements' say.
    let mut found: Vec<Vec<Diagnostic>> = Vec::with_capacity(entries.len());
    for entry in entries {
        let d = match entry {
            Entry::Python { shown, range, specifiers } => {
                let excluded = python_ranges
                    .as_ref()
                    .is_some_and(|t| release_specifiers_to_ranges(specifiers.clone()).intersection(t).is_empty());
                found.push(if excluded {
                    finding(rules, Builtin::DepPython, *range, shown, None).into_iter().collect()
                } else {
                    vec![]
                });
                continue;
            }
            Entry::Index { .. } | Entry::Opaque { .. } => {
                found.push(Vec::new());
                continue;
            }
            Entry::Dep(d) => d,
        };
        let diagnostic = if named(&d.name, TORCH_XLA) {
            let version = format!("=={}", target.version);
            finding(rules, Builtin::DepTorchXla, d.range, &d.shown, rewrite(d, &target.distribution, &version)).map(
                |mut f| {
                    if !has_torch && let Some(t) = target.requirement_on("torch") {
                        f.note = Some(format!("{} requires `{t}` itself", target.distribution));
                    }
                    f
                },
            )
        } else if named(&d.name, TPU_RUNTIME) {
            finding(rules, Builtin::DepLibtpu, d.range, &d.shown, d.remove.map(|r| vec![Edit::delete(r)]))
        } else if d.name.as_ref() == "optimum-tpu" {
            let edits =
                if has_transformers { d.remove.map(|r| vec![Edit::delete(r)]) } else { rewrite(d, "transformers", "") };
            finding(rules, Builtin::DepOptimumTpu, d.range, &d.shown, edits)
        } else if d.name.as_ref() == "optimum" && d.extras.iter().any(|e| e.as_ref() == "tpu") {
            finding(rules, Builtin::DepOptimumTpu, d.range, &d.shown, None).map(|mut f| {
                f.note = Some("drop the `tpu` extra if the project still uses optimum, else the requirement".into());
                f
            })
        } else if is_jax_tpu(d)
            && (has_xla
                || xla_elsewhere
                || distribution.as_ref().is_some_and(|n| deps.iter().any(|other| other.name == *n)))
        {
            finding(rules, Builtin::DepJaxTpu, d.range, &d.shown, None)
        } else if torch_outside(d) {
            let spec = torch_target.as_ref().and_then(|t| target.requirement_on("torch").map(|r| (t, r)));
            let edits = spec.and_then(|(t, r)| rewrite(d, "torch", r.get(t.name.as_ref().len()..)?.trim_start()));
            finding(rules, Builtin::DepTorchPin, d.range, &d.shown, edits).map(|mut f| {
                // The file installs torch-tpu (or will: TPU901's safe fix), which requires this
                // range: torch moves whatever the pin says, and keeping the old pin could only
                // make the install fail. Moving it is then no behaviour change of its own.
                if installs_target && let Some(fix) = &mut f.fix {
                    fix.safety = Safety::Safe;
                    f.note = Some(format!("{} requires this torch itself", target.distribution));
                }
                if !companions.is_empty() && f.fix.is_some() {
                    f.note = Some(format!("re-pin `{}` for the new torch too", companions.join("`, `")));
                }
                f
            })
        } else if d.name.as_ref() == "accelerate"
            && (has_xla || xla_elsewhere || targets_torchtpu)
            && admits_none(d, ACCELERATE_FINDS_TPU)
        {
            finding(rules, Builtin::DepAcceleratePin, d.range, &d.shown, rewrite(d, "accelerate", ACCELERATE_FINDS_TPU))
        } else if d.name.as_ref() == "transformers"
            && (has_xla || xla_elsewhere || targets_torchtpu)
            && admits_none(d, TRANSFORMERS_FINDS_TPU)
        {
            let edits = rewrite(d, "transformers", TRANSFORMERS_FINDS_TPU);
            finding(rules, Builtin::DepTransformersPin, d.range, &d.shown, edits)
        } else if named(&d.name, TORCH_COMPANIONS)
            && pinned(d)
            && (torch_moves || targets_torchtpu && companion_outside(d, torch_spec.as_ref()))
        {
            finding(rules, Builtin::DepTorchCompanion, d.range, &d.shown, None)
        } else {
            None
        };
        found.push(
            diagnostic
                .map(|mut f| {
                    if let (Some(fix), Some(hashes)) = (&mut f.fix, d.hashes)
                        && fix.edits.iter().any(|e| !e.content.is_empty())
                    {
                        // The hashes name the old wheel's files: a rewrite drops them, and pip's
                        // hash-checking mode then wants new ones.
                        fix.edits.push(Edit::delete(hashes));
                        fix.safety = Safety::Unsafe;
                        f.note = Some("regenerate the hashes (`pip-compile --generate-hashes`)".into());
                    }
                    f
                })
                .into_iter()
                .collect(),
        );
    }
    let index = index_removal(entries, &found, run);
    for (entry, found) in entries.iter().zip(found.iter_mut()) {
        let Entry::Index { shown, range, remove } = entry else { continue };
        let diagnostic = match &index {
            // `jax[tpu]` next to it still installs libtpu from that index: removing it would
            // leave a requirement that cannot be installed.
            _ if has_jax_tpu => finding(rules, Builtin::DepTpuIndex, *range, shown, None).map(|mut f| {
                f.note = Some("`jax[tpu]` here still installs libtpu from it: keep it while jax stays".into());
                f
            }),
            Ok(safety) => finding(rules, Builtin::DepTpuIndex, *range, shown, remove.map(|r| vec![Edit::delete(r)]))
                .map(|mut f| {
                    if let Some(fix) = &mut f.fix {
                        fix.safety = fix.safety.max(*safety);
                    }
                    f
                }),
            Err(why) => finding(rules, Builtin::DepTpuIndex, *range, shown, None).map(|mut f| {
                f.note = Some(why.clone());
                f
            }),
        };
        found.extend(diagnostic);
    }
    found.into_iter().flatten().collect()
}

/// Whether the old TPU indexes can go from a list of requirements (a `pip install` command, a
/// file): only once every requirement that installed from them becomes torch-tpu or goes.
/// `Ok` with the safety of the fixes that do it (the index goes with them, never before them),
/// or why it must stay: a requirement no fix converts (an optimum-tpu checkout installed with
/// `-e .` still requires torch_xla, which its image then cannot find).
/// A requirements file of the run (`-r base.txt`) is migrated with it, so it does not count.
fn index_removal(entries: &[Entry], found: &[Vec<Diagnostic>], run: Option<&RunFacts>) -> Result<Safety, String> {
    let mut safety = Safety::Safe;
    for (entry, found) in entries.iter().zip(found) {
        let shown = match entry {
            Entry::Opaque { file: Some(file), .. } if run.is_some_and(|r| r.is_requirements_file(file)) => continue,
            Entry::Opaque { shown, .. } => shown,
            Entry::Dep(d)
                if named(&d.name, TORCH_XLA)
                    || named(&d.name, TPU_RUNTIME)
                    || d.name.as_ref() == "optimum-tpu"
                    || d.name.as_ref() == "optimum" && d.extras.iter().any(|e| e.as_ref() == "tpu") =>
            {
                match found.iter().find_map(|f| f.fix.as_ref()) {
                    Some(fix) => {
                        safety = safety.max(fix.safety);
                        continue;
                    }
                    None => &d.shown,
                }
            }
            _ => continue,
        };
        return Err(format!(
            "kept: `{}` next to it may still install torch_xla or libtpu from here; delete this once it installs torch-tpu",
            shown.trim()
        ));
    }
    Ok(safety)
}

/// A finding of the rule `builtin`, with the edits of its fix when there is one; the rule's data
/// says how safe the fix is and what to note with it.
fn finding(
    rules: &RuleSet,
    builtin: Builtin,
    range: TextRange,
    shown: &str,
    edits: Option<Vec<Edit>>,
) -> Option<Diagnostic> {
    let id = rules.builtin(builtin)?;
    let rule = &rules.rules[id];
    let spec = rule.fixes.first();
    let fix = edits.zip(spec).map(|(edits, spec)| Fix {
        safety: spec.safety,
        edits,
        deletes: vec![],
        imports: vec![],
        helpers: vec![],
    });
    let note = spec.filter(|_| fix.is_some()).and_then(|s| s.note.clone());
    Some(Diagnostic {
        rule: id,
        range,
        message: rule.message.replace("{name}", &crate::redact::credentials(shown.trim())),
        note,
        fix,
    })
}

/// The edits that make `d` require `name` with `spec` (`==0.2.0`, empty for any version),
/// keeping its marker and the way it is written; `None` when it cannot be rewritten in place.
fn rewrite(d: &Dep, name: &str, spec: &str) -> Option<Vec<Edit>> {
    let requirement = format!("{name}{spec}{}", d.tail);
    let content = match &d.written {
        Written::Text => requirement,
        Written::Word { quote } => {
            let needs_quotes = requirement.contains(|c: char| " \t<>;|&()$`'\"*?[]{}!#\\".contains(c));
            match quote {
                Some(q) if !requirement.contains([*q, '$', '`', '\\']) => format!("{q}{requirement}{q}"),
                None if !needs_quotes => requirement,
                None if !requirement.contains(['"', '$', '`', '\\']) => format!("\"{requirement}\""),
                _ => return None,
            }
        }
        Written::Poetry { key, value, keep } => {
            let spec = if spec.is_empty() { "*" } else { spec };
            let value_text = if keep.is_empty() {
                format!("\"{spec}\"")
            } else {
                format!("{{ version = \"{spec}\", {} }}", keep.join(", "))
            };
            return Some(vec![Edit::replace(*key, name), Edit::replace(*value, value_text)]);
        }
        Written::Fixed => return None,
    };
    Some(vec![Edit::replace(d.range, content)])
}

/// A shell word: where it is, and its value once quotes and escapes are removed.
#[derive(Debug)]
struct Word {
    range: TextRange,
    value: String,
    /// The quote it starts with, if any (`"torch_xla[tpu]"`).
    quote: Option<char>,
}

fn size(offset: usize) -> TextSize {
    TextSize::try_from(offset).unwrap_or(TextSize::new(u32::MAX))
}

/// The words of `text[from..to]` as a POSIX shell splits them (quotes, backslashes, `\`-newline
/// continuations), up to the end of the line or a `#` comment, and in `shell` mode a control
/// operator or redirection (requirements files keep `;` and `<` in markers); and the offset it
/// stopped at. pip splits a requirements line's options the same way (`shlex`).
fn shell_words(text: &str, from: usize, to: usize, shell: bool) -> (Vec<Word>, usize) {
    let mut words: Vec<Word> = Vec::new();
    let mut current: Option<(usize, String, Option<char>)> = None;
    let mut chars = text[from..to].char_indices().map(|(i, c)| (from + i, c)).peekable();
    let mut end = from; // end of the last character taken into a word
    let mut finish = |current: &mut Option<(usize, String, Option<char>)>, end: usize| {
        if let Some((start, value, quote)) = current.take() {
            words.push(Word { range: TextRange::new(size(start), size(end)), value, quote });
        }
    };
    while let Some((i, c)) = chars.next() {
        match c {
            '\n' => {
                finish(&mut current, end);
                return (words, i);
            }
            ' ' | '\t' | '\r' => finish(&mut current, end),
            '#' if current.is_none() => {
                let stop = text.as_bytes()[i..to].iter().position(|&b| b == b'\n').map_or(to, |n| i + n);
                return (words, stop);
            }
            ';' | '&' | '|' | '<' | '>' | '(' | ')' if shell => {
                finish(&mut current, end);
                return (words, i);
            }
            '\\' => match chars.next() {
                Some((_, '\n')) => finish(&mut current, end),
                Some((_, '\r')) if chars.peek().is_some_and(|&(_, c)| c == '\n') => {
                    chars.next();
                    finish(&mut current, end);
                }
                Some((j, e)) => {
                    current.get_or_insert_with(|| (i, String::new(), None)).1.push(e);
                    end = j + e.len_utf8();
                }
                None => {
                    current.get_or_insert_with(|| (i, String::new(), None)).1.push('\\');
                    end = i + 1;
                }
            },
            '\'' | '"' => {
                let word = current.get_or_insert_with(|| (i, String::new(), Some(c)));
                end = i + 1;
                while let Some((j, q)) = chars.next() {
                    end = j + q.len_utf8();
                    if q == c {
                        break;
                    }
                    if c == '"' && q == '\\' && chars.peek().is_some_and(|&(_, n)| "\"\\$`\n".contains(n)) {
                        let (k, n) = chars.next().expect("peeked");
                        end = k + n.len_utf8();
                        if n != '\n' {
                            word.1.push(n);
                        }
                        continue;
                    }
                    word.1.push(q);
                }
            }
            c => {
                current.get_or_insert_with(|| (i, String::new(), None)).1.push(c);
                end = i + c.len_utf8();
            }
        }
    }
    finish(&mut current, end);
    (words, to)
}

/// The index of the first argument of `pip install` / `pip3 install` / `python -m pip install` /
/// `uv pip install` in a command's words (after `VAR=value` assignments and `sudo`).
fn install_args(words: &[Word]) -> Option<usize> {
    let is = |i: usize, s: &str| words.get(i).is_some_and(|w| w.value == s);
    let mut i = words.iter().position(|w| !w.value.contains('=') && w.value != "sudo")?;
    let program = words[i].value.rsplit('/').next().unwrap_or_default();
    let version_suffix =
        |p: &str, base: &str| p.strip_prefix(base).is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'));
    if version_suffix(program, "pip") {
        i += 1;
    } else if version_suffix(program, "python") {
        i += 1;
        while words.get(i).is_some_and(|w| w.value.starts_with('-') && w.value != "-m" && w.value != "-mpip") {
            i += 1;
        }
        if is(i, "-mpip") {
            i += 1;
        } else if is(i, "-m") && is(i + 1, "pip") {
            i += 2;
        } else {
            return None;
        }
    } else if program == "uv" && is(i + 1, "pip") {
        i += 2;
    } else {
        return None;
    }
    while words.get(i).is_some_and(|w| w.value.starts_with('-')) {
        i += 1; // global options: `pip -q install`, `pip --no-cache-dir install`
    }
    is(i, "install").then_some(i + 1)
}

/// pip options whose value installs requirements the command does not show (`-e .`, `-r base.txt`).
fn installs_unseen(option: &str) -> bool {
    matches!(option, "-r" | "--requirement" | "-e" | "--editable")
}

/// The file `-r FILE` installs from.
fn requirement_file(option: &str, value: &str) -> Option<String> {
    matches!(option, "-r" | "--requirement").then(|| value.to_string())
}

/// When `words[i]` is an index option (`-f URL`, `-fURL`, `--find-links=URL`): the index of the
/// last word it takes, and its value.
fn index_option(words: &[Word], i: usize) -> Option<(usize, &str)> {
    let w = words[i].value.as_str();
    if INDEX_OPTIONS.contains(&w) {
        return words.get(i + 1).map(|v| (i + 1, v.value.as_str()));
    }
    INDEX_OPTIONS.iter().find_map(|o| {
        let rest = w.strip_prefix(o)?;
        let value = if o.starts_with("--") { rest.strip_prefix('=')? } else { rest };
        (!value.is_empty()).then_some((i, value))
    })
}

/// What one requirements-file line (already split into words) says: a requirement, or an index
/// option of the old TPU buckets; `remove` is what deleting it removes.
fn line_entry(text: &str, words: &[Word], remove: Option<TextRange>) -> Option<Entry> {
    let first = words.first()?;
    if first.value.starts_with('-') {
        if installs_unseen(&first.value) {
            let last = words.get(1).unwrap_or(first);
            let shown = text[TextRange::new(first.range.start(), last.range.end())].to_string();
            return Some(Entry::Opaque { shown, file: requirement_file(&first.value, &last.value) });
        }
        let (last, value) = index_option(words, 0)?;
        let range = TextRange::new(first.range.start(), words[last].range.end());
        return is_tpu_wheel_url(value).then(|| Entry::Index { shown: text[range].to_string(), range, remove });
    }
    // pip: the requirement is the words before the first option (`--hash`, `--config-settings`).
    let n = words.iter().position(|w| w.value.starts_with('-')).unwrap_or(words.len());
    let range = TextRange::new(first.range.start(), words[n - 1].range.end());
    let written_text = &text[range];
    let (requirement, written) = if written_text.contains('\n') {
        let joined: Vec<&str> = words[..n].iter().map(|w| &text[w.range]).collect();
        (joined.join(" "), Written::Fixed)
    } else {
        (written_text.to_string(), Written::Text)
    };
    let Some(mut d) = dep(&requirement, &requirement, range, written, remove) else {
        // A path or a VCS URL (`./optimum-tpu`, `git+https://…`): a package the file does not show.
        return Some(Entry::Opaque { shown: requirement, file: None });
    };
    if words[n..].iter().any(|w| w.value.starts_with("--hash")) {
        d.hashes = Some(TextRange::new(range.end(), words[words.len() - 1].range.end()));
    }
    Some(Entry::Dep(d))
}

/// `requirements*.txt`: one entry per logical line (continuations joined, comments dropped).
fn requirements(text: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let (words, stop) = shell_words(text, at, text.len(), false);
        let end = line_end_inclusive(text, stop);
        let line = TextRange::new(size(at), size(end));
        entries.extend(line_entry(text, &words, Some(line)));
        at = end;
    }
    entries
}

/// The lines of `text`: (start, content without its line break, end after it).
fn lines(text: &str) -> impl Iterator<Item = (usize, &str, usize)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        (at < text.len()).then(|| {
            let end = line_end_inclusive(text, at);
            let line = text[at..end].trim_end_matches(['\n', '\r']);
            let start = std::mem::replace(&mut at, end);
            (start, line, end)
        })
    })
}

/// `range` widened to whole lines when nothing but blanks (and a trailing comment) shares them.
fn whole_lines(text: &str, range: TextRange, comment: &str) -> Option<TextRange> {
    let (start, end) = (usize::from(range.start()), usize::from(range.end()));
    let first = line_start(text, start);
    let last = line_end_inclusive(text, end);
    let after = text[end..last].trim();
    let alone = text[first..start].trim().is_empty() && (after.is_empty() || after.starts_with(comment));
    alone.then(|| TextRange::new(size(first), size(last)))
}

/// What deleting the item at `item` of a comma-separated list (`[…]` in TOML or Python) removes:
/// its lines when it has them to itself, else the item and the comma after it (before it, for
/// the last item).
fn list_item_removal(text: &str, item: TextRange, comment: &str) -> TextRange {
    let bytes = text.as_bytes();
    let blank = |b: u8| b == b' ' || b == b'\t';
    let mut after = usize::from(item.end());
    while after < bytes.len() && blank(bytes[after]) {
        after += 1;
    }
    let comma = bytes.get(after) == Some(&b',');
    let through = TextRange::new(item.start(), size(if comma { after + 1 } else { after }));
    if let Some(lines) = whole_lines(text, through, comment) {
        return lines;
    }
    if comma {
        let mut end = after + 1;
        while end < bytes.len() && blank(bytes[end]) {
            end += 1;
        }
        return TextRange::new(item.start(), size(end));
    }
    let before = text[..usize::from(item.start())].trim_end();
    if before.ends_with(',') {
        return TextRange::new(size(before.len() - 1), item.end());
    }
    item
}

/// A TOML string's value and, when the file writes it as is (no escapes), its content's range.
fn toml_string<'a>(text: &str, value: &'a Value) -> Option<(&'a str, TextRange, Option<TextRange>)> {
    let s = value.as_str()?;
    let span = value.span()?;
    let raw = text.get(span.clone())?;
    let quote = ["\"\"\"", "'''", "\"", "'"].into_iter().find(|q| raw.starts_with(q))?;
    let range = TextRange::new(size(span.start), size(span.end));
    let content = (raw.len() >= 2 * quote.len() && raw[quote.len()..raw.len() - quote.len()] == *s)
        .then(|| TextRange::new(size(span.start + quote.len()), size(span.end - quote.len())));
    Some((s, range, content))
}

fn toml_range(span: Option<std::ops::Range<usize>>) -> Option<TextRange> {
    span.map(|s| TextRange::new(size(s.start), size(s.end)))
}

/// A TOML string holding a PEP 508 requirement; `in_array` when it can be deleted as a list item.
fn toml_requirement(text: &str, value: &Value, in_array: bool) -> Option<Entry> {
    let (s, range, content) = toml_string(text, value)?;
    let remove = in_array.then(|| list_item_removal(text, range, "#"));
    let (range, written) = content.map_or((range, Written::Fixed), |c| (c, Written::Text));
    dep(s, s, range, written, remove).map(Entry::Dep)
}

/// `pyproject.toml`: PEP 621 and PEP 735 lists, build requirements, Poetry, PDM and uv tables.
fn pyproject(text: &str) -> Vec<Entry> {
    let Ok(doc) = toml_edit::Document::parse(text) else { return Vec::new() };
    let root = doc.as_table();
    let at = |path: &[&str]| -> Option<&Item> { path[1..].iter().try_fold(root.get(path[0])?, |item, k| item.get(k)) };
    let tables = |path: &[&str]| -> Vec<&Item> {
        at(path).and_then(Item::as_table_like).map(|t| t.iter().map(|(_, v)| v).collect()).unwrap_or_default()
    };
    let mut lists: Vec<&Item> = Vec::new();
    for path in [
        &["project", "dependencies"][..],
        &["build-system", "requires"],
        &["tool", "uv", "dev-dependencies"],
        &["tool", "uv", "constraint-dependencies"],
        &["tool", "uv", "override-dependencies"],
    ] {
        lists.extend(at(path));
    }
    lists.extend(tables(&["project", "optional-dependencies"]));
    lists.extend(tables(&["dependency-groups"]));
    lists.extend(tables(&["tool", "pdm", "dev-dependencies"]));

    let mut entries = Vec::new();
    for list in lists {
        for value in list.as_array().into_iter().flat_map(|a| a.iter()) {
            entries.extend(toml_requirement(text, value, true));
        }
    }
    if let Some(value) = at(&["project", "requires-python"]).and_then(Item::as_value) {
        entries.extend(python_entry(text, value));
    }
    let mut poetry: Vec<&Item> = Vec::new();
    poetry.extend(at(&["tool", "poetry", "dependencies"]));
    poetry.extend(at(&["tool", "poetry", "dev-dependencies"]));
    for group in tables(&["tool", "poetry", "group"]) {
        poetry.extend(group.get("dependencies"));
    }
    for table in poetry.into_iter().filter_map(Item::as_table_like) {
        poetry_table(text, table, &mut entries);
    }
    // uv's find-links are deletable list items; named indexes and sources may be referred to.
    for value in at(&["tool", "uv", "find-links"]).and_then(Item::as_array).into_iter().flat_map(|a| a.iter()) {
        if let Some((url, range, _)) = toml_string(text, value).filter(|(url, _, _)| is_tpu_wheel_url(url)) {
            let remove = Some(list_item_removal(text, range, "#"));
            entries.push(Entry::Index { shown: url.to_string(), range, remove });
        }
    }
    for path in [&["tool", "uv", "index"][..], &["tool", "poetry", "source"]] {
        for table in at(path).and_then(Item::as_array_of_tables).into_iter().flat_map(|a| a.iter()) {
            let url = table.get("url").and_then(Item::as_value).and_then(|v| toml_string(text, v));
            if let Some((url, range, _)) = url.filter(|(url, _, _)| is_tpu_wheel_url(url)) {
                entries.push(Entry::Index { shown: url.to_string(), range, remove: None });
            }
        }
    }
    if let Some(sources) = at(&["tool", "uv", "sources"]).and_then(Item::as_table_like) {
        for (name, _) in sources.iter() {
            let replaced = PackageName::from_str(name).is_ok_and(|n| named(&n, TORCH_XLA) || named(&n, TPU_RUNTIME));
            let key = sources.get_key_value(name).and_then(|(k, _)| toml_range(k.span()));
            if let Some(range) = key.filter(|_| replaced) {
                entries.push(Entry::Index { shown: format!("[tool.uv.sources] {name}"), range, remove: None });
            }
        }
    }
    entries
}

/// The entries of a Poetry dependency table: `name = "spec"`, `name = {version, extras, markers…}`.
fn poetry_table(text: &str, table: &dyn TableLike, entries: &mut Vec<Entry>) {
    for (name, _) in table.iter() {
        let Some((key, item)) = table.get_key_value(name) else { continue };
        let Some(key) = toml_range(key.span()) else { continue };
        let Some(value) = item.as_value() else { continue };
        if name == "python" {
            entries.extend(python_entry(text, value));
            continue;
        }
        let Ok(package) = PackageName::from_str(name) else { continue };
        let Some(value_range) = toml_range(value.span()) else { continue };
        let range = TextRange::new(key.start(), value_range.end());
        let (spec, extras, keep) = match value {
            Value::String(s) => (Some(s.value().as_str()), Vec::new(), Some(Vec::new())),
            Value::InlineTable(t) => {
                let spec = t.get("version").and_then(Value::as_str);
                let extras = t.get("extras").and_then(Value::as_array).into_iter().flatten();
                let extras = extras.filter_map(|e| ExtraName::from_str(e.as_str()?).ok()).collect();
                // Keep what says when to install it; drop where torch_xla came from.
                let keep = t.iter().filter(|(k, _)| ["markers", "python", "optional"].contains(k)).map(|(k, _)| {
                    let (key, value) = t.get_key_value(k)?;
                    let span = key.span()?.start..value.span()?.end;
                    text.get(span).map(str::to_string)
                });
                (spec, extras, keep.collect::<Option<Vec<_>>>())
            }
            _ => (None, Vec::new(), None),
        };
        let written = match keep {
            Some(keep) => Written::Poetry { key, value: value_range, keep },
            None => Written::Fixed,
        };
        let specifiers = spec.and_then(poetry_specifiers);
        let remove = whole_lines(text, range, "#");
        let shown = text.get(usize::from(range.start())..usize::from(range.end())).unwrap_or(name).to_string();
        let d =
            Dep { shown, range, name: package, extras, specifiers, tail: String::new(), written, remove, hashes: None };
        entries.push(Entry::Dep(d));
    }
}

/// A Poetry version constraint as PEP 440: `^2.5` and `~2.5.1` (Poetry's own operators), a bare
/// version (`2.5.0` means `==2.5.0`), or PEP 440 itself; comma-separated parts are each read.
/// `None` for what Poetry alone understands (`||` alternatives).
fn poetry_specifiers(spec: &str) -> Option<VersionSpecifiers> {
    let parts: Option<Vec<String>> = spec.split(',').map(|part| poetry_part(part.trim())).collect();
    VersionSpecifiers::from_str(&parts?.join(",")).ok()
}

/// One Poetry constraint as PEP 440 specifiers.
fn poetry_part(part: &str) -> Option<String> {
    let release = |v: &str| -> Option<Vec<u64>> { v.trim().split('.').map(|n| n.parse().ok()).collect() };
    let join = |r: &[u64]| r.iter().map(u64::to_string).collect::<Vec<_>>().join(".");
    if let Some(v) = part.strip_prefix('^') {
        // The leftmost non-zero component may not change: ^2.5 → <3, ^0.2.3 → <0.3, ^0.0.3 → <0.0.4.
        let r = release(v)?;
        let keep = r.iter().position(|&n| n != 0).unwrap_or(r.len().saturating_sub(1));
        let mut upper: Vec<u64> = r[..=keep.min(r.len() - 1)].to_vec();
        *upper.last_mut()? += 1;
        return Some(format!(">={},<{}", join(&r), join(&upper)));
    }
    if let Some(v) = part.strip_prefix('~').filter(|v| !v.starts_with('=')) {
        // ~2.5.1 and ~2.5 → <2.6; ~2 → <3.
        let r = release(v)?;
        let mut upper: Vec<u64> = r[..r.len().min(2)].to_vec();
        *upper.last_mut()? += 1;
        return Some(format!(">={},<{}", join(&r), join(&upper)));
    }
    if part.contains("||") {
        return None;
    }
    let bare = part.chars().next().is_some_and(|c| c.is_ascii_digit());
    Some(if bare { format!("=={part}") } else { part.to_string() })
}

fn python_entry(text: &str, value: &Value) -> Option<Entry> {
    let (s, range, _) = toml_string(text, value)?;
    let specifiers = poetry_specifiers(s)?;
    Some(Entry::Python { shown: s.to_string(), range, specifiers })
}

/// `setup.cfg`: `[options] install_requires` / `setup_requires` / `tests_require` /
/// `python_requires`, and every key of `[options.extras_require]`, one requirement a line.
fn setup_cfg(text: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut section = String::new();
    let mut in_list = false; // the value being continued is a requirement list
    for (start, line, end) in lines(text) {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with(['#', ';']) {
            continue;
        }
        if line.starts_with('[') {
            section = trimmed.trim_start_matches('[').trim_end_matches(']').trim().to_ascii_lowercase();
            in_list = false;
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if in_list {
                let (words, _) = shell_words(text, start, start + line.len(), false);
                entries.extend(line_entry(text, &words, Some(TextRange::new(size(start), size(end)))));
            }
            continue;
        }
        let Some(eq) = line.find(['=', ':']) else {
            in_list = false;
            continue;
        };
        let key = line[..eq].trim().to_ascii_lowercase();
        let value_start = start + eq + 1;
        let value_end = start + line.len();
        in_list = match section.as_str() {
            "options" => matches!(key.as_str(), "install_requires" | "setup_requires" | "tests_require"),
            "options.extras_require" => true,
            _ => false,
        };
        if section == "options" && key == "python_requires" {
            let value = text[value_start..value_end].trim();
            if let Ok(specifiers) = VersionSpecifiers::from_str(value) {
                let offset = value_start + text[value_start..value_end].find(value).unwrap_or(0);
                let range = TextRange::new(size(offset), size(offset + value.len()));
                entries.push(Entry::Python { shown: value.to_string(), range, specifiers });
            }
        } else if in_list {
            // A value on the key's line: deleting it leaves `install_requires =`.
            let (words, _) = shell_words(text, value_start, value_end, false);
            entries.extend(line_entry(text, &words, Some(TextRange::new(size(value_start), size(value_end)))));
        }
    }
    entries
}

/// conda's `environment.yml`: the top-level `dependencies:` block list (conda packages by name)
/// and its `- pip:` list, whose items are requirements-file lines.
fn conda_env(text: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut in_dependencies = false;
    let mut pip_indent: Option<usize> = None;
    for (start, line, end) in lines(text) {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if indent == 0 && !trimmed.starts_with('-') {
            in_dependencies = trimmed.strip_prefix("dependencies:").is_some_and(|r| r.trim().is_empty());
            pip_indent = None;
            continue;
        }
        let item = trimmed.strip_prefix("- ").or_else(|| trimmed.strip_prefix("-\t"));
        let Some(item) = item.filter(|_| in_dependencies) else { continue };
        if pip_indent.is_some_and(|p| indent <= p) {
            pip_indent = None;
        }
        let value = item.trim();
        if value.strip_prefix("pip:").is_some_and(|r| r.trim().is_empty() || r.trim().starts_with('#')) {
            pip_indent = Some(indent);
            continue;
        }
        let offset = start + indent + (trimmed.len() - item.len()) + (item.len() - item.trim_start().len());
        let whole = TextRange::new(size(start), size(end));
        // The scalar's content: inside its quotes, or a plain scalar up to a ` #` comment.
        let (from, to) = match value.chars().next() {
            Some(q @ ('"' | '\'')) => match value[1..].find(q) {
                Some(close) => (offset + 1, offset + 1 + close),
                None => continue,
            },
            _ => (offset, offset + value.find(" #").unwrap_or(value.len())),
        };
        let to = from + text[from..to].trim_end().len();
        if pip_indent.is_some() {
            let (words, _) = shell_words(text, from, to, false);
            entries.extend(line_entry(text, &words, Some(whole)));
        } else {
            conda_package(&text[from..to], TextRange::new(size(from), size(to)), whole, &mut entries);
        }
    }
    entries
}

/// A conda package spec (`python=3.10`, `libtpu`): conda's own syntax, only the name and, for
/// `python`, the version are read.
fn conda_package(spec: &str, range: TextRange, line: TextRange, entries: &mut Vec<Entry>) {
    let spec = spec.rsplit("::").next().unwrap_or(spec); // `conda-forge::python=3.10`
    let split = spec.find(['=', '<', '>', '!', ' ', '[']).unwrap_or(spec.len());
    let (name, version) = spec.split_at(split);
    let Ok(package) = PackageName::from_str(name) else { return };
    if package.as_ref() == "python" {
        // `=3.10` is conda's `3.10.*`; `=3.10=h1234_0` adds a build string.
        let version = version.trim();
        let pep440 = match version.strip_prefix('=').filter(|v| !v.starts_with('=')) {
            Some(v) => {
                let v = v.split('=').next().unwrap_or(v);
                if v.ends_with('*') { format!("=={v}") } else { format!("=={v}.*") }
            }
            None => version.to_string(),
        };
        if let Ok(specifiers) = VersionSpecifiers::from_str(&pep440) {
            entries.push(Entry::Python { shown: spec.to_string(), range, specifiers });
        }
    } else if named(&package, TORCH_XLA) || named(&package, TPU_RUNTIME) {
        let d = Dep {
            shown: spec.to_string(),
            range,
            name: package,
            extras: Vec::new(),
            specifiers: None,
            tail: String::new(),
            written: Written::Fixed, // torch-tpu is not a conda package: it goes under `pip:`
            remove: Some(line),
            hashes: None,
        };
        entries.push(Entry::Dep(d));
    }
}

/// `setup.py`: the string literals of `install_requires=` / `extras_require=` /
/// `setup_requires=` / `tests_require=` and `python_requires=` of `setup(…)` calls, following a
/// name to its module-level list (`install_requires=REQUIRED`).
fn setup_py(text: &str) -> Vec<Entry> {
    let Ok(parsed) = ruff_python_parser::parse_module(text) else { return Vec::new() };
    let body = &parsed.syntax().body;
    let assigned: FxHashMap<&str, &Expr> = body
        .iter()
        .filter_map(|s| match s {
            Stmt::Assign(a) => match a.targets.as_slice() {
                [Expr::Name(n)] => Some((n.id.as_str(), &*a.value)),
                _ => None,
            },
            Stmt::AnnAssign(a) => match (&*a.target, &a.value) {
                (Expr::Name(n), Some(v)) => Some((n.id.as_str(), &**v)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let mut calls = SetupCalls(Vec::new());
    calls.visit_body(body);
    let mut entries = Vec::new();
    for call in calls.0 {
        for keyword in &call.arguments.keywords {
            let value = match &keyword.value {
                Expr::Name(n) => assigned.get(n.id.as_str()).copied().unwrap_or(&keyword.value),
                v => v,
            };
            match keyword.arg.as_ref().map(|a| a.as_str()) {
                Some("install_requires" | "setup_requires" | "tests_require") => {
                    python_requirements(text, value, false, &mut entries);
                }
                Some("extras_require") => {
                    if let Expr::Dict(d) = value {
                        for item in &d.items {
                            python_requirements(text, &item.value, false, &mut entries);
                        }
                    }
                }
                Some("python_requires") => {
                    let literal = value.as_string_literal_expr().and_then(single_string);
                    if let Some(s) = literal
                        && let Ok(specifiers) = VersionSpecifiers::from_str(&s.value)
                    {
                        entries.push(Entry::Python { shown: s.value.to_string(), range: s.range, specifiers });
                    }
                }
                _ => {}
            }
        }
    }
    entries
}

/// Requirement strings in a Python expression: a string, a list or tuple of them, a sum of those.
fn python_requirements(text: &str, expr: &Expr, in_list: bool, entries: &mut Vec<Entry>) {
    match expr {
        Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. }) => {
            for elt in elts {
                python_requirements(text, elt, true, entries);
            }
        }
        Expr::BinOp(b) if b.op == ast::Operator::Add => {
            python_requirements(text, &b.left, false, entries);
            python_requirements(text, &b.right, false, entries);
        }
        Expr::StringLiteral(s) => {
            let Some(literal) = single_string(s) else { return };
            let content = literal.content_range();
            let exact = text.get(usize::from(content.start())..usize::from(content.end())) == Some(&*literal.value);
            let (range, written) = if exact { (content, Written::Text) } else { (s.range, Written::Fixed) };
            let remove = in_list.then(|| list_item_removal(text, s.range, "#"));
            entries.extend(dep(&literal.value, &literal.value, range, written, remove).map(Entry::Dep));
        }
        _ => {}
    }
}

/// A string literal that is one literal (not `"a" "b"`).
fn single_string(s: &ast::ExprStringLiteral) -> Option<&ast::StringLiteral> {
    (!s.value.is_implicit_concatenated()).then(|| s.value.iter().next()).flatten()
}

/// The `setup(…)` / `setuptools.setup(…)` calls of a module.
struct SetupCalls<'a>(Vec<&'a ast::ExprCall>);

impl<'a> Visitor<'a> for SetupCalls<'a> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            let name = match &*call.func {
                Expr::Name(n) => n.id.as_str(),
                Expr::Attribute(a) => a.attr.as_str(),
                _ => "",
            };
            if name == "setup" {
                self.0.push(call);
            }
        }
        visitor::walk_expr(self, expr);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{migrated, rules};
    use super::*;
    use crate::migrate::selection::Selection;

    fn index_url() -> &'static str {
        "storage.googleapis.com/libtpu-releases"
    }

    fn codes(diagnostics: &[Diagnostic]) -> Vec<&str> {
        diagnostics.iter().map(|d| rules().rules[d.rule].code.as_str()).collect()
    }

    #[test]
    fn requirements_keep_markers_comments_and_line_breaks() {
        let text = "torch~=2.5.0  # pinned for torch_xla\r\n\
                    torch_xla[tpu]~=2.5.0 ; python_version >= \"3.10\"  # TPU\r\n\
                    libtpu-nightly==0.1.dev20240612 \\\r\n    ; sys_platform == 'linux'\r\n\
                    torchvision==0.20.0\r\n\
                    numpy<2\r\n";
        assert_eq!(
            migrated(Kind::Requirements, text),
            "torch>=2.11.0,<=2.15.0  # pinned for torch_xla\r\n\
             torch-tpu==0.2.0 ; python_version >= \"3.10\"  # TPU\r\n\
             torchvision==0.20.0\r\n\
             numpy<2\r\n"
        );
        let found = check(Kind::Requirements, text, rules(), None);
        assert_eq!(codes(&found), ["TPU904", "TPU901", "TPU902", "TPU905"]);
        assert!(found[0].note.as_deref().is_some_and(|n| n.contains("torchvision==0.20.0")), "{:?}", found[0].note);
        assert!(found[1].message.contains("`torch_xla[tpu]~=2.5.0 ; python_version >= \"3.10\"`"));
    }

    #[test]
    fn a_companion_pin_for_the_old_torch_is_still_reported_once_torch_has_moved() {
        // What `--unsafe-fixes` leaves: torch re-pinned, torch_xla gone, torchvision as it was.
        let after = "torch>=2.11.0,<=2.15.0\ntorch-tpu==0.2.0\ntorchvision==0.20.0\ntorchaudio==2.5.0\n";
        assert_eq!(codes(&check(Kind::Requirements, after, rules(), None)), ["TPU905", "TPU905"]);
        // Releases built for a torch the target supports are left alone.
        let fine = "torch>=2.11.0,<=2.15.0\ntorchvision==0.26.0\ntorchaudio~=2.12.0\ntorchvision<0.31\n";
        assert!(check(Kind::Requirements, fine, rules(), None).is_empty());
    }

    #[test]
    fn accelerate_pinned_below_the_release_that_finds_the_tpu_is_raised() {
        let text = "torch_xla[tpu]==2.5.0\naccelerate==1.15.0\ntransformers>=4.40\n";
        let found = check(Kind::Requirements, text, rules(), None);
        assert!(codes(&found).contains(&"TPU910"), "{:?}", codes(&found));
        assert_eq!(migrated(Kind::Requirements, text), "torch-tpu==0.2.0\naccelerate>=1.16.0\ntransformers>=4.40\n");
        // Unpinned, or already new enough, or a plain PyTorch project: nothing to say.
        for text in [
            "torch_xla==2.5.0\naccelerate\n",
            "torch-tpu==0.2.0\naccelerate>=1.16\n",
            "torch>=2.4\naccelerate==1.10.0\n",
        ] {
            assert!(!codes(&check(Kind::Requirements, text, rules(), None)).contains(&"TPU910"), "{text}");
        }
    }

    #[test]
    fn transformers_pinned_below_the_release_whose_trainer_finds_the_tpu_is_raised() {
        let text = "torch_xla[tpu]==2.5.0\ntransformers==4.44.2\naccelerate>=1.16\n";
        let found = check(Kind::Requirements, text, rules(), None);
        assert!(codes(&found).contains(&"TPU911"), "{:?}", codes(&found));
        assert_eq!(migrated(Kind::Requirements, text), "torch-tpu==0.2.0\ntransformers>=5.20.0\naccelerate>=1.16\n");
        // 5.9–5.19 find the chip through an API TorchTPU keeps internal: still too old.
        assert!(
            codes(&check(Kind::Requirements, "torch-tpu==0.2.0\ntransformers>=5.9,<5.20\n", rules(), None))
                .contains(&"TPU911")
        );
        // Unpinned, or admitting a new enough release, or a plain PyTorch project: nothing to say.
        for text in [
            "torch_xla==2.5.0\ntransformers\n",
            "torch_xla==2.5.0\ntransformers>=4.40\n",
            "torch-tpu==0.2.0\ntransformers>=5.20\n",
            "torch>=2.4\ntransformers==4.44.2\n",
        ] {
            assert!(!codes(&check(Kind::Requirements, text, rules(), None)).contains(&"TPU911"), "{text}");
        }
    }

    #[test]
    fn find_links_in_every_form_are_deleted() {
        let text = "-f https://storage.googleapis.com/libtpu-releases/index.html\n\
                    --find-links=https://storage.googleapis.com/libtpu-wheels/index.html\n\
                    --find-links https://storage.googleapis.com/jax-releases/libtpu_releases.html\n\
                    -fhttps://storage.googleapis.com/libtpu-releases/index.html\n\
                    --extra-index-url https://download.pytorch.org/whl/cpu\n\
                    -r requirements-base.txt\n\
                    torch_xla @ https://storage.googleapis.com/pytorch-xla-releases/wheels/tpuvm/torch_xla-2.5.0-cp310-cp310-linux_x86_64.whl\n";
        // `requirements-base.txt` is a requirements file of the run: migrated with it.
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("requirements-base.txt");
        std::fs::write(&base, "numpy\n").unwrap();
        let run = std::sync::Arc::new(RunFacts::new(crate::migrate::reader::Reader, move || vec![base.clone()]));
        let selection = Selection { unsafe_fixes: true, run: Some(run), ..Selection::default() };
        assert_eq!(
            super::super::migrate(Kind::Requirements, text, rules(), &selection).output,
            "--extra-index-url https://download.pytorch.org/whl/cpu\n-r requirements-base.txt\ntorch-tpu==0.2.0\n"
        );
    }

    #[test]
    fn an_index_stays_while_a_requirement_next_to_it_may_still_install_torch_xla() {
        let index = "-f https://storage.googleapis.com/libtpu-releases/index.html";
        // An optimum-tpu checkout (its setup.py pins torch_xla), an unknown requirements file, a VCS
        // URL: the image still installs torch_xla and libtpu from the index.
        for line in [
            format!("pip install -e . {index}"),
            format!("pip install ./optimum-tpu {index}"),
            format!("pip install -r other.txt {index}"),
            format!("pip install git+https://github.com/huggingface/optimum-tpu.git {index}"),
            format!("pip install libtpu-nightly {index}"),
            format!("pip install torch-tpu 'optimum[tpu]' {index}"),
        ] {
            let found = pip_install(&line, TextRange::up_to(size(line.len())), rules(), None);
            let index = found.iter().find(|d| rules().rules[d.rule].code == "TPU903").expect("reported");
            assert!(index.fix.is_none(), "{line}");
            assert!(index.note.as_deref().is_some_and(|n| n.starts_with("kept: `")), "{line}: {:?}", index.note);
            assert_eq!(migrated(Kind::Shell, &format!("{line}\n")).matches(index_url()).count(), 1, "{line}");
        }
        let text = format!("-e .\ntorch_xla[tpu]==2.5.0\n{index}\n");
        assert_eq!(migrated(Kind::Requirements, &text), format!("-e .\ntorch-tpu==0.2.0\n{index}\n"));
        // optimum-tpu goes with an unsafe fix, so the index goes with it, never before it.
        let line = format!("pip install optimum-tpu {index}");
        let found = pip_install(&line, TextRange::up_to(size(line.len())), rules(), None);
        assert_eq!(found[1].fix.as_ref().map(|f| f.safety), Some(Safety::Unsafe), "{found:?}");
        assert_eq!(migrated(Kind::Shell, &format!("{line}\n")), "pip install transformers\n");
    }

    #[test]
    fn hashes_of_a_rewritten_requirement_are_dropped_by_an_unsafe_fix() {
        let text = "torch-xla==2.5.0 \\\n    --hash=sha256:0123 \\\n    --hash=sha256:4567\nnumpy==2.1.0 \\\n    --hash=sha256:89ab\n";
        let found = check(Kind::Requirements, text, rules(), None);
        assert_eq!(found[0].fix.as_ref().map(|f| f.safety), Some(Safety::Unsafe));
        assert_eq!(migrated(Kind::Requirements, text), "torch-tpu==0.2.0\nnumpy==2.1.0 \\\n    --hash=sha256:89ab\n");
    }

    #[test]
    fn poetry_constraints_read_as_pep_440() {
        let read = |s: &str| poetry_specifiers(s).map(|v| v.to_string());
        assert_eq!(read("^2.5").as_deref(), Some(">=2.5, <3"));
        assert_eq!(read("^0.2.3").as_deref(), Some(">=0.2.3, <0.3"));
        assert_eq!(read("^0.0.3").as_deref(), Some(">=0.0.3, <0.0.4"));
        assert_eq!(read("~2.5.1").as_deref(), Some(">=2.5.1, <2.6"));
        assert_eq!(read("~2").as_deref(), Some(">=2, <3"));
        assert_eq!(read("2.5.0").as_deref(), Some("==2.5.0"));
        assert_eq!(read(">=2.1,<2.6").as_deref(), Some(">=2.1, <2.6"));
        assert_eq!(read("^2.5 || ^2.7"), None);
        assert_eq!(read("^x"), None);
        // A tilde torch pin below TorchTPU's range is now seen and rewritten; `^2.5` (<3) allows it.
        let toml = "[tool.poetry.dependencies]\npython = \"^3.11\"\ntorch = \"~2.5\"\ntorch_xla = {version = \"^2.5\", extras = [\"tpu\"]}\n";
        let out = migrated(Kind::Pyproject, toml);
        assert!(out.contains("torch = \">=2.11.0,<=2.15.0\""), "{out}");
    }

    #[test]
    fn a_file_with_nothing_to_do_has_no_findings() {
        let text = "# just pytorch\ntorch>=2.4\ntorchvision==0.19.0\ntransformers\n-e .\n";
        assert!(check(Kind::Requirements, text, rules(), None).is_empty());
        assert!(
            check(Kind::Pyproject, "[project]\nname = \"x\"\ndependencies = [\"torch>=2.12\"]\n", rules(), None)
                .is_empty()
        );
    }

    #[test]
    fn bad_input_is_ignored_without_panicking() {
        for text in [
            "torch_xla[tpu\n===\n\"unterminated\n\\",
            "é -f\n-f\n--find-links=\n--index-url\ntörch_xla==2\n\u{feff}torch_xla\n",
            "torch_xla ; python_version >=\n@@@ \"'\n",
            "[project\ndependencies = [\"torch_xla\"",
            "dependencies:\n- pip:\n  - \"torch_xla\n  -\n- 'é\n",
            // Names pep508_rs's grammar takes and its name check refuses (it panicked on them).
            "torch.)\na-)\nnumpy_)\na.[x]\ntorch_xla.\ntorch_xla[tpu. 1.0\nx[a,b- ]\nx; python_version > '3.8'\u{e9}\n",
            "setup(install_requires=[\"torch.)\", \"a.[x]\", 'numpy_)'])\n",
        ] {
            for kind in [Kind::Requirements, Kind::Pyproject, Kind::SetupCfg, Kind::CondaEnv, Kind::SetupPy] {
                let _ = check(kind, text, rules(), None);
            }
            for (i, _) in text.char_indices() {
                let _ = pip_install(text, TextRange::new(size(i), size(text.len())), rules(), None);
            }
        }
        let found = check(Kind::Requirements, "torch_xla[tpu\ntorch_xla ; python_version >=\n", rules(), None);
        assert!(found.is_empty());
    }

    #[test]
    fn pyproject_lists_and_poetry_tables_keep_their_formatting() {
        let text = r#"[project]
name = "trainer"
requires-python = ">=3.8,<3.11"
dependencies = [
    "torch~=2.5.0",
    # the TPU runtime
    "torch_xla[tpu]~=2.5.0; python_version >= '3.10'",
    "libtpu==0.0.7",  # matches torch_xla 2.5
    "transformers",
]

[project.optional-dependencies]
serve = ["optimum-tpu>=0.2", "libtpu-nightly"]

[tool.poetry.dependencies]
python = "^3.10"
torch_xla = {version = "2.5.0", extras = ["tpu"], markers = "sys_platform == 'linux'"}
cloud-tpu-client = "0.10"

[tool.uv]
find-links = ["https://storage.googleapis.com/libtpu-releases/index.html", "https://example.com/wheels"]
"#;
        let out = migrated(Kind::Pyproject, text);
        assert_eq!(
            out,
            r#"[project]
name = "trainer"
requires-python = ">=3.8,<3.11"
dependencies = [
    "torch>=2.11.0,<=2.15.0",
    # the TPU runtime
    "torch-tpu==0.2.0; python_version >= '3.10'",
    "transformers",
]

[project.optional-dependencies]
serve = []

[tool.poetry.dependencies]
python = "^3.10"
torch-tpu = { version = "==0.2.0", markers = "sys_platform == 'linux'" }

[tool.uv]
find-links = ["https://example.com/wheels"]
"#
        );
        assert_eq!(codes(&check(Kind::Pyproject, &out, rules(), None)), ["TPU908"]);
    }

    #[test]
    fn setup_cfg_values_on_the_key_line_and_continuation_lines() {
        let text = "[metadata]\nname = x\n\n[options]\npython_requires = >=3.11\ninstall_requires = libtpu\n    torch_xla[tpu]==2.5.0  # TPU\n    numpy\n\n[options.extras_require]\nserve =\n    optimum-tpu\n";
        assert_eq!(
            migrated(Kind::SetupCfg, text),
            "[metadata]\nname = x\n\n[options]\npython_requires = >=3.11\ninstall_requires =\n    torch-tpu==0.2.0  # TPU\n    numpy\n\n[options.extras_require]\nserve =\n    transformers\n"
        );
    }

    #[test]
    fn conda_environments_edit_the_pip_list_and_drop_conda_libtpu() {
        let text = "name: tpu\nchannels: [conda-forge]\ndependencies:\n  - python=3.10\n  - libtpu\n  - pip\n  - pip:\n    - \"torch_xla[tpu]==2.5.0\"\n    - -f https://storage.googleapis.com/libtpu-releases/index.html\n    - torch==2.5.0  # for torch_xla\n";
        let found = check(Kind::CondaEnv, text, rules(), None);
        assert_eq!(codes(&found), ["TPU908", "TPU902", "TPU901", "TPU903", "TPU904"]);
        assert_eq!(
            migrated(Kind::CondaEnv, text),
            "name: tpu\nchannels: [conda-forge]\ndependencies:\n  - python=3.10\n  - pip\n  - pip:\n    - \"torch-tpu==0.2.0\"\n    - torch>=2.11.0,<=2.15.0  # for torch_xla\n"
        );
    }

    #[test]
    fn setup_py_lists_names_and_extras() {
        let text = r#"from setuptools import setup

REQUIRED = [
    "torch==2.5.0",
    "torch_xla[tpu]==2.5.0",
    "libtpu-nightly",
]

setup(
    name="x",
    python_requires=">=3.9",
    install_requires=REQUIRED,
    extras_require={"tpu": ["cloud-tpu-client", "jax[tpu]"], "hf": "optimum-tpu"},
)
"#;
        let found = check(Kind::SetupPy, text, rules(), None);
        assert_eq!(codes(&found), ["TPU904", "TPU901", "TPU902", "TPU902", "TPU907", "TPU906"]);
        let edits: Vec<Edit> = found.iter().filter_map(|d| d.fix.clone()).flat_map(|f| f.edits).collect();
        let mut edits = edits;
        let out = crate::migrate::fix::apply(text, &mut edits).expect("no overlap");
        assert_eq!(
            out,
            r#"from setuptools import setup

REQUIRED = [
    "torch>=2.11.0,<=2.15.0",
    "torch-tpu==0.2.0",
]

setup(
    name="x",
    python_requires=">=3.9",
    install_requires=REQUIRED,
    extras_require={"tpu": ["jax[tpu]"], "hf": "transformers"},
)
"#
        );
        ruff_python_parser::parse_module(&out).expect("still Python");
    }

    #[test]
    fn pip_install_words_keep_their_quoting() {
        let text = "RUN pip3 install --no-cache-dir \"torch_xla[tpu]~=2.5.0\" 'torch~=2.5.0' \\\n    -f https://storage.googleapis.com/libtpu-releases/index.html libtpu && echo ok";
        let command = TextRange::new(size(4), size(text.len()));
        let found = pip_install(text, command, rules(), None);
        assert_eq!(codes(&found), ["TPU901", "TPU904", "TPU903", "TPU902"]);
        let mut edits: Vec<Edit> = found.iter().filter_map(|d| d.fix.clone()).flat_map(|f| f.edits).collect();
        assert_eq!(
            crate::migrate::fix::apply(text, &mut edits).expect("no overlap"),
            "RUN pip3 install --no-cache-dir \"torch-tpu==0.2.0\" 'torch>=2.11.0,<=2.15.0' && echo ok"
        );

        let text = "python -m pip install torch==2.5.0 torch_xla[tpu]==2.5.0";
        let found = pip_install(text, TextRange::up_to(size(text.len())), rules(), None);
        let mut edits: Vec<Edit> = found.iter().filter_map(|d| d.fix.clone()).flat_map(|f| f.edits).collect();
        let out = crate::migrate::fix::apply(text, &mut edits).expect("no overlap");
        assert_eq!(out, "python -m pip install \"torch>=2.11.0,<=2.15.0\" torch-tpu==0.2.0");
    }

    #[test]
    fn a_pip_command_is_never_left_without_a_package() {
        let text = "pip install libtpu-nightly -f https://storage.googleapis.com/libtpu-releases/index.html";
        let found = pip_install(text, TextRange::up_to(size(text.len())), rules(), None);
        assert_eq!(codes(&found), ["TPU902", "TPU903"]);
        assert!(found[0].fix.is_none());
        assert!(found[1].fix.is_none(), "libtpu-nightly still installs from the index");
        assert!(pip_install("echo pip install torch_xla", TextRange::up_to(size(26)), rules(), None).is_empty());
        assert_eq!(
            codes(&pip_install("uv pip install torch-xla", TextRange::up_to(size(24)), rules(), None)),
            ["TPU901"]
        );
    }
}
