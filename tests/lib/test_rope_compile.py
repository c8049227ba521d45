"""RoPE under ``torch.compile(fullgraph=True)``: one graph, no break, and no recompiling as
the length or the position changes, once a length and an offset have changed once (dynamo then
makes them dynamic) and once a length of 1 has been seen (dynamo always gives sizes 0 and 1 a
graph of their own: one for the prompt, one for decoding).

``fullgraph=True`` turns any graph break into an error; the ``"eager"`` backend runs the
captured graph as it is, so these tests need no compiler and stay fast. What is traced is the
same Python on every device: a break on the CPU is a break on a GPU (the old autocast guard,
``torch._C._is_autocast_available``, broke the graph on both)."""

from __future__ import annotations

import pytest
import torch

from pe_lib.rope import RotaryEmbedding, apply_rope

LAYOUTS = ("interleaved", "half")
SCALINGS = {
    "plain": None,
    "yarn": {
        "rope_type": "yarn",
        "factor": 4.0,
        "original_max_position_embeddings": 64,
        "rope_theta": 10000.0,
    },
    "llama3": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64,
        "rope_theta": 500000.0,
    },
}
HEAD_DIM = 16


def compiled(function):
    torch._dynamo.reset()
    return torch.compile(function, fullgraph=True, backend="eager")


def recompiles(allowed: bool):
    """A context in which a recompile is an error unless ``allowed``."""
    return torch._dynamo.config.patch(error_on_recompile=not allowed)


#: (seq_len, first position, whether this call may compile): a prompt, a second length (sizes
#: become dynamic), others; then decoding, one token at a time, and a prompt again.
CALLS = (
    (5, 0, True),
    (7, 3, True),
    (9, 40, False),
    (12, 100, False),
    (1, 12, True),
    (1, 13, True),
    (1, 14, False),
    (1, 700, False),
    (3, 200, False),
)


@pytest.mark.parametrize(("name", "grad"), [(name, False) for name in SCALINGS] + [("plain", True)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_apply_rope_is_one_graph(name, layout, grad):
    scaling = SCALINGS[name]

    def rotate(x, positions):
        return apply_rope(x, positions, layout=layout, scaling=scaling)

    fast = compiled(rotate)
    with torch.set_grad_enabled(grad):
        for seq_len, start, allowed in CALLS:
            x = torch.randn(2, 3, seq_len, HEAD_DIM, requires_grad=grad)
            positions = torch.arange(start, start + seq_len)
            with recompiles(allowed):
                got = fast(x, positions)
            torch.testing.assert_close(got, rotate(x, positions), rtol=0, atol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", SCALINGS)
def test_rotary_embedding_is_one_graph_while_decoding(name, layout):
    dtype = torch.bfloat16  # the tables cast from float64, the rotation staged in float32
    module = RotaryEmbedding(HEAD_DIM, layout=layout, scaling=SCALINGS[name], max_len=1024)
    fast = compiled(module)
    # then beyond the cached positions: computed on the fly, a branch of its own
    calls = (*CALLS, (3, 2000, True), (2, 3000, False))
    with torch.no_grad():
        for seq_len, offset, allowed in calls:
            q = torch.randn(1, 4, seq_len, HEAD_DIM).to(dtype)
            k = torch.randn(1, 2, seq_len, HEAD_DIM).to(dtype)
            with recompiles(allowed):
                got = fast(q, k, offset)
            for a, b in zip(got, module(q, k, offset), strict=True):
                torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_a_graph_break_would_fail_these_tests():
    """The tests' premise: fullgraph=True raises on a break (here, a print of a tensor's value)."""

    def broken(x):
        print(x.sum().item())
        return apply_rope(x)

    with pytest.raises(Exception, match=r"(?i)graph break|unsupported|item"):
        compiled(broken)(torch.randn(2, 4, HEAD_DIM))
