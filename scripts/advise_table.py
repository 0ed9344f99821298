#!/usr/bin/env python3
"""Runs `xla2tpu run --advise` on every corpus/advise program and prints the README's table
(per step: host syncs, copies to the chip, dynamic-shape ops, ops; graph breaks and recompiles;
the findings and their estimated cost), before and after the advice; with --migrated, also on
the migrated corpus programs (`corpus/migrate/*/expected.py`) that run as one plain `python`
process, with their `run.yaml` arguments, each in a copy of its folder.

    tracer/.venv/bin/python scripts/advise_table.py [--migrated] [--update-readme] [--python PY] [--xla2tpu BIN]

--update-readme rewrites the tables between the README's `advise-table` and
`advise-corpus-table` markers.
"""

import argparse
import collections
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
MARKS = {
    "advise-table": ("<!-- advise-table:start -->", "<!-- advise-table:end -->"),
    "advise-corpus-table": ("<!-- advise-corpus-table:start -->", "<!-- advise-corpus-table:end -->"),
}
# run.yaml fields that mean the program is not one plain `python` process on one chip.
NOT_PLAIN = ("skip", "launch", "spmd", "env", "expect_incompatibility", "cpu_reference", "torch_xla")


def advise(binary, python, program, args=None, cwd=None, strict=True):
  if args is None:
    args = []
    for line in program.read_text().splitlines():
      if line.startswith("# advise-args:"):
        args = line.split(":", 1)[1].split()
    run_args, program_args = args, []
  else:
    run_args, program_args = [], args
  with tempfile.TemporaryDirectory() as tmp:
    report = os.path.join(tmp, "report.json")
    try:
      done = subprocess.run(
          [binary, "run", "--advise", "--report", report, *run_args, "--", python, str(program), *program_args],
          cwd=cwd or tmp, capture_output=True, text=True, check=False, timeout=300,
      )
    except subprocess.TimeoutExpired:
      return None
    if done.returncode != 0 or not os.path.exists(report):
      if strict:
        sys.exit(f"{program}: exit {done.returncode}\n{done.stderr}")
      return None
    with open(report, encoding="utf-8") as f:
      return json.load(f).get("advice")


def migrated_rows(binary, python):
  import yaml  # pylint: disable=import-outside-toplevel

  lines = [
      "| program | steps | host syncs/step | copies to the chip/step | dynamic-shape ops/step | ops/step"
      " | graph breaks | recompiles | costliest finding | `check --select TPU75` | fast form (TPU752) |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|",
  ]
  left = []
  for d in sorted(p for p in (ROOT / "corpus/migrate").iterdir() if (p / "expected.py").exists()):
    spec = yaml.safe_load((d / "run.yaml").read_text()) if (d / "run.yaml").exists() else {}
    spec = spec or {}
    if any(k in spec for k in NOT_PLAIN) or spec.get("nproc", 1) != 1:
      continue
    with tempfile.TemporaryDirectory() as tmp:
      work = pathlib.Path(tmp) / d.name
      shutil.copytree(d, work)
      program_args = [str(x) for x in spec.get("args", [])]
      a = advise(binary, python, work / "expected.py", program_args, cwd=work, strict=False)
      static = static_findings(binary, work / "expected.py")
      fast = fast_form(binary, python, work, program_args) if a and a["steps"] else None
    if a is None:
      left.append(d.name)
      continue
    if a["steps"] == 0:
      left.append(f"{d.name} (no optimizer step)")
      continue
    p = a["per_step"]
    f = a["findings"]
    breaks = sum(1 for x in f if x["kind"] == "graph_break")
    recompiles = sum(x["steps_seen"] for x in f if x["kind"] == "recompile")
    top = "none"
    if f:
      where = f" (line {f[0]['line']})" if f[0].get("line") else ""
      top = f"{f[0]['kind']}{where}"
    lines.append(
        f"| `{d.name}` | {a['steps']} | {p['syncs']} | {p['h2d']} | {p['dynamic']} | {p['ops']}"
        f" | {breaks} | {recompiles} | {top} | {static} | {fast or '—'} |"
    )
  if left:
    lines.append("")
    lines.append("Not in the table (the run failed, timed out or made no optimizer step): " + ", ".join(f"`{x}`" for x in left) + ".")
  return "\n".join(lines)


def static_findings(binary, program):
  """The opt-in performance rules' findings on the migrated program, as `TPU751 ×2`."""
  done = subprocess.run([binary, "check", "--select", "TPU75", "--output-format", "json", str(program)],
                        capture_output=True, text=True, check=False)
  codes = collections.Counter(d["code"] for d in json.loads(done.stdout or "[]"))
  return ", ".join(f"{c} ×{n}" for c, n in sorted(codes.items())) or "none"


def fast_form(binary, python, work, program_args):
  """Migrate input.py with TPU752's unsafe fix (deferred eager) and run --advise on it: what is
  left of the plain migration's findings, or None where the fix does not apply."""
  fast = work / "fast.py"
  shutil.copy(work / "input.py", fast)
  subprocess.run([binary, "migrate", "--extend-select", "TPU752", "--unsafe-fixes", "--write", str(fast)],
                 capture_output=True, text=True, check=False)
  if "EagerMode.DEFER_AND_FUSE" not in fast.read_text():
    return None
  a = advise(binary, python, fast, program_args, cwd=work, strict=False)
  if a is None:
    return "did not run"
  p = a["per_step"]
  kinds = sorted({f["kind"] for f in a["findings"]})
  eager = "ops dispatched alone" if "eager_dispatch" in kinds else "deferred"
  return f"{eager}; {p['syncs']} syncs/step"


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
  ap.add_argument("--migrated", action="store_true", help="also the migrated corpus programs")
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
  tables = {"advise-table": "\n".join(lines)}
  if opts.migrated:
    tables["advise-corpus-table"] = migrated_rows(opts.xla2tpu, opts.python)
  for table in tables.values():
    print(table + "\n")
  if opts.update_readme:
    readme = ROOT / "README.md"
    text = readme.read_text()
    for name, table in tables.items():
      start, end = MARKS[name]
      text, n = re.subn(
          re.escape(start) + r".*?" + re.escape(end), lambda _, t=table, a=start, b=end: f"{a}\n{t}\n{b}", text, flags=re.S
      )
      if n != 1:
        sys.exit(f"README.md: {name} markers not found")
    readme.write_text(text)


if __name__ == "__main__":
  main()
