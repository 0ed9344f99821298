//! The Python wheel as a new user gets it: `pip install` into a fresh virtualenv, then the
//! README's commands through the installed `xla2tpu` (and `python -m xla2tpu`) in a project
//! configured by the README's `[tool.xla2tpu]` example, and the pre-commit hooks of this
//! repository through `pre-commit try-repo`.
//!
//! Needs the built wheel (`XLA2TPU_WHEEL=path/to/xla2tpu-*.whl`) and, for the hooks, pre-commit
//! (`XLA2TPU_PRE_COMMIT=path/to/pre-commit`), for its platform tag auditwheel (`XLA2TPU_AUDITWHEEL`).
//! `scripts/test` builds the wheel, installs pre-commit and auditwheel and requires them (`XLA2TPU_REQUIRE_WHEEL=1`); without them these tests say they were skipped.
//!
//! README blocks run here are marked: `<!-- tests/wheel.rs: pyproject.toml -->` before a ```toml
//! block (written to the project's pyproject.toml) and `<!-- tests/wheel.rs: run -->` before a
//! ```sh block (run line by line; a `# exit N` comment is the status the line must end with,
//! otherwise 0; `pip install` lines install the built wheel).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "support/skip.rs"]
mod skip;

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The environment variable's path, or `None` after saying why the test is skipped (or failing
/// when CI requires it).
fn required(var: &str) -> Option<PathBuf> {
    match std::env::var_os(var).map(PathBuf::from) {
        Some(p) if p.exists() => Some(p),
        other => {
            let why = match other {
                Some(p) => format!("{var}={} does not exist", p.display()),
                None => format!("{var} is not set"),
            };
            skip::skip("XLA2TPU_REQUIRE_WHEEL", &format!("{why}; scripts/test builds the wheel and sets it"));
            None
        }
    }
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A fresh virtualenv with the wheel installed, as `pip install` gives it to a user.
struct Venv {
    dir: tempfile::TempDir,
}

impl Venv {
    fn with_wheel(wheel: &Path) -> Venv {
        let dir = tempfile::tempdir().expect("temp dir");
        let python = std::env::var("XLA2TPU_PYTHON").unwrap_or_else(|_| "python3".into());
        let out = run(Command::new(&python).args(["-m", "venv"]).arg(dir.path()));
        assert!(out.status.success(), "venv: {}", text(&out));
        let venv = Venv { dir };
        let out = run(Command::new(venv.bin("pip")).args(["install", "--quiet", "--no-index"]).arg(wheel));
        assert!(out.status.success(), "pip install {}: {}", wheel.display(), text(&out));
        venv
    }

    fn bin(&self, name: &str) -> PathBuf {
        self.dir.path().join("bin").join(name)
    }

    /// A shell in `cwd` whose PATH starts with the virtualenv, as after `source venv/bin/activate`.
    fn shell(&self, cwd: &Path, line: &str) -> Output {
        let path = format!("{}:{}", self.dir.path().join("bin").display(), std::env::var("PATH").unwrap_or_default());
        run(Command::new("bash")
            .args(["-c", line])
            .current_dir(cwd)
            .env("PATH", path)
            .env("VIRTUAL_ENV", self.dir.path())
            .env("NO_COLOR", "1"))
    }
}

/// The README's blocks marked for this test, in order: (marker, block text).
fn readme_blocks(marker: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).expect("README.md");
    let tag = format!("<!-- tests/wheel.rs: {marker} -->");
    let mut blocks = Vec::new();
    let mut rest = readme.as_str();
    while let Some(at) = rest.find(&tag) {
        rest = &rest[at + tag.len()..];
        let open = rest.find("```").expect("a code block after the marker");
        let body = &rest[open..];
        let body = &body[body.find('\n').expect("fence line") + 1..];
        let close = body.find("\n```").expect("a closed code block");
        blocks.push(body[..close + 1].to_string());
        rest = &body[close..];
    }
    blocks
}

/// A project to try the README on: a torch_xla training script, its test and vendored code.
fn sample_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let train =
        std::fs::read_to_string(manifest_dir().join("corpus/migrate/train_old_style/input.py")).expect("corpus");
    for (path, text) in [
        ("src/train.py", train.as_str()),
        (
            "tests/test_train.py",
            "import torch_xla.core.xla_model as xm\n\n\ndef test_device():\n    assert xm.xla_device() is not None\n",
        ),
        ("third_party/vendored.py", "import torch_xla\n"),
    ] {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    dir
}

