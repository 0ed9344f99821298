"""Speech libraries: the model classes behind the most-downloaded pyannote-audio and speechbrain
repositories, random init and shrunk, fed one second of random 16 kHz audio. Each forward starts
from the waveform, so the feature front end (SincNet, Kaldi fbank, speechbrain Fbank/STFT) is traced.

pyannote-audio:
  PyanNet (SincNet + LSTM + linear): segmentation, segmentation-3.0 (powerset) and the VAD /
    overlapped-speech pipelines; WeSpeakerResNet34: speaker embeddings of speaker-diarization-3.x;
  XVectorSincNet: pyannote/embedding.
speechbrain:
  ECAPA_TDNN (+ Fbank, + Classifier, AAM-softmax loss): spkrec-ecapa-voxceleb, lang-id ECAPA models;
  MetricGAN+ EnhancementGenerator (STFT magnitude in, mask out): metricgan-plus-voicebank;
  CRDNN (+ Fbank): vad-crdnn-libriparty."""

from __future__ import annotations

import torch

from .generic import trace_recipe

B, SR = 2, 16000


def _wave(channels=True):
    return torch.randn(B, 1, SR) if channels else torch.randn(B, SR)


# ---------------------------------------------------------------- pyannote-audio

def _pyannote_specs(model, powerset: bool, frame: bool = True):
    from pyannote.audio.core.task import Problem, Resolution, Specifications

    if powerset:  # segmentation-3.0: 3 speakers, at most 2 at once -> 7 powerset classes
        spec = Specifications(problem=Problem.MONO_LABEL_CLASSIFICATION, resolution=Resolution.FRAME, duration=1.0,
                              classes=["spk1", "spk2", "spk3"], powerset_max_classes=2, permutation_invariant=True)
    else:
        spec = Specifications(problem=Problem.MULTI_LABEL_CLASSIFICATION, resolution=Resolution.FRAME, duration=1.0,
                              classes=["spk1", "spk2", "spk3"], permutation_invariant=True)
    model.specifications = spec
    model.build()
    return model


def _pyannet(powerset):
    def recipe():
        from pyannote.audio.models.segmentation import PyanNet

        m = PyanNet(sincnet={"stride": 10}, lstm={"hidden_size": 32, "num_layers": 2, "bidirectional": True},
                    linear={"hidden_size": 32, "num_layers": 2})
        m = _pyannote_specs(m, powerset)
        x = _wave()

        def loss(m, out):
            if powerset:  # log-softmax outputs: NLL against frame classes (pyannote's powerset loss)
                target = torch.zeros(out.shape[:2], dtype=torch.long)
                return torch.nn.functional.nll_loss(out.reshape(-1, out.shape[-1]), target.reshape(-1))
            return torch.nn.functional.binary_cross_entropy(out, torch.zeros_like(out))

        return m, (x,), loss, "PyanNet"

    return recipe


def _wespeaker():
    from pyannote.audio.models.embedding import WeSpeakerResNet34

    m = WeSpeakerResNet34()
    head = torch.nn.Linear(256, 10)
    m.add_module("xla2tpu_speaker_head", head)  # training: speaker classification over the embedding

    def loss(m, out):
        return torch.nn.functional.cross_entropy(m.xla2tpu_speaker_head(out), torch.zeros(out.shape[0], dtype=torch.long))

    return m, (_wave(),), loss, "WeSpeakerResNet34"


def _xvector():
    from pyannote.audio.models.embedding import XVectorSincNet

    m = XVectorSincNet(dimension=64)
    head = torch.nn.Linear(64, 10)
    m.add_module("xla2tpu_speaker_head", head)

    def loss(m, out):
        return torch.nn.functional.cross_entropy(m.xla2tpu_speaker_head(out), torch.zeros(out.shape[0], dtype=torch.long))

    return m, (_wave(),), loss, "XVectorSincNet"


# ---------------------------------------------------------------- speechbrain

