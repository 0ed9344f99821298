//! Traced operator profiles (`corpus/ops/<library>/<name>.json`, schema 1) and the tracer's
//! `index.json`. Parsing is lenient: unknown keys are ignored, missing ones default.
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::OnceLock;

use anyhow::Context;
use include_dir::{Dir, include_dir};
use serde::{Deserialize, Serialize};

static EMBEDDED: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/corpus/ops");
static EMBEDDED_BF16: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/corpus/ops-bf16");
const INDEX: &str = "index.json";

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Profile {
    pub schema: u32,
    pub id: String,
    pub library: String,
    pub name: String,
    pub classes: Vec<String>,
    pub status: String,
    pub method: String,
    pub versions: BTreeMap<String, String>,
    pub notes: Vec<String>,
    pub ops: Vec<OpRecord>,
    pub host_syncs: Vec<String>,
    pub dynamic_shape_ops: Vec<String>,
    /// Class → phase (`inference`/`forward`/`backward`) → `ok`/`failed`/`not_run`, every class
    /// the tracer tried (absent in older profiles: `python -m xla2tpu_tracer reindex` adds it).
    pub coverage: Option<BTreeMap<String, BTreeMap<String, String>>>,
    /// `float32` (absent = float32) or `bf16-autocast`.
    pub precision: Option<String>,
    /// Per-config profiles (`ops trace --configs`): where the config came from.
    pub config_source: Option<String>,
    /// Per-config profiles: the Hub models that share this config.
    pub models: Vec<String>,
    /// Inputs the model takes that were never fed (`image`, `video`, `audio`, `protein`): the
    /// profile traced the text path only, so those encoders' ops are absent
    /// (`scripts/mark_untraced_inputs.py`).
    pub untraced_inputs: Vec<String>,
}

/// One recorded op. `phases` ⊆ {forward, backward, inference} (forward = training forward).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct OpRecord {
    pub op: String,
    pub count: u64,
    pub dtypes: Vec<String>,
    pub phases: Vec<String>,
    /// Ops this one called underneath (recorded for composite kernels).
    pub inner: Option<Vec<String>>,
    /// Set when the op is a device-specific choice for a device-neutral requirement.
    pub neutral: Option<String>,
}

/// One row of `index.json`: every attempted type, including those without a profile.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct IndexEntry {
    pub id: String,
    pub library: String,
    pub name: String,
    pub status: String,
    pub method: String,
    pub reason: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct IndexFile {
    entries: Vec<IndexEntry>,
}

#[derive(Debug, Default)]
pub struct Profiles {
    profiles: BTreeMap<String, Profile>,
    index: HashMap<String, IndexEntry>,
    /// Files that failed to parse (reported, never fatal: one bad file must not hide the rest).
    errors: Vec<String>,
}

impl Profiles {
    /// The corpus compiled into the binary, parsed on first use.
    pub fn embedded() -> &'static Profiles {
        static CELL: OnceLock<Profiles> = OnceLock::new();
        CELL.get_or_init(|| Profiles::from_embedded(&EMBEDDED))
    }

    /// The bf16-autocast profiles compiled into the binary (`corpus/ops-bf16`, same ids as the
    /// float32 ones), when there are any.
    pub fn embedded_bf16() -> Option<&'static Profiles> {
        static CELL: OnceLock<Profiles> = OnceLock::new();
        Some(CELL.get_or_init(|| Profiles::from_embedded(&EMBEDDED_BF16))).filter(|p| !p.profiles.is_empty())
    }

    fn from_embedded(dir: &'static Dir<'static>) -> Profiles {
        let mut p = Profiles::default();
        for file in embedded_files(dir) {
            let path = file.path().to_string_lossy();
            match file.contents_utf8() {
                Some(text) => p.add_file(&path, text),
                None => p.errors.push(format!("{path}: not UTF-8")),
            }
        }
        p
    }

    /// A corpus directory on disk with the same layout (tests, or a fresh trace).
    pub fn from_dir(dir: &Path) -> anyhow::Result<Profiles> {
        let mut p = Profiles::default();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
                let path = entry?.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "json") {
                    let rel = path.strip_prefix(dir).unwrap_or(&path).to_string_lossy().replace('\\', "/");
                    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
                    p.add_file(&rel, &text);
                }
            }
        }
        Ok(p)
    }

    /// `rel` is the path relative to the corpus root, e.g. `timm/resnet.json` or `index.json`.
    fn add_file(&mut self, rel: &str, text: &str) {
        if rel == INDEX {
            match serde_json::from_str::<IndexFile>(text) {
                Ok(index) => self.index.extend(index.entries.into_iter().map(|e| (e.id.clone(), e))),
                Err(e) => self.errors.push(format!("{rel}: {e}")),
            }
            return;
        }
        match serde_json::from_str::<Profile>(text) {
            Ok(mut profile) => {
                if profile.id.is_empty() {
                    profile.id = rel.trim_end_matches(".json").to_string();
                }
                self.profiles.insert(profile.id.clone(), profile);
            }
            Err(e) => self.errors.push(format!("{rel}: {e}")),
        }
    }

    pub fn get(&self, id: &str) -> Option<&Profile> {
        self.profiles.get(id)
    }

    /// The index row for a type whose trace did not fully succeed (status other than `ok`):
    /// why there is no profile, or why it is partial.
    pub fn failure(&self, id: &str) -> Option<&IndexEntry> {
        self.index.get(id).filter(|e| e.status != "ok")
    }

    pub fn ids(&self) -> Vec<&str> {
        self.profiles.keys().map(String::as_str).collect()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Profile> {
        self.profiles.values()
    }

    pub fn index_entries(&self) -> impl Iterator<Item = &IndexEntry> {
        self.index.values()
    }

    pub fn load_errors(&self) -> &[String] {
        &self.errors
    }

    /// Finds a profile by id (`transformers/bert`) or by bare name (`bert`, any library,
    /// see [`normalise`]; transformers first since model_type names are the common query).
    pub fn find(&self, query: &str) -> Option<&Profile> {
        if let Some(p) = self.get(query) {
            return Some(p);
        }
        let q = normalise(query);
        let by_name = |lib: Option<&str>| {
            self.profiles.values().find(|p| normalise(&p.name) == q && lib.is_none_or(|l| p.library == l))
        };
        by_name(Some("transformers")).or_else(|| by_name(None))
    }

    /// Like [`Profiles::find`] for the index (types that failed to trace).
    pub fn find_failure(&self, query: &str) -> Option<&IndexEntry> {
        let q = normalise(query);
        self.failure(query).or_else(|| {
            self.index.values().find(|e| e.status != "ok" && (normalise(&e.name) == q || normalise(&e.id) == q))
        })
    }
}

/// Names compare case-insensitively and with `-` = `_` (Hub names use dashes, model_types underscores).
fn normalise(name: &str) -> String {
    name.to_ascii_lowercase().replace('-', "_")
}

/// All `.json` files below a directory of the embedded tree.
fn embedded_files(dir: &'static Dir<'static>) -> Vec<&'static include_dir::File<'static>> {
    let mut out: Vec<_> = dir.files().filter(|f| f.path().extension().is_some_and(|e| e == "json")).collect();
    for sub in dir.dirs() {
        out.extend(embedded_files(sub));
    }
    out
}
