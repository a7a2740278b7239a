/* One instance of the fused RoPE loops (included by _rope_kernel.c, which documents them).
 *
 * Before including, the includer defines
 *   ST_     the storage type of x and out: float, double or uint16_t (bfloat16)
 *   T_      the type the rotation is computed in: float (float, bfloat16) or double
 *   IS_BF16 1 for bfloat16 storage
 *   VBYTES  the vector register width in bytes (64 AVX-512, 32 AVX2, 16 SSE2)
 *   SUF     the suffix of this instance's names
 * and switches the compiler's target with #pragma GCC target.
 */

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define VL (VBYTES / (int)sizeof(T_))
#define VEC CAT(vec, SUF)
#define IVEC CAT(ivec, SUF)
#define SVEC CAT(svec, SUF)

typedef T_ VEC __attribute__((vector_size(VBYTES), aligned(sizeof(T_)), may_alias));
#if IS_BF16
typedef uint32_t IVEC __attribute__((vector_size(VBYTES), aligned(4), may_alias));
typedef uint16_t SVEC __attribute__((vector_size(VBYTES / 2), aligned(2), may_alias));
#endif

/* Load VL stored numbers as a vector of T_ (bfloat16: the top half of a float32). */
static inline VEC CAT(load, SUF)(const ST_ *p) {
#if IS_BF16
    return (VEC)(__builtin_convertvector(*(const SVEC *)p, IVEC) << 16);
#else
    return *(const VEC *)p;
#endif
}

static inline ST_ CAT(narrow, SUF)(T_ x) {
#if IS_BF16
    uint32_t bits;
    memcpy(&bits, &x, 4);
    return (uint16_t)((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16); /* round to nearest even */
#else
    return x;
#endif
}

static inline T_ CAT(widen, SUF)(ST_ x) {
#if IS_BF16
    uint32_t bits = (uint32_t)x << 16;
    float y;
    memcpy(&y, &bits, 4);
    return y;
#else
    return x;
#endif
}

/* Store VL numbers; with `stream`, past the caches (p aligned to the vector's bytes). */
static inline void CAT(store, SUF)(ST_ *p, VEC v, int stream) {
#if IS_BF16 && defined(NARROW) /* one instruction: AVX512-BF16's vcvtneps2bf16 */
    SVEC narrow = (SVEC)NARROW(v);
    if (stream) STREAM_HALF(p, narrow);
    else *(SVEC *)p = narrow;
#elif IS_BF16
    IVEC bits = (IVEC)v;
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16; /* round to nearest even */
    SVEC narrow = __builtin_convertvector(bits, SVEC);
    if (stream) STREAM_HALF(p, narrow);
    else *(SVEC *)p = narrow;
#else
    if (stream) STREAM_FULL(p, v);
    else *(VEC *)p = v;
#endif
}

/* Half layout: pair j of a row is (x[j], x[j + h]). */
static inline void CAT(half_row, SUF)(const ST_ *restrict x1, const T_ *restrict cos_m,
                                      const T_ *restrict sin_m, ST_ *restrict out1, int64_t h,
                                      int stream) {
    const ST_ *restrict x2 = x1 + h;
    ST_ *restrict out2 = out1 + h;
    int64_t j = 0;
    for (; j + VL <= h; j += VL) {
        const VEC c = *(const VEC *)(cos_m + j), s = *(const VEC *)(sin_m + j);
        const VEC a = CAT(load, SUF)(x1 + j), b = CAT(load, SUF)(x2 + j);
        CAT(store, SUF)(out1 + j, a * c - b * s, stream);
        CAT(store, SUF)(out2 + j, b * c + a * s, stream);
    }
    for (; j < h; j++) {
        const T_ c = cos_m[j], s = sin_m[j];
        const T_ a = CAT(widen, SUF)(x1[j]), b = CAT(widen, SUF)(x2[j]);
        out1[j] = CAT(narrow, SUF)(a * c - b * s);
        out2[j] = CAT(narrow, SUF)(b * c + a * s);
    }
}

/* Interleaved layout: pair j of a row is (x[2j], x[2j + 1]). Each cos and sin is spread to
 * both numbers of its pair, and x's pairs swapped, by shuffles within registers. */
static inline void CAT(interleaved_row, SUF)(const ST_ *restrict x, const T_ *restrict cos_m,
                                             const T_ *restrict sin_m, ST_ *restrict out,
                                             int64_t h, int stream) {
    int64_t j = 0;
#ifdef LOW_PAIRS
    for (; j + VL <= h; j += VL) { /* VL pairs: two vectors of x */
        const VEC c = *(const VEC *)(cos_m + j), s = *(const VEC *)(sin_m + j);
        const VEC a = CAT(load, SUF)(x + 2 * j), b = CAT(load, SUF)(x + 2 * j + VL);
        const VEC c_a = __builtin_shuffle(c, LOW_PAIRS), c_b = __builtin_shuffle(c, HIGH_PAIRS);
        const VEC s_a = __builtin_shuffle(s, LOW_PAIRS) * SIGNS;
        const VEC s_b = __builtin_shuffle(s, HIGH_PAIRS) * SIGNS;
        CAT(store, SUF)(out + 2 * j, a * c_a + __builtin_shuffle(a, SWAP) * s_a, stream);
        CAT(store, SUF)(out + 2 * j + VL, b * c_b + __builtin_shuffle(b, SWAP) * s_b, stream);
    }
#endif
    for (; j < h; j++) {
        const T_ c = cos_m[j], s = sin_m[j];
        const T_ a = CAT(widen, SUF)(x[2 * j]), b = CAT(widen, SUF)(x[2 * j + 1]);
        out[2 * j] = CAT(narrow, SUF)(a * c - b * s);
        out[2 * j + 1] = CAT(narrow, SUF)(b * c + a * s);
    }
}

/* All n0 * n1 * T rows, cut into `threads` consecutive ranges, one per OpenMP thread; one
 * thread below 16,384 pairs, so decoding one token wakes no threads. Each thread finds the
 * (batch, head, position) of its first row once and then steps through them. */
static void CAT(rotate, SUF)(const ST_ *x, const T_ *cos_t, const T_ *sin_t, ST_ *out,
                             int64_t n0, int64_t n1, int64_t T, int64_t h, int64_t s0,
                             int64_t s1, int64_t sT, int interleaved, int threads, int stream) {
    const int64_t rows = n0 * n1 * T;
    (void)threads; /* unused when built without OpenMP */
    _Pragma("omp parallel num_threads(threads) if(rows * h >= 16384)")
    {
        const int64_t k = omp_get_thread_num(), n = omp_get_num_threads();
        const int64_t begin = rows * k / n, end = rows * (k + 1) / n;
        int64_t t = begin % T, i1 = begin / T % n1, i0 = begin / T / n1;
        for (int64_t r = begin; r < end; r++) {
            const ST_ *row = x + i0 * s0 + i1 * s1 + t * sT;
            ST_ *dest = out + r * 2 * h;
            if (interleaved)
                CAT(interleaved_row, SUF)(row, cos_t + t * h, sin_t + t * h, dest, h, stream);
            else
                CAT(half_row, SUF)(row, cos_t + t * h, sin_t + t * h, dest, h, stream);
            if (++t == T) { /* next row: the next position, head or batch */
                t = 0;
                if (++i1 == n1) { i1 = 0; i0++; }
            }
        }
        if (stream) FENCE();
    }
}

#undef VL
#undef VEC
#undef IVEC
#undef SVEC
#undef CAT
#undef CAT2
