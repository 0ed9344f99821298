"""Multi-process behaviour (fresh interpreters): DDP, launch env, chip
claims, import blockers, and the report in spawn/fork/torchrun children."""

import datetime
import os
import socket

import pytest
import torch
import torch.distributed as dist

from xla2tpu_emulator import distributed as emu_dist


def _free_port():
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return str(s.getsockname()[1])


DDP_SCRIPT = """
import os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def data(rank):
    g = torch.Generator().manual_seed(100 + rank)
    return torch.randn(8, 4, generator=g)

def worker(rank, world):
    dist.init_process_group("tpu_dist", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    ref = torch.nn.Linear(4, 2)
    ref.load_state_dict(model.state_dict())
    model = model.to("tpu")
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    ddp(data(rank).to("tpu")).pow(2).sum().backward()
    grad = model.weight.grad.detach().cpu()
    opt.step()
    # expected: gradient averaged over both ranks' data
    for r in range(world):
        ref(data(r)).pow(2).sum().div(world).backward()
    ok_grad = torch.allclose(grad, ref.weight.grad, atol=1e-6)
    ws = [torch.zeros_like(model.weight) for _ in range(world)]
    dist.all_gather(ws, model.weight.detach())
    same = all(torch.equal(ws[0].cpu(), w.cpu()) for w in ws)
    print(f"RANK {dist.get_rank()} WORLD {dist.get_world_size()} GRAD_AVG {ok_grad} PARAMS_EQUAL {same}", flush=True)
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=2)
    mp.spawn(worker, args=(2,), nprocs=2)
"""


def test_ddp_two_processes(run_emulated):
  r = run_emulated(
      DDP_SCRIPT,
      env={"XLA2TPU_EMULATOR_CHIPS": "2", "MASTER_ADDR": "localhost",
           "MASTER_PORT": _free_port()},
  )
  assert r.returncode == 0, r.stderr[-3000:]
  lines = sorted(l for l in r.stdout.splitlines() if l.startswith("RANK"))
  assert lines == [
      "RANK 0 WORLD 2 GRAD_AVG True PARAMS_EQUAL True",
      "RANK 1 WORLD 2 GRAD_AVG True PARAMS_EQUAL True",
  ]
  assert len(r.events) == 3  # parent + 2 spawned workers
  summaries = sorted(
      (e for e in r.all("summary")), key=lambda e: (e["rank"] is not None, e["rank"])
  )
  assert [s["rank"] for s in summaries] == [None, 0, 1]
  assert [s["world_size"] for s in summaries] == [None, 2, 2]
  assert summaries[0]["device_initialized"] is False
  assert all(s["device_initialized"] for s in summaries[1:])
  assert all(s["ops"].get("c10d::allreduce_", 0) >= 1 for s in summaries[1:])
  assert all(s["ops"].get("aten::linear", 0) >= 1 for s in summaries[1:])
  assert len(r.all("start")) == 3


DEVICE_ID_SCRIPT = """
import torch, torch.distributed as dist, torch.multiprocessing as mp

def worker(rank, world):
    # Lightning, accelerate and torchtitan bind the group to the device up front.
    dist.init_process_group("tpu_dist", rank=rank, world_size=world, device_id=torch.device("tpu", 0))
    t = torch.full((2,), float(rank + 1), device="tpu")
    dist.all_reduce(t)
    print(f"RANK {rank} SUM {t.cpu().tolist()}", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=2)
    mp.spawn(worker, args=(2,), nprocs=2)
"""


def test_process_group_bound_to_the_device(run_emulated):
  r = run_emulated(
      DEVICE_ID_SCRIPT,
      env={"XLA2TPU_EMULATOR_CHIPS": "2", "MASTER_ADDR": "localhost",
           "MASTER_PORT": _free_port()},
  )
  assert r.returncode == 0, r.stderr[-3000:]
  lines = sorted(l for l in r.stdout.splitlines() if l.startswith("RANK"))
  assert lines == ["RANK 0 SUM [3.0, 3.0]", "RANK 1 SUM [3.0, 3.0]"]


UNUSED_PARAMETERS_SCRIPT = """
import sys
import torch, torch.distributed as dist, torch.multiprocessing as mp

class TwoHeads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.used = torch.nn.Linear(2, 2)
        self.unused = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.used(x)

def worker(rank, world, device, backend):
    dist.init_process_group(backend, rank=rank, world_size=world)
    torch.manual_seed(0)
    model = TwoHeads().to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
    x = torch.arange(2.0).reshape(1, 2) + rank
    ddp(x.to(device)).sum().backward()  # backward-line
    grads = [None if p.grad is None else round(p.grad.sum().item(), 6) for p in model.parameters()]
    print(f"RANK {rank} GRADS {grads}", flush=True)

if __name__ == "__main__":
    device, backend = sys.argv[1], sys.argv[2]
    if device == "tpu":
        torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=2)
    mp.spawn(worker, args=(2, device, backend), nprocs=2)
"""


