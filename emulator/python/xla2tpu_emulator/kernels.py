"""PrivateUse1 ("tpu") kernels: registry-driven registrations and the fallback.

A tpu tensor owns (through a non-owning storage) the memory of a CPU tensor.
Kernels alias their tpu arguments as CPU tensors over the same memory, run the
CPU kernel, and map results back: results that are an argument (in-place,
out=) return the original tpu tensor; results that view an argument's memory
become tpu views; new results are adopted as tpu tensors without copying.

Only ops that TorchTPU 0.2.0 registers (class tpu_kernel in the registry) get
a PrivateUse1 kernel, so composites decompose exactly as on TorchTPU. The
boxed fallback refuses everything else that reaches the backend with
TorchTPU's error, except ops the registry does not know (another torch
version), which run on CPU with a warning event.
"""

import itertools
import math
import sys
import threading
import warnings
import weakref

import torch
from torch._C import DispatchKey
from torch._C import DispatchKeySet

from xla2tpu_emulator import advise
from xla2tpu_emulator import cpu_impls
from xla2tpu_emulator import device
from xla2tpu_emulator import devicecheck
from xla2tpu_emulator import registry
from xla2tpu_emulator import report

CPU_KS = DispatchKeySet(DispatchKey.CPU)
CPU = torch.device("cpu")
TPU = None  # torch.device("tpu", 0), set by install() after the rename

_set_storage = torch.ops.aten.set_.source_Storage_storage_offset
_as_strided = torch.ops.aten.as_strided.default
_construct = torch._C._construct_storage_from_data_pointer  # pylint: disable=protected-access
_create_empty = torch._C._acc.create_empty_tensor  # pylint: disable=protected-access

_live = {}  # tpu StorageImpl address -> CPU storage it uses
_OPS = report.OP_COUNTS

# Host-sync bookkeeping shared with the Python-level patches (patches.py):
# while a Python-level sync (item, print, save, ...) is active, the kernels do
# not count the syncs it causes again.
SYNC = threading.local()

# CPU fallback switch (TorchTPU's internal
# torch_tpu._internal.execution_mode.enable_cpu_fallback), off by default.
cpu_fallback_enabled = False


def _outer_frame(n):
  """The frame `n` levels above the caller, or the outermost one there is: kernels the
  autograd engine runs (backward) have no Python caller, where sys._getframe(n) raises."""
  f = sys._getframe(1)  # pylint: disable=protected-access
  for _ in range(n):
    if f.f_back is None:
      break
    f = f.f_back
  return f


def host_sync(kind):
  if getattr(SYNC, "depth", 0):
    SYNC.hit = True
    return
  report.count_host_sync(kind, frame=_outer_frame(2))


# ---------------------------------------------------------------- aliasing


def cpu_alias(t):
  """A CPU tensor over the memory of tpu tensor `t` (same strides/offset)."""
  s = t.untyped_storage()
  cs = _construct(s.data_ptr(), CPU, s.nbytes())
  c = torch.empty(0, dtype=t.dtype).set_(
      cs, t.storage_offset(), t.size(), t.stride()
  )
  if t.is_conj():
    torch._C._set_conj(c, True)  # pylint: disable=protected-access
  if t.is_neg():
    torch._C._set_neg(c, True)  # pylint: disable=protected-access
  return c


def adopt_storage(cs):
  """A tpu storage over CPU storage `cs` (callers keep `cs` alive: _link)."""
  return _construct(cs.data_ptr(), TPU, cs.nbytes())


def _link(t, cs):
  """Keeps CPU storage `cs` alive while tpu tensor `t`'s storage lives."""
  _keep(t.untyped_storage(), cs)


def _keep(st, cs):
  key = st._cdata  # pylint: disable=protected-access
  if key not in _live:
    weakref.finalize(st, _live.pop, key, None)
  _live[key] = cs if cs.nbytes() else None


def resize_storage(st, size):
  """UntypedStorage.resize_ for tpu storages (no C++ allocator here): swap in
  a new buffer, so every tensor sharing the storage sees it (FSDP2 frees and
  re-allocates unsharded parameters this way)."""
  size = int(size)
  old_n = st.nbytes()
  if size == old_n:
    return st
  device.ensure_initialized()
  buf = torch.empty(size, dtype=torch.uint8).untyped_storage()
  if old_n and size:
    n = min(old_n, size)
    src = torch.empty(0, dtype=torch.uint8).set_(
        _construct(st.data_ptr(), CPU, old_n), 0, (n,), (1,)
    )
    torch.empty(0, dtype=torch.uint8).set_(buf, 0, (size,), (1,))[:n].copy_(src)
  if old_n:
    z = _construct(0, TPU, 0)
    st._swap_data_ptr_(z)  # pylint: disable=protected-access
  if size:
    new = _construct(buf.data_ptr(), TPU, size)
    st._swap_data_ptr_(new)  # pylint: disable=protected-access
  _keep(st, buf)
  return st


