"""Where traces and runs go: forked local workers (runner.py) or Ray tasks.

Both run the function their caller gives (``exact``'s trace of a config, ``execute``'s run of
a type) and hand its JSON result to the same ``on_result(key, result, elapsed_s)``; only
failures of the executor itself (timeout, dead worker) are described differently. This module
knows no task: its callers import it, never the other way.
"""

from __future__ import annotations

import os
import time

# Ray: time a task may spend before its trace starts (worker process start, importing
# torch + transformers) on top of --timeout; the trace itself stops at --timeout.
RAY_STARTUP_GRACE_S = 90.0


def run_local(items, trace, on_result, jobs=2, timeout=120.0, memory_mb=6000, log_dir="tracer/out/exact-logs"):
    """items: [(key, config dict)], each traced by ``trace(config, deadline, memory_mb)`` in
    forked workers with runner.py's timeout and RSS cap."""
    from . import runner, targets
    from .target import Target

    if not items:
        return
    targets.preload([])  # torch/transformers infrastructure once, before forking
    configs = dict(items)

    def trace_fn(target, deadline):
        # runner._child seeds and finalizes; run_one's own seeding is the same.
        import torch

        torch.set_num_threads(1)
        return trace(configs[target.name], deadline, memory_mb)

    def done(target, res, elapsed, peak):
        on_result(target.name, res, elapsed)

    os.makedirs(log_dir, exist_ok=True)
    runner.run([Target("config", k) for k, _ in items], trace_fn, None, {}, jobs=jobs, timeout=timeout,
               rss_mb=memory_mb, log_dir=log_dir, timings_path=os.path.join(log_dir, "timings.jsonl"),
               on_result=done)


def _ray_task(run, d, timeout, memory_mb):
    """Runs ``run(d, timeout, memory_mb)`` on a Ray worker (``run`` travels by reference: a
    module-level function the worker imports). A Python error is a result (status error), not a
    task failure: Ray's retries are kept for dead workers."""
    for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(k, "1")
    os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    try:
        return run(d, timeout, memory_mb)
    except BaseException as e:  # noqa: BLE001  (same shape as runner._child's failure)
        return {"status": "error", "reason": f"{type(e).__name__}: {e}"[:300]}


def _describe(e) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]


def run_ray(address, items, run, on_result, jobs=None, timeout=120.0, memory_mb=6000, retries=1):
    """``run(config, timeout, memory_mb)`` for each of ``items`` as Ray tasks (1 CPU, ``memory_mb`` of the memory resource, ``retries`` re-runs of a dead
    worker, one task per worker process so no state leaks between traces, as with local
    forks), results taken with ``ray.wait`` as they finish; a task past its time is
    cancelled with ``ray.cancel(force=True)``.

    Cluster workers must import this package with the driver's versions (same venv,
    PYTHONPATH=tracer); a result traced with other versions is recorded as an error."""
    if not items:
        return
    import ray

    ray.init(address=address, log_to_driver=False, logging_level="WARNING")
    try:
        mem = memory_mb * 2**20
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        if not any(n.get("Resources", {}).get("memory", 0) >= mem for n in nodes):
            biggest = max((n.get("Resources", {}).get("memory", 0) for n in nodes), default=0) / 2**20
            raise SystemExit(f"no node of the Ray cluster at {address} offers memory={memory_mb} MB "
                             f"(largest: {biggest:.0f} MB); lower --memory-mb")
        cpus = int(ray.cluster_resources().get("CPU", 1))
        jobs = jobs or max(1, cpus)
        task = ray.remote(num_cpus=1, memory=mem, max_retries=retries, max_calls=1)(_ray_task)
        pending = list(items)
        running = {}  # ObjectRef -> (key, submitted at)
        limit = timeout + RAY_STARTUP_GRACE_S
        print(f"ray: {address}, {cpus} CPUs, {jobs} tasks in flight", flush=True)
        while pending or running:
            # Submitting only as many tasks as run at once makes "submitted" mean "started"
            # (give or take worker start-up), which the per-task timeout is measured from.
            while pending and len(running) < jobs:
                key, d = pending.pop(0)
                running[task.remote(run, d, timeout, memory_mb)] = (key, time.time())
            now = time.time()
            wait_s = max(0.1, min(t + limit for _, t in running.values()) - now)
            ready, _ = ray.wait(list(running), num_returns=1, timeout=min(wait_s, 5.0))
            for ref in ready:
                key, t = running.pop(ref)
                try:
                    res = ray.get(ref)
                except ray.exceptions.RayError as e:  # the worker died (after its retries), OOM-killed, ...
                    res = {"status": "crash", "reason": _describe(e)}
                on_result(key, res, time.time() - t)
            now = time.time()
            for ref, (key, t) in list(running.items()):
                if now - t > limit:
                    ray.cancel(ref, force=True)
                    del running[ref]
                    on_result(key, {"status": "timeout", "reason": f"timeout after {timeout:.0f}s"}, now - t)
    finally:
        ray.shutdown()
