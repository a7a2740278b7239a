"""Builds pe_book's two compiled modules; everything else is in pyproject.toml.

pe_book._rope_kernel: the fused RoPE loop, both layouts (chapter 12, section 12.6).
pe_book._bias_attention: causal attention reading a relative bias per offset inside
the kernel (ALiBi, T5, KERPLE, FIRE, Shaw et al.; chapter 12, section 12.7).
Plain C against Python's headers only (no PyTorch headers, so building needs
no torch and takes seconds); OpenMP shares the work among threads.
"""

import os
import shutil
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExtAtomically(build_ext):
    """Put each built module in place by renaming a fresh copy over it. A running Python
    (a long training run) keeps the file it mapped; copying over it in place would change
    its code under its feet."""

    def copy_file(self, infile, outfile, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not str(outfile).endswith((".so", ".pyd")):
            return super().copy_file(infile, outfile, *args, **kwargs)
        temporary = f"{outfile}.{os.getpid()}.tmp"
        shutil.copy2(infile, temporary)
        os.replace(temporary, outfile)
        return outfile, True


# Linux (CI, and the machines the book is tested on): gcc with OpenMP, and the build
# must succeed. Elsewhere the loop is optional: Apple's clang has no OpenMP (the
# loop then runs on one thread), and where it cannot be built at all pe_book falls
# back to the plain PyTorch path (tests/test_rope_kernel.py reports it).
linux = sys.platform == "linux"
openmp = ["-fopenmp"] if linux else []

setup(
    cmdclass={"build_ext": BuildExtAtomically},
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
