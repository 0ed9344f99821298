"""xla2tpu: migrate PyTorch/XLA code to TorchTPU.

The package carries the `xla2tpu` binary; run it as `xla2tpu` or `python -m xla2tpu`.
"""

from __future__ import annotations

import os
import sys
import sysconfig

__all__ = ["find_xla2tpu_bin"]


def find_xla2tpu_bin() -> str:
    """The path of the `xla2tpu` executable installed with this package."""
    exe = "xla2tpu" + (sysconfig.get_config_var("EXE") or "")
    candidates = [
        # A regular or virtualenv install: this interpreter's scripts directory.
        sysconfig.get_path("scripts"),
        # `pip install --user`.
        sysconfig.get_path("scripts", scheme=_user_scheme()),
        # `pip install --target DIR`: DIR/bin beside DIR/xla2tpu.
        os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bin"),
    ]
    for directory in candidates:
        path = os.path.join(directory, exe)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"the {exe} executable is not installed; looked in {', '.join(candidates)}")


def _user_scheme() -> str:
    if sys.version_info >= (3, 10):
        return sysconfig.get_preferred_scheme("user")
    if os.name == "nt":
        return "nt_user"
    if sys.platform == "darwin" and getattr(sys, "_framework", None):
        return "osx_framework_user"
    return "posix_user"
