"""Input builders for transformers models, keyed by the forward signature."""

from __future__ import annotations

import inspect

import torch

BATCH = 2
SEQ = 16


class NoInputBuilder(RuntimeError):
    pass


def _cfg_get(cfg, *keys, default=None):
    for c in (cfg, _text_cfg(cfg)):
        if c is None:
            continue
        for k in keys:
            v = getattr(c, k, None)
            if v is not None:
                return v
    return default


def _text_cfg(cfg):
    try:
        t = cfg.get_text_config()
        return t if t is not cfg else None
    except Exception:  # noqa: BLE001
        return getattr(cfg, "text_config", None)


def _vision_cfg(cfg):
    for k in ("vision_config", "visual", "vision_encoder_config", "image_config", "vit_config"):
        v = getattr(cfg, k, None)
        if v is not None and hasattr(v, "to_dict"):
            return v
    return cfg


def special_token_ids(cfg) -> set[int]:
    ids = set()
    for c in (cfg, _text_cfg(cfg)):
        if c is None:
            continue
        for k, v in vars(c).items():
            if ("token_id" in k or "token_index" in k) and isinstance(v, int):
                ids.add(v)
            if ("token_id" in k) and isinstance(v, (list, tuple)):
                ids.update(x for x in v if isinstance(x, int))
    return ids


def has_image_token(cfg) -> bool:
    for c in (cfg, _text_cfg(cfg)):
        if c is None:
            continue
        for k in ("image_token_id", "image_token_index", "img_token_id", "image_pad_token_id"):
            if isinstance(getattr(c, k, None), int):
                return True
    return False


def vocab_size(cfg) -> int:
    v = _cfg_get(cfg, "vocab_size", "text_vocab_size", "n_vocab", default=None)
    return int(v) if isinstance(v, int) and v > 0 else 100


def text_ids(cfg, length=SEQ, batch=BATCH):
    vocab = vocab_size(cfg)
    specials = special_token_ids(cfg)
    allowed = [i for i in range(3, min(vocab, 300)) if i not in specials] or [0]
    idx = torch.randint(0, len(allowed), (batch, length))
    table = torch.tensor(allowed, dtype=torch.long)
    return table[idx]


def image_size(cfg) -> tuple[int, int]:
    v = _vision_cfg(cfg)
    s = getattr(v, "image_size", None) or getattr(cfg, "image_size", None) or 64
    if isinstance(s, dict):
        s = (s.get("height", 64), s.get("width", 64))
    if isinstance(s, (list, tuple)):
        return int(s[0]), int(s[-1])
    return int(s), int(s)


def num_channels(cfg) -> int:
    v = _vision_cfg(cfg)
    return int(getattr(v, "num_channels", None) or getattr(cfg, "num_channels", None) or 3)


def pixel_values(cfg, batch=BATCH):
    h, w = image_size(cfg)
    return torch.randn(batch, num_channels(cfg), h, w)


def video_values(cfg, batch=BATCH):
    v = _vision_cfg(cfg)
    frames = getattr(v, "num_frames", None) or getattr(cfg, "num_frames", None) or 4
    h, w = image_size(cfg)
    return torch.randn(batch, int(frames), num_channels(cfg), h, w)


def audio_features(cfg, batch=BATCH):
    """Spectrogram-like input_features."""
    a = getattr(cfg, "audio_config", None) or getattr(cfg, "encoder_config", None) or cfg
    mel = (getattr(a, "num_mel_bins", None) or getattr(cfg, "num_mel_bins", None))
    src = getattr(a, "max_source_positions", None) or getattr(cfg, "max_source_positions", None)
    if mel and src:
        # whisper-style: (batch, mel, frames), conv stride 2 -> max_source_positions
        return torch.randn(batch, int(mel), 2 * int(src))
    per_ch = getattr(a, "input_feat_per_channel", None)
    if per_ch:
        ch = getattr(a, "input_channels", 1) or 1
        return torch.randn(batch, 64, int(per_ch) * int(ch))
    feat = getattr(a, "feature_size", None) or mel or 80
    return torch.randn(batch, 64, int(feat))


def audio_values(cfg, batch=BATCH):
    return torch.randn(batch, 8000)


