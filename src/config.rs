//! Configuration files: `[tool.xla2tpu]` in `pyproject.toml`, or the same keys at the top of
//! `xla2tpu.toml`.
//!
//! As in ruff, each file follows the closest configuration above it: walking up from the file's
//! directory, the first `xla2tpu.toml`, or `pyproject.toml` with a `[tool.xla2tpu]` table, wins
//! (`xla2tpu.toml` first within one directory). Its directory is the project root, where its
//! relative paths and globs start. A file with no configuration above it gets the defaults,
//! rooted at the working directory. Command-line flags override every configuration file.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, anyhow, bail};
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::migrate::render::OutputFormat;
use crate::migrate::rules::RuleSet;
use crate::migrate::selection::Selection;

/// The files a directory's configuration can be in, in order of precedence.
pub const CONFIG_FILES: [&str; 2] = ["xla2tpu.toml", "pyproject.toml"];

/// Directories that are never the user's own source, excluded unless `exclude` is set.
pub const DEFAULT_EXCLUDE: [&str; 9] =
    ["venv", ".venv", "env", "site-packages", "dist-packages", "__pycache__", "node_modules", ".tox", ".nox"];

/// Whether `dir` is an installation rather than source, whatever its name (excluded with the
/// defaults): a virtualenv (`pyvenv.cfg`), a conda environment (`conda-meta/`) or conda's
/// package cache (`pkgs/` holding `urls.txt`).
pub fn is_environment(dir: &Path) -> bool {
    dir.join("pyvenv.cfg").is_file()
        || dir.join("conda-meta").is_dir()
        || (dir.file_name().is_some_and(|n| n == "pkgs") && dir.join("urls.txt").is_file())
}

/// The keys of `[tool.xla2tpu]`; the README's "Configure" section documents each.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Options {
    pub select: Option<Vec<String>>,
    pub extend_select: Option<Vec<String>>,
    pub ignore: Option<Vec<String>>,
    pub per_file_ignores: Option<BTreeMap<String, Vec<String>>>,
    pub exclude: Option<Vec<String>>,
    pub extend_exclude: Option<Vec<String>>,
    pub force_exclude: Option<bool>,
    pub rules: Option<Vec<PathBuf>>,
    pub unsafe_fixes: Option<bool>,
    pub output_format: Option<OutputFormat>,
    pub backend: Option<String>,
    pub target_version: Option<String>,
    /// The module `migrate` writes the helpers of several files of a directory to, once
    /// (`_torchtpu`); `""` keeps them in each file.
    pub helper_module: Option<String>,
}

/// `pyproject.toml`: only our table is read, other tools' tables are theirs.
#[derive(Debug, Deserialize)]
struct Pyproject {
    tool: Option<Tools>,
}

#[derive(Debug, Deserialize)]
struct Tools {
    xla2tpu: Option<Options>,
}

/// A configuration file and what it says.
#[derive(Debug, Clone)]
pub struct Config {
    pub file: PathBuf,
    pub options: Options,
}

impl Config {
    /// The configuration in `dir` itself, if any.
    pub fn in_dir(dir: &Path) -> anyhow::Result<Option<Config>> {
        for name in CONFIG_FILES {
            let file = dir.join(name);
            if file.is_file()
                && let Some(options) = read(&file)?
            {
                return Ok(Some(Config { file, options }));
            }
        }
        Ok(None)
    }

    /// The closest configuration at or above `dir`.
    pub fn find(dir: &Path) -> anyhow::Result<Option<Config>> {
        for dir in dir.ancestors() {
            if let Some(config) = Config::in_dir(dir)? {
                return Ok(Some(config));
            }
        }
        Ok(None)
    }

    /// `--config FILE`: the file must exist and hold a configuration.
    pub fn load(file: &Path) -> anyhow::Result<Config> {
        let options = read(file)?.with_context(|| format!("{}: no [tool.xla2tpu] table", file.display()))?;
        Ok(Config { file: std::path::absolute(file)?, options })
    }

    fn root(&self) -> PathBuf {
        self.file.parent().map(Path::to_path_buf).unwrap_or_default()
    }
}

