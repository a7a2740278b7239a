"""pe_book.rope_kernel in both layouts and every storage type: the C loop equals the plain
PyTorch path (the complex multiply for interleaved pairs), streaming stores included, and
each instruction-set build gives the same bits."""

import json
import os
import subprocess
import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book import rope, rope_kernel


def random(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


@settings(max_examples=60, deadline=None)
@given(
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    length=st.integers(1, 40),
    half=st.integers(1, 40),
    layout=st.sampled_from(["interleaved", "half"]),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.bfloat16]),
    seed=st.integers(0, 2**16),
)
def test_fused_equals_plain_in_both_layouts(lead, length, half, layout, dtype, seed):
    x = random(*lead, length, 2 * half, seed=seed, dtype=dtype)
    positions = torch.arange(length) * 31
    fused = rope.apply_rope(x, positions, layout=layout)
    plain = rope.apply_rope(x, positions, layout=layout, fused=False)
    assert fused.dtype == dtype and fused.shape == x.shape
    if dtype == torch.bfloat16:  # both rotate in float32 and round once: at most one bf16 step
        torch.testing.assert_close(fused, plain, atol=0, rtol=2**-7)
    else:
        tolerance = 1e-12 if dtype == torch.float64 else 2e-6
        torch.testing.assert_close(fused, plain, atol=tolerance, rtol=0)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_the_interleaved_loop_is_the_complex_multiply_and_has_its_gradient(layout):
    cos, sin = rope.rope_cos_sin(torch.arange(6) * 1000, 8, dtype=torch.float64)
    x = random(2, 3, 6, 8, dtype=torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: rope_kernel.rotate_fused(t, cos, sin, layout), (x,))


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_outputs_past_the_cache_stream_and_keep_their_values(layout, dtype):
    """8 MiB or more: streaming stores, the same numbers as below the threshold."""
    x = random(2, 8, 2048 if dtype == torch.float32 else 4096, 64, dtype=dtype)
    assert x.nbytes >= rope_kernel.STREAM_BYTES
    fused = rope.apply_rope(x, layout=layout)
    parts = [rope.apply_rope(part, layout=layout) for part in x.split(1)]  # below: plain stores
    assert torch.equal(fused, torch.cat(parts))


_PROBE = """
import json, torch
from pe_book import rope_kernel
# values whose every step is correctly rounded on any instruction set: no transcendental
x = ((torch.arange(2 * 3 * 37 * 64) % 97 - 48) / 16.0).reshape(2, 3, 37, 64)
cos = (torch.arange(37 * 32) % 13 - 6) / 7.0
sin = (torch.arange(37 * 32) % 11 - 5) / 9.0
cos, sin = cos.reshape(37, 32), sin.reshape(37, 32)
out = [rope_kernel.rotate_fused(t, cos, sin, layout).float().tolist()
       for layout in ("interleaved", "half") for t in (x, x.bfloat16())]
print(json.dumps([rope_kernel.kernel_isa(), out]))
"""


@pytest.mark.parametrize("capability", ["avx2", "default"])
def test_every_instruction_set_build_gives_the_same_bits(capability):
    """No fused multiply-add contraction: every build rounds alike (ATEN_CPU_CAPABILITY pins)."""
    runs = {}
    for name, env in (
        ("here", os.environ),
        ("pinned", {**os.environ, "ATEN_CPU_CAPABILITY": capability}),
    ):
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                              env=env, check=True)  # fmt: skip
        runs[name] = json.loads(done.stdout)
    assert runs["pinned"][0] == ("avx2" if capability == "avx2" else "base")
    assert runs["pinned"][1] == runs["here"][1]
