#!/usr/bin/env python3
"""Runs `xla2tpu run --advise` on every corpus/advise program and prints the README's table
(per step: host syncs, copies to the chip, dynamic-shape ops, ops; graph breaks and recompiles;
the findings and their estimated cost), before and after the advice.

    python3 scripts/advise_table.py [--update-readme] [--python PY] [--xla2tpu BIN]

--update-readme rewrites the table between the README's `advise-table` markers.
"""

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
START, END = "<!-- advise-table:start -->", "<!-- advise-table:end -->"


def advise(binary, python, program):
  args = []
  for line in program.read_text().splitlines():
    if line.startswith("# advise-args:"):
      args = line.split(":", 1)[1].split()
  with tempfile.TemporaryDirectory() as tmp:
    report = os.path.join(tmp, "report.json")
    done = subprocess.run(
        [binary, "run", "--advise", "--report", report, *args, "--", python, str(program)],
        cwd=tmp, capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
      sys.exit(f"{program}: exit {done.returncode}\n{done.stderr}")
    with open(report, encoding="utf-8") as f:
      return json.load(f)["advice"]


def row(name, side, a):
  p = a["per_step"]
  findings = a["findings"]
  breaks = sum(1 for f in findings if f["kind"] == "graph_break")
  recompiles = sum(f["steps_seen"] for f in findings if f["kind"] == "recompile")
  kinds = ", ".join(sorted({f["kind"] for f in findings})) or "none"
  cost = sum(f["cost_us_per_step"] for f in findings)
  cost_text = f"{cost / 1000:.1f} ms" if cost >= 1000 else f"{cost:.0f} µs"
  return (
      f"| `{name}` | {side} | {a['steps']} | {p['syncs']} | {p['h2d']} | {p['dynamic']} | {p['ops']}"
      f" | {breaks} | {recompiles} | {kinds} | {cost_text} |"
  )


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--update-readme", action="store_true")
  ap.add_argument("--python", default=str(ROOT / "tracer/.venv/bin/python"))
  ap.add_argument("--xla2tpu", default=str(ROOT / "target/release/xla2tpu"))
  opts = ap.parse_args()
  opts.xla2tpu = os.path.abspath(opts.xla2tpu)  # the runs start in a temporary directory
  lines = [
      "| program | | steps | host syncs/step | copies to the chip/step | dynamic-shape ops/step"
      " | ops/step | graph breaks | recompiles | findings | estimated cost/step |",
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
  ]
  for d in sorted(p for p in (ROOT / "corpus/advise").iterdir() if p.is_dir()):
    for side in ("before", "after"):
      program = d / f"{side}.py"
      if program.exists():
        lines.append(row(d.name, side, advise(opts.xla2tpu, opts.python, program)))
  table = "\n".join(lines)
  print(table)
  if opts.update_readme:
    readme = ROOT / "README.md"
    text = readme.read_text()
    new, n = re.subn(
        re.escape(START) + r".*?" + re.escape(END),
        lambda _: f"{START}\n{table}\n{END}", text, flags=re.S,
    )
    if n != 1:
      sys.exit("README.md: advise-table markers not found")
    readme.write_text(new)


if __name__ == "__main__":
  main()
