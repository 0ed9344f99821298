//! Model lists: the embedded snapshot, `--models FILE` (Hub JSON, JSON lines or CSV), and the
//! Hub listing's entries. Everything becomes a [`ModelRecord`] holding only the fields the
//! resolver needs, so memory stays proportional to the number of models.
use std::collections::HashSet;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::Value;

/// The embedded default list (see `corpus/models/README.md`).
const EMBEDDED_CSV: &str = include_str!("../../corpus/models/hf_top_llmfit_2026-10.csv");

/// One Hugging Face model, as much as the sources tell about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelRecord {
    pub id: String,
    /// The Hub's rolling 30-day count.
    pub downloads: u64,
    pub model_type: Option<String>,
    pub architectures: Vec<String>,
    pub library_name: Option<String>,
    pub pipeline_tag: Option<String>,
    /// `None` when the source carries no tags at all (e.g. the llmfit snapshot), which is not
    /// the same as an empty tag list.
    pub tags: Option<Vec<String>>,
    /// Diffusers `_class_name` (pipeline or component), from the config or a `diffusers:` tag.
    pub diffusers_class: Option<String>,
    /// PEFT adapter's base model, from `config.peft.base_model_name_or_path`.
    pub adapter_base: Option<String>,
    /// PEFT adapter type (`lora`, `ia3`, ...), from `config.peft.peft_type` when the source has it.
    pub adapter_type: Option<String>,
    /// Set when `model_type` was absent from the list and resolved from the id: the evidence.
    pub model_type_from_id: Option<String>,
}

impl ModelRecord {
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.as_deref().is_some_and(|t| t.iter().any(|x| x.eq_ignore_ascii_case(tag)))
    }

    /// Values of `prefix:value` tags, e.g. `base_model:adapter:` → the adapter's base.
    pub fn tag_values<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.tags.iter().flatten().filter_map(move |t| t.strip_prefix(prefix))
    }
}

/// Where a list came from; carried into every report so its numbers can be traced.
#[derive(Debug, Clone, Serialize)]
pub struct SourceInfo {
    /// `embedded`, `file` or `hub`.
    pub kind: String,
    pub name: String,
    pub attribution: String,
    pub captured: Option<String>,
    /// Caveats a reader needs (list bias, zero-download rows, cache use).
    pub notes: Vec<String>,
    /// Rows in the source before `--top`.
    pub rows: usize,
}

#[derive(Debug, Clone)]
pub struct ModelList {
    pub models: Vec<ModelRecord>,
    pub source: SourceInfo,
}

impl ModelList {
    /// Deduplicate by id (first wins), sort by downloads (stable, so source order breaks
    /// ties) and keep the top `n`.
    pub fn top(mut self, n: usize) -> ModelList {
        let mut seen = HashSet::new();
        self.models.retain(|m| seen.insert(m.id.clone()));
        self.models.sort_by_key(|m| std::cmp::Reverse(m.downloads));
        // Siblings come from the whole list, not only the rows kept.
        let siblings =
            super::id_family::Siblings::of(self.models.iter().map(|m| (m.id.as_str(), m.model_type.as_deref())));
        self.models.truncate(n);
        for m in self.models.iter_mut().filter(|m| m.model_type.is_none()) {
            if let Some((t, why)) = siblings.resolve(&m.id) {
                (m.model_type, m.model_type_from_id) = (Some(t), Some(why));
            }
        }
        let zero = self.models.iter().filter(|m| m.downloads == 0).count();
        if zero > 0 {
            self.source.notes.push(format!(
                "{} of the selected models have downloads = 0 (not fetched by the source); \
                 they count in the model totals but weigh nothing in the download shares",
                super::tally::thousands(zero)
            ));
        }
        self
    }
}

