"""The `torch.tpu` module: TorchTPU 0.2.0's public API (public_api.py) on CPU.

Submodules: torch.tpu.distributed, .ops, .compiler, .profiler, .pallas,
.optimizers. `python -m torch.tpu.distributed` prints the launch environment.
"""

import contextlib
import dataclasses
import enum
import importlib
import importlib.abc
import importlib.util
import os
import sys
import time
import types

import torch

from xla2tpu_emulator import api
from xla2tpu_emulator import config
from xla2tpu_emulator import device

_AMP_SUPPORTED_DTYPES = (
    torch.bfloat16, torch.bool, torch.complex128, torch.complex64,
    torch.float16, torch.float32, torch.float64, torch.float8_e4m3fn,
    torch.float8_e4m3fnuz, torch.float8_e5m2, torch.float8_e5m2fnuz,
    torch.float8_e8m0fnu, torch.int16, torch.int32, torch.int64, torch.int8,
    torch.uint16, torch.uint32, torch.uint64, torch.uint8,
)


# ---------------------------------------------------------------- enums


class Precision(enum.Enum):
  """StableHLO dot_general precision (TorchTPU's torch.tpu.Precision)."""

  DEFAULT = 0
  HIGH = 1
  HIGHEST = 2


_precision_stack = []
_global_precision = Precision.DEFAULT


def current_precision():
  return _precision_stack[-1] if _precision_stack else _global_precision


def set_global_precision(p):
  global _global_precision
  _global_precision = p


def get_global_precision():
  return _global_precision


@api.experimental("Op precision context manager.", name="precision")
@contextlib.contextmanager
def precision(mode):
  if not isinstance(mode, Precision):
    raise ValueError(
        "expected to be one of 'PrecisionConfig.DEFAULT',"
        f" 'PrecisionConfig.HIGH', or 'PrecisionConfig.HIGHEST', got '{mode}'"
    )
  _precision_stack.append(mode)
  try:
    yield
  finally:
    _precision_stack.pop()


class EagerMode(enum.Enum):
  """TorchTPU eager execution modes (no effect in the emulator)."""

  DEFER_AND_FUSE = "DEFER_AND_FUSE"
  DEFER_NEVER = "DEFER_NEVER"
  DEFER_NEVER_AND_LAUNCH_BLOCKING = "DEFER_NEVER_AND_LAUNCH_BLOCKING"
  _INTERNAL_COMPILE_FX_GRAPH = "INTERNAL_COMPILE_FX_GRAPH"


def _default_eager_mode():
  if config.truthy("TORCH_TPU_LAUNCH_BLOCKING"):
    return EagerMode.DEFER_NEVER_AND_LAUNCH_BLOCKING
  if config.truthy("TORCH_TPU_DEFER_AND_FUSE"):
    return EagerMode.DEFER_AND_FUSE
  return EagerMode.DEFER_NEVER


_eager_stack = [_default_eager_mode()]


@api.experimental("Context manager for setting the eager mode.", name="set_eager_mode")
@contextlib.contextmanager
def set_eager_mode(mode):
  _eager_stack.append(mode)
  try:
    yield
  finally:
    _eager_stack.pop()


_forbidden = False


def forbid_set_eager_mode_in_graph():
  """TorchTPU forbids set_eager_mode inside torch.compile (applied lazily so
  that loading the emulator does not import torch._dynamo)."""
  global _forbidden, set_eager_mode
  if _forbidden:
    return
  _forbidden = True
  torch._dynamo.forbid_in_graph(set_eager_mode)  # pylint: disable=protected-access


# ---------------------------------------------------------------- streams


class Stream:
  """Placeholder TPU stream (TorchTPU's streams are placeholders as well)."""

  def __init__(self, device=None, priority=0, stream_id=0, **kwargs):  # pylint: disable=redefined-outer-name
    del kwargs
    self.device_index = 0
    self.device_type = 20  # c10::DeviceType::PrivateUse1, as torch.Stream
    self.priority = priority
    self.stream_id = stream_id

  @property
  def device(self):
    return torch.device("tpu", 0)

  def synchronize(self):
    pass

  def query(self):
    return True

  def wait_stream(self, stream):
    del stream

  def wait_event(self, event):
    del event

  def record_event(self, event=None):
    event = event if event is not None else Event()
    event.record(self)
    return event

  def __eq__(self, other):
    return isinstance(other, Stream) and other.stream_id == self.stream_id

  def __hash__(self):
    return hash(("tpu", self.stream_id))

  def __repr__(self):
    return f"<torch.tpu.Stream device=tpu:0 stream_id={self.stream_id}>"


