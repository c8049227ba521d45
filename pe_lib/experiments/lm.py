r"""A small character-level language model on real text: train short, test long.

The corpus is an excerpt of the Python documentation, the help topics that CPython ships for
``help()`` (``pydoc_data/topics.py`` of CPython 3.11.7), most from the Language Reference and
some from the Library Reference (``pdb``, the format string syntax, ...): 239,155 ASCII
characters, pinned in the package
as ``pe_lib/experiments/data/python_reference.txt`` with its licence and provenance in
``python_reference.NOTICE.txt`` beside it (PSF License Agreement). :func:`load_corpus` reads
it and checks its digest; :func:`corpus_topics` cuts it into its help topics, and
:func:`corpus_splits` holds out the last :data:`HELD_OUT_TOPICS` topics whole and trains on the
others, less every stretch they share with the held-out text (the help topics repeat each
other: "Compound statements" holds "Function definitions" whole).

The model, :class:`CharTransformer`, is the toy model's core (:mod:`pe_lib.experiments.toy`: pre-norm
residual blocks of causal multi-head attention and an MLP, the encoding taken from
:data:`pe_lib.encodings.ENCODINGS`) with several blocks, trained to predict the next character.
RoPE may be built with a frequency scaling of :mod:`pe_lib.rope.scaling`
(``rope_scaling=`` a ``config.json`` entry), and :func:`with_rope_scaling` stretches a trained
RoPE model. :func:`perplexity` scores held-out text at any length,

.. math::

    \mathrm{PPL} = \exp\Big(-\frac{1}{N}\sum_{t=1}^{N} \ln p(c_t \mid c_{<t})\Big),

over non-overlapping windows of ``seq_len`` characters, each predicted from the start of its
window (the nonoverlapping evaluation of Press et al., 2022); :func:`bigram_perplexity` and
:func:`ngram_perplexity` are baselines that need no learning, the same score from counted
character pairs and from counted n-grams.
:func:`train_lms` trains several models side by side (one per seed) as one stacked model. A learned table has
no row beyond its length, so a model with one cannot be scored there: :func:`perplexity` raises
``ValueError`` instead of inventing a number.
"""

from __future__ import annotations

import copy
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

import torch
from torch import nn
from torch.func import functional_call, vmap
from torch.nn import functional as F

from .._validation import check_instance, check_nonnegative_int, check_positive_int, check_real
from ..encodings import ENCODINGS, ScoreBias
from ..encodings.modules import LearnedPositionalEncoding
from ..rope import RotaryEmbedding
from ..rope.scaling import ScalingConfig, resolve_scaling
from .toy import _causal_attention, _check_id_tensor, _check_tokens, _EmbeddedPositions

__all__ = [
    "CORPUS_FILE",
    "CORPUS_SHA256",
    "HELD_OUT_TOPICS",
    "POSITION_KINDS",
    "SHARED_STRETCH",
    "CharTransformer",
    "CharVocabulary",
    "bigram_perplexity",
    "corpus_splits",
    "corpus_topics",
    "load_corpus",
    "ngram_perplexity",
    "ngram_probabilities",
    "perplexity",
    "train_lm",
    "train_lms",
    "with_rope_scaling",
]

#: The corpus file inside the package (``pe_lib/experiments/data/``), its notice beside it.
CORPUS_FILE = "python_reference.txt"

#: The SHA-256 digest of the corpus file's bytes, so that every machine trains on the same
#: characters.
CORPUS_SHA256 = "0eccfc6230e5e19e8f4975161c562ba04dd069184193ce5976ed47328532a158"

#: How many help topics, the corpus's last, :func:`corpus_splits` holds out whole.
HELD_OUT_TOPICS = 12

#: The training text keeps no stretch of this many characters that the held-out text holds.
SHARED_STRETCH = 64

# A help topic starts with its title on a line of its own, underlined with asterisks.
_TOPIC_TITLE = re.compile(r"^[^\n]+\n\*{3,}\n", re.MULTILINE)

#: How :class:`CharTransformer` tells positions apart: ``"none"`` or an entry of ENCODINGS.
POSITION_KINDS: tuple[str, ...] = ("none", *ENCODINGS)


