"""pe_book.bias_attention: the C kernel equals the plain path (every score stored), forward and
backward, for every table shape, decoding offset and instruction-set build."""

import json
import math
import os
import subprocess
import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book import bias_attention as ba


def random(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def both(q, k, v, table, **kwargs):
    """(kernel, plain) results and the gradients of a fixed random loss through each."""
    results = []
    for fused in (True, False):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        if table is not None:
            leaves.append(table.clone().requires_grad_())
        out = ba.bias_attention(*leaves[:3], leaves[3] if table is not None else None,
                                fused=fused, **kwargs)  # fmt: skip
        outs = out if isinstance(out, tuple) else (out,)
        loss = sum((o * random(*o.shape, seed=9, dtype=o.dtype)).sum() for o in outs)
        loss.backward()
        results.append(([o.detach() for o in outs], [t.grad for t in leaves]))
    return results


def test_the_kernel_is_built_and_runs_these_inputs():
    q = random(1, 2, 8, 4, dtype=torch.float32)
    assert ba.kernel_built() and ba.can_run(q, q, q, None)
    assert ba.kernel_isa() in ba.ISAS


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 2),
    heads=st.integers(1, 3),
    q_len=st.integers(1, 140),
    extra_keys=st.integers(0, 70),
    dim=st.integers(1, 20),
    d_v=st.integers(1, 20),
    table=st.sampled_from(["none", "per head", "per query", "shared"]),
    n_bins=st.integers(1, 300),
    bins=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    seed=st.integers(0, 2**16),
)
def test_kernel_equals_the_plain_path_with_gradients(
    batch, heads, q_len, extra_keys, dim, d_v, table, n_bins, bins, dtype, seed
):
    """Any shapes, nb below or above the length, queries at the end of the keys (decoding)."""
    k_len = q_len + extra_keys
    q = random(batch, heads, q_len, dim, seed=seed, dtype=dtype)
    k = random(batch, heads, k_len, dim, seed=seed + 1, dtype=dtype)
    v = random(batch, heads, k_len, d_v, seed=seed + 2, dtype=dtype)
    shape = {"none": None, "per head": (1, heads, 1, n_bins), "shared": (1, 1, 1, n_bins),
             "per query": (batch, heads, q_len, n_bins)}[table]  # fmt: skip
    t = None if shape is None else random(*shape, seed=seed + 3, dtype=dtype) * 3
    (outs, grads), (plain_outs, plain_grads) = both(q, k, v, t, with_bins=bins)
    tolerance = (
        {"atol": 1e-11, "rtol": 1e-9} if dtype == torch.float64 else {"atol": 3e-5, "rtol": 1e-4}
    )
    for got, want in zip(outs + grads, plain_outs + plain_grads, strict=True):
        torch.testing.assert_close(got, want, **tolerance)


def test_an_explicit_start_places_the_queries():
    """Queries at positions 20..59 of 130 keys see keys 0..m only."""
    q, k, v = random(2, 2, 40, 8), random(2, 2, 130, 8, seed=1), random(2, 2, 130, 8, seed=2)
    table = random(1, 2, 1, 40, seed=3)
    (outs, grads), (plain_outs, plain_grads) = both(q, k, v, table, start=20)
    for got, want in zip(outs + grads, plain_outs + plain_grads, strict=True):
        torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-10)
    assert grads[1][:, :, 60:].abs().max() == 0  # keys past the last query get no gradient


def test_gradcheck_through_the_kernel_in_float64():
    """Finite differences against the kernel's backward pass, table included."""
    q, k, v = (random(1, 2, 9, 3, seed=s).requires_grad_() for s in range(3))
    table = random(1, 2, 1, 5, seed=4).requires_grad_()
    assert torch.autograd.gradcheck(lambda *a: ba.bias_attention(*a), (q, k, v, table))


def test_gradcheck_of_the_bin_sums_with_one_table_per_query():
    """Shaw et al.'s case: a table per query, and the weights per clipped offset."""
    q, k, v = (random(1, 1, 7, 2, seed=s).requires_grad_() for s in range(3))
    table = random(1, 1, 7, 3, seed=5).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda *a: ba.bias_attention(*a, with_bins=True), (q, k, v, table)
    )


