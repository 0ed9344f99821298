//! The emulator ships inside the binary: `emulator/python/` plus the backend
//! registry it refuses ops from (the same table `ops check` reads). On first
//! use it is unpacked into a content-addressed cache directory, written to a
//! temporary sibling and renamed into place, so concurrent runs never see a
//! half-written copy. A copy is used only while every file in it is what the binary embeds: one
//! truncated or edited since (a full disk, a cache cleaner) is set aside and unpacked again.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use anyhow::Context;
use include_dir::{Dir, DirEntry};

static PYTHON: Dir<'static> = include_dir::include_dir!("$CARGO_MANIFEST_DIR/emulator/python");

/// The TorchTPU release the emulator models, and the registry files it reads.
pub const TORCHTPU_VERSION: &str = "0.2.0";
const REGISTRY: &str = include_str!("../../rules/backends/torchtpu-0.2.0.tsv");
const AUTOCAST: &str = include_str!("../../rules/backends/torchtpu-0.2.0.autocast.txt");

/// An unpacked emulator: the directory to put first on `PYTHONPATH`, and its data files.
pub struct Installed {
    pub pythonpath: PathBuf,
    pub registry: PathBuf,
    pub autocast: PathBuf,
}

/// Unpack the emulator under `cache_root` (once per content hash).
pub fn install(cache_root: &Path) -> anyhow::Result<Installed> {
    let dir = cache_root.join(format!("emulator-{TORCHTPU_VERSION}-{:016x}", content_hash()));
    let installed = Installed {
        pythonpath: dir.join("python"),
        registry: dir.join("torchtpu-0.2.0.tsv"),
        autocast: dir.join("torchtpu-0.2.0.autocast.txt"),
    };
    if dir.join(".complete").exists() {
        if intact(&dir) {
            return Ok(installed);
        }
        // Renamed away first: a concurrent run either sees the old copy whole or none.
        let broken = cache_root.join(format!(".emulator-broken-{}", std::process::id()));
        if std::fs::rename(&dir, &broken).is_ok() {
            let _ = std::fs::remove_dir_all(&broken);
        }
    }
    std::fs::create_dir_all(cache_root).with_context(|| format!("cannot create {}", cache_root.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".emulator-")
        .tempdir_in(cache_root)
        .with_context(|| format!("cannot write to {}", cache_root.display()))?;
    write_dir(&PYTHON, &staging.path().join("python"))?;
    std::fs::write(staging.path().join("torchtpu-0.2.0.tsv"), REGISTRY)?;
    std::fs::write(staging.path().join("torchtpu-0.2.0.autocast.txt"), AUTOCAST)?;
    std::fs::write(staging.path().join(".complete"), "")?;
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, &dir) {
        // Another run won the race: its copy is identical.
        let _ = std::fs::remove_dir_all(&staged);
        if !dir.join(".complete").exists() {
            return Err(e).with_context(|| format!("cannot install the emulator into {}", dir.display()));
        }
    }
    Ok(installed)
}

/// Whether every file the binary embeds is in `dir` with the same bytes.
fn intact(dir: &Path) -> bool {
    fn same(embedded: &Dir, on_disk: &Path) -> bool {
        embedded.entries().iter().all(|entry| {
            let Some(name) = entry.path().file_name() else { return false };
            match entry {
                DirEntry::Dir(d) if is_cache(d.path()) => true,
                DirEntry::Dir(d) => same(d, &on_disk.join(name)),
                DirEntry::File(f) => std::fs::read(on_disk.join(name)).is_ok_and(|b| b == f.contents()),
            }
        })
    }
    same(&PYTHON, &dir.join("python"))
        && std::fs::read(dir.join("torchtpu-0.2.0.tsv")).is_ok_and(|b| b == REGISTRY.as_bytes())
        && std::fs::read(dir.join("torchtpu-0.2.0.autocast.txt")).is_ok_and(|b| b == AUTOCAST.as_bytes())
}

fn write_dir(dir: &Dir, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in dir.entries() {
        let name = entry.path().file_name().context("embedded entry without a name")?;
        match entry {
            DirEntry::Dir(d) if is_cache(d.path()) => {}
            DirEntry::Dir(d) => write_dir(d, &to.join(name))?,
            DirEntry::File(f) => std::fs::write(to.join(name), f.contents())?,
        }
    }
    Ok(())
}

/// Bytecode caches a developer's checkout may hold are not part of the emulator.
fn is_cache(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "__pycache__")
}

fn content_hash() -> u64 {
    fn walk(dir: &Dir, h: &mut std::collections::hash_map::DefaultHasher) {
        for entry in dir.entries() {
            match entry {
                DirEntry::Dir(d) if is_cache(d.path()) => {}
                DirEntry::Dir(d) => walk(d, h),
                DirEntry::File(f) => {
                    f.path().hash(h);
                    f.contents().hash(h);
                }
            }
        }
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    walk(&PYTHON, &mut h);
    REGISTRY.hash(&mut h);
    AUTOCAST.hash(&mut h);
    h.finish()
}
