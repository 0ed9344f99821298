#!/usr/bin/env python3
"""xla2tpu vs ruff on a real-world corpus: wall time, peak RSS, files/s, MB/s.

Builds (once, cached) a corpus of the .py files of pinned PyPI wheels plus CPython's stdlib,
installs a pinned ruff into a venv, then runs `xla2tpu check`, `ruff check` (banned-api TID251 on
torch_xla and optimum.tpu only) and `xla2tpu migrate` N times each, alternating, and prints the
medians, the ratios and a Markdown table. Python 3 standard library only. See README.md here.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Wheels whose .py files make up the corpus: (distribution, version, file name, sha256).
# accelerate and lightning: the latest on PyPI when this was written. torch_xla ships binary
# wheels only; the cp312 manylinux one is taken whatever the host (only its .py files are used).
WHEELS = [
    ("transformers", "5.24.0", "transformers-5.24.0-py3-none-any.whl",
     "ff5ebedf9359f94bb63772b6380eba6e7104d010cbbb2cb82c788817ea7486f6"),
    ("diffusers", "0.42.1", "diffusers-0.42.1-py3-none-any.whl",
     "9154faa704ce00e0b77f568e0d64786064368528aab5fc14eeea92f87d788014"),
    ("accelerate", "1.15.0", "accelerate-1.15.0-py3-none-any.whl",
     "97eacca0b73e45cb867dbf8c5d5d4dc32219544300e0c8992c7334dc2ef33cec"),
    ("lightning", "2.6.6", "lightning-2.6.6-py3-none-any.whl",
     "2bcbd6ee840071cd076c7dc9953d7ac1040df92f1c5fa76583aae644f037ab85"),
    ("timm", "1.0.31", "timm-1.0.31-py3-none-any.whl",
     "5bd50f7d0fe6d09bf9285ac2523234a1b7e6bf075c0be3e7aed09139fcb617c7"),
    ("torch_xla", "2.9.0", "torch_xla-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
     "d6b4fbb2704bff08194c170b23dcf6dea562cf3cb53d9951b86667c327b6f5ed"),
    ("optimum-tpu", "0.2.3", "optimum_tpu-0.2.3-py3-none-any.whl",
     "41fce7da42e265beff1a63bccf295db7547534112f15692a5d39d1c4ea680511"),
]
PIP_PLATFORM = ["--platform", "manylinux_2_28_x86_64", "--python-version", "3.12",
                "--implementation", "cp", "--abi", "cp312"]
RUFF_VERSION = "0.17.6"
STDLIB_MINOR = "3.12"  # the stdlib comes from a local CPython 3.12 (exact version printed)

# Directories that either tool skips by default (ruff's `exclude` defaults and xla2tpu's
# DEFAULT_EXCLUDE), plus hidden ones: left out of the corpus so both check the same files.
# Files that are not UTF-8 (a few stdlib tests in PEP 263 encodings) are left out too: ruff skips
# them with a warning, xla2tpu reports them as errors (exit 2).
EXCLUDED_DIRS = sorted({
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache",
    ".svn", ".tox", ".venv", ".vscode", "__pypackages__", "_build", "buck-out", "dist",
    "node_modules", "site-packages", "venv", "env", "__pycache__",
})
CORPUS_FORMAT = 2

# Ratios reported, each the median of per-round ratios.
RATIOS = (("xla2tpu check", "ruff check"), ("xla2tpu migrate", "ruff check"),
          ("xla2tpu check, every file parsed", "ruff check"), ("xla2tpu migrate", "xla2tpu check"))

RUFF_CONFIG = [
    "--config", 'lint.flake8-tidy-imports.banned-api."torch_xla".msg = "torch_xla is archived"',
    "--config", 'lint.flake8-tidy-imports.banned-api."optimum.tpu".msg = "optimum-tpu is archived"',
]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def die(msg: str) -> None:
    log(f"error: {msg}")
    sys.exit(2)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def excluded(parts) -> bool:
    return any(p in EXCLUDED_DIRS or p.startswith(".") for p in parts)


# ---------------------------------------------------------------- stdlib interpreter

def find_stdlib_python(explicit: str | None) -> tuple[str, dict]:
    probe = ("import json, platform, sys, sysconfig; print(json.dumps({'version': platform.python_version(),"
             " 'implementation': platform.python_implementation(), 'stdlib': sysconfig.get_path('stdlib')}))")
    if explicit:
        candidates = [explicit]
    else:
        candidates = [f"python{STDLIB_MINOR}"]
        candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{STDLIB_MINOR}.*/bin/python{STDLIB_MINOR}")))
        candidates += [f"/usr/bin/python{STDLIB_MINOR}", f"/usr/local/bin/python{STDLIB_MINOR}"]
    for cand in candidates:
        exe = shutil.which(cand) or cand
        try:
            out = subprocess.run([exe, "-I", "-c", probe], check=False, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode != 0:
            continue
        info = json.loads(out.stdout)
        if info["implementation"] != "CPython" or not info["version"].startswith(STDLIB_MINOR + "."):
            if explicit:
                die(f"{exe} is {info['implementation']} {info['version']}, want CPython {STDLIB_MINOR}")
            continue
        return exe, info
    die(f"no CPython {STDLIB_MINOR} found (tried {', '.join(candidates)}); pass --stdlib-python PATH")
    raise AssertionError


# ---------------------------------------------------------------- venv with ruff, wheels

def ensure_venv(cache: Path, python: str) -> Path:
    venv = cache / "venv"
    ruff = venv / "bin" / "ruff"
    if ruff.exists() and ruff_version(ruff) == RUFF_VERSION:
        return venv
    log(f"venv: {venv} with ruff=={RUFF_VERSION}")
    if not (venv / "bin" / "python").exists():
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", f"ruff=={RUFF_VERSION}"], check=True)
    got = ruff_version(ruff)
    if got != RUFF_VERSION:
        die(f"{ruff} is {got}, want {RUFF_VERSION}")
    return venv


def ruff_version(ruff: Path) -> str | None:
    try:
        out = subprocess.run([str(ruff), "--version"], check=False, capture_output=True, text=True)
    except OSError:
        return None
    m = re.match(r"ruff (\S+)", out.stdout)
    return m.group(1) if m else None


def ensure_wheels(cache: Path, venv: Path) -> Path:
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    missing = []
    for dist, ver, name, digest in WHEELS:
        path = wheels / name
        if path.exists() and sha256(path) == digest:
            continue
        path.unlink(missing_ok=True)
        missing.append(f"{dist}=={ver} --hash=sha256:{digest}")
    if missing:
        log(f"wheels: downloading {len(missing)} into {wheels}")
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
            req.write("\n".join(missing) + "\n")
        try:
            subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "download", "--quiet",
                            "--disable-pip-version-check", "--no-deps", "--only-binary=:all:",
                            *PIP_PLATFORM, "--require-hashes", "-r", req.name, "-d", str(wheels)],
                           check=True)
        finally:
            os.unlink(req.name)
    for dist, ver, name, digest in WHEELS:
        path = wheels / name
        if not path.exists():
            die(f"pip did not download {name}")
        if sha256(path) != digest:
            die(f"{name}: sha256 mismatch")
    return wheels


# ---------------------------------------------------------------- corpus

def corpus_spec(stdlib_info: dict) -> dict:
    return {"format": CORPUS_FORMAT, "wheels": [list(w) for w in WHEELS],
            "stdlib": f"CPython {stdlib_info['version']}", "excluded_dirs": EXCLUDED_DIRS}


def ensure_corpus(cache: Path, stdlib_python: str, stdlib_info: dict, venv: Path) -> dict:
    corpus = cache / "corpus"
    manifest_path = cache / "corpus.json"
    spec = corpus_spec(stdlib_info)
    if manifest_path.exists() and corpus.is_dir():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("spec") == spec:
            return manifest
    wheels = ensure_wheels(cache, venv)
    tmp = cache / "corpus.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    sources = {}
    skipped = []

    def write(data: bytes, dest: Path, label: str) -> bool:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            skipped.append(label)
            return False
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        return True

    for dist, ver, name, _ in WHEELS:
        root = tmp / f"{dist}-{ver}"
        n = size = 0
        with zipfile.ZipFile(wheels / name) as zf:
            for info in zf.infolist():
                parts = info.filename.split("/")
                if (info.is_dir() or not info.filename.endswith(".py") or info.filename.startswith("/")
                        or ".." in parts or excluded(parts[:-1])):
                    continue
                if write(zf.read(info), root.joinpath(*parts), f"{name}:{info.filename}"):
                    n += 1
                    size += info.file_size
        sources[f"{dist} {ver}"] = {"files": n, "bytes": size}
    stdlib = Path(stdlib_info["stdlib"])
    root = tmp / f"cpython-{stdlib_info['version']}-stdlib"
    n = size = 0
    for dirpath, dirnames, filenames in os.walk(stdlib):
        dirnames[:] = sorted(d for d in dirnames if not excluded([d]))
        rel = Path(dirpath).relative_to(stdlib)
        for f in sorted(filenames):
            if not f.endswith(".py") or f.startswith("."):
                continue
            data = (Path(dirpath) / f).read_bytes()
            if write(data, root / rel / f, str(Path(dirpath) / f)):
                n += 1
                size += len(data)
    sources[f"CPython {stdlib_info['version']} stdlib"] = {"files": n, "bytes": size,
                                                          "from": str(stdlib), "python": stdlib_python}
    manifest = {"spec": spec, "sources": sources,
                "files": sum(s["files"] for s in sources.values()),
                "bytes": sum(s["bytes"] for s in sources.values()),
                "skipped_not_utf8": skipped}
    shutil.rmtree(corpus, ignore_errors=True)
    tmp.rename(corpus)
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


# ---------------------------------------------------------------- tools

def build_xla2tpu() -> Path:
    log("xla2tpu: cargo build --release --locked")
    subprocess.run(["cargo", "build", "--release", "--locked", "--quiet"], cwd=REPO, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    if not target.is_absolute():
        target = REPO / target
    return target / "release" / "xla2tpu"


def clean_env() -> dict:
    # Neither tool may be steered by its environment variables; xla2tpu prints where its time
    # goes (to standard error, after the run).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUFF_", "XLA2TPU_"))}
    env["XLA2TPU_TIMINGS"] = "1"
    return env


def check_exit(argv: list[str], code: int, stderr: str) -> None:
    """0 clean, 1 findings. `migrate` exits 2 when it skipped a file that does not parse (the
    corpus has a few on purpose, in CPython's tests): fine, as long as that is the only error."""
    if code in (0, 1):
        return
    errors = [l for l in stderr.splitlines() if l.startswith("error:")]
    if code == 2 and argv[1] == "migrate" and errors and all("syntax error, file skipped" in l for l in errors):
        return
    die(f"{shlex.join(argv)} exited {code}:\n{stderr[-4000:]}")


TIMINGS = re.compile(r"^timings \(.*?\): (.*)$", re.M)
PHASE = re.compile(r"([a-z ]+) ([0-9.]+) ms \((\d+)\)")


def parse_timings(stderr: str) -> dict | None:
    """xla2tpu's `XLA2TPU_TIMINGS=1` line -> {phase: {"ms": summed over threads, "calls": n}}."""
    m = TIMINGS.search(stderr)
    if not m:
        return None
    return {p.group(1).strip(): {"ms": float(p.group(2)), "calls": int(p.group(3))}
            for p in PHASE.finditer(m.group(1))}


def run_once(argv: list[str], cwd: Path, env: dict) -> dict:
    """Run argv with stdout to /dev/null; wall time and the child's own peak RSS (wait4), and
    xla2tpu's per-phase breakdown when it prints one."""
    with open(os.devnull, "wb") as devnull, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=devnull, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        check_exit(argv, code, stderr)
    return {"wall_s": wall, "rss_kib": usage.ru_maxrss, "user_s": usage.ru_utime, "sys_s": usage.ru_stime,
            "exit": code, "timings": parse_timings(stderr)}


def capture(argv: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    out = subprocess.run(argv, check=False, cwd=cwd, env=env, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL)
    check_exit(argv, out.returncode, out.stderr)
    return out


def parse_statistics(text: str) -> dict:
    """`count<TAB>code<TAB>...` lines (both tools' --statistics) -> {code or name: count}."""
    counts = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0].strip().isdigit():
            key = parts[1].strip() or (parts[2].split() or ["?"])[-1]  # ruff: no code for invalid-syntax
            counts[key] = counts.get(key, 0) + int(parts[0])
    return counts


def sanity(tools: dict, cwd: Path, env: dict, manifest: dict) -> dict:
    """Once, untimed (it also warms the page cache): files seen and findings per tool."""
    result = {}
    x = tools["xla2tpu check"][:-1]
    r = tools["ruff check"][:-1]
    files_x = capture(x + ["--show-files", "corpus"], cwd, env).stdout.split()
    files_r = capture(r + ["--show-files", "corpus"], cwd, env).stdout.split()
    result["files_seen"] = {"xla2tpu": len(files_x), "ruff": len(files_r)}
    for name, n in result["files_seen"].items():
        if n != manifest["files"]:
            log(f"warning: {name} sees {n} files, the corpus has {manifest['files']}")
    result["findings"] = {
        "xla2tpu check": parse_statistics(capture(x + ["--statistics", "corpus"], cwd, env).stdout),
        "xla2tpu check, every file parsed": parse_statistics(
            capture(tools["xla2tpu check, every file parsed"][:-1] + ["--statistics", "corpus"], cwd, env).stdout),
        "ruff check": parse_statistics(capture(r + ["--statistics", "corpus"], cwd, env).stdout),
    }
    diff = capture(tools["xla2tpu migrate"], cwd, env).stdout
    result["migrate_files_changed"] = sum(1 for line in diff.splitlines() if line.startswith("+++ "))
    return result


# ---------------------------------------------------------------- report

def fmt_int(n: float) -> str:
    return f"{n:,.0f}"


def summarize(samples: dict, manifest: dict) -> dict:
    names = list(samples)
    runs = len(samples[names[0]])
    mb = manifest["bytes"] / 1e6
    per_tool = {}
    for name, rs in samples.items():
        wall = statistics.median(s["wall_s"] for s in rs)
        per_tool[name] = {
            "wall_s": wall,
            "rss_mib": statistics.median(s["rss_kib"] for s in rs) / 1024,
            "cpu_s": statistics.median(s["user_s"] + s["sys_s"] for s in rs),
            "files_per_s": manifest["files"] / wall,
            "mb_per_s": mb / wall,
        }

    def ratio(a, b, key):
        val = (lambda s: s["user_s"] + s["sys_s"]) if key == "cpu" else (lambda s: s[key])
        return statistics.median(val(samples[a][i]) / val(samples[b][i]) for i in range(runs))

    ratios = {
        f"{a} / {b}": {"wall": ratio(a, b, "wall_s"), "cpu": ratio(a, b, "cpu"), "rss": ratio(a, b, "rss_kib")}
        for a, b in RATIOS if a in samples and b in samples
    }
    # Per phase, the median over runs of the time summed over threads.
    breakdown = {}
    for name, rs in samples.items():
        timed = [s["timings"] for s in rs if s.get("timings")]
        if timed:
            breakdown[name] = {phase: {"ms": statistics.median(t[phase]["ms"] for t in timed),
                                       "calls": statistics.median(t[phase]["calls"] for t in timed)}
                               for phase in timed[0]}
    return {"per_tool": per_tool, "ratios": ratios, "breakdown": breakdown}


def table(summary: dict, sanity_result: dict, manifest: dict, runs: int) -> str:
    f = sanity_result["findings"]
    label = {"ruff check": f"`ruff check` {RUFF_VERSION} (TID251 only)",
             "xla2tpu check": "`xla2tpu check`",
             "xla2tpu check, every file parsed": "`xla2tpu check --extend-select TPU002`",
             "xla2tpu migrate": "`xla2tpu migrate`"}
    findings = {name: fmt_int(sum(f[name].values())) for name in f}
    findings["xla2tpu migrate"] = f"{fmt_int(sanity_result['migrate_files_changed'])} files changed"
    lines = [f"| median of {runs} runs | wall | CPU (user+sys) | peak RSS | files/s | MB/s | findings |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name in label:
        t = summary["per_tool"][name]
        lines.append(f"| {label[name]} | {t['wall_s']:.2f} s | {t['cpu_s']:.2f} s | {t['rss_mib']:.0f} MiB | "
                     f"{fmt_int(t['files_per_s'])} | {t['mb_per_s']:.0f} | {findings[name]} |")
    for name, rr in summary["ratios"].items():
        a, b = name.split(" / ")
        lines.append(f"| {a} ÷ {b} (median per-round ratio) | "
                     f"{rr['wall']:.2f}× | {rr['cpu']:.2f}× | {rr['rss']:.2f}× | | | |")
    return "\n".join(lines)


def breakdown_table(summary: dict) -> str:
    """Where xla2tpu's time goes: per phase, milliseconds summed over threads (CPU, not wall)."""
    b = summary["breakdown"]
    names = [n for n in ("xla2tpu check", "xla2tpu check, every file parsed", "xla2tpu migrate") if n in b]
    if not names:
        return ""
    phases = list(b[names[0]])
    lines = ["| phase (ms summed over threads; calls) | " + " | ".join(f"`{n}`" for n in names) + " |",
             "|---|" + "---:|" * len(names)]
    for phase in phases:
        cells = [f"{b[n][phase]['ms']:,.0f} ({fmt_int(b[n][phase]['calls'])})" for n in names]
        lines.append(f"| {phase} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


README_BEGIN = "<!-- bench/vs-ruff/run.py --update-readme: begin -->"
README_END = "<!-- bench/vs-ruff/run.py --update-readme: end -->"


def scaled_corpus(cache: Path, n: int) -> Path:
    """N copies of the corpus under different names (hard links: no extra disk), built once.
    `cp -al` does it in a child: a child's peak RSS (wait4) starts at its parent's peak at the
    fork, so this script must stay small for the memory figures to be the tools' own."""
    root = cache / f"corpus-x{n}"
    done = root / ".complete"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for i in range(n):
        subprocess.run(["cp", "-al", str(cache / "corpus"), str(root / f"copy{i:02d}")], check=True)
    done.write_text("")
    return root


def scale_runs(n: int, check: list[str], cache: Path, env: dict, manifest: dict, runs: int) -> dict:
    """`xla2tpu check` on the corpus and on n copies of it, alternating: time and memory ratios."""
    scaled = scaled_corpus(cache, n)
    one = check[:-1] + ["corpus"]
    many = check[:-1] + [scaled.name]
    run_once(many, cache, env)  # warm the page cache (output to /dev/null: this script stays small)
    pairs = []
    for r in range(runs):
        a, b = (one, many) if r % 2 == 0 else (many, one)
        first, second = run_once(a, cache, env), run_once(b, cache, env)
        small, big = (first, second) if a is one else (second, first)
        pairs.append((small, big))
        log(f"scale round {r + 1}/{runs}: x1 {small['wall_s']:.2f} s {small['rss_kib'] / 1024:.0f} MiB, "
            f"x{n} {big['wall_s']:.2f} s {big['rss_kib'] / 1024:.0f} MiB")
    result = {
        "copies": n,
        "files": manifest["files"] * n,
        "wall_s": statistics.median(b["wall_s"] for _, b in pairs),
        "rss_mib": statistics.median(b["rss_kib"] for _, b in pairs) / 1024,
        "wall_ratio": statistics.median(b["wall_s"] / s["wall_s"] for s, b in pairs),
        "rss_ratio": statistics.median(b["rss_kib"] / s["rss_kib"] for s, b in pairs),
    }
    print(f"scaling: `xla2tpu check` on {n} copies ({result['files']:,} files): {result['wall_s']:.2f} s, "
          f"{result['rss_mib']:.0f} MiB; {result['wall_ratio']:.2f}x the time and {result['rss_ratio']:.2f}x "
          f"the peak memory of one copy (median per-round ratios)")
    return result


def update_readme(summary: dict, san: dict, manifest: dict, runs: int, cpu: str, scaling: dict | None) -> None:
    readme = REPO / "README.md"
    text = readme.read_text()
    if text.count(README_BEGIN) != 1 or text.count(README_END) != 1:
        die(f"{readme}: expected one pair of markers {README_BEGIN} ... {README_END}")
    head, rest = text.split(README_BEGIN)
    _, tail = rest.split(README_END)
    load = os.getloadavg()
    body = (f"{table(summary, san, manifest, runs)}\n\n"
            f"Where xla2tpu's time goes (`XLA2TPU_TIMINGS=1`; median of the runs):\n\n"
            f"{breakdown_table(summary)}\n\n"
            + (f"Scaling: on {scaling['copies']} copies of the corpus ({scaling['files']:,} files, hard links) "
               f"`xla2tpu check` takes {scaling['wall_ratio']:.2f}× the time and {scaling['rss_ratio']:.2f}× "
               f"the peak memory of one copy ({scaling['wall_s']:.2f} s, {scaling['rss_mib']:.0f} MiB).\n\n"
               if scaling else "")
            + f"Machine: {os.cpu_count()} cores ({cpu}); load average after the runs {load[0]:.2f}.")
    readme.write_text(f"{head}{README_BEGIN}\n{body}\n{README_END}{tail}")
    log(f"updated {readme}")


# ---------------------------------------------------------------- main

def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    except OSError:
        return platform.processor() or "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="timed runs per tool (default 10)")
    ap.add_argument("--xla2tpu", metavar="PATH", help="xla2tpu binary (default: cargo build --release here)")
    ap.add_argument("--cache", metavar="DIR", default=str(REPO / "target" / "bench-vs-ruff"),
                    help="corpus, wheels and venv (default target/bench-vs-ruff/)")
    ap.add_argument("--stdlib-python", metavar="PATH", help=f"CPython {STDLIB_MINOR} whose stdlib joins the corpus")
    ap.add_argument("--corpus-only", action="store_true", help="build the corpus and the venv, then exit")
    ap.add_argument("--json", metavar="OUT", help="also write the results (every sample) as JSON")
    ap.add_argument("--scale", type=int, default=1, metavar="N",
                    help="also time `xla2tpu check` on N copies of the corpus (hard links) against one")
    ap.add_argument("--update-readme", action="store_true",
                    help="rewrite the tables in the top-level README.md's Performance section")
    args = ap.parse_args()
    if args.runs < 1:
        die("--runs must be at least 1")

    cache = Path(args.cache).resolve()
    cache.mkdir(parents=True, exist_ok=True)
    stdlib_python, stdlib_info = find_stdlib_python(args.stdlib_python)
    venv = ensure_venv(cache, stdlib_python)
    manifest = ensure_corpus(cache, stdlib_python, stdlib_info, venv)

    print(f"corpus: {cache / 'corpus'}: {manifest['files']:,} files, {manifest['bytes'] / 1e6:.1f} MB")
    for src, s in manifest["sources"].items():
        print(f"  {src:<28} {s['files']:>6,} files {s['bytes'] / 1e6:>7.1f} MB")
    if manifest["skipped_not_utf8"]:
        print(f"  left out, not UTF-8: {', '.join(manifest['skipped_not_utf8'])}")
    print(f"stdlib from {stdlib_python}: CPython {stdlib_info['version']} ({stdlib_info['stdlib']})")
    if args.corpus_only:
        return 0

    xla2tpu = Path(args.xla2tpu).resolve() if args.xla2tpu else build_xla2tpu()
    if not os.access(xla2tpu, os.X_OK):
        die(f"{xla2tpu} is not an executable")
    ruff = venv / "bin" / "ruff"
    env = clean_env()
    xla2tpu_version = capture([str(xla2tpu), "--version"], cache, env).stdout.strip()
    tools = {
        "xla2tpu check": [str(xla2tpu), "check", "--isolated", "corpus"],
        "ruff check": [str(ruff), "check", "--no-cache", "--isolated", "--select", "TID251", *RUFF_CONFIG, "corpus"],
        "xla2tpu migrate": [str(xla2tpu), "migrate", "--isolated", "corpus"],
        "xla2tpu check, every file parsed": [str(xla2tpu), "check", "--isolated", "--extend-select", "TPU002",
                                             "corpus"],
    }
    cpu = cpu_model()
    print(f"xla2tpu: {xla2tpu} ({xla2tpu_version})")
    print(f"ruff:    {ruff} (ruff {ruff_version(ruff)})")
    print(f"machine: {os.cpu_count()} cores, {cpu}, {platform.system()} {platform.release()}")
    for name, argv in tools.items():
        print(f"  {name}: {shlex.join(argv)}  (cwd {cache})")

    log("sanity run (untimed)")
    san = sanity(tools, cache, env, manifest)
    print(f"files seen: xla2tpu {san['files_seen']['xla2tpu']:,}, ruff {san['files_seen']['ruff']:,}")
    for name, counts in san["findings"].items():
        detail = ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
        print(f"findings: {name}: {sum(counts.values()):,} ({detail})")
    print(f"xla2tpu migrate would change {san['migrate_files_changed']:,} files")

    samples = {name: [] for name in tools}
    order = list(tools)
    for r in range(args.runs):
        rotated = order[r % len(order):] + order[:r % len(order)]
        for name in rotated:
            samples[name].append(run_once(tools[name], cache, env))
        log(f"round {r + 1}/{args.runs}: " + ", ".join(
            f"{n} {samples[n][-1]['wall_s']:.2f} s {samples[n][-1]['rss_kib'] / 1024:.0f} MiB" for n in order))

    summary = summarize(samples, manifest)
    load = os.getloadavg()
    print(f"load average after the runs: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min)")
    print()
    print(f"Corpus: {manifest['files']:,} files, {manifest['bytes'] / 1e6:.1f} MB (10^6 bytes); "
          f"{args.runs} alternating runs; {os.cpu_count()} cores.")
    print()
    print(table(summary, san, manifest, args.runs))
    print()
    print(breakdown_table(summary))
    scaling = None
    if args.scale > 1:
        scaling = scale_runs(args.scale, tools["xla2tpu check"], cache, env, manifest, args.runs)
    if args.update_readme:
        update_readme(summary, san, manifest, args.runs, cpu, scaling)

    if args.json:
        Path(args.json).write_text(json.dumps({
            "corpus": manifest, "stdlib_python": stdlib_python, "stdlib_version": stdlib_info["version"],
            "xla2tpu": {"path": str(xla2tpu), "version": xla2tpu_version},
            "ruff": {"path": str(ruff), "version": RUFF_VERSION},
            "machine": {"cores": os.cpu_count(), "cpu": cpu, "system": f"{platform.system()} {platform.release()}",
                        "loadavg_after": load},
            "commands": tools, "cwd": str(cache), "runs": args.runs,
            "sanity": san, "samples": samples, **summary, "scaling": scaling,
        }, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
