"""Compare two checkpoints written by the original and the migrated program.

Usage: compare_checkpoints.py ORIGINAL MIGRATED REL ABS

Run through `xla2tpu run` (tests/differential.rs does), so a checkpoint that
holds TorchTPU tensors loads too. Both are loaded onto the CPU and compared
structurally: same keys and types, tensors of the same shape and dtype whose
values agree within the tolerance. Exit 0 when they agree; otherwise the first
difference is printed and the exit status is 1.
"""

import sys

import torch


def differences(a, b, rel, abs_, path="checkpoint"):
  if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
      return f"{path}: {type(a).__name__} vs {type(b).__name__}"
    a, b = a.cpu(), b.cpu()
    if a.shape != b.shape or a.dtype != b.dtype:
      return f"{path}: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
    if a.is_floating_point() or a.is_complex():
      if not torch.allclose(a, b, rtol=rel, atol=abs_, equal_nan=True):
        worst = (a - b).abs().max().item()
        return f"{path}: values differ (max abs difference {worst:.3g})"
    elif not torch.equal(a, b):
      return f"{path}: values differ"
    return None
  if isinstance(a, dict) and isinstance(b, dict):
    if list(a.keys()) != list(b.keys()):
      return f"{path}: keys {sorted(map(str, a))} vs {sorted(map(str, b))}"
    for k in a:
      d = differences(a[k], b[k], rel, abs_, f"{path}[{k!r}]")
      if d:
        return d
    return None
  if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
    if type(a) is not type(b) or len(a) != len(b):
      return f"{path}: {type(a).__name__} of {len(a)} vs {type(b).__name__} of {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
      d = differences(x, y, rel, abs_, f"{path}[{i}]")
      if d:
        return d
    return None
  if isinstance(a, float) and isinstance(b, float):
    return None if abs(a - b) <= abs_ + rel * max(abs(a), abs(b)) else f"{path}: {a} vs {b}"
  return None if a == b else f"{path}: {a!r} vs {b!r}"


def load(path):
  # Hugging Face's save_model writes safetensors: tensors only, always on the CPU.
  if path.endswith(".safetensors"):
    from safetensors.torch import load_file

    return load_file(path)
  return torch.load(path, map_location="cpu", weights_only=False)


def main():
  original, migrated, rel, abs_ = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
  a, b = load(original), load(migrated)
  d = differences(a, b, rel, abs_)
  if d:
    print(d)
    sys.exit(1)


if __name__ == "__main__":
  main()
