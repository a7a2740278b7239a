/* Fused RoPE for the "half" layout (GPT-NeoX, Llama's rotate_half): chapter 12, section 12.6.
 *
 * Pair j of a row of x (length d = 2h) is (x[j], x[j + h]). For the row at position t:
 *
 *     out[j]     = x[j] cos[t][j] - x[j + h] sin[t][j]
 *     out[j + h] = x[j + h] cos[t][j] + x[j] sin[t][j]
 *
 * (the backward pass calls it with -sin: the rotation by minus the angle, the
 * transpose). One loop reads each pair once and writes it once, the traffic of a
 * copy, plus the (T, h) cos and sin tables, which stay in cache across heads. Eager PyTorch needs three passes for this layout
 * (x cos, then one multiply-add per half), because no single operation pairs
 * coordinates half a row apart.
 *
 * x is (n0, n1, T, d) with element strides (s0, s1, sT, 1); cos and sin are
 * contiguous (T, h); out is contiguous (n0, n1, T, d). The rows are cut into
 * `threads` consecutive ranges, one per OpenMP thread; each thread finds the
 * (batch, head, position) of its first row once and then steps through them (no
 * division per row). With gcc on x86-64, target_clones compiles the row loop for
 * AVX-512 (x86-64-v4), AVX2 (x86-64-v3) and baseline x86-64 and picks the best the
 * CPU has when the module loads. -std=c11 keeps multiplies and adds separate (no
 * fused multiply-add contraction), so every clone rounds alike: the same bits on
 * every x86-64 machine. Called from pe_book/rope_kernel.py, which checks every shape,
 * stride and dtype before passing raw pointers here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#else /* built without OpenMP (e.g. Apple's clang): one thread */
static int omp_get_thread_num(void) { return 0; }
static int omp_get_num_threads(void) { return 1; }
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else /* other compilers and CPUs: one build for the baseline the compiler targets */
#define CLONES
#endif

/* Rows begin .. end - 1, where row r is batch i0, head i1, position t. Its own function
 * with restrict pointers, so the compiler knows out never overlaps x, cos or sin and
 * vectorises the inner loop without run-time overlap checks. */
#define ROTATE_ROWS(NAME, T_)                                                          \
    CLONES                                                                             \
    static void NAME(const T_ *restrict x, const T_ *restrict cos_t,                   \
                     const T_ *restrict sin_t, T_ *restrict out, int64_t n1,           \
                     int64_t T, int64_t h, int64_t s0, int64_t s1, int64_t sT,         \
                     int64_t begin, int64_t end) {                                      \
        int64_t t = begin % T, i1 = begin / T % n1, i0 = begin / T / n1;               \
        for (int64_t r = begin; r < end; r++) {                                        \
            const T_ *restrict x1 = x + i0 * s0 + i1 * s1 + t * sT;                    \
            const T_ *restrict x2 = x1 + h;                                            \
            const T_ *restrict cos_m = cos_t + t * h;                                  \
            const T_ *restrict sin_m = sin_t + t * h;                                  \
            T_ *restrict out1 = out + r * 2 * h;                                       \
            T_ *restrict out2 = out1 + h;                                              \
            for (int64_t j = 0; j < h; j++) {                                          \
                const T_ c = cos_m[j], s = sin_m[j];                                   \
                out1[j] = x1[j] * c - x2[j] * s;                                       \
                out2[j] = x2[j] * c + x1[j] * s;                                       \
            }                                                                          \
            if (++t == T) { /* next row: the next position, head or batch */           \
                t = 0;                                                                 \
                if (++i1 == n1) { i1 = 0; i0++; }                                      \
            }                                                                          \
        }                                                                              \
    }

/* All n0 * n1 * T rows, cut into `threads` consecutive ranges, one per OpenMP thread. */
#define ROTATE_HALF(NAME, ROWS, T_)                                                    \
    static void NAME(const T_ *x, const T_ *cos_t, const T_ *sin_t, T_ *out,           \
                     int64_t n0, int64_t n1, int64_t T, int64_t h, int64_t s0,         \
                     int64_t s1, int64_t sT, int threads) {                            \
        const int64_t rows = n0 * n1 * T;                                              \
        (void)threads; /* unused when built without OpenMP */                          \
        _Pragma("omp parallel num_threads(threads) if(rows * h >= 16384)")             \
        {                                                                              \
            const int64_t k = omp_get_thread_num(), n = omp_get_num_threads();         \
            ROWS(x, cos_t, sin_t, out, n1, T, h, s0, s1, sT, rows * k / n,             \
                 rows * (k + 1) / n);                                                  \
        }                                                                              \
    }

ROTATE_ROWS(rows_f32, float)
ROTATE_ROWS(rows_f64, double)
ROTATE_HALF(rotate_half_f32, rows_f32, float)
ROTATE_HALF(rotate_half_f64, rows_f64, double)

static PyObject *rotate_half(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long x, cos_t, sin_t, out;
    long long n0, n1, T, h, s0, s1, sT;
    int is_double, threads;
    if (!PyArg_ParseTuple(args, "KKKKLLLLLLLpi", &x, &cos_t, &sin_t, &out, &n0, &n1, &T, &h,
                          &s0, &s1, &sT, &is_double, &threads))
        return NULL;
    if (n0 < 1 || n1 < 1 || T < 1 || h < 1 || threads < 1) {
        PyErr_SetString(PyExc_ValueError,
                        "rotate_half: n0, n1, T, h and threads must be >= 1 (empty tensors "
                        "are handled in Python)");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    if (is_double)
        rotate_half_f64((const double *)x, (const double *)cos_t, (const double *)sin_t,
                        (double *)out, n0, n1, T, h, s0, s1, sT, threads);
    else
        rotate_half_f32((const float *)x, (const float *)cos_t, (const float *)sin_t,
                        (float *)out, n0, n1, T, h, s0, s1, sT, threads);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"rotate_half", rotate_half, METH_VARARGS,
     "rotate_half(x, cos, sin, out, n0, n1, T, h, s0, s1, sT, is_double, threads):\n"
     "fused half-layout RoPE on raw data pointers (see pe_book/rope_kernel.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_rope_kernel",
    .m_doc = "Fused half-layout RoPE in C (chapter 12); use pe_book.rope_kernel, not this module.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__rope_kernel(void) { return PyModule_Create(&module); }
