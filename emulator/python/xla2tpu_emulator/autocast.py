"""torch.autocast("tpu"): AutocastPrivateUse1 kernels for TorchTPU's 135 ops.

A fallthrough covers every other op (they run in their input dtypes). Cast
rules follow PyTorch's cached_cast: only floating tpu tensors other than
float64 are cast; policies come from registry.autocast_policy.
"""

import torch
from torch._C import DispatchKey
from torch._C import DispatchKeySet

from xla2tpu_emulator import registry

_AUTOCAST_KS = DispatchKeySet(DispatchKey.AutocastPrivateUse1)
_libs = []
registered = {}


def _eligible(t):
  return (
      isinstance(t, torch.Tensor)
      and t.device.type == "tpu"
      and t.is_floating_point()
      and t.dtype != torch.float64
  )


def _cast(x, dtype):
  if _eligible(x):
    return x.to(dtype) if x.dtype != dtype else x
  if isinstance(x, (list, tuple)) and x and any(_eligible(y) for y in x):
    return type(x)(_cast(y, dtype) for y in x)
  return x


def _widest(args, kwargs):
  widest = None
  for x in list(args) + list(kwargs.values()):
    for y in x if isinstance(x, (list, tuple)) else (x,):
      if _eligible(y):
        widest = y.dtype if widest is None else torch.promote_types(widest, y.dtype)
  return widest


def _make(op, policy):
  def kernel(*args, **kwargs):
    with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_KS):  # pylint: disable=protected-access
      if policy == "lower":
        dtype = torch.get_autocast_dtype("tpu")
      elif policy == "promote":
        dtype = _widest(args, kwargs)
      else:
        dtype = torch.float32
      if dtype is not None:
        args = tuple(_cast(a, dtype) for a in args)
        kwargs = {k: _cast(v, dtype) for k, v in kwargs.items()}
      return op(*args, **kwargs)

  return kernel


def install():
  fb = torch.library.Library("_", "IMPL")  # noqa: TOR901
  _libs.append(fb)
  fb.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
  lib = torch.library.Library("aten", "IMPL")  # noqa: TOR901
  _libs.append(lib)
  from xla2tpu_emulator.kernels import _resolve  # pylint: disable=import-outside-toplevel

  for name in registry.autocast_ops():
    try:
      op = _resolve(name)
    except (AttributeError, RuntimeError):
      continue
    policy = registry.autocast_policy(name)
    try:
      lib.impl(name, _make(op, policy), "AutocastPrivateUse1")
      registered[name] = policy
    except RuntimeError:
      pass
  try:
    torch.set_autocast_dtype("tpu", torch.bfloat16)
  except Exception:  # pylint: disable=broad-except
    pass
