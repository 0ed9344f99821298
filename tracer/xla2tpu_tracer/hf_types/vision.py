"""Recipes: vision (see __init__.py for what a recipe may do)."""

from __future__ import annotations

import torch  # noqa: F401

from .registry import build, config, inputs  # noqa: F401
from ..hf_inputs import BATCH, num_channels, pixel_values, text_ids, video_values


# --------------------------------------------------------------------------- video classifiers
@config("videomae", "vivit", "timesformer")
def _video_clip(cfg, variant):
    """A short clip: the frame count is a config choice (videomae/vivit/timesformer size their
    position/time embeddings from ``num_frames``); 4 frames keep two tubelets (tubelet 2)."""
    cfg.num_frames = 4
    if cfg.model_type == "vivit":
        # vivit keeps 224px / 16px tubelets: 64px gives 4x4 patches per tubelet
        # (modeling_vivit.py:54-58 derives the position table from image_size and tubelet_size)
        cfg.image_size = 64


@inputs("videomae", "vivit", "timesformer")
def _video_pixels(model, cfg, head_kind, kw, with_labels):
    """Their video processors return 5-D ``pixel_values`` (batch, frames, channels, H, W)
    (modeling_videomae.py:165, modeling_vivit.py:127, modeling_timesformer.py:58)."""
    kw["pixel_values"] = video_values(cfg)


@config("xclip")
def _xclip_clip(cfg, variant):
    """X-CLIP's vision tower runs on every frame and its MIT/prompt blocks hold one position
    per frame (modeling_x_clip.py:370,771): a 4-frame, 64px clip (2x2 patches of 32px)."""
    cfg.vision_config.num_frames = 4
    cfg.vision_config.image_size = 64


@inputs("xclip")
def _xclip_inputs(model, cfg, head_kind, kw, with_labels):
    """XCLIPProcessor returns 5-D video ``pixel_values`` (modeling_x_clip.py:1077) next to one
    caption per video; training uses the video-text contrastive loss (``return_loss``)."""
    kw["pixel_values"] = video_values(cfg)
    if with_labels:
        kw["return_loss"] = True


# --------------------------------------------------------------------------- instructblipvideo
IBV_FRAMES = 4  # processing_instructblipvideo.py:104: "InstrucBLIP works with 4 frames only"


@config("instructblipvideo")
def _ibv_config(cfg, variant):
    """The processor adds a ``<video>`` token past the text vocab (processing_instructblipvideo.py
    :43) and checkpoints set ``video_token_index`` to it; the default config leaves it None.
    8 learned queries instead of 32 keep the language sequence short (4 frames x queries)."""
    if cfg.video_token_index is None:
        cfg.video_token_index = cfg.text_config.vocab_size
        cfg.text_config.vocab_size += 1
    cfg.num_query_tokens = 8


@inputs("instructblipvideo", feeds_images=True)
def _ibv_inputs(model, cfg, head_kind, kw, with_labels):
    """What InstructBlipVideoProcessor returns: 5-D video pixels (batch, 4 frames, C, H, W)
    (modeling_instructblipvideo.py:941), the instruction for the Q-Former, and the text with
    ``num_query_tokens * 4`` video tokens in front (processing_instructblipvideo.py:127); the
    LM loss ignores the video positions."""
    v = cfg.vision_config
    kw["pixel_values"] = torch.randn(BATCH, IBV_FRAMES, num_channels(cfg), v.image_size, v.image_size)
    q = text_ids(cfg.qformer_config, length=8)
    kw["qformer_input_ids"] = q
    kw["qformer_attention_mask"] = torch.ones_like(q)
    n = cfg.num_query_tokens * IBV_FRAMES
    video = torch.full((BATCH, n), cfg.video_token_index, dtype=torch.long)
    ids = torch.cat([video, text_ids(cfg.text_config, length=8)], dim=1)
    kw["input_ids"] = ids
    kw["attention_mask"] = torch.ones_like(ids)
    kw.pop("labels", None)
    if with_labels and type(model).__name__.endswith("ForConditionalGeneration"):
        labels = ids.clone()
        labels[:, :n] = -100
        kw["labels"] = labels


# --------------------------------------------------------------------------- tvp
@config("tvp")
def _tvp_config(cfg, variant):
    """TVP's frame-pad prompter holds learned pads of (num_frames, 3, visual_prompt_size,
    max_img_size) and adds them to every clip (modeling_tvp.py:581-668), so the processor
    always returns ``num_frames`` frames of ``max_img_size`` squared: a 2-frame 128px clip with
    16px pads instead of 48 frames of 448px (128px leaves a 2x2 grid after the ResNet's /32
    and the grid max-pool, modeling_tvp.py:164-166)."""
    cfg.num_frames = 2
    cfg.max_img_size = 128
    cfg.visual_prompt_size = 16


