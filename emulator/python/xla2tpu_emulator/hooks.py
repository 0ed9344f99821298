"""Callbacks run right after a module is first imported: how the emulator patches libraries
(torch._dynamo, torch.distributed.tensor, dataloaders) only when a program uses them. The bottom
of the package: it imports nothing of it."""

import importlib.abc
import importlib.util
import sys


class _PostImportHook(importlib.abc.MetaPathFinder):
  """Runs a callback right after a module is first imported."""

  def __init__(self, name, callback):
    self.name = name
    self.callback = callback

  def find_spec(self, fullname, path=None, target=None):
    if fullname != self.name:
      return None
    sys.meta_path.remove(self)
    spec = importlib.util.find_spec(fullname)
    if spec is None or spec.loader is None:
      return spec
    loader = spec.loader
    orig_exec = loader.exec_module
    callback = self.callback

    def exec_module(module):
      orig_exec(module)
      try:
        callback(module)
      except Exception:  # pylint: disable=broad-except
        pass

    loader.exec_module = exec_module
    return spec


def after_import(name, callback):
  """`callback(module)` once `name` is imported: now if it already is."""
  if name in sys.modules:
    callback(sys.modules[name])
  else:
    sys.meta_path.insert(0, _PostImportHook(name, callback))