def test_unused_parameter_search_runs_as_on_the_cpu(run_emulated):
  """DDP(find_unused_parameters=True), the HF Trainer's default: the reducer gets its pinned
  host memory from the emulator's C++ hooks, as from TorchTPU's, and averages as on the CPU
  (the unused head keeps no gradient)."""
  env = {"XLA2TPU_EMULATOR_CHIPS": "2", "MASTER_ADDR": "localhost"}
  tpu = run_emulated(UNUSED_PARAMETERS_SCRIPT, args=["tpu", "tpu_dist"], env={**env, "MASTER_PORT": _free_port()})
  assert tpu.returncode == 0, tpu.stderr[-3000:]
  assert not [w for w in tpu.all("warning") if w["kind"] == "not_emulated"]
  cpu = run_emulated(UNUSED_PARAMETERS_SCRIPT, args=["cpu", "gloo"], env={**env, "MASTER_PORT": _free_port()})
  assert cpu.returncode == 0, cpu.stderr[-3000:]
  lines = sorted(l for l in tpu.stdout.splitlines() if l.startswith("RANK"))
  assert len(lines) == 2 and "None, None]" in lines[0], lines
  assert lines == sorted(l for l in cpu.stdout.splitlines() if l.startswith("RANK"))


def test_unused_parameter_search_without_a_compiler_is_reported_as_not_emulated(run_emulated, tmp_path):
  env = {"XLA2TPU_EMULATOR_CHIPS": "2", "MASTER_ADDR": "localhost", "MASTER_PORT": _free_port(),
         "CXX": "false", "XLA2TPU_CACHE_DIR": str(tmp_path / "cache")}
  r = run_emulated(UNUSED_PARAMETERS_SCRIPT, args=["tpu", "tpu_dist"], env=env)
  assert r.returncode != 0
  assert "find_unused_parameters=False" in r.stderr, r.stderr[-3000:]
  assert "getPinnedMemoryAllocator" not in r.stderr, r.stderr[-3000:]
  warnings = [w for w in r.all("warning") if w["kind"] == "not_emulated"]
  assert warnings and warnings[0]["line"] == r.line_of("backward-line"), warnings
  assert not r.all("incompatibility"), "not a TorchTPU incompatibility"


def test_pinned_host_memory_comes_from_the_backend():
  """torch.empty(..., pin_memory=True) asks the backend's hooks for their allocator, as on
  TorchTPU (a Python backend's hooks have none)."""
  p = torch.empty(3, pin_memory=True)
  assert p.is_pinned()
  assert not torch.empty(3).is_pinned()


NO_MASTER_SCRIPT = """
import torch, torch.distributed as dist, torch.multiprocessing as mp

def worker(rank, world):
    dist.init_process_group("tpu_dist", rank=rank, world_size=world)  # init-line

if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=2)
    mp.spawn(worker, args=(2,), nprocs=2)
"""


def test_missing_master_addr_gives_pytorch_error(run_emulated):
  r = run_emulated(NO_MASTER_SCRIPT, env={"XLA2TPU_EMULATOR_CHIPS": "2"})
  assert r.returncode != 0
  msg = (
      "Error initializing torch.distributed using env:// rendezvous:"
      " environment variable MASTER_ADDR expected, but not set"
  )
  assert msg in r.stderr
  # recorded where it happened: in the spawned worker(s), at the user line
  worker_exc = [
      e for pid, evs in r.events.items() for e in evs
      if e["event"] == "exception" and e["type"] == "ValueError"
  ]
  assert worker_exc
  assert worker_exc[0]["line"] == r.line_of("# init-line")
  assert r.all("exception", None)  # the parent records ProcessRaisedException too


def test_process_group_without_launch_env(run_emulated):
  r = run_emulated(
      """
      import torch, torch.distributed as dist
      dist.init_process_group("tpu_dist")  # pg-line
      """,
      env={"MASTER_ADDR": "localhost", "MASTER_PORT": _free_port(),
           "RANK": "0", "WORLD_SIZE": "1"},
  )
  assert r.returncode != 0
  expected = (
      "RuntimeError: missing required environment variables for distributed"
      " training: TORCH_TPU_SLICEBUILDER_ADDRESSES, TORCH_TPU_TOPOLOGY,"
      " TORCH_TPU_XPROF_SESSION_ID"
  )
  assert expected in r.stderr
  ev = r.all("incompatibility", "launch_env")
  assert len(ev) == 1 and ev[0]["line"] == r.line_of("# pg-line")


