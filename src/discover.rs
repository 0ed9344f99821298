//! File discovery: directories are walked with the `ignore` crate (honours
//! .gitignore, skips hidden directories); what the configuration excludes is
//! pruned as the walk goes. Files named on the command line are always
//! processed, unless `--force-exclude` says otherwise. A walk keeps the files some handler
//! reads ([`Kind::of`]): Python, notebooks, dependency files, launch scripts, configs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::migrate::target::Kind;

/// One input: a file path, or `-` for standard input (read as the file `--stdin-filename`
/// names, when it names one).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Input {
    Stdin(Option<PathBuf>),
    File(PathBuf),
}

impl Input {
    pub fn display(&self) -> String {
        match self {
            Input::Stdin(None) => "<stdin>".to_string(),
            Input::Stdin(Some(name)) | Input::File(name) => name.display().to_string(),
        }
    }

    /// The path it is read from; `-` for standard input.
    pub fn path(&self) -> PathBuf {
        match self {
            Input::Stdin(_) => PathBuf::from("-"),
            Input::File(p) => p.clone(),
        }
    }

    /// Standard input named `name` (`--stdin-filename`); a file stays what it is.
    pub fn named(self, name: Option<&Path>) -> Input {
        match self {
            Input::Stdin(None) => Input::Stdin(name.map(Path::to_path_buf)),
            input => input,
        }
    }

    /// The name that decides how it is read and which configuration applies.
    pub fn name(&self) -> Option<&Path> {
        match self {
            Input::Stdin(name) => name.as_deref(),
            Input::File(p) => Some(p),
        }
    }
}

/// What discovery found, and what it could not read.
#[derive(Debug, Default)]
pub struct Discovered {
    pub inputs: Vec<Input>,
    /// (path, message) for unreadable directories, broken links, loops, bad configuration…
    pub errors: Vec<(String, String)>,
}

/// A file's identity, whatever path names it (`x.json`, `./x.json`, a link to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    pub fn of(meta: &std::fs::Metadata) -> Option<FileId> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(FileId { dev: meta.dev(), ino: meta.ino() })
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            None
        }
    }
}

/// What the walk leaves out; `Err` is a configuration that cannot be read.
pub trait Exclusion: Send + Sync {
    /// A file or directory met while walking a directory.
    fn walked(&self, path: &Path, is_dir: bool) -> anyhow::Result<bool>;
    /// A file named on the command line.
    fn named(&self, path: &Path) -> anyhow::Result<bool>;
    /// The files the run writes its reports to: never inputs, wherever they are.
    fn outputs(&self) -> &[FileId] {
        &[]
    }
}

/// Every input, sorted and without duplicates (`--show-files`).
pub fn discover(paths: &[PathBuf], no_ignore: bool, exclusion: Arc<dyn Exclusion>) -> Discovered {
    let mut found = Discovered::default();
    found.errors = discover_each(paths, no_ignore, exclusion, |input| found.inputs.push(input));
    found.inputs.sort();
    found
}

/// Hand each input to `found` as soon as the walk meets it, once each (overlapping arguments
/// such as `src src/a.py` name a file twice), so processing overlaps the walk; returns what
/// could not be read. The inputs of one argument come sorted (each directory is read in name
/// order, which is `Input`'s order for a depth-first walk); several arguments come one after
/// the other.
pub fn discover_each(
    paths: &[PathBuf],
    no_ignore: bool,
    exclusion: Arc<dyn Exclusion>,
    mut found: impl FnMut(Input),
) -> Vec<(String, String)> {
    let mut errors = Vec::new();
    // Only several arguments can name a file twice: one walk meets each file once.
    let mut seen = std::collections::HashSet::new();
    let several = paths.len() > 1;
    let mut emit = |input: Input| {
        if !several || seen.insert(input.clone()) {
            found(input);
        }
    };
    for path in paths {
        if path.as_os_str() == "-" {
            emit(Input::Stdin(None));
            continue;
        }
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => walk(path, no_ignore, exclusion.clone(), &mut emit, &mut errors),
            // A FIFO or a device would block the read or never end: only regular files are source.
            Ok(meta) if !meta.is_file() => {
                errors.push((path.display().to_string(), "not a regular file; skipped".into()))
            }
            Ok(meta) if FileId::of(&meta).is_some_and(|id| exclusion.outputs().contains(&id)) => {}
            Ok(_) => match exclusion.named(path) {
                Ok(true) => {}
                Ok(false) => emit(Input::File(path.clone())),
                Err(e) => errors.push((path.display().to_string(), format!("{e:#}"))),
            },
            Err(e) => errors.push((path.display().to_string(), e.to_string())),
        }
    }
    errors
}

