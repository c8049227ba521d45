"""pe_lib.models.inference: a key-value cache, padding and packing, against transformers' Llama.

A tiny random ``LlamaForCausalLM`` built from a config (no download) is the reference: its
logits with its own cache, padding mask, ``position_ids`` and packed rows are what
``run_cached`` must give, and ``DataCollatorWithFlattening`` gives the packed positions.
"""

from __future__ import annotations

import pytest
import torch
import transformers
from tiny_models import tiny_llama, tiny_llama_pair

from pe_lib.models.inference import (
    KVCache,
    causal_mask,
    packed_causal_mask,
    packed_positions,
    position_ids_from_mask,
    run_cached,
)
from pe_lib.models.llama import LlamaSpec, RotaryLlama
from pe_lib.rope import apply_rope

CONFIG = tiny_llama(vocab_size=97, intermediate_size=96, max_position_embeddings=256)
TOL = {"rtol": 1e-4, "atol": 1e-4}


@pytest.fixture(scope="module")
def models() -> tuple[transformers.LlamaForCausalLM, RotaryLlama]:
    return tiny_llama_pair(CONFIG, attn_implementation="sdpa")


@pytest.fixture(scope="module")
def ids() -> torch.Tensor:
    return torch.randint(
        0, CONFIG["vocab_size"], (2, 20), generator=torch.Generator().manual_seed(1)
    )


def test_an_empty_cache_is_the_full_pass_and_transformers(models, ids) -> None:
    theirs, ours = models
    with torch.no_grad():
        logits = run_cached(ours, ids, KVCache())
        torch.testing.assert_close(logits, ours(ids), **TOL)
        torch.testing.assert_close(logits, theirs(ids).logits, **TOL)


@pytest.mark.parametrize("rotated", [True, False])
def test_decoding_with_the_cache_is_the_full_pass_at_every_step(models, ids, rotated) -> None:
    theirs, ours = models
    with torch.no_grad():
        full = ours(ids)
        cache = KVCache(rotated=rotated)
        steps = [run_cached(ours, ids[:, :8], cache)]
        for t in range(8, 20, 3):  # chunks of 3 at the offset, then the rest
            steps.append(run_cached(ours, ids[:, t : t + 3], cache))
        assert cache.length == 20
        torch.testing.assert_close(torch.cat(steps, dim=1), full, **TOL)
        # transformers' own cache, one token at a time
        out = theirs(ids[:, :8], use_cache=True)
        past, rows = out.past_key_values, [out.logits]
        for t in range(8, 20):
            out = theirs(ids[:, t : t + 1], past_key_values=past, use_cache=True)
            past = out.past_key_values
            rows.append(out.logits)
        torch.testing.assert_close(torch.cat(rows, dim=1), full, **TOL)


def test_the_position_mistakes_change_the_logits(models, ids) -> None:
    _, ours = models
    with torch.no_grad():
        full = ours(ids)
        for wrong in (lambda n: torch.tensor([0]), lambda n: torch.tensor([n + 1])):
            cache = KVCache()
            run_cached(ours, ids[:, :10], cache)
            step = run_cached(ours, ids[:, 10:11], cache, wrong(cache.length))
            assert not torch.allclose(step[:, 0], full[:, 10], **TOL)
        cache = KVCache(rotated=False)
        run_cached(ours, ids[:, :10], cache)
        step = run_cached(ours, ids[:, 10:11], cache, key_positions=torch.full((11,), 10))
        assert not torch.allclose(step[:, 0], full[:, 10], **TOL)


def test_keys_rotated_when_written_equal_keys_rotated_when_read_at_those_positions(
    models, ids
) -> None:
    """Rotations compose: a key stored rotated at p is the key stored plain, rotated at p."""
    _, ours = models
    at = torch.tensor([0, 3, 4, 9, 10, 11, 2, 30])
    with torch.no_grad():
        rotated, plain = KVCache(), KVCache(rotated=False)
        run_cached(ours, ids[:, :7], rotated, at[:7])
        run_cached(ours, ids[:, :7], plain, at[:7], key_positions=at[:7])
        a = run_cached(ours, ids[:, 7:8], rotated, at[7:])
        b = run_cached(ours, ids[:, 7:8], plain, at[7:], key_positions=at)
        torch.testing.assert_close(a, b, **TOL)


