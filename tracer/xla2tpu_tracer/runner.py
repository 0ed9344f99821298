"""Pool of forked workers with a per-target timeout and RSS cap.

torch / transformers / diffusers / timm are imported once in the parent; each target
runs in a fresh fork, so a crash, hang or memory blow-up only loses that target. Each
result is written as soon as it is known (profile + index), so an interrupted run
leaves valid files and a re-run resumes.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
import traceback

from . import output
from .recorder import ops_to_json

PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE / 2**20
    except OSError:
        return 0.0


_checkpoint_path = None


def _finalize(res: dict) -> dict:
    res = dict(res)
    stats = res.pop("stats", None) or {}
    ops, host, dyn = ops_to_json(stats)
    dyn = sorted(set(dyn) | set(res.pop("data_dependent", [])))
    res.update(ops=ops, host_syncs=host, dynamic_shape_ops=dyn)
    res.pop("severity", None)
    return res


def checkpoint(res: dict) -> None:
    """Called by a tracer with its best result so far: if a later attempt crashes the
    worker or runs out of time, the parent still gets this one."""
    if _checkpoint_path is None or res.get("status") not in output.GOOD:
        return
    tmp = _checkpoint_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(_finalize(res), f)
    os.replace(tmp, _checkpoint_path)


def _child(target, trace_fn, timeout, result_path, log_path):
    global _checkpoint_path
    _checkpoint_path = result_path + ".partial"
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    code = 0
    try:
        import torch

        torch.manual_seed(0)
        res = _finalize(trace_fn(target, time.time() + timeout))
    except BaseException as e:  # noqa: BLE001
        traceback.print_exc()
        res = {"status": "error", "reason": f"{type(e).__name__}: {e}"[:300]}
        code = 1
    with open(result_path, "w") as f:
        json.dump(res, f)
    sys.stdout.flush()
    os._exit(code)


def _salvage(result_path: str, status: str, reason: str) -> dict:
    """A killed/crashed worker's checkpointed partial result, else the failure."""
    part = result_path + ".partial"
    if os.path.exists(part):
        with open(part) as f:
            res = json.load(f)
        os.remove(part)
        res["status"] = "partial"
        res["notes"] = list(res.get("notes", [])) + [f"a later attempt ended: {reason}"]
        res["reason"] = res.get("reason") or reason
        return res
    return {"status": status, "reason": reason}


def run(targets, trace_fn, out_dir, versions, jobs=2, timeout=60.0, rss_mb=6000, log_dir="tracer/out/logs",
        entries=None, timings_path="tracer/out/timings.jsonl", on_result=None, make_file=output.make_profile,
        keep_failures=False):
    """``on_result(target, res, elapsed_s, peak_rss_mb)``, when given, replaces the corpus
    writer (exact.py merges per-config results with it). Otherwise ``make_file(target, result,
    versions)`` builds the JSON written per target; with ``keep_failures`` it is written for
    failed targets too (crosscheck files record why)."""
    entries = dict(entries or {})
    os.makedirs(log_dir, exist_ok=True)
    tmp_dir = tempfile.mkdtemp(prefix="xla2tpu-trace-")
    pending = list(targets)
    running: dict[int, tuple] = {}
    done = 0
    total = len(pending)
    t_start = time.time()
    timings = open(timings_path, "a", encoding="utf-8")

    def _on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _on_term)

    def finish(target, res, elapsed, peak):
        nonlocal done
        if on_result is not None:
            return on_result(target, res, elapsed, peak)
        done += 1
        status = res.get("status", "error")
        prev = entries.get(target.id)
        if prev and prev["status"] in output.GOOD and status not in output.GOOD:
            # A retry that did worse (e.g. a timeout under load) keeps the earlier result.
            print(f"[{done}/{total}] {target.id}: retry gave {status} ({res.get('reason', '')[:80]}), "
                  f"keeping {prev['status']}", flush=True)
            return
        if status in output.GOOD and res.get("ops"):
            prof = make_file(target, res, versions)
            output.write_json(output.profile_path(out_dir, target.id), prof)
        else:
            if status in output.GOOD:
                status, res["reason"] = "error", res.get("reason") or "no ops recorded"
            # A failed re-run must not leave a stale profile behind.
            stale = output.profile_path(out_dir, target.id)
            if keep_failures:
                output.write_json(stale, make_file(target, dict(res, status=status), versions))
            elif os.path.exists(stale):
                os.remove(stale)
        entries[target.id] = output.index_entry(target, status, res.get("method", ""), res.get("reason", ""))
        output.write_index(out_dir, entries, versions)
        timings.write(json.dumps({"id": target.id, "status": status, "s": round(elapsed, 2),
                                  "rss_mb": round(peak), "nops": len(res.get("ops") or [])}) + "\n")
        timings.flush()
        print(f"[{done}/{total} {time.time() - t_start:6.0f}s] {target.id:60s} {status:8s} "
              f"{elapsed:5.1f}s {peak:6.0f}MB {res.get('method', '')} {res.get('reason', '')[:100]}", flush=True)

    try:
        while pending or running:
            while pending and len(running) < jobs:
                target = pending.pop(0)
                safe = target.id.replace("/", "__")
                result_path = os.path.join(tmp_dir, safe + ".json")
                log_path = os.path.join(log_dir, safe + ".log")
                sys.stdout.flush()
                pid = os.fork()
                if pid == 0:
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    _child(target, trace_fn, timeout, result_path, log_path)
                running[pid] = (target, time.time(), result_path, 0.0)
            time.sleep(0.1)
            for pid in list(running):
                target, start, result_path, peak = running[pid]
                wpid, status = os.waitpid(pid, os.WNOHANG)
                elapsed = time.time() - start
                if wpid == 0:
                    rss = _rss_mb(pid)
                    peak = max(peak, rss)
                    running[pid] = (target, start, result_path, peak)
                    reason = None
                    if rss > rss_mb:
                        reason = ("crash", f"killed: RSS > {rss_mb} MB")
                    elif elapsed > timeout + 5:
                        reason = ("timeout", f"timeout after {timeout:.0f}s")
                    if reason:
                        os.kill(pid, signal.SIGKILL)
                        os.waitpid(pid, 0)
                        del running[pid]
                        finish(target, _salvage(result_path, reason[0], reason[1]), elapsed, peak)
                    continue
                del running[pid]
                if os.path.exists(result_path):
                    with open(result_path) as f:
                        res = json.load(f)
                    os.remove(result_path)
                    if os.path.exists(result_path + ".partial"):
                        os.remove(result_path + ".partial")
                else:
                    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
                    res = _salvage(result_path, "crash",
                                   f"worker died (signal {sig}, exit {os.waitstatus_to_exitcode(status)})")
                finish(target, res, elapsed, peak)
    finally:
        for pid in running:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        timings.close()
    return entries
