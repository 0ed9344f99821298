"""Recipes: the Gemma 3 / Gemma 4 multimodal models (see __init__.py for what a recipe may do).

Their processors write each image, video frame and audio clip into the prompt as a begin token,
one placeholder per soft token and an end token, and give the patches (and mel frames) apart;
the model scatters the encoders' features over the placeholders. The recipes build the
checkpoints' composite configs (the class defaults of gemma4 have no vision or audio tower) and
feed every modality the model takes, so both the forward and the training step run the
encoders.
"""

from __future__ import annotations

import torch

from .registry import build, config, inputs
from ..hf_inputs import BATCH


def _prompt(cfg, spans, with_labels, kw, types: dict):
    """input_ids = the multimodal spans, then text; mm_token_type_ids / labels as the processor
    and the loss see them. ``spans`` holds (begin id, placeholder id, count, end id) tuples and
    plain text ids; ``types`` maps a placeholder id to its processor modality type (image 1,
    video 2, audio 3, processing_utils.py:996)."""
    from ..hf_inputs import text_ids

    parts = []
    for span in spans:
        if isinstance(span, int):
            parts.append(torch.tensor([span]))
            continue
        begin, tok, n, end = span
        parts += [torch.tensor([begin]), torch.full((n,), tok), torch.tensor([end])]
    head = torch.cat(parts)
    ids = torch.cat([head.expand(BATCH, -1), text_ids(cfg, length=8)], dim=1)
    mm = torch.zeros_like(ids)
    for tok, t in types.items():
        mm[ids == tok] = t
    kw["input_ids"], kw["attention_mask"] = ids, torch.ones_like(ids)
    if kw.pop("labels", None) is not None and with_labels:  # the class takes labels
        labels = ids.clone()
        labels[:, :len(head)] = -100  # no target on the multimodal spans, as in the other VLM recipes
        kw["labels"] = labels
    return mm


# --------------------------------------------------------------------------- gemma3
GEMMA3_POOL = 4  # checkpoints: SigLIP 896 px / patch 14 = 64 patches a side, pooled 4x4 to 16x16 = 256 tokens


@config("gemma3")
def _(cfg, variant):
    """Gemma3MultiModalProjector average-pools the SigLIP patch grid to sqrt(mm_tokens_per_image)
    a side with kernel patches_per_image // tokens_per_side (modeling_gemma3.py:647-650); the
    class defaults (SigLIP 224 px / 16 = 14 patches, 256 tokens) give a zero kernel, which no
    checkpoint has (896 px / 14 = 64 patches, kernel 4, the processor's 256 image tokens,
    processing_gemma3.py:41). The projector replaces SigLIP's pooled output
    (modeling_gemma3.py:766-768), so checkpoints build no SigLIP head (vision_use_head False).
    Tiny: 8 patches a side pooled 4x4 to 2x2 = 4 tokens."""
    v = cfg.vision_config
    v.patch_size = 14
    v.image_size = v.patch_size * 2 * GEMMA3_POOL
    v.vision_use_head = False
    cfg.mm_tokens_per_image = 4


