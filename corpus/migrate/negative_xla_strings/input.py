"""Mentions of "xla" that are not device strings."""
import logging
import subprocess

logger = logging.getLogger("xla")  # a logger name
BACKENDS = {"xla": "PyTorch/XLA", "tpu": "TorchTPU"}
HELP = "Set --backend=xla to use the XLA compiler"
flags = "--xla_dump_to=/tmp/dump --xla_gpu_autotune_level=0"
jax_platform = "xla"  # not torch


def describe(backend: str) -> str:
    if backend == "xla":
        return BACKENDS["xla"]
    return f"backend {backend!r} (not xla)"


print(describe("xla"), HELP.replace("xla", "XLA"))
logger.info("compiling with xla flags %s", flags)
subprocess.run(["echo", "xla"], check=False, stdout=subprocess.DEVNULL)  # its output would read as a device name to the comparison
