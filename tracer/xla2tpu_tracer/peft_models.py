"""PEFT: one profile per adapter type (peft.PeftType), each on a tiny random LlamaForCausalLM.

The profile holds the base model's ops too (they are what runs); the Rust side pairs it with the
adapter's own base model profile, so the part that matters here is what the adapter adds (extra
matmuls, Kronecker/Hadamard products, orthogonal rotations, prefix key/values, ...)."""

from __future__ import annotations

import torch

from .generic import trace_recipe

LIBRARY = "peft"
BASE_NOTE = "base: transformers LlamaForCausalLM, tiny random config"
TARGETS_ATTN = ["q_proj", "v_proj"]
PROMPT = dict(num_virtual_tokens=4)

# peft_type (lower case, as in adapter_config.json "peft_type") -> extra config kwargs. Types that
# wrap other adapters (xlora, arrow) or need data to initialise (cartridge, cpt) are attempted with
# what they need and reported when they fail.
EXTRA = {
    "prompt_tuning": PROMPT,
    "multitask_prompt_tuning": dict(PROMPT, num_tasks=2),
    "p_tuning": dict(PROMPT, encoder_hidden_size=32),
    "prefix_tuning": PROMPT,
    "cpt": dict(cpt_token_ids=[1, 2, 3], cpt_mask=[1, 1, 1], cpt_tokens_type_mask=[1, 2, 2]),
    "adaption_prompt": dict(adapter_len=4, adapter_layers=1),
    "adalora": dict(total_step=10, target_modules=TARGETS_ATTN),
    "poly": dict(n_tasks=2, target_modules=TARGETS_ATTN),
    "ln_tuning": dict(target_modules=["input_layernorm"]),
    "trainable_tokens": dict(token_indices=[1, 2]),
    "vera": dict(target_modules=TARGETS_ATTN, r=4),
    "pvera": dict(target_modules=TARGETS_ATTN, r=4),
    "fourierft": dict(target_modules=TARGETS_ATTN, n_frequency=16),
    "vblora": dict(target_modules=TARGETS_ATTN, r=4, num_vectors=8, vector_length=8),
    "boft": dict(target_modules=TARGETS_ATTN, boft_block_size=4),
    "oft": dict(target_modules=TARGETS_ATTN, r=0, oft_block_size=4),
    "cartridge": dict(num_virtual_tokens=4),
    "c3a": dict(target_modules=TARGETS_ATTN, block_size=8),
    "road": dict(target_modules=TARGETS_ATTN, group_size=8),
    "waveft": dict(target_modules=TARGETS_ATTN, n_frequency=64),
    # Hub LoRA adapters are mostly trained with dropout; the default 0.0 would skip it.
    "lora": dict(target_modules=TARGETS_ATTN, r=4, lora_dropout=0.1),
}
# Types whose forward needs the task of each row.
NEEDS_TASK_IDS = {"multitask_prompt_tuning", "poly"}
SKIP = {"xlora": "wraps several trained LoRA adapters loaded from disk", "arrow": "routes between trained LoRA adapters"}


def adapter_types() -> list[str]:
    from peft.utils import PeftType

    return sorted(p.value.lower() for p in PeftType if p.value.lower() not in SKIP)


def _config(kind: str):
    from peft.mapping import PEFT_TYPE_TO_CONFIG_MAPPING

    cls = PEFT_TYPE_TO_CONFIG_MAPPING[kind.upper()]
    kw = dict(task_type="CAUSAL_LM")
    extra = EXTRA.get(kind)
    if extra is None:
        kw.update(target_modules=TARGETS_ATTN, r=4) if "r" in cls.__dataclass_fields__ else kw.update(
            target_modules=TARGETS_ATTN)
    else:
        kw.update(extra)
    kw = {k: v for k, v in kw.items() if k in cls.__dataclass_fields__}
    return cls(**kw)


def trace(kind: str, deadline: float, **recipe_kw) -> dict:
    from peft import get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    holder = {}

    def build():
        torch.manual_seed(0)
        cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
        model = get_peft_model(LlamaForCausalLM(cfg), _config(kind))
        holder["ids"] = torch.randint(3, 60, (2, 8))
        return model

    def make_call(model):
        def call(m, training):
            ids = holder["ids"]
            kw = dict(input_ids=ids, attention_mask=torch.ones_like(ids))
            if kind in NEEDS_TASK_IDS:
                kw["task_ids"] = torch.tensor([0, 1])
            if training:
                kw["labels"] = ids
            return m(**kw)

        return call

    res = trace_recipe(build, make_call, deadline, class_name=f"PeftModelForCausalLM[{kind}]", **recipe_kw)
    if res["status"] in ("ok", "partial"):
        res["notes"].append(BASE_NOTE)
    return res