def test_world_size_must_match_slicebuilder_addresses(monkeypatch):
  monkeypatch.setenv("TORCH_TPU_SLICEBUILDER_ADDRESSES", "localhost:1,localhost:2")
  monkeypatch.setenv("TORCH_TPU_TOPOLOGY", "1,2,1")
  monkeypatch.setenv("TORCH_TPU_XPROF_SESSION_ID", "1")
  with pytest.raises(RuntimeError, match="invalid world_size configuration: expected 1 or 2"):
    emu_dist.create_process_group(dist.HashStore(), 0, 3, datetime.timedelta(seconds=5))
  backends = dist.Backend._plugins  # pylint: disable=protected-access
  assert "TPU_DIST" in backends and "TPU" in backends


CLAIM_SCRIPT = """
import os, sys, time, torch, torch.multiprocessing as mp

def worker(rank, world):
    try:
        x = torch.ones(2, device="tpu")  # claim-line
        print("CLAIMED", rank, flush=True)
    finally:
        # hold the chip until every worker has tried to claim one
        open(f"arrived-{rank}", "w").close()
        deadline = time.time() + 60
        while time.time() < deadline and not all(
                os.path.exists(f"arrived-{r}") for r in range(world)):
            time.sleep(0.05)

if __name__ == "__main__":
    if sys.argv[1] == "parent-touches":
        y = torch.zeros(1, device="tpu")
        print("PARENT", os.getpid(), flush=True)
    mp.spawn(worker, args=(2,), nprocs=2)
"""


@pytest.mark.parametrize("mode,chips", [("plain", "1"), ("parent-touches", "2")])
def test_more_processes_than_chips(run_emulated, mode, chips):
  r = run_emulated(CLAIM_SCRIPT, args=(mode,), env={"XLA2TPU_EMULATOR_CHIPS": chips})
  assert r.returncode != 0
  assert r.stdout.count("CLAIMED") == 1
  assert "The TPU is already in use by process with pid" in r.stderr
  busy = r.all("incompatibility", "device_busy")
  assert len(busy) == 1
  assert busy[0]["line"] == r.line_of("# claim-line")
  assert busy[0]["function"] == "worker"
  if mode == "parent-touches":
    parent_pid = int(r.stdout.split("PARENT")[1].split()[0])
    assert f"process with pid {parent_pid}" in busy[0]["message"]


FORK_SCRIPT = """
import multiprocessing as mp, torch

def child(q):
    x = torch.ones(3, device="tpu")
    q.put(x.sum().item())
    torch.median(x)  # child-missing-op

def late_child():
    torch.ones(1, device="tpu")  # bad-fork-line

if __name__ == "__main__":
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start(); print("GOT", q.get(), flush=True); p.join()
    torch.zeros(1, device="tpu")  # the parent initializes the TPU now
    p2 = ctx.Process(target=late_child)
    p2.start(); p2.join()
    print("EXIT", p.exitcode, p2.exitcode, flush=True)
"""


def test_fork_children_report(run_emulated):
  r = run_emulated(FORK_SCRIPT, env={"XLA2TPU_EMULATOR_CHIPS": "1"})
  assert r.returncode == 0, r.stderr[-2000:]
  assert "GOT 3.0" in r.stdout and "EXIT 1 1" in r.stdout
  assert len(r.events) == 3
  starts = {e["pid"]: e for e in r.all("start")}
  parent = [p for p, e in starts.items() if e["ppid"] != p and p not in
            {e2["pid"] for e2 in starts.values() if e2["ppid"] in starts}]
  children = [p for p, e in starts.items() if e["ppid"] in starts]
  assert len(children) == 2 and len(parent) == 1
  for pid in children:
    kinds = [e["event"] for e in r.events[pid]]
    assert kinds[0] == "start" and kinds[-1] == "summary"
  missing = r.all("incompatibility", "missing_op")
  assert len(missing) == 1 and missing[0]["line"] == r.line_of("# child-missing-op")
  bad = r.all("incompatibility", "bad_fork")
  assert len(bad) == 1 and bad[0]["line"] == r.line_of("# bad-fork-line")
  excs = r.all("exception")
  assert {e["type"] for e in excs} == {"NotImplementedError", "RuntimeError"}
  keys = {
      "start": {"event", "schema", "pid", "ppid", "argv", "torch", "chips", "time"},
      "incompatibility": {"event", "kind", "message", "op", "file", "line",
                          "function", "stack", "time"},
      "exception": {"event", "type", "message", "file", "line"},
      "summary": {"event", "rank", "world_size", "device_initialized", "ops",
                  "host_syncs", "time"},
  }
  for evs in r.events.values():
    for e in evs:
      assert set(e) == keys[e["event"]], e
  assert all(e["schema"] == "xla2tpu-emulator/1" for e in r.all("start"))
  for s in r.all("summary"):
    for h in s["host_syncs"]:
      assert set(h) == {"kind", "count", "file", "line", "function"}
  first = [e for pid in children for e in r.events[pid] if e["event"] == "summary"]
  assert any(s["ops"].get("aten::sum.IntList_out") for s in first)
  assert any(h["kind"] == "item" for s in first for h in s["host_syncs"])


