"""Chapter 1 (symmetry): permutation matrices, attention, and positions a layer cannot see."""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from pe_book import attention as attn
from pe_book import symmetry
from pe_book.exercises.grading import Case, ExerciseMismatch, attempt, check, grader
from pe_book.exercises.policy import float32_note, show
from pe_book.exercises.secret import seeded

__all__ = [
    "check_attention",
    "check_invisible_positions",
    "check_permutation_matrix",
    "check_recover_positions",
]


def _perm_kind(perm: tuple[int, ...]) -> str:
    if len(perm) == 1:
        return "one token"
    involution = all(perm[perm[i]] == i for i in range(len(perm)))
    return "its own inverse (P = Pᵀ)" if involution else "not its own inverse (P ≠ Pᵀ)"


def check_permutation_matrix(reader: Callable[[Sequence[int]], torch.Tensor]) -> None:
    """Chapter 1: ``reader(perm)`` must return P with P @ X == X[perm] (exact 0s and 1s)."""
    perms = [p for n in (1, 2, 3) for p in itertools.permutations(range(n))]
    perms += [(4, 0, 3, 1, 2), (5, 4, 3, 2, 1, 0)]
    cases = [Case((list(p),), f"perm={list(p)}", kind=_perm_kind(p)) for p in perms]
    check(
        "permutation_matrix",
        reader,
        symmetry.permutation_matrix,
        cases,
        atol=0.0,  # entries are exactly 0 and 1 in any dtype
        locate=lambda case, index: f"row {index[0]}, column {index[1]}",
    )


def _attention_cases() -> list[Case]:
    generator = seeded(1)
    cases = []
    for q_len, k_len, dim, causal, kind in [
        (1, 1, 2, False, "one query, one key"),
        (3, 3, 4, False, "no mask"),
        (4, 4, 8, True, "causal, as many queries as keys"),
        (2, 5, 4, False, "fewer queries than keys"),
        (2, 5, 4, True, "causal, fewer queries than keys (decoding with a KV cache)"),
        (5, 5, 3, True, "causal, odd d"),
    ]:
        q = torch.randn(q_len, dim, generator=generator, dtype=torch.float64)
        k = torch.randn(k_len, dim, generator=generator, dtype=torch.float64)
        v = torch.randn(k_len, dim + 1, generator=generator, dtype=torch.float64)
        description = f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, causal={causal}"
        cases.append(Case((q, k, v, causal), description, kind=kind))
    # query 0 sees key 0 only, and scores it -30: a finite mask fill such as -20 gives the
    # hidden keys more weight than the visible one (the cold read's -20 passed every randn
    # case); its output is v_0 exactly, so float32 arithmetic still meets 1e-6
    q = torch.randn(4, 8, generator=generator, dtype=torch.float64)
    k = torch.randn(4, 8, generator=generator, dtype=torch.float64)
    v = torch.randn(4, 9, generator=generator, dtype=torch.float64)
    q[0] = -30 * 8**0.5 * k[0] / k[0].dot(k[0])  # q_0 · k_0 / √d = -30
    description = "q (4, 8), k (4, 8), v (4, 9), causal=True"
    cases.append(Case((q, k, v, True), description, kind="causal, query 0's one key scores -30"))
    return cases


_TORCH_DIR = str(Path(torch.__file__).resolve().parent)
_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])
_CHECKERS_DIR = str(Path(__file__).resolve().parent)

#: Exercise 1.2 asks for the formula written out; these hand it over whole.
_WHOLE_ATTENTION = {
    F.scaled_dot_product_attention: "torch.nn.functional.scaled_dot_product_attention"
}


def _called_from_package() -> bool:
    """True when the innermost caller outside torch is pe_book's own code (not a checker)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_TORCH_DIR):
        frame = frame.f_back
    if frame is None:
        return False
    path = str(Path(frame.f_code.co_filename).resolve())
    return path.startswith(_PACKAGE_DIR) and not path.startswith(_CHECKERS_DIR)


class _WholeAttentionSeen(TorchFunctionMode):
    """Notes a call of a whole attention function made by the reader's code."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = _WHOLE_ATTENTION.get(func)
        if name is not None and name not in self.seen and not _called_from_package():
            self.seen.append(name)
        return func(*args, **(kwargs or {}))


