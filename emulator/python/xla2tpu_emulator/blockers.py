"""Import blockers for torch_xla and optimum.tpu (no torch import here).

On a TorchTPU host neither package exists. An `import` of either from user
code fails with an ImportError that names the importing file:line and says
how to migrate it, and records an incompatibility event. Availability probes
(`importlib.util.find_spec("torch_xla")`, as transformers and diffusers do)
see "not installed", exactly as on TorchTPU, so libraries keep working.
"""

import ast
import functools
import importlib.abc
import importlib.machinery
import linecache
import os
import sys

from xla2tpu_emulator import report

_EMU_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

KINDS = {"torch_xla": "torch_xla_import", "optimum.tpu": "optimum_tpu_import"}


def _blocked_root(fullname):
  if fullname == "torch_xla" or fullname.startswith("torch_xla."):
    return "torch_xla"
  if fullname == "optimum.tpu" or fullname.startswith("optimum.tpu."):
    return "optimum.tpu"
  return None


def message(root, fullname, frames):
  site = ""
  fix = "xla2tpu migrate <file>"
  if frames:
    f = frames[0]
    site = f"{f['file']}:{f['line']}: "
    fix = f"xla2tpu migrate {f['file']}"
    src = linecache.getline(f["file"], f["line"]).strip()
    if src:
      site += f"`{src}`: "
  if root == "torch_xla":
    what = (
        f"No module named '{fullname}' (torch_xla is not installed under"
        " TorchTPU, which replaces PyTorch/XLA)."
    )
  else:
    what = (
        f"No module named '{fullname}' (optimum-tpu is archived and built on"
        " torch_xla; TorchTPU runs Hugging Face models natively on device"
        " 'tpu')."
    )
  return f"{site}{what} Migrate this file to TorchTPU with `{fix}`."


def _importer(frame):
  """The frame whose import statement is being executed (import machinery skipped)."""
  while frame is not None and (frame.f_code.co_filename.startswith("<frozen importlib")
                               or frame.f_globals.get("__name__", "").startswith("importlib")
                               or os.path.abspath(frame.f_code.co_filename).startswith(_EMU_ROOT)):
    frame = frame.f_back
  return frame


_CATCHES = ("ImportError", "ModuleNotFoundError", "Exception", "BaseException")


def _handler_catches(handler):
  """Whether an `except` clause catches a failed import."""
  t = handler.type
  if t is None:
    return True
  names = t.elts if isinstance(t, ast.Tuple) else [t]
  return any(isinstance(n, ast.Name) and n.id in _CATCHES
             or isinstance(n, ast.Attribute) and n.attr in _CATCHES for n in names)


@functools.lru_cache(maxsize=256)
def _caught_lines(filename, mtime):  # pylint: disable=unused-argument
  """The lines of `filename` inside a `try:` body whose handlers catch ImportError, in the
  same function (a function defined there runs later, outside the `try`)."""
  try:
    with open(filename, "rb") as f:
      tree = ast.parse(f.read(), filename)
  except (OSError, SyntaxError, ValueError):
    return frozenset()
  lines = set()

  def visit(node, catching):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
      catching = False
    if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
      body_catches = catching or any(_handler_catches(h) for h in node.handlers)
      for child in node.body:
        visit(child, body_catches)
      for child in node.handlers + node.orelse + node.finalbody:
        visit(child, catching)
      return
    if catching and isinstance(node, ast.stmt):
      lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    for child in ast.iter_child_nodes(node):
      visit(child, catching)

  visit(tree, False)
  return frozenset(lines)


def _caught(importer):
  """Whether the import running in `importer`, or a call of the user's code on the way to it,
  sits in a `try` that catches ImportError."""
  frame = importer
  while frame is not None:
    filename = frame.f_code.co_filename
    if report.is_user_file(filename):
      try:
        if frame.f_lineno in _caught_lines(filename, os.stat(filename).st_mtime_ns):
          return True
      except OSError:
        pass
    frame = frame.f_back
  return False


