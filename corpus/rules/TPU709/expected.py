# TPU709 xla-version: reported only
import torch_xla
from packaging import version

if version.parse(torch_xla.__version__) >= version.parse("2.5"):
    print("new runtime")
