r"""Positions beyond a line: an image's patches on a grid, and a sequence of text and images.

A vision transformer cuts an image into ``rows x columns`` patches. Its positions are either a
learned table of one row per patch, which a new resolution must *resize*
(:func:`resize_position_table`, as ViT and SigLIP 2 do), or coordinates that an axial RoPE turns
by (:mod:`pe_lib.rope.axial`): :func:`grid_positions` in reading order, in Qwen2-VL's 2x2 merge windows
(``merge=2``), or from 1 as Llama 4's vision encoder counts. :func:`mrope_positions` gives every
token of a sequence of text, images and videos its (time, row, column) for M-RoPE, as the
``get_rope_index`` of Qwen2-VL, Qwen2.5-VL or Qwen3-VL does (a video's time positions are where
the three differ).
"""

from __future__ import annotations

import itertools
import math
import reprlib
from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
import torch
import torch.nn.functional as F

from .._validation import (
    MAX_EXACT_INT,
    check_choice,
    check_has_values,
    check_instance,
    check_memory,
    check_nonnegative_int,
    check_position_span,
    check_positive_int,
    check_real,
    check_table_size,
    naming_allocation,
)

__all__ = ["MROPE_MODEL_TYPES", "grid_positions", "mrope_positions", "resize_position_table"]


