"""Chapter 12's inference functions and the sinks of chapter 11 against reference code, on random
settings (hypothesis).

``tests/lib/test_inference.py`` and ``tests/lib/test_todays_models.py`` compare each function
with the code that runs its model on a few chosen settings; here hypothesis draws them. Each
property asks for equality with:

* :func:`pe_lib.models.inference.position_ids_from_mask`: ``_prepare_position_ids_for_generation`` of
  a transformers 5.23 model (``generation/utils.py``), the positions ``generate`` gives a padded
  batch, on any mask of 0s and 1s, integer or bool;
* :func:`pe_lib.models.inference.packed_positions`: the ``position_ids`` of
  ``DataCollatorWithFlattening`` (``data/data_collator.py``);
* :func:`pe_lib.models.inference.packed_causal_mask`: the mask ``create_causal_mask``
  (``masking_utils.py``) builds from those positions alone, where ``find_packed_sequence_indices``
  reads the documents back from the resets, and the documents ``DataCollatorWithFlattening``
  numbers (``seq_idx``);
* :func:`pe_lib.models.sinks.softmax_with_sinks`: the attention weights of gpt-oss's
  ``eager_attention_forward`` (``models/gpt_oss/modeling_gpt_oss.py``), masked rows included;
* :func:`pe_lib.models.sinks.streaming_cache`: StreamingLLM's rule applied after every token as its
  ``StartRecentKVCache.__call__`` does (``streaming_llm/kv_cache.py``, Xiao et al., 2024): once
  more than ``start_size + recent_size`` tokens are held, keep the first ``start_size`` and the
  last ``recent_size``;
* :func:`pe_lib.models.inference.run_cached`: a full forward pass of a tiny random
  ``LlamaForCausalLM`` built from a drawn config, fed in random chunks through both kinds of
  cache.
"""

from __future__ import annotations

import types

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

transformers = pytest.importorskip("transformers")

from pe_lib.models.inference import (  # noqa: E402
    KVCache,
    packed_causal_mask,
    packed_positions,
    position_ids_from_mask,
    run_cached,
)
from pe_lib.models.llama import LlamaSpec, RotaryLlama  # noqa: E402
from pe_lib.models.sinks import softmax_with_sinks, streaming_cache  # noqa: E402

EXAMPLES = settings(max_examples=30, deadline=None)
#: float32 logits of two implementations of one model (another order of the same sums)
TOL = {"rtol": 1e-4, "atol": 1e-4}


def _tiny_llama_config(**sizes: int) -> transformers.LlamaConfig:
    return transformers.LlamaConfig(
        vocab_size=sizes.get("vocab_size", 31),
        hidden_size=sizes.get("hidden_size", 16),
        intermediate_size=sizes.get("intermediate_size", 24),
        num_hidden_layers=sizes.get("num_hidden_layers", 1),
        num_attention_heads=sizes.get("num_attention_heads", 2),
        num_key_value_heads=sizes.get("num_key_value_heads", 2),
        head_dim=sizes.get("head_dim", 8),
        max_position_embeddings=256,
        rope_parameters={"rope_type": "default", "rope_theta": float(sizes.get("theta", 1e4))},
        attn_implementation="sdpa",
    )


# --- positions of a padded batch ---------------------------------------------------------------


@st.composite
def padding_masks(draw: st.DrawFn) -> torch.Tensor:
    batch, width = draw(st.integers(1, 4)), draw(st.integers(1, 12))
    style = draw(st.sampled_from(["left", "right", "any"]))
    rows = []
    for _ in range(batch):
        if style == "any":
            rows.append(draw(st.lists(st.integers(0, 1), min_size=width, max_size=width)))
        else:
            real = draw(st.integers(0, width))
            pads = [0] * (width - real)
            rows.append(pads + [1] * real if style == "left" else [1] * real + pads)
    mask = torch.tensor(rows, dtype=torch.long)
    return mask.bool() if draw(st.booleans()) else mask


@pytest.fixture(scope="module")
def generator_model() -> transformers.LlamaForCausalLM:
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(_tiny_llama_config()).eval()


@EXAMPLES
@given(mask=padding_masks())
def test_position_ids_from_mask_are_generates(generator_model, mask: torch.Tensor) -> None:
    ids = torch.zeros(mask.shape, dtype=torch.long)
    theirs = generator_model._prepare_position_ids_for_generation(ids, {"attention_mask": mask})
    ours = position_ids_from_mask(mask)
    assert ours.dtype == torch.int64
    assert torch.equal(ours, theirs)


# --- packed documents ---------------------------------------------------------------------------

document_lengths = st.lists(st.integers(1, 12), min_size=1, max_size=8)


@EXAMPLES
@given(lengths=document_lengths, as_tensor=st.booleans())
def test_packed_positions_and_mask_are_transformers(lengths: list[int], as_tensor: bool) -> None:
    from transformers.masking_utils import create_causal_mask

    collator = transformers.DataCollatorWithFlattening(return_seq_idx=True)
    batch = collator([{"input_ids": list(range(n))} for n in lengths], return_tensors="pt")
    given_lengths = torch.tensor(lengths) if as_tensor else lengths
    positions = packed_positions(given_lengths)
    assert torch.equal(positions, batch["position_ids"][0])

    total = sum(lengths)
    theirs = create_causal_mask(
        _tiny_llama_config(),
        torch.zeros(1, total, 16),
        attention_mask=None,
        past_key_values=None,
        position_ids=positions[None],
        allow_is_causal_skip=False,
    )
    mask = packed_causal_mask(given_lengths)
    assert torch.equal(mask, theirs[0, 0])
    document = batch["seq_idx"][0]
    order = torch.arange(total)
    same = (document[:, None] == document[None, :]) & (order[None, :] <= order[:, None])
    assert torch.equal(mask, same)


