"""Chapter 12's rules on the real SmolLM2-135M (and MiniLM), when the weights are fetched.

Each rule the chapter states is asserted here on other text than the chapter's: decoding with a
cache is the full pass; the position mistakes cost what the chapter says; a left-padded batch
is its rows alone, counting from the padding costs RoPE nothing and moves MiniLM's embeddings;
packing with reset positions and a block mask is each document alone; batched generation at
each row's own offset is each row alone; an evicting cache puts its keys at their slots,
unrotated or rotated and shifted, and fails with rotated keys never shifted.
"""

from __future__ import annotations

import pytest
import torch

from pe_lib import pretrained
from pe_lib.experiments.lm import load_corpus
from pe_lib.models.inference import (
    KVCache,
    causal_mask,
    packed_causal_mask,
    packed_positions,
    position_ids_from_mask,
    run_cached,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        pretrained._manifest(pretrained.weights_dir()) is None,
        reason=f"the weights' cache is missing (run `{pretrained.FETCH_COMMAND}`)",
    ),
]


@pytest.fixture(scope="module")
def smollm2():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with torch.no_grad():
        model = pretrained.load_smollm2()
        text = load_corpus()[:6000]  # the start of the corpus; the chapter reads its end
        ids = torch.tensor(pretrained.smollm2_tokenizer().encode(text).ids[:600])[None]
        yield model, ids
    torch.set_num_threads(threads)


