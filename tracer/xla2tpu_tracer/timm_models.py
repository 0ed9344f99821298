"""One small model per timm family, random init (pretrained=False, never downloads)."""

from __future__ import annotations

import torch

from .generic import trace_recipe

# family -> (model name, image side or None for the model default)
FAMILIES = {
    "beit": ("beit_base_patch16_224", 64),
    "cait": ("cait_xxs24_224", 64),
    "coat": ("coat_tiny", None),
    "convit": ("convit_tiny", None),
    "convnext": ("convnext_atto", 64),
    "convnextv2": ("convnextv2_atto", 64),
    "cspnet": ("cspresnet50", 64),
    "deit": ("deit_tiny_patch16_224", 64),
    "densenet": ("densenet121", 64),
    "dla": ("dla34", 64),
    "dpn": ("dpn68", 64),
    "edgenext": ("edgenext_xx_small", 64),
    "efficientformer": ("efficientformer_l1", None),
    "efficientnet": ("efficientnet_b0", 64),
    "eva": ("eva02_tiny_patch14_224", 56),
    "fastvit": ("fastvit_t8", 64),
    "ghostnet": ("ghostnet_050", 64),
    "hiera": ("hiera_tiny_224", None),
    "hrnet": ("hrnet_w18_small", 64),
    "inception_v3": ("inception_v3", 96),
    "levit": ("levit_128s", None),
    "maxvit": ("maxvit_tiny_tf_224", None),
    "mixer": ("mixer_s16_224", 64),
    "mobilenetv2": ("mobilenetv2_050", 64),
    "mobilenetv3": ("mobilenetv3_small_050", 64),
    "mobilevit": ("mobilevit_xxs", 64),
    "nfnet": ("eca_nfnet_l0", 64),
    "pvt_v2": ("pvt_v2_b0", 64),
    "regnet": ("regnetx_002", 64),
    "repvgg": ("repvgg_a0", 64),
    "res2net": ("res2net50_14w_8s", 64),
    "resnest": ("resnest14d", 64),
    "resnet": ("resnet18", 64),
    "resnetv2": ("resnetv2_50x1_bit", 64),
    "rexnet": ("rexnet_100", 64),
    "swin": ("swin_tiny_patch4_window7_224", None),
    "swinv2": ("swinv2_cr_tiny_224", None),
    "twins": ("twins_svt_small", 64),
    "vgg": ("vgg11", 64),
    "vit": ("vit_tiny_patch16_224", 64),
    "xception": ("xception41", 64),
}


def trace(family: str, deadline: float, **recipe_kw) -> dict:
    import timm

    name, side = FAMILIES[family]
    holder = {}

    def build():
        kwargs = {"pretrained": False}
        model = None
        if side is not None:
            try:
                model = timm.create_model(name, img_size=side, **kwargs)
            except TypeError:
                model = None
        if model is None:
            model = timm.create_model(name, **kwargs)
        if side is not None and model is not None:
            size = side
        else:
            size = model.pretrained_cfg.get("input_size", (3, 224, 224))[-1]
        chans = model.pretrained_cfg.get("input_size", (3, 224, 224))[0]
        holder["x"] = torch.randn(2, chans, size, size)
        holder["y"] = torch.zeros(2, dtype=torch.long)
        return model

    def make_call(model):
        def call(m, training):
            out = m(holder["x"])
            if training:
                from .phases import _flat_tensors

                logits = _flat_tensors(out)[0]
                return {"loss": torch.nn.functional.cross_entropy(logits, holder["y"])}
            return out

        return call

    return trace_recipe(build, make_call, deadline, class_name=name, **recipe_kw)
