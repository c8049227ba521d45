r"""Which channel pairing a checkpoint's query and key weights were trained with, from text.

A rotary checkpoint's :math:`W_q` and :math:`W_k` rows come in one of two orders: Hugging Face's,
rotated in pairs ``(i, i + d/2)`` (pe_lib's ``"half"`` layout), or llama.cpp's GGUF order,
rotated in neighbouring pairs ``(2i, 2i+1)`` (``"interleaved"``). Nothing in the weights says
which; rotated in the other pairing they are another model, whose queries and keys turn at the
wrong frequencies (chapter 10: SmolLM2's perplexity is five times higher).
:func:`detect_layout` runs the checkpoint on a little text both ways, with its rows as they are,
and names the pairing under which the text is likelier, with the ratio of the two perplexities
as its margin.

Reference. The model is :class:`pe_lib.models.llama.RotaryLlama` (a Llama-architecture decoder
with pe_lib's rotation, equal to transformers' ``LlamaForCausalLM``), and the perplexity is
:math:`\exp` of the mean of :meth:`~pe_lib.models.llama.RotaryLlama.next_token_nll`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from .._validation import check_instance, check_real
from ..models.llama import LlamaSpec, RotaryLlama, gguf_rows_to_half

__all__ = ["LayoutVerdict", "detect_layout"]


@dataclass(frozen=True)
class LayoutVerdict:
    """What :func:`detect_layout` finds.

    Attributes:
        layout: the pairing under which the text is likelier: ``"half"`` or ``"interleaved"``.
        perplexity: the perplexity of the text under each pairing.
        ratio: the other pairing's perplexity over the chosen one's (at least 1): the margin.
        decisive: whether ``ratio`` reaches the threshold asked for.
    """

    layout: str
    perplexity: Mapping[str, float]
    ratio: float
    decisive: bool

    def __str__(self) -> str:
        other = "interleaved" if self.layout == "half" else "half"
        verdict = "" if self.decisive else " (not decisive: the two are close)"
        return (
            f"trained with the {self.layout!r} pairing{verdict}: perplexity "
            f"{self.perplexity[self.layout]:.4g} against {self.perplexity[other]:.4g} "
            f"({self.ratio:.2f} times higher) under {other!r}"
        )


def _rows_as_given(weights: Mapping[str, torch.Tensor], spec: LlamaSpec) -> dict[str, torch.Tensor]:
    """Weights that :class:`RotaryLlama` with ``layout="interleaved"`` runs with their rows as
    given: it reorders Hugging Face's rows into GGUF's, so the rows are put in Hugging Face's
    order first (:func:`~pe_lib.models.llama.gguf_rows_to_half`)."""
    found = dict(weights)
    for name, tensor in weights.items():
        if name.endswith("q_proj.weight"):
            found[name] = gguf_rows_to_half(tensor, spec.num_heads)
        elif name.endswith("k_proj.weight"):
            found[name] = gguf_rows_to_half(tensor, spec.num_kv_heads)
    return found


def detect_layout(
    spec: LlamaSpec,
    weights: Mapping[str, torch.Tensor],
    ids: torch.Tensor,
    *,
    threshold: float = 2.0,
) -> LayoutVerdict:
    """Which pairing the query and key rows of ``weights`` were trained with.

    Args:
        spec: the model's sizes (:meth:`pe_lib.models.llama.LlamaSpec.from_config`).
        weights: the checkpoint with Hugging Face's names, its ``q_proj`` and ``k_proj`` rows in
            whichever order it has them (used as they are).
        ids: int64 token ids of a little text the model should predict well, shape ``(batch,
            seq_len)`` with ``seq_len >= 2``; a hundred tokens show SmolLM2's gap.
        threshold: the perplexity ratio, > 1, from which the verdict is called decisive.

    Returns:
        a :class:`LayoutVerdict`.

    Raises:
        TypeError, ValueError: an invalid ``spec``, ``weights``, ``ids`` (as
            :class:`~pe_lib.models.llama.RotaryLlama` refuses them) or ``threshold``, or fewer
            than two tokens per row.
    """
    spec = check_instance("spec", spec, LlamaSpec)
    weights = check_instance("weights", weights, Mapping)  # type: ignore[type-abstract]
    threshold = check_real("threshold", threshold, above=1.0)
    ids = check_instance("ids", ids, torch.Tensor)
    if ids.dim() != 2 or ids.shape[1] < 2:
        raise ValueError(
            f"ids must have shape (batch, seq_len) with seq_len >= 2 (a token to predict), got "
            f"{tuple(ids.shape)}"
        )
    models = {
        "half": RotaryLlama(spec, weights, layout="half"),
        "interleaved": RotaryLlama(spec, _rows_as_given(weights, spec), layout="interleaved"),
    }
    perplexity = {}
    with torch.inference_mode():
        for name, model in models.items():
            perplexity[name] = math.exp(float(model.next_token_nll(ids).mean()))
    best = min(perplexity, key=perplexity.__getitem__)
    other = "interleaved" if best == "half" else "half"
    ratio = perplexity[other] / perplexity[best]
    return LayoutVerdict(best, perplexity, ratio, ratio >= threshold)