def adopt(c):
  """A tpu tensor owning CPU tensor `c`'s memory (zero copy)."""
  device.ensure_initialized()
  cs = c.untyped_storage()
  t = _create_empty([0], c.dtype)
  _set_storage.redispatch(
      CPU_KS, t, adopt_storage(cs), c.storage_offset(), c.size(), c.stride()
  )
  _link(t, cs)
  return t


def tpu_view(base, c):
  """A tpu view of `base`'s storage with `c`'s geometry."""
  return _as_strided.redispatch(
      CPU_KS, base, c.size(), c.stride(), c.storage_offset()
  )


def sync_meta(t, c):
  """After a mutating CPU call on alias `c`, mirror storage/geometry into `t`."""
  cs = c.untyped_storage()
  ts = t.untyped_storage()
  if cs.data_ptr() != ts.data_ptr() or cs.nbytes() != ts.nbytes():
    _set_storage.redispatch(
        CPU_KS, t, adopt_storage(cs), c.storage_offset(), c.size(), c.stride()
    )
    _link(t, cs)
  elif (
      c.size() != t.size()
      or c.stride() != t.stride()
      or c.storage_offset() != t.storage_offset()
  ):
    _set_storage.redispatch(
        CPU_KS, t, ts, c.storage_offset(), c.size(), c.stride()
    )


def _is_tpu(x):
  return isinstance(x, torch.Tensor) and x.device.type == "tpu"


class _DeviceRng:
  """Runs CPU kernels with the emulated device's generator as CPU default."""

  def __enter__(self):
    g = torch.default_generator
    self.saved = g.get_state()
    g.set_state(device.generator.get_state())

  def __exit__(self, *exc):
    g = torch.default_generator
    device.generator.set_state(g.get_state())
    g.set_state(self.saved)
    return False


def check_device_arg(dev):
  if dev is not None and dev.type == "tpu" and dev.index not in (None, 0):
    msg = (
        f"Device index {dev.index} is out of bounds of the maximum device count"
        " 1"
    )
    report.incompatibility(
        "set_device",
        msg + " (each TorchTPU process sees exactly one device, tpu:0)",
        frame=_outer_frame(2),
    )
    raise RuntimeError(msg)


# ---------------------------------------------------------------- generic


class _Sig:
  """What the generic kernel needs to know about an op's schema."""

  def __init__(self, op):
    self.name = op.name()
    args = op._schema.arguments  # pylint: disable=protected-access
    self.writes = []  # (pos, name) of mutated Tensor args
    self.device = None  # (pos, name) of a Device arg
    self.pin = None
    self.gen = None
    self.tensors = []  # (pos, name) of plain Tensor args
    for i, a in enumerate(args):
      t = str(a.type)
      if t == "Tensor":
        self.tensors.append((i, a.name, a.kwarg_only))
      if a.alias_info is not None and a.alias_info.is_write and t == "Tensor":
        self.writes.append((i, a.name, a.kwarg_only))
      if t in ("Optional[Device]", "Device"):
        self.device = (i, a.name, a.kwarg_only)
      if a.name == "pin_memory":
        self.pin = (i, a.name, a.kwarg_only)
      if t in ("Optional[Generator]", "Generator"):
        self.gen = (i, a.name, a.kwarg_only)
    self.outs = [w for w in self.writes if w[2]]  # out= (keyword-only)
    self.random = self.gen is not None or self.name in (
        "aten::native_dropout",
        "aten::_fused_dropout",
    )


def _get(args, kwargs, spec):
  i, name, kwonly = spec
  if not kwonly and i < len(args):
    return args[i]
  return kwargs.get(name)


def _put(args, kwargs, spec, value):
  i, name, kwonly = spec
  if not kwonly and i < len(args):
    args[i] = value
  else:
    kwargs[name] = value


# out= ops whose CPU kernels resize a correctly shaped out tensor internally
# (CPU mse_loss.out builds an elementwise output before reducing): give them a
# fresh output instead of the caller's memory.
FRESH_OUT = frozenset({"aten::mse_loss.out"})


