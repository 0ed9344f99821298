//! Bad input is normal input: each case gets a message naming the file, the run goes on with
//! the other files, nothing is half-written, and the exit code says what happened (README,
//! "Exit codes"). Every case runs next to a good file, which must still be checked or migrated.

use std::fs;
use std::path::PathBuf;
use std::process::Output;

use assert_cmd::Command;

#[path = "support/skip.rs"]
mod skip;

const GOOD: &str = "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\n";

struct Tree(tempfile::TempDir);

impl Tree {
    /// A directory holding `good.py` (one fixable finding) and whatever the case adds.
    fn new() -> Tree {
        let tree = Tree(tempfile::tempdir().expect("temp dir"));
        tree.write("good.py", GOOD.as_bytes());
        tree
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path(name);
        fs::write(&path, bytes).expect("write");
        path
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::cargo_bin("xla2tpu")
            .expect("binary")
            .current_dir(self.0.path())
            .args(args)
            .timeout(std::time::Duration::from_secs(300))
            .output()
            .expect("runs")
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The run went on: the good file was checked (its finding is in the output).
fn good_was_checked(out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("good.py:3:1: TPU110"), "good.py not checked:\n{stdout}\n{}", stderr(out));
}

#[test]
fn syntax_errors_and_python_2_are_findings_a_gate_can_decide_on() {
    let t = Tree::new();
    t.write("py2.py", b"import torch_xla\nprint \"hello\"\nexec \"x = 1\"\n");
    t.write("broken.py", b"def f(:\n    pass\n  # xla\n");
    // No rule can match this one, so by default it is not even parsed (TPU002's help says why).
    t.write("plain.py", b"print \"hello\"\n");
    let out = t.run(&["check", "--output-format", "concise", "."]);
    assert_eq!(out.status.code(), Some(1), "findings, not errors: {}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("py2.py:2:") && stdout.contains("TPU002"), "{stdout}");
    assert!(stdout.contains("broken.py:1:") && stdout.contains("is it Python 2?"), "{stdout}");
    assert!(!stdout.contains("plain.py"), "{stdout}");
    good_was_checked(&out);
    // Naming TPU002 parses every file, as `--select TPU002` alone does.
    for args in [&["--extend-select", "TPU002"][..], &["--select", "TPU002"]] {
        let out = t.run(&[&["check", "--output-format", "concise"][..], args, &["."]].concat());
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("plain.py:1:7: TPU002"), "{args:?}: {stdout}");
        assert!(stdout.contains("py2.py:2:") && stdout.contains("broken.py:1:"), "{args:?}: {stdout}");
    }
    // `migrate` cannot rewrite them: an error naming each, exit 2, the good file still migrated.
    let out = t.run(&["migrate", "."]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("py2.py:2:") && err.contains("syntax error, file skipped"), "{err}");
    assert!(!err.contains("plain.py"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("+++ b/good.py"), "{err}");
}

#[test]
fn undecodable_and_binary_files_are_named_and_skipped() {
    let t = Tree::new();
    t.write("latin1.py", b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n");
    t.write("blob.py", &[0x7f, b'E', b'L', b'F', 0, 0, 1, 2, 3]);
    let out = t.run(&["check", "--output-format", "concise", "."]);
    assert_eq!(out.status.code(), Some(2), "unreadable files are errors");
    let err = stderr(&out);
    assert!(err.contains("latin1.py: not valid UTF-8 (byte 37)"), "{err}");
    assert!(err.contains("blob.py: binary file"), "{err}");
    good_was_checked(&out);
}

#[test]
fn huge_files_long_lines_and_deep_nesting_are_checked_without_crashing() {
    let t = Tree::new();
    // 50 MB of ordinary code.
    let block = "def f(x):\n    return [i * x for i in range(10) if i % 2]\n\n";
    t.write("big.py", block.repeat(50 * 1024 * 1024 / block.len() + 1).as_bytes());
    // A 1 MB line.
    t.write("line.py", format!("x = [{}]\n", "1, ".repeat(350_000)).as_bytes());
    // 10,000 levels of every kind of nesting, and chains whose trees are 20,000 deep, some in
    // torch_xla code so the full analysis (semantic model, checker, fixes) walks them.
    let deep = |open: &str, inner: &str, close: &str, n: usize| format!("{}{inner}{}", open.repeat(n), close.repeat(n));
    let cases = [
        ("parens.py", format!("x = {}\n", deep("(", "1", ")", 10_000))),
        ("lists.py", format!("import torch_xla\nx = {}\n", deep("[", "torch_xla.sync()", "]", 10_000))),
        (
            "calls.py",
            format!("import torch_xla.core.xla_model as xm\nx = {}\n", deep("xm.mark_step(", "", ")", 10_000)),
        ),
        ("unary.py", format!("x = {}1\n", "-".repeat(10_000))),
        ("binop.py", format!("import torch_xla\nx = torch_xla.sync(){}\n", " + 1".repeat(20_000))),
        ("attrs.py", format!("import torch_xla.core.xla_model as xm\nx = xm.xla_device(){}\n", ".b".repeat(20_000))),
        (
            "blocks.py",
            (0..100).map(|i| format!("{}if x:\n", "    ".repeat(i))).collect::<String>()
                + &"    ".repeat(100)
                + "pass\n",
        ),
    ];
    for (name, text) in &cases {
        t.write(name, text.as_bytes());
    }
    let out = t.run(&["check", "--output-format", "concise", "."]);
    let err = stderr(&out);
    assert!(out.status.code().is_some(), "killed by a signal: {err}");
    assert!(err.contains("10 files checked"), "{err}");
    good_was_checked(&out);
    let out = t.run(&["migrate", "."]);
    let err = stderr(&out);
    assert!(out.status.code().is_some_and(|c| c <= 2), "{err}");
    assert!(err.contains("10 files scanned"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("+++ b/attrs.py"), "the deep chain is migrated too");
}

#[test]
fn symlink_loops_missing_paths_and_special_files_do_not_stop_the_run() {
    let t = Tree::new();
    std::os::unix::fs::symlink(".", t.path("loop")).expect("symlink");
    std::os::unix::fs::symlink("b.py", t.path("a.py")).expect("symlink");
    std::os::unix::fs::symlink("a.py", t.path("b.py")).expect("symlink");
    std::os::unix::fs::symlink("gone.py", t.path("dangling.py")).expect("symlink");
    let fifo = t.path("pipe.py");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
    // Walking the directory meets them all; naming them fails each with its own message.
    let out = t.run(&["check", "--output-format", "concise", "."]);
    assert_eq!(out.status.code(), Some(1), "walked links and pipes are not source: {}", stderr(&out));
    good_was_checked(&out);
    let out =
        t.run(&["check", "--output-format", "concise", "a.py", "dangling.py", "pipe.py", "missing.py", "good.py"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    for (name, why) in [
        ("a.py", "Too many levels of symbolic links"),
        ("dangling.py", "No such file"),
        ("pipe.py", "not a regular file"),
        ("missing.py", "No such file"),
    ] {
        assert!(err.lines().any(|l| l.contains(name) && l.contains(why)), "{name}: {why}\n{err}");
    }
    good_was_checked(&out);
}

#[test]
fn unreadable_files_and_directories_are_named() {
    use std::os::unix::fs::PermissionsExt;
    let t = Tree::new();
    let secret = t.write("secret.py", GOOD.as_bytes());
    fs::create_dir(t.path("closed")).expect("mkdir");
    t.write("closed/inner.py", GOOD.as_bytes());
    // Permission bits do not stop root: as root (CI), the binary runs as `nobody`, from a copy
    // inside the tree (the checkout itself may not be reachable for `nobody`).
    let root = std::process::Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout == b"0\n");
    let bin = assert_cmd::cargo::cargo_bin("xla2tpu");
    let mut cmd = if root {
        let copy = t.path("xla2tpu-bin");
        fs::copy(&bin, &copy).expect("copy the binary");
        for p in [t.0.path().to_path_buf(), copy.clone(), t.path("good.py")] {
            let mode = if p.is_dir() || p == copy { 0o755 } else { 0o644 };
            fs::set_permissions(&p, fs::Permissions::from_mode(mode)).expect("chmod");
        }
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(copy);
        c
    } else {
        std::process::Command::new(bin)
    };
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o000)).expect("chmod");
    fs::set_permissions(t.path("closed"), fs::Permissions::from_mode(0o000)).expect("chmod");
    let out = cmd
        .current_dir(t.0.path())
        .args(["check", "--isolated", "--output-format", "concise", "good.py", "secret.py", "closed"])
        .output()
        .expect("runs");
    fs::set_permissions(t.path("closed"), fs::Permissions::from_mode(0o755)).expect("chmod back");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("secret.py: cannot read: Permission denied"), "{err}");
    assert!(err.lines().any(|l| l.contains("closed") && l.contains("Permission denied")), "{err}");
    good_was_checked(&out);
}

#[test]
fn an_edit_made_during_the_run_is_never_overwritten() {
    let t = Tree::new();
    // Debug builds append a line to this file between reading it and writing it back.
    let text = format!("{GOOD}{}\n", xla2tpu::migrate::CHANGE_MARKER);
    let edited = t.write("edited.py", text.as_bytes());
    let out = t.run(&["migrate", "--write", "."]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("edited.py: changed while xla2tpu was running; not written"), "{err}");
    let now = fs::read_to_string(&edited).expect("read");
    assert!(now.starts_with(&text) && now.contains("edited = True"), "the user's edit survives:\n{now}");
    assert!(!fs::read_to_string(t.path("good.py")).expect("read").contains("mark_step"), "good.py written");
}

/// No space left: writes fail with EFBIG under a file-size limit (the shell ignores SIGXFSZ,
/// and so does the binary it execs). The original stays whole and no temporary file is left.
#[test]
fn a_full_disk_leaves_every_file_whole() {
    let t = Tree::new();
    let big: String = (0..2_000).map(|i| format!("x{i} = xm.xla_device()\n")).collect();
    let original = format!("{GOOD}{big}");
    t.write("big.py", original.as_bytes());
    let bin = assert_cmd::cargo::cargo_bin("xla2tpu");
    // `ulimit -f` counts 1,024-byte blocks in bash: good.py's rewrite fits, big.py's does not.
    let out = std::process::Command::new("bash")
        .current_dir(t.0.path())
        .args(["-c", &format!("trap '' XFSZ; ulimit -f 8; exec {} migrate --write .", bin.display())])
        .output()
        .expect("bash");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("big.py") && err.contains("File too large"), "{err}");
    assert_eq!(fs::read_to_string(t.path("big.py")).expect("read"), original, "untouched");
    assert!(!fs::read_to_string(t.path("good.py")).expect("read").contains("mark_step"), "good.py written");
    let leftovers: Vec<PathBuf> = fs::read_dir(t.0.path())
        .expect("ls")
        .map(|e| e.expect("entry").path())
        .filter(|p| !["good.py", "big.py"].iter().any(|n| p.ends_with(n)))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left behind: {leftovers:?}");
}

/// Requirement strings the PEP 508 library panics on, in `setup.py`, and notebook cells that do
/// not parse and hold a blank line: each file is reported as an internal error, the gate ends
/// (it once waited forever for the lost worker's result), and `migrate` still migrates, writes
/// and summarises the rest (it once exited 101 with part of the tree written and no summary).
#[test]
fn a_file_that_panics_any_pass_never_hangs_the_gate_or_aborts_the_run() {
    let t = Tree::new();
    for (i, bad) in ["torch.)", "a-)", "numpy_)", "a.[x]"].iter().enumerate() {
        let setup = format!("import torch_xla\nfrom setuptools import setup\nsetup(install_requires=[\"{bad}\"])\n");
        fs::create_dir(t.path(&format!("pkg{i}"))).expect("mkdir");
        t.write(&format!("pkg{i}/setup.py"), setup.as_bytes());
    }
    let cell = |source: &str| {
        format!(
            r#"{{"cell_type": "code", "execution_count": null, "metadata": {{}}, "outputs": [], "source": {}}}"#,
            serde_json::to_string(source).expect("json")
        )
    };
    let notebook = format!(
        r#"{{"cells": [{}, {}, {}], "metadata": {{}}, "nbformat": 4, "nbformat_minor": 5}}"#,
        cell("print \"python 2\"\n\nprint \"again\"\n"),
        cell("%%writefile train.py\nimport torch_xla\n\ndef f():\n    return 1\n"),
        cell("import torch_xla.core.xla_model as xm\nxm.mark_step()\n"),
    );
    t.write("nb.ipynb", notebook.as_bytes());
    // Debug builds panic on these as soon as they are read, outside every pass's own guard.
    let marker = xla2tpu::migrate::PANIC_ON_READ_MARKER;
    t.write("requirements.txt", format!("torch_xla[tpu]  # {marker}\n").as_bytes());
    t.write("lib.py", format!("import torch_xla  # {marker}\n").as_bytes());
    let run = |args: &[&str]| {
        Command::cargo_bin("xla2tpu")
            .expect("binary")
            .current_dir(t.0.path())
            .args(args)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .expect("runs")
    };
    let out = run(&["check", "--output-format", "concise", "."]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "the gate hung or was killed: {err}");
    for name in ["requirements.txt", "lib.py"] {
        assert!(err.contains(&format!("{name}: internal error, file left unchanged")), "{name}: {err}");
    }
    good_was_checked(&out);
    // The same through the ordered printer (one file argument each) and the whole-document one.
    let out = run(&["check", "--output-format", "json", "pkg0/setup.py", "good.py"]);
    assert!(out.status.code().is_some(), "the gate hung: {}", stderr(&out));
    let out = run(&["migrate", "--write", "."]);
    let err = stderr(&out);
    assert!(matches!(out.status.code(), Some(0..=2)), "exit {:?}: {err}", out.status.code());
    assert!(err.contains("files scanned") && err.contains("2 files skipped with errors"), "no summary: {err}");
    assert!(!fs::read_to_string(t.path("good.py")).expect("read").contains("mark_step"), "good.py written: {err}");
    let nb = fs::read_to_string(t.path("nb.ipynb")).expect("read");
    assert!(
        nb.contains("print \\\"python 2\\\"") && !nb.contains("mark_step"),
        "the notebook's good cell migrated: {nb}"
    );
}

fn is_root() -> bool {
    std::process::Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout == b"0\n")
}

