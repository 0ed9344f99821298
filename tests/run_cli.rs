//! `xla2tpu run` on the real binary and the embedded emulator: the verdicts
//! (finished, incompatible at file:line, failed for another reason, no usable
//! Python) and their exit codes. Needs the torch 2.15 venv (`tracer/.venv`).

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

#[path = "support/skip.rs"]
mod skip;

fn python() -> Option<PathBuf> {
    skip::tracer_python()
}

/// `xla2tpu run -- PYTHON program.py` in a fresh directory holding `program`.
fn run(program: &str, extra: &[&str]) -> Option<(assert_cmd::assert::Assert, tempfile::TempDir)> {
    let python = python()?;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("train.py"), program).unwrap();
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/xla2tpu-test-cache");
    let assert = Command::cargo_bin("xla2tpu")
        .unwrap()
        .current_dir(dir.path())
        .env("XLA2TPU_CACHE_DIR", cache)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg("run")
        .args(extra)
        .arg("--")
        .arg(&python)
        .arg("train.py")
        .assert();
    Some((assert, dir))
}

#[test]
fn a_program_that_runs_is_summarised() {
    let program = "import torch\nx = torch.ones(3, device='tpu')\nprint((x * 2).sum().item())\n";
    let Some((assert, _dir)) = run(program, &[]) else { return };
    assert
        .code(0)
        .stdout("6.0\n")
        .stderr(predicate::str::contains("finished on 1 emulated TorchTPU 0.2.0 chip"))
        .stderr(predicate::str::contains("aten::mul.out"))
        .stderr(predicate::str::contains("item at train.py:3 ×1"))
        .stderr(predicate::str::contains("not checked on a CPU: bf16 matmul numerics"));
}

#[test]
fn a_module_left_on_the_cpu_is_a_device_mix_up_at_its_line() {
    let program = "import torch
x = torch.randn(2, 8).to('tpu')
layer = torch.nn.Linear(8, 2)
print(layer(x))
";
    let Some((assert, _dir)) = run(program, &[]) else { return };
    assert
        .code(1)
        .stderr(predicate::str::contains("incompatibility: device mix-up: argument `"))
        .stderr(predicate::str::contains("not a missing TorchTPU op"))
        .stderr(predicate::str::contains("--> train.py:4"))
        .stderr(predicate::str::contains("Expected all tensors to be on the same device"))
        .stderr(predicate::str::contains("model.to(\"tpu\")"));
}

#[test]
fn a_missing_kernel_is_reported_with_the_line_that_called_it() {
    let program = "import torch\n\ndef robust(x):\n    return torch.median(x)\n\nprint(robust(torch.arange(5.0, device='tpu')))\n";
    let Some((assert, _dir)) = run(program, &[]) else { return };
    assert
        .code(1)
        .stderr(predicate::str::contains("incompatibility: aten::median has no TorchTPU 0.2.0 kernel"))
        .stderr(predicate::str::contains("--> train.py:4 in robust"))
        .stderr(predicate::str::contains("called from train.py:6"))
        .stderr(predicate::str::contains("xla2tpu ops show aten::median"));
}

#[test]
fn a_leftover_torch_xla_import_is_reported() {
    let program = "import torch\nimport torch_xla.core.xla_model as xm\nprint(xm.xla_device())\n";
    let Some((assert, _dir)) = run(program, &[]) else { return };
    assert.code(1).stderr(predicate::str::contains("torch xla import")).stderr(predicate::str::contains("train.py:2"));
}

#[test]
fn an_api_that_raises_in_0_2_0_is_reported() {
    let program = "import torch\ntorch.tpu.synchronize()\n";
    let Some((assert, _dir)) = run(program, &[]) else { return };
    assert
        .code(1)
        .stderr(predicate::str::contains("internal api"))
        .stderr(predicate::str::contains("torch.accelerator.synchronize"));
}

#[test]
fn a_failure_of_the_program_itself_is_not_blamed_on_torchtpu() {
    let program = "import torch\nraise SystemExit(5)\n";
    let Some((assert, _dir)) = run(program, &[]) else { return };
    assert.code(3).stderr(predicate::str::contains("exited with status 5"));
}

