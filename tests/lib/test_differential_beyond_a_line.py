"""Chapter 13's functions against transformers 5.23 on random configurations (hypothesis).

``tests/lib/test_beyond_a_line.py`` compares each function with the code that runs its model on
a few chosen settings; here hypothesis draws the settings: sizes, bases, head sizes, sections,
merge sizes, sequences of text and images. Each property builds the transformers piece from a
tiny config (no network, no weights) and asks for equality:

* :func:`pe_lib.encodings.relative_bias.t5_relative_buckets` with ``T5Attention._relative_position_bucket``,
  relative positions up to the library's bound ``±(2**53 - 1)``;
* :func:`pe_lib.encodings.relative_bias.clipped_relative_positions` with Wav2Vec2-BERT's ``relative_key``;
* :func:`pe_lib.models.grid.mrope_positions` with ``Qwen2VLModel.get_rope_index`` on text and images,
  grids given as lists and as the ``image_grid_thw`` tensor the model takes; and on text, images
  and videos with the ``get_rope_index`` of Qwen2-VL, Qwen2.5-VL (seconds per step as a list or
  as the processor's float32 tensor) and Qwen3-VL (each step after its timestamp's text);
* :func:`pe_lib.models.grid.grid_positions` with ``transformers.vision_utils.get_vision_position_ids``;
* :func:`pe_lib.models.grid.resize_position_table` with ``ViTEmbeddings.interpolate_pos_encoding`` and
  ``Siglip2VisionEmbeddings.resize_positional_embeddings``;
* :func:`pe_lib.rope.axial.axial_frequencies` and :func:`pe_lib.rope.axial.axial_angles` with the rotary
  tables of Pixtral, Qwen2-VL's vision tower, Llama 4's vision encoder, Qwen2-VL's M-RoPE and
  Qwen3-VL's interleaved M-RoPE.
"""

from __future__ import annotations

import functools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

transformers = pytest.importorskip("transformers")

from pe_lib.encodings.relative_bias import clipped_relative_positions, t5_relative_buckets  # noqa: E402
from pe_lib.models.grid import grid_positions, mrope_positions, resize_position_table  # noqa: E402
from pe_lib.rope.axial import axial_angles, axial_frequencies  # noqa: E402

#: The largest magnitude of a relative position (and of a coordinate) pe_lib accepts.
BOUND = 2**53 - 1
#: cos and sin that transformers forms in float32 from float32 frequencies, against pe_lib's
#: float64 angles rounded once: a few float32 ulps of an angle up to ~40 rad.
ATOL = 2e-5

EXAMPLES = settings(max_examples=30, deadline=None)
bases = st.floats(min_value=2.0, max_value=1e6, allow_nan=False, allow_infinity=False)


