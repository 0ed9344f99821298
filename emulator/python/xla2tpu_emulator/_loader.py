"""Entry point (`torch.backends`: torch_tpu = xla2tpu_emulator._loader:load).

torch's device-backend autoload calls `load()` at the end of `import torch`
in every process (spawned workers, torchrun workers, ...), like TorchTPU's
`torch_tpu._loader:load`. TORCH_DEVICE_BACKEND_AUTOLOAD=0 disables it, as for
TorchTPU; `import torch_tpu` then loads it explicitly.
"""

import os
import sys
import threading

_LOCK = threading.Lock()
_LOADED = False


def load():
  global _LOADED
  with _LOCK:
    if _LOADED:
      return
    _LOADED = True
    from xla2tpu_emulator import blockers  # pylint: disable=import-outside-toplevel
    from xla2tpu_emulator import config  # pylint: disable=import-outside-toplevel
    from xla2tpu_emulator import lines  # pylint: disable=import-outside-toplevel
    from xla2tpu_emulator import report  # pylint: disable=import-outside-toplevel

    lines.install()

    report.install_hooks()
    report.start()
    # A TPU host has no GPU: code that reaches for CUDA must fail here as it
    # would there, not run on a GPU this machine happens to have. (CUDA
    # initializes lazily, so this holds unless CUDA was used before torch.)
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    blockers.install()
    _install_tpu_module()
    if config.chips() > 0:
      _init_device()


def _install_tpu_module():
  import torch  # pylint: disable=import-outside-toplevel

  from xla2tpu_emulator import tpu_module  # pylint: disable=import-outside-toplevel

  if "torch.tpu" in sys.modules:
    return
  mod = tpu_module.build()
  sys.modules["torch.tpu"] = mod
  setattr(torch, "tpu", mod)


def _init_device():
  import torch  # pylint: disable=import-outside-toplevel
  from torch.utils import backend_registration  # pylint: disable=import-outside-toplevel

  from xla2tpu_emulator import autocast  # pylint: disable=import-outside-toplevel
  from xla2tpu_emulator import compile as emu_compile  # pylint: disable=import-outside-toplevel
  from xla2tpu_emulator import device  # pylint: disable=import-outside-toplevel
  from xla2tpu_emulator import distributed  # pylint: disable=import-outside-toplevel
  from xla2tpu_emulator import kernels  # pylint: disable=import-outside-toplevel
  from xla2tpu_emulator import patches  # pylint: disable=import-outside-toplevel

  class Hooks(torch._C._acc.PrivateUse1Hooks):  # pylint: disable=protected-access

    def is_available(self):
      return True

    def has_primary_context(self, dev_id):
      del dev_id
      return device.is_initialized()

    def is_built(self):
      return True

  class Guard(torch._C._acc.DeviceGuard):  # pylint: disable=protected-access

    def type_(self):
      return torch._C._autograd.DeviceType.PrivateUse1  # pylint: disable=protected-access

  mod = sys.modules["torch.tpu"]
  # _setup_privateuseone_for_python_backend registers the device module
  # itself; make room for it.
  if getattr(torch, "tpu", None) is mod:
    delattr(torch, "tpu")
    del sys.modules["torch.tpu"]
  from xla2tpu_emulator import native  # pylint: disable=import-outside-toplevel

  acc = torch._C._acc  # pylint: disable=protected-access
  register_python_hook = acc.register_python_privateuseone_hook
  if native.register_hooks(torch, lambda index: device.is_initialized()):
    # C++ hooks with TorchTPU's pinned host allocator are in place; torch's
    # Python ones (registrable only once) would be refused.
    acc.register_python_privateuseone_hook = lambda hook: True
  try:
    backend_registration._setup_privateuseone_for_python_backend(  # pylint: disable=protected-access
        "tpu", backend_module=mod, hook=Hooks(), device_guard=Guard()
    )
  finally:
    acc.register_python_privateuseone_hook = register_python_hook
  kernels.install()
  from xla2tpu_emulator import submodules  # pylint: disable=import-outside-toplevel

  submodules.define_tpu_ops()
  autocast.install()
  distributed.install()
  emu_compile.install()
  patches.install()
  from xla2tpu_emulator import advise  # pylint: disable=import-outside-toplevel

  advise.install()