/// The options in `file`; `None` for a `pyproject.toml` without `[tool.xla2tpu]`.
fn read(file: &Path) -> anyhow::Result<Option<Options>> {
    let text = crate::source::read_text(file).with_context(|| format!("cannot read {}", file.display()))?;
    if file.file_name().is_some_and(|n| n == "pyproject.toml") {
        Ok(parse::<Pyproject>(file, &text)?.tool.and_then(|t| t.xla2tpu))
    } else {
        parse::<Options>(file, &text).map(Some)
    }
}

/// Deserialize, with errors as `file:line:col: key: message`.
fn parse<T: DeserializeOwned>(file: &Path, text: &str) -> anyhow::Result<T> {
    let at = |span: Option<std::ops::Range<usize>>| {
        span.map(|s| {
            let before = &text[..s.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!(":{line}:{col}")
        })
        .unwrap_or_default()
    };
    let de = toml::Deserializer::parse(text)
        .map_err(|e| anyhow!("{}{}: invalid TOML: {}", file.display(), at(e.span()), e.message()))?;
    serde_path_to_error::deserialize(de)
        .map_err(|e| anyhow!("{}{}: `{}`: {}", file.display(), at(e.inner().span()), e.path(), e.inner().message()))
}

/// What the command line says; every field overrides the configuration files.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// `--select`: replaces the configured selection (its `extend-select` and `ignore` too).
    pub select: Option<Vec<String>>,
    pub extend_select: Vec<String>,
    pub ignore: Vec<String>,
    /// `--exclude`: replaces the configured `exclude`; globs relative to the working directory.
    pub exclude: Option<Vec<String>>,
    pub extend_exclude: Vec<String>,
    pub force_exclude: Option<bool>,
    /// `--rules`: replaces the configured rule directories.
    pub rules: Vec<PathBuf>,
    pub unsafe_fixes: Option<bool>,
    pub output_format: Option<OutputFormat>,
    /// `--no-ignore`: walk what .gitignore, hidden directories and the default excludes hide.
    pub no_ignore: bool,
    /// `--config FILE`: this file for every path, no discovery.
    pub config: Option<PathBuf>,
    /// `--isolated`: no configuration files at all.
    pub isolated: bool,
    /// `--backend`: the registry PyTorch calls are judged against (TPU8xx).
    pub backend: Option<String>,
    /// `--target-version`: the TorchTPU release to migrate to (rules outside its range are off).
    pub target_version: Option<String>,
    /// `--helper-module`: the configured `helper-module`'s replacement.
    pub helper_module: Option<String>,
    /// The files the run writes reports to (and standard output's, when it is a file): never inputs.
    pub outputs: Vec<crate::discover::FileId>,
}

/// One level of rule selection (a configuration file, then the command line), applied in turn
/// as ruff does: `select` starts over, `extend-select` and `ignore` adjust what came before, and
/// within a level the most specific selector wins (`select = ["TPU110"]` beats `ignore = ["TPU1"]`).
#[derive(Debug, Clone, Default)]
struct Layer {
    select: Option<Vec<String>>,
    extend_select: Vec<String>,
    ignore: Vec<String>,
}

impl Layer {
    /// An opt-in rule is enabled only by a selector naming its family or itself (`TPU75`,
    /// `TPU751`), never by `ALL` or a broader prefix; ignoring it works as for any rule.
    fn decide(&self, code: &str, opt_in: bool, before: bool) -> bool {
        let specificity = |selectors: &mut dyn Iterator<Item = &String>| {
            selectors.filter(|s| selects(s, code)).map(|s| if s == "ALL" { 0 } else { s.len() }).max()
        };
        let family = code.len().saturating_sub(1);
        let enable = specificity(
            &mut self.select.iter().flatten().chain(&self.extend_select).filter(|s| !opt_in || s.len() >= family),
        );
        let disable = specificity(&mut self.ignore.iter());
        match (enable, disable) {
            (Some(e), Some(d)) => e > d,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => self.select.is_none() && before,
        }
    }
}

fn selects(selector: &str, code: &str) -> bool {
    selector == "ALL" || code.starts_with(selector)
}

/// Glob patterns in ruff's style: `name` matches any file or directory so named, `dir/*.py` is
/// relative to the project root.
#[derive(Debug)]
struct Patterns {
    patterns: Vec<String>,
    set: GlobSet,
}

