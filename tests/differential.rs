//! Execution is the proof: every program in `corpus/migrate/` runs as written
//! on real torch_xla 2.9 (CPU, `PJRT_DEVICE=CPU`) and, migrated, on the
//! TorchTPU emulator through `xla2tpu run`; what they print and the files they
//! write must agree. Programs with several processes (torch_xla cannot run
//! those on a CPU) also run on two emulated chips, where the invariants of a
//! correct multi-process job must hold: distinct ranks, one world size,
//! identical parameters after a step, one checkpoint.
//!
//! Each program's `run.yaml` says how (format in `corpus/migrate/README.md`). A project of
//! `corpus/projects/` runs the same way from its `input/` and `expected/` trees, with the script
//! its `run.yaml` names and its package directories on `PYTHONPATH`. A recipe of `corpus/recipes/`
//! (a hand-written TorchTPU program a rule's explanation cites, where no fix exists yet) runs
//! like a migrated program, its `expected.py` written by a person.
//!
//! The originals' side is recorded: torch_xla is deterministic under the pinned versions, so what
//! an original printed and wrote is kept in its `reference/` directory (see `reference.rs`) and
//! every run compares against that; a stale or missing reference fails with the command that
//! records it (`scripts/record-references`, which runs this harness with
//! `XLA2TPU_RECORD_REFERENCES`). The migrations always run.
//! Needs `tracer/.venv` (torch 2.15, which hosts the emulator; recording also needs
//! `difftest/.venv`, torch_xla); without it the runs are skipped with a message, unless
//! `XLA2TPU_REQUIRE_DIFFTEST=1` (CI), where a missing venv fails.

#[path = "differential/reference.rs"]
mod reference;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use libtest_mimic::{Arguments, Failed, Trial};
use serde::Deserialize;

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RunSpec {
    /// Why the program cannot run (then nothing else applies).
    #[serde(default)]
    skip: Option<String>,
    /// Arguments for both runs.
    #[serde(default)]
    args: Vec<String>,
    /// `compare` (default), or why the original cannot run on torch_xla on a CPU.
    #[serde(default)]
    torch_xla: Option<String>,
    /// Environment of every TorchTPU-side run (`RAY_AUTH_MODE: disabled`: a local Ray cluster
    /// that leaves no token in the home directory).
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// Where the original cannot run on torch_xla's CPU device (`torch_xla:` says why): text
    /// substitutions that make it a plain PyTorch CPU program (`accelerator="tpu"` →
    /// `accelerator="cpu"`), run in the emulator's venv without the emulator and compared instead.
    #[serde(default)]
    cpu_reference: BTreeMap<String, String>,
    /// Environment for the original's run (`CPU_NUM_DEVICES: "4"` for SPMD on a CPU).
    #[serde(default)]
    torch_xla_env: BTreeMap<String, String>,
    /// How both sides start: `python` (default) or `torchrun`.
    #[serde(default)]
    launch: Launch,
    /// The original is one torch_xla SPMD process over the virtual CPU devices `torch_xla_env`
    /// asks for: it starts with `python` whatever `launch` says, which applies to the migration.
    #[serde(default)]
    spmd: bool,
    /// (`launch: script`) The launch script, relative to the project's tree.
    #[serde(default)]
    launch_script: Option<String>,
    /// Emulated chips (and torchrun processes) for the compared run.
    #[serde(default = "one")]
    nproc: u32,
    /// (SPMD originals, which run the same whatever the chips) More chip counts to compare
    /// the migration on, each a run of its own.
    #[serde(default)]
    also_nproc: Vec<u32>,
    #[serde(default)]
    tolerance: Tolerance,
    /// Words of the original's output read as other words (`{xla: tpu}` where a
    /// program prints a device type); `xla:N` device names are always read as `tpu:N`.
    #[serde(default)]
    rename: BTreeMap<String, String>,
    /// Regexes whose matches are blanked on both sides before comparing: what a run
    /// prints about itself (`Rate=\S+`, `Time=\S+`), not about the model.
    #[serde(default)]
    mask: Vec<String>,
    /// Files (relative to the working directory) both runs must write, compared too.
    #[serde(default)]
    files: Vec<String>,
    /// The migrated program must stop at this TorchTPU incompatibility on the emulator.
    #[serde(default)]
    expect_incompatibility: Option<String>,
    /// One or several extra runs on more emulated chips (and hosts).
    #[serde(default)]
    invariants: OneOrMany<Invariants>,
    /// For a project: the script to run, relative to its tree.
    #[serde(default)]
    script: Option<String>,
    /// For a project: its directories that go on `PYTHONPATH` (a `src/` layout).
    #[serde(default)]
    pythonpath: Vec<String>,
}

/// What runs: one file written as `program.py`, or a project's tree and its script.
#[derive(Clone)]
struct Program {
    files: Vec<(PathBuf, Vec<u8>)>,
    script: String,
    pythonpath: Vec<String>,
}

