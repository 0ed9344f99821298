"""Execution profiles: every profiled type runs on the strict emulated TorchTPU 0.2.0.

An op profile says which ATen ops a model dispatches on the CPU; it cannot see what only a
device shows: model code that builds tensors on the CPU inside ``forward`` and mixes them with
device tensors, kernels chosen by device type, dtypes under TorchTPU's autocast, TorchTPU APIs
that raise when library code reaches them. Here each type's tiny-config model (the tracer's own
recipe, real tensors) runs:

1. on the CPU, as the reference: a phase that fails there is the harness's limit, not the
   chip's, and the type is ``unknown`` for it;
2. on ``tpu`` under the emulator (``emulator/python``, the same code ``xla2tpu run`` loads):
   inference, then a training step (forward, backward, ``AdamW.step``), in float32 and under
   ``torch.autocast("tpu")`` (bfloat16), each run recording pass or its first failure.

What the harness does, a user's program would do: its inputs are put on the device. Tensors
the harness (this package) passes to a module or to a torch function are moved to ``tpu``
(a global module pre-hook and a ``TorchFunctionMode``, both looking at the calling frame);
tensors the library creates stay where the library puts them, so a CPU tensor built inside
``forward`` fails as it would on a TPU, at the library's line.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import sys
import time

SCHEMA = 1
PRECISIONS = ("float32", "bf16-autocast")
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
EMULATOR_PYTHON = os.path.join(os.path.dirname(os.path.dirname(_PKG_DIR)), "emulator", "python")

# Failure kinds, in the words the sweep report uses.
KINDS = ("missing_op", "device_mix", "dtype", "api_raises", "not_emulated", "other")


def load_emulator() -> None:
    """Loads the emulator without initializing the device, so forked workers can claim one
    chip each. ``emulator/python`` goes first on ``sys.path`` as under ``xla2tpu run``: its
    import blockers then hide torch_xla from availability probes, as on a TorchTPU host."""
    if EMULATOR_PYTHON not in sys.path:
        sys.path.insert(0, EMULATOR_PYTHON)
    import torch_tpu  # noqa: F401


def emulator_version() -> str:
    from importlib.metadata import PathDistribution
    from pathlib import Path

    dist = Path(EMULATOR_PYTHON) / "xla2tpu_emulator-0.2.0.dist-info"
    return PathDistribution(dist).version


# --------------------------------------------------------------------------- the harness's tensors
def _is_harness_frame(frame) -> bool:
    return frame.f_code.co_filename.startswith(_PKG_DIR)


def _torch_function_caller(frame):
    """Who called the torch function a mode sees: the frame itself for a C function; for a
    Python one (``F.cross_entropy``), the caller of the function that ``handle_torch_function``
    (torch/overrides.py) was called from. Only that one level: torch's own Python code (an
    optimizer's ``_foreach_add_``) is torch's, not the harness's."""
    if frame.f_code.co_filename.endswith(os.path.join("torch", "overrides.py")):
        frame = frame.f_back.f_back if frame.f_back is not None else None
    return frame


def _to_tpu(tree):
    import torch
    from torch.utils._pytree import tree_map

    def move(x):
        if isinstance(x, torch.Tensor) and x.device.type == "cpu":
            return x.to("tpu")
        return x

    with torch._C.DisableTorchFunction():  # not through harness_on_device's own mode
        return tree_map(move, tree)


def _any_on_device(tree) -> bool:
    import torch
    from torch.utils._pytree import tree_leaves

    with torch._C.DisableTorchFunction():
        return any(isinstance(x, torch.Tensor) and x.device.type == "tpu" for x in tree_leaves(tree))


