"""The extension path: an encoding defined outside pe_lib, registered, is taken up by the toy
model, the benchmark registry and the contract and API checks with no other edit.

The encoding is a minimal xPos (Sun et al., 2022, A Length-Extrapolatable Transformer,
arXiv:2212.10554, section 3.2): RoPE's rotation, with pair ``i`` of the query at position ``m``
scaled by ``zeta_i ** (m / scale_base)`` and of the key at ``n`` by ``zeta_i ** (-n /
scale_base)``, ``zeta_i = (2i / d + gamma) / (1 + gamma)``; scores then decay with ``n - m``
yet still depend on it only, while norms do not survive. It is composed from the public
``pe_lib.rope.apply_rope``.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest
import torch
from encoding_contract import check_api, check_parts, check_properties, check_toy_model
from torch import nn

from pe_lib.encodings import ENCODINGS, Encoding, register
from pe_lib.experiments.toy import IGNORE_INDEX, ShiftedCopyModel, shifted_copy_batch
from pe_lib.rope import apply_rope

ROOT = Path(__file__).resolve().parents[2]


class XPos(nn.Module):
    """Minimal xPos: ``(q, k, offset=0) -> (q_rot, k_rot)``, each ``(..., seq_len, head_dim)``."""

    def __init__(self, head_dim: int, gamma: float = 0.4, scale_base: float = 512.0) -> None:
        super().__init__()
        pair = torch.arange(head_dim // 2, dtype=torch.float64)
        self.zeta = (2.0 * pair / head_dim + gamma) / (1.0 + gamma)  # (head_dim/2,)
        self.scale_base = scale_base

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, offset: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        positions = torch.arange(offset, offset + q.shape[-2])
        exponent = positions.double()[:, None] / self.scale_base  # (seq_len, 1)
        scale = self.zeta[None, :] ** exponent  # (seq_len, head_dim/2); pairs share a scale
        scale = scale.repeat_interleave(2, dim=-1).to(q.dtype)  # interleaved layout
        # The score of (m, n) gets zeta ** ((m - n) / scale_base): offset cancels.
        return apply_rope(q, positions) * scale, apply_rope(k, positions) / scale


XPOS = Encoding(
    name="xpos",
    summary="RoPE's rotation with a per-pair scale that decays with the distance",
    reference="Sun et al. (2022), A Length-Extrapolatable Transformer (arXiv:2212.10554)",
    api=(f"{__name__}.XPos",),
    rotation=XPos,
    properties=frozenset({"relative_scores"}),
)


@pytest.fixture
def xpos():
    """The entry, registered for one test and removed after it."""
    entry = register(XPOS)
    yield entry
    del ENCODINGS[entry.name]


def test_the_registered_encoding_keeps_the_contract_and_its_declared_property(xpos) -> None:
    check_parts(xpos)
    check_properties(xpos)
    check_api(xpos)
    q = torch.randn(1, 1, 6, 8, dtype=torch.float64)
    q_rot, _ = xpos.rotation(8)(q, q, 100)
    assert not torch.allclose(q_rot.norm(dim=-1), q.norm(dim=-1))  # why it does not declare it


def test_the_toy_model_builds_trains_and_scores_it(xpos) -> None:
    check_toy_model(xpos)
    torch.manual_seed(0)
    model = ShiftedCopyModel("xpos", d_model=16, num_heads=2, max_len=12)
    tokens, targets = shifted_copy_batch(4, 12, lag=2, vocab_size=16)
    loss = nn.functional.cross_entropy(
        model(tokens).flatten(0, 1), targets.flatten(), ignore_index=IGNORE_INDEX
    )
    loss.backward()
    assert math.isfinite(loss.item())


def test_the_benchmark_registry_measures_it(xpos) -> None:
    spec = importlib.util.spec_from_file_location(
        "encodings_bench", ROOT / "benchmarks" / "encodings.py"
    )
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    row = bench.measure("xpos", repeats=1)
    assert row["seconds"] > 0 and row["parameters_added"] == 0


def test_without_registration_nothing_knows_it() -> None:
    assert "xpos" not in ENCODINGS
    with pytest.raises(ValueError, match="position must be one of"):
        ShiftedCopyModel("xpos")
