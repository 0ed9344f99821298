"""torch.tpu.distributed launch environment and the "tpu_dist"/"tpu" backend.

The process-group backend runs gloo underneath, on zero-copy CPU aliases of
the tpu tensors, so collectives work in place. Works complete synchronously
and their futures hold the tpu tensors.
"""

import datetime
import os
import socket
import sys
import time

import torch
import torch.distributed as dist

from xla2tpu_emulator import api
from xla2tpu_emulator import config
from xla2tpu_emulator import device
from xla2tpu_emulator import kernels
from xla2tpu_emulator import report

REQUIRED_ENV = (
    "TORCH_TPU_SLICEBUILDER_ADDRESSES",
    "TORCH_TPU_TOPOLOGY",
    "TORCH_TPU_XPROF_SESSION_ID",
)
_resolved = {}  # values produced by get_and_set_env_once


# ---------------------------------------------------------------- launch env


def _get_and_set_env_once(name, factory):
  value = os.environ.get(name)
  if value is not None:
    return value
  value = _resolved.get(name)
  if value is None:
    value = factory()
    _resolved[name] = value
  os.environ[name] = value
  return value


def _pick_unused_port():
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def _parse_topology(topology_str):
  import re  # pylint: disable=import-outside-toplevel

  try:
    parts = [int(p) for p in re.split(r"[,xX]", topology_str) if p]
  except ValueError:
    parts = []
  if not parts:
    raise ValueError(
        "set_tpu_launch_env(): expected environment variable"
        " TORCH_TPU_TOPOLOGY to be integer mesh dimensions separated by 'x'"
        f" or ',', e.g. '4x4x4' or '2,2,1', got '{topology_str}'"
    )
  parts += [1] * (3 - len(parts))
  return tuple(parts[:3])


def _topological_node_rank(topology_str, fallback_index):
  # The emulated host has no physical device coordinates: like TorchTPU when
  # they are unavailable, fall back to JOB_COMPLETION_INDEX.
  if fallback_index is not None:
    return int(fallback_index)
  if topology_str:
    _parse_topology(topology_str)
  raise ValueError(
      "set_tpu_launch_env(): expected either TPU device coordinates together"
      " with environment variable TORCH_TPU_TOPOLOGY, or environment variable"
      " JOB_COMPLETION_INDEX to be a 0-based index of this host (Kubernetes"
      " Indexed Jobs set this automatically), to determine NODE_RANK, got"
      " neither"
  )


def _env_int(name, default):
  raw = os.environ.get(name)
  if raw is None:
    return default
  try:
    return int(raw)
  except ValueError as e:
    raise ValueError(
        f"{name} environment variable is not a valid integer: {raw}"
    ) from e


def set_tpu_launch_env_impl(nnodes=None, nproc_per_node=None):
  _get_and_set_env_once("TORCH_TPU_XPROF_SESSION_ID", lambda: str(time.time_ns()))
  hosts_str = os.environ.get("TPU_WORKER_HOSTNAMES")
  hosts = [h for h in hosts_str.split(",") if h] if hosts_str else []
  if nnodes is not None and hosts and nnodes != len(hosts):
    raise ValueError(
        "set_tpu_launch_env(): expected nnodes to match the number of hosts in "
        f"environment variable TPU_WORKER_HOSTNAMES ({len(hosts)}: "
        f'"{hosts_str}"), got {nnodes}'
    )
  completion_index = os.environ.get("JOB_COMPLETION_INDEX")
  multihost = (
      (nnodes is not None and nnodes > 1)
      or len(hosts) > 1
      or completion_index is not None
  )
  if multihost:

    def require_hosts():
      if not hosts:
        raise ValueError(
            "set_tpu_launch_env(): expected environment variable "
            "TPU_WORKER_HOSTNAMES to be a comma-separated list of worker "
            "hostnames or IP addresses, got it as unset"
        )
      return hosts

    slice_topology = os.environ.get("TORCH_TPU_TOPOLOGY")

    def addresses():
      base = _env_int("TORCH_TPU_BASE_PORT", 8070)
      per_host = _env_int(
          "TORCH_TPU_DEVICES_PER_HOST", nproc_per_node or config.chips() or 8
      )
      return ",".join(
          f"{h}:{base + i}" for h in require_hosts() for i in range(per_host)
      )

    _get_and_set_env_once("TORCH_TPU_SLICEBUILDER_ADDRESSES", addresses)
    _get_and_set_env_once(
        "NNODES",
        lambda: str(nnodes if nnodes is not None else len(require_hosts())),
    )
    _get_and_set_env_once(
        "NODE_RANK",
        lambda: str(_topological_node_rank(slice_topology, completion_index)),
    )
    _get_and_set_env_once("MASTER_ADDR", lambda: require_hosts()[0])
    _get_and_set_env_once("MASTER_PORT", lambda: "29500")
    topo = config.topology()
    if topo is not None:
      _get_and_set_env_once("TORCH_TPU_TOPOLOGY", lambda: topo)
  else:
    topo = config.topology(nproc_per_node)
    count = nproc_per_node if nproc_per_node is not None else config.chips()

    def require_topology():
      if topo is None:
        raise ValueError("set_tpu_launch_env(): expected TPU devices, got none")
      return topo

    _get_and_set_env_once(
        "TORCH_TPU_SLICEBUILDER_ADDRESSES",
        lambda: ",".join(
            f"localhost:{_pick_unused_port()}" for _ in range(count)
        ),
    )
    _get_and_set_env_once("TORCH_TPU_TOPOLOGY", require_topology)


