"""Recipes: vlm (see __init__.py for what a recipe may do)."""

from __future__ import annotations

import torch  # noqa: F401

from .registry import build, config, inputs  # noqa: F401


def _text(cfg):
    """The text sub-config of a composite config, or the config itself (a *_text type)."""
    return getattr(cfg, "text_config", None) or cfg


# --------------------------------------------------------------------------- GLM-4V family
GLM_MROPE = [8, 12, 12]  # every GLM-4.1V / 4.5V / 4.6V / GLM-Image checkpoint's mrope_section


@config("glm4v", "glm4v_text", "glm46v", "glmga", "glm4v_moe", "glm4v_moe_text", "glm_image", "glm_image_text")
def _(cfg, variant):
    """GLM text stacks rotate half of each 128-wide head (checkpoints: head_dim 128,
    partial_rotary_factor 0.5, mrope_section [8, 12, 12], so 2 * sum(mrope_section) = 64 =
    head_dim * 0.5; modeling_glm4v.py:449-489 splits the inverse frequencies by the section).
    The class defaults leave partial_rotary_factor at 1.0 (and glm4v_moe's head_dim unset, so
    4096 // 96 = 42), which no checkpoint has."""
    tc = _text(cfg)
    tc.head_dim = 128
    if variant == "tiny":
        # 4 heads of 128 (the shrinker kept hidden 4096 for glm4v_moe, as 4096 % 96 != 0)
        tc.hidden_size = tc.num_attention_heads * 128
    rp = dict(tc.rope_parameters or {})
    rp["partial_rotary_factor"] = 0.5
    rp["mrope_section"] = list(GLM_MROPE)
    tc.rope_parameters = rp
    vis = getattr(cfg, "vision_config", None)
    if vis is not None and getattr(vis, "out_hidden_size", None) is not None:
        vis.out_hidden_size = tc.hidden_size  # the merger projects into the text stack
    if variant == "tiny":
        for k in ("intermediate_size", "moe_intermediate_size"):
            if isinstance(getattr(tc, k, None), int):
                setattr(tc, k, min(getattr(tc, k), 2 * tc.hidden_size))


# --------------------------------------------------------------------------- GLM-Image
GLM_IMAGE_GRID = 4  # source-image patch grid (h = w) fed in the tiny traces


