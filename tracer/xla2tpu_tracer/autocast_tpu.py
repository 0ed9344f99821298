"""TorchTPU 0.2.0's ``torch.autocast("tpu", dtype=torch.bfloat16)``, emulated on CPU for the tracer.

Why this way
------------
TorchTPU registers AutocastPrivateUse1 kernels for exactly 135 ops
(``rules/backends/torchtpu-0.2.0.autocast.txt``); every other op falls through and runs
in its input dtypes. CPU autocast registers AutocastCPU kernels for a different list
(torch 2.15: 126 ops; it also casts ``cat``/``stack``/``index_copy``/``mkldnn_rnn_layer``/
``linalg_matrix_sqrth`` and lacks ``convolution``, ``einsum``, ``mv``, the RNN cells, ...),
so plain ``torch.autocast("cpu")`` would record CPU's casts, not TorchTPU's.

Two ways to get TorchTPU's casts were possible:

* run the model on the emulator's "tpu" device (``emulator/python``). That changes much more
  than autocast: the emulator refuses every op TorchTPU has no kernel for (a profile would
  stop at the first missing op instead of listing it), CPU-specific kernel choices (SDPA,
  RNN) and the composite-explicit inner ops would differ from the float32 profiles, and
  every op goes through Python twice. The bf16 profiles would not be comparable op by op.
* keep everything else exactly as in the float32 trace and swap only the AutocastCPU
  kernels, in the worker process: every op registered on AutocastCPU (read from the
  dispatcher) gets a fallthrough (as TorchTPU's own AutocastPrivateUse1 fallback), and
  TorchTPU's 135 ops get a kernel with TorchTPU's policy, then the forward passes run under
  ``torch.autocast("cpu", dtype=torch.bfloat16)``. The autocast key sits above Autograd
  and the recording mode, exactly where AutocastPrivateUse1 sits on TorchTPU, so casts are
  differentiated by autograd and recorded as ``aten::_to_copy``, and CompositeImplicit ops
  (``linear``, ``matmul``, ``conv2d``, ``einsum``) are cast before they decompose.

This module does the second: it is cheap (Python runs only for the 135 ops), and the only
difference between a bf16 profile and its float32 profile is autocast.

Cast rules follow PyTorch's ``cached_cast`` (aten/src/ATen/autocast_mode.{h,cpp}), which
TorchTPU's C++ kernels use: only floating tensors other than float64 on the autocast device
are cast; a float32 leaf that requires grad (a parameter) cast to the lower dtype is cached
until the outermost autocast context exits, so a weight used twice is cast once. The policy
per op (lower precision, fp32, promote) is the emulator's, ``registry.autocast_policy``; the
registry is loaded from ``emulator/python/xla2tpu_emulator`` by file location, not by putting
``emulator/python`` on ``sys.path``, since that directory also holds the emulator's
``torch_xla`` and ``torch_tpu`` packages and transformers would then believe torch_xla is
installed.

Meta tensors carry no AutocastCPU key, so the context also adds AutocastCPU to the
thread's included dispatch keys (``tiny/meta`` attempts); a model's own
``torch.autocast(..., enabled=False)`` still wins, since excluded keys override included ones.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys

import torch
from torch._C import DispatchKey, DispatchKeySet

PRECISION = "bf16-autocast"
DTYPE = torch.bfloat16
DEVICE_TYPES = ("cpu", "meta")  # fake tensors report "cpu"

_KS = DispatchKeySet(DispatchKey.AutocastCPU)
_EMULATOR_PKG = os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "emulator", "python",
                 "xla2tpu_emulator"))

_libs: list = []
installed: dict[str, str] = {}  # op -> "lower" | "fp32" | "promote" | "fallthrough"
_cache: dict[tuple, tuple] = {}  # (id(param), grad mode) -> (param, cast copy), cleared on context exit


def emulator_registry():
    """``xla2tpu_emulator.registry`` (the emulator's autocast list and policy), loaded by path."""
    mod = sys.modules.get("xla2tpu_emulator.registry")
    if mod is not None:
        return mod
    if "xla2tpu_emulator" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "xla2tpu_emulator", os.path.join(_EMULATOR_PKG, "__init__.py"),
            submodule_search_locations=[_EMULATOR_PKG])
        pkg = importlib.util.module_from_spec(spec)
        sys.modules["xla2tpu_emulator"] = pkg
        spec.loader.exec_module(pkg)
    return importlib.import_module("xla2tpu_emulator.registry")