@contextlib.contextmanager
def harness_on_device():
    """While active, tensors the harness hands to a module or a torch function go to tpu."""
    import torch
    from torch.overrides import TorchFunctionMode

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            try:
                frame = _torch_function_caller(sys._getframe(1))
            except ValueError:  # called from C with no Python caller (autograd's engine thread)
                frame = None
            # Attribute reads (``t.device``, ``t.shape``) reach the mode too: they move nothing.
            # Only a call that already involves a device tensor moves the rest (labels for a
            # loss over the model's output): the harness building its inputs on the CPU, in
            # place (``patches[:, :, 0] = ...``), must keep writing into its own tensors.
            if frame is not None and _is_harness_frame(frame) and getattr(func, "__name__", "") != "__get__" \
                    and _any_on_device((args, kwargs)):
                args, kwargs = _to_tpu((args, kwargs))
            return func(*args, **kwargs)

    module_call = torch.nn.Module.__call__

    def call(self, *args, **kwargs):
        # (The global forward pre-hook cannot see keyword arguments, the way HF models are called.)
        try:
            harness = _is_harness_frame(sys._getframe(1))
        except ValueError:  # called from C with no Python caller (a hook run by autograd's engine)
            harness = False
        if harness:
            args, kwargs = _to_tpu((args, kwargs))
        return module_call(self, *args, **kwargs)

    torch.nn.Module.__call__ = call
    try:
        with Mode():
            yield
    finally:
        torch.nn.Module.__call__ = module_call


# --------------------------------------------------------------------------- failures
_MISSING = re.compile(r"'?(aten::[\w.]+|[\w.]+)'? is not implemented for TPU")
_METHOD = re.compile(r"\(when checking argument in method (aten::[\w.]+)\)")
_NO_BACKEND = re.compile(r"Could not run '(aten::[\w.]+)' with arguments from the '\w*(?:PrivateUse1|tpu)' backend")
# The emulator computes with CPU kernels: their own dtype coverage and oneDNN primitives say
# nothing about TorchTPU's kernels, so such a failure is not checked, not failed.
_CPU_KERNEL = re.compile(r'"\w+_cpu" not implemented for|could not create a primitive descriptor')
_DTYPE = re.compile(r"dtype|scalar type|BFloat16|Half|expected .*Float|found .*Float|must have the same type", re.I)


def _library_site(tb) -> str | None:
    """Innermost frame in the model's library (not torch, the emulator, this package or the
    stdlib): where the model code did what failed, relative to site-packages."""
    import traceback

    import torch

    skip = (os.path.dirname(torch.__file__), EMULATOR_PYTHON, _PKG_DIR, os.path.dirname(os.__file__) + os.sep)
    site = None
    for fs in traceback.extract_tb(tb):
        f = os.path.abspath(fs.filename)
        if any(f.startswith(s) for s in skip) or f.startswith("<"):
            continue
        marker = f.rfind("site-packages" + os.sep)
        rel = f[marker + len("site-packages") + 1:] if marker >= 0 else f
        site = f"{rel}:{fs.lineno}"
    return site


def classify(exc: BaseException, events: list) -> dict:
    """Kind, op and library site of a failure on tpu. The emulator's own incompatibility
    event, recorded before it raised, names the kind; torch's errors are read from their text."""
    message = f"{type(exc).__name__}: {exc}".strip()
    first_line = message.splitlines()[0][:400]
    inc = next((e for e in events if e.get("event") == "incompatibility"), None)
    op = None
    if inc is not None:
        kind = {"missing_op": "missing_op", "device_mismatch": "device_mix", "not_emulated": "not_emulated",
                "unsupported_dtype": "dtype"}.get(inc.get("kind"), "api_raises")
        op = inc.get("op")
    elif _MISSING.search(message) or _NO_BACKEND.search(message):
        kind = "missing_op"
    elif _CPU_KERNEL.search(message):
        kind = "not_emulated"
    elif "device" in message and ("tpu" in message or "cpu" in message) and (
            "same device" in message or "two devices" in message or "Input type" in message):
        kind = "device_mix"
    elif "torch.accelerator" in message or "TorchTpu" in message:
        kind = "api_raises"
    elif _DTYPE.search(message):
        kind = "dtype"
    else:
        kind = "other"
    if op is None:
        m = _MISSING.search(message) or _NO_BACKEND.search(message) or _METHOD.search(message)
        op = m.group(1) if m else None
    if op and not op.startswith("aten::") and "::" not in op:
        op = "aten::" + op
    out = {"kind": kind, "message": first_line}
    if op:
        out["op"] = op
    site = _library_site(exc.__traceback__)
    if site:
        out["site"] = site
    return out


# --------------------------------------------------------------------------- one model
class _Events:
    """The emulator's report events of this process, kept in memory for classify()."""

    def __init__(self):
        self.items = []
        from xla2tpu_emulator import report

        orig = report.emit

        def emit(event):
            self.items.append(event)
            return orig(event)

        report.emit = emit

    def since(self, n):
        return self.items[n:]

    def rearm(self):
        """The emulator reports a warning once per site and process; each run needs its own."""
        from xla2tpu_emulator import report

        report._warned.clear()


