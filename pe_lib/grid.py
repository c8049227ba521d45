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

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from ._validation import check_choice, check_instance, check_nonnegative_int, check_positive_int

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
    """
    rows, columns = check_positive_int("rows", rows), check_positive_int("columns", columns)
    start, merge = check_nonnegative_int("start", start), check_positive_int("merge", merge)
    if rows % merge or columns % merge:
        raise ValueError(
            f"rows and columns must be multiples of merge={merge}, got rows={rows}, "
            f"columns={columns}"
        )
    row, column = torch.meshgrid(torch.arange(rows), torch.arange(columns), indexing="ij")
    windows = (rows // merge, merge, columns // merge, merge)
    # (window row, row in window, window column, column in window) -> windows first
    order = [
        row.reshape(windows).transpose(1, 2).flatten(),
        column.reshape(windows).transpose(1, 2).flatten(),
    ]
    return torch.stack(order, dim=-1) + start


def _check_grids(grids: object) -> list[tuple[int, int]]:
    if not isinstance(grids, Sequence):
        raise TypeError(f"image_grids must be a sequence of (t, rows, columns), got {grids!r}")
    checked = []
    for n, grid in enumerate(grids):
        if not isinstance(grid, Sequence) or len(grid) != 3:
            raise TypeError(f"image_grids must hold (t, rows, columns) triples, got {grid!r}")
        t, h, w = (check_positive_int("image_grids entry", size) for size in grid)
        if t != 1:
            raise ValueError(
                f"image_grids[{n}] = {tuple(grid)} has t={t} time steps: mrope_positions places "
                f"images only (t = 1), as chapter 13 teaches them; a video's time positions differ "
                f"between models (Qwen2-VL counts its time steps, Qwen2.5-VL spaces them by "
                f"second_per_grid_ts) and are not implemented"
            )
        checked.append((h, w))
    return checked


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
        is_image: one flag per token, True for an image token; each run of image tokens is one
            image.
        image_grids: ``(t, rows, columns)`` of each image in patches before merging, in order
            (the processor's ``image_grid_thw``). ``t`` must be 1: a grid with more time steps
            (a video) raises ``ValueError``.
        merge: the vision tower's ``spatial_merge_size``.

    Returns:
        ``(positions, delta)``: int64 ``(seq_len, 3)`` positions, and the offset a generated
        token's position carries: token ``n`` of the continuation (counting the prompt) sits at
        ``n + delta`` on all three axes.
    """
    merge = check_positive_int("merge", merge)
    flags = torch.as_tensor(is_image)
    if flags.dtype != torch.bool or flags.dim() != 1 or flags.numel() == 0:
        raise TypeError(f"is_image must be a non-empty 1-D sequence of bools, got {is_image!r}")
    grids = iter(_check_grids(image_grids))
    runs: list[torch.Tensor] = []
    position, index, length = 0, 0, flags.numel()
    while index < length:
        end = index
        while end < length and bool(flags[end]) == bool(flags[index]):
            end += 1
        if not flags[index]:
            runs.append(torch.arange(position, position + end - index).unsqueeze(-1).expand(-1, 3))
            position += end - index
        else:
            grid = next(grids, None)
            if grid is None:
                raise ValueError(
                    "is_image has more runs of image tokens than image_grids has images"
                )
            h, w = grid
            if h % merge or w % merge:
                raise ValueError(
                    f"an image's rows and columns must be multiples of merge={merge}, got "
                    f"{(1, h, w)}"
                )
            tokens = (h // merge) * (w // merge)
            if end - index != tokens:
                raise ValueError(
                    f"an image of grid {(1, h, w)} with merge={merge} has {tokens} tokens, but its "
                    f"run in is_image has {end - index}"
                )
            # time p for every token of the image, row p + i and column p + j
            space = grid_positions(h // merge, w // merge)
            time = torch.zeros(tokens, 1, dtype=space.dtype)
            runs.append(torch.cat([time, space], dim=-1) + position)
            position += max(h, w) // merge
        index = end
    if next(grids, None) is not None:
        raise ValueError("image_grids has more images than is_image has runs of image tokens")
    positions = torch.cat(runs)
    return positions, int(positions.max()) + 1 - length


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
    """
    table = check_instance("table", table, torch.Tensor)
    method = check_choice("method", method, tuple(_RESIZES))
    rows, columns = check_positive_int("rows", rows), check_positive_int("columns", columns)
    side = int(round(table.shape[0] ** 0.5)) if table.dim() == 2 else 0
    if table.dim() != 2 or side * side != table.shape[0] or not table.is_floating_point():
        raise ValueError(
            f"table must be a float tensor (side * side, d_model), one row per patch of a square "
            f"grid, got {table.dtype} {tuple(table.shape)}"
        )
    mode, antialias = _RESIZES[method]
    image = table.reshape(side, side, -1).permute(2, 0, 1).unsqueeze(0)
    if antialias:
        image = image.float()
    resized = F.interpolate(
        image, size=(rows, columns), mode=mode, align_corners=False, antialias=antialias
    )
    return resized[0].permute(1, 2, 0).reshape(rows * columns, -1).to(table.dtype)