def generic_inputs(model, cfg, head_kind: str, with_labels: bool):
    """kwargs from the forward signature and the config alone."""
    params = inspect.signature(model.forward).parameters
    main = getattr(model, "main_input_name", "input_ids")
    kw = {}
    ids = None
    if main == "input_ids" or ("input_ids" in params and main not in params):
        ids = text_ids(cfg)
        kw["input_ids"] = ids
        if "attention_mask" in params:
            kw["attention_mask"] = torch.ones_like(ids)
    elif main == "pixel_values" and head_kind == "keypoint_matching":
        pv = pixel_values(cfg)
        kw["pixel_values"] = torch.stack([pv, pv], dim=1)  # (batch, 2 images, C, H, W)
    elif main == "pixel_values":
        kw["pixel_values"] = pixel_values(cfg)
    elif main in ("pixel_values_videos", "video", "videos"):
        kw[main] = video_values(cfg)
    elif main == "input_features":
        kw["input_features"] = audio_features(cfg)
    elif main == "input_values" and getattr(cfg, "num_mel_bins", None) and getattr(cfg, "max_length", None):
        # AST-style spectrogram patches: (batch, frames, mel)
        kw["input_values"] = torch.randn(BATCH, int(cfg.max_length), int(cfg.num_mel_bins))
    elif main in ("input_values", "audio_values", "waveform"):
        kw[main] = audio_values(cfg)
        ch = getattr(cfg, "audio_channels", None)
        if ch is not None or getattr(cfg, "codebook_size", None) is not None:
            # neural audio codecs (encodec, mimi, dac): (batch, channels, samples)
            kw[main] = torch.randn(BATCH, int(ch or 1), 7680)
    elif main == "inputs_embeds":
        hidden = _cfg_get(cfg, "hidden_size", "d_model", default=64)
        kw["inputs_embeds"] = torch.randn(BATCH, SEQ, int(hidden))
    elif main == "past_values" and getattr(cfg, "lags_sequence", None) is not None:
        kw.update(time_series_inputs(cfg, params))
    elif main == "past_values" and "freq" in params:
        # timesfm: univariate series, (batch, context) + padding + frequency class; the
        # prediction head takes a list of 1-D series and int frequencies
        ctx = int(_cfg_get(cfg, "context_length", default=64))
        if "past_values_padding" in params:
            kw["past_values"] = torch.randn(BATCH, ctx)
            kw["past_values_padding"] = torch.zeros(BATCH, ctx, dtype=torch.long)
            kw["freq"] = torch.zeros(BATCH, 1, dtype=torch.long)
        else:
            kw["past_values"] = [torch.randn(ctx) for _ in range(BATCH)]
            kw["freq"] = [0] * BATCH
    elif main == "past_values":
        ctx = _cfg_get(cfg, "context_length", default=32)
        ch = _cfg_get(cfg, "num_input_channels", "input_size", default=1)
        kw["past_values"] = torch.randn(BATCH, int(ctx), int(ch))
    elif main == "inputs":  # perceiver
        kw["inputs"] = text_ids(cfg)
    elif main == "states":  # decision transformer
        t = 8
        kw.update(
            states=torch.randn(BATCH, t, int(getattr(cfg, "state_dim", 17))),
            actions=torch.randn(BATCH, t, int(getattr(cfg, "act_dim", 4))),
            rewards=torch.randn(BATCH, t, 1),
            returns_to_go=torch.randn(BATCH, t, 1),
            timesteps=torch.arange(t).unsqueeze(0).repeat(BATCH, 1),
            attention_mask=torch.ones(BATCH, t, dtype=torch.long),
        )
    elif main == "audio_mel":  # gemma-3n audio encoder
        feat = int(getattr(cfg, "input_feat_size", 128) or 128)
        kw["audio_mel"] = torch.randn(BATCH, 64, feat)
        kw["audio_mel_mask"] = torch.zeros(BATCH, 64, dtype=torch.bool)
    elif main == "flattened_patches":  # pix2struct: (row, col, patch pixels) per patch
        v = _vision_cfg(cfg)
        width = int(getattr(v, "patch_embed_hidden_size", 768) or 768)
        patches = torch.randn(BATCH, 16, 2 + width)
        patches[:, :, 0] = torch.arange(16).div(4, rounding_mode="floor").float() + 1
        patches[:, :, 1] = torch.arange(16).remainder(4).float() + 1
        kw["flattened_patches"] = patches
        if "attention_mask" in params:
            kw["attention_mask"] = torch.ones(BATCH, 16)
    else:
        raise NoInputBuilder(f"no input builder for main_input_name='{main}'")

    if main == "input_features":
        feats = kw["input_features"]
        frames = feats.shape[-1] if getattr(cfg, "max_source_positions", None) and feats.dim() == 3 and feats.shape[-1] > feats.shape[1] else feats.shape[1]
        for name in ("input_features_mask", "feature_attention_mask", "input_features_attention_mask", "attention_mask"):
            if name in params and params[name].default is not inspect.Parameter.empty or name in (
                    "input_features_mask", "feature_attention_mask"):
                if name in params:
                    kw[name] = torch.ones(BATCH, frames, dtype=torch.long)
    has_text = getattr(cfg, "text_config", None) is not None
    if main != "input_ids" and "input_ids" in params and (
            params["input_ids"].default is inspect.Parameter.empty or has_text):
        ids = text_ids(cfg)
        kw["input_ids"] = ids
        if "attention_mask" in params:
            kw["attention_mask"] = torch.ones_like(ids)
    # Second modality of two-tower / fusion models (CLIP-like): an image next to text.
    if "pixel_values" in params and "pixel_values" not in kw and not has_image_token(cfg) and (
            _vision_cfg(cfg) is not cfg or getattr(cfg, "image_size", None)):
        kw["pixel_values"] = pixel_values(cfg)
    if "bbox" in params and "input_ids" in kw:
        b = torch.randint(0, 500, (BATCH, SEQ, 2))
        kw["bbox"] = torch.cat([b, b + 10], dim=-1)
    if getattr(cfg, "is_encoder_decoder", False) and "decoder_input_ids" in params:
        dcfg = getattr(cfg, "decoder", None) or cfg
        kw["decoder_input_ids"] = text_ids(dcfg, length=8)
        audio_dec = getattr(cfg, "decoder_config", None)
        if getattr(cfg, "model_type", "") == "dia" and audio_dec is not None:
            # dia's decoder reads audio codes: (batch, frames, num_channels codebooks)
            ch = int(getattr(audio_dec, "num_channels", 9))
            codes = int(getattr(audio_dec, "vocab_size", 1028))
            kw["decoder_input_ids"] = torch.randint(0, min(codes, 1024), (BATCH, 8, ch))
    fill_required(params, cfg, kw)
    if "mm_token_type_ids" in params and "mm_token_type_ids" not in kw and "input_ids" in kw:
        kw["mm_token_type_ids"] = torch.zeros_like(kw["input_ids"])
    if with_labels and "labels" in params:
        labels = make_labels(cfg, head_kind, kw)
        if labels is not None:
            kw["labels"] = labels
    return kw


