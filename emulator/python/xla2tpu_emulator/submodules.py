"""torch.tpu submodules: compiler, distributed, ops, optimizers, pallas, profiler.

What can run on CPU runs; the rest raises a "not emulated" NotImplementedError
recorded as a `not_emulated` incompatibility.
"""

import contextlib
import types

import torch
import torch.nn.functional as F

from xla2tpu_emulator import api
from xla2tpu_emulator import distributed as emu_dist
from xla2tpu_emulator import report


def _module(name, doc, attrs, cls=types.ModuleType):
  mod = cls(name, doc)
  for k, v in attrs.items():
    setattr(mod, k, v)
  mod.__all__ = sorted(k for k in attrs if not k.startswith("_"))
  return mod


def _count(name):
  report.OP_COUNTS[name] = report.OP_COUNTS.get(name, 0) + 1


def _exp(fn, name):
  return api.experimental(f"torch.tpu.{name} is experimental and subject to change.",
                          name=name.rsplit(".", 1)[-1])(fn)


# ---------------------------------------------------------------- compiler


@contextlib.contextmanager
def custom_compiler_options(options):
  """Accepted and ignored: the emulator does not run the XLA compiler."""
  if not isinstance(options, dict):
    raise TypeError(f"expected a dict of compiler options, got {type(options)}")
  yield


def build_compiler(name):
  return _module(name, "Public compiler API for TorchTPU (`torch.tpu.compiler`).", {
      "custom_compiler_options": _exp(custom_compiler_options, "compiler.custom_compiler_options"),
  })


# ---------------------------------------------------------------- distributed


def spmd_safe(fn=None, **kwargs):
  """No-op in the emulator (collectives never fuse)."""
  del kwargs
  if fn is None:
    return lambda f: f
  return fn


def topology_aware_mesh(mesh_shape, *, dcn_mesh_shape=None,
                        allow_split_physical_axes=False,
                        contiguous_submeshes=False):
  del allow_split_physical_axes, contiguous_submeshes
  return emu_dist.topology_aware_mesh_impl(mesh_shape, dcn_mesh_shape)


class _DistributedModule(types.ModuleType):
  _window = {"num_stripes": 0, "chunk_mb": 0}

  @property
  def window_num_stripes(self):
    return self._window["num_stripes"]

  @window_num_stripes.setter
  def window_num_stripes(self, value):
    if int(value) <= 0:
      raise ValueError(f"window_num_stripes must be positive, got {value}")
    self._window["num_stripes"] = int(value)

  @property
  def window_stripe_chunk_mb(self):
    return self._window["chunk_mb"]

  @window_stripe_chunk_mb.setter
  def window_stripe_chunk_mb(self, value):
    if int(value) <= 0:
      raise ValueError(f"window_stripe_chunk_mb must be positive, got {value}")
    self._window["chunk_mb"] = int(value)


def build_distributed(name):
  return _module(
      name,
      "Public TorchTPU distributed namespace (`torch.tpu.distributed`).",
      {
          "set_tpu_launch_env": emu_dist.set_tpu_launch_env,
          "spmd_safe": _exp(spmd_safe, "distributed.spmd_safe"),
          "topology_aware_mesh": _exp(topology_aware_mesh, "distributed.topology_aware_mesh"),
      },
      cls=_DistributedModule,
  )


# ---------------------------------------------------------------- ops


def _group(group):
  import torch.distributed as dist  # pylint: disable=import-outside-toplevel

  group = dist.group.WORLD if group is None else group
  if group is None:
    raise ValueError(
        "Default process group has not been initialized, please make sure to"
        " call init_process_group."
    )
  return group


def all_gather_dim(input, dim, group=None):  # pylint: disable=redefined-builtin
  import torch.distributed as dist  # pylint: disable=import-outside-toplevel

  group = _group(group)
  _count("tpu::_all_gather_dim")
  n = group.size()
  moved = input.movedim(dim, 0).contiguous()
  out = moved.new_empty((moved.size(0) * n,) + tuple(moved.shape[1:]))
  dist.all_gather_into_tensor(out, moved, group=group)
  return out.movedim(0, dim).contiguous()


