#!/usr/bin/env python3
# Greedy decoding with a HF causal LM on a TPU, static shapes, one token per step.
import sys

import torch
import torch_xla.core.xla_model as xm
from transformers import AutoModelForCausalLM, AutoTokenizer


@torch.no_grad()
def generate(model, tokenizer, prompt, max_new_tokens=32):
    device = xm.xla_device()
    ids = tokenizer(prompt, return_tensors="pt").input_ids.to(device)
    for _ in range(max_new_tokens):
        logits = model(ids).logits[:, -1, :]
        next_id = torch.argmax(logits, dim=-1, keepdim=True)
        ids = torch.cat([ids, next_id], dim=-1)
        xm.mark_step()
        if next_id.item() == tokenizer.eos_token_id:
            break
    return tokenizer.decode(ids[0].cpu())


def make_tiny_checkpoint(path):
    """Offline stand-in for a hub model: a 2-layer GPT-2 (seeded random weights) and a word-level tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    words = "<eos> <unk> The capital of France is Paris Rome Berlin a city and the river Seine".split()
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", unk_token="<unk>").save_pretrained(path)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(words), n_positions=64, n_embd=32, n_layer=2, n_head=2, initializer_range=0.5, bos_token_id=0, eos_token_id=0)
    GPT2LMHeadModel(config).save_pretrained(path)
    return path


def main(argv):
    name = argv[1] if len(argv) > 1 else make_tiny_checkpoint("tiny-gpt2")
    tok = AutoTokenizer.from_pretrained(name)
    model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
    model = model.to("xla").eval()
    print(generate(model, tok, "The capital of France is", max_new_tokens=8))  # each new length compiles a new graph on XLA


if __name__ == "__main__":
    main(sys.argv)
