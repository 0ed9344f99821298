"""Recipes: vlm2 (see __init__.py for what a recipe may do)."""

from __future__ import annotations

import inspect

import torch

from .registry import build, config, inputs  # noqa: F401
from ..hf_inputs import BATCH, _vision_cfg


def _patch(v) -> int:
    p = getattr(v, "patch_size", 14) or 14
    return int(p[0] if isinstance(p, (list, tuple)) else p)


# --------------------------------------------------------------------------- kimi_k25_vision
@inputs("kimi_k25_vision")
def _(model, cfg, head_kind, kw, with_labels):
    """The Kimi-K2.5 image processor emits one (3, patch, patch) tile per patch (the patch
    embed is a Conv2d whose kernel is the patch, modeling_kimi_k25.py:153) and a (t, h, w)
    grid per image whose h and w are multiples of merge_kernel_size (temporal_merge)."""
    ps = _patch(cfg)
    mh, mw = (cfg.merge_kernel_size or (2, 2))
    h, w = 2 * mh, 2 * mw
    kw.clear()
    kw["pixel_values"] = torch.randn(BATCH * h * w, 3, ps, ps)
    kw["grid_thw"] = torch.tensor([[1, h, w]] * BATCH)


# --------------------------------------------------------------------------- siglip2
def _siglip2_patches(v):
    """NaFlex inputs: (batch, max_patches, C*p*p) patch rows, a patch mask and each image's
    (rows, cols) patch grid (Siglip2ImageProcessor; modeling_siglip2.py:176, :505). The second
    image is smaller and padded, as a batch of differently sized images is."""
    ps = _patch(v)
    ch = int(getattr(v, "num_channels", 3) or 3)
    n = 16
    shapes = torch.tensor([[4, 4], [2, 4]] + [[4, 4]] * (BATCH - 2))
    mask = torch.zeros(BATCH, n, dtype=torch.long)
    for i, (r, c) in enumerate(shapes.tolist()):
        mask[i, : r * c] = 1
    pv = torch.randn(BATCH, n, ch * ps * ps) * mask[..., None]
    return pv, mask, shapes


@inputs("siglip2", "siglip2_vision_model")
def _(model, cfg, head_kind, kw, with_labels):
    """Siglip2 takes NaFlex patch rows, never an image tensor (_siglip2_patches)."""
    pv, mask, shapes = _siglip2_patches(_vision_cfg(cfg))
    kw["pixel_values"], kw["pixel_attention_mask"], kw["spatial_shapes"] = pv, mask, shapes


# --------------------------------------------------------------------------- gemma4_vision
@inputs("gemma4_vision")
def _(model, cfg, head_kind, kw, with_labels):
    """Gemma4ImageProcessor: (batch, max_patches, 3*p*p) patch rows in [0, 1] with each
    patch's (x, y) position, (-1, -1) for padding; the patch grid is a multiple of
    pooling_kernel_size, which pools it to max_patches / k^2 tokens (modeling_gemma4.py:2086)."""
    ps, k = _patch(cfg), int(cfg.pooling_kernel_size or 3)
    side = 2 * k
    n = side * side
    ys, xs = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
    pos = torch.stack([xs.flatten(), ys.flatten()], dim=-1)
    kw.clear()
    kw["pixel_values"] = torch.rand(BATCH, n, 3 * ps * ps)
    kw["pixel_position_ids"] = pos.unsqueeze(0).repeat(BATCH, 1, 1)


@config("siglip2")
def _(cfg, variant):
    """The text head projects into the image embedding space (logits = text @ image.T,
    modeling_siglip2.py:584): projection_size is the vision width; the config derives it from
    the text width at init, before the shrink, so it is re-derived here."""
    cfg.text_config.projection_size = cfg.vision_config.hidden_size


# --------------------------------------------------------------------------- video_llama_3_vision
@inputs("video_llama_3_vision")
def _(model, cfg, head_kind, kw, with_labels):
    """VideoLlama3ImageProcessor: flattened (C*p*p) patches (no temporal patch: the embedding
    views each row as one C x p x p tile, modeling_video_llama_3.py:172), a (t, h, w) grid per
    image and the merge size the vision tower unshuffles with (1 for images, 2 for video
    frames; both are fed here), h and w multiples of it."""
    ps, ch = _patch(cfg), int(cfg.num_channels or 3)
    side = 4
    kw.clear()
    kw["pixel_values"] = torch.randn(BATCH * side * side, ch * ps * ps)
    kw["grid_thw"] = torch.tensor([[1, side, side]] * BATCH)
    kw["merge_sizes"] = torch.tensor(([1, 2] * BATCH)[:BATCH])


