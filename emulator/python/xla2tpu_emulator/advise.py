"""`xla2tpu run --advise`: what would make this run slow on TorchTPU, step by step.

Enabled by XLA2TPU_EMULATOR_ADVISE=1. The kernels and the host-sync counter
call `record()`/`transfer()`/`dynamic_op()`; this module cuts the run into
training steps and writes one `advice` event with the process summary.

A step is the work between two steps of the first optimizer that steps (a GAN's
second optimizer steps inside the same step), or, with
XLA2TPU_EMULATOR_STEP_MARKER=NAME, one call of the function NAME (its
`__qualname__` or bare name). Step 1 also holds the set-up before it (model
moves, the first batch), so per-step figures come from the steps after it
("steady"), unless there is only one.

Counting, not timing: a CPU cannot time a TPU. The Rust side turns the counts
into an estimated cost with a stated model.

It feeds the report (report.py) and is not imported by it: it subscribes to the report's host
syncs, summary and fork. It must not import torch at import time.
"""

import os
import re
import sys
import threading
import weakref

from xla2tpu_emulator import config
from xla2tpu_emulator import hooks
from xla2tpu_emulator import report

ENABLED = config.truthy("XLA2TPU_EMULATOR_ADVISE")
MARKER = (os.environ.get("XLA2TPU_EMULATOR_STEP_MARKER") or "").strip() or None

# Ops whose output shape depends on tensor values: the host must wait for the
# chip to learn it, and a compiled step recompiles for each new shape.
DYNAMIC_OPS = frozenset((
    "aten::nonzero",
    "aten::masked_select",
    "aten::_unique2",
    "aten::unique_dim",
    "aten::unique_consecutive",
    "aten::unique_dim_consecutive",
    "aten::_unique",
    "aten::repeat_interleave.Tensor",
))
# Ops that are dynamic only with a boolean mask among their indices (`x[mask]`).
MASK_INDEX_OPS = frozenset(("aten::index.Tensor", "aten::index_put_", "aten::index_put"))

_lock = threading.RLock()
_steps = []  # one dict of totals per finished step
_cur = {}  # (category, kind, file, line, function) -> [count, bytes] in the step under way
_sites = {}  # key -> {"first", "steady", "outside", "bytes", "steps_seen"}
_in_step = MARKER is None  # optimizer mode: always inside a step (the next one)
_ops_mark = 0  # op total at the start of the step under way
_breaks_mark = 0
_optimizers = {}  # id(optimizer) -> info dict
_step_owner = None  # id of the optimizer whose steps cut the run
_opt_ops_mark = {}
_last_source = {}  # (direction, file, line) -> weakrefs to the tensors copied there lately
_batches = {}  # id -> weakref of the tensors a DataLoader yielded (tensors compare by value)


def _remember_batch(t):
  key = id(t)
  _batches[key] = weakref.ref(t, lambda _, key=key: _batches.pop(key, None))


def _is_batch(tensor):
  for t in (tensor, getattr(tensor, "_base", None)):
    if t is not None:
      r = _batches.get(id(t))
      if r is not None and r() is t:
        return True
  return False


def _watch_loaders(dataloader):
  """Remembers the tensors each DataLoader batch holds (any nesting)."""
  cls = dataloader._BaseDataLoaderIter  # pylint: disable=protected-access
  orig = cls.__next__

  def __next__(self):
    batch = orig(self)
    try:
      from torch.utils import _pytree as pytree  # pylint: disable=import-outside-toplevel

      for leaf in pytree.tree_leaves(batch):
        if getattr(leaf, "device", None) is not None and leaf.device.type == "cpu":
          _remember_batch(leaf)
    except Exception:  # pylint: disable=broad-except
      pass
    return batch

  cls.__next__ = __next__
_installed = False
_graphs_compiled = 0  # graphs the "tpu" backend compiled in this process


def enabled():
  return ENABLED


def graph_compiled():
  """The "tpu" compile backend compiled a graph (a compiled run, even with no Dynamo frames)."""
  global _graphs_compiled
  _graphs_compiled += 1


def graphs_compiled():
  return _graphs_compiled


def _user_site(frame):
  frames = report.user_frames(frame, limit=1)
  if frames:
    f = frames[0]
    return f["file"], f["line"], f["function"]
  return None, None, None


def record(category, kind, file, line, function, nbytes=0, same=False):
  """Counts one event at a user site in the step under way. `same`: a copy of the
  very tensor this site copied last time."""
  key = (category, kind, file, line, function)
  with _lock:
    if not _in_step:
      s = _site(key)
      s["outside"] += 1
      s["bytes_outside"] += nbytes
      return
    c = _cur.get(key)
    if c is None:
      c = _cur[key] = [0, 0, 0]
    c[0] += 1
    c[1] += nbytes
    c[2] += int(same)