def make_generic(op, sync_kind=None, impl=None):
  """A kernel that runs `op`'s CPU kernel (or `impl`) on CPU aliases."""
  sig = _Sig(op)
  name = sig.name
  run = impl if impl is not None else op
  watch = advise.ENABLED and (name in advise.DYNAMIC_OPS or name in advise.MASK_INDEX_OPS)
  sizes = name in advise.DYNAMIC_OPS or name == "aten::index.Tensor"

  def kernel(*args, **kwargs):
    if device.bad_fork:
      device.check_fork()
    devicecheck.check(op, args, kwargs)
    _OPS[name] = _OPS.get(name, 0) + 1
    if watch:
      advise.dynamic_op(name, args, sys._getframe(1))  # pylint: disable=protected-access
    if sizes and advise.reads_output_size(name, args):
      host_sync("output size")
    amap = {}
    tpu_ptrs = {}
    cpu_ids = set()

    def cv(a):
      if isinstance(a, torch.Tensor):
        if a.device.type == "tpu":
          c = cpu_alias(a)
          amap[id(c)] = a
          p = a.untyped_storage().data_ptr()
          if p:
            tpu_ptrs.setdefault(p, a)
          return c
        cpu_ids.add(id(a))
        return a
      if isinstance(a, (list, tuple)):
        if a and any(isinstance(x, (torch.Tensor, list, tuple)) for x in a):
          return type(a)(cv(x) for x in a) if isinstance(a, list) else tuple(
              cv(x) for x in a
          )
        return a
      if isinstance(a, torch.device) and a.type == "tpu":
        return CPU
      return a

    out_tpu = True
    if sig.device is not None:
      dev = _get(args, kwargs, sig.device)
      if dev is not None:
        dev = torch.device(dev)
        check_device_arg(dev)
        out_tpu = dev.type == "tpu"
    ca = [cv(a) for a in args]
    ck = {k: cv(v) for k, v in kwargs.items()}
    # A C++ composite (remainder.Scalar -> remainder.Tensor_out) passes a Scalar on as a
    # wrapped-number tensor, which reaches a Python kernel as a Python number: give the CPU
    # overload its 0-dim tensor back (same promotion: 0-dim tensors do not promote either).
    for spec in sig.tensors:
      v = _get(ca, ck, spec)
      if isinstance(v, (bool, int, float, complex)):
        _put(ca, ck, spec, torch.tensor(v))
    if sig.pin is not None and _get(ca, ck, sig.pin):
      _put(ca, ck, sig.pin, False)
    for spec in sig.outs:
      t = _get(args, kwargs, spec)
      if _is_tpu(t) and (t.untyped_storage().nbytes() == 0 or name in FRESH_OUT):
        e = torch.empty(0, dtype=t.dtype)
        amap[id(e)] = t
        _put(ca, ck, spec, e)
    try:
      if sig.random and _get(ca, ck, sig.gen or (0, "", True)) is None:
        with _DeviceRng():
          out = run(*ca, **ck)
      else:
        out = run(*ca, **ck)
    except RuntimeError as e:
      if "not resizable" not in str(e) or not sig.outs:
        raise
      # An out= argument must grow: rerun with fresh resizable outputs.
      for spec in sig.outs:
        t = _get(args, kwargs, spec)
        if _is_tpu(t):
          e2 = torch.empty(0, dtype=t.dtype)
          amap[id(e2)] = t
          _put(ca, ck, spec, e2)
      out = run(*ca, **ck)
    for spec in sig.writes:
      t = _get(args, kwargs, spec)
      if _is_tpu(t):
        sync_meta(t, _get(ca, ck, spec))
    if sync_kind is not None:
      _count_sync(sync_kind, args, kwargs, out_tpu)
    wrapped = {}

    def back(r):
      if isinstance(r, torch.Tensor):
        orig = amap.get(id(r))
        if orig is not None:
          return orig
        if id(r) in cpu_ids or not out_tpu:
          return r
        p = r.untyped_storage().data_ptr()
        if p:
          base = tpu_ptrs.get(p)
          if base is not None:
            return tpu_view(base, r)
          base = wrapped.get(p)
          if base is not None:
            return tpu_view(base, r)
        t = adopt(r)
        if p:
          wrapped[p] = t
        return t
      if isinstance(r, (list, tuple)):
        res = [back(x) for x in r]
        return res if isinstance(r, list) else tuple(res)
      return r

    return back(out)

  kernel.__name__ = "tpu_" + name.replace("::", "_").replace(".", "_")
  return kernel