set_tpu_launch_env = api.experimental(
    "torch.tpu.distributed.set_tpu_launch_env is experimental and subject to"
    " change.",
    name="set_tpu_launch_env",
)(lambda *, nnodes=None, nproc_per_node=None: set_tpu_launch_env_impl(
    nnodes=nnodes, nproc_per_node=nproc_per_node))


def print_launch_env():
  set_tpu_launch_env_impl()
  topo = os.environ.get("TORCH_TPU_TOPOLOGY", "")
  addrs = os.environ.get("TORCH_TPU_SLICEBUILDER_ADDRESSES", "")
  session = os.environ.get("TORCH_TPU_XPROF_SESSION_ID", "")
  count = len(addrs.split(",")) if addrs else config.chips()
  print(f'TORCH_TPU_TOPOLOGY="{topo}"')
  print(f'TORCH_TPU_SLICEBUILDER_ADDRESSES="{addrs}"')
  print(f'TORCH_TPU_XPROF_SESSION_ID="{session}"')
  print(f"WORLD_SIZE={count}")
  print(f'NODE_RANK="{os.environ.get("NODE_RANK", "0")}"')
  for var in ("NNODES", "MASTER_ADDR", "MASTER_PORT"):
    val = os.environ.get(var)
    if val is not None:
      print(f'{var}="{val}"')


def topology_aware_mesh_impl(mesh_shape, dcn_mesh_shape=None):
  """Ranks laid out in `mesh_shape` (the emulated host has a trivial topology)."""
  shape = tuple(int(s) for s in mesh_shape)
  n = 1
  for s in shape:
    n *= s
  ws = dist.get_world_size() if dist.is_initialized() else n
  if n != ws:
    raise ValueError(
        f"expected mesh_shape {shape} to hold the world size {ws} ranks, got {n}"
    )
  del dcn_mesh_shape
  return torch.arange(n, dtype=torch.int64).reshape(shape)


# ---------------------------------------------------------------- backend

_Backend = torch._C._distributed_c10d.Backend  # pylint: disable=protected-access
_ReduceOp = dist.ReduceOp
_make_work = torch._C._distributed_c10d._create_work_from_future  # pylint: disable=protected-access

BARRIER_DEVICE_IDS_MESSAGE = (
    "device_ids in barrier options is not supported, except device_ids=[0]"
    " which names this process's own device"
)
BARRIER_TIMEOUT_MESSAGE = "timeout in barrier options is not supported"
PREMUL_SUM_MESSAGE = "BuildReduceBody: 'premul_sum' reduction is not supported"


def _alias(t):
  return kernels.cpu_alias(t) if t.device.type == "tpu" else t


def _done(result):
  fut = torch.futures.Future()
  fut.set_result(result)
  return _make_work(fut)


def _op_kind(opts):
  op = getattr(opts, "reduceOp", None)
  if op is None:
    return None
  return getattr(op, "op", op)


def _count(name):
  ops = report.OP_COUNTS
  ops[name] = ops.get(name, 0) + 1


