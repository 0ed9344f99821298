"""python -m xla2tpu_tracer trace --out corpus/ops [--jobs N] [--only ID...] [--timeout S] [--force]
python -m xla2tpu_tracer api --output rules/api/torch-<version>.tsv [--jobs N] [--timeout S] [--only API...]
python -m xla2tpu_tracer execute --out corpus/exec [--jobs N] [--ray ADDRESS] [--only ID...] [--check]
python -m xla2tpu_tracer exact --configs DIR --out OUT [--jobs N] [--ray ADDRESS] [--timeout S] [--memory-mb M]"""

from __future__ import annotations

import argparse
import os
import sys
import time

from . import output
from .target import Target
from .targets import LIBRARIES, library_versions

def _targets(libs):
    from . import targets

    out = []
    for lib in libs:
        out += [Target(lib, n) for n in targets.names(lib)]
    return out


def _merge(out: str, src: str | None) -> int:
    import glob
    import json

    with open(os.path.join(out, "index.json"), encoding="utf-8") as f:
        index = json.load(f)
    entries = {e["id"]: e for e in index["entries"]}
    versions = index["versions"]
    if src:
        with open(os.path.join(src, "index.json"), encoding="utf-8") as f:
            other = json.load(f)
        for e in other["entries"]:
            old = entries.get(e["id"])
            if old and old["status"] in output.GOOD and e["status"] not in output.GOOD:
                continue  # keep a profile over a later failure
            entries[e["id"]] = e
            path = output.profile_path(src, e["id"])
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    output.write_json(output.profile_path(out, e["id"]), json.load(f))
        versions = {**versions, **other["versions"]}
    for path in glob.glob(os.path.join(out, "*", "*.json")):
        with open(path, encoding="utf-8") as f:
            prof = json.load(f)
        output.write_json(path, output.normalize_profile(prof))
    totals = output.write_index(out, entries, versions)
    print(totals)
    return 0