def transfer(direction, tensor, frame):
  """A copy between host and chip (`h2d`/`d2h`) of `tensor`'s bytes."""
  try:
    _transfer(direction, tensor, frame)
  except Exception:  # pylint: disable=broad-except
    pass  # advice must never break the program it watches


def _transfer(direction, tensor, frame):
  try:
    nbytes = tensor.numel() * tensor.element_size()
  except Exception:  # pylint: disable=broad-except
    nbytes = 0
  file, line, function = _user_site(frame)
  if direction == "h2d" and _is_batch(tensor):
    # An input batch crosses once per step by nature; counted in the step's
    # totals, not advised on.
    record("transfer", "h2d_batch", file, line, function, nbytes)
    return
  # The same host tensor copied again (`x.to("tpu")` of a tensor made before the
  # loop) is told apart from a new one each time (a mask built in the step) by
  # identity: a freed tensor's address is often reused, its Python object is not
  # alive. A line may copy several tensors (`x.to(...), y.to(...)`).
  key = (direction, file, line)
  recent = _last_source.setdefault(key, [])
  same = any(r() is tensor for r in recent)
  if not same:
    try:
      recent.append(weakref.ref(tensor))
      del recent[:-8]
    except TypeError:
      pass
  record("transfer", direction, file, line, function, nbytes, same)


def reads_output_size(name, args):
  """Whether `name` with `args` makes an output whose size depends on values, which the
  host must read from the chip before it can go on: a host sync, counted with the others.
  (`x[mask] = v` keeps `x`'s shape: a compiler can do it without reading the mask.)"""
  if name in DYNAMIC_OPS:
    return True
  return name == "aten::index.Tensor" and _has_mask(args)


def _has_mask(args):
  indices = args[1] if len(args) > 1 else None
  return isinstance(indices, (list, tuple)) and any(
      getattr(i, "dtype", None) is not None and str(i.dtype) in ("torch.bool", "torch.uint8")
      for i in indices
  )


def dynamic_op(name, args, frame):
  """`name` was dispatched to the chip: count it when its output shape is data-dependent."""
  try:
    _dynamic_op(name, args, frame)
  except Exception:  # pylint: disable=broad-except
    pass


def _dynamic_op(name, args, frame):
  if name in MASK_INDEX_OPS:
    if not _has_mask(args):
      return
    kind = "boolean mask index" if name == "aten::index.Tensor" else "boolean mask assignment"
  elif name in DYNAMIC_OPS:
    kind = name
  else:
    return
  file, line, function = _user_site(frame)
  record("dynamic", kind, file, line, function)


def _site(key):
  s = _sites.get(key)
  if s is None:
    s = _sites[key] = {
        "first": 0, "steady": 0, "outside": 0, "bytes_first": 0,
        "bytes_steady": 0, "bytes_outside": 0, "steps_seen": 0, "same_steady": 0,
    }
  return s


def _op_total():
  return sum(report.OP_COUNTS.values())


def _graph_breaks():
  """Graph breaks so far, as `_watch_graph_breaks` counted them (one source for the
  per-step totals and the per-site list)."""
  with _lock:
    return sum(_breaks.values())


def _eager_mode():
  """torch.tpu's eager mode as the step ends (DEFER_NEVER unless the program chose)."""
  mod = sys.modules.get("xla2tpu_emulator.tpu_module")
  try:
    return mod._eager_stack[-1].value  # pylint: disable=protected-access
  except Exception:  # pylint: disable=broad-except
    return None


def _begin_step():
  global _in_step, _ops_mark, _breaks_mark
  with _lock:
    _in_step = True
    _ops_mark = _op_total()
    _breaks_mark = _graph_breaks()


def _end_step(end_in_step):
  """Closes the step under way: its totals, and its sites into first/steady."""
  global _in_step, _ops_mark, _breaks_mark
  with _lock:
    ops = _op_total()
    breaks = _graph_breaks()
    index = len(_steps)
    totals = {
        "ops": ops - _ops_mark,
        "graph_breaks": breaks - _breaks_mark,
        "eager_mode": _eager_mode(),
    }
    for (category, kind, *_), (n, b, _) in _cur.items():
      name = {"sync": "syncs", "dynamic": "dynamic"}.get(category)
      if category == "transfer":
        kind = "h2d" if kind == "h2d_batch" else kind  # a batch is a copy to the chip too
        totals[kind] = totals.get(kind, 0) + n
        totals[kind + "_bytes"] = totals.get(kind + "_bytes", 0) + b
      elif name:
        totals[name] = totals.get(name, 0) + n
    _steps.append(totals)
    phase = "first" if index == 0 else "steady"
    for key, (n, b, same) in _cur.items():
      s = _site(key)
      s[phase] += n
      s["bytes_" + phase] += b
      if phase == "steady":
        s["steps_seen"] += 1
        s["same_steady"] += same
    _cur.clear()
    _ops_mark = ops
    _breaks_mark = breaks
    _in_step = end_in_step


