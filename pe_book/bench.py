"""Benchmarks of chapter 12: ``python -m pe_book.bench rope | alibi | <method> ... [--check]``.

- ``rope`` (section 12.6): pe_book's RoPE loop, both layouts, float32 and bfloat16, against
  a copy of q and k in both memory regimes; the plain paths and two libraries beside it.
- ``alibi`` (section 12.7): ALiBi attention at L = 1024, 4096 and 8192 against causal
  attention without a bias, on AVX-512 and AVX2 (:data:`ISA_ENVIRONMENTS`): pe_book's
  kernel, the same kernel without the bias (the limit), two extra coordinates through
  PyTorch's kernel, FlexAttention and the materialised bias.
- a position method (``t5``, ``shaw``, ...; section 12.2): the chapter 11 model against
  NoPE, fast and plain paths (:func:`pe_book.cost.method_benchmark`).

Every number printed is a ratio within one process, the median over fresh processes with
its range; ``--check`` exits with status 1 when a target (:data:`ROPE_TARGET`,
:data:`ALIBI_TARGET`, :data:`pe_book.cost.METHOD_TARGETS`) is missed. Timings are checked
here, on a quiet machine, never by ``make test``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable

import torch
import torch.nn.functional as F

from pe_book import measure
from pe_book._validate import validate_choice
from pe_book.measure import allocations_mib, cpu_report, in_processes, median_range
from pe_book.results import versions
from pe_book.rope import Rope

__all__ = [
    "ALIBI_LENGTHS",
    "ALIBI_TARGET",
    "ISA_ENVIRONMENTS",
    "MEMORY_REGIMES",
    "ROPE_SHAPE",
    "ROPE_TARGET",
    "alibi_benchmark",
    "alibi_target_met",
    "allocations_mib",
    "flex_alibi_buffers",
    "rope_benchmark",
    "rope_benchmark_in_processes",
    "rope_inputs",
    "rope_methods",
    "rope_target_met",
]

#: Chapter 12's RoPE target: pe_book's loop, either layout, float32 or bfloat16, costs at most
#: this many times a copy of q and k, in both memory regimes (median over processes).
ROPE_TARGET = 1.10
#: Section 12.7's target: ALiBi through pe_book's kernel costs at most this many times
#: causal attention without a bias, at every length of :data:`ALIBI_LENGTHS` and on every
#: instruction set of :data:`ISA_ENVIRONMENTS`, and allocates less than one (H, L, L) bias.
ALIBI_TARGET = 1.25
#: The lengths of the ALiBi benchmark.
ALIBI_LENGTHS = (1024, 4096, 8192)
#: How each instruction set is run on a machine that has AVX-512: PyTorch's own kernels,
#: the code its compiler generates (FlexAttention) and pe_book's kernels all follow
#: ``ATEN_CPU_CAPABILITY``; MKL's matrix products (inside PyTorch's attention) and oneDNN
#: have their own switches. A real AVX2-only CPU may still differ (its caches, its clock).
ISA_ENVIRONMENTS: dict[str, dict[str, str]] = {
    "avx512": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
             "ONEDNN_MAX_CPU_ISA": "AVX2"},
}  # fmt: skip
#: glibc malloc settings (read at process start) that fix where each benchmark process gets
#: its output memory from. Left to itself, glibc adapts its thresholds to the history of the
#: process, and the copy baseline moves by several times between processes.
MEMORY_REGIMES: dict[str, dict[str, str]] = {
    # every allocation over 128 KiB is its own mapping, returned to the system when
    # freed: each output is new pages that the kernel must zero on first touch
    "fresh": {"MALLOC_MMAP_THRESHOLD_": str(128 * 1024)},
    # allocations up to 32 MiB come from the heap, which is never trimmed: each
    # output reuses memory that an earlier call freed, already mapped and warm
    "reused": {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(2**31)},
}
#: The shape of q and k in chapter 12's RoPE benchmark: (batch, heads, seq_len, dim).
ROPE_SHAPE = (4, 8, 2048, 64)


def _transformers_rope(q: torch.Tensor, k: torch.Tensor) -> Callable[[], object] | None:
    try:
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
    except ImportError:
        return None
    seq_len, dim = q.shape[-2], q.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    angles = torch.arange(seq_len, dtype=torch.float32)[:, None] * theta
    emb = torch.cat((angles, angles), dim=-1)[None]  # (1, L, d), as LlamaRotaryEmbedding
    cos, sin = emb.cos().to(q.dtype), emb.sin().to(q.dtype)
    return lambda: apply_rotary_pos_emb(q, k, cos, sin)


def _rotary_embedding_torch(q: torch.Tensor, k: torch.Tensor) -> Callable[[], object] | None:
    try:
        from rotary_embedding_torch import RotaryEmbedding
    except ImportError:
        return None
    rotary = RotaryEmbedding(dim=q.shape[-1])
    return lambda: (rotary.rotate_queries_or_keys(q), rotary.rotate_queries_or_keys(k))


def rope_methods(q: torch.Tensor, k: torch.Tensor) -> dict[str, Callable[[], object]]:
    """Each RoPE implementation as a call on q and k (batch, heads, seq_len, dim).

    The copy of q and k comes first (the baseline); the two reference libraries are
    left out when they are not installed.
    """
    seq_len, dim = q.shape[-2], q.shape[-1]
    layers = {
        (layout, fused): Rope(dim, layout=layout, max_len=seq_len, fused=fused)
        for layout in ("interleaved", "half")
        for fused in (True, False)
    }

    def both(layer: Rope) -> Callable[[], object]:
        return lambda: (layer(q), layer(k))

    methods: dict[str, Callable[[], object] | None] = {
        "copy q and k (baseline)": lambda: (q.clone(), k.clone()),
        "pe_book, interleaved": both(layers["interleaved", True]),
        "pe_book, half": both(layers["half", True]),
        "pe_book, interleaved, plain PyTorch": both(layers["interleaved", False]),
        "pe_book, half, plain PyTorch": both(layers["half", False]),
        "transformers (Llama rotate_half)": _transformers_rope(q, k),
        "rotary-embedding-torch": _rotary_embedding_torch(q, k),
    }
    return {name: function for name, function in methods.items() if function is not None}


def rope_inputs(
    shape: tuple[int, int, int, int] = ROPE_SHAPE, dtype: torch.dtype = torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """q and k of the given shape and dtype, from a fixed seed."""
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, *shape, generator=generator).unbind(0)
    return q.to(dtype), k.to(dtype)


def rope_benchmark(
    batch: int = ROPE_SHAPE[0],
    heads: int = ROPE_SHAPE[1],
    seq_len: int = ROPE_SHAPE[2],
    dim: int = ROPE_SHAPE[3],
    repeats: int = 20,
    dtype: torch.dtype = torch.float32,
) -> list[tuple[str, float, float]]:
    """(method, milliseconds, ratio to copying q and k) for each RoPE implementation."""
    available = rope_methods(*rope_inputs((batch, heads, seq_len, dim), dtype))
    milliseconds = measure.time_round_robin(available, rounds=repeats)
    baseline = milliseconds["copy q and k (baseline)"]
    return [(n, ms, ms / baseline) for n, ms in milliseconds.items()]


def rope_benchmark_in_processes(
    processes: int = 5,
    threads: int = 2,
    repeats: int = 20,
    memory: str = "fresh",
    dtype: str = "float32",
) -> list[tuple[str, float, float, float]]:
    """(method, median ratio to the copy, lowest, highest) over ``processes`` new processes.

    Each process divides each method's time by its own copy time. ``memory`` picks one
    of :data:`MEMORY_REGIMES`: ``"fresh"`` (every output is newly mapped memory, as in a
    first call or a large model; the copy costs most) or ``"reused"`` (outputs land in
    memory freed by the previous call; the copy costs least), set through glibc's
    environment variables (on other C libraries the regime is whatever the allocator does).
    """
    validate_choice("memory", memory, tuple(MEMORY_REGIMES))
    validate_choice("dtype", dtype, ("float32", "bfloat16"))
    arguments = ["rope", "--threads", str(threads), "--repeats", str(repeats), "--dtype", dtype]
    runs = in_processes(arguments, processes, MEMORY_REGIMES[memory])
    return [
        (name, *median_range([run[i][2] for run in runs])) for i, (name, _, _) in enumerate(runs[0])
    ]


def rope_target_met(tables: dict[tuple[str, str], list[tuple[str, float, float, float]]]) -> bool:
    """Whether both of pe_book's layouts are within :data:`ROPE_TARGET` of the copy in every
    table ((memory regime, dtype) -> rows of :func:`rope_benchmark_in_processes`)."""
    defaults = ("pe_book, interleaved", "pe_book, half")
    ours = [[ratio for name, ratio, _, _ in table if name in defaults] for table in tables.values()]
    return bool(ours) and all(len(r) == 2 and max(r) <= ROPE_TARGET for r in ours)


# ALiBi (section 12.7)


_BUFFERS = """import json, sys, torch
from pe_book import alibi, measure
torch.set_num_threads(1)
shape = [int(n) for n in sys.argv[1:]]
q, k, v = torch.randn(3, *shape, generator=torch.Generator().manual_seed(0)).unbind(0)
call = lambda: alibi.flex_alibi_attention(q, k, v, alibi.alibi_slopes(shape[1]))
print(json.dumps(measure.compiled_buffers(call)))"""


def flex_alibi_buffers(
    batch: int = 1, heads: int = 8, seq_len: int = 1024, dim: int = 64
) -> list[tuple[int, ...]]:
    """:func:`compiled_buffers` of ALiBi through FlexAttention, in a fresh process."""
    command = [sys.executable, "-c", _BUFFERS, *map(str, (batch, heads, seq_len, dim))]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"buffer inspection failed:\n{done.stderr}")
    return [tuple(shape) for shape in json.loads(done.stdout)]


#: The ALiBi paths of :func:`alibi_benchmark`; the first is the baseline, the second the target.
ALIBI_PATHS = (
    "causal SDPA, no bias",
    "pe_book kernel",
    "pe_book kernel, no bias",
    "extra coordinates, SDPA",
    "FlexAttention",
    "materialised bias",
)


def _alibi_methods(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, slopes: torch.Tensor
) -> dict[str, Callable[[], object]]:
    from pe_book import alibi
    from pe_book.bias_attention import bias_attention

    heads, seq_len = q.shape[1], q.shape[2]
    methods = dict(zip(ALIBI_PATHS, [
        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        lambda: alibi.alibi_attention(q, k, v, slopes, fused=True),
        lambda: bias_attention(q, k, v, None),
        lambda: alibi.extra_coordinate_attention(q, k, v, slopes),
        lambda: alibi.flex_alibi_attention(q, k, v, slopes),
        lambda: alibi.alibi_attention(q, k, v, slopes),
    ], strict=True))  # fmt: skip
    if heads * seq_len**2 * 4 > 2**30:  # the bias and its mask would pass 2 GiB
        del methods["materialised bias"]
    return methods


def alibi_benchmark(
    seq_lens: tuple[int, ...] = ALIBI_LENGTHS,
    batch: int = 2,
    heads: int = 8,
    dim: int = 64,
    repeats: int = 5,
) -> list[tuple[int, str, float, float, float]]:
    """(L, path, ms, ratio to causal SDPA, largest allocation in MiB) for ALiBi's paths.

    Section 12.7. Each path is warmed up (FlexAttention compiles) before timing; paths
    are timed round-robin at each L. The largest allocation is the profiler's, or for
    pe_book's kernel the scratch memory of its threads (C's malloc, which the profiler
    cannot see), whichever is larger. The materialised bias is left out past 2 GiB.
    """
    from pe_book.alibi import alibi_slopes
    from pe_book.bias_attention import scratch_bytes

    slopes = alibi_slopes(heads)
    rows = []
    for seq_len in seq_lens:
        generator = torch.Generator().manual_seed(0)
        q, k, v = torch.randn(3, batch, heads, seq_len, dim, generator=generator).unbind(0)
        methods = _alibi_methods(q, k, v, slopes)
        milliseconds = measure.time_round_robin(methods, rounds=repeats, warmup=1)
        baseline = milliseconds[ALIBI_PATHS[0]]
        scratch = scratch_bytes(q, k, v) * torch.get_num_threads() / 2**20
        for name, function in methods.items():
            largest = allocations_mib(function)[0]
            if name.startswith("pe_book kernel"):
                largest = max(largest, scratch)
            rows.append((seq_len, name, milliseconds[name], milliseconds[name] / baseline, largest))
    return rows


def alibi_target_met(tables: dict[str, list[tuple[int, str, float, float, float, float]]],
                     heads: int = 8) -> bool:  # fmt: skip
    """Whether pe_book's kernel is within :data:`ALIBI_TARGET` of causal SDPA at every L on
    every instruction set (isa -> rows (L, path, median ratio, low, high, largest MiB)), and
    its largest allocation stays below one (H, L, L) float32 bias."""
    kernel = [row for rows in tables.values() for row in rows if row[1] == ALIBI_PATHS[1]]
    return bool(kernel) and all(
        ratio <= ALIBI_TARGET and largest < heads * seq_len**2 * 4 / 2**20
        for seq_len, _, ratio, _, _, largest in kernel
    )


def _alibi_in_processes(processes: int, threads: int, isa: str) -> list:
    runs = in_processes(["alibi", "--threads", str(threads)], processes, ISA_ENVIRONMENTS[isa])
    rows = []
    for i, (seq_len, name, _, _, largest) in enumerate(runs[0]["rows"]):
        rows.append((seq_len, name, *median_range([run["rows"][i][3] for run in runs]), largest))
    return runs[0]["cpu"], rows


def _print_table(title: str, header: str, rows: list[str]) -> None:
    print(f"\n{title}\n{header}\n" + "\n".join(rows))


def _run_rope(args: argparse.Namespace) -> dict[str, dict]:
    tables = {}
    for dtype in [args.dtype] if args.dtype else ("float32", "bfloat16"):
        for memory in MEMORY_REGIMES:
            tables[memory, dtype] = table = rope_benchmark_in_processes(
                args.processes, args.threads, args.repeats, memory, dtype
            )
            _print_table(
                f"RoPE, q and k {ROPE_SHAPE} {dtype}, {memory} output memory: "
                f"x copy, median over {args.processes} processes [range]",
                f"{'method':<36} {'x copy':>7}  range",
                [f"{n:<36} {r:>7.2f}  [{lo:.2f}..{hi:.2f}]" for n, r, lo, hi in table],
            )
    rows = [{"memory": m, "dtype": d, "rows": table} for (m, d), table in tables.items()]
    return {"rope": {"met": rope_target_met(tables), "tables": rows}}


def _run_alibi(args: argparse.Namespace) -> dict[str, dict]:
    tables = {}
    for isa in args.isa or ISA_ENVIRONMENTS:
        cpu, rows = tables[isa] = _alibi_in_processes(args.processes, args.threads, isa)
        _print_table(
            f"ALiBi attention, B=2, H=8, D=64, float32, {isa} ({cpu.splitlines()[-1]}): "
            f"x causal SDPA, median over {args.processes} processes [range]",
            f"{'L':>5} {'path':<25} {'x SDPA':>7}  {'range':<13} {'largest MiB':>11}",
            [f"{n:>5} {p:<25} {r:>7.2f}  [{lo:.2f}..{hi:.2f}] {big:>11.1f}"
             for n, p, r, lo, hi, big in rows],
        )  # fmt: skip
    return {f"alibi {isa}": {"cpu": cpu, "met": alibi_target_met({isa: rows}), "tables": rows}
            for isa, (cpu, rows) in tables.items()}  # fmt: skip


def _run_method(position: str, args: argparse.Namespace) -> dict:
    from pe_book import cost

    runs = in_processes(["method", position, "--threads", str(args.threads)], args.processes, {})
    ratios = {path: {kind: median_range([run[path][kind] for run in runs]) for kind in kinds}
              for path, kinds in runs[0].items()}  # fmt: skip
    _print_table(
        f"{position}: the chapter 11 model at L = {cost.METHOD_LENGTH}, batch 8: x NoPE, "
        f"median over {args.processes} processes [range]",
        f"{'path':<6} {'training':>8}  {'range':<13} {'inference':>9}  range",
        [f"{path:<6} " + " ".join(f"{r[kind][0]:>8.2f}  [{r[kind][1]:.2f}..{r[kind][2]:.2f}]"
                                  for kind in ("train", "infer")) for path, r in ratios.items()],
    )  # fmt: skip
    medians = {path: {kind: value[0] for kind, value in r.items()} for path, r in ratios.items()}
    met, what = cost.method_target_met(position, medians)
    print(f"  {'met' if met else 'MISSED'}: {what}")
    return {"met": met, "tables": ratios, "checked": what, "seq_len": cost.METHOD_LENGTH}


def main(argv: list[str]) -> int:
    from pe_book import cost, positions

    choices = list(dict.fromkeys(["rope", "alibi", *(p for p in positions.names() if p != "none")]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", nargs="+", choices=[*choices, "method"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], help="rope: one (default both)")
    parser.add_argument("--isa", nargs="*", choices=list(ISA_ENVIRONMENTS), help="alibi: which")
    parser.add_argument("--json", action="store_true", help="one in-process run, as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("--record", help="store the results in this JSON file (results/bench.json)")
    args = parser.parse_args(argv)
    which = args.which
    if args.json:  # one run inside this process, for the commands below
        torch.set_num_threads(args.threads)
        if which[0] == "rope":
            dtype = getattr(torch, args.dtype or "float32")
            result: object = rope_benchmark(repeats=args.repeats, dtype=dtype)
        elif which[0] == "alibi":
            result = {"cpu": cpu_report(), "rows": alibi_benchmark(repeats=min(args.repeats, 3))}
        else:  # method <name>
            result = cost.method_benchmark(which[-1])
        print(json.dumps(result))
        return 0
    torch.set_num_threads(args.threads)
    print(cpu_report())
    met = {}
    for name in dict.fromkeys(which):  # each once, in the order given; recorded as it lands
        results = _run_rope(args) if name == "rope" else _run_alibi(args) if name == "alibi" else {}
        if name != "rope":  # the model's training step and inference against NoPE
            results[f"model {name}"] = _run_method(name, args)
        met[name] = all(result["met"] for result in results.values())
        for key, result in results.items() if args.record else ():
            common = {"cpu": cpu_report(), "versions": versions(), "processes": args.processes}
            measure.record_bench(args.record, key, {**common, "threads": args.threads, **result})
    missed = [name for name, ok in met.items() if not ok]
    print(f"\ntargets {'met' if not missed else 'MISSED: ' + ', '.join(missed)}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
