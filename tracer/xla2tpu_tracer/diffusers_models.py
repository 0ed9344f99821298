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


# Components of the top video / image pipelines (resolve.yaml's diffusers_components) that the
# first set lacked.

def _unet_spatio_temporal():
    from diffusers import UNetSpatioTemporalConditionModel

    m = UNetSpatioTemporalConditionModel(
        sample_size=8, in_channels=8, out_channels=4, down_block_types=("CrossAttnDownBlockSpatioTemporal", "DownBlockSpatioTemporal"),
        up_block_types=("UpBlockSpatioTemporal", "CrossAttnUpBlockSpatioTemporal"), block_out_channels=(32, 64),
        addition_time_embed_dim=8, projection_class_embeddings_input_dim=24, layers_per_block=1,
        cross_attention_dim=32, num_attention_heads=(2, 4),
    )
    kw = dict(sample=torch.randn(1, 2, 8, 8, 8), timestep=torch.tensor(10), encoder_hidden_states=torch.randn(1, 1, 32),
              added_time_ids=torch.randn(1, 3))
    return m, kw


def _vae_temporal_decoder():
    from diffusers import AutoencoderKLTemporalDecoder

    m = AutoencoderKLTemporalDecoder(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                                     block_out_channels=(32, 64), latent_channels=4, layers_per_block=1, sample_size=16)
    return m, dict(sample=torch.randn(2, 3, 16, 16), num_frames=2)


def _vae_wan():
    from diffusers import AutoencoderKLWan

    m = AutoencoderKLWan(base_dim=16, z_dim=4, dim_mult=[1, 2], num_res_blocks=1, temperal_downsample=[True])
    return m, dict(sample=torch.randn(1, 3, 5, 16, 16))


def _vae_qwenimage():
    from diffusers import AutoencoderKLQwenImage

    m = AutoencoderKLQwenImage(base_dim=16, z_dim=4, dim_mult=[1, 2], num_res_blocks=1, temperal_downsample=[True],
                               latents_mean=[0.0] * 4, latents_std=[1.0] * 4)
    return m, dict(sample=torch.randn(1, 3, 1, 16, 16))


def _vae_dc():
    from diffusers import AutoencoderDC

    m = AutoencoderDC(in_channels=3, latent_channels=4, encoder_block_out_channels=(16, 32),
                      decoder_block_out_channels=(16, 32), encoder_layers_per_block=(1, 1), decoder_layers_per_block=(1, 1),
                      encoder_block_types=("ResBlock", "EfficientViTBlock"), decoder_block_types=("ResBlock", "EfficientViTBlock"),
                      encoder_qkv_multiscales=((), (5,)), decoder_qkv_multiscales=((), (5,)), attention_head_dim=8,
                      decoder_norm_types="rms_norm", decoder_act_fns="silu")
    return m, dict(sample=torch.randn(B, 3, 16, 16))


def _dit():
    from diffusers import DiTTransformer2DModel

    m = DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4, num_layers=2, sample_size=8,
                              patch_size=2, num_embeds_ada_norm=10)
    return m, dict(hidden_states=torch.randn(B, 4, 8, 8), timestep=torch.tensor([1, 5]), class_labels=torch.tensor([0, 3]))


def _cogvideox():
    from diffusers import CogVideoXTransformer3DModel

    m = CogVideoXTransformer3DModel(num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=4,
                                    time_embed_dim=16, text_embed_dim=32, num_layers=2, sample_width=8, sample_height=8,
                                    sample_frames=5, patch_size=2, max_text_seq_length=8, use_rotary_positional_embeddings=True)
    kw = dict(hidden_states=torch.randn(B, 2, 4, 8, 8), encoder_hidden_states=torch.randn(B, 8, 32),
              timestep=torch.tensor([10, 500]),
              image_rotary_emb=None)
    from diffusers.models.embeddings import get_3d_rotary_pos_embed

    cos, sin = get_3d_rotary_pos_embed(embed_dim=16, crops_coords=((0, 0), (4, 4)), grid_size=(4, 4), temporal_size=2)
    kw["image_rotary_emb"] = (cos, sin)
    return m, kw