impl Program {
    /// The original (`input`) or the migration (`expected`) of the program in `dir`.
    fn load(dir: &Path, spec: &RunSpec, side: &str) -> Result<Program, Failed> {
        let Some(script) = &spec.script else {
            let text = read(&dir.join(format!("{side}.py")))?;
            return Ok(Program {
                files: vec![("program.py".into(), text.into_bytes())],
                script: "program.py".into(),
                pythonpath: Vec::new(),
            });
        };
        let root = dir.join(side);
        let files = walk(&root)
            .into_iter()
            .map(|p| {
                let bytes = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                Ok((p.strip_prefix(&root).expect("inside").to_path_buf(), bytes))
            })
            .collect::<Result<_, Failed>>()?;
        Ok(Program { files, script: script.clone(), pythonpath: spec.pythonpath.clone() })
    }
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> Default for OneOrMany<T> {
    fn default() -> Self {
        OneOrMany::Many(Vec::new())
    }
}

impl<T> OneOrMany<T> {
    fn as_slice(&self) -> &[T] {
        match self {
            OneOrMany::One(t) => std::slice::from_ref(t),
            OneOrMany::Many(v) => v,
        }
    }
}

#[derive(Debug, Deserialize, Default, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Launch {
    #[default]
    Python,
    Torchrun,
    /// `accelerate launch --config_file CONFIG` (the migrated side of an invariant run only:
    /// torch_xla's accelerate launcher cannot run on a CPU).
    Accelerate,
    /// The project's own launch script, migrated (`launch_script:`), with the emulator's venv
    /// first on `PATH`; the SPMD original starts with `python` (its script sets up a TPU VM).
    Script,
}

#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct Tolerance {
    rel: f64,
    abs: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance { rel: 1e-4, abs: 1e-6 }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Invariants {
    /// Emulated chips per host.
    nproc: u32,
    /// Emulated hosts (default 1): each runs the launcher in its own directory with
    /// its own chips, joined into one job as TorchTPU's multi-host launch does
    /// (`TPU_WORKER_HOSTNAMES`, `JOB_COMPLETION_INDEX`).
    #[serde(default = "one")]
    hosts: u32,
    #[serde(default)]
    args: Vec<String>,
    /// How the job starts, when not as the compared run does.
    #[serde(default)]
    launch: Option<Launch>,
    /// The accelerate config file (relative to the tree) for `launch: accelerate`; the project's
    /// migrated launch script for `launch: script`.
    #[serde(default)]
    config: Option<String>,
    /// A regex whose two groups are a rank and the world size: every rank
    /// 0..nproc must print it exactly once, with world size `nproc`.
    ranks: String,
    /// Regexes whose first group must print the same value on every rank.
    #[serde(default)]
    same: Vec<String>,
    /// Files the job must write, with how many of each (one checkpoint, not N).
    #[serde(default)]
    files: BTreeMap<String, usize>,
}

fn one() -> u32 {
    1
}

struct Env {
    root: PathBuf,
    torch_xla: Option<PathBuf>,
    emulator: Option<PathBuf>,
    xla2tpu: PathBuf,
    cache: PathBuf,
}

impl Env {
    /// The venvs; with `required` a missing emulator venv fails here (torch_xla's is only needed
    /// to record references, which says so itself).
    fn find(required: bool) -> Env {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let venv = |dir: &str| Some(root.join(dir).join(".venv/bin/python")).filter(|p| p.is_file());
        let emulator = venv("tracer");
        assert!(
            !required || emulator.is_some(),
            "XLA2TPU_REQUIRE_DIFFTEST is set but tracer/.venv is missing: run tracer/setup_venv.sh"
        );
        Env {
            torch_xla: venv("difftest"),
            emulator,
            xla2tpu: PathBuf::from(env!("CARGO_BIN_EXE_xla2tpu")),
            cache: root.join("target/xla2tpu-test-cache"),
            root,
        }
    }
}

/// Ports for MASTER_PORT: runs go in parallel, so each gets its own.
fn free_port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 20000 + (std::process::id() % 2000) as u16 * 10;
    loop {
        let port = base + NEXT.fetch_add(1, Ordering::Relaxed) % 9000;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// What one run did.
struct Ran {
    output: Output,
    dir: tempfile::TempDir,
}

impl Ran {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
    fn describe(&self, what: &str) -> String {
        format!(
            "{what} exited with {}\n--- stdout\n{}\n--- stderr (last 40 lines)\n{}",
            self.output.status,
            self.stdout(),
            tail(&self.stderr(), 40)
        )
    }
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Run `program` in a fresh directory holding its files.
fn run_in_temp(program: &Program, command: &mut Command) -> Result<Ran, Failed> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    for (path, bytes) in &program.files {
        let dest = dir.path().join(path);
        std::fs::create_dir_all(dest.parent().expect("in the directory")).map_err(|e| e.to_string())?;
        std::fs::write(dest, bytes).map_err(|e| e.to_string())?;
    }
    if !program.pythonpath.is_empty() {
        command.env("PYTHONPATH", program.pythonpath.join(":")); // relative: the run's directory
    }
    // Block-buffered output: with PYTHONUNBUFFERED a print is two writes, and
    // the lines of several ranks can interleave mid-line.
    command
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("PYTHONUNBUFFERED");
    let output = run_with_timeout(command, Duration::from_secs(600))?;
    Ok(Ran { output, dir })
}

fn run_with_timeout(command: &mut Command, limit: Duration) -> Result<Output, Failed> {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| e.to_string())?;
    let (out_pipe, err_pipe) = (child.stdout.take(), child.stderr.take());
    let read = |pipe: Option<std::process::ChildStdout>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = std::io::Read::read_to_end(&mut p, &mut buf);
            }
            buf
        })
    };
    let out_thread = read(out_pipe);
    let err_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = err_pipe {
            let _ = std::io::Read::read_to_end(&mut p, &mut buf);
        }
        buf
    });
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            return Err(format!("timed out after {}s (a deadlock?)", limit.as_secs()).into());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Ok(Output { status, stdout: out_thread.join().unwrap_or_default(), stderr: err_thread.join().unwrap_or_default() })
}

