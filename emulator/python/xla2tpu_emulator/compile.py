"""torch.compile on the emulated TPU.

- The dynamo backend "tpu" (TorchTPU lowers FX graphs to StableHLO) runs the
  graph with aot_eager on the emulated device.
- torch.compile is patched like TorchTPU's loader does: without a backend, tpu
  inputs select "tpu" (CPU inputs aot_eager), and TPU backends default to
  dynamic=False.
- The "tpu" backend checks its arguments as TorchTPU's TpuBackend does
  (options, no `mode=`, no dynamic=True). Graph breaks are dynamo's business on
  TorchTPU too (its backend docstring: "We let torch.compile() handle graph
  breaks"), so fullgraph=True errors are dynamo's own, here as there.
- backend="inductor" with tpu inputs raises TorchTPU's error unless
  options={"tpu_backend": "pallas"} (which the emulator cannot run).
"""

import functools
import sys

import torch
from torch.utils import _pytree as pytree

from xla2tpu_emulator import advise
from xla2tpu_emulator import api
from xla2tpu_emulator import report

INDUCTOR_TPU_ERROR = (
    "torch.compile(..., backend='inductor') on TPU is experimental and does"
    " not yet have full TPU support; compilation is likely to fail with"
    " cryptic errors, e.g."
    " https://github.com/google-pytorch/torch_tpu/issues/4300. Pass"
    " backend='tpu' or do not specify `backend` in torch.compile to use"
    " TorchTPU, which does have full TPU support. If you do want to run"
    " Inductor on TPU, you can bypass this error by passing"
    " options={'tpu_backend': 'pallas'}."
)
BACKEND_OPTIONS = (
    "async_compile", "num_dynamic_buckets", "bucket_size", "serializable",
    "debug_callback",
)
CPU_BACKEND = "aot_eager"


def has_tpu_inputs(example_inputs):
  flat, _ = pytree.tree_flatten(example_inputs)
  return any(isinstance(x, torch.Tensor) and x.device.type == "tpu" for x in flat)


MAX_DYNAMIC_BUCKETS = 8  # torch_tpu/_internal/compile/_backend.py


def check_backend_arguments(kwargs):
  """TpuBackend.__call__'s argument checks, with its texts: options are
  validated, anything else dynamo passes (`mode=`) is refused, and so is
  dynamic=True. The options themselves have no effect here."""
  options = kwargs.pop("options", {}) or {}
  buckets = options.get("num_dynamic_buckets", 1)
  buckets = 1 if buckets is None else buckets
  if not isinstance(buckets, int) or not 1 <= buckets <= MAX_DYNAMIC_BUCKETS:
    raise ValueError(
        "`num_dynamic_buckets` must be an integer between 1 and"
        f" {MAX_DYNAMIC_BUCKETS}, got {buckets}"
    )
  bucket_size = options.get("bucket_size", 128)
  bucket_size = 128 if bucket_size is None else bucket_size
  if not isinstance(bucket_size, int) or bucket_size <= 0:
    raise ValueError(f"`bucket_size` must be a positive integer, got {bucket_size}")
  callback = options.get("debug_callback", None)
  if callback is not None and not callable(callback):
    raise TypeError("'debug_callback' must be callable")
  if kwargs:
    raise TypeError("Unexpected keyword arguments: {}".format(kwargs))
  if not torch._dynamo.config.assume_static_by_default:  # pylint: disable=protected-access
    raise NotImplementedError(
        "TPU backend does not support torch.compile(..., dynamic=True, ...)."
        " Please run torch.compile() with dynamic=None or default dynamism"
        " i.e. torch.compile(model) and try again."
    )


def tpu_backend(gm, example_inputs, **kwargs):
  """The "tpu" dynamo backend: aot_eager on the emulated device."""
  try:
    check_backend_arguments(dict(kwargs))
  except (ValueError, TypeError, NotImplementedError) as e:
    report.incompatibility("compile_arguments", str(e), frame=sys._getframe(0))  # pylint: disable=protected-access
    raise
  advise.graph_compiled()
  return _registry().lookup_backend("aot_eager")(gm, example_inputs)


def default_backend_selector(gm, example_inputs, **kwargs):
  if has_tpu_inputs(example_inputs):
    return _registry().lookup_backend("tpu")(gm, example_inputs, **kwargs)
  return _registry().lookup_backend(CPU_BACKEND)(gm, example_inputs, **kwargs)


def _registry():
  """torch._dynamo.backends.registry, with "tpu" registered (lazy import)."""
  import torch._dynamo.backends.registry as reg  # pylint: disable=import-outside-toplevel

  if "tpu" not in reg._COMPILER_FNS:  # pylint: disable=protected-access
    reg.register_backend(name="tpu", compiler_fn=tpu_backend)
    from xla2tpu_emulator import kernels  # pylint: disable=import-outside-toplevel

    kernels.keep_dynamo_out()
  from xla2tpu_emulator import tpu_module  # pylint: disable=import-outside-toplevel

  tpu_module.forbid_set_eager_mode_in_graph()
  return reg


def _is_tpu_backend(backend):
  return (
      backend == "tpu"
      or backend is default_backend_selector
      or backend is tpu_backend
  )


_orig_compile = None
_orig_inductor_call = None


def install():
  global _orig_compile, _orig_inductor_call
  if _orig_compile is not None:
    return
  _orig_compile = torch.compile

  @functools.wraps(_orig_compile)
  def compile_(*args, **kwargs):
    _registry()
    if kwargs.get("backend") is None:
      kwargs["backend"] = default_backend_selector
    if "dynamic" not in kwargs and _is_tpu_backend(kwargs["backend"]):
      kwargs["dynamic"] = False
    return _orig_compile(*args, **kwargs)

  torch.compile = compile_

  wrapper_cls = torch._TorchCompileInductorWrapper  # pylint: disable=protected-access
  _orig_inductor_call = wrapper_cls.__call__

  @functools.wraps(_orig_inductor_call)
  def inductor_call(self, model_, inputs_, *args, **kwargs):
    if has_tpu_inputs(inputs_):
      frame = sys._getframe(1)  # pylint: disable=protected-access
      if getattr(self, "config", {}).get("tpu_backend") != "pallas":
        report.incompatibility("inductor_backend", INDUCTOR_TPU_ERROR, frame=frame)
        raise RuntimeError(INDUCTOR_TPU_ERROR)
      return api.not_emulated(
          "torch.compile(backend='inductor', options={'tpu_backend': 'pallas'})",
          "Inductor's Pallas code generation targets real TPUs",
      )()
    return _orig_inductor_call(self, model_, inputs_, *args, **kwargs)

  wrapper_cls.__call__ = inductor_call
