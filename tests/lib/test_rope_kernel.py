"""pe_lib.rope's rotation as a public function, its out= buffers, partial rotation, and the
tools (trace, compile, meta tensors) that must work or refuse clearly."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from pe_reference import rope_theta, rotate_pairs

from pe_lib.rope import RotaryEmbedding, apply_rope, rope_angles, rotate
from pe_lib.rope import scaling as rope_scaling

LAYOUTS = ("interleaved", "half")
# Dynamic NTK as a model runs it: its entry, and the model's max_position_embeddings (8).
DYNAMIC = rope_scaling.resolve_scaling(
    {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}, max_position_embeddings=8
)
TRACE_IS_DEPRECATED = pytest.mark.filterwarnings(
    r"ignore:`torch\.jit\.\w+` is deprecated:DeprecationWarning"
)


@pytest.fixture
def registered(monkeypatch):
    """Registers ROPE_SCALINGS entries for one test: ``registered(name, entry)``."""

    def register(name: str, entry: rope_scaling.RopeScaling) -> None:
        monkeypatch.setitem(rope_scaling.ROPE_SCALINGS, name, entry)

    return register


# --- the public rotation ----------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotate_with_rope_tables_is_apply_rope(layout):
    x = torch.randn(2, 3, 7, 16)
    angles = rope_angles(torch.arange(7), 16)
    expected = apply_rope(x, layout=layout)
    torch.testing.assert_close(
        rotate(x, angles.cos(), angles.sin(), layout), expected, rtol=0, atol=0
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotate_keeps_a_common_scale_of_the_tables(layout):
    """xPos-style: tables carrying a per-position scale scale the rotated vector by it."""
    x = torch.randn(5, 8, dtype=torch.float64)
    angles = rope_angles(torch.arange(5), 8)
    scale = torch.linspace(0.5, 2.0, 5, dtype=torch.float64)[:, None]
    got = rotate(x, scale * angles.cos(), scale * angles.sin(), layout)
    expected = rotate_pairs(x.numpy(), angles.numpy(), layout) * scale.numpy()
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("cos", "error", "match"),
    [
        ([1.0], TypeError, r"cos must be a floating torch.Tensor, got list"),
        (torch.ones(7, 9), ValueError, r"1 <= n <= head_dim / 2 = 8 .* got cos \(7, 9\)"),
        (torch.ones(2, 7, 8), ValueError, r"leading sizes 1 or those of x \(3, 7, 16\)"),
    ],
)
def test_rotate_names_bad_tables(cos, error, match):
    x = torch.randn(3, 7, 16)
    sin = cos if not isinstance(cos, torch.Tensor) else torch.zeros_like(cos)
    with pytest.raises(error, match=match):
        rotate(x, cos, sin)


# --- partial rotation -------------------------------------------------------------------------


def partial_reference(x: np.ndarray, angles: np.ndarray, layout: str) -> np.ndarray:
    """The first 2n channels rotated in ``layout`` (pairs within them), the rest unchanged."""
    rotary = 2 * angles.shape[-1]
    return np.concatenate((rotate_pairs(x[:, :rotary], angles, layout), x[:, rotary:]), axis=-1)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_partial_rotation_turns_the_first_2n_channels_only(layout, grad, dtype):
    x = torch.randn(9, 16, dtype=torch.float64)
    angles = rope_angles(torch.arange(9), 8)  # 4 pairs: channels 0..7 of 16
    inp = x.to(dtype).clone().requires_grad_(grad)
    got = rotate(inp, angles.cos(), angles.sin(), layout).detach().double()
    expected = partial_reference(x.to(dtype).double().numpy(), angles.numpy(), layout)
    tol = 1e-12 if dtype == torch.float64 else 1e-6
    np.testing.assert_allclose(got.numpy(), expected, rtol=tol, atol=tol)
    assert torch.equal(got[:, 8:], x.to(dtype).double()[:, 8:])


def _quarter(head_dim, base, params, seq_len):
    """A scaling that gives the frequencies of the first quarter of the channels only."""
    return torch.from_numpy(rope_theta(head_dim // 4, base)), 1.0


@pytest.mark.parametrize("layout", LAYOUTS)
def test_partial_rotation_through_a_registered_scaling(layout, registered):
    registered("quarter", rope_scaling.RopeScaling(_quarter))
    scaling = {"rope_type": "quarter", "rope_theta": 10000.0}
    x = torch.randn(2, 6, 16)
    angles = rope_angles(torch.arange(6), 4)  # what the scaling gives: 2 pairs
    expected = partial_reference(x[1].double().numpy(), angles.numpy(), layout)
    got = apply_rope(x, layout=layout, scaling=scaling)
    np.testing.assert_allclose(got[1].double().numpy(), expected, rtol=1e-6, atol=1e-6)
    rotary = RotaryEmbedding(16, layout=layout, scaling=scaling, max_len=4)
    for q in (x, x[:, :3]):  # beyond and within the cache
        torch.testing.assert_close(rotary(q, q)[0], apply_rope(q, layout=layout, scaling=scaling))


# --- out= -------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("shape", [(3, 5, 8), (2, 4, 700, 64)])
def test_out_holds_the_same_values_as_the_allocating_call(layout, dtype, shape):
    x = torch.randn(shape).to(dtype)
    buf = torch.full_like(x, float("nan"))
    result = apply_rope(x, layout=layout, out=buf)
    assert result is buf
    torch.testing.assert_close(buf, apply_rope(x, layout=layout), rtol=0, atol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_out_into_a_strided_buffer_and_partial_rotation(layout):
    x = torch.randn(3, 40, 16)
    big = torch.zeros(3, 40, 32)
    buf = big[..., 8:24]  # non-contiguous, odd pair offset for complex views
    angles = rope_angles(torch.arange(40), 8)
    rotate(x, angles.cos(), angles.sin(), layout, out=buf)
    torch.testing.assert_close(buf, rotate(x, angles.cos(), angles.sin(), layout), rtol=0, atol=0)
    assert not big[..., :8].any() and not big[..., 24:].any()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotary_embedding_out(layout):
    rotary = RotaryEmbedding(16, layout=layout, max_len=32)
    q, k = torch.randn(2, 4, 5, 16), torch.randn(2, 1, 5, 16)
    bufs = (torch.empty_like(q), torch.empty_like(k))
    got = rotary(q, k, offset=3, out=bufs)
    assert got[0] is bufs[0] and got[1] is bufs[1]
    for g, e in zip(got, rotary(q, k, offset=3), strict=True):
        torch.testing.assert_close(g, e, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda x: [1.0], TypeError, r"out must be a torch.Tensor, got list"),
        (lambda x: torch.empty(3, 5, 6), ValueError, r"out must have the shape, dtype and dev"),
        (lambda x: torch.empty_like(x, dtype=torch.float64), ValueError, r"got \(3, 5, 8\), t"),
        (lambda x: x, ValueError, r"out must not share memory"),
        (lambda x: x[..., :8], ValueError, r"out must not share memory"),
    ],
)
def test_bad_out_is_refused(make, error, match):
    x = torch.randn(3, 5, 8)
    with pytest.raises(error, match=match):
        apply_rope(x, out=make(x))


def test_out_may_be_a_view_of_the_storage_that_holds_x_elsewhere():
    """Disjoint views of one storage share no memory: the rotation is written, x is kept."""
    storage = torch.randn(2, 3, 5, 8)
    x, buf = storage[0], storage[1]
    kept = x.clone()
    for layout in ("interleaved", "half"):
        got = apply_rope(x, layout=layout, out=buf)
        assert got is buf
        torch.testing.assert_close(buf, apply_rope(kept, layout=layout), rtol=0, atol=0)
        assert torch.equal(x, kept)
    # overlapping views are still refused
    with pytest.raises(ValueError, match=r"out must not share memory"):
        apply_rope(storage[0, 1:], out=storage[0, :-1])


def test_a_self_overlapping_out_is_refused_before_torch_sees_it():
    x = torch.randn(4, 8)
    for buf in (torch.empty(1, 8).expand(4, 8), torch.empty(14).as_strided((4, 8), (2, 1))):
        with pytest.raises(ValueError, match=r"out must not hold two elements in one memory"):
            apply_rope(x, out=buf)


def test_gradients_through_out_are_refused():
    x = torch.randn(3, 5, 8, requires_grad=True)
    with pytest.raises(ValueError, match=r"out= does not support automatic differentiation"):
        apply_rope(x, out=torch.empty(3, 5, 8))
    with torch.no_grad():
        apply_rope(x, out=torch.empty(3, 5, 8))
    rotary = RotaryEmbedding(8)
    with pytest.raises(ValueError, match=r"out\[0\]= does not support automatic"):
        rotary(x, x, out=(torch.empty(3, 5, 8), torch.empty(3, 5, 8)))
    with pytest.raises(TypeError, match=r"out must be a tuple \(q_out, k_out\)"):
        rotary(x, x, out=torch.empty(3, 5, 8))


# --- default positions, inference mode, fake tensors --------------------------------------------


def test_default_positions_give_what_arange_gives_for_every_argument():
    """Every argument the tables depend on changes the result as it does with given positions."""
    x = torch.randn(2, 6, 8, dtype=torch.float64)
    calls = [
        {},
        {"base": 500.0},
        {"layout": "half"},
        {"scaling": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}},
        {"scaling": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1e4}},
        {"scaling": DYNAMIC, "seq_len": 9},
        {"scaling": DYNAMIC, "seq_len": 12},
    ]
    for kwargs in calls + calls:  # a second round: nothing from the first changes it
        expected = apply_rope(x, torch.arange(6), **kwargs)
        torch.testing.assert_close(apply_rope(x, **kwargs), expected, rtol=0, atol=0)
    for length in (3, 6):
        for dtype in (torch.float32, torch.float64):
            y = x[:, :length].to(dtype)
            expected = apply_rope(y, torch.arange(length))
            torch.testing.assert_close(apply_rope(y), expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_successive_results_share_no_memory(dtype, layout):
    """Each call returns a tensor of its own: no buffer kept from one call is handed out again."""
    x = torch.randn(2, 4, 300, 64).to(dtype)  # staged in blocks for bfloat16
    first = apply_rope(x, layout=layout)
    kept = first.clone()
    second = apply_rope(x, layout=layout)
    for a, b in ((first, second), (first, x), (second, x)):
        assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
    assert torch.equal(first, kept) and torch.equal(second, kept)


def test_a_call_in_inference_mode_leaves_autograd_working():
    x = torch.randn(4, 8)
    with torch.inference_mode():
        in_inference = apply_rope(x)
    y = x.clone().requires_grad_()
    apply_rope(y).sum().backward()  # would fail on tables made in inference mode
    assert y.grad is not None
    torch.testing.assert_close(apply_rope(x), in_inference, rtol=0, atol=0)


def test_fake_tensors_give_shapes_and_real_calls_after_them_give_values():
    """Fake tensors (shape propagation) hold no values; a real call after them is unaffected."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        assert apply_rope(torch.randn(2, 5, 8)).shape == (2, 5, 8)
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(apply_rope(x), apply_rope(x, torch.arange(5)), rtol=0, atol=0)