class TpuBackend(_Backend):
  """Emulated ProcessGroupTpu."""

  def __init__(self, store, rank, size, timeout):
    super().__init__(rank, size)
    self._rank = rank
    self._size = size
    self._gloo = dist.ProcessGroupGloo(
        dist.PrefixStore("xla2tpu_emulator_gloo/", store), rank, size, timeout
    )

  @property
  def supports_splitting(self):
    # c10d asks when init_process_group gets a device_id; the Python subclass must answer,
    # or the binding's lookup recurses. No communicator splitting (new_group makes its own).
    return False

  # -- helpers
  def _check_reduce(self, opts):
    kind = _op_kind(opts)
    if kind == _ReduceOp.PREMUL_SUM:
      report.incompatibility("unsupported_collective", PREMUL_SUM_MESSAGE)
      raise RuntimeError(PREMUL_SUM_MESSAGE)
    return kind

  def _gloo_opts(self, opts, cls):
    o = cls()
    kind = _op_kind(opts)
    if kind is not None and hasattr(o, "reduceOp"):
      o.reduceOp = _ReduceOp.SUM if kind == _ReduceOp.AVG else opts.reduceOp
    for attr in ("rootRank", "rootTensor", "timeout"):
      if hasattr(opts, attr) and hasattr(o, attr):
        try:
          setattr(o, attr, getattr(opts, attr))
        except (AttributeError, TypeError):
          pass
    return o

  def _avg(self, tensors, kind):
    if kind == _ReduceOp.AVG:
      for t in tensors:
        a = _alias(t)
        if a.is_floating_point() or a.is_complex():
          a.div_(self._size)
        else:
          a.floor_divide_(self._size)

  # -- collectives
  def allreduce(self, tensors, opts=None):
    opts = opts or dist.AllreduceOptions()
    kind = self._check_reduce(opts)
    _count("c10d::allreduce_")
    self._gloo.allreduce(
        [_alias(t) for t in tensors], self._gloo_opts(opts, dist.AllreduceOptions)
    ).wait()
    self._avg(tensors, kind)
    return _done(list(tensors))

  def allreduce_coalesced(self, tensors, opts=None):
    opts = opts or dist.AllreduceCoalescedOptions()
    kind = self._check_reduce(opts)
    _count("c10d::allreduce_coalesced_")
    o = dist.AllreduceOptions()
    o.reduceOp = _ReduceOp.SUM if kind == _ReduceOp.AVG else opts.reduceOp
    for t in tensors:
      self._gloo.allreduce([_alias(t)], o).wait()
    self._avg(tensors, kind)
    return _done(list(tensors))

  def broadcast(self, tensors, opts=None):
    opts = opts or dist.BroadcastOptions()
    _count("c10d::broadcast_")
    self._gloo.broadcast(
        [_alias(t) for t in tensors], self._gloo_opts(opts, dist.BroadcastOptions)
    ).wait()
    return _done(list(tensors))

  def allgather(self, output_tensors, input_tensors, opts=None):
    _count("c10d::allgather_")
    self._gloo.allgather(
        [[_alias(t) for t in outs] for outs in output_tensors],
        [_alias(t) for t in input_tensors],
    ).wait()
    return _done([list(o) for o in output_tensors])

  def _allgather_base(self, output, input, opts=None):  # pylint: disable=redefined-builtin
    _count("c10d::_allgather_base_")
    out = _alias(output)
    chunks = list(out.reshape(self._size, -1).unbind(0)) if out.numel() else [
        out.new_empty(0) for _ in range(self._size)
    ]
    inp = _alias(input).reshape(-1)
    self._gloo.allgather([chunks], [inp]).wait()
    return _done([output])

  def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
    for o, i in zip(outputs, inputs):
      self._allgather_base(o, i, opts)
    return _done(list(outputs))

  def allgather_coalesced(self, output_lists, input_list, opts=None):
    for outs, inp in zip(output_lists, input_list):
      self.allgather([outs], [inp], opts)
    return _done([list(o) for o in output_lists])

  def _reduce_scatter_into(self, out, full, kind, opts):
    """Reduces `full` (CPU) over ranks and copies this rank's chunk to `out`."""
    buf = full.contiguous().clone()
    o = dist.AllreduceOptions()
    o.reduceOp = _ReduceOp.SUM if kind in (None, _ReduceOp.AVG) else opts.reduceOp
    self._gloo.allreduce([buf], o).wait()
    chunk = buf.reshape(self._size, -1)[self._rank].reshape(out.shape)
    if kind == _ReduceOp.AVG:
      chunk = chunk / self._size if chunk.is_floating_point() else chunk // self._size
    out.copy_(chunk)

  def _reduce_scatter_base(self, output, input, opts=None):  # pylint: disable=redefined-builtin
    opts = opts or dist.ReduceScatterOptions()
    kind = self._check_reduce(opts)
    _count("c10d::_reduce_scatter_base_")
    self._reduce_scatter_into(_alias(output), _alias(input), kind, opts)
    return _done([output])

  def reduce_scatter(self, output_tensors, input_tensors, opts=None):
    opts = opts or dist.ReduceScatterOptions()
    kind = self._check_reduce(opts)
    _count("c10d::reduce_scatter_")
    for out, ins in zip(output_tensors, input_tensors):
      full = torch.stack([_alias(t) for t in ins])
      self._reduce_scatter_into(_alias(out), full, kind, opts)
    return _done(list(output_tensors))

  def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
    for o, i in zip(outputs, inputs):
      self._reduce_scatter_base(o, i, opts)
    return _done(list(outputs))

  def reduce(self, tensors, opts=None):
    opts = opts or dist.ReduceOptions()
    kind = self._check_reduce(opts)
    _count("c10d::reduce_")
    self._gloo.reduce(
        [_alias(t) for t in tensors], self._gloo_opts(opts, dist.ReduceOptions)
    ).wait()
    if self._rank == opts.rootRank:
      self._avg(tensors, kind)
    return _done(list(tensors))

  def gather(self, output_tensors, input_tensors, opts=None):
    _count("c10d::gather_")
    self._gloo.gather(
        [[_alias(t) for t in outs] for outs in output_tensors],
        [_alias(t) for t in input_tensors],
        self._gloo_opts(opts or dist.GatherOptions(), dist.GatherOptions),
    ).wait()
    return _done([list(o) for o in output_tensors])

  def scatter(self, output_tensors, input_tensors, opts=None):
    _count("c10d::scatter_")
    self._gloo.scatter(
        [_alias(t) for t in output_tensors],
        [[_alias(t) for t in ins] for ins in input_tensors],
        self._gloo_opts(opts or dist.ScatterOptions(), dist.ScatterOptions),
    ).wait()
    return _done(list(output_tensors))

  def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):  # pylint: disable=redefined-builtin
    _count("c10d::alltoall_base_")
    self._gloo.alltoall_base(
        _alias(output), _alias(input), output_split_sizes, input_split_sizes
    ).wait()
    return _done([output])

  def alltoall(self, output_tensors, input_tensors, opts=None):
    _count("c10d::alltoall_")
    # Pairwise exchange over send/recv (gloo has no list all-to-all).
    outs = [_alias(t) for t in output_tensors]
    ins = [_alias(t) for t in input_tensors]
    outs[self._rank].copy_(ins[self._rank])
    for step in range(1, self._size):
      dst = (self._rank + step) % self._size
      src = (self._rank - step) % self._size
      w = self._gloo.send([ins[dst].contiguous()], dst, 1000 + step)
      buf = torch.empty_like(outs[src]).contiguous()
      self._gloo.recv([buf], src, 1000 + step).wait()
      w.wait()
      outs[src].copy_(buf)
    return _done(list(output_tensors))

  def barrier(self, opts=None):
    ids = list(getattr(opts, "device_ids", []) or []) if opts is not None else []
    if ids and ids != [0]:
      report.incompatibility("barrier_device_ids", BARRIER_DEVICE_IDS_MESSAGE)
      raise RuntimeError(BARRIER_DEVICE_IDS_MESSAGE)
    _count("c10d::barrier")
    self._gloo.barrier().wait()
    return _done([])

  def send(self, tensors, dst, tag=0):
    _count("c10d::send")
    return self._gloo.send([_alias(t) for t in tensors], dst, tag)

  def recv(self, tensors, src, tag=0):
    _count("c10d::recv_")
    return self._gloo.recv([_alias(t) for t in tensors], src, tag)

  def recv_anysource(self, tensors, tag=0):
    _count("c10d::recv_any_source_")
    return self._gloo.recv_anysource([_alias(t) for t in tensors], tag)

  # torch >= 2.15 names of the tensor-in/tensor-out collectives.
  def all_gather_single(self, output, input, opts=None):  # pylint: disable=redefined-builtin
    return self._allgather_base(output, input, opts)

  def all_gather_single_coalesced(self, outputs, inputs, opts=None):
    return self.allgather_into_tensor_coalesced(outputs, inputs, opts)

  def reduce_scatter_single(self, output, input, opts=None):  # pylint: disable=redefined-builtin
    return self._reduce_scatter_base(output, input, opts)

  def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
    return self.reduce_scatter_tensor_coalesced(outputs, inputs, opts)

  def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts=None):  # pylint: disable=redefined-builtin
    return self.alltoall_base(output, input, output_split_sizes, input_split_sizes, opts)

  def gather_single(self, output, input, opts=None):  # pylint: disable=redefined-builtin
    return self.gather_into_tensor(output, input, opts)

  def gather_into_tensor(self, output, input, opts=None):  # pylint: disable=redefined-builtin
    _count("c10d::gather_into_tensor")
    opts = opts or dist.GatherOptions()
    inp = _alias(input).contiguous()
    if self._rank == opts.rootRank:
      out = _alias(output)
      chunks = list(out.reshape(self._size, -1).unbind(0))
      self._gloo.gather([chunks], [inp.reshape(-1)], self._gloo_opts(opts, dist.GatherOptions)).wait()
    else:
      self._gloo.gather([], [inp.reshape(-1)], self._gloo_opts(opts, dist.GatherOptions)).wait()
    return _done([output])

  def getBackendName(self):  # pylint: disable=invalid-name
    return "tpu"


