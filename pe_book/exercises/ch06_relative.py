"""Chapter 6 (learned and relative positions): clipped offsets, T5's buckets, similarity."""

from __future__ import annotations

from collections.abc import Callable

import torch

from pe_book import learned, relative, sinusoidal
from pe_book.exercises.grading import Case, check

__all__ = ["check_relative_indices", "check_similarity_by_offset", "check_t5_bucket"]


def check_relative_indices(
    reader: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor],
) -> None:
    """Chapter 6: ``reader(query_positions, key_positions, K)`` returns clip(m - n, -K, K) + K."""
    cases = [
        Case(
            (torch.arange(q), torch.arange(k), big_k),
            f"queries 0..{q - 1}, keys 0..{k - 1}, K={big_k}",
        )
        for q, k, big_k in [(1, 1, 0), (4, 4, 1), (6, 6, 2), (3, 8, 3), (10, 10, 20)]
    ]
    cases.append(
        Case((torch.tensor([7, 8]), torch.arange(3, 10), 2), "queries [7, 8], keys 3..9, K=2")
    )
    check(
        "relative_indices",
        reader,
        relative.relative_indices,
        cases,
        atol=0.0,
        as_tensor=torch.int64,
    )


def check_t5_bucket(reader: Callable[..., torch.Tensor]) -> None:
    """Chapter 6: ``reader(offset, bidirectional, num_buckets, max_distance)``: T5 bucket of r."""
    offsets = torch.arange(-300, 301)
    configs = [(True, 32, 128), (False, 32, 128), (True, 16, 64), (False, 8, 20)]
    cases = [
        Case(
            (offsets, *config),
            f"offsets -300..300, bidirectional={config[0]}, "
            f"num_buckets={config[1]}, max_distance={config[2]}",
        )
        for config in configs
    ]
    check(
        "t5_bucket",
        reader,
        relative.t5_bucket,
        cases,
        atol=0.0,
        as_tensor=torch.int64,
    )


def check_similarity_by_offset(reader: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Chapter 6: ``reader(table)`` = mean cos(P_m, P_(m+r)) for r = 0..L-1, float64."""
    generator = torch.Generator().manual_seed(6)
    tables = [
        torch.randn(5, 3, generator=generator),
        torch.randn(40, 16, generator=generator),
        sinusoidal.sinusoidal_table(64, 32),
    ]
    cases = [Case((table,), f"table of shape {tuple(table.shape)}") for table in tables]
    check(
        "similarity_by_offset",
        reader,
        learned.similarity_by_offset,
        cases,
        atol=1e-6,
        as_tensor=torch.float64,
    )
