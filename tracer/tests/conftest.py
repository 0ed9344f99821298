import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

TRACER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TRACER)


@pytest.fixture(scope="session")
def ray_head():
    """A real Ray head on 127.0.0.1 for the session's Ray tests (`ray start --head --block` in a
    new process group, a private temp dir, 2 CPUs), its workers importing this tracer; yields
    its address. Only that process group is killed at the end. Without ray installed the tests
    skip, unless XLA2TPU_REQUIRE_TRACER is set (CI), where they fail."""
    _require_ray()
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    port = _free_port()
    # A short private temp dir: Ray's unix socket paths must stay under 108 bytes.
    temp_dir = tempfile.mkdtemp(prefix="xr", dir="/tmp")
    log = os.path.join(temp_dir, "head.log")
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0",
               PYTHONPATH=os.pathsep.join(p for p in (TRACER, os.environ.get("PYTHONPATH")) if p))
    with open(log, "w") as logf:
        proc = subprocess.Popen(
            [ray_bin, "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
             "--disable-usage-stats", "--include-dashboard=false", "--temp-dir", temp_dir],
            stdout=logf, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        t0 = time.time()
        _wait_for_port(port, proc, log)
        print(f"ray head on port {port} in {time.time() - t0:.1f}s", file=sys.stderr)
        yield f"127.0.0.1:{port}"
    finally:
        _stop_head(proc, temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
        assert not os.path.exists(temp_dir), f"{temp_dir} left behind"


def _require_ray():
    try:
        import ray  # noqa: F401
    except ImportError:
        if os.environ.get("XLA2TPU_REQUIRE_TRACER"):
            pytest.fail("XLA2TPU_REQUIRE_TRACER is set but ray is not installed: run tracer/setup_venv.sh")
        pytest.skip("ray not installed (tracer/setup_venv.sh installs it)")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port, proc, log, limit=90.0):
    end = time.time() + limit
    while time.time() < end:
        if proc.poll() is not None:
            raise AssertionError(f"ray start exited with {proc.returncode}:\n{open(log).read()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"Ray head not listening on {port} after {limit}s:\n{open(log).read()[-3000:]}")


def _stop_head(proc, temp_dir):
    """Only what this test started: the `ray start` process group, then any process still
    naming the test's own temp dir (checked by PID)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=3)  # ray drains for up to 30 s on SIGTERM: do not wait for it
        except (subprocess.TimeoutExpired, ProcessLookupError):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)
    end = time.time() + 15
    while True:
        left = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    state, _, pgrp = f.read().rsplit(b")", 1)[1].split()[:3]
                if state == b"Z":
                    continue  # exited, waiting to be reaped
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    ours = int(pgrp) == proc.pid or temp_dir.encode() in f.read()
            except (OSError, ValueError, IndexError):
                continue
            if ours:
                left.append(int(pid))
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
        if not left or time.time() > end:
            break
        time.sleep(0.2)  # killed processes may still write into temp_dir while they exit
