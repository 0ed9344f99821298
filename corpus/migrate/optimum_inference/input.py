# Serve a Gemma model with optimum-tpu: static KV cache, manual prefill + decode loop.
import os

import torch
import torch_xla.core.xla_model as xm
from optimum.tpu import AutoModelForCausalLM
from transformers import AutoTokenizer, StaticCache

os.environ.setdefault("PJRT_DEVICE", "TPU")


def make_tiny_checkpoint(path):
    """Offline stand-in for google/gemma-2b: a 2-layer Gemma (seeded random weights) and a word-level tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GemmaConfig, GemmaForCausalLM, PreTrainedTokenizerFast

    words = "<pad> <eos> <bos> <unk> Here ' s a recipe for banana bread : The three laws of robotics are one two".split()
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>", unk_token="<unk>").save_pretrained(path)
    torch.manual_seed(0)
    config = GemmaConfig(vocab_size=len(words), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=1, head_dim=16, initializer_range=0.5, pad_token_id=0, eos_token_id=1, bos_token_id=2)
    GemmaForCausalLM(config).save_pretrained(path)


MODEL_ID = os.environ.get("MODEL_ID", "tiny-gemma")
if MODEL_ID == "tiny-gemma":
    make_tiny_checkpoint(MODEL_ID)

tokenizer = AutoTokenizer.from_pretrained(MODEL_ID)
model = AutoModelForCausalLM.from_pretrained(MODEL_ID)
device = model.device

prompts = ["Here's a recipe for banana bread:", "The three laws of robotics are"]
inputs = tokenizer(prompts, return_tensors="pt", padding=True).to(device)
batch_size, seq_len = inputs.input_ids.shape
max_cache_len = seq_len + 64

cache = StaticCache(config=model.config, max_batch_size=batch_size, max_cache_len=max_cache_len, device=device, dtype=model.dtype)
cache_position = torch.arange(seq_len, device=device)

with torch.no_grad():
    logits = model(**inputs, cache_position=cache_position, past_key_values=cache, return_dict=False, use_cache=True)[0]
    next_token = torch.argmax(logits[:, -1], dim=-1)[:, None]
    xm.mark_step()
    generated = [next_token]
    pos = torch.tensor([seq_len], device=device)
    for _ in range(63):
        logits = model(next_token, position_ids=pos.expand(batch_size, 1), cache_position=pos, past_key_values=cache, return_dict=False, use_cache=True)[0]
        next_token = torch.argmax(logits[:, -1], dim=-1)[:, None]
        generated.append(next_token)
        pos += 1
        xm.mark_step()

out = torch.cat(generated, dim=-1).cpu()
for p, g in zip(prompts, tokenizer.batch_decode(out, skip_special_tokens=True)):
    print(p, g)
