"""`torch_tpu._loader:load`, the real wheel's entry point, mapped to the emulator."""

from xla2tpu_emulator._loader import load  # noqa: F401
