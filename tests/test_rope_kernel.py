"""pe_book.rope_kernel: the fused half-layout loop equals the plain path, forward and back."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book import rope, rope_kernel, rope_scaling


def random(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def both_paths(x, **kwargs):
    """(fused, plain) outputs of apply_rope in the half layout."""
    fused = rope.apply_rope(x, layout="half", **kwargs)
    plain = rope.apply_rope(x, layout="half", fused=False, **kwargs)
    return fused, plain


def test_the_kernel_is_built_so_the_default_half_path_is_the_fused_one():
    """CI must time and test the path users get; a missing build would hide behind the fallback."""
    assert rope_kernel.loop_built()
    cos, sin = rope.rope_cos_sin(4, 8)
    assert rope_kernel.can_fuse(random(4, 8, dtype=torch.float32), cos, sin)


@settings(max_examples=60, deadline=None)
@given(
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=3),
    length=st.integers(1, 40),
    half=st.integers(1, 24),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    transposed=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_fused_equals_plain_for_any_shape_and_strides(lead, length, half, dtype, transposed, seed):
    """Leading dimensions 0-3, and a (B, L, H, d) tensor viewed as (B, H, L, d) as in attention."""
    shape = (*lead, length, 2 * half)
    x = random(*shape, seed=seed, dtype=dtype)
    if transposed and len(lead) >= 1:
        x = random(*lead[:-1], length, lead[-1], 2 * half, seed=seed, dtype=dtype).transpose(-3, -2)
        assert x.shape == shape and (x.is_contiguous() == (min(length, lead[-1]) == 1))
    fused, plain = both_paths(x, positions=torch.arange(length) * 37)
    tolerance = {"atol": 1e-12, "rtol": 0} if dtype == torch.float64 else {"atol": 2e-6, "rtol": 0}
    torch.testing.assert_close(fused, plain, **tolerance)
    assert fused.dtype == dtype and fused.shape == shape


def test_fused_gradient_is_the_rotation_by_minus_the_angle():
    """gradcheck compares the backward pass with finite differences, in float64."""
    cos, sin = rope.rope_cos_sin(torch.arange(6) * 1000, 8, dtype=torch.float64)
    x = random(2, 3, 6, 8).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: rope_kernel.rotate_fused(t, cos, sin), (x,))


def test_fused_gradient_of_the_gradient():
    """The backward pass goes through the same Function, so second derivatives exist."""
    cos, sin = rope.rope_cos_sin(torch.arange(4) * 300, 6, dtype=torch.float64)
    x = random(2, 4, 6).requires_grad_()
    assert torch.autograd.gradgradcheck(lambda t: rope_kernel.rotate_fused(t, cos, sin), (x,))


@pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")  # vmap of addcmul_
def test_torch_func_transforms_take_the_plain_path():
    """vmap and jacrev cannot follow raw pointers; inside them can_fuse says no."""
    x = random(3, 5, 8)

    def rotate(rows):
        return rope.apply_rope(rows, layout="half")

    batched = torch.func.vmap(rotate)(x)
    torch.testing.assert_close(batched, rotate(x), atol=1e-12, rtol=0)
    jacobian = torch.func.jacrev(rotate)(x[0])
    assert jacobian.shape == (5, 8, 5, 8)


def test_fused_and_plain_give_the_same_gradients_with_scaling_and_offset():
    """The attention factor (YaRN) scales cos and sin; the backward pass must carry it."""
    layers = {
        fused: rope.Rope(8, layout="half", scaling=rope_scaling.YaRNScaling(4.0, 64), fused=fused)
        for fused in (True, False)
    }
    weight = random(2, 5, 8)
    grads = {}
    for fused, layer in layers.items():
        x = random(2, 5, 8).requires_grad_()
        (layer(x, start=100) * weight).sum().backward()
        grads[fused] = x.grad
    torch.testing.assert_close(grads[True], grads[False], atol=1e-12, rtol=0)


def test_fused_half_allocates_only_its_output():
    """One pass: no temporaries (the plain path also builds cat(cos, cos))."""
    from pe_book.bench import allocations_mib

    x = random(2, 4, 256, 64, dtype=torch.float32)  # 512 KiB
    layer, plain = rope.Rope(64, layout="half"), rope.Rope(64, layout="half", fused=False)
    assert allocations_mib(lambda: layer(x)) == (0.5, 0.5)
    largest, total = allocations_mib(lambda: plain(x))
    assert largest == 0.5 and total > 0.5


def test_another_default_device_does_not_send_the_output_elsewhere():
    """The output is allocated on x's device (the CPU), whatever the default device is."""
    x = random(2, 6, 8, dtype=torch.float32)
    expected = rope.apply_rope(x, layout="half")
    cos, sin = rope.rope_cos_sin(6, 8)
    with torch.device("meta"):
        got = rope_kernel.rotate_fused(x, cos, sin)
    assert got.device.type == "cpu" and torch.equal(got, expected)


