"""xla2tpu emulator stub: torch_xla does not exist on TorchTPU.

Importing torch_xla (or any torch_xla.* submodule) raises ModuleNotFoundError
naming the importing file:line and how to migrate it, and records a
`torch_xla_import` incompatibility event. Once the emulator is loaded (at
`import torch`), its meta path finder answers these imports before this file
is reached, and availability probes see torch_xla as not installed.
"""

import sys as _sys

from xla2tpu_emulator import blockers as _blockers

raise _blockers.blocked_import_error("torch_xla", __name__, _sys._getframe(1))
