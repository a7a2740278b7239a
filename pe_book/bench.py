"""Benchmarks: ``python -m pe_book.bench rope`` (section 12.6), ``... alibi`` (section 12.7).

``--check`` turns a benchmark into a test of the book's speed targets: it exits
with status 1 when a target is missed (:data:`ROPE_TARGET`, :data:`ALIBI_TARGET`).
Timings depend on the machine and its load, so the targets are checked here, by a
command run on a quiet machine, never by the notebook tests (``make test``).

Every method is timed in the same run, on the same tensors, and reported as a
ratio to copying q and k (or to plain causal attention), which removes most of
the machine's speed from the numbers. Ratios still depend on the memory regime
and the thread count, so compare them within one table. Reference
implementations are timed only if installed (they are test-only dependencies of
the book).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable

import torch
import torch.nn.functional as F

from pe_book._validate import validate_choice
from pe_book.measure import allocations_mib, compiled_buffers, time_round_robin
from pe_book.rope import Rope

__all__ = [
    "ALIBI_TARGET",
    "MEMORY_REGIMES",
    "ROPE_SHAPE",
    "ROPE_TARGET",
    "alibi_benchmark",
    "alibi_target_met",
    "fused_alibi_buffers",
    "rope_benchmark",
    "rope_benchmark_in_processes",
    "rope_inputs",
    "rope_methods",
    "rope_target_met",
]


def _transformers_rope(q: torch.Tensor, k: torch.Tensor) -> Callable[[], object] | None:
    try:
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
    except ImportError:
        return None
    seq_len, dim = q.shape[-2], q.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    angles = torch.arange(seq_len, dtype=torch.float32)[:, None] * theta
    emb = torch.cat((angles, angles), dim=-1)[None]  # (1, L, d), as LlamaRotaryEmbedding
    cos, sin = emb.cos(), emb.sin()
    return lambda: apply_rotary_pos_emb(q, k, cos, sin)


def _rotary_embedding_torch(q: torch.Tensor, k: torch.Tensor) -> Callable[[], object] | None:
    try:
        from rotary_embedding_torch import RotaryEmbedding
    except ImportError:
        return None
    rotary = RotaryEmbedding(dim=q.shape[-1])
    return lambda: (rotary.rotate_queries_or_keys(q), rotary.rotate_queries_or_keys(k))


#: The shape of q and k in chapter 12's RoPE benchmark: (batch, heads, seq_len, dim), float32.
ROPE_SHAPE = (4, 8, 2048, 64)


def rope_methods(q: torch.Tensor, k: torch.Tensor) -> dict[str, Callable[[], object]]:
    """Each RoPE implementation as a call on q and k (batch, heads, seq_len, dim).

    The copy of q and k comes first (the baseline); the two reference libraries are
    left out when they are not installed.
    """
    seq_len, dim = q.shape[-2], q.shape[-1]
    interleaved, half = Rope(dim, max_len=seq_len), Rope(dim, layout="half", max_len=seq_len)
    plain = Rope(dim, layout="half", max_len=seq_len, fused=False)
    methods: dict[str, Callable[[], object] | None] = {
        "copy q and k (baseline)": lambda: (q.clone(), k.clone()),
        "pe_book, interleaved": lambda: (interleaved(q), interleaved(k)),
        "pe_book, half": lambda: (half(q), half(k)),
        "pe_book, half, plain PyTorch": lambda: (plain(q), plain(k)),
        "transformers (Llama rotate_half)": _transformers_rope(q, k),
        "rotary-embedding-torch": _rotary_embedding_torch(q, k),
    }
    return {name: function for name, function in methods.items() if function is not None}


def rope_inputs(shape: tuple[int, int, int, int] = ROPE_SHAPE) -> tuple[torch.Tensor, torch.Tensor]:
    """q and k of the given shape, float32, from a fixed seed."""
    generator = torch.Generator().manual_seed(0)
    return torch.randn(*shape, generator=generator), torch.randn(*shape, generator=generator)


def rope_benchmark(
    batch: int = ROPE_SHAPE[0],
    heads: int = ROPE_SHAPE[1],
    seq_len: int = ROPE_SHAPE[2],
    dim: int = ROPE_SHAPE[3],
    repeats: int = 20,
) -> list[tuple[str, float, float]]:
    """(method, milliseconds, ratio to copying q and k) for each RoPE implementation."""
    available = rope_methods(*rope_inputs((batch, heads, seq_len, dim)))
    milliseconds = time_round_robin(available, rounds=repeats)
    baseline = milliseconds["copy q and k (baseline)"]
    return [(n, ms, ms / baseline) for n, ms in milliseconds.items()]


#: glibc malloc settings (environment variables read at process start) that fix
#: where each benchmark process gets its output memory from. Left to itself, glibc
#: adapts its thresholds to the history of the process, so one process maps fresh
#: pages for every 16 MiB output and the next reuses warm ones, and the copy
#: baseline moves by several times between them.
MEMORY_REGIMES: dict[str, dict[str, str]] = {
    # every allocation over 128 KiB is its own mapping, returned to the system when
    # freed: each output is new pages that the kernel must zero on first touch
    "fresh": {"MALLOC_MMAP_THRESHOLD_": str(128 * 1024)},
    # allocations up to 32 MiB come from the heap, which is never trimmed: each
    # output reuses memory that an earlier call freed, already mapped and warm
    "reused": {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(2**31)},
}


def rope_benchmark_in_processes(
    processes: int = 5,
    threads: int = 2,
    repeats: int = 20,
    memory: str = "fresh",
    *,
    progress: bool = False,
) -> list[tuple[str, float, float, float, float]]:
    """Run :func:`rope_benchmark` in ``processes`` new Python processes.

    Returns (method, median ms, median ratio to the copy, lowest ratio, highest
    ratio) over the processes. Each process divides each method's time by its own
    copy time; the ratio column is the median of those ratios, so it need not
    equal the median ms divided by the copy's median ms.

    ``memory`` picks one of :data:`MEMORY_REGIMES`: ``"fresh"`` (every output is
    newly mapped memory, as in a first call or a large model; the copy costs most)
    or ``"reused"`` (outputs land in memory freed by the previous call; the copy
    costs least). Each process sets the
    regime through glibc's environment variables (on other C libraries they are
    ignored and the regime is whatever the allocator does). ``progress`` shows a bar
    on stderr (the command line's; off in the chapters).
    """
    from tqdm import tqdm

    validate_choice("memory", memory, tuple(MEMORY_REGIMES))
    environment = {**os.environ, **MEMORY_REGIMES[memory]}
    runs = []
    for _ in tqdm(range(processes), desc=f"RoPE, {memory} pages", disable=not progress):
        command = [
            sys.executable,
            "-m",
            "pe_book.bench",
            "rope",
            "--json",
            "--threads",
            str(threads),
            "--repeats",
            str(repeats),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False, env=environment)
        if done.returncode != 0:
            raise RuntimeError(f"benchmark process failed:\n{done.stderr}")
        runs.append({name: (ms, ratio) for name, ms, ratio in json.loads(done.stdout)})
    summary = []
    for name in runs[0]:
        ratios = [run[name][1] for run in runs]
        summary.append(
            (
                name,
                statistics.median(run[name][0] for run in runs),
                statistics.median(ratios),
                min(ratios),
                max(ratios),
            )
        )
    return summary


def fused_alibi_buffers(
    batch: int = 1, heads: int = 8, seq_len: int = 1024, dim: int = 64
) -> list[tuple[int, ...]]:
    """:func:`compiled_buffers` of ALiBi's fused (FlexAttention) path, in a fresh process."""
    command = [
        sys.executable, "-m", "pe_book.bench", "alibi-buffers",
        "--shape", str(batch), str(heads), str(seq_len), str(dim),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"buffer inspection failed:\n{done.stderr}")
    return [tuple(shape) for shape in json.loads(done.stdout)]


def _print_alibi_buffers(shape: list[int]) -> None:
    from pe_book.alibi import alibi_slopes, flex_alibi_attention

    torch.set_num_threads(1)
    q, k, v = torch.randn(3, *shape, generator=torch.Generator().manual_seed(0)).unbind(0)
    slopes = alibi_slopes(shape[1])
    print(json.dumps(compiled_buffers(lambda: flex_alibi_attention(q, k, v, slopes))))


def _alibi_methods(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, slopes: torch.Tensor
) -> dict[str, Callable[[], object]]:
    from pe_book.alibi import alibi_attention, flex_alibi_attention

    return {
        "causal SDPA, no bias": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "ALiBi, materialised bias": lambda: alibi_attention(q, k, v, slopes),
        "ALiBi, fused (FlexAttention)": lambda: flex_alibi_attention(q, k, v, slopes),
    }


def alibi_benchmark(
    seq_lens: tuple[int, ...] = (1024, 4096),
    batch: int = 2,
    heads: int = 8,
    dim: int = 64,
    repeats: int = 5,
) -> list[tuple[int, str, float, float, float]]:
    """(L, method, ms, ratio to causal SDPA, largest allocation in MiB) for ALiBi's two paths.

    Section 12.7. Each path is warmed up (the fused one compiles) before timing;
    methods are timed round-robin at each L.
    """
    from pe_book.alibi import alibi_slopes

    slopes = alibi_slopes(heads)
    rows = []
    for seq_len in seq_lens:
        generator = torch.Generator().manual_seed(0)
        q, k, v = torch.randn(3, batch, heads, seq_len, dim, generator=generator).unbind(0)
        methods = _alibi_methods(q, k, v, slopes)
        milliseconds = time_round_robin(methods, rounds=repeats, warmup=1)
        baseline = milliseconds["causal SDPA, no bias"]
        for name, function in methods.items():
            largest = allocations_mib(function)[0]
            rows.append((seq_len, name, milliseconds[name], milliseconds[name] / baseline, largest))
    return rows


#: Chapter 12's RoPE target: pe_book's default path in either layout costs at most this many
#: times a copy of q and k, with fresh output pages (median over processes).
ROPE_TARGET = 1.3
#: Section 12.7's target: ALiBi's fused path costs at most this many times plain causal
#: SDPA, and allocates nothing as large as one (H, L, L) float32 tensor.
ALIBI_TARGET = 1.25


def rope_target_met(table: list[tuple[str, float, float, float, float]]) -> bool:
    """Whether both of pe_book's layouts are within :data:`ROPE_TARGET` of the copy."""
    defaults = ("pe_book, interleaved", "pe_book, half")
    ours = [ratio for name, _, ratio, _, _ in table if name in defaults]
    return len(ours) == 2 and max(ours) <= ROPE_TARGET


def alibi_target_met(rows: list[tuple[int, str, float, float, float]], heads: int = 8) -> bool:
    """Whether the fused path is within :data:`ALIBI_TARGET` of causal SDPA at every L,
    and its largest allocation stays below one (H, L, L) float32 bias."""
    fused = [row for row in rows if "fused" in row[1]]
    return bool(fused) and all(
        ratio <= ALIBI_TARGET and largest < heads * seq_len**2 * 4 / 2**20
        for seq_len, _, _, ratio, largest in fused
    )


def _verdict(met: bool, what: str) -> int:
    print(f"\ntarget {'met' if met else 'MISSED'}: {what}")
    return 0 if met else 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("which", choices=["rope", "alibi", "alibi-buffers"])
    parser.add_argument("--shape", type=int, nargs=4, default=[1, 8, 1024, 64], help="B H L D")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument(
        "--memory", choices=[*MEMORY_REGIMES, "both"], default="both", help="rope: output memory"
    )
    parser.add_argument("--json", action="store_true", help="one in-process run, as JSON")
    parser.add_argument(
        "--check", action="store_true", help="exit with status 1 if the speed target is missed"
    )
    args = parser.parse_args(argv)
    if args.which == "alibi-buffers":
        _print_alibi_buffers(args.shape)
        return 0
    if args.which == "alibi":
        torch.set_num_threads(args.threads)
        print(f"ALiBi attention, B=2, H=8, D=64, float32, {args.threads} threads")
        print(f"{'L':>5} {'method':<30} {'ms':>9} {'x SDPA':>7} {'largest alloc MiB':>18}")
        rows = alibi_benchmark(repeats=min(args.repeats, 5))
        for seq_len, name, ms, ratio, largest in rows:
            print(f"{seq_len:>5} {name:<30} {ms:>9.1f} {ratio:>7.2f} {largest:>18.1f}")
        if args.check:
            what = f"fused ALiBi <= {ALIBI_TARGET}x causal SDPA, no (H, L, L) allocation"
            return _verdict(alibi_target_met(rows), what)
        return 0
    if args.json:
        torch.set_num_threads(args.threads)
        print(json.dumps(rope_benchmark(repeats=args.repeats)))
        return 0
    print(
        f"RoPE on q and k of shape {ROPE_SHAPE} (B, H, T, D), float32, {args.threads} threads;"
        f" median over {args.processes} new processes per memory regime"
    )
    memories = list(MEMORY_REGIMES) if args.memory == "both" else [args.memory]
    if args.check and "fresh" not in memories:
        memories.append("fresh")  # the target is defined with fresh pages
    tables = {}
    for memory in memories:
        tables[memory] = table = rope_benchmark_in_processes(
            args.processes, args.threads, args.repeats, memory, progress=True
        )
        print(f"\n{memory} output memory")
        print(f"{'method':<34} {'median ms':>9} {'x copy':>7}  {'x copy min..max':>15}")
        for name, milliseconds, ratio, low, high in table:
            print(f"{name:<34} {milliseconds:>9.2f} {ratio:>7.2f}  {low:>6.2f} .. {high:<6.2f}")
    if args.check:
        what = f"pe_book's default path in both layouts <= {ROPE_TARGET}x a copy (fresh pages)"
        return _verdict(rope_target_met(tables["fresh"]), what)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
