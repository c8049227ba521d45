"""Positions beyond a line (chapter 13), each equal to the transformers 5.23 code that runs it.

Every test builds the transformers piece from a tiny config (no network, no weights) and compares:

* ViT's ``ViTEmbeddings.interpolate_pos_encoding`` and SigLIP 2's
  ``Siglip2VisionEmbeddings.resize_positional_embeddings`` with :func:`pe_lib.models.grid.resize_position_table`;
* Pixtral's ``PixtralVisionRotaryEmbedding``, Qwen2-VL's ``Qwen2VLVisionRotaryEmbedding`` (with
  ``transformers.vision_utils.get_vision_position_ids``) and Llama 4's
  ``Llama4VisionRotaryEmbedding`` with :mod:`pe_lib.rope.axial` at :func:`pe_lib.models.grid.grid_positions`;
* Qwen2-VL's ``Qwen2VLModel.get_rope_index`` and ``Qwen2VLRotaryEmbedding``, Qwen3-VL's
  ``Qwen3VLTextRotaryEmbedding``, with :func:`pe_lib.models.grid.mrope_positions` and M-RoPE's angles
  (videos: ``tests/lib/test_mrope_videos.py``), and every bad video argument named;
* T5's ``T5Attention._relative_position_bucket`` and ``compute_bias`` with
  :func:`pe_lib.encodings.relative_bias.t5_relative_buckets`;
* Wav2Vec2-BERT's ``relative_key`` attention (Shaw et al.'s clipped distances, for keys) with
  :func:`pe_lib.encodings.relative_bias.clipped_relative_positions`.
"""

from __future__ import annotations

import math

import pytest
import torch

transformers = pytest.importorskip("transformers")

from pe_lib.encodings.relative_bias import clipped_relative_positions, t5_relative_buckets  # noqa: E402
from pe_lib.models.grid import grid_positions, mrope_positions, resize_position_table  # noqa: E402
from pe_lib.rope import rotate  # noqa: E402
from pe_lib.rope.axial import AXIAL_LAYOUTS, axial_angles, axial_frequencies  # noqa: E402

#: cos and sin that transformers forms in float32 from float32 frequencies, against pe_lib's
#: float64 angles rounded once: a few float32 ulps of an angle up to ~30 rad.
ATOL = 1e-5