def blocked_import_error(root, fullname, frame):
  """Records the event (user code only) and returns the error to raise.

  Only an import the user's own code executes is an incompatibility. A library that tries
  torch_xla inside its own `try: import torch_xla except ImportError` (accelerate, lightning,
  ...) gets the plain "No module named" a TorchTPU host gives, and nothing is recorded. Nor is
  an import the user's code catches the same way: the program takes the path it has for a
  machine without torch_xla, as it would on TorchTPU; a warning says so."""
  importer = _importer(frame)
  if importer is None or not report.is_user_file(importer.f_code.co_filename):
    return ModuleNotFoundError(f"No module named '{fullname}'", name=fullname)
  frames = report.user_frames(frame)
  msg = message(root, fullname, frames)
  if frames and _caught(importer):
    src = linecache.getline(frames[0]["file"], frames[0]["line"]).strip()
    package = "torch_xla" if root == "torch_xla" else "optimum-tpu"
    report.warning(
        "caught_import",
        f"`{src}` raised ImportError ({package} is not installed under TorchTPU) and the program"
        f" catches it: it runs its path for a machine without {package}. `xla2tpu migrate` turns"
        " such a probe into `import torch_tpu`.",
        frames=frames)
  elif frames:
    report.incompatibility(KINDS[root], msg, frames=frames)
  return ModuleNotFoundError(msg, name=fullname)


def _is_probe(frame):
  """True when called through importlib.util.find_spec (not an import)."""
  while frame is not None:
    code = frame.f_code
    name = code.co_name
    if name in ("_find_and_load", "_gcd_import", "__import__", "import_module"):
      return False
    if name == "find_spec" and frame.f_globals.get("__name__") == "importlib.util":
      return True
    frame = frame.f_back
  return False


def _mentions_optimum_tpu(frames):
  if not frames:
    return False
  f = frames[0]
  src = linecache.getline(f["file"], f["line"])
  return "optimum.tpu" in src or ("optimum" in src and "tpu" in src)


class BlockingFinder(importlib.abc.MetaPathFinder):
  """First on sys.meta_path once the emulator is loaded."""

  def find_spec(self, fullname, path=None, target=None):
    root = _blocked_root(fullname)
    frame = sys._getframe(1)  # pylint: disable=protected-access
    if root is None:
      if fullname == "optimum" and not _is_probe(frame):
        # optimum itself is missing: say why `import optimum.tpu` fails.
        if importlib.machinery.PathFinder.find_spec("optimum") is None:
          frames = report.user_frames(frame)
          if _mentions_optimum_tpu(frames):
            raise blocked_import_error("optimum.tpu", "optimum.tpu", frame)
      return None
    if _is_probe(frame):
      return None
    raise blocked_import_error(root, fullname, frame)

  def invalidate_caches(self):
    pass


class _HidingPathEntryFinder:
  """Wraps the path-entry finder of the emulator dir: hides the stub package
  from availability probes (the BlockingFinder answers real imports)."""

  def __init__(self, inner):
    self._inner = inner

  def find_spec(self, fullname, target=None):
    if fullname == "torch_xla" and _is_probe(sys._getframe(1)):  # pylint: disable=protected-access
      return None
    return self._inner.find_spec(fullname, target)

  def invalidate_caches(self):
    if hasattr(self._inner, "invalidate_caches"):
      self._inner.invalidate_caches()

  def __getattr__(self, name):
    return getattr(self._inner, name)


FINDER = BlockingFinder()


def install():
  if FINDER not in sys.meta_path:
    sys.meta_path.insert(0, FINDER)
  root = os.path.realpath(_EMU_ROOT)
  for entry in list(sys.path):
    try:
      if os.path.realpath(entry or os.getcwd()) != root:
        continue
    except (OSError, ValueError):
      continue
    inner = sys.path_importer_cache.get(entry)
    if inner is None:
      for hook in sys.path_hooks:
        try:
          inner = hook(entry)
          break
        except ImportError:
          continue
    if inner is not None and not isinstance(inner, _HidingPathEntryFinder):
      sys.path_importer_cache[entry] = _HidingPathEntryFinder(inner)