def test_frequencies_kept_between_calls_serve_every_mode_alike():
    """The frequencies kept after a first call give the same rotation; fake tensors after real
    calls, and inference mode before autograd, are unaffected by them."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = torch.randn(2, 5, 8, dtype=torch.float64)
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4}
    for layout in ("interleaved", "half"):
        first = apply_rope(x, layout=layout, scaling=yarn, base=500.0)
        with FakeTensorMode():
            fake = apply_rope(torch.randn(2, 5, 8), layout=layout, scaling=yarn, base=500.0)
            assert fake.shape == (2, 5, 8)
        with torch.inference_mode():
            apply_rope(x, layout=layout)
        leaf = x.clone().requires_grad_()
        apply_rope(leaf, layout=layout).sum().backward()
        assert leaf.grad is not None
        torch.testing.assert_close(
            apply_rope(x, layout=layout, scaling=yarn, base=500.0), first, rtol=0, atol=0
        )
        # the kept (signed) frequencies give the rotation by the cos and sin of fresh angles
        angles = rope_angles(torch.arange(5), 8)
        torch.testing.assert_close(
            apply_rope(x, layout=layout),
            rotate(x, angles.cos(), angles.sin(), layout),
            rtol=0,
            atol=0,
        )


# --- scalings whose frequencies depend on the length ------------------------------------------


def test_apply_rope_refuses_seq_len_short_of_the_positions():
    x, positions = torch.randn(20, 16), torch.arange(20)
    for call in (
        lambda: apply_rope(x, positions, scaling=DYNAMIC, seq_len=10),
        lambda: rope_angles(positions, 16, scaling=DYNAMIC, seq_len=10),
    ):
        with pytest.raises(
            ValueError, match=r"seq_len must be at least the last position \+ 1 = 20"
        ):
            call()
    with pytest.raises(ValueError, match=r"seq_len must be at least offset \+ q.shape\[-2\] = 20"):
        RotaryEmbedding(16, scaling=DYNAMIC)(x, x, seq_len=10)
    torch.testing.assert_close(
        apply_rope(x, positions, scaling=DYNAMIC, seq_len=20),
        apply_rope(x, positions, scaling=DYNAMIC),
    )


def _grows(head_dim, base, params, seq_len):
    """Frequencies that change beyond the original length, as LongRoPE's factors do."""
    theta = torch.from_numpy(rope_theta(head_dim, base))
    long = seq_len is not None and seq_len > params["original_max_position_embeddings"]
    return (theta / 3.0 if long else theta), 1.0


