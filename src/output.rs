//! Where output goes, the same way in every subcommand: colour (`--color`, `NO_COLOR`,
//! `FORCE_COLOR`, `CLICOLOR_FORCE`), a reader that stops reading (`check | head`), counts in
//! words ("1 file", "2 files"), and the files a run writes reports to (`-o/--output-file`,
//! `--report`, `--write-baseline`), which replace only an earlier report and are never read as
//! an input.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::discover::FileId;

/// `n` (any unsigned count) and the noun, plural unless `n` is 1: "1 file", "2 files",
/// "3 fixes", "2 entries".
pub fn count<N: std::fmt::Display + PartialEq + From<u8>>(n: N, noun: &str) -> String {
    if n == N::from(1) { format!("{n} {noun}") } else { format!("{n} {}", plural(noun)) }
}

/// The regular English plural, which is all our nouns need.
pub fn plural(noun: &str) -> String {
    let consonant_y = noun.strip_suffix('y').filter(|stem| !stem.ends_with(['a', 'e', 'o', 'u']));
    match consonant_y {
        Some(stem) => format!("{stem}ies"),
        None if noun.ends_with(['s', 'x']) || noun.ends_with("ch") || noun.ends_with("sh") => format!("{noun}es"),
        None => format!("{noun}s"),
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Make the process's standard streams follow this choice: they strip the escapes of
    /// coloured text unless colour is on for them. `auto` is anstream's (`NO_COLOR`,
    /// `CLICOLOR_FORCE`, `CLICOLOR`, a terminal whose `TERM` is not `dumb`), plus `FORCE_COLOR`
    /// (force-color.org), which anstream does not read; a flag beats them all.
    pub fn apply(self) {
        let force = std::env::var_os("FORCE_COLOR").is_some_and(|v| !v.is_empty() && v != "0");
        let global = match self {
            ColorChoice::Always => anstream::ColorChoice::Always,
            ColorChoice::Never => anstream::ColorChoice::Never,
            ColorChoice::Auto if force && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) => {
                anstream::ColorChoice::Always
            }
            ColorChoice::Auto => anstream::ColorChoice::Auto,
        };
        global.write_global();
    }
}

/// Whether what is printed to standard output is coloured, as [`ColorChoice::apply`] set it.
pub fn stdout_colored() -> bool {
    anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
}

/// Whether `err` comes from writing to a pipe whose reader has gone (`check | head`): not a
/// failure of the run, so nothing is printed about it.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|cause| cause.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}

/// `result` of a write to standard output, where a reader that stopped reading is no error:
/// the run goes on and ends with its own exit code (`check | head` still exits 1 on findings).
pub fn tolerate_closed_reader(result: std::io::Result<()>) -> std::io::Result<()> {
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Standard output's file when it is redirected to a regular file (`check > report.json`): the
/// shell creates it before the run walks the tree, and it must not be read as an input.
pub fn stdout_file() -> Option<FileId> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let fd = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
        let meta = std::fs::File::from(fd).metadata().ok()?;
        meta.is_file().then(|| FileId::of(&meta)).flatten()
    }
    #[cfg(not(unix))]
    None
}

/// How much of an existing file is read to tell whether it is an earlier report.
const HEAD: u64 = 64 * 1024;

/// A file a run writes a report to, claimed before the run reads anything: an existing file is
/// replaced only when it is empty, not a regular file (`/dev/stdout`), or an earlier report of
/// the same kind (`earlier` recognises one from its first 64 KiB). Anything else (a source file,
/// the README, one of the run's inputs) is refused, so a mistyped path destroys nothing.
#[derive(Debug)]
pub struct OutputFile {
    pub path: PathBuf,
    /// The existing file's identity: the run does not read it as an input.
    pub id: Option<FileId>,
}

impl OutputFile {
    pub fn claim(path: &Path, what: &str, earlier: impl Fn(&str) -> bool) -> anyhow::Result<OutputFile> {
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(OutputFile { path: path.into(), id: None });
            }
            Err(e) => return Err(e).with_context(|| format!("cannot write the {what} to {}", path.display())),
        };
        if meta.is_dir() {
            bail!("cannot write the {what} to {}: it is a directory", path.display());
        }
        if meta.is_file() && meta.len() > 0 {
            let mut head = Vec::new();
            std::fs::File::open(path)
                .and_then(|f| f.take(HEAD).read_to_end(&mut head))
                .with_context(|| format!("cannot read {} to check it is an earlier {what}", path.display()))?;
            if !earlier(&String::from_utf8_lossy(&head)) {
                bail!(
                    "{} exists and is not an earlier {what}; not overwritten (delete it or choose another file)",
                    path.display()
                );
            }
        }
        Ok(OutputFile { path: path.into(), id: FileId::of(&meta) })
    }

    /// Write the report (whole, never half: see [`crate::write::create`]).
    pub fn write(&self, bytes: &[u8]) -> anyhow::Result<()> {
        crate::write::create(&self.path, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_in_words() {
        assert_eq!(count(1, "file"), "1 file");
        assert_eq!(count(0, "file"), "0 files");
        assert_eq!(count(2, "fix"), "2 fixes");
        assert_eq!(count(3, "entry"), "3 entries");
        assert_eq!(count(2, "day"), "2 days");
        assert_eq!(count(2, "class"), "2 classes");
        assert_eq!(count(1, "item"), "1 item");
    }

    #[test]
    fn an_output_file_replaces_only_an_earlier_report() {
        let dir = tempfile::tempdir().expect("temp dir");
        let report = |_: &str| false;
        let new = dir.path().join("new.md");
        assert!(OutputFile::claim(&new, "report", report).is_ok(), "a new file");
        let empty = dir.path().join("empty.md");
        std::fs::write(&empty, "").expect("write");
        assert!(OutputFile::claim(&empty, "report", report).is_ok(), "an empty file");
        let readme = dir.path().join("README.md");
        std::fs::write(&readme, "# My project\n").expect("write");
        let err = OutputFile::claim(&readme, "report", |t| t.starts_with("# Migration report")).expect_err("refused");
        assert!(err.to_string().contains("is not an earlier report; not overwritten"), "{err}");
        let earlier = OutputFile::claim(&readme, "report", |t| t.starts_with("# My")).expect("an earlier report");
        assert!(earlier.id.is_some());
        assert!(OutputFile::claim(dir.path(), "report", report).is_err(), "a directory");
    }
}
