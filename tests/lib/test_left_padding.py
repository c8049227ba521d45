"""Left padding: invisible to plain RoPE with an exact mask, visible to what else reads positions.

Chapter 12's rule: with positions counted from each row's first real token and a mask that hides
the padding, a left-padded batch gives each row the logits it gets alone; and plain RoPE does not
even see positions counted from the padding, a shift of the whole row. The exceptions are
whatever reads the columns or the length besides the rotation (transformers 5.23):

* Llama 4 scales its queries on the layers without RoPE by a temperature computed at
  ``torch.arange(seq_len) + past_key_values.get_seq_length()``, the columns of the cache, not
  at ``position_ids`` (``Llama4TextAttention.forward``): a padded row gets another temperature;
* dynamic NTK (and LongRoPE) choose their frequencies from ``torch.max(position_ids) + 1``
  over the whole batch (``dynamic_rope_update`` in ``modeling_rope_utils.py``): a short row
  batched with a long one gets the long row's frequencies.

Tiny models built from configs, random weights, float32 on the CPU.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import transformers

from pe_lib.models.inference import position_ids_from_mask

LENGTHS = [12, 5]  # the second row gets 7 pads
WIDTH = max(LENGTHS)
# random weights of the default std (0.02) give nearly uniform attention, where no position
# matters; 0.2 lets the scores, and so the positions, move the logits
LARGE_INIT = 0.2


def _gap(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


@pytest.fixture(scope="module")
def ids() -> torch.Tensor:
    return torch.randint(1, 64, (len(LENGTHS), WIDTH), generator=torch.Generator().manual_seed(1))


def _padded_and_alone(model: Any, ids: torch.Tensor) -> list[float]:
    """Each row's gap between the left-padded batch (positions from the mask) and the row alone."""
    batch = torch.zeros(len(LENGTHS), WIDTH, dtype=torch.long)
    mask = torch.zeros_like(batch)
    for row, n in enumerate(LENGTHS):
        batch[row, WIDTH - n :], mask[row, WIDTH - n :] = ids[row, :n], 1
    with torch.no_grad():
        alone = [model(ids[row : row + 1, :n]).logits[0] for row, n in enumerate(LENGTHS)]
        padded = model(batch, attention_mask=mask, position_ids=position_ids_from_mask(mask)).logits
    return [_gap(padded[row, WIDTH - n :], alone[row]) for row, n in enumerate(LENGTHS)]


def _llama4(**extra: Any) -> transformers.Llama4ForCausalLM:
    # four layers, the fourth without RoPE (no_rope_layer_interval's default of 4, as
    # Llama 4 Scout's config.json); chunks longer than the text, so that only the
    # temperature differs from a plain model
    config = transformers.Llama4TextConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        intermediate_size_mlp=48,
        num_hidden_layers=4,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=16,
        num_local_experts=2,
        num_experts_per_tok=1,
        attention_chunk_size=64,
        initializer_range=LARGE_INIT,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        **extra,
    )
    torch.manual_seed(0)
    return transformers.Llama4ForCausalLM(config).eval()


def test_llama4s_temperature_sees_the_padding_that_rope_does_not(ids) -> None:
    # floor_scale 4 (Scout's is 8,192): the temperature steps up every 4 columns, inside the row
    stepping = _llama4(floor_scale=4)
    assert stepping.config.no_rope_layers == [1, 1, 1, 0]
    assert stepping.config.attn_temperature_tuning
    full, padded = _padded_and_alone(stepping, ids)
    assert full < 1e-5  # the row without padding: its columns are its positions
    assert padded > 1e-3  # 7 pads: its tokens get the temperature of columns 7..11, not 0..4
    # the same weights without the temperature: the padded row is its row alone again
    flat = _llama4(floor_scale=4, attn_temperature_tuning=False)
    flat.load_state_dict(stepping.state_dict())
    assert max(_padded_and_alone(flat, ids)) < 1e-5
    # Scout's floor_scale: columns 0..11 and positions 0..4 share the first step, 1.0
    scout = _llama4(floor_scale=8192)
    scout.load_state_dict(stepping.state_dict())
    assert max(_padded_and_alone(scout, ids)) < 1e-5


def _llama(rope_parameters: dict[str, Any]) -> transformers.LlamaForCausalLM:
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=8,  # dynamic NTK: plain RoPE up to 8 positions
        initializer_range=LARGE_INIT,
        rope_parameters=rope_parameters,
    )
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval()


def test_dynamic_ntk_gives_every_row_the_longest_rows_frequencies(ids) -> None:
    plain = _llama({"rope_type": "default", "rope_theta": 100.0})
    assert max(_padded_and_alone(plain, ids)) < 1e-5
    dynamic = _llama({"rope_type": "dynamic", "factor": 4.0, "rope_theta": 100.0})
    full, short = _padded_and_alone(dynamic, ids)
    assert full < 1e-5  # 12 positions alone or in the batch: the same stretched frequencies
    # 5 positions alone: plain RoPE; in the batch: the 12-position row's stretched frequencies
    assert short > 1e-3
