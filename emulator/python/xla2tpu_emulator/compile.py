"""torch.compile on the emulated TPU.

- The dynamo backend "tpu" (TorchTPU lowers FX graphs to StableHLO) runs the
  graph with aot_eager on the emulated device.
- torch.compile is patched like TorchTPU's loader does: without a backend, tpu
  inputs select "tpu" (CPU inputs aot_eager), and TPU backends default to
  dynamic=False.
- backend="inductor" with tpu inputs raises TorchTPU's error unless
  options={"tpu_backend": "pallas"} (which the emulator cannot run).
"""

import functools
import sys

import torch
from torch.utils import _pytree as pytree

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
graphs_compiled = 0  # graphs compiled by the "tpu" backend in this process


def has_tpu_inputs(example_inputs):
  flat, _ = pytree.tree_flatten(example_inputs)
  return any(isinstance(x, torch.Tensor) and x.device.type == "tpu" for x in flat)


def tpu_backend(gm, example_inputs, **kwargs):
  """The "tpu" dynamo backend: aot_eager on the emulated device."""
  del kwargs  # mode= / options= (async_compile, bucket_size, ...): no effect here
  global graphs_compiled
  graphs_compiled += 1
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
