# Pipeline code in the style of diffusers/transformers, where TPU support is optional.
import torch
from transformers.utils import is_torch_xla_available

if is_torch_xla_available():
    XLA_AVAILABLE = True
else:
    XLA_AVAILABLE = False


class DenoisePipeline:
    def __init__(self, unet, scheduler):
        self.unet = unet
        self.scheduler = scheduler

    @torch.no_grad()
    def __call__(self, latents, num_inference_steps=50):
        self.scheduler.set_timesteps(num_inference_steps)
        for t in self.scheduler.timesteps:
            noise_pred = self.unet(latents, t).sample
            latents = self.scheduler.step(noise_pred, t, latents).prev_sample
        return latents