#[test]
fn the_wheel_installs_and_runs_the_readme_commands() {
    let Some(wheel) = required("XLA2TPU_WHEEL") else { return };
    let venv = Venv::with_wheel(&wheel);
    let project = sample_project();
    let version = format!("xla2tpu {}\n", env!("CARGO_PKG_VERSION"));
    for line in ["xla2tpu --version", "python -m xla2tpu --version"] {
        let out = venv.shell(project.path(), line);
        assert_eq!(String::from_utf8_lossy(&out.stdout), version, "{line}: {}", text(&out));
    }
    let out = venv.shell(project.path(), "python -c 'import xla2tpu; print(xla2tpu.find_xla2tpu_bin())'");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        venv.bin("xla2tpu").display().to_string(),
        "{}",
        text(&out)
    );
    // `python -m xla2tpu` passes arguments and the exit status through.
    let out = venv.shell(project.path(), "python -m xla2tpu check --isolated src/train.py");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    let configs = readme_blocks("pyproject.toml");
    assert_eq!(configs.len(), 1, "one [tool.xla2tpu] example is tried");
    std::fs::write(project.path().join("pyproject.toml"), &configs[0]).expect("write pyproject.toml");
    let scripts = readme_blocks("run");
    assert!(scripts.len() >= 2, "the README marks its install and gate walkthroughs");
    let mut ran = 0;
    for script in &scripts {
        for line in script.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let (command, comment) = line.split_once("  #").map_or((line, ""), |(c, m)| (c.trim(), m.trim()));
            if command.starts_with("pip install") || command.starts_with("cargo ") {
                continue; // the wheel is installed above; cargo is for Rust users
            }
            let expected = comment.strip_prefix("exit ").and_then(|s| s[..1].parse::<i32>().ok()).unwrap_or(0);
            let out = venv.shell(project.path(), command);
            assert_eq!(out.status.code(), Some(expected), "README line `{line}`: {}", text(&out));
            assert!(!String::from_utf8_lossy(&out.stderr).contains("error:"), "README line `{line}`: {}", text(&out));
            ran += 1;
        }
    }
    assert!(ran >= 8, "only {ran} README commands ran");
    // What the README promises of that configuration and baseline.
    let files = venv.shell(project.path(), "xla2tpu check --show-files");
    let files = String::from_utf8_lossy(&files.stdout);
    assert!(files.contains("src/train.py") && !files.contains("third_party"), "{files}");
    assert!(project.path().join(".xla2tpu-baseline.json").is_file(), "the walkthrough writes a baseline");
    std::fs::write(project.path().join("src/new.py"), "import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
        .expect("write");
    let out = venv.shell(project.path(), "xla2tpu check --baseline .xla2tpu-baseline.json --output-format concise");
    assert_eq!(out.status.code(), Some(1), "a new file's findings fail the gate: {}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).lines().all(|l| l.starts_with("src/new.py:")), "{}", text(&out));
}

#[test]
fn the_pre_commit_hooks_run_from_this_repository() {
    let (Some(_), Some(pre_commit)) = (required("XLA2TPU_WHEEL"), required("XLA2TPU_PRE_COMMIT")) else { return };
    let repo = tempfile::tempdir().expect("temp dir");
    let cache = tempfile::tempdir().expect("temp dir");
    let git = |args: &[&str]| {
        let out = run(Command::new("git").args(args).current_dir(repo.path()));
        assert!(out.status.success(), "git {args:?}: {}", text(&out));
    };
    git(&["init", "--quiet"]);
    git(&["config", "user.email", "ci@example.invalid"]);
    git(&["config", "user.name", "CI"]);
    let train = "import torch\nimport torch_xla.core.xla_model as xm\n\n\ndef step(model, x):\n    device = xm.xla_device()\n    y = model(x.to(device))\n    xm.mark_step()\n    return y\n";
    std::fs::write(repo.path().join("train.py"), train).expect("write");
    // Not only Python: the hooks are passed every kind of file xla2tpu reads.
    std::fs::write(repo.path().join("requirements.txt"), "torch_xla[tpu]==2.5.0\nnumpy\n").expect("write");
    std::fs::write(repo.path().join("Dockerfile"), "FROM python:3.11-slim\nENV PJRT_DEVICE=TPU\n").expect("write");
    std::fs::create_dir(repo.path().join("legacy")).expect("mkdir");
    std::fs::write(repo.path().join("legacy/old.py"), "import torch_xla\n").expect("write");
    std::fs::write(repo.path().join("pyproject.toml"), "[tool.xla2tpu]\nextend-exclude = [\"legacy\"]\n")
        .expect("write");
    git(&["add", "."]);

    // try-repo installs the hooks' environment as pre-commit does for a user: `pip install .` of
    // this repository, which maturin builds. It does so on every call (a fresh store), so both
    // hooks run in one call. What is tested is the install and the hooks, not the optimiser: the
    // build shares the tests' target directory in the dev profile, so cargo reuses the
    // dependencies the tests compiled (a release build from scratch took 342 s of a 45-minute CI).
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| manifest_dir().join("target"), PathBuf::from);
    let out = run(Command::new(&pre_commit)
        .arg("try-repo")
        .arg(manifest_dir())
        .args(["--all-files", "--color", "never"])
        .current_dir(repo.path())
        .env("PRE_COMMIT_HOME", cache.path())
        .env("CARGO_TARGET_DIR", &target)
        .env("MATURIN_PEP517_ARGS", "--profile dev"));
    let log = text(&out);
    assert_eq!(out.status.code(), Some(1), "{log}");
    let hook = |name: &str| log.lines().find(|l| l.starts_with(name)).unwrap_or_default().to_string();
    // try-repo runs the hooks by id: the check hook fails on the findings…
    assert!(
        hook("xla2tpu check").ends_with("Failed") && log.contains("train.py:8:5") && log.contains("TPU110"),
        "{log}"
    );
    assert!(!log.contains("legacy/old.py"), "--force-exclude keeps the configured excludes: {log}");
    assert!(log.contains("requirements.txt:1:1") && log.contains("Dockerfile:2:5"), "{log}");
    // …and the migrate hook fixes them, failing because it changed a file.
    assert!(hook("xla2tpu migrate").ends_with("Failed") && log.contains("files were modified by this hook"), "{log}");
    let migrated = std::fs::read_to_string(repo.path().join("train.py")).expect("read");
    assert!(migrated.contains("device = torch.device(\"tpu") && !migrated.contains("xm"), "{migrated}");
    assert_eq!(std::fs::read_to_string(repo.path().join("legacy/old.py")).expect("read"), "import torch_xla\n");
    let requirements = std::fs::read_to_string(repo.path().join("requirements.txt")).expect("read");
    assert_eq!(requirements, "torch-tpu==0.2.0\nnumpy\n");
    let dockerfile = std::fs::read_to_string(repo.path().join("Dockerfile")).expect("read");
    assert!(!dockerfile.contains("PJRT_DEVICE"), "{dockerfile}");
}