#[test]
fn ranks_are_counted_when_a_device_mesh_creates_the_group() {
    // `init_device_mesh` creates the world group through c10d itself, not the public
    // `dist.init_process_group`; the report must still know each process's rank.
    let program = r#"
import os, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.distributed.device_mesh import init_device_mesh

def worker(index):
    os.environ.update(RANK=str(index), LOCAL_RANK=str(index))
    mesh = init_device_mesh("tpu", (2,), mesh_dim_names=("data",))
    print(f"rank {mesh.get_local_rank('data')}")
    dist.destroy_process_group()

if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=2)
    os.environ.update(MASTER_ADDR="localhost", MASTER_PORT=os.environ.get("MASTER_PORT", "29532"), WORLD_SIZE="2")
    mp.spawn(worker, nprocs=2)
"#;
    let Some((assert, _dir)) = run(program, &["--nproc", "2"]) else { return };
    assert.code(0).stderr(predicate::str::contains("ranks 0–1 of 2 (+1 helper process without a rank)"));
}

#[test]
fn the_report_lists_every_process() {
    let program = r#"
import os, torch, torch.distributed as dist, torch.multiprocessing as mp

def worker(index):
    os.environ["RANK"] = str(index)
    dist.init_process_group("tpu_dist")
    t = torch.ones(1, device="tpu") * (index + 1)
    dist.all_reduce(t)
    print(f"rank {dist.get_rank()} sum {t.item():.1f}")

if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=2)
    os.environ.update(MASTER_ADDR="localhost", MASTER_PORT=os.environ.get("MASTER_PORT", "29531"), WORLD_SIZE="2")
    mp.spawn(worker, nprocs=2)
"#;
    let Some((assert, dir)) = run(program, &["--nproc", "2", "--report", "report.json"]) else { return };
    assert
        .code(0)
        .stdout(predicate::str::contains("rank 0 sum 3.0"))
        .stdout(predicate::str::contains("rank 1 sum 3.0"))
        // The spawning parent is a helper, not a third chip's process.
        .stderr(predicate::str::contains("ranks 0–1 of 2 (+1 helper process without a rank)"));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
    let ranks: Vec<u64> =
        report["processes"].as_array().unwrap().iter().filter_map(|p| p["summary"]["rank"].as_u64()).collect();
    assert_eq!(ranks.len(), 2, "{report}");
}

#[test]
fn a_python_without_torch_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    // A fake interpreter that has no torch.
    let fake = dir.path().join("python3");
    std::fs::write(&fake, "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n").unwrap();
    let mut perms = std::fs::metadata(&fake).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&fake, perms).unwrap();
    Command::cargo_bin("xla2tpu")
        .unwrap()
        .args(["run", "--"])
        .arg(&fake)
        .arg("train.py")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("has no torch"))
        .stderr(predicate::str::contains("pip install"));
}