def _missing_env():
  return [v for v in REQUIRED_ENV if not os.environ.get(v)]


def create_process_group(store, rank, size, timeout):
  """The "tpu_dist" / "tpu" backend creator (non-extended API)."""
  frame = sys._getframe(1)  # pylint: disable=protected-access
  missing = _missing_env()
  if missing:
    msg = (
        "missing required environment variables for distributed training: "
        + ", ".join(missing)
    )
    report.incompatibility(
        "launch_env",
        msg
        + " (call torch.tpu.distributed.set_tpu_launch_env() in the parent"
        " process before spawning workers, or export the output of"
        " `python -m torch.tpu.distributed` before torchrun)",
        frame=frame,
    )
    raise RuntimeError(msg)
  n = len([a for a in os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",") if a])
  # The world (default) group must span the slice; subgroups (new_group,
  # DeviceMesh dimensions) are subsets of it.
  if not dist.is_initialized() and size not in (1, n):
    msg = (
        f"invalid world_size configuration: expected 1 or {n} (the number of"
        " TORCH_TPU_SLICEBUILDER_ADDRESSES entries), got world size"
        f" {size}"
    )
    report.incompatibility("world_size", msg, frame=frame)
    raise RuntimeError(msg)
  device.ensure_initialized()
  if not dist.is_initialized():
    # The world group, however it is created (`init_device_mesh` calls c10d's own
    # `init_process_group`, not the wrapper below): the report's rank and world size.
    report.STATE["rank"], report.STATE["world_size"] = rank, size
  if not isinstance(timeout, datetime.timedelta):
    timeout = datetime.timedelta(seconds=1800)
  return TpuBackend(store, rank, size, timeout)


