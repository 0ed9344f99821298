"""Print a backend operator registry in the xla2tpu-backend/1 TSV format (see rules/backends/README.md).

Run by `xla2tpu ops dump-backend --python PY ...` with the interpreter of an environment where torch and
the backend are installed. Importing torch loads backends registered as `torch.backends` entry points
(torch_tpu); others need `--import` (e.g. `--import torch_xla`). The registry is read from PyTorch's
dispatcher, so it describes eager-mode registrations only.

For each op, the line the dispatcher's computed table (`torch._C._dispatch_dump_table`) has for KEY
(or Autograd<KEY>) gives its class:
  [kernel] at KEY or Autograd<KEY>   -> <backend>_kernel (registered by the backend)
  [math kernel]                     -> composite_implicit
  [default backend kernel]          -> composite_explicit
  backend fallback / no entry       -> missing_fallback
`--registered FILE` instead takes the kernel set from a list read elsewhere (one op per line, `#`
header lines are kept as provenance); everything else is still classified from this torch.
structured_delegate comes from torchgen's packaged native_functions.yaml.
"""
import argparse
import datetime
import importlib
import os
import re
import sys

import torch


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--key", default="PrivateUse1", help="dispatch key of the backend")
    p.add_argument("--name", help="backend name written to the header, e.g. torchtpu-0.3.0")
    p.add_argument("--kernel-class", help="class for backend kernels (default: <device>_kernel)")
    p.add_argument("--import", dest="imports", action="append", default=[], help="module to import first")
    p.add_argument("--registered", help="file listing the ops with a backend kernel")
    p.add_argument("--fallback", default="", help="what an op without kernel does on this backend")
    p.add_argument("--note", action="append", default=[], help="extra provenance line for the header")
    return p.parse_args()


def structured_delegates():
    """func name -> aten::<delegate>, from torchgen's copy of native_functions.yaml (regex: no PyYAML needed)."""
    try:
        import torchgen

        path = os.path.join(os.path.dirname(torchgen.__file__), "packaged/ATen/native/native_functions.yaml")
        text = open(path).read()
    except (ImportError, OSError) as e:
        print(f"warning: no native_functions.yaml ({e}); structured_delegate column left empty", file=sys.stderr)
        return {}
    out = {}
    for block in re.split(r"\n(?=- func: )", text):
        func = re.match(r"- func: ([\w.]+)\(", block)
        delegate = re.search(r"^\s+structured_delegate: ([\w.]+)", block, re.M)
        if func and delegate:
            out["aten::" + func.group(1)] = "aten::" + delegate.group(1)
    return out


def table_entry(table, key):
    for line in table.splitlines():
        if line.startswith(key + ":"):
            return line
    return ""


def classify(op, key, kernel_class, registered):
    if registered is not None:
        if op in registered:
            return kernel_class
    table = torch._C._dispatch_dump_table(op)
    own, autograd = table_entry(table, key), table_entry(table, "Autograd" + key)
    if registered is None and ("[kernel]" in own or "[kernel]" in autograd):
        return kernel_class
    if "[math kernel]" in own:
        return "composite_implicit"
    if "[default backend kernel]" in own:
        return "composite_explicit"
    return "missing_fallback"


def main():
    args = parse_args()
    for module in args.imports:
        importlib.import_module(module)
    device = args.key.lower()
    if args.key == "PrivateUse1":
        device = torch._C._get_privateuse1_backend_name()
    kernel_class = args.kernel_class or f"{device}_kernel"
    header, registered = [], None
    if args.registered:
        registered = set()
        for line in open(args.registered):
            line = line.strip()
            if line.startswith("#"):
                header.append(line)
            elif line:
                registered.add(line)

    ours = {op.split("::")[0] for op in torch._C._dispatch_get_registrations_for_dispatch_key(args.key)}
    namespaces = {"aten"} | (ours - {"_c10d_functional", "c10d"})
    ops = {op for op in torch._C._dispatch_get_all_op_names() if op.split("::")[0] in namespaces}
    if registered:
        ops |= registered
    delegates = structured_delegates()
    classes = {op: classify(op, args.key, kernel_class, registered) for op in ops}

    versions = f"torch {torch.__version__}"
    for module in args.imports:
        versions += f", {module} {getattr(sys.modules[module], '__version__', '?')}"
    print("# format: xla2tpu-backend/1")
    print(f"# backend: {args.name or device}")
    if args.fallback:
        print(f"# fallback: {args.fallback}")
    for line in header:
        print(line)
    for note in args.note:
        print(f"# {note}")
    source = f"--registered {os.path.basename(args.registered)}" if registered else "the dispatch table"
    print(
        f"# dumped by xla2tpu ops dump-backend (src/ops/dump_backend.py) on {datetime.date.today()}: {versions}, "
        f"dispatch key {args.key}; kernels from {source}, other classes from torch._C._dispatch_dump_table, "
        "structured_delegate from torchgen native_functions.yaml."
    )
    print("op\tclass\teffective\tstructured_delegate")
    for op in sorted(classes):
        cls = classes[op]
        delegate = delegates.get(op, "")
        effective = cls
        if delegate and cls == "composite_explicit":
            effective = f"via_delegate:{classes.get(delegate, 'missing_fallback')}"
        print(f"{op}\t{cls}\t{effective}\t{delegate}")


if __name__ == "__main__":
    main()