def _resolve(name: str):
    ns, _, rest = name.partition("::")
    base, _, overload = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, ns), base), overload or "default")


def _eligible(t) -> bool:
    return (isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64
            and t.device.type in DEVICE_TYPES)


def _cast_one(t, dtype):
    if t.dtype == dtype:
        return t
    cacheable = (dtype == DTYPE and t.dtype == torch.float32 and t.requires_grad and t.is_leaf
                 and not t._is_view() and torch.is_autocast_cache_enabled())
    if not cacheable:
        return t.to(dtype)
    # Keyed by grad mode too: a cast made under no_grad (the tracer's image-feature probe runs
    # inside the training forward) has no grad_fn and must not stand in for the parameter
    # when grad is on; stock torch 2.15 also keeps gradients flowing there.
    key = (id(t), torch.is_grad_enabled())
    hit = _cache.get(key)
    if hit is not None and hit[0] is t:
        return hit[1]
    out = t.to(dtype)
    _cache[key] = (t, out)
    return out


def _cast(x, dtype):
    if _eligible(x):
        return _cast_one(x, dtype)
    if isinstance(x, (list, tuple)) and any(_eligible(y) for y in x):
        return type(x)(_cast(y, dtype) for y in x)
    return x


def _promote_dtype(args, kwargs):
    # cached_cast's promote starts from the lower-precision dtype. Computed here, not with
    # torch.promote_types: that is an ATen op and the recorder would list it. Among eligible
    # dtypes (float16, bfloat16, float32) any two different ones promote to float32.
    dtype = DTYPE
    for x in list(args) + list(kwargs.values()):
        for y in x if isinstance(x, (list, tuple)) else (x,):
            if _eligible(y) and y.dtype != dtype:
                dtype = torch.float32
    return dtype


def _make(op, policy):
    def kernel(*args, **kwargs):
        with torch._C._ExcludeDispatchKeyGuard(_KS):
            if policy == "lower":
                dtype = torch.get_autocast_dtype("cpu")
            elif policy == "promote":
                dtype = _promote_dtype(args, kwargs)
            else:
                dtype = torch.float32
            args = tuple(_cast(a, dtype) for a in args)
            kwargs = {k: _cast(v, dtype) for k, v in kwargs.items()}
            return op(*args, **kwargs)

    return kernel


def install() -> dict[str, str]:
    """Replace the AutocastCPU kernels by TorchTPU's (process-wide; call in a worker)."""
    if installed:
        return installed
    registry = emulator_registry()
    tpu_ops = {}
    for name in registry.autocast_ops():
        try:
            tpu_ops[name] = (_resolve(name), registry.autocast_policy(name))
        except (AttributeError, RuntimeError):
            continue  # not an op in this torch version
    lib = torch.library.Library("aten", "IMPL")  # noqa: TOR901
    _libs.append(lib)
    for name in sorted(torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCPU")):
        if not name.startswith("aten::") or name in tpu_ops:
            continue
        lib.impl(name.split("::", 1)[1], torch.library.fallthrough_kernel, "AutocastCPU")
        installed[name] = "fallthrough"
    for name, (op, policy) in sorted(tpu_ops.items()):
        lib.impl(name.split("::", 1)[1], _make(op, policy), "AutocastCPU")
        installed[name] = policy
    return installed


@contextlib.contextmanager
def autocast():
    """The forward-pass context: ``torch.autocast("cpu", bfloat16)`` with TorchTPU's kernels."""
    install()
    try:
        with torch.autocast("cpu", dtype=DTYPE), torch._C._IncludeDispatchKeyGuard(DispatchKey.AutocastCPU):
            yield
    finally:
        _cache.clear()


def wrap_trace(trace_fn):
    """``trace_fn`` run in bf16: installs the kernels (in the forked worker that calls it) and
    puts the inference and training-forward phases under ``autocast()``."""

    def traced(target, deadline):
        from . import phases

        install()
        phases.FORWARD_CONTEXT = autocast
        return trace_fn(target, deadline)

    return traced
