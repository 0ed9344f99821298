"""Recipes: detection (see __init__.py for what a recipe may do)."""

from __future__ import annotations

import inspect
import sys

import torch

from .registry import build, config, inputs  # noqa: F401
from ..hf_inputs import BATCH, pixel_values, text_ids

# transformers source referred to below: site-packages/transformers/models/<type>/...


# --------------------------------------------------------------------------- keypoint matching
@inputs("lightglue", "efficientloftr")
def _image_pair(model, cfg, head_kind, kw, with_labels):
    """Keypoint matchers always take an image *pair*: (batch, 2, C, H, W)
    (modeling_efficientloftr.py:740, modeling_lightglue.py forward check); the generic builder
    stacks the pair only for the keypoint_matching head, not for the base class."""
    pv = kw.get("pixel_values")
    if pv is None or pv.dim() == 4:
        pv = pixel_values(cfg) if pv is None else pv
        kw["pixel_values"] = torch.stack([pv, pv.flip(-1)], dim=1)


@config("efficientloftr")
def _loftr_widths(cfg, variant):
    """The 2-D RoPE fills hidden_size/2 channels per axis from head_dim * partial_rotary_factor(4)
    frequencies (modeling_efficientloftr.py:76-85, 113): with 8 heads that is exact; and
    hidden_size must equal out_features[-1] (configuration_efficientloftr.py:128). The generic
    width shrink breaks both, so keep the checkpoint's attention widths (the conv stages are
    what is big, and their depth is what the shrink already cut)."""
    cfg.hidden_size = cfg.out_features[-1]
    cfg.num_attention_heads = cfg.num_key_value_heads = 8
    cfg.intermediate_size = cfg.hidden_size * 2


# --------------------------------------------------------------------------- seggpt
@config("seggpt")
def _seggpt_size(cfg, variant):
    """SegGPT's image is the prompt image stacked over the input image on the height axis:
    image_size = (2 * side, side) (896, 448 in the checkpoint; modeling_seggpt.py:706). A small
    side (4 patches) keeps that layout."""
    side = 4 * int(cfg.patch_size)
    cfg.image_size = [2 * side, side]