def _crosscheck(args) -> int:
    """Every type with a profile or a traced (not no_model_class) index entry in --ops."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    import functools

    import torch

    from . import crosscheck, runner, targets

    torch.set_num_threads(1)
    ops_entries = output.load_index(args.ops)
    ids = {i for i, e in ops_entries.items() if e["status"] != "no_model_class"}
    todo = [Target(*i.split("/", 1)) for i in sorted(ids)]
    if args.only:
        todo = [x for x in todo if x.id in args.only or x.name in args.only]
    done = output.load_index(args.out)
    if not args.force:
        todo = [x for x in todo if x.id not in done]
    libs = sorted({x.library for x in todo}) or ["transformers"]
    targets.preload(libs)
    crosscheck.warm_up()
    versions = library_versions(LIBRARIES)
    print(f"{len(todo)} types to crosscheck", flush=True)
    t0 = time.time()
    entries = runner.run(todo, functools.partial(crosscheck.trace, ops_dir=args.ops), args.out, versions,
                         jobs=args.jobs, timeout=args.timeout, rss_mb=args.rss_mb, log_dir=args.log_dir,
                         entries=done, make_file=crosscheck.make_file, keep_failures=True,
                         timings_path=os.path.join(os.path.dirname(args.log_dir.rstrip("/")), "crosscheck-timings.jsonl"))
    totals = output.write_index(args.out, entries, versions)
    print(f"done in {time.time() - t0:.0f}s: {totals}", flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m xla2tpu_tracer")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("trace", help="trace models and write op profiles")
    t.add_argument("--out", default="corpus/ops")
    t.add_argument("--jobs", type=int, default=2)
    t.add_argument("--timeout", type=float, default=60.0)
    t.add_argument("--rss-mb", type=int, default=6000)
    t.add_argument("--library", action="append", choices=LIBRARIES,
                   help="only these libraries (default: all)")
    t.add_argument("--only", nargs="+", help="ids (transformers/llama) or bare names")
    t.add_argument("--force", action="store_true", help="re-trace ids that already have a result")
    t.add_argument("--retry-failed", action="store_true", help="re-trace ids whose last result was partial or a failure")
    t.add_argument("--precision", choices=["float32", "bf16"], default="float32",
                   help="bf16: forward passes under TorchTPU 0.2.0's torch.autocast('tpu', bfloat16), "
                        "emulated on CPU (autocast_tpu.py); write to a separate --out")
    t.add_argument("--log-dir", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "out", "logs"))
    m = sub.add_parser("merge", help="merge another output dir's profiles and index entries into --out "
                                     "(an existing profile is kept over a failure in SRC)")
    m.add_argument("--out", default="corpus/ops")
    m.add_argument("src")
    r = sub.add_parser("reindex", help="re-normalize every profile and rewrite index totals")
    r.add_argument("--out", default="corpus/ops")
    x = sub.add_parser("crosscheck", help="re-trace every type on real tensors with torch.profiler (an independent "
                                          "method) and write corpus/crosscheck/<lib>/<name>.json")
    x.add_argument("--out", default="corpus/crosscheck")
    x.add_argument("--ops", default="corpus/ops", help="profiles whose types (and config variant) to crosscheck")
    x.add_argument("--jobs", type=int, default=1)
    x.add_argument("--timeout", type=float, default=120.0)
    x.add_argument("--rss-mb", type=int, default=6000)
    x.add_argument("--only", nargs="+", help="ids (transformers/llama) or bare names")
    x.add_argument("--force", action="store_true", help="re-run types that already have a crosscheck file")
    x.add_argument("--log-dir", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "out", "crosscheck-logs"))
    xc = sub.add_parser("crosscheck-compare", help="agreement of the profiles with the crosscheck files")
    xc.add_argument("--ops", default="corpus/ops")
    xc.add_argument("--out", default="corpus/crosscheck")
    xc.add_argument("--worst", type=int, default=30)
    su = sub.add_parser("summary", help="print coverage, failure buckets and op counts (markdown)")
    su.add_argument("--out", default="corpus/ops")
    a = sub.add_parser("api", help="call the public torch API under the recorder and write the API -> ATen ops "
                                   "table (rules/api/torch-<version>.tsv)")
    a.add_argument("--output", required=True, help="TSV to write; a .skipped.txt is written beside it")
    a.add_argument("--jobs", type=int, default=2, help="forked workers")
    a.add_argument("--timeout", type=float, default=20.0, help="per-call timeout (seconds)")
    a.add_argument("--job-timeout", type=float, default=240.0, help="kill a worker job after this many seconds")
    a.add_argument("--max-samples", type=int, default=3, help="successful sample calls per API variant")
    a.add_argument("--only", nargs="+", help="only these qualified APIs (torch.median torch.nn.Mish ...)")
    from . import exact, execute

    exact.add_parser(sub)
    execute.add_parser(sub)
    args = ap.parse_args(argv)
    if args.cmd == "exact":
        return exact.main(args)
    if args.cmd == "execute":
        return execute.main(args)
    if args.cmd == "api":
        if os.environ.get("PYTHONHASHSEED") != "0":
            # Some OpInfo sample functions iterate over sets of strings; a fixed hash seed keeps
            # the sample order, and so the table, identical between runs.
            env = dict(os.environ, PYTHONHASHSEED="0")
            os.execve(sys.executable, [sys.executable, "-m", "xla2tpu_tracer"] + list(argv or sys.argv[1:]), env)
        os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
        from .api_ops import generate

        res = generate(args.output, workers=args.jobs, timeout=args.timeout, job_timeout=args.job_timeout,
                       max_samples=args.max_samples, only=args.only)
        print(f"wrote {args.output}: {res['apis']} APIs, {res['rows']} rows, {res['jobs']} jobs, "
              f"{len(res['job_failures'])} job failures, {res['seconds']:.0f}s")
        return 0
    if args.cmd == "summary":
        from .summary import summary

        print(summary(args.out), end="")
        return 0
    if args.cmd == "crosscheck-compare":
        from .crosscheck import format_report, report

        print(format_report(report(args.ops, args.out, worst=args.worst)), end="")
        return 0
    if args.cmd == "crosscheck":
        return _crosscheck(args)
    if args.cmd in ("merge", "reindex"):
        return _merge(args.out, getattr(args, "src", None))

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    import torch

    torch.set_num_threads(1)
    libs = args.library or LIBRARIES
    from . import targets

    targets.preload(libs)
    versions = library_versions(LIBRARIES)
    entries = output.load_index(args.out)
    want_precision = "bf16-autocast" if args.precision == "bf16" else None
    if entries and output._index_precision(args.out) != want_precision:
        # Resuming into a directory traced at another precision would mix dtypes in one corpus.
        print(f"{args.out} holds profiles of another precision; use another --out", file=sys.stderr)
        return 2
    todo = _targets(libs)
    if args.only:
        want = set(args.only)
        todo = [x for x in todo if x.id in want or x.name in want]
    if not args.force:
        def skip(x):
            e = entries.get(x.id)
            if e is None:
                return False
            if e["status"] == "ok" or e["status"] == "no_model_class":
                return True
            return not args.retry_failed
        todo = [x for x in todo if not skip(x)]
    print(f"{len(todo)} targets to trace ({len(entries)} already in index)", flush=True)
    os.makedirs(os.path.dirname(os.path.join(args.log_dir, "x")), exist_ok=True)
    t0 = time.time()
    from . import runner

    trace_fn = targets.trace
    if args.precision == "bf16":
        from . import autocast_tpu

        output.PRECISION = autocast_tpu.PRECISION
        trace_fn = autocast_tpu.wrap_trace(trace_fn)  # kernels are installed in each worker
    entries = runner.run(todo, trace_fn, args.out, versions, jobs=args.jobs, timeout=args.timeout,
                         rss_mb=args.rss_mb, log_dir=args.log_dir, entries=entries,
                         timings_path=os.path.join(os.path.dirname(args.log_dir.rstrip("/")), "timings.jsonl"))
    totals = output.write_index(args.out, entries, versions)
    print(f"done in {time.time() - t0:.0f}s: {totals}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