# TorchTPU's own warning (a string of its C++ glue): a device-to-host copy is
# asynchronous only into a destination that is already pinned.
NON_BLOCKING_D2H = (
    "non_blocking=True in .cpu() or .to('cpu') only works if the destination is"
    " already a pinned tensor. This will block until all pending d2h copies on"
    " the device complete."
)


def _non_blocking_d2h(dst):
  frame = _outer_frame(2)
  if dst is not None and dst.is_pinned():
    # Asynchronous on the chip: the destination is valid only after a sync.
    report.warning(
        "not_checked",
        "non_blocking copy from tpu into pinned host memory: asynchronous on the"
        " chip, immediate here; reading the destination before"
        " torch.accelerator.synchronize() was not checked",
        frame=frame,
    )
    return
  warnings.warn(NON_BLOCKING_D2H, UserWarning, stacklevel=3)
  report.warning("non_blocking_copy", NON_BLOCKING_D2H, frame=frame)


def _transfer(direction, t):
  if advise.ENABLED and isinstance(t, torch.Tensor):
    advise.transfer(direction, t, sys._getframe(2))  # pylint: disable=protected-access


def _count_sync(kind, args, kwargs, out_tpu):
  if kind == "item":
    host_sync("item")
  elif kind == "to":
    if out_tpu and args and isinstance(args[0], torch.Tensor) and not _is_tpu(args[0]):
      _transfer("h2d", args[0])
    if not out_tpu and args and _is_tpu(args[0]):
      _transfer("d2h", args[0])
      host_sync("cpu")
      if kwargs.get("non_blocking"):
        _non_blocking_d2h(None)
  elif kind == "copy":
    if len(args) >= 2 and _is_tpu(args[0]) and isinstance(args[1], torch.Tensor) and not _is_tpu(args[1]):
      _transfer("h2d", args[1])
    if len(args) >= 2 and not _is_tpu(args[0]) and _is_tpu(args[1]):
      _transfer("d2h", args[1])
      host_sync("cpu")
      if (args[2] if len(args) > 2 else kwargs.get("non_blocking")):
        _non_blocking_d2h(args[0])


# torch's refusal of a view its strides cannot express (TensorShape.cpp, `view`).
_STRIDED_VIEW = "view size is not compatible with input tensor's size and stride"

def make_view(op):
  """View/metadata ops: the CPU kernel only touches metadata of tpu tensors."""
  name = op.name()

  def kernel(*args, **kwargs):
    _OPS[name] = _OPS.get(name, 0) + 1
    try:
      return op.redispatch(CPU_KS, *args, **kwargs)
    except RuntimeError as e:
      if _STRIDED_VIEW in str(e):
        # The chip refuses it too; under torch_xla it ran: name the difference.
        report.incompatibility("strided_view", str(e), op=name, frame=sys._getframe(1))  # pylint: disable=protected-access
        report.reported(e)
      raise

  return kernel


# ---------------------------------------------------------------- specials


def _empty_memory_format(
    size, dtype=None, layout=None, device=None, pin_memory=None,  # pylint: disable=redefined-outer-name
    memory_format=None,
):
  _OPS["aten::empty.memory_format"] = _OPS.get("aten::empty.memory_format", 0) + 1
  if device is not None:
    check_device_arg(torch.device(device))
  c = torch.empty(
      size,
      dtype=dtype,
      memory_format=memory_format
      if memory_format is not None
      else torch.contiguous_format,
  )
  return adopt(c)


def _empty_strided(
    size, stride, dtype=None, layout=None, device=None, pin_memory=None  # pylint: disable=redefined-outer-name
):
  _OPS["aten::empty_strided"] = _OPS.get("aten::empty_strided", 0) + 1
  if device is not None:
    check_device_arg(torch.device(device))
  return adopt(torch.empty_strided(size, stride, dtype=dtype))


def _storage_bytes_needed(size, stride, offset, itemsize):
  if any(s == 0 for s in size):
    return 0
  span = 1 + sum((s - 1) * st for s, st in zip(size, stride))
  return (offset + span) * itemsize


def _resize_(self, size, memory_format=None):
  _OPS["aten::resize_"] = _OPS.get("aten::resize_", 0) + 1
  mf = memory_format if memory_format is not None else torch.contiguous_format
  stride = torch.empty(size, device="meta", memory_format=mf).stride()
  need = _storage_bytes_needed(
      list(size), stride, self.storage_offset(), self.element_size()
  )
  st = self.untyped_storage()
  if need <= st.nbytes():
    return torch.ops.aten.resize_.default.redispatch(
        CPU_KS, self, size, memory_format=memory_format
    )
  device.ensure_initialized()
  new = torch.empty(need, dtype=torch.uint8).untyped_storage()
  old = st.nbytes()
  if old:
    src = _construct(st.data_ptr(), CPU, old)
    torch.empty(0, dtype=torch.uint8).set_(new, 0, (old,), (1,)).copy_(
        torch.empty(0, dtype=torch.uint8).set_(src, 0, (old,), (1,))
    )
  _set_storage.redispatch(
      CPU_KS, self, adopt_storage(new), self.storage_offset(), size, stride
  )
  _link(self, new)
  return self


