"""CPU emulator of TorchTPU 0.2.0 (device "tpu", PyTorch PrivateUse1) for xla2tpu.

Loaded by torch's device-backend autoload (entry point group torch.backends),
or explicitly by `import torch_tpu`. See emulator/README.md.
"""

__version__ = "0.2.0"