class Event:
  """Placeholder TPU event; timing uses host time."""

  def __init__(
      self, enable_timing=False, blocking=False, interprocess=False,
      external=False, device=None,  # pylint: disable=redefined-outer-name
  ):
    del blocking, interprocess, external, device
    self.enable_timing = enable_timing
    self._t = None

  def record(self, stream=None):
    del stream
    self._t = time.perf_counter()

  def wait(self, stream=None):
    del stream

  def query(self):
    return True

  def synchronize(self):
    pass

  def elapsed_time(self, end_event):
    if not (self.enable_timing and end_event.enable_timing):
      raise RuntimeError(
          "Both events must be created with argument 'enable_timing=True'."
      )
    if self._t is None or end_event._t is None:  # pylint: disable=protected-access
      raise RuntimeError("Both events must be recorded before calculating elapsed time.")
    return (end_event._t - self._t) * 1000.0  # pylint: disable=protected-access


_current_stream = Stream()


@contextlib.contextmanager
def _stream_ctx(stream):
  global _current_stream
  prev = _current_stream
  if stream is not None:
    _current_stream = stream
  try:
    yield
  finally:
    _current_stream = prev


# ---------------------------------------------------------------- properties


@dataclasses.dataclass(frozen=True)
class _TpuDeviceProperties:
  name: str
  total_memory: int
  multi_processor_count: int = 1


def _xla_flag_allows_excess_precision():
  flags = os.environ.get("XLA_FLAGS", "")
  for tok in flags.split():
    if tok.startswith("--xla_allow_excess_precision"):
      return tok.partition("=")[2].lower() in ("", "true", "1")
  return False


_state = {"allow_excess_precision": None}


class _DeviceContext:
  """torch.tpu.device(idx): internal with torch >= 2.11."""

  def __init__(self, device):  # pylint: disable=redefined-outer-name
    idx = _device_index(device, optional=True)
    self._idx = -1 if idx is None else idx
    self._prev = -1

  def __enter__(self):
    if self._idx >= 0:
      self._prev = 0
      _set_device_impl(self._idx)

  def __exit__(self, *exc):
    return False


_DeviceContext.__init__ = api.internal_or_experimental(
    "torch.accelerator.device_index",
    "device() context manager is experimental and subject to change without"
    " notice.",
    name="_DeviceContext",
)(_DeviceContext.__init__)


class _DeviceOfContext(_DeviceContext):
  """torch.tpu.device_of(obj)."""

  def __init__(self, obj):  # pylint: disable=super-init-not-called
    idx = -1
    if getattr(getattr(obj, "device", None), "type", None) == "tpu":
      idx = obj.get_device()
    self._idx = idx
    self._prev = -1


def _device_index(dev, optional=False):
  if isinstance(dev, int):
    return dev
  if dev is None:
    if optional:
      return None
    return 0
  if isinstance(dev, str):
    dev = torch.device(dev)
  if isinstance(dev, torch.device):
    if dev.type != "tpu":
      raise ValueError(f"Expected a tpu device, but got: {dev}")
    return dev.index if dev.index is not None else 0
  raise TypeError(f"Got unrecognized device type, {dev}")


def set_device_message(idx):
  return (
      f"Cannot set TPU device to index {idx}, current process is bound to"
      " device index 0. Changing the active TPU device within a process is not"
      " supported."
  )


