"""Recipes: audio (see __init__.py for what a recipe may do).

Paths like ``clap/modeling_clap.py:812`` are relative to the venv's ``transformers/models``.
"""

from __future__ import annotations

import torch

from .registry import build, config, inputs  # noqa: F401
from ..hf_inputs import BATCH, text_ids


@config("clap")
def _clap_cfg(cfg, variant):
    """The audio projection reads the swin tower's last stage width,
    patch_embeds_hidden_size * 2**(len(depths) - 1) (clap/modeling_clap.py:732), which is
    what checkpoints set as audio_config.hidden_size (768 = 96 * 8); the shrink cut it alone."""
    a = cfg.audio_config
    a.hidden_size = int(a.patch_embeds_hidden_size * 2 ** (len(a.depths) - 1))


@inputs("clap")
def _clap(model, cfg, head_kind, kw, with_labels):
    """ClapModel embeds audio and text together: ClapFeatureExtractor gives every clip
    (batch, 1, nb_max_frames + 1 = 1001, feature_size = num_mel_bins) log-mels plus
    ``is_longer`` (clap/feature_extraction_clap.py); the audio tower transposes them
    unconditionally (clap/modeling_clap.py:812). Training asks for its contrastive loss."""
    mel = int(cfg.audio_config.num_mel_bins)
    kw["input_features"] = torch.randn(BATCH, 1, 1001, mel)
    kw["is_longer"] = torch.zeros(BATCH, 1, dtype=torch.bool)
    if with_labels:
        kw["return_loss"] = True


@inputs("glmasr_encoder")
def _glmasr_encoder(model, cfg, head_kind, kw, with_labels):
    """Whisper-layout log-mels, (batch, num_mel_bins, frames): conv1 reads num_mel_bins
    channels (glmasr/modeling_glmasr.py:288,303)."""
    kw["input_features"] = torch.randn(BATCH, int(cfg.num_mel_bins), 64)


@inputs("fastspeech2_conformer", "fastspeech2_conformer_with_hifigan")
def _fastspeech2(model, cfg, head_kind, kw, with_labels):
    """Training needs every variance label (fastspeech2_conformer/modeling_fastspeech2_conformer.py:1166):
    per-token durations whose sum is the target spectrogram length (the length regulator
    repeats each token duration times), token-averaged pitch and energy (batch, tokens, 1),
    and the target mel spectrogram (batch, sum(durations), num_mel_bins). With the HiFi-GAN
    vocoder the acoustic model's config is ``model_config``: its tokenizer's vocabulary."""
    if getattr(cfg, "model_config", None) is not None:
        cfg = cfg.model_config
        kw["input_ids"] = text_ids(cfg)
        kw["attention_mask"] = torch.ones_like(kw["input_ids"])
    if not with_labels:
        return
    ids = kw["input_ids"]
    b, t = ids.shape
    dur = 2
    kw["duration_labels"] = torch.full((b, t), dur, dtype=torch.long)
    kw["pitch_labels"] = torch.randn(b, t, 1)
    kw["energy_labels"] = torch.randn(b, t, 1)
    kw["spectrogram_labels"] = torch.randn(b, t * dur, int(cfg.num_mel_bins))


@inputs("muse_spark_audio")
def _muse_spark_audio(model, cfg, head_kind, kw, with_labels):
    """MuseSparkFeatureExtractor pads the waveform to a multiple of samples_per_token
    (muse_spark/modeling_muse_spark.py:1223 checks it)."""
    kw["input_values"] = torch.randn(BATCH, 4 * int(cfg.samples_per_token))


@config("neucodec")
def _neucodec_cfg(cfg, variant):
    """The quantizer projects the concatenated semantic + acoustic features
    (neucodec/modeling_neucodec.py:836,1006): quantization_dim is their summed width
    (2048 = 1024 + 1024 in the default config)."""
    cfg.quantization_dim = int(cfg.hidden_size + cfg.semantic_model_config.hidden_size)


