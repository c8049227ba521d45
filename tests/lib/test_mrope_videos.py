"""Videos in M-RoPE: :func:`pe_lib.grid.mrope_positions` refuses them, and why.

A video's grid has ``t > 1`` time steps. Chapter 13 teaches images only, so ``mrope_positions``
raises a ``ValueError`` that names the grid and what it accepts, instead of placing a video by a
rule the book has not taught. The tests below also pin the two facts about transformers 5.23 that
the chapter and the docstring state, so that an upgrade that changes them fails here:

* Qwen2-VL's ``get_rope_index`` counts a video's merged time steps 0, 1, 2, ... whatever the
  frame rate; Qwen2.5-VL's spaces them by ``tokens_per_second * second_per_grid_ts``;
* both resume the text after a video at ``p + max(rows, columns) / merge``, as after an image,
  even when the video has more time steps than that: the text then shares time positions with
  the video.
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from pe_lib.grid import mrope_positions  # noqa: E402

TEXT = {
    "hidden_size": 64,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "num_hidden_layers": 1,
    "intermediate_size": 64,
    "vocab_size": 100,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 6, 6]},
}
VISION = {"depth": 1, "hidden_size": 32, "num_heads": 2}

# text 2, a video of 4 time steps of 4 x 4 patches (2 x 2 tokens each), text 3
VIDEO_GRID = [4, 4, 4]
KINDS = [0] * 2 + [2] * 16 + [0] * 3


def _rope_index(model: object, **kwargs: object) -> torch.Tensor:
    positions, _ = model.get_rope_index(  # type: ignore[attr-defined]
        torch.zeros(1, len(KINDS), dtype=torch.long),
        torch.tensor([KINDS]),
        video_grid_thw=torch.tensor([VIDEO_GRID]),
        **kwargs,
    )
    return positions[:, 0].T  # (seq_len, 3)


@pytest.fixture(scope="module")
def qwen2_vl() -> object:
    config = transformers.Qwen2VLConfig(vision_config={"embed_dim": 32, **VISION}, text_config=TEXT)
    return transformers.Qwen2VLModel(config)


@pytest.fixture(scope="module")
def qwen2_5_vl() -> object:
    config = transformers.Qwen2_5_VLConfig(
        vision_config={**VISION, "out_hidden_size": 64, "tokens_per_second": 2},
        text_config=TEXT,
    )
    return transformers.Qwen2_5_VLModel(config)


@pytest.mark.parametrize("grid", [[4, 4, 4], [2, 2, 2], [3, 4, 6]])
def test_mrope_positions_refuses_a_video(grid: list[int]) -> None:
    tokens = grid[0] * (grid[1] // 2) * (grid[2] // 2)
    with pytest.raises(ValueError, match=r"image_grids\[1\] = .* has t=\d+ time steps") as error:
        mrope_positions([True] * 6 + [False] + [True] * tokens, [[1, 4, 6], grid])
    message = str(error.value)
    assert "images only (t = 1)" in message and "second_per_grid_ts" in message


def test_an_image_is_still_placed_as_get_rope_index_places_it(qwen2_vl: object) -> None:
    kinds = [0] * 2 + [1] * 6 + [0] * 3
    theirs, delta = qwen2_vl.get_rope_index(  # type: ignore[attr-defined]
        torch.zeros(1, len(kinds), dtype=torch.long),
        torch.tensor([kinds]),
        image_grid_thw=torch.tensor([[1, 4, 6]]),
    )
    ours, our_delta = mrope_positions([bool(kind) for kind in kinds], [[1, 4, 6]])
    assert torch.equal(theirs[:, 0].T, ours) and our_delta == int(delta)


def test_qwen2_vl_counts_time_steps_whatever_the_frame_rate(qwen2_vl: object) -> None:
    plain = _rope_index(qwen2_vl)
    slow = _rope_index(qwen2_vl, second_per_grid_ts=torch.tensor([3.0]))
    assert torch.equal(plain, slow)  # Qwen2-VL takes no frame rate
    video = plain[2:18]
    assert video[:, 0].unique().tolist() == [2, 3, 4, 5]  # p + 0, 1, 2, 3


def test_qwen2_5_vl_spaces_time_steps_by_seconds(qwen2_5_vl: object) -> None:
    for seconds in (1.0, 3.0):
        video = _rope_index(qwen2_5_vl, second_per_grid_ts=torch.tensor([seconds]))[2:18]
        step = int(2 * seconds)  # tokens_per_second * second_per_grid_ts
        assert video[:, 0].unique().tolist() == [2 + step * k for k in range(4)]


@pytest.mark.parametrize("name", ["qwen2_vl", "qwen2_5_vl"])
def test_text_after_a_video_resumes_inside_its_time_positions(
    name: str, request: pytest.FixtureRequest
) -> None:
    positions = _rope_index(request.getfixturevalue(name))
    video, after = positions[2:18], positions[18:]
    # the video starts at p = 2 and its merged grid's larger side is 2: text resumes at 4,
    # on all three axes, although the video's time positions reach 5
    assert after[0].tolist() == [4, 4, 4]
    assert int(video[:, 0].max()) >= int(after[0, 0])
