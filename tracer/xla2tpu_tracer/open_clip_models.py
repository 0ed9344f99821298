"""open_clip: one profile per model architecture family of its registry, built from the registry's
own config with the towers shrunk (layers, widths, image and context size), image + text towers,
and the family's contrastive loss (ClipLoss, SigLipLoss, CoCaLoss). Random init, nothing downloaded:
timm towers are created with pretrained=False, Hugging Face text towers from a tiny local config."""

from __future__ import annotations

import copy
import os
import tempfile

import torch

from .generic import trace_recipe

LIBRARY = "open_clip"
B = 4

# family -> (registry model name, smaller timm tower of the same timm module or None)
FAMILIES = {
    "vit": ("ViT-B-32", None),  # CLIP ViT towers: OpenAI/LAION/DataComp/DFN ViT-*, *-quickgelu
    "resnet": ("RN50", None),  # ModifiedResNet image tower
    "convnext": ("convnext_base", "convnext_atto"),
    "coca": ("coca_ViT-B-32", None),
    "hf_text": ("xlm-roberta-base-ViT-B-32", None),  # roberta / xlm-roberta / mt5 / nllb text towers
    "siglip": ("ViT-B-16-SigLIP", "vit_tiny_patch16_224"),
    "eva": ("EVA02-B-16", "eva02_tiny_patch14_224"),
    "mobileclip": ("MobileCLIP-S1", "fastvit_mci0"),
    "vitamin": ("ViTamin-S", "vitamin_small_224"),
    "clipa": ("ViT-L-14-CLIPA", None),
}


def _shrink_tower(cfg: dict, timm_small) -> dict:
    cfg = dict(cfg)
    if "timm_model_name" in cfg:
        if timm_small:
            cfg["timm_model_name"] = timm_small
        cfg["timm_model_pretrained"] = False
        return cfg
    if "hf_model_name" in cfg:
        return cfg
    if isinstance(cfg.get("layers"), (list, tuple)):  # ModifiedResNet
        cfg["layers"] = [1] * len(cfg["layers"])
        cfg["width"] = 32
    elif "layers" in cfg:
        cfg["layers"] = 2
    if "width" in cfg and not isinstance(cfg.get("layers"), list):
        cfg["width"] = 64
    if "heads" in cfg:
        cfg["heads"] = 2
    if "head_width" in cfg:
        cfg["head_width"] = 32
    if "attn_pooler_heads" in cfg:
        cfg["attn_pooler_heads"] = 2
    if "context_length" in cfg:
        cfg["context_length"] = 12
    if "vocab_size" in cfg:
        cfg["vocab_size"] = 500
    return cfg


def _tiny_hf_text_dir(name: str) -> str:
    """A local tiny config for open_clip's HFTextEncoder (AutoConfig.from_pretrained(dir))."""
    from transformers import AutoConfig

    kind = "xlm-roberta" if "xlm-roberta" in name else "roberta"
    cfg = AutoConfig.for_model(kind, vocab_size=500, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=37, max_position_embeddings=64)
    d = tempfile.mkdtemp(prefix="xla2tpu-oc-")
    cfg.save_pretrained(d)
    return d


def _config(family: str):
    import open_clip

    name, timm_small = FAMILIES[family]
    cfg = copy.deepcopy(open_clip.get_model_config(name))
    is_timm = "timm_model_name" in cfg["vision_cfg"]
    cfg["embed_dim"] = 64  # = tower widths (CoCa feeds image tokens of this size to its decoder)
    cfg["vision_cfg"] = _shrink_tower(cfg["vision_cfg"], timm_small)
    # timm towers keep their own default resolution constraints; ViT/ResNet towers take 32/64 px.
    side = 64 if not is_timm else cfg["vision_cfg"].get("image_size", 224)
    if family == "mobileclip":
        side = 64
    if not is_timm:
        cfg["vision_cfg"]["image_size"] = side
        if cfg["vision_cfg"].get("patch_size"):
            cfg["vision_cfg"]["patch_size"] = 16
    else:
        cfg["vision_cfg"]["image_size"] = side
    cfg["text_cfg"] = _shrink_tower(cfg["text_cfg"], None)
    if cfg["vision_cfg"].get("timm_proj", "") in ("none", None) and family == "siglip":
        cfg["embed_dim"] = 192  # no image projection: the embedding is the timm tower's width (vit_tiny)
    if "hf_model_name" in cfg["text_cfg"]:
        cfg["text_cfg"]["hf_model_name"] = _tiny_hf_text_dir(cfg["text_cfg"]["hf_model_name"])
        cfg["text_cfg"]["hf_model_pretrained"] = False
        cfg["text_cfg"]["context_length"] = 12
        cfg["text_cfg"]["vocab_size"] = 500
    if "multimodal_cfg" in cfg:
        cfg["multimodal_cfg"] = _shrink_tower(cfg["multimodal_cfg"], None)
    return name, cfg, side


def trace(family: str, deadline: float, **recipe_kw) -> dict:
    import open_clip
    from open_clip import loss as oc_loss

    name, cfg, side = _config(family)  # temp files outside the fake/meta environments
    holder = {}

    def build():
        cfg2 = copy.deepcopy(cfg)
        is_coca = "multimodal_cfg" in cfg2
        if not is_coca:  # CoCa always returns a dict
            cfg2["output_dict"] = True
        custom = cfg2.pop("custom_text", False) or "hf_model_name" in cfg2["text_cfg"]
        if is_coca:
            model = open_clip.CoCa(**cfg2)
        elif custom:
            model = open_clip.CustomTextCLIP(**cfg2)
        else:
            model = open_clip.CLIP(**cfg2)
        ctx = cfg2["text_cfg"].get("context_length", 12)
        vocab = cfg2["text_cfg"].get("vocab_size", 500)
        holder["image"] = torch.randn(B, 3, side, side)
        holder["text"] = torch.randint(1, vocab - 1, (B, ctx))
        if family == "siglip" or "init_logit_bias" in cfg2:
            holder["loss"] = oc_loss.SigLipLoss()
        elif is_coca:
            holder["loss"] = oc_loss.CoCaLoss(caption_loss_weight=1.0, clip_loss_weight=1.0, pad_id=0)
        else:
            holder["loss"] = oc_loss.ClipLoss()
        return model

    def make_call(model):
        def call(m, training):
            out = m(holder["image"], holder["text"])
            if not training:
                return out
            lf = holder["loss"]
            if isinstance(lf, oc_loss.CoCaLoss):
                return {"loss": sum(lf(out["image_features"], out["text_features"], out["logits"], out["labels"],
                                       out["logit_scale"], output_dict=False))}
            args = [out["image_features"], out["text_features"], out["logit_scale"]]
            if isinstance(lf, oc_loss.SigLipLoss):
                args.append(out["logit_bias"])
            return {"loss": lf(*args)}

        return call

    res = trace_recipe(build, make_call, deadline, class_name=name, **recipe_kw)
    if res["status"] in ("ok", "partial"):
        res["notes"].append(f"registry model {name}, towers shrunk (random init)")
    return res
