"""The trainable PLDR decoder: what ``pyverify collapse`` trains and ``pyverify.measure`` measures.

:mod:`~pyverify.trainable.decoder` holds the torch ``nn.Module`` in the author's
``pldr_model_v510`` layout and initialisation; it sits below both the trainer
(:mod:`pyverify.collapse`) and the measurements (:mod:`pyverify.measure`).
"""

from pyverify.trainable.decoder import DEDUCTIVE, LN_EPS, METRIC_EPS, ModelConfig, PLDRDecoder

__all__ = ["DEDUCTIVE", "LN_EPS", "METRIC_EPS", "ModelConfig", "PLDRDecoder"]
