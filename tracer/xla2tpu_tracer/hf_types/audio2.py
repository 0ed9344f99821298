"""Recipes: audio2 (see __init__.py for what a recipe may do)."""

from __future__ import annotations

import math

import torch  # noqa: F401

from .registry import build, config, inputs  # noqa: F401
from ..hf_inputs import BATCH

# File:line references are to transformers/models/ in the venv's site-packages.


def _wave(samples: int, channels: int | None = 1) -> torch.Tensor:
    """A mono waveform batch: (batch, channels, samples), or (batch, samples) if channels is None."""
    return torch.randn(BATCH, samples) if channels is None else torch.randn(BATCH, channels, samples)


# --------------------------------------------------------------------------- omniasr
@inputs("omniasr_audio", "omniasr_ctc")
def _omniasr(model, cfg, head_kind, kw, with_labels):
    """OmniASRFeatureExtractor returns mono audio with a channel dim, (batch, 1, samples), and
    the sample mask as `padding_mask` (batch, samples) (omniasr/feature_extraction_omniasr.py:158-161)."""
    kw.pop("attention_mask", None)
    kw["input_values"] = _wave(8000)
    kw["padding_mask"] = torch.ones(BATCH, 8000, dtype=torch.long)


# --------------------------------------------------------------------------- pe_audio
def _hop(ratios) -> int:
    """A codec's samples per frame: the product of its encoder's downsampling ratios."""
    return math.prod(int(r) for r in ratios)


def _pe_audio_hop(audio_cfg) -> int:
    dac = getattr(audio_cfg, "dac_config", None)
    return int(getattr(dac, "hop_length", None) or _hop(getattr(dac, "downsampling_ratios", None) or [1920]))


@inputs("pe_audio", "pe_audio_encoder")
def _pe_audio(model, cfg, head_kind, kw, with_labels):
    """PeAudioFeatureExtractor pads mono audio to a multiple of hop_length (the DAC stride,
    1920) and returns (batch, 1, samples) with a (batch, samples) padding_mask
    (pe_audio/feature_extraction_pe_audio.py:131-153)."""
    audio_cfg = getattr(cfg, "audio_config", None) or cfg
    n = 4 * _pe_audio_hop(audio_cfg)
    kw["input_values"] = _wave(n)
    kw["padding_mask"] = torch.ones(BATCH, n, dtype=torch.long)
    if type(model).__name__ == "PeAudioModel" and with_labels:
        # contrastive audio-text model: its loss is computed only with return_loss
        kw["return_loss"] = True


# --------------------------------------------------------------------------- pe_audio_video
PE_VIDEO_IMG = 56  # 4x4 patches of 14 pixels
PE_VIDEO_FRAMES = 4


def _timm_configs(cfg, seen=None):
    from .. import configs

    seen = set() if seen is None else seen
    if id(cfg) in seen:
        return
    seen.add(id(cfg))
    if getattr(cfg, "model_type", "") == "timm_wrapper":
        yield cfg
    for _, sub in configs.sub_configs(cfg):
        yield from _timm_configs(sub, seen)


@config("pe_audio_video", "pe_audio_video_encoder")
def _pe_video_timm(cfg, variant):
    """The video tower is timm's `vit_pe_core_large_patch14_336` (a 24-layer 1024-wide ViT, via
    TimmWrapperConfig, pe_video/modeling_pe_video.py:191), which the generic shrinker cannot see
    into: shrink it through the config's own `model_args` (passed to timm.create_model,
    timm_wrapper/configuration_timm_wrapper.py:37) to 2 layers at a small resolution; same blocks
    (rope attention, attention pooling)."""
    for t in _timm_configs(cfg):
        args = dict(t.model_args or {})
        args.update(depth=2, img_size=PE_VIDEO_IMG)
        if variant == "tiny":
            args.update(embed_dim=128, num_heads=4, attn_pool_num_heads=4)
        t.model_args = args


