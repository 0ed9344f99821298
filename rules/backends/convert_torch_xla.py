#!/usr/bin/env python3
"""Convert torch_xla's registration list into the xla2tpu-backend/1 TSV format.

Usage: python3 convert_torch_xla.py torch_xla_ops_registered.txt torchtpu-0.2.0.tsv > torch_xla-2.9.tsv

The list only says which ops have an XLA/AutogradXLA kernel. Everything else is classified from
torch's own dispatch info as recorded in the TorchTPU table (torch 2.15.0, not the 2.9.0 torch_xla
was built for; ops added after 2.9 therefore appear here as if they existed there):
  registered for XLA                         -> xla_kernel
  composite_implicit in torch                -> composite_implicit (decomposes on any backend)
  composite_explicit in torch                -> composite_explicit, effective via its .out delegate
  anything else (incl. ops TorchTPU overrides but torch has no composite for, as far as the table
  can tell)                                   -> missing_fallback (conservative)
"""
import sys


def main(xla_list, tpu_tsv):
    header, registered = [], []
    for line in open(xla_list):
        line = line.rstrip("\n")
        if line.startswith("#"):
            header.append(line)
        elif line:
            registered.append(line)
    registered_set = set(registered)

    torch_rows = {}  # op -> (class, delegate) from the TorchTPU table, torch-level info only
    for line in open(tpu_tsv):
        if line.startswith("#") or line.startswith("op\t"):
            continue
        op, cls, _effective, delegate = line.rstrip("\n").split("\t")
        torch_rows[op] = (cls, delegate)

    def base_class(op):
        if op in registered_set:
            return "xla_kernel"
        cls, _ = torch_rows.get(op, ("", ""))
        if cls in ("composite_implicit", "composite_explicit"):
            return cls
        return "missing_fallback"

    print("# format: xla2tpu-backend/1")
    print("# backend: torch_xla-2.9")
    print("# fallback: no XLA kernel; torch_xla's boxed XLA fallback runs it on the CPU "
          "(device->host copies, slow; counted as aten::* in torch_xla metrics)")
    for h in header:
        print(h)
    print("# converted by rules/backends/convert_torch_xla.py: class xla_kernel = registered above; ops not "
          "registered take torch's composite class from torchtpu-0.2.0.tsv (torch 2.15.0, NOT 2.9.0: op set "
          "and composite info are 2.15's), else missing_fallback. effective = via_delegate:<delegate class> "
          "for composite_explicit ops with a structured .out delegate.")
    print("op\tclass\teffective\tstructured_delegate")
    tpu_ops = [op for op in torch_rows if not op.startswith("tpu::")]
    for op in sorted(set(tpu_ops) | registered_set):
        cls = base_class(op)
        delegate = torch_rows.get(op, ("", ""))[1] if cls == "composite_explicit" else ""
        effective = f"via_delegate:{base_class(delegate)}" if delegate else cls
        print(f"{op}\t{cls}\t{effective}\t{delegate}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
