//! Writing files so that nothing is ever half-written: the new content is written and synced
//! in an unnamed file in the target's directory (`O_TMPFILE`, so a killed run leaves nothing
//! behind), linked in under a temporary name and renamed over the target at once.
//!
//! A rename makes a new inode: it is done only over regular files. Outputs that are devices,
//! pipes or descriptors (`-o /dev/stdout`, `--report /dev/null`) are written directly. A source
//! rewritten by `migrate --write` keeps its mode, owner and group; a file the rename would hurt
//! (read-only, hard-linked, not writable by us, changed while we ran) is left alone, with why.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// Rewrite a source file (following a symlink to its target) unless it no longer holds
/// `expected`, what was read and migrated: `migrate --write`. An edit made while the run went
/// on is kept, and the file is reported instead of overwritten. Mode, owner and group survive.
pub fn replace_if_unchanged(path: &Path, expected: &[u8], bytes: &[u8]) -> anyhow::Result<()> {
    crate::migrate::fault_injection_change(path, crate::migrate::Stage::BeforeWrite);
    let target = std::fs::canonicalize(path).with_context(|| format!("cannot resolve {}", path.display()))?;
    let before = std::fs::symlink_metadata(&target)?;
    refuse_unsafe_rewrite(&target, &before)?;
    let now =
        std::fs::read(&target).with_context(|| format!("cannot read {} again before writing it", path.display()))?;
    if now != expected {
        bail!("changed while xla2tpu was running; not written (run again)");
    }
    let staged = stage(&target, bytes, Some(Like { meta: &before, mode: true }))?;
    // The slow part (writing, syncing) is over: look again just before the rename, which is
    // what an edit saved meanwhile would lose. The window left is this stat to the rename.
    crate::migrate::fault_injection_change(path, crate::migrate::Stage::AfterSync);
    match std::fs::symlink_metadata(&target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("deleted while xla2tpu was running; not written")
        }
        Err(e) => return Err(e).with_context(|| format!("cannot stat {} again before writing it", path.display())),
        Ok(after) if !same_version(&before, &after) => {
            bail!("changed while xla2tpu was running; not written (run again)")
        }
        Ok(_) => {}
    }
    staged.persist(&target).with_context(|| format!("cannot replace {}", target.display()))
}

/// The rewrites a rename would get wrong, refused before anything is written.
fn refuse_unsafe_rewrite(target: &Path, meta: &Metadata) -> anyhow::Result<()> {
    if !meta.is_file() {
        bail!("not a regular file; not written");
    }
    // Root may write anything; a file nobody may write was made read-only on purpose.
    if meta.mode() & 0o222 == 0 {
        bail!("read-only file; not written (make it writable to migrate it)");
    }
    // A rename needs only the directory: ask the file itself, as an editor would.
    if let Err(e) = OpenOptions::new().write(true).open(target) {
        bail!("cannot write: {e}; not written");
    }
    // A new inode under one name would silently split the links; writing in place would change
    // every linked copy (a `cp -al` snapshot, a package cache) and is not atomic.
    if meta.nlink() > 1 {
        bail!(
            "has {} hard links; not written (a rewrite would split them or change every copy: migrate one copy with `--write -`, or break the links first)",
            meta.nlink()
        );
    }
    Ok(())
}

/// The same file, not edited since: inode, size, and both timestamps to the nanosecond.
fn same_version(a: &Metadata, b: &Metadata) -> bool {
    (a.dev(), a.ino(), a.size(), a.mtime(), a.mtime_nsec(), a.ctime(), a.ctime_nsec())
        == (b.dev(), b.ino(), b.size(), b.mtime(), b.mtime_nsec(), b.ctime(), b.ctime_nsec())
}

