"""Common diffusers components with small configs."""

from __future__ import annotations

import torch

from .generic import trace_recipe

B = 2


def _unet2d_condition():
    from diffusers import UNet2DConditionModel

    m = UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32, attention_head_dim=8, norm_num_groups=32,
    )
    kw = dict(sample=torch.randn(B, 4, 16, 16), timestep=torch.tensor([10, 500]), encoder_hidden_states=torch.randn(B, 8, 32))
    return m, kw


def _unet2d():
    from diffusers import UNet2DModel

    m = UNet2DModel(
        sample_size=16, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=32,
    )
    return m, dict(sample=torch.randn(B, 3, 16, 16), timestep=torch.tensor([10, 500]))


def _autoencoder_kl():
    from diffusers import AutoencoderKL

    m = AutoencoderKL(
        in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(32, 64), latent_channels=4,
        norm_num_groups=32, sample_size=32,
    )
    return m, dict(sample=torch.randn(B, 3, 32, 32))


def _flux():
    from diffusers import FluxTransformer2DModel

    m = FluxTransformer2DModel(
        patch_size=1, in_channels=16, num_layers=1, num_single_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=32, guidance_embeds=True,
        axes_dims_rope=(4, 6, 6),
    )
    seq, txt = 16, 8
    kw = dict(
        hidden_states=torch.randn(B, seq, 16), encoder_hidden_states=torch.randn(B, txt, 32),
        pooled_projections=torch.randn(B, 32), timestep=torch.rand(B), img_ids=torch.zeros(seq, 3),
        txt_ids=torch.zeros(txt, 3), guidance=torch.full((B,), 3.5),
    )
    return m, kw


def _sd3():
    from diffusers import SD3Transformer2DModel

    m = SD3Transformer2DModel(
        sample_size=16, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=8, num_attention_heads=4,
        joint_attention_dim=32, caption_projection_dim=32, pooled_projection_dim=32, out_channels=4,
        pos_embed_max_size=32,
    )
    kw = dict(hidden_states=torch.randn(B, 4, 16, 16), encoder_hidden_states=torch.randn(B, 8, 32),
              pooled_projections=torch.randn(B, 32), timestep=torch.tensor([10, 500]))
    return m, kw


def _pixart():
    from diffusers import PixArtTransformer2DModel

    m = PixArtTransformer2DModel(
        sample_size=8, num_layers=2, patch_size=2, attention_head_dim=8, num_attention_heads=2, in_channels=4,
        out_channels=8, cross_attention_dim=16, caption_channels=32, norm_type="ada_norm_single",
        use_additional_conditions=False,
    )
    kw = dict(hidden_states=torch.randn(B, 4, 8, 8), encoder_hidden_states=torch.randn(B, 8, 32),
              timestep=torch.tensor([10, 500]), added_cond_kwargs={"resolution": None, "aspect_ratio": None})
    return m, kw


def _controlnet():
    from diffusers import ControlNetModel

    m = ControlNetModel(
        in_channels=4, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), cross_attention_dim=32, attention_head_dim=8,
        norm_num_groups=32, conditioning_embedding_out_channels=(16, 32),
    )
    kw = dict(sample=torch.randn(B, 4, 16, 16), timestep=torch.tensor([10, 500]),
              encoder_hidden_states=torch.randn(B, 8, 32), controlnet_cond=torch.randn(B, 3, 32, 32))
    return m, kw


def _sana():
    from diffusers import SanaTransformer2DModel

    m = SanaTransformer2DModel(
        in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=8, num_layers=2,
        num_cross_attention_heads=2, cross_attention_head_dim=8, cross_attention_dim=16, caption_channels=32,
        sample_size=8, patch_size=1,
    )
    kw = dict(hidden_states=torch.randn(B, 4, 8, 8), encoder_hidden_states=torch.randn(B, 8, 32),
              timestep=torch.tensor([10, 500]))
    return m, kw


def _wan():
    from diffusers import WanTransformer3DModel

    m = WanTransformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12, in_channels=4, out_channels=4,
        text_dim=32, freq_dim=32, ffn_dim=32, num_layers=2, rope_max_seq_len=32,
    )
    kw = dict(hidden_states=torch.randn(B, 4, 2, 8, 8), encoder_hidden_states=torch.randn(B, 8, 32),
              timestep=torch.tensor([10, 500]))
    return m, kw


def _qwenimage():
    from diffusers import QwenImageTransformer2DModel

    m = QwenImageTransformer2DModel(
        patch_size=2, in_channels=16, out_channels=4, num_layers=2, attention_head_dim=16, num_attention_heads=2,
        joint_attention_dim=32, axes_dims_rope=(4, 6, 6),
    )
    kw = dict(hidden_states=torch.randn(B, 16, 16), encoder_hidden_states=torch.randn(B, 8, 32),
              encoder_hidden_states_mask=torch.ones(B, 8, dtype=torch.long), timestep=torch.rand(B),
              img_shapes=[[(1, 4, 4)]] * B)
    return m, kw


COMPONENTS = {
    "UNet2DConditionModel": _unet2d_condition,
    "UNet2DModel": _unet2d,
    "AutoencoderKL": _autoencoder_kl,
    "FluxTransformer2DModel": _flux,
    "SD3Transformer2DModel": _sd3,
    "PixArtTransformer2DModel": _pixart,
    "ControlNetModel": _controlnet,
    "SanaTransformer2DModel": _sana,
    "WanTransformer3DModel": _wan,
    "QwenImageTransformer2DModel": _qwenimage,
}


def trace(name: str, deadline: float, **recipe_kw) -> dict:
    recipe = COMPONENTS[name]
    holder = {}

    def build():
        model, kw = recipe()
        holder["kw"] = kw
        return model

    def make_call(model):
        return lambda m, training: m(**holder["kw"])

    return trace_recipe(build, make_call, deadline, class_name=name, **recipe_kw)
