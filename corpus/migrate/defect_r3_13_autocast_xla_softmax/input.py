"""Attention pooling and a loss under bf16 autocast on the XLA device."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class AttentionPool(nn.Module):
    def __init__(self, dim=8, classes=3):
        super().__init__()
        self.query = nn.Parameter(torch.randn(dim))
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.head(tokens.mean(dim=1)), tokens @ self.query


def main():
    device = xm.xla_device()
    torch.manual_seed(0)
    model = AttentionPool().to(device)
    tokens = torch.randn(4, 5, 8).to(device)
    labels = torch.tensor([0, 2, 1, 2]).to(device)
    with torch.autocast(device_type="xla", dtype=torch.bfloat16):
        logits, scores = model(tokens)
        weights = F.softmax(scores, dim=-1)
        log_probs = F.log_softmax(logits, dim=-1)
        nll = -log_probs.gather(1, labels[:, None]).mean()
    xm.mark_step()
    print(f"logits {logits.dtype}, weights {weights.dtype}, log_probs {log_probs.dtype}, nll {nll.dtype}")
    print("weights row sums", " ".join(f"{s:.6f}" for s in weights.sum(dim=-1).tolist()))
    print(f"nll={nll.item():.4f} max weight={weights.max().item():.4f}")


if __name__ == "__main__":
    main()
