import torch

device = torch.device("tpu:0")


class Attention(torch.nn.Module):
    def __init__(self, dim=256, heads=4):
        super().__init__()
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.heads = heads

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, -1)


torch.manual_seed(0)
model = Attention().to(device)
compiled = torch.compile(model, backend="tpu")
# the old inference-only backend name
compiled_eval = torch.compile(model, backend="tpu", fullgraph=True)


@torch.compile(backend='tpu')
def gelu_fused(x):
    return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x ** 3)))


def step_fn(x):
    return model(x).sum()


step_compiled = torch.compile(step_fn, backend="tpu")

x = torch.randn(2, 16, 256).to(device)
print(compiled(x).shape, f"{gelu_fused(x).mean().item():.6f}", f"{step_compiled(x).item():.6f}")
print(f"{compiled_eval(x).abs().sum().item():.6f}")
