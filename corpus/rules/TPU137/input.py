# TPU137 diffusers-xla-flash-attention: deleted; with an SPMD partition spec, reported
import torch
from diffusers import StableDiffusionPipeline

pipe = StableDiffusionPipeline.from_pretrained("sd-model", torch_dtype=torch.bfloat16).to("tpu")
pipe.unet.enable_xla_flash_attention()
pipe.vae.enable_xla_flash_attention(partition_spec=("data", None, None, None))
