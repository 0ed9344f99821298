//! Where in the user's program something happened, and how every report says it.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// Where in the user's program something happened (`file`/`line` in the event schema).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct Site {
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub line: Option<u32>,
}

/// `train.py:12`, relative to the working directory when the file is inside it.
pub(crate) fn site(at: &Site) -> String {
    let Some(file) = at.file.as_deref() else { return "<unknown>".into() };
    let shown = std::env::current_dir()
        .ok()
        .and_then(|cwd| Path::new(file).strip_prefix(cwd).ok().map(|p| p.display().to_string()))
        .unwrap_or_else(|| file.to_string());
    match at.line {
        Some(l) => format!("{shown}:{l}"),
        None => shown,
    }
}

/// `train.py:12 in step`: the site and its function, when it has one.
pub(crate) fn site_fn(at: &Site, function: Option<&str>) -> String {
    match function.filter(|f| !f.is_empty() && *f != "<module>") {
        Some(f) => format!("{} in {f}", site(at)),
        None => site(at),
    }
}