@inputs("pe_audio_video", "pe_audio_video_encoder")
def _pe_audio_video(model, cfg, head_kind, kw, with_labels):
    """Audio as PeAudioFeatureExtractor gives it (see _pe_audio) plus the video as
    PeVideoVideoProcessor gives it: (batch, frames, 3, H, W) at the tower's resolution
    (pe_video/modeling_pe_video.py:200-205); padding_mask_videos is only returned for videos
    of unequal length (pe_video/video_processing_pe_video.py:57-62). PeAudioVideoModel takes
    all three modalities (text too) to run every tower."""
    avc = getattr(cfg, "audio_video_config", None) or cfg
    n = 4 * _pe_audio_hop(avc.audio_config)
    kw["input_values"] = _wave(n)
    kw["padding_mask"] = torch.ones(BATCH, n, dtype=torch.long)
    kw["pixel_values_videos"] = torch.randn(BATCH, PE_VIDEO_FRAMES, 3, PE_VIDEO_IMG, PE_VIDEO_IMG)
    if type(model).__name__ == "PeAudioVideoModel":
        if with_labels:
            kw["return_loss"] = True
    else:
        kw.pop("input_ids", None)
        kw.pop("attention_mask", None)


# --------------------------------------------------------------------------- whisper-style encoders
@inputs("qwen2_audio_encoder")
def _qwen2_audio_encoder(model, cfg, head_kind, kw, with_labels):
    """The encoder's `attention_mask` is not the feature extractor's 2-D frame mask: its caller,
    Qwen2AudioForConditionalGeneration, builds a bidirectional attention mask over the
    post-conv frames with create_bidirectional_mask (qwen2_audio/modeling_qwen2_audio.py:679-708).
    Build it the same way from the (unpadded) features."""
    from transformers.masking_utils import create_bidirectional_mask

    feats = kw["input_features"]
    batch, _, mel_len = feats.shape
    seq = (mel_len - 2) // 2 + 1
    kw["attention_mask"] = create_bidirectional_mask(
        config=model.config,
        inputs_embeds=torch.zeros(batch, seq, 1, dtype=feats.dtype),
        attention_mask=torch.ones(batch, seq, dtype=torch.long),
    )
    if kw["attention_mask"] is None:
        kw.pop("attention_mask")


@inputs("voxtral_encoder")
def _voxtral_encoder(model, cfg, head_kind, kw, with_labels):
    """VoxtralForConditionalGeneration calls the encoder with the mel features only
    (voxtral/modeling_voxtral.py:400); its `attention_mask` argument is "preserved for
    compatibility" and is not the feature extractor's frame mask (modeling_voxtral.py:301-302)."""
    kw.pop("attention_mask", None)


@inputs("qwen3_asr_encoder")
def _qwen3_asr_encoder(model, cfg, head_kind, kw, with_labels):
    """Qwen3ASRFeatureExtractor returns (batch, num_mel_bins, frames) right-padded to a multiple
    of 2 * n_window, with the frame mask as `input_features_mask`
    (qwen3_asr/feature_extraction_qwen3_asr.py:209-228; modeling_qwen3_asr.py:384-393)."""
    frames = 2 * 2 * int(cfg.n_window)
    kw["input_features"] = torch.randn(BATCH, int(cfg.num_mel_bins), frames)
    kw["input_features_mask"] = torch.ones(BATCH, frames, dtype=torch.long)


# --------------------------------------------------------------------------- seamless / w2v-bert
@config("seamless_m4t", "seamless_m4t_v2")
def _seamless_depth(cfg, variant):
    """The generic shrinker does not know seamless' prefixed stacks (speech_encoder_*, t2u_*):
    the speech encoder keeps 24 conformer layers at 4096 wide, the text-to-unit model 6+6 layers
    at 8192. Shrink them like any other stack (2 layers; widths in the tiny variant only)."""
    for k in ("speech_encoder_layers", "t2u_encoder_layers", "t2u_decoder_layers"):
        setattr(cfg, k, min(int(getattr(cfg, k)), 2))
    if variant == "tiny":
        hidden = int(cfg.hidden_size)
        cfg.speech_encoder_intermediate_size = min(int(cfg.speech_encoder_intermediate_size), 2 * hidden)
        cfg.t2u_encoder_ffn_dim = min(int(cfg.t2u_encoder_ffn_dim), 2 * hidden)
        cfg.t2u_decoder_ffn_dim = min(int(cfg.t2u_decoder_ffn_dim), 2 * hidden)
        for k in ("speech_encoder_attention_heads", "t2u_encoder_attention_heads", "t2u_decoder_attention_heads"):
            if hidden % 4 == 0:
                setattr(cfg, k, min(int(getattr(cfg, k)), 4))