# ---------------------------------------------------------------- step sources


def _optimizer_info(opt):
  info = _optimizers.get(id(opt))
  if info is not None:
    return info
  import torch  # pylint: disable=import-outside-toplevel

  params = [p for g in opt.param_groups for p in g["params"]]
  defaults = getattr(opt, "defaults", {}) or {}
  foreach = defaults.get("foreach")
  fused = defaults.get("fused")
  if "foreach" not in defaults and "fused" not in defaults:
    how = "for-loop"  # no multi-tensor path at all (LBFGS, a hand-written optimizer)
  elif fused:
    how = "fused"
  elif foreach is None:
    # torch's own choice when the user does not say: foreach on devices that have
    # the kernels (the PrivateUse1 device is one) with plain tensors.
    try:
      from torch.optim.optimizer import _default_to_fused_or_foreach  # pylint: disable=import-outside-toplevel

      _, dflt = _default_to_fused_or_foreach(params, False, use_fused=False)
      how = "foreach" if dflt else "for-loop"
    except Exception:  # pylint: disable=broad-except
      how = "unknown"
  else:
    how = "foreach" if foreach else "for-loop"
  info = {
      "class": type(opt).__qualname__,
      "module": type(opt).__module__,
      "torch_optimizer": type(opt).__module__.startswith("torch.optim"),
      "params": len(params),
      "tensors_on_tpu": sum(1 for p in params if isinstance(p, torch.Tensor) and p.device.type == "tpu"),
      "foreach": foreach,
      "fused": fused,
      "implementation": how,
      "steps": 0,
      "ops": 0,
      "file": None,
      "line": None,
      "function": None,
  }
  _optimizers[id(opt)] = info
  return info


def _pre_hook(opt, args, kwargs):
  del args, kwargs
  with _lock:
    _optimizer_info(opt)
    _opt_ops_mark[id(opt)] = _op_total()


def _post_hook(opt, args, kwargs):
  global _step_owner
  del args, kwargs
  with _lock:
    info = _optimizer_info(opt)
    info["steps"] += 1
    info["ops"] += _op_total() - _opt_ops_mark.pop(id(opt), _op_total())
    if info["file"] is None:
      # The user's call of step(): the frames above torch's step wrapper.
      info["file"], info["line"], info["function"] = _user_site(sys._getframe(1))  # pylint: disable=protected-access
    if MARKER is not None:
      return
    if _step_owner is None:
      _step_owner = id(opt)
    if _step_owner == id(opt):
      _end_step(True)


def _install_marker():
  depth = [0]

  def profile(frame, event, arg):
    del arg
    if event == "call":
      code = frame.f_code
      if code.co_name == MARKER or getattr(code, "co_qualname", None) == MARKER:
        depth[0] += 1
        if depth[0] == 1:
          _begin_step()
    elif event == "return" and depth[0]:
      code = frame.f_code
      if code.co_name == MARKER or getattr(code, "co_qualname", None) == MARKER:
        depth[0] -= 1
        if depth[0] == 0:
          _end_step(False)

  sys.setprofile(profile)


_recompiles = {}  # (reason with numbers as N, file, line, function) -> [count, first reason]
_breaks = {}  # (reason, file, line) -> count


def _normalise(reason):
  """`0/3: tensor 'x' size mismatch at index 0. expected 11, actual 12` ->
  `tensor 'x' size mismatch at index N. expected N, actual N`: one line per cause."""
  reason = re.sub(r"^\d+/\d+: ", "", reason.strip().splitlines()[0] if reason.strip() else reason)
  return reason, re.sub(r"\d+", "N", reason)


def _watch_recompiles(convert_frame):
  """Dynamo asks for the failed guards only when it compiles a frame again:
  record the first reason, and the compiled function's place."""
  orig = convert_frame.get_and_maybe_log_recompilation_reasons

  def reasons(cache_entries, frame, *args, **kwargs):
    out = orig(cache_entries, frame, *args, **kwargs)
    try:
      code = frame.f_code
      raw, norm = _normalise(out[0] if out else "Unable to find recompilation reasons")
      key = (norm, code.co_filename, code.co_firstlineno, code.co_name)
      with _lock:
        entry = _recompiles.setdefault(key, [0, raw])
        entry[0] += 1
    except Exception:  # pylint: disable=broad-except
      pass
    return out

  convert_frame.get_and_maybe_log_recompilation_reasons = reasons


