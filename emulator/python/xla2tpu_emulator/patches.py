"""Patches of torch's Python surface that TorchTPU (or the emulator) needs.

- torch.accelerator: device_count (chips before init, 1 after),
  set_device_index / device_index (only index 0), synchronize, random.*
- torch.set/get_float32_matmul_precision mapped to TorchTPU precision
- host-sync accounting: item, tolist, bool, print, numpy, torch.save
- data_ptr() of tpu tensors in user code: flagged as not checked
- DTensor.from_local warning (as TorchTPU's loader)
- torch.multiprocessing.spawn worker wrapper: exceptions recorded in workers
"""

import functools
import sys
import threading
import warnings
import weakref

import torch

from xla2tpu_emulator import config
from xla2tpu_emulator import device
from xla2tpu_emulator import hooks
from xla2tpu_emulator import kernels
from xla2tpu_emulator import report
from xla2tpu_emulator import tpu_module

_SYNC = kernels.SYNC
_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _sync_call(kind, fn, *args, **kwargs):
  depth = getattr(_SYNC, "depth", 0)
  if depth == 0:
    report.count_host_sync(kind, frame=sys._getframe(2))  # pylint: disable=protected-access
  _SYNC.depth = depth + 1
  try:
    return fn(*args, **kwargs)
  finally:
    _SYNC.depth = depth


def _patch_method(name, kind):
  orig = getattr(torch.Tensor, name)

  @functools.wraps(orig)
  def method(self, *args, **kwargs):
    if type(self) in _PLAIN and self.device.type == "tpu":
      return _sync_call(kind, orig, self, *args, **kwargs)
    return orig(self, *args, **kwargs)

  setattr(torch.Tensor, name, method)
  # A wrapper the user's compiled code reaches (`if t:` calls __bool__): Dynamo must
  # not compile it, as it cannot see TorchTPU's C++ methods.
  kernels.dynamo_skip(method)
  kernels.dynamo_skip(_sync_call)


def _patch_numpy():
  orig = torch.Tensor.numpy

  @functools.wraps(orig)
  def numpy(self, *args, **kwargs):
    if isinstance(self, torch.Tensor) and self.device.type == "tpu":
      msg = (
          "can't convert tpu:0 device type tensor to numpy. Use Tensor.cpu() to"
          " copy the tensor to host memory first."
      )
      report.incompatibility(
          "numpy_on_device", msg, frame=sys._getframe(1)  # pylint: disable=protected-access
      )
    return orig(self, *args, **kwargs)

  torch.Tensor.numpy = numpy


def _patch_data_ptr():
  """A tpu tensor's data_ptr() is a device address on the chip (dereferencing
  it from the host, ctypes or a CPU library, crashes or reads garbage); here it
  is host memory that works. Only calls from user code are flagged: libraries
  (DDP, safetensors) compare pointers, which is fine on both."""
  orig = torch.Tensor.data_ptr

  @functools.wraps(orig)
  def data_ptr(self):
    if type(self) in _PLAIN and self.device.type == "tpu":
      frame = sys._getframe(1)  # pylint: disable=protected-access
      if report.is_user_file(frame.f_code.co_filename):
        report.warning(
            "not_checked",
            "data_ptr() of a tpu tensor is a device address on the chip; here"
            " it is host memory, so host-side use of it (ctypes, numpy, CPU"
            " libraries) was not checked",
            frame=frame,
        )
    return orig(self)

  torch.Tensor.data_ptr = data_ptr


def _patch_save():
  orig = torch.save

  @functools.wraps(orig)
  def save(*args, **kwargs):
    depth = getattr(_SYNC, "depth", 0)
    hit = getattr(_SYNC, "hit", False)
    _SYNC.depth = depth + 1
    _SYNC.hit = False
    try:
      return orig(*args, **kwargs)
    finally:
      synced = _SYNC.hit
      _SYNC.depth = depth
      _SYNC.hit = hit or synced
      if synced and depth == 0:
        report.count_host_sync("save", frame=sys._getframe(1))  # pylint: disable=protected-access

  torch.save = save
  torch.serialization.save = save


_pinned = weakref.WeakValueDictionary()  # id -> pinned host tensor


