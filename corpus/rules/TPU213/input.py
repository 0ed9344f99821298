# TPU213 launch
import torch_xla


def fn(index):
    print(index)


if __name__ == "__main__":
    torch_xla.launch(fn)  # every attached chip, or in place under torchrun
    torch_xla.launch(fn, args=(), debug_single_process=True)  # one process, no group: reported
