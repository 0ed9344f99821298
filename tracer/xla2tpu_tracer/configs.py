"""Shrink a transformers config to a small one that keeps every layer kind.

Two variants:
- ``tiny``: <=2 layers per stack (more if a layer-kind pattern needs it), <=4 attention
  heads at the default head_dim, small MLPs, <=4 experts, small images/audio.
- ``layers``: only depth and experts are shrunk; widths stay at the defaults (for
  architectures whose width invariants the generic shrinker cannot keep).
"""

from __future__ import annotations

import copy
import math

MAX_LAYERS = 2
MAX_PATTERN_LAYERS = 6
MAX_EXPERTS = 4
MAX_HEADS = 4

LAYER_KEYS = (
    "num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
    "decoder_layers", "num_encoder_layers", "num_decoder_layers", "text_layers",
    "vision_layers", "num_text_layers", "num_vision_layers", "num_cross_layers",
    "num_x_layers", "num_qformer_layers", "depth", "num_attention_layers",
    "prediction_layers", "num_blocks", "mm_layers", "n_layers_per_block",
    "num_global_layers", "num_local_layers", "num_mtp_layers",
)
EXPERT_KEYS = (
    "num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts",
    "num_routed_experts", "n_experts", "num_experts_total",
)
TOPK_KEYS = ("num_experts_per_tok", "moe_topk", "top_k", "num_selected_experts", "moe_k", "router_topk")
SHARED_EXPERT_KEYS = ("n_shared_experts", "num_shared_experts", "moe_num_shared_experts")
HEAD_KEYS = ("num_attention_heads", "n_head", "n_heads", "num_heads", "encoder_attention_heads",
             "decoder_attention_heads", "num_attention_heads_text")
KV_KEYS = ("num_key_value_heads", "n_kv_heads", "num_kv_heads")
INTER_KEYS = ("intermediate_size", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "n_inner",
              "moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size",
              "ffn_hidden_size", "decoder_intermediate_size")
IMAGE_KEYS = ("image_size",)


def _is_config(obj) -> bool:
    return hasattr(obj, "to_dict") and hasattr(obj, "model_type") and not isinstance(obj, type)


def sub_configs(cfg):
    """(attribute name, sub-config) pairs of a composite config."""
    out = []
    for k, v in list(vars(cfg).items()):
        if k.startswith("_"):
            continue
        if _is_config(v):
            out.append((k, v))
    return out


def _get(cfg, key):
    try:
        return getattr(cfg, key)
    except Exception:  # noqa: BLE001
        return None


def _set(cfg, key, value) -> None:
    try:
        setattr(cfg, key, value)
    except Exception:  # noqa: BLE001
        pass


def _dedupe_pattern(seq):
    """Keep the first occurrence of each distinct kind, in order, at least 2 entries."""
    seen, out = set(), []
    for x in seq:
        key = repr(x)
        if key not in seen:
            seen.add(key)
            out.append(x)
    while len(out) < min(2, len(seq)):
        out.append(seq[len(out)])
    return out


