"""Builds pe_book's one compiled module; everything else is in pyproject.toml.

pe_book._rope_kernel: the fused half-layout RoPE loop (chapter 12, section 12.6).
Plain C against Python's headers only (no PyTorch headers, so building needs
no torch and takes about a second); OpenMP shares its rows among threads.
"""

import sys

from setuptools import Extension, setup

# Linux (CI, and the machines the book is tested on): gcc with OpenMP, and the build
# must succeed. Elsewhere the loop is optional: Apple's clang has no OpenMP (the
# loop then runs on one thread), and where it cannot be built at all pe_book falls
# back to the plain PyTorch path (tests/test_rope_kernel.py reports it).
linux = sys.platform == "linux"
openmp = ["-fopenmp"] if linux else []

setup(
    ext_modules=[
        Extension(
            "pe_book._rope_kernel",
            sources=["pe_book/_rope_kernel.c"],
            extra_compile_args=["-O3", "-std=c11", *openmp],
            extra_link_args=openmp,
            optional=not linux,
        )
    ]
)
