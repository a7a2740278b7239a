"""Causal attention with a relative bias read from a table inside the kernel (chapter 12).

Every method of the book whose bias depends on the offset r = m - n alone gives one
number per head and offset: ALiBi -s_h r (chapter 9), T5 its bucket's learned value
(chapter 6), KERPLE and FIRE a function of r (chapter 10). With the table b[h, r],
r = 0 .. nb - 1, the last entry shared by every r >= nb - 1,

    out_m = Σ_{n <= m} softmax_n(scale · q_m · k_n + b[h, min(m - n, nb - 1)]) v_n.

Shaw et al.'s key term is a bias too, q_m · a_r, one small table per *query*:
``table`` may be (B, H, L_q, nb). And their value term needs, per query, the weight
that falls on each clipped offset: ``with_bins=True`` also returns
W[m, r] = Σ_{n: min(m-n, nb-1) = r} α_mn, so that Σ_n α_mn a^V_{min(m-n, K)} = W a^V.

The C kernel (``pe_book/_bias_attention.c``) never stores an L × L tensor: it walks
blocks of queries and keys with a running maximum and sum (FlashAttention), reads the
bias from the table as it goes, and in the backward pass recomputes the weights from the
saved log-sum-exp and sums the table's gradient per offset. The plain path it is tested
against (tests/test_bias_attention.py) builds the (L_q, L_k) bias with :func:`dense_bias`
and calls :func:`pe_book.attention.attention`.

Queries sit at positions start .. start + L_q - 1 (default L_k - L_q, the end of the keys,
as when decoding with a KV cache); keys at 0 .. L_k - 1; query m sees keys n <= m.
"""

from __future__ import annotations

import math

import torch

from pe_book._validate import validate_tensor
from pe_book.attention import query_start

try:  # built by `pip install -e .` (setup.py); absent only if the build was skipped
    from pe_book import _bias_attention
except ImportError:  # pragma: no cover
    _bias_attention = None

__all__ = [
    "ISAS",
    "bias_attention",
    "can_run",
    "dense_bias",
    "kernel_built",
    "kernel_calls",
    "kernel_isa",
    "scratch_bytes",
]

#: The instruction sets the kernel is built for, best first.
ISAS = ("avx512", "avx2", "base")

_CALLS = {"forward": 0, "backward": 0}


def kernel_calls() -> int:
    """How many times the C kernel has run in this process, forward and backward passes
    counted apart: a deterministic sign of the path a model took (chapter 12)."""
    return _CALLS["forward"] + _CALLS["backward"]

#: PyTorch's CPU capability (``torch.backends.cpu.get_cpu_capability()``) -> the build used.
_FROM_ATEN = {"AVX512": "avx512", "AVX512_BF16": "avx512", "AVX512_VNNI": "avx512", "AVX2": "avx2"}


def kernel_built() -> bool:
    """True when the C kernel was built with the package."""
    return _bias_attention is not None


def kernel_isa() -> str:
    """The build the kernel runs: the one matching PyTorch's own CPU dispatch.

    ``ATEN_CPU_CAPABILITY=avx2`` (an environment variable PyTorch reads at start) makes
    ATen run its AVX2 kernels on an AVX-512 CPU; this kernel follows it, so one variable
    pins both. Falls back to the best build this CPU supports.
    """
    wanted = _FROM_ATEN.get(torch.backends.cpu.get_cpu_capability(), "base")
    if _bias_attention is None:
        return "base"
    for isa in ISAS[ISAS.index(wanted) :]:
        if _bias_attention.supported(isa):
            return isa
    return "base"


def _transforms_active() -> bool:
    active = getattr(torch._C, "_are_functorch_transforms_active", None)
    return bool(active()) if active is not None else False


def can_run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, table: torch.Tensor | None) -> bool:
    """Whether :func:`bias_attention` runs the C kernel on these inputs (else the plain path).

    Needs the built kernel; CPU tensors q, k, v (B, H, L, d) of one dtype, float32 or
    float64, with unit stride along d; the table in the same dtype; eager mode (not
    under ``torch.compile`` or ``torch.func`` transforms, which cannot follow raw pointers).
    """
    tensors = [q, k, v] + ([table] if table is not None else [])
    return (
        _bias_attention is not None
        and all(t.device.type == "cpu" and t.dtype == q.dtype for t in tensors)
        and q.dtype in (torch.float32, torch.float64)
        and all(t.dim() == 4 and t.stride(-1) == 1 for t in (q, k, v))
        and not torch.compiler.is_compiling()
        and not _transforms_active()
    )