fn walk(
    root: &Path,
    no_ignore: bool,
    exclusion: Arc<dyn Exclusion>,
    emit: &mut impl FnMut(Input),
    errors: &mut Vec<(String, String)>,
) {
    // The filter cannot return errors; they are collected (once each) and reported after the walk.
    let config_errors: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let filter_errors = config_errors.clone();
    let outputs = exclusion.outputs().to_vec();
    let outputs = outputs.as_slice();
    let mut builder = ignore::WalkBuilder::new(root);
    builder.standard_filters(!no_ignore).follow_links(false).sort_by_file_name(|a, b| a.cmp(b)).filter_entry(
        move |e| {
            // The directory named on the command line is walked whatever its name.
            e.depth() == 0
                || !exclusion.walked(e.path(), e.file_type().is_some_and(|t| t.is_dir())).unwrap_or_else(|err| {
                    filter_errors.lock().expect("not poisoned").insert(format!("{err:#}"));
                    true
                })
        },
    );
    let mut links = Vec::new();
    for entry in builder.build() {
        match entry {
            Ok(e)
                if e.file_type().is_some_and(|t| t.is_file())
                    && Kind::of(e.path()).is_some()
                    && !is_output(&e, outputs) =>
            {
                // `check .` shows `train.py`, as ruff does, not `./train.py`.
                emit(Input::File(shown(e.into_path())))
            }
            // Not followed (a link may leave the tree or loop), nor readable by name: said, once
            // per walk, so that nothing is skipped silently.
            Ok(e) if e.file_type().is_some_and(|t| t.is_symlink()) => {
                let target_is_dir = std::fs::metadata(e.path()).is_ok_and(|m| m.is_dir());
                if target_is_dir || Kind::of(e.path()).is_some() {
                    links.push(shown(e.into_path()).display().to_string());
                }
            }
            Ok(e) if e.file_type().is_some_and(|t| t.is_file()) && e.file_name().to_str().is_none() => {
                if Kind::of(Path::new(&*e.file_name().to_string_lossy())).is_some() {
                    eprintln!(
                        "warning: {}: the file name is not UTF-8; skipped (rename it to check it)",
                        shown(e.into_path()).display()
                    );
                }
            }
            Ok(_) => {}
            Err(err) => {
                let path = match &err {
                    ignore::Error::WithPath { path, .. } => path.display().to_string(),
                    _ => root.display().to_string(),
                };
                errors.push((path, err.to_string()));
            }
        }
    }
    if !links.is_empty() {
        const SHOWN: usize = 5;
        let more = if links.len() > SHOWN { format!(", … {} more", links.len() - SHOWN) } else { String::new() };
        eprintln!(
            "warning: {} symbolic link{} not followed (name the target to check it): {}{more}",
            links.len(),
            if links.len() == 1 { "" } else { "s" },
            links[..links.len().min(SHOWN)].join(", ")
        );
    }
    let config_errors = std::mem::take(&mut *config_errors.lock().expect("not poisoned"));
    errors.extend(config_errors.into_iter().map(|e| (root.display().to_string(), e)));
}

/// `check .` shows `train.py`, as ruff does, not `./train.py`.
fn shown(path: PathBuf) -> PathBuf {
    path.strip_prefix(".").map(Path::to_path_buf).unwrap_or(path)
}

/// Whether a walked file is one the run writes a report to: the inode the directory listing gives
/// is compared first, so only a file that may be one costs a `stat`.
fn is_output(entry: &ignore::DirEntry, outputs: &[FileId]) -> bool {
    #[cfg(unix)]
    let maybe = entry.ino().is_some_and(|ino| outputs.iter().any(|o| o.ino == ino));
    #[cfg(not(unix))]
    let maybe = !outputs.is_empty();
    maybe && entry.metadata().ok().and_then(|m| FileId::of(&m)).is_some_and(|id| outputs.contains(&id))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Excludes nothing.
    struct Everything;

    impl Exclusion for Everything {
        fn walked(&self, _: &Path, _: bool) -> anyhow::Result<bool> {
            Ok(false)
        }
        fn named(&self, _: &Path) -> anyhow::Result<bool> {
            Ok(false)
        }
    }

    #[test]
    fn one_argument_is_walked_in_input_order() {
        // Names whose byte order differs from the order of the paths they start: `x-y` sorts
        // before `x/…` as text, after it as a path; `X` and `_x` sort before `x`.
        let dir = tempfile::tempdir().expect("a temporary directory");
        for file in ["x/1.py", "x/a/b.py", "x.py", "x-y/2.py", "x-y.py", "X/3.py", "_x/4.py", "x0/5.py", "b.py", "a.py"]
        {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().expect("in the directory")).expect("a directory");
            std::fs::write(&path, "x = 1\n").expect("a file");
        }
        let mut met = Vec::new();
        let errors = discover_each(&[dir.path().to_path_buf()], true, Arc::new(Everything), |i| met.push(i));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(met.len(), 10);
        let mut sorted = met.clone();
        sorted.sort();
        assert_eq!(met, sorted, "`check` prints findings as files are done, in this order");
    }
}