@pytest.mark.parametrize(
    "scaling",
    [DYNAMIC, {"rope_type": "grows", "original_max_position_embeddings": 8, "rope_theta": 1e4}],
)
def test_cache_pitfall_is_detected_for_every_length_dependent_scaling(scaling, registered):
    registered(
        "grows",
        rope_scaling.RopeScaling(_grows, keys=rope_scaling._ORIGINAL, needs_seq_len=True),
    )
    rotary = RotaryEmbedding(16, scaling=scaling)
    q = torch.randn(1, 20, 16)
    for t in range(8):
        rotary(q[:, t : t + 1], q[:, t : t + 1], offset=t)
    name = rope_scaling.resolve_scaling(scaling).rope_type
    with pytest.raises(ValueError, match=rf"'{name}' scaling with a key-value cache.*length 9 > "):
        rotary(q[:, 8:9], q[:, 8:9], offset=8)
    # One fixed length for every call gives the full sequence's rotation.
    steps = [rotary(q[:, t : t + 1], q[:, t : t + 1], offset=t, seq_len=20)[0] for t in range(20)]
    torch.testing.assert_close(torch.cat(steps, dim=1), apply_rope(q, scaling=scaling))


# --- compile, meta ---------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_apply_rope_with_positions_compiles_in_one_graph(layout):
    torch._dynamo.reset()

    def rope(x, positions):
        return apply_rope(x, positions, layout=layout)

    compiled = torch.compile(rope, fullgraph=True, backend="aot_eager")
    for seq_len in (5, 7):
        x, positions = torch.randn(2, seq_len, 32), torch.arange(3, 3 + seq_len)
        torch.testing.assert_close(compiled(x, positions), rope(x, positions))


