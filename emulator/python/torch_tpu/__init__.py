"""xla2tpu emulator shim for `import torch_tpu`.

TorchTPU autoloads through the `torch.backends` entry point; `import torch_tpu`
is optional there and only makes sure the backend is loaded. Here it loads the
CPU emulator of TorchTPU 0.2.0 (see xla2tpu_emulator).
"""

import torch  # noqa: F401  (autoload runs the emulator's loader)

from xla2tpu_emulator import _loader as _emu_loader

_emu_loader.load()

__version__ = "0.2.0"
