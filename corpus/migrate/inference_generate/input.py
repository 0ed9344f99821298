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


def main(argv):
    name = argv[1] if len(argv) > 1 else "gpt2"
    tok = AutoTokenizer.from_pretrained(name)
    model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
    model = model.to("xla").eval()
    print(generate(model, tok, "The capital of France is"))


if __name__ == "__main__":
    main(sys.argv)