impl Patterns {
    fn new(root: &Path, patterns: &[String], origin: &str) -> anyhow::Result<Patterns> {
        let mut set = GlobSetBuilder::new();
        for p in patterns {
            let bad = |e: globset::Error| anyhow!("{origin}: invalid glob `{p}`: {}", e.kind());
            set.add(Glob::new(p).map_err(bad)?);
            let absolute = format!("{}/{p}", globset::escape(&root.to_string_lossy()));
            set.add(Glob::new(&absolute).map_err(bad)?);
        }
        Ok(Patterns { patterns: patterns.to_vec(), set: set.build()? })
    }

    /// `path` is absolute.
    fn is_match(&self, path: &Path) -> bool {
        self.set.is_match(path) || path.file_name().is_some_and(|name| self.set.is_match(name))
    }
}

/// Everything that applies to one file: its configuration with the command line's overrides.
#[derive(Debug)]
pub struct Settings {
    /// The configuration file (`None`: defaults).
    pub file: Option<PathBuf>,
    /// Where the configuration's relative paths start: its directory, else the working directory.
    pub root: PathBuf,
    /// The built-in rules and those of the configured directories.
    pub rules: Arc<RuleSet>,
    pub rule_dirs: Vec<PathBuf>,
    /// Codes enabled before per-file ignores.
    enabled: BTreeSet<String>,
    /// Those of them that are opt-in rules (see `Selection::opt_in`).
    opt_in: Vec<String>,
    /// TPU002's code when it was named: parse files no rule can match too, where it is enabled
    /// ([`Selection::parse_every_file`]).
    named_syntax_rule: Option<String>,
    per_file_ignores: Vec<(Patterns, Vec<String>)>,
    exclude: Vec<Patterns>,
    /// The default exclusion applies: installations are skipped by what they hold too.
    exclude_environments: bool,
    pub force_exclude: bool,
    pub unsafe_fixes: bool,
    pub output_format: Option<OutputFormat>,
    pub backend: Option<String>,
    pub target_version: Option<String>,
    /// Where helpers shared by several files go ([`Options::helper_module`]); empty: inline.
    pub helper_module: String,
}

/// The helper module's name when none is configured.
pub const DEFAULT_HELPER_MODULE: &str = "_torchtpu";

