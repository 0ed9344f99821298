"""Exact per-model tracing: each distinct Hub ``config.json``, depth reduced, every other
field kept (widths, vocab, experts, heads), traced with the same recorder, phases, input
builders and class runner as the type-level profiles (hf.py).

``python -m xla2tpu_tracer exact --configs DIR --out OUT [--ray ADDRESS] ...``

Input: ``DIR/<owner>/<name>/config.json`` (or ``DIR/<name>/config.json``); the model id is
the relative directory. Output (a contract: ``xla2tpu sweep --exact`` reads it):

- ``OUT/profiles/<hash>.json``: a schema-1 profile (corpus/ops/README.md) with id
  ``config/<hash>``, library ``transformers``, name = model_type, plus ``models`` (every
  model id in the index whose config has this hash) and ``config_source``.
- ``OUT/index.json``: ``{"schema": 1, "versions": {...}, "models": {"<id>": {"config":
  "<hash>" | null, "status": ..., "reason": ...}}}``; status is ok | partial | error |
  timeout | crash | unsupported. ``config`` is null only when config.json is not a JSON
  object (status error).

Every write is atomic; the index is rewritten after each result, so an interrupted run
resumes where it stopped. Local and Ray results go through the same ``Merger``, so the two
executors write byte-identical trees for the same inputs.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import time

from . import output

# Fields that cannot change the op set, dropped before hashing (at every nesting level,
# since sub-configs carry their own copies):
# - provenance: _name_or_path, transformers_version, _commit_hash, _attn_implementation_autoset;
# - dtype / torch_dtype: building a model with ``cls(config)`` ignores them, every exact profile
#   is traced in float32;
# - use_cache: the tracer sets it to False on every (sub-)config, as hf.py does.
# Everything else is kept, `architectures` (class choice) and labels (loss choice) included.
DROPPED_KEYS = frozenset({
    "_name_or_path", "transformers_version", "_commit_hash", "_attn_implementation_autoset",
    "dtype", "torch_dtype", "use_cache",
})

# Real tensors are used when weights + grads + slack (3 x 4 bytes per parameter) plus the
# process baseline fit under --memory-mb; otherwise FakeTensor (shapes only, no memory).
BYTES_PER_PARAM = 12
BASELINE_MB = 1024


# --------------------------------------------------------------------------- inputs
def discover(configs_dir: str) -> list[tuple[str, str]]:
    """(model id, path) of every DIR/<owner>/<name>/config.json or DIR/<name>/config.json."""
    found = []
    root = os.path.abspath(configs_dir)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel = os.path.relpath(dirpath, root)
        depth = 0 if rel == "." else rel.count(os.sep) + 1
        if depth >= 2:
            dirnames[:] = []  # owner/name is as deep as Hub ids go
        if depth in (1, 2) and "config.json" in filenames:
            found.append((rel.replace(os.sep, "/"), os.path.join(dirpath, "config.json")))
    return sorted(found)


def canonical(obj):
    if isinstance(obj, dict):
        return {k: canonical(v) for k, v in obj.items() if k not in DROPPED_KEYS}
    if isinstance(obj, list):
        return [canonical(v) for v in obj]
    return obj


def config_key(cfg: dict) -> str:
    """sha256 of the canonical JSON (dropped keys removed, sorted keys, no whitespace)."""
    text = json.dumps(canonical(cfg), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_config(path: str) -> tuple[dict | None, str]:
    """(config dict, "") or (None, reason)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return None, f"config.json: {type(e).__name__}: {e}"[:300]
    if not isinstance(data, dict):
        return None, f"config.json: a JSON {type(data).__name__}, not an object"
    return data, ""


# --------------------------------------------------------------------------- tracing
class Unsupported(Exception):
    pass


def _short(e):
    from .hf import _short as short

    return short(e)