def dense_bias(
    table: torch.Tensor, q_len: int, k_len: int, start: int | None = None
) -> torch.Tensor:
    """The (..., q_len, k_len) bias the table stands for: b[..., min(m - n, nb - 1)].

    Entries with n > m (masked in causal attention) hold b[..., 0]. The plain path:
    what the kernel computes without storing, for tests and for the fallback.
    """
    start = query_start(q_len, k_len, start)
    offset = torch.arange(start, start + q_len)[:, None] - torch.arange(k_len)[None, :]
    index = offset.clamp(0, table.shape[-1] - 1).to(table.device)  # (q_len, k_len)
    if table.dim() == 4 and table.shape[-2] != 1:  # one table per query (Shaw)
        return table.gather(-1, index.expand(*table.shape[:-1], k_len))
    if table.dim() == 4:
        table = table[..., 0, :]  # (B or 1, H or 1, nb)
    return table[..., index]  # (..., q_len, k_len)


def _strides(t: torch.Tensor, sizes: tuple[int, ...]) -> list[int]:
    """Element strides of t's first three dims, 0 where t broadcasts (size 1)."""
    return [0 if t.shape[i] == 1 and sizes[i] != 1 else t.stride(i) for i in range(3)]


def _pointers(*tensors: torch.Tensor | None) -> list[int]:
    return [0 if t is None else t.data_ptr() for t in tensors]


def _sizes(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, table: torch.Tensor | None, start: int
) -> list[int]:
    """The kernel's 20 sizes: strides of q, k, v and the table, then B, H, L_q, L_k, d, d_v,
    nb and the first query's position."""
    batch, heads, q_len, dim = q.shape
    n_bins = table.shape[-1] if table is not None else 1
    table_strides = _strides(table, (batch, heads, q_len)) if table is not None else [0, 0, 0]
    return [
        *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *table_strides,
        batch, heads, q_len, k.shape[-2], dim, v.shape[-1], n_bins, start,
    ]  # fmt: skip


def scratch_bytes(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, backward: bool = False
) -> int:
    """Bytes of scratch memory one task of the kernel allocates (each thread holds one at a
    time): packed keys and values, and blocks of 48 queries by 128 keys. It grows with L,
    never with L², and PyTorch's profiler cannot see it (C's malloc), so it is reported here."""
    _check(q, k, v, None)
    start = query_start(q.shape[-2], k.shape[-2])
    if _bias_attention is None:
        return 0
    mode = "backward" if backward else "forward"
    sizes = _sizes(q, k, v, None, start)
    return _bias_attention.scratch(mode, kernel_isa(), q.dtype == torch.float64, sizes)