def _loss(out):
    from .phases import generic_loss, model_loss

    loss = model_loss(out)
    if loss is None:
        loss = generic_loss(out)
    if loss is None:
        raise RuntimeError("no differentiable float output")
    return loss if loss.numel() == 1 else loss.float().sum()


def _steps(model, call, train: bool, autocast, on_fail) -> dict:
    """Inference then one training step; returns {phase: "pass" | failure dict | "not_run"}.
    ``on_fail(exc, step)`` turns an exception into the recorded failure."""
    import torch

    res = {"inference": "not_run", "train": "not_run"}
    model.eval()
    try:
        with autocast(), torch.no_grad():
            call(model, False)
        res["inference"] = "pass"
    except Exception as e:  # noqa: BLE001
        res["inference"] = on_fail(e, "inference")
        return res
    if not train:
        return res
    model.train()
    step = "forward"
    try:
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=1e-4) if params else None
        with autocast():
            loss = _loss(call(model, True))
        step = "backward"
        loss.backward()
        step = "optimizer"
        if opt is not None:
            opt.step()
            opt.zero_grad()
        step = "forward"  # reading the loss materialises the step, as .item() does on TorchTPU
        loss.item()
        res["train"] = "pass"
    except Exception as e:  # noqa: BLE001
        res["train"] = on_fail(e, step)
    return res


class Executor:
    """Replaces ``phases.run_phases`` while a target executes: the CPU reference decides, as a
    trace would, whether the attempt counts (a PhaseError on the CPU); each class's tpu runs
    are collected in ``entries``."""

    def __init__(self):
        self.entries = []  # one per class run: {"method", "class", "cpu", "float32", "bf16-autocast"}
        self.events = _Events()

    def __call__(self, model, call, train=True):
        import torch

        from . import phases

        entry = {"method": phases.ATTEMPT, "class": type(model).__name__}
        cfg = getattr(model, "config", None)
        if cfg is not None and hasattr(cfg, "to_diff_dict"):
            entry["config"] = _compact_config(cfg)
        try:
            device_model = copy.deepcopy(model)
        except Exception as e:  # noqa: BLE001
            device_model, entry["note"] = None, f"model could not be copied for the tpu run: {type(e).__name__}"

        torch.manual_seed(0)
        cpu = _steps(model, call, train, contextlib.nullcontext, lambda e, step: {"step": step, "message": _short(e)})
        entry["cpu"] = cpu
        self.entries.append(entry)
        if device_model is not None and cpu["inference"] == "pass":
            cpu_train = cpu["train"] == "pass"
            mark = len(self.events.items)
            try:
                device_model.to("tpu")
            except Exception as e:  # noqa: BLE001
                failure = {"step": "to_device", **classify(e, self.events.since(mark))}
                for precision in PRECISIONS:
                    entry[precision] = {"inference": failure, "train": "not_run"}
                device_model = None
        if device_model is not None and cpu["inference"] == "pass":
            for precision in PRECISIONS:
                ctx = (lambda: torch.autocast("tpu")) if precision != "float32" else contextlib.nullcontext
                mark = len(self.events.items)

                def on_fail(e, step, mark=mark):
                    return {"step": step, **classify(e, self.events.since(mark))}

                torch.manual_seed(0)
                self.events.rearm()
                with harness_on_device():
                    entry[precision] = _steps(device_model, call, train and cpu_train, ctx, on_fail)
                # What the emulator ran but could not vouch for (an integer histc): a pass
                # that rests on it says so.
                unchecked = sorted({e["message"] for e in self.events.since(mark)
                                    if e.get("event") == "warning" and e.get("kind") == "not_checked"})
                if unchecked:
                    entry[precision]["unchecked"] = unchecked
        # The trace's attempt logic reads CPU failures as PhaseErrors, as when tracing.
        for phase in ("inference", "train"):
            failed = cpu[phase]
            if isinstance(failed, dict):
                step = {"optimizer": "backward", "train": "forward"}.get(failed["step"], failed["step"])
                raise phases.PhaseError(step, RuntimeError(failed["message"]))
        return []


def _short(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]