def check_type(d: dict) -> str:
    """The config's model_type if transformers has it; raises Unsupported otherwise."""
    from transformers import __version__ as tv
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    mt = d.get("model_type")
    if not isinstance(mt, str) or not mt:
        raise Unsupported("config.json has no model_type")
    if mt not in CONFIG_MAPPING:
        if d.get("auto_map"):
            raise Unsupported(f"custom code only (auto_map): model_type '{mt}' is not a transformers {tv} "
                              "type, and remote code is never run")
        raise Unsupported(f"model_type '{mt}' is not known to transformers {tv}")
    return mt


def build_config(d: dict):
    """transformers' own config class for the model_type, from the JSON; never remote code."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return CONFIG_MAPPING[check_type(d)].from_dict(copy.deepcopy(d))


def _layer_counts(cfg, prefix=""):
    from . import configs

    out = {}
    for k in configs.LAYER_KEYS:
        v = configs._get(cfg, k)
        if isinstance(v, int) and not isinstance(v, bool):
            out[prefix + k] = v
    for name, sub in configs.sub_configs(cfg):
        out.update(_layer_counts(sub, f"{prefix}{name}."))
    return out


def reduce_depth(cfg) -> str:
    """Only the depth part of configs.shrink (layer counts, layer-kind patterns, the indices
    that point into the stack); returns the config_source text."""
    from . import configs

    before = _layer_counts(cfg)
    configs.no_layerdrop(cfg)  # random layer skipping in training: a trace could train none

    def apply(c):
        old_n = configs._get(c, "num_hidden_layers")
        configs._shrink_layers(c)
        configs._clamp_out_indices(c, old_n)
        configs._set(c, "use_cache", False)

    configs._walk(cfg, apply, set())
    after = _layer_counts(cfg)
    changed = [f"{k} {before[k]} -> {after[k]}" for k in sorted(before) if after.get(k) != before[k]]
    if not changed:
        return "hub config.json, depth kept (already small)"
    depth = max(after[k] for k in sorted(before) if after.get(k) != before[k])
    return f"hub config.json, depth reduced to {depth} ({'; '.join(changed)})"


def _kind_of(model_type: str, cls_name: str) -> str:
    """The auto-mapping kind (``causal_lm``, ``base``, ...) a class is registered under,
    which selects the labels the input builder makes."""
    from . import hf

    maps = hf._mappings()
    order = ["BASE"] + list(hf.HEAD_PRIORITY) + sorted(maps)
    for types in ((model_type,), None):
        for kind in order:
            m = maps.get(kind) or {}
            for mt, v in m.items():
                if types is not None and mt not in types:
                    continue
                if cls_name in (v if isinstance(v, (list, tuple)) else (v,)):
                    return kind.lower()
    return "base"


def choose_classes(model_type: str, architectures) -> tuple[list[tuple[str, str]], list[str]]:
    """Classes named in ``architectures`` that transformers has, then the type's base class
    (as hf.py traces it); the type's default head when no named class exists."""
    import transformers

    from . import hf

    notes, classes = [], []
    for name in architectures if isinstance(architectures, list) else []:
        if not isinstance(name, str) or any(name == c for _, c in classes):
            continue
        try:
            getattr(transformers, name)
        except Exception:  # noqa: BLE001
            notes.append(f"architectures: {name} is not in transformers {transformers.__version__}")
            continue
        classes.append((_kind_of(model_type, name), name))
    head, base = hf.classes_for(model_type)
    if not classes and head:
        classes.append(head)
        notes.append(f"traced the type's default head class {head[1]}")
    if base and all(base != c for _, c in classes):
        classes.append(("base", base))
    return classes, notes


def _estimate_mb(cfg, cls_name) -> float | None:
    """Real-tensor memory estimate from a meta-device instance (no memory, no data)."""
    import torch

    from . import hf

    try:
        with torch.device("meta"):
            model = hf._resolve(cls_name)(cfg)
        n = sum(p.numel() for p in model.parameters())
    except Exception:  # noqa: BLE001
        return None
    return BASELINE_MB + n * BYTES_PER_PARAM / 2**20