/// How an original starts on torch_xla: a change here that an original can see must bump
/// `reference::ORIGINAL_RUN`, so that every recording is made again.
fn torch_xla_command(python: &Path, spec: &RunSpec, script: &str, args: &[String]) -> Command {
    let launch = if spec.spmd { Launch::Python } else { spec.launch };
    let mut c = match launch {
        Launch::Python => {
            // torch_xla's `xla://` rendezvous listens on MASTER_PORT (12355 by default), and
            // originals run in parallel.
            let mut c = Command::new(python);
            c.arg(script).env("MASTER_PORT", free_port().to_string());
            c
        }
        Launch::Accelerate | Launch::Script => unreachable!("compared_run rejects it"),
        Launch::Torchrun => {
            let mut c = Command::new(python);
            c.args(["-m", "torch.distributed.run", "--standalone", &format!("--nproc_per_node={}", spec.nproc)]);
            c.arg(script);
            c
        }
    };
    c.args(args).env("PJRT_DEVICE", "CPU").env("TF_CPP_MIN_LOG_LEVEL", "3").env("HF_HUB_OFFLINE", "1");
    c.envs(&spec.torch_xla_env);
    c
}

fn emulator_command(
    env: &Env,
    python: &Path,
    (launch, config): (Launch, Option<&str>),
    nproc: u32,
    script: &str,
    args: &[String],
) -> Command {
    let mut c = Command::new(&env.xla2tpu);
    c.arg("run").arg(format!("--nproc={nproc}")).arg("--python").arg(python).arg("--report").arg("report.json");
    c.arg("--");
    match launch {
        Launch::Python => {
            c.arg(python).arg(script);
        }
        Launch::Torchrun => {
            // TorchTPU's documented torchrun launch: the TPU environment first, then torchrun.
            let script = format!(
                "eval \"$({py} -m torch.tpu.distributed | sed 's/^/export /')\" && exec {py} -m torch.distributed.run --standalone --nproc_per_node={nproc} {script} \"$@\"",
                py = python.display()
            );
            c.args(["bash", "-c", &script, "torchrun"]);
        }
        Launch::Accelerate => {
            // The same environment, then accelerate's launcher (torchrun for a MULTI_GPU config).
            let script = format!(
                "eval \"$({py} -m torch.tpu.distributed | sed 's/^/export /')\" && exec {py} -m accelerate.commands.launch --config_file {config} --num_processes {nproc} {script} \"$@\"",
                py = python.display(),
                config = config.expect("invariant_run requires a config for `launch: accelerate`"),
            );
            c.args(["bash", "-c", &script, "accelerate"]);
        }
        Launch::Script => {
            let script = config.expect("compared_run requires `launch_script` for `launch: script`");
            let bin = python.parent().expect("the venv's bin directory");
            let path = std::env::var_os("PATH").unwrap_or_default();
            let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(&path)))
                .expect("PATH entries");
            c.args(["bash", script]).env("PATH", path);
        }
    }
    c.args(args)
        .env("XLA2TPU_CACHE_DIR", &env.cache)
        .env("MASTER_PORT", free_port().to_string())
        .env("HF_HUB_OFFLINE", "1");
    c
}

