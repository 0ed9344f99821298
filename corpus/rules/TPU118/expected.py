# TPU118 pallas-kernels: reported only
from torch_xla.experimental.custom_kernel import flash_attention
import torch_xla.experimental.custom_kernel as ck

out = flash_attention(q, k, v, causal=True)
ck.FlashAttention.DEFAULT_BLOCK_SIZES["block_q"] = 512
