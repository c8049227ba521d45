"""The tiny Llama the tests compare pe_lib's model with transformers' on: one configuration,
shared, and the pair of models built from it with the same random weights.

``TINY_LLAMA`` holds the keys of a Llama ``config.json`` that matter here (two layers of four
query heads of 16 sharing two key-value heads); a test that needs other sizes changes a few with
:func:`tiny_llama`. transformers is imported when a pair is built, so importing this module costs
nothing where transformers is absent.
"""

from __future__ import annotations

from typing import Any

import torch

TINY_LLAMA: dict[str, Any] = {
    "vocab_size": 300,
    "hidden_size": 64,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 128,
    "rms_norm_eps": 1e-5,
    "rope_theta": 1000.0,
}


def tiny_llama(**changes: Any) -> dict[str, Any]:
    """``TINY_LLAMA`` with ``changes``."""
    return {**TINY_LLAMA, **changes}


def tiny_llama_pair(config: dict[str, Any], *, seed: int = 0, **options: Any) -> tuple[Any, Any]:
    """transformers' ``LlamaForCausalLM`` of ``config`` with random weights drawn after
    ``torch.manual_seed(seed)`` (``options``: more ``LlamaConfig`` arguments, such as
    ``attn_implementation``), in eval mode, and pe_lib's ``RotaryLlama`` on the same tensors."""
    import transformers

    from pe_lib.models.llama import LlamaSpec, RotaryLlama

    torch.manual_seed(seed)
    theirs = transformers.LlamaForCausalLM(transformers.LlamaConfig(**config, **options)).eval()
    weights = {k: v.detach() for k, v in theirs.state_dict().items()}
    spec = LlamaSpec.from_config(
        {**config, "rope_parameters": {"rope_theta": config["rope_theta"]}}
    )
    return theirs, RotaryLlama(spec, weights)