def test_bin_sums_are_the_weights_per_clipped_offset():
    q, k, v = (random(1, 1, 12, 4, seed=s) for s in range(3))
    _, bins = ba.bias_attention(q, k, v, random(1, 1, 12, 4, seed=3), with_bins=True)
    torch.testing.assert_close(bins.sum(-1), torch.ones(1, 1, 12, dtype=torch.float64))
    assert bins[0, 0, 0, 1:].abs().max() == 0  # the first query sees only offset 0


def test_inputs_the_kernel_does_not_take_run_the_plain_path():
    """bfloat16 is refused by the kernel and computed by the plain path instead."""
    q, k, v = (random(1, 2, 10, 4, seed=s).bfloat16() for s in range(3))
    table = random(1, 2, 1, 10, seed=3).bfloat16()
    assert not ba.can_run(q, k, v, table)
    out = ba.bias_attention(q, k, v, table)
    assert out.dtype == torch.bfloat16 and out.shape == (1, 2, 10, 4)


def test_scratch_memory_grows_with_l_not_l_squared():
    """What the C code allocates (the profiler cannot see it): linear in L, far below H·L²."""
    sizes = {}
    for seq_len in (1024, 4096):
        q = torch.empty(2, 8, seq_len, 64)
        sizes[seq_len] = [ba.scratch_bytes(q, q, q, backward=b) for b in (False, True)]
        assert max(sizes[seq_len]) < 8 * seq_len**2 * 4 / 4  # a quarter of one (H, L, L) bias
    assert all(b < 4.5 * a for a, b in zip(sizes[1024], sizes[4096], strict=True))


_ISA_PROBE = """
import json, torch
from pe_book import bias_attention as ba
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, 3, 150, 24, generator=g) for _ in range(3))
t = torch.randn(1, 3, 1, 150, generator=g)
print(json.dumps([ba.kernel_isa(), ba.bias_attention(q, k, v, t).tolist()]))
"""


@pytest.mark.parametrize("capability", ["avx2", "default"])
def test_each_instruction_set_build_gives_the_same_numbers(capability):
    """ATEN_CPU_CAPABILITY pins PyTorch's dispatch and this kernel's build alike."""
    environment = {**os.environ, "ATEN_CPU_CAPABILITY": capability}
    runs = {}
    for name, env in (("here", os.environ), (capability, environment)):
        done = subprocess.run([sys.executable, "-c", _ISA_PROBE], capture_output=True, text=True,
                              env=env, check=True)  # fmt: skip
        isa, out = json.loads(done.stdout)
        runs[name] = (isa, torch.tensor(out))
    assert runs[capability][0] == ("avx2" if capability == "avx2" else "base")
    torch.testing.assert_close(runs[capability][1], runs["here"][1], atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: ba.bias_attention(*(random(2, 2, 4, 3),) * 3, random(1, 2, 1)), ValueError,
         "table"),
        (lambda: ba.bias_attention(*(random(2, 2, 4, 3),) * 3, random(3, 2, 1, 5)), ValueError,
         "table must be"),
        (lambda: ba.bias_attention(random(1, 1, 5, 3), *(random(1, 1, 4, 3),) * 2, None),
         ValueError, "q_len must be <= k_len"),
        (lambda: ba.bias_attention(random(1, 1, 5, 3), random(1, 1, 5, 2), random(1, 1, 5, 3),
                                   None), ValueError, "disagree"),
        (lambda: ba.bias_attention(random(1, 1, 5, 3), random(1, 1, 5, 3).float(),
                                   random(1, 1, 5, 3), None), TypeError, "one dtype"),
    ],
)  # fmt: skip
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_default_scale_is_one_over_root_d():
    q, k, v = (random(1, 1, 6, 16, seed=s) for s in range(3))
    torch.testing.assert_close(
        ba.bias_attention(q, k, v, None), ba.bias_attention(q, k, v, None, scale=1 / math.sqrt(16))
    )