def _set_device_impl(dev, frame=None):
  if isinstance(dev, str):
    if dev != "tpu":
      d = torch.device(dev)
      if d.type != "tpu":
        raise ValueError(f"Invalid device string {dev}")
      idx = d.index if d.index is not None else 0
    else:
      idx = 0
  elif isinstance(dev, torch.device):
    if dev.type != "tpu":
      raise ValueError(f"Invalid device type {dev.type}")
    idx = dev.index if dev.index is not None else 0
  elif isinstance(dev, int):
    idx = dev
  else:
    raise TypeError(f"Got unrecognized device type, {dev}")
  if idx != 0:
    from xla2tpu_emulator import report  # pylint: disable=import-outside-toplevel

    msg = set_device_message(idx)
    report.incompatibility(
        "set_device", msg, frame=frame or sys._getframe(2)  # pylint: disable=protected-access
    )
    raise ValueError(msg)


def _validate_rng_device(dev):
  if isinstance(dev, str):
    if dev.split(":")[0] != "tpu":
      raise ValueError(
          f"expected device type 'tpu' for RNG state access, got '{dev}'"
      )
    idx = torch.device(dev).index
  elif isinstance(dev, torch.device):
    if dev.type != "tpu":
      raise ValueError(
          f"expected device type 'tpu' for RNG state access, got '{dev.type}'"
      )
    idx = dev.index
  elif isinstance(dev, int):
    idx = dev
  else:
    raise TypeError(f"got unrecognized device type: {dev}")
  if idx is not None and idx != 0:
    raise ValueError(
        f"expected local device index 0, got {idx}: accessing RNG state of a"
        " non-current TPU device is not supported"
    )


# ---------------------------------------------------------------- functions

_IOE = api.internal_or_experimental


@_IOE("torch.accelerator.synchronize", "synchronize() is experimental")
def synchronize(device=None):  # pylint: disable=redefined-outer-name
  del device


@_IOE("torch.accelerator.device_count", "device_count() is experimental")
def device_count():
  return device_count_impl()


def device_count_impl():
  if device.is_initialized():
    return 1
  return config.chips()


@_IOE("torch.accelerator.current_device_index", "current_device() is experimental")
def current_device():
  return 0


@_IOE("torch.accelerator.set_device_index", "set_device() is experimental")
def set_device(device):  # pylint: disable=redefined-outer-name
  _set_device_impl(device, frame=sys._getframe(2))  # pylint: disable=protected-access


@_IOE("torch.accelerator.is_available", "is_available() is experimental")
def is_available():
  return device_count_impl() > 0


@_IOE("torch.accelerator.set_stream", "set_stream() is experimental")
def set_stream(stream):
  global _current_stream
  _current_stream = stream


@_IOE("torch.accelerator.current_stream", "current_stream() is experimental")
def current_stream(device=None):  # pylint: disable=redefined-outer-name
  del device
  return _current_stream


@_IOE("torch.accelerator.random.initial_seed", "initial_seed() is experimental")
def initial_seed():
  return device.initial_seed()


@_IOE("torch.accelerator.random.get_rng_state", "get_rng_state() is experimental")
def get_rng_state(device="tpu"):  # pylint: disable=redefined-outer-name
  _validate_rng_device(device)
  return _dev().get_rng_state()


def _dev():
  return device


@api.experimental("set_rng_state() is experimental and subject to change without notice.")
def set_rng_state(new_state, device="tpu"):  # pylint: disable=redefined-outer-name
  _validate_rng_device(device)
  _dev().set_rng_state(new_state)


@api.experimental("manual_seed() is experimental and may change or be removed without notice.")
def manual_seed(seed):
  if device_count_impl() <= 0:
    return
  device.manual_seed(seed)


@api.experimental("manual_seed_all() is experimental and may change or be removed without notice.")
def manual_seed_all(seed):
  # Never calls torch.manual_seed (which calls this function).
  if device_count_impl() <= 0:
    return
  device.manual_seed(seed)


def seed():
  return device.seed()


def seed_all():
  return device.seed()


@api.experimental("is_initialized() is experimental and subject to change without notice.")
def is_initialized():
  return device.is_initialized()


@api.experimental("get_device_name() is experimental and subject to change without notice.")
def get_device_name(device=None):  # pylint: disable=redefined-outer-name
  del device
  return config.device_name()