def test_torch_xla_and_optimum_tpu_imports_blocked(run_emulated):
  r = run_emulated(
      """
      import importlib.util
      import torch
      assert importlib.util.find_spec("torch_xla") is None  # probes: not installed
      from transformers.utils import is_torch_xla_available
      assert not is_torch_xla_available()
      try:
          import optimum.tpu  # optimum-line
      except ImportError as e:
          print("OPTIMUM", e)
      import torch_xla.core.xla_model as xm  # xla-line
      """
  )
  assert r.returncode != 0
  line = r.line_of("# xla-line")
  assert f"prog.py:{line}: `import torch_xla.core.xla_model as xm" in r.stderr
  assert "ModuleNotFoundError" in r.stderr and "xla2tpu migrate" in r.stderr
  ev = r.all("incompatibility", "torch_xla_import")
  assert len(ev) == 1 and ev[0]["line"] == line
  # a caught import is the program's own fallback, not an incompatibility: a warning says so
  assert not r.all("incompatibility", "optimum_tpu_import")
  [caught] = r.all("warning", "caught_import")
  assert caught["line"] == r.line_of("# optimum-line")
  assert "OPTIMUM" in r.stdout
  # without torch imported first, the stub package itself refuses
  r2 = run_emulated("import torch_xla\n", name="stub.py")
  assert r2.returncode != 0
  assert "stub.py:1: `import torch_xla`" in r2.stderr
  assert r2.all("incompatibility", "torch_xla_import")[0]["line"] == 1


def test_a_caught_torch_xla_import_is_no_incompatibility(run_emulated):
  r = run_emulated(
      """
      import torch

      def load():
          import torch_xla.core.xla_model as xm  # in-function
          return xm

      try:
          import torch_xla  # probe
          HAS_XLA = True
      except ImportError:
          HAS_XLA = False
      try:
          load()
      except (ValueError, ModuleNotFoundError):
          pass
      try:
          import torch_xla.runtime  # wrong-handler
      except ValueError:
          pass
      """
  )
  assert r.returncode != 0  # the last import is not caught
  caught = sorted(w["line"] for w in r.all("warning", "caught_import"))
  assert caught == sorted([r.line_of("# probe"), r.line_of("# in-function")]), caught
  [uncaught] = r.all("incompatibility", "torch_xla_import")
  assert uncaught["line"] == r.line_of("# wrong-handler")


def test_launch_env_printer_and_torchrun(run_emulated):
  r = run_emulated(
      "import runpy, sys\nsys.argv = ['x']\nrunpy.run_module('torch.tpu.distributed', run_name='__main__')\n",
      env={"XLA2TPU_EMULATOR_CHIPS": "2"},
  )
  assert r.returncode == 0, r.stderr
  out = dict(l.split("=", 1) for l in r.stdout.split())
  assert out["TORCH_TPU_TOPOLOGY"] == '"1,2,1"'
  assert out["WORLD_SIZE"] == "2"
  assert out["TORCH_TPU_SLICEBUILDER_ADDRESSES"].count("localhost:") == 2
  assert "MASTER_ADDR" not in out
  env = {k: v.strip('"') for k, v in out.items() if k.startswith("TORCH_TPU")}
  env["XLA2TPU_EMULATOR_CHIPS"] = "2"
  worker = """
  import torch, torch.distributed as dist
  dist.init_process_group("tpu")
  t = torch.ones(2, device="tpu") * (dist.get_rank() + 1)
  dist.all_reduce(t)
  open(f"sum-{dist.get_rank()}.txt", "w").write(str(t.cpu().tolist()))
  dist.destroy_process_group()
  """
  launcher = f"""
  import sys
  from torch.distributed.run import main
  main(["--nproc_per_node=2", "--master_port={_free_port()}", "worker.py"])
  """
  r = run_emulated(launcher, env=env, files={"worker.py": worker}, name="launch.py")
  assert r.returncode == 0, r.stderr[-3000:]
  work = os.path.dirname(r.script)
  for rank in (0, 1):
    with open(os.path.join(work, f"sum-{rank}.txt"), encoding="utf-8") as f:
      assert f.read() == "[3.0, 3.0]"
  ranked = sorted(s["rank"] for s in r.all("summary") if s["rank"] is not None)
  assert ranked == [0, 1]
  assert len(r.all("start")) == 3