impl Settings {
    fn new(config: Option<&Config>, cwd: &Path, o: &Overrides, rulesets: &RuleSets) -> anyhow::Result<Settings> {
        let options = config.map(|c| c.options.clone()).unwrap_or_default();
        let root = config.map_or_else(|| cwd.to_path_buf(), Config::root);
        let origin = |key: &str| match config {
            Some(c) => format!("{}: `{key}`", c.file.display()),
            None => format!("`{key}`"),
        };

        let rule_dirs: Vec<PathBuf> = if o.rules.is_empty() {
            options.rules.iter().flatten().map(|d| root.join(d)).collect()
        } else {
            o.rules.iter().map(|d| cwd.join(d)).collect()
        };
        // The backend PyTorch calls are judged against (TPU8xx): --backend, else the configuration's.
        let backend = o.backend.clone().or_else(|| options.backend.clone());
        let backend_origin = if o.backend.is_some() { "--backend".to_string() } else { origin("backend") };
        let target_version = o.target_version.clone().or_else(|| options.target_version.clone());
        let target_origin =
            if o.target_version.is_some() { "--target-version".to_string() } else { origin("target-version") };
        let target = target_version.as_deref().unwrap_or(crate::migrate::target::DEFAULT_TARGET);
        let rules = rulesets
            .get(&rule_dirs, target, backend.as_deref())
            .with_context(|| if target_version.is_some() { target_origin } else { backend_origin })?;

        let file_layer = Layer {
            select: options.select.clone(),
            extend_select: options.extend_select.clone().unwrap_or_default(),
            ignore: options.ignore.clone().unwrap_or_default(),
        };
        let cli_layer =
            Layer { select: o.select.clone(), extend_select: o.extend_select.clone(), ignore: o.ignore.clone() };
        let known =
            |selector: &String| selector == "ALL" || rules.rules.iter().any(|r| r.code.starts_with(selector.as_str()));
        for (layer, origin) in [(&file_layer, Some(&origin)), (&cli_layer, None)] {
            for (key, selectors) in [
                ("select", layer.select.as_deref().unwrap_or_default()),
                ("extend-select", &layer.extend_select),
                ("ignore", &layer.ignore),
            ] {
                if let Some(bad) = selectors.iter().find(|s| !known(s)) {
                    let origin = origin.map_or_else(|| format!("--{key}"), |o| o(key));
                    bail!("{origin}: `{bad}` matches no rule (`xla2tpu rule` lists them)");
                }
            }
        }
        let enabled = rules
            .rules
            .iter()
            .filter(|r| cli_layer.decide(&r.code, r.opt_in, file_layer.decide(&r.code, r.opt_in, !r.opt_in)))
            .map(|r| r.code.clone())
            .collect::<BTreeSet<String>>();
        let opt_in =
            rules.rules.iter().filter(|r| r.opt_in && enabled.contains(&r.code)).map(|r| r.code.clone()).collect();

        // Naming TPU002 asks for every file's syntax errors, even in files no rule can match
        // (those are otherwise not parsed): `select`/`extend-select` of a level that counts.
        let syntax = rules.builtin(crate::migrate::rules::Builtin::SyntaxError).map(|id| &rules.rules[id].code);
        let names =
            |layer: &Layer| layer.select.iter().flatten().chain(&layer.extend_select).any(|s| Some(s) == syntax);
        let named = names(&cli_layer) || (cli_layer.select.is_none() && names(&file_layer));
        let named_syntax_rule = syntax.filter(|_| named).cloned();

        let mut per_file_ignores = Vec::new();
        for (pattern, codes) in options.per_file_ignores.iter().flatten() {
            if let Some(bad) = codes.iter().find(|s| !known(s)) {
                bail!("{}: `{bad}` matches no rule (`xla2tpu rule` lists them)", origin("per-file-ignores"));
            }
            per_file_ignores.push((
                Patterns::new(&root, std::slice::from_ref(pattern), &origin("per-file-ignores"))?,
                codes.clone(),
            ));
        }

        let mut exclude = Vec::new();
        let exclude_environments = o.exclude.is_none() && options.exclude.is_none() && !o.no_ignore;
        match (&o.exclude, &options.exclude) {
            (Some(cli), _) => exclude.push(Patterns::new(cwd, cli, "--exclude")?),
            (None, Some(configured)) => exclude.push(Patterns::new(&root, configured, &origin("exclude"))?),
            (None, None) if !o.no_ignore => {
                let defaults: Vec<String> = DEFAULT_EXCLUDE.iter().map(|s| s.to_string()).collect();
                exclude.push(Patterns::new(&root, &defaults, "default exclude")?);
            }
            (None, None) => {}
        }
        if let Some(extend) = &options.extend_exclude {
            exclude.push(Patterns::new(&root, extend, &origin("extend-exclude"))?);
        }
        if !o.extend_exclude.is_empty() {
            exclude.push(Patterns::new(cwd, &o.extend_exclude, "--extend-exclude")?);
        }

        Ok(Settings {
            file: config.map(|c| c.file.clone()),
            root,
            rules,
            rule_dirs,
            enabled,
            opt_in,
            named_syntax_rule,
            per_file_ignores,
            exclude,
            exclude_environments,
            force_exclude: o.force_exclude.or(options.force_exclude).unwrap_or(false),
            unsafe_fixes: o.unsafe_fixes.or(options.unsafe_fixes).unwrap_or(false),
            output_format: o.output_format.or(options.output_format),
            backend,
            target_version,
            helper_module: {
                let name = o.helper_module.clone().or(options.helper_module.clone());
                let name = name.unwrap_or_else(|| DEFAULT_HELPER_MODULE.to_string());
                let identifier = name.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
                    && name.chars().all(|c| c.is_alphanumeric() || c == '_');
                if !name.is_empty() && !identifier {
                    anyhow::bail!(
                        "{}: `{name}` is not a Python module name (a letter or `_`, then letters, digits or `_`; \"\" keeps helpers in each file)",
                        if o.helper_module.is_some() { "--helper-module".to_string() } else { origin("helper-module") }
                    );
                }
                name
            },
        })
    }

    /// Whether an exclude pattern matches `path` (absolute) itself.
    pub fn excludes(&self, path: &Path) -> bool {
        self.exclude.iter().any(|p| p.is_match(path))
    }

    /// [`Settings::excludes`] for a directory met while walking: also an installation found by
    /// its contents ([`is_environment`]).
    pub fn excludes_dir(&self, path: &Path) -> bool {
        self.excludes(path) || (self.exclude_environments && is_environment(path))
    }

