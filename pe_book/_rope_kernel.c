/* Fused RoPE for both layouts: chapter 12, section 12.6.
 *
 * Pair j of a row of x (length d = 2h) is (x[j], x[j + h]) in the "half" layout
 * (GPT-NeoX, Llama's rotate_half) and (x[2j], x[2j + 1]) in the "interleaved" one
 * (RoFormer, GPT-J). For the row at position t, with c = cos[t][j] and s = sin[t][j]:
 *
 *     (a, b) -> (a c - b s,  b c + a s)
 *
 * (the backward pass calls it with -sin: the rotation by minus the angle, the transpose).
 * One loop reads each pair once and writes it once, the traffic of a copy, plus one row of
 * the (T, h) cos and sin tables per row of x. The rows are walked in memory order (position
 * fastest, then head, then batch), so each head sweeps the whole tables: 2 x T x h x 4
 * bytes, 512 KiB at T = 2048, d = 64, which the second-level cache holds while x streams
 * through. (Walking blocks of positions across heads, to keep the tables' rows in the
 * first-level cache, was not tried.) Eager PyTorch needs three
 * passes for the half layout (x cos, then one multiply-add per half) and a complex multiply
 * for the interleaved one.
 *
 * Storage: float32, float64, or bfloat16 (rotated in float32 and rounded back to nearest
 * even, as x.float() ... .bfloat16() does; on CPUs with AVX512-BF16 by its one conversion
 * instruction, which also flushes results below 2^-126 to zero). Outputs larger than the last-level cache are
 * written with streaming stores, past the caches, as glibc's memcpy writes a large copy:
 * otherwise each store would first read its line from memory, a third of the traffic more
 * than the copy it is compared with. Smaller outputs stay in cache for attention to read.
 *
 * x is (n0, n1, T, d) with element strides (s0, s1, sT, 1); cos and sin are contiguous
 * (T, h); out is contiguous (n0, n1, T, d). Built three times, for AVX-512, AVX2 and
 * baseline x86-64 (SSE2) registers, from one body (_rope_kernel_body.h, GCC's vector
 * extensions); Python picks the build that matches PyTorch's own CPU dispatch, so
 * ATEN_CPU_CAPABILITY pins both. -std=c11 keeps multiplies and adds separate (no fused
 * multiply-add contraction), so every build rounds alike: the same bits on every x86-64
 * machine. Called from pe_book/rope_kernel.py, which checks every shape, stride and dtype
 * before passing raw pointers here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#else /* built without OpenMP (e.g. Apple's clang): one thread */
static int omp_get_thread_num(void) { return 0; }
static int omp_get_num_threads(void) { return 1; }
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define X86_BUILDS 1
#include <immintrin.h>
#include <unistd.h>
#else /* other compilers and CPUs: one build for the baseline the compiler targets */
#define X86_BUILDS 0
#endif

#if X86_BUILDS /* constant shuffles: spread cos and sin over pairs, swap a pair's numbers */
typedef int32_t m16 __attribute__((vector_size(64)));
typedef int32_t m8 __attribute__((vector_size(32)));
typedef int32_t m4 __attribute__((vector_size(16)));
typedef int64_t m2 __attribute__((vector_size(16)));
#define FENCE() _mm_sfence()
#else
#define FENCE() ((void)0)
#endif

#define STORE_FULL(p, v) (*(VEC *)(p) = (v))
#define STORE_HALF(p, s) (*(SVEC *)(p) = (s))