def _patch_pin_memory():
  """Pinned host memory for the tpu accelerator (TorchTPU has a pinned
  allocator; a Python backend has none): a plain host copy, reported pinned."""
  orig_pin = torch.Tensor.pin_memory
  orig_is_pinned = torch.Tensor.is_pinned

  def _for_tpu(dev):
    if dev is None:
      acc = torch.accelerator.current_accelerator()
      return acc is not None and acc.type == "tpu"
    return torch.device(dev).type == "tpu"

  @functools.wraps(orig_pin)
  def pin_memory(self, device=None):
    if self.device.type == "cpu" and _for_tpu(device):
      if _pinned.get(id(self)) is self:
        return self
      out = self.clone(memory_format=torch.contiguous_format)
      _pinned[id(out)] = out
      return out
    return orig_pin(self) if device is None else orig_pin(self, device)

  @functools.wraps(orig_is_pinned)
  def is_pinned(self, device=None):
    if _pinned.get(id(self)) is self and _for_tpu(device):
      return True
    try:
      return orig_is_pinned(self) if device is None else orig_is_pinned(self, device)
    except (NotImplementedError, RuntimeError):
      return False

  torch.Tensor.pin_memory = pin_memory
  torch.Tensor.is_pinned = is_pinned


def _patch_accelerator():
  acc = torch.accelerator

  def _index_of(dev):
    if dev is None:
      return 0
    if isinstance(dev, int):
      return dev
    d = torch.device(dev)
    if d.type != "tpu":
      raise ValueError(
          f"{d} doesn't match the current accelerator tpu."
      )
    return d.index if d.index is not None else 0

  @functools.wraps(acc.device_count)
  def device_count():
    return tpu_module.device_count_impl()

  def _set(dev):
    idx = _index_of(dev)
    if idx != 0:
      tpu_module._set_device_impl(idx, frame=sys._getframe(2))  # pylint: disable=protected-access

  @functools.wraps(acc.set_device_index)
  def set_device_index(dev, /):
    _set(dev)

  @functools.wraps(acc.synchronize)
  def synchronize(dev=None, /):
    idx = _index_of(dev)
    if idx != 0:
      tpu_module._set_device_impl(idx, frame=sys._getframe(1))  # pylint: disable=protected-access
    if device.bad_fork:
      device.check_fork()

  acc.device_count = device_count
  acc.set_device_index = set_device_index
  acc.set_device_idx = set_device_index
  acc.synchronize = synchronize

  di = acc.device_index
  orig_enter = di.__enter__

  def enter(self):
    idx = getattr(self, "idx", None)
    if idx is not None and idx >= 0:
      _set(idx)
    return orig_enter(self)

  di.__enter__ = enter

  rnd = acc.random

  @functools.wraps(rnd.initial_seed)
  def initial_seed(dev=None, /):
    _set(dev) if dev is not None else None  # pylint: disable=expression-not-assigned
    return device.initial_seed()

  @functools.wraps(rnd.get_rng_state)
  def get_rng_state(dev=None, /):
    if dev is not None:
      _set(dev)
    return device.get_rng_state()

  rnd.initial_seed = initial_seed
  rnd.get_rng_state = get_rng_state
  rnd.get_rng_state_all = lambda: [device.get_rng_state()]


def _patch_accelerator_memory():
  """TorchTPU's allocator is a c10::DeviceAllocator (its glue constructs one
  and defines TpuAllocator::emptyCache), so torch.accelerator.empty_cache()
  and the memory statistics work there (accelerate and the HF Trainer call
  them). The emulator's tensors live in host memory without a device
  allocator, where torch would hit an internal assert: empty_cache() does
  nothing, statistics read as empty, and the run says HBM was not checked."""
  c = torch._C  # pylint: disable=protected-access
  note = (
      "torch.accelerator memory statistics / empty_cache(): HBM use is not"
      " modeled (statistics read as zero, free memory as the chip's HBM size),"
      " so out-of-memory on the chip was not checked"
  )

  def is_allocator_initialized():
    report.warning("not_checked", note, frame=sys._getframe(1))  # pylint: disable=protected-access
    return False

  def get_memory_info(device_index=None):
    del device_index
    report.warning("not_checked", note, frame=sys._getframe(1))  # pylint: disable=protected-access
    total = config.hbm_bytes()
    return (total, total)

  c._accelerator_isAllocatorInitialized = is_allocator_initialized  # pylint: disable=protected-access
  c._accelerator_getMemoryInfo = get_memory_info  # pylint: disable=protected-access


def _patch_precision():
  P = tpu_module.Precision  # pylint: disable=invalid-name

  @functools.wraps(torch.set_float32_matmul_precision)
  def set_precision(precision):
    mapping = {"medium": P.DEFAULT, "high": P.HIGH, "highest": P.HIGHEST}
    if precision not in mapping:
      raise ValueError(
          "expected to be one of 'highest', 'high', or 'medium', got"
          f" '{precision}'"
      )
    tpu_module.set_global_precision(mapping[precision])

  @functools.wraps(torch.get_float32_matmul_precision)
  def get_precision():
    return {P.DEFAULT: "medium", P.HIGH: "high", P.HIGHEST: "highest"}[
        tpu_module.get_global_precision()
    ]

  torch.set_float32_matmul_precision = set_precision
  torch.get_float32_matmul_precision = get_precision