_REDUCE_OPS = {
    "sum": "SUM", "avg": "AVG", "product": "PRODUCT", "min": "MIN",
    "max": "MAX", "band": "BAND", "bor": "BOR", "bxor": "BXOR",
}


def reduce_scatter_dim(input, dim, group=None, reduce_op="sum"):  # pylint: disable=redefined-builtin
  import torch.distributed as dist  # pylint: disable=import-outside-toplevel

  group = _group(group)
  if reduce_op not in _REDUCE_OPS:
    raise ValueError(f"unsupported reduce_op {reduce_op!r}")
  _count("tpu::_reduce_scatter_dim")
  n = group.size()
  moved = input.movedim(dim, 0).contiguous()
  if moved.size(0) % n:
    raise ValueError(
        f"expected input.size({dim}) = {moved.size(0)} to be divisible by the"
        f" group size {n}"
    )
  out = moved.new_empty((moved.size(0) // n,) + tuple(moved.shape[1:]))
  dist.reduce_scatter_tensor(
      out, moved, op=getattr(dist.ReduceOp, _REDUCE_OPS[reduce_op]), group=group
  )
  return out.movedim(0, dim).contiguous()


def optimization_barrier(inputs):
  return torch.ops.tpu._optimization_barrier(list(inputs))  # pylint: disable=protected-access


def _pool(nd):
  fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[nd]

  def pool(input, kernel_size, stride, padding, dilation, ceil_mode):  # pylint: disable=redefined-builtin
    _count(f"tpu::_max_pool{nd}d")
    return fn(input, kernel_size, stride, padding, dilation, ceil_mode)

  def pool_backward(grad_output, input, kernel_size, stride, padding, dilation, ceil_mode):  # pylint: disable=redefined-builtin
    _count(f"tpu::_max_pool{nd}d_backward")
    with torch.enable_grad():
      x = input.detach().requires_grad_(True)
      y = fn(x, kernel_size, stride, padding, dilation, ceil_mode)
      (g,) = torch.autograd.grad(y, x, grad_output)
    return g

  return pool, pool_backward


def ragged_dot(lhs, rhs, group_sizes, *, out=None):
  _count("tpu::_ragged_dot")
  sizes = [int(s) for s in group_sizes.tolist()]
  parts = list(torch.split(lhs, sizes, dim=0))
  res = torch.cat([p @ rhs[i] for i, p in enumerate(parts)], dim=0)
  if out is not None:
    out.copy_(res)
    return out
  return res


def ragged_dot_weight_grad(lhs, grad_output, group_sizes):
  _count("tpu::_ragged_dot_weight_grad")
  sizes = [int(s) for s in group_sizes.tolist()]
  ls = torch.split(lhs, sizes, dim=0)
  gs = torch.split(grad_output, sizes, dim=0)
  return torch.stack([a.transpose(0, 1) @ g for a, g in zip(ls, gs)])


def send(tensors, dst, tag):
  import torch.distributed as dist  # pylint: disable=import-outside-toplevel

  _count("tpu::_send")
  works = [dist.isend(t, dst, tag=tag) for t in tensors]
  return _Works(works)


def recv(tensors, src, tag):
  import torch.distributed as dist  # pylint: disable=import-outside-toplevel

  _count("tpu::_recv")
  works = [dist.irecv(t, src, tag=tag) for t in tensors]
  return _Works(works)


class _Works:
  """Waits for several point-to-point works."""

  def __init__(self, works):
    self._works = works

  def wait(self, timeout=None):
    del timeout
    for w in self._works:
      if w is not None:
        w.wait()
    return True

  def is_completed(self):
    return all(w is None or w.is_completed() for w in self._works)


def build_ops(name):
  attrs = {
      "all_gather_dim": all_gather_dim,
      "reduce_scatter_dim": reduce_scatter_dim,
      "optimization_barrier": optimization_barrier,
      "ragged_dot": ragged_dot,
      "ragged_dot_weight_grad": ragged_dot_weight_grad,
      "send": send,
      "recv": recv,
  }
  for nd in (1, 2, 3):
    p, pb = _pool(nd)
    attrs[f"max_pool{nd}d"] = p
    attrs[f"max_pool{nd}d_backward"] = pb
  for n in (
      "ragged_all_to_all", "sparse_dense_matmul",
      "sparse_dense_matmul_activation_unstack",
      "sparse_dense_matmul_grad_with_adagrad",
      "sparse_dense_matmul_grad_with_adam", "sparse_dense_matmul_grad_with_sgd",
      "sparse_dense_matmul_gradient_stack", "sparse_gather",
      "sparse_gather_backward", "sparse_iota", "sparse_map_row",
      "align_jagged_to_multiple", "strip_jagged_padding",
  ):
    attrs[n] = api.not_emulated(f"torch.tpu.ops.{n}")
  attrs["splash_sdpa"] = api.not_emulated(
      "torch.tpu.ops.splash_sdpa", "it is a Pallas kernel for real TPUs"
  )
  attrs = {
      k: (_exp(v, f"ops.{k}") if k != "optimization_barrier" else v)
      for k, v in attrs.items()
  }
  return _module(name, "Public custom ops API for TorchTPU (`torch.tpu.ops`).", attrs)


# ---------------------------------------------------------------- others


def build_optimizers(name):
  attrs = {
      n: api.not_emulated(
          f"torch.tpu.optimizers.{n}",
          "TorchTPU's traced-trainer optimizers compile whole training steps"
          " with XLA",
      )
      for n in ("AdamW", "Muon", "Optimizer", "Sgd", "SingleTraceTrainer")
  }
  return _module(name, "Public optimizers API for TorchTPU (`torch.tpu.optimizers`).", attrs)


def build_pallas(name):
  return _module(name, "Public Pallas API for TorchTPU (`torch.tpu.pallas`).", {
      "jax_op": api.not_emulated(
          "torch.tpu.pallas.jax_op", "JAX/Pallas kernels run on real TPUs only"
      ),
      "get_pallas_mesh": api.not_emulated(
          "torch.tpu.pallas.get_pallas_mesh", "JAX/Pallas kernels run on real TPUs only"
      ),
  })


class TpuProfilerConfig(torch.profiler._ExperimentalConfig):  # pylint: disable=protected-access
  """Accepted; the emulator records no device trace (host profiling works)."""

  def __init__(self, host_tracer_level=2, device_tracer_level=1,
               python_tracer_level=0, run_dir=None, worker_rank=None, **kwargs):
    super().__init__()
    self.host_tracer_level = host_tracer_level
    self.device_tracer_level = device_tracer_level
    self.python_tracer_level = python_tracer_level
    self.run_dir = run_dir
    self.worker_rank = worker_rank
    self.extra = kwargs


def build_profiler(name):
  return _module(name, "Public profiler API for TorchTPU (`torch.tpu.profiler`).", {
      "TpuProfilerConfig": TpuProfilerConfig,
  })


# ---------------------------------------------------------------- tpu:: ops

_lib = None


def define_tpu_ops():
  """Defines tpu::_optimization_barrier (schema from the TorchTPU glue)."""
  global _lib
  if _lib is not None:
    return
  _lib = torch.library.Library("tpu", "DEF")  # noqa: TOR901
  _lib.define("_optimization_barrier(Tensor[] inputs) -> Tensor[]")

  def barrier(inputs):
    _count("tpu::_optimization_barrier")
    return [t.clone() for t in inputs]

  _lib.impl("_optimization_barrier", barrier, "CompositeExplicitAutograd")

