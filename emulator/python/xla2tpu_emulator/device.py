"""The emulated chip: lazy initialization, chip claims, fork safety, device RNG.

A process claims one chip the first time it initializes the device (creating
a tpu tensor does that), like libtpu/PJRT. Claims are `flock`ed lock files
`chip-<i>.lock` in the state dir (config.state_dir()); the kernel drops a
lock when its process dies, so crashed runs leave nothing behind.
"""

import errno
import fcntl
import os
import threading

import torch

from xla2tpu_emulator import config
from xla2tpu_emulator import report

_lock = threading.RLock()
initialized = False
bad_fork = False
chip = None
_lock_fd = None

BAD_FORK_MESSAGE = (
    "cannot access or re-initialize TPU in a forked subprocess. To use TPU"
    " with multiprocessing, you must use the 'spawn' start method"
)


def _busy_message(pid):
  return (
      "TPU initialization failed: ABORTED: The TPU is already in use by"
      f" process with pid {pid}. Not attempting to load libtpu.so in this"
      " process."
  )


def _claim():
  """Claims a free chip; returns its index or raises like libtpu."""
  global _lock_fd
  n = config.chips()
  d = config.state_dir()
  holder = None
  for i in range(n):
    path = os.path.join(d, f"chip-{i}.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
      if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
        os.close(fd)
        raise
      try:
        raw = os.pread(fd, 64, 0).decode().strip()
        holder = holder or (int(raw) if raw else None)
      except (OSError, ValueError):
        pass
      os.close(fd)
      continue
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    _lock_fd = fd
    return i
  msg = _busy_message(holder if holder is not None else "unknown")
  report.incompatibility("device_busy", msg, frame=_caller_frame())
  raise RuntimeError(msg)


def _caller_frame():
  import sys  # pylint: disable=import-outside-toplevel

  return sys._getframe(2)  # pylint: disable=protected-access


def check_fork():
  if bad_fork:
    report.incompatibility("bad_fork", BAD_FORK_MESSAGE, frame=_caller_frame())
    raise RuntimeError(BAD_FORK_MESSAGE)


def ensure_initialized():
  """Initializes the emulated TPU runtime in this process (idempotent)."""
  global initialized, chip
  if initialized:
    return
  with _lock:
    if initialized:
      return
    check_fork()
    chip = _claim()
    initialized = True
    report.STATE["device_initialized"] = True


def is_initialized():
  return initialized and not bad_fork


def _after_fork_in_child():
  global initialized, bad_fork, _lock_fd, chip
  if initialized:
    bad_fork = True
  initialized = False
  chip = None
  report.STATE["device_initialized"] = False
  if _lock_fd is not None:
    # The flock belongs to the parent's open file description; just drop our
    # reference to it.
    try:
      os.close(_lock_fd)
    except OSError:
      pass
    _lock_fd = None


os.register_at_fork(after_in_child=_after_fork_in_child)


# ---------------------------------------------------------------- RNG
# The device's default generator: a CPU generator object used only for random
# ops on tpu tensors, seeded from a transform of the user seed so that device
# random streams differ from the CPU's (as on a real TPU), deterministically.

_MIX = 0x9E3779B97F4A7C15
_SALT = 0x5450555F454D55  # "TPU_EMU"
_DEFAULT_SEED = 67280421310721  # torch's default CPU seed

generator = torch.Generator()
_initial_seed = _DEFAULT_SEED


def _derive(seed):
  return ((int(seed) * _MIX) ^ _SALT) % (1 << 63)


def manual_seed(seed):
  global _initial_seed
  seed = int(seed) & ((1 << 64) - 1)
  _initial_seed = seed
  generator.manual_seed(_derive(seed))


def seed():
  global _initial_seed
  s = generator.seed()
  _initial_seed = s
  generator.manual_seed(_derive(s))
  return s


def initial_seed():
  return _initial_seed


def get_rng_state():
  return generator.get_state()


def set_rng_state(state):
  generator.set_state(state.cpu() if state.device.type != "cpu" else state)


manual_seed(_DEFAULT_SEED)