def _watch_graph_breaks(symbolic_convert):
  """Each graph break, with the user's line (Dynamo's counters keep only the reason)."""
  cls = symbolic_convert.InstructionTranslatorBase
  orig = cls.log_graph_break

  def log_graph_break(self, code_options, reason, exc, *args, **kwargs):
    if not getattr(exc, "logged", False):
      try:
        import torch  # pylint: disable=import-outside-toplevel

        stack = getattr(exc, "real_stack", None) or torch._guards.TracingContext.extract_stack()  # pylint: disable=protected-access
        last = stack[-1] if stack else None
        file = last.filename if last else code_options.get("co_filename")
        line = last.lineno if last else code_options.get("co_firstlineno")
        key = (str(reason).strip().splitlines()[0] if str(reason).strip() else "graph break", file, line)
        with _lock:
          _breaks[key] = _breaks.get(key, 0) + 1
      except Exception:  # pylint: disable=broad-except
        pass
    return orig(self, code_options, reason, exc, *args, **kwargs)

  cls.log_graph_break = log_graph_break


def install():
  """Optimizer hooks (and the step marker). Called with the device set up."""
  global _installed
  if not ENABLED or _installed:
    return
  _installed = True
  from torch.optim import optimizer as optim  # pylint: disable=import-outside-toplevel

  optim.register_optimizer_step_pre_hook(_pre_hook)
  optim.register_optimizer_step_post_hook(_post_hook)
  hooks.after_import("torch._dynamo.convert_frame", _watch_recompiles)
  hooks.after_import("torch._dynamo.symbolic_convert", _watch_graph_breaks)
  hooks.after_import("torch.utils.data.dataloader", _watch_loaders)
  if MARKER is not None:
    _install_marker()


def _compile_facts():
  utils = sys.modules.get("torch._dynamo.utils")
  if utils is None:
    return {"used": False}
  c = utils.counters
  with _lock:
    breaks = [
        {"reason": r, "count": n, "file": f, "line": l}
        for (r, f, l), n in sorted(_breaks.items(), key=lambda kv: -kv[1])
    ]
    recompiles = [
        {"reason": raw, "count": n, "file": f, "line": l, "function": fn}
        for (_, f, l, fn), (n, raw) in _recompiles.items()
    ]
  return {
      "used": bool(c["frames"].get("total", 0)) or _graphs_compiled > 0,
      "frames": int(c["frames"].get("total", 0)),
      "graphs": int(c["stats"].get("unique_graphs", 0)),
      "graph_breaks": breaks,
      "recompiles": recompiles,
  }


def event():
  """The `advice` event, or None when advice is off or torch never ran."""
  if not ENABLED or not _installed:
    return None
  with _lock:
    # What came after the last step (a final evaluation, saving) is outside it.
    for key, (n, b, _) in _cur.items():
      s = _site(key)
      s["outside"] += n
      s["bytes_outside"] += b
    _cur.clear()
    sites = [
        {"category": k[0], "kind": k[1], "file": k[2], "line": k[3], "function": k[4], **v}
        for k, v in _sites.items()
    ]
    try:
      compiled = _compile_facts()
    except Exception as e:  # pylint: disable=broad-except
      compiled = {"used": False, "error": f"{type(e).__name__}: {e}"}
    return {
        "event": "advice",
        "step_source": f"marker:{MARKER}" if MARKER else "optimizer",
        "steps": list(_steps),
        "sites": sites,
        "optimizers": list(_optimizers.values()),
        "compile": compiled,
        "ops_total": _op_total(),
    }


def reset():
  """A fork child starts its own count (its parent's steps are not its own)."""
  global _in_step, _ops_mark, _breaks_mark, _step_owner
  with _lock:
    _steps.clear()
    _cur.clear()
    _sites.clear()
    _optimizers.clear()
    _opt_ops_mark.clear()
    _last_source.clear()
    _in_step = MARKER is None
    _ops_mark = 0
    _breaks_mark = 0
    _step_owner = None


def _host_sync(kind, file, line, function):
  record("sync", kind, file, line, function)


# The report counts host syncs, writes the summary and starts a fork child afresh; with advice
# on, each of those feeds this module too.
if ENABLED:
  report.on_host_sync(_host_sync)
  report.on_summary(event)
  report.on_fork(reset)