/// A line as text and numbers: text parts must match exactly, numbers within tolerance.
fn tokens(line: &str) -> Vec<Token> {
    let number = regex::Regex::new(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?").expect("regex");
    let mut out = Vec::new();
    let mut last = 0;
    for m in number.find_iter(line) {
        if m.start() > last {
            out.push(Token::Text(line[last..m.start()].to_string()));
        }
        out.push(match m.as_str().parse::<f64>() {
            Ok(v) => Token::Number(v, m.as_str().to_string()),
            Err(_) => Token::Text(m.as_str().to_string()),
        });
        last = m.end();
    }
    if last < line.len() {
        out.push(Token::Text(line[last..].to_string()));
    }
    out
}

/// One unit in the last decimal place a number was printed with (`0.6931` → 1e-4).
fn last_place(printed: &str) -> f64 {
    if printed.contains(['e', 'E']) {
        return 0.0;
    }
    match printed.split_once('.') {
        Some((_, decimals)) if !decimals.is_empty() => 10f64.powi(-(decimals.len() as i32)),
        _ => 0.0,
    }
}

#[derive(Debug)]
enum Token {
    Text(String),
    Number(f64, String),
}

/// Lines the runtimes print on their own, not the program: torch 2.9's gloo
/// reports its connections on stdout from C++ (2.15 no longer does).
fn is_runtime_noise(line: &str) -> bool {
    line.starts_with("[Gloo] Rank ") && line.contains(" is connected to ")
}

/// `text` with every match of the run's `mask` regexes replaced by `<masked>`.
fn masked(text: &str, mask: &[String]) -> Result<String, Failed> {
    mask.iter().try_fold(text.to_string(), |text, pattern| {
        let re = regex::Regex::new(pattern).map_err(|e| format!("mask `{pattern}`: {e}"))?;
        Ok(re.replace_all(&text, "<masked>").into_owned())
    })
}

/// The original's output with the run's `rename` words replaced.
fn renamed(original: &str, rename: &BTreeMap<String, String>) -> String {
    rename.iter().fold(original.to_string(), |text, (from, to)| {
        let word = regex::Regex::new(&format!(r"\b{}\b", regex::escape(from))).expect("regex");
        word.replace_all(&text, regex::NoExpand(to)).into_owned()
    })
}

fn lines_agree(original: &str, migrated: &str, tol: Tolerance) -> Result<(), String> {
    // torch_xla names its device `xla:0`; the migrated program's is `tpu:0`.
    let device = regex::Regex::new(r"\bxla:(\d+)\b|type='xla'").expect("regex");
    let normalise = |s: &str| {
        device
            .replace_all(s, |c: &regex::Captures| match c.get(1) {
                Some(index) => format!("tpu:{}", index.as_str()),
                None => "type='tpu'".to_string(),
            })
            .into_owned()
    };
    let a: Vec<String> = original.lines().filter(|l| !is_runtime_noise(l)).map(normalise).collect();
    let b: Vec<&str> = migrated.lines().filter(|l| !is_runtime_noise(l)).collect();
    if a.len() != b.len() {
        return Err(format!("{} lines on torch_xla, {} migrated", a.len(), b.len()));
    }
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let (tx, ty) = (tokens(x), tokens(y));
        let same = tx.len() == ty.len()
            && tx.iter().zip(&ty).all(|pair| match pair {
                (Token::Text(p), Token::Text(q)) => p == q,
                (Token::Number(p, ps), Token::Number(q, qs)) => {
                    // A value printed to k decimals may round either way: one unit in
                    // the last printed place is within tolerance too.
                    let unit = last_place(ps).max(last_place(qs));
                    ps == qs || (p - q).abs() <= (tol.abs + tol.rel * p.abs().max(q.abs())).max(unit)
                }
                _ => false,
            });
        if !same {
            return Err(format!("line {}:\n  torch_xla: {x}\n  migrated:  {y}", i + 1));
        }
    }
    Ok(())
}

/// Compare written files: checkpoints by loading both (in the emulator's
/// Python, which can also read TorchTPU tensors), text files line by line.
fn files_agree(env: &Env, original: &Path, migrated: &Path, files: &[String], tol: Tolerance) -> Result<(), String> {
    for name in files {
        let (a, b) = (original.join(name), migrated.join(name));
        if !a.is_file() {
            return Err(format!("the original did not write {name}"));
        }
        if !b.is_file() {
            return Err(format!("the migrated program did not write {name}"));
        }
        let is_checkpoint = [".pt", ".pth", ".bin", ".ckpt", ".safetensors"].iter().any(|e| name.ends_with(e));
        if is_checkpoint {
            let python = env.emulator.as_ref().ok_or("no emulator venv")?;
            let out = Command::new(&env.xla2tpu)
                .args(["run", "--python"])
                .arg(python)
                .arg("--")
                .arg(python)
                .arg(env.root.join("difftest/compare_checkpoints.py"))
                .arg(&a)
                .arg(&b)
                .arg(tol.rel.to_string())
                .arg(tol.abs.to_string())
                .env("XLA2TPU_CACHE_DIR", &env.cache)
                .output()
                .map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err(format!(
                    "{name} differs: {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    tail(&String::from_utf8_lossy(&out.stderr), 20)
                ));
            }
        } else {
            let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
            lines_agree(&read(&a)?, &read(&b)?, tol).map_err(|e| format!("{name}: {e}"))?;
        }
    }
    Ok(())
}

/// What the migration is compared with.
#[derive(PartialEq)]
enum Original {
    /// The original's run on torch_xla, recorded in its `reference/`.
    TorchXla,
    /// The original made a plain CPU program (`cpu_reference:`), run live in the emulator's venv:
    /// its libraries are not all pinned, so a recording could not tell when it went stale.
    Cpu,
    /// Nothing: the original cannot run on a CPU (`torch_xla:` says why), or nothing runs (`skip:`).
    None,
}

impl Original {
    fn of(spec: &RunSpec) -> Original {
        if spec.skip.is_some() {
            Original::None
        } else if spec.torch_xla.as_deref().is_none_or(|t| t == "compare") {
            Original::TorchXla
        } else if !spec.cpu_reference.is_empty() {
            Original::Cpu
        } else {
            Original::None
        }
    }
}

