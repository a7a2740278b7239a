/* Causal attention with a relative-position bias read from a small table inside the
 * kernel: chapter 12, section 12.7 (pe_book/bias_attention.py wraps it).
 *
 * For query m and key n <= m the score is scale * q_m . k_n + bias(m - n), with the
 * bias of offset r from a table of nb entries, the last one shared by every r >= nb - 1.
 * ALiBi (-s_h r), T5 (its bucket's learned value), KERPLE and FIRE (a function of r) give
 * one table per head, of the sequence's length; Shaw et al. give one small table per query
 * (q_m . a_r for the 2K + 1 clipped offsets, the relative logits of Music Transformer).
 * No L x L tensor is ever made: like FlashAttention (Dao et al. 2022, 2023) the kernel
 * walks blocks of 32 queries by 128 keys, keeps a running maximum and sum per query, and
 * the backward pass recomputes the weights from the saved log-sum-exp. The table's
 * gradient (T5's, KERPLE's, ...) is summed per offset as the weights are recomputed.
 *
 * Instruction sets: the kernels are compiled three times, for AVX-512, AVX2 and baseline
 * x86-64 (SSE2) vector registers, from one body (_bias_attention_body.h) written with GCC's
 * vector extensions; Python picks one, following PyTorch's own CPU dispatch
 * (torch.backends.cpu.get_cpu_capability(), which ATEN_CPU_CAPABILITY pins), so that
 * `ATEN_CPU_CAPABILITY=avx2` runs this kernel's AVX2 build too. float64 has one baseline
 * build, for the tests' gradient checks. OpenMP shares the (batch, head) pairs among
 * threads. Called only through pe_book/bias_attention.py, which checks every shape,
 * stride and dtype before passing raw pointers here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const void *q, *k, *v, *table, *grad_out, *dsum, *gtable;
    void *out, *lse, *wsum, *dq, *dk, *dv_out, *dtable;
    int64_t qs[3], ks[3], vs[3], ts[3]; /* element strides of batch, head, row */
    int64_t B, H, Lq, Lk, d, dv, nb, start;
    double scale;
    int threads;
} AttnArgs;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define X86_BUILDS 1
#else
#define X86_BUILDS 0
#endif

#define IS_FLOAT 1
#define T_ float
#if X86_BUILDS
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,bmi2")
#pragma GCC optimize("fp-contract=fast") /* fused multiply-adds */
#define VBYTES 64
#define SUF f32_avx512
#include "_bias_attention_body.h"
#undef VBYTES
#undef SUF
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma,bmi2")
#pragma GCC optimize("fp-contract=fast")
#define VBYTES 32
#define SUF f32_avx2
#include "_bias_attention_body.h"
#undef VBYTES
#undef SUF
#pragma GCC pop_options
#endif
#define VBYTES 16
#define SUF f32_base
#include "_bias_attention_body.h"
#undef VBYTES
#undef SUF
#undef T_
#undef IS_FLOAT

#define IS_FLOAT 0
#define T_ double
#define VBYTES 16
#define SUF f64_base
#include "_bias_attention_body.h"
#undef VBYTES
#undef SUF
#undef T_
#undef IS_FLOAT

/* The builds this CPU can run, best first: "avx512", "avx2", "base". */
static int cpu_has(const char *isa) {
#if X86_BUILDS
    __builtin_cpu_init();
    if (!strcmp(isa, "avx512"))
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("fma");
    if (!strcmp(isa, "avx2")) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return !strcmp(isa, "base");
}

static int parse_ints(PyObject *seq, int64_t *out, Py_ssize_t n, const char *what) {
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast) return 0;
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd integers", what, n);
        Py_DECREF(fast);
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = (int64_t)PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (PyErr_Occurred()) {
            Py_DECREF(fast);
            return 0;
        }
    }
    Py_DECREF(fast);
    return 1;
}

