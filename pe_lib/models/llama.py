r"""A Llama-architecture decoder written out in a few lines, rotating with pe_lib's RoPE.

:class:`RotaryLlama` is that architecture (RMSNorm, grouped-query attention, SwiGLU MLP, tied
embeddings) with pe_lib's rotation (:func:`pe_lib.rope.apply_rope`) in either layout, and any
positions: transformers' ``LlamaForCausalLM`` is the reference it is tested against
(``tests/lib/test_pretrained.py``). :class:`LlamaSpec` holds its sizes, read from a
``config.json``; :func:`block_qkv` and :func:`block_rest` are one block's two halves, which the
key-value cache of :mod:`pe_lib.models.inference` runs a few tokens at a time.

The two layouts. llama.cpp rotates channel pairs ``(2i, 2i+1)`` of each head (pe_lib's
``"interleaved"`` layout), Hugging Face's Llama pairs ``(i, i + d/2)`` (``"half"``). So that one
checkpoint gives the same model in both, llama.cpp's converter (``permute`` in
``convert_hf_to_gguf.py`` of github.com/ggml-org/llama.cpp) reorders the rows of ``W_q`` and
``W_k`` within each head: GGUF row ``2i + j`` is Hugging Face row ``j d/2 + i``
(:func:`gguf_rows_to_half`, and back, :func:`half_rows_to_gguf`).

The trained weights it runs with come from :mod:`pe_lib.pretrained`, which imports this module;
this module imports nothing of the weight fetcher.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from .._validation import (
    check_choice,
    check_ids_below,
    check_instance,
    check_int64_tensor,
    check_positive_int,
)
from ..rope import apply_rope

__all__ = [
    "LlamaSpec",
    "RotaryLlama",
    "block_qkv",
    "block_rest",
    "gguf_rows_to_half",
    "half_rows_to_gguf",
    "rms_norm",
]


@dataclass(frozen=True)
class LlamaSpec:
    """The sizes of a Llama-architecture model (from a Hugging Face ``config.json``)."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rope_theta: float
    rms_norm_eps: float
    max_position_embeddings: int

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> LlamaSpec:
        """From a ``config.json`` mapping (``rope_parameters`` or the older ``rope_theta``)."""
        rope = config.get("rope_parameters") or {}
        theta = rope.get("rope_theta", config.get("rope_theta", 10000.0))
        if rope.get("rope_type", "default") != "default" or config.get("rope_scaling"):
            raise ValueError("RotaryLlama supports plain RoPE only (rope_type 'default')")
        return cls(
            vocab_size=int(config["vocab_size"]),
            hidden_size=int(config["hidden_size"]),
            intermediate_size=int(config["intermediate_size"]),
            num_layers=int(config["num_hidden_layers"]),
            num_heads=int(config["num_attention_heads"]),
            num_kv_heads=int(config.get("num_key_value_heads", config["num_attention_heads"])),
            head_dim=int(
                config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
            ),
            rope_theta=float(theta),
            rms_norm_eps=float(config["rms_norm_eps"]),
            max_position_embeddings=int(config["max_position_embeddings"]),
        )