# --- learned sinks ------------------------------------------------------------------------------


@st.composite
def sink_settings(draw: st.DrawFn) -> dict[str, object]:
    kv_heads, groups = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    return {
        "batch": draw(st.integers(1, 2)),
        "kv_heads": kv_heads,
        "groups": groups,
        "queries": draw(st.integers(1, 6)),
        "keys": draw(st.integers(1, 8)),
        "head_dim": draw(st.sampled_from([2, 4, 8])),
        "sink_scale": draw(st.floats(0.0, 8.0)),
        "dtype": draw(st.sampled_from([torch.float32, torch.float64])),
        "seed": draw(st.integers(0, 2**31 - 1)),
    }


@EXAMPLES
@given(setting=sink_settings())
def test_softmax_with_sinks_is_gpt_oss_eager_attention(setting: dict) -> None:
    from transformers.models.gpt_oss.modeling_gpt_oss import eager_attention_forward, repeat_kv

    generator = torch.Generator().manual_seed(setting["seed"])
    dtype, heads = setting["dtype"], setting["kv_heads"] * setting["groups"]
    b, n_q, n_k, d = setting["batch"], setting["queries"], setting["keys"], setting["head_dim"]
    query = torch.randn(b, heads, n_q, d, generator=generator, dtype=dtype)
    key = torch.randn(b, setting["kv_heads"], n_k, d, generator=generator, dtype=dtype)
    value = torch.randn(b, setting["kv_heads"], n_k, d, generator=generator, dtype=dtype)
    sinks = setting["sink_scale"] * torch.randn(heads, generator=generator, dtype=dtype)
    hidden = torch.rand(b, 1, n_q, n_k, generator=generator) < 0.3  # some rows hide every key
    # transformers' additive mask: the dtype's most negative number where a key is hidden
    additive = torch.zeros(hidden.shape, dtype=dtype).masked_fill(hidden, torch.finfo(dtype).min)
    module = types.SimpleNamespace(
        sinks=sinks, num_key_value_groups=setting["groups"], training=False
    )
    _, theirs = eager_attention_forward(module, query, key, value, additive, scaling=d**-0.5)

    scores = query @ repeat_kv(key, setting["groups"]).transpose(-1, -2) * d**-0.5
    ours = softmax_with_sinks(scores.masked_fill(hidden, float("-inf")), sinks)
    tolerance = 1e-6 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(ours, theirs, rtol=tolerance, atol=tolerance)


# --- StreamingLLM's cache -----------------------------------------------------------------------


@EXAMPLES
@given(
    length=st.integers(1, 300),
    sinks=st.integers(0, 8),
    window=st.integers(1, 64),
)
def test_streaming_cache_is_streamingllms_rule_after_every_token(
    length: int, sinks: int, window: int
) -> None:
    held: list[int] = []
    for token in range(length):
        held.append(token)
        if len(held) > sinks + window:  # StartRecentKVCache.__call__ after each step
            held = held[:sinks] + held[len(held) - window :]
    kept, positions = streaming_cache(length, sinks, window)
    assert kept.tolist() == held
    assert positions.tolist() == list(range(len(held)))


# --- the key-value cache ------------------------------------------------------------------------


@st.composite
def cached_runs(draw: st.DrawFn) -> dict[str, object]:
    kv_heads = draw(st.integers(1, 2))
    heads = kv_heads * draw(st.integers(1, 3))
    head_dim = draw(st.sampled_from([2, 4, 8, 16]))
    length = draw(st.integers(1, 14))
    cuts = sorted(draw(st.sets(st.integers(1, length - 1), max_size=4))) if length > 1 else []
    return {
        "sizes": {
            "vocab_size": draw(st.integers(8, 50)),  # transformers' default ids up to 2 inside
            "hidden_size": heads * draw(st.sampled_from([2, 4, 8])),  # a multiple of heads
            "intermediate_size": draw(st.integers(4, 32)),
            "num_hidden_layers": draw(st.integers(1, 3)),
            "num_attention_heads": heads,
            "num_key_value_heads": kv_heads,
            "head_dim": head_dim,
            "theta": draw(st.sampled_from([10.0, 1e3, 1e4, 5e5])),
        },
        "batch": draw(st.integers(1, 3)),
        "chunks": list(zip([0, *cuts], [*cuts, length], strict=True)),
        "rotated": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**31 - 1)),
    }


@settings(max_examples=15, deadline=None)
@given(run=cached_runs())
def test_run_cached_in_random_chunks_is_transformers_full_pass(run: dict) -> None:
    sizes = run["sizes"]
    config = _tiny_llama_config(**sizes)
    torch.manual_seed(run["seed"])
    theirs = transformers.LlamaForCausalLM(config).eval()
    for weight in theirs.parameters():  # larger than the default 0.02, so positions matter
        weight.data.normal_(0.0, 0.3)
    weights = {k: v.detach() for k, v in theirs.state_dict().items()}
    ours = RotaryLlama(LlamaSpec.from_config(config.to_dict()), weights)
    length = run["chunks"][-1][1]
    ids = torch.randint(0, sizes["vocab_size"], (run["batch"], length))
    cache = KVCache(rotated=run["rotated"])
    with torch.no_grad():
        steps = [run_cached(ours, ids[:, a:b], cache) for a, b in run["chunks"]]
        reference = theirs(ids).logits
    assert cache.length == length
    torch.testing.assert_close(torch.cat(steps, dim=1), reference, **TOL)