/* run(mode, isa, is_double, pointers[14], sizes[20], scale, threads) */
static PyObject *run(PyObject *self, PyObject *args) {
    (void)self;
    const char *mode, *isa;
    int is_double, threads;
    PyObject *pointers, *sizes;
    double scale;
    if (!PyArg_ParseTuple(args, "sspOOdi", &mode, &isa, &is_double, &pointers, &sizes, &scale,
                          &threads))
        return NULL;
    int64_t ptr[14], sz[20];
    if (!parse_ints(pointers, ptr, 14, "pointers") || !parse_ints(sizes, sz, 20, "sizes"))
        return NULL;
    if (!cpu_has(isa)) {
        PyErr_Format(PyExc_ValueError, "isa %s is not built or not supported by this CPU", isa);
        return NULL;
    }
    int backward = !strcmp(mode, "backward");
    if (!backward && strcmp(mode, "forward")) {
        PyErr_SetString(PyExc_ValueError, "mode must be 'forward' or 'backward'");
        return NULL;
    }
    AttnArgs a = {0};
    a.q = (const void *)ptr[0], a.k = (const void *)ptr[1], a.v = (const void *)ptr[2];
    a.table = (const void *)ptr[3], a.grad_out = (const void *)ptr[4];
    a.dsum = (const void *)ptr[5], a.gtable = (const void *)ptr[6];
    a.out = (void *)ptr[7], a.lse = (void *)ptr[8], a.wsum = (void *)ptr[9];
    a.dq = (void *)ptr[10], a.dk = (void *)ptr[11], a.dv_out = (void *)ptr[12];
    a.dtable = (void *)ptr[13];
    for (int i = 0; i < 3; i++) {
        a.qs[i] = sz[i], a.ks[i] = sz[3 + i], a.vs[i] = sz[6 + i], a.ts[i] = sz[9 + i];
    }
    a.B = sz[12], a.H = sz[13], a.Lq = sz[14], a.Lk = sz[15], a.d = sz[16], a.dv = sz[17];
    a.nb = sz[18], a.start = sz[19];
    a.scale = scale;
    a.threads = threads;
    if (a.B < 1 || a.H < 1 || a.Lq < 1 || a.Lk < 1 || a.d < 1 || a.dv < 1 || a.nb < 1 ||
        a.start < 0 || a.start + a.Lq > a.Lk || threads < 1) {
        PyErr_SetString(PyExc_ValueError, "bias_attention: bad sizes (checked in Python first)");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    if (is_double) {
        if (backward) backward_f64_base(&a); else forward_f64_base(&a);
    }
#if X86_BUILDS
    else if (!strcmp(isa, "avx512")) {
        if (backward) backward_f32_avx512(&a); else forward_f32_avx512(&a);
    } else if (!strcmp(isa, "avx2")) {
        if (backward) backward_f32_avx2(&a); else forward_f32_avx2(&a);
    }
#endif
    else {
        if (backward) backward_f32_base(&a); else forward_f32_base(&a);
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* scratch(mode, isa, is_double, sizes[20]): bytes one task allocates (one per thread at a
 * time), the most any call holds besides its inputs and outputs. */
static PyObject *scratch(PyObject *self, PyObject *args) {
    (void)self;
    const char *mode, *isa;
    int is_double;
    PyObject *sizes;
    if (!PyArg_ParseTuple(args, "sspO", &mode, &isa, &is_double, &sizes)) return NULL;
    int64_t sz[20];
    if (!parse_ints(sizes, sz, 20, "sizes")) return NULL;
    AttnArgs a = {0};
    a.B = sz[12], a.H = sz[13], a.Lq = sz[14], a.Lk = sz[15], a.d = sz[16], a.dv = sz[17];
    a.nb = sz[18], a.start = sz[19];
    const int64_t kmax = a.start + a.Lq < a.Lk ? a.start + a.Lq : a.Lk;
    int backward = !strcmp(mode, "backward");
    int64_t elements;
    if (is_double)
        elements = backward ? backward_scratch_f64_base(&a) : forward_scratch_f64_base(&a, kmax);
#if X86_BUILDS
    else if (!strcmp(isa, "avx512"))
        elements = backward ? backward_scratch_f32_avx512(&a) : forward_scratch_f32_avx512(&a, kmax);
    else if (!strcmp(isa, "avx2"))
        elements = backward ? backward_scratch_f32_avx2(&a) : forward_scratch_f32_avx2(&a, kmax);
#endif
    else
        elements = backward ? backward_scratch_f32_base(&a) : forward_scratch_f32_base(&a, kmax);
    return PyLong_FromLongLong(elements * (is_double ? 8 : 4));
}

static PyObject *supported(PyObject *self, PyObject *arg) {
    (void)self;
    const char *isa = PyUnicode_AsUTF8(arg);
    if (!isa) return NULL;
    return PyBool_FromLong(cpu_has(isa));
}

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS,
     "run(mode, isa, is_double, pointers, sizes, scale, threads): see pe_book/bias_attention.py"},
    {"supported", supported, METH_O, "supported(isa): whether this CPU runs that build"},
    {"scratch", scratch, METH_VARARGS, "scratch(mode, isa, is_double, sizes): bytes per task"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_bias_attention",
    .m_doc = "Causal attention with a relative bias table, in C (chapter 12); use "
             "pe_book.bias_attention, not this module.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__bias_attention(void) { return PyModule_Create(&module); }
