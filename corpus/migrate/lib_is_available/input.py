# Pipeline code in the style of diffusers/transformers, where TPU support is optional.
import torch
from transformers.utils import is_torch_xla_available

if is_torch_xla_available():
    import torch_xla.core.xla_model as xm

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

            if XLA_AVAILABLE:
                xm.mark_step()
        return latents


if __name__ == "__main__":
    # A user script: tiny stand-ins for a diffusers UNet and scheduler.
    import types

    import torch_xla.core.xla_model as xm

    class TinyUNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)

        def forward(self, latents, t):
            return types.SimpleNamespace(sample=self.proj(latents) * (t / 10.0))

    class TinyScheduler:
        def set_timesteps(self, n):
            self.timesteps = torch.arange(n, 0, -1).tolist()

        def step(self, noise_pred, t, latents):
            return types.SimpleNamespace(prev_sample=latents - 0.1 * noise_pred)

    device = xm.xla_device()
    torch.manual_seed(0)
    pipe = DenoisePipeline(TinyUNet().to(device), TinyScheduler())
    latents = pipe(torch.randn(2, 8).to(device), num_inference_steps=4)
    print(latents.device, f"{latents.sum().item():.6f}", f"{latents.abs().max().item():.6f}")