@api.experimental("get_device_properties() is experimental and subject to change without notice.")
def get_device_properties(device=None):  # pylint: disable=redefined-outer-name
  del device
  return _TpuDeviceProperties(
      name=config.device_name(), total_memory=config.hbm_bytes()
  )


@api.experimental(
    "get_amp_supported_dtype() is experimental and may change or be removed"
    " without notice."
)
def get_amp_supported_dtype():
  return list(_AMP_SUPPORTED_DTYPES)


@api.experimental("stream() is experimental and subject to change without notice.")
def stream(stream):  # pylint: disable=redefined-outer-name
  return _stream_ctx(stream)


@api.experimental("default_stream() is experimental and subject to change without notice.")
def default_stream(device=None):  # pylint: disable=redefined-outer-name
  del device
  return Stream(stream_id=0)


@api.experimental("deprecated", stage="deprecated", name="topology_aware_mesh")
def topology_aware_mesh(mesh_shape, *, dcn_mesh_shape=None,
                        allow_split_physical_axes=False,
                        contiguous_submeshes=False):
  from xla2tpu_emulator import distributed  # pylint: disable=import-outside-toplevel

  return distributed.topology_aware_mesh_impl(mesh_shape, dcn_mesh_shape)


topology_aware_mesh.__wrapped__.__doc__ = (
    "Deprecated alias of torch.tpu.distributed.topology_aware_mesh."
)


# private helpers torch calls


def _lazy_init():
  device.check_fork()


def _is_in_bad_fork():
  return device.bad_fork


def _get_generator(dev=None):
  del dev
  return device.generator


def _is_compiled():
  return True


_placeholder_warned = set()


def _placeholder(name, value):
  def fn(*args, **kwargs):
    del args, kwargs
    if name not in _placeholder_warned:
      _placeholder_warned.add(name)
      from xla2tpu_emulator import report  # pylint: disable=import-outside-toplevel

      report.warning(
          "not_emulated",
          f"torch.tpu.{name}() returns a placeholder in the emulator",
          frame=sys._getframe(1),  # pylint: disable=protected-access
      )
    return value() if callable(value) else value

  fn.__name__ = name
  return fn


# ---------------------------------------------------------------- the module


class _TpuModule(types.ModuleType):
  """torch.tpu, with TorchTPU's module properties."""

  @property
  def eager_mode(self):
    _experimental_access("eager_mode")
    return _eager_stack[-1]

  @eager_mode.setter
  def eager_mode(self, value):
    _experimental_access("eager_mode")
    if not isinstance(value, EagerMode):
      raise TypeError(f"expected a torch.tpu.EagerMode, got {value!r}")
    _eager_stack[-1] = value

  @property
  def allow_excess_precision(self):
    _experimental_access("allow_excess_precision")
    v = _state["allow_excess_precision"]
    return _xla_flag_allows_excess_precision() if v is None else v

  @allow_excess_precision.setter
  def allow_excess_precision(self, value):
    _experimental_access("allow_excess_precision")
    _state["allow_excess_precision"] = bool(value)

  @property
  def default_generators(self):
    return (device.generator,)

  _autocast_enabled = False
  _autocast_dtype = torch.bfloat16


_warned_props = set()


def _experimental_access(name):
  if name in _warned_props:
    return
  frame = sys._getframe(2)  # pylint: disable=protected-access
  if api.is_framework_frame(frame):
    return
  _warned_props.add(name)
  import warnings  # pylint: disable=import-outside-toplevel

  msg = (
      f"{name} is experimental and subject to change: {name} is experimental"
      " and may change or be removed without notice."
  )
  warnings.warn("<TorchTpu/ApiStage/ExperimentalApi/> " + msg, UserWarning, stacklevel=3)


PUBLIC = (
    "EagerMode Event Precision Stream allow_excess_precision current_device"
    " current_stream default_generators default_stream device device_count"
    " device_of eager_mode get_amp_supported_dtype get_device_name"
    " get_device_properties get_rng_state initial_seed is_available"
    " is_initialized manual_seed manual_seed_all precision set_device"
    " set_eager_mode set_rng_state set_stream stream synchronize"
    " topology_aware_mesh"
).split()
SUBMODULES = ("compiler", "distributed", "ops", "optimizers", "pallas", "profiler")