/// Guidance is code we emit: every ```python block of a rule's explanation that starts with
/// `# runs on TorchTPU` runs on the emulator as written (its own asserts say what it must do).
#[test]
fn guidance_code_in_rule_explanations_runs_on_the_emulator() {
    let rules = xla2tpu::migrate::rules::RuleSet::load(&[]).expect("the embedded rules load");
    let mut blocks = Vec::new();
    for rule in &rules.rules {
        let mut lines = rule.explanation.lines();
        while lines.by_ref().any(|l| l.trim() == "```python") {
            let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            if block.first().is_some_and(|l| l.trim() == "# runs on TorchTPU") {
                blocks.push((rule.code.clone(), block.join("\n") + "\n"));
            }
        }
    }
    assert!(blocks.len() >= 2, "the scan and ZeRO-1 guidance blocks are found: {blocks:?}");
    for (code, block) in blocks {
        let Some((assert, _dir)) = run(&block, &[]) else { return };
        let out = assert.get_output();
        assert!(
            out.status.success(),
            "{code}'s guidance does not run on the emulator:\n{block}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// What TPU910's explanation claims about several processes, shown on the emulator: under
/// TorchTPU's torchrun launch, accelerate 1.16 (the tracer venv's pin) sees no distributed
/// setup for `tpu`, so every rank of a Trainer or `Accelerator` job trains alone. When a later
/// accelerate learns it, this test fails and the rule's text must change with it.
#[test]
fn accelerate_under_torchrun_on_tpu_runs_each_rank_alone() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let probe = "import os\nfrom accelerate import PartialState\n\nstate = PartialState()\n\
                 print(f\"rank {os.environ['RANK']} {state.distributed_type} processes={state.num_processes} device={state.device}\", flush=True)\n";
    std::fs::write(dir.path().join("probe.py"), probe).unwrap();
    let py = python.display();
    let launch = format!(
        "eval \"$({py} -m torch.tpu.distributed | sed 's/^/export /')\" && exec {py} -m torch.distributed.run --standalone --nproc_per_node=2 probe.py"
    );
    let port = 29000 + (std::process::id() % 900) as u16;
    let out = Command::cargo_bin("xla2tpu")
        .unwrap()
        .current_dir(dir.path())
        .env("XLA2TPU_CACHE_DIR", Path::new(env!("CARGO_MANIFEST_DIR")).join("target/xla2tpu-test-cache"))
        .env("MASTER_PORT", port.to_string())
        .args(["run", "--nproc=2", "--python"])
        .arg(&python)
        .args(["--", "bash", "-c", &launch])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for rank in 0..2 {
        let line = format!("rank {rank} DistributedType.NO processes=1 device=tpu");
        assert!(stdout.contains(&line), "expected `{line}`:\n{stdout}");
    }
}

/// The DTensor placements `migrate` writes out for a weight split SPMD's way (TPU228's report
/// on a spec it does not convert) are code a person pastes: they must shard the tensor as the
/// spec did, on two emulated chips of a ("data", "model") mesh.
#[test]
fn dtensor_placements_written_out_for_a_weight_spec_run() {
    let source = "import torch_xla.distributed.spmd as xs\n\
                  xs.mark_sharding(w1, mesh, (None, \"model\"))\n\
                  xs.mark_sharding(w2, mesh, (\"data\", \"model\"))\n\
                  xs.mark_sharding(w3, mesh, (None, 1))\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tp.py"), source).unwrap();
    let out =
        Command::cargo_bin("xla2tpu").unwrap().current_dir(dir.path()).args(["migrate", "tp.py"]).output().unwrap();
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let found = regex::Regex::new(r"distribute_tensor\(t, mesh, (\[.*?\])\)`").unwrap();
    let placements: Vec<&str> = found.captures_iter(&report).map(|c| c.get(1).unwrap().as_str()).collect();
    assert_eq!(placements.len(), 3, "three specs written out as placements:\n{report}");
    // Each placement, applied to a 16×32 weight on a (1, 2) mesh: rank r keeps columns r·16….
    let program = format!(
        r#"
import os, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor

def worker(index):
    os.environ.update(RANK=str(index), LOCAL_RANK=str(index))
    mesh = init_device_mesh("tpu", (1, 2), mesh_dim_names=("data", "model"))
    w = torch.arange(16 * 32, dtype=torch.float32).reshape(16, 32)
    for placements in ({a}, {b}, {c}):
        t = distribute_tensor(w.to("tpu"), mesh, placements)
        assert torch.equal(t.to_local().cpu(), w.tensor_split(2, 1)[index]), placements
        assert torch.equal(t.full_tensor().cpu(), w)
    print(f"rank {{index}} sharded as the specs")
    dist.destroy_process_group()

if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=2)
    os.environ.update(MASTER_ADDR="localhost", MASTER_PORT=os.environ.get("MASTER_PORT", "29533"), WORLD_SIZE="2")
    mp.spawn(worker, nprocs=2)
"#,
        a = placements[0],
        b = placements[1],
        c = placements[2]
    );
    let Some((assert, _dir)) = run(&program, &["--nproc", "2"]) else { return };
    assert
        .code(0)
        .stdout(predicate::str::contains("rank 0 sharded as the specs"))
        .stdout(predicate::str::contains("rank 1 sharded as the specs"));
}

/// Whether `pid` is gone (or a zombie no one reaped yet: it runs nothing).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