def _copy_from(self, dst, non_blocking=False):
  _OPS["aten::_copy_from"] = _OPS.get("aten::_copy_from", 0) + 1
  s = cpu_alias(self) if _is_tpu(self) else self
  d = cpu_alias(dst) if _is_tpu(dst) else dst
  if _is_tpu(dst) and not _is_tpu(self):
    _transfer("h2d", self)
  if not _is_tpu(dst) and _is_tpu(self):
    _transfer("d2h", self)
    host_sync("cpu")
    if non_blocking:
      _non_blocking_d2h(dst)
  d.copy_(s)
  return dst


def _copy_from_and_resize(self, dst):
  _OPS["aten::_copy_from_and_resize"] = (
      _OPS.get("aten::_copy_from_and_resize", 0) + 1
  )
  if dst.shape != self.shape:
    dst.resize_(self.shape)
  s = cpu_alias(self) if _is_tpu(self) else self
  d = cpu_alias(dst) if _is_tpu(dst) else dst
  d.copy_(s)
  return dst


def _set_source_tensor(self, source):
  _OPS["aten::set_.source_Tensor"] = _OPS.get("aten::set_.source_Tensor", 0) + 1
  if source.device.type != "tpu":
    raise RuntimeError(
        "set_(): expected source to be on the tpu device, got"
        f" {source.device}"
    )
  return torch.ops.aten.set_.source_Tensor.redispatch(CPU_KS, self, source)


def _set_empty(self):
  _OPS["aten::set_"] = _OPS.get("aten::set_", 0) + 1
  st = _construct(0, TPU, 0)
  return _set_storage.redispatch(CPU_KS, self, st, 0, (0,), (1,))


# ---- scaled dot product attention (TorchTPU's route for F.sdpa)


def _sdpa_masks(q, k, bias, is_causal):
  l, s = q.size(-2), k.size(-2)
  add = None
  if is_causal:
    keep = torch.ones(l, s, dtype=torch.bool).tril(diagonal=0)
    add = torch.zeros(l, s, dtype=q.dtype).masked_fill(~keep, float("-inf"))
  if bias is not None:
    if bias.dtype == torch.bool:
      b = torch.zeros(bias.shape, dtype=q.dtype).masked_fill(
          ~bias, float("-inf")
      )
    else:
      b = bias.to(q.dtype)
    add = b if add is None else add + b
  return add


def _expand_kv(q, k, v):
  hq, hk = q.size(-3) if q.dim() >= 3 else 1, k.size(-3) if k.dim() >= 3 else 1
  if q.dim() >= 3 and hq != hk and hk > 0 and hq % hk == 0:
    rep = hq // hk
    return k.repeat_interleave(rep, dim=-3), v.repeat_interleave(rep, dim=-3), rep
  return k, v, 1


def _dropout_mask(shape, p, seed):
  g = torch.Generator()
  g.manual_seed(int(seed))
  return torch.empty(shape).bernoulli_(1.0 - p, generator=g).to(torch.bool)


def _sdpa_forward_cpu(q, k, v, bias, p, is_causal, scale, seed):
  k, v, _ = _expand_kv(q, k, v)
  sc = scale if scale is not None else 1.0 / math.sqrt(q.size(-1))
  s = torch.matmul(q, k.transpose(-2, -1)) * sc
  add = _sdpa_masks(q, k, bias, is_causal)
  if add is not None:
    s = s + add
  prob = torch.softmax(s, dim=-1)
  probd = prob
  mask = None
  if p > 0.0:
    mask = _dropout_mask(prob.shape, p, seed)
    probd = prob.masked_fill(~mask, 0.0) / (1.0 - p)
  return torch.matmul(probd, v), prob, mask, s


_SDPA_OP = torch.ops.aten._scaled_dot_product_fused_attention_overrideable.default  # pylint: disable=protected-access