@inputs("seamless_m4t", "seamless_m4t_v2", "wav2vec2-bert")
def _seamless_features(model, cfg, head_kind, kw, with_labels):
    """SeamlessM4TFeatureExtractor (also wav2vec2-bert's) stacks `stride` (2) 80-bin fbank
    frames: input_features are (batch, frames, 160) = feature_projection_input_dim, with a
    (batch, frames) attention_mask (seamless_m4t/feature_extraction_seamless_m4t.py:282-296).
    Only classes whose main input is speech get it (SeamlessM4TModel takes text by default)."""
    if "input_features" not in kw:
        return
    frames = 64
    kw["input_features"] = torch.randn(BATCH, frames, int(cfg.feature_projection_input_dim))
    kw["attention_mask"] = torch.ones(BATCH, frames, dtype=torch.long)


# --------------------------------------------------------------------------- speecht5
@inputs("speecht5")
def _speecht5(model, cfg, head_kind, kw, with_labels):
    """SpeechT5Model built on its own has no pre-nets (SpeechT5EncoderWithoutPrenet /
    DecoderWithoutPrenet, speecht5/modeling_speecht5.py:1874-1875): its input_values and
    decoder_input_values are then hidden states, (batch, seq, hidden_size) (docstring at
    :1919-1925). The speech-to-text head keeps the generic waveform input."""
    if type(model).__name__ != "SpeechT5Model":
        return
    hidden = int(cfg.hidden_size)
    kw["input_values"] = torch.randn(BATCH, 16, hidden)
    kw["decoder_input_values"] = torch.randn(BATCH, 8, hidden)


# --------------------------------------------------------------------------- speech-encoder-decoder
@inputs("speech-encoder-decoder")
def _speech_encoder_decoder(model, cfg, head_kind, kw, with_labels):
    """The encoder input (`inputs`) is what the encoder's processor gives: the default encoder
    is wav2vec2, a raw (batch, samples) waveform (speech_encoder_decoder/modeling_speech_encoder_decoder.py
    forward docstring: input_values from Wav2Vec2Processor); decoder ids/labels stay generic."""
    kw.pop("inputs", None)
    kw.pop("attention_mask", None)
    kw["input_values"] = _wave(8000, channels=None)


# --------------------------------------------------------------------------- vibevoice tokenizer
@inputs("vibevoice_acoustic_tokenizer", "vibevoice_acoustic_tokenizer_encoder",
        "vibevoice_acoustic_tokenizer_decoder")
def _vibevoice(model, cfg, head_kind, kw, with_labels):
    """VibeVoiceAcousticTokenizerFeatureExtractor pads mono audio to a multiple of 3200 (the
    product of downsampling_ratios) and adds the channel dim: (batch, 1, samples)
    (vibevoice_acoustic_tokenizer/feature_extraction_vibevoice_acoustic_tokenizer.py:141-154).
    The encoder/decoder models take it as `hidden_states`; the decoder's input is the encoder's
    latents channel-first, (batch, hidden_size, frames), as VibeVoiceAcousticTokenizerModel.decode
    passes them (modeling_vibevoice_acoustic_tokenizer.py:539-551)."""
    kw.clear()
    name = type(model).__name__
    if name == "VibeVoiceAcousticTokenizerDecoderModel":
        kw["hidden_states"] = torch.randn(BATCH, int(cfg.hidden_size), 4)
        return
    enc = getattr(cfg, "encoder_config", None) or cfg
    wave = _wave(2 * _hop(enc.downsampling_ratios), channels=int(getattr(enc, "channels", 1) or 1))
    kw["hidden_states" if name == "VibeVoiceAcousticTokenizerEncoderModel" else "input_values"] = wave


@config("vibevoice_acoustic_tokenizer", "vibevoice_acoustic_tokenizer_encoder",
        "vibevoice_acoustic_tokenizer_decoder")
def _vibevoice_width(cfg, variant):
    """The conv stacks double num_filters (32) at each of the 6 stages, to 2048 channels with
    4x ConvNeXt FFNs (~130M parameters per side), which the generic shrinker cannot see
    (no hidden_size/heads): in the tiny variant start from 4 filters (same stages, same
    ratios, so the 3200-sample hop is kept)."""
    if variant != "tiny":
        return
    from .. import configs

    for c in [cfg] + [s for _, s in configs.sub_configs(cfg)]:
        if isinstance(getattr(c, "num_filters", None), int):
            c.num_filters = min(int(c.num_filters), 4)