/* float32 and bfloat16 with AVX-512 */
#if X86_BUILDS
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")
#define VBYTES 64
#define T_ float
#define LOW_PAIRS ((m16){0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7})
#define HIGH_PAIRS ((m16){8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15})
#define SWAP ((m16){1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14})
#define SIGNS ((VEC){-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1})
#define STREAM_FULL(p, v) _mm512_stream_ps((float *)(p), (__m512)(v))
#define STREAM_HALF(p, s) _mm256_stream_si256((__m256i *)(p), (__m256i)(s))
#define ST_ float
#define IS_BF16 0
#define SUF f32_avx512
#include "_rope_kernel_body.h"
#undef ST_
#undef IS_BF16
#undef SUF
#define ST_ uint16_t
#define IS_BF16 1
#define SUF bf16_avx512
#include "_rope_kernel_body.h"
#undef SUF
#pragma GCC push_options
#pragma GCC target("avx512bf16")
#define NARROW(v) _mm512_cvtneps_pbh((__m512)(v))
#define SUF bf16_avx512bf16
#include "_rope_kernel_body.h"
#undef NARROW
#undef SUF
#pragma GCC pop_options
#undef ST_
#undef IS_BF16
#undef LOW_PAIRS
#undef HIGH_PAIRS
#undef SWAP
#undef SIGNS
#undef STREAM_FULL
#undef STREAM_HALF
#undef T_
#undef VBYTES
#pragma GCC pop_options

/* float32 and bfloat16 with AVX2 */
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define VBYTES 32
#define T_ float
#define LOW_PAIRS ((m8){0, 0, 1, 1, 2, 2, 3, 3})
#define HIGH_PAIRS ((m8){4, 4, 5, 5, 6, 6, 7, 7})
#define SWAP ((m8){1, 0, 3, 2, 5, 4, 7, 6})
#define SIGNS ((VEC){-1, 1, -1, 1, -1, 1, -1, 1})
#define STREAM_FULL(p, v) _mm256_stream_ps((float *)(p), (__m256)(v))
#define STREAM_HALF(p, s) _mm_stream_si128((__m128i *)(p), (__m128i)(s))
#define ST_ float
#define IS_BF16 0
#define SUF f32_avx2
#include "_rope_kernel_body.h"
#undef ST_
#undef IS_BF16
#undef SUF
#define ST_ uint16_t
#define IS_BF16 1
#define SUF bf16_avx2
#include "_rope_kernel_body.h"
#undef ST_
#undef IS_BF16
#undef SUF
#undef LOW_PAIRS
#undef HIGH_PAIRS
#undef SWAP
#undef SIGNS
#undef STREAM_FULL
#undef STREAM_HALF
#undef T_
#undef VBYTES
#pragma GCC pop_options
#endif

/* Baseline: float32, bfloat16 and float64 with the compiler's default target */
#define VBYTES 16
#define T_ float
#if X86_BUILDS
#define LOW_PAIRS ((m4){0, 0, 1, 1})
#define HIGH_PAIRS ((m4){2, 2, 3, 3})
#define SWAP ((m4){1, 0, 3, 2})
#define STREAM_FULL(p, v) _mm_stream_ps((float *)(p), (__m128)(v))
#else
#define STREAM_FULL STORE_FULL
#endif
#define SIGNS ((VEC){-1, 1, -1, 1})
#define STREAM_HALF STORE_HALF
#define ST_ float
#define IS_BF16 0
#define SUF f32_base
#include "_rope_kernel_body.h"
#undef ST_
#undef IS_BF16
#undef SUF
#define ST_ uint16_t
#define IS_BF16 1
#define SUF bf16_base
#include "_rope_kernel_body.h"
#undef ST_
#undef IS_BF16
#undef SUF
#undef LOW_PAIRS
#undef HIGH_PAIRS
#undef SWAP
#undef SIGNS
#undef STREAM_FULL
#undef T_
#define T_ double
#if X86_BUILDS
#define LOW_PAIRS ((m2){0, 0})
#define HIGH_PAIRS ((m2){1, 1})
#define SWAP ((m2){1, 0})
#endif
#define SIGNS ((VEC){-1, 1})
#define STREAM_FULL STORE_FULL
#define ST_ double
#define IS_BF16 0
#define SUF f64_base
#include "_rope_kernel_body.h"
#undef ST_
#undef IS_BF16
#undef SUF
#undef STREAM_FULL
#undef STREAM_HALF
#undef T_
#undef VBYTES

