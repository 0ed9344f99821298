#!/usr/bin/env python3
"""The README's comparison with Google's "nearly 69% of the top 4,300 Hugging Face models run
unmodified": pass rates of the top 4,300 by downloads under each definition (op coverage,
execution on the emulated chip, both, ...), on the embedded list and on the 2024 all-library
list, from the default report (`xla2tpu sweep --format json`, which has the built-in runs).

    python3 scripts/google_table.py [--xla2tpu target/release/xla2tpu] [--update-readme]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = 4300
LISTS = [
    ("embedded list (llmfit, Oct 2026)", None),
    ("2024 all-library list (enochlev)", os.path.join(ROOT, "..", "shared", "data", "hf_models_snapshot_enochlev_2024-09-20.csv")),
]


def sweep(xla2tpu: str, models: str | None) -> dict:
    cmd = [xla2tpu, "sweep", "--top", str(TOP), "--format", "json"]
    if models:
        cmd += ["--models", models]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def rows(report: dict) -> tuple[list[tuple[str, float, float | None]], int]:
    models = [m for m in report["models"] if m["verdict"] != "n/a"]
    n, dl = len(models), sum(m["downloads"] for m in models)

    def runs(m, key="execution"):
        return (m.get(key) or {}).get("status") == "pass"

    def op(m):
        return m["verdict"] == "pass"

    def both(m):
        return op(m) and runs(m)

    def both_bf16(m):
        return both(m) and (m.get("bf16") or {}).get("verdict") == "pass" and runs(m, "execution_bf16")

    def checked(m):
        return both(m) and not (m.get("execution") or {}).get("unchecked")

    def rate(pred):
        hit = [m for m in models if pred(m)]
        return 100 * len(hit) / n, 100 * sum(m["downloads"] for m in hit) / dl

    out = [
        ("op coverage: every traced op has a TorchTPU kernel", *rate(op)),
        ("runs: inference and a training step on the emulated chip, float32", *rate(runs)),
        ("both", *rate(both)),
        ("both, and under bf16 autocast too", *rate(both_bf16)),
        ("both, resting on nothing the emulator could not check", *rate(checked)),
        ("both, of all 4,300 (non-PyTorch repositories counted as failures)",
         100 * sum(1 for m in models if both(m)) / len(report["models"]), None),
    ]
    return out, len(report["models"]) - n


def table(xla2tpu: str) -> str:
    results = [(name, *rows(sweep(xla2tpu, path))) for name, path in LISTS]
    head = "| pass rate, by count (by downloads) | " + " | ".join(name for name, _, _ in results) + " |"
    lines = [head, "|---" * (1 + len(results)) + "|"]
    for i, (label, _, _) in enumerate(results[0][1]):
        cells = []
        for _, rs, _ in results:
            _, by_count, by_dl = rs[i]
            cells.append(f"{by_count:.1f}%" + ("" if by_dl is None else f" ({by_dl:.1f}%)"))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    skipped = ", ".join(f"{k} on the {'embedded' if i == 0 else '2024'} one" for i, (_, _, k) in enumerate(results))
    return "\n".join(lines), skipped


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--xla2tpu", default=os.path.join(ROOT, "target", "release", "xla2tpu"))
    ap.add_argument("--update-readme", action="store_true")
    args = ap.parse_args()
    text, skipped = table(args.xla2tpu)
    print(text)
    print(f"non-PyTorch repositories left out: {skipped}")
    if args.update_readme:
        path = os.path.join(ROOT, "README.md")
        readme = open(path, encoding="utf-8").read()
        pat = re.compile(r"\| pass rate, by count \(by downloads\) \|.*?\n(?=\n)", re.S)
        if not pat.search(readme):
            print("README has no comparison table to replace", file=sys.stderr)
            return 1
        readme = pat.sub(lambda _: text + "\n", readme, count=1)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(readme)
        os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