def _shrink_layers(cfg) -> None:
    n_target = None
    lt = _get(cfg, "layer_types")
    if isinstance(lt, (list, tuple)) and lt:
        new = _dedupe_pattern(list(lt))
        _set(cfg, "layer_types", new)
        n_target = len(new)
    pat = _get(cfg, "hybrid_override_pattern")
    if isinstance(pat, str) and pat:
        new = "".join(_dedupe_pattern(list(pat)))
        _set(cfg, "hybrid_override_pattern", new)
        n_target = len(new)
    for key in ("block_types", "layers_block_type", "mlp_layer_types", "attn_type_list", "layer_block_types"):
        v = _get(cfg, key)
        if isinstance(v, (list, tuple)) and v and n_target is None:
            new = _dedupe_pattern(list(v))
            _set(cfg, key, new)
            n_target = len(new)
    need = MAX_LAYERS
    # period/offset rules (jamba-style): make sure each kind occurs.
    for per, off in (("attn_layer_period", "attn_layer_offset"), ("expert_layer_period", "expert_layer_offset")):
        p, o = _get(cfg, per), _get(cfg, off)
        if isinstance(p, int) and isinstance(o, int):
            need = max(need, o + 1, min(p, MAX_PATTERN_LAYERS))
    for key in ("full_attention_interval", "global_attn_every_n_layers", "sliding_window_pattern",
                "interleave_moe_layer_step", "moe_layer_freq", "decoder_sparse_step",
                "cross_attention_frequency", "no_rope_layer_interval", "attention_chunk_pattern"):
        v = _get(cfg, key)
        if isinstance(v, int) and 1 < v <= MAX_PATTERN_LAYERS:
            need = max(need, v)
    if isinstance(_get(cfg, "num_kv_shared_layers"), int) and _get(cfg, "num_kv_shared_layers") > 0:
        # gemma-3n/4: the last N layers reuse earlier layers' KV; with a 2-layer stack the
        # producer/consumer layer-type sets no longer match. Shared KV only skips k/v projections.
        _set(cfg, "num_kv_shared_layers", 0)
    fk = _get(cfg, "first_k_dense_replace")
    if isinstance(fk, int) and fk > 1:
        _set(cfg, "first_k_dense_replace", 1)
    for key in ("mlp_only_layers",):
        if isinstance(_get(cfg, key), (list, tuple)):
            _set(cfg, key, [])
    stage_lens = {len(x) for k in ("depths", "hidden_sizes", "embed_dims", "stage_names", "out_features")
                  if isinstance((x := _get(cfg, k)), (list, tuple))}
    for key in LAYER_KEYS:
        v = _get(cfg, key)
        if isinstance(v, int) and v in stage_lens:
            continue  # a stage count aliased to a layer count (convnext num_stages)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            if key == "num_hidden_layers" and n_target is not None:
                _set(cfg, key, n_target)
            else:
                _set(cfg, key, min(v, need))
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, int) for x in v) and key == "depth":
            pass
    depths = _get(cfg, "depths")
    if isinstance(depths, (list, tuple)) and depths and all(isinstance(d, int) for d in depths):
        _set(cfg, "depths", [min(d, 2) for d in depths])
    n = _get(cfg, "num_hidden_layers")
    if isinstance(n, int):
        for key in ("attn_layer_indices", "moe_layers", "sparse_layers", "global_attn_layers",
                    "full_attn_idxs", "swa_layers", "cross_attention_layers", "kv_lora_layers"):
            v = _get(cfg, key)
            if isinstance(v, (list, tuple)) and v and all(isinstance(x, int) for x in v):
                kept = [x for x in v if x < n] or [n - 1]
                _set(cfg, key, kept)


def _fill_none(cfg) -> None:
    """Defaults left as None that the model needs (checkpoints always set them)."""
    attrs = vars(cfg)
    if "vocab_size" in attrs and attrs["vocab_size"] is None:
        _set(cfg, "vocab_size", 128)
        if "pad_token_id" in attrs and attrs["pad_token_id"] is None:
            _set(cfg, "pad_token_id", 1)  # esm: position ids are derived from padding
    has_moe = any(isinstance(attrs.get(k), int) for k in EXPERT_KEYS)
    for k in EXPERT_KEYS:
        if k in attrs and attrs[k] is None:
            _set(cfg, k, MAX_EXPERTS)
            has_moe = True
    if has_moe:
        for k in TOPK_KEYS:
            if k in attrs and attrs[k] is None:
                _set(cfg, k, 2)
        for k in SHARED_EXPERT_KEYS:
            if k in attrs and attrs[k] is None:
                _set(cfg, k, 1)
        if "moe_intermediate_size" in attrs and attrs["moe_intermediate_size"] is None:
            _set(cfg, "moe_intermediate_size", _get(cfg, "intermediate_size"))