def versions() -> dict:
    import platform

    import torch
    import transformers

    from . import __version__

    return {"python": platform.python_version(), "torch": torch.__version__.split("+")[0], "tracer": __version__,
            "transformers": transformers.__version__.split("+")[0]}


def trace_config(d: dict, deadline: float, memory_mb: int) -> dict:
    """Trace one config dict; the result has hf.py's fields plus name, config_source and
    worker_versions (the merger refuses results traced with other versions)."""
    res = _trace(d, deadline, memory_mb)
    res["name"] = d.get("model_type") if isinstance(d.get("model_type"), str) else ""
    res["worker_versions"] = versions()
    return res


def precheck(d: dict) -> dict | None:
    """The "unsupported" result of a config no executor can trace (no model_type, a type
    transformers does not have, no model class), else None. Run by the driver, so custom-code
    repositories never take a task slot."""
    from . import hf

    name = d.get("model_type") if isinstance(d.get("model_type"), str) else ""
    try:
        check_type(d)
    except Unsupported as e:
        return {"status": "unsupported", "reason": str(e), "name": name}
    if not hf.has_model_class(name) and not any(
            isinstance(a, str) and _has_class(a) for a in d.get("architectures") or []):
        return {"status": "unsupported", "reason": f"no transformers model class for '{name}'", "name": name}
    return None


def _has_class(name: str) -> bool:
    import transformers

    try:
        getattr(transformers, name)
        return True
    except Exception:  # noqa: BLE001
        return False


def _trace(d: dict, deadline: float, memory_mb: int) -> dict:
    from . import hf
    from .runner import checkpoint

    try:
        base_cfg = build_config(d)
    except Unsupported as e:
        return {"status": "unsupported", "reason": str(e)}
    except Exception as e:  # noqa: BLE001
        return {"status": "error", "reason": "config: " + _short(e)}
    notes = []
    if d.get("auto_map"):
        notes.append("auto_map (custom code) ignored: traced transformers' own classes, as loading "
                     "without trust_remote_code does")
    classes, class_notes = choose_classes(base_cfg.model_type, d.get("architectures"))
    notes += class_notes
    if not classes:
        return {"status": "unsupported", "reason": f"no transformers model class for '{base_cfg.model_type}'"}
    try:
        cfg = copy.deepcopy(base_cfg)
        source = reduce_depth(cfg)
    except Exception as e:  # noqa: BLE001
        return {"status": "error", "reason": "depth reduction: " + _short(e)}
    est = _estimate_mb(cfg, classes[0][1])
    if est is not None and est <= memory_mb:
        envs = ("cpu", "fake")
    else:
        envs = ("fake", "meta")
        notes.append(f"FakeTensor: real tensors need ~{est:.0f} MB > --memory-mb {memory_mb}" if est is not None
                     else "FakeTensor: the model does not build on the meta device to size it")
    best, first_reason = None, None
    for env_kind in envs:
        if best is not None and time.time() > deadline - 3:
            break
        res = hf._attempt_classes(copy.deepcopy(cfg), classes, f"exact/{env_kind}", env_kind)
        res["notes"] = sorted(set(notes + res.get("notes", [])))
        res["config_source"] = source
        res["name"] = base_cfg.model_type  # also in a checkpointed partial the runner may salvage
        first_reason = first_reason or res.get("reason")
        if res["status"] == "ok" or (res["status"] == "partial" and res["severity"] <= 1):
            return res
        if res["status"] == "partial" and (best is None or (res["severity"], -len(res["stats"]))
                                           < (best["severity"], -len(best["stats"]))):
            best = res
            checkpoint(best)
    if best:
        return best
    return {"status": "error", "reason": first_reason or "no attempt ran", "method": f"exact/{envs[0]}",
            "config_source": source}