def _fill(mod):
  g = globals()
  mod.EagerMode = EagerMode
  mod.Precision = Precision
  mod.Stream = api.experimental("Stream() is experimental", name="Stream")(Stream)
  mod.Event = api.experimental("Event() is experimental", name="Event")(Event)
  mod.device = _DeviceContext
  mod.device_of = _DeviceOfContext
  for name in (
      "current_device current_stream default_stream device_count"
      " get_amp_supported_dtype get_device_name get_device_properties"
      " get_rng_state initial_seed is_available is_initialized manual_seed"
      " manual_seed_all precision set_device set_eager_mode set_rng_state"
      " set_stream stream synchronize topology_aware_mesh seed seed_all"
      " _lazy_init _is_in_bad_fork _get_generator _is_compiled"
  ).split():
    setattr(mod, name, g[name])
  mod._get_cache_stats = _placeholder("_get_cache_stats", lambda: {"requests": 0, "hits": 0, "misses": 0})  # pylint: disable=protected-access
  mod._hbm_usage_summary = _placeholder("_hbm_usage_summary", "HBM usage is not emulated")  # pylint: disable=protected-access
  mod._clear_cache = _placeholder("_clear_cache", None)  # pylint: disable=protected-access
  mod._shutdown_runtime = lambda: None  # pylint: disable=protected-access
  mod.__all__ = sorted(set(PUBLIC) | set(SUBMODULES))
  mod.__path__ = []  # a package, so that `import torch.tpu.ops` works
  mod.__package__ = "torch.tpu"


# ---------------------------------------------------------------- import hook

_SUBMODULE_IMPL = {
    "torch.tpu.compiler": "xla2tpu_emulator.submodules:build_compiler",
    "torch.tpu.distributed": "xla2tpu_emulator.submodules:build_distributed",
    "torch.tpu.ops": "xla2tpu_emulator.submodules:build_ops",
    "torch.tpu.optimizers": "xla2tpu_emulator.submodules:build_optimizers",
    "torch.tpu.pallas": "xla2tpu_emulator.submodules:build_pallas",
    "torch.tpu.profiler": "xla2tpu_emulator.submodules:build_profiler",
}
_MAIN_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch_env_main.py")


class _SubmoduleLoader(importlib.abc.ExecutionLoader):
  """Builds torch.tpu.<sub>; `python -m torch.tpu.distributed` runs main."""

  def __init__(self, fullname):
    self.fullname = fullname

  def create_module(self, spec):
    modname, _, fn = _SUBMODULE_IMPL[self.fullname].partition(":")
    builder = getattr(importlib.import_module(modname), fn)
    return builder(self.fullname)

  def exec_module(self, module):
    pass

  def is_package(self, fullname):
    return False

  def get_filename(self, fullname):
    return _MAIN_FILE

  def get_source(self, fullname):
    with open(_MAIN_FILE, encoding="utf-8") as f:
      return f.read()

  def get_code(self, fullname):
    if fullname != "torch.tpu.distributed":
      return None
    return compile(self.get_source(fullname), _MAIN_FILE, "exec")


class _SubmoduleFinder(importlib.abc.MetaPathFinder):

  def find_spec(self, fullname, path=None, target=None):
    if fullname not in _SUBMODULE_IMPL:
      return None
    return importlib.util.spec_from_loader(
        fullname, _SubmoduleLoader(fullname), origin="xla2tpu-emulator"
    )


_FINDER = _SubmoduleFinder()


class _LazyParent(_TpuModule):
  """Resolves torch.tpu.<submodule> attributes on first access."""

  def __getattr__(self, name):
    if name in SUBMODULES:
      return importlib.import_module(f"torch.tpu.{name}")
    raise AttributeError(f"module 'torch.tpu' has no attribute '{name}'")

  def __dir__(self):
    return list(self.__all__)


def build():
  """Creates torch.tpu (not yet registered)."""
  mod = _LazyParent("torch.tpu", "Public TorchTPU device module (`torch.tpu`).")
  _fill(mod)
  if _FINDER not in sys.meta_path:
    sys.meta_path.insert(0, _FINDER)
  return mod