fn compared_run(env: &Env, dir: &Path, spec: &RunSpec, nproc: u32) -> Result<(), Failed> {
    let Some(emulator) = &env.emulator else {
        return Err("skipped: tracer/.venv missing".into());
    };
    if spec.launch == Launch::Accelerate {
        return Err("`launch: accelerate` is for invariant runs (with their `config`)".into());
    }
    if !spec.also_nproc.is_empty() && !spec.spmd {
        return Err("`also_nproc` is for SPMD originals: another original runs on as many processes".into());
    }
    if spec.launch == Launch::Script && (!spec.spmd || spec.launch_script.is_none()) {
        return Err("`launch: script` needs `launch_script:` and an SPMD original (started with `python`)".into());
    }
    let input = Program::load(dir, spec, "input")?;
    // A stale or missing recording fails before the migration runs: the fix is one command.
    let original = Original::of(spec);
    let recorded =
        if original == Original::TorchXla { Some(reference::load(&env.root, dir, spec, &input)?) } else { None };
    let migrated = Program::load(dir, spec, "expected")?;
    let launch = (spec.launch, spec.launch_script.as_deref());
    let command = &mut emulator_command(env, emulator, launch, nproc, &migrated.script, &spec.args);
    command.envs(&spec.env);
    let ran = run_in_temp(&migrated, command)?;
    if let Some(kind) = &spec.expect_incompatibility {
        let report = read(&ran.dir.path().join("report.json"))?;
        let report: serde_json::Value = serde_json::from_str(&report).map_err(|e| e.to_string())?;
        let first = report["incompatibilities"][0]["kind"].as_str().unwrap_or("none");
        if first != kind {
            let what = ran.describe("xla2tpu run");
            return Err(format!("expected a `{kind}` incompatibility, the emulator saw `{first}`\n{what}").into());
        }
        // The original must still be a working torch_xla program: it is, a reference is only
        // recorded from a run that succeeded.
        return Ok(());
    }
    if !ran.output.status.success() {
        return Err(ran.describe("the migrated program on the emulator").into());
    }
    if spec.spmd && spec.launch == Launch::Python {
        one_chip_of_many(&ran, nproc)?;
    } else if spec.spmd {
        ranks_on_chips(&ran, nproc)?;
    }
    let cpu_run;
    let (stdout, files, reference) = match (recorded, original) {
        (Some(recorded), _) => (recorded.stdout, recorded.files, "torch_xla"),
        (None, Original::Cpu) => {
            let program = cpu_reference(&input, &spec.cpu_reference)?;
            let mut command = Command::new(emulator);
            command.arg(&program.script).args(&spec.args).env("HF_HUB_OFFLINE", "1");
            cpu_run = run_in_temp(&program, &mut command)?;
            if !cpu_run.output.status.success() {
                return Err(cpu_run.describe("the original as a plain CPU program").into());
            }
            (cpu_run.stdout(), cpu_run.dir.path().to_path_buf(), "CPU reference")
        }
        (None, _) => return Ok(()), // it ran; the original cannot run on a CPU (run.yaml says why)
    };
    let (expected, actual) = (masked(&stdout, &spec.mask)?, masked(&ran.stdout(), &spec.mask)?);
    lines_agree(&renamed(&expected, &spec.rename), &actual, spec.tolerance).map_err(|e| {
        format!("outputs differ: {e}\n--- {reference} stdout\n{stdout}\n--- migrated stdout\n{}", ran.stdout())
    })?;
    files_agree(env, &files, ran.dir.path(), &spec.files, spec.tolerance)?;
    Ok(())
}

/// Record the torch_xla reference of the program in `dir` when it is missing or stale (`all`:
/// always): run the original on torch_xla and keep what it printed and wrote.
fn record(env: &Env, dir: &Path, spec: &RunSpec, all: bool) -> Result<(), Failed> {
    let input = Program::load(dir, spec, "input")?;
    if !all && reference::load(&env.root, dir, spec, &input).is_ok() {
        return Ok(());
    }
    let Some(python) = &env.torch_xla else {
        return Err("recording needs difftest/.venv (torch_xla): run difftest/setup_venv.sh".into());
    };
    let versions = reference::versions(&env.root, python)?;
    let inputs = reference::inputs(&env.root, spec, &input)?;
    let original = run_in_temp(&input, &mut torch_xla_command(python, spec, &input.script, &spec.args))?;
    if !original.output.status.success() {
        return Err(original.describe("the original on torch_xla").into());
    }
    reference::write(dir, versions, inputs, &original.output.stdout, original.dir.path(), &spec.files)
}