def gap(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return -torch.log_softmax(logits.double(), -1).gather(-1, targets[..., None])[..., 0]


def test_greedy_decoding_with_the_cache_is_the_full_pass(smollm2) -> None:
    model, ids = smollm2
    with torch.no_grad():
        cache = KVCache()
        logits = run_cached(model, ids[:, :30], cache)[:, -1]
        tokens, seen = [], [logits]
        for _ in range(6):
            tokens.append(logits.argmax(-1, keepdim=True))
            logits = run_cached(model, tokens[-1], cache)[:, -1]
            seen.append(logits)
        full = model(torch.cat([ids[:, :30], *tokens], dim=1))[:, 29:]
    assert gap(torch.stack(seen, 1), full) < 1e-5


def test_the_position_mistakes_cost_what_the_chapter_says(smollm2) -> None:
    model, ids = smollm2
    prompt, fed = 32, 17
    texts = torch.cat([ids[:, s : s + prompt + fed] for s in (100, 400)])
    targets = texts[:, prompt + 1 :]
    decoded = torch.arange(prompt, prompt + fed)
    with torch.no_grad():

        def one_pass(at: torch.Tensor) -> torch.Tensor:
            return model(texts, torch.cat((torch.arange(prompt), at)))[:, prompt:-1]

        right, at_zero, plus_one = (
            one_pass(at) for at in (decoded, torch.zeros(fed, dtype=torch.long), decoded + 1)
        )
        # the one-pass shortcut is decoding itself, for the query at 0
        cache = KVCache()
        run_cached(model, texts[:, :prompt], cache)
        steps = [
            run_cached(model, texts[:, t : t + 1], cache, torch.tensor([0]))[:, -1]
            for t in range(prompt, prompt + 4)
        ]
        assert gap(torch.stack(steps, 1), at_zero[:, :4]) < 1e-5
        cache = KVCache(rotated=False)
        run_cached(model, texts[:, :prompt], cache)
        rows = []
        for t in range(prompt, prompt + fed - 1):
            every = torch.full((t + 1,), t)
            step = run_cached(
                model, texts[:, t : t + 1], cache, torch.tensor([t]), key_positions=every
            )
            rows.append(step[:, -1])
        rerotated = torch.stack(rows, 1)
    base = nll(right, targets).mean().exp()
    assert nll(at_zero, targets).mean().exp() > 2 * base
    assert nll(rerotated, targets).mean().exp() > 2 * base
    assert 0.8 < float(nll(plus_one, targets).mean().exp() / base) < 1.25
    assert gap(plus_one, right) > 1e-3


def test_a_left_padded_batch_is_its_rows_alone_even_counted_from_the_padding(smollm2) -> None:
    model, ids = smollm2
    lengths, width = [10, 6, 3], 10
    prompts = [ids[0, 50 * i : 50 * i + n] for i, n in enumerate(lengths)]
    batch = torch.zeros(3, width, dtype=torch.long)
    mask = torch.zeros_like(batch)
    for row, (p, n) in enumerate(zip(prompts, lengths, strict=True)):
        batch[row, width - n :], mask[row, width - n :] = p, 1
    with torch.no_grad():
        see = causal_mask(mask, width)
        right = run_cached(model, batch, KVCache(), position_ids_from_mask(mask), mask=see)
        shifted = run_cached(model, batch, KVCache(), mask=see)
        for row, (p, n) in enumerate(zip(prompts, lengths, strict=True)):
            alone = model(p[None])[0]
            assert gap(right[row, width - n :], alone) < 1e-5
            assert gap(shifted[row, width - n :], alone) < 1e-5


def test_minilm_counted_from_the_padding_moves_silently() -> None:
    import transformers
    from tokenizers import Tokenizer

    folder = pretrained.weights_dir() / "minilm"
    bert = transformers.BertModel.from_pretrained(str(folder), dtype=torch.float32).eval()
    tokens = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokens.no_padding()
    short = torch.tensor(tokens.encode("A short one.").ids)
    long = torch.tensor(tokens.encode("A longer sentence sets the width of the batch.").ids)
    batch = torch.zeros(2, len(long), dtype=torch.long)
    mask = torch.zeros_like(batch)
    batch[0], mask[0] = long, 1
    batch[1, -len(short) :], mask[1, -len(short) :] = short, 1
    with torch.no_grad():

        def embed(ids, mask, positions=None):
            out = bert(input_ids=ids, attention_mask=mask, position_ids=positions)
            pooled = (out.last_hidden_state * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
            return torch.nn.functional.normalize(pooled, dim=-1)

        alone = embed(short[None], torch.ones(1, len(short), dtype=torch.long))[0]
        right = embed(batch, mask, position_ids_from_mask(mask))[1]
        default = embed(batch, mask)[1]
    assert float(right @ alone) > 0.9999
    assert float(default @ alone) < 0.97


def test_packed_documents_are_each_alone_and_the_reset_needs_the_mask(smollm2) -> None:
    model, ids = smollm2
    docs = [ids[0, 0:20], ids[0, 200:216], ids[0, 400:424]]
    sizes = [len(d) for d in docs]
    row = torch.cat(docs)[None]
    with torch.no_grad():
        packed = run_cached(
            model, row, KVCache(), packed_positions(sizes), mask=packed_causal_mask(sizes)
        )[0]
        no_reset = run_cached(model, row, KVCache(), mask=packed_causal_mask(sizes))[0]
        no_mask = run_cached(model, row, KVCache(), packed_positions(sizes))[0]
        start = 0
        for doc in docs:
            alone = model(doc[None])[0]
            assert gap(packed[start : start + len(doc)], alone) < 1e-5
            assert gap(no_reset[start : start + len(doc)], alone) < 1e-5
            start += len(doc)
    assert gap(no_mask[20:], packed[20:]) > 1e-2


def test_batched_generation_at_each_rows_offset_is_each_row_alone(smollm2) -> None:
    model, ids = smollm2
    lengths, width, steps = [14, 9, 4], 14, 4
    prompts = [ids[0, 100 * i + 7 : 100 * i + 7 + n] for i, n in enumerate(lengths)]
    batch = torch.zeros(3, width, dtype=torch.long)
    mask = torch.zeros_like(batch)
    for row, (p, n) in enumerate(zip(prompts, lengths, strict=True)):
        batch[row, width - n :], mask[row, width - n :] = p, 1
    with torch.no_grad():
        cache = KVCache()
        logits = run_cached(
            model, batch, cache, position_ids_from_mask(mask), mask=causal_mask(mask, width)
        )[:, -1]
        tokens = [logits.argmax(-1, keepdim=True)]
        for _ in range(steps - 1):
            at = mask.sum(1, keepdim=True)
            mask = torch.cat((mask, torch.ones_like(at)), dim=1)
            logits = run_cached(model, tokens[-1], cache, at, mask=causal_mask(mask, 1))[:, -1]
            tokens.append(logits.argmax(-1, keepdim=True))
        generated = torch.cat(tokens, dim=1)
        for row, p in enumerate(prompts):
            alone = model(torch.cat((p, generated[row, :-1]))[None])[0, len(p) - 1 :]
            assert torch.equal(alone.argmax(-1), generated[row])


def test_an_evicting_cache_shifts_rotated_keys_or_stores_them_unrotated_not_neither(
    smollm2,
) -> None:
    """Keys at their slots in the cache, two ways: stored unrotated and rotated at every read
    (StreamingLLM), or stored rotated and rotated again by minus the slots they moved at each
    eviction (llama.cpp's K-shift): the same logits in float32. Rotated once when written and
    never shifted, they keep their old slots' angles, and the perplexity multiplies."""
    model, ids = smollm2
    sinks, window, stream = 4, 12, 16
    slots = sinks + window
    text = ids[:, 300 : 300 + slots + stream].repeat(2, 1)
    with torch.no_grad():
        cache = KVCache(rotated=False)
        shifted = KVCache()
        run_cached(model, text[:, :slots], cache)
        run_cached(model, text[:1, :slots], shifted)
        written = list(range(slots))
        rows, moved = [], []
        for t in range(slots, slots + stream - 1):
            n = cache.length
            keys = torch.tensor([list(range(n + 1)), written + [n]])
            rows.append(
                run_cached(
                    model, text[:, t : t + 1], cache, torch.tensor([[n], [n]]), key_positions=keys
                )[:, -1]
            )
            moved.append(run_cached(model, text[:1, t : t + 1], shifted)[:, -1])
            written.append(n)
            keep = list(range(sinks)) + list(range(n + 1 - window, n + 1))
            cache.keep(keep)
            shifted.keep(keep, model)
            written = [written[k] for k in keep]
        logits = torch.stack(rows, 1)
        assert gap(torch.stack(moved, 1)[0], logits[0]) < 1e-5
    targets = text[0, slots + 1 :]
    slot, stale = (float(nll(logits[r], targets).mean().exp()) for r in range(2))
    assert stale > 2 * slot