_CONFIG_DROP = {"id2label", "label2id", "architectures", "transformers_version", "_name_or_path", "torch_dtype",
                "dtype", "output_attentions", "output_hidden_states", "return_dict"}


def _compact_config(cfg) -> dict:
    """The shrunk config's non-default fields: what is needed to rebuild the model."""
    def value(v):
        if isinstance(v, dict):
            return clean(v)
        if isinstance(v, (list, tuple)):
            return [value(x) for x in v]
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            return str(v)  # JSON has no NaN or Infinity
        return v

    def clean(d):
        out = {}
        for k, v in sorted(d.items()):
            if k in _CONFIG_DROP:
                continue
            v = value(v)
            if isinstance(v, (int, float, str, bool, list, dict)) or v is None:
                out[k] = v
        return out

    try:
        return clean(cfg.to_diff_dict())
    except Exception:  # noqa: BLE001
        return {}


# --------------------------------------------------------------------------- verdicts
def _precision_result(entries, precision) -> dict:
    """pass / pass-inference / fail / unknown for one precision, with the first failure."""
    ran_train, all_train, any_run = False, True, False
    unchecked = sorted({u for e in entries for u in (e.get(precision) or {}).get("unchecked", ())})
    extra = {"unchecked": unchecked} if unchecked else {}
    for e in entries:
        r = e.get(precision)
        if r is None:
            continue
        any_run = True
        for phase in ("inference", "train"):
            v = r[phase]
            if isinstance(v, dict):
                failure = {"class": e["class"], "phase": phase, **v}
                status = "unknown" if v["kind"] == "not_emulated" else "fail"
                return {"status": status, "failure": failure, **extra}
        if r["train"] == "pass":
            ran_train = True
        else:
            all_train = False
    if not any_run:
        cpu = next((e["cpu"]["inference"] for e in entries if isinstance(e["cpu"]["inference"], dict)), None)
        why = f": {cpu['message']}" if cpu else ""
        return {"status": "unknown", "reason": f"the CPU reference failed for every class{why}"}
    return {"status": "pass" if ran_train and all_train else "pass-inference", **extra}


def result(trace_res: dict, executor: Executor) -> dict:
    """The execution result of one target from the trace-shaped result and the collected runs."""
    method = trace_res.get("method", "")
    entries = [e for e in executor.entries if e["method"] == method]
    # The last run of each class within the winning attempt.
    by_class = {}
    for e in entries:
        by_class[e["class"]] = e
    entries = list(by_class.values())
    out = {"method": method, "classes": [e["class"] for e in entries], "runs": {}}
    for e in entries:
        run = {"cpu": e["cpu"]}
        for p in PRECISIONS:
            if p in e:
                run[p] = e[p]
        if "note" in e:
            run["note"] = e["note"]
        out["runs"][e["class"]] = run
    cfg = next((e["config"] for e in entries if e.get("config")), None)
    if cfg:
        out["config"] = cfg
    out["precisions"] = {p: _precision_result(entries, p) for p in PRECISIONS}
    if not entries:
        reason = trace_res.get("reason") or "no class ran"
        out["precisions"] = {p: {"status": "unknown", "reason": f"CPU reference failed: {reason}"} for p in PRECISIONS}
    return out


def execute(target, deadline: float) -> dict:
    """One target in a forked worker (or a Ray task): the tracer's recipe under the Executor."""
    from . import hf, phases, targets

    # One chip per worker process, in a state directory of its own: workers never contend.
    os.environ["XLA2TPU_EMULATOR_CHIPS"] = "1"
    os.environ["XLA2TPU_EMULATOR_STATE"] = os.path.join(
        os.environ.get("TMPDIR", "/tmp"), f"xla2tpu-exec-{os.getpid()}")
    executor = Executor()
    phases.EXECUTOR = executor
    if target.library == "transformers":
        # The tracer's real-tensor attempts in its order, one at a time: the first whose CPU
        # reference ran some class is the one executed (a trace's attempt never "succeeds"
        # here, since no op is recorded, so the tracer's own loop would run them all).
        for attempt in [a for a in hf.ATTEMPTS if a[1] == "cpu"]:
            hf.ATTEMPTS = (attempt,)
            res = targets.trace(target, deadline)
            method = "/".join(attempt)
            if any(e["method"] == method and any(p in e for p in PRECISIONS) for e in executor.entries):
                break
    else:
        res = targets.trace(target, deadline, envs=("cpu",))
    out = result(res, executor)
    out["status"] = out["precisions"]["float32"]["status"]
    return out