def time_series_inputs(cfg, params):
    """autoformer / informer / time_series_transformer style inputs."""
    ctx = int(getattr(cfg, "context_length", None) or getattr(cfg, "prediction_length", 4) or 4)
    pred = int(getattr(cfg, "prediction_length", None) or 4)
    past = ctx + max(getattr(cfg, "lags_sequence", [1]) or [1])
    n_feat = int(getattr(cfg, "num_time_features", 0) or 0)
    size = int(getattr(cfg, "input_size", 1) or 1)
    shape = (BATCH, past) if size == 1 else (BATCH, past, size)
    kw = {
        "past_values": torch.randn(*shape),
        "past_time_features": torch.randn(BATCH, past, n_feat),
        "past_observed_mask": torch.ones(*shape),
    }
    fshape = (BATCH, pred) if size == 1 else (BATCH, pred, size)
    if "future_values" in params:
        kw["future_values"] = torch.randn(*fshape)
    if "future_time_features" in params:
        kw["future_time_features"] = torch.randn(BATCH, pred, n_feat)
    n_cat = int(getattr(cfg, "num_static_categorical_features", 0) or 0)
    if n_cat and "static_categorical_features" in params:
        kw["static_categorical_features"] = torch.zeros(BATCH, n_cat, dtype=torch.long)
    n_real = int(getattr(cfg, "num_static_real_features", 0) or 0)
    if n_real and "static_real_features" in params:
        kw["static_real_features"] = torch.randn(BATCH, n_real)
    return kw