/// The emulator's report of an SPMD migration must show the job it was meant to be: ranks
/// 0..nproc of world size nproc, each on its chip. A one-process run would print the same
/// global values (the conversion is exact on any number of chips), so only this tells them apart.
fn ranks_on_chips(ran: &Ran, nproc: u32) -> Result<(), Failed> {
    let report: serde_json::Value =
        serde_json::from_str(&read(&ran.dir.path().join("report.json"))?).map_err(|e| e.to_string())?;
    let mut ranks: Vec<(u64, u64)> = report["processes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| &p["summary"])
        .filter(|s| s["device_initialized"].as_bool() == Some(true))
        .filter_map(|s| Some((s["rank"].as_u64()?, s["world_size"].as_u64()?)))
        .collect();
    ranks.sort();
    let want: Vec<(u64, u64)> = (0..u64::from(nproc)).map(|r| (r, u64::from(nproc))).collect();
    if ranks != want {
        return Err(format!("ranks (rank, world size) on emulated chips {ranks:?}, expected {want:?}").into());
    }
    Ok(())
}

/// An SPMD migration started with plain `python`, as torch_xla's program was, is a job of one
/// chip: where the host has more, torch_xla used them all, and the program must say so at start-up
/// (TPU926 reports the launch) rather than run on one of them silently.
fn one_chip_of_many(ran: &Ran, nproc: u32) -> Result<(), Failed> {
    ranks_on_chips(ran, 1)?;
    let warned = ran.stderr().contains(&format!("{nproc} TPU chips are attached and this SPMD program runs on one"));
    if warned != (nproc > 1) {
        let what =
            if warned { "warned of other chips with none attached" } else { "did not say it uses one chip of several" };
        return Err(format!(
            "started with `python` on {nproc} emulated chips, the program {what}\n{}",
            ran.describe("it")
        )
        .into());
    }
    Ok(())
}

fn invariant_run(env: &Env, dir: &Path, spec: &RunSpec, inv: &Invariants) -> Result<(), Failed> {
    let Some(emulator) = &env.emulator else { return Err("skipped: tracer/.venv missing".into()) };
    if inv.launch.is_none() && spec.launch == Launch::Script {
        return Err("an invariant run of a `launch: script` program says how it starts (`launch:`)".into());
    }
    if inv.launch == Some(Launch::Script) && inv.config.is_none() {
        return Err("`launch: script` in an invariant run needs the `config:` script to run".into());
    }
    if inv.launch == Some(Launch::Accelerate) && inv.config.is_none() {
        return Err("`launch: accelerate` needs the `config:` file to launch with".into());
    }
    let migrated = Program::load(dir, spec, "expected")?;
    // Every host runs the same launcher at once; the first host's address is the rendezvous.
    let port = free_port().to_string();
    let hostnames = vec!["localhost"; inv.hosts as usize].join(",");
    let hosts: Vec<std::thread::JoinHandle<Result<Ran, Failed>>> = (0..inv.hosts)
        .map(|host| {
            let launch = (inv.launch.unwrap_or(spec.launch), inv.config.as_deref());
            let mut command = emulator_command(env, emulator, launch, inv.nproc, &migrated.script, &inv.args);
            command.envs(&spec.env);
            command.env("MASTER_PORT", &port);
            if inv.hosts > 1 {
                command.env("TPU_WORKER_HOSTNAMES", &hostnames).env("JOB_COMPLETION_INDEX", host.to_string());
            }
            let program = migrated.clone();
            std::thread::spawn(move || run_in_temp(&program, &mut command))
        })
        .collect();
    let mut runs = Vec::new();
    for (host, handle) in hosts.into_iter().enumerate() {
        let ran = handle.join().map_err(|_| "a host's run panicked")??;
        if !ran.output.status.success() {
            return Err(ran
                .describe(&format!("host {host} of the migrated program on {} emulated chips", inv.nproc))
                .into());
        }
        runs.push(ran);
    }
    let stdout: String = runs.iter().map(Ran::stdout).collect();
    let world = inv.nproc * inv.hosts;
    let ranks = regex::Regex::new(&inv.ranks).map_err(|e| e.to_string())?;
    let mut seen: Vec<(u32, u32)> = ranks
        .captures_iter(&stdout)
        .filter_map(|c| Some((c.get(1)?.as_str().parse().ok()?, c.get(2)?.as_str().parse().ok()?)))
        .collect();
    seen.sort();
    let want: Vec<(u32, u32)> = (0..world).map(|r| (r, world)).collect();
    if seen != want {
        return Err(format!("ranks/world sizes printed {seen:?}, expected {want:?}\n--- stdout\n{stdout}").into());
    }
    for pattern in &inv.same {
        let re = regex::Regex::new(pattern).map_err(|e| e.to_string())?;
        let values: Vec<&str> = re.captures_iter(&stdout).filter_map(|c| Some(c.get(1)?.as_str())).collect();
        if values.len() < world as usize || values.iter().any(|v| *v != values[0]) {
            return Err(format!(
                "`{pattern}` should print one value on every rank, got {values:?}\n--- stdout\n{stdout}"
            )
            .into());
        }
    }
    for (name, count) in &inv.files {
        let written = runs
            .iter()
            .flat_map(|r| walk(r.dir.path()))
            .filter(|p| p.file_name().is_some_and(|n| n == name.as_str()))
            .count();
        if written != *count {
            return Err(format!("{name} written {written} times over {} host(s), expected {count}", inv.hosts).into());
        }
    }
    Ok(())
}

/// The original with `substitutions` made in its script: each must occur there.
fn cpu_reference(input: &Program, substitutions: &BTreeMap<String, String>) -> Result<Program, Failed> {
    let mut program = input.clone();
    // In every text file of the program (the script, or a config it reads); each must apply somewhere.
    let mut applied: BTreeSet<&String> = BTreeSet::new();
    for (_, bytes) in program.files.iter_mut() {
        let Ok(mut text) = String::from_utf8(bytes.clone()) else { continue };
        for (from, to) in substitutions {
            if text.contains(from.as_str()) {
                applied.insert(from);
                text = text.replace(from.as_str(), to);
            }
        }
        *bytes = text.into_bytes();
    }
    if let Some(missing) = substitutions.keys().find(|from| !applied.contains(from)) {
        return Err(format!("cpu_reference: `{missing}` is in none of the program's files").into());
    }
    Ok(program)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn read(path: &Path) -> Result<String, Failed> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()).into())
}

