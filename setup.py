"""Builds pe_book's one compiled module; everything else is in pyproject.toml.

pe_book._rope_kernel: the fused half-layout RoPE loop (chapter 7, section 7.6).
Plain C against Python's headers only (no PyTorch headers, so building needs
no torch and takes about a second); OpenMP shares its rows among threads.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pe_book._rope_kernel",
            sources=["pe_book/_rope_kernel.c"],
            extra_compile_args=["-O3", "-fopenmp", "-std=c11"],
            extra_link_args=["-fopenmp"],
        )
    ]
)