@inputs("tvp")
def _tvp_inputs(model, cfg, head_kind, kw, with_labels):
    """TvpProcessor output: the query text (input_ids, attention_mask) and 5-D frames
    (batch, num_frames, 3, max_img_size, max_img_size) (modeling_tvp.py:161). One clip per
    batch: the column position embeddings are viewed as (batch_size, 1, width, hidden)
    (modeling_tvp.py:238-244), which only holds for batch 1 (the model card's example)."""
    s = cfg.max_img_size
    kw["pixel_values"] = torch.randn(1, cfg.num_frames, 3, s, s)
    ids = text_ids(cfg, batch=1)
    kw["input_ids"] = ids
    kw["attention_mask"] = torch.ones_like(ids)


# --------------------------------------------------------------------------- pe_video
PE_IMG = 56  # 4x4 patches of 14px


def _small_timm_vit(vision_config, variant):
    """A timm-wrapped ViT (TimmWrapperConfig) is built by ``timm.create_model(architecture,
    **model_args)`` (modeling_timm_wrapper.py:171,295): configs.shrink cannot see its widths,
    so the tiny variant passes them as model_args; both variants feed PE_IMG pixels."""
    args = dict(vision_config.model_args or {})
    args["img_size"] = PE_IMG
    if variant == "tiny":
        args.update(depth=2, embed_dim=64, num_heads=2, attn_pool_num_heads=2)
    vision_config.model_args = args


@config("pe_video_encoder")
def _pe_video_encoder_config(cfg, variant):
    """The frame tower is a timm ViT (vit_pe_core_large_patch14_336): see _small_timm_vit."""
    _small_timm_vit(cfg.vision_config, variant)


@config("pe_video")
def _pe_video_config(cfg, variant):
    """PeVideoModel's video encoder wraps the same timm ViT: see _small_timm_vit."""
    _small_timm_vit(cfg.video_config.vision_config, variant)


@inputs("pe_video_encoder", "pe_video")
def _pe_video_inputs(model, cfg, head_kind, kw, with_labels):
    """PeVideoProcessor output: 5-D frames (batch, frames, 3, H, W) at the tower's resolution
    (modeling_pe_video.py:200-204) with a per-frame padding mask; PeVideoModel also takes the
    caption (input_ids, attention_mask) and trains on its sigmoid video-text loss
    (``return_loss``, modeling_pe_video.py:654)."""
    kw["pixel_values_videos"] = torch.randn(BATCH, 4, 3, PE_IMG, PE_IMG)
    kw["padding_mask_videos"] = torch.ones(BATCH, 4, dtype=torch.long)
    if cfg.model_type == "pe_video":
        ids = text_ids(cfg.text_config)
        kw["input_ids"] = ids
        kw["attention_mask"] = torch.ones_like(ids)
        if with_labels:
            kw["return_loss"] = True


# --------------------------------------------------------------------------- vision-encoder-decoder
@config("vision-encoder-decoder")
def _ved_config(cfg, variant):
    """Checkpoints (and the model card, modeling_vision_encoder_decoder.py:363-364) set
    ``decoder_start_token_id`` and ``pad_token_id``: training shifts the labels with them
    (modeling_vision_encoder_decoder.py:411-414)."""
    dec = cfg.decoder
    if getattr(cfg, "pad_token_id", None) is None:
        cfg.pad_token_id = getattr(dec, "pad_token_id", None) or 0
    if getattr(cfg, "decoder_start_token_id", None) is None:
        cfg.decoder_start_token_id = getattr(dec, "bos_token_id", None) or getattr(dec, "cls_token_id", None) or 1


@inputs("vision-encoder-decoder", feeds_images=True)
def _ved_inputs(model, cfg, head_kind, kw, with_labels):
    """The image processor resizes to the encoder's ``image_size`` (the ViT encoder checks
    it); training passes the caption as labels and the model builds decoder_input_ids by
    shifting them (the model card's ``model(pixel_values=..., labels=...)``)."""
    kw["pixel_values"] = pixel_values(cfg.encoder)
    if with_labels:
        kw.pop("decoder_input_ids", None)
        kw["labels"] = text_ids(cfg.decoder, length=8)
    else:
        kw["decoder_input_ids"] = text_ids(cfg.decoder, length=8)


# --------------------------------------------------------------------------- vitpose
@inputs("vitpose")
def _vitpose_inputs(model, cfg, head_kind, kw, with_labels):
    """VitPoseImageProcessor crops each person box to the backbone's (height, width)
    ``image_size`` (256x192), which the backbone embedding checks and the head reshapes to
    (modeling_vitpose.py:260-263)."""
    h, w = cfg.backbone_config.image_size
    kw["pixel_values"] = torch.randn(BATCH, num_channels(cfg.backbone_config), h, w)


# --------------------------------------------------------------------------- depth_pro
DEPTH_PRO_PATCH = 64  # the encoders' tile (384 by default), 4x4 patches of 16px


