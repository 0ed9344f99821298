"""Recipes: text (see __init__.py for what a recipe may do)."""

from __future__ import annotations

import math

import torch  # noqa: F401

from .registry import build, config, inputs  # noqa: F401


# --------------------------------------------------------------------------- dbrx
@config("dbrx")
def _dbrx(cfg, variant):
    """DbrxAttention reads ``attn_config.rope_theta`` (modeling_dbrx.py:184), which
    DbrxAttentionConfig does not declare; dbrx checkpoints' attn_config always carries it
    (the same theta as the model's rope_parameters). The attention clamps q/k/v to
    ``clip_qkv`` unconditionally (modeling_dbrx.py:206), so it is always set too:
    dbrx-instruct's attn_config has ``clip_qkv: 8``."""
    cfg.attn_config.rope_theta = cfg.rope_parameters["rope_theta"]
    if cfg.attn_config.clip_qkv is None:
        cfg.attn_config.clip_qkv = 8


# --------------------------------------------------------------------------- cohere_compass
def _compass_text_rope(text):
    """The rotary embedding reads ``rope_parameters[layer_type]`` for every layer type
    (modeling_cohere_compass.py:76-90), so a checkpoint's rope_parameters are keyed by layer
    type; the class default ({} after standardization) has no key at all. Use the Cohere2
    layout the model supports (sliding layers rotate, a ``None`` entry makes the global layer
    NoPE, :494) so both layer kinds and both RoPE branches are kept."""
    text.layer_types = ["sliding_attention", "full_attention"]
    text.num_hidden_layers = 2
    theta = (text.rope_parameters or {}).get("rope_theta", 50000.0)
    text.rope_parameters = {
        "sliding_attention": {"rope_type": "default", "rope_theta": theta},
        "full_attention": None,
    }


@config("cohere_compass_text")
def _compass_text(cfg, variant):
    """Per-layer-type RoPE parameters (_compass_text_rope)."""
    _compass_text_rope(cfg)


@config("cohere_compass")
def _compass(cfg, variant):
    """The text stack's per-layer-type RoPE parameters (_compass_text_rope)."""
    _compass_text_rope(cfg.text_config)


# --------------------------------------------------------------------------- lfm2_moe
@config("lfm2_moe")
def _lfm2_moe(cfg, variant):
    """Lfm2MoeDecoderLayer indexes ``config.layer_types`` (modeling_lfm2_moe.py:474), which
    the class default leaves None; LFM2-8B-A1B's config lists "conv" / "full_attention" per
    layer. Two layers keep every kind: a dense conv layer (``layer_idx < num_dense_layers``,
    :482) and an attention layer with the MoE block."""
    cfg.layer_types = ["conv", "full_attention"]
    cfg.num_hidden_layers = 2
    cfg.num_dense_layers = 1


# --------------------------------------------------------------------------- t5gemma2_encoder
@config("t5gemma2_encoder")
def _t5gemma2_encoder(cfg, variant):
    """T5Gemma2MLP reads ``config.dropout_rate`` (modeling_t5gemma2.py:85), which the text
    config does not declare: the composite T5Gemma2Config copies its ``dropout_rate``
    (default 0.0) into ``encoder.text_config`` (configuration_t5gemma2.py:354), so every
    checkpoint's encoder config carries it."""
    if "dropout_rate" not in vars(cfg.text_config):
        cfg.text_config.dropout_rate = 0.0
    # The projector average-pools the patch grid down to sqrt(mm_tokens_per_image) per side
    # (modeling_t5gemma2.py:586-589): checkpoints pair 896px / patch 14 (64 patches a side)
    # with 256 tokens (kernel 4). Keep that ratio on a small image: 8 patches a side, 2x2
    # pooling to 16 tokens (the class defaults, 224px / patch 16 with 256 tokens, give kernel 0).
    vis = cfg.vision_config
    vis.image_size = 8 * vis.patch_size
    cfg.mm_tokens_per_image = 16