def _fill_derived(cfg) -> None:
    """head_dim / num_key_value_heads left as None mean 'derive from the rest'; some
    models do not derive them themselves."""
    attrs = vars(cfg)
    heads = next((attrs[k] for k in HEAD_KEYS if isinstance(attrs.get(k), int)), None)
    hidden = attrs.get("hidden_size")
    if "head_dim" in attrs and attrs["head_dim"] is None and isinstance(heads, int) and isinstance(hidden, int) \
            and heads and hidden % heads == 0:
        _set(cfg, "head_dim", hidden // heads)
    for k in KV_KEYS:
        if k in attrs and attrs[k] is None and isinstance(heads, int):
            _set(cfg, k, heads)


def _clamp_out_indices(cfg, old_n) -> None:
    """Backbone/neck layer indices (dpt backbone_out_indices) must exist after the shrink;
    if clamping would merge indices, keep enough layers instead."""
    n = _get(cfg, "num_hidden_layers")
    if not isinstance(n, int) or not isinstance(old_n, int) or n >= old_n:
        return
    for key in ("backbone_out_indices", "out_indices", "intermediate_layers_indices", "vision_feature_layers"):
        v = _get(cfg, key)
        if isinstance(v, (list, tuple)) and v and all(isinstance(i, int) for i in v):
            new = [i if i < 0 else min(i, n) for i in v]
            if len(set(new)) < len(set(v)):
                # keep distinct indices: re-space them over a small stack
                k = len(v)
                _set(cfg, "num_hidden_layers", min(old_n, max(n, k)))
                n = _get(cfg, "num_hidden_layers")
                new = [i if i < 0 else (j + 1 if n >= k else min(i, n)) for j, i in enumerate(v)]
                new = [min(i, n) for i in new]
            _set(cfg, key, new)
    for key in ("vision_feature_layer",):
        v = _get(cfg, key)
        if isinstance(v, int) and v >= n:
            _set(cfg, key, -1)


def _shrink_experts(cfg) -> None:
    n_exp = None
    for key in EXPERT_KEYS:
        v = _get(cfg, key)
        if isinstance(v, int) and not isinstance(v, bool) and v > MAX_EXPERTS:
            _set(cfg, key, MAX_EXPERTS)
            n_exp = MAX_EXPERTS
        elif isinstance(v, int) and v > 0:
            n_exp = v if n_exp is None else n_exp
    if n_exp:
        for key in TOPK_KEYS:
            v = _get(cfg, key)
            if isinstance(v, int) and not isinstance(v, bool) and v > 2:
                _set(cfg, key, min(v, 2, n_exp))
        g = _get(cfg, "n_group")
        if isinstance(g, int) and g > 1:
            _set(cfg, "n_group", 2)
            tg = _get(cfg, "topk_group")
            if isinstance(tg, int):
                _set(cfg, "topk_group", 1)
        for key in SHARED_EXPERT_KEYS:
            v = _get(cfg, key)
            if isinstance(v, int) and v > 1:
                _set(cfg, key, 1)


def _shrink_widths(cfg, changed: dict) -> None:
    before = _get(cfg, "hidden_size")
    _shrink_widths_inner(cfg)
    after = _get(cfg, "hidden_size")
    if isinstance(before, int) and isinstance(after, int) and before != after:
        changed.setdefault(before, after)


_WIDTH_SUFFIXES = ("hidden_size", "hidden_dim", "_dim", "embed_dim", "d_model", "hidden_sizes_out")


def _align_vision_to_text(cfg) -> None:
    """VLM vision towers whose output projects into the text stack (qwen-vl style
    ``out_hidden_size``, or ``hidden_size`` next to an ``embed_dim``) must output the
    text hidden size; the config-class defaults do not always agree."""
    text = _get(cfg, "text_config")
    th = _get(text, "hidden_size") if text is not None else None
    if not isinstance(th, int):
        return
    for k, sub in sub_configs(cfg):
        if sub is text:
            continue
        if isinstance(_get(sub, "out_hidden_size"), int):
            _set(sub, "out_hidden_size", th)
        elif isinstance(_get(sub, "embed_dim"), int) and isinstance(_get(sub, "hidden_size"), int) \
                and "vision" in k:
            _set(sub, "hidden_size", th)


def _propagate_widths(cfg, changed: dict) -> None:
    """Attributes that mirror another stack's width (vision out_hidden_size = text
    hidden_size, projector dims) follow the shrink."""
    for k, v in list(vars(cfg).items()):
        if k.startswith("_") or not isinstance(v, int) or isinstance(v, bool) or v not in changed:
            continue
        if k.endswith(_WIDTH_SUFFIXES) and k not in ("head_dim",):
            _set(cfg, k, changed[v])


def _shrink_widths_inner(cfg) -> None:
    heads_key = next((k for k in HEAD_KEYS if isinstance(_get(cfg, k), int)), None)
    hidden = _get(cfg, "hidden_size")
    if heads_key and isinstance(hidden, int):
        heads = _get(cfg, heads_key)
        if heads and heads > MAX_HEADS:
            explicit_hd = _get(cfg, "head_dim")
            head_dim = explicit_hd if isinstance(explicit_hd, int) and explicit_hd > 0 else (
                hidden // heads if hidden % heads == 0 else None)
            if not head_dim:
                # inconsistent defaults (hidden not divisible by heads): pick heads that divide
                new_heads = next(h for h in (MAX_HEADS, 2, 1) if hidden % h == 0)
                for k in HEAD_KEYS:
                    if _get(cfg, k) == heads:
                        _set(cfg, k, new_heads)
                for k in KV_KEYS:
                    kv = _get(cfg, k)
                    if isinstance(kv, int) and kv > 0:
                        _set(cfg, k, new_heads if kv >= heads else 1)
            if head_dim:
                new_heads = MAX_HEADS
                for k in HEAD_KEYS:
                    if isinstance(_get(cfg, k), int) and _get(cfg, k) == heads:
                        _set(cfg, k, new_heads)
                for k in KV_KEYS:
                    kv = _get(cfg, k)
                    if isinstance(kv, int) and kv > 0:
                        _set(cfg, k, new_heads if kv >= heads else max(1, min(kv, new_heads // 2)))
                new_hidden = new_heads * head_dim
                if not (isinstance(explicit_hd, int) and explicit_hd > 0):
                    _set(cfg, "hidden_size", new_hidden)
                else:
                    _set(cfg, "hidden_size", min(hidden, max(new_hidden, 64)))
                for k in ("d_model", "n_embd", "embed_dim", "dim"):
                    if _get(cfg, k) == hidden:
                        _set(cfg, k, _get(cfg, "hidden_size"))
    hidden = _get(cfg, "hidden_size")
    for k in INTER_KEYS:
        v = _get(cfg, k)
        if isinstance(v, int) and not isinstance(v, bool) and isinstance(hidden, int) and v > 2 * hidden:
            _set(cfg, k, 2 * hidden)
    for k in ("intermediate_size", "moe_intermediate_size"):
        v = _get(cfg, k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 2048 and not isinstance(hidden, int):
            _set(cfg, k, 256)
    # Image resolution: only plain patch-based encoders (no windows / multi-stage dims).
    img, patch = _get(cfg, "image_size"), _get(cfg, "patch_size")
    windowed = any(_get(cfg, k) is not None for k in ("window_size", "depths", "hidden_sizes",
                                                       "window_block_indexes", "global_attn_indexes"))
    if isinstance(img, int) and isinstance(patch, int) and patch > 0 and not windowed and img > 8 * patch:
        _set(cfg, "image_size", 8 * patch if 8 * patch >= 32 else img)
    elif isinstance(img, int) and img > 256 and not isinstance(patch, int):
        # convolutional towers (efficientnet in align): resolution does not change the op set
        _set(cfg, "image_size", 128)
    # time series: these must be set for the model to build
    if _get(cfg, "lags_sequence") is not None:
        if _get(cfg, "prediction_length") is None:
            _set(cfg, "prediction_length", 4)
        if not _get(cfg, "num_time_features"):
            _set(cfg, "num_time_features", 1)


def _fix_mamba_heads(c) -> None:
    """Hybrid mamba configs (bamba) fix mamba_n_heads * mamba_d_head = mamba_expand * hidden:
    after the hidden size shrinks, shrink the head dim with it."""
    heads, d_head, expand, hidden = (_get(c, k) for k in ("mamba_n_heads", "mamba_d_head", "mamba_expand", "hidden_size"))
    if all(isinstance(v, int) and v > 0 for v in (heads, d_head, expand, hidden)) and heads * d_head != expand * hidden:
        if (expand * hidden) % heads == 0 and expand * hidden // heads >= 1:
            _set(c, "mamba_d_head", expand * hidden // heads)


def _walk(cfg, fn, seen) -> None:
    if id(cfg) in seen:
        return
    seen.add(id(cfg))
    fn(cfg)
    for _, sub in sub_configs(cfg):
        _walk(sub, fn, seen)


def no_layerdrop(cfg) -> None:
    """LayerDrop skips each layer at random in training (``rand() < layerdrop``): with two
    layers left, a trace could train none of them and miss their backward ops (parakeet_rnnt
    did). Training is traced with every layer; the ops do not depend on the probability."""
    for key, value in list(vars(cfg).items()):
        if "layerdrop" in key and isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            setattr(cfg, key, 0.0)
        elif key.endswith("config") and hasattr(value, "to_dict") and hasattr(value, "__dict__"):
            no_layerdrop(value)


def shrink(cfg, variant: str):
    """A shrunk deep copy of ``cfg``; variant is 'tiny', 'layers' or 'default'."""
    original = cfg
    cfg = copy.deepcopy(cfg)
    no_layerdrop(cfg)
    if variant == "default":
        return cfg

    changed: dict = {}

    def apply(c):
        _fill_none(c)
        old_n = _get(c, "num_hidden_layers")
        _shrink_layers(c)
        _clamp_out_indices(c, old_n)
        _shrink_experts(c)
        if variant == "tiny":
            _shrink_widths(c, changed)
            _fix_mamba_heads(c)
        if "top_k_experts" in vars(c) and _get(c, "top_k_experts") is None:
            # diffusion_gemma's default config leaves its MoE block unsized (None)
            _set(c, "top_k_experts", 2)
            if _get(c, "num_experts") is None:
                _set(c, "num_experts", MAX_EXPERTS)
            if _get(c, "moe_intermediate_size") is None:
                _set(c, "moe_intermediate_size", _get(c, "intermediate_size"))
        _set(c, "use_cache", False)
        nq = _get(c, "num_queries")
        if isinstance(nq, int) and nq > 16:
            # DETR-style top-k over encoder tokens: a small image has fewer than 300 tokens
            # (both variants: `layers` keeps widths but feeds the same small image)
            _set(c, "num_queries", 16)
        for k, v in list(vars(c).items()):
            # hash / n-gram embedding tables (blt) do not change the op set
            if "hash" in k and "vocab" in k and isinstance(v, int) and v > 4096:
                _set(c, k, 4096)

    _walk(cfg, apply, set())
    _walk(cfg, _fill_derived, set())
    if variant == "tiny":
        shrink_vocab(cfg)
        vis = _get(cfg, "vision_config")
        if _get(cfg, "mm_tokens_per_image") is not None and vis is not None:
            # gemma3: the image is pooled to a fixed token count; keep the resolution
            _set(vis, "image_size", _get(original.vision_config, "image_size"))
    _align_vision_to_text(cfg)
    if changed:
        _walk(cfg, lambda c: _propagate_widths(c, changed), set())
    return cfg


def fix_query_image_token(cfg) -> None:
    """BLIP-2 style models place `num_query_tokens` image tokens in input_ids, but the default
    config has image_token_id None (the checkpoint's tokenizer adds it): give it the id just
    past the text vocab (fix_vocab then grows the vocab to cover it)."""
    text = _get(cfg, "text_config")
    if not (_get(cfg, "num_query_tokens") and text is not None and isinstance(_get(text, "vocab_size"), int)):
        return
    for key in ("image_token_id", "image_token_index"):
        if key in vars(cfg) and _get(cfg, key) is None:
            _set(cfg, key, _get(text, "vocab_size"))


def fix_vocab(cfg, special_ids) -> None:
    """Checkpoints often add special tokens past the config's default vocab_size
    (e.g. llava's image token 32000 with vocab 32000): grow the vocab to cover them."""
    ids = [i for i in special_ids if isinstance(i, int) and 0 <= i < 2_000_000]
    if not ids:
        return
    need = max(ids) + 1

    def grow(c):
        v = _get(c, "vocab_size")
        if isinstance(v, int) and 0 < v < need and need - v < 100_000:
            _set(c, "vocab_size", need)

    _walk(cfg, grow, set())


BIG_VOCAB = 100_000
SMALL_VOCAB = 8192


def _token_id_attrs(c):
    for k, v in list(vars(c).items()):
        if ("token_id" in k or "token_index" in k) and not k.startswith("_"):
            yield k, v


def shrink_vocab(cfg) -> None:
    """Vocabularies over BIG_VOCAB (gemma 262k, qwen 152k; gemma-3n/4 also per-layer
    embeddings) dominate memory without changing the op set: cut them to SMALL_VOCAB and
    move special token ids that fall outside into the top of the new range, consistently
    across sub-configs (top-level image_token_id and text_config's stay equal)."""
    cfgs = []
    _walk(cfg, cfgs.append, set())
    if not any(isinstance(_get(c, "vocab_size"), int) and _get(c, "vocab_size") > BIG_VOCAB for c in cfgs):
        return
    ids = set()
    for c in cfgs:
        for _, v in _token_id_attrs(c):
            if isinstance(v, int) and not isinstance(v, bool):
                ids.add(v)
            elif isinstance(v, (list, tuple)):
                ids.update(x for x in v if isinstance(x, int))
    high = sorted(i for i in ids if i >= SMALL_VOCAB - 512)
    remap = {old: SMALL_VOCAB - 1 - n for n, old in enumerate(high)}
    for c in cfgs:
        for key in ("vocab_size", "vocab_size_per_layer_input"):
            v = _get(c, key)
            if isinstance(v, int) and v > BIG_VOCAB:
                _set(c, key, SMALL_VOCAB)
        for k, v in _token_id_attrs(c):
            if isinstance(v, int) and v in remap:
                _set(c, k, remap[v])
            elif isinstance(v, (list, tuple)) and any(x in remap for x in v if isinstance(x, int)):
                _set(c, k, type(v)(remap.get(x, x) for x in v))


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


__all__ = ["shrink", "sub_configs", "n_params", "math"]