def test_positions_count_from_the_first_real_token() -> None:
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 0, 0, 0, 1]])
    assert position_ids_from_mask(mask).tolist() == [
        [0, 0, 0, 1, 2],
        [0, 1, 2, 3, 4],
        [0, 0, 0, 0, 0],
    ]
    assert torch.equal(position_ids_from_mask(mask.bool()), position_ids_from_mask(mask))


def _left_padded(ids: torch.Tensor, lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(lengths)
    batch = torch.zeros(len(lengths), width, dtype=torch.long)
    mask = torch.zeros_like(batch)
    for row, n in enumerate(lengths):
        batch[row, width - n :], mask[row, width - n :] = ids[row % 2, :n], 1
    return batch, mask


def test_a_left_padded_batch_is_its_rows_alone_and_transformers(models, ids) -> None:
    theirs, ours = models
    lengths = [12, 7, 3]
    batch, mask = _left_padded(ids, lengths)
    positions = position_ids_from_mask(mask)
    with torch.no_grad():
        logits = run_cached(ours, batch, KVCache(), positions, mask=causal_mask(mask, 12))
        reference = theirs(batch, attention_mask=mask, position_ids=positions).logits
        shifted = run_cached(ours, batch, KVCache(), mask=causal_mask(mask, 12))
        for row, n in enumerate(lengths):
            alone = ours(ids[row % 2 : row % 2 + 1, :n])[0]
            torch.testing.assert_close(logits[row, 12 - n :], alone, **TOL)
            torch.testing.assert_close(reference[row, 12 - n :], alone, **TOL)
            # RoPE sees no shift of a whole row: positions from the padding change nothing
            torch.testing.assert_close(shifted[row, 12 - n :], alone, **TOL)


def test_batched_decoding_with_each_rows_offset_is_each_row_alone(models, ids) -> None:
    _, ours = models
    lengths = [10, 4]
    batch, mask = _left_padded(ids, lengths)
    with torch.no_grad():
        cache = KVCache()
        run_cached(ours, batch, cache, position_ids_from_mask(mask), mask=causal_mask(mask, 10))
        nxt = torch.stack([ids[0, 10:13], ids[1, 4:7]])
        rows = []
        for s in range(3):
            at = mask.sum(1, keepdim=True)
            mask = torch.cat((mask, torch.ones(2, 1, dtype=torch.long)), dim=1)
            rows.append(run_cached(ours, nxt[:, s : s + 1], cache, at, mask=causal_mask(mask, 1)))
        steps = torch.cat(rows, dim=1)
        for row, n in enumerate(lengths):
            alone = ours(ids[row : row + 1, : n + 3])[0, n:]
            torch.testing.assert_close(steps[row], alone, **TOL)


def test_packed_documents_are_each_document_alone_and_transformers_reads_the_reset(
    models, ids
) -> None:
    theirs, ours = models
    sizes = [6, 5, 9]
    docs = [ids[0, :6], ids[1, :5], ids[0, 6:15]]
    row = torch.cat(docs)[None]
    positions = packed_positions(sizes)
    with torch.no_grad():
        logits = run_cached(ours, row, KVCache(), positions, mask=packed_causal_mask(sizes))
        # transformers: position_ids alone, no attention mask; the blocks read from the reset
        reference = theirs(row, position_ids=positions[None], use_cache=False).logits
        start = 0
        for doc in docs:
            alone = ours(doc[None])[0]
            torch.testing.assert_close(logits[0, start : start + len(doc)], alone, **TOL)
            torch.testing.assert_close(reference[0, start : start + len(doc)], alone, **TOL)
            start += len(doc)
        plain = run_cached(ours, row, KVCache(), positions)  # the reset without the mask
        assert not torch.allclose(plain[0, 6:], logits[0, 6:], **TOL)


def test_packed_positions_are_data_collator_with_flattenings() -> None:
    collator = transformers.DataCollatorWithFlattening()
    features = [{"input_ids": list(range(n))} for n in (3, 1, 4)]
    batch = collator(features, return_tensors="pt")
    assert batch["position_ids"][0].tolist() == packed_positions([3, 1, 4]).tolist()


def test_packed_causal_mask_is_block_diagonal_and_causal() -> None:
    mask = packed_causal_mask([2, 3])
    assert mask.int().tolist() == [
        [1, 0, 0, 0, 0],
        [1, 1, 0, 0, 0],
        [0, 0, 1, 0, 0],
        [0, 0, 1, 1, 0],
        [0, 0, 1, 1, 1],
    ]


def test_causal_mask_hides_padding_and_the_future_and_lets_padding_see_itself() -> None:
    mask = causal_mask(torch.tensor([[0, 1, 1], [1, 1, 1]]), 3)
    assert mask.int().tolist() == [
        [[1, 0, 0], [0, 1, 0], [0, 1, 1]],
        [[1, 0, 0], [1, 1, 0], [1, 1, 1]],
    ]
    last = causal_mask(torch.tensor([[0, 1, 1, 1]]), 1)
    assert last.int().tolist() == [[[0, 1, 1, 1]]]


def test_an_unrotated_cache_evicts_and_reads_its_keys_at_their_slots(models, ids) -> None:
    _, ours = models
    with torch.no_grad():
        cache = KVCache(rotated=False)
        run_cached(ours, ids[:, :8], cache)
        cache.keep([0, 1, 5, 6, 7])
        assert cache.length == 5 and cache.keys[0].shape[-2] == 5
        # the slots: the same as the kept tokens' keys read at positions 0..5
        kept = KVCache(rotated=False, keys=list(cache.keys), values=list(cache.values))
        a = run_cached(ours, ids[:, 8:9], cache)
        b = run_cached(ours, ids[:, 8:9], kept, torch.tensor([5]), key_positions=torch.arange(6))
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def _stub(head_dim: int, base: float, layout: str = "half") -> RotaryLlama:
    """A RotaryLlama with only what keep() reads: its head size, base and layout."""
    spec = LlamaSpec(
        vocab_size=2,
        hidden_size=head_dim,
        intermediate_size=2,
        num_layers=1,
        num_heads=1,
        num_kv_heads=1,
        head_dim=head_dim,
        rope_theta=base,
        rms_norm_eps=1e-5,
        max_position_embeddings=4096,
    )
    weights = {
        "model.embed_tokens.weight": torch.zeros(2, head_dim),
        "model.norm.weight": torch.ones(head_dim),
    }
    return RotaryLlama(spec, weights, layout=layout)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rotated_keys_shifted_at_each_eviction_are_unrotated_keys_read_at_their_slots(
    models, ids, layout
) -> None:
    """Both designs of an evicting cache: StreamingLLM's (unrotated keys, rotated at their slots
    at every read) and llama.cpp's K-shift (rotated keys, rotated again by minus the slots they
    moved at each eviction). Rotations compose, so in float32 they give the same keys and the
    same logits at every step; rotated keys never shifted keep their old slots' angles."""
    theirs, _ = models
    weights = {k: v.detach() for k, v in theirs.state_dict().items()}
    spec = LlamaSpec.from_config({**CONFIG, "rope_parameters": {"rope_theta": 1000.0}})
    ours = RotaryLlama(spec, weights, layout=layout)
    sinks, window = 2, 5
    with torch.no_grad():
        plain, shifted, stale = KVCache(rotated=False), KVCache(), KVCache()
        for cache in (plain, shifted, stale):
            run_cached(ours, ids[:, :7], cache)
        stale_gaps = []
        for t in range(7, 20):
            a = run_cached(ours, ids[:, t : t + 1], plain)
            b = run_cached(ours, ids[:, t : t + 1], shifted)
            c = run_cached(ours, ids[:, t : t + 1], stale)
            torch.testing.assert_close(b, a, **TOL)
            stale_gaps.append(float((c - a).abs().max() / a.abs().max()))
            n = plain.length
            keep = list(range(sinks)) + list(range(n - window, n))
            plain.keep(keep)
            shifted.keep(keep, ours)
            # never shifted: the kept keys as they were written
            stale = KVCache(
                keys=[k[..., keep, :] for k in stale.keys],
                values=[v[..., keep, :] for v in stale.values],
            )
            # the shifted keys are the unrotated ones rotated at their new slots
            at_slots = apply_rope(
                plain.keys[0], torch.arange(plain.length), base=1000.0, layout=layout
            )
            torch.testing.assert_close(shifted.keys[0], at_slots, **TOL)
    assert stale_gaps[0] < 1e-6  # before the first eviction the three caches agree
    assert min(stale_gaps[1:]) > 1e-3  # after it, never-shifted keys sit at the wrong slots


@pytest.mark.parametrize(
    ("dtype", "drifts"), [(torch.float16, True), (torch.bfloat16, True), (torch.float32, False)]
)
def test_shifting_rotated_keys_rounds_them_once_per_shift(dtype, drifts) -> None:
    """Each shift rounds the keys to their dtype again: 64 shifts by one slot leave a half-
    precision key far from the key rotated once at its final slot, one shift by 64 slots does
    not; in float32 neither moves it measurably."""
    model = _stub(head_dim=64, base=100000.0)  # SmolLM2's head size and base
    kept, moves = 8, 64
    plain = torch.randn(1, 4, kept, 64, generator=torch.Generator().manual_seed(0))
    exact = apply_rope(plain.double(), torch.arange(kept), base=100000.0, layout="half")

    def error(keys: torch.Tensor) -> float:
        return float((keys.double() - exact).pow(2).mean().sqrt() / exact.pow(2).mean().sqrt())

    # StreamingLLM's design: stored unrotated in dtype, rotated once at the final slot
    once = error(apply_rope(plain.to(dtype), torch.arange(kept), base=100000.0, layout="half"))
    # written rotated at slots moves .. moves + kept - 1, behind `moves` tokens to evict
    front = torch.cat((torch.zeros(1, 4, moves, 64), plain), dim=-2).to(dtype)
    written = apply_rope(front, torch.arange(moves + kept), base=100000.0, layout="half")
    step_by_step = KVCache(keys=[written], values=[written])
    with torch.no_grad():
        for _ in range(moves):
            step_by_step.keep(range(1, step_by_step.length), model)  # one slot each
        at_once = KVCache(keys=[written], values=[written])
        at_once.keep(range(moves, moves + kept), model)  # 64 slots in one shift
    assert step_by_step.keys[0].dtype == dtype
    assert error(at_once.keys[0]) < 2 * once  # one more rounding
    if drifts:
        assert error(step_by_step.keys[0]) > 5 * once
    else:
        assert error(step_by_step.keys[0]) < 1e-5


def test_keep_checks_its_arguments_and_leaves_the_cache_as_it_was_on_error(models, ids) -> None:
    _, ours = models
    with torch.no_grad():
        rotated, plain = KVCache(), KVCache(rotated=False)
        run_cached(ours, ids[:, :6], rotated)
        run_cached(ours, ids[:, :6], plain)
    before = [k.clone() for k in rotated.keys]
    with pytest.raises(ValueError, match=r"keep\(\) on a cache of rotated keys needs model="):
        rotated.keep([0, 2])
    with pytest.raises(TypeError, match="model must be a RotaryLlama"):
        rotated.keep([0, 2], object())  # type: ignore[arg-type]
    longrope = {
        "rope_type": "longrope",
        "short_factor": [1.0] * 8,
        "long_factor": [2.0] * 8,
        "original_max_position_embeddings": 16,
        "factor": 4.0,
    }
    stretched = RotaryLlama(ours.spec, ours.weights, scaling=longrope)
    with pytest.raises(ValueError, match="'longrope' scaling chooses its frequencies from"):
        rotated.keep([0, 2], stretched)
    with pytest.raises(ValueError, match=r"slots must be increasing ints in \[0, 6\)"):
        rotated.keep([0, 0], ours)
    with pytest.raises(TypeError, match="slots must be a 1-d sequence of ints"):
        rotated.keep([0.5], ours)
    assert rotated.length == 6
    for k, b in zip(rotated.keys, before, strict=True):
        assert torch.equal(k, b)
    with pytest.raises(ValueError, match="model is for a cache of rotated keys"):
        plain.keep([0, 2], ours)
    assert plain.length == 6


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"positions": torch.arange(3.0)}, ValueError, r"positions must be int64 of shape \(3,\)"),
        ({"positions": torch.arange(4)}, ValueError, r"positions must be int64 of shape \(3,\)"),
        ({"positions": torch.tensor([0, -1, 2])}, ValueError, "positions must be non-negative"),
        ({"mask": torch.ones(3, 3)}, ValueError, r"mask must be bool of shape \(3, 3\)"),
        ({"mask": torch.zeros(3, 3, dtype=torch.bool)}, ValueError, "attend to no key"),
        (
            {"key_positions": torch.arange(3)},
            ValueError,
            "key_positions is for a cache of unrotated",
        ),
    ],
)
def test_run_cached_refuses_bad_arguments_by_name(models, kwargs, error, match) -> None:
    _, ours = models
    with pytest.raises(error, match=match):
        run_cached(ours, torch.zeros(2, 3, dtype=torch.long), KVCache(), **kwargs)