/// Entries of the tree other than those named: what a run left behind.
fn leftovers(t: &Tree, keep: &[&str]) -> Vec<PathBuf> {
    fs::read_dir(t.0.path())
        .expect("ls")
        .map(|e| e.expect("entry").path())
        .filter(|p| !keep.iter().any(|n| p.ends_with(n)))
        .collect()
}

/// Outputs are written into what is there: a FIFO or device keeps being one, a symlink keeps
/// pointing where it did (as root, a rename once replaced `/dev/null` or `/dev/stdout` itself).
#[test]
fn outputs_that_are_not_regular_files_are_written_into_not_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let t = Tree::new();
    let fifo = t.path("fifo.md");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read_to_string(fifo).expect("read the fifo"))
    };
    let out = t.run(&["migrate", "--report", "fifo.md", "good.py"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Checked before waiting for the reader, which a replaced FIFO would leave blocked.
    assert!(fs::symlink_metadata(&fifo).expect("still there").file_type().is_fifo(), "the FIFO was replaced");
    assert!(reader.join().expect("reader").starts_with("# Migration report"));

    // A descriptor by name: the report goes to the process's own standard output.
    std::os::unix::fs::symlink("/proc/self/fd/1", t.path("stdout.md")).expect("symlink");
    // A symlink to a regular file (an earlier report: nothing else may be replaced, see
    // tests/cli_gate.rs): the file is replaced, the link stays.
    t.write("real.md", b"# Migration report\n\nxla2tpu 0.1.0 read 1 file\n");
    std::os::unix::fs::symlink("real.md", t.path("link.md")).expect("symlink");
    for (name, into_stdout) in [("stdout.md", true), ("link.md", false)] {
        let out = t.run(&["migrate", "--report", name, "good.py"]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        assert!(fs::symlink_metadata(t.path(name)).expect("there").file_type().is_symlink(), "{name} replaced");
        assert_eq!(String::from_utf8_lossy(&out.stdout).contains("# Migration report"), into_stdout, "{name}");
    }
    assert!(fs::read_to_string(t.path("real.md")).expect("read").starts_with("# Migration report"));

    // A character device (as root, where a rename over one succeeds): a copy of /dev/null.
    if is_root() {
        let status = std::process::Command::new("mknod").arg(t.path("null")).args(["c", "1", "3"]).status();
        assert!(status.expect("mknod").success());
        let out = t.run(&["check", "--write-baseline", "null", "good.py"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(fs::symlink_metadata(t.path("null")).expect("there").file_type().is_char_device(), "replaced");
    } else {
        skip::skip("XLA2TPU_REQUIRE_ROOT", "not root: the character-device case needs root (CI runs as root)");
    }
}

/// As root (Docker CI on a bind-mounted checkout), a rewritten file keeps its owner, group and
/// mode; a hard-linked one is refused (a rename would split the links, a write in place would
/// change every copy), saying so.
#[test]
fn write_keeps_owner_and_mode_and_refuses_hard_links() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let t = Tree::new();
    let owned = t.write("owned.py", GOOD.as_bytes());
    fs::set_permissions(&owned, fs::Permissions::from_mode(0o640)).expect("chmod");
    let root = is_root();
    if root {
        std::os::unix::fs::chown(&owned, Some(1234), Some(2345)).expect("chown");
    } else {
        skip::skip("XLA2TPU_REQUIRE_ROOT", "not root: the owner cases need root (CI runs as root)");
    }
    let before = fs::metadata(&owned).expect("stat");
    let linked = t.write("linked.py", GOOD.as_bytes());
    fs::hard_link(&linked, t.path("linked-copy.py")).expect("link");
    let out = t.run(&["migrate", "--write", "owned.py", "linked.py"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("linked.py: has 2 hard links; not written"), "{err}");
    let after = fs::metadata(&owned).expect("stat");
    assert!(!fs::read_to_string(&owned).expect("read").contains("mark_step"), "owned.py written: {err}");
    assert_eq!((after.uid(), after.gid(), after.mode()), (before.uid(), before.gid(), before.mode()));
    assert_eq!(fs::read_to_string(&linked).expect("read"), GOOD);
    assert_eq!(fs::metadata(&linked).expect("stat").nlink(), 2);

    // The helper module a run creates beside two host-owned sources is theirs too, not root's.
    fs::create_dir(t.path("proj")).expect("mkdir");
    for name in ["a.py", "b.py"] {
        let path = t.write(&format!("proj/{name}"), SAVES.as_bytes());
        if root {
            std::os::unix::fs::chown(&path, Some(1234), Some(2345)).expect("chown");
        }
    }
    let out = t.run(&["migrate", "--unsafe-fixes", "--write", "proj"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let module = fs::metadata(t.path("proj/_torchtpu.py")).expect("the helper module was written");
    let source = fs::metadata(t.path("proj/a.py")).expect("stat");
    assert_eq!((module.uid(), module.gid()), (source.uid(), source.gid()), "the helper module's owner");
    assert_eq!(module.mode() & 0o777, 0o644);
}

/// A source whose migration needs a helper (`xm.save` → `torchtpu_save`, an unsafe fix).
const SAVES: &str =
    "import torch\nimport torch_xla.core.xla_model as xm\n\nxm.save({\"w\": torch.ones(2)}, \"w.pt\")\n";

/// Files that share a helper module are finished after every worker is done, in one more step:
/// a panic there is one file's internal error, as in any other pass; the others are written
/// with the module, and the run ends with its summary.
#[test]
fn a_panic_while_files_share_a_helper_module_is_one_files_error() {
    let t = Tree::new();
    fs::create_dir(t.path("proj")).expect("mkdir");
    t.write("proj/a.py", SAVES.as_bytes());
    let marker = xla2tpu::migrate::PANIC_ON_FINISH_MARKER;
    let bad = format!("{SAVES}NOTE = \"{marker}\"\n");
    t.write("proj/b.py", bad.as_bytes());
    let out = t.run(&["migrate", "--unsafe-fixes", "--write", "proj"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("b.py: internal error, file left unchanged"), "{err}");
    assert!(err.contains("1 file skipped with errors"), "no summary: {err}");
    assert_eq!(fs::read_to_string(t.path("proj/b.py")).expect("read"), bad);
    let a = fs::read_to_string(t.path("proj/a.py")).expect("read");
    assert!(a.contains("from _torchtpu import torchtpu_save"), "{a}");
    assert!(fs::read_to_string(t.path("proj/_torchtpu.py")).expect("the module").contains("def torchtpu_save"));
}

/// An edit saved, or the file deleted, while the new content is being written and synced (the
/// slow step) is seen just before the rename: the edit survives, the file stays deleted.
#[test]
fn an_edit_or_a_deletion_during_the_sync_is_never_lost() {
    let t = Tree::new();
    let edited_text = format!("{GOOD}{}\n", xla2tpu::migrate::CHANGE_DURING_SYNC_MARKER);
    let edited = t.write("edited.py", edited_text.as_bytes());
    let deleted = t.write("deleted.py", format!("{GOOD}{}\n", xla2tpu::migrate::DELETE_DURING_SYNC_MARKER).as_bytes());
    let out = t.run(&["migrate", "--write", "."]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("edited.py: changed while xla2tpu was running; not written"), "{err}");
    assert!(err.contains("deleted.py: deleted while xla2tpu was running; not written"), "{err}");
    let now = fs::read_to_string(&edited).expect("read");
    assert!(now.starts_with(&edited_text) && now.contains("edited = True"), "the user's edit survives:\n{now}");
    assert!(!deleted.exists(), "the deleted file came back");
    assert!(!fs::read_to_string(t.path("good.py")).expect("read").contains("mark_step"), "good.py written");
    assert!(leftovers(&t, &["good.py", "edited.py"]).is_empty(), "{:?}", leftovers(&t, &["good.py", "edited.py"]));
}

/// A read-only (0444) file is left untouched, as root too: a rename needs only the directory.
#[test]
fn read_only_files_are_left_untouched() {
    use std::os::unix::fs::PermissionsExt;
    let t = Tree::new();
    let locked = t.write("locked.py", GOOD.as_bytes());
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o444)).expect("chmod");
    let out = t.run(&["migrate", "--write", "."]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("locked.py: read-only file; not written"), "{}", stderr(&out));
    assert_eq!(fs::read_to_string(&locked).expect("read"), GOOD);
    assert!(!fs::read_to_string(t.path("good.py")).expect("read").contains("mark_step"), "good.py written");
}

/// `kill -9` while a file is being rewritten: the file is whole and no temporary file is left
/// (the new content is written in an unnamed file until the rename).
#[test]
fn a_kill_during_write_leaves_no_temporary_file() {
    let t = Tree::new();
    let text = format!("{GOOD}{}\n", xla2tpu::migrate::KILL_DURING_WRITE_MARKER);
    let victim = t.write("victim.py", text.as_bytes());
    let out = t.run(&["migrate", "--write", "victim.py"]);
    assert_eq!(out.status.code(), None, "killed: {}", stderr(&out));
    assert_eq!(fs::read_to_string(&victim).expect("read"), text, "whole");
    assert!(leftovers(&t, &["good.py", "victim.py"]).is_empty(), "{:?}", leftovers(&t, &["good.py", "victim.py"]));
}

/// Classic Mac line ends (a lone CR): Python ends lines there too, and so does the migration;
/// the inserted import once landed after the whole file, below its use (NameError, exit 0).
#[test]
fn cr_only_line_ends_are_lines() {
    let t = Tree::new();
    let cr = t.write("cr.py", b"import torch_xla.core.xla_model as xm\rdevice = xm.xla_device()\rprint(device)\r");
    let out = t.run(&["check", "--output-format", "concise", "cr.py"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("cr.py:2:10: TPU101"), "{}", stderr(&out));
    let out = t.run(&["migrate", "--write", "--unsafe-fixes", "cr.py"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(fs::read(&cr).expect("read"), b"import torch\rdevice = torch.device(\"tpu:0\")\rprint(device)\r");
}

/// A file name can neither close its code span early nor inject HTML into the Markdown report
/// (rendered by a CommonMark parser here, as a code host renders it); credentials in index URLs
/// are shown as `***` in findings, code frames, baselines and reports.
#[test]
fn the_markdown_report_escapes_names_and_nothing_shows_credentials() {
    let t = Tree::new();
    let hostile = "x` <img src=x onerror=alert(1)> [a](javascript:alert(2)) `.py";
    t.write(hostile, b"import torch_xla.debug.metrics as met\nprint(met.metrics_report())\n");
    t.write("y``.py", b"import torch_xla.debug.metrics as met\nprint(met.metrics_report())\n");
    t.write(
        "requirements.txt",
        b"-f https://me:s3cr3t@storage.googleapis.com/libtpu-releases/index.html\ntorch_xla[tpu] @ https://me:s3cr3t@example.com/torch_xla.whl\n",
    );
    let out = t.run(&["check", "--output-format", "concise", "."]);
    let shown = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(shown.contains("`-f https://***@storage.googleapis.com/libtpu-releases/index.html`"), "{shown}");
    assert!(!shown.contains("s3cr3t"), "{shown}");
    // The default output's code frames, and a baseline (which is committed), mask them too.
    let out = t.run(&["check", "--write-baseline", "base.json", "."]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let baseline = fs::read_to_string(t.path("base.json")).expect("baseline");
    assert!(baseline.contains("-f https://***@storage.googleapis.com") && !baseline.contains("s3cr3t"), "{baseline}");
    let out = t.run(&["check", "--baseline", "base.json", "."]);
    assert_eq!(out.status.code(), Some(0), "the baseline matches its findings: {}", stderr(&out));
    let out = t.run(&["check", "--output-format", "full", "--color", "never", "requirements.txt"]);
    let shown = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(shown.contains("-f https://*********@storage.googleapis.com"), "{shown}");
    assert!(!shown.contains("s3cr3t"), "{shown}");
    for report in ["r.md", "r.json"] {
        let out = t.run(&["migrate", "--report", report, "."]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let written = fs::read_to_string(t.path(report)).expect("report");
        assert!(!written.contains("s3cr3t"), "{written}");
    }
    let md = fs::read_to_string(t.path("r.md")).expect("report");
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, pulldown_cmark::Parser::new_ext(&md, pulldown_cmark::Options::all()));
    assert!(!html.contains("<img") && !html.contains("<a "), "HTML in the report:\n{html}");
    // Each file's place is one code span holding its whole name.
    for name in [hostile, "y``.py"] {
        let escaped = name.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        assert!(html.contains(&format!("<code>{escaped}:2:7</code>")), "{name} not one code span:\n{html}");
    }
}

/// The limits are stated and enforced with a message naming the file: Python over 16 MiB is
/// not parsed (a 70 MB file once took 5 GB), YAML flow collections nested past 512 levels are
/// refused before the parser's quadratic scan (100,000 levels took minutes), and nothing reads
/// more than 64 MiB (standard input from /dev/zero once never ended).
#[test]
fn limits_are_stated_and_enforced() {
    let t = Tree::new();
    let huge = format!("import torch_xla\n{}", "x = 1\n".repeat((16 << 20) / 6 + 1));
    t.write("huge.py", huge.as_bytes());
    let deep = |n: usize| format!("a: {}{}\n", "[".repeat(n), "]".repeat(n));
    t.write("job.yaml", deep(100_000).as_bytes());
    t.write("environment.yml", deep(100_000).as_bytes());
    // Deep, but under the limit: the parser's own refusal, as before.
    t.write("ok.yaml", deep(500).as_bytes());
    let started = std::time::Instant::now();
    let out = t.run(&["check", "--output-format", "concise", "."]);
    let err = stderr(&out);
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "{:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("huge.py: 16.0 MiB of Python is over the 16 MiB limit for one file"), "{err}");
    for name in ["job.yaml", "environment.yml"] {
        assert!(err.contains(&format!("{name}: invalid YAML: flow collections nested more than 512 levels")), "{err}");
    }
    assert!(err.contains("ok.yaml: invalid YAML: recursion limit exceeded"), "{err}");
    good_was_checked(&out);

    let zero = fs::File::open("/dev/zero").expect("/dev/zero");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("xla2tpu"))
        .current_dir(t.0.path())
        .args(["check", "-"])
        .stdin(zero)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    let started = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().expect("kill");
            panic!("reading /dev/zero did not end");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("<stdin>: larger than 64 MiB"), "{}", stderr(&out));
}

/// A configuration, baseline or rule file that is a FIFO or a device is refused by name, never
/// read (a FIFO blocks forever, /dev/zero never ends).
#[test]
fn configurations_that_are_pipes_or_devices_are_refused() {
    let t = Tree::new();
    let mkfifo = |name: &str| {
        assert!(std::process::Command::new("mkfifo").arg(t.path(name)).status().expect("mkfifo").success());
    };
    fs::create_dir(t.path("rules")).expect("mkdir");
    mkfifo("rules/extra.yaml");
    mkfifo("baseline.json");
    for args in [
        &["check", "--config", "/dev/zero", "good.py"][..],
        &["check", "--rules", "rules", "good.py"],
        &["check", "--baseline", "baseline.json", "good.py"],
    ] {
        let out = Command::cargo_bin("xla2tpu")
            .expect("binary")
            .current_dir(t.0.path())
            .args(args)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("not a regular file"), "{args:?}: {}", stderr(&out));
    }
}

/// Installations are not source, whatever their name: `dist-packages`, a virtualenv
/// (`pyvenv.cfg`), a conda environment (`conda-meta/`) and conda's package cache (`pkgs/` with
/// `urls.txt`) are excluded by default; a `pkgs/` of one's own is not.
#[test]
fn installed_packages_are_excluded_by_default() {
    let t = Tree::new();
    for (dir, marker) in [
        ("usr/lib/python3/dist-packages/torch_xla", None),
        ("myenv/lib/python3.11/site-stuff/torch_xla", Some("myenv/pyvenv.cfg")),
        ("tpu/lib/python3.11/x/torch_xla", Some("tpu/conda-meta/history")),
        ("miniconda3/pkgs/torch_xla-2.1/lib", Some("miniconda3/pkgs/urls.txt")),
        ("pkgs/mine", None),
    ] {
        fs::create_dir_all(t.path(dir)).expect("mkdir");
        t.write(&format!("{dir}/core.py"), GOOD.as_bytes());
        if let Some(marker) = marker {
            fs::create_dir_all(t.path(marker).parent().expect("parent")).expect("mkdir");
            t.write(marker, b"");
        }
    }
    let out = t.run(&["check", "--show-files", "."]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(shown.lines().collect::<Vec<_>>(), ["good.py", "pkgs/mine/core.py"], "{}", stderr(&out));
    // `--no-ignore` (or an `exclude` of one's own) walks them all.
    let out = t.run(&["check", "--show-files", "--no-ignore", "."]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 6, "{}", stderr(&out));
}

/// The bodies of here-documents in a notebook's `%%bash` cell are data (a file written, a
/// program fed to `python -`), never edited; the commands after them still are.
#[test]
fn notebook_shell_here_documents_are_not_edited() {
    let t = Tree::new();
    let cell = "%%bash\ncat > env.sh <<'EOF'\nexport PJRT_DEVICE=TPU\n\npip install torch_xla\nEOF\ncat <<-END >> log\n\texport PJRT_DEVICE=TPU\n\tEND\nexport PJRT_DEVICE=TPU\n";
    let notebook = serde_json::json!({
        "cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": cell}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5
    });
    let nb = t.write("nb.ipynb", notebook.to_string().as_bytes());
    let out = t.run(&["migrate", "--write", "nb.ipynb"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let written: serde_json::Value = serde_json::from_slice(&fs::read(&nb).expect("read")).expect("json");
    let source = match &written["cells"][0]["source"] {
        serde_json::Value::Array(lines) => lines.iter().map(|l| l.as_str().expect("str")).collect::<String>(),
        other => other.as_str().expect("text").to_string(),
    };
    assert_eq!(source, cell.strip_suffix("export PJRT_DEVICE=TPU\n").expect("the last command"), "{}", stderr(&out));
}

/// What is not read is said, never skipped silently: a Dockerfile's here-documents, symbolic
/// links met while walking, and file names that are not UTF-8.
#[test]
fn what_is_not_read_is_said() {
    use std::os::unix::ffi::OsStrExt;
    let t = Tree::new();
    t.write("Dockerfile", b"FROM python:3.11\nRUN <<EOF\npip install torch_xla\nEOF\nENV PJRT_DEVICE=TPU\n");
    fs::create_dir(t.path("real")).expect("mkdir");
    t.write("real/train.py", GOOD.as_bytes());
    std::os::unix::fs::symlink("real", t.path("linked-dir")).expect("symlink");
    std::os::unix::fs::symlink("good.py", t.path("alias.py")).expect("symlink");
    let latin1 = t.0.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9.py"));
    fs::write(&latin1, GOOD).expect("write");
    for command in ["check", "migrate"] {
        let out = t.run(&[command, "."]);
        let err = stderr(&out);
        assert!(
            err.contains("Dockerfile:2: the here-document (`<<EOF`) of this instruction is not checked"),
            "{command}: {err}"
        );
        assert!(
            err.contains("2 symbolic links not followed (name the target to check it): alias.py, linked-dir"),
            "{command}: {err}"
        );
        assert!(err.contains("caf\u{fffd}.py: the file name is not UTF-8; skipped"), "{command}: {err}");
    }
}

/// Generated code can put thousands of findings on one long line: each finding gives its
/// location instead of a frame that would print the line again (2,000 copies of 32 KB).
#[test]
fn thousands_of_findings_on_one_generated_line_give_locations_not_the_line() {
    let t = Tree::new();
    let line = "xm.mark_step(); ".repeat(2000);
    t.write("generated.py", format!("import torch_xla.core.xla_model as xm\n{line}\n").as_bytes());
    let out = t.run(&["check", "generated.py"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // 2,001 findings: the import's frame would show line 2 as context.
    assert_eq!(stdout.matches("; the line is too long to show").count(), 2001, "every finding gives its location");
    assert!(stdout.contains("(generated.py:2:31985; the line is too long to show"), "the last one");
    assert!(!stdout.contains("xm.mark_step(); xm.mark_step(); xm.mark_step();"), "the line was printed");
    assert!(stdout.len() < 2 << 20, "{} bytes of output", stdout.len());
}

/// The 64 MiB limit holds for a file on disk (not only standard input), and both limits hold
/// for `migrate` as for `check`; too deep YAML is a warning, in a conda environment an error.
#[test]
fn limits_hold_for_files_on_disk_and_for_migrate_too() {
    let t = Tree::new();
    // Sparse: 64 MiB and a byte of zeros, without writing them.
    fs::File::create(t.path("big.py")).and_then(|f| f.set_len((64 << 20) + 1)).expect("sparse file");
    let huge = format!("import torch_xla\n{}", "x = 1\n".repeat((16 << 20) / 6 + 1));
    t.write("huge.py", huge.as_bytes());
    let deep = format!("a: {}{}\n", "[".repeat(1000), "]".repeat(1000));
    t.write("job.yaml", deep.as_bytes());
    t.write("environment.yml", deep.as_bytes());
    for command in ["check", "migrate"] {
        let out = t.run(&[command, "."]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{command}: {err}");
        assert!(
            err.contains("big.py: cannot read: larger than 64 MiB, the most xla2tpu reads of one file"),
            "{command}: {err}"
        );
        assert!(err.contains("huge.py: 16.0 MiB of Python is over the 16 MiB limit for one file"), "{command}: {err}");
        let nested = |name: &str| {
            let what = format!("{name}: invalid YAML: flow collections nested more than 512 levels");
            err.lines().find(|l| l.contains(&what)).unwrap_or_default().to_string()
        };
        assert!(nested("job.yaml").starts_with("warning: "), "{command}: {err}");
        assert!(nested("environment.yml").starts_with("error: "), "{command}: {err}");
        let errors = if command == "check" { "; 3 errors" } else { "; 3 files skipped with errors" };
        assert!(err.contains(errors), "{command}: {err}");
    }
}

/// `check` does not read the here-documents of a notebook's `%%bash` cell as commands either:
/// only the command after them is a finding.
#[test]
fn notebook_shell_here_documents_are_not_checked() {
    let t = Tree::new();
    let cell = "%%bash\ncat > env.sh <<'EOF'\nexport PJRT_DEVICE=TPU\n\npip install torch_xla\nEOF\ncat <<-END >> log\n\texport PJRT_DEVICE=TPU\n\tEND\nexport PJRT_DEVICE=TPU\n";
    let notebook = serde_json::json!({
        "cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": cell}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5
    });
    t.write("nb.ipynb", notebook.to_string().as_bytes());
    let out = t.run(&["check", "--output-format", "concise", "nb.ipynb"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().map(|l| l.split(": ").next().unwrap_or_default()).collect();
    assert_eq!(lines, ["nb.ipynb:cell 1:10:8"], "{stdout}{}", stderr(&out));
}

/// Where `O_TMPFILE` cannot be used (here: `/proc` hidden, so an unnamed file cannot be linked
/// in), `--write` stages the new content in a hidden `.xla2tpu-*.tmp` instead: the result and
/// the mode are the same, nothing is left after a run, and a `kill -9` leaves the file whole and
/// only that hidden file behind.
#[test]
fn without_o_tmpfile_a_hidden_temporary_file_is_used() {
    use std::os::unix::fs::PermissionsExt;
    let without_proc = |t: &Tree, args: &[&str]| {
        std::process::Command::new("unshare")
            .args(["--mount", "--fork", "sh", "-c", "mount -t tmpfs none /proc && exec \"$0\" \"$@\""])
            .arg(assert_cmd::cargo::cargo_bin("xla2tpu"))
            .args(args)
            .current_dir(t.0.path())
            .output()
            .expect("unshare runs")
    };
    let t = Tree::new();
    if !is_root() {
        skip::skip("XLA2TPU_REQUIRE_ROOT", "not root: hiding /proc takes a mount namespace (CI runs as root)");
        return;
    }
    if !without_proc(&t, &["--version"]).status.success() {
        // Root without CAP_SYS_ADMIN (a default Docker container) cannot make one: not required.
        skip::skip("XLA2TPU_REQUIRE_MOUNT_NAMESPACE", "no mount namespace here (unshare --mount failed)");
        return;
    }
    fs::set_permissions(t.path("good.py"), fs::Permissions::from_mode(0o640)).expect("chmod");
    let out = without_proc(&t, &["migrate", "--write", "good.py"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let expected = Tree::new();
    assert_eq!(expected.run(&["migrate", "--write", "good.py"]).status.code(), Some(0));
    assert_eq!(fs::read(t.path("good.py")).expect("read"), fs::read(expected.path("good.py")).expect("read"));
    assert_eq!(fs::metadata(t.path("good.py")).expect("stat").permissions().mode() & 0o777, 0o640);
    assert!(leftovers(&t, &["good.py"]).is_empty(), "{:?}", leftovers(&t, &["good.py"]));

    let text = format!("{GOOD}{}\n", xla2tpu::migrate::KILL_DURING_WRITE_MARKER);
    let victim = t.write("victim.py", text.as_bytes());
    let out = without_proc(&t, &["migrate", "--write", "victim.py"]);
    assert!(!out.status.success(), "killed: {}", stderr(&out));
    assert_eq!(fs::read_to_string(&victim).expect("read"), text, "whole");
    let left = leftovers(&t, &["good.py", "victim.py"]);
    let hidden = |p: &PathBuf| {
        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(".xla2tpu-") && n.ends_with(".tmp"))
    };
    assert!(left.len() == 1 && hidden(&left[0]), "{left:?}");
}