def _sdpa_fwd(
    query, key, value, attn_bias=None, dropout_p=0.0, is_causal=False,
    return_debug_mask=False, *, scale=None,
):
  name = "aten::_scaled_dot_product_fused_attention_overrideable"
  devicecheck.check(_SDPA_OP, (query, key, value, attn_bias), {})
  _OPS[name] = _OPS.get(name, 0) + 1
  q, k, v = cpu_alias(query), cpu_alias(key), cpu_alias(value)
  b = cpu_alias(attn_bias) if attn_bias is not None else None
  seed = 0
  if dropout_p > 0.0:
    seed = int(torch.randint(0, 2**62, (1,), generator=device.generator))
  out, _, _, s = _sdpa_forward_cpu(q, k, v, b, dropout_p, is_causal, scale, seed)
  lse = torch.logsumexp(s.float(), dim=-1)
  if lse.dim() == 2:
    lse = lse.unsqueeze(0)
  return (
      adopt(_query_layout(q, out)),
      adopt(lse.contiguous()),
      None,
      None,
      q.size(-2),
      k.size(-2),
      adopt(torch.tensor(seed, dtype=torch.long)),
      adopt(torch.tensor(0, dtype=torch.long)),
      None,
  )


def _query_layout(query, values):
  """`values` laid out in `query`'s dimension order, as torch's meta kernel
  for the fused SDPA ops allocates the output: under torch.compile, views of
  the output are planned on those strides, so a contiguous result would break
  them (e.g. `out.transpose(1, 2).view(b, t, -1)` after a permuted q/k/v)."""
  if query.dim() != values.dim():
    return values.contiguous()
  order = sorted(range(query.dim()), key=lambda d: query.stride(d), reverse=True)
  res = torch.empty([values.size(d) for d in order], dtype=values.dtype)
  return res.permute([order.index(d) for d in range(query.dim())]).copy_(values)


def _sum_to(g, shape):
  while g.dim() > len(shape):
    g = g.sum(0)
  for i, n in enumerate(shape):
    if n == 1 and g.size(i) != 1:
      g = g.sum(i, keepdim=True)
  return g


def _sdpa_bwd(
    grad_out, query, key, value, attn_bias, grad_input_mask, out, logsumexp,
    cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed,
    philox_offset, *, scale=None,
):
  name = "aten::_scaled_dot_product_fused_attention_overrideable_backward"
  _OPS[name] = _OPS.get(name, 0) + 1
  q, k0, v0 = cpu_alias(query), cpu_alias(key), cpu_alias(value)
  go = cpu_alias(grad_out)
  b = cpu_alias(attn_bias) if attn_bias is not None else None
  seed = int(cpu_alias(philox_seed)) if dropout_p > 0.0 else 0
  k, v, rep = _expand_kv(q, k0, v0)
  sc = scale if scale is not None else 1.0 / math.sqrt(q.size(-1))
  _, prob, mask, _ = _sdpa_forward_cpu(q, k0, v0, b, dropout_p, is_causal, scale, seed)
  probd = prob
  if mask is not None:
    probd = prob.masked_fill(~mask, 0.0) / (1.0 - dropout_p)
  gv = torch.matmul(probd.transpose(-2, -1), go)
  gpd = torch.matmul(go, v.transpose(-2, -1))
  gp = gpd
  if mask is not None:
    gp = gpd.masked_fill(~mask, 0.0) / (1.0 - dropout_p)
  gs = prob * (gp - (gp * prob).sum(-1, keepdim=True))
  gq = torch.matmul(gs, k) * sc
  gk = torch.matmul(gs.transpose(-2, -1), q) * sc
  if rep > 1:
    shp = list(k0.shape)
    gk = gk.unflatten(-3, (shp[-3], rep)).sum(-3)
    gv = gv.unflatten(-3, (shp[-3], rep)).sum(-3)
  gb = None
  if b is not None and b.dtype != torch.bool and grad_input_mask[3]:
    gb = adopt(_sum_to(gs, b.shape).to(b.dtype).contiguous())
  # Gradients take their input's layout, as torch's meta kernel says
  # (`empty_like`): compiled graphs plan views on those strides.
  return (
      adopt(torch.empty_like(q).copy_(gq)),
      adopt(torch.empty_like(k0).copy_(gk)),
      adopt(torch.empty_like(v0).copy_(gv)),
      gb,
  )