/// The programs of `corpus/migrate/`, the projects of `corpus/projects/` that say how they run,
/// and the recipes of `corpus/recipes/` (hand-written TorchTPU programs that rules cite).
fn programs(root: &Path) -> Vec<PathBuf> {
    let dirs = |family: &str| {
        std::fs::read_dir(root.join("corpus").join(family)).into_iter().flatten().flatten().map(|e| e.path())
    };
    let mut found: Vec<PathBuf> = dirs("migrate").filter(|p| p.join("input.py").is_file()).collect();
    found.extend(dirs("projects").filter(|p| p.join("run.yaml").is_file()));
    found.extend(dirs("recipes").filter(|p| p.join("run.yaml").is_file()));
    found.sort();
    found
}

/// The program's `run.yaml`: `None` without one, an error when it does not parse.
fn read_spec(dir: &Path) -> Option<Result<RunSpec, String>> {
    let path = dir.join("run.yaml");
    let text = std::fs::read_to_string(&path).ok()?;
    Some(yaml_serde::from_str(&text).map_err(|e| format!("{}: {e}", path.display())))
}

/// In record mode: a trial per program whose original runs on torch_xla, recording it when stale
/// or missing (`all`: always); the recordings of programs whose original no longer runs go.
fn record_trials(env: &std::sync::Arc<Env>, all: bool) -> Vec<Trial> {
    let mut trials = Vec::new();
    for dir in programs(&env.root) {
        let name = dir.file_name().unwrap_or_default().to_string_lossy().to_string();
        let spec = match read_spec(&dir) {
            Some(Ok(spec)) => spec,
            Some(Err(msg)) => {
                trials.push(Trial::test(format!("record::{name}"), move || Err(msg.into())));
                continue;
            }
            None => continue, // the compared runs say it has no run.yaml
        };
        if Original::of(&spec) != Original::TorchXla {
            let at = dir.join("reference");
            if at.exists() {
                trials.push(Trial::test(format!("record::{name}"), move || {
                    std::fs::remove_dir_all(&at).map_err(|e| format!("{}: {e}", at.display()).into())
                }));
            }
            continue;
        }
        let env = env.clone();
        trials.push(Trial::test(format!("record::{name}"), move || record(&env, &dir, &spec, all)));
    }
    trials
}

