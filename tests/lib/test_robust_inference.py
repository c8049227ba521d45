"""pe_lib.models.inference and pe_lib.models.sinks on what a notebook user does by accident.

A cell interrupted in the middle of ``run_cached`` and run again, a call refused after a prefill,
a cache flipped from rotated to unrotated, a cache from another model, empty or meta tensors,
sizes no memory holds, and arguments that are reasonable but were refused (``keep([])``, integer
tensors of slots or lengths). Each test here failed on the code before these checks: a call
either completes or leaves the cache as it was, and a refusal names the argument.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import transformers
from tiny_models import tiny_llama_pair

import pe_lib._validation
from pe_lib.models import inference
from pe_lib.models.inference import (
    KVCache,
    packed_causal_mask,
    packed_positions,
    position_ids_from_mask,
    run_cached,
)
from pe_lib.models.llama import LlamaSpec, RotaryLlama
from pe_lib.models.sinks import softmax_with_sinks, streaming_cache
from tests.lib.test_inference import CONFIG


@pytest.fixture(scope="module")
def ours() -> RotaryLlama:
    """test_inference.py's tiny Llama (its sizes, random weights of the default scale)."""
    return tiny_llama_pair(CONFIG)[1]


@pytest.fixture(scope="module")
def ids() -> torch.Tensor:
    return torch.randint(
        0, CONFIG["vocab_size"], (2, 20), generator=torch.Generator().manual_seed(1)
    )


def _snapshot(cache: KVCache) -> list[torch.Tensor]:
    return [t.clone() for t in (*cache.keys, *cache.values)]


def _assert_unchanged(cache: KVCache, before: list[torch.Tensor]) -> None:
    now = [*cache.keys, *cache.values]
    assert len(now) == len(before)
    for a, b in zip(now, before, strict=True):
        assert torch.equal(a, b)


def _prefilled(model: RotaryLlama, ids: torch.Tensor, rotated: bool, n: int = 3) -> KVCache:
    cache = KVCache(rotated=rotated)
    with torch.no_grad():
        run_cached(model, ids[:, :n], cache)
    return cache


# --- a call completes or leaves the cache as it was ---------------------------------------------


@pytest.mark.parametrize("rotated", [True, False])
@pytest.mark.parametrize("interrupted_layer", [0, 1])  # CONFIG has two layers
def test_an_interrupt_in_any_layer_leaves_the_cache_as_it_was_and_a_rerun_is_exact(
    ours, ids, monkeypatch, rotated, interrupted_layer
) -> None:
    """Ctrl-C in a layer, then the cell run again: the same logits as a run never interrupted."""
    cache = _prefilled(ours, ids, rotated)
    before = _snapshot(cache)
    with torch.no_grad():
        expected = run_cached(ours, ids[:, 3:4], _prefilled(ours, ids, rotated))

    real_block_rest = inference.block_rest
    calls = []

    def interrupted(w, p, h, a, spec):  # noqa: ANN001, ANN202
        calls.append(p)
        if p == f"model.layers.{interrupted_layer}.":
            raise KeyboardInterrupt
        return real_block_rest(w, p, h, a, spec)

    monkeypatch.setattr(inference, "block_rest", interrupted)
    with torch.no_grad(), pytest.raises(KeyboardInterrupt):
        run_cached(ours, ids[:, 3:4], cache)
    assert calls[-1] == f"model.layers.{interrupted_layer}."
    assert cache.length == 3
    _assert_unchanged(cache, before)
    monkeypatch.setattr(inference, "block_rest", real_block_rest)
    with torch.no_grad():
        again = run_cached(ours, ids[:, 3:4], cache)
    assert cache.length == 4
    torch.testing.assert_close(again, expected, rtol=0, atol=0)


