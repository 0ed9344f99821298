"""The emulator's C++ PrivateUse1 hooks (csrc/pinned_hooks.cpp), built once per
torch with the host's C++ compiler and cached, so that torch's C++ code finds
the pinned host allocator TorchTPU registers (DDP's unused-parameter search,
`pin_memory=True`). Without a compiler the emulator keeps torch's Python hooks,
which have none, and says so where a program needs it."""

import contextlib
import ctypes
import fcntl
import hashlib
import os
import subprocess
import sys
import sysconfig
import tempfile

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc", "pinned_hooks.cpp")

_HAS_PRIMARY_CONTEXT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
_keep = []  # the callback and the library live as long as the process
why_not = None  # why the C++ hooks are not registered (None once they are)


def _cache_dir(key):
  root = os.environ.get("XLA2TPU_CACHE_DIR") or os.path.join(
      os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "xla2tpu")
  return os.path.join(root, "native", key)


def _build(torch, out):
  torch_dir = os.path.dirname(torch.__file__)
  cxx = os.environ.get("CXX", "c++")
  cmd = [
      cxx, "-O1", "-shared", "-fPIC", "-std=c++20", "-w",
      f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",  # pylint: disable=protected-access
      "-I", os.path.join(torch_dir, "include"), SOURCE, "-o", out,
      "-L", os.path.join(torch_dir, "lib"), "-lc10", "-ltorch_cpu",
  ]
  subprocess.run(cmd, check=True, capture_output=True, text=True)


def library(torch):
  """The built hooks library (built now if this torch has none cached)."""
  with open(SOURCE, "rb") as f:
    source = f.read()
  key = hashlib.sha256(
      source + torch.__version__.encode() + os.path.dirname(torch.__file__).encode()
      + (sysconfig.get_config_var("SOABI") or "").encode()
  ).hexdigest()[:16]
  directory = _cache_dir(key)
  path = os.path.join(directory, "pinned_hooks.so")
  if os.path.exists(path):
    return path
  os.makedirs(directory, exist_ok=True)
  # torchrun starts every rank at once: one builds, the others wait for it.
  with open(os.path.join(directory, ".lock"), "w", encoding="utf-8") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not os.path.exists(path):
      fd, tmp = tempfile.mkstemp(suffix=".so", dir=directory)
      os.close(fd)
      try:
        _build(torch, tmp)
        os.replace(tmp, path)
      finally:
        with contextlib.suppress(FileNotFoundError):
          os.unlink(tmp)
  return path


def register_hooks(torch, has_primary_context):
  """Register the C++ hooks; False (with `why_not` set) where they cannot be built."""
  global why_not
  try:
    lib = ctypes.CDLL(library(torch))
  except (OSError, subprocess.CalledProcessError) as e:
    detail = getattr(e, "stderr", "") or str(e)
    why_not = f"its C++ hooks could not be built ({detail.strip().splitlines()[-1] if detail.strip() else e})"
    print(f"xla2tpu run: note: the emulator has no pinned host allocator: {why_not}", file=sys.stderr)
    return False
  callback = _HAS_PRIMARY_CONTEXT(lambda index: int(bool(has_primary_context(index))))
  lib.xla2tpu_register_hooks.argtypes = [_HAS_PRIMARY_CONTEXT]
  if lib.xla2tpu_register_hooks(callback) != 0:
    why_not = "other PrivateUse1 hooks were registered first"
    return False
  _keep.extend((lib, callback))
  why_not = None
  return True