UNEVEN_SHARDING_WARNING = (
    "`DTensor.from_local` called without `shape` and `stride`. Unevenly"
    " sharded tensors across ranks may cause collectives to hang or error out."
    " Provide global `shape` and `stride` when shapes differ across ranks."
)


def _patch_from_local(dt):
  orig = dt.DTensor.from_local

  def from_local(*args, run_check=None, shape=None, stride=None, **kwargs):
    if (shape is None or stride is None) and not torch.compiler.is_compiling():
      warnings.warn(
          "<TorchTpu/Correctness/> " + UNEVEN_SHARDING_WARNING,
          UserWarning,
          stacklevel=2,
      )
    if run_check is None:
      run_check = config.truthy("TORCH_TPU_ENABLE_DEBUG_CHECKS")
    return orig(*args, run_check=run_check, shape=shape, stride=stride, **kwargs)

  dt.DTensor.from_local = staticmethod(from_local)


def _patch_storage_new():
  """torch.UntypedStorage(n, device="tpu"): a Python backend has no C++
  allocator, so build the storage from a tpu tensor instead."""
  cls = torch.UntypedStorage
  orig_new = cls.__new__

  def new(klass, *args, **kwargs):
    dev = kwargs.get("device")
    if dev is not None and torch.device(dev).type == "tpu":
      if args and isinstance(args[0], int):
        t = torch.empty(args[0], dtype=torch.uint8, device=dev)
      elif args:
        t = torch.tensor(list(args[0]), dtype=torch.uint8).to(dev)
      else:
        t = torch.empty(0, dtype=torch.uint8, device=dev)
      return t.untyped_storage()
    return orig_new(klass, *args, **kwargs)

  cls.__new__ = new

  orig_resize = cls.resize_

  @functools.wraps(orig_resize)
  def resize_(self, size):
    if self.device.type == "tpu":
      return kernels.resize_storage(self, size)
    return orig_resize(self, size)

  cls.resize_ = resize_


def _patch_generator():
  """torch.Generator(device="tpu"): a Python backend cannot provide device
  generators, so hand out a host generator (random ops on tpu accept it)."""
  base = torch._C.Generator  # pylint: disable=protected-access
  if getattr(torch.Generator, "_xla2tpu", False):
    return

  class _Meta(type(base)):

    def __instancecheck__(cls, obj):
      return isinstance(obj, base)

    def __subclasscheck__(cls, sub):
      return issubclass(sub, base)

  class Generator(base, metaclass=_Meta):  # pylint: disable=missing-class-docstring
    __doc__ = base.__doc__
    _xla2tpu = True

    def __new__(cls, device="cpu"):
      d = torch.device(device) if device is not None else torch.device("cpu")
      if d.type == "tpu":
        kernels.check_device_arg(d)
        return base("cpu")
      return base(device)

  Generator.__module__ = "torch"
  Generator.__qualname__ = "Generator"
  torch.Generator = Generator


_apply_depth = threading.local()