def run_one(d: dict, timeout: float, memory_mb: int) -> dict:
    """One task as both executors run it: seeded, single-threaded, finalized to JSON."""
    import torch

    from .runner import _finalize

    torch.set_num_threads(1)
    torch.manual_seed(0)
    return _finalize(trace_config(d, time.time() + timeout, memory_mb))


# --------------------------------------------------------------------------- merging
RETRYABLE = ("partial", "error", "timeout", "crash")


class Merger:
    """Turns task results into OUT/profiles/<hash>.json and OUT/index.json. Both executors
    call ``add`` with the same result dicts, so their output is the same bytes."""

    def __init__(self, out_dir: str, versions: dict, models: dict[str, str | None], failures: dict[str, str]):
        self.out = out_dir
        self.versions = dict(sorted(versions.items()))
        self.entries = {}
        path = os.path.join(out_dir, "index.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = json.load(f)
            if old.get("versions") == self.versions:
                self.entries = old.get("models", {})
            else:
                print(f"{path}: traced with {old.get('versions')}, now {self.versions}: re-tracing all", flush=True)
        self.models = models  # model id -> key (this run)
        for mid, reason in failures.items():
            self.entries[mid] = {"config": None, "status": "error", "reason": reason}

    def profile_path(self, key: str) -> str:
        return os.path.join(self.out, "profiles", key + ".json")

    def _models_of(self, key: str) -> list[str]:
        ids = {m for m, k in self.models.items() if k == key}
        ids |= {m for m, e in self.entries.items() if e.get("config") == key and m not in self.models}
        return sorted(ids)

    def todo(self, keys, force=False, retry_failed=False) -> list[str]:
        """Keys to trace. A key already traced (for any model) is reused: its result is
        copied to this run's models that share it."""
        done = {}
        for e in self.entries.values():
            k = e.get("config")
            if k and (e["status"] not in output.GOOD or os.path.exists(self.profile_path(k))):
                done[k] = e
        out = []
        for key in sorted(set(keys)):
            e = done.get(key)
            if e is None or force or (retry_failed and e["status"] in RETRYABLE):
                out.append(key)
            else:
                for mid in self._models_of(key):
                    self.entries[mid] = {"config": key, "status": e["status"], "reason": e.get("reason", "")}
        self.write_index()
        return out

    def add(self, key: str, res: dict) -> str:
        status = res.get("status", "error")
        reason = res.get("reason", "")
        wv = res.get("worker_versions")
        if wv is not None and dict(sorted(wv.items())) != self.versions:
            status, reason = "error", f"worker versions {wv} differ from the driver's {self.versions}"
        path = self.profile_path(key)
        if status in output.GOOD and res.get("ops"):
            output.write_json(path, self._profile(key, res, status))
        else:
            if status in output.GOOD:
                status, reason = "error", reason or "no ops recorded"
            if os.path.exists(path):
                os.remove(path)  # a failed re-trace must not leave a stale profile
        for mid in self._models_of(key):
            self.entries[mid] = {"config": key, "status": status, "reason": reason}
        self.write_index()
        return status

    def _profile(self, key, res, status) -> dict:
        from .target import Target

        prof = output.make_profile(Target("config", key), {**res, "status": status}, self.versions)
        prof.update(library="transformers", name=res.get("name", ""), models=self._models_of(key),
                    config_source=res.get("config_source", "hub config.json"))
        prof["versions"] = output.profile_versions(self.versions, "transformers")
        return prof

    def write_index(self) -> None:
        obj = {"schema": output.SCHEMA, "versions": self.versions,
               "models": {m: self.entries[m] for m in sorted(self.entries)}}
        output.write_json(os.path.join(self.out, "index.json"), obj)

    def finish(self) -> dict:
        """Refresh every profile's ``models`` from the index; drop profiles no model uses
        (a model whose config.json changed)."""
        used = {e["config"] for e in self.entries.values() if e.get("config")}
        pdir = os.path.join(self.out, "profiles")
        for name in sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []:
            if not name.endswith(".json") or name.startswith("."):
                continue
            key = name[:-5]
            path = os.path.join(pdir, name)
            if key not in used:
                os.remove(path)
                continue
            with open(path, encoding="utf-8") as f:
                prof = json.load(f)
            models = self._models_of(key)
            if prof.get("models") != models:
                prof["models"] = models
                output.write_json(path, prof)
        self.write_index()
        counts = {}
        for e in self.entries.values():
            counts[e["status"]] = counts.get(e["status"], 0) + 1
        return dict(sorted(counts.items()))


# --------------------------------------------------------------------------- command
def main(args) -> int:
    for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(k, "1")
    os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    t0 = time.time()
    configs, models, failures = {}, {}, {}
    for mid, path in discover(args.configs):
        d, reason = load_config(path)
        if d is None:
            failures[mid] = reason
            continue
        key = config_key(d)
        configs.setdefault(key, d)
        models[mid] = key
    if not models and not failures:
        print(f"no config.json found under {args.configs} (expected DIR/<owner>/<name>/config.json)", flush=True)
        return 2
    import torch

    torch.set_num_threads(1)
    vers = versions()
    merger = Merger(args.out, vers, models, failures)
    todo = merger.todo(configs, force=args.force, retry_failed=args.retry_failed)
    print(f"{len(models) + len(failures)} models, {len(configs)} distinct configs, {len(todo)} to trace", flush=True)
    from . import executors

    n = len(todo)
    state = {"done": 0}

    def on_result(key, res, elapsed):
        status = merger.add(key, res)
        state["done"] += 1
        print(f"[{state['done']}/{n} {time.time() - t0:6.0f}s] {key[:12]} {res.get('name', '') or '?':24s} "
              f"{status:11s} {elapsed:5.1f}s {res.get('method', '')} {res.get('reason', '')[:100]}", flush=True)

    items = []
    for k in todo:
        pre = precheck(configs[k])
        if pre is not None:
            on_result(k, pre, 0.0)
        else:
            items.append((k, configs[k]))
    if args.ray:
        executors.run_ray(args.ray, items, run_one, on_result, jobs=args.jobs, timeout=args.timeout,
                          memory_mb=args.memory_mb, retries=args.retries)
    else:
        executors.run_local(items, trace_config, on_result, jobs=args.jobs or 2, timeout=args.timeout,
                            memory_mb=args.memory_mb, log_dir=args.log_dir)
    counts = merger.finish()
    print(f"done in {time.time() - t0:.0f}s: {counts}", flush=True)
    return 0


def add_parser(sub) -> None:
    e = sub.add_parser("exact", help="trace each distinct Hub config.json (depth reduced) into OUT/profiles + "
                                     "OUT/index.json, locally or on a Ray cluster")
    e.add_argument("--configs", required=True, help="DIR/<owner>/<name>/config.json (model id = relative dir)")
    e.add_argument("--out", required=True)
    e.add_argument("--jobs", type=int, default=None,
                   help="parallel traces (local default 2; Ray default: the cluster's CPUs)")
    e.add_argument("--ray", metavar="ADDRESS", help="run the traces as tasks on this Ray cluster (host:port)")
    e.add_argument("--timeout", type=float, default=120.0, help="per-config timeout in seconds")
    e.add_argument("--memory-mb", type=int, default=6000,
                   help="per-trace memory: local RSS cap, Ray memory resource, real-vs-FakeTensor threshold")
    e.add_argument("--retries", type=int, default=1, help="Ray: re-runs of a task whose worker died")
    e.add_argument("--force", action="store_true", help="re-trace configs that already have a result")
    e.add_argument("--retry-failed", action="store_true", help="re-trace configs whose result was not ok")
    e.add_argument("--log-dir", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                     "out", "exact-logs"),
                   help="local worker logs (kept out of OUT so runs compare byte for byte)")