# --------------------------------------------------------------------------- gemma4 assistants
@build("gemma4_assistant")
def _gemma4_assistant_build():
    """Gemma4AssistantConfig validates its text config as a drafter's
    (configuration_gemma4_assistant.py:80-98): no per-layer inputs, no MoE block, no
    double-wide MLP, every layer KV-shared. The gemma4_text defaults are the target model's,
    so the assistant checkpoint (google/gemma-4-e2b-it-assistant) sets these explicitly."""
    from transformers import Gemma4AssistantConfig

    text = dict(model_type="gemma4_text", hidden_size_per_layer_input=0, enable_moe_block=False,
                use_double_wide_mlp=False, vocab_size_per_layer_input=0)
    return Gemma4AssistantConfig(text_config=text)


@config("gemma4_assistant", "gemma4_unified_assistant")
def _gemma4_assistant(cfg, variant):
    """Every assistant layer reads the target model's K/V (the config's __post_init__ sets
    num_kv_shared_layers = num_hidden_layers, and validation requires it); configs.shrink
    zeroes num_kv_shared_layers for gemma-3n/4 targets, so restore it for the drafter."""
    cfg.text_config.num_kv_shared_layers = cfg.text_config.num_hidden_layers


@inputs("gemma4_assistant", "gemma4_unified_assistant")
def _gemma4_assistant_inputs(model, cfg, head_kind, kw, with_labels):
    """What the assisted-generation loop feeds the drafter (generation/candidate_generator.py
    SinglePositionMultiTokenCandidateGenerator, :1313-1346): inputs_embeds = [target token
    embedding; target last hidden state] (B, 1, 2 * backbone_hidden_size), the position of
    the last token, the
    prompt's attention mask, and the target model's last K/V per layer type,
    (B, kv_heads, ctx, head_dim) with the drafter's per-layer head layout (it only projects q)."""
    from ..hf_inputs import BATCH, SEQ

    text = cfg.get_text_config()
    ctx = SEQ
    shared = {}
    for i, lt in enumerate(text.layer_types):
        if lt in shared:
            continue
        lc = text.per_layer_config[i]
        shape = (BATCH, lc.num_key_value_heads, ctx, lc.head_dim)
        shared[lt] = (torch.randn(shape), torch.randn(shape))
    kw.clear()
    kw["inputs_embeds"] = torch.randn(BATCH, 1, 2 * cfg.backbone_hidden_size)
    kw["shared_kv_states"] = shared
    kw["position_ids"] = torch.full((BATCH, 1), ctx - 1, dtype=torch.long)
    kw["attention_mask"] = torch.ones(BATCH, ctx, dtype=torch.long)


# --------------------------------------------------------------------------- zamba
@config("zamba")
def _zamba(cfg, variant):
    """Zamba's one attention block is shared by every hybrid layer: the model ties the
    other hybrid layers' ``shared_transf`` to the first one's (modeling_zamba.py:856-862),
    and the tie pattern must match at least one other layer. Checkpoints (Zyphra/Zamba-7B:
    76 layers, a hybrid layer every ``attn_layer_period``, configuration_zamba.py:102-110)
    always have several; keep a mamba layer and two hybrid layers sharing one block.
    Zamba's attention width is twice the hidden size (concatenated residual + embeddings), so
    the generic head-count shrink still leaves a 200M-parameter model; the tiny config
    narrows the hidden size (and the MLP with it, at the checkpoints' 4x) instead."""
    cfg.layers_block_type = ["linear_attention", "hybrid", "hybrid"]
    cfg.num_hidden_layers = 3
    if variant == "tiny":
        cfg.hidden_size = 512
        cfg.intermediate_size = 4 * 512
    _zamba_derived(cfg)