# --------------------------------------------------------------------------- voxtral realtime
def _voxtral_realtime_t_cond(hidden: int, num_delay_tokens: int):
    """What VoxtralRealtimeModel.forward feeds its text model as `t_cond`: the sinusoidal time
    embedding of num_delay_tokens, (1, hidden) (voxtral_realtime/modeling_voxtral_realtime.py:983-990)."""
    from transformers.models.voxtral_realtime.modeling_voxtral_realtime import VoxtralRealtimeTimeEmbedding

    emb = VoxtralRealtimeTimeEmbedding(hidden)
    return emb(torch.full((1,), num_delay_tokens, dtype=torch.float32))[None, ...]


@inputs("voxtral_realtime", "voxtral_realtime_encoder", "voxtral_realtime_text")
def _voxtral_realtime(model, cfg, head_kind, kw, with_labels):
    """VoxtralRealtimeProcessor gives log-mel input_features (batch, num_mel_bins, frames) and
    text ids whose embeddings the audio embeddings are added to, one token per
    audio_length_per_tok (8) mel frames (conv stride 2 x downsample_factor 4,
    modeling_voxtral_realtime.py:930-964), plus num_delay_tokens (processing_voxtral_realtime.py:207).
    The encoder on its own gets the mel features only (get_audio_features passes no mask); the
    text model on its own gets the `t_cond` its parent computes."""
    from ..hf_inputs import SEQ

    name = type(model).__name__
    if name == "VoxtralRealtimeTextModel":
        from transformers import VoxtralRealtimeConfig

        kw["t_cond"] = _voxtral_realtime_t_cond(int(cfg.hidden_size), int(VoxtralRealtimeConfig().default_num_delay_tokens))
        return
    if name == "VoxtralRealtimeEncoder":
        kw.clear()
        kw["input_features"] = torch.randn(BATCH, int(cfg.num_mel_bins), 8 * SEQ)
        return
    n_tok = kw["input_ids"].shape[1]
    kw["input_features"] = torch.randn(BATCH, int(cfg.audio_config.num_mel_bins), int(cfg.audio_length_per_tok) * n_tok)
    kw["num_delay_tokens"] = int(cfg.default_num_delay_tokens)


# --------------------------------------------------------------------------- xcodec2
@inputs("xcodec2")
def _xcodec2(model, cfg, head_kind, kw, with_labels):
    """Xcodec2FeatureExtractor pads the waveform to a multiple of the hop (320 = prod of
    downsampling_ratios) plus hop/2 on each side, (batch, 1, samples), with a (batch, samples)
    padding_mask, and gives the semantic encoder (wav2vec2-bert) stride-2 stacked mel frames,
    (batch, samples / hop, 160), with input_features_mask (xcodec2/feature_extraction_xcodec2.py:157-221;
    6400 samples in -> 6720 samples, 21 frames out)."""
    hop = _hop(cfg.downsampling_ratios)
    frames = 21
    kw.clear()
    kw["input_values"] = _wave(frames * hop)
    kw["padding_mask"] = torch.ones(BATCH, frames * hop, dtype=torch.long)
    kw["input_features"] = torch.randn(BATCH, frames, int(cfg.semantic_model_config.feature_projection_input_dim))
    kw["input_features_mask"] = torch.ones(BATCH, frames, dtype=torch.long)


# --------------------------------------------------------------------------- moonshine streaming
@config("moonshine_streaming")
def _moonshine_streaming(cfg, variant):
    """The decoder reads config.num_key_value_heads (modeling_moonshine_streaming.py:698), which
    MoonshineStreamingConfig does not define (only its encoder config does); checkpoints set it
    (plain multi-head attention: as many KV heads as heads). decoder_start_token_id (None by
    default) is the BOS token in checkpoints; shift_tokens_right needs it for the labels."""
    if getattr(cfg, "num_key_value_heads", None) is None:
        cfg.num_key_value_heads = cfg.num_attention_heads
    if getattr(cfg, "decoder_start_token_id", None) is None:
        cfg.decoder_start_token_id = cfg.bos_token_id


@config("xcodec2")
def _xcodec2_quant_dim(cfg, variant):
    """The quantizer works on fc_encoder's output, the concatenated acoustic + semantic
    features: quantization_dim == hidden_size + semantic_model_config.hidden_size (1024 + 1024
    = 2048 in the defaults and checkpoints; xcodec2/modeling_xcodec2.py:950-953 and :791).
    Keep that after the widths shrink."""
    cfg.quantization_dim = int(cfg.hidden_size) + int(cfg.semantic_model_config.hidden_size)