def test_result_does_not_depend_on_the_thread_count():
    x = random(4, 8, 64, 32, dtype=torch.float32)  # large enough to be shared among threads
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = rope.apply_rope(x, layout="half")
        torch.set_num_threads(2)
        two = rope.apply_rope(x, layout="half")
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, two)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_inputs_go_through_the_fused_loop_in_float32(dtype):
    x = random(3, 50, 16, dtype=dtype)
    fused, plain = both_paths(x, positions=torch.arange(50) + 32000)
    assert fused.dtype == dtype
    torch.testing.assert_close(fused, plain, atol=0, rtol=0.01)


def test_inputs_the_loop_does_not_take_fall_back_to_plain_pytorch(monkeypatch):
    cos, sin = rope.rope_cos_sin(5, 8)
    x = random(5, 8, dtype=torch.float32)
    assert not rope_kernel.can_fuse(x.t().contiguous().t(), cos, sin)  # stride along d is not 1
    assert not rope_kernel.can_fuse(x, cos.double(), sin.double())  # dtype mismatch
    assert not rope_kernel.can_fuse(x, cos.clone().requires_grad_(), sin)  # tables, not weights
    assert rope_kernel.can_fuse(x, cos, sin)  # the same input qualifies while the loop is built
    wide = random(5, 16, dtype=torch.float32)[:, ::2]  # a strided view: rotated by the plain path
    fused, plain = both_paths(wide)
    torch.testing.assert_close(fused, plain, atol=2e-6, rtol=0)
    expected = rope.apply_rope(x, layout="half", fused=False)
    monkeypatch.setattr(rope_kernel, "_rope_kernel", None)  # as if the build had been skipped
    assert not rope_kernel.loop_built() and not rope_kernel.can_fuse(x, cos, sin)
    assert torch.equal(rope.apply_rope(x, layout="half"), expected)


def test_empty_inputs_give_empty_outputs():
    x = random(2, 0, 8, dtype=torch.float32)
    assert rope.apply_rope(x, layout="half").shape == (2, 0, 8)
    x = random(0, 3, 8, dtype=torch.float32)
    assert rope.apply_rope(x, layout="half").shape == (0, 3, 8)


def test_the_c_function_refuses_empty_sizes_instead_of_dividing_by_zero():
    from pe_book import _rope_kernel

    with pytest.raises(ValueError, match="must be >= 1"):
        _rope_kernel.rotate(0, 0, 0, 0, 1, 1, 0, 4, 0, 0, 8, "f32", False, 1, "base", False)


def test_stride_zero_and_many_leading_dimensions():
    """An expanded (stride 0) batch and a 6-D input: same as the plain path."""
    expanded = random(1, 2, 9, 8, dtype=torch.float32).expand(3, 2, 9, 8)
    six = random(2, 1, 2, 3, 9, 8, dtype=torch.float32).transpose(2, 3)
    for x in (expanded, six):
        fused, plain = both_paths(x)
        torch.testing.assert_close(fused, plain, atol=2e-6, rtol=0)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: rope.apply_rope(random(3, 4), layout="half", fused=1), TypeError, "fused"),
        (lambda: rope.Rope(4, fused="yes"), TypeError, "fused"),
        (
            lambda: rope_kernel.rotate_fused(random(3, 5), random(3, 2), random(3, 2)),
            ValueError,
            "even last dimension",
        ),
        (
            lambda: rope_kernel.rotate_fused(random(3, 4).half(), *rope.rope_cos_sin(3, 4)),
            TypeError,
            "rotate_fused needs",
        ),
        (
            lambda: rope_kernel.rotate_fused(
                random(3, 4), *rope.rope_cos_sin(2, 4, dtype=torch.float64)
            ),
            ValueError,
            "cos, sin must be",
        ),
    ],
)
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_one_thread_threshold_chapter_12_quotes_is_the_c_files():
    """Chapter 12 says the loop stays on one thread below 16,384 pairs; the C file decides it."""
    import json
    import re
    from pathlib import Path

    root = Path(__file__).parents[1]
    source = (root / "pe_book" / "_rope_kernel_body.h").read_text(encoding="utf-8")
    (threshold,) = re.findall(r"if\(rows \* h >= (\d+)\)", source)
    chapter = json.loads((root / "notebooks" / "12_cost.ipynb").read_text(encoding="utf-8"))
    prose = "".join("".join(c["source"]) for c in chapter["cells"] if c["cell_type"] == "markdown")
    assert f"one thread below {int(threshold):,} pairs" in prose
