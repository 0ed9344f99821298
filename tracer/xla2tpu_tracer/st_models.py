"""sentence-transformers: a SentenceTransformer (Transformer -> Pooling -> Dense -> Normalize) and a
CrossEncoder, each on a tiny random BERT saved to a temporary directory (nothing downloaded).

The backbone's ops are also in the transformers profile of the repository's own model_type; this
profile adds what sentence-transformers runs around it: every pooling mode, Dense, Normalize, and
a standard training loss (MultipleNegativesRankingLoss / BinaryCrossEntropyLoss)."""

from __future__ import annotations

import os
import tempfile

import torch

from .generic import trace_recipe

LIBRARY = "sentence-transformers"
BACKBONE_NOTE = "backbone: transformers BertModel, tiny random config (its ops also come from transformers/<model_type>)"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(59)]
POOLING_MODES = ("mean", "cls", "max", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")


def _tiny_bert_dir(num_labels=None) -> str:
    """A tiny BERT + WordPiece tokenizer saved locally, so the library's own loaders run unchanged."""
    from transformers import BertConfig, BertForSequenceClassification, BertModel, BertTokenizer

    d = tempfile.mkdtemp(prefix="xla2tpu-st-")
    with open(os.path.join(d, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(VOCAB) + "\n")
    BertTokenizer(os.path.join(d, "vocab.txt")).save_pretrained(d)
    cfg = BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=37, max_position_embeddings=64)
    if num_labels is None:
        BertModel(cfg).save_pretrained(d)
    else:
        cfg.num_labels = num_labels
        BertForSequenceClassification(cfg).save_pretrained(d)
    return d


def _texts(n, offset=0):
    return [" ".join(f"w{(i * 7 + j + offset) % 59}" for j in range(3 + i % 4)) for i in range(n)]


def _loss_for(holder, m):
    """The recipe's loss bound to ``m``: `execute` runs a copy of the model on the device, and a
    loss built around the CPU original would run that one instead."""
    loss = holder["loss"]
    return loss if loss.model is m else type(loss)(m)


def _sentence_transformer(path):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer

    holder = {}

    def build():
        tr = Transformer(path, max_seq_length=16)
        dim = 32
        model = SentenceTransformer(modules=[tr, Pooling(dim, "mean"), Dense(dim, 16), Normalize()], device="cpu")
        holder["pools"] = torch.nn.ModuleList(Pooling(dim, m) for m in POOLING_MODES)
        holder["loss"] = MultipleNegativesRankingLoss(model)
        holder["a"] = model.tokenize(_texts(4))
        holder["p"] = model.tokenize(_texts(4, offset=3))
        return model

    def make_call(model):
        def call(m, training):
            feats = dict(holder["a"])
            if not training:
                # encode(): forward, then the pooled embedding (Normalize already applied).
                out = m(feats)
                token = out["token_embeddings"]
                extra = [p({"token_embeddings": token, "attention_mask": feats["attention_mask"]})["sentence_embedding"]
                         for p in holder["pools"]]
                return [out["sentence_embedding"]] + extra
            loss = _loss_for(holder, m)([dict(holder["a"]), dict(holder["p"])], None)
            out = m(dict(holder["a"]))
            extra = sum(p({"token_embeddings": out["token_embeddings"], "attention_mask": feats["attention_mask"]})
                        ["sentence_embedding"].sum() for p in holder["pools"])
            # The extra pooling modes join the backward with weight 0 so their gradients are traced.
            return {"loss": loss + 0.0 * extra}

        return call

    return build, make_call, "SentenceTransformer"


def _cross_encoder(path):
    from sentence_transformers import CrossEncoder
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    holder = {}

    def build():
        model = CrossEncoder(path, num_labels=1, max_length=16, device="cpu", local_files_only=True)
        holder["loss"] = BinaryCrossEntropyLoss(model)
        pairs = list(zip(_texts(4), _texts(4, offset=5)))
        holder["pairs"] = pairs
        holder["labels"] = torch.tensor([1.0, 0.0, 1.0, 0.0])
        return model

    def make_call(model):
        def call(m, training):
            if not training:
                # predict(): tokenize pairs, logits, then the activation (Sigmoid for one label).
                feats = m.tokenize(holder["pairs"]) if hasattr(m, "tokenize") else None
                if feats is None:
                    return torch.tensor(m.predict(holder["pairs"], convert_to_numpy=False))
                logits = m.model(**feats).logits.view(-1)
                return m.activation_fn(logits)
            a, b = zip(*holder["pairs"])
            return {"loss": _loss_for(holder, m)([list(a), list(b)], holder["labels"])}

        return call

    return build, make_call, "CrossEncoder"


RECIPES = {"SentenceTransformer": (_sentence_transformer, None), "CrossEncoder": (_cross_encoder, 1)}


def trace(name: str, deadline: float, **recipe_kw) -> dict:
    recipe, num_labels = RECIPES[name]
    path = _tiny_bert_dir(num_labels)  # written outside the fake/meta environments
    build, make_call, cls = recipe(path)
    # Loading from a saved directory needs real tensors: cpu only.
    res = trace_recipe(build, make_call, deadline, class_name=cls, **{"envs": ("cpu",), **recipe_kw})
    res.setdefault("notes", []).append(BACKBONE_NOTE)
    return res