def _own_attention(reader: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """``reader``, failing the case when it hands the work to PyTorch's attention."""

    def written(*args: object) -> torch.Tensor:
        with _WholeAttentionSeen() as mode:
            answer = reader(*args)
        if mode.seen:
            raise ExerciseMismatch(
                f"your function calls `{mode.seen[0]}`, which computes the whole of"
                " softmax(q kᵀ/√d) v: write the formula yourself with matrix products,"
                " torch.arange, masked_fill and torch.softmax, as the statement asks"
            )
        return answer

    return written


#: Stands in for the reason float32 falls short, which this exercise never has.
_NOT_FLOAT32 = "float32-is-enough"
_FLOAT32_BLAMED = re.compile(
    r" ?Your (?:answer is (float32)|values are float32 numbers \(converted to float64 at"
    r" the end\)), the likely cause: " + _NOT_FLOAT32 + r"\."
)
_SIXTEEN_BLAMED = re.compile(
    r"Your answer is (float16|bfloat16), the likely cause: " + _NOT_FLOAT32
)
_FLOAT32_ENOUGH = (
    " Float32 is not the cause: its rounding stays far below 1e-6 here, so the formula"
    " misses (the scaling, the mask, or the value the mask fills in)."
)
_NO_VISIBLE_KEY = (
    " A NaN comes from a query row with no visible key: query m sees every key"
    " n <= m + (L_k - L_q), its own position included."
)


def _explained(message: str) -> str:
    """The policy's message, with float32 cleared as a cause and a NaN explained."""
    message = _FLOAT32_BLAMED.sub(_FLOAT32_ENOUGH, message)
    message = _SIXTEEN_BLAMED.sub(
        r"Your answer is \1, the likely cause: it keeps 3 significant digits or fewer, too"
        " few for 1e-6: compute in float32 or float64",
        message,
    )
    if "holds NaN" in message and "causal=True" in message:
        message = message.rstrip(".") + "." + _NO_VISIBLE_KEY
    return message


def check_attention(
    reader: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], torch.Tensor],
) -> None:
    """Chapter 1: ``reader(q, k, v, causal)`` must equal softmax(q kᵀ/√d + mask) v (to 1e-6)."""

    def reference(q, k, v, causal):
        return attn.attention(q, k, v, causal=causal)

    try:
        check(
            "attention",
            _own_attention(reader),
            reference,
            _attention_cases(),
            atol=1e-6,  # float32 arithmetic is enough
            float32=_NOT_FLOAT32,
            locate=lambda case, index: f"query {index[0]}, column {index[1]} of v",
        )
    except ExerciseMismatch as mismatch:
        raise ExerciseMismatch(_explained(str(mismatch))) from None


