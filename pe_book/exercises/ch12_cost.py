"""Chapter 12 (cost): the parameters and memory of Shaw's tables, the scaling exponent."""

from __future__ import annotations

from collections.abc import Callable

import torch

from pe_book import cost, relative
from pe_book.exercises.grading import Case, check
from pe_book.exercises.policy import whole_number

__all__ = ["check_scaling_exponent", "check_shaw_parameters", "check_shaw_table_bytes"]


def check_shaw_parameters(reader: Callable[[int, int, int, bool], int]) -> None:
    """Chapter 12: ``reader(n_layers, max_offset, d_head, values)``: parameters of
    Shaw et al.'s position tables in a model of ``n_layers`` layers."""

    def reference(n_layers: int, max_offset: int, d_head: int, values: bool) -> int:
        layer = relative.ShawAttention(d_head * 2, 2, max_offset, values=values)
        tables = [layer.key_table] + ([layer.value_table] if values else [])
        return n_layers * sum(t.weight.numel() for t in tables if t is not None)

    cases = [
        Case(args, f"n_layers={args[0]}, max_offset={args[1]}, d_head={args[2]}, values={args[3]}")
        for args in [(2, 16, 32, True), (1, 0, 8, True), (12, 16, 64, False), (6, 128, 64, True)]
    ]
    check(
        "shaw_parameters",
        lambda *a: whole_number(reader(*a), "parameters"),
        reference,
        cases,
        atol=0.0,
    )


def check_shaw_table_bytes(reader: Callable[[int, int], int]) -> None:
    """Chapter 12: ``reader(seq_len, d_head)``: bytes of the float32 tensor of key
    embeddings a^K_(m-n) that Shaw attention gathers for one layer (all m, n)."""

    def reference(seq_len: int, d_head: int) -> int:
        layer = relative.ShawAttention(d_head, 1, 16)
        index = relative.relative_indices(torch.arange(seq_len), torch.arange(seq_len), 16)
        return layer.key_table(index).nbytes

    cases = [
        Case(args, f"seq_len={args[0]}, d_head={args[1]}") for args in [(4, 8), (64, 32), (300, 16)]
    ]
    check(
        "shaw_table_bytes", lambda *a: whole_number(reader(*a), "bytes"), reference, cases, atol=0.0
    )


def check_scaling_exponent(reader: Callable[[float, int, float, int], float]) -> None:
    """Chapter 12: ``reader(t1, l1, t2, l2)``: the exponent p of t ∝ L^p through two points."""
    cases = [
        Case((1.0, 256, 4.0, 512), "4× the time at 2× the length (p = 2)"),
        Case((3.0, 100, 3.0, 1000), "the same time (p = 0)"),
        Case((10.0, 1024, 40.0, 4096), "4× the time at 4× the length (p = 1)"),
    ]
    check("scaling_exponent", reader, cost.scaling_exponent, cases, atol=1e-9)