def sdpa_route(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
    scale=None, enable_gqa=False,
):
  """F.scaled_dot_product_attention on tpu: TorchTPU's SDPA choice is the
  "overrideable" fused kernel (torch's choice stub for PrivateUse1, which a
  Python backend cannot register), so route there as torch's sdpa does,
  after the device check of torch's validate_sdpa_input."""
  for arg, t in (("key", key), ("value", value)):
    if t.device != query.device:
      devicecheck.fail(
          "aten::scaled_dot_product_attention",
          "Expected query, key, and value to have the same device type, but got"
          f" query.device: {query.device} key.device: {key.device} and"
          f" value.device: {value.device} instead.",
          arg if t.device.type != "tpu" else "query",
      )
  if attn_mask is not None and attn_mask.dtype == torch.bool:
    attn_mask = torch.zeros_like(attn_mask, dtype=query.dtype).masked_fill(
        attn_mask.logical_not(), float("-inf")
    )
  if enable_gqa and query.dim() >= 3 and key.size(-3) != query.size(-3):
    rep = query.size(-3) // key.size(-3)
    key = key.repeat_interleave(rep, dim=-3)
    value = value.repeat_interleave(rep, dim=-3)
  return torch.ops.aten._scaled_dot_product_fused_attention_overrideable(  # pylint: disable=protected-access
      query, key, value, attn_mask, dropout_p, is_causal, False, scale=scale
  )[0]


SPECIALS = {
    "aten::empty.memory_format": _empty_memory_format,
    "aten::empty_strided": _empty_strided,
    "aten::resize_": _resize_,
    "aten::_copy_from": _copy_from,
    "aten::_copy_from_and_resize": _copy_from_and_resize,
    "aten::set_.source_Tensor": _set_source_tensor,
    "aten::set_": _set_empty,
    "aten::_scaled_dot_product_fused_attention_overrideable": _sdpa_fwd,
    "aten::_scaled_dot_product_fused_attention_overrideable_backward": _sdpa_bwd,
}
SYNC_KINDS = {
    "aten::_local_scalar_dense": "item",
    "aten::_to_copy": "to",
    "aten::copy_": "copy",
}


# ---------------------------------------------------------------- fallback

MISSING_FMT = "'{}' is not implemented for TPU. Please file a feature request"
_unknown_kernels = {}


def fallback(op, *args, **kwargs):
  """TorchTPU's TpuMissingOpFallback, plus CPU execution for unknown ops."""
  name = op.name()
  cls = registry.op_class(name)
  frame = _outer_frame(1)
  if cls is None:
    report.warning(
        "unknown_op",
        f"'{name}' is not in the TorchTPU 0.2.0 registry (other torch"
        " version?); the emulator runs it on CPU",
        frame=frame,
        dedupe_key=name,
    )
    return _run_on_cpu(op, args, kwargs)
  if cls.endswith("_kernel"):
    # A TorchTPU kernel the emulator could not register directly.
    return _run_on_cpu(op, args, kwargs)
  if cpu_fallback_enabled:
    report.warning(
        "cpu_fallback",
        f"'{name}' is not implemented for TPU. Falling back to CPU",
        frame=frame,
        dedupe_key=name,
    )
    return _run_on_cpu(op, args, kwargs)
  msg = MISSING_FMT.format(name)
  report.incompatibility("missing_op", msg, op=name, frame=frame)
  raise NotImplementedError(msg)


def _run_on_cpu(op, args, kwargs):
  k = _unknown_kernels.get(op)
  if k is None:
    k = _unknown_kernels[op] = make_generic(op)
  return k(*args, **kwargs)


# ---------------------------------------------------------------- autograd


def make_autograd(op, inferred=False):
  """AutogradPrivateUse1 kernel for a CompositeImplicit op with a tpu kernel.

  With grad: the CompositeImplicit decomposition (autograd flows through its
  ops). Without: below autograd, to the op's own tpu kernel. `inferred`: the
  op is not among TorchTPU's AutogradPrivateUse1 registrations, so how
  TorchTPU differentiates it is not known (a warning event says so).
  """
  name = op.name()

  def kernel(*args, **kwargs):
    if torch.is_grad_enabled() and any(
        isinstance(a, torch.Tensor) and a.requires_grad
        for a in itertools.chain(args, kwargs.values())
    ):
      if inferred:
        report.warning(
            "autograd_inferred",
            f"'{name}' has a TorchTPU kernel but no TorchTPU autograd kernel;"
            " the emulator differentiates it through PyTorch's decomposition"
            " (TorchTPU's behaviour here is inferred, not observed)",
            frame=_outer_frame(1),
            dedupe_key=name,
        )
      return op.decompose(*args, **kwargs)
    with torch._C._AutoDispatchBelowAutograd():  # pylint: disable=protected-access
      return op(*args, **kwargs)

  return kernel


def _autograd_is_fallback(name):
  table = torch._C._dispatch_dump_table(name)  # pylint: disable=protected-access
  line = next(
      (l for l in table.splitlines() if l.startswith("AutogradPrivateUse1:")), ""
  )
  return "backend fallback" in line