def _zamba_derived(cfg):
    """Widths that ZambaConfig / Zamba2Config.__post_init__ derive from hidden_size and the
    layer types (configuration_zamba.py:98-100, configuration_zamba2.py:118-139): recompute
    them for the shrunk hidden size and the kept layers, as the config itself would."""
    h, heads = cfg.hidden_size, cfg.num_attention_heads
    cfg.attention_hidden_size = 2 * h
    cfg.attention_head_dim = 2 * h // heads
    if cfg.model_type == "zamba":
        cfg.mamba_dt_rank = math.ceil(h / 16)
    else:
        cfg.mamba_headdim = int(cfg.mamba_expand * h) // cfg.n_mamba_heads
        cfg.kv_channels = h // heads
        cfg.num_query_groups = heads
        cfg.hybrid_layer_ids = [i for i, t in enumerate(cfg.layers_block_type) if t == "hybrid"]


@config("zamba2")
def _zamba2(cfg, variant):
    """As zamba: Zyphra/Zamba2 checkpoints interleave mamba2 layers with several hybrid
    layers that share the attention block(s) (``hybrid_layer_ids``, modeling_zamba2.py:899-917)."""
    cfg.layers_block_type = ["linear_attention", "hybrid", "hybrid"]
    cfg.num_hidden_layers = 3
    _zamba_derived(cfg)


# --------------------------------------------------------------------------- blt
@config("blt")
def _blt(cfg, variant):
    """The local decoder projects the global transformer's patch states
    (``Linear(hidden_size_global, ...)``, modeling_blt.py:688-690): its
    ``hidden_size_global`` is the global transformer's width in every checkpoint (2048 with
    the 2048-wide global model), so it follows the shrunk global_config; likewise the
    encoder-to-global projection is derived as BltConfig does (configuration_blt.py:253-256)."""
    g = cfg.global_config.hidden_size
    cfg.encoder_config.hidden_size_global = g
    cfg.decoder_config.hidden_size_global = g
    out = cfg.encoder_config.hidden_size * cfg.cross_attn_k
    cfg.global_config.encoder_cross_output_size = out if out != g else None


