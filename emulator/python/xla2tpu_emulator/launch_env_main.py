"""`python -m torch.tpu.distributed`: print the TPU launch environment.

Usage (as with TorchTPU 0.2.0):
  eval $(python -m torch.tpu.distributed | sed 's/^/export /')
  torchrun --nproc_per_node=$WORLD_SIZE train.py
"""

if __name__ == "__main__":
  from xla2tpu_emulator import distributed as _emu_dist

  _emu_dist.print_launch_env()