    /// Whether `path` (absolute), named on the command line, is excluded under `--force-exclude`:
    /// it or a directory above it, up to the project root, is excluded.
    pub fn force_excludes(&self, path: &Path) -> bool {
        self.force_exclude && path.ancestors().take_while(|a| a.starts_with(&self.root)).any(|a| self.excludes(a))
    }

    /// The rules checked in `path` (absolute): the selection minus its per-file ignores.
    pub fn selection(&self, path: &Path) -> Selection {
        let ignored: Vec<&String> =
            self.per_file_ignores.iter().filter(|(p, _)| p.is_match(path)).flat_map(|(_, codes)| codes).collect();
        let select: Vec<String> =
            self.enabled.iter().filter(|code| !ignored.iter().any(|s| selects(s, code))).cloned().collect();
        // An empty `select` means every rule to `Selection`; `ALL` ignored means none.
        let ignore = if select.is_empty() { vec!["ALL".to_string()] } else { Vec::new() };
        let opt_in = self.opt_in.iter().filter(|code| select.contains(code)).cloned().collect();
        let mut selection =
            Selection { select, ignore, opt_in, unsafe_fixes: self.unsafe_fixes, ..Selection::default() };
        selection.parse_every_file = self.named_syntax_rule.as_deref().is_some_and(|code| selection.enabled(code));
        selection
    }

    /// `check --show-settings`: what applies to `path`, one setting a line.
    pub fn describe(&self, path: &Path, shown: &str) -> String {
        use std::fmt::Write as _;
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let selection = self.selection(&absolute);
        let list = |items: &mut dyn Iterator<Item = String>| {
            let items: Vec<String> = items.collect();
            if items.is_empty() { "(none)".to_string() } else { items.join(", ") }
        };
        let mut out = String::new();
        let _ = writeln!(out, "Settings for {shown}");
        let _ = match &self.file {
            Some(f) => writeln!(out, "  configuration     {}", f.display()),
            None => writeln!(out, "  configuration     (none found; defaults)"),
        };
        let _ = writeln!(out, "  project root      {}", self.root.display());
        let excluded = self.force_excludes(&absolute)
            || absolute.ancestors().any(|a| a.starts_with(&self.root) && self.excludes(a));
        let _ = writeln!(out, "  excluded          {}", if excluded { "yes" } else { "no" });
        let _ = writeln!(
            out,
            "  rules enabled     {}: {}",
            selection.select.len(),
            list(&mut selection.select.iter().cloned())
        );
        let ignored: Vec<String> = self
            .per_file_ignores
            .iter()
            .filter(|(p, _)| p.is_match(&absolute))
            .map(|(p, codes)| format!("{} ({})", codes.join(", "), p.patterns.join(", ")))
            .collect();
        let _ = writeln!(out, "  per-file-ignores  {}", list(&mut ignored.into_iter()));
        let syntax = if selection.parse_every_file {
            "reported in every file (TPU002 named)"
        } else {
            "reported in files a rule could match (name TPU002 for every file)"
        };
        let _ = writeln!(out, "  syntax errors     {syntax}");
        let _ = writeln!(
            out,
            "  exclude           {}",
            list(&mut self.exclude.iter().flat_map(|p| p.patterns.iter().cloned()))
        );
        let _ = writeln!(out, "  force-exclude     {}", self.force_exclude);
        let _ =
            writeln!(out, "  rules             {}", list(&mut self.rule_dirs.iter().map(|d| d.display().to_string())));
        let _ = writeln!(out, "  unsafe-fixes      {}", self.unsafe_fixes);
        let _ = writeln!(
            out,
            "  helper-module     {}",
            if self.helper_module.is_empty() { "\"\" (inline)" } else { &self.helper_module }
        );
        let format = self.output_format.map_or("full (default)".to_string(), OutputFormat::name);
        let _ = writeln!(out, "  output-format     {format}");
        let backend = self.backend.clone().unwrap_or_else(|| format!("{} (default)", crate::ops::DEFAULT_BACKEND));
        let _ = writeln!(out, "  backend           {backend}");
        let target = self
            .target_version
            .clone()
            .unwrap_or_else(|| format!("{} (default)", crate::migrate::target::DEFAULT_TARGET));
        let _ = writeln!(out, "  target-version    {target}");
        out
    }
}