def _tables(angles: torch.Tensor, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of every channel, as the models lay them out ("half": the pairs' angles twice)."""
    if layout == "half":
        angles = torch.cat([angles, angles], dim=-1)
    else:
        angles = angles.repeat_interleave(2, dim=-1)
    return angles.cos().float(), angles.sin().float()


# --- a learned table on a new grid ---------------------------------------------------------


@pytest.mark.parametrize("size", [(32, 32), (48, 64), (16, 40)])
def test_resize_equals_vit_interpolate_pos_encoding(size: tuple[int, int]) -> None:
    from transformers.models.vit.modeling_vit import ViTEmbeddings

    torch.manual_seed(0)
    config = transformers.ViTConfig(image_size=32, patch_size=8, hidden_size=12)
    embeddings = ViTEmbeddings(config)
    torch.nn.init.normal_(embeddings.position_embeddings)
    height, width = size
    patches = (height // 8) * (width // 8)
    theirs = embeddings.interpolate_pos_encoding(torch.zeros(1, patches + 1, 12), height, width)
    table = embeddings.position_embeddings.detach()[0]
    ours = resize_position_table(table[1:], height // 8, width // 8)
    torch.testing.assert_close(theirs[0, 0], table[0])  # the class token is left alone
    torch.testing.assert_close(theirs.detach()[0, 1:], ours, rtol=0, atol=1e-6)


def test_resize_equals_siglip2() -> None:
    from transformers.models.siglip2.modeling_siglip2 import Siglip2VisionEmbeddings

    torch.manual_seed(1)
    table = torch.randn(16, 10)
    shapes = torch.tensor([[3, 7], [6, 2], [4, 4]])
    theirs = Siglip2VisionEmbeddings.resize_positional_embeddings(
        table.reshape(4, 4, 10), shapes, 21
    )
    for row, (rows, columns) in enumerate(shapes.tolist()):
        ours = resize_position_table(table, rows, columns, method="siglip2")
        torch.testing.assert_close(theirs[row, : rows * columns], ours, rtol=0, atol=1e-6)


def test_resize_to_the_same_grid_is_the_identity_for_vit() -> None:
    table = torch.randn(25, 6, dtype=torch.float64)
    torch.testing.assert_close(resize_position_table(table, 5, 5), table)


# --- two-dimensional RoPE -------------------------------------------------------------------


def test_pixtral_rotary_tables() -> None:
    from transformers.models.pixtral.modeling_pixtral import PixtralVisionRotaryEmbedding

    config = transformers.PixtralVisionConfig(
        hidden_size=64,
        num_attention_heads=2,
        head_dim=32,
        intermediate_size=32,
        num_hidden_layers=1,
    )
    positions = grid_positions(5, 7)
    cos, sin = PixtralVisionRotaryEmbedding(config)(torch.zeros(1), positions)
    frequencies = axial_frequencies("pixtral", 32, base=config.rope_parameters["rope_theta"])
    ours = _tables(axial_angles(positions, frequencies), frequencies.layout)
    torch.testing.assert_close(cos, ours[0], rtol=0, atol=ATOL)
    torch.testing.assert_close(sin, ours[1], rtol=0, atol=ATOL)


def test_qwen2_vl_vision_positions_and_tables() -> None:
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLVisionRotaryEmbedding
    from transformers.vision_utils import get_vision_position_ids

    config = transformers.Qwen2VLConfig(vision_config={"embed_dim": 64, "num_heads": 2, "depth": 1})
    vision = config.vision_config
    positions = get_vision_position_ids(torch.tensor([[1, 6, 4]]), vision.spatial_merge_size)
    assert torch.equal(positions, grid_positions(6, 4, merge=vision.spatial_merge_size))
    cos, sin = Qwen2VLVisionRotaryEmbedding(vision)(torch.zeros(1), positions)
    frequencies = axial_frequencies(
        "qwen2_vl_vision", 32, base=vision.rope_parameters["rope_theta"]
    )
    ours = _tables(axial_angles(positions, frequencies), frequencies.layout)
    torch.testing.assert_close(cos, ours[0], rtol=0, atol=ATOL)
    torch.testing.assert_close(sin, ours[1], rtol=0, atol=ATOL)


def test_llama4_vision_tables() -> None:
    from transformers.models.llama4.modeling_llama4 import Llama4VisionRotaryEmbedding

    config = transformers.Llama4VisionConfig(
        hidden_size=64, num_attention_heads=2, image_size=56, patch_size=14, num_hidden_layers=1
    )
    freqs_ci = Llama4VisionRotaryEmbedding(config).freqs_ci[:, 0]  # (patches + 1, pairs) complex
    side = config.image_size // config.patch_size
    # (x, y) = (column, row), counted from 1; the class token, last, at (0, 0): angle 0.
    xy = grid_positions(side, side, start=1).flip(-1)
    positions = torch.cat([xy, torch.zeros(1, 2, dtype=torch.int64)])
    frequencies = axial_frequencies("llama4_vision", 32, base=config.rope_parameters["rope_theta"])
    angles = axial_angles(positions, frequencies)
    torch.testing.assert_close(freqs_ci.real, angles.cos().float(), rtol=0, atol=ATOL)
    torch.testing.assert_close(freqs_ci.imag, angles.sin().float(), rtol=0, atol=ATOL)


@pytest.mark.parametrize("name", ["pixtral", "qwen2_vl_vision", "llama4_vision"])
def test_the_score_depends_on_the_2d_offset_only(name: str) -> None:
    torch.manual_seed(2)
    frequencies = axial_frequencies(name, 16, base=100.0)
    q, k = torch.randn(16, dtype=torch.float64), torch.randn(16, dtype=torch.float64)

    def score(query_at: tuple[int, int], key_at: tuple[int, int]) -> float:
        positions = torch.tensor([query_at, key_at])
        angles = axial_angles(positions, frequencies)
        rotated = rotate(torch.stack([q, k]), angles.cos(), angles.sin(), frequencies.layout)
        return float(rotated[0] @ rotated[1])

    assert score((3, 5), (1, 2)) == pytest.approx(score((10, 9), (8, 6)), abs=1e-12)
    assert score((3, 5), (1, 2)) != pytest.approx(score((3, 5), (2, 1)), abs=1e-6)


# --- M-RoPE -----------------------------------------------------------------------------------


def _qwen2_vl(sections: list[int]) -> object:
    config = transformers.Qwen2VLConfig(
        vision_config={"embed_dim": 32, "num_heads": 2, "depth": 1, "hidden_size": 32},
        text_config={
            "hidden_size": 64,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "num_hidden_layers": 1,
            "intermediate_size": 64,
            "vocab_size": 100,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": sections,
            },
        },
    )
    return transformers.Qwen2VLModel(config)


def test_mrope_positions_equal_get_rope_index() -> None:
    model = _qwen2_vl([4, 6, 6])
    # text 3, an image of 4 x 6 patches (2 x 3 tokens), text 4, an image of 2 x 8 (1 x 4), text 2
    kinds = [0] * 3 + [1] * 6 + [0] * 4 + [1] * 4 + [0] * 2
    grids = [[1, 4, 6], [1, 2, 8]]
    theirs, delta = model.get_rope_index(
        torch.zeros(1, len(kinds), dtype=torch.long),
        torch.tensor([kinds]),
        image_grid_thw=torch.tensor(grids),
    )
    ours, our_delta = mrope_positions([bool(kind) for kind in kinds], grids, merge=2)
    assert torch.equal(theirs[:, 0].T, ours)
    assert our_delta == int(delta)


def test_mrope_tables_equal_qwen2_vl_and_qwen3_vl() -> None:
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding

    positions, _ = mrope_positions([False] * 2 + [True] * 6 + [False] * 3, [[1, 4, 6]])
    qwen2 = Qwen2VLRotaryEmbedding(_qwen2_vl([4, 6, 6]).config.text_config)
    qwen3_config = transformers.Qwen3VLConfig(
        text_config={
            "hidden_size": 64,
            "num_attention_heads": 2,
            "head_dim": 32,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 5000.0,
                "mrope_section": [6, 5, 5],
            },
        }
    ).text_config
    qwen3 = Qwen3VLTextRotaryEmbedding(qwen3_config)
    for module, name, sections, base in (
        (qwen2, "mrope", [4, 6, 6], 10000.0),
        (qwen3, "mrope_interleaved", [6, 5, 5], 5000.0),
    ):
        cos, sin = module(torch.zeros(1), positions.T.unsqueeze(1))
        frequencies = axial_frequencies(name, 32, base=base, sections=sections)
        ours = _tables(axial_angles(positions, frequencies), "half")
        torch.testing.assert_close(cos[0], ours[0], rtol=0, atol=ATOL)
        torch.testing.assert_close(sin[0], ours[1], rtol=0, atol=ATOL)


def test_on_text_mrope_is_rope() -> None:
    positions, delta = mrope_positions([False] * 9, [])
    assert delta == 0
    frequencies = axial_frequencies("mrope_interleaved", 128, base=10000.0)
    from pe_lib.rope import rope_angles

    torch.testing.assert_close(
        axial_angles(positions, frequencies), rope_angles(torch.arange(9), 128)
    )


# --- relative biases --------------------------------------------------------------------------


#: Settings where T5's float32 logarithm and a float64 one give different buckets (the rounding
#: of a quotient that is an integer in exact arithmetic): the comparison with transformers
#: then checks that pe_lib computes in float32 as the model does.
ROUNDING_MATTERS = [(18, 128, True), (34, 27, True), (36, 32, False)]


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize(
    ("buckets", "distance"), [(32, 128), (16, 40), (64, 300), (18, 128), (34, 27), (36, 32)]
)
def test_t5_buckets_equal_transformers(bidirectional: bool, buckets: int, distance: int) -> None:
    from transformers.models.t5.modeling_t5 import T5Attention

    relative = torch.arange(-1000, 1001)
    theirs = T5Attention._relative_position_bucket(relative, bidirectional, buckets, distance)
    ours = t5_relative_buckets(
        relative, bidirectional=bidirectional, num_buckets=buckets, max_distance=distance
    )
    assert torch.equal(theirs, ours)


def _buckets_in_float64(distance: torch.Tensor, side: int, max_distance: int) -> torch.Tensor:
    """One side's bucket of each distance, T5's formula with the logarithm in float64."""
    exact = side // 2
    scaled = torch.log(distance.double() / exact) / math.log(max_distance / exact) * (side - exact)
    far = (exact + scaled.to(torch.int64)).clamp(max=side - 1)
    return torch.where(distance < exact, distance, far)


@pytest.mark.parametrize(("buckets", "distance", "bidirectional"), ROUNDING_MATTERS)
def test_t5_buckets_in_float64_would_differ(
    buckets: int, distance: int, bidirectional: bool
) -> None:
    distances = torch.arange(0, 1001)
    side = buckets // 2 if bidirectional else buckets
    ours = t5_relative_buckets(
        -distances, bidirectional=bidirectional, num_buckets=buckets, max_distance=distance
    )
    assert not torch.equal(ours, _buckets_in_float64(distances, side, distance))


def test_t5_published_buckets_are_the_same_in_float64() -> None:
    # T5's own setting (32 buckets, 128): no distance up to 100,000 moves in float64.
    distances = torch.arange(0, 100_001)
    for bidirectional, side in ((True, 16), (False, 32)):
        ours = t5_relative_buckets(-distances, bidirectional=bidirectional)
        assert torch.equal(ours, _buckets_in_float64(distances, side, 128))


def _starts(buckets: torch.Tensor, distances: torch.Tensor) -> list[int]:
    """The distances at which a new bucket begins."""
    return distances[1:][buckets[1:] != buckets[:-1]].tolist()


def test_t5_bucket_starts() -> None:
    distances = torch.arange(0, 300)
    # The encoder's keys after the query (buckets 16 .. 31): T5's published boundaries.
    assert _starts(t5_relative_buckets(distances), distances)[7:] == [8, 12, 16, 23, 32, 46, 64, 91]
    # The decoder's 32 one-sided buckets: 16 exact, then 16 * 8 ** (k / 16) rounded up.
    decoder = _starts(t5_relative_buckets(-distances, bidirectional=False), distances)
    assert decoder[:15] == list(range(1, 16))
    assert decoder[15:] == [16] + [math.ceil(16 * 8 ** (k / 16)) for k in range(1, 16)]


def test_t5_first_layer_owns_the_table() -> None:
    torch.manual_seed(3)
    config = transformers.T5Config(
        vocab_size=32,
        d_model=16,
        d_kv=4,
        d_ff=16,
        num_layers=2,
        num_heads=4,
        relative_attention_num_buckets=32,
    )
    model = transformers.T5Model(config).eval()
    owners = [
        block.layer[0].SelfAttention.has_relative_attention_bias for block in model.encoder.block
    ]
    assert owners == [True, False]
    attention = model.encoder.block[0].layer[0].SelfAttention
    bias = attention.compute_bias(7, 11)[0]  # (heads, q_len, k_len)
    buckets = t5_relative_buckets(torch.arange(11)[None, :] - torch.arange(7)[:, None])
    ours = attention.relative_attention_bias.weight[buckets].permute(2, 0, 1)
    torch.testing.assert_close(bias, ours)


def test_clipped_relative_positions() -> None:
    index = clipped_relative_positions(4, 6, 2)
    assert index.tolist()[0] == [2, 3, 4, 4, 4, 4]
    assert index.tolist()[3] == [0, 0, 1, 2, 3, 4]


@pytest.mark.parametrize(("q_len", "k_len", "k"), [(7, 7, 2), (5, 12, 3), (9, 4, 6)])
def test_clipped_relative_positions_equal_wav2vec2_bert(q_len: int, k_len: int, k: int) -> None:
    # Wav2Vec2-BERT's "relative_key" attention clips j - i to [-left, right] and reads a learned
    # vector per clipped distance (Shaw et al.'s keys); with left = right = k, Shaw's index.
    from transformers.models.wav2vec2_bert import modeling_wav2vec2_bert as w2v_bert

    config = transformers.Wav2Vec2BertConfig(
        hidden_size=16,
        num_attention_heads=1,
        position_embeddings_type="relative_key",
        left_max_position_embeddings=k,
        right_max_position_embeddings=k,
    )
    attention = w2v_bert.Wav2Vec2BertSelfAttention(config)
    with torch.no_grad():  # row n of the table holds n in channel 0: the bias reads the index
        attention.distance_embedding.weight.zero_()
        attention.distance_embedding.weight[:, 0] = torch.arange(2 * k + 1)
    query = torch.zeros(1, 1, q_len, 16)
    query[..., 0] = 1.0
    _, bias = w2v_bert._apply_relative_key_position_encoding(
        attention, query, torch.zeros(1, 1, k_len, 16)
    )
    index = (bias[0, 0] / attention.scaling).round().long()
    assert torch.equal(index, clipped_relative_positions(q_len, k_len, k))


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: axial_frequencies("pixtral", 30, base=100.0), ValueError, "head_dim"),
        (lambda: axial_frequencies("rope2d", 32, base=100.0), ValueError, "name"),
        (
            lambda: axial_frequencies("mrope", 32, base=100.0, sections=(4, 4, 4)),
            ValueError,
            "sections",
        ),
        (
            lambda: axial_frequencies("pixtral", 32, base=100.0, sections=(8, 4, 4)),
            ValueError,
            "sections",
        ),
        (
            lambda: axial_angles(
                torch.zeros(3, 3, dtype=torch.int64), axial_frequencies("pixtral", 8, base=9.0)
            ),
            TypeError,
            "positions",
        ),
        (lambda: grid_positions(5, 4, merge=2), ValueError, "merge"),
        (lambda: grid_positions(0, 4), ValueError, "rows"),
        (lambda: mrope_positions([True] * 5, [[1, 4, 4]]), ValueError, "4 tokens"),
        (lambda: mrope_positions([False, True], []), ValueError, "image_grids"),
        (lambda: mrope_positions([False], [[1, 2, 2]]), ValueError, "image_grids"),
        (lambda: resize_position_table(torch.zeros(10, 4), 3, 3), ValueError, "table"),
        (
            lambda: resize_position_table(torch.zeros(9, 4), 3, 3, method="nearest"),
            ValueError,
            "method",
        ),
        (lambda: t5_relative_buckets(torch.arange(4.0)), TypeError, "relative_position"),
        (lambda: t5_relative_buckets(torch.arange(4), num_buckets=2), ValueError, "num_buckets"),
        (lambda: clipped_relative_positions(3, 3, 0), ValueError, "max_distance"),
    ],
)
def test_bad_input_names_the_argument(call: object, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        call()  # type: ignore[operator]


# a video of 2 steps of 2 x 2 patches (one token each with merge 2), between text
_VIDEO = [False, True, True, False]


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        (
            {"is_video": [True, True]},
            ValueError,
            r"is_video must have one flag per token, .* got 2 flags",
        ),
        ({"is_video": [1, 0, 0, 0]}, TypeError, "is_video must be a non-empty 1-D"),
        ({"video_grids": [[2, 2, 2]]}, ValueError, "video_grids has more videos than is_video"),
        ({"is_video": _VIDEO, "video_grids": []}, ValueError, "is_video has more runs"),
        ({"is_video": _VIDEO, "video_grids": [[2, 3, 2]]}, ValueError, "multiples of merge=2"),
        ({"is_video": _VIDEO, "video_grids": [[3, 2, 2]]}, ValueError, "has 3 tokens per video"),
        ({"is_video": _VIDEO, "video_grids": [[2, 0, 2]]}, ValueError, r"video_grids\[0\]"),
        ({"is_video": _VIDEO, "video_grids": "222"}, TypeError, "video_grids must be a sequence"),
        (
            {"is_video": _VIDEO, "video_grids": [[2, 2, 2]], "model_type": "qwen3_vl"},
            ValueError,
            "each time step is a run of its own",
        ),
        ({"model_type": "qwen2-vl"}, ValueError, "model_type must be one of"),
        ({"model_type": 2}, TypeError, "model_type must be one of"),
        (
            {"tokens_per_second": 2},
            ValueError,
            "tokens_per_second applies to model_type='qwen2_5_vl'",
        ),
        (
            {"is_video": _VIDEO, "video_grids": [[2, 2, 2]], "model_type": "qwen2_5_vl"},
            ValueError,
            "tokens_per_second is required",
        ),
        (
            {"model_type": "qwen2_5_vl", "tokens_per_second": 2.0},
            TypeError,
            "tokens_per_second must be an int",
        ),
    ],
)
def test_bad_video_input_names_the_argument(
    kwargs: dict[str, object], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        mrope_positions([False] * 4, [], **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("seconds", "error", "words"),
    [
        ([0.0], ValueError, r"second_per_grid_ts\[0\] must be a finite number of seconds > 0"),
        ([float("nan")], ValueError, "finite"),
        ([1.0, 1.0], ValueError, "one positive number of seconds per video .* got 2 values"),
        (["1"], TypeError, r"second_per_grid_ts\[0\] must be a real number"),
        (torch.tensor([[1.0]]), ValueError, r"got shape \(1, 1\)"),
        (torch.tensor([True]), TypeError, "got dtype torch.bool"),
        (torch.tensor([1.0], device="meta"), ValueError, "meta tensor"),
        (1.0, TypeError, "second_per_grid_ts must be one positive number"),
        ([1e30], ValueError, "must be at most 2\\*\\*53 - 1"),
    ],
)
def test_bad_seconds_per_step_are_named(
    seconds: object, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        mrope_positions(
            [False] * 4,
            [],
            is_video=_VIDEO,
            video_grids=[[2, 2, 2]],
            model_type="qwen2_5_vl",
            second_per_grid_ts=seconds,  # type: ignore[arg-type]
            tokens_per_second=2,
        )


def test_a_token_flagged_as_image_and_video_is_refused() -> None:
    with pytest.raises(ValueError, match=r"tokens \[1\] are flagged in both"):
        mrope_positions([False, True, False], [[1, 2, 2]], is_video=[False, True, False])


def test_every_layout_is_in_the_registry() -> None:
    assert set(AXIAL_LAYOUTS) == {
        "pixtral",
        "qwen2_vl_vision",
        "llama4_vision",
        "mrope",
        "mrope_interleaved",
    }