def _tables(angles: torch.Tensor, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of every channel, as the models lay them out ("half": the pairs' angles twice)."""
    if layout == "half":
        angles = torch.cat([angles, angles], dim=-1)
    else:
        angles = angles.repeat_interleave(2, dim=-1)
    return angles.cos().float(), angles.sin().float()


def _assert_tables(
    theirs: tuple[torch.Tensor, torch.Tensor], angles: torch.Tensor, layout: str
) -> None:
    ours = _tables(angles, layout)
    torch.testing.assert_close(theirs[0], ours[0], rtol=0, atol=ATOL)
    torch.testing.assert_close(theirs[1], ours[1], rtol=0, atol=ATOL)


# --- relative positions ------------------------------------------------------------------------


@st.composite
def t5_settings(draw: st.DrawFn) -> tuple[bool, int, int, list[int]]:
    bidirectional = draw(st.booleans())
    buckets = draw(st.integers(4 if bidirectional else 2, 80))
    exact = (buckets // 2 if bidirectional else buckets) // 2
    max_distance = draw(st.integers(exact + 1, 600))
    near = st.integers(-3 * max_distance, 3 * max_distance)
    relative = draw(st.lists(near | st.integers(-BOUND, BOUND), min_size=1, max_size=60))
    return bidirectional, buckets, max_distance, relative


@EXAMPLES
@given(t5_settings())
def test_t5_buckets_equal_transformers(setting: tuple[bool, int, int, list[int]]) -> None:
    from transformers.models.t5.modeling_t5 import T5Attention

    bidirectional, buckets, max_distance, relative = setting
    positions = torch.tensor(relative)
    theirs = T5Attention._relative_position_bucket(positions, bidirectional, buckets, max_distance)
    ours = t5_relative_buckets(
        positions, bidirectional=bidirectional, num_buckets=buckets, max_distance=max_distance
    )
    assert torch.equal(theirs, ours)


@EXAMPLES
@given(st.integers(-(2**63), -BOUND - 1) | st.integers(BOUND + 1, 2**63 - 1), st.booleans())
def test_t5_refuses_what_no_two_positions_are_apart(value: int, bidirectional: bool) -> None:
    with pytest.raises(ValueError, match=r"relative_position must be .* at most 2\*\*53 - 1"):
        t5_relative_buckets(torch.tensor([0, value]), bidirectional=bidirectional)


@EXAMPLES
@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 8))
def test_clipped_relative_positions_equal_wav2vec2_bert(q_len: int, k_len: int, k: int) -> None:
    # Wav2Vec2-BERT's "relative_key" attention reads row clip(j - i, -k, k) + k of its table;
    # a table whose row n holds n in channel 0 turns the bias into that index.
    from transformers.models.wav2vec2_bert import modeling_wav2vec2_bert as w2v_bert

    config = transformers.Wav2Vec2BertConfig(
        hidden_size=8,
        num_attention_heads=1,
        position_embeddings_type="relative_key",
        left_max_position_embeddings=k,
        right_max_position_embeddings=k,
    )
    attention = w2v_bert.Wav2Vec2BertSelfAttention(config)
    with torch.no_grad():
        attention.distance_embedding.weight.zero_()
        attention.distance_embedding.weight[:, 0] = torch.arange(2 * k + 1)
    query = torch.zeros(1, 1, q_len, 8)
    query[..., 0] = 1.0
    _, bias = w2v_bert._apply_relative_key_position_encoding(
        attention, query, torch.zeros(1, 1, k_len, 8)
    )
    index = (bias[0, 0] / attention.scaling).round().long()
    assert torch.equal(index, clipped_relative_positions(q_len, k_len, k))


# --- M-RoPE's positions ------------------------------------------------------------------------


@functools.cache
def _qwen2_vl(merge: int) -> object:
    config = transformers.Qwen2VLConfig(
        vision_config={
            "embed_dim": 16,
            "num_heads": 2,
            "depth": 1,
            "hidden_size": 16,
            "spatial_merge_size": merge,
        },
        text_config={
            "hidden_size": 16,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "num_hidden_layers": 1,
            "intermediate_size": 16,
            "vocab_size": 8,
            "rope_parameters": {"rope_type": "default", "mrope_section": [1, 1, 2]},
        },
    )
    return transformers.Qwen2VLModel(config)


@st.composite
def text_and_images(draw: st.DrawFn) -> tuple[int, list[int], list[list[int]]]:
    """(merge, kinds: 0 text and 1 image per token, image grids): text between two images."""
    merge = draw(st.sampled_from([1, 2, 3]))
    images = draw(st.integers(0, 3))
    kinds = [0] * draw(st.integers(0 if images else 1, 5))
    grids = []
    for n in range(images):
        rows, columns = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        grids.append([1, rows * merge, columns * merge])
        kinds += [1] * (rows * columns) + [0] * draw(st.integers(int(n < images - 1), 5))
    return merge, kinds, grids


@EXAMPLES
@given(text_and_images(), st.sampled_from(["list", "tensor", "int32 tensor"]))
def test_mrope_positions_equal_get_rope_index(
    sequence: tuple[int, list[int], list[list[int]]], given_as: str
) -> None:
    merge, kinds, grids = sequence
    thw = torch.tensor(grids, dtype=torch.int64).reshape(-1, 3)
    theirs, delta = _qwen2_vl(merge).get_rope_index(  # type: ignore[attr-defined]
        torch.zeros(1, len(kinds), dtype=torch.long),
        torch.tensor([kinds]),
        image_grid_thw=thw if grids else None,
    )
    image_grids = {"list": grids, "tensor": thw, "int32 tensor": thw.int()}[given_as]
    ours, our_delta = mrope_positions([bool(kind) for kind in kinds], image_grids, merge=merge)
    assert torch.equal(theirs[:, 0].T, ours)
    assert our_delta == int(delta)


_TINY_TEXT = {
    "hidden_size": 16,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "num_hidden_layers": 1,
    "intermediate_size": 16,
    "vocab_size": 8,
    "rope_parameters": {"rope_type": "default", "mrope_section": [1, 1, 2]},
}


@functools.cache
def _video_model(model_type: str, merge: int, tokens_per_second: int) -> object:
    """A tiny model of ``model_type`` whose ``get_rope_index`` places videos."""
    if model_type == "qwen2_vl":
        return _qwen2_vl(merge)
    vision = {
        "depth": 1,
        "hidden_size": 16,
        "num_heads": 2,
        "intermediate_size": 16,
        "out_hidden_size": 16,
        "spatial_merge_size": merge,
    }
    if model_type == "qwen2_5_vl":
        config = transformers.Qwen2_5_VLConfig(
            vision_config={**vision, "tokens_per_second": tokens_per_second},
            text_config=_TINY_TEXT,
        )
        return transformers.Qwen2_5_VLModel(config)
    rope = {**_TINY_TEXT["rope_parameters"], "mrope_interleaved": True}  # type: ignore[dict-item]
    config = transformers.Qwen3VLConfig(
        vision_config={**vision, "deepstack_visual_indexes": [0]},
        text_config={**_TINY_TEXT, "rope_parameters": rope},
    )
    return transformers.Qwen3VLModel(config)


@st.composite
def text_images_and_videos(draw: st.DrawFn) -> dict[str, object]:
    """A sequence of text, images and videos for one of the three models: kinds (0 text, 1
    image, 2 video) per token, grids, and Qwen2.5-VL's seconds per step. A Qwen3-VL video's
    steps each follow text (their timestamps), as its processor writes them."""
    model_type = draw(st.sampled_from(["qwen2_vl", "qwen2_5_vl", "qwen3_vl"]))
    merge = draw(st.sampled_from([1, 2, 3]))
    kinds = [0] * draw(st.integers(0, 3))
    images: list[list[int]] = []
    videos: list[list[int]] = []
    seconds: list[float] = []
    for _ in range(draw(st.integers(1, 3))):
        rows, columns = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        tokens = rows * columns
        if draw(st.booleans()):
            images.append([1, rows * merge, columns * merge])
            kinds += [1] * tokens
        else:
            steps = draw(st.integers(1, 6))
            videos.append([steps, rows * merge, columns * merge])
            # fps from 0.25 to 8 at two frames per step, as the processor computes it
            seconds.append(2 / draw(st.sampled_from([0.25, 0.5, 1.0, 2.0, 3.0, 24 / 5, 8.0])))
            if model_type == "qwen3_vl":
                for _ in range(steps):
                    kinds += [0] * draw(st.integers(1, 3)) + [2] * tokens
            else:
                kinds += [2] * (steps * tokens)
        kinds += [0] * draw(st.integers(1, 3))
    return {
        "model_type": model_type,
        "merge": merge,
        "kinds": kinds,
        "images": images,
        "videos": videos,
        "seconds": seconds,
        "tokens_per_second": draw(st.sampled_from([1, 2, 4, 25])),
    }


@EXAMPLES
@given(text_images_and_videos(), st.sampled_from(["list", "tensor"]))
def test_video_positions_equal_each_models_get_rope_index(
    sequence: dict[str, object], given_as: str
) -> None:
    model_type, merge = str(sequence["model_type"]), int(sequence["merge"])  # type: ignore[call-overload]
    kinds: list[int] = sequence["kinds"]  # type: ignore[assignment]
    images: list[list[int]] = sequence["images"]  # type: ignore[assignment]
    videos: list[list[int]] = sequence["videos"]  # type: ignore[assignment]
    per_second: int = sequence["tokens_per_second"]  # type: ignore[assignment]
    seconds: object = sequence["seconds"]
    if given_as == "tensor":
        seconds = torch.tensor(seconds)  # float32, as the processor returns it
    theirs_kwargs: dict[str, object] = {
        "image_grid_thw": torch.tensor(images) if images else None,
        "video_grid_thw": torch.tensor(videos) if videos else None,
    }
    ours_kwargs: dict[str, object] = {}
    if model_type == "qwen2_5_vl" and videos:
        theirs_kwargs["second_per_grid_ts"] = seconds
        ours_kwargs = {"second_per_grid_ts": seconds, "tokens_per_second": per_second}
    model = _video_model(model_type, merge, per_second)
    theirs, delta = model.get_rope_index(  # type: ignore[attr-defined]
        torch.zeros(1, len(kinds), dtype=torch.long), torch.tensor([kinds]), **theirs_kwargs
    )
    grids = {"list": videos, "tensor": torch.tensor(videos, dtype=torch.int64).reshape(-1, 3)}
    ours, our_delta = mrope_positions(
        [kind == 1 for kind in kinds],
        images,
        is_video=[kind == 2 for kind in kinds],
        video_grids=grids[given_as],
        merge=merge,
        model_type=model_type,
        **ours_kwargs,  # type: ignore[arg-type]
    )
    assert torch.equal(theirs[:, 0].T, ours)
    assert our_delta == int(delta)


@EXAMPLES
@given(st.integers(1, 6), st.integers(1, 6), st.sampled_from([1, 2, 3]))
def test_grid_positions_equal_get_vision_position_ids(rows: int, columns: int, merge: int) -> None:
    from transformers.vision_utils import get_vision_position_ids

    grid = torch.tensor([[1, rows * merge, columns * merge]])
    theirs = get_vision_position_ids(grid, merge)
    assert torch.equal(theirs, grid_positions(rows * merge, columns * merge, merge=merge))


# --- a learned table on a new grid -------------------------------------------------------------


@EXAMPLES
@given(
    st.integers(1, 6), st.integers(1, 8), st.integers(1, 12), st.integers(1, 12), st.integers(0, 99)
)
def test_resize_equals_vit(side: int, d_model: int, rows: int, columns: int, seed: int) -> None:
    from transformers.models.vit.modeling_vit import ViTEmbeddings

    torch.manual_seed(seed)
    config = transformers.ViTConfig(
        image_size=4 * side, patch_size=4, hidden_size=d_model, num_attention_heads=1
    )
    embeddings = ViTEmbeddings(config)
    torch.nn.init.normal_(embeddings.position_embeddings)
    theirs = embeddings.interpolate_pos_encoding(
        torch.zeros(1, rows * columns + 1, d_model), 4 * rows, 4 * columns
    )
    table = embeddings.position_embeddings.detach()[0, 1:]
    ours = resize_position_table(table, rows, columns)
    torch.testing.assert_close(theirs.detach()[0, 1:], ours, rtol=0, atol=1e-5)


@EXAMPLES
@given(
    st.integers(1, 6),
    st.integers(1, 8),
    st.lists(st.tuples(st.integers(1, 9), st.integers(1, 9)), min_size=1, max_size=3),
    st.integers(0, 99),
)
def test_resize_equals_siglip2(
    side: int, d_model: int, shapes: list[tuple[int, int]], seed: int
) -> None:
    from transformers.models.siglip2.modeling_siglip2 import Siglip2VisionEmbeddings

    torch.manual_seed(seed)
    table = torch.randn(side * side, d_model)
    longest = max(rows * columns for rows, columns in shapes)
    theirs = Siglip2VisionEmbeddings.resize_positional_embeddings(
        table.reshape(side, side, d_model), torch.tensor(shapes), longest
    )
    for n, (rows, columns) in enumerate(shapes):
        ours = resize_position_table(table, rows, columns, method="siglip2")
        torch.testing.assert_close(theirs[n, : rows * columns], ours, rtol=0, atol=1e-5)


# --- axial RoPE --------------------------------------------------------------------------------

head_dims = st.integers(1, 16).map(lambda k: 4 * k)


@EXAMPLES
@given(head_dims, bases, st.integers(1, 7), st.integers(1, 7))
def test_pixtral_tables(head_dim: int, base: float, rows: int, columns: int) -> None:
    from transformers.models.pixtral.modeling_pixtral import PixtralVisionRotaryEmbedding

    config = transformers.PixtralVisionConfig(
        hidden_size=2 * head_dim,
        num_attention_heads=2,
        head_dim=head_dim,
        rope_parameters={"rope_type": "axial", "rope_theta": base},
    )
    positions = grid_positions(rows, columns)
    theirs = PixtralVisionRotaryEmbedding(config)(torch.zeros(1), positions)
    frequencies = axial_frequencies("pixtral", head_dim, base=base)
    _assert_tables(theirs, axial_angles(positions, frequencies), frequencies.layout)


@EXAMPLES
@given(head_dims, bases, st.integers(1, 5), st.integers(1, 5), st.sampled_from([1, 2]))
def test_qwen2_vl_vision_tables(
    head_dim: int, base: float, rows: int, columns: int, merge: int
) -> None:
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLVisionRotaryEmbedding

    vision = transformers.Qwen2VLConfig(
        vision_config={
            "embed_dim": 2 * head_dim,
            "num_heads": 2,
            "spatial_merge_size": merge,
            "rope_parameters": {"rope_type": "axial", "rope_theta": base},
        }
    ).vision_config
    positions = grid_positions(rows * merge, columns * merge, merge=merge)
    theirs = Qwen2VLVisionRotaryEmbedding(vision)(torch.zeros(1), positions)
    frequencies = axial_frequencies("qwen2_vl_vision", head_dim, base=base)
    _assert_tables(theirs, axial_angles(positions, frequencies), frequencies.layout)


@EXAMPLES
@given(head_dims, bases, st.integers(1, 6))
def test_llama4_vision_tables(head_dim: int, base: float, side: int) -> None:
    from transformers.models.llama4.modeling_llama4 import Llama4VisionRotaryEmbedding

    config = transformers.Llama4VisionConfig(
        hidden_size=2 * head_dim,
        num_attention_heads=2,
        image_size=4 * side,
        patch_size=4,
        rope_parameters={"rope_type": "default", "rope_theta": base},
    )
    freqs_ci = Llama4VisionRotaryEmbedding(config).freqs_ci[:, 0]
    # (x, y) = (column, row) from 1; the class token, last, at (0, 0)
    xy = grid_positions(side, side, start=1).flip(-1)
    positions = torch.cat([xy, torch.zeros(1, 2, dtype=torch.int64)])
    angles = axial_angles(positions, axial_frequencies("llama4_vision", head_dim, base=base))
    torch.testing.assert_close(freqs_ci.real, angles.cos().float(), rtol=0, atol=ATOL)
    torch.testing.assert_close(freqs_ci.imag, angles.sin().float(), rtol=0, atol=ATOL)


@st.composite
def mrope_settings(draw: st.DrawFn) -> tuple[str, list[int], float, tuple[int, list[int], list]]:
    name = draw(st.sampled_from(["mrope", "mrope_interleaved"]))
    sections = draw(st.lists(st.integers(1, 8), min_size=3, max_size=3))
    return name, sections, draw(bases), draw(text_and_images())


@EXAMPLES
@given(mrope_settings(), st.sampled_from(["list", "numpy"]))
def test_mrope_tables_equal_qwen2_vl_and_qwen3_vl(
    setting: tuple[str, list[int], float, tuple[int, list[int], list]], sections_as: str
) -> None:
    import numpy as np
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding

    name, sections, base, (merge, kinds, grids) = setting
    head_dim = 2 * sum(sections)
    parameters = {"rope_type": "default", "rope_theta": base, "mrope_section": sections}
    text = {"hidden_size": 2 * head_dim, "num_attention_heads": 2, "head_dim": head_dim}
    if name == "mrope":
        config = transformers.Qwen2VLConfig(
            text_config={**text, "rope_parameters": parameters}
        ).text_config
        module: torch.nn.Module = Qwen2VLRotaryEmbedding(config)
    else:
        config = transformers.Qwen3VLConfig(
            text_config={**text, "rope_parameters": parameters}
        ).text_config
        module = Qwen3VLTextRotaryEmbedding(config)
    positions, _ = mrope_positions([bool(kind) for kind in kinds], grids, merge=merge)
    cos, sin = module(torch.zeros(1), positions.T.unsqueeze(1))
    given_sections = np.array(sections) if sections_as == "numpy" else sections
    frequencies = axial_frequencies(name, head_dim, base=base, sections=given_sections)
    _assert_tables((cos[0], sin[0]), axial_angles(positions, frequencies), "half")