def test_run_cached_refuses_a_wrong_model_ids_or_cache(models) -> None:
    _, ours = models
    ids = torch.zeros(1, 3, dtype=torch.long)
    with pytest.raises(TypeError, match="model must be a RotaryLlama"):
        run_cached(object(), ids, KVCache())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"ids must be an int64 tensor of shape \(batch, new\)"):
        run_cached(ours, ids[0], KVCache())
    with pytest.raises(ValueError, match=r"ids must be ids in \[0, vocab_size=97\)"):
        run_cached(ours, ids + 97, KVCache())
    with pytest.raises(TypeError, match="cache must be a KVCache"):
        run_cached(ours, ids, None)  # type: ignore[arg-type]
    cache = KVCache()
    with torch.no_grad():
        run_cached(ours, torch.zeros(2, 3, dtype=torch.long), cache)
    with pytest.raises(ValueError, match="ids must have the cache's batch of 2 rows, got 3"):
        run_cached(ours, torch.zeros(3, 1, dtype=torch.long), cache)
    with pytest.raises(TypeError, match="rotated must be True or False"):
        KVCache(rotated=1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mask", "error", "match"),
    [
        ([[1, 0]], TypeError, "attention_mask must be a torch.Tensor"),
        (torch.ones(3), ValueError, r"attention_mask must have shape \(batch, seq_len\)"),
        (torch.ones(1, 3), TypeError, "attention_mask must be bool or an integer dtype"),
        (
            torch.tensor([[0, 2]]),
            ValueError,
            r"attention_mask must hold only 0 and 1, got also \[2\]",
        ),
    ],
)
def test_padding_masks_are_checked(mask, error, match) -> None:
    with pytest.raises(error, match=match):
        position_ids_from_mask(mask)


def test_causal_mask_and_packing_refuse_bad_sizes() -> None:
    with pytest.raises(ValueError, match="new must be at most attention_mask's 2 columns, got 3"):
        causal_mask(torch.ones(1, 2, dtype=torch.long), 3)
    with pytest.raises(ValueError, match="new must be a positive int"):
        causal_mask(torch.ones(1, 2, dtype=torch.long), 0)
    for bad in ([], "abc", None):
        with pytest.raises(TypeError, match="lengths must be a non-empty sequence"):
            packed_positions(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"lengths\[1\] must be a positive int"):
        packed_causal_mask([2, 0])