/// A reference is fresh until what the original's run depends on changes, and only then.
fn reference_staleness() -> Result<(), Failed> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = dir.path();
    std::fs::write(dir.join("input.py"), "print('loss=0.693147')\n").map_err(|e| e.to_string())?;
    let spec_of = |yaml: &str| yaml_serde::from_str::<RunSpec>(yaml).map_err(|e| e.to_string());
    let spec = spec_of("args: [--steps, '2']\nfiles: [model.pt]\n")?;
    let input = Program::load(dir, &spec, "input")?;
    let ran = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(ran.path().join("model.pt"), b"weights").map_err(|e| e.to_string())?;
    let expect_err = |what: &str, result: Result<reference::Reference, Failed>, says: &[&str]| {
        let message = match result {
            Ok(_) => return Err(format!("{what}: the reference still counts as fresh")),
            Err(e) => e.message().unwrap_or_default().to_string(),
        };
        match says.iter().find(|s| !message.contains(*s)) {
            Some(missing) => Err(format!("{what}: the failure does not say `{missing}`: {message}")),
            None => Ok(()),
        }
    };
    expect_err("no reference", reference::load(&root, dir, &spec, &input), &["has no recorded", reference::COMMAND])?;

    let inputs = reference::inputs(&root, &spec, &input)?;
    let versions = [("torch_xla".to_string(), "2.9.0".to_string())].into();
    reference::write(dir, versions, inputs, b"loss=0.693147\n", ran.path(), &spec.files)?;
    let fresh = reference::load(&root, dir, &spec, &input)?;
    if fresh.stdout != "loss=0.693147\n"
        || std::fs::read(fresh.files.join("model.pt")).ok().as_deref() != Some(b"weights")
    {
        return Err("the reference does not give back what was recorded".into());
    }
    // What only the comparison or the migration reads leaves it fresh.
    let compare_only = spec_of(
        "args: [--steps, '2']\nfiles: [model.pt]\ntolerance: {rel: 0.1, abs: 0.1}\nmask: ['x']\nrename: {a: b}\nnproc: 2\nenv: {A: b}\n",
    )?;
    reference::load(&root, dir, &compare_only, &input)
        .map_err(|e| format!("compare-only fields made it stale: {e:?}"))?;

    let args = spec_of("args: [--steps, '3']\nfiles: [model.pt]\n")?;
    expect_err(
        "other args",
        reference::load(&root, dir, &args, &input),
        &["STALE", "run.yaml's `args` changed", reference::COMMAND],
    )?;
    let env = spec_of("args: [--steps, '2']\nfiles: [model.pt]\ntorch_xla_env: {CPU_NUM_DEVICES: '4'}\n")?;
    expect_err("torch_xla_env", reference::load(&root, dir, &env, &input), &["`torch_xla_env` changed"])?;
    let mut edited = input.clone();
    edited.files[0].1 = b"print('loss=0.7')\n".to_vec();
    expect_err("an edited original", reference::load(&root, dir, &spec, &edited), &["input.py changed"])?;

    std::fs::write(dir.join("reference/stdout.txt"), "loss=0.5\n").map_err(|e| e.to_string())?;
    expect_err("an edited recording", reference::load(&root, dir, &spec, &input), &["edited by hand"])?;
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    // `scripts/record-references` runs this harness to record the originals' side instead.
    let record_mode = std::env::var("XLA2TPU_RECORD_REFERENCES").ok();
    let all = match record_mode.as_deref() {
        None | Some("stale") => false,
        Some("all") => true,
        Some(other) => panic!("XLA2TPU_RECORD_REFERENCES={other}: `stale` or `all`"),
    };
    let required = std::env::var_os("XLA2TPU_REQUIRE_DIFFTEST").is_some() && record_mode.is_none();
    let env = std::sync::Arc::new(Env::find(required));
    if record_mode.is_some() {
        libtest_mimic::run(&args, record_trials(&env, all)).exit();
    }
    let mut trials = Vec::new();
    let mut missing = Vec::new();
    let mut unused = Vec::new();
    for dir in programs(&env.root) {
        let name = dir.file_name().unwrap_or_default().to_string_lossy().to_string();
        let spec = match read_spec(&dir) {
            Some(Ok(spec)) => spec,
            Some(Err(msg)) => {
                trials.push(Trial::test(format!("spec::{name}"), move || Err(msg.into())));
                continue;
            }
            None => {
                missing.push(name);
                continue;
            }
        };
        if dir.join("reference").exists() && Original::of(&spec) != Original::TorchXla {
            unused.push(dir.strip_prefix(&env.root).unwrap_or(&dir).join("reference"));
        }
        if let Some(reason) = &spec.skip {
            trials
                .push(Trial::test(format!("run::{name}"), || Ok(())).with_ignored_flag(true).with_kind(reason.clone()));
            continue;
        }
        let spec = std::sync::Arc::new(spec);
        let skip = env.emulator.is_none();
        {
            let (env, spec, dir) = (env.clone(), spec.clone(), dir.clone());
            let nproc = spec.nproc;
            trials.push(
                Trial::test(format!("run::{name}"), move || compared_run(&env, &dir, &spec, nproc))
                    .with_ignored_flag(skip),
            );
        }
        for &nproc in &spec.also_nproc {
            let (env, spec, dir) = (env.clone(), spec.clone(), dir.clone());
            trials.push(
                Trial::test(format!("run::{name}::{nproc}chips"), move || compared_run(&env, &dir, &spec, nproc))
                    .with_ignored_flag(skip),
            );
        }
        for (i, inv) in spec.invariants.as_slice().iter().enumerate() {
            let ignored = env.emulator.is_none();
            let label = match inv.hosts {
                1 => format!("invariants::{name}::{}chips", inv.nproc),
                h => format!("invariants::{name}::{h}hosts_x{}chips", inv.nproc),
            };
            let (env, spec, dir) = (env.clone(), spec.clone(), dir.clone());
            trials.push(
                Trial::test(label, move || invariant_run(&env, &dir, &spec, &spec.invariants.as_slice()[i]))
                    .with_ignored_flag(ignored),
            );
        }
    }
    trials.push(Trial::test("every_program_says_how_it_runs", move || {
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("corpus/migrate programs without run.yaml (say how they run, or `skip:` why not): {missing:?}")
                .into())
        }
    }));
    trials.push(Trial::test("every_reference_belongs_to_an_original_that_runs", move || {
        if unused.is_empty() {
            Ok(())
        } else {
            Err(format!("recorded references of programs whose original does not run on torch_xla: {unused:?}; `{}` removes them", reference::COMMAND).into())
        }
    }));
    trials.push(Trial::test("references_go_stale_when_what_they_depend_on_changes", reference_staleness));
    trials.push(Trial::test("outputs_compare_with_tolerance", || {
        let tol = Tolerance::default();
        lines_agree("loss=0.693147 on xla:0", "loss=0.693150 on tpu:0", tol)?;
        lines_agree("device(type='xla', index=0)", "device(type='tpu', index=0)", tol)?;
        if lines_agree("backend xla", "backend tpu", tol).is_ok() {
            return Err("only device names are read as tpu, not the word xla".into());
        }
        lines_agree("loss=0.6931", "loss=0.6932", tol)?; // rounding in the last printed place
        if lines_agree("loss=0.6931", "loss=0.6934", tol).is_ok() {
            return Err("0.6931 and 0.6934 must differ".into());
        }
        if lines_agree("loss=0.69", "loss=0.71", tol).is_ok() {
            return Err("0.69 and 0.71 must differ".into());
        }
        if lines_agree("rank 1 of 2", "rank 0 of 2", tol).is_ok() {
            return Err("ranks must match exactly".into());
        }
        if lines_agree("a\nb", "a", tol).is_ok() {
            return Err("line counts must match".into());
        }
        lines_agree(
            "[Gloo] Rank 0 is connected to 0 peer ranks. Expected number of connected peer ranks is : 0\nok",
            "ok",
            tol,
        )?;
        Ok(())
    }));
    libtest_mimic::run(&args, trials).exit();
}