@config("glm_image")
def _(cfg, variant):
    """GLM-Image quantizes the vision tower's features with its VQ model
    (modeling_glm_image.py:1292 vqmodel.encode -> quant_conv(latent_channels -> embed_dim)), so
    vq latent_channels is the vision hidden size (checkpoint: both 1536); the VQ indices are
    fed back as text token ids (modeling_glm_image.py:1255 masked_scatter into input_ids), so
    the codebook lies inside the text vocabulary (checkpoint: 16384 codes < vocab 168064)."""
    vq, vis, tc = cfg.vq_config, cfg.vision_config, cfg.text_config
    vq.latent_channels = vis.hidden_size
    if variant == "tiny":
        vq.embed_dim = 64
    vq.num_embeddings = min(vq.num_embeddings, tc.vocab_size // 2)
    # The VQ model has no cache: its checkpoint config has no use_cache, and GlmImageVQVAE.encode
    # (wrapped by merge_with_config_defaults, utils/generic.py:1130) would be passed the one the
    # generic shrink set on every sub-config.
    vars(vq).pop("use_cache", None)


def _glm_image_pixels(vis, n_images, grid=GLM_IMAGE_GRID):
    """GLM-Image's processor packs one C x patch x patch block per row (no temporal patch:
    GlmImageVisionPatchEmbed views each row as (C, p, p), modeling_glm_image.py:259) with a
    (1, h, w) grid per image and spatial_merge_size 1."""
    ps, ch = vis.patch_size, vis.in_channels
    pv = torch.randn(n_images * grid * grid, ch * ps * ps)
    thw = torch.tensor([[1, grid, grid]] * n_images)
    return pv, thw


@inputs("glm_image_vision", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """The vision tower alone takes the processor's packed patches and a (1, h, w) grid per
    image (GlmImageVisionModel.forward(pixel_values, grid_thw)); the generic qwen-style builder
    packs two temporal patches per row, which this tower does not have."""
    from ..hf_inputs import BATCH

    pv, thw = _glm_image_pixels(cfg, BATCH)
    kw.clear()
    kw.update(pixel_values=pv, grid_thw=thw)


@inputs("glm_image", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """Image-to-image prompt as GlmImageProcessor builds it (processing_glm_image.py:150-186):
    per sample one source image (image_start, h*w image tokens, image_end) plus text, and
    image_grid_thw = [source grid, target grid] per sample with images_per_sample = 2; the
    model encodes only the source grids (get_image_grids_for_generation)."""
    from ..hf_inputs import BATCH, text_ids

    n = GLM_IMAGE_GRID * GLM_IMAGE_GRID
    pv, src = _glm_image_pixels(cfg.vision_config, BATCH)
    target = torch.tensor([[1, GLM_IMAGE_GRID, GLM_IMAGE_GRID]])
    thw = torch.cat([torch.cat([src[i:i + 1], target]) for i in range(BATCH)])
    row = torch.cat([
        torch.tensor([cfg.image_start_token_id]), torch.full((n,), cfg.image_token_id),
        torch.tensor([cfg.image_end_token_id])])
    ids = torch.cat([row.expand(BATCH, -1), text_ids(cfg, length=8)], dim=1)
    kw.clear()
    kw.update(input_ids=ids, attention_mask=torch.ones_like(ids), pixel_values=pv, image_grid_thw=thw,
              images_per_sample=torch.tensor([2] * BATCH))


# --------------------------------------------------------------------------- Qwen omni thinkers
def _used_ids(cfg) -> set:
    from .. import configs

    ids, cfgs = set(), []
    configs._walk(cfg, cfgs.append, set())
    for c in cfgs:
        for k, v in vars(c).items():
            if ("token_id" in k or "token_index" in k) and isinstance(v, int) and not isinstance(v, bool):
                ids.add(v)
    return ids


def _free_ids(cfg, vocab: int, n: int) -> list:
    """n ids at the top of the (shrunk) vocabulary that no special token uses."""
    used = _used_ids(cfg)
    out = [i for i in range(vocab - 1, 300, -1) if i not in used][:n]
    return sorted(out)


QWEN3_OMNI_VOCAB = 152064  # Qwen3-Omni-30B-A3B thinker_config.text_config.vocab_size


@config("qwen3_omni_moe_thinker")
def _(cfg, variant):
    """The thinker text config class defaults to vocab_size 3584, below its own special ids
    (image 151655, audio 151646, ...): every checkpoint has the Qwen vocabulary (152064). Set
    it, then cut it with the generic vocab shrink, which moves the special ids along."""
    from .. import configs

    tc = cfg.text_config
    if tc.vocab_size < max(i for i in _used_ids(cfg) if i < 1_000_000):
        tc.vocab_size = QWEN3_OMNI_VOCAB
        configs.shrink_vocab(cfg)


@config("qwen2_5_omni_thinker", "qwen3_omni_moe_thinker")
def _(cfg, variant):
    """The thinker's get_rope_index (modeling_qwen2_5_omni.py:288, modeling_qwen3_omni_moe.py:291)
    reads config.vision_start_token_id, which the thinker config class does not define but the
    checkpoints' thinker_config sets (<|vision_bos|> 151652, <|vision_eos|> 151653, the
    talker config's defaults; Qwen3-Omni's thinker also lacks <|audio_eos|> 151648, which
    its processor places after the audio pads): give them ids in the shrunk vocabulary."""
    missing = [k for k in ("vision_start_token_id", "vision_end_token_id", "audio_end_token_id")
               if getattr(cfg, k, None) is None]
    for k, i in zip(missing, _free_ids(cfg, cfg.text_config.vocab_size, len(missing))):
        setattr(cfg, k, i)


AUDIO_FRAMES = 100  # mel frames per clip: one encoder chunk (Qwen3-Omni n_window 50 -> 100 frames)


def _omni_audio_tokens(cfg, frames: int) -> int:
    """Audio placeholder count the processor emits for a clip of ``frames`` mel frames: the
    model's own length formula (modeling_qwen2_5_omni.py:350, modeling_qwen3_omni_moe.py:150)."""
    if cfg.model_type == "qwen3_omni_moe_thinker":
        from transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe import _get_feat_extract_output_lengths

        return int(_get_feat_extract_output_lengths(torch.tensor(frames), cfg.audio_config.n_window))
    return ((frames - 1) // 2 + 1 - 2) // 2 + 1


@inputs("qwen2_5_omni_thinker", "qwen3_omni_moe_thinker", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """One audio clip and one image per sample, laid out as the Qwen omni processor does:
    <|audio_bos|> + audio pads + <|audio_eos|>, <|vision_bos|> + grid.prod() / merge**2 image
    pads + <|vision_eos|>, then text (get_rope_index walks from each bos and skips bos/eos);
    input_features are (batch, num_mel_bins, frames) with a feature_attention_mask."""
    from ..hf_inputs import BATCH, qwen_style_pixels, text_ids

    pv, thw = qwen_style_pixels(cfg)
    merge = cfg.vision_config.spatial_merge_size
    n_img = int(thw[0].prod()) // merge ** 2
    n_aud = _omni_audio_tokens(cfg, AUDIO_FRAMES)
    mel = cfg.audio_config.num_mel_bins
    row = torch.cat([
        torch.tensor([cfg.audio_start_token_id]), torch.full((n_aud,), cfg.audio_token_id),
        torch.tensor([cfg.audio_end_token_id]),
        torch.tensor([cfg.vision_start_token_id]), torch.full((n_img,), cfg.image_token_id),
        torch.tensor([cfg.vision_end_token_id])])
    ids = torch.cat([row.expand(BATCH, -1), text_ids(cfg, length=8)], dim=1)
    kw.update(input_ids=ids, attention_mask=torch.ones_like(ids), pixel_values=pv, image_grid_thw=thw,
              input_features=torch.randn(BATCH, mel, AUDIO_FRAMES),
              feature_attention_mask=torch.ones(BATCH, AUDIO_FRAMES, dtype=torch.long))
    if with_labels and "labels" in kw:
        labels = ids.clone()
        labels[:, :len(row)] = -100
        kw["labels"] = labels


@config("qwen3_omni_moe")
def _(cfg, variant):
    """The talker's sparse MoE block builds a shared expert of
    config.shared_expert_intermediate_size (modeling_qwen3_omni_moe.py:2888), a field the talker
    text config class does not define but the checkpoint's talker text_config sets; use the
    talker's own (shrunk) intermediate size."""
    tt = cfg.talker_config.text_config
    if getattr(tt, "shared_expert_intermediate_size", None) is None:
        tt.shared_expert_intermediate_size = tt.intermediate_size
    # The talker computes the thinker's multimodal rope positions (modeling_qwen3_omni_moe.py:287
    # self.spatial_merge_size): the checkpoint's talker_config repeats the vision merge size.
    if getattr(cfg.talker_config, "spatial_merge_size", None) is None:
        cfg.talker_config.spatial_merge_size = cfg.thinker_config.vision_config.spatial_merge_size


# --------------------------------------------------------------------------- Qwen4-Exp
@config("qwen4_exp", "qwen4_exp_text")
def _(cfg, variant):
    """Qwen4-Exp's default layer_types put an indexed (QSA) attention layer every 4th layer,
    but the QSA fields default to None (modeling_qwen4_exp.py:699 block_topk = budget // ratio):
    the checkpoint (Qwen/Qwen4-Exp text_config) sets indexer_n_heads 4, indexer_kv_heads 1,
    indexer_head_dim 128, indexer_budget 2048, indexer_compress_ratio 4, partial rotary 0.25 with
    mrope_section [11, 11, 10] (interleaved) for head_dim 256, and a PLE n-gram layer on a
    linear-attention layer (ple_layer_ids [2]) with an eos id. Tiny: a token budget of 8 (two
    blocks of 4, below the traced length, so the block top-k really selects) and a small n-gram
    hash table (base 20M there; only its size changes)."""
    tc = _text(cfg)
    tc.indexer_n_heads, tc.indexer_kv_heads, tc.indexer_head_dim = 4, 1, 128
    tc.indexer_compress_ratio = 4
    tc.indexer_budget = 8 if variant == "tiny" else 2048
    rp = dict(tc.rope_parameters or {})
    rp.update(partial_rotary_factor=0.25, mrope_section=[11, 11, 10], mrope_interleaved=True)
    tc.rope_parameters = rp
    linear = [i + 1 for i, t in enumerate(tc.layer_types) if t == "linear_attention"]
    if linear:
        tc.ple_layer_ids = linear[:1]
        tc.number_of_conv_states = 3  # Qwen4ExpTextConfig.__post_init__: 3 with PLE layers
        tc.ple_embed_dim = tc.hidden_size
        tc.ngram_vocab_size_base = min(tc.ngram_vocab_size_base, 1024)
        tc.split_ngram_parts = min(tc.split_ngram_parts, 2)
        if tc.eos_token_id is None:
            tc.eos_token_id = _free_ids(cfg, tc.vocab_size, 1)[0]


# --------------------------------------------------------------------------- HunYuan-VL
@config("hunyuan_vl", "hunyuan_vl_text")
def _(cfg, variant):
    """HunYuanVL's text rotary embedding expands positions over len(mrope_section) axes
    (modeling_hunyuan_vl.py:128,152) and get_rope_index needs >= 3 of them; the class default
    has none. The checkpoint (tencent/HunyuanOCR) sets xdrope_section [16, 16, 16, 16]
    (position, width, height, image index) for head_dim 128, i.e. sections summing to
    head_dim / 2. The image-span ids (im_start_id, ...) are not named *token_id, so the
    generic vocab shrink left them past the shrunk vocabulary: move them inside."""
    tc = _text(cfg)
    head_dim = tc.head_dim or tc.hidden_size // tc.num_attention_heads
    rp = dict(tc.rope_parameters or {})
    rp["mrope_section"] = [head_dim // 8] * 4
    tc.rope_parameters = rp
    spans = [k for k in ("im_start_id", "im_end_id", "im_newline_id")
             if isinstance(getattr(cfg, k, None), int) and getattr(cfg, k) >= tc.vocab_size]
    for k, i in zip(spans, _free_ids(cfg, tc.vocab_size, len(spans))):
        setattr(cfg, k, i)
