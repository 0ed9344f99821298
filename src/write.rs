//! Writing files so that nothing is ever half-written: a temporary file in the
//! target's directory, flushed, then renamed over the target.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

/// Replace an existing file in place (following a symlink to its target),
/// keeping its permissions: `migrate --write`.
pub fn replace(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let target = std::fs::canonicalize(path).with_context(|| format!("cannot resolve {}", path.display()))?;
    let permissions = std::fs::metadata(&target)?.permissions();
    let mut tmp = temp_beside(&target)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.as_file().set_permissions(permissions)?;
    tmp.persist(&target).map_err(|e| e.error).with_context(|| format!("cannot replace {}", target.display()))?;
    Ok(())
}

/// [`replace`], unless the file no longer holds `expected` (what was read and migrated): an
/// edit made while the run went on is kept, and the file is reported instead of overwritten.
pub fn replace_if_unchanged(path: &Path, expected: &[u8], bytes: &[u8]) -> anyhow::Result<()> {
    crate::migrate::fault_injection_change(path);
    let now = std::fs::read(path).with_context(|| format!("cannot read {} again before writing it", path.display()))?;
    if now != expected {
        anyhow::bail!("changed while xla2tpu was running; not written (run again)");
    }
    replace(path, bytes)
}

/// Write an output file (a report, a cached page), created or overwritten,
/// readable by others as any output file is.
pub fn create(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut tmp = temp_beside(path)?;
    tmp.write_all(bytes)?;
    // Temporary files are created 0600; outputs are not secret.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.persist(path).map_err(|e| e.error).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

fn temp_beside(path: &Path) -> anyhow::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    tempfile::NamedTempFile::new_in(dir).with_context(|| format!("cannot create a temporary file in {}", dir.display()))
}
