r"""What a model's configuration does with positions, layer by layer: ``pe_lib.describe``.

:func:`describe` reads a ``config.json`` (a dict, a file, or a folder in the Hugging Face layout)
through :func:`pe_lib.models.config_reader.read_config` and :func:`pe_lib.models.layer_pattern.layer_pattern`
and gives a :class:`Description`: one row per group of identical layers (the keys each query
sees, whether positions are applied, the rotation's base, scaling and its parameters, rotated
channels and layout, the factor on cos and sin and the temperatures on the logits, the lengths
the method reads), the wavelengths of the fastest and slowest pairs against the training and
maximum lengths, what was assumed for keys the file leaves out, and warnings for mistakes the
config itself reveals. ``str()`` is a plain-text table, a notebook shows an HTML table, and
:meth:`Description.to_dict` is what ``python -m pe_lib describe --json`` prints.

Reference. Every number comes from the functions the rest of pe_lib is tested with against
transformers 5.23: :func:`~pe_lib.rope.scaling.rope_frequencies` (frequencies and the factor on
cos and sin), :func:`~pe_lib.models.temperature.attention_temperature` (temperatures) and
:func:`~pe_lib.models.layer_pattern.layer_pattern` (masks, rotation, layout); ``tests/lib/
test_describe.py`` holds each row of chapter 11's models against transformers' configuration
classes and rotary functions.

Shapes. Pair ``i`` of a rotary entry turns by :math:`\theta_i` per position: its wavelength is
:math:`2\pi/\theta_i` positions. "No turn within ``L``": pairs whose wavelength exceeds ``L``.
"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch

from ..rope.scaling import resolve_scaling, rope_frequencies
from .config_reader import SCALED_TYPES, ModelConfig, read_config
from .layer_pattern import NO_ATTENTION, LayerPositions, layer_pattern
from .temperature import TEMPERATURES, attention_temperature

__all__ = ["Description", "LayerGroup", "Wavelengths", "describe"]

#: The keys of an entry that name it rather than parametrise its method.
_NAMING = ("rope_type", "type", "rope_theta", "partial_rotary_factor")


@dataclass(frozen=True)
class LayerGroup:
    """Layers whose positional part is the same.

    Attributes:
        layers: their indices, ascending.
        attention: ``"full"``, ``"sliding"`` or ``"chunked"``
            (:data:`pe_lib.models.layer_pattern.ATTENTION_KINDS`), or ``"none"`` (a hybrid's layer that
            has a recurrent mixer in its place).
        window: the window or chunk size (a bidirectional window is a bound on ``|i - j|``);
            ``None`` for full attention.
        causal: whether a query sees no later key.
        rotates: whether queries and keys are rotated.
        recurrent: a hybrid's recurrent mixer, in place of attention or beside it
            (:data:`pe_lib.models.layer_pattern.RECURRENT_KINDS`), else ``None``.
        base: the rotary base ``rope_theta`` (``None``: no rotation).
        scaling: the rotary method (``"default"`` for plain RoPE; ``None``: no rotation).
        parameters: the method's own keys as the entry holds them (``factor``,
            ``low_freq_factor``, ...; LongRoPE's lists by their length).
        head_size: the layer's head size.
        rotated: the channels rotated (of ``head_size``); ``None``: no rotation.
        layout: how rotated channels are paired (``"half"`` or ``"interleaved"``).
        cos_sin_factor: the factor on cos and sin (YaRN's and LongRoPE's attention factor).
        temperatures: each rule of :data:`pe_lib.models.temperature.TEMPERATURES` that acts on these
            layers, with its factor on the logits, a phrase (``"x1.297 on the rotated share"``).
        lengths: the lengths the method reads, by key (``original_max_position_embeddings``;
            ``max_position_embeddings`` where it sets the factor or the ramp; ``"current
            length"`` with 0 where the frequencies follow the sequence's length).
    """

    layers: tuple[int, ...]
    attention: str
    window: int | None
    causal: bool
    rotates: bool
    recurrent: str | None
    base: float | None
    scaling: str | None
    parameters: Mapping[str, Any]
    head_size: int
    rotated: int | None
    layout: str | None
    cos_sin_factor: float | None
    temperatures: Mapping[str, str]
    lengths: Mapping[str, int]


@dataclass(frozen=True)
class Wavelengths:
    """The wavelengths of one rotary entry's pairs, against the model's lengths.

    Attributes:
        layers: the layer groups it is the entry of, by their first layer.
        fastest: the wavelength of the fastest pair, in positions, at ``maximum``.
        slowest: the wavelength of the slowest rotated pair, in positions, at ``maximum``.
        training: ``L``, the length the entry was trained at (its
            ``original_max_position_embeddings``, else ``max_position_embeddings``).
        maximum: ``max_position_embeddings``.
        pairs: the rotated pairs.
        unrotated: pairs the method leaves unrotated (Gemma 4's proportional rotation).
        short_in_training: pairs that never complete a turn within ``training`` at the base's
            own frequencies (unscaled: those the model was trained with up to ``L``).
        short_at_maximum: pairs that never complete a turn within ``maximum`` at the
            frequencies the model runs at that length.
    """

    layers: tuple[int, ...]
    fastest: float
    slowest: float
    training: int
    maximum: int
    pairs: int
    unrotated: int
    short_in_training: int
    short_at_maximum: int


@dataclass(frozen=True)
class Description:
    """What :func:`describe` finds. ``str()`` and ``repr()``: plain text, its numbers to the
    digits that matter (not a float's every last digit); in a notebook, an HTML table.

    Attributes:
        model_type: the model type read.
        layers: the number of layers.
        groups: one :class:`LayerGroup` per set of identical layers, by first layer.
        wavelengths: one :class:`Wavelengths` per distinct rotary entry.
        assumed: keys the file leaves out, with the values the configuration class gave them.
        warnings: what the config reveals that is likely a mistake, or read otherwise than
            written, one sentence each.
        filled_by: the configuration class that filled keys in, or ``None``.
    """

    model_type: str
    layers: int
    groups: tuple[LayerGroup, ...]
    wavelengths: tuple[Wavelengths, ...]
    assumed: Mapping[str, Any]
    warnings: tuple[str, ...]
    filled_by: str | None

    def to_dict(self) -> dict[str, Any]:
        """The description as JSON-ready values (``json.dumps`` takes it)."""
        return json.loads(json.dumps(asdict(self), default=_plain))  # type: ignore[no-any-return]

    def _rows(self) -> tuple[list[str], list[list[str]]]:
        header = [
            "layers",
            "attention",
            "positions",
            "base",
            "scaling",
            "rotated",
            "layout",
            "cos, sin x",
            "logits x",
            "lengths read",
        ]
        rows = []
        for group in self.groups:
            rows.append(
                [
                    f"{_layers(group.layers, self.layers)} ({len(group.layers)})",
                    _attention(group),
                    "RoPE" if group.rotates else "none",
                    "-" if group.base is None else f"{group.base:,.0f}",
                    _scaling(group),
                    "-" if group.rotated is None else f"{group.rotated} of {group.head_size}",
                    group.layout or "-",
                    "-" if group.cos_sin_factor is None else f"{group.cos_sin_factor:.4g}",
                    "; ".join(group.temperatures.values()) or "1",
                    ", ".join(f"{k} {v:,}" if v else k for k, v in group.lengths.items()) or "-",
                ]
            )
        return header, rows

    def _wave_rows(self) -> tuple[list[str], list[list[str]]]:
        header = [
            "rotary entry",
            "pairs",
            "fastest",
            "slowest",
            "L",
            "no turn within L",
            "max",
            "no turn within max",
        ]
        rows = [
            [
                f"layer {wave.layers[0]}'s",
                f"{wave.pairs}" + (f" (+{wave.unrotated} unrotated)" if wave.unrotated else ""),
                f"{wave.fastest:,.1f}",
                f"{wave.slowest:,.0f}",
                f"{wave.training:,}",
                f"{wave.short_in_training}",
                f"{wave.maximum:,}",
                f"{wave.short_at_maximum}",
            ]
            for wave in self.wavelengths
        ]
        return header, rows

    def _title(self) -> str:
        source = f"; keys left out filled in by {self.filled_by}" if self.filled_by else ""
        return f"{self.model_type}, {self.layers} layers{source}"

    def __str__(self) -> str:
        lines = [self._title(), ""]
        lines += _text_table(*self._rows())
        if self.wavelengths:
            lines += ["", "wavelengths (positions per turn of a pair), at max_position_embeddings"]
            lines += _text_table(*self._wave_rows())
        if self.assumed:
            lines += ["", "assumed (left out of the file):"]
            lines += [f"  {key} = {_short(value)}" for key, value in self.assumed.items()]
        if self.warnings:
            lines += ["", "warnings:"]
            lines += [f"  - {warning}" for warning in self.warnings]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        parts = [f"<p><strong>{html.escape(self._title())}</strong></p>"]
        parts.append(_html_table(*self._rows()))
        if self.wavelengths:
            parts.append("<p>wavelengths (positions per turn of a pair)</p>")
            parts.append(_html_table(*self._wave_rows()))
        for title, items in (
            (
                "assumed (left out of the file)",
                [f"{k} = {_short(v)}" for k, v in self.assumed.items()],
            ),
            ("warnings", list(self.warnings)),
        ):
            if items:
                body = "".join(f"<li>{html.escape(item)}</li>" for item in items)
                parts.append(f"<p>{title}:</p><ul>{body}</ul>")
        return "".join(parts)


# --- formatting ---------------------------------------------------------------------------------


def _plain(value: object) -> object:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (tuple, list)):
        return list(value)
    return str(value)


def _short(value: object) -> str:
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) > 6:
        return f"[{', '.join(map(repr, value[:4]))}, ... ({len(value)} entries)]"
    return repr(value)


def _ranges(indices: Sequence[int]) -> str:
    """``0-4, 6-10, 12``."""
    parts: list[str] = []
    start = prev = indices[0]
    for index in [*indices[1:], None]:
        if index is not None and index == prev + 1:
            prev = index
            continue
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
        if index is not None:
            start = prev = index
    return ", ".join(parts)


def _layers(indices: Sequence[int], count: int) -> str:
    """The layers of a group: ``all``, a periodic pattern (``0-4 of every 6``, ``every 4th
    from 3``) where one describes them within ``count`` layers, else ranges."""
    chosen = set(indices)
    if len(chosen) == count:
        return "all"
    for period in range(2, count // 2 + 1):
        residues = sorted({i % period for i in chosen})
        if {i for i in range(count) if i % period in residues} != chosen:
            continue
        if len(residues) == 1:
            return f"every {period}{_ordinal(period)} from {residues[0]}"
        return f"{_ranges(residues)} of every {period}"
    return _ranges(indices)


def _ordinal(n: int) -> str:
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _attention(group: LayerGroup) -> str:
    if group.attention == NO_ATTENTION:
        return f"none: {group.recurrent}"
    beside = f", {group.recurrent} beside" if group.recurrent else ""
    return _keys_seen(group) + beside


def _keys_seen(group: LayerGroup) -> str:
    if group.window is None:
        return "full" if group.causal else "full, both ways"
    if not group.causal:
        return f"|i - j| < {group.window:,}"
    return f"{group.attention} {group.window:,}"


def _scaling(group: LayerGroup) -> str:
    if group.scaling is None:
        return "-"
    if not group.parameters:
        return group.scaling
    shown = ", ".join(
        f"{k} {v if isinstance(v, str) else _short(v)}" for k, v in group.parameters.items()
    )
    return f"{group.scaling} ({shown})"


def _text_table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


# --- reading ------------------------------------------------------------------------------------


def load_config(config: Mapping[str, Any] | str | Path) -> Mapping[str, Any]:
    """A mapping as it is; a path: its JSON, or its ``config.json`` for a folder."""
    if isinstance(config, Mapping):
        return config
    if not isinstance(config, (str, os.PathLike)):
        raise TypeError(
            f"config must be a mapping (a config.json's keys), or the path of a config.json or "
            f"of a folder holding one, got {type(config).__name__}"
        )
    path = Path(config)
    if path.is_dir():
        path = path / "config.json"
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ValueError(
            f"config: cannot read {str(path)!r} ({error.strerror or error})"
        ) from error
    except json.JSONDecodeError as error:
        raise ValueError(f"config: {str(path)!r} is not JSON ({error})") from error
    if not isinstance(loaded, dict):
        raise ValueError(
            f"config: {str(path)!r} must hold a JSON object, got {type(loaded).__name__}"
        )
    return loaded


def _entry_key(layer: LayerPositions) -> str:
    return json.dumps(layer.rope, sort_keys=True, default=str)


def _identity(layer: LayerPositions) -> tuple[Any, ...]:
    """What makes two layers' positional parts the same."""
    return (
        layer.attention,
        layer.window,
        layer.causal,
        layer.layout,
        layer.recurrent,
        _entry_key(layer),
    )


def _parameters(entry: Mapping[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in entry.items():
        if key in _NAMING or key == "original_max_position_embeddings" or value is None:
            continue
        found[key] = (
            f"{len(value)} divisors"
            if key.endswith("_factor") and isinstance(value, Sequence)
            else value
        )
    return found


def _lengths(kind: str, entry: Mapping[str, Any], read: ModelConfig) -> dict[str, int]:
    """The lengths the method reads (see :class:`LayerGroup`)."""
    found: dict[str, int] = {}
    if kind in SCALED_TYPES:
        found["original_max_position_embeddings"] = int(entry["original_max_position_embeddings"])
    maximum = read.values.get("max_position_embeddings")
    if maximum is not None and (
        kind == "dynamic" or (kind == "longrope" and entry.get("factor") is None)
    ):
        found["max_position_embeddings"] = int(maximum)
    if kind in ("dynamic", "longrope"):
        found["current length"] = 0
    return found


def _temperatures(
    read: ModelConfig, layer: LayerPositions, layer_type: str | None, maximum: int | None
) -> dict[str, str]:
    """Each rule that acts on ``layer``, as a phrase."""
    found: dict[str, str] = {}
    where = "rotary" if layer.rotates else "nope"
    kind = None if layer.rope is None else layer.rope.get("rope_type", layer.rope.get("type"))
    for name, rule in TEMPERATURES.items():
        if rule.layers not in (where, "all"):
            continue
        if rule.applies_to and read.model_type not in rule.applies_to:
            continue
        if not rule.applies_to and kind != name:
            continue
        config = dict(read.values)
        last = torch.tensor([0, (maximum or 1) - 1])
        values = attention_temperature(name, config, last, layer_type=layer_type).tolist()
        if values[0] == values[1] == 1.0:
            continue
        share = "the rotated share" if rule.acts_on == "rotated" else "all channels"
        if values[0] == values[1]:
            found[name] = f"x{values[0]:.4g} on {share} ({name})"
        else:
            found[name] = f"x{values[0]:.4g} to x{values[1]:.4g} by position on {share} ({name})"
    return found


def _group_of(
    read: ModelConfig,
    index: int,
    layer: LayerPositions,
    layer_type: str | None,
    maximum: int | None,
) -> LayerGroup:
    head = read.head_size(index)
    if layer.rope is None:
        return LayerGroup(
            layers=(index,),
            attention=layer.attention,
            window=layer.window,
            causal=layer.causal,
            rotates=False,
            recurrent=layer.recurrent,
            base=None,
            scaling=None,
            parameters={},
            head_size=head,
            rotated=None,
            layout=None,
            cos_sin_factor=None,
            temperatures=_temperatures(read, layer, layer_type, maximum),
            lengths={},
        )
    entry = layer.rope
    if maximum is None:  # describe asks for it first where a layer rotates
        maximum = int(read.get("max_position_embeddings", "for the length layers are read at"))
    scaling = resolve_scaling(entry, max_position_embeddings=maximum)
    theta, factor = rope_frequencies(head, scaling=scaling, seq_len=maximum)
    return LayerGroup(
        layers=(index,),
        attention=layer.attention,
        window=layer.window,
        causal=layer.causal,
        rotates=True,
        recurrent=layer.recurrent,
        base=scaling.base,
        scaling=scaling.rope_type,
        parameters=_parameters(entry),
        head_size=head,
        rotated=2 * int((theta > 0).sum()),  # proportional: the pairs it turns
        layout=layer.layout,
        cos_sin_factor=factor,
        temperatures=_temperatures(read, layer, layer_type, maximum),
        lengths=_lengths(scaling.rope_type, entry, read),
    )


def _wavelengths(group: LayerGroup, entry: Mapping[str, Any], maximum: int) -> Wavelengths:
    scaling = resolve_scaling(entry, max_position_embeddings=maximum)
    theta, _ = rope_frequencies(group.head_size, scaling=scaling, seq_len=maximum)
    plain = {"rope_type": "default", "rope_theta": scaling.base}
    share = scaling.params.get("partial_rotary_factor")
    if share is not None and scaling.rope_type != "proportional":
        plain["partial_rotary_factor"] = share
    trained, _ = rope_frequencies(group.head_size, scaling=plain)
    turning = theta[theta > 0]
    if scaling.rope_type == "proportional":  # the rotated pairs turn at the base's rates / factor
        trained = trained[: len(turning)]
    training = int(entry.get("original_max_position_embeddings") or maximum)
    waves = 2 * math.pi / turning
    return Wavelengths(
        layers=(group.layers[0],),
        fastest=float(waves.min()),
        slowest=float(waves.max()),
        training=training,
        maximum=maximum,
        pairs=len(turning),
        unrotated=len(theta) - len(turning),
        short_in_training=int((2 * math.pi / trained > training).sum()),
        short_at_maximum=int((waves > maximum).sum()),
    )


#: Scalings whose ``factor`` is not the ratio of the model's length to its original one, so that
#: factor x original_max_position_embeddings differing from max_position_embeddings is no
#: mistake: Llama 3.1's rule divides only the slow pairs' frequencies by ``factor`` (8, on
#: 8,192 positions), and Meta's published file claims 131,072.
FACTOR_NOT_A_LENGTH_RATIO = frozenset({"llama3"})


def _warnings(
    read: ModelConfig, groups: Sequence[LayerGroup], text: Mapping[str, Any]
) -> list[str]:
    found = list(read.notes)
    maximum = read.values.get("max_position_embeddings")
    seen: set[str] = set()
    for group in groups:
        if group.window is not None and maximum is not None and group.window >= maximum:
            found.append(
                f"layers {_ranges(group.layers)}: the {group.attention} window {group.window:,} "
                f"reaches max_position_embeddings {maximum:,}: within that length they attend "
                f"as full layers"
            )
        factor = group.parameters.get("factor")
        original = group.lengths.get("original_max_position_embeddings")
        if (
            factor is not None
            and original
            and maximum is not None
            and group.scaling not in FACTOR_NOT_A_LENGTH_RATIO
        ):
            product = factor * original
            line = (
                f"{group.scaling} factor {factor:g} x original_max_position_embeddings "
                f"{original:,} = {product:,.0f}, but max_position_embeddings is {maximum:,}: "
                f"the scaling was set for another length than the model claims"
            )
            if not math.isclose(product, maximum) and line not in seen:
                seen.add(line)
                found.append(line)
    version = text.get("transformers_version")
    installed = (read.filled_by or "").split(" ")[1:2]
    if (
        isinstance(version, str)
        and installed
        and version.split(".")[0] != installed[0].split(".")[0]
    ):
        found.append(
            f"the file was written by transformers {version}; {read.filled_by} reads it: keys of "
            f"the older version are read as the newer one reads them (see the notes above)"
        )
    if "rope_scaling" in text and "rope_parameters" in text:
        found.append(
            "the file holds both rope_scaling (transformers 4) and rope_parameters (transformers 5)"
        )
    return found


def _text_part(config: Mapping[str, Any]) -> Mapping[str, Any]:
    text = config.get("text_config")
    return text if isinstance(text, Mapping) else config


def describe(
    config: Mapping[str, Any] | str | Path, *, use_transformers: bool | None = None
) -> Description:
    """What a model's configuration does with positions, layer by layer.

    Args:
        config: a ``config.json`` as a mapping (or transformers' ``config.to_dict()``), or the
            path of a ``config.json`` or of a folder holding one (the Hugging Face layout).
            Keys the file leaves out take the model type's defaults from transformers'
            configuration class where transformers is installed (listed under ``assumed``).
        use_transformers: as :func:`pe_lib.models.config_reader.read_config`.

    Returns:
        a :class:`Description`.

    Raises:
        TypeError: ``config`` is neither a mapping nor a path, or a key has the wrong type.
        ValueError: the file cannot be read, or the config lacks or misstates a field (named
            in the message): as :func:`~pe_lib.models.config_reader.read_config`,
            :func:`~pe_lib.models.layer_pattern.layer_pattern` and
            :func:`~pe_lib.rope.scaling.resolve_scaling` refuse it; ``max_position_embeddings``
            is needed for the lengths.
    """
    loaded = load_config(config)
    read = read_config(loaded, use_transformers=use_transformers)
    pattern = layer_pattern(read)
    rotating = any(layer.rotates for layer in pattern)
    why = "for the length its rotated layers are read at"
    maximum: int | None = read.values.get("max_position_embeddings")
    maximum = int(read.get("max_position_embeddings", why)) if rotating else maximum
    types = read.values.get("layer_types") or [None] * len(pattern)
    per_layer_type = rotating and "rope_type" not in read.rope_parameters()
    groups: dict[tuple[Any, ...], LayerGroup] = {}
    waves: dict[tuple[str, int], Wavelengths] = {}
    for index, layer in enumerate(pattern):
        layer_type = types[index] if per_layer_type and layer.rotates else None
        head = read.head_size(index)
        key = (*_identity(layer), head, layer_type)
        if key in groups:
            kept = groups[key]
            groups[key] = replace(kept, layers=(*kept.layers, index))
            continue
        groups[key] = _group_of(read, index, layer, layer_type, maximum)
        if layer.rope is not None and (_entry_key(layer), head) not in waves:
            waves[_entry_key(layer), head] = _wavelengths(
                groups[key], layer.rope, int(maximum or 0)
            )
    ordered = tuple(sorted(groups.values(), key=lambda g: g.layers[0]))
    return Description(
        model_type=read.model_type,
        layers=len(pattern),
        groups=ordered,
        wavelengths=tuple(waves.values()),
        assumed=dict(read.assumed),
        warnings=tuple(_warnings(read, ordered, _text_part(loaded))),
        filled_by=read.filled_by,
    )
