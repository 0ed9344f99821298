"""`python -m xla2tpu_tracer summary --out corpus/ops`: coverage, failure buckets, op counts."""

from __future__ import annotations

import glob
import json
import os
import re
from collections import Counter


def _bucket(reason: str) -> str:
    r = re.sub(r"'[^']*'|`[^`]*`", "…", reason)
    r = re.sub(r"\d+", "N", r)
    r = re.sub(r"^[A-Za-z0-9_]+: ", "", r)  # leading class name
    return r[:110]


def summary(out: str) -> str:
    with open(os.path.join(out, "index.json"), encoding="utf-8") as f:
        index = json.load(f)
    lines = ["## totals", "", "| library | attempted | traceable | profiled | coverage | by status |", "|---|---:|---:|---:|---:|---|"]
    for lib, t in sorted(index["totals"].items()):
        lines.append(f"| {lib} | {t['attempted']} | {t['traceable']} | {t['profiled']} | {t['coverage_pct']}% | "
                     f"{json.dumps(t['by_status'], sort_keys=True)} |")
    methods = Counter(e["method"] for e in index["entries"] if e["status"] in ("ok", "partial"))
    lines += ["", f"methods (ok+partial): {json.dumps(dict(sorted(methods.items())))}", ""]
    fails = Counter(_bucket(e["reason"]) for e in index["entries"]
                    if e["status"] in ("error", "timeout", "crash"))
    lines += ["## failures by reason", "", "| count | reason |", "|---:|---|"]
    lines += [f"| {n} | {r} |" for r, n in fails.most_common()]
    parts = Counter(_bucket(e["reason"]) for e in index["entries"] if e["status"] == "partial")
    lines += ["", "## partial: first failure", "", "| count | reason |", "|---:|---|"]
    lines += [f"| {n} | {r} |" for r, n in parts.most_common()]
    ops, neutral, per_type = Counter(), {}, []
    for path in glob.glob(os.path.join(out, "*", "*.json")):
        with open(path, encoding="utf-8") as f:
            prof = json.load(f)
        per_type.append(len(prof["ops"]))
        for o in prof["ops"]:
            ops[o["op"]] += 1
            if "neutral" in o:
                neutral[o["op"]] = o["neutral"]
    per_type.sort()
    lines += ["", f"profiles: {len(per_type)}; distinct ops: {len(ops)}; ops per profile: median "
              f"{per_type[len(per_type) // 2] if per_type else 0}, max {per_type[-1] if per_type else 0}", ""]
    lines += ["neutral ops seen: " + ", ".join(f"`{k}` -> `{v}`" for k, v in sorted(neutral.items()))]
    return "\n".join(lines) + "\n"