class _Kernel(torch.autograd.Function):
    """out, bins = kernel(q, k, v, table); backward through the kernel's backward pass."""

    @staticmethod
    def forward(ctx, q, k, v, table, start, scale, want_bins):  # type: ignore[override]
        batch, heads, q_len, _ = q.shape
        n_bins = table.shape[-1] if table is not None else 1
        reversed_table = table.flip(-1).contiguous() if table is not None else None
        out = q.new_empty(batch, heads, q_len, v.shape[-1])
        lse = q.new_empty(batch, heads, q_len)
        bins = q.new_zeros(batch, heads, q_len, n_bins) if want_bins else None
        _CALLS["forward"] += 1
        _bias_attention.run(
            "forward", kernel_isa(), q.dtype == torch.float64,
            _pointers(q, k, v, reversed_table, None, None, None, out, lse, bins,
                      None, None, None, None),
            _sizes(q, k, v, reversed_table, start), scale, torch.get_num_threads(),
        )  # fmt: skip
        ctx.save_for_backward(q, k, v, reversed_table, out, lse, bins)
        ctx.start, ctx.scale, ctx.table_shape = start, scale, None if table is None else table.shape
        if bins is None:
            ctx.mark_non_differentiable(lse)
            return out, lse
        return out, bins.flip(-1)  # the kernel's order is reversed

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out, grad_bins):  # type: ignore[override]
        q, k, v, reversed_table, out, lse, bins = ctx.saved_tensors
        batch, heads, q_len, dim = q.shape
        k_len, d_v = k.shape[-2], v.shape[-1]
        n_bins = reversed_table.shape[-1] if reversed_table is not None else 1
        grad_out = grad_out.contiguous()
        dsum = (grad_out * out).sum(-1)  # D_m = dO_m · O_m
        gtable = None
        if bins is not None and grad_bins is not None:
            gtable = grad_bins.flip(-1).contiguous()  # (B, H, L_q, nb), kernel order
            dsum = dsum + (gtable * bins).sum(-1)
        dsum = dsum.contiguous()
        dq = torch.zeros_like(q, memory_format=torch.contiguous_format)
        dk = torch.zeros(batch, heads, k_len, dim, dtype=q.dtype)
        dv = torch.zeros(batch, heads, k_len, d_v, dtype=q.dtype)
        table_grad = reversed_table is not None and ctx.needs_input_grad[3]
        per_query = (
            reversed_table is not None and _strides(reversed_table, (batch, heads, q_len))[2]
        )
        dtable = (
            torch.zeros(batch, heads, q_len if per_query else 1, n_bins, dtype=q.dtype)
            if table_grad
            else None
        )
        _CALLS["backward"] += 1
        _bias_attention.run(
            "backward", kernel_isa(), q.dtype == torch.float64,
            _pointers(q, k, v, reversed_table, grad_out, dsum, gtable, None, lse, None,
                      dq, dk, dv, dtable),
            _sizes(q, k, v, reversed_table, ctx.start), ctx.scale, torch.get_num_threads(),
        )  # fmt: skip
        grad_table = None
        if dtable is not None:
            shape = ctx.table_shape
            dtable = dtable.flip(-1)
            for axis in range(3):  # sum over the axes the table broadcasts along
                if shape[axis] == 1 and dtable.shape[axis] != 1:
                    dtable = dtable.sum(axis, keepdim=True)
            grad_table = dtable.reshape(shape)
        return dq, dk, dv, grad_table, None, None, None


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, table: torch.Tensor | None) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        validate_tensor(name, t, ndim=4, floating=True)
    batch, heads, q_len, dim = q.shape
    if k.shape[:2] != (batch, heads) or v.shape[:3] != k.shape[:3] or k.shape[-1] != dim:
        raise ValueError(
            f"q (B, H, L_q, d), k (B, H, L_k, d), v (B, H, L_k, d_v) disagree: "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if q.dtype != k.dtype or q.dtype != v.dtype:
        raise TypeError("q, k and v must share one dtype")
    if table is None:
        return
    validate_tensor("table", table, ndim=4, floating=True)
    bt, ht, rt, n_bins = table.shape
    if bt not in (1, batch) or ht not in (1, heads) or rt not in (1, q_len) or n_bins < 1:
        raise ValueError(
            f"table must be (1 or B, 1 or H, 1 or L_q, nb) = (1|{batch}, 1|{heads}, 1|{q_len}, "
            f">= 1), got {tuple(table.shape)}"
        )


def bias_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    table: torch.Tensor | None,
    *,
    start: int | None = None,
    scale: float | None = None,
    with_bins: bool = False,
    fused: bool = True,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Causal softmax(scale q kᵀ + b[min(m - n, nb - 1)]) v, the bias read from ``table``.

    Shapes: q (B, H, L_q, d), k (B, H, L_k, d), v (B, H, L_k, d_v); ``table``
    (1 or B, 1 or H, 1 or L_q, nb) or None (no bias); returns (B, H, L_q, d_v), and with
    ``with_bins`` also the weights per clipped offset, (B, H, L_q, nb). ``scale`` defaults
    to 1/√d. Differentiable in q, k, v and the table. ``fused=False``, or inputs the
    kernel does not take (:func:`can_run`), run the plain path: :func:`dense_bias` and
    softmax, which stores (B, H, L_q, L_k) scores.
    """
    _check(q, k, v, table)
    q_len, k_len = q.shape[-2], k.shape[-2]
    if q_len > k_len:
        raise ValueError(f"q_len must be <= k_len (causal), got {q_len} > {k_len}")
    start = query_start(q_len, k_len, start)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    if table is not None and table.dtype != q.dtype:
        table = table.to(q.dtype)
    if fused and can_run(q, k, v, table):
        out, bins = _Kernel.apply(q, k, v, table, start, scale, with_bins)
        return (out, bins) if with_bins else out
    return _plain(q, k, v, table, start, scale, with_bins)


def _plain(q, k, v, table, start, scale, with_bins):  # type: ignore[no-untyped-def]
    """The reference: every score stored, (B, H, L_q, L_k)."""
    q_len, k_len = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) * scale  # (B, H, L_q, L_k)
    if table is not None:
        scores = scores + dense_bias(table, q_len, k_len, start)
    offset = torch.arange(start, start + q_len)[:, None] - torch.arange(k_len)[None, :]
    scores = scores.masked_fill((offset < 0).to(q.device), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    if not with_bins:
        return out
    n_bins = table.shape[-1] if table is not None else 1
    index = offset.clamp(0, n_bins - 1).to(q.device).expand_as(weights)
    bins = weights.new_zeros(*weights.shape[:-1], n_bins).scatter_add(-1, index, weights)
    return out, bins