def load_corpus() -> str:
    """The corpus as a string, after checking its SHA-256 against :data:`CORPUS_SHA256`.

    Raises:
        ValueError: the file's bytes differ from the pinned ones (say which digest it has).
    """
    data = resources.files("pe_lib.experiments").joinpath("data").joinpath(CORPUS_FILE).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != CORPUS_SHA256:
        raise ValueError(
            f"pe_lib/experiments/data/{CORPUS_FILE} has SHA-256 {digest}, not the pinned {CORPUS_SHA256}: "
            "reinstall pe_lib to restore the corpus"
        )
    return data.decode("ascii")


class CharVocabulary:
    """The characters of a text, each given an id by sorted order.

    Args:
        text: the text whose distinct characters form the vocabulary, non-empty.

    Attributes:
        chars: the characters, sorted; ``chars[i]`` has id ``i``.
    """

    chars: str

    def __init__(self, text: str) -> None:
        text = check_instance("text", text, str)
        if not text:
            raise ValueError("text must hold at least one character, got ''")
        self.chars = "".join(sorted(set(text)))
        self._ids = {char: i for i, char in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def __repr__(self) -> str:
        return f"CharVocabulary({len(self)} characters)"

    def encode(self, text: str) -> torch.Tensor:
        """Ids of ``text``'s characters: int64, shape ``(len(text),)``.

        Raises:
            ValueError: a character is not in the vocabulary (the first one is named).
        """
        text = check_instance("text", text, str)
        unknown = next((c for c in text if c not in self._ids), None)
        if unknown is not None:
            raise ValueError(
                f"text holds {unknown!r}, which is not among the vocabulary's "
                f"{len(self)} characters"
            )
        return torch.tensor([self._ids[c] for c in text], dtype=torch.int64)

    def decode(self, ids: torch.Tensor | Sequence[int]) -> str:
        """The text of ``ids`` (a 1-d int tensor or a sequence of ints in ``[0, len(self))``)."""
        values = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        bad = [i for i in values if not isinstance(i, int) or not 0 <= i < len(self)]
        if bad:
            raise ValueError(f"ids must be ints in [0, {len(self)}), got {bad[0]!r}")
        return "".join(self.chars[i] for i in values)


def corpus_topics() -> list[tuple[str, str]]:
    """The corpus's help topics, in order: ``(title, text)`` pairs whose texts, joined, are the
    corpus. A topic's text starts with its title, underlined with asterisks."""
    text = load_corpus()
    starts = [match.start() for match in _TOPIC_TITLE.finditer(text)]
    ends = [*starts[1:], len(text)]
    return [(text[a : text.index("\n", a)], text[a:b]) for a, b in zip(starts, ends, strict=True)]


def _shared_spans(text: str, other: str, stretch: int) -> list[tuple[int, int]]:
    """The spans ``[a, b)`` of ``text`` covered by a stretch of ``stretch`` characters that
    ``other`` holds too, merged, in order."""
    held = {other[i : i + stretch] for i in range(len(other) - stretch + 1)}
    spans: list[tuple[int, int]] = []
    for i in range(len(text) - stretch + 1):
        if text[i : i + stretch] in held:
            if spans and spans[-1][1] >= i:
                spans[-1] = (spans[-1][0], i + stretch)
            else:
                spans.append((i, i + stretch))
    return spans


def _without(text: str, other: str, stretch: int) -> str:
    """``text`` less every stretch of ``stretch`` characters that ``other`` holds; cut again
    where the pieces, joined, make a new one, until none is left."""
    while spans := _shared_spans(text, other, stretch):
        bounds = [0, *(i for span in spans for i in span), len(text)]
        text = "".join(text[a:b] for a, b in zip(bounds[::2], bounds[1::2], strict=True))
    return text


def corpus_splits() -> tuple[torch.Tensor, torch.Tensor, CharVocabulary]:
    """The corpus as ids: ``(training, held_out, vocabulary)``, disjoint by construction.

    ``held_out`` is the last :data:`HELD_OUT_TOPICS` help topics (:func:`corpus_topics`),
    whole. ``training`` is the topics before them, joined, with every stretch of
    :data:`SHARED_STRETCH` characters that also occurs in the held-out text cut out (the
    pieces around a cut are joined). So no stretch of that length of the held-out text occurs
    in the training text. The vocabulary holds every character of the corpus. Both are int64
    of shape ``(n,)``.
    """
    topics = corpus_topics()
    held_out = "".join(text for _, text in topics[-HELD_OUT_TOPICS:])
    training = _without(
        "".join(text for _, text in topics[:-HELD_OUT_TOPICS]), held_out, SHARED_STRETCH
    )
    vocabulary = CharVocabulary(load_corpus())
    return vocabulary.encode(training), vocabulary.encode(held_out), vocabulary


def bigram_perplexity(
    training: torch.Tensor, ids: torch.Tensor, vocab_size: int, *, smoothing: float = 1.0
) -> float:
    r"""Perplexity of a count-based bigram model on ``ids``: the baseline that needs no learning.

    :math:`p(b \mid a) = (n_{ab} + \alpha) / (n_a + \alpha V)`, with :math:`n_{ab}` the
    count of ``a`` followed by ``b`` in ``training``, :math:`V` = ``vocab_size`` and
    :math:`\alpha` = ``smoothing`` (add-one, Laplace's rule, by default). Every character of
    ``ids`` after the first is predicted from the one before it: the same ``len(ids) - 1``
    predictions :func:`perplexity` scores at any window length, so the two compare directly.

    Args:
        training: training text as ids, int64 ``(n,)``, ``n >= 2``.
        ids: held-out text as ids, int64 ``(m,)``, ``m >= 2``.
        vocab_size: number of character ids, >= 1.
        smoothing: :math:`\alpha`, a finite float > 0.
    """
    vocab_size = check_positive_int("vocab_size", vocab_size)
    smoothing = check_real("smoothing", smoothing, above=0.0)
    training = _check_ids("training", training, vocab_size, 2)
    ids = _check_ids("ids", ids, vocab_size, 2)
    counts = torch.zeros(vocab_size * vocab_size, dtype=torch.float64)
    counts.index_add_(
        0, training[:-1] * vocab_size + training[1:], torch.ones(training.numel() - 1).double()
    )
    table = (counts.view(vocab_size, vocab_size) + smoothing).log()
    table -= table.logsumexp(dim=1, keepdim=True)  # log p(b | a), each row normalised
    return math.exp(-float(table[ids[:-1], ids[1:]].mean()))


def ngram_perplexity(
    training: torch.Tensor, ids: torch.Tensor, vocab_size: int, *, order: int
) -> float:
    r"""Perplexity on ``ids`` of an interpolated count n-gram model of ``order`` n: a baseline
    that needs no learning, from up to ``n - 1`` characters of context: ``exp`` of the mean
    of ``-ln`` :func:`ngram_probabilities`.

    Each estimate mixes the counts after the last :math:`k - 1` characters :math:`h` with the
    estimate from one character fewer, :math:`h'` (Witten and Bell's interpolation):

    .. math::

        p_k(c \mid h) = \frac{n_{hc} + u_h\, p_{k-1}(c \mid h')}{n_h + u_h},

        p_0(c) = \frac{1}{V},

    with :math:`n_{hc}` the count of :math:`h` followed by :math:`c` in ``training``,
    :math:`n_h = \sum_c n_{hc}`, :math:`u_h` the number of distinct characters seen after
    :math:`h`, and :math:`p_k = p_{k-1}` for a context never seen. Every probability is
    positive and each :math:`p_k(\cdot \mid h)` sums to 1. Every character of ``ids`` after the
    first is predicted, from the ``n - 1`` before it or from all before it where fewer precede
    it in ``ids``: the ``len(ids) - 1`` predictions :func:`bigram_perplexity` and
    :func:`perplexity` make.

    Args:
        training: training text as ids, int64 ``(n,)``, at least ``order`` ids.
        ids: held-out text as ids, int64 ``(m,)``, ``m >= 2``.
        vocab_size: number of character ids, >= 1.
        order: n, the characters of an n-gram (context and predicted one), >= 1, with
            ``vocab_size ** order`` below ``2**62`` (an n-gram is counted by one int64 key).

    Raises:
        ValueError: an argument is out of range (named), or an id is ``>= vocab_size``.
    """
    p = ngram_probabilities(training, ids, vocab_size, order=order)
    return math.exp(-float(p.log().mean()))


def ngram_probabilities(
    training: torch.Tensor, ids: torch.Tensor, vocab_size: int, *, order: int
) -> torch.Tensor:
    """The probability :func:`ngram_perplexity`'s model gives each character of ``ids`` after
    the first: float64 ``(len(ids) - 1,)``, entry ``i`` for ``ids[i + 1]``. Arguments and
    errors as :func:`ngram_perplexity`."""
    vocab_size = check_positive_int("vocab_size", vocab_size)
    order = check_positive_int("order", order)
    if vocab_size**order >= 2**62:
        raise ValueError(
            f"order={order} is too large for vocab_size={vocab_size}: vocab_size ** order must "
            f"be below 2**62, so that one int64 key counts an n-gram"
        )
    training = _check_ids("training", training, vocab_size, max(order, 2))
    ids = _check_ids("ids", ids, vocab_size, 2)
    targets = torch.arange(1, ids.numel())  # the predicted positions of ids
    p = torch.full((targets.numel(),), 1.0 / vocab_size, dtype=torch.float64)
    for k in range(1, order + 1):
        # every k-gram of the training text as one key: context * V + next character
        grams = training.unfold(0, k, 1)  # (n - k + 1, k)
        weights = vocab_size ** torch.arange(k - 1, -1, -1)
        keys, pairs = torch.unique((grams * weights).sum(1), return_counts=True)  # sorted
        contexts, distinct = torch.unique_consecutive(keys // vocab_size, return_counts=True)
        seen = torch.zeros_like(contexts).index_add_(
            0, torch.searchsorted(contexts, keys // vocab_size), pairs
        )  # n_h, per context
        # the held-out predictions with k - 1 characters before them in ids
        ready = targets >= k - 1
        t = targets[ready]
        key = (ids[t[:, None] + torch.arange(-k + 1, 1)] * weights).sum(1)
        n_hc = _lookup(keys, pairs, key)
        n_h = _lookup(contexts, seen, key // vocab_size)
        u_h = _lookup(contexts, distinct, key // vocab_size)
        lower = p[ready]
        p[ready] = torch.where(n_h > 0, (n_hc + u_h * lower) / (n_h + u_h).clamp(min=1), lower)
    return p


def _lookup(keys: torch.Tensor, values: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """``values`` at the positions of ``query`` in the sorted ``keys``, 0 where absent
    (float64)."""
    where = torch.searchsorted(keys, query).clamp(max=keys.numel() - 1)
    found = keys[where] == query
    return torch.where(found, values[where], torch.zeros_like(values[where])).double()


class _Block(nn.Module):
    """One pre-norm residual block: ``x + Attention(LN(x))``, then ``x + MLP(LN(x))``."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.norm_attention = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.attention_out = nn.Linear(d_model, d_model)
        self.norm_mlp = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(
        self,
        x: torch.Tensor,
        num_heads: int,
        rotation: nn.Module | None,
        score_bias: ScoreBias | None,
        fused: bool,
    ) -> torch.Tensor:
        """``fused``: attention in torch's fused kernel (which has no ``vmap`` rule), or in the
        formula written out (:func:`pe_lib.models.attention.scaled_dot_product_attention`)."""
        mixed, _ = _causal_attention(
            self.norm_attention(x),
            self.qkv,
            self.attention_out,
            num_heads,
            rotation,
            score_bias,
            with_weights=not fused,
        )
        x = x + mixed
        out: torch.Tensor = x + self.mlp(self.norm_mlp(x))
        return out


class CharTransformer(_EmbeddedPositions):
    """A causal Transformer over characters: ``num_layers`` of the toy model's blocks.

    ``x = E(tokens)`` plus the additive encoding if any, then ``num_layers`` pre-norm blocks
    (causal multi-head attention, with the encoding's rotation of queries and keys and its
    score bias, then an MLP), a final ``LayerNorm`` and a linear read-out to next-character
    logits. All blocks share the encoding's rotation and bias, as in RoFormer and ALiBi.

    Args:
        position: one of :data:`POSITION_KINDS`.
        vocab_size: number of character ids, >= 1.
        d_model: embedding size, divisible by ``num_heads`` (``d_model // num_heads`` even
            for ``"rope"``).
        num_heads: attention heads, >= 1.
        num_layers: blocks, >= 1.
        max_len: table size of the additive encodings; for ``"learned"`` the longest
            sequence the model accepts (:attr:`max_seq_len`).
        rope_scaling: ``None``, or a ``config.json`` ``rope_scaling`` entry
            (:mod:`pe_lib.rope.scaling`) for an encoding whose rotation is RoPE's.
        max_position_embeddings: the model's length for the entry, as in ``config.json``
            (read outside the entry: dynamic NTK's original length), or ``None``.

    Shapes:
        ``tokens``: ``(batch, seq_len)`` int64 -> logits ``(batch, seq_len, vocab_size)``;
        the logits at ``t`` depend on ``tokens[:, : t + 1]`` only.
    """

    num_layers: int

    def __init__(
        self,
        position: str,
        *,
        vocab_size: int,
        d_model: int = 64,
        num_heads: int = 4,
        num_layers: int = 2,
        max_len: int = 512,
        rope_scaling: Mapping[str, Any] | ScalingConfig | None = None,
        max_position_embeddings: int | None = None,
    ) -> None:
        num_layers = check_positive_int("num_layers", num_layers)
        # Drawn from the global RNG in this order: embedding, encoding, blocks, read-out.
        super().__init__(position, POSITION_KINDS, vocab_size, d_model, num_heads, max_len)
        self.num_layers = num_layers
        if rope_scaling is not None:
            self.rotation = _scaled_rotation(
                self.rotation, rope_scaling, self.position, max_position_embeddings
            )
        self.blocks = nn.ModuleList(_Block(self.d_model) for _ in range(self.num_layers))
        self.norm_out = nn.LayerNorm(self.d_model)
        self.read_out = nn.Linear(self.d_model, self.vocab_size)

    @property
    def max_seq_len(self) -> int | None:
        """The longest sequence the model accepts (a learned table's length), or ``None``."""
        if isinstance(self.encoding, LearnedPositionalEncoding):
            return self.encoding.max_len
        return None

    def extra_repr(self) -> str:
        """The position choice and, for RoPE, its scaling, shown in ``repr(model)``."""
        scaling = (
            f", rope_scaling={self.rotation.scaling.rope_type!r}"
            if isinstance(self.rotation, RotaryEmbedding)
            else ""
        )
        return f"position={self.position!r}{scaling}"

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Next-character logits, ``(batch, seq_len, vocab_size)``, for ``tokens``.

        Raises:
            ValueError: ``seq_len`` exceeds :attr:`max_seq_len`, or an id is out of range.
        """
        _check_tokens(tokens, self.vocab_size)
        _check_length("tokens.shape[1]", tokens.shape[1], self)
        return self._logits(tokens, fused=True)

    def _logits(self, tokens: torch.Tensor, *, fused: bool) -> torch.Tensor:
        """:meth:`forward` for checked tokens. With ``fused=False`` the attention is the formula
        written out and nothing reads a value of ``tokens``, so it runs under ``torch.func.vmap``."""
        x = self.encoding(self.embedding(tokens))
        for block in self.blocks:
            x = block(x, self.num_heads, self.rotation, self.score_bias, fused)
        logits: torch.Tensor = self.read_out(self.norm_out(x))
        return logits


class _Logits(nn.Module):
    """A model's :meth:`CharTransformer._logits` as a module's forward, for
    ``torch.func.functional_call`` (its parameters are the model's, under ``model.``)."""

    def __init__(self, model: CharTransformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.model._logits(tokens, fused=False)


def _scaled_rotation(
    rotation: nn.Module | None,
    scaling: Mapping[str, Any] | ScalingConfig,
    position: str,
    max_position_embeddings: int | None,
) -> RotaryEmbedding:
    """RoPE's rotation rebuilt with ``scaling`` (same head size, base and layout).

    ``max_position_embeddings`` goes to :func:`~pe_lib.rope.scaling.resolve_scaling`.
    """
    if not isinstance(rotation, RotaryEmbedding):
        rope_kinds = [
            name
            for name, entry in ENCODINGS.items()
            if entry.rotation is not None and isinstance(entry.rotation(2), RotaryEmbedding)
        ]
        raise ValueError(
            f"rope_scaling applies to RoPE's rotation, which position={position!r} does not "
            f"have; use position= one of {', '.join(map(repr, rope_kinds))}, or no rope_scaling"
        )
    return RotaryEmbedding(
        rotation.head_dim,
        base=rotation.base,
        layout=rotation.layout,
        scaling=resolve_scaling(
            scaling, rotation.base, max_position_embeddings=max_position_embeddings
        ),
        max_len=rotation.max_len,
    )


def with_rope_scaling(
    model: CharTransformer,
    rope_scaling: Mapping[str, Any] | ScalingConfig | None,
    *,
    max_position_embeddings: int | None = None,
) -> CharTransformer:
    """A copy of a RoPE ``model`` whose rotation applies ``rope_scaling`` (``None``: plain).

    ``max_position_embeddings`` is the model's length as ``config.json`` gives it outside the
    entry (dynamic NTK's original length: the training length of a model trained short).
    The weights are copied; ``model`` itself is unchanged.

    Raises:
        TypeError: ``model`` is not a :class:`CharTransformer`.
        ValueError: ``model`` has no RoPE rotation, or ``rope_scaling`` is invalid.
    """
    check_instance("model", model, CharTransformer)
    stretched = copy.deepcopy(model)
    stretched.rotation = _scaled_rotation(
        model.rotation,
        rope_scaling or {"rope_type": "default"},
        model.position,
        max_position_embeddings,
    )
    return stretched


def _check_ids(name: str, ids: object, vocab_size: int, shortest: int) -> torch.Tensor:
    """``ids``: a 1-d int64 tensor of at least ``shortest`` ids in ``[0, vocab_size)``."""
    return _check_id_tensor(
        name,
        ids,
        vocab_size,
        ndim=1,
        expected="a 1-d int64 tensor of character ids",
        shortest=shortest,
        why=f"{shortest} ids (one window and its next character)",
    )


def _check_length(name: str, seq_len: int, model: CharTransformer) -> None:
    longest = model.max_seq_len
    if longest is not None and seq_len > longest:
        raise ValueError(
            f"{name}={seq_len} is longer than the {longest} positions of the "
            f"{model.position!r} table: a learned table has no row beyond its length, so "
            f"the model cannot be run (or scored) at {seq_len}; use {name} <= {longest}"
        )


class _Adam:
    """Adam (Kingma and Ba, 2015, algorithm 1) with ``torch.optim.Adam``'s defaults.

    Betas 0.9 and 0.999, eps 1e-8 added to the bias-corrected root, no weight decay, all
    parameters updated in one batched (foreach) operation per step. It exists because
    ``torch.optim``'s first optimizer imports ``torch._dynamo``: with torch 2.13 on the book's
    two-core machine, the first ``torch.optim.Adam(foreach=True)`` step in a fresh process that
    has imported torch and pe_lib took 1.9 to 2.6 s (three runs), in each chapter kernel that
    trains, where a chapter has 30 s in all and trains for a few seconds. ``test_lm`` checks it
    against ``torch.optim.Adam``.
    """

    def __init__(self, parameters: list[torch.Tensor], lr: float) -> None:
        self.parameters = parameters
        self.lr = lr
        self.steps = 0
        self.means = [torch.zeros_like(p) for p in parameters]
        self.squares = [torch.zeros_like(p) for p in parameters]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        ready = [i for i, p in enumerate(self.parameters) if p.grad is not None]
        params: list[torch.Tensor] = [self.parameters[i] for i in ready]
        grads = [p.grad for p in params if p.grad is not None]
        means = [self.means[i] for i in ready]
        squares = [self.squares[i] for i in ready]
        self.steps += 1
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        torch._foreach_lerp_(means, grads, 1 - beta1)
        torch._foreach_mul_(squares, beta2)
        torch._foreach_addcmul_(squares, grads, grads, 1 - beta2)
        correction1 = 1 - beta1**self.steps
        root2 = math.sqrt(1 - beta2**self.steps)
        denominators = torch._foreach_sqrt(squares)
        torch._foreach_div_(denominators, root2)
        torch._foreach_add_(denominators, eps)
        torch._foreach_addcdiv_(params, means, denominators, -self.lr / correction1)


def train_lm(
    model: CharTransformer,
    ids: torch.Tensor,
    *,
    steps: int = 300,
    seq_len: int = 64,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
) -> list[float]:
    """Trains ``model`` in place with Adam to predict each next character; returns the losses.

    Each step draws ``batch_size`` windows of ``seq_len + 1`` characters at random starts in
    ``ids`` (from a generator seeded with ``seed``); the model reads the first ``seq_len`` and
    is scored on the following character at every position. :func:`train_lms` with one model.

    Args:
        model: the model (left in eval mode afterwards).
        ids: training text as ids, int64 ``(n,)``, ``n > seq_len``.
        steps: optimizer steps, >= 1.
        seq_len: training context, >= 1 (at most :attr:`CharTransformer.max_seq_len`).
        batch_size: windows per step, >= 1.
        lr: Adam's learning rate, a finite float > 0.
        seed: seed of the windows' generator, an int in ``[0, 2**53 - 1]``.

    Returns:
        the mean cross-entropy (nats per character) of each step, ``steps`` floats.
    """
    losses = train_lms(
        [model], ids, seeds=[seed], steps=steps, seq_len=seq_len, batch_size=batch_size, lr=lr
    )
    return [float(loss) for loss in losses[:, 0]]


def _check_alike(models: object) -> list[CharTransformer]:
    """``models``: a non-empty sequence of distinct :class:`CharTransformer` of one architecture
    (one ``repr``) with equal buffers (their fixed tables)."""
    if not isinstance(models, Sequence) or not models:
        raise TypeError(f"models must be a non-empty sequence of CharTransformer, got {models!r}")
    checked = [check_instance(f"models[{i}]", m, CharTransformer) for i, m in enumerate(models)]
    first = checked[0]
    for i, model in enumerate(checked[1:], start=1):
        if any(model is other for other in checked[:i]):
            raise ValueError(f"models[{i}] is models[{checked.index(model)}]: pass each model once")
        if repr(model) != repr(first):
            raise ValueError(
                f"models[{i}] differs from models[0] in its architecture; models trained "
                f"side by side must be built alike (one position, sizes and scaling), got\n"
                f"{model!r}\nand\n{first!r}"
            )
        buffers = dict(first.named_buffers())
        for name, buffer in model.named_buffers():
            if not torch.equal(buffer, buffers[name]):
                raise ValueError(f"models[{i}] has a buffer {name!r} unlike models[0]'s")
    return checked


def train_lms(
    models: Sequence[CharTransformer],
    ids: torch.Tensor,
    *,
    seeds: Sequence[int],
    steps: int = 300,
    seq_len: int = 64,
    batch_size: int = 32,
    lr: float = 3e-3,
) -> torch.Tensor:
    """Trains ``models`` in place side by side, ``models[i]`` on windows drawn with
    ``seeds[i]``, as one stacked model; returns the losses, ``(steps, len(models))``.

    Model ``i`` is trained exactly as :func:`train_lm` with ``seed=seeds[i]`` would train it
    (its own Adam state and batches), up to floating-point rounding: the models' parameters
    are stacked along a new first dimension (``torch.func.stack_module_state``) and one
    ``torch.func.vmap`` of their forward computes every model's step at once, which costs far
    less than a loop over them for models this small. The summed loss gives each model the
    gradient of its own loss.

    Args:
        models: models of one architecture and equal buffers (built alike, e.g. with different
            seeds); each is left in eval mode with its trained weights.
        ids: training text as ids, int64 ``(n,)``, ``n > seq_len``.
        seeds: one seed per model for its windows' generator, ints in ``[0, 2**53 - 1]``.
        steps, seq_len, batch_size, lr: as :func:`train_lm`.

    Returns:
        the mean cross-entropy (nats per character) of each model at each step, float64.

    Raises:
        ValueError: a loss is not finite (the learning rate is too large for the model).
    """
    models = _check_alike(models)
    if not isinstance(seeds, Sequence) or len(seeds) != len(models):
        raise ValueError(
            f"seeds must be a sequence of one seed per model ({len(models)}), got {seeds!r}"
        )
    steps = check_positive_int("steps", steps)
    seq_len = check_positive_int("seq_len", seq_len)
    batch_size = check_positive_int("batch_size", batch_size)
    lr = check_real("lr", lr, above=0.0)
    ids = _check_ids("ids", ids, models[0].vocab_size, seq_len + 1)
    _check_length("seq_len", seq_len, models[0])
    generators = [
        torch.Generator().manual_seed(check_nonnegative_int(f"seeds[{i}]", seed))
        for i, seed in enumerate(seeds)
    ]
    offsets = torch.arange(seq_len + 1)
    names = [name for name, _ in models[0].named_parameters()]
    stacked = {
        f"model.{name}": torch.stack([m.get_parameter(name).detach() for m in models])
        .clone()
        .requires_grad_()
        for name in names
    }  # each (models, *shape)
    skeleton = _Logits(models[0])

    def logits(parameters: dict[str, torch.Tensor], tokens: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = functional_call(skeleton, parameters, (tokens,))
        return out

    optimizer = _Adam(list(stacked.values()), lr)
    skeleton.train()
    losses = torch.empty(steps, len(models), dtype=torch.float64)
    for step in range(steps):
        starts = torch.stack(
            [torch.randint(ids.numel() - seq_len, (batch_size, 1), generator=g) for g in generators]
        )  # (models, batch, 1)
        windows = ids[starts + offsets]  # (models, batch, seq_len + 1)
        out = vmap(logits)(stacked, windows[..., :-1])  # (models, batch, seq_len, vocab)
        loss = (
            F.cross_entropy(out.flatten(0, 2), windows[..., 1:].flatten(), reduction="none")
            .view(len(models), -1)
            .mean(dim=1)
        )  # (models,)
        optimizer.zero_grad()
        loss.sum().backward()  # type: ignore[no-untyped-call]
        optimizer.step()
        losses[step] = loss.detach()
        if not torch.isfinite(losses[step]).all():
            raise ValueError(
                f"the loss is not finite at step {step + 1} (lr={lr}): training diverged; "
                f"use a smaller lr"
            )
    with torch.no_grad():
        for i, model in enumerate(models):
            for name in names:
                model.get_parameter(name).copy_(stacked[f"model.{name}"][i])
            model.eval()
    return losses


#: Attention-score elements per evaluation batch (batch * seq_len**2), to bound memory.
_EVAL_SCORES = 1 << 21


@torch.no_grad()
def perplexity(model: CharTransformer, ids: torch.Tensor, seq_len: int) -> float:
    """Perplexity of ``model`` on ``ids`` read in non-overlapping windows of ``seq_len``.

    The text is cut into ``(len(ids) - 1) // seq_len`` windows of ``seq_len`` characters (the
    rest is left out); in each, every character is predicted from those before it in its
    window, and the next character after the window is the last target. The result is
    ``exp`` of the mean negative log-likelihood over all ``windows * seq_len`` predictions.
    To compare lengths on the same characters, pass ``ids`` of ``k * seq_len + 1`` ids for
    every length.

    Args:
        model: the model (its training mode is restored afterwards).
        ids: held-out text as ids, int64 ``(n,)`` with ``n > seq_len``.
        seq_len: the window, >= 1.

    Raises:
        ValueError: ``seq_len`` exceeds the model's :attr:`~CharTransformer.max_seq_len`
            (a learned table has no row there), or ``ids`` is shorter than one window.
    """
    check_instance("model", model, CharTransformer)
    seq_len = check_positive_int("seq_len", seq_len)
    _check_length("seq_len", seq_len, model)
    ids = _check_ids("ids", ids, model.vocab_size, seq_len + 1)
    windows = (ids.numel() - 1) // seq_len
    inputs = ids[: windows * seq_len].view(windows, seq_len)
    targets = ids[1 : windows * seq_len + 1].view(windows, seq_len)
    per_batch = max(1, _EVAL_SCORES // (seq_len * seq_len))
    was_training = model.training
    model.eval()
    total = 0.0
    for start in range(0, windows, per_batch):
        logits = model(inputs[start : start + per_batch])
        losses = F.cross_entropy(
            logits.flatten(0, 1), targets[start : start + per_batch].flatten(), reduction="none"
        )  # each in the logits' dtype, summed in float64
        total += float(losses.double().sum())
    model.train(was_training)
    return math.exp(total / (windows * seq_len))