def test_key_positions_beyond_the_bound_are_refused_by_name_before_any_layer(ours, ids) -> None:
    cache = _prefilled(ours, ids, rotated=False)
    before = _snapshot(cache)
    beyond = torch.tensor([0, 1, 2, 2**53])
    with (
        torch.no_grad(),
        pytest.raises(ValueError, match=r"^key_positions must be at most 2\*\*53"),
    ):
        run_cached(ours, ids[:, 3:4], cache, key_positions=beyond)
    assert [k.shape[-2] for k in cache.keys] == [3, 3]
    _assert_unchanged(cache, before)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"positions": torch.tensor([2**53])}, ValueError, r"^positions must be at most"),
        ({"positions": torch.tensor([-1])}, ValueError, r"^positions must be non-negative"),
        ({"mask": torch.zeros(1, 4, dtype=torch.bool)}, ValueError, "attend to no key"),
        ({"mask": torch.ones(1, 3, dtype=torch.bool)}, ValueError, r"^mask must be bool"),
        ({"key_positions": torch.arange(4)}, ValueError, "^key_positions is for a cache"),
        ({"ids": torch.full((2, 1), 97)}, ValueError, r"^ids must be ids in \[0, vocab_size"),
        ({"ids": torch.zeros(3, 1, dtype=torch.long)}, ValueError, "^ids must have the cache"),
    ],
)
def test_every_refusal_after_a_prefill_leaves_the_cache_as_it_was(
    ours, ids, kwargs, error, match
) -> None:
    cache = _prefilled(ours, ids, rotated=True)
    before = _snapshot(cache)
    new = kwargs.pop("ids", ids[:, 3:4])
    with torch.no_grad(), pytest.raises(error, match=match):
        run_cached(ours, new, cache, **kwargs)
    _assert_unchanged(cache, before)


@pytest.mark.parametrize("rotated", [True, False])
def test_a_caches_rotation_is_fixed_when_it_is_created(ours, ids, rotated) -> None:
    """Flipping ``rotated`` after a prefill rotated its keys twice (or never) without an error."""
    for cache in (KVCache(rotated=rotated), _prefilled(ours, ids, rotated)):
        with pytest.raises(AttributeError, match="KVCache.rotated is fixed when the cache"):
            cache.rotated = not rotated
        assert cache.rotated is rotated
    assert KVCache(rotated=rotated).rotated is rotated  # the constructor still sets it


# --- raw errors that are now answers or refusals by name ----------------------------------------


def test_a_one_row_cache_serves_a_batch_as_a_shared_prompt(ours, ids) -> None:
    """A prompt cached once, then two continuations: each row is its full text alone."""
    with torch.no_grad():
        cache = KVCache()
        run_cached(ours, ids[:1, :6], cache)
        tails = torch.stack([ids[0, 6:9], ids[1, 6:9]])
        logits = run_cached(ours, tails, cache)
        assert cache.length == 9 and cache.keys[0].shape[0] == 2
        for row in range(2):
            alone = ours(torch.cat((ids[0, :6], tails[row]))[None])[0, 6:]
            torch.testing.assert_close(logits[row], alone, rtol=1e-4, atol=1e-4)


def test_empty_ids_are_refused_by_name(ours) -> None:
    for shape in ((2, 0), (0, 3)):
        with pytest.raises(ValueError, match=r"^ids must hold at least one token"):
            run_cached(ours, torch.zeros(shape, dtype=torch.long), KVCache())


def _resized(**sizes: int) -> RotaryLlama:
    """test_inference.py's tiny Llama with other sizes, random weights."""
    config = {**CONFIG, **sizes}
    theirs = transformers.LlamaForCausalLM(transformers.LlamaConfig(**config))
    weights = {k: v.detach() for k, v in theirs.state_dict().items()}
    spec = LlamaSpec.from_config({**config, "rope_parameters": {"rope_theta": 1000.0}})
    return RotaryLlama(spec, weights)


@pytest.mark.parametrize(
    "sizes",
    [
        {"num_hidden_layers": 3},  # the cache has too few layers: a raw broadcast error
        {"num_hidden_layers": 1},  # too many: accepted, the last layer's cache left behind
        {"head_dim": 8},  # another head size
        {"num_key_value_heads": 4},  # other key-value heads
    ],
)
def test_a_cache_from_a_model_of_another_shape_is_refused(ours, ids, sizes) -> None:
    cache = _prefilled(ours, ids, rotated=True)
    before = _snapshot(cache)
    other = _resized(**sizes)
    with torch.no_grad(), pytest.raises(ValueError, match="^cache must hold what model writes"):
        run_cached(other, ids[:, 3:4], cache)
    _assert_unchanged(cache, before)


