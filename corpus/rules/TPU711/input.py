# TPU711 lightning-xla-plugins: reported only
from lightning.pytorch import Trainer
from lightning.pytorch.strategies import XLAStrategy
from lightning.pytorch.plugins import XLABf16Precision

trainer = Trainer(strategy=XLAStrategy(sync_module_states=True), plugins=[XLABf16Precision()], devices=8)
