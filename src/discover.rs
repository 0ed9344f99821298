//! File discovery: directories are walked with the `ignore` crate (honours
//! .gitignore, skips hidden directories and virtualenvs); files named on the
//! command line are always processed.

use std::path::{Path, PathBuf};

/// One input: a file path, or `-` for standard input.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Input {
    Stdin,
    File(PathBuf),
}

impl Input {
    pub fn display(&self) -> String {
        match self {
            Input::Stdin => "<stdin>".to_string(),
            Input::File(p) => p.display().to_string(),
        }
    }
}

/// What discovery found, and what it could not read.
#[derive(Debug, Default)]
pub struct Discovered {
    pub inputs: Vec<Input>,
    /// (path, message) for unreadable directories, broken links, loops…
    pub errors: Vec<(String, String)>,
}

/// Directory names that are never source of the user's own project.
const SKIP_DIRS: &[&str] = &["venv", ".venv", "env", "site-packages", "__pycache__", "node_modules", ".tox", ".nox"];

pub fn discover(paths: &[PathBuf], no_ignore: bool) -> Discovered {
    let mut found = Discovered::default();
    for path in paths {
        if path.as_os_str() == "-" {
            found.inputs.push(Input::Stdin);
            continue;
        }
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => walk(path, no_ignore, &mut found),
            Ok(_) => found.inputs.push(Input::File(path.clone())),
            Err(e) => found.errors.push((path.display().to_string(), e.to_string())),
        }
    }
    found.inputs.sort();
    found.inputs.dedup();
    found
}

fn walk(root: &Path, no_ignore: bool, found: &mut Discovered) {
    let mut builder = ignore::WalkBuilder::new(root);
    builder.standard_filters(!no_ignore).follow_links(false).filter_entry(move |e| {
        no_ignore || !(e.file_type().is_some_and(|t| t.is_dir()) && SKIP_DIRS.iter().any(|d| e.file_name() == *d))
    });
    for entry in builder.build() {
        match entry {
            Ok(e) if e.file_type().is_some_and(|t| t.is_file()) && is_python(e.path()) => {
                found.inputs.push(Input::File(e.into_path()))
            }
            Ok(_) => {}
            Err(err) => {
                let path = match &err {
                    ignore::Error::WithPath { path, .. } => path.display().to_string(),
                    _ => root.display().to_string(),
                };
                found.errors.push((path, err.to_string()));
            }
        }
    }
}

fn is_python(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "py" || e == "pyi")
}
