"""Whole lines on stdout and stderr when several processes share them (`xla2tpu run --nproc N`).

Python writes a printed line in pieces (the text, then "\\n"; or at a buffer boundary), so two
ranks writing to one pipe could glue their lines together (`RESULT rank=1 ...RESULT rank=0 ...`).
Here each process's sys.stdout and sys.stderr hand the descriptor only complete lines, each batch
in one write(2) (atomic on a pipe up to PIPE_BUF bytes); a partial line goes out on flush. With
XLA2TPU_EMULATOR_RANK_PREFIX=1 each line starts with `[rankN]: ` once the rank is known (RANK, or
the emulator's process group), as torchrun's --tee does. Not part of TorchTPU: output only.
"""

import io
import os
import sys


def _rank_prefix():
  from xla2tpu_emulator import report  # pylint: disable=import-outside-toplevel

  rank = report.STATE.get("rank")
  if rank is None:
    rank = os.environ.get("RANK")
  return "" if rank is None else f"[rank{rank}]: "


class WholeLines(io.TextIOBase):
  """A text stream over `inner` that writes complete lines only."""

  def __init__(self, inner, prefixed):
    super().__init__()
    self._inner = inner
    self._prefixed = prefixed
    self._pending = []
    self._at_line_start = True

  def write(self, s):
    if not isinstance(s, str):
      raise TypeError(f"write() argument must be str, not {type(s).__name__}")
    end = s.rfind("\n")
    if end < 0:
      self._pending.append(s)
      return len(s)
    text = "".join(self._pending) + s[: end + 1]
    self._pending = [s[end + 1 :]] if end + 1 < len(s) else []
    self._emit(text)
    return len(s)

  def flush(self):
    if self._pending:
      text = "".join(self._pending)
      self._pending = []
      self._emit(text)
    self._inner.flush()

  def _emit(self, text):
    if self._prefixed:
      prefix = _rank_prefix()
      if prefix:
        lines = text.split("\n")
        head = prefix + lines[0] if self._at_line_start else lines[0]
        text = "\n".join([head] + [prefix + l if l else l for l in lines[1:]])
    self._at_line_start = text.endswith("\n")
    # What was written to the original stream before the switch goes first.
    self._inner.flush()
    data = text.encode(self.encoding, self.errors or "strict")
    fd = self._inner.fileno()
    while data:
      data = data[os.write(fd, data) :]

  def drop_pending(self):
    """In a fork child: the parent's partial line is the parent's to write."""
    self._pending = []

  def fileno(self):
    return self._inner.fileno()

  def isatty(self):
    return self._inner.isatty()

  def writable(self):
    return True

  @property
  def encoding(self):
    return self._inner.encoding or "utf-8"

  @property
  def errors(self):
    return self._inner.errors

  @property
  def buffer(self):
    return self._inner.buffer

  @property
  def line_buffering(self):
    return True

  def __getattr__(self, name):
    return getattr(self._inner, name)


def install():
  """Wrap sys.stdout and sys.stderr (once), if `xla2tpu run` asked for whole lines."""
  if os.environ.get("XLA2TPU_EMULATOR_WHOLE_LINES") != "1":
    return
  prefixed = os.environ.get("XLA2TPU_EMULATOR_RANK_PREFIX") == "1"
  wrapped = []
  for name in ("stdout", "stderr"):
    stream = getattr(sys, name)
    if isinstance(stream, WholeLines) or stream is None:
      continue
    try:
      stream.fileno()
    except (AttributeError, OSError, ValueError):
      continue  # not a descriptor (captured by a test runner, a notebook): left alone
    wrapper = WholeLines(stream, prefixed)
    setattr(sys, name, wrapper)
    wrapped.append(wrapper)
  if wrapped:
    os.register_at_fork(after_in_child=lambda: [w.drop_pending() for w in wrapped])
