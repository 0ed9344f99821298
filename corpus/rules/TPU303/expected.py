# TPU303 matmul-precision
import torch

torch.set_float32_matmul_precision("highest")
torch.set_float32_matmul_precision("medium")
torch.set_float32_matmul_precision("high")
p = torch.get_float32_matmul_precision()  # getter: TPU304