/// The snapshot shipped in the binary.
pub fn embedded() -> ModelList {
    let models = parse_csv(EMBEDDED_CSV, "embedded snapshot").expect("embedded snapshot parses");
    let zero = models.iter().filter(|m| m.downloads == 0).count();
    ModelList {
        source: SourceInfo {
            kind: "embedded".into(),
            name: "hf_top_llmfit_2026-10.csv".into(),
            attribution: "derived from data/hf_models.json of the crates.io package llmfit-core 1.1.18 \
                          (MIT, https://github.com/AlexsJones/llmfit)"
                .into(),
            captured: Some("about 2026-10-12 (30-day downloads)".into()),
            notes: vec![
                "LLM-centred list (text generation, VLMs, TTS, embeddings): not an overall Hub top-N; \
                 no diffusers, timm or CNN classifiers"
                    .into(),
                "the snapshot has no tags or library_name: GGUF/MLX/ONNX-only repositories are \
                 recognised from their id"
                    .into(),
                format!(
                    "{} of its {} rows have downloads = 0 (not fetched by llmfit)",
                    super::tally::thousands(zero),
                    super::tally::thousands(models.len())
                ),
            ],
            rows: models.len(),
        },
        models,
    }
}

/// `--models FILE`: a JSON array or JSON lines in the Hub API's shape, or CSV.
pub fn load_file(path: &Path) -> Result<ModelList> {
    let text = crate::source::read_text(path).with_context(|| format!("cannot read {}", path.display()))?;
    let label = path.display().to_string();
    let models = match text.trim_start().as_bytes().first() {
        Some(b'[') => parse_json_array(&text, &label)?,
        Some(b'{') => parse_json_lines(&text, &label)?,
        Some(_) => parse_csv(&text, &label)?,
        None => bail!("{label}: the file is empty"),
    };
    Ok(ModelList {
        source: SourceInfo {
            kind: "file".into(),
            name: path.file_name().map_or(label.clone(), |n| n.to_string_lossy().into_owned()),
            attribution: format!("model list read from {label}"),
            captured: None,
            notes: Vec::new(),
            rows: models.len(),
        },
        models,
    })
}

/// A Hub listing page (a JSON array of model entries).
pub fn parse_json_array(text: &str, label: &str) -> Result<Vec<ModelRecord>> {
    let entries: Vec<Value> = serde_json::from_str(text)
        .map_err(|e| anyhow::anyhow!("{label}: invalid JSON at line {} column {}: {e}", e.line(), e.column()))?;
    entries
        .iter()
        .enumerate()
        .map(|(i, v)| from_hub_entry(v).with_context(|| format!("{label}: entry {} (0-based {i})", i + 1)))
        .collect()
}

fn parse_json_lines(text: &str, label: &str) -> Result<Vec<ModelRecord>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line)
            .map_err(|e| anyhow::anyhow!("{label}:{}: invalid JSON at column {}: {e}", i + 1, e.column()))?;
        out.push(from_hub_entry(&v).with_context(|| format!("{label}:{}", i + 1))?);
    }
    Ok(out)
}