static int cpu_has(const char *isa) {
#if X86_BUILDS
    __builtin_cpu_init();
    if (!strcmp(isa, "avx512"))
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
    if (!strcmp(isa, "avx2")) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return !strcmp(isa, "base");
}

/* rotate(x, cos, sin, out, n0, n1, T, h, s0, s1, sT, storage, interleaved, threads, isa,
 * stream): storage is "f32", "f64" or "bf16"; stream needs out aligned to 64 bytes and rows
 * whose halves start aligned (checked in Python). */
static PyObject *rotate(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long x, cos_t, sin_t, out;
    long long n0, n1, T, h, s0, s1, sT;
    const char *storage, *isa;
    int interleaved, threads, stream;
    if (!PyArg_ParseTuple(args, "KKKKLLLLLLLspisp", &x, &cos_t, &sin_t, &out, &n0, &n1, &T, &h,
                          &s0, &s1, &sT, &storage, &interleaved, &threads, &isa, &stream))
        return NULL;
    if (n0 < 1 || n1 < 1 || T < 1 || h < 1 || threads < 1) {
        PyErr_SetString(PyExc_ValueError,
                        "rotate: n0, n1, T, h and threads must be >= 1 (empty tensors "
                        "are handled in Python)");
        return NULL;
    }
    const int f64 = !strcmp(storage, "f64"), bf16 = !strcmp(storage, "bf16");
    if (!f64 && !bf16 && strcmp(storage, "f32")) {
        PyErr_SetString(PyExc_ValueError, "rotate: storage must be 'f32', 'f64' or 'bf16'");
        return NULL;
    }
    if (!cpu_has(isa)) {
        PyErr_Format(PyExc_ValueError, "rotate: isa %s is not built or not supported here", isa);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
#define CALL(SUF, ST_, T_)                                                                    \
    rotate_##SUF((const ST_ *)x, (const T_ *)cos_t, (const T_ *)sin_t, (ST_ *)out, n0, n1, T, \
                 h, s0, s1, sT, interleaved, threads, stream)
    if (f64) CALL(f64_base, double, double);
#if X86_BUILDS
    else if (!strcmp(isa, "avx512") && bf16 && __builtin_cpu_supports("avx512bf16"))
        CALL(bf16_avx512bf16, uint16_t, float);
    else if (!strcmp(isa, "avx512") && bf16) CALL(bf16_avx512, uint16_t, float);
    else if (!strcmp(isa, "avx512")) CALL(f32_avx512, float, float);
    else if (!strcmp(isa, "avx2") && bf16) CALL(bf16_avx2, uint16_t, float);
    else if (!strcmp(isa, "avx2")) CALL(f32_avx2, float, float);
#endif
    else if (bf16) CALL(bf16_base, uint16_t, float);
    else CALL(f32_base, float, float);
#undef CALL
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* The size of the last-level cache in bytes (0 if unknown): above it outputs are streamed. */
static PyObject *cache_bytes(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    long size = 0;
#if X86_BUILDS && defined(_SC_LEVEL3_CACHE_SIZE)
    size = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (size <= 0) size = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return PyLong_FromLong(size > 0 ? size : 0);
}

static PyObject *supported(PyObject *self, PyObject *arg) {
    (void)self;
    const char *isa = PyUnicode_AsUTF8(arg);
    if (!isa) return NULL;
    return PyBool_FromLong(cpu_has(isa));
}

static PyMethodDef methods[] = {
    {"rotate", rotate, METH_VARARGS,
     "rotate(x, cos, sin, out, n0, n1, T, h, s0, s1, sT, storage, interleaved, threads, isa, "
     "stream):\nfused RoPE on raw data pointers (see pe_book/rope_kernel.py)."},
    {"cache_bytes", cache_bytes, METH_NOARGS, "the last-level cache's size in bytes, 0 if unknown"},
    {"supported", supported, METH_O, "supported(isa): whether this CPU runs that build"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_rope_kernel",
    .m_doc = "Fused RoPE in C (chapter 12); use pe_book.rope_kernel, not this module.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__rope_kernel(void) { return PyModule_Create(&module); }
