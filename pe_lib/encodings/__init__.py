"""The encodings: absolute tables added to the embeddings, relative ones inside attention, and
their registry.

* :mod:`~pe_lib.encodings.sinusoidal`: the fixed sinusoidal table (Vaswani et al., 2017);
* :mod:`~pe_lib.encodings.modules`: ``torch.nn.Module`` wrappers that add a table (sinusoidal
  or learned) to token embeddings;
* :mod:`~pe_lib.encodings.relative`: the shift matrix, ``PE(pos + k)`` as a linear map of
  ``PE(pos)``;
* :mod:`~pe_lib.encodings.relative_bias`: Shaw's clipped distances and T5's buckets;
* :mod:`~pe_lib.encodings.alibi`: ALiBi's distance penalty on the scores;
* :mod:`~pe_lib.encodings.registry`: :data:`ENCODINGS`, one entry per encoding (RoPE, from
  :mod:`pe_lib.rope`, included), one contract for all; its names are importable from here.
"""

from .registry import (
    ENCODINGS,
    PROPERTIES,
    AdditiveFactory,
    Encoding,
    RotationFactory,
    ScoreBias,
    register,
)

__all__ = [
    "ENCODINGS",
    "PROPERTIES",
    "AdditiveFactory",
    "Encoding",
    "RotationFactory",
    "ScoreBias",
    "register",
]
