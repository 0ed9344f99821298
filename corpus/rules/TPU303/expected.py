# TPU303 matmul-precision
import torch_xla.backends
import torch

torch.set_float32_matmul_precision("highest")
torch.set_float32_matmul_precision("medium")
torch.set_float32_matmul_precision("high")
p = torch_xla.backends.get_mat_mul_precision()  # getter: reported
