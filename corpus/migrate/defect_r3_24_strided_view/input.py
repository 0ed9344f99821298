"""Next-token loss of a tiny decoder: shifted logits flattened with .view()."""
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

VOCAB, DIM, HEADS = 11, 8, 2


class TinyDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.out = nn.Linear(DIM, VOCAB)

    def forward(self, ids):
        b, t = ids.shape
        q, k, v = self.qkv(self.embed(ids)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, HEADS, DIM // HEADS).transpose(1, 2) for z in (q, k, v))
        att = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        # (batch, heads, tokens, head_dim) -> (batch, tokens, dim)
        merged = att.transpose(1, 2).view(b, t, DIM)
        return self.out(merged)


def lm_loss(logits, ids):
    shift_logits = logits[:, :-1].view(-1, VOCAB)
    shift_labels = ids[:, 1:].view(-1)
    return nn.functional.cross_entropy(shift_logits, shift_labels)


def main():
    device = xm.xla_device()
    torch.manual_seed(0)
    model = TinyDecoder().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    ids = torch.randint(0, VOCAB, (3, 6)).to(device)
    for step in range(3):
        optimizer.zero_grad()
        loss = lm_loss(model(ids), ids)
        loss.backward()
        optimizer.step()
        xm.mark_step()
        print(f"step {step} loss={loss.item():.6f}")


if __name__ == "__main__":
    main()
