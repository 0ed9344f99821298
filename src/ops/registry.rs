//! Backend operator registries: the `xla2tpu-backend/1` TSV files under `rules/backends/`
//! (embedded at build time) or any such file on disk.
use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, bail};
use include_dir::{Dir, include_dir};

use super::neutral::NeutralMap;

static BUILTIN: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/rules/backends");

/// The backend `ops check` uses when none is named.
pub const DEFAULT_BACKEND: &str = "torchtpu-0.2.0";
const FORMAT: &str = "xla2tpu-backend/1";
const DEFAULT_FALLBACK: &str = "no kernel on this backend";

/// What a backend's dispatch entry for an op resolves to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// The backend registers its own kernel (`tpu_kernel`, `xla_kernel`, ... any `*_kernel`).
    Kernel,
    /// CompositeImplicitAutograd: decomposed above the backend, never dispatched to it.
    CompositeImplicit,
    /// CompositeExplicitAutograd default kernel, which calls other ops.
    CompositeExplicit,
    /// No kernel: the backend's boxed fallback (an error on TorchTPU, CPU on torch_xla).
    MissingFallback,
}

impl Class {
    fn parse(s: &str) -> Option<Class> {
        Some(match s {
            "composite_implicit" => Class::CompositeImplicit,
            "composite_explicit" => Class::CompositeExplicit,
            "missing_fallback" => Class::MissingFallback,
            k if k.ends_with("_kernel") => Class::Kernel,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Class::Kernel => "kernel",
            Class::CompositeImplicit => "composite_implicit",
            Class::CompositeExplicit => "composite_explicit",
            Class::MissingFallback => "missing_fallback",
        }
    }
}

/// One row of a backend TSV.
#[derive(Clone, Debug)]
pub struct OpEntry {
    pub class: Class,
    /// The class column verbatim (`tpu_kernel`, ...), for display.
    pub class_name: String,
    /// The effective column verbatim (`via_delegate:tpu_kernel`, ...).
    pub effective: String,
    /// Structured `.out` delegate, if the op has one.
    pub delegate: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Registry {
    name: String,
    provenance: String,
    fallback: String,
    ops: HashMap<String, OpEntry>,
    pub(crate) neutral: NeutralMap,
}

impl Registry {
    /// A backend shipped in the binary: `torchtpu-0.2.0` (default), `torch_xla-2.9`.
    pub fn builtin(name: &str) -> anyhow::Result<Registry> {
        let file = BUILTIN
            .get_file(format!("{name}.tsv"))
            .with_context(|| format!("unknown backend {name:?}; built in: {}", Registry::builtin_names().join(", ")))?;
        let tsv = file.contents_utf8().context("backend TSV is not UTF-8")?;
        let neutral = match BUILTIN.get_file(format!("{name}.neutral.yaml")) {
            Some(f) => NeutralMap::parse(f.contents_utf8().unwrap_or_default())?,
            None => NeutralMap::default(),
        };
        Registry::parse(name, tsv, neutral).with_context(|| format!("builtin backend {name}"))
    }

    /// `--backend` values: a builtin name, or a path to a backend TSV.
    pub fn load(spec: &str) -> anyhow::Result<Registry> {
        if Registry::builtin_names().contains(&spec) || !Path::new(spec).exists() {
            Registry::builtin(spec)
        } else {
            Registry::from_path(Path::new(spec))
        }
    }

    /// Names of the embedded backends, i.e. every `rules/backends/*.tsv`, sorted.
    pub fn builtin_names() -> &'static [&'static str] {
        static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
        NAMES.get_or_init(|| {
            let mut names: Vec<&'static str> =
                BUILTIN.files().filter_map(|f| f.path().to_str()?.strip_suffix(".tsv")).collect();
            names.sort_unstable();
            names
        })
    }

    /// A backend TSV on disk. Its device-neutral resolutions are read from a sibling
    /// `<stem>.neutral.yaml` when present.
    pub fn from_path(path: &Path) -> anyhow::Result<Registry> {
        let tsv = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("backend");
        let neutral_path = path.with_file_name(format!("{stem}.neutral.yaml"));
        let neutral = if neutral_path.is_file() {
            let text = std::fs::read_to_string(&neutral_path)?;
            NeutralMap::parse(&text).with_context(|| format!("parsing {}", neutral_path.display()))?
        } else {
            NeutralMap::default()
        };
        Registry::parse(stem, &tsv, neutral).with_context(|| format!("parsing {}", path.display()))
    }

    /// Whether `head` (a file's beginning) is a backend TSV of any format version: the only file
    /// `ops dump-backend` replaces.
    pub fn is_table(head: &str) -> bool {
        head.lines()
            .take_while(|line| line.starts_with('#'))
            .any(|line| line.trim_start_matches('#').trim().starts_with("format: xla2tpu-backend/"))
    }

    /// Parses the TSV text. `name` is used unless the file has a `# backend:` line.
    pub fn parse(name: &str, tsv: &str, neutral: NeutralMap) -> anyhow::Result<Registry> {
        let mut name = name.to_string();
        let mut fallback = DEFAULT_FALLBACK.to_string();
        let mut provenance = Vec::new();
        let mut ops = HashMap::new();
        let mut seen_header = false;
        let mut seen_format = false;
        for (lineno, line) in tsv.lines().enumerate() {
            if let Some(comment) = line.strip_prefix('#') {
                let comment = comment.trim();
                if let Some(format) = comment.strip_prefix("format:") {
                    if format.trim() != FORMAT {
                        bail!("unsupported backend format {:?} (this build reads {FORMAT})", format.trim());
                    }
                    seen_format = true;
                } else if let Some(backend) = comment.strip_prefix("backend:") {
                    name = backend.trim().to_string();
                } else if let Some(text) = comment.strip_prefix("fallback:") {
                    fallback = text.trim().to_string();
                } else {
                    provenance.push(comment.to_string());
                }
                continue;
            }
            if line.trim().is_empty() {
                continue;
            }
            if !seen_header {
                if !seen_format {
                    bail!("missing `# format: {FORMAT}` line before the column header");
                }
                if !line.starts_with("op\tclass") {
                    bail!(
                        "line {}: expected the column header `op\\tclass\\teffective\\tstructured_delegate`",
                        lineno + 1
                    );
                }
                seen_header = true;
                continue;
            }
            let mut cols = line.split('\t');
            let (op, class_name) = (cols.next().unwrap_or(""), cols.next().unwrap_or(""));
            let class = Class::parse(class_name)
                .with_context(|| format!("line {}: unknown class {class_name:?}", lineno + 1))?;
            let effective = cols.next().filter(|s| !s.is_empty()).unwrap_or(class_name);
            let delegate = cols.next().map(str::trim).filter(|s| !s.is_empty()).map(String::from);
            ops.insert(
                op.to_string(),
                OpEntry { class, class_name: class_name.to_string(), effective: effective.to_string(), delegate },
            );
        }
        if ops.is_empty() {
            bail!("no operator rows");
        }
        Ok(Registry { name, provenance: provenance.join("\n"), fallback, ops, neutral })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file's header comments (source, how it was read), for reports.
    pub fn provenance(&self) -> &str {
        &self.provenance
    }

    /// Why an op with no kernel fails on this backend (the `# fallback:` header line).
    pub fn fallback_reason(&self) -> &str {
        &self.fallback
    }

    pub fn get(&self, op: &str) -> Option<&OpEntry> {
        self.ops.get(op)
    }

    pub fn ops(&self) -> impl Iterator<Item = (&str, &OpEntry)> {
        self.ops.iter().map(|(k, v)| (k.as_str(), v))
    }
}
