"""Measuring tools for the benchmarks and the cost study (chapter 12).

:func:`time_round_robin` times functions in turns; :func:`allocations_mib` reads
what one call allocates with PyTorch's profiler; :func:`compiled_buffers` reads
the buffers of code PyTorch's compiler generates, which the profiler cannot see;
:func:`record_bench` and :func:`load_bench` keep the benchmarks' results (``results/bench.json``).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = [
    "allocations_mib",
    "compiled_buffers",
    "cpu_report",
    "in_processes",
    "load_bench",
    "median_range",
    "record_bench",
    "time_round_robin",
]


def time_round_robin(
    functions: dict[str, Callable[[], object]], rounds: int = 20, warmup: int = 2
) -> dict[str, float]:
    """Median wall time in milliseconds of each function, timed in turns.

    Every round calls each function once, in order, so slow drifts of the
    machine (frequency scaling, other processes, a cold allocator) hit every
    method alike instead of whichever happened to be timed first.
    """
    for function in functions.values():
        for _ in range(warmup):
            function()
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(rounds):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            times[name].append(time.perf_counter() - start)
    return {name: 1000 * statistics.median(t) for name, t in times.items()}


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null for the duration.

    PyTorch's profiler (Kineto) writes a timestamped "profiler_start/stop" line to
    the process's stderr from C++, which no setting turns off; in a notebook it
    would land in the cell's output. Python-level errors still raise normally.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def allocations_mib(function: Callable[[], object]) -> tuple[float, float]:
    """(largest single allocation, total allocated) by one call, in MiB.

    Measured with PyTorch's profiler (``profile_memory=True``): every allocation a
    PyTorch operation makes itself, wherever the memory comes from. Unlike the
    process's resident memory, this does not depend on whether the allocator
    reuses memory freed earlier, so an L × L tensor shows up in every run. The
    function is called once before, so one-time work (compilation, caches) is
    not counted. Allocations outside PyTorch operations are not seen.
    """
    from torch.profiler import ProfilerActivity, profile

    function()
    gc.collect()
    with (
        _quiet_stderr(),
        profile(activities=[ProfilerActivity.CPU], profile_memory=True) as recorded,
    ):
        function()
    sizes = [e.self_cpu_memory_usage for e in recorded.events() if e.self_cpu_memory_usage > 0]
    return max(sizes, default=0) / 2**20, sum(sizes) / 2**20


_BUFFER = re.compile(r"empty_strided_cpu\(\(([0-9, ]*)\)")


def compiled_buffers(function: Callable[[], object]) -> list[tuple[int, ...]]:
    """Shapes of every buffer the code Inductor generates for ``function`` allocates.

    PyTorch's profiler (:func:`allocations_mib`) reports a compiled region as one
    operation with its *net* allocation, so a tensor made and freed inside it is
    invisible there. This reads the generated code instead (each
    ``empty_strided_cpu`` call). Run it in a fresh process (see
    :func:`pe_book.bench.flex_alibi_buffers`): only code compiled during the call is seen, and
    shapes must be static to be read.
    """
    from torch._inductor.utils import run_and_get_code

    _, codes = run_and_get_code(function)
    return [
        tuple(int(size) for size in match.group(1).replace(" ", "").split(",") if size)
        for code in codes
        for match in _BUFFER.finditer(code)
    ]


def cpu_report() -> str:
    """The CPU, its vector extensions and which builds PyTorch and pe_book run on it."""
    import torch

    from pe_book import bias_attention, rope_kernel

    flags: set[str] = set()
    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "flags" and not flags:
                flags = set(value.split())
            if key.strip() == "model name" and model == "unknown CPU":
                model = value.strip()
    vector = sorted(f for f in flags if f.startswith(("avx", "amx")) or f in ("fma", "f16c"))
    return (
        f"CPU: {model}; vector extensions: {' '.join(vector) or 'none listed'}\n"
        f"PyTorch dispatches {torch.backends.cpu.get_cpu_capability()} kernels; pe_book's "
        f"attention kernel runs its {bias_attention.kernel_isa()} build, its RoPE loop its "
        f"{rope_kernel.kernel_isa()} build; {torch.get_num_threads()} threads"
    )


def in_processes(arguments: list[str], processes: int, environment: dict[str, str]) -> list:
    """Run ``python -m pe_book.bench <arguments> --json`` in new processes (``environment``
    added to this one's); their JSON results, one per process."""
    runs = []
    for _ in range(processes):
        command = [sys.executable, "-m", "pe_book.bench", *arguments, "--json"]
        done = subprocess.run(
            command, capture_output=True, text=True, check=False, env={**os.environ, **environment}
        )
        if done.returncode != 0:
            raise RuntimeError(f"benchmark process failed:\n{done.stderr}")
        runs.append(json.loads(done.stdout))
    return runs


def median_range(ratios: list[float]) -> tuple[float, float, float]:
    """(median, lowest, highest) of the ratios measured in several processes."""
    return statistics.median(ratios), min(ratios), max(ratios)


#: What each benchmark stores under its name in results/bench.json (see :func:`record_bench`).
BENCH_FIELDS = ("cpu", "versions", "processes", "threads", "met", "tables")


def record_bench(path: str | Path, name: str, result: dict) -> None:
    """Store one benchmark's ``result`` (:data:`BENCH_FIELDS`) under ``name`` in the JSON file
    at ``path``, keeping the other benchmarks already there (``python -m pe_book bench
    --record``; chapter 12 prints them)."""
    from pe_book.results import write_atomically

    path = Path(path)
    stored = load_bench(path) if path.exists() else {"study": "bench", "runs": {}}
    stored["runs"][name] = result
    write_atomically(path, stored)


def load_bench(path: str | Path | None = None) -> dict:
    """results/bench.json (or ``path``), each benchmark's record checked for its fields."""
    from pe_book.results import RESULTS

    path = Path(path) if path is not None else RESULTS / "bench.json"
    stored = json.loads(path.read_text(encoding="utf-8"))
    for name, result in stored.get("runs", {}).items():
        missing = [field for field in BENCH_FIELDS if field not in result]
        if missing:
            raise ValueError(f"{path}: benchmark {name!r} lacks {missing}")
    return stored