@inputs("gemma3", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """Gemma3Processor: one (C, H, W) image per sample, written into the prompt as
    <start_of_image> + mm_tokens_per_image image tokens + <end_of_image> (processing_gemma3.py:48-49),
    with token_type_ids 1 over the image tokens (:70-71), which the model makes attend to each
    other bidirectionally (modeling_gemma3.py:876)."""
    from ..hf_inputs import pixel_values

    n = int(cfg.mm_tokens_per_image)
    mm = _prompt(cfg, [(cfg.boi_token_index, cfg.image_token_index, n, cfg.eoi_token_index)], with_labels, kw,
                 {cfg.image_token_index: 1})
    kw["pixel_values"] = pixel_values(cfg)
    kw["token_type_ids"] = mm


# --------------------------------------------------------------------------- gemma4 family
@build("gemma4")
def _():
    """The class default has neither a vision nor an audio tower (both sub-configs are optional,
    configuration_gemma4.py:363-366), so the image, video and audio inputs the model takes would
    never reach an encoder. Gemma4Config(text, vision, audio) with the sub-configs' defaults is the
    google/gemma-4-e2b-it layout (configuration_gemma4.py:352-353); a checkpoint without an audio
    tower runs a subset of it."""
    from transformers import Gemma4AudioConfig, Gemma4Config, Gemma4TextConfig, Gemma4VisionConfig

    return Gemma4Config(text_config=Gemma4TextConfig(), vision_config=Gemma4VisionConfig(), audio_config=Gemma4AudioConfig())


@build("gemma4_unified")
def _():
    """As gemma4: the encoder-free unified model projects raw patches and raw waveform frames
    (modeling_gemma4_unified.py:931-960), built only when the optional sub-configs are given
    (configuration_gemma4_unified.py:324-328, example :313-314)."""
    from transformers import (Gemma4UnifiedAudioConfig, Gemma4UnifiedConfig, Gemma4UnifiedTextConfig,
                              Gemma4UnifiedVisionConfig)

    return Gemma4UnifiedConfig(text_config=Gemma4UnifiedTextConfig(), vision_config=Gemma4UnifiedVisionConfig(),
                               audio_config=Gemma4UnifiedAudioConfig())


@config("gemma4_unified")
def _(cfg, variant):
    """The vision embedder's width is the text width (mm_embed_dim and output_proj_dims "match
    the text model hidden_size", configuration_gemma4_unified.py:244-250: the multimodal embedder
    normalizes output_proj_dims features of the mm_embed_dim stream, modeling_gemma4_unified.py:880-897); the shrink cut the
    text stack only."""
    v = cfg.vision_config
    v.mm_embed_dim = v.output_proj_dims = cfg.text_config.hidden_size


GEMMA4_FRAMES = 2  # video frames per sample
GEMMA4_MEL_FRAMES = 48  # 10 ms mel frames per clip: 12 soft tokens after the two stride-2 convs, one attention chunk
GEMMA4_MEL_BINS = 128  # Gemma4AudioFeatureExtractor's feature_size, which the subsampling projection is sized for


def _patches(per_patch: int, side: int, n_images: int, rows_per_token: int = 1):
    """Gemma4ImageProcessor's layout: per image, (max_patches, per_patch) rows of [0, 1] pixels
    with each row's (x, y) grid position, padded with zero rows at (-1, -1) up to max_patches
    (image_processing_gemma4.py:103-115, :261). A side x side grid of valid rows plus one soft
    token's worth of padding, as every image smaller than the processor's budget has."""
    n = side * side
    ys, xs = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
    pos = torch.stack([xs.flatten(), ys.flatten()], dim=-1)
    pad = rows_per_token
    pv = torch.cat([torch.rand(n_images, n, per_patch), torch.zeros(n_images, pad, per_patch)], dim=1)
    pos = torch.cat([pos, torch.full((pad, 2), -1)]).unsqueeze(0).repeat(n_images, 1, 1)
    return pv, pos


def _gemma4_vision_rows(cfg, n_images: int):
    """(pixel rows, positions, soft tokens per image). Gemma 4: one 3*p*p row per patch, pooled
    k x k into a soft token (modeling_gemma4.py:2072-2110); unified: the processor merges the
    k x k patches into one 3*(k*p)^2 row per soft token (image_processing_gemma4_unified.py:139-194)."""
    ps, k = int(cfg.patch_size), int(cfg.pooling_kernel_size)
    if cfg.model_type == "gemma4_unified_vision":
        side = 2
        pv, pos = _patches(3 * (k * ps) ** 2, side, n_images)
        return pv, pos, side * side
    side = 2 * k
    pv, pos = _patches(3 * ps * ps, side, n_images, rows_per_token=k * k)
    return pv, pos, side * side // (k * k)


@inputs("gemma4", "gemma4_unified", feeds_images=True, feeds=("video", "audio"))
def _(model, cfg, head_kind, kw, with_labels):
    """What Gemma4Processor sends for one image, one video and one audio clip per sample
    (processing_gemma4.py:199-232): <boi> + soft tokens + <eoi> per image and per video frame
    (each frame after its mm:ss timestamp text), <boa> + audio tokens + <eoa>; the image and
    video patches (_gemma4_vision_rows), num_frames_per_video, the audio features with
    input_features_mask (True = valid), and mm_token_type_ids (return_mm_token_type_ids,
    :92). Gemma 4's audio features are 128-bin log-mels (feature_extraction_gemma4.py:97), one
    token per 4 frames (the two stride-2 convs, processing_gemma4.py:222-232); the unified model
    takes raw 640-sample waveform frames, one token each (processing_gemma4_unified.py:229-238)."""
    from ..hf_inputs import text_ids

    v, a = cfg.vision_config, cfg.audio_config
    pv, pos, n_img = _gemma4_vision_rows(v, BATCH)
    vid, vpos, n_frame = _gemma4_vision_rows(v, BATCH * GEMMA4_FRAMES)
    if cfg.model_type == "gemma4_unified":
        n_aud = 12
        feats = torch.randn(BATCH, n_aud, int(a.audio_samples_per_token))
    else:
        n_aud = -(-GEMMA4_MEL_FRAMES // 4)
        feats = torch.randn(BATCH, GEMMA4_MEL_FRAMES, GEMMA4_MEL_BINS)
    stamp = int(text_ids(cfg, length=1, batch=1))  # each frame's "mm:ss" text
    spans = [(cfg.boi_token_id, cfg.image_token_id, n_img, cfg.eoi_token_id)]
    spans += [stamp, (cfg.boi_token_id, cfg.video_token_id, n_frame, cfg.eoi_token_id)] * GEMMA4_FRAMES
    spans.append((cfg.boa_token_id, cfg.audio_token_id, n_aud, cfg.eoa_token_index))
    mm = _prompt(cfg, spans, with_labels, kw,
                 {cfg.image_token_id: 1, cfg.video_token_id: 2, cfg.audio_token_id: 3})
    kw.update(pixel_values=pv, image_position_ids=pos, pixel_values_videos=vid, video_position_ids=vpos,
              num_frames_per_video=torch.tensor([GEMMA4_FRAMES] * BATCH), input_features=feats,
              input_features_mask=torch.ones(feats.shape[:2], dtype=torch.bool), mm_token_type_ids=mm)