def qwen_style_pixels(cfg, batch=BATCH):
    """(pixel_values, grid_thw): flattened patches + a (t, h, w) grid per image."""
    v = _vision_cfg(cfg)
    ps = getattr(v, "patch_size", 14) or 14
    tps = getattr(v, "temporal_patch_size", 2) or 2
    ch = getattr(v, "in_channels", None) or getattr(v, "in_chans", None) or getattr(v, "num_channels", 3) or 3
    merge = getattr(v, "spatial_merge_size", 2) or 2
    side = 2 * merge
    grid = torch.tensor([[1, side, side]] * batch)
    return torch.randn(batch * side * side, ch * tps * ps * ps), grid


def fill_required(params, cfg, kw):
    """Required forward arguments that the main-input builders did not cover."""
    required = [n for n, p in params.items() if p.default is inspect.Parameter.empty
                and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)]
    for name in required:
        if name in kw or name == "self":
            continue
        if name in ("grid_thw", "image_grid_thw"):
            pv, grid = qwen_style_pixels(cfg)
            kw[name] = grid
            if "pixel_values" in kw or "hidden_states" in params:
                kw["pixel_values" if "pixel_values" in params else "hidden_states"] = pv
        elif name.endswith("input_ids"):  # qformer_input_ids, decoder_input_ids, ...
            kw[name] = text_ids(cfg)
        elif name.endswith("attention_mask") and name != "attention_mask":
            kw[name] = torch.ones(BATCH, SEQ, dtype=torch.long)
        elif name == "attention_mask":
            ref = kw.get("input_ids")
            kw[name] = torch.ones_like(ref) if ref is not None else torch.ones(BATCH, SEQ, dtype=torch.long)
        elif name == "input_ids":
            kw[name] = text_ids(cfg)
        elif name == "pixel_values":
            kw[name] = pixel_values(cfg)
        elif name == "query_embeds":  # blip-2 q-former on its own: the learned queries
            hidden = int(_cfg_get(cfg, "hidden_size", default=64))
            n = int(getattr(cfg, "num_query_tokens", None) or 8)
            kw[name] = torch.randn(BATCH, n, hidden)
            enc = getattr(cfg, "encoder_hidden_size", None)
            if enc and "encoder_hidden_states" in params:  # its cross-attention reads image features
                kw["encoder_hidden_states"] = torch.randn(BATCH, 8, int(enc))
        elif name in ("image_sizes",):
            h, w = image_size(cfg)
            kw[name] = torch.tensor([[h, w]] * BATCH)


def make_labels(cfg, head_kind, kw):
    if head_kind in ("causal_lm", "masked_lm", "image_text_to_text", "multimodal_lm"):
        if "input_ids" in kw:
            return kw["input_ids"].clone()
    if head_kind in ("seq_to_seq", "speech_seq_2_seq"):
        dcfg = getattr(cfg, "decoder", None) or cfg
        return text_ids(dcfg, length=8)
    if head_kind == "ctc":
        return torch.randint(1, max(2, min(vocab_size(cfg), 30)), (BATCH, 4))
    if head_kind.endswith("classification") and head_kind != "token_classification":
        return torch.zeros(BATCH, dtype=torch.long)
    if head_kind == "token_classification" and "input_ids" in kw:
        return torch.zeros_like(kw["input_ids"])
    return None


def image_token_id(cfg):
    """The id of the token a VLM replaces with image features, from its config."""
    for k in ("image_token_id", "image_token_index", "image_token", "img_token_id", "image_pad_token_id"):
        for c in (cfg, getattr(cfg, "text_config", None)):
            v = getattr(c, k, None) if c is not None else None
            if isinstance(v, int):
                return v
    return None


def count_image_tokens(feats, batch):
    """Image tokens per prompt: the features the vision tower yields, split over the batch."""
    if hasattr(feats, "pooler_output") and getattr(feats, "pooler_output", None) is not None and not isinstance(feats, torch.Tensor):
        feats = feats.pooler_output
    elif hasattr(feats, "last_hidden_state") and not isinstance(feats, torch.Tensor):
        feats = feats.last_hidden_state
    if isinstance(feats, torch.Tensor):
        total = feats.shape[0] * feats.shape[1] if feats.dim() == 3 else feats.shape[0]
    else:
        total = 0
        for t in feats:
            total += t.shape[0] * t.shape[1] if t.dim() == 3 else t.shape[0]
    if total % batch:
        raise ValueError(f"image features {total} not divisible by batch {batch}")
    return total // batch