@pytest.mark.parametrize("argument", ["ids", "positions", "mask", "key_positions"])
def test_meta_tensors_given_to_run_cached_are_refused_by_name(ours, ids, argument) -> None:
    values = {
        "ids": ids[:, :4],
        "positions": torch.arange(4),
        "mask": torch.ones(4, 4, dtype=torch.bool).tril(),
        "key_positions": torch.arange(4),
    }
    values[argument] = values[argument].to("meta")
    with pytest.raises(ValueError, match=f"^{argument} must be .* got a meta tensor"):
        run_cached(ours, values.pop("ids"), KVCache(rotated=False), **values)


def test_sizes_no_memory_holds_are_refused_before_allocating() -> None:
    for call in (
        lambda: packed_positions([2**40]),
        lambda: packed_causal_mask([2**31]),
        lambda: streaming_cache(2**41, 4, 2**40),
    ):
        with pytest.raises(ValueError, match="would need .* of memory, more than this machine"):
            call()
    with pytest.raises(ValueError, match=r"must be at most 2\*\*63 - 1 elements"):
        packed_causal_mask([2**40, 1])  # more entries than a tensor holds


def test_the_packing_and_streaming_functions_ask_the_memory_check(monkeypatch) -> None:
    """The library's up-front check decides: with 1 MB of memory, 4 MB of mask is refused."""
    monkeypatch.setattr(pe_lib._validation, "memory_limit", lambda: 10**6)
    for call, name in (
        (lambda: packed_causal_mask([1000, 1000]), "packed_causal_mask"),
        (lambda: packed_positions([100_000]), "packed_positions"),
        (lambda: streaming_cache(10**6, 4, 100_000), "streaming_cache"),
    ):
        with pytest.raises(ValueError, match=f"^{name}.* would need"):
            call()
    assert packed_causal_mask([300, 200]).shape == (500, 500)  # 250 kB: built