def _patch_module_apply():
  """Warns when Module.to("tpu") unties shared parameters and they are used untied.

  torch replaces (instead of updating) parameters whose tensor type changes
  unless the backend overrides aten::_has_compatible_shallow_copy_type, which
  TorchTPU 0.2.0 does not (composite_implicit in the registry): each module
  then gets its own copy, so tied weights (embeddings / LM heads) are untied,
  as they were with torch_xla. A program that re-ties them before the module's
  next forward (`model.tie_weights()`, as transformers' Trainer does for
  torch_xla) is right; one that runs the module untied gets an
  `untied_parameters` warning at the line that moved it.
  """
  orig = torch.nn.Module._apply  # pylint: disable=protected-access
  pending = weakref.WeakKeyDictionary()  # module -> its forward pre-hook's handle

  def _still_untied(users):
    return len({id(m._parameters.get(n)) for m, n, _ in users}) > 1  # pylint: disable=protected-access

  def _check_at_next_forward(module, untied, frames):
    def check(mod, args):
      del args
      handle.remove()
      if pending.get(mod) is handle:
        del pending[mod]
      for users in untied:
        if _still_untied(users):
          names = ", ".join(q for _, _, q in users)
          report.warning(
              "untied_parameters",
              f"moving the module to the tpu device replaced the shared parameter"
              f" {names} by separate copies (TorchTPU has no"
              " _has_compatible_shallow_copy_type kernel), and it ran untied; re-tie them"
              " after .to('tpu') (e.g. model.tie_weights()) and create optimizers"
              " afterwards",
              frames=frames,
          )

    previous = pending.pop(module, None)
    if previous is not None:
      previous.remove()
    handle = module.register_forward_pre_hook(check)
    pending[module] = handle

  def _apply(self, fn, recurse=True):
    depth = getattr(_apply_depth, "n", 0)
    if depth:
      return orig(self, fn, recurse)
    shared = {}
    for mod_name, mod in self.named_modules(remove_duplicate=False):
      for p_name, p in mod.named_parameters(recurse=False):
        shared.setdefault(id(p), []).append((mod, p_name, f"{mod_name}.{p_name}".lstrip(".")))
    shared = {k: v for k, v in shared.items() if len(v) > 1}
    _apply_depth.n = depth + 1
    try:
      out = orig(self, fn, recurse)
    finally:
      _apply_depth.n = depth
    untied = [users for users in shared.values() if _still_untied(users)]
    if untied:
      frames = report.user_frames(sys._getframe(1))  # pylint: disable=protected-access
      _check_at_next_forward(self, untied, frames)
    return out

  torch.nn.Module._apply = _apply  # pylint: disable=protected-access


UNUSED_PARAMETERS_NOTE = (
    "DDP(find_unused_parameters=True): torch's reducer keeps its map of used parameters in"
    " pinned host memory, which it asks the backend's C++ hooks for; TorchTPU's hooks have a"
    " pinned allocator, and so do the emulator's when it can build them with a C++ compiler"
    " ({why}). Not emulated on this host: install a C++ compiler (g++), or pass"
    " find_unused_parameters=False (the Trainer's ddp_find_unused_parameters=False), to run"
    " this program here"
)


def _patch_unused_parameter_search():
  """DDP with find_unused_parameters=True fails in the backward pass where the emulator could
  not build its C++ hooks (see the note): say so at the user's line, as something not emulated rather than a TorchTPU
  incompatibility, instead of torch's NotImplementedError about PrivateUse1 hooks."""
  orig = torch.autograd.backward
  if getattr(orig, "_xla2tpu", False):
    return

  @functools.wraps(orig)
  def backward(*args, **kwargs):
    try:
      return orig(*args, **kwargs)
    except NotImplementedError as e:
      if "getPinnedMemoryAllocator" not in str(e):
        raise
      from xla2tpu_emulator import native  # pylint: disable=import-outside-toplevel

      note = UNUSED_PARAMETERS_NOTE.format(why=native.why_not or "it did not")
      report.warning("not_emulated", note, frame=sys._getframe(1))  # pylint: disable=protected-access
      raise RuntimeError(f"xla2tpu run: {note}") from None

  backward._xla2tpu = True  # pylint: disable=protected-access
  torch.autograd.backward = backward


def _record_and_call(fn, *args):
  try:
    return fn(*args)
  except BaseException as e:  # pylint: disable=broad-except
    if not isinstance(e, (SystemExit, KeyboardInterrupt)):
      report.exception(type(e), e, e.__traceback__)
      report.summary()
    raise


def _patch_spawn():
  import torch.multiprocessing.spawn  # pylint: disable=import-outside-toplevel,unused-import

  sp = sys.modules["torch.multiprocessing.spawn"]

  orig = sp._wrap  # pylint: disable=protected-access
  if getattr(orig, "_xla2tpu", False):
    return

  def _wrap(fn, i, args, error_file):
    return orig(functools.partial(_record_and_call, fn), i, args, error_file)

  _wrap.__module__ = orig.__module__
  _wrap.__qualname__ = orig.__qualname__
  _wrap.__name__ = orig.__name__
  _wrap._xla2tpu = True  # pylint: disable=protected-access
  sp._wrap = _wrap  # pylint: disable=protected-access


def install():
  for name, kind in (
      ("item", "item"),
      ("tolist", "tolist"),
      ("__bool__", "bool"),
      ("__repr__", "print"),
      ("__format__", "print"),
  ):
    _patch_method(name, kind)
  _patch_numpy()
  _patch_data_ptr()
  _patch_save()
  _patch_storage_new()
  _patch_pin_memory()
  _patch_module_apply()
  _patch_generator()
  _patch_accelerator()
  _patch_accelerator_memory()
  _patch_precision()
  hooks.after_import("torch.distributed.tensor", _patch_from_local)
  _patch_spawn()
  _patch_unused_parameter_search()