/// What a rule set is built from: extra rule directories, the target release and the backend.
type RuleSetKey = (Vec<PathBuf>, String, Option<String>);

/// Rule sets by rule directories, target and backend, each loaded once.
#[derive(Default)]
struct RuleSets(Mutex<HashMap<RuleSetKey, Arc<RuleSet>>>);

impl RuleSets {
    fn get(&self, dirs: &[PathBuf], target: &str, backend: Option<&str>) -> anyhow::Result<Arc<RuleSet>> {
        let key = (dirs.to_vec(), target.to_string(), backend.map(str::to_string));
        let mut cache = self.0.lock().expect("no panics while loading rules");
        if let Some(rules) = cache.get(&key) {
            return Ok(rules.clone());
        }
        let mut rules = RuleSet::load_for(dirs, target)?;
        if let Some(backend) = backend {
            rules.set_backend(backend)?;
        }
        let rules = Arc::new(rules);
        cache.insert(key, rules.clone());
        Ok(rules)
    }
}

/// Finds and caches the settings of every directory a run touches.
pub struct Resolver {
    overrides: Overrides,
    cwd: PathBuf,
    /// With `--config` or `--isolated`, the one settings for every file.
    fixed: Option<Arc<Settings>>,
    by_dir: Mutex<HashMap<PathBuf, Arc<Settings>>>,
    /// Several directories share one configuration file's settings.
    by_file: Mutex<HashMap<Option<PathBuf>, Arc<Settings>>>,
    rulesets: RuleSets,
}

impl Resolver {
    pub fn new(overrides: Overrides) -> anyhow::Result<Resolver> {
        let cwd = std::env::current_dir().context("cannot read the working directory")?;
        let mut resolver = Resolver {
            overrides,
            cwd,
            fixed: None,
            by_dir: Mutex::default(),
            by_file: Mutex::default(),
            rulesets: RuleSets::default(),
        };
        if resolver.overrides.isolated {
            resolver.fixed = Some(resolver.settings(None)?);
        } else if let Some(file) = resolver.overrides.config.clone() {
            resolver.fixed = Some(resolver.settings(Some(Config::load(&file)?))?);
        }
        Ok(resolver)
    }

    fn settings(&self, config: Option<Config>) -> anyhow::Result<Arc<Settings>> {
        let key = config.as_ref().map(|c| c.file.clone());
        if let Some(s) = self.by_file.lock().expect("not poisoned").get(&key) {
            return Ok(s.clone());
        }
        let settings = Arc::new(Settings::new(config.as_ref(), &self.cwd, &self.overrides, &self.rulesets)?);
        self.by_file.lock().expect("not poisoned").insert(key, settings.clone());
        Ok(settings)
    }

    /// The settings for files in `dir`.
    pub fn for_dir(&self, dir: &Path) -> anyhow::Result<Arc<Settings>> {
        if let Some(fixed) = &self.fixed {
            return Ok(fixed.clone());
        }
        let dir = self.absolute(dir);
        let mut visited = Vec::new();
        let mut found = None;
        for ancestor in dir.ancestors() {
            if let Some(s) = self.by_dir.lock().expect("not poisoned").get(ancestor) {
                found = Some(s.clone());
                break;
            }
            visited.push(ancestor.to_path_buf());
            if let Some(config) = Config::in_dir(ancestor)? {
                found = Some(self.settings(Some(config))?);
                break;
            }
        }
        let settings = match found {
            Some(s) => s,
            None => self.settings(None)?,
        };
        let mut by_dir = self.by_dir.lock().expect("not poisoned");
        for dir in visited {
            by_dir.insert(dir, settings.clone());
        }
        Ok(settings)
    }

    /// The settings for the file (or directory) at `path`: those of the directory holding it.
    pub fn for_path(&self, path: &Path) -> anyhow::Result<Arc<Settings>> {
        let absolute = self.absolute(path);
        self.for_dir(absolute.parent().unwrap_or(&absolute))
    }

    /// Settings for what is not about one file (output format, backend): the working directory's.
    pub fn global(&self) -> anyhow::Result<Arc<Settings>> {
        self.for_dir(&self.cwd.clone())
    }