@pytest.mark.skipif(
    not os.access("/proc/self/clear_refs", os.W_OK), reason="Linux's peak memory counter"
)
def test_a_packed_mask_is_built_in_its_own_memory() -> None:
    """The mask is filled in place: its peak is the mask itself, where comparing every pair of
    document numbers and of positions held three such masks at once (60000 tokens: 10.8 GB and
    more than 20 s on two cores, rather than 3.6 GB and a few seconds)."""
    n = 12000  # 144 MB
    script = textwrap.dedent(
        f"""
        import re
        from pe_lib.models.inference import packed_causal_mask

        def resident(key):
            with open("/proc/self/status") as status:
                return int(re.search(key + r":\\s+(\\d+) kB", status.read()).group(1)) * 1024

        with open("/proc/self/clear_refs", "w") as counter:
            counter.write("5")  # the peak (VmHWM) starts again from what is resident now
        before = resident("VmRSS")
        mask = packed_causal_mask([{n // 3}, {n - n // 3}])
        print(resident("VmHWM") - before)
        """
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    peak = int(out.stdout.split()[-1])
    assert peak < 1.5 * n * n, f"the mask of {n * n} bytes peaked at {peak} bytes"


def test_meta_masks_give_meta_positions_and_sinks_must_share_the_scores_device() -> None:
    for dtype in (torch.int64, torch.bool):
        positions = position_ids_from_mask(torch.ones(2, 5, dtype=dtype, device="meta"))
        assert positions.is_meta and positions.shape == (2, 5) and positions.dtype == torch.int64
    scores = torch.zeros(1, 2, 3, 3, device="meta")
    with pytest.raises(ValueError, match=r"^sinks must be on the device of scores \(meta\)"):
        softmax_with_sinks(scores, torch.zeros(2))
    assert softmax_with_sinks(scores, torch.zeros(2, device="meta")).shape == scores.shape


# --- reasonable arguments that were refused -----------------------------------------------------


@pytest.mark.parametrize("rotated", [True, False])
def test_keep_nothing_empties_the_cache_like_a_new_one(ours, ids, rotated) -> None:
    cache = _prefilled(ours, ids, rotated, n=5)
    with torch.no_grad():
        cache.keep([], ours if rotated else None)
        assert cache.length == 0 and len(cache.keys) == 2
        after = run_cached(ours, ids[:, 5:8], cache)
        fresh = run_cached(ours, ids[:, 5:8], KVCache(rotated=rotated))
    torch.testing.assert_close(after, fresh, rtol=0, atol=0)


@pytest.mark.parametrize(
    "slots",
    [
        torch.tensor([0, 2, 3], dtype=torch.int32),
        torch.tensor([0, 2, 3], dtype=torch.int16),
        np.array([0, 2, 3], dtype=np.int32),
        (0, 2, 3),
        [np.int64(0), np.int32(2), 3],
    ],
    ids=["int32", "int16", "numpy int32", "tuple", "numpy scalars"],
)
@pytest.mark.parametrize("rotated", [True, False])
def test_keep_takes_any_integer_slots(ours, ids, slots, rotated) -> None:
    model = ours if rotated else None
    reference, cache = _prefilled(ours, ids, rotated, n=5), _prefilled(ours, ids, rotated, n=5)
    with torch.no_grad():
        reference.keep([0, 2, 3], model)
        cache.keep(slots, model)
    for a, b in zip(
        [*cache.keys, *cache.values], [*reference.keys, *reference.values], strict=True
    ):
        assert torch.equal(a, b)


@pytest.mark.parametrize(
    ("slots", "error", "match"),
    [
        (torch.tensor([0.0, 1.0]), TypeError, r"slots must be a 1-d sequence of ints .* float32"),
        (torch.tensor([True, False]), TypeError, "slots must be a 1-d sequence of ints"),
        (torch.tensor([[0, 1]]), TypeError, r"of shape \(1, 2\)"),
        (torch.tensor([0, 1], device="meta"), ValueError, "got a meta tensor"),
        ([0, True], TypeError, "entries that are not ints: \\[True\\]"),
        ("01", TypeError, "slots must be a 1-d sequence of ints"),
        ([0, 2**70], ValueError, r"slots must be increasing ints in \[0, 5\)"),
        (torch.tensor([3, 1]), ValueError, r"slots must be increasing ints in \[0, 5\)"),
    ],
)
def test_keep_refuses_what_is_not_slots_and_leaves_the_cache(
    ours, ids, slots, error, match
) -> None:
    cache = _prefilled(ours, ids, rotated=False, n=5)
    before = _snapshot(cache)
    with pytest.raises(error, match=match):
        cache.keep(slots)
    _assert_unchanged(cache, before)


def test_a_caches_lists_must_agree() -> None:
    keys = [torch.zeros(1, 2, 3, 16)] * 2
    model = _resized(num_hidden_layers=2)
    ids = torch.zeros(1, 1, dtype=torch.long)
    with pytest.raises(ValueError, match="one tensor per layer each, got 2 and 1"):
        run_cached(model, ids, KVCache(keys=keys, values=keys[:1]))
    with pytest.raises(ValueError, match=r"cache.values\[1\] must have the shape"):
        run_cached(model, ids, KVCache(keys=keys, values=[keys[0], torch.zeros(1, 2, 4, 16)]))
    with pytest.raises(TypeError, match="cache.keys must be a list of torch.Tensor"):
        run_cached(model, ids, KVCache(keys=[None, None], values=keys))  # type: ignore[list-item]


@pytest.mark.parametrize(
    "lengths",
    [torch.tensor([3, 1, 4]), torch.tensor([3, 1, 4], dtype=torch.int32), np.array([3, 1, 4])],
)
def test_packing_takes_a_tensor_of_lengths(lengths) -> None:
    assert torch.equal(packed_positions(lengths), packed_positions([3, 1, 4]))
    assert torch.equal(packed_causal_mask(lengths), packed_causal_mask([3, 1, 4]))


@pytest.mark.parametrize(
    ("lengths", "error", "match"),
    [
        (torch.tensor([3.0, 1.0]), TypeError, "got a tensor of dtype float32"),
        (torch.tensor([True]), TypeError, "got a tensor of dtype bool"),
        (torch.tensor([[3, 1]]), ValueError, r"got a tensor of shape \(1, 2\)"),
        (torch.tensor([], dtype=torch.long), ValueError, r"got a tensor of shape \(0,\)"),
        (torch.tensor([3, 0]), ValueError, r"lengths\[1\] must be a positive int"),
        (torch.tensor([3], device="meta"), ValueError, "got a meta tensor"),
    ],
)
def test_packing_refuses_tensors_that_are_not_lengths(lengths, error, match) -> None:
    for function in (packed_positions, packed_causal_mask):
        with pytest.raises(error, match=match):
            function(lengths)
