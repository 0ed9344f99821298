"""Event report: JSON Lines written to `$XLA2TPU_EMULATOR_REPORT/<pid>.jsonl`.

This module must not import torch at import time: the torch_xla stub and the
import blockers use it before torch may be loaded.

Every line is written with one `os.write` on an O_APPEND descriptor, so events
survive crashes and `os._exit`. Without the env var (or if it is not a
directory) nothing is written, but counters are still kept.
"""

import atexit
import functools
import json
import os
import sys
import sysconfig
import threading
import time

SCHEMA = "xla2tpu-emulator/1"

# Who else hears of what the report hears (run --advise): the report is the bottom of the
# package and imports none of them; they subscribe.
_sync_listeners = []  # fn(kind, file, line, function), per host sync
_summary_events = []  # fn() -> event or None, written before the summary
_fork_resets = []  # fn(), in a fork child


def on_host_sync(fn):
  _sync_listeners.append(fn)


def on_summary(fn):
  _summary_events.append(fn)


def on_fork(fn):
  _fork_resets.append(fn)
MAX_STACK = 8

_lock = threading.RLock()
_fd = None  # report file descriptor, per process
_fd_pid = None
_started_pid = None
_summary_pid = None  # pid that wrote its summary (fork children reset this)
_warned = set()  # (kind, file, line, message) already reported as warnings

# Process state read by the summary.
STATE = {"device_initialized": False, "rank": None, "world_size": None}
OP_COUNTS = {}  # dispatcher name -> count; incremented by the kernels
HOST_SYNCS = {}  # (kind, file, line, function) -> count

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_EMU_ROOT = os.path.dirname(_PKG_DIR)  # the python/ dir put on PYTHONPATH


def report_dir():
  d = os.environ.get("XLA2TPU_EMULATOR_REPORT")
  if d and os.path.isdir(d):
    return d
  return None


def _get_fd():
  global _fd, _fd_pid
  pid = os.getpid()
  if _fd is not None and _fd_pid == pid:
    return _fd
  if _fd is not None and _fd_pid != pid:
    # Inherited from the parent across fork: never write to the parent's file.
    try:
      os.close(_fd)
    except OSError:
      pass
    _fd = None
  d = report_dir()
  if d is None:
    return None
  try:
    _fd = os.open(
        os.path.join(d, f"{pid}.jsonl"),
        os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0),
        0o644,
    )
    _fd_pid = pid
  except OSError:
    _fd = None
  return _fd


def emit(event):
  """Appends one event (a dict) as a JSON line."""
  with _lock:
    fd = _get_fd()
    if fd is None:
      return
    line = json.dumps(event, default=str) + "\n"
    try:
      os.write(fd, line.encode("utf-8"))
    except OSError:
      pass


# ---------------------------------------------------------------- frames


_excluded_cache = None


def _excluded_dirs():
  global _excluded_cache
  if _excluded_cache is not None:
    return _excluded_cache
  dirs = {_EMU_ROOT}
  for key in ("stdlib", "platstdlib", "purelib", "platlib"):
    try:
      p = sysconfig.get_paths().get(key)
    except Exception:  # pylint: disable=broad-except
      p = None
    if p:
      dirs.add(os.path.realpath(p))
  torch = sys.modules.get("torch")
  result = tuple(sorted(dirs))
  if torch is not None and getattr(torch, "__file__", None):
    dirs.add(os.path.dirname(os.path.realpath(torch.__file__)))
    result = tuple(sorted(dirs))
    _excluded_cache = result  # complete once torch is known
  return result


@functools.lru_cache(maxsize=4096)
def _is_user_file_cached(filename, dirs):
  if filename.startswith("<"):
    # `python -c` and the REPL are user code; frozen importlib is not.
    return filename in ("<string>", "<stdin>") or filename.startswith("<ipython")
  if "site-packages" in filename or "dist-packages" in filename:
    return False
  real = os.path.realpath(filename)
  for d in dirs:
    if real == d or real.startswith(d + os.sep):
      return False
  return True


def is_user_file(filename):
  """True for the user's own code (not the stdlib, site-packages or the emulator)."""
  return _is_user_file_cached(filename, _excluded_dirs())


def user_frames(frame=None, limit=MAX_STACK):
  """User frames (innermost first) from `frame` (default: caller) outwards."""
  if frame is None:
    frame = sys._getframe(1)  # pylint: disable=protected-access
  dirs = _excluded_dirs()
  out = []
  while frame is not None and len(out) < limit:
    code = frame.f_code
    if _is_user_file_cached(code.co_filename, dirs):
      out.append({
          "file": _abs(code.co_filename),
          "line": frame.f_lineno or 0,
          "function": code.co_name,
      })
    frame = frame.f_back
  return out


