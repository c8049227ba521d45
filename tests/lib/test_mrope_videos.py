"""Videos in M-RoPE: :func:`pe_lib.models.grid.mrope_positions` against each model's ``get_rope_index``.

A video's grid has ``t`` time steps, and the three models place them differently (transformers
5.23): Qwen2-VL counts the steps 0, 1, 2, ... whatever the frame rate; Qwen2.5-VL spaces them by
``tokens_per_second * second_per_grid_ts``, truncated to an int; Qwen3-VL places every step as an
image of its own, after the text of its timestamp. The tests below pin these facts and the ones
chapter 13 states, so that an upgrade that changes them fails here:

* all three resume the text after a video at ``p + max(rows, columns) / merge``, as after an
  image, even when the video's time positions reach beyond it: the text then shares time
  positions with the video;
* ``rope_deltas``, the offset the model keeps for decoding, is computed from the largest
  position, not from where the text resumed. ``generate`` carries the positions of the prompt
  on, as the full pass of the whole sequence places them, but a later ``generate`` that continues
  from the cache, and a forward pass given a cache, add ``rope_deltas``: after a long video they
  place the new tokens where the full pass does not, and after a call of another batch size the
  deltas left by the earlier call shift text that has no video at all.
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from pe_lib.models.grid import mrope_positions  # noqa: E402

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
# Qwen3-VL: text 2, then each step after 3 tokens of its timestamp, text 3
KINDS_QWEN3 = [0] * 2 + ([0] * 3 + [2] * 4) * 4 + [0] * 3


def _rope_index(model: object, kinds: list[int] = KINDS, **kwargs: object) -> torch.Tensor:
    positions, _ = model.get_rope_index(  # type: ignore[attr-defined]
        torch.zeros(1, len(kinds), dtype=torch.long),
        torch.tensor([kinds]),
        video_grid_thw=torch.tensor([VIDEO_GRID]),
        **kwargs,
    )
    return positions[:, 0].T  # (seq_len, 3)


def _ours(kinds: list[int], **kwargs: object) -> tuple[torch.Tensor, int]:
    return mrope_positions(
        [kind == 1 for kind in kinds],
        [],
        is_video=[kind == 2 for kind in kinds],
        video_grids=[VIDEO_GRID],
        **kwargs,  # type: ignore[arg-type]
    )


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


@pytest.fixture(scope="module")
def qwen3_vl() -> object:
    config = transformers.Qwen3VLConfig(
        vision_config={**VISION, "out_hidden_size": 64, "deepstack_visual_indexes": [0]},
        text_config={
            **TEXT,
            "rope_parameters": {**TEXT["rope_parameters"], "mrope_interleaved": True},
        },
    )
    return transformers.Qwen3VLModel(config)


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
    assert plain[2:18, 0].unique().tolist() == [2, 3, 4, 5]  # p + 0, 1, 2, 3
    assert torch.equal(_ours(KINDS)[0], plain)
    with pytest.raises(ValueError, match="second_per_grid_ts applies to model_type='qwen2_5_vl'"):
        _ours(KINDS, second_per_grid_ts=[3.0])


@pytest.mark.parametrize(
    ("seconds", "steps"),
    [(1.0, [0, 2, 4, 6]), (3.0, [0, 6, 12, 18]), (0.25, [0, 0, 1, 1]), (0.7, [0, 1, 2, 4])],
)
def test_qwen2_5_vl_spaces_time_steps_by_seconds(
    qwen2_5_vl: object, seconds: float, steps: list[int]
) -> None:
    for given in ([seconds], torch.tensor([seconds])):
        theirs = _rope_index(qwen2_5_vl, second_per_grid_ts=given)
        # int(k * tokens_per_second * seconds): 2 positions per second, truncated
        assert theirs[2:18:4, 0].tolist() == [2 + step for step in steps]  # each step's first
        ours, _ = _ours(
            KINDS, model_type="qwen2_5_vl", second_per_grid_ts=given, tokens_per_second=2
        )
        assert torch.equal(ours, theirs)


def test_qwen2_5_vl_assumes_one_second_per_step_without_second_per_grid_ts(
    qwen2_5_vl: object,
) -> None:
    ours, _ = _ours(KINDS, model_type="qwen2_5_vl", tokens_per_second=2)
    assert torch.equal(ours, _rope_index(qwen2_5_vl))
    with pytest.raises(ValueError, match="tokens_per_second is required"):
        _ours(KINDS, model_type="qwen2_5_vl")


def test_qwen3_vl_places_each_step_as_an_image_after_its_timestamp(qwen3_vl: object) -> None:
    theirs = _rope_index(qwen3_vl, kinds=KINDS_QWEN3)
    ours, _ = _ours(KINDS_QWEN3, model_type="qwen3_vl")
    assert torch.equal(ours, theirs)
    video = torch.tensor(KINDS_QWEN3) == 2
    # each step one time position, 3 timestamp tokens + the side 2 after the step before
    assert theirs[video, 0].unique().tolist() == [5, 10, 15, 20]
    # the steps' tokens in one run (no timestamps between them) are refused by name
    with pytest.raises(ValueError, match="each time step is a run of its own"):
        _ours(KINDS, model_type="qwen3_vl")


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
    extra = {"tokens_per_second": 2} if name == "qwen2_5_vl" else {}
    assert torch.equal(_ours(KINDS, model_type=name, **extra)[0], positions)


def test_an_image_grid_with_time_steps_is_refused() -> None:
    with pytest.raises(ValueError, match=r"image_grids\[1\] = \(4, 4, 4\) has t=4 time steps"):
        mrope_positions([True] * 6 + [False] + [True] * 16, [[1, 4, 6], [4, 4, 4]])


# --- rope_deltas across calls: a tiny Qwen2-VL that generates ---------------------------------

VIDEO_TOKEN = 5
# text 2, a video of 8 steps of 4 x 4 patches (2 x 2 tokens each), text 1: the time positions
# reach 2 + 7 = 9, the text after the video resumes at 2 + 2 = 4
LONG_GRID = [8, 4, 4]
PROMPT = [10, 11] + [VIDEO_TOKEN] * 32 + [20]
PROMPT_KINDS = [0, 0] + [2] * 32 + [0]


@pytest.fixture(scope="module")
def generating() -> tuple[object, list[torch.Tensor]]:
    """A tiny Qwen2-VL that generates, and the positions its rotary embedding receives."""
    torch.manual_seed(0)
    config = transformers.Qwen2VLConfig(
        vision_config={
            "embed_dim": 32,
            "depth": 1,
            "num_heads": 2,
            "hidden_size": 64,
            "patch_size": 2,
        },
        text_config=TEXT,
        image_token_id=4,
        video_token_id=VIDEO_TOKEN,
        vision_start_token_id=6,
        vision_end_token_id=7,
    )
    model = transformers.Qwen2VLForConditionalGeneration(config).eval()
    seen: list[torch.Tensor] = []

    def record(module: object, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        seen.append(args[1].clone())  # type: ignore[attr-defined]

    model.model.language_model.rotary_emb.register_forward_pre_hook(record, with_kwargs=True)
    return model, seen


def _video_inputs() -> dict[str, torch.Tensor]:
    ids = torch.tensor([PROMPT])
    t, h, w = LONG_GRID
    return {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "mm_token_type_ids": torch.tensor([PROMPT_KINDS]),
        "pixel_values_videos": torch.randn(t * h * w, 3 * 2 * 2 * 2),
        "video_grid_thw": torch.tensor([LONG_GRID]),
    }


def _full_pass(model: object, sequence: torch.Tensor) -> list[int]:
    """Time positions of the whole sequence, prompt and generated text, in one call."""
    kinds = PROMPT_KINDS + [0] * (sequence.shape[1] - len(PROMPT))
    positions, _ = model.model.get_rope_index(  # type: ignore[attr-defined]
        sequence, torch.tensor([kinds]), video_grid_thw=torch.tensor([LONG_GRID])
    )
    return positions[0, 0].tolist()


def test_rope_deltas_come_from_the_largest_position_not_from_where_text_resumed() -> None:
    kinds = PROMPT_KINDS
    positions, delta = mrope_positions(
        [False] * len(kinds), [], is_video=[k == 2 for k in kinds], video_grids=[LONG_GRID]
    )
    assert int(positions[-1, 0]) == 4  # the last prompt token
    assert len(kinds) + delta == 10  # where rope_deltas puts the next one: largest 9, + 1


def test_generate_places_new_tokens_as_the_full_pass_does(
    generating: tuple[object, list[torch.Tensor]],
) -> None:
    model, seen = generating
    seen.clear()
    out = model.generate(**_video_inputs(), max_new_tokens=4, do_sample=False)  # type: ignore[attr-defined]
    decoded = [int(step[0, 0, -1]) for step in seen[1:]]  # one step per new token after the first
    full = _full_pass(model, out)
    assert decoded == full[len(PROMPT) : len(PROMPT) + len(decoded)] == [5, 6, 7]
    assert model.model.rope_deltas.tolist() == [[10 - len(PROMPT)]]  # type: ignore[attr-defined]


def test_continuing_from_the_cache_adds_rope_deltas_and_leaves_the_full_pass(
    generating: tuple[object, list[torch.Tensor]],
) -> None:
    model, seen = generating
    first = model.generate(  # type: ignore[attr-defined]
        **_video_inputs(), max_new_tokens=3, do_sample=False, return_dict_in_generate=True
    )
    more = torch.cat([first.sequences, torch.tensor([[30, 31]])], dim=1)
    cached_tokens = first.past_key_values.get_seq_length()
    seen.clear()
    second = model.generate(  # type: ignore[attr-defined]
        input_ids=more,
        attention_mask=torch.ones_like(more),
        mm_token_type_ids=torch.tensor([PROMPT_KINDS + [0] * (more.shape[1] - len(PROMPT))]),
        video_grid_thw=torch.tensor([LONG_GRID]),
        past_key_values=first.past_key_values,
        max_new_tokens=2,
        do_sample=False,
        return_dict_in_generate=True,
    )
    # the tokens after the cache, then one step per new token after the first
    cached = seen[0][0, 0].tolist() + [int(step[0, 0, -1]) for step in seen[1:]]
    full = _full_pass(model, second.sequences)[cached_tokens : cached_tokens + len(cached)]
    # the continuation sits at its token index + rope_deltas: 10 - 5 = 5 past the full pass
    assert [c - f for c, f in zip(cached, full, strict=True)] == [5] * len(cached)


def test_a_forward_pass_given_a_cache_adds_rope_deltas(
    generating: tuple[object, list[torch.Tensor]],
) -> None:
    model, seen = generating
    inputs = _video_inputs()
    del inputs["attention_mask"]
    cache = transformers.DynamicCache(config=model.config)  # type: ignore[attr-defined]
    seen.clear()
    first = model(**inputs, past_key_values=cache, use_cache=True)  # type: ignore[operator]
    token = first.logits[:, -1:].argmax(-1)
    model(input_ids=token, past_key_values=cache, use_cache=True)  # type: ignore[operator]
    decoded = int(seen[1][0, 0, -1])
    full = _full_pass(model, torch.cat([inputs["input_ids"], token], dim=1))[-1]
    # the full pass continues from the last prompt token, 4; rope_deltas from the video's 9
    assert (full, decoded) == (5, 10)


def test_a_forward_pass_of_another_batch_size_reuses_the_earlier_calls_deltas(
    generating: tuple[object, list[torch.Tensor]],
) -> None:
    model, seen = generating
    model.generate(**_video_inputs(), max_new_tokens=1, do_sample=False)  # type: ignore[attr-defined]
    text = torch.tensor([[11, 12, 13], [14, 15, 16]])  # two rows of text, no video
    for reset in (False, True):
        if reset:
            model.model.rope_deltas = None  # type: ignore[attr-defined]
        cache = transformers.DynamicCache(config=model.config)  # type: ignore[attr-defined]
        seen.clear()
        model(input_ids=text, past_key_values=cache, use_cache=True)  # type: ignore[operator]
        model(input_ids=text[:, :1], past_key_values=cache, use_cache=True)  # type: ignore[operator]
        decoded = seen[1][:, :, -1]  # (3 axes, 2 rows)
        # the full pass of a row of text places its fourth token at 3
        expected = 3 if reset else 3 + 10 - len(PROMPT)  # the video call's deltas: -22
        assert decoded.unique().tolist() == [expected]