@inputs("seggpt", feeds_images=True)
def _seggpt_inputs(model, cfg, head_kind, kw, with_labels):
    """What SegGptImageProcessor returns: the input image, a prompt image and the prompt's mask,
    each (batch, 3, side, side) (modeling_seggpt.py:628-632); training adds the target mask as
    labels (the in-context painting loss)."""
    side = int(cfg.image_size[1])
    kw["pixel_values"] = torch.randn(BATCH, 3, side, side)
    kw["prompt_pixel_values"] = torch.randn(BATCH, 3, side, side)
    kw["prompt_masks"] = torch.randn(BATCH, 3, side, side)
    if with_labels:
        kw["labels"] = torch.randn(BATCH, 3, side, side)
        # in-context painting masks the lower (target) half of the stacked image, as the
        # model's own default (modeling_seggpt.py:720-727), one row per image
        n = model.config.image_size[0] * side // int(cfg.patch_size) ** 2
        kw["bool_masked_pos"] = torch.cat([torch.zeros(BATCH, n // 2), torch.ones(BATCH, n - n // 2)], 1).bool()


# --------------------------------------------------------------------------- omdet-turbo
@config("omdet-turbo")
def _omdet_image_size(cfg, variant):
    """The timm Swin backbone is built for one input size, img_size = config.image_size
    (configuration_omdet_turbo.py:164-178, copied into timm_kwargs at init): keep it equal to
    the shrunk image_size the inputs use."""
    cfg.backbone_config.img_size = cfg.image_size
    cfg.timm_kwargs = dict(getattr(cfg, "timm_kwargs", {}), img_size=cfg.image_size)
    # The decoder has a task_project layer only when class_embed_dim != decoder_hidden_dim
    # (modeling_omdet_turbo.py:1166) yet always calls it (:1346); checkpoints have 512 vs 256.
    # Task features are the raw text hidden states (:261-268), so text hidden_size ==
    # class_embed_dim too. The width shrink made all three equal: keep the checkpoint's
    # 2x ratio with a text tower of 2 * decoder_hidden_dim (64-wide heads, as CLIP's).
    width = 2 * cfg.decoder_hidden_dim
    text = cfg.text_config
    text.hidden_size, text.num_attention_heads, text.intermediate_size = width, width // 64, 4 * width
    cfg.class_embed_dim = cfg.text_projection_in_dim = cfg.text_projection_out_dim = width


@inputs("omdet-turbo")
def _omdet_inputs(model, cfg, head_kind, kw, with_labels):
    """OmDetTurboProcessor's output (processing_omdet_turbo.py:181-243): the class prompts of
    all tasks flattened (total_classes, L) with classes_structure = classes per image, and one
    task prompt per image (batch, L). Training is not implemented in the model (it raises on
    labels, modeling_omdet_turbo.py), so no labels are given."""
    structure = [2, 3][:BATCH] + [2] * max(0, BATCH - 2)
    length = 8
    classes = text_ids(cfg.text_config, length=length, batch=sum(structure))
    tasks = text_ids(cfg.text_config, length=length, batch=BATCH)
    kw.update(
        pixel_values=kw.get("pixel_values", pixel_values(cfg)),
        classes_input_ids=classes, classes_attention_mask=torch.ones_like(classes),
        tasks_input_ids=tasks, tasks_attention_mask=torch.ones_like(tasks),
        classes_structure=torch.tensor(structure, dtype=torch.long),
    )
    kw.pop("labels", None)


# --------------------------------------------------------------------------- PP-OCR detectors
def _pp_ocr_det_neck(cfg, variant):
    """PP-OCRv5-server / v6-medium text detectors leave the neck unset (None) in the class
    defaults; every checkpoint sets it (modeling_pp_ocrv5_server_det.py:43-88, 127, 292-310):
    1x1 reduce/return convs, 7/5/3 vertical, horizontal and square convs (stride 1, same
    padding: their outputs are summed), the neck's per-stage upsampling 1,2,4,8 and the DB
    head's transposed-conv kernels 3,2,2."""
    def conv(k, p):
        return [k, 1, p]

    if cfg.intraclass_block_config is None:
        cfg.intraclass_block_config = {
            "reduce_channel": [1, 1, 0],
            "return_channel": [1, 1, 0],
            "vertical_long_to_small_conv_longratio": conv([7, 1], [3, 0]),
            "vertical_long_to_small_conv_midratio": conv([5, 1], [2, 0]),
            "vertical_long_to_small_conv_shortratio": conv([3, 1], [1, 0]),
            "horizontal_small_to_long_conv_longratio": conv([1, 7], [0, 3]),
            "horizontal_small_to_long_conv_midratio": conv([1, 5], [0, 2]),
            "horizontal_small_to_long_conv_shortratio": conv([1, 3], [0, 1]),
            "symmetric_conv_long_longratio": conv([7, 7], [3, 3]),
            "symmetric_conv_long_midratio": conv([5, 5], [2, 2]),
            "symmetric_conv_long_shortratio": conv([3, 3], [1, 1]),
        }
    if cfg.scale_factor_list is None:
        cfg.scale_factor_list = [1, 2, 4, 8]
    if cfg.kernel_list is None:
        cfg.kernel_list = [3, 2, 2]


config("pp_ocrv5_server_det", "pp_ocrv6_medium_det")(_pp_ocr_det_neck)


# --------------------------------------------------------------------------- SAM2 / EdgeTAM
SAM_IMAGE = 128  # 8 x the prompt encoder's 16-pixel patch


def _sam2_image_size(cfg, variant):
    """SAM2-style models reshape the FPN levels to vision_config.backbone_feature_sizes
    (image / 4, / 8, / 16: [[256,256],[128,128],[64,64]] for the 1024-pixel checkpoints,
    modeling_sam2.py:1534) and place prompts on an image_size / patch_size grid: a smaller
    image keeps the same ratios everywhere (the Hiera backbone's image_size too)."""
    s = SAM_IMAGE
    pe = cfg.prompt_encoder_config
    pe.image_size = s
    vis = cfg.vision_config
    vis.backbone_feature_sizes = [[s // 4, s // 4], [s // 8, s // 8], [s // 16, s // 16]]
    bb = getattr(vis, "backbone_config", None)
    if bb is not None and hasattr(bb, "image_size"):
        bb.image_size = [s, s]


def _edgetam_backbone(vis):
    """EdgeTAM's image encoder is timm's RepViT-M1 (channels 48..384 =
    backbone_channel_list); the class default misspells the key ("archirecture",
    configuration_edgetam.py:55) so timm_wrapper falls back to resnet50, whose 1024-channel
    maps no checkpoint has. Checkpoints set architecture = repvit_m1."""
    vis.backbone_config.architecture = "repvit_m1"


config("sam2", "sam2_video")(_sam2_image_size)


@config("edgetam", "edgetam_video")
def _edgetam_config(cfg, variant):
    """EdgeTAM's RepViT backbone (the class default misspells its key) and the SAM2 feature
    sizes scaled to the shrunk image; see _edgetam_backbone and _sam2_image_size."""
    _edgetam_backbone(cfg.vision_config)
    _sam2_image_size(cfg, variant)


@config("edgetam_vision_model")
def _edgetam_vision_config(cfg, variant):
    """The vision tower alone: the same RepViT backbone as edgetam (_edgetam_backbone)."""
    _edgetam_backbone(cfg)


@inputs("sam2", "sam2_video", "edgetam", "edgetam_video", "edgetam_vision_model", feeds_images=True)
def _sam2_pixels(model, cfg, head_kind, kw, with_labels):
    """Sam2Processor resizes every image to the model's square input size (image_size)."""
    if "pixel_values" in kw or not kw:
        s = _sam_size(cfg)
        kw["pixel_values"] = torch.randn(BATCH, 3, s, s)


def _sam_size(cfg):
    cfg = getattr(cfg, "tracker_config", None) or cfg
    pe = getattr(cfg, "prompt_encoder_config", None)
    return pe.image_size if pe is not None else SAM_IMAGE


# --------------------------------------------------------------------------- LW-DETR
@config("lw_detr")
def _lw_detr_projector(cfg, variant):
    """The class default has no projector level (projector_scale_factors = ()), so the encoder
    gets no feature map (modeling_lw_detr.py:1380 cats an empty list); every checkpoint sets
    one or more levels (LW-DETR tiny/small: the P4 level, scale 1.0). The derived fields follow
    configuration_lw_detr.py:213-215."""
    if not cfg.projector_scale_factors:
        cfg.projector_scale_factors = [1.0]
        cfg.projector_in_channels = [cfg.d_model] * len(cfg.projector_scale_factors)
        cfg.num_feature_levels = len(cfg.projector_scale_factors)


# --------------------------------------------------------------------------- UVDoc
@config("uvdoc")
def _uvdoc_all_bridges(cfg, variant):
    """UVDoc's head fuses every bridge stage: bridge_connector takes bridge_connector[0] *
    len(stage_configs) channels from the concatenated backbone feature maps
    (modeling_uvdoc.py:336-340, 381), so the backbone returns all six stages (the class default
    lists only the last)."""
    bb = cfg.backbone_config
    bb.out_features = list(bb.stage_names[1:])


# --------------------------------------------------------------------------- PP-OCR recognizer
@inputs("pp_ocrv5_mobile_rec", feeds_images=True)
def _ocr_rec_line(model, cfg, head_kind, kw, with_labels):
    """A text-line crop: the PP-OCRv5 recognizer's processor resizes to height 48 and pads the
    width (320 for the checkpoint's rec_image_shape 3x48x320); the backbone halves the height
    five times and ends in a (3, 2) pool (modeling_pp_ocrv5_mobile_rec.py:338), which a
    square 64-pixel image is too short for."""
    kw["pixel_values"] = torch.randn(BATCH, 3, 48, 320)


# PP-LCNetV4's detection layout (PP-OCRv6 det): a stride-2 block opening stages 2-4, so the
# four stages give the stride 4/8/16/32 pyramid; the class default is the recognition layout
# (height-only [2, 1] strides, stages 1 and 2 at the same size).
_LCNET_V4_DET_STEM = [3, 24, 48]
_LCNET_V4_DET_BLOCKS = [
    [[3, 48, 48, 1, True], [3, 48, 48, 1, False]],
    [[3, 48, 96, 2, False], [3, 96, 96, 1, True], [3, 96, 96, 1, False]],
    [[3, 96, 192, 2, False], [3, 192, 192, 1, True], [3, 192, 192, 1, False],
     [3, 192, 192, 1, True], [3, 192, 192, 1, False]],
    [[3, 192, 384, 2, False], [3, 384, 384, 1, True], [3, 384, 384, 1, False]],
]


def _lcnet_v4_det_backbone():
    from transformers import AutoConfig

    return AutoConfig.for_model(
        "pp_lcnet_v4", stem_channels=list(_LCNET_V4_DET_STEM), block_configs=_LCNET_V4_DET_BLOCKS,
        out_features=["stage1", "stage2", "stage3", "stage4"])


@config("pp_ocrv6_small_det", "pp_ocrv6_medium_det")
def _pp_ocrv6_det_backbone(cfg, variant):
    """PP-OCRv6 detectors fuse a 4-level pyramid: the necks add each level to the next one
    upsampled 2x (modeling_pp_ocrv6_small_det.py:250-251, modeling_pp_ocrv5_server_det.py:
    190-193) and read every stage (layer_list_out_channels / backbone stage_out_channels).
    Their configs default to PP-LCNetV4's recognition layout with only stage4 out
    (configuration_pp_ocrv6_small_det.py:69-72); a det checkpoint's backbone is the det layout
    with all four stages out, and the small neck's input widths are those stages' widths."""
    cfg.backbone_config = _lcnet_v4_det_backbone()
    if hasattr(cfg, "layer_list_out_channels"):
        cfg.layer_list_out_channels = list(cfg.backbone_config.stage_out_channels)


@config("pp_ocrv5_mobile_rec")
def _pp_ocrv5_rec_backbone(cfg, variant):
    """PP-OCRv5 mobile rec's checkpoint backbone is PP-LCNetV3 in its recognition layout
    (PaddleOCR NET_CONFIG_rec): height-only / width-only strides so a 48x320 line ends 3 rows
    high for the (3, 2) pool (modeling_pp_ocrv5_mobile_rec.py:338). The config class defaults
    to the detection layout (all strides 2, configuration_pp_ocrv5_mobile_rec.py:39-50), which
    leaves 1-2 rows: set the recognition strides on the same blocks."""
    blocks = [[list(b) for b in stage] for stage in cfg.backbone_config.block_configs]
    blocks[1][0][3] = 1
    blocks[2][0][3] = [2, 1]
    blocks[3][0][3] = [1, 2]
    blocks[4][0][3] = [2, 1]
    blocks[4][2][3] = [2, 1]
    cfg.backbone_config.block_configs = blocks


# --------------------------------------------------------------------------- Sapiens2
@config("sapiens2")
def _sapiens2(cfg, variant):
    """(1) num_key_value_heads_per_layer is derived at init (configuration_sapiens2.py:230-238:
    full attention in the first/last 8 layers, GQA with num_key_value_attention_heads (half the
    heads) between) and is not re-derived after the shrink: keep both kinds on the shrunk
    stack, layer 0 full and layer 1 GQA, at the shrunk head count.
    (2) The segmentation head's sub-config is unset in the class default (every size None,
    modeling_sapiens2.py:689-723 subscripts it); seg checkpoints set transposed-conv upsample
    blocks followed by 1x1 convs: two of each, at small widths."""
    heads = cfg.num_attention_heads
    kv = max(1, heads // 2)
    n = cfg.num_hidden_layers
    cfg.num_key_value_attention_heads = kv
    cfg.num_first_full_attention_layers, cfg.num_last_full_attention_layers = 1, 0
    cfg.num_key_value_heads_per_layer = [heads] + [kv] * (n - 1)
    head = cfg.head_config
    if head.upsample_out_channels is None:
        width = 64 if variant == "tiny" else 256
        head.upsample_out_channels = [width, width]
        head.upsample_kernel_sizes = [head.upsample_kernel_size] * 2
        head.conv_out_channels = [width // 2, width // 2]
        head.conv_kernel_sizes = [head.conv_kernel_size] * 2


@inputs("sapiens2")
def _sapiens2_labels(model, cfg, head_kind, kw, with_labels):
    """The segmentation head's loss takes a per-pixel class map (batch, H, W), as its
    processor returns for segmentation maps."""
    if with_labels and head_kind == "semantic_segmentation":
        pv = kw["pixel_values"]
        kw["labels"] = torch.randint(0, cfg.num_labels, (pv.shape[0], *pv.shape[-2:]))


# --------------------------------------------------------------------------- PP-DocLayoutV2
@config("pp_doclayout_v2")
def _pp_doclayout_v2(cfg, variant):
    """(1) The decoder's input projections read the encoder's outputs, so decoder_in_channels
    is encoder_hidden_dim per level (256 == 256 in checkpoints, modeling_pp_doclayout_v2.py:
    2052-2070, 2200); the width shrink changed only one side.
    (2) Post-processing feeds the reading-order head with per-class score thresholds and a
    class -> reading-order category map (:2445, :2461); the class default leaves both None,
    checkpoints give one entry per label (categories < reading_order_config.num_classes)."""
    cfg.decoder_in_channels = [cfg.encoder_hidden_dim] * len(cfg.decoder_in_channels)
    n = cfg.num_labels
    if cfg.class_thresholds is None:
        cfg.class_thresholds = [0.5] * n
    if cfg.class_order is None:
        cfg.class_order = [i % cfg.reading_order_config.num_classes for i in range(n)]


# --------------------------------------------------------------------------- video trackers
VIDEO_FRAMES = 2


def _session_devices(model) -> dict:
    """A user's processor.init_video_session(video, inference_device=...) names the model's
    device, and the session keeps the frames and the tracking state there too (the storage
    and state devices default to it, processing_sam2_video.py:542-544). The session moves what
    it is given (add_point_inputs, the frames) itself; a session left on the CPU next to a
    model on the chip would be a harness mistake, not the model's."""
    device = next(model.parameters()).device
    return {"inference_device": device, "inference_state_device": device, "video_storage_device": device}


def _tracker_session(model, image_size):
    """What Sam2VideoProcessor.init_video_session + add_inputs_to_inference_session build
    (processing_sam2_video.py:512-700): the video's frames resized to the model's square input,
    one object with one positive click on frame 0 (coordinates in the processor's target_size
    frame, i.e. the input size). The session is the model's input (forward's only required
    argument); a fresh one is built for each phase."""
    mod = sys.modules[type(model).__module__]
    session_cls = next(getattr(mod, n) for n in dir(mod) if n.endswith("InferenceSession"))
    frames = torch.randn(VIDEO_FRAMES, 3, image_size, image_size)
    session = session_cls(video=frames, video_height=image_size, video_width=image_size, dtype=torch.float32,
                          **_session_devices(model))
    obj_idx = session.obj_id_to_idx(1)
    session.add_point_inputs(obj_idx, 0, {
        "point_coords": torch.tensor([[[[image_size / 2, image_size / 3]]]], dtype=torch.float32),
        "point_labels": torch.ones(1, 1, 1, dtype=torch.int32),
    })
    session.obj_with_new_inputs = [1]
    return session


def _memory_sizes(cfg):
    """The memory attention's RoPE grid and EdgeTAM's 2-D perceiver windows are laid over the
    image / 16 feature map (64x64 with 16x16 windows for the 1024-pixel checkpoints,
    modeling_edgetam_video.py:1573-1576): keep them on the smaller map."""
    n = cfg.prompt_encoder_config.image_size // cfg.prompt_encoder_config.patch_size
    if getattr(cfg, "memory_attention_rope_feat_sizes", None) is not None:
        cfg.memory_attention_rope_feat_sizes = [n, n]
    if getattr(cfg, "perceiver_resampler_num_latents_2d", None):
        cfg.perceiver_resampler_num_latents_2d = (n // 2) ** 2


@config("sam2_video", "edgetam_video")
def _video_memory(cfg, variant):
    """The video memory's RoPE grid and windows follow the shrunk feature map (_memory_sizes)."""
    _memory_sizes(cfg)


@config("sam3_tracker_video")
def _sam3_tracker_video_config(cfg, variant):
    """SAM3's tracker reads a ViT (patch 14) at 1008 pixels: a 72x72 grid upsampled 4x/2x/1x
    into backbone_feature_sizes [[288,288],[144,144],[72,72]] (scale_factors); the same layout
    on an 8x8 grid (112 pixels)."""
    pe, vis = cfg.prompt_encoder_config, cfg.vision_config
    patch = vis.backbone_config.patch_size
    s = 8 * patch
    pe.image_size, pe.patch_size = s, patch
    vis.backbone_config.image_size = s
    n = s // patch
    vis.backbone_feature_sizes = [[4 * n, 4 * n], [2 * n, 2 * n], [n, n]]
    _memory_sizes(cfg)


@inputs("sam2_video", "edgetam_video", "sam3_tracker_video", feeds_images=True)
def _tracker_inputs(model, cfg, head_kind, kw, with_labels):
    """The video model (base class) runs one frame of a tracking session; the image head
    (Sam2Model / EdgeTamModel) gets the frames as images (_sam2_pixels)."""
    if "inference_session" in inspect.signature(model.forward).parameters:
        kw.clear()
        kw["inference_session"] = _tracker_session(model, _sam_size(cfg))
        kw["frame_idx"] = 0


@config("sam3_video")
def _sam3_video_config(cfg, variant):
    """Sam3TrackerModel (the image head) runs on sam3_video's tracker_config
    (modeling_sam3_tracker.py:789-792): the same 112-pixel layout as sam3_tracker_video."""
    _sam3_tracker_video_config(cfg.tracker_config, variant)
    # the detector reads the same frames: same ViT input size and feature pyramid
    tv, dv = cfg.tracker_config.vision_config, cfg.detector_config.vision_config
    dv.backbone_config.image_size = tv.backbone_config.image_size
    dv.backbone_feature_sizes = [list(x) for x in tv.backbone_feature_sizes]


@inputs("sam3_video", feeds_images=True)
def _sam3_video_inputs(model, cfg, head_kind, kw, with_labels):
    """The image head gets square frames of the tracker's input size."""
    if "inference_session" in inspect.signature(model.forward).parameters:
        kw.clear()
        kw["inference_session"] = _sam3_video_session(model, cfg)
        kw["frame_idx"] = 0
    elif "pixel_values" in kw:
        s = _sam_size(cfg)
        kw["pixel_values"] = torch.randn(BATCH, 3, s, s)


def _sam3_video_session(model, cfg):
    """Sam3VideoProcessor.init_video_session + add_text_prompt (processing_sam3_video.py:
    101-131): the frames at the input size and one text prompt tokenized to max_length 32."""
    mod = sys.modules[type(model).__module__]
    s = _sam_size(cfg)
    session = mod.Sam3VideoInferenceSession(
        video=torch.randn(VIDEO_FRAMES, 3, s, s), video_height=s, video_width=s, dtype=torch.float32,
        **_session_devices(model))
    pid = session.add_prompt("a cat")
    ids = text_ids(cfg.detector_config.text_config, length=32, batch=1).to(session.inference_device)  # :124
    session.prompt_input_ids[pid] = ids
    session.prompt_attention_masks[pid] = torch.ones_like(ids)
    return session


@inputs("lw_detr")
def _lw_detr_labels(model, cfg, head_kind, kw, with_labels):
    """The detection head's loss (Hungarian matching + focal/L1/GIoU, modeling_lw_detr.py:1619)
    takes what DETR-style processors return per image: class_labels (n,) and normalized
    (cx, cy, w, h) boxes (n, 4)."""
    if with_labels and head_kind == "object_detection":
        n = 3
        kw["labels"] = [
            {"class_labels": torch.randint(0, cfg.num_labels, (n,)),
             "boxes": torch.cat([torch.rand(n, 2) * 0.5 + 0.25, torch.rand(n, 2) * 0.3 + 0.1], dim=1)}
            for _ in range(kw["pixel_values"].shape[0])
        ]