    /// `path` from the working directory, without `.` components (globs would not match them).
    pub fn absolute(&self, path: &Path) -> PathBuf {
        std::path::absolute(self.cwd.join(path)).unwrap_or_else(|_| self.cwd.join(path))
    }

    pub fn no_ignore(&self) -> bool {
        self.overrides.no_ignore
    }
}

impl crate::discover::Exclusion for Resolver {
    fn walked(&self, path: &Path, is_dir: bool) -> anyhow::Result<bool> {
        let absolute = self.absolute(path);
        let settings = self.for_path(&absolute)?;
        Ok(if is_dir { settings.excludes_dir(&absolute) } else { settings.excludes(&absolute) })
    }

    fn named(&self, path: &Path) -> anyhow::Result<bool> {
        let absolute = self.absolute(path);
        Ok(self.for_path(&absolute)?.force_excludes(&absolute))
    }

    fn outputs(&self) -> &[crate::discover::FileId] {
        &self.overrides.outputs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(select: Option<&[&str]>, extend: &[&str], ignore: &[&str]) -> Layer {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Layer { select: select.map(v), extend_select: v(extend), ignore: v(ignore) }
    }

    #[test]
    fn the_most_specific_selector_wins_and_select_starts_over() {
        let file = layer(Some(&["TPU1"]), &["TPU212"], &["TPU110"]);
        let on = |code: &str, cli: &Layer| cli.decide(code, false, file.decide(code, false, true));
        let nothing = layer(None, &[], &[]);
        assert!(on("TPU101", &nothing));
        assert!(!on("TPU110", &nothing), "ignore is more specific than select");
        assert!(on("TPU212", &nothing), "extend-select adds");
        assert!(!on("TPU201", &nothing), "select leaves the rest out");
        assert!(!on("TPU101", &layer(None, &[], &["TPU"])), "a later ignore disables");
        let cli_select = layer(Some(&["TPU2"]), &[], &[]);
        assert!(
            on("TPU201", &cli_select) && !on("TPU101", &cli_select) && !on("TPU212", &layer(Some(&["TPU1"]), &[], &[]))
        );
        assert!(!layer(Some(&["TPU1"]), &[], &["TPU1"]).decide("TPU110", false, true), "a tie goes to ignore");
        assert!(layer(Some(&["TPU110"]), &[], &["ALL"]).decide("TPU110", false, true));
    }

    #[test]
    fn an_opt_in_rule_is_on_only_where_its_family_or_code_is_named() {
        let on = |file: &Layer, cli: &Layer| cli.decide("TPU751", true, file.decide("TPU751", true, false));
        let nothing = layer(None, &[], &[]);
        assert!(!on(&nothing, &nothing), "off by default");
        for broad in ["ALL", "TPU", "TPU7"] {
            assert!(!on(&nothing, &layer(Some(&[broad]), &[], &[])), "`{broad}` does not name it");
            assert!(!on(&layer(None, &[broad], &[]), &nothing), "`{broad}` does not name it");
        }
        assert!(on(&nothing, &layer(None, &["TPU75"], &[])), "the family names it");
        assert!(on(&layer(None, &["TPU751"], &[]), &nothing), "so does its code, in a configuration file");
        assert!(!on(&layer(None, &["TPU75"], &[]), &layer(None, &[], &["TPU7"])), "an ignore still disables it");
        assert!(!on(&layer(None, &["TPU75"], &[]), &layer(Some(&["TPU1"]), &[], &[])), "select starts over");
    }

    #[test]
    fn errors_name_the_file_line_and_key() {
        let file = Path::new("/p/pyproject.toml");
        let err = parse::<Pyproject>(file, "[tool.ruff]\nline-length = 1\n\n[tool.xla2tpu]\nselct = [\"TPU1\"]\n")
            .expect_err("unknown key");
        let msg = err.to_string();
        assert!(msg.starts_with("/p/pyproject.toml:5:1: "), "{msg}");
        assert!(msg.contains("unknown field `selct`"), "{msg}");
        let err = parse::<Options>(Path::new("xla2tpu.toml"), "select = \"TPU1\"\n").expect_err("wrong type");
        let msg = err.to_string();
        assert!(
            msg.starts_with("xla2tpu.toml:1:10: `select`: invalid type: string \"TPU1\", expected a sequence"),
            "{msg}"
        );
    }
}