def traceback_user_frames(tb, limit=MAX_STACK):
  """User frames of a traceback, innermost first."""
  dirs = _excluded_dirs()
  frames = []
  while tb is not None:
    code = tb.tb_frame.f_code
    if _is_user_file_cached(code.co_filename, dirs):
      frames.append({
          "file": _abs(code.co_filename),
          "line": tb.tb_lineno,
          "function": code.co_name,
      })
    tb = tb.tb_next
  frames.reverse()
  return frames[:limit]


def _abs(filename):
  if filename.startswith("<"):
    return filename
  return os.path.abspath(filename)


def _site(frames):
  if frames:
    f = frames[0]
    return f["file"], f["line"], f["function"]
  return None, None, None


# ---------------------------------------------------------------- events


def start():
  """Writes the start event once per process."""
  global _started_pid
  pid = os.getpid()
  if _started_pid == pid:
    return
  _started_pid = pid
  from xla2tpu_emulator import config  # pylint: disable=import-outside-toplevel

  torch = sys.modules.get("torch")
  version = getattr(torch, "__version__", None) if torch else None
  if version:
    version = version.split("+")[0]
  emit({
      "event": "start",
      "schema": SCHEMA,
      "pid": pid,
      "ppid": os.getppid(),
      "argv": list(sys.argv),
      "torch": version,
      "chips": config.chips(),
      "time": time.time(),
  })


def incompatibility(kind, message, op=None, frames=None, frame=None, argument=None):
  """Records an incompatibility (call BEFORE raising the matching error).

  `argument`: the op argument at fault (the CPU-side tensor of a device mix).
  """
  if frames is None:
    frames = user_frames(frame if frame is not None else sys._getframe(1))  # pylint: disable=protected-access
  file, line, function = _site(frames)
  emit({
      "event": "incompatibility",
      "kind": kind,
      "message": message,
      "op": op,
      **({"argument": argument} if argument is not None else {}),
      "file": file,
      "line": line,
      "function": function,
      "stack": frames,
      "time": time.time(),
  })


def warning(kind, message, frames=None, frame=None, dedupe_key=None):
  """Records a warning, deduplicated per (kind, site, key)."""
  if frames is None:
    frames = user_frames(frame if frame is not None else sys._getframe(1))  # pylint: disable=protected-access
  file, line, function = _site(frames)
  key = (kind, file, line, dedupe_key if dedupe_key is not None else message)
  with _lock:
    if key in _warned:
      return False
    _warned.add(key)
  del function
  emit({
      "event": "warning",
      "kind": kind,
      "message": message,
      "file": file,
      "line": line,
  })
  return True


def reported(exc):
  """Marks an error whose incompatibility was recorded before it was raised."""
  exc.xla2tpu_reported = True
  return exc


def _was_reported(exc):
  """True if `exc`, or an error it was raised from or while handling, is marked."""
  seen = set()
  while exc is not None and id(exc) not in seen:
    if getattr(exc, "xla2tpu_reported", False):
      return True
    seen.add(id(exc))
    exc = exc.__cause__ or exc.__context__
  return False


def _is_device_mix(message):
  """torch's own device checks (TensorIterator, structured metas) on tpu."""
  return "tpu" in message and (
      "Expected all tensors to be on the same device" in message
      or "Expected query, key, and value to have the same device type" in message
      or ("Input type" in message and "weight type" in message)
  )


def exception(exc_type, exc, tb):
  frames = traceback_user_frames(tb)
  file, line, _ = _site(frames)
  message = str(exc)
  if _is_device_mix(message) and not _was_reported(exc):
    # Raised by torch's own kernels (a TensorIterator meta), not by the
    # emulator's checks: still a device mix-up at the user's line.
    incompatibility("device_mismatch", message, frames=frames)
  emit({
      "event": "exception",
      "type": getattr(exc_type, "__name__", str(exc_type)),
      "message": str(exc),
      "file": file,
      "line": line,
  })


def count_host_sync(kind, frame=None):
  frames = user_frames(frame if frame is not None else sys._getframe(1), limit=1)  # pylint: disable=protected-access
  file, line, function = _site(frames)
  key = (kind, file, line, function)
  with _lock:
    HOST_SYNCS[key] = HOST_SYNCS.get(key, 0) + 1
  for listener in _sync_listeners:
    listener(kind, file, line, function)


