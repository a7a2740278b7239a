"""Builds pe_book's two compiled modules; everything else is in pyproject.toml.

pe_book._rope_kernel: the fused RoPE loop, both layouts (chapter 12, section 12.6).
pe_book._bias_attention: causal attention reading a relative bias per offset inside
the kernel (ALiBi, T5, KERPLE, FIRE, Shaw et al.; chapter 12, section 12.7).
Plain C against Python's headers only (no PyTorch headers, so building needs
no torch and takes seconds); OpenMP shares the work among threads.
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
            depends=["pe_book/_rope_kernel_body.h"],
            extra_compile_args=["-O3", "-std=c11", *openmp],
            extra_link_args=openmp,
            optional=not linux,
        ),
        Extension(
            "pe_book._bias_attention",
            sources=["pe_book/_bias_attention.c"],
            depends=["pe_book/_bias_attention_body.h"],
            extra_compile_args=["-O3", "-std=c11", *openmp],
            extra_link_args=openmp,
            optional=not linux,
        ),
    ]
)
