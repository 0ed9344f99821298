# TPU213 launch
import sys

import torch.distributed as dist
import torch_xla


def fn(index):
    print(index)


def own_group(index):
    dist.init_process_group("gloo")  # the worker's own group: the launcher creates none
    print(index)


if __name__ == "__main__":
    torch_xla.launch(fn)  # every attached chip, or in place under torchrun
    torch_xla.launch(fn, args=(), debug_single_process=True)  # once, in this process
    torch_xla.launch(fn, debug_single_process="--debug" in sys.argv)  # a flag known at run time
    torch_xla.launch(own_group)