/// A program that starts a grandchild, says both pids in `pids`, and sleeps.
const SLEEPER: &str = r#"
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
with open("pids.tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.rename("pids.tmp", "pids")
time.sleep(300)
"#;

/// SLEEPER, but it writes the number of a SIGINT or SIGHUP it gets into `got` and exits, and
/// ignores SIGTERM.
const TRAPPER: &str = r#"
import os, signal, subprocess, sys, time
def got(signum, frame):
    with open("got", "w") as f:
        f.write(str(signum))
    sys.exit(0)
signal.signal(signal.SIGINT, got)
signal.signal(signal.SIGHUP, got)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
with open("pids.tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.rename("pids.tmp", "pids")
while True:
    time.sleep(1)
"#;

/// Starts `xla2tpu run ARGS -- python train.py` on SLEEPER with its own TMPDIR; returns the
/// process, the directory and the program's and grandchild's pids once they are running.
fn start_sleeper(extra: &[&str]) -> Option<(std::process::Child, tempfile::TempDir, [i32; 2])> {
    start(SLEEPER, extra)
}

fn start(program: &str, extra: &[&str]) -> Option<(std::process::Child, tempfile::TempDir, [i32; 2])> {
    let python = python()?;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("train.py"), program).unwrap();
    std::fs::create_dir(dir.path().join("tmp")).unwrap();
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/xla2tpu-test-cache");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("xla2tpu"))
        .current_dir(dir.path())
        .env("XLA2TPU_CACHE_DIR", cache)
        .env("TMPDIR", dir.path().join("tmp"))
        .arg("run")
        .args(extra)
        .arg("--")
        .arg(&python)
        .arg("train.py")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !dir.path().join("pids").exists() {
        assert!(started.elapsed() < std::time::Duration::from_secs(120), "the program never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(dir.path().join("pids")).unwrap();
    let pids: Vec<i32> = text.split_whitespace().map(|p| p.parse().unwrap()).collect();
    Some((child, dir, [pids[0], pids[1]]))
}

/// Waits (bounded) for xla2tpu to end; checks the program, its grandchild and the temporary
/// directory are gone; returns the exit code and stderr.
fn finish(mut child: std::process::Child, dir: &tempfile::TempDir, pids: [i32; 2]) -> (Option<i32>, String) {
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("xla2tpu run did not end");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    // Reparented orphans are reaped by whoever is init here: a moment.
    let started = std::time::Instant::now();
    while !pids.iter().all(|&p| gone(p)) && started.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let alive: Vec<i32> = pids.iter().copied().filter(|&p| !gone(p)).collect();
    for &p in &alive {
        // SAFETY: the test's own leftover processes.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    assert!(alive.is_empty(), "still running after xla2tpu ended: {alive:?}\n{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path().join("tmp")).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    (status.code(), err)
}

/// A CI step's timeout sends SIGTERM to xla2tpu: the program and what it started are stopped,
/// the temporary directory removed, and xla2tpu exits 128+15.
#[test]
fn sigterm_stops_the_whole_program_and_cleans_up() {
    let Some((child, dir, pids)) = start_sleeper(&[]) else { return };
    // SAFETY: signalling the process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let (code, err) = finish(child, &dir, pids);
    assert_eq!(code, Some(143), "{err}");
    assert!(err.contains("stopped by signal 15"), "{err}");
}

/// SIGINT (Ctrl-C from a parent) and SIGHUP (a closed session) are passed on to the program as
/// they are: it gets the same signal and may handle it.
#[test]
fn sigint_and_sighup_reach_the_program_as_they_are() {
    for signal in [libc::SIGINT, libc::SIGHUP] {
        let Some((child, dir, pids)) = start(TRAPPER, &[]) else { return };
        // SAFETY: signalling the process this test started.
        unsafe { libc::kill(child.id() as i32, signal) };
        let (code, err) = finish(child, &dir, pids);
        assert_eq!(code, Some(128 + signal), "{err}");
        assert_eq!(std::fs::read_to_string(dir.path().join("got")).ok(), Some(signal.to_string()), "{err}");
    }
}

/// A program that ignores the SIGTERM is killed once the 10 s grace period has passed.
#[test]
fn a_program_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let Some((child, dir, pids)) = start(TRAPPER, &[]) else { return };
    let started = std::time::Instant::now();
    // SAFETY: signalling the process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let (code, err) = finish(child, &dir, pids);
    assert_eq!(code, Some(143), "{err}");
    assert!(started.elapsed() >= std::time::Duration::from_secs(10), "not the grace period: {:?}", started.elapsed());
    assert!(!dir.path().join("got").exists(), "{err}");
}

#[test]
fn timeout_stops_the_whole_program() {
    let Some((child, dir, pids)) = start_sleeper(&["--timeout", "1"]) else { return };
    let (code, err) = finish(child, &dir, pids);
    assert_eq!(code, Some(124), "{err}");
    assert!(err.contains("ran longer than --timeout 1s"), "{err}");
}

/// Two ranks printing at once on one pipe, unbuffered (each print is two writes): every line
/// comes out whole; `--rank-prefix` starts each with its rank.
#[test]
fn ranks_lines_stay_whole_and_are_prefixed_on_request() {
    let program = r#"
import os, sys, torch, multiprocessing as mp

def worker(rank):
    os.environ["RANK"] = str(rank)
    for i in range(3000):
        print(f"RESULT rank={rank} i={i} {'x' * 40}")

if __name__ == "__main__":
    ps = [mp.get_context("fork").Process(target=worker, args=(r,)) for r in range(2)]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
"#;
    let line = regex::Regex::new(r"^(\[rank(\d)\]: )?RESULT rank=(\d) i=\d+ x{40}$").unwrap();
    for prefix in [false, true] {
        let Some(python) = python() else { return };
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("train.py"), program).unwrap();
        let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/xla2tpu-test-cache");
        let mut cmd = Command::cargo_bin("xla2tpu").unwrap();
        cmd.current_dir(dir.path()).env("XLA2TPU_CACHE_DIR", cache).env("PYTHONUNBUFFERED", "1");
        cmd.args(["run", "--nproc", "2"]);
        if prefix {
            cmd.arg("--rank-prefix");
        }
        let out = cmd.arg("--").arg(&python).arg("train.py").output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert_eq!(stdout.lines().count(), 6000);
        for l in stdout.lines() {
            let m = line.captures(l).unwrap_or_else(|| panic!("not one whole line: {l:?}"));
            assert_eq!(m.get(1).is_some(), prefix, "{l}");
            if prefix {
                assert_eq!(&m[2], &m[3], "the prefix names the rank that printed: {l}");
            }
        }
    }
}

/// A cached emulator whose files were truncated (a full disk, a cache cleaner) is not trusted:
/// it is unpacked again.
#[test]
fn a_damaged_emulator_cache_is_unpacked_again() {
    let cache = tempfile::tempdir().unwrap();
    let installed = xla2tpu::run::emulator::install(cache.path()).unwrap();
    let loader = installed.pythonpath.join("xla2tpu_emulator/_loader.py");
    let whole = std::fs::read(&loader).unwrap();
    std::fs::write(&loader, &whole[..whole.len() / 2]).unwrap();
    std::fs::write(&installed.registry, "").unwrap();
    let again = xla2tpu::run::emulator::install(cache.path()).unwrap();
    assert_eq!(std::fs::read(again.pythonpath.join("xla2tpu_emulator/_loader.py")).unwrap(), whole);
    assert!(std::fs::metadata(&again.registry).unwrap().len() > 0);
    let entries: Vec<_> = std::fs::read_dir(cache.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(entries.len(), 1, "nothing set aside is left: {entries:?}");
}

/// A process the program started and did not wait for is stopped when the program ends: it is
/// in the program's process group.
#[test]
fn what_outlives_the_program_is_stopped() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let program = r#"
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
with open("pid", "w") as f:
    f.write(str(child.pid))
"#;
    std::fs::write(dir.path().join("train.py"), program).unwrap();
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/xla2tpu-test-cache");
    let out = Command::cargo_bin("xla2tpu")
        .unwrap()
        .current_dir(dir.path())
        .env("XLA2TPU_CACHE_DIR", cache)
        .args(["run", "--"])
        .arg(&python)
        .arg("train.py")
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let pid: i32 = std::fs::read_to_string(dir.path().join("pid")).unwrap().parse().unwrap();
    let started = std::time::Instant::now();
    while !gone(pid) && started.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let alive = !gone(pid);
    if alive {
        // SAFETY: the test's own leftover process.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(!alive, "the program's child outlived xla2tpu run");
}