/// The wheel installs on any Linux x86_64 with glibc >= 2.17 (issue 42): its tag says
/// manylinux2014, `auditwheel show` (`XLA2TPU_AUDITWHEEL`) agrees from the binary's symbol
/// versions, and the README names that file.
#[test]
fn the_wheel_is_manylinux2014_and_the_readme_names_it() {
    let (Some(wheel), Some(auditwheel)) = (required("XLA2TPU_WHEEL"), required("XLA2TPU_AUDITWHEEL")) else { return };
    let name = wheel.file_name().expect("file name").to_string_lossy().into_owned();
    assert!(name.contains("manylinux_2_17_x86_64") && name.contains("manylinux2014_x86_64"), "{name}");
    let out = run(Command::new(&auditwheel).arg("show").arg(&wheel));
    let shown = String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(out.status.success(), "auditwheel show: {}", text(&out));
    assert!(shown.contains("consistent with the following platform tag: \"manylinux_2_17_x86_64\""), "{shown}");
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).expect("README.md");
    assert!(readme.contains(&name), "the README's install line names another file than {name}");
}

/// What the README tells users to install from exists: xla2tpu is on no package index and has no
/// release tag, so no example runs a bare `pip install xla2tpu` or pins a `rev:` tag that is not
/// in this repository.
#[test]
fn the_readme_installs_only_from_what_exists() {
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).expect("README.md");
    let tags = run(Command::new("git").args(["tag", "--list"]).current_dir(manifest_dir()));
    let tags = String::from_utf8_lossy(&tags.stdout).into_owned();
    for line in readme.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(at) = words.windows(3).position(|w| w[..2] == ["pip", "install"] && w[2] == "xla2tpu") {
            panic!("README: `{}` installs from an index xla2tpu is not on", words[at..].join(" "));
        }
        if let Some(rev) = line.trim().strip_prefix("rev:").map(|r| r.split_whitespace().next().unwrap_or("")) {
            let is_tag = rev.starts_with('v') && rev[1..].starts_with(|c: char| c.is_ascii_digit());
            assert!(
                !is_tag || tags.lines().any(|t| t == rev),
                "README pins `rev: {rev}`, a tag this repository does not have"
            );
        }
    }
}