/// One entry as `list_models` returns it. Read leniently (a field of an unexpected type counts
/// as absent) because only `id` is essential; old dumps say `modelId`, the current API `id`.
pub fn from_hub_entry(v: &Value) -> Result<ModelRecord> {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let id = s(v, "id").or_else(|| s(v, "modelId")).context("no \"id\" or \"modelId\" string")?;
    let config = v.get("config").filter(|c| c.is_object());
    let from_config = |k: &str| config.and_then(|c| s(c, k));
    let tags: Option<Vec<String>> = v
        .get("tags")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect());
    // The Hub trims a diffusers `model_index.json` to `config.diffusers._class_name`.
    let diffusers_class = from_config("_class_name")
        .or_else(|| config.and_then(|c| c.get("diffusers")).and_then(|d| s(d, "_class_name")))
        .or_else(|| tags.iter().flatten().find_map(|t| t.strip_prefix("diffusers:")).map(str::to_owned));
    Ok(ModelRecord {
        id,
        downloads: v.get("downloads").and_then(Value::as_u64).unwrap_or(0),
        model_type: from_config("model_type").filter(|t| !t.is_empty()),
        architectures: config
            .and_then(|c| c.get("architectures"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default(),
        library_name: s(v, "library_name"),
        pipeline_tag: s(v, "pipeline_tag"),
        tags,
        diffusers_class,
        adapter_base: config.and_then(|c| c.get("peft")).and_then(|p| s(p, "base_model_name_or_path")),
        adapter_type: config
            .and_then(|c| c.get("peft"))
            .and_then(|p| s(p, "peft_type"))
            .map(|t| t.to_ascii_lowercase()),
        model_type_from_id: None,
    })
}

/// CSV with a header naming the columns. Accepted names: `model_id`/`id`/`modelId`, `downloads`,
/// and optionally `model_type`, `library_name`, `pipeline_tag`, `tags` (a JSON array, as in the
/// enochlev/theexgenesis snapshots), `diffusers_pipeline`. Lines starting with `#` are comments.
pub fn parse_csv(text: &str, label: &str) -> Result<Vec<ModelRecord>> {
    let mut rdr = csv::ReaderBuilder::new().comment(Some(b'#')).flexible(false).from_reader(text.as_bytes());
    let headers = rdr.headers().with_context(|| format!("{label}: cannot read the CSV header"))?.clone();
    let col = |names: &[&str]| headers.iter().position(|h| names.contains(&h.trim()));
    let Some(id_col) = col(&["model_id", "id", "modelId"]) else {
        bail!(
            "{label}: no model_id column (expected model_id,downloads[,model_type,library_name,pipeline_tag]; \
             found {})",
            headers.iter().collect::<Vec<_>>().join(",")
        );
    };
    let Some(dl_col) = col(&["downloads"]) else { bail!("{label}: no downloads column") };
    let (mt, lib, pipe, tags_col, diff) = (
        col(&["model_type"]),
        col(&["library_name"]),
        col(&["pipeline_tag"]),
        col(&["tags"]),
        col(&["diffusers_pipeline"]),
    );
    let mut out = Vec::new();
    for row in rdr.records() {
        let row = row.map_err(|e| match e.position() {
            Some(p) => anyhow::anyhow!("{label}: line {}: {e}", p.line()),
            None => anyhow::anyhow!("{label}: {e}"),
        })?;
        let line = row.position().map_or(0, |p| p.line());
        let field =
            |c: Option<usize>| c.and_then(|c| row.get(c)).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
        let id = field(Some(id_col)).with_context(|| format!("{label}: line {line}: empty model_id"))?;
        let downloads = match field(Some(dl_col)) {
            None => 0,
            Some(d) => d
                .parse::<u64>()
                .or_else(|_| d.parse::<f64>().map(|f| f as u64))
                .map_err(|_| anyhow::anyhow!("{label}: line {line}: downloads {d:?} is not a number"))?,
        };
        let tags = match field(tags_col) {
            None => tags_col.map(|_| Vec::new()),
            Some(t) => Some(
                serde_json::from_str::<Vec<String>>(&t)
                    .with_context(|| format!("{label}: line {line}: tags is not a JSON array of strings"))?,
            ),
        };
        let diffusers_class =
            field(diff).or_else(|| tags.iter().flatten().find_map(|t| t.strip_prefix("diffusers:")).map(str::to_owned));
        out.push(ModelRecord {
            id,
            downloads,
            model_type: field(mt),
            architectures: Vec::new(),
            library_name: field(lib),
            pipeline_tag: field(pipe),
            tags,
            diffusers_class,
            adapter_base: None,
            adapter_type: None,
            model_type_from_id: None,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_is_sorted_and_attributed() {
        let list = embedded();
        assert!(list.models.len() > 17_000);
        assert!(list.source.attribution.contains("llmfit-core 1.1.18"));
        let top = list.top(5000);
        assert_eq!(top.models.len(), 5000);
        assert!(top.models.windows(2).all(|w| w[0].downloads >= w[1].downloads));
    }

    #[test]
    fn hub_entry_old_and_new_shapes() {
        let old: Value = serde_json::json!({"modelId": "gpt2", "downloads": 5, "config": {"model_type": "gpt2"}});
        let new: Value = serde_json::json!({"id": "a/b", "config": {"diffusers": {"_class_name": "FluxPipeline"}},
            "tags": ["diffusers"], "library_name": "diffusers"});
        assert_eq!(from_hub_entry(&old).unwrap().model_type.as_deref(), Some("gpt2"));
        assert_eq!(from_hub_entry(&new).unwrap().diffusers_class.as_deref(), Some("FluxPipeline"));
        assert!(from_hub_entry(&serde_json::json!({"downloads": 1})).is_err());
        let adapter: Value = serde_json::json!({"id": "me/a", "library_name": "peft",
            "config": {"peft": {"base_model_name_or_path": "meta/base", "peft_type": "LORA"}}});
        let a = from_hub_entry(&adapter).unwrap();
        assert_eq!((a.adapter_base.as_deref(), a.adapter_type.as_deref()), (Some("meta/base"), Some("lora")));
    }
}