def _vae_cogvideox():
    from diffusers import AutoencoderKLCogVideoX

    m = AutoencoderKLCogVideoX(in_channels=3, out_channels=3, down_block_types=("CogVideoXDownBlock3D",) * 2,
                               up_block_types=("CogVideoXUpBlock3D",) * 2, block_out_channels=(32, 32), latent_channels=4,
                               layers_per_block=1, norm_num_groups=4, temporal_compression_ratio=2)
    return m, dict(sample=torch.randn(1, 3, 5, 16, 16))


def _ltx():
    from diffusers import LTXVideoTransformer3DModel

    m = LTXVideoTransformer3DModel(in_channels=8, out_channels=8, patch_size=1, patch_size_t=1, num_attention_heads=2,
                                   attention_head_dim=8, cross_attention_dim=16, num_layers=2, caption_channels=32)
    kw = dict(hidden_states=torch.randn(B, 2 * 4 * 4, 8), encoder_hidden_states=torch.randn(B, 8, 32),
              timestep=torch.tensor([10, 500]), encoder_attention_mask=torch.ones(B, 8), num_frames=2, height=4, width=4)
    return m, kw


def _vae_ltx():
    from diffusers import AutoencoderKLLTXVideo

    m = AutoencoderKLLTXVideo(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(8, 8, 8, 8),
                              decoder_block_out_channels=(8, 8, 8, 8), layers_per_block=(1, 1, 1, 1, 1),
                              decoder_layers_per_block=(1, 1, 1, 1, 1), patch_size=1, patch_size_t=1)
    return m, dict(sample=torch.randn(1, 3, 9, 16, 16))


def _hunyuan_video():
    from diffusers import HunyuanVideoTransformer3DModel

    m = HunyuanVideoTransformer3DModel(in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=8,
                                       num_layers=1, num_single_layers=1, num_refiner_layers=1, patch_size=1,
                                       patch_size_t=1, text_embed_dim=16, pooled_projection_dim=8, rope_axes_dim=(2, 2, 4))
    kw = dict(hidden_states=torch.randn(1, 4, 1, 8, 8), timestep=torch.tensor([10]), encoder_hidden_states=torch.randn(1, 8, 16),
              encoder_attention_mask=torch.ones(1, 8), pooled_projections=torch.randn(1, 8), guidance=torch.tensor([3500.0]))
    return m, kw


def _unet3d():
    from diffusers import UNet3DConditionModel

    m = UNet3DConditionModel(sample_size=8, in_channels=4, out_channels=4, block_out_channels=(32, 64), layers_per_block=1,
                             down_block_types=("CrossAttnDownBlock3D", "DownBlock3D"), up_block_types=("UpBlock3D", "CrossAttnUpBlock3D"),
                             cross_attention_dim=32, attention_head_dim=8, norm_num_groups=32)
    kw = dict(sample=torch.randn(1, 4, 2, 8, 8), timestep=torch.tensor(10), encoder_hidden_states=torch.randn(1, 4, 32))
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
    "UNetSpatioTemporalConditionModel": _unet_spatio_temporal,
    "AutoencoderKLTemporalDecoder": _vae_temporal_decoder,
    "AutoencoderKLWan": _vae_wan,
    "AutoencoderKLQwenImage": _vae_qwenimage,
    "AutoencoderDC": _vae_dc,
    "DiTTransformer2DModel": _dit,
    "CogVideoXTransformer3DModel": _cogvideox,
    "AutoencoderKLCogVideoX": _vae_cogvideox,
    "LTXVideoTransformer3DModel": _ltx,
    "AutoencoderKLLTXVideo": _vae_ltx,
    "HunyuanVideoTransformer3DModel": _hunyuan_video,
    "UNet3DConditionModel": _unet3d,
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
