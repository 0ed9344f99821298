//! Which Python will run the program, and whether its torch can host the
//! emulator (TorchTPU 0.2.0 supports torch 2.11–2.15).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::bail;

/// The oldest torch TorchTPU 0.2.0 (and the emulator) supports.
pub const MIN_TORCH: (u32, u32) = (2, 11);
/// The newest torch TorchTPU 0.2.0 ships glue for.
pub const MAX_TORCH: (u32, u32) = (2, 15);

/// The interpreter behind a command line: `python3 train.py` is itself; a
/// console script such as `torchrun` names its interpreter in the shebang.
pub fn interpreter_of(program: &str) -> Option<PathBuf> {
    let path = which(program)?;
    if looks_like_python(&path) {
        return Some(path);
    }
    let head = std::fs::read(&path).ok()?;
    let first = head.split(|b| *b == b'\n').next()?;
    let shebang = std::str::from_utf8(first).ok()?.strip_prefix("#!")?.trim();
    let mut words = shebang.split_whitespace();
    let interpreter = words.next()?;
    if interpreter.ends_with("/env") {
        // `#!/usr/bin/env python3`
        return words.find(|w| !w.starts_with('-')).and_then(which);
    }
    let interpreter = PathBuf::from(interpreter);
    looks_like_python(&interpreter).then_some(interpreter)
}

fn looks_like_python(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("python"))
}

/// `program` as the OS would find it: a path as given, else the first match on `PATH`.
pub fn which(program: &str) -> Option<PathBuf> {
    if program.contains(std::path::MAIN_SEPARATOR) {
        let p = PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(program)).find(|p| p.is_file())
}

/// Prints torch's version from its package metadata: importing torch only to ask would start
/// torch a second time in every run (2-3 s of CPU). A torch without metadata (a source tree on
/// `PYTHONPATH`) is imported and asked; no torch at all fails that import.
const TORCH_VERSION: &str = "\
try:
    from importlib.metadata import version
    print(version('torch'))
except Exception:
    import torch
    print(torch.__version__)
";

/// torch's version in `python`, or an error a user can act on.
pub fn torch_version(python: &Path) -> anyhow::Result<(u32, u32, String)> {
    // Autoload off: if torch is imported, only the version is wanted, not its backends.
    let out = Command::new(python).args(["-c", TORCH_VERSION]).env("TORCH_DEVICE_BACKEND_AUTOLOAD", "0").output();
    let out = match out {
        Ok(out) => out,
        Err(e) => bail!("cannot run {}: {e}", python.display()),
    };
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("No module named 'torch'") {
            bail!(
                "{} has no torch: install torch {}.{}–{}.{} (TorchTPU 0.2.0's range), e.g. pip install 'torch>=2.11,<2.16'",
                python.display(),
                MIN_TORCH.0,
                MIN_TORCH.1,
                MAX_TORCH.0,
                MAX_TORCH.1
            );
        }
        bail!("{} could not import torch:\n{}", python.display(), stderr.trim_end());
    }
    let full = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let mut parts = full.split(['.', '+']).map(|p| p.parse::<u32>().ok());
    let (Some(Some(major)), Some(Some(minor))) = (parts.next(), parts.next()) else {
        bail!("{} reports an unreadable torch version `{full}`", python.display());
    };
    if (major, minor) < MIN_TORCH {
        bail!(
            "{} has torch {full}; TorchTPU 0.2.0 (and its emulator) need torch >= {}.{}: pip install 'torch>=2.11,<2.16'",
            python.display(),
            MIN_TORCH.0,
            MIN_TORCH.1
        );
    }
    Ok((major, minor, full))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs_name_the_interpreter() {
        let dir = tempfile::tempdir().unwrap();
        let direct = dir.path().join("torchrun");
        std::fs::write(&direct, "#!/opt/venv/bin/python3.11\nimport sys\n").unwrap();
        // Not on disk, but the shebang says which interpreter it is.
        assert_eq!(interpreter_of(direct.to_str().unwrap()), Some(PathBuf::from("/opt/venv/bin/python3.11")));
        let shell = dir.path().join("run.sh");
        std::fs::write(&shell, "#!/bin/sh\necho\n").unwrap();
        assert_eq!(interpreter_of(shell.to_str().unwrap()), None);
    }

    /// The version comes from the package's metadata; torch itself is not imported for it.
    #[test]
    fn the_torch_version_is_read_without_importing_torch() {
        let Some(python3) = which("python3") else { return };
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("site");
        std::fs::create_dir_all(site.join("torch")).unwrap();
        std::fs::write(site.join("torch/__init__.py"), "raise SystemExit('torch was imported')\n").unwrap();
        std::fs::create_dir_all(site.join("torch-2.13.1.dist-info")).unwrap();
        std::fs::write(
            site.join("torch-2.13.1.dist-info/METADATA"),
            "Metadata-Version: 2.1\nName: torch\nVersion: 2.13.1\n",
        )
        .unwrap();
        let python = dir.path().join("python3");
        let wrapper = format!("#!/bin/sh\nPYTHONPATH={} exec {} \"$@\"\n", site.display(), python3.display());
        std::fs::write(&python, wrapper).unwrap();
        let mut perms = std::fs::metadata(&python).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&python, perms).unwrap();
        assert_eq!(torch_version(&python).unwrap(), (2, 13, "2.13.1".to_string()));
    }
}