def summary():
  """Writes the summary event once per process (idempotent)."""
  global _summary_pid
  pid = os.getpid()
  with _lock:
    if _summary_pid == pid:
      return
    _summary_pid = pid
    syncs = [
        {"kind": k, "count": n, "file": f, "line": l, "function": fn}
        for (k, f, l, fn), n in sorted(
            HOST_SYNCS.items(), key=lambda kv: -kv[1]
        )
    ]
    ops = dict(sorted(OP_COUNTS.items()))
  for extra in _summary_events:
    event = extra()
    if event is not None:
      emit(event)
  emit({
      "event": "summary",
      "rank": STATE["rank"],
      "world_size": STATE["world_size"],
      "device_initialized": STATE["device_initialized"],
      "ops": ops,
      "host_syncs": syncs,
      "time": time.time(),
  })


# ---------------------------------------------------------------- hooks

_hooks_installed = False


def _after_fork_in_child():
  """Fresh per-process report state in a fork child."""
  global _warned
  OP_COUNTS.clear()
  HOST_SYNCS.clear()
  _warned = set()
  for reset in _fork_resets:
    reset()
  STATE["rank"] = None
  STATE["world_size"] = None
  # device_initialized is reset by the device module's own fork hook.
  start()


class _MpAfterFork:
  """Anchor object for multiprocessing.util.register_after_fork."""


_MP_ANCHOR = _MpAfterFork()


def _mp_after_fork(_obj):
  # Runs in multiprocessing fork children after they cleared the finalizer
  # registry; they leave through os._exit, so atexit never runs there.
  import multiprocessing.util as mpu  # pylint: disable=import-outside-toplevel

  mpu.Finalize(None, summary, exitpriority=-100)


def install_hooks():
  """atexit summary, excepthooks, fork handlers. Idempotent."""
  global _hooks_installed
  if _hooks_installed:
    return
  _hooks_installed = True
  atexit.register(summary)

  orig_excepthook = sys.excepthook

  def excepthook(exc_type, exc, tb):
    try:
      if not issubclass(exc_type, (SystemExit, KeyboardInterrupt)):
        exception(exc_type, exc, tb)
    except Exception:  # pylint: disable=broad-except
      pass
    try:
      summary()
    except Exception:  # pylint: disable=broad-except
      pass
    orig_excepthook(exc_type, exc, tb)

  sys.excepthook = excepthook

  orig_thread_hook = threading.excepthook

  def thread_excepthook(args):
    try:
      if args.exc_type is not None and not issubclass(
          args.exc_type, SystemExit
      ):
        exception(args.exc_type, args.exc_value, args.exc_traceback)
    except Exception:  # pylint: disable=broad-except
      pass
    orig_thread_hook(args)

  threading.excepthook = thread_excepthook

  os.register_at_fork(after_in_child=_after_fork_in_child)
  orig_exit = os._exit  # pylint: disable=protected-access

  def _exit(code):
    try:
      summary()
    except Exception:  # pylint: disable=broad-except
      pass
    orig_exit(code)

  os._exit = _exit  # pylint: disable=protected-access
  try:
    import multiprocessing.process as mpp  # pylint: disable=import-outside-toplevel
    import multiprocessing.util as mpu  # pylint: disable=import-outside-toplevel

    mpu.register_after_fork(_MP_ANCHOR, _mp_after_fork)
    _patch_process_bootstrap(mpp.BaseProcess)
  except Exception:  # pylint: disable=broad-except
    pass


def _patch_process_bootstrap(cls):
  """Records exceptions escaping multiprocessing.Process.run in the child
  (multiprocessing prints them itself; sys.excepthook never sees them)."""
  orig = cls._bootstrap  # pylint: disable=protected-access
  if getattr(orig, "_xla2tpu", False):
    return

  def _bootstrap(self, *args, **kwargs):
    run = self.run

    def recording_run():
      try:
        return run()
      except BaseException as e:  # pylint: disable=broad-except
        if not isinstance(e, (SystemExit, KeyboardInterrupt)):
          try:
            exception(type(e), e, e.__traceback__)
          except Exception:  # pylint: disable=broad-except
            pass
        raise

    self.run = recording_run
    return orig(self, *args, **kwargs)

  _bootstrap._xla2tpu = True  # pylint: disable=protected-access
  cls._bootstrap = _bootstrap  # pylint: disable=protected-access