@inputs("neucodec")
def _neucodec(model, cfg, head_kind, kw, with_labels):
    """NeuCodecModel takes the waveform and its semantic-encoder fbank features together, as
    NeuCodecFeatureExtractor makes them (neucodec/feature_extraction_neucodec.py): run that
    extractor (no weights) on half a second of audio at the config's input rate and hop."""
    from transformers import NeuCodecFeatureExtractor

    fe = NeuCodecFeatureExtractor(sampling_rate=int(cfg.input_sampling_rate),
                                  hop_length=int(cfg.encoder_hop_length))
    audio = [torch.randn(int(cfg.input_sampling_rate) // 2).numpy() for _ in range(BATCH)]
    feats = fe(audio, sampling_rate=int(cfg.input_sampling_rate), return_tensors="pt")
    kw.clear()
    kw.update({k: v for k, v in feats.items()})


@config("higgs_audio_v2_tokenizer")
def _higgs_tokenizer_cfg(cfg, variant):
    """The semantic (HuBERT, 50 Hz at 16 kHz) and acoustic (DAC) streams are concatenated frame
    by frame (higgs_audio_v2_tokenizer/modeling_higgs_audio_v2_tokenizer.py:553), so the DAC hop
    must be a multiple of the semantic one: the released tokenizer (25 Hz at 24 kHz) uses
    ratios 8*5*4*2*3 = 960, semantic_downsample_factor 2. The class default 8*5*4*2 = 320 gives
    a factor of 0 (configuration_higgs_audio_v2_tokenizer.py:154) and 75 vs 50 frames."""
    a = cfg.acoustic_model_config
    a.downsampling_ratios = [8, 5, 4, 2, 3]
    a.upsampling_ratios = [8, 5, 4, 2, 3]
    a.hop_length = 960
    if variant == "tiny":
        a.decoder_hidden_size = 256  # halves per upsampling stage: 256 -> 8 channels


@inputs("higgs_audio_v2_tokenizer")
def _higgs_tokenizer(model, cfg, head_kind, kw, with_labels):
    """Mono waveform (batch, 1, samples) padded to a multiple of the hop, as its DAC-style
    feature extractor does: 8 frames of 960 samples."""
    kw["input_values"] = torch.randn(BATCH, 1, 8 * int(cfg.hop_length))


@config("mimi_decoder", "pocket_tts_audio_tokenizer_decoder")
def _mimi_decoder_cfg(cfg, variant):
    """The latent upsampler is a depthwise transposed conv, groups = hidden_size
    (mimi/modeling_mimi.py:1295, pocket_tts_audio_tokenizer/modeling_pocket_tts_audio_tokenizer.py:1127;
    the defaults are 512 and 512): keep the two equal after the width shrink."""
    cfg.upsample_groups = int(cfg.hidden_size)


@inputs("mimi_decoder", "pocket_tts_audio_tokenizer_decoder")
def _mimi_decoder(model, cfg, head_kind, kw, with_labels):
    """The decoder half reads continuous latents (batch, hidden_size, frames), what the codec's
    quantizer decodes to (mimi/modeling_mimi.py:1329)."""
    kw["latents"] = torch.randn(BATCH, int(cfg.hidden_size), 8)


def _decoder_of(model_type):
    """MusicgenForCausalLM / MusicgenModel (and the melody pair) are built from the decoder
    sub-config (their __init__ takes Musicgen[Melody]DecoderConfig, musicgen/modeling_musicgen.py:554,634);
    the composite MusicgenConfig belongs to ...ForConditionalGeneration, which nests it as
    ``config.decoder``. Use that nested decoder config, as checkpoints carry it."""
    def fn():
        """The decoder sub-config of the composite musicgen config (see _decoder_of)."""
        from transformers import AutoConfig

        return AutoConfig.for_model(model_type).decoder
    return fn


build("musicgen")(_decoder_of("musicgen"))
build("musicgen_melody")(_decoder_of("musicgen_melody"))


# The decoder configs report model_type "musicgen_decoder" / "musicgen_melody_decoder", which is
# the key hf_inputs looks input recipes up by; those types have no model class of their own
# (no_model_class in the corpus), so these inputs serve only musicgen / musicgen_melody.
@inputs("musicgen_decoder", "musicgen_melody_decoder")
def _musicgen(model, cfg, head_kind, kw, with_labels):
    """Audio codes are fed flattened, (batch * num_codebooks, frames), and reshaped to
    (batch, num_codebooks, frames) by the decoder (musicgen/modeling_musicgen.py:495); the mask
    is per (batch, frames) and labels are (batch, frames, num_codebooks)
    (modeling_musicgen.py:705). The melody decoder prepends the text/chroma conditioning that
    MusicgenMelodyForConditionalGeneration always passes as encoder_hidden_states
    (musicgen_melody/modeling_musicgen_melody.py:501)."""
    k, frames = int(cfg.num_codebooks), 8
    codes = torch.randint(0, int(cfg.vocab_size), (BATCH, k, frames))
    kw.clear()
    kw["input_ids"] = codes.reshape(BATCH * k, frames)
    kw["attention_mask"] = torch.ones(BATCH, frames, dtype=torch.long)
    if cfg.model_type == "musicgen_melody_decoder":
        kw["encoder_hidden_states"] = torch.randn(BATCH, 4, int(cfg.hidden_size))
    if with_labels and head_kind == "causal_lm":
        kw["labels"] = codes.permute(0, 2, 1).contiguous()


@inputs("fun_asr_nano_encoder")
def _fun_asr_nano_encoder(model, cfg, head_kind, kw, with_labels):
    """The feature extractor stacks num_stacked_frames low-frame-rate mel frames:
    (batch, frames, num_mel_bins * num_stacked_frames = input_size)
    (fun_asr_nano/configuration_fun_asr_nano.py:56)."""
    frames = kw["input_features"].shape[1]
    kw["input_features"] = torch.randn(BATCH, frames, int(cfg.input_size))


@inputs("granite_speech5_ctc", "granite_speech5_encoder")
def _granite_speech5(model, cfg, head_kind, kw, with_labels):
    """The feature extractor stacks 4 mel frames: (batch, frames, 4 * num_mel_bins), read by
    input_linear (granite_speech5/modeling_granite_speech5.py:378). The CTC model's loss needs
    transcripts (batch, U) without the blank (pad) token (modeling_granite_speech5.py:551)."""
    enc = getattr(cfg, "encoder_config", None) or cfg
    frames = kw["input_features"].shape[1]
    kw["input_features"] = torch.randn(BATCH, frames, 4 * int(enc.num_mel_bins))
    kw["attention_mask"] = torch.ones(BATCH, frames, dtype=torch.long)
    if with_labels and type(model).__name__ == "GraniteSpeech5ForCTC":
        blank = int(cfg.pad_token_id)
        labels = torch.randint(1, min(int(cfg.vocab_size), 30), (BATCH, 4))
        kw["labels"] = labels.masked_fill(labels == blank, blank + 1)


@inputs("gemma4_audio")
def _gemma4_audio(model, cfg, head_kind, kw, with_labels):
    """Gemma4's feature extractor gives 128 mel bins; the subsampling projection is sized for
    that, (subsampling_conv_channels[0] // 4) * channels[1] with channels[0] = 128 mel
    (gemma4/modeling_gemma4.py:394: each stride-2 conv halves the mel axis)."""
    frames = kw["input_features"].shape[1]
    kw["input_features"] = torch.randn(BATCH, frames, int(cfg.subsampling_conv_channels[0]))


@inputs("nemotron3_5_transcribe_audio")
def _nemotron3_5_audio(model, cfg, head_kind, kw, with_labels):
    """Log-mels (batch, frames, num_mel_bins = 128) padded to a multiple of subsampling_factor
    (nemotron3_5_transcribe/modeling_nemotron3_5_transcribe.py:575)."""
    mel = int(cfg.asr_config.num_mel_bins)
    frames = 8 * int(cfg.subsampling_factor)
    kw["input_features"] = torch.randn(BATCH, frames, mel)
    kw["input_features_mask"] = torch.ones(BATCH, frames, dtype=torch.long)


@inputs("moss_transcribe_diarize_audio")
def _moss_audio(model, cfg, head_kind, kw, with_labels):
    """The audio tower is called with the padded 30 s Whisper window alone: the composite model
    passes no mask (moss_transcribe_diarize/modeling_moss_transcribe_diarize.py:416) and the
    feature extractor returns none for it (feature_extraction_moss_transcribe_diarize.py:56)."""
    kw.pop("attention_mask", None)


@config("clvp")
def _clvp_cfg(cfg, variant):
    """The speech encoder embeds the speech decoder's argmax codes (clvp/modeling_clvp.py:1517-1525),
    so its vocabulary covers the decoder's (tortoise: 8192 mel codes + start/stop = 8194); the
    ClvpEncoderConfig default (256) is the text tokenizer's size."""
    cfg.speech_config.vocab_size = int(cfg.decoder_config.vocab_size)


@inputs("clvp")
def _clvp(model, cfg, head_kind, kw, with_labels):
    """ClvpProcessor gives the text ids and the reference voice's log-mels
    (batch, feature_size = 80, frames) together; the conditioning encoder convolves the mels
    unconditionally (clvp/modeling_clvp.py:1505, :735). Training asks for the contrastive loss."""
    mel = int(cfg.decoder_config.feature_size)
    kw["input_features"] = torch.randn(BATCH, mel, 64)
    if with_labels:
        kw["return_loss"] = True


@config("kyutai_speech_to_text")
def _kyutai_stt_cfg(cfg, variant):
    """Mimi codec inside: its latent upsampler is depthwise (groups = hidden_size,
    mimi/modeling_mimi.py:1295), kept equal after the width shrink. The text vocabulary stays
    the checkpoint's 4001: audio_pad_token_id (69569 = 4001 + 32 * 2049) indexes the combined
    text + codebook table (kyutai_speech_to_text/modeling_kyutai_speech_to_text.py:533), it is
    no text token for fix_vocab to grow the text vocabulary over."""
    cc = cfg.codec_config
    cc.upsample_groups = int(cc.hidden_size)
    cfg.vocab_size = int(cfg.audio_pad_token_id) - int(cfg.num_codebooks) * int(cfg.codebook_vocab_size)


@inputs("kyutai_speech_to_text")
def _kyutai_stt(model, cfg, head_kind, kw, with_labels):
    """Each step feeds one text token plus the frame's num_codebooks Mimi codes,
    input_ids (batch, frames, 1 + num_codebooks): the embedding adds per-codebook offsets and
    sums (modeling_kyutai_speech_to_text.py:545-551). The LM loss is over the text stream."""
    frames, k = 8, int(cfg.num_codebooks)
    text = text_ids(cfg, length=frames)
    codes = torch.randint(0, int(cfg.codebook_vocab_size) - 1, (BATCH, frames, k))
    kw.clear()
    kw["input_ids"] = torch.cat([text.unsqueeze(-1), codes], dim=-1)
    kw["attention_mask"] = torch.ones(BATCH, frames, dtype=torch.long)
    if with_labels and head_kind != "base":
        kw["labels"] = text.clone()
