"""Profile and index files: stable, sorted, pretty JSON."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter

SCHEMA = 1
GOOD = ("ok", "partial")
PHASES = ("inference", "forward", "backward")
DEFAULT_PRECISION = "float32"


def phase_coverage(failed_phase: str | None) -> dict:
    """Per-phase coverage of one class: phases before ``failed_phase`` ran ("ok"), it
    "failed", later ones were skipped ("not_run"). ``"init"`` (the class could not be
    imported or built) counts as a failed inference: nothing of the class ran."""
    if failed_phase in ("init", "import"):
        failed_phase = "inference"
    cov, seen = {}, False
    for ph in PHASES:
        if ph == failed_phase:
            cov[ph], seen = "failed", True
        else:
            cov[ph] = "not_run" if seen else "ok"
    return cov


# Failure notes written by hf._attempt ("Class: init: err", "Class: forward failed: err") and by
# generic.trace_recipe (no class prefix: "init: err", "inference failed: err").
_CLASS_FAIL = re.compile(r"^([A-Za-z0-9_]+): (import|init|inference failed|forward failed|backward failed): ")
_PLAIN_FAIL = re.compile(r"^(init|inference failed|forward failed|backward failed): ")


def derive_coverage(prof: dict) -> dict:
    """Coverage of a profile written before the tracer recorded it, rebuilt from
    ``classes`` (each ran every phase unless a note says otherwise) and the failure notes.
    A class that failed at import/init is only in ``notes``; it is added here."""
    cov = {c: phase_coverage(None) for c in prof.get("classes", [])}
    single = prof.get("library") in ("timm", "diffusers")
    key = (prof.get("classes") or [prof.get("name", "")])[0]
    for note in prof.get("notes", []):
        m = _CLASS_FAIL.match(note)
        if m:
            cov[m.group(1)] = phase_coverage(m.group(2).split()[0])
            continue
        m = _PLAIN_FAIL.match(note)
        if m and single:
            cov[key] = phase_coverage(m.group(1).split()[0])
    return dict(sorted(cov.items()))


def coverage_complete(cov: dict) -> bool:
    return bool(cov) and all(v == "ok" for c in cov.values() for v in c.values())


# bf16 profiles (trace --precision bf16) carry a top-level "precision" field; set by cli.py.
PRECISION = None


def dumps(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_json(path: str, obj) -> None:
    """Atomic write (temp file + rename) so an interrupted run never leaves half a file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(dumps(obj))
    os.replace(tmp, path)


def profile_path(out_dir: str, target_id: str) -> str:
    return os.path.join(out_dir, target_id + ".json")


def make_profile(target, result: dict, versions: dict) -> dict:
    prof = {
        "schema": SCHEMA,
        "id": target.id,
        "library": target.library,
        "name": target.name,
        "classes": sorted(result.get("classes", [])),
        "status": result["status"],
        "method": result.get("method", ""),
        "versions": profile_versions(versions, target.library),
        "notes": sorted(set(result.get("notes", []))),
        "ops": sorted(result["ops"], key=lambda o: o["op"]),
        "host_syncs": sorted(result.get("host_syncs", [])),
        "dynamic_shape_ops": sorted(result.get("dynamic_shape_ops", [])),
        "coverage": dict(sorted(result.get("coverage", {}).items())),
        "precision": result.get("precision", DEFAULT_PRECISION),
    }
    if PRECISION:
        prof["precision"] = PRECISION
    return prof


def profile_versions(versions: dict, library: str) -> dict:
    keep = ("python", "torch", "tracer", library)
    return {k: versions[k] for k in sorted(versions) if k in keep}


def normalize_profile(prof: dict) -> dict:
    """Re-sort an existing profile (stable output after a schema-neutral code change)."""
    prof = dict(prof)
    prof["versions"] = profile_versions(prof.get("versions", {}), prof["library"])
    for key in ("classes", "notes", "host_syncs", "dynamic_shape_ops"):
        prof[key] = sorted(set(prof.get(key, [])))
    ops = []
    for o in sorted(prof["ops"], key=lambda o: o["op"]):
        o = dict(o)
        for key in ("dtypes", "phases", "inner"):
            if key in o:
                o[key] = sorted(set(o[key]))
        ops.append(o)
    prof["ops"] = ops
    # Profiles written before per-phase coverage existed: rebuild it from classes + notes.
    if "coverage" not in prof:
        prof["coverage"] = derive_coverage(prof)
    prof["coverage"] = dict(sorted(prof["coverage"].items()))
    prof.setdefault("precision", DEFAULT_PRECISION)
    return prof


def index_entry(target, status: str, method: str, reason: str) -> dict:
    return {
        "id": target.id,
        "library": target.library,
        "name": target.name,
        "status": status,
        "method": method,
        "reason": reason,
    }


def load_index(out_dir: str) -> dict[str, dict]:
    path = os.path.join(out_dir, "index.json")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return {e["id"]: e for e in data.get("entries", [])}


def write_index(out_dir: str, entries: dict[str, dict], versions: dict) -> dict:
    rows = [entries[k] for k in sorted(entries)]
    totals = {}
    for lib in sorted({e["library"] for e in rows}):
        lib_rows = [e for e in rows if e["library"] == lib]
        by_status = Counter(e["status"] for e in lib_rows)
        traceable = len(lib_rows) - by_status.get("no_model_class", 0)
        profiled = sum(by_status.get(s, 0) for s in GOOD)
        totals[lib] = {
            "attempted": len(lib_rows),
            "traceable": traceable,
            "profiled": profiled,
            "coverage_pct": round(100.0 * profiled / traceable, 1) if traceable else 0.0,
            "by_status": dict(sorted(by_status.items())),
        }
    obj = {"schema": SCHEMA, "versions": dict(sorted(versions.items())), "totals": totals, "entries": rows}
    precision = PRECISION or _index_precision(out_dir)
    if precision:
        obj["precision"] = precision  # kept by merge/reindex, which do not know it
    write_json(os.path.join(out_dir, "index.json"), obj)
    return totals


def _index_precision(out_dir: str):
    path = os.path.join(out_dir, "index.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f).get("precision")