def test_meta_tensors_give_shapes_also_under_autocast():
    x = torch.empty(2, 3, 5, 16, device="meta", dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        for layout in LAYOUTS:
            out = apply_rope(x, layout=layout)
            assert (out.shape, out.dtype, out.device.type) == (x.shape, x.dtype, "meta")
        q, k = RotaryEmbedding(16).to("meta")(x, x[:, :1])
    assert (q.shape, k.shape, q.device.type) == (x.shape, x[:, :1].shape, "meta")


def test_meta_positions_give_shapes_and_length_scalings_need_seq_len():
    x = torch.empty(2, 5, 16, device="meta")
    positions = torch.empty(5, device="meta", dtype=torch.int64)
    out = apply_rope(x, positions)
    assert (out.shape, out.device.type) == (x.shape, "meta")
    angles = rope_angles(positions, 16, scaling=DYNAMIC, seq_len=5)
    assert (angles.shape, angles.device.type) == ((5, 8), "meta")
    out = apply_rope(x, positions, scaling=DYNAMIC, seq_len=9)
    assert (out.shape, out.device.type) == (x.shape, "meta")
    with pytest.raises(ValueError, match=r"apply_rope on the meta device needs seq_len="):
        apply_rope(x, positions, scaling=DYNAMIC)


def test_a_real_partial_entry_rotates_only_its_share():
    """GPT-NeoX-style partial_rotary_factor 0.25: the first 16 of 64 channels turn, the rest
    pass through, in the function and the module alike."""
    neox = rope_scaling.resolve_scaling({"rope_type": "default", "partial_rotary_factor": 0.25})
    x = torch.randn(1, 2, 10, 64)
    y = apply_rope(x, scaling=neox)
    assert torch.equal(y[..., 16:], x[..., 16:])
    assert not torch.allclose(y[..., :16], x[..., :16])
    q, _ = RotaryEmbedding(64, scaling=neox, max_len=32)(x, x)
    torch.testing.assert_close(q, y)


def test_longrope_switch_is_caught_when_decoding_with_a_cache():
    """LongRoPE's factors change past L: decoding past L without seq_len= is refused."""
    entry = {
        "rope_type": "longrope",
        "short_factor": [1.0] * 32,
        "long_factor": [4.0] * 32,
        "original_max_position_embeddings": 16,
        "rope_theta": 10000.0,
    }
    rotary = RotaryEmbedding(
        64, scaling=rope_scaling.resolve_scaling(entry, max_position_embeddings=64), max_len=64
    )
    q = torch.randn(1, 1, 1, 64)
    for t in range(16):
        rotary(q, q, offset=t)
    with pytest.raises(ValueError, match="'longrope' scaling with a key-value cache"):
        rotary(q, q, offset=16)