class _Chain(torch.nn.Module):
    """features -> model (-> classifier): what the library's inference interfaces run."""

    def __init__(self, features, model, head=None, norm=None):
        super().__init__()
        self.features, self.model, self.head, self.norm = features, model, head, norm

    def forward(self, wav):
        x = self.features(wav)
        if self.norm is not None:
            x = self.norm(x, torch.ones(x.shape[0]))
        x = self.model(x)
        return self.head(x) if self.head is not None else x


def _ecapa():
    from speechbrain.lobes.features import Fbank
    from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN, Classifier
    from speechbrain.nnet.losses import AdditiveAngularMargin, LogSoftmaxWrapper
    from speechbrain.processing.features import InputNormalization

    emb = ECAPA_TDNN(input_size=24, lin_neurons=32, channels=[32, 32, 32, 32, 96], attention_channels=16,
                     res2net_scale=4, se_channels=16)
    m = _Chain(Fbank(n_mels=24), emb, Classifier(input_size=32, out_neurons=10), InputNormalization(norm_type="sentence"))
    aam = LogSoftmaxWrapper(AdditiveAngularMargin(margin=0.2, scale=30))

    def loss(m, out):
        return aam(out, torch.zeros(out.shape[0], 1, dtype=torch.long))

    return m, (_wave(False),), loss, "ECAPA_TDNN"


def _metricgan():
    from speechbrain.lobes.models.MetricGAN import EnhancementGenerator
    from speechbrain.processing.features import STFT, spectral_magnitude

    stft = STFT(sample_rate=SR, win_length=32, hop_length=16, n_fft=512)
    gen = EnhancementGenerator(input_size=257, hidden_size=200, num_layers=2)  # its head assumes 200

    class Enh(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stft, self.gen = stft, gen

        def forward(self, wav):
            mag = spectral_magnitude(self.stft(wav), power=0.5)
            mag = torch.log1p(mag)
            mask = self.gen(mag, lengths=torch.ones(mag.shape[0]))
            return mask * mag

    def loss(m, out):
        return torch.nn.functional.mse_loss(out, torch.zeros_like(out))

    return Enh(), (_wave(False),), loss, "EnhancementGenerator"


def _crdnn():
    from speechbrain.lobes.features import Fbank
    from speechbrain.lobes.models.CRDNN import CRDNN
    from speechbrain.nnet.RNN import GRU  # vad-crdnn-libriparty's hparams use a GRU

    model = CRDNN(input_shape=[None, None, 24], cnn_blocks=2, cnn_channels=[8, 16], rnn_layers=1, rnn_neurons=16,
                  dnn_blocks=1, dnn_neurons=16, rnn_class=GRU, time_pooling=False)
    head = torch.nn.Linear(16, 1)
    m = _Chain(Fbank(n_mels=24), model, head)

    def loss(m, out):
        return torch.nn.functional.binary_cross_entropy_with_logits(out, torch.zeros_like(out))

    return m, (_wave(False),), loss, "CRDNN"


TARGETS = {
    "pyannote-audio": {
        "PyanNet": _pyannet(False),
        "PyanNet-powerset": _pyannet(True),
        "WeSpeakerResNet34": _wespeaker,
        "XVectorSincNet": _xvector,
    },
    "speechbrain": {
        "ECAPA_TDNN": _ecapa,
        "MetricGAN": _metricgan,
        "CRDNN": _crdnn,
    },
}


def trace(library: str, name: str, deadline: float, **recipe_kw) -> dict:
    recipe = TARGETS[library][name]
    holder = {}

    def build():
        model, args, loss, cls = recipe()
        holder.update(args=args, loss=loss)
        return model

    def make_call(model):
        def call(m, training):
            out = m(*holder["args"])
            # The loss gets the model it runs with: `execute` runs a copy of it on the device.
            return {"loss": holder["loss"](m, out)} if training else out

        return call

    cls = {"PyanNet-powerset": "PyanNet", "MetricGAN": "EnhancementGenerator"}.get(name, name)
    return trace_recipe(build, make_call, deadline, class_name=cls, **{"envs": ("cpu",), **recipe_kw})