def _flat_patches(per_patch: int, side: int, t: int = 1):
    """(BATCH images of t x side x side flattened patch rows, their (t, h, w) grids)."""
    return torch.randn(BATCH * t * side * side, per_patch), torch.tensor([[t, side, side]] * BATCH)


# --------------------------------------------------------------------------- hy_v4_vl_vision
@inputs("hy_v4_vl_vision", "cosmos3_edge_vision")
def _(model, cfg, head_kind, kw, with_labels):
    """Both image processors flatten each patch to C*p*p values, no temporal patch (HYV4VL's
    embedding reshapes rows to C x p x p, modeling_hy_v4_vl.py:809; Cosmos3Edge's is a Linear
    patch embedding, modeling_cosmos3_edge.py:417), with a (1, h, w) grid per image whose sides
    are multiples of spatial_merge_size."""
    ps, ch, m = _patch(cfg), int(cfg.num_channels or 3), int(cfg.spatial_merge_size or 2)
    kw.clear()
    kw["pixel_values"], kw["grid_thw"] = _flat_patches(ch * ps * ps, 2 * m)


# --------------------------------------------------------------------------- inkling2_vision
@inputs("inkling2_vision")
def _(model, cfg, head_kind, kw, with_labels):
    """Inkling2's processor emits one channels-last (p*m, p*m, C) tile in [-1, 1] per language
    model image token, and the grid counts those tokens (modeling_inkling2.py:1569-1572)."""
    ps, ch, m = _patch(cfg), int(cfg.num_channels or 3), int(cfg.spatial_merge_size or 2)
    side = 2
    kw.clear()
    kw["pixel_values"] = torch.rand(BATCH * side * side, ps * m, ps * m, ch) * 2 - 1
    kw["image_grid_thw"] = torch.tensor([[1, side, side]] * BATCH)


# --------------------------------------------------------------------------- minicpm vision towers
@config("minicpm_ocr_vision", "minicpmv4_7_vision")
def _(cfg, variant):
    """Checkpoints insert the ViT window-attention merger inside the encoder stack
    (insert_layer_id 6 of 12+ layers, modeling_minicpm_ocr.py:476): keep it inside the
    shrunk stack, or the merger and the downsampled second half would never run."""
    n = int(cfg.num_hidden_layers)
    if cfg.insert_layer_id is not None and cfg.insert_layer_id >= n - 1:
        cfg.insert_layer_id = max(0, n - 2)


@inputs("minicpm_ocr_vision", "minicpmv4_7_vision")
def _(model, cfg, head_kind, kw, with_labels):
    """MiniCPM's image processor packs every patch of every slice side by side into one
    (1, C, p, n*p) strip (reshape_by_patch, image_processing_minicpm_ocr.py:236-353) and gives
    each slice's (h, w) patch grid, sides multiples of the 2x2 merge windows (twice: ViT merger,
    then the MLP merger)."""
    ps, ch = _patch(cfg), int(cfg.num_channels or 3)
    sizes = torch.tensor([[4, 4], [4, 8]][:BATCH] + [[4, 4]] * max(0, BATCH - 2))
    n = int(sizes.prod(-1).sum())
    kw.clear()
    kw["pixel_values"] = torch.randn(1, ch, ps, n * ps)
    kw["target_sizes"] = sizes.int()


# --------------------------------------------------------------------------- step3p7
@config("step3p7")
def _(cfg, variant):
    """Step3p7's decoder always builds a sliding-window mask next to the causal one
    (modeling_step3p7.py:886), so checkpoints set sliding_window; and every layer past the
    first dense ones is an MoE layer (configuration_step3p7.py:215-224; the init derived
    mlp_layer_types for the unshrunk depth): keep one dense and one MoE layer."""
    t = cfg.get_text_config()
    n = int(t.num_hidden_layers)
    t.sliding_window = 8
    t.mlp_layer_types = (["dense"] + ["sparse"] * n)[:n]


