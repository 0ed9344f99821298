# TPU213 launch: reported only
import torch_xla


def fn(index):
    print(index)


if __name__ == "__main__":
    torch_xla.launch(fn)
    torch_xla.launch(fn, args=(), debug_single_process=True)
