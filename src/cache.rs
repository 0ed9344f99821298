//! The user cache directory xla2tpu keeps downloads and the unpacked emulator in.

use std::path::PathBuf;

use anyhow::Context;

/// `$XLA2TPU_CACHE_DIR`, else the platform cache directory's `xla2tpu/`.
pub fn root() -> anyhow::Result<PathBuf> {
    match std::env::var_os("XLA2TPU_CACHE_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => Ok(dirs::cache_dir().context("no user cache directory; set XLA2TPU_CACHE_DIR")?.join("xla2tpu")),
    }
}
