"""Fused half-layout RoPE: one pass over x in a small C loop (chapter 12, section 12.6).

For the "half" layout, pair j of a row is (x_j, x_{j+h}), h = d/2, and

    out_j     = x_j cos(mθ_j) - x_{j+h} sin(mθ_j)
    out_{j+h} = x_{j+h} cos(mθ_j) + x_j sin(mθ_j).

Eager PyTorch has no single operation that pairs coordinates half a row apart, so
the plain path (``rope._rotate``) takes three passes over memory. The C loop in
``pe_book/_rope_kernel.c`` reads each pair once and writes it once, like a copy.
:func:`rotate_half_fused` wraps it as an autograd function (the backward pass is
the rotation by minus the angle, the transpose, through the same loop).
``apply_rope`` and ``Rope`` use it whenever :func:`can_fuse` says the input suits
it, and the plain path otherwise; both give the same numbers to rounding
(tests/test_rope_kernel.py).
"""

from __future__ import annotations

import torch

from pe_book._validate import validate_tensor

try:  # built by `pip install -e .` (setup.py); absent only if the build was skipped
    from pe_book import _rope_kernel
except ImportError:  # pragma: no cover - exercised by the fallback tests via monkeypatch
    _rope_kernel = None

__all__ = ["can_fuse", "loop_built", "rotate_half_fused"]


def loop_built() -> bool:
    """True when the compiled loop was built with the package."""
    return _rope_kernel is not None


def _transforms_active() -> bool:
    """True inside torch.func transforms (vmap, grad, jacrev), which raw pointers cannot follow."""
    active = getattr(torch._C, "_are_functorch_transforms_active", None)
    return bool(active()) if active is not None else False


def _shapes_fit(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> bool:
    length, dim = x.shape[-2], x.shape[-1]
    return dim % 2 == 0 and cos.shape == sin.shape == (length, dim // 2)


def can_fuse(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> bool:
    """Whether :func:`rotate_half_fused` may take x (..., L, d) with cos, sin (L, d/2).

    Needs the compiled loop; an even d and tables of shape (L, d/2); a CPU tensor in
    float32 or float64 with cos and sin in the same dtype and not requiring
    gradients (they are tables, not parameters); unit stride along d (the d
    numbers of a row adjacent in memory); and eager mode: under ``torch.compile``
    the plain path lets the compiler fuse it instead, and inside ``torch.func``
    transforms (vmap, jacrev) the plain path is the one they can trace.
    """
    return (
        _rope_kernel is not None
        and x.dim() >= 2
        and _shapes_fit(x, cos, sin)
        and x.device.type == cos.device.type == sin.device.type == "cpu"
        and x.dtype in (torch.float32, torch.float64)
        and cos.dtype == sin.dtype == x.dtype
        and not (cos.requires_grad or sin.requires_grad)
        and x.stride(-1) == 1
        and not torch.compiler.is_compiling()
        and not _transforms_active()
    )


def _launch(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
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
    n0, n1 = view.shape[0], view.shape[1]
    s0, s1, s_t = view.stride(0), view.stride(1), view.stride(2)
    _rope_kernel.rotate_half(
        view.data_ptr(), cos.data_ptr(), sin.data_ptr(), out.data_ptr(),
        n0, n1, length, dim // 2, s0, s1, s_t,
        x.dtype == torch.float64, torch.get_num_threads(),
    )  # fmt: skip
    return out


class _RotateHalf(torch.autograd.Function):
    """Forward: the C loop. Backward: the rotation by minus the angle (cos, -sin), which is the
    transpose; it goes through this same Function, so gradients of gradients work too."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        ctx.save_for_backward(cos, sin)
        return _launch(x, cos, sin)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:  # type: ignore[override]
        cos, sin = ctx.saved_tensors
        return _RotateHalf.apply(grad, cos, -sin), None, None


def rotate_half_fused(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Half-layout rotation of x (..., L, d) by cos, sin (L, d/2), in one pass; differentiable in x.

    Same result as the plain three-pass path to rounding; check :func:`can_fuse` first.
    """
    validate_tensor("x", x, min_ndim=2, floating=True)
    if not _shapes_fit(x, cos, sin):
        raise ValueError(
            f"x must have an even last dimension d and cos, sin must be (L, d/2); got x "
            f"{tuple(x.shape)}, cos {tuple(cos.shape)}, sin {tuple(sin.shape)}"
        )
    if not can_fuse(x, cos, sin):
        raise TypeError(
            "rotate_half_fused needs a CPU float32/float64 x with unit stride along its last "
            f"dimension, and cos and sin of the same dtype without gradients (and the built "
            f"kernel); got x {x.dtype} on {x.device}, stride {x.stride()}, cos {cos.dtype}"
        )
    return _RotateHalf.apply(x, cos, sin)