def run_one(d: dict, timeout: float, memory_mb: int) -> dict:
    """A Ray task: load the emulator in this fresh worker, then run the target."""
    import torch

    from .target import Target

    load_emulator()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    return execute(Target(d["library"], d["name"]), time.time() + timeout)


# --------------------------------------------------------------------------- files
def _failed_run(res: dict) -> dict:
    """A target whose worker timed out, crashed or raised outside the harness: unknown."""
    reason = res.get("reason") or res.get("status", "error")
    return {"method": "", "classes": [], "runs": {},
            "precisions": {p: {"status": "unknown", "reason": reason} for p in PRECISIONS},
            "status": "unknown"}


def make_file(target, res: dict, versions: dict) -> dict:
    if "precisions" not in res:
        res = _failed_run(res)
    return {"schema": SCHEMA, "id": target.id, "library": target.library, "name": target.name,
            "status": res["precisions"]["float32"]["status"], "method": res.get("method", ""),
            "classes": res.get("classes", []), "precisions": res["precisions"], "runs": res.get("runs", {}),
            **({"config": res["config"]} if res.get("config") else {}),
            "versions": {k: versions[k] for k in sorted(versions) if k in
                         ("python", "torch", "tracer", "emulator", target.library)}}


def index_entry(prof: dict) -> dict:
    e = {"id": prof["id"], "status": prof["status"],
         "bf16": prof["precisions"]["bf16-autocast"]["status"]}
    failure = prof["precisions"]["float32"].get("failure") or prof["precisions"]["bf16-autocast"].get("failure")
    if failure:
        e["kind"] = failure["kind"]
    return e


def write_index(out: str, entries: dict, versions: dict, settings: dict) -> dict:
    from collections import Counter

    from . import output

    totals = {}
    for e in entries.values():
        lib = e["id"].split("/", 1)[0]
        t = totals.setdefault(lib, {"float32": Counter(), "bf16-autocast": Counter(), "failure_kinds": Counter()})
        t["float32"][e["status"]] += 1
        t["bf16-autocast"][e["bf16"]] += 1
        if "kind" in e:
            t["failure_kinds"][e["kind"]] += 1
    totals = {lib: {k: dict(sorted(v.items())) for k, v in t.items()} for lib, t in sorted(totals.items())}
    output.write_json(os.path.join(out, "index.json"), {
        "schema": SCHEMA, "versions": dict(sorted(versions.items())), "settings": settings, "totals": totals,
        "entries": [entries[k] for k in sorted(entries)]})
    return totals


def _load(out: str) -> dict:
    import json

    path = os.path.join(out, "index.json")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return {e["id"]: e for e in json.load(f)["entries"]}


def _profiled(ops_dir: str) -> list:
    from . import output
    from .target import Target

    return [Target(*i.split("/", 1)) for i, e in sorted(output.load_index(ops_dir).items())
            if e["status"] in output.GOOD]


def add_parser(sub) -> None:
    e = sub.add_parser("execute", help="run every profiled type on the emulated TorchTPU 0.2.0 (CPU reference, then "
                                       "tpu: inference and a training step, float32 and bf16 autocast) into "
                                       "OUT/<library>/<name>.json + OUT/index.json")
    e.add_argument("--out", default="corpus/exec")
    e.add_argument("--ops", default="corpus/ops", help="the op profiles whose types are executed")
    e.add_argument("--jobs", type=int, default=None, help="workers (local default 2; Ray: the cluster's CPUs)")
    e.add_argument("--ray", metavar="ADDRESS", help="run the types as Ray tasks on this cluster")
    e.add_argument("--timeout", type=float, default=240.0, help="per-type limit (s); a type past it is unknown")
    e.add_argument("--rss-mb", type=int, default=6000, help="per-type memory cap (MB); a type past it is unknown")
    e.add_argument("--only", nargs="+", help="ids (transformers/llama) or bare names")
    e.add_argument("--library", action="append", help="only these libraries")
    e.add_argument("--force", action="store_true", help="re-run types that already have a result")
    e.add_argument("--check", action="store_true",
                   help="re-run the selected types into a temporary directory and compare their verdicts with OUT; "
                        "writes nothing, exit 1 on a disagreement")
    e.add_argument("--log-dir", default=os.path.join(os.path.dirname(_PKG_DIR), "out", "exec-logs"))