def check_recover_positions(reader: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Chapter 1: ``reader(share)`` turns a slice ``bos_share(L)[a:b]`` into positions a..b-1."""
    windows = [
        (1, 0, 1, "one position"),
        (5, 0, 5, "a window from position 0"),
        (5, 2, 5, "a window that does not start at 0"),
        (17, 3, 9, "a window inside a longer sequence"),
        (64, 40, 64, "positions in the tens"),
    ]
    cases = [
        Case(
            (symmetry.bos_share(seq_len)[start:stop],),
            f"bos_share(seq_len={seq_len})[{start}:{stop}]",
            expected=torch.arange(start, stop, dtype=torch.float64),
            kind=kind,
        )
        for seq_len, start, stop, kind in windows
    ]
    check(
        "recover_positions",
        reader,
        None,
        cases,
        atol=1e-4,  # whole positions: float32 arithmetic is enough, an off-by-one is not
        locate=lambda case, index: f"entry {index[0]}",
    )


def _weights() -> list[tuple[str, torch.Tensor, int]]:
    """(description, weight W with a null space, seq_len): one symmetric W, two that are not."""
    generator = seeded(2)
    basis = torch.linalg.qr(torch.randn(4, 4, generator=generator, dtype=torch.float64))[0]
    projection = basis[:, :3] @ basis[:, :3].T  # symmetric, rank 3
    tall = torch.randn(4, 3, generator=generator, dtype=torch.float64)
    wide = torch.randn(3, 4, generator=generator, dtype=torch.float64)
    left = torch.randn(6, 4, generator=generator, dtype=torch.float64)
    right = torch.randn(4, 6, generator=generator, dtype=torch.float64)
    return [
        ("a symmetric W (4 × 4, rank 3)", projection, 5),
        ("a W that is not symmetric (4 × 4, rank 3)", tall @ wide, 5),
        ("a W that is not symmetric (6 × 6, rank 4)", left @ right, 7),
    ]


def _as_float64(answer: object) -> torch.Tensor | None:
    """A tensor, NumPy array or (nested) list of real numbers as float64; None otherwise."""
    if isinstance(answer, torch.Tensor):
        values = answer.detach()
    elif isinstance(answer, np.ndarray | list | tuple):
        try:
            values = torch.as_tensor(np.asarray(answer, dtype=np.float64))
        except (TypeError, ValueError):
            return None
    else:
        return None
    if values.is_complex() or values.dtype == torch.bool:
        return None
    return values.to(torch.float64)


@grader
def check_invisible_positions(reader: Callable[[torch.Tensor, int], torch.Tensor]) -> str:
    """Chapter 1: ``reader(weight, seq_len)`` returns distinct positions the layer cannot see.

    ``weight`` is a (dim × dim) input projection with a non-trivial null space
    (y = x @ weight.T ignores some directions); it is symmetric in the first case
    only. The reader returns ``positions`` of shape (seq_len, dim) whose rows are
    pairwise distinct (distance >= 1e-3) yet ``positions @ weight.T`` is one and the
    same row for every position (to 1e-6 of the positions' size), so that no
    permutation of the tokens can be detected downstream.
    """
    weights = _weights()
    for index, (label, weight, seq_len) in enumerate(weights, start=1):
        dim = weight.shape[0]
        where = f"case {index} of {len(weights)} ({label}, seq_len={seq_len})"
        answer = attempt(reader, weight.clone(), seq_len)
        positions = _as_float64(answer)
        if positions is None or positions.shape != (seq_len, dim):
            raise ExerciseMismatch(
                f"{where}: expected numbers of shape {(seq_len, dim)} (a tensor, a NumPy"
                f" array or a list), got {show(answer)}"
            )
        distance = torch.cdist(positions, positions) + torch.eye(seq_len, dtype=torch.float64)
        if not float(distance.min()) >= 1e-3:
            row, col = (int(i) for i in (distance == distance.min()).nonzero()[0])
            raise ExerciseMismatch(
                f"{where}: rows {row} and {col} are {float(distance.min()):.2g} apart; the"
                " vectors must be at least 1e-3 apart"
            )
        size = max(1.0, float(positions.abs().max()))
        seen = positions @ weight.T  # what the layer's projection sees of each position
        spread = float((seen - seen[0]).abs().max())
        if not spread <= 1e-6 * size:
            row = int((seen - seen[0]).abs().amax(-1).argmax())
            problem = (
                f"{where}: the layer sees your positions: rows 0 and {row} differ by up to"
                f" {spread:.2g} after the projection, so it can tell the order apart"
            )
            if float((positions @ weight - (positions @ weight)[0]).abs().max()) <= 1e-6 * size:
                problem += (
                    ". Your rows differ along the null space of Wᵀ, not of W: the layer"
                    " computes x @ weight.T"
                )
            note = float32_note(answer, positions.double())
            raise ExerciseMismatch(f"{problem}. {note}" if note else problem)
    return f"distinct vectors invisible to each of the {len(weights)} layers."
