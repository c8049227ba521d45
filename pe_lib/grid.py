r"""Positions beyond a line: an image's patches on a grid, and a sequence of text and images.

A vision transformer cuts an image into ``rows x columns`` patches. Its positions are either a
learned table of one row per patch, which a new resolution must *resize*
(:func:`resize_position_table`, as ViT and SigLIP 2 do), or coordinates that an axial RoPE turns
by (:mod:`pe_lib.axial`): :func:`grid_positions` in reading order, in Qwen2-VL's 2x2 merge windows
(``merge=2``), or from 1 as Llama 4's vision encoder counts. :func:`mrope_positions` gives every
token of a text-and-image sequence its (time, row, column) for M-RoPE, as Qwen2-VL's
``get_rope_index`` does for images; it refuses videos, whose time positions differ between models.
"""

from __future__ import annotations

import itertools
import math
import reprlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ._validation import (
    check_choice,
    check_has_values,
    check_instance,
    check_memory,
    check_nonnegative_int,
    check_position_span,
    check_positive_int,
    check_table_size,
    naming_allocation,
)

__all__ = ["grid_positions", "mrope_positions", "resize_position_table"]


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


def _check_grids(grids: object) -> list[tuple[int, int]]:
    """``image_grids`` as ``(rows, columns)`` of each image: a sequence of triples, or an
    integer tensor or array ``(n, 3)`` (the processor's ``image_grid_thw``)."""
    if isinstance(grids, (torch.Tensor, np.ndarray)):
        triples = _integer_array("image_grids", grids, 2, f"of shape (n, 3): {_GRIDS}")
    elif isinstance(grids, Sequence) and not isinstance(grids, (str, bytes)):
        triples = list(grids)
    else:
        raise TypeError(
            f"image_grids must be a sequence of {_GRIDS}, got {reprlib.repr(grids)} of type "
            f"{type(grids).__name__}"
        )
    checked = []
    for n, grid in enumerate(triples):
        name = f"image_grids[{n}]"
        if isinstance(grid, (torch.Tensor, np.ndarray)):
            grid = _integer_array(name, grid, 1, "of shape (3,): (t, rows, columns)")
        if not isinstance(grid, Sequence) or isinstance(grid, (str, bytes)) or len(grid) != 3:
            raise TypeError(
                f"{name} must be a (t, rows, columns) triple of ints, got {reprlib.repr(grid)}"
            )
        t, h, w = (check_positive_int(name, size) for size in grid)
        if t != 1:
            raise ValueError(
                f"{name} = {(t, h, w)} has t={t} time steps: mrope_positions places "
                f"images only (t = 1), as chapter 13 teaches them; a video's time positions differ "
                f"between models (Qwen2-VL counts its time steps, Qwen2.5-VL spaces them by "
                f"second_per_grid_ts) and are not implemented"
            )
        checked.append((h, w))
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


def _check_flags(is_image: object) -> list[bool]:
    """``is_image`` as a list of bools: a non-empty 1-D sequence, array or tensor of bools."""
    expected = "a non-empty 1-D sequence (or tensor) of bools, one per token"
    if isinstance(is_image, torch.Tensor):
        check_has_values("is_image", is_image, expected)
    try:
        flags = torch.as_tensor(is_image)
    except (TypeError, ValueError, RuntimeError):
        flags = None
    if flags is None or flags.dtype != torch.bool or flags.dim() != 1 or flags.numel() == 0:
        raise TypeError(f"is_image must be {expected}, got {reprlib.repr(is_image)}")
    return [bool(flag) for flag in flags.tolist()]


def mrope_positions(
    is_image: Sequence[bool] | torch.Tensor,
    image_grids: Sequence[Sequence[int]],
    *,
    merge: int = 2,
) -> tuple[torch.Tensor, int]:
    """M-RoPE's (time, row, column) of every token of one sequence of text and images.

    A text token at position ``p`` gets ``(p, p, p)``: on text, M-RoPE is RoPE. An image placed
    after text that ended at ``p - 1`` gets ``(p, p + i, p + j)`` for its token at row ``i`` and
    column ``j`` of the merged grid (``rows / merge`` by ``columns / merge``), and the text after
    it resumes at ``p + max(rows, columns) / merge``, so the position grows by the image's larger
    side, not by its number of tokens (Qwen2-VL, arXiv 2409.12191 section 2.1; transformers
    5.23's ``Qwen2VLModel.get_rope_index`` for images).

    Videos are refused: their time positions are not the same in every model (Qwen2-VL's
    ``get_rope_index`` counts the merged time steps, Qwen2.5-VL's multiplies them by
    ``tokens_per_second * second_per_grid_ts``), and in transformers 5.23 the text after a video
    resumes at ``p + max(rows, columns) / merge`` even when the video has more time steps than
    that, so that text shares time positions with the video's last steps.

    Args:
        is_image: one flag per token (a sequence of bools, or a 1-D bool tensor or array), True
            for an image token; each run of image tokens is one image.
        image_grids: ``(t, rows, columns)`` of each image in patches before merging, in order:
            a sequence of triples, or the processor's ``image_grid_thw``, an integer tensor (or
            array) of shape ``(n, 3)``. ``t`` must be 1: a grid with more time steps (a video)
            raises ``ValueError``.
        merge: the vision tower's ``spatial_merge_size``.

    Returns:
        ``(positions, delta)``: int64 ``(seq_len, 3)`` positions, and the offset a generated
        token's position carries: token ``n`` of the continuation (counting the prompt) sits at
        ``n + delta`` on all three axes.

    Raises:
        TypeError: ``is_image`` not a non-empty 1-D collection of bools; ``image_grids`` not
            triples of ints or an integer ``(n, 3)`` tensor; a non-int ``merge``.
        ValueError: a meta tensor (it holds no values to read), a size < 1, a video (``t > 1``),
            sides that are not multiples of ``merge``, an image whose run of tokens in
            ``is_image`` is not ``(rows / merge) * (columns / merge)`` long, or more (or fewer)
            runs of image tokens than grids.
    """
    merge = check_positive_int("merge", merge)
    flags = _check_flags(is_image)
    grids = iter(_check_grids(image_grids))
    runs: list[torch.Tensor] = []
    position = 0
    for image, run in itertools.groupby(flags):
        count = sum(1 for _ in run)
        if not image:
            runs.append(torch.arange(position, position + count).unsqueeze(-1).expand(-1, 3))
            position += count
            continue
        grid = next(grids, None)
        if grid is None:
            raise ValueError("is_image has more runs of image tokens than image_grids has images")
        h, w = grid
        if h % merge or w % merge:
            raise ValueError(
                f"an image's rows and columns must be multiples of merge={merge}, got {(1, h, w)}"
            )
        tokens = (h // merge) * (w // merge)
        if count != tokens:
            raise ValueError(
                f"an image of grid {(1, h, w)} with merge={merge} has {tokens} tokens, but its "
                f"run in is_image has {count}"
            )
        # time p for every token of the image, row p + i and column p + j
        space = grid_positions(h // merge, w // merge)
        time = torch.zeros(tokens, 1, dtype=space.dtype)
        runs.append(torch.cat([time, space], dim=-1) + position)
        position += max(h, w) // merge
    if next(grids, None) is not None:
        raise ValueError("image_grids has more images than is_image has runs of image tokens")
    positions = torch.cat(runs)
    return positions, int(positions.max()) + 1 - len(flags)


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