# ---------------------------------------------------------------- install

_libs = []
registered = {}  # name -> "generic" | "view" | "special" | "failed: ..."


def _resolve(name):
  ns, _, rest = name.partition("::")
  base, _, overload = rest.partition(".")
  packet = getattr(getattr(torch.ops, ns), base)
  return getattr(packet, overload or "default")


def _is_view_op(op):
  schema = op._schema  # pylint: disable=protected-access
  rets = schema.returns
  if not rets:
    return False
  for a in schema.arguments:
    if a.alias_info is not None and a.alias_info.is_write:
      return False
  return all(r.alias_info is not None for r in rets)


_kernel_codes = set()  # code objects the dispatcher calls into (one per kernel factory)


def dynamo_skip(fn):
  """Keeps Dynamo out of `fn` (see keep_dynamo_out)."""
  _kernel_codes.add(getattr(fn, "__code__", None))


def keep_dynamo_out():
  """Dynamo must not compile the emulator's kernels (nor what they call): on
  TorchTPU they are C++, invisible to it. Without this, Dynamo compiled them as
  frames of their own when called from eager code, and reported their graph
  breaks and recompiles as the program's. Called at the first torch.compile,
  so that processes that never compile never import Dynamo."""
  try:
    from torch._C._dynamo.eval_frame import set_code_exec_strategy  # pylint: disable=import-outside-toplevel
    from torch._dynamo.types import FrameAction  # pylint: disable=import-outside-toplevel
    from torch._dynamo.types import FrameExecStrategy  # pylint: disable=import-outside-toplevel
  except ImportError:
    return
  codes = set(_kernel_codes)
  for fn in (fallback, sdpa_route):
    codes.add(fn.__code__)
  codes.discard(None)
  for code in codes:
    set_code_exec_strategy(code, FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP))


def install():
  """Registers the emulator's PrivateUse1 kernels and the fallback."""
  global TPU
  TPU = torch.device("tpu", 0)
  lib = torch.library.Library("aten", "IMPL")  # noqa: TOR901
  _libs.append(lib)
  for name in registry.tpu_kernel_ops():
    if not name.startswith("aten::"):
      continue
    try:
      op = _resolve(name)
    except (AttributeError, RuntimeError):
      registered[name] = "absent"
      continue
    if name in SPECIALS:
      fn, how = SPECIALS[name], "special"
    elif _is_view_op(op) or name.startswith("aten::set_"):
      fn, how = make_view(op), "view"
    else:
      fn = make_generic(op, SYNC_KINDS.get(name), cpu_impls.IMPLS.get(name))
      how = "generic"
    _kernel_codes.add(getattr(fn, "__code__", None))
    try:
      lib.impl(name, fn, "PrivateUse1")
      registered[name] = how
    except RuntimeError as e:
      registered[name] = f"failed: {e}"
  fb = torch.library.Library("_", "IMPL")  # noqa: TOR901
  _libs.append(fb)
  fb.fallback(fallback, "PrivateUse1")
  # SDPA routing (see sdpa_route).
  for key in ("AutogradPrivateUse1", "PrivateUse1"):
    lib.impl("aten::scaled_dot_product_attention", sdpa_route, key)
  registered["aten::scaled_dot_product_attention"] = "route"
  # Autograd kernels TorchTPU supplies where torch has none.
  ag = torch.library.Library("aten", "IMPL")  # noqa: TOR901
  _libs.append(ag)
  for name in registry.AUTOGRAD_OVERRIDES:
    if registered.get(name) in ("generic", "special", "view") and _autograd_is_fallback(name):
      fn = make_autograd(_resolve(name))
      _kernel_codes.add(fn.__code__)
      ag.impl(name, fn, "AutogradPrivateUse1")
  # Other CompositeImplicit ops with a TorchTPU kernel but no autograd kernel
  # (lstm.input, gru.input, avg_pool1d, ...): torch's autograd fallback would
  # silently drop their gradients.
  for name, how in list(registered.items()):
    if how not in ("generic", "special", "view"):
      continue
    if not torch._C._dispatch_has_kernel_for_dispatch_key(  # pylint: disable=protected-access
        name, "CompositeImplicitAutograd"
    ):
      continue
    if _autograd_is_fallback(name):
      fn = make_autograd(_resolve(name), inferred=True)
      _kernel_codes.add(fn.__code__)
      ag.impl(name, fn, "AutogradPrivateUse1")
      registered[name] = how + "+autograd_inferred"