def _verdicts(prof: dict) -> dict:
    """What --check compares: per precision, the status, the first failure's kind, op, class,
    phase, step and site (messages may carry addresses), and what the emulator did not check."""
    keep = ("class", "phase", "step", "kind", "op", "site")
    return {p: {"status": r["status"], **{k: r["failure"][k] for k in keep if k in r.get("failure", {})},
                **({"unchecked": r["unchecked"]} if r.get("unchecked") else {})}
            for p, r in prof["precisions"].items()}


def main(args) -> int:
    import json
    import shutil
    import tempfile

    for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(k, "1")
    os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    import torch

    from . import executors, output, runner, targets

    torch.set_num_threads(1)
    todo = _profiled(args.ops)
    if args.library:
        todo = [t for t in todo if t.library in args.library]
    if args.only:
        todo = [t for t in todo if t.id in args.only or t.name in args.only]
    committed = args.out
    if args.check:
        args.out = tempfile.mkdtemp(prefix="xla2tpu-exec-check-")
    done = _load(args.out)
    if not args.force and not args.check:
        todo = [t for t in todo if t.id not in done]
    versions = {**targets.library_versions(targets.LIBRARIES), "emulator": emulator_version()}
    settings = {"timeout_s": args.timeout, "rss_mb": args.rss_mb}
    print(f"{len(todo)} types to execute ({len(done)} already in {args.out})", flush=True)
    t0 = time.time()

    def write(target, res):
        res = {k: v for k, v in res.items() if k not in ("ops", "host_syncs", "dynamic_shape_ops")}
        prof = make_file(target, res, versions)
        output.write_json(os.path.join(args.out, target.library, target.name + ".json"), prof)
        done[target.id] = index_entry(prof)
        write_index(args.out, done, versions, settings)
        f = prof["precisions"]["float32"].get("failure") or {}
        return f"{prof['status']:15s} bf16 {prof['precisions']['bf16-autocast']['status']:15s} " \
               f"{f.get('kind', '')} {f.get('op', '') or ''} {f.get('site', '') or ''}"

    if args.ray:
        from .target import Target

        items = [(t.id, {"library": t.library, "name": t.name}) for t in todo]

        def on_ray(key, res, elapsed):
            line = write(Target(*key.split("/", 1)), res)
            print(f"{key:50s} {elapsed:6.1f}s {line}", flush=True)

        executors.run_ray(args.ray, items, run_one, on_ray, jobs=args.jobs, timeout=args.timeout,
                          memory_mb=args.rss_mb)
    else:
        load_emulator()
        targets.preload(sorted({t.library for t in todo}) or ["transformers"])

        def on_local(target, res, elapsed, peak):
            line = write(target, res)
            print(f"{target.id:50s} {elapsed:6.1f}s {peak:6.0f}MB {line}", flush=True)

        runner.run(todo, execute, None, {}, jobs=args.jobs or 2, timeout=args.timeout, rss_mb=args.rss_mb,
                   log_dir=args.log_dir, timings_path=os.path.join(args.log_dir, "timings.jsonl"),
                   on_result=on_local)
    totals = write_index(args.out, done, versions, settings)
    print(f"done in {time.time() - t0:.0f}s: {json.dumps(totals)}", flush=True)
    if not args.check:
        return 0
    bad = 0
    for t in todo:
        with open(os.path.join(args.out, t.library, t.name + ".json"), encoding="utf-8") as f:
            new = _verdicts(json.load(f))
        path = os.path.join(committed, t.library, t.name + ".json")
        if not os.path.exists(path):
            print(f"{t.id}: no committed result in {committed}")
            bad += 1
            continue
        with open(path, encoding="utf-8") as f:
            old = _verdicts(json.load(f))
        if old != new:
            print(f"{t.id}: committed {json.dumps(old, sort_keys=True)}\n{' ' * len(t.id)}  re-run    "
                  f"{json.dumps(new, sort_keys=True)}")
            bad += 1
    shutil.rmtree(args.out, ignore_errors=True)
    print(f"check: {len(todo) - bad} of {len(todo)} types agree with {committed}")
    return 1 if bad else 0