def install():
  """Registers the "tpu_dist" and "tpu" backends (devices=["tpu"])."""
  if not dist.is_available():
    return
  for name in ("tpu_dist", "tpu"):
    if name.upper() not in dist.Backend._plugins:  # pylint: disable=protected-access
      dist.Backend.register_backend(name, create_process_group, devices=["tpu"])
  orig = dist.init_process_group
  if getattr(orig, "_xla2tpu_wrapped", False):
    return

  def init_process_group(*args, **kwargs):
    result = orig(*args, **kwargs)
    try:
      report.STATE["rank"] = dist.get_rank()
      report.STATE["world_size"] = dist.get_world_size()
    except Exception:  # pylint: disable=broad-except
      pass
    return result

  orig_barrier = dist.barrier

  def barrier(group=dist.GroupMember.WORLD, async_op=False, device_ids=None, timeout=None):
    ours = False
    if device_ids is not None or timeout is not None:
      try:
        ours = dist.get_backend(group) in ("tpu_dist", "tpu")
      except Exception:  # pylint: disable=broad-except
        ours = False
    if ours:
      msg = None
      if device_ids is not None and list(device_ids) not in ([], [0]):
        msg, kind = BARRIER_DEVICE_IDS_MESSAGE, "barrier_device_ids"
      elif timeout is not None:
        msg, kind = BARRIER_TIMEOUT_MESSAGE, "barrier_timeout"
      if msg:
        report.incompatibility(kind, msg, frame=sys._getframe(1))  # pylint: disable=protected-access
        raise RuntimeError(msg)
    return orig_barrier(group, async_op, device_ids, timeout)

  barrier.__wrapped__ = orig_barrier
  barrier.__doc__ = orig_barrier.__doc__
  dist.barrier = barrier
  dist.distributed_c10d.barrier = barrier

  init_process_group.__wrapped__ = orig
  init_process_group.__doc__ = orig.__doc__
  init_process_group._xla2tpu_wrapped = True  # pylint: disable=protected-access
  dist.init_process_group = init_process_group
  dist.distributed_c10d.init_process_group = init_process_group