def gguf_rows_to_half(weight: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Rows of a GGUF ``W_q`` or ``W_k`` (llama.cpp's order) in Hugging Face's order.

    Shapes:
        ``weight``: ``(num_heads * head_dim, in_features)``; output: the same.

    Within each head, GGUF row ``2i + j`` (pair ``i`` of the interleaved layout, member ``j``)
    becomes row ``j * head_dim / 2 + i`` (pair ``i`` of the half layout, member ``j``).
    """
    weight = check_instance("weight", weight, torch.Tensor)
    rows, head_dim = _rows_per_head(weight, num_heads)
    heads = weight.reshape(num_heads, head_dim // 2, 2, -1)  # (head, pair, member, in)
    return heads.transpose(1, 2).reshape(weight.shape)


def half_rows_to_gguf(weight: torch.Tensor, num_heads: int) -> torch.Tensor:
    """The inverse of :func:`gguf_rows_to_half`: Hugging Face's rows in llama.cpp's order."""
    weight = check_instance("weight", weight, torch.Tensor)
    rows, head_dim = _rows_per_head(weight, num_heads)
    heads = weight.reshape(num_heads, 2, head_dim // 2, -1)  # (head, member, pair, in)
    return heads.transpose(1, 2).reshape(weight.shape)


def _rows_per_head(weight: torch.Tensor, num_heads: int) -> tuple[int, int]:
    num_heads = check_positive_int("num_heads", num_heads)
    rows = weight.shape[0] if weight.dim() in (1, 2) else -1
    if rows < 0 or rows % (2 * num_heads):
        raise ValueError(
            f"weight must have shape (num_heads * head_dim, in_features) with an even head_dim, "
            f"got shape {tuple(weight.shape)} for num_heads={num_heads}"
        )
    return rows, rows // num_heads


#: GGUF tensor names (per block ``blk.N.``) -> Hugging Face Llama names (``model.layers.N.``).
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """``x / sqrt(mean(x**2) + eps) * weight`` over the last dimension."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def block_qkv(
    w: Mapping[str, torch.Tensor], p: str, h: torch.Tensor, spec: LlamaSpec
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Block ``p``'s queries, keys and values of the residual stream ``h`` (batch, seq_len,
    hidden), unrotated: ``(batch, heads, seq_len, head_dim)`` each (grouped key-value heads)."""
    batch, length = h.shape[:2]
    x = rms_norm(h, w[p + "input_layernorm.weight"], spec.rms_norm_eps)
    q = F.linear(x, w[p + "self_attn.q_proj.weight"])
    k = F.linear(x, w[p + "self_attn.k_proj.weight"])
    v = F.linear(x, w[p + "self_attn.v_proj.weight"])
    return (
        q.view(batch, length, spec.num_heads, spec.head_dim).transpose(1, 2),
        k.view(batch, length, spec.num_kv_heads, spec.head_dim).transpose(1, 2),
        v.view(batch, length, spec.num_kv_heads, spec.head_dim).transpose(1, 2),
    )


def block_rest(
    w: Mapping[str, torch.Tensor], p: str, h: torch.Tensor, a: torch.Tensor, spec: LlamaSpec
) -> torch.Tensor:
    """The residual stream after block ``p``, from its attention output ``a`` (batch, heads,
    seq_len, head_dim): the output projection, then the gated MLP."""
    batch, length = h.shape[:2]
    a = a.transpose(1, 2).reshape(batch, length, spec.num_heads * spec.head_dim)
    h = h + F.linear(a, w[p + "self_attn.o_proj.weight"])
    x = rms_norm(h, w[p + "post_attention_layernorm.weight"], spec.rms_norm_eps)
    gate = F.silu(F.linear(x, w[p + "mlp.gate_proj.weight"]))
    return h + F.linear(
        gate * F.linear(x, w[p + "mlp.up_proj.weight"]), w[p + "mlp.down_proj.weight"]
    )


class RotaryLlama(nn.Module):
    r"""A Llama-architecture decoder with pe_lib's rotation, in either layout, at any positions.

    Per block: :math:`h \leftarrow h + W_o\,\mathrm{attn}(\mathrm{RMSNorm}(h))`, then
    :math:`h \leftarrow h + W_{down}(\mathrm{silu}(W_{gate} x) \odot W_{up} x)` with
    :math:`x = \mathrm{RMSNorm}(h)`; causal attention over grouped queries, each query and key
    rotated by :func:`pe_lib.rope.apply_rope` (base ``spec.rope_theta``). The output head is
    ``lm_head.weight`` or, when the weights have none, the tied token embeddings.

    Args:
        spec: the sizes (:meth:`LlamaSpec.from_config`).
        weights: Hugging Face names (``model.layers.N.self_attn.q_proj.weight``, ...), tensors
            used as they are (not copied).
        layout: ``"half"`` for Hugging Face's ``W_q``, ``W_k`` rows; ``"interleaved"`` for
            llama.cpp's (the model's ``W_q``, ``W_k`` are then reordered by
            :func:`half_rows_to_gguf`, so the same checkpoint is loaded both ways).
        scaling: ``None`` (the model's own RoPE) or a ``rope_scaling`` entry of
            :mod:`pe_lib.rope.scaling` to rotate with instead, e.g. ``"proportional"`` with
            ``partial_rotary_factor`` to leave the slowest pairs unrotated.
    """

    def __init__(
        self,
        spec: LlamaSpec,
        weights: Mapping[str, torch.Tensor],
        layout: str = "half",
        scaling: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.scaling = None if scaling is None else dict(scaling)
        self.spec = check_instance("spec", spec, LlamaSpec)
        self.layout = check_choice("layout", layout, ("half", "interleaved"))
        missing = [
            k for k in ("model.embed_tokens.weight", "model.norm.weight") if k not in weights
        ]
        if missing:
            raise ValueError(f"weights lack {missing}")
        self.weights: dict[str, torch.Tensor] = {}
        for name, tensor in weights.items():
            if self.layout == "interleaved" and name.endswith(("q_proj.weight", "k_proj.weight")):
                heads = spec.num_heads if name.endswith("q_proj.weight") else spec.num_kv_heads
                tensor = half_rows_to_gguf(tensor, heads)
            self.weights[name] = tensor
        self.head = self.weights.get("lm_head.weight", self.weights["model.embed_tokens.weight"])

    def hidden_states(
        self, ids: torch.Tensor, positions: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The final normalised hidden states ``(batch, seq_len, hidden_size)``.

        ``ids``: int64 ``(batch, seq_len)``. ``positions``: int64 ``(seq_len,)`` or
        ``(batch, seq_len)``, the position each token is rotated at (default ``0..seq_len-1``);
        attention stays causal in the order of ``ids`` whatever the positions.
        """
        # only the last state is kept
        (last,) = collections.deque(self._residual_stream(ids, positions), maxlen=1)
        return rms_norm(last, self.weights["model.norm.weight"], self.spec.rms_norm_eps)

    def layer_states(
        self, ids: torch.Tensor, positions: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, ...]:
        """The residual stream ``(batch, seq_len, hidden_size)`` before the first block and
        after each block, ``num_layers + 1`` tensors, the last one normalised (it is
        :meth:`hidden_states`): what transformers' Llama returns with
        ``output_hidden_states=True``. Arguments as :meth:`hidden_states`."""
        *states, last = self._residual_stream(ids, positions)
        return (*states, rms_norm(last, self.weights["model.norm.weight"], self.spec.rms_norm_eps))

    def _residual_stream(
        self, ids: torch.Tensor, positions: torch.Tensor | None
    ) -> Iterator[torch.Tensor]:
        ids = check_int64_tensor("ids", ids, 2, "an int64 tensor of shape (batch, seq_len)")
        spec = self.spec
        check_ids_below("ids", ids, spec.vocab_size)
        batch, length = ids.shape
        if positions is None:
            positions = torch.arange(length)
        positions = check_instance("positions", positions, torch.Tensor)
        if (
            positions.dtype != torch.int64
            or positions.dim() not in (1, 2)
            or positions.shape[-1] != length
        ):
            raise ValueError(
                f"positions must be int64 of shape (seq_len,) or (batch, seq_len) with "
                f"seq_len={length}, got {positions.dtype} {tuple(positions.shape)}"
            )
        rope_positions = positions if positions.dim() == 1 else positions[:, None, :]
        w = self.weights
        h = F.embedding(ids, w["model.embed_tokens.weight"])
        yield h
        for layer in range(spec.num_layers):
            p = f"model.layers.{layer}."
            q, k, v = block_qkv(w, p, h, spec)  # (batch, heads, seq_len, head_dim)
            q, k = (
                apply_rope(
                    t,
                    rope_positions,
                    base=spec.rope_theta,
                    layout=self.layout,
                    scaling=self.scaling,
                )
                for t in (q, k)
            )
            a = F.scaled_dot_product_attention(
                q, k, v, is_causal=True, enable_gqa=spec.num_heads != spec.num_kv_heads
            )
            h = block_rest(w, p, h, a, spec)
            yield h

    def forward(self, ids: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``(batch, seq_len, vocab_size)`` (see :meth:`hidden_states`)."""
        return F.linear(self.hidden_states(ids, positions), self.head)

    def next_token_nll(
        self, ids: torch.Tensor, positions: torch.Tensor | None = None, chunk: int = 256
    ) -> torch.Tensor:
        """``-ln p(ids[:, t+1] | ids[:, :t+1])`` for each ``t``: shape ``(batch, seq_len - 1)``,
        float64; the logits are formed ``chunk`` positions at a time (a full ``(seq_len,
        vocab)`` table of SmolLM2 at 2,048 tokens would take 400 MB)."""
        chunk = check_positive_int("chunk", chunk)
        hidden = self.hidden_states(ids, positions)[:, :-1]
        targets = ids[:, 1:]
        parts = []
        for start in range(0, targets.shape[1], chunk):
            logits = F.linear(hidden[:, start : start + chunk], self.head)
            logp = torch.log_softmax(logits.double(), dim=-1)
            parts.append(-logp.gather(-1, targets[:, start : start + chunk, None])[..., 0])
        return torch.cat(parts, dim=1)
