"""Next-token loss of a tiny decoder: shifted logits flattened with .view()."""
import torch
import torch.nn as nn

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
        merged = att.transpose(1, 2).reshape(b, t, DIM)
        return self.out(merged)


def lm_loss(logits, ids):
    shift_logits = logits[:, :-1].reshape(-1, VOCAB)
    shift_labels = ids[:, 1:].reshape(-1)
    return nn.functional.cross_entropy(shift_logits, shift_labels)


def main():
    device = torch.device("tpu:0")
    torch.manual_seed(0)
    model = TinyDecoder().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    ids = torch.randint(0, VOCAB, (3, 6)).to(device)
    for step in range(3):
        optimizer.zero_grad()
        loss = lm_loss(model(ids), ids)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss={loss.item():.6f}")


if __name__ == "__main__":
    main()
