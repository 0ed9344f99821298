//! Each listed model's `config.json` from the Hub (`ops trace --hub`), laid out as
//! `DIR/<owner>/<name>/config.json` for the tracer's `exact` command. Fetches use the listing's
//! client, retries, token and cache ([`hub::get_file`]); a failed fetch is reported with its URL
//! and the others go on.
use std::path::Path;

use anyhow::{Context, Result, bail};
use indicatif::ProgressBar;

use super::hub::{self, HubOptions, Stats};
use super::models::ModelRecord;

/// What fetching the configs did.
#[derive(Debug, Default)]
pub struct Fetched {
    /// Configs written into the directory.
    pub written: usize,
    /// Of those, served from the cache.
    pub cached: usize,
    /// Models whose repository holds no transformers config (another library, no model_type).
    pub skipped_other_library: usize,
    /// One message per model that could not be fetched, naming the URL (or the id).
    pub failures: Vec<String>,
    pub stats: Stats,
}

/// A transformers model: the listing says so, or its config has a `model_type` (e.g. a
/// sentence-transformers repository around a transformers backbone).
pub fn is_transformers(m: &ModelRecord) -> bool {
    m.library_name.as_deref().is_some_and(|l| l.eq_ignore_ascii_case("transformers")) || m.model_type.is_some()
}

/// A Hub id is `name` or `owner/name` of `[A-Za-z0-9._-]`, not starting with `.` or `-`; only such
/// ids become paths (the listing is data from the network).
pub fn valid_id(id: &str) -> bool {
    let parts: Vec<&str> = id.split('/').collect();
    (1..=2).contains(&parts.len())
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 96
                && !p.starts_with(['.', '-'])
                && p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        })
}

/// A config must be a JSON object; anything else (an HTML error page, a truncated file) is
/// reported, not traced.
fn check_config(body: &str) -> Result<()> {
    match serde_json::from_str::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        Ok(other) => bail!("config.json is not a JSON object ({})", kind(&other)),
        Err(e) => bail!("config.json is invalid JSON: {e}"),
    }
}

fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Null => "null",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Fetches the config of every transformers model in `models` into `dir`.
pub fn fetch_configs(opts: &HubOptions, models: &[ModelRecord], dir: &Path, progress: &ProgressBar) -> Result<Fetched> {
    let client = hub::client(opts)?;
    let mut out = Fetched::default();
    progress.set_length(models.len() as u64);
    for m in models {
        progress.inc(1);
        if !is_transformers(m) {
            out.skipped_other_library += 1;
            continue;
        }
        if !valid_id(&m.id) {
            out.failures.push(format!("{:?}: not a Hub model id, skipped", m.id));
            continue;
        }
        let url = hub::file_url(opts, &m.id, "config.json");
        progress.set_message(m.id.clone());
        match hub::get_file(&client, opts, &url, &mut out.stats, check_config) {
            Ok((body, cached)) => {
                let path = dir.join(&m.id).join("config.json");
                std::fs::create_dir_all(path.parent().expect("has a parent"))
                    .with_context(|| format!("creating {}", path.display()))?;
                std::fs::write(&path, body).with_context(|| format!("writing {}", path.display()))?;
                out.written += 1;
                out.cached += usize::from(cached);
            }
            Err(e) => out.failures.push(format!("{e:#}")),
        }
    }
    progress.finish_and_clear();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_may_become_paths() {
        for ok in ["bert-base-uncased", "google-bert/bert-base-uncased", "Qwen/Qwen2.5-7B", "a_b/c.d"] {
            assert!(valid_id(ok), "{ok}");
        }
        for bad in ["", "../x", "a/../b", "a/b/c", ".hidden/x", "a/-x", "a b/c", "a\\b", "/abs", "a//b", "a/"] {
            assert!(!valid_id(bad), "{bad}");
        }
    }

    #[test]
    fn config_must_be_an_object() {
        assert!(check_config("{\"model_type\": \"bert\"}").is_ok());
        assert!(format!("{:#}", check_config("{\"model_type\": ").unwrap_err()).contains("invalid JSON"));
        assert!(format!("{:#}", check_config("[1]").unwrap_err()).contains("an array"));
    }
}