/// Write an output file (a report, a baseline, a cached page), created or overwritten. A new
/// file is readable by others, as outputs are; an existing one keeps its mode and owner; a
/// symlink is followed; a device, pipe or descriptor is written into, never replaced.
pub fn create(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let direct = || -> anyhow::Result<()> {
        // Appending: a descriptor opened again by name starts at offset 0 of a redirected file.
        let mut file = OpenOptions::new().append(true).open(path)?;
        file.write_all(bytes)?;
        file.flush()?;
        Ok(())
    };
    if is_descriptor(path) {
        return direct().with_context(|| format!("cannot write {}", path.display()));
    }
    let (target, existing) = match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => return direct().with_context(|| format!("cannot write {}", path.display())),
        Ok(meta) => (std::fs::canonicalize(path)?, Some(meta)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (path.to_path_buf(), None),
        Err(e) => return Err(e).with_context(|| format!("cannot write {}", path.display())),
    };
    stage(&target, bytes, existing.as_ref().map(|meta| Like { meta, mode: true }))?
        .persist(&target)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Write a new file beside the sources (`migrate --write`'s helper module), whole or not at
/// all, and never over a file that appeared meanwhile: then it fails, and nothing is replaced.
/// It belongs to whoever owns `sibling` (a source beside it), as the rewritten sources do.
pub fn create_new(path: &Path, bytes: &[u8], sibling: &Path) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(path).is_ok() {
        bail!("{} exists; not replaced", path.display());
    }
    let owner = std::fs::metadata(sibling).with_context(|| format!("cannot stat {}", sibling.display()))?;
    stage(path, bytes, Some(Like { meta: &owner, mode: false }))?
        .persist_new(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

/// `/dev/stdout`, `/dev/fd/3`, `/proc/self/fd/1`: what they name is whatever the descriptor is
/// (a terminal, a pipe, or the file a shell redirected to, which a rename would orphan).
fn is_descriptor(path: &Path) -> bool {
    ["/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/"].iter().any(|p| path.starts_with(p))
}

/// New content, written and synced, not yet in place.
enum Staged {
    /// Unnamed (`O_TMPFILE`): nothing is left if the run is killed before [`Staged::persist`].
    Anonymous { file: File, dir: PathBuf },
    /// Where `O_TMPFILE` is not supported: a hidden `.xla2tpu-*.tmp` file.
    Named(tempfile::NamedTempFile),
}

/// The file a staged one stands in for, or stands beside: its owner and group are kept, and its
/// mode with `mode` (a new file beside it gets an output's 0644 instead).
struct Like<'a> {
    meta: &'a Metadata,
    mode: bool,
}

fn stage(target: &Path, bytes: &[u8], like: Option<Like>) -> anyhow::Result<Staged> {
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let staged = match anonymous_in(dir) {
        Some(file) => Staged::Anonymous { file, dir: dir.to_path_buf() },
        None => Staged::Named(
            temp_builder()
                .tempfile_in(dir)
                .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?,
        ),
    };
    let file = match &staged {
        Staged::Anonymous { file, .. } => file,
        Staged::Named(tmp) => tmp.as_file(),
    };
    let mut writer: &File = file;
    writer.write_all(bytes)?;
    if let Some(Like { meta, .. }) = like {
        // As root (a Docker CI on a bind-mounted checkout) the new inode would be root's.
        if (file.metadata()?.uid(), file.metadata()?.gid()) != (meta.uid(), meta.gid()) {
            std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid())).map_err(|e| {
                anyhow::anyhow!(
                    "owned by uid {} gid {}, which the written file could not keep ({e}); not written",
                    meta.uid(),
                    meta.gid()
                )
            })?;
        }
    }
    match like {
        Some(Like { meta, mode: true }) => file.set_permissions(meta.permissions())?,
        _ => {
            // Temporary files are created 0600; outputs are not secret.
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o644))?;
        }
    }
    file.sync_all()?;
    Ok(staged)
}

impl Staged {
    /// In place under `target`, where no file of that name may exist (`linkat` and
    /// `persist_noclobber` refuse one).
    fn persist_new(self, target: &Path) -> anyhow::Result<()> {
        match self {
            Staged::Anonymous { file, .. } => link_at(&file, target)?,
            Staged::Named(tmp) => {
                tmp.persist_noclobber(target).map_err(|e| e.error)?;
            }
        }
        Ok(())
    }

    fn persist(self, target: &Path) -> anyhow::Result<()> {
        match self {
            Staged::Anonymous { file, dir } => {
                // Linked in under a temporary name, then renamed at once: only between these two
                // calls does a name exist that a kill could leave behind.
                let linked = temp_builder().make_in(&dir, |name| link_at(&file, name))?;
                linked.persist(target).map_err(|e| e.error)?;
            }
            Staged::Named(tmp) => {
                tmp.persist(target).map_err(|e| e.error)?;
            }
        }
        Ok(())
    }
}

/// Give the unnamed `file` the name `name` (`linkat` through `/proc`); fails if `name` exists.
fn link_at(file: &File, name: &Path) -> std::io::Result<()> {
    let proc_path = format!("/proc/self/fd/{}\0", std::os::fd::AsRawFd::as_raw_fd(file));
    let name = std::ffi::CString::new(name.as_os_str().as_encoded_bytes())?;
    // SAFETY: both paths are NUL-terminated and live across the call.
    let rc = unsafe {
        libc::linkat(libc::AT_FDCWD, proc_path.as_ptr().cast(), libc::AT_FDCWD, name.as_ptr(), libc::AT_SYMLINK_FOLLOW)
    };
    if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

fn temp_builder() -> tempfile::Builder<'static, 'static> {
    let mut b = tempfile::Builder::new();
    b.prefix(".xla2tpu-").suffix(".tmp");
    b
}

/// An unnamed file in `dir`, where the file system supports `O_TMPFILE` and `/proc` is there
/// to link it in by.
fn anonymous_in(dir: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    if !Path::new("/proc/self/fd").is_dir() {
        return None;
    }
    OpenOptions::new().write(true).mode(0o600).custom_flags(libc::O_TMPFILE).open(dir).ok()
}