@config("depth_pro")
def _depth_pro_config(cfg, variant):
    """DepthPro tiles the image at ``scaled_images_ratios`` into ``patch_size`` squares and every
    Dinov2 encoder must run at exactly ``patch_size`` (configuration_depth_pro.py validate:
    sub image_size == patch_size). A 64px tile with 16px patches instead of 384px; the fusion hooks must name layers the shrunk patch encoder has
    (``hidden_states[hook + 1]``, modeling_depth_pro.py:318); ``use_fov_model`` is on so the
    field-of-view branch of DepthProForDepthEstimation is traced too."""
    cfg.patch_size = DEPTH_PRO_PATCH
    for key in ("image_model_config", "patch_model_config", "fov_model_config"):
        sub = getattr(cfg, key)
        sub.image_size = DEPTH_PRO_PATCH
        sub.patch_size = 16
    n = cfg.patch_model_config.num_hidden_layers
    cfg.intermediate_hook_ids = [n - 1, max(n - 2, 0)]
    cfg.use_fov_model = True
    if variant == "tiny":
        cfg.fusion_hidden_size = 64
        cfg.intermediate_feature_dims = [64, 64]
        cfg.scaled_images_feature_dims = [64, 64, 32]


@inputs("depth_pro")
def _depth_pro_inputs(model, cfg, head_kind, kw, with_labels):
    """The image processor resizes to ``patch_size / min(scaled_images_ratios)`` (1536 for
    384px tiles, image_processing_depth_pro: size 1536), the smallest image the model accepts
    (modeling_depth_pro.py:244)."""
    side = int(round(cfg.patch_size / min(cfg.scaled_images_ratios)))
    kw["pixel_values"] = torch.randn(BATCH, 3, side, side)


# --------------------------------------------------------------------------- dpt
@config("dpt")
def _dpt_config(cfg, variant):
    """DPT keeps the encoder layers whose 0-based index (over ``hidden_states[1:]``) is in
    ``backbone_out_indices`` and needs one per neck stage (modeling_dpt.py:995-1000, 863):
    the last ``len(neck_hidden_sizes)`` layers of the shrunk stack, as (2, 5, 8, 11) are
    for 12 layers (the generic clamp gives [1..4] for 4 layers, one past the end)."""
    if getattr(cfg, "backbone_config", None) is None and not cfg.is_hybrid:
        k = len(cfg.neck_hidden_sizes)
        cfg.num_hidden_layers = max(cfg.num_hidden_layers, k)
        cfg.backbone_out_indices = list(range(cfg.num_hidden_layers - k, cfg.num_hidden_layers))


# --------------------------------------------------------------------------- vitmatte
@config("vitmatte")
def _vitmatte_config(cfg, variant):
    """As a checkpoint's config.json loads them (hustvl/vitmatte-*): the size lists are lists
    (the class defaults are tuples, which ``[hidden_size] + fusion_hidden_sizes`` rejects,
    modeling_vitmatte.py:191), the backbone reads image + trimap (4 channels, the convstream
    too: modeling_vitmatte.py:108-110), and the decoder's first fusion takes the backbone's
    width (``hidden_size`` equals the backbone's)."""
    cfg.fusion_hidden_sizes = list(cfg.fusion_hidden_sizes)
    cfg.convstream_hidden_sizes = list(cfg.convstream_hidden_sizes)
    cfg.backbone_config.num_channels = 4
    cfg.hidden_size = cfg.backbone_config.hidden_size


@inputs("vitmatte")
def _vitmatte_inputs(model, cfg, head_kind, kw, with_labels):
    """VitMatteImageProcessor concatenates the RGB image and the trimap (4 channels) and pads
    to a multiple of 32 (size_divisor): a 64x64 image."""
    kw["pixel_values"] = torch.randn(BATCH, 4, 64, 64)


# --------------------------------------------------------------------------- timm_backbone
@config("timm_backbone")
def _timm_backbone_config(cfg, variant):
    """A TimmBackboneConfig always names its timm architecture (``TimmBackboneConfig("resnet50")``,
    the class docstring; modeling_timm_backbone.py:51 rejects None); the model is built
    by ``timm.create_model(backbone, pretrained=False, features_only=True)``, no download.
    resnet18 is the small member of the docstring's family."""
    if cfg.backbone is None:
        cfg.backbone = "resnet18"


# --------------------------------------------------------------------------- oneformer
@inputs("oneformer")
def _oneformer_inputs(model, cfg, head_kind, kw, with_labels):
    """OneFormerProcessor output (modeling_oneformer.py:2872-2938): the image, and the task
    prompt ("the task is semantic") as CLIP token ids padded to ``task_seq_len``, which the task
    MLP reads as a float vector (``task_inputs.to(self.dtype)``). Training targets are what
    its image processor builds per image: binary masks (objects, H, W) and their class ids."""
    h = w = 64
    kw["pixel_values"] = torch.randn(BATCH, 3, h, w)
    task = torch.zeros(BATCH, cfg.task_seq_len, dtype=torch.long)
    task[:, :7] = torch.randint(1, min(cfg.text_encoder_vocab_size, 300), (BATCH, 7))
    kw["task_inputs"] = task
    kw["pixel_mask"] = torch.ones(BATCH, h, w, dtype=torch.long)
    if with_labels and type(model).__name__ == "OneFormerForUniversalSegmentation":
        n = 3
        kw["mask_labels"] = [(torch.rand(n, h, w) > 0.5).float() for _ in range(BATCH)]
        kw["class_labels"] = [torch.randint(0, cfg.num_labels, (n,)) for _ in range(BATCH)]