def grid_positions(rows: int, columns: int, *, start: int = 0, merge: int = 1) -> torch.Tensor:
    """The ``(row, column)`` of every patch of a ``rows x columns`` grid, in the order the
    patches enter the model.

    Args:
        rows, columns: the grid's size in patches, positive.
        start: the first coordinate: 0 (Pixtral, Qwen2-VL) or 1 (Llama 4's vision encoder).
        merge: 1 for reading order (row by row); ``m > 1`` for Qwen2-VL's vision tower, which
            orders the patches by ``m x m`` windows (those a merger later joins into one token),
            reading order inside each window and between windows. ``rows`` and ``columns`` must
            then be multiples of ``m``.

    Returns:
        int64 tensor ``(rows * columns, 2)``.

    Raises:
        TypeError: a size, ``start`` or ``merge`` that is not an int (``bool`` included).
        ValueError: a size or ``merge`` < 1, a negative ``start``, a value or a last coordinate
            (``start + rows - 1``, ``start + columns - 1``) beyond ``2**53 - 1``, sizes that are
            not multiples of ``merge``, or a grid whose positions need more memory than this
            machine has (refused before anything is allocated).
    """
    rows, columns = check_positive_int("rows", rows), check_positive_int("columns", columns)
    start, merge = check_nonnegative_int("start", start), check_positive_int("merge", merge)
    if rows % merge or columns % merge:
        raise ValueError(
            f"rows and columns must be multiples of merge={merge}, got rows={rows}, "
            f"columns={columns}"
        )
    check_position_span("start", start, "max(rows, columns)", max(rows, columns))
    check_table_size("rows", rows, "columns", columns)
    # the result, and the two columns it is stacked from
    patches = rows * columns
    nbytes = 4 * patches * 8
    what = f"grid_positions(rows={rows}, columns={columns}): {patches} (row, column) int64 pairs"
    check_memory(what, nbytes)
    with naming_allocation(what, nbytes):
        row, column = torch.meshgrid(torch.arange(rows), torch.arange(columns), indexing="ij")
        windows = (rows // merge, merge, columns // merge, merge)
        # (window row, row in window, window column, column in window) -> windows first
        order = [
            row.reshape(windows).transpose(1, 2).flatten(),
            column.reshape(windows).transpose(1, 2).flatten(),
        ]
        return torch.stack(order, dim=-1).add_(start)


_GRIDS = "(t, rows, columns) triples of ints, e.g. [(1, 4, 6)] or an int64 tensor (n, 3)"

#: The models whose ``get_rope_index`` :func:`mrope_positions` follows (their config's
#: ``model_type``); they place images alike and differ in a video's time positions.
MROPE_MODEL_TYPES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")


def _check_grids(name: str, grids: object, *, images: bool) -> list[tuple[int, int, int]]:
    """``grids`` as ``(t, rows, columns)`` triples: a sequence of triples, or an integer tensor
    or array ``(n, 3)`` (the processor's ``image_grid_thw`` or ``video_grid_thw``). An image has
    ``t = 1``."""
    if isinstance(grids, (torch.Tensor, np.ndarray)):
        triples = _integer_array(name, grids, 2, f"of shape (n, 3): {_GRIDS}")
    elif isinstance(grids, Sequence) and not isinstance(grids, (str, bytes)):
        triples = list(grids)
    else:
        raise TypeError(
            f"{name} must be a sequence of {_GRIDS}, got {reprlib.repr(grids)} of type "
            f"{type(grids).__name__}"
        )
    checked = []
    for n, grid in enumerate(triples):
        item = f"{name}[{n}]"
        if isinstance(grid, (torch.Tensor, np.ndarray)):
            grid = _integer_array(item, grid, 1, "of shape (3,): (t, rows, columns)")
        if not isinstance(grid, Sequence) or isinstance(grid, (str, bytes)) or len(grid) != 3:
            raise TypeError(
                f"{item} must be a (t, rows, columns) triple of ints, got {reprlib.repr(grid)}"
            )
        t, h, w = (check_positive_int(item, size) for size in grid)
        if images and t != 1:
            raise ValueError(
                f"{item} = {(t, h, w)} has t={t} time steps: an image has one (t = 1); pass "
                f"a video's grid in video_grids and flag its tokens in is_video"
            )
        checked.append((t, h, w))
    return checked


def _integer_array(
    name: str, values: torch.Tensor | np.ndarray[Any, Any], ndim: int, shape: str
) -> list[Any]:
    """The nested list of an integer tensor or array of ``ndim`` dimensions, the last of size 3."""
    if isinstance(values, torch.Tensor):
        check_has_values(name, values, f"an integer tensor {shape}")
        integer = not (
            values.dtype == torch.bool or values.is_floating_point() or values.is_complex()
        )
    else:
        integer = values.dtype.kind in "iu"
    if not integer:
        raise TypeError(f"{name} must be an integer tensor {shape}, got dtype {values.dtype}")
    if values.ndim != ndim or values.shape[-1] != 3:
        raise ValueError(f"{name} must be {shape}, got shape {tuple(values.shape)}")
    listed: list[Any] = values.tolist()
    return listed


def _check_flags(name: str, flags: object) -> list[bool]:
    """``flags`` as a list of bools: a non-empty 1-D sequence, array or tensor of bools."""
    expected = "a non-empty 1-D sequence (or tensor) of bools, one per token"
    if isinstance(flags, torch.Tensor):
        check_has_values(name, flags, expected)
    try:
        values = torch.as_tensor(flags)
    except (TypeError, ValueError, RuntimeError):
        values = None
    if values is None or values.dtype != torch.bool or values.dim() != 1 or values.numel() == 0:
        raise TypeError(f"{name} must be {expected}, got {reprlib.repr(flags)}")
    return [bool(flag) for flag in values.tolist()]


def _token_kinds(is_image: object, is_video: object) -> list[int]:
    """Each token's kind as ``get_rope_index`` reads ``mm_token_type_ids``: 0 text, 1 image,
    2 video."""
    images = _check_flags("is_image", is_image)
    if is_video is None:
        return [int(flag) for flag in images]
    videos = _check_flags("is_video", is_video)
    if len(videos) != len(images):
        raise ValueError(
            f"is_video must have one flag per token, as is_image has: got {len(videos)} flags "
            f"for {len(images)} tokens"
        )
    both = [
        n for n, (image, video) in enumerate(zip(images, videos, strict=True)) if image and video
    ]
    if both:
        raise ValueError(
            f"a token is either an image's or a video's: tokens {reprlib.repr(both)} are flagged "
            f"in both is_image and is_video"
        )
    return [1 if image else 2 if video else 0 for image, video in zip(images, videos, strict=True)]


#: A time position of a video, spaced by Qwen2.5-VL's seconds: an entry of ``second_per_grid_ts``
#: kept as given (a Python number, or a 0-dim tensor), so that the product below rounds as
#: ``get_rope_index`` rounds it.
_Seconds: TypeAlias = float | torch.Tensor


def _check_seconds(second_per_grid_ts: object, videos: int) -> list[_Seconds]:
    """One positive, finite time span in seconds per video: a sequence of reals, or a 1-D real
    tensor or array (the processor's ``second_per_grid_ts``); ``None`` gives 1 second each, as
    ``Qwen2_5_VLModel.get_rope_index`` assumes."""
    expected = (
        f"one positive number of seconds per video ({videos} here), as a sequence or a 1-D "
        f"tensor, e.g. [1.0] (the processor's temporal_patch_size / fps)"
    )
    if second_per_grid_ts is None:
        return [1] * videos
    entries: list[_Seconds]
    if isinstance(second_per_grid_ts, torch.Tensor):
        check_has_values("second_per_grid_ts", second_per_grid_ts, expected)
        if second_per_grid_ts.dtype == torch.bool or second_per_grid_ts.is_complex():
            raise TypeError(
                f"second_per_grid_ts must be {expected}, got dtype {second_per_grid_ts.dtype}"
            )
        if second_per_grid_ts.dim() != 1:
            raise ValueError(
                f"second_per_grid_ts must be {expected}, got shape "
                f"{tuple(second_per_grid_ts.shape)}"
            )
        entries = list(second_per_grid_ts.cpu())
        values = [float(entry) for entry in entries]
    else:
        if isinstance(second_per_grid_ts, np.ndarray):
            second_per_grid_ts = second_per_grid_ts.tolist()
        if not isinstance(second_per_grid_ts, Sequence) or isinstance(
            second_per_grid_ts, (str, bytes)
        ):
            raise TypeError(
                f"second_per_grid_ts must be {expected}, got {reprlib.repr(second_per_grid_ts)} "
                f"of type {type(second_per_grid_ts).__name__}"
            )
        values = [
            check_real(f"second_per_grid_ts[{n}]", value)
            for n, value in enumerate(second_per_grid_ts)
        ]
        entries = list(values)
    if len(values) != videos:
        raise ValueError(f"second_per_grid_ts must hold {expected}, got {len(values)} values")
    for n, value in enumerate(values):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(
                f"second_per_grid_ts[{n}] must be a finite number of seconds > 0, got {value!r}"
            )
    return entries


def _video_times(
    model_type: str, steps: int, interval: _Seconds | None, name: str, start: int
) -> torch.Tensor:
    """The time offsets of a video's steps from its first: ``0, 1, 2, ...`` (Qwen2-VL), or
    ``k * tokens_per_second * seconds`` truncated to an int, the product formed in the dtype
    ``get_rope_index`` forms it in (Qwen2.5-VL)."""
    if model_type != "qwen2_5_vl" or interval is None:
        return torch.arange(steps)
    last = start + (steps - 1) * float(interval)
    if last > MAX_EXACT_INT:
        raise ValueError(
            f"{name}'s last time position, its start {start} + (t - 1) * tokens_per_second * "
            f"second_per_grid_ts = {last:g}, must be at most 2**53 - 1"
        )
    return (torch.arange(steps) * interval).long()


def mrope_positions(
    is_image: Sequence[bool] | torch.Tensor,
    image_grids: Sequence[Sequence[int]] | torch.Tensor,
    *,
    merge: int = 2,
    is_video: Sequence[bool] | torch.Tensor | None = None,
    video_grids: Sequence[Sequence[int]] | torch.Tensor | None = None,
    model_type: str = "qwen2_vl",
    second_per_grid_ts: Sequence[float] | torch.Tensor | None = None,
    tokens_per_second: int | None = None,
) -> tuple[torch.Tensor, int]:
    """M-RoPE's (time, row, column) of every token of one sequence of text, images and videos,
    as transformers 5.23's ``get_rope_index`` of ``model_type`` computes them.

    A text token at position ``p`` gets ``(p, p, p)``: on text, M-RoPE is RoPE. An image placed
    after text that ended at ``p - 1`` gets ``(p, p + i, p + j)`` for its token at row ``i`` and
    column ``j`` of the merged grid (``rows / merge`` by ``columns / merge``), and the text after
    it resumes at ``p + max(rows, columns) / merge``, so the position grows by the image's larger
    side, not by its number of tokens (Qwen2-VL, arXiv 2409.12191 section 2.1;
    ``Qwen2VLModel.get_rope_index``). The three models place images alike; a video's ``t`` time
    steps (each two frames, the processor's ``temporal_patch_size``) differ:

    - ``"qwen2_vl"`` (``Qwen2VLModel.get_rope_index``): step ``k`` of a video that starts at
      ``p`` has time ``p + k`` and the rows and columns of an image at ``p``: the steps are one
      position apart whatever the frame rate;
    - ``"qwen2_5_vl"`` (``Qwen2_5_VLModel.get_rope_index``): time ``p + int(k *
      tokens_per_second * second_per_grid_ts)``, so that a time position stands for
      ``1 / tokens_per_second`` seconds of the video;
    - ``"qwen3_vl"`` (``Qwen3VLModel.get_rope_index``): each step is placed as an image, and
      the processor writes its time as text (``<0.5 seconds>``) before it, so each step is its
      own run of video tokens, after its timestamp's text tokens.

    In all three, transformers 5.23 resumes the text after a video at ``p + max(rows, columns) /
    merge``, as after an image, although a Qwen2-VL or Qwen2.5-VL video's time positions can reach
    beyond it: the text then shares time positions with the video (releases up to 5.2.0 resumed
    at the video's largest position + 1). The returned ``delta`` is computed from the largest
    position of the sequence, as ``rope_deltas``.

    Args:
        is_image: one flag per token (a sequence of bools, or a 1-D bool tensor or array), True
            for an image token; each run of image tokens is one image.
        image_grids: ``(t, rows, columns)`` of each image in patches before merging, in order:
            a sequence of triples, or the processor's ``image_grid_thw``, an integer tensor (or
            array) of shape ``(n, 3)``. ``t`` must be 1.
        merge: the vision tower's ``spatial_merge_size``.
        is_video: one flag per token, True for a video token (default: no video). Each run of
            video tokens is one video (Qwen2-VL, Qwen2.5-VL) or one time step of one
            (Qwen3-VL).
        video_grids: ``(t, rows, columns)`` of each video, as ``image_grids`` (the processor's
            ``video_grid_thw``); ``t`` counts the time steps.
        model_type: ``"qwen2_vl"``, ``"qwen2_5_vl"`` or ``"qwen3_vl"`` (the config's
            ``model_type``; :data:`MROPE_MODEL_TYPES`).
        second_per_grid_ts: Qwen2.5-VL only: the seconds one time step of each video covers (the
            processor's ``temporal_patch_size / fps``), a sequence of positive numbers or a 1-D
            tensor, one per video; default 1 second each, as ``get_rope_index`` assumes.
        tokens_per_second: Qwen2.5-VL only, required with a video: the vision config's
            ``tokens_per_second`` (2 in Qwen2.5-VL's published config.json files, 4 by the
            configuration class's default).

    Returns:
        ``(positions, delta)``: int64 ``(seq_len, 3)`` positions, and the offset
        ``get_rope_index`` returns as ``rope_deltas``: the largest position + 1 minus
        ``seq_len``. A model's forward pass given a cache places a new token ``n`` (counting the
        prompt) at ``n + delta`` on all three axes.

    Raises:
        TypeError: ``is_image`` or ``is_video`` not a non-empty 1-D collection of bools; grids
            not triples of ints or an integer ``(n, 3)`` tensor; a non-int ``merge`` or
            ``tokens_per_second``; a non-str ``model_type``; ``second_per_grid_ts`` not numbers.
        ValueError: a meta tensor (it holds no values to read), a size < 1, an image grid with
            ``t > 1``, sides that are not multiples of ``merge``, a run of tokens that is not as
            long as its grid (``t * (rows / merge) * (columns / merge)``; one step's tokens for
            Qwen3-VL), more (or fewer) runs than grids, flags of another length than
            ``is_image``'s or a token flagged as both, an unknown ``model_type``,
            ``second_per_grid_ts`` or ``tokens_per_second`` given to a model other than
            Qwen2.5-VL, ``tokens_per_second`` missing for a Qwen2.5-VL video,
            ``second_per_grid_ts`` not one finite number > 0 per video, or a time position
            beyond ``2**53 - 1``.
    """
    merge = check_positive_int("merge", merge)
    model_type = check_choice("model_type", model_type, MROPE_MODEL_TYPES)
    kinds = _token_kinds(is_image, is_video)
    images = _check_grids("image_grids", image_grids, images=True)
    videos = _check_grids("video_grids", [] if video_grids is None else video_grids, images=False)
    intervals: list[_Seconds | None] = [None] * len(videos)
    if model_type == "qwen2_5_vl":
        seconds = _check_seconds(second_per_grid_ts, len(videos))
        if tokens_per_second is not None:
            per_second = check_positive_int("tokens_per_second", tokens_per_second)
            # tokens_per_second * seconds as get_rope_index multiplies them
            intervals = [per_second * entry for entry in seconds]
        elif videos:
            raise ValueError(
                "tokens_per_second is required to place a Qwen2.5-VL video: the vision "
                "config's tokens_per_second (2 in the published config.json files)"
            )
    else:
        for name, value in (
            ("second_per_grid_ts", second_per_grid_ts),
            ("tokens_per_second", tokens_per_second),
        ):
            if value is not None:
                raise ValueError(
                    f"{name} applies to model_type='qwen2_5_vl' only, not to "
                    f"model_type={model_type!r}: Qwen2-VL counts a video's time steps and "
                    f"Qwen3-VL writes their times as text"
                )
    # one grid per run of tokens: Qwen3-VL places every time step as an image of its own
    runs_of: dict[int, list[tuple[str, str, tuple[int, int, int], _Seconds | None]]] = {
        1: [("image", f"image_grids[{n}]", grid, None) for n, grid in enumerate(images)],
        2: [("video", f"video_grids[{n}]", grid, intervals[n]) for n, grid in enumerate(videos)],
    }
    if model_type == "qwen3_vl":
        runs_of[2] = [
            ("time step", f"a time step of {name}", (1, h, w), None)
            for _, name, (t, h, w), _ in runs_of[2]
            for _ in range(t)
        ]
    pending = {kind: iter(grids) for kind, grids in runs_of.items()}
    runs: list[torch.Tensor] = []
    position = 0
    for kind, run in itertools.groupby(kinds):
        count = sum(1 for _ in run)
        if kind == 0:
            runs.append(torch.arange(position, position + count).unsqueeze(-1).expand(-1, 3))
            position += count
            continue
        flags = "is_image" if kind == 1 else "is_video"
        grids = "image_grids" if kind == 1 else "video_grids"
        entry = next(pending[kind], None)
        if entry is None:
            raise ValueError(
                f"{flags} has more runs of {'image' if kind == 1 else 'video'} tokens than "
                f"{grids} has {'images' if kind == 1 else 'videos'}"
                + (" (Qwen3-VL: time steps)" if kind == 2 and model_type == "qwen3_vl" else "")
            )
        what, name, (t, h, w), interval = entry
        if h % merge or w % merge:
            raise ValueError(
                f"{name}'s rows and columns must be multiples of merge={merge}, got {(t, h, w)}"
            )
        tokens = t * (h // merge) * (w // merge)
        if count != tokens:
            alone = (
                " (Qwen3-VL: each time step is a run of its own, after its timestamp's text)"
                if what == "time step"
                else ""
            )
            raise ValueError(
                f"{name} = {(t, h, w)} with merge={merge} has {tokens} tokens per {what}, but "
                f"its run in {flags} has {count}{alone}"
            )
        # time p + its offset for every token of a step, row p + i and column p + j
        space = grid_positions(h // merge, w // merge).repeat(t, 1)
        time = _video_times(model_type, t, interval, name, position).repeat_interleave(tokens // t)
        runs.append(torch.cat([time.unsqueeze(-1), space], dim=-1) + position)
        position += max(h, w) // merge
    for kind, grids in ((1, "image_grids"), (2, "video_grids")):
        if next(pending[kind], None) is not None:
            flags = "is_image" if kind == 1 else "is_video"
            raise ValueError(
                f"{grids} has more {'images' if kind == 1 else 'videos'} than {flags} has runs "
                f"of {'image' if kind == 1 else 'video'} tokens"
                + (
                    " (Qwen3-VL: one run per time step)"
                    if kind == 2 and model_type == "qwen3_vl"
                    else ""
                )
            )
    positions = torch.cat(runs)
    return positions, int(positions.max()) + 1 - len(kinds)


#: How each model resizes its learned position table: (interpolation mode, antialias).
_RESIZES = {"vit": ("bicubic", False), "siglip2": ("bilinear", True)}


def resize_position_table(
    table: torch.Tensor, rows: int, columns: int, *, method: str = "vit"
) -> torch.Tensor:
    """A learned table of patch positions, resized to a grid of ``rows x columns`` patches.

    The table's rows are the patches of a square grid in reading order; they are laid out as an
    image with ``d_model`` channels, interpolated to the new size, and read back in reading
    order (ViT, arXiv 2010.11929 section 3.2, "2D interpolation of the pre-trained position
    embeddings"). A class token's row, if the table has one, is not on the grid: pass the
    table without it and keep that row as it is, as ViT does.

    Args:
        table: float tensor ``(side * side, d_model)``.
        rows, columns: the new grid, in patches (an image of ``H x W`` pixels with patches of
            ``p``: ``H // p`` and ``W // p``).
        method: ``"vit"`` (bicubic, ``align_corners=False``: ``ViTEmbeddings.interpolate_pos_encoding``)
            or ``"siglip2"`` (bilinear with antialiasing, computed in float32:
            ``Siglip2VisionEmbeddings.resize_positional_embeddings``).

    Returns:
        tensor ``(rows * columns, d_model)`` in ``table``'s dtype.

    Raises:
        TypeError: ``table`` not a tensor of a floating dtype; a non-int size; a non-str
            ``method``.
        ValueError: a ``table`` that is not ``(side * side, d_model)`` with ``side >= 1`` and
            ``d_model >= 1``; a size < 1 or beyond ``2**53 - 1``; an unknown ``method``; or a
            resized table that needs more memory than this machine has (refused before anything
            is allocated).
    """
    table = check_instance("table", table, torch.Tensor)
    method = check_choice("method", method, tuple(_RESIZES))
    rows, columns = check_positive_int("rows", rows), check_positive_int("columns", columns)
    if not table.is_floating_point():
        raise TypeError(
            f"table must be a float tensor (side * side, d_model), got dtype {table.dtype}"
        )
    side = math.isqrt(table.shape[0]) if table.dim() == 2 else 0
    if table.dim() != 2 or side == 0 or side * side != table.shape[0] or table.shape[1] == 0:
        raise ValueError(
            f"table must have shape (side * side, d_model) with side >= 1 and d_model >= 1, one "
            f"row per patch of a square grid, got shape {tuple(table.shape)}"
        )
    d_model = table.shape[1]
    mode, antialias = _RESIZES[method]
    work = torch.float32 if antialias else table.dtype
    check_table_size("rows * columns", rows * columns, "d_model", d_model)
    # the interpolated image and its rows in reading order, then the cast back to table's dtype
    entries = rows * columns * d_model
    nbytes = entries * (2 * work.itemsize + (table.element_size() if work != table.dtype else 0))
    what = (
        f"resize_position_table(table of d_model={d_model}, rows={rows}, columns={columns}): "
        f"{entries} {str(table.dtype).removeprefix('torch.')} values"
    )
    check_memory(what, nbytes)
    with naming_allocation(what, nbytes):
        image = table.reshape(side, side, d_model).permute(2, 0, 1).unsqueeze(0)
        if antialias:
            image = image.float()
        resized = F.interpolate(
            image, size=(rows, columns), mode=mode, align_corners=False, antialias=antialias
        )
        return resized[0].permute(1, 2, 0).reshape(rows * columns, d_model).to(table.dtype)
