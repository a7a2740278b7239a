"""pe_book.rope: the relative property, norms, layouts, offsets, precision, scalings, bad input."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_book import rope, rope_scaling, sinusoidal
from pe_book.sinusoidal import layout_permutation

dims = st.integers(1, 32).map(lambda h: 2 * h)
layouts = st.sampled_from(sinusoidal.LAYOUTS)


def random(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def reference_rotation(x, positions, base=10000.0, layout="interleaved"):
    """Rotation matrices built pair by pair, in float64: the slow, obvious implementation."""
    dim = x.shape[-1]
    out = torch.empty_like(x, dtype=torch.float64)
    for row, m in enumerate(positions.tolist()):
        for i in range(dim // 2):
            angle = m * base ** (-2 * i / dim)
            a, b = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + dim // 2)
            xa, xb = float(x[..., row, a]), float(x[..., row, b])
            out[..., row, a] = xa * math.cos(angle) - xb * math.sin(angle)
            out[..., row, b] = xa * math.sin(angle) + xb * math.cos(angle)
    return out


@given(dims, layouts, st.integers(0, 2**16))
def test_apply_rope_equals_rotation_matrices(dim, layout, seed):
    x = random(5, dim, seed=seed)
    positions = torch.tensor([0, 1, 7, 300, 40000])
    got = rope.apply_rope(x, positions, layout=layout)
    torch.testing.assert_close(
        got, reference_rotation(x, positions, layout=layout), rtol=0, atol=1e-9
    )


@given(dims, layouts, st.integers(-(10**5), 10**5), st.integers(0, 2**16))
def test_scores_depend_on_the_offset_only(dim, layout, shift, seed):
    q, k = random(6, dim, seed=seed), random(6, dim, seed=seed + 1)
    positions = torch.arange(6) * 37 + 10**5
    scores = (
        rope.apply_rope(q, positions, layout=layout)
        @ rope.apply_rope(k, positions, layout=layout).T
    )
    moved = positions + shift
    shifted = rope.apply_rope(q, moved, layout=layout) @ rope.apply_rope(k, moved, layout=layout).T
    torch.testing.assert_close(shifted, scores, rtol=0, atol=1e-8)


@given(dims, layouts, st.integers(0, 2**16))
def test_rotation_preserves_norms(dim, layout, seed):
    x = random(4, 7, dim, seed=seed)
    torch.testing.assert_close(rope.apply_rope(x, layout=layout).norm(dim=-1), x.norm(dim=-1))


@given(dims, st.integers(0, 2**16))
def test_layouts_differ_by_a_fixed_permutation(dim, seed):
    x = random(9, dim, seed=seed)
    perm = layout_permutation(dim)  # half = interleaved[:, perm]
    inverse = torch.argsort(torch.tensor(perm))
    interleaved = rope.apply_rope(x, layout="interleaved")
    half = rope.apply_rope(x[:, perm], layout="half")
    torch.testing.assert_close(half[:, inverse], interleaved)


@given(st.integers(0, 5000), st.integers(1, 40), layouts)
def test_decoding_from_a_start_matches_the_full_rotation(start, length, layout):
    module = rope.Rope(16, layout=layout, max_len=8)
    x = random(2, start + length, 16)
    full = module(x)
    step = module(x[:, start:], start=start)
    torch.testing.assert_close(step, full[:, start:], rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", sinusoidal.LAYOUTS)
def test_low_precision_input_at_position_32768(dtype, layout):
    x = random(4, 64, seed=3)
    positions = torch.arange(32768, 32772)
    exact = reference_rotation(x, positions, layout=layout)
    got = rope.apply_rope(x.to(dtype), positions, layout=layout)
    assert got.dtype == dtype
    step = 2.0**-7 if dtype == torch.bfloat16 else 2.0**-10
    assert float((got.double() - exact).abs().max()) <= 4 * step * float(x.abs().max())


def test_scalings_change_frequencies_as_documented():
    theta, _ = rope_scaling.scaled_frequencies(64)
    linear, _ = rope_scaling.scaled_frequencies(64, scaling=rope_scaling.LinearScaling(4.0))
    torch.testing.assert_close(linear, theta / 4)
    ntk, _ = rope_scaling.scaled_frequencies(64, scaling=rope_scaling.NTKScaling(4.0))
    assert float(ntk[0]) == 1.0 and float(ntk[-1]) == pytest.approx(float(theta[-1]) / 4)
    dynamic_short, _ = rope_scaling.scaled_frequencies(
        64, scaling=rope_scaling.DynamicNTKScaling(4.0, 512), seq_len=100
    )
    torch.testing.assert_close(dynamic_short, theta)
    yarn, factor = rope_scaling.scaled_frequencies(64, scaling=rope_scaling.YaRNScaling(8.0, 4096))
    assert float(yarn[0]) == 1.0 and float(yarn[-1]) == pytest.approx(float(theta[-1]) / 8)
    assert factor == pytest.approx(0.1 * math.log(8) + 1)


def test_yarn_attention_factor_scales_the_rotation():
    x = random(3, 16)
    scaled = rope.apply_rope(x, scaling=rope_scaling.YaRNScaling(4.0, 64))
    torch.testing.assert_close(scaled.norm(dim=-1), x.norm(dim=-1) * (0.1 * math.log(4) + 1))


@pytest.mark.parametrize("cast", [lambda m: m.to(torch.bfloat16), lambda m: m.half()])
def test_casting_the_module_keeps_its_tables_in_float32_and_float64(cast):
    """model.to(bfloat16) must not round the cached cos/sin to 16 bits."""
    layer = cast(rope.Rope(64, max_len=64))
    assert (layer.cos.dtype, layer.cos64.dtype) == (torch.float32, torch.float64)
    x = random(3, 40, 64, dtype=torch.bfloat16)
    assert torch.equal(layer(x, start=40000), rope.apply_rope(x, torch.arange(40000, 40040)))


def test_module_cache_grows_and_stays_out_of_checkpoints():
    module = rope.Rope(8, max_len=4)
    module(random(10, 8))
    assert module.cos.shape == (16, 4)
    assert "cos" not in module.state_dict()


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: rope.apply_rope(random(3, 7)), ValueError, "dim must be even"),
        (lambda: rope.apply_rope(random(3, 8), torch.arange(4)), ValueError, "one entry per row"),
        (
            lambda: rope.apply_rope(random(3, 8), layout="pairs"),
            ValueError,
            "layout must be one of",
        ),
        (
            lambda: rope.apply_rope(random(3, 8), torch.tensor([0.0, 1.0, 2.0])),
            TypeError,
            "integer",
        ),
        (lambda: rope_scaling.LinearScaling(0.0), ValueError, "factor must be a finite number > 0"),
        (
            lambda: rope_scaling.YaRNScaling(2.0, 0),
            ValueError,
            "original_max_len must be an int >= 1",
        ),
        (
            lambda: rope_scaling.Llama3Scaling(low_freq_factor=4.0, high_freq_factor=1.0),
            ValueError,
            "high_freq",
        ),
        (
            lambda: rope_scaling.scaled_frequencies(8, scaling="yarn"),
            TypeError,
            "scaling must be one of",
        ),
        (lambda: rope.Rope(8)(random(3, 6)), ValueError, "last dimension dim=8"),
    ],
)
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    "make",
    [
        lambda: random(7, 10)[:, 1:9],  # starts at an odd column
        lambda: random(7, 9)[:, :8],  # odd row stride
        lambda: random(7, 1).expand(7, 8),  # stride 0 along d
        lambda: random(9, 2, 9)[::2, :1, 1:9],
    ],
    ids=["odd-offset", "odd-row-stride", "stride-0", "mixed"],
)
@pytest.mark.parametrize("layout", sinusoidal.LAYOUTS)
def test_views_that_cannot_be_paired_in_place_rotate_like_their_copies(make, layout):
    """view_as_complex refuses these views; the interleaved path copies them first.

    (A view the fused half loop cannot take goes the plain way: equal to rounding.)
    """
    x = make()
    expected = rope.apply_rope(x.contiguous(), layout=layout)
    torch.testing.assert_close(rope.apply_rope(x, layout=layout), expected, atol=1e-12, rtol=0)


def test_benchmark_reports_every_method_against_the_copy_measured_in_the_same_run():
    from pe_book import bench

    table = bench.rope_benchmark(batch=1, heads=1, seq_len=16, dim=8, repeats=2)
    names = [name for name, _, _ in table]
    assert names[0] == "copy q and k (baseline)" and table[0][2] == 1.0
    assert {"pe_book, interleaved", "pe_book, half", "pe_book, half, plain PyTorch"} <= set(names)
    assert all(ms > 0 and ratio == ms / table[0][1] for _, ms, ratio in table)


def test_benchmark_memory_regime_must_be_named():
    from pe_book import bench

    assert set(bench.MEMORY_REGIMES) == {"fresh", "reused"}
    with pytest.raises(ValueError, match="memory must be one of"):
        bench.rope_benchmark_in_processes(processes=1, memory="warm")


def test_benchmark_json_mode_prints_one_parsable_run(capsys):
    import json

    from pe_book import bench

    assert bench.main(["rope", "--json", "--repeats", "1", "--threads", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0][0] == "copy q and k (baseline)" and rows[0][2] == 1.0


def test_longrope_cache_goes_back_to_the_short_factors_for_a_shorter_input():
    # LongRoPE's factors depend on the current length (short <= L_orig < long): a cache
    # grown for a long input must not rotate a later short one with the long factors.
    scaling = rope_scaling.LongRoPEScaling(
        short_factor=(1.0, 1.5, 2.0, 2.5), long_factor=(1.0, 3.0, 5.0, 7.0),
        original_max_len=8, factor=4.0,
    )
    layer = rope.Rope(8, scaling=scaling)
    long_x, short_x = random(1, 20, 8), random(1, 6, 8)
    expected_long = rope.apply_rope(long_x, scaling=scaling)
    torch.testing.assert_close(layer(long_x), expected_long)
    got = layer(short_x)  # after the long input
    torch.testing.assert_close(got, rope.apply_rope(short_x, scaling=scaling))
