"""Fused RoPE: one pass over x in a small C loop, both layouts (chapter 12, section 12.6).

Pair j of a row is (x_j, x_{j+h}), h = d/2, in the "half" layout and (x_{2j}, x_{2j+1}) in
the "interleaved" one; with c = cos(mθ_j), s = sin(mθ_j) each pair (a, b) becomes

    (a c - b s,  b c + a s).

Eager PyTorch has no single operation that pairs coordinates half a row apart, so the plain
half path (``rope._rotate``) takes three passes over memory, and the interleaved one a
complex multiply that builds complex temporaries. The C loop in ``pe_book/_rope_kernel.c``
reads each pair once and writes it once, like a copy, in float32, float64 or bfloat16
(rotated in float32, rounded back once). :func:`rotate_fused` wraps it as an autograd
function (the backward pass is the rotation by minus the angle, the transpose, through the
same loop). ``apply_rope`` and ``Rope`` use it whenever :func:`can_fuse` says the input
suits it, and the plain path otherwise; both give the same numbers to rounding
(tests/test_rope_kernel.py).

Outputs of at least :data:`STREAM_BYTES` are written with streaming stores, as glibc's
``memcpy`` writes a large copy: a plain store first reads its cache line from memory, which
on output too large for the cache adds half again to the traffic of a copy.
"""

from __future__ import annotations

import torch

from pe_book._validate import validate_choice, validate_tensor
from pe_book.sinusoidal import LAYOUTS

try:  # built by `pip install -e .` (setup.py); absent only if the build was skipped
    from pe_book import _rope_kernel
except ImportError:  # pragma: no cover - exercised by the fallback tests via monkeypatch
    _rope_kernel = None

__all__ = ["STREAM_BYTES", "can_fuse", "kernel_isa", "loop_built", "rotate_fused"]

#: Outputs this large or larger bypass the caches (streaming stores); smaller ones stay in
#: cache for the attention that reads them next. 8 MiB: more than a core's share of the
#: last-level cache on the machines this book was measured on.
STREAM_BYTES = 8 * 2**20

_STORAGE = {torch.float32: "f32", torch.float64: "f64", torch.bfloat16: "bf16"}
_FROM_ATEN = {"AVX512": "avx512", "AVX512_BF16": "avx512", "AVX512_VNNI": "avx512", "AVX2": "avx2"}


def loop_built() -> bool:
    """True when the compiled loop was built with the package."""
    return _rope_kernel is not None


def kernel_isa() -> str:
    """The build the loop runs: the one matching PyTorch's CPU dispatch (ATEN_CPU_CAPABILITY
    pins both), or the best this CPU supports below it."""
    wanted = _FROM_ATEN.get(torch.backends.cpu.get_cpu_capability(), "base")
    isas = ("avx512", "avx2", "base")
    if _rope_kernel is None:
        return "base"
    return next(isa for isa in isas[isas.index(wanted) :] if _rope_kernel.supported(isa))


def _transforms_active() -> bool:
    """True inside torch.func transforms (vmap, grad, jacrev), which raw pointers cannot follow."""
    active = getattr(torch._C, "_are_functorch_transforms_active", None)
    return bool(active()) if active is not None else False


def _shapes_fit(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> bool:
    length, dim = x.shape[-2], x.shape[-1]
    return dim % 2 == 0 and cos.shape == sin.shape == (length, dim // 2)


def _table_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def can_fuse(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> bool:
    """Whether :func:`rotate_fused` may take x (..., L, d) with cos, sin (L, d/2).

    Needs the compiled loop; an even d and tables of shape (L, d/2); a CPU tensor in
    float32, float64 or bfloat16 with cos and sin in float64 for float64 and float32
    otherwise, not requiring gradients (they are tables, not parameters); unit stride
    along d (the d numbers of a row adjacent in memory); and eager mode: under
    ``torch.compile`` the plain path lets the compiler fuse it instead, and inside
    ``torch.func`` transforms (vmap, jacrev) the plain path is the one they can trace.
    """
    return (
        _rope_kernel is not None
        and x.dim() >= 2
        and _shapes_fit(x, cos, sin)
        and x.device.type == cos.device.type == sin.device.type == "cpu"
        and x.dtype in _STORAGE
        and cos.dtype == sin.dtype == _table_dtype(x)
        and not (cos.requires_grad or sin.requires_grad)
        and x.stride(-1) == 1
        and not torch.compiler.is_compiling()
        and not _transforms_active()
    )


def _launch(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str) -> torch.Tensor:
    """Run the C loop on x (..., L, d); returns a new contiguous tensor."""
    if _rope_kernel is None:
        raise RuntimeError("pe_book._rope_kernel is not built; reinstall with `pip install -e .`")
    if x.stride(-1) != 1:
        x = x.contiguous()
    length, dim = x.shape[-2], x.shape[-1]
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)  # not the default device
    if out.numel() == 0:
        return out
    view = x.reshape(-1, *x.shape[-3:]) if x.dim() > 4 else x  # copies if strides do not allow
    while view.dim() < 4:
        view = view.unsqueeze(0)
    cos, sin = cos.contiguous(), sin.contiguous()
    half = dim // 2
    stream = (
        out.nbytes >= STREAM_BYTES
        and out.data_ptr() % 64 == 0
        and (half * out.element_size()) % 64 == 0  # every vector store aligned
    )
    _rope_kernel.rotate(
        view.data_ptr(), cos.data_ptr(), sin.data_ptr(), out.data_ptr(),
        view.shape[0], view.shape[1], length, half, *view.stride()[:3],
        _STORAGE[x.dtype], layout == "interleaved", torch.get_num_threads(), kernel_isa(),
        stream,
    )  # fmt: skip
    return out


class _Rotate(torch.autograd.Function):
    """Forward: the C loop. Backward: the rotation by minus the angle (cos, -sin), which is the
    transpose; it goes through this same Function, so gradients of gradients work too."""

    @staticmethod
    def forward(ctx, x, cos, sin, layout):  # type: ignore[override]
        ctx.save_for_backward(cos, sin)
        ctx.layout = layout
        return _launch(x, cos, sin, layout)

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        cos, sin = ctx.saved_tensors
        return _Rotate.apply(grad, cos, -sin, ctx.layout), None, None, None


def rotate_fused(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str = "half"
) -> torch.Tensor:
    """Rotate every pair of x (..., L, d) by cos, sin (L, d/2) in one pass; differentiable in x.

    Same result as the plain path to rounding; check :func:`can_fuse` first.
    """
    validate_tensor("x", x, min_ndim=2, floating=True)
    layout = validate_choice("layout", layout, LAYOUTS)
    if not _shapes_fit(x, cos, sin):
        raise ValueError(
            f"x must have an even last dimension d and cos, sin must be (L, d/2); got x "
            f"{tuple(x.shape)}, cos {tuple(cos.shape)}, sin {tuple(sin.shape)}"
        )
    if not can_fuse(x, cos, sin):
        raise TypeError(
            "rotate_fused needs a CPU float32/float64/bfloat16 x with unit stride along its "
            "last dimension, and cos and sin without gradients in float64 for float64 x, "
            f"float32 otherwise (and the built kernel); got x {x.dtype} on {x.device}, "
            f"stride {x.stride()}, cos {cos.dtype}"
        )
    return _Rotate.apply(x, cos, sin, layout)
