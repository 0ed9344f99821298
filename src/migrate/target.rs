//! What a file is and which TorchTPU it is migrated for: the facts every handler and the Python
//! checker share, below all of them.

use std::path::Path;

use ruff_text_size::{TextRange, TextSize};
use serde::Deserialize;

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

/// PJRT device names torch_xla knew that TorchTPU stands in for.
pub const TPU_OR_HOST: &[&str] = &["TPU", "CPU"];

/// The comment line that ends a notebook cell which restarts the kernel (`os._exit(0)` after a
/// `!pip install`, `%reset`); the same length as the notebook's ordinary cell marker. Names bound
/// before it are gone when the code after it runs: an import or helper a fix adds for code after
/// it goes after it, and an import before it is not reused there.
pub const KERNEL_RESTART: &str = "#%% xla2tpu: end restart\n";

/// Where the code after the last kernel restart of `text` starts ([`KERNEL_RESTART`]).
pub fn restart_barrier(text: &str) -> Option<TextSize> {
    let at = text.rmatch_indices(KERNEL_RESTART).map(|(at, _)| at).find(|&at| at == 0 || text[..at].ends_with('\n'))?;
    TextSize::try_from(at + KERNEL_RESTART.len()).ok()
}
