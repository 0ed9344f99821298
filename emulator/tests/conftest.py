"""Test helpers. The test process itself runs on the emulator (in-process
tests); scenarios that need a fresh interpreter run as subprocesses."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
EMU_PY = os.path.join(os.path.dirname(HERE), "python")
REPO = os.path.dirname(os.path.dirname(HERE))

# The in-process emulator gets its own chip pool, so that subprocess tests
# (each with their own state dir) never compete with it.
_SESSION_STATE = tempfile.mkdtemp(prefix="xla2tpu-emu-test-")
os.environ["XLA2TPU_EMULATOR_STATE"] = _SESSION_STATE
os.environ["XLA2TPU_EMULATOR_CHIPS"] = "1"
os.environ.pop("XLA2TPU_EMULATOR_REPORT", None)
os.environ.pop("TORCH_TPU_ALLOW_LEGACY_DEVICE_APIS", None)
for _v in ("TORCH_TPU_SLICEBUILDER_ADDRESSES", "TORCH_TPU_TOPOLOGY",
           "TORCH_TPU_XPROF_SESSION_ID", "MASTER_ADDR", "MASTER_PORT"):
  os.environ.pop(_v, None)
if EMU_PY not in sys.path:
  sys.path.insert(0, EMU_PY)

import torch  # noqa: E402  (autoload runs the emulator)

from xla2tpu_emulator import _loader  # noqa: E402

_loader.load()  # no-op if autoload already ran


def read_events(report_dir):
  """All events of a report dir: {pid: [event, ...]}."""
  out = {}
  for name in sorted(os.listdir(report_dir)):
    if not name.endswith(".jsonl"):
      continue
    with open(os.path.join(report_dir, name), encoding="utf-8") as f:
      out[int(name[:-6])] = [json.loads(line) for line in f if line.strip()]
  return out


class Run:
  """Result of a subprocess run on the emulator."""

  def __init__(self, proc, report_dir, script):
    self.proc = proc
    self.returncode = proc.returncode
    self.stdout = proc.stdout
    self.stderr = proc.stderr
    self.report_dir = report_dir
    self.script = script
    self.events = read_events(report_dir)

  def all(self, event=None, kind=None):
    res = []
    for evs in self.events.values():
      for e in evs:
        if (event is None or e["event"] == event) and (
            kind is None or e.get("kind") == kind
        ):
          res.append(e)
    return res

  def line_of(self, marker):
    """1-based line of the script line containing `marker`."""
    with open(self.script, encoding="utf-8") as f:
      for i, line in enumerate(f, 1):
        if marker in line:
          return i
    raise AssertionError(f"marker {marker!r} not in script")


@pytest.fixture
def run_emulated(tmp_path):
  """Runs a Python script (source text) in a fresh interpreter on the emulator."""

  counter = [0]

  def run(source, *, env=None, args=(), timeout=150, name="prog.py", files=None):
    counter[0] += 1
    n = counter[0]
    work = tmp_path / f"work{n}"
    work.mkdir(exist_ok=True)
    for fname, text in (files or {}).items():
      (work / fname).write_text(textwrap.dedent(text))
    script = work / name
    script.write_text(textwrap.dedent(source))
    report = tmp_path / f"report{n}"
    report.mkdir(exist_ok=True)
    state = tmp_path / f"state{n}"
    state.mkdir(exist_ok=True)
    e = {
        k: v for k, v in os.environ.items()
        if not k.startswith(("XLA2TPU_EMULATOR_", "TORCH_TPU_"))
        # Block-buffered output: unbuffered, a print is two writes (text, then
        # newline) and lines from spawned workers sharing the pipe interleave.
        and k not in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE",
                      "LOCAL_RANK", "PYTHONUNBUFFERED")
    }
    e.update({
        "PYTHONPATH": os.pathsep.join([EMU_PY, str(work)]),
        "XLA2TPU_EMULATOR_REPORT": str(report),
        "XLA2TPU_EMULATOR_STATE": str(state),
    })
    e.update(env or {})
    proc = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=str(work),
        env=e,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Run(proc, str(report), str(script))

  return run


@pytest.fixture
def capture_report(tmp_path, monkeypatch):
  """Points the in-process report at a temp dir; returns a reader."""
  from xla2tpu_emulator import report  # pylint: disable=import-outside-toplevel

  d = tmp_path / "inproc-report"
  d.mkdir()
  monkeypatch.setenv("XLA2TPU_EMULATOR_REPORT", str(d))
  monkeypatch.setattr(report, "_fd", None)
  monkeypatch.setattr(report, "_warned", set())

  def events():
    evs = read_events(str(d)).get(os.getpid(), [])
    return evs

  yield events
  if report._fd is not None:  # pylint: disable=protected-access
    os.close(report._fd)  # pylint: disable=protected-access
  report._fd = None  # pylint: disable=protected-access
