"""API lifecycle stages of TorchTPU 0.2.0 (experimental / internal / deprecated).

Semantics copied from torch_tpu._internal.utils.annotations: an "internal"
API called from outside the PyTorch framework (modules torch, torch.*,
torch_tpu, torch_tpu.*) raises RuntimeError naming the preferred replacement,
unless TORCH_TPU_ALLOW_LEGACY_DEVICE_APIS=1 (then it warns once per process).
Experimental and deprecated APIs warn once per process when called from
outside the framework. The emulator's own modules count as framework.
"""

import functools
import sys
import warnings

from xla2tpu_emulator import config
from xla2tpu_emulator import report

_PREFIX = {
    "internal": "<TorchTpu/ApiStage/InternalApi/> ",
    "experimental": "<TorchTpu/ApiStage/ExperimentalApi/> ",
    "deprecated": "<TorchTpu/ApiStage/DeprecatedApi/> ",
}

# Read once, like TorchTPU's env.get_bool_env_once at import.
STRICT_INTERNAL = not config.truthy("TORCH_TPU_ALLOW_LEGACY_DEVICE_APIS")


def is_framework_frame(frame):
  if frame is None:
    return False
  mod = frame.f_globals.get("__name__") or ""
  if not isinstance(mod, str):
    return False
  return (
      mod in ("torch", "torch_tpu", "xla2tpu_emulator")
      or mod.startswith(("torch.", "torch_tpu.", "xla2tpu_emulator."))
  )


def _compiling():
  torch = sys.modules.get("torch")
  try:
    return bool(torch and torch.compiler.is_compiling())
  except Exception:  # pylint: disable=broad-except
    return False


def _warn(stage, msg, frame, kind):
  cat = DeprecationWarning if stage == "deprecated" else UserWarning
  # stacklevel relative to the frame that called the API (1 = this function).
  level = 2
  f = sys._getframe(1)  # pylint: disable=protected-access
  while f is not None and f is not frame:
    level += 1
    f = f.f_back
  warnings.warn(_PREFIX[stage] + msg, cat, stacklevel=level)
  report.warning(kind, msg, frame=frame, dedupe_key=msg)


def internal_message(name, prefer):
  msg = (
      f"{name} is internal to TorchTPU and can only be called by the PyTorch"
      " framework (torch and torch_tpu)."
  )
  return f"{msg} Use {prefer} instead." if prefer else msg


def internal_or_experimental(prefer, experimental_msg, name=None):
  """Decorator for the torch.tpu calls that are internal with torch >= 2.11."""

  def deco(fn):
    display = name or fn.__name__
    state = {"warned": False}

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
      if not _compiling():
        frame = sys._getframe(1)  # pylint: disable=protected-access
        if not is_framework_frame(frame):
          if STRICT_INTERNAL:
            msg = internal_message(display, prefer)
            report.incompatibility("internal_api", msg, frame=frame)
            raise RuntimeError(msg)
          if not state["warned"]:
            state["warned"] = True
            msg = (
                f"{display} is internal to TorchTPU and may change or be"
                f" removed without notice. Use {prefer} instead."
            )
            _warn("internal", msg, frame, "legacy_device_api")
      return fn(*args, **kwargs)

    wrapper.__tt_api_stage__ = "Internal"
    wrapper.__tt_api_prefer__ = prefer
    return wrapper

  return deco


def experimental(reason, name=None, stage="experimental"):
  """Decorator: one-time warning per process for calls from user code."""

  def deco(fn):
    display = name or getattr(fn, "__name__", str(fn))
    state = {"warned": False}

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
      if not state["warned"] and not _compiling():
        frame = sys._getframe(1)  # pylint: disable=protected-access
        if not is_framework_frame(frame):
          state["warned"] = True
          if stage == "deprecated":
            msg = (
                f"{display} is deprecated as of TorchTPU 0.2.0 and will be"
                f" removed in a future release: {reason}"
            )
            _warn("deprecated", msg, frame, "deprecated_api")
          else:
            msg = f"{display} is experimental and subject to change: {reason}"
            _warn("experimental", msg, frame, "experimental_api")
      return fn(*args, **kwargs)

    wrapper.__tt_api_stage__ = (
        "Deprecated" if stage == "deprecated" else "Experimental"
    )
    return wrapper

  return deco


def not_emulated(what, why="it needs real TPU hardware (XLA/Pallas/SparseCore)"):
  """A callable that records and raises a clear 'not emulated' error."""

  def fn(*args, **kwargs):
    msg = (
        f"{what} is not emulated by the xla2tpu TorchTPU emulator: {why}. It"
        " exists in TorchTPU 0.2.0; run this part on a TPU."
    )
    report.incompatibility("not_emulated", msg, frame=sys._getframe(1))  # pylint: disable=protected-access
    raise NotImplementedError(msg)

  fn.__name__ = what.rsplit(".", 1)[-1]
  return fn