# --------------------------------------------------------------------------- deepseek_ocr2
@config("deepseek_ocr2")
def _(cfg, variant):
    """DeepSeek-OCR-2's language model (DeepSeek-V2 MoE) has a dense first layer and MoE
    layers after it; checkpoints list them in mlp_layer_types, which the class leaves None
    and the decoder layer indexes (modeling_deepseek_ocr2.py:1221)."""
    t = cfg.get_text_config()
    n = int(t.num_hidden_layers)
    t.mlp_layer_types = (["dense"] + ["sparse"] * n)[:n]
    # The SAM neck's last downsample conv outputs the Qwen2 encoder's width (896 in the
    # checkpoint; the features are concatenated with its queries, modeling_deepseek_ocr2.py:951),
    # and SAM keeps a global-attention layer among its windowed ones.
    v = cfg.vision_config
    sam, enc = v.sam_config, v.encoder_config
    sam.downsample_channels = [sam.downsample_channels[0], enc.hidden_size]
    sam.global_attn_indexes = [i for i in sam.global_attn_indexes if i < sam.num_hidden_layers] or [sam.num_hidden_layers - 1]


@inputs("deepseek_ocr2", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """DeepseekOcr2ImageProcessor emits 1024px global views and 768px tiles
    (image_processing_deepseek_ocr2.py:139-147); the vision tower takes either, picking the
    learned queries by resolution (modeling_deepseek_ocr2.py:946). A 768px image (SAM patch 16,
    4x neck: 12x12 features) is fed, the cheaper of the two on CPU."""
    _image_prompt(model, cfg, kw, with_labels, {"pixel_values": torch.randn(1, 3, 768, 768)}, batch=1)


_N_TOKENS: dict = {}


def _image_prompt(model, cfg, kw, with_labels, pixels: dict, batch: int = BATCH, count=None):
    """Feed ``pixels`` (the processor's image tensors) with as many image tokens in front of
    the text as the model's own get_image_features yields per image (as hf.add_image_inputs
    does for the default pixel layout)."""
    from .. import phases
    from ..hf_inputs import count_image_tokens, image_token_id
    from ..hf_inputs import text_ids

    key = (id(model), type(model).__name__, id(cfg), tuple((k, tuple(v.shape)) for k, v in pixels.items()))
    if key not in _N_TOKENS:  # one count per model and image layout, not one per phase
        getter = getattr(model, "get_image_features", None) or getattr(model.model, "get_image_features")
        with torch.no_grad():
            feats = getter(**phases.on_model_device(model, dict(pixels)))
        _N_TOKENS[key] = count(feats) if count else count_image_tokens(feats, batch)
    n = _N_TOKENS[key]
    tok = image_token_id(cfg)
    ids = torch.cat([torch.full((batch, n), tok, dtype=torch.long), text_ids(cfg, length=8, batch=batch)], dim=1)
    kw.update(pixels)
    kw["input_ids"] = ids
    kw["attention_mask"] = torch.ones_like(ids)
    kw.pop("labels", None)
    if with_labels and "labels" in inspect.signature(model.forward).parameters:
        labels = ids.clone()
        labels[:, :n] = -100
        kw["labels"] = labels
    return n


# --------------------------------------------------------------------------- kosmos-2
@inputs("kosmos-2", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """Kosmos2Processor writes `<image>`, latent_query_num image-embedding slots, `</image>`
    before the text and marks the slots in image_embeds_position_mask, where the model
    scatters the image embeddings (modeling_kosmos2.py:938)."""
    from ..hf_inputs import text_ids

    q = int(cfg.latent_query_num)
    ids = text_ids(cfg, length=q + 2 + 8)
    mask = torch.zeros_like(ids)
    mask[:, 1:1 + q] = 1
    kw["input_ids"], kw["attention_mask"], kw["image_embeds_position_mask"] = ids, torch.ones_like(ids), mask
    if with_labels and "labels" in kw:
        kw["labels"] = ids.clone()


# --------------------------------------------------------------------------- idefics
@inputs("idefics", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """IdeficsProcessor batches images per sample: pixel_values (batch, num_images, C, H, W)
    and image_attention_mask (batch, seq, num_images) saying which image each text token
    attends to (modeling_idefics.py:987; vision.py:143 takes the flattened 4-D images)."""
    from ..hf_inputs import pixel_values

    ids = kw["input_ids"]
    kw["pixel_values"] = pixel_values(cfg).unsqueeze(1)
    kw["image_attention_mask"] = torch.ones(ids.shape[0], ids.shape[1], 1, dtype=torch.long)


# --------------------------------------------------------------------------- nemotron_h_omni
@config("nemotron_h_omni")
def _(cfg, variant):
    """The checkpoint's tokenizer has an image placeholder token and its config names it; the
    class default is None (the model scatters image features at input_ids == image_token_id).
    A free low id is used (the generated text avoids special ids)."""
    from ..hf_inputs import special_token_ids

    if cfg.image_token_id is None:
        specials = special_token_ids(cfg)
        cfg.image_token_id = next(i for i in range(3, 1000) if i not in specials)


@inputs("nemotron_h_omni", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """The image processor sends flattened C*p*p patch rows of all images and each image's
    (h, w) patch grid, sides even for the 2x2 pixel shuffle (downsample_ratio 0.5,
    modeling_nemotron_h_omni.py:205-222)."""
    v = cfg.vision_config
    ps, ch = _patch(v), int(getattr(v, "num_channels", 3) or 3)
    side = 4
    pixels = {"pixel_values": torch.randn(BATCH * side * side, ch * ps * ps),
              "image_grid_hw": torch.tensor([[side, side]] * BATCH)}
    _image_prompt(model, cfg, kw, with_labels, pixels)


# --------------------------------------------------------------------------- chameleon / emu3
def _small_vq(vq, codes_key: str) -> None:
    """A small VQ-GAN with every block kind: 3 resolution levels (4x down: down- and
    upsampling both run), one res block per level, narrow channels (GroupNorm's 32 groups
    still divide them), a 64-code codebook."""
    vq.base_channels = 32
    vq.channel_multiplier = [1, 1, 2]
    vq.num_res_blocks = 1
    setattr(vq, codes_key, 64)
    if getattr(vq, "latent_channels", None) and vq.latent_channels > 32:
        vq.latent_channels = 32
    if getattr(vq, "embed_dim", None) and vq.embed_dim > 32:
        vq.embed_dim = 32


@config("chameleon")
def _(cfg, variant):
    """Chameleon checkpoints ship vocabulary_map (the BPE vocabulary): the VQ-GAN's codes map to
    the BPE tokens named IMGIMG<code in letters A-J>Z and `<image>` is the placeholder
    (modeling_chameleon.py:719-745); the class default is None. The VQ-GAN is shrunk (512px,
    5 levels by default) and its codes are given the top ids of the vocabulary."""
    vq = cfg.vq_config
    _small_vq(vq, "num_embeddings")
    vq.resolution = 32
    first = cfg.vocab_size - vq.num_embeddings
    letters = "ABCDEFGHIJ"
    vmap = {"<image>": 8711}  # the checkpoints' placeholder id
    for code in range(vq.num_embeddings):
        vmap["IMGIMG" + "".join(letters[int(d)] for d in str(code)) + "Z"] = first + code
    cfg.vocabulary_map = vmap
    cfg.image_token_id = vmap["<image>"]


@inputs("chameleon", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """ChameleonImageProcessor resizes to the VQ-GAN's resolution; one image per sample, its
    placeholder tokens as many as the VQ-GAN's codes (get_image_features)."""
    r = int(cfg.vq_config.resolution)
    _image_prompt(model, cfg, kw, with_labels, {"pixel_values": torch.randn(BATCH, 3, r, r)})


# --------------------------------------------------------------------------- perception_lm
@config("perception_lm")
def _(cfg, variant):
    """PerceptionLM checkpoints' vision tower is a timm Perception Encoder ViT
    (architecture vit_pe_core_*, model_args with embed_dim, which the projector reads,
    modeling_perception_lm.py:67; the class default is a resnet50 without model_args). A small
    PE-core ViT with the checkpoints' model_args keys: rotary + absolute positions, a CLS token,
    no pooling head."""
    from transformers import TimmWrapperConfig

    cfg.vision_config = TimmWrapperConfig(
        architecture="vit_pe_core_tiny_patch16_384",
        do_pooling=False,
        model_args={
            "embed_dim": 64, "depth": 2, "num_heads": 4, "img_size": [64, 64], "ref_feat_shape": [4, 4],
            "use_rot_pos_emb": True, "use_abs_pos_emb": True, "mlp_ratio": 4.0, "global_pool": "",
            "use_post_transformer_norm": False, "use_fc_norm": False,
        },
    )


@inputs("perception_lm", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """PerceptionLMImageProcessor: (batch, tiles, C, H, W) at the tower's img_size; one tile per
    image here, its tokens counted by get_image_features."""
    h, w = cfg.vision_config.model_args["img_size"]
    _image_prompt(model, cfg, kw, with_labels, {"pixel_values": torch.randn(BATCH, 1, 3, h, w)})


@config("emu3")
def _(cfg, variant):
    """Emu3 checkpoints ship vocabulary_map (the BPE vocabulary): the VQ-GAN's codes map to the
    tokens `<|visual token NNNNNN|>`, `<image>` is the placeholder and `<|extra_200|>` ends each
    row of codes (modeling_emu3.py:1058-1097); the class default is None. The VQ-GAN is shrunk
    (attention kept at its last level) and its codes get ids clear of the special tokens that
    the vocab shrink moved to the top of the range."""
    vq = cfg.vq_config
    _small_vq(vq, "codebook_size")
    vq.attn_resolutions = [len(vq.channel_multiplier) - 1]
    # its attention blocks run at the last level's width (base 256 x 4 = hidden 1024 by default)
    vq.hidden_size = vq.base_channels * vq.channel_multiplier[-1]
    first = 1000
    vmap = {"<image>": first - 1, "<|extra_200|>": first - 2}
    for code in range(vq.codebook_size):
        vmap[f"<|visual token {code:06d}|>"] = first + code
    cfg.vocabulary_map = vmap
    cfg.image_token_id = vmap["<image>"]


@inputs("emu3", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """Emu3ImageProcessor: (batch, C, H, W) images with their (H, W) sizes, multiples of the
    VQ-GAN's spatial factor; the placeholder count (codes plus one end-of-row token per row) is
    what get_image_features yields."""
    r = 32
    _image_prompt(model, cfg, kw, with_labels, {"pixel_values": torch.randn(BATCH, 3, r, r),
                                                "image_sizes": torch.tensor([[r, r]] * BATCH)})


# --------------------------------------------------------------------------- granite4_vision
@config("granite4_vision")
def _(cfg, variant):
    """Granite-4 Vision checkpoints set what the class leaves None: the Window Q-Former
    downsample_rate ("query side/window side", modeling_granite4_vision.py:158), the deepstack
    (vision layer, LLM layer) pairs, and LLM layers for the 4 spatial-offset groups, each
    injected at its own decoder layer (a dict by LLM layer, :1010). The shrunk model keeps a
    4x4 patch grid (one 4x4 window, 2x2 queries, the 2x2 offset sampling), one deepstack
    pair plus the 4 spatial groups on 5 distinct text layers, and anyres pinpoints that are
    multiples of the tile size. The Q-Former mirrors the vision width (set at init, before
    the shrink)."""
    v, t, q = cfg.vision_config, cfg.text_config, cfg.qformer_config
    ps = _patch(v)
    v.image_size = 4 * ps
    cfg.downsample_rate = "2/4"
    cfg.deepstack_layer_map = [(-2, 0)]
    cfg.spatial_vision_layer = -1
    cfg.spatial_target_layers = [1, 2, 3, 4]
    t.num_hidden_layers = 5
    lt = getattr(t, "layer_types", None)
    if isinstance(lt, list) and lt:
        t.layer_types = (lt * 5)[:5]
    s = v.image_size
    cfg.image_grid_pinpoints = [[s, 2 * s], [2 * s, s], [2 * s, 2 * s]]
    q.hidden_size = v.hidden_size
    q.num_attention_heads = max(1, v.hidden_size // 64)
    q.encoder_hidden_size = v.hidden_size
    if q.intermediate_size > 2 * v.hidden_size:
        q.intermediate_size = 2 * v.hidden_size


@inputs("granite4_vision", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """LLaVA-NeXT style anyres input (Granite4Vision's processor): per image a base view plus
    the tiles of its best-fit pinpoint, (batch, 1 + tiles, C, s, s), and its (H, W) size; the
    placeholder count is the packed deepstack features' length (modeling_granite4_vision.py:1208)."""
    s = int(cfg.vision_config.image_size)
    pixels = {"pixel_values": torch.randn(BATCH, 3, 3, s, s), "image_sizes": torch.tensor([[s, 2 * s]] * BATCH)}
    _image_prompt(model, cfg, kw, with_labels, pixels, count=lambda f: len(f.deepstack_features[0][1][0]))


# --------------------------------------------------------------------------- idefics3 / smolvlm
@config("idefics3", "smolvlm")
def _(cfg, variant):
    """The connector pixel-shuffles the square patch grid by scale_factor
    (modeling_idefics3.py:368-377), so every checkpoint's grid side is a multiple of it
    (Idefics3: 364 px / 14 = 26 patches, scale 2, the processor's 169 tokens,
    processing_idefics3.py:44-50; SmolVLM: 512 / 16 = 32, scale 4); the class defaults
    (224 px / 32 = 7 patches, scale 2) are not. Tiny: a grid of 2 * scale_factor a side."""
    v = cfg.vision_config
    v.image_size = _patch(v) * 2 * int(cfg.scale_factor)


@inputs("idefics3", "smolvlm", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """Idefics3ImageProcessor / SmolVLMImageProcessor batch images per sample:
    pixel_values (batch, num_images, C, H, W) at the vision tower's image_size, with a
    pixel_attention_mask (batch, num_images, H, W) of the real pixels (modeling_idefics3.py:537-573);
    one image per sample here, its image_seq_len tokens (pixel-shuffled patches) counted by
    get_image_features."""
    from ..hf_inputs import image_size

    h, w = image_size(cfg)
    pixels = {"pixel_values": torch.randn(BATCH, 1, 3, h, w),
              "pixel_attention_mask": torch.ones(BATCH, 1, h, w, dtype=torch.bool)}
    _image_prompt(model, cfg, kw, with_labels, pixels)


# --------------------------------------------------------------------------- llava-next / onevision
@config("llava_next", "llava_onevision")
def _(cfg, variant):
    """Anyres: the processor tiles each image at the best-fit image_grid_pinpoint, in tiles of
    the vision tower's image_size, so every checkpoint's pinpoints are multiples of it
    (llava-v1.6: 336 for CLIP-L/14-336, onevision: 384 for SigLIP; image_processing_utils.py:642
    select_best_resolution, modeling_llava_next.py:47 get_anyres_image_grid_shape). The shrink
    cut image_size, not the pinpoints: rescale them to the tiny tile."""
    s = int(cfg.vision_config.image_size)
    cfg.image_grid_pinpoints = [[s, 2 * s], [2 * s, s], [2 * s, 2 * s]]


@inputs("llava_next", "llava_onevision", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """LlavaNextImageProcessor / LlavaOnevisionImageProcessor: per image the resized base view
    plus the tiles of its best-fit pinpoint, (batch, 1 + tiles, C, s, s), and its (H, W) size
    (modeling_llava_next.py:315-327, modeling_llava_onevision.py:316-330); a 1:2 image gives
    2 tiles. The placeholder count (tiles unpadded, newline tokens) is get_image_features'."""
    s = int(cfg.vision_config.image_size)
    pixels = {"pixel_values": torch.randn(BATCH, 3, 3, s, s), "image_sizes": torch.tensor([[s, 2 * s]] * BATCH)}
    _image_prompt(model, cfg, kw, with_labels, pixels)


# --------------------------------------------------------------------------- kimi_k25 / paddleocr_vl
@inputs("kimi_k25", "paddleocr_vl", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """Both image processors emit one (C, patch, patch) tile per patch, whose Conv2d patch
    embedding takes it whole (modeling_kimi_k25.py:153, modeling_paddleocr_vl.py:607-610), and a
    (t, h, w) patch grid per image, sides multiples of the merge window (kimi: merge_kernel_size,
    modeling_kimi_k25.py:592; PaddleOCR-VL: spatial_merge_size, :1138)."""
    v = cfg.vision_config
    ps, ch = _patch(v), int(getattr(v, "num_channels", 3) or 3)
    mh, mw = getattr(v, "merge_kernel_size", None) or [int(getattr(v, "spatial_merge_size", 2) or 2)] * 2
    h, w = 2 * mh, 2 * mw
    pixels = {"pixel_values": torch.randn(BATCH * h * w, ch, ps, ps), "image_grid_thw": torch.tensor([[1, h, w]] * BATCH)}
    _image_prompt(model, cfg, kw, with_labels, pixels)
    if "mm_token_type_ids" in kw:  # PaddleOCR-VL's rope index walks the processor's modality types (image 1)
        from ..hf_inputs import image_token_id

        kw["mm_token_type_ids"] = (kw["input_ids"] == image_token_id(cfg)).long()


# --------------------------------------------------------------------------- minicpmv4_6
@config("minicpmv4_6")
def _(cfg, variant):
    """The checkpoint's tokenizer has image and video placeholder tokens the config names (the
    model scatters the features at input_ids == image_token_id, modeling_minicpmv4_6.py:635-662);
    the class defaults are None: free low ids are used. The ViT window-attention merger sits after
    vision layer insert_layer_id (default 6, configuration_minicpmv4_6.py:94, copied to the vision
    config at :106): keep it inside the shrunk stack, or it never runs."""
    from ..hf_inputs import special_token_ids

    specials = special_token_ids(cfg)
    free = (i for i in range(3, 1000) if i not in specials)
    for k in ("image_token_id", "video_token_id"):
        if getattr(cfg, k) is None:
            setattr(cfg, k, next(free))
    n = int(cfg.vision_config.num_hidden_layers)
    if cfg.insert_layer_id >= n - 1:
        cfg.insert_layer_id = cfg.vision_config.insert_layer_id = max(0, n - 2)


@inputs("minicpmv4_6", feeds_images=True)
def _(model, cfg, head_kind, kw, with_labels):
    """MiniCPM-V 4.6's image processor packs every patch of every image side by side into one
    (1, C, p, n*p) strip with each image's (h, w) patch grid (as minicpm_ocr_vision), sides
    multiples of 4 for the ViT merger's and the MLP merger's 2x2 windows
    (modeling_minicpmv4_6.py:605-633); the placeholder count is get_image_features'."""
    v = cfg.vision_config
    ps, ch = _patch(v), int(v.num_channels or 3)
    sizes = torch.tensor([[8, 8]] * BATCH, dtype=torch.int32)
    n = int(sizes.prod(-1).sum())
    _image_prompt(model, cfg, kw, with_labels, {"pixel_values": torch.randn(1, ch, ps, n * ps), "target_sizes": sizes})


# --------------------------------------------------------------------------- inkling
INKLING_PATCHES, INKLING_FRAMES = 2, 6  # image patches and audio frames per sample


@inputs("inkling_mm_model", feeds_images=True, feeds=("audio",))
def _(model, cfg, head_kind, kw, with_labels):
    """InklingProcessor: each image is cut into patch x patch tiles, each repeated over the two
    temporal slots, (num_patches, 2, p, p, C) (image_processing_inkling.py:149-162), one image
    token per tile; audio is log-mel frames discretized into dMel bins, audio_input_ids
    (num_audios, frames, n_mel_bins) in [0, mel_vocab_size) with audio_input_ids_mask, one audio
    token per valid frame (processing_inkling.py:86-111; the model embeds the bins per codebook,
    modeling_inkling.py:818-830)."""
    from ..hf_inputs import text_ids

    v, a = cfg.vision_config, cfg.audio_config
    ps, ch, t = _patch(v), int(v.num_channels), int(v.temporal_patch_size)
    pv = (torch.rand(BATCH * INKLING_PATCHES, 1, ps, ps, ch) * 2 - 1).repeat(1, t, 1, 1, 1)
    audio = torch.randint(0, int(a.mel_vocab_size), (BATCH, INKLING_FRAMES, int(a.n_mel_bins)), dtype=torch.int32)
    head = torch.cat([torch.full((INKLING_PATCHES,), cfg.image_token_id), torch.full((INKLING_FRAMES,), cfg.audio_token_id)])
    ids = torch.cat([head.expand(BATCH, -1), text_ids(cfg, length=8)], dim=1)
    kw.update(input_ids=ids, attention_mask=torch.ones_like(ids), pixel_values=pv, audio_input_ids=audio,
              audio_input_ids_mask=torch.ones(BATCH, INKLING_FRAMES, dtype=torch.long))
    if kw.pop("labels", None) is not None and with_labels:
        labels = ids.clone()
        labels[:, :len(head)] = -100
        kw["labels"] = labels
