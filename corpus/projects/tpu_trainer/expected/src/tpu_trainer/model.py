"""A small classifier; nothing device-specific here."""
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, vocab=1000, dim=64, classes=4):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.head(self.embed(tokens))