# --------------------------------------------------------------------------- reformer
@config("reformer")
def _reformer(cfg, variant):
    """ReformerModelWithLMHead asserts ``is_decoder=True`` (the causal-LM checkpoints,
    google/reformer-crime-and-punishment, set it). Axial position embeddings factor the
    sequence: in training the length must equal prod(axial_pos_shape)
    (modeling_reformer.py:234), as the checkpoint's (512, 1024) does its 524288-token
    inputs; here (4, 4) for the 16-token input, with chunk lengths that divide it."""
    from ..hf_inputs import SEQ

    cfg.is_decoder = True
    cfg.attn_layers = ["local", "lsh"]
    cfg.num_hidden_layers = 2
    cfg.axial_pos_shape = (4, SEQ // 4)
    cfg.max_position_embeddings = SEQ
    cfg.local_attn_chunk_length = 4
    cfg.lsh_attn_chunk_length = 4
    cfg.num_buckets = 2


# --------------------------------------------------------------------------- rwkv
@config("rwkv")
def _rwkv(cfg, variant):
    """RwkvConfig has no head count, so the generic width shrink leaves 4096-wide layers,
    and RWKV's init orthogonalizes every Linear/Embedding (modeling_rwkv.py:425-439, a QR
    per matrix) which alone exceeds the time budget. Shrink the width by the checkpoints'
    proportions (RWKV/rwkv-4-169m-pile: attention_hidden_size = hidden_size,
    intermediate_size = 4 * hidden_size)."""
    if variant == "tiny":
        cfg.hidden_size = 256
        cfg.attention_hidden_size = 256
        cfg.intermediate_size = 4 * 256


# --------------------------------------------------------------------------- xmod
@inputs("xmod")
def _xmod_inputs(model, cfg, head_kind, kw, with_labels):
    """X-MOD routes every example through its language's adapter: the caller passes
    ``lang_ids`` (one adapter index per example, modeling_xmod.py:732-737) or sets a default
    language first; XmodConfig's default_language is None. One language per
    example, two different ones, so the per-language masking runs for both."""
    from ..hf_inputs import BATCH

    kw["lang_ids"] = torch.arange(BATCH, dtype=torch.long) % len(cfg.languages)


# --------------------------------------------------------------------------- lxmert
@inputs("lxmert")
def _lxmert_inputs(model, cfg, head_kind, kw, with_labels):
    """LXMERT reads region features, not pixels: a Faster R-CNN detector gives each image
    ``visual_feats`` (B, boxes, visual_feat_dim) and normalized boxes ``visual_pos``
    (B, boxes, visual_pos_dim=4) (modeling_lxmert.py:468; the FRCNN example pipeline uses 36
    boxes). The QA head's labels are one answer index per question
    (modeling_lxmert.py:1249-1271)."""
    from ..hf_inputs import BATCH

    boxes = 36
    kw["visual_feats"] = torch.randn(BATCH, boxes, cfg.visual_feat_dim)
    xy = torch.rand(BATCH, boxes, 2) * 0.5
    kw["visual_pos"] = torch.cat([xy, xy + 0.5], dim=-1)[..., : cfg.visual_pos_dim]
    kw["visual_attention_mask"] = torch.ones(BATCH, boxes, dtype=torch.long)
    if with_labels and type(model).__name__ == "LxmertForQuestionAnswering":
        kw["labels"] = torch.randint(0, cfg.num_qa_labels, (BATCH,))


# --------------------------------------------------------------------------- perceiver
@config("perceiver")
def _perceiver(cfg, variant):
    """Perceiver's depth is ``num_self_attends_per_block`` (26) latent self-attention layers
    over ``num_latents`` x ``d_latents`` (256 x 1280), keys the generic shrinker does not know
    (num_blocks is already 1): keep two latent self-attention layers and, in the tiny config,
    a smaller latent array still divisible by the attention heads (modeling_perceiver.py:426-433)."""
    cfg.num_self_attends_per_block = min(cfg.num_self_attends_per_block, 2)
    if variant == "tiny":
        cfg.num_latents = 64
        cfg.d_latents = 256


@inputs("perceiver")
def _perceiver_inputs(model, cfg, head_kind, kw, with_labels):
    """The bare PerceiverModel has no input preprocessor, so ``inputs`` are already embedded:
    (B, M, d_model), the width its cross-attention's kv side expects
    (modeling_perceiver.py:723). PerceiverForMaskedLM embeds byte ids and decodes a fixed
    ``max_position_embeddings`` positions (:814-823), so its tokenizer pads every text to that
    length (``padding="max_length"``, the docstring at :868) and the MLM labels have it too
    (:917-919)."""
    from ..hf_inputs import BATCH, SEQ, text_ids

    if type(model).__name__ == "PerceiverModel":
        kw["inputs"] = torch.randn(BATCH, SEQ, cfg.d_model)
        kw["attention_mask"] = torch.ones(BATCH, SEQ, dtype=torch.long)
    elif type(model).__name__ == "PerceiverForMaskedLM":
        n = cfg.max_position_embeddings
        ids = text_ids(cfg, length=n)
        ids[:, SEQ:] = 0  # [PAD] past the text
        mask = torch.zeros(BATCH, n, dtype=torch.long)
        mask[:, :SEQ] = 1
        kw["inputs"], kw["attention_mask"] = ids, mask
        if with_labels:
            kw["labels"] = ids.masked_fill(mask == 0, -100)


# --------------------------------------------------------------------------- pi0
def _pi0_prefix(model, cfg):
    """The PaliGemma prefix the PI0 processor builds: camera images (B, cameras, C, H, W),
    which cameras are present (B, cameras), and per camera as many image tokens as the
    vision tower yields, followed by the task text (modeling_pi0.py:119-140, embed_prefix)."""
    from .. import phases
    from ..hf_inputs import BATCH, pixel_values, text_ids

    vlm_cfg = cfg.vlm_config
    cams = 2
    pv = torch.stack([pixel_values(vlm_cfg) for _ in range(cams)], dim=1)
    inner = model.model if type(model).__name__ == "PI0ForConditionalGeneration" else model
    with torch.no_grad():
        feats = inner.vlm.get_image_features(**phases.on_model_device(inner, {"pixel_values": pv[:, 0]}))
    per_image = feats.pooler_output.shape[1]
    img = torch.full((BATCH, cams * per_image), vlm_cfg.image_token_id, dtype=torch.long)
    ids = torch.cat([img, text_ids(vlm_cfg.text_config, length=8)], dim=1)
    return {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "pixel_values": pv,
        "pixel_attention_mask": torch.ones(BATCH, cams, dtype=torch.bool),
    }


@inputs("pi0", feeds_images=True)
def _pi0_inputs(model, cfg, head_kind, kw, with_labels):
    """PI0 (lerobot/pi0) is fed the robot ``state`` (B, max_state_dim) next to the prefix;
    at inference a denoising step also gets the current ``noise`` (B, chunk_size,
    max_action_dim) and ``timestep`` (B,) (sample_actions), in training the target ``actions``
    (same shape as noise) and the model samples noise and time itself (:268-285). The bare
    PI0Model takes the embedded suffix instead: ``action_embeds`` (B, 1 + chunk_size,
    dit hidden), the state token plus one token per action, as PI0ActionTimeEmbedding
    outputs (:71-83)."""
    from ..hf_inputs import BATCH

    kw.clear()
    kw.update(_pi0_prefix(model, cfg))
    if type(model).__name__ == "PI0Model":
        kw["action_embeds"] = torch.randn(BATCH, 1 + cfg.chunk_size, cfg.dit_config.hidden_size)
        return
    kw["state"] = torch.randn(BATCH, cfg.max_state_dim)
    if with_labels:
        kw["actions"] = torch.randn(BATCH, cfg.chunk_size, cfg.max_action_dim)
    else:
        kw["noise"] = torch.randn(BATCH, cfg.chunk_size, cfg.max_action_dim)
        kw["timestep"] = torch.full((BATCH,), 0.5)


# --------------------------------------------------------------------------- jev
@inputs("jev")
def _jev_inputs(model, cfg, head_kind, kw, with_labels):
    """JevForDecision scores one prompt at a time (``marks[0]``, modeling_jev.py:54-64), as
    DecisionMixin.decide builds it (decision/modeling_utils.py:114-121): input_ids (1, L),
    the position of each question's ``<|mark|>`` (1, Q), each question's option count and its
    type index into Question.questions_types (noul, choice, score). One question of each
    type, with option counts that fit the head's rows from that type's offset on."""
    from ..hf_inputs import SEQ, text_ids

    kw.clear()
    kw["input_ids"] = text_ids(cfg.text_config, length=SEQ, batch=1)
    kw["marks"] = torch.tensor([[5, 10, SEQ - 1]])
    # noul: false/true; choice: 4 options; score: 6 levels
    kw["question_type_ids"] = torch.tensor([[0, 1, 2]])
    kw["num_options"] = torch.tensor([[2, 4, 6]])


# --------------------------------------------------------------------------- timesfm2_5
@inputs("timesfm2_5")
def _timesfm2_5_inputs(model, cfg, head_kind, kw, with_labels):
    """TimesFM 2.5 patches univariate series: the bare model takes (B, T) values with T a
    multiple of ``patch_length`` and a 0/1 padding mask (modeling_timesfm2_5.py:566-573);
    the prediction head takes a list of 1-D series of any length, which it front-pads to the
    forecast context (``_preprocess``, :665-695; ``forecast_context_len`` shortens the 16384
    default, a multiple of the patch), and in training the ``future_values`` (B, horizon)."""
    from ..hf_inputs import BATCH

    patch = cfg.patch_length
    ctx = 4 * patch
    kw.clear()
    if type(model).__name__ == "TimesFm2_5Model":
        kw["past_values"] = torch.randn(BATCH, ctx)
        kw["past_values_padding"] = torch.zeros(BATCH, ctx, dtype=torch.long)
        return
    kw["past_values"] = [torch.randn(ctx - 8 * i) for i in range(BATCH)]
    kw["forecast_context_len"] = ctx
    if with_labels:
        kw["future_values"] = torch.randn(BATCH, patch)


# --------------------------------------------------------------------------- autoformer
@config("autoformer")
def _autoformer(cfg, variant):
    """The decoder starts from the last ``label_length`` steps of the context
    (modeling_autoformer.py:1338-1350), so label_length <= context_length; the class
    default 10 presumes a longer context than the tracer's 8 steps (the default
    context_length is the prediction_length, so checkpoints choose both together)."""
    cfg.label_length = min(cfg.label_length, cfg.context_length // 2)


# --------------------------------------------------------------------------- flava
@inputs("flava", feeds_images=True)
def _flava_inputs(model, cfg, head_kind, kw, with_labels):
    """FlavaForPreTraining is fed what FlavaProcessor returns for pretraining
    (``return_codebook_pixels=True, return_image_mask=True``, plus the MLM collator):
    ``codebook_pixel_values`` for the dVAE codebook that makes the MIM targets
    (modeling_flava.py:1702-1715; 112px for 224px / patch 16, i.e. 8 codebook pixels per image
    patch), ``bool_masked_pos`` over the image patches, ``input_ids_masked`` with [MASK]
    tokens, and in training ``mlm_labels`` (-100 off the masked tokens) and ``itm_labels``
    (matched / unmatched pair per example, :1765-1770). The bare FlavaModel keeps the generic
    ids + pixels."""
    from ..hf_inputs import BATCH, pixel_values

    if type(model).__name__ != "FlavaForPreTraining":
        return
    icfg = cfg.image_config
    side = icfg.image_size // icfg.patch_size
    kw["pixel_values"] = pixel_values(icfg)
    kw["codebook_pixel_values"] = torch.rand(BATCH, 3, 8 * side, 8 * side)
    masked_pos = torch.zeros(BATCH, side * side, dtype=torch.bool)
    masked_pos[:, ::3] = True
    kw["bool_masked_pos"] = masked_pos
    ids = kw["input_ids"]
    text_mask = torch.zeros_like(ids, dtype=torch.bool)
    text_mask[:, 1::4] = True
    kw["input_ids_masked"] = ids.masked_fill(text_mask, 103)  # BERT [MASK]
    if with_labels:
        kw["mlm_labels"] = ids.masked_fill(~text_mask, -100)
        kw["itm_labels"] = torch.tensor([1, 0] * (BATCH // 2) + [1] * (BATCH % 2))
        kw["return_loss"] = True


# --------------------------------------------------------------------------- muse_glimmer_assistant
@inputs("muse_glimmer_assistant")
def _muse_glimmer_assistant_inputs(model, cfg, head_kind, kw, with_labels):
    """The DFlash drafter denoises one block: ``noise_embeds`` (B, block_size, hidden), the
    target model's embeddings of the last accepted token and block_size - 1 mask tokens, and
    ``context_hidden_states`` (B, accepted, hidden * len(target_layer_ids)), the target's
    hidden states at ``target_layer_ids`` concatenated (modeling_muse_glimmer_assistant.py:
    294-310 and the forward docstring); the mask spans context + block."""
    from ..hf_inputs import BATCH, SEQ

    kw.clear()
    h = cfg.hidden_size
    kw["noise_embeds"] = torch.randn(BATCH, cfg.block_size, h)
    kw["context_hidden_states"] = torch.randn(BATCH, SEQ, h * len(cfg.target_layer_ids))
    kw["attention_mask"] = torch.ones(BATCH, SEQ + cfg.block_size, dtype=torch.long)
