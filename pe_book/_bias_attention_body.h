/* One instance of the relative-bias attention kernels (included by _bias_attention.c).
 *
 * Before including, the includer defines
 *   T_      float or double
 *   VBYTES  the vector register width in bytes (64 AVX-512, 32 AVX2, 16 SSE2)
 *   SUF     the suffix of this instance's function names (f32_avx512, ...)
 * and switches the compiler's target with #pragma GCC target. GCC's vector
 * extensions (vector_size) then compile to that instruction set's registers.
 *
 * Notation as in pe_book/bias_attention.py: query i sits at position m = start + i,
 * key n at n; query m sees keys n <= m; the score is
 *     s_mn = scale * q_m . k_n + rT[n - p_m]     (n >= p_m = m - nb + 1)
 *     s_mn = scale * q_m . k_n + rT[0]           (n <  p_m: every offset >= nb - 1)
 * where rT is the bias table *reversed* along its last axis: rT[nb - 1 - r] is the bias
 * of offset r = m - n, so the keys of one query read it forwards, in vector loads.
 */

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define VL (VBYTES / (int)sizeof(T_))
#define VEC CAT(vec, SUF)
#define IVEC CAT(ivec, SUF)

typedef T_ VEC __attribute__((vector_size(VBYTES), aligned(sizeof(T_)), may_alias));

static inline VEC CAT(load, SUF)(const T_ *p) { return *(const VEC *)p; }
static inline void CAT(store, SUF)(T_ *p, VEC x) { *(VEC *)p = x; }

#if IS_FLOAT
typedef int32_t IVEC __attribute__((vector_size(VBYTES), aligned(4), may_alias));
/* exp(x) for a vector: Cephes' expf polynomial on x - k ln 2, times 2^k; about 1 ulp.
 * x below -87.3 gives 0 (the weight of a key that far below the row's maximum). */
static inline VEC CAT(vexp, SUF)(VEC x) {
    const VEC lo = (VEC){0} - 87.0f;
    const IVEC keep = x >= lo; /* -1 where x >= lo: elsewhere the result is 0 */
    x = (VEC)(((IVEC)x & keep) | ((IVEC)lo & ~keep));
    VEC t = x * 1.44269504088896341f + 12582912.0f; /* round(x / ln 2) + 1.5 * 2^23 */
    VEC k = t - 12582912.0f;
    VEC r = x - k * 0.693359375f + k * 2.12194440e-4f;
    VEC p = (VEC){0} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const IVEC bits = (((IVEC)t - 0x4B400000) + 127) << 23; /* 2^k */
    return (VEC)((IVEC)(p * (VEC)bits) & keep);
}
#else /* double: the tests' precision, not speed */
static inline VEC CAT(vexp, SUF)(VEC x) {
    VEC y;
    for (int j = 0; j < VL; j++) y[j] = exp(x[j]);
    return y;
}
#endif

static inline T_ CAT(hsum, SUF)(VEC x) {
    T_ s = 0;
    for (int j = 0; j < VL; j++) s += x[j];
    return s;
}

/* C[r][0:ncols] = sum_c A[r][c] * BT[c][0:ncols], r < rows (a multiple of RA; A holds
 * zeros past the real rows), ncols a multiple of NVA * VL (BT zero-padded). */
/* Register tiles: 32 vector registers with AVX-512, 16 with AVX2 and SSE2. */
#define RA (VBYTES == 64 ? 4 : 6)  /* rows per tile */
#define NVA (VBYTES == 64 ? 4 : 2)     /* vectors of columns per tile */
static void CAT(gemm_a, SUF)(const T_ *A, int64_t lda, int64_t rows, int64_t inner,
                             const T_ *BT, int64_t ldb, T_ *C, int64_t ldc, int64_t ncols) {
    for (int64_t r0 = 0; r0 < rows; r0 += RA) {
        for (int64_t c2 = 0; c2 < ncols; c2 += NVA * VL) {
            VEC acc[RA][NVA];
            for (int i = 0; i < RA; i++)
                for (int j = 0; j < NVA; j++) acc[i][j] = (VEC){0};
            for (int64_t c = 0; c < inner; c++) {
                const T_ *bp = BT + c * ldb + c2;
                VEC bv[NVA];
                for (int j = 0; j < NVA; j++) bv[j] = CAT(load, SUF)(bp + j * VL);
                for (int i = 0; i < RA; i++) {
                    const T_ a = A[(r0 + i) * lda + c];
                    for (int j = 0; j < NVA; j++) acc[i][j] += a * bv[j];
                }
            }
            for (int i = 0; i < RA; i++)
                for (int j = 0; j < NVA; j++)
                    CAT(store, SUF)(C + (r0 + i) * ldc + c2 + j * VL, acc[i][j]);
        }
    }
}

/* C[r][c0 : c0 + NV*VL] += sum_n A(r, n) * B[n][c0 : ...], A(r, n) = A[r * ars + n * acs],
 * for r < rows (a multiple of RB) and n < inner: one column chunk of NV vectors. */
#define RB (VBYTES == 64 ? 4 : 6)
#define NVMAX (VBYTES == 64 ? 4 : 2) /* widest column chunk */
#define GEMM_B(NV)                                                                            \
    static inline void CAT(gemm_b##NV, SUF)(const T_ *A, int64_t ars, int64_t acs,              \
                                            int64_t rows, int64_t inner, const T_ *B,           \
                                            int64_t ldb, T_ *C, int64_t ldc) {                  \
        for (int64_t r0 = 0; r0 < rows; r0 += RB) {                                           \
            VEC acc[RB][NV];                                                                  \
            for (int i = 0; i < RB; i++)                                                      \
                for (int j = 0; j < NV; j++)                                                  \
                    acc[i][j] = CAT(load, SUF)(C + (r0 + i) * ldc + j * VL);                  \
            for (int64_t n = 0; n < inner; n++) {                                             \
                VEC bv[NV];                                                                   \
                for (int j = 0; j < NV; j++) bv[j] = CAT(load, SUF)(B + n * ldb + j * VL);    \
                for (int i = 0; i < RB; i++) {                                                \
                    const T_ a = A[(r0 + i) * ars + n * acs];                                 \
                    for (int j = 0; j < NV; j++) acc[i][j] += a * bv[j];                      \
                }                                                                             \
            }                                                                                 \
            for (int i = 0; i < RB; i++)                                                      \
                for (int j = 0; j < NV; j++)                                                  \
                    CAT(store, SUF)(C + (r0 + i) * ldc + j * VL, acc[i][j]);                  \
        }                                                                                     \
    }
GEMM_B(1)
GEMM_B(2)
GEMM_B(4)
#undef GEMM_B

/* All columns: width (a multiple of VL) in chunks of 4, 2 and 1 vectors. */
static void CAT(gemm_b, SUF)(const T_ *A, int64_t ars, int64_t acs, int64_t rows, int64_t inner,
                             const T_ *B, int64_t ldb, T_ *C, int64_t ldc, int64_t width) {
    int64_t c = 0;
    for (; NVMAX == 4 && c + 4 * VL <= width; c += 4 * VL)
        CAT(gemm_b4, SUF)(A, ars, acs, rows, inner, B + c, ldb, C + c, ldc);
    for (; c + 2 * VL <= width; c += 2 * VL)
        CAT(gemm_b2, SUF)(A, ars, acs, rows, inner, B + c, ldb, C + c, ldc);
    for (; c < width; c += VL) CAT(gemm_b1, SUF)(A, ars, acs, rows, inner, B + c, ldb, C + c, ldc);
}

/* Add the bias of row m to its scores s[0 : valid] (keys n0 .. n0 + valid - 1) after
 * scaling them: s = scale * s + bias. */
static inline void CAT(add_bias, SUF)(T_ *s, int64_t valid, int64_t n0, int64_t m, T_ scale,
                                      const T_ *rt, int64_t nb) {
    const int64_t p = m - nb + 1; /* first key with its own entry */
    int64_t split = p - n0;       /* keys before it share rt[0] */
    if (split < 0) split = 0;
    if (split > valid) split = valid;
    int64_t n = 0;
    if (rt == NULL) {
        for (; n + VL <= valid; n += VL)
            CAT(store, SUF)(s + n, CAT(load, SUF)(s + n) * scale);
        for (; n < valid; n++) s[n] *= scale;
        return;
    }
    const T_ c0 = rt[0];
    for (; n + VL <= split; n += VL) CAT(store, SUF)(s + n, CAT(load, SUF)(s + n) * scale + c0);
    for (; n < split; n++) s[n] = s[n] * scale + c0;
    const T_ *row = rt + (n0 - p); /* rt[n0 + n - p] for key n0 + n */
    for (; n + VL <= valid; n += VL)
        CAT(store, SUF)(s + n, CAT(load, SUF)(s + n) * scale + CAT(load, SUF)(row + n));
    for (; n < valid; n++) s[n] = s[n] * scale + row[n];
}

/* bins[...] += w[0 : valid] in the reversed table layout (see add_bias). */
static inline void CAT(add_bins, SUF)(T_ *bins, const T_ *w, int64_t valid, int64_t n0,
                                      int64_t m, int64_t nb) {
    const int64_t p = m - nb + 1;
    int64_t split = p - n0;
    if (split < 0) split = 0;
    if (split > valid) split = valid;
    T_ far = 0;
    for (int64_t n = 0; n < split; n++) far += w[n];
    bins[0] += far;
    T_ *row = bins + (n0 - p);
    int64_t n = split;
    for (; n + VL <= valid; n += VL)
        CAT(store, SUF)(row + n, CAT(load, SUF)(row + n) + CAT(load, SUF)(w + n));
    for (; n < valid; n++) row[n] += w[n];
}

/* Round x up to a multiple of y. */
static inline int64_t CAT(up, SUF)(int64_t x, int64_t y) { return (x + y - 1) / y * y; }

#define MQ 48  /* queries per block: a multiple of RA and RB */
#define NK (VBYTES == 64 ? 128 : 144) /* keys per block: a multiple of NVA * VL and RB */

/* Scratch memory of one task, in elements: the packed keys and values of the keys it
 * needs (kmax), one block of queries, scores and outputs. Nothing grows as L x L. */
static int64_t CAT(forward_scratch, SUF)(const AttnArgs *a, int64_t kmax) {
    const int64_t lkp = CAT(up, SUF)(kmax, NK), dvp = CAT(up, SUF)(a->dv, VL);
    return a->d * lkp + lkp * dvp + MQ * a->d + MQ * NK + MQ * dvp;
}

/* Backward: keys and values packed twice (rows and columns), queries and output
 * gradients packed, dQ for the whole head, blocks of P, dP, dS, dK and dV. */
static int64_t CAT(backward_scratch, SUF)(const AttnArgs *a) {
    const int64_t d = a->d, dv = a->dv;
    const int64_t dp = CAT(up, SUF)(d, VL), dvp = CAT(up, SUF)(dv, VL);
    const int64_t kmax = a->start + a->Lq < a->Lk ? a->start + a->Lq : a->Lk;
    const int64_t lkp = CAT(up, SUF)(kmax, NK), lqp = CAT(up, SUF)(a->Lq, MQ);
    return d * lkp + dv * lkp + lkp * dp + lqp * dp + lqp * dvp + lqp * dp + 3 * MQ * NK +
           NK * dp + NK * dvp + lqp * d + lqp * dv;
}

/* Forward pass of one (batch, head) and one share of its query blocks (blocks
 * chunk, chunk + nchunks, ...). Writes out, lse and (if wsum) the bin sums. */
static void CAT(forward_task, SUF)(const AttnArgs *a, int64_t b, int64_t h, int64_t chunk,
                                   int64_t nchunks) {
    const int64_t d = a->d, dv = a->dv, Lq = a->Lq, Lk = a->Lk, nb = a->nb;
    const int64_t dvp = CAT(up, SUF)(dv, VL);
    const T_ *q = (const T_ *)a->q + b * a->qs[0] + h * a->qs[1];
    const T_ *k = (const T_ *)a->k + b * a->ks[0] + h * a->ks[1];
    const T_ *v = (const T_ *)a->v + b * a->vs[0] + h * a->vs[1];
    const T_ *table = a->table ? (const T_ *)a->table + b * a->ts[0] + h * a->ts[1] : NULL;
    const T_ scale = (T_)a->scale;
    const int64_t nqb = (Lq + MQ - 1) / MQ;
    /* keys this share needs: up to the last query's position */
    int64_t last = -1;
    for (int64_t qb = chunk; qb < nqb; qb += nchunks) last = qb;
    if (last < 0) return;
    int64_t kmax = a->start + (last * MQ + MQ < Lq ? last * MQ + MQ : Lq);
    if (kmax > Lk) kmax = Lk;
    const int64_t lkp = CAT(up, SUF)(kmax, NK);
    T_ *kt = calloc((size_t)CAT(forward_scratch, SUF)(a, kmax), sizeof(T_));
    if (!kt) return; /* the caller checks the sentinel in lse */
    T_ *vp = kt + d * lkp, *qb_buf = vp + lkp * dvp, *s = qb_buf + MQ * d, *o = s + MQ * NK;
    T_ mx[MQ], sm[MQ];
    for (int64_t n = 0; n < kmax; n++) { /* K transposed, V with padded rows */
        const T_ *kr = k + n * a->ks[2], *vr = v + n * a->vs[2];
        for (int64_t c = 0; c < d; c++) kt[c * lkp + n] = kr[c];
        memcpy(vp + n * dvp, vr, (size_t)dv * sizeof(T_));
    }
    for (int64_t qb = chunk; qb < nqb; qb += nchunks) {
        const int64_t i0 = qb * MQ, rows = i0 + MQ <= Lq ? MQ : Lq - i0;
        memset(qb_buf, 0, sizeof(T_) * MQ * d);
        memset(o, 0, sizeof(T_) * MQ * dvp);
        for (int64_t r = 0; r < rows; r++) {
            memcpy(qb_buf + r * d, q + (i0 + r) * a->qs[2], (size_t)d * sizeof(T_));
            mx[r] = -INFINITY;
            sm[r] = 0;
        }
        T_ *wrow0 = a->wsum ? (T_ *)a->wsum + ((b * a->H + h) * Lq + i0) * nb : NULL;
        if (wrow0) memset(wrow0, 0, sizeof(T_) * rows * nb);
        const int64_t rows4 = CAT(up, SUF)(rows, RA);
        int64_t nend = a->start + i0 + rows;
        if (nend > Lk) nend = Lk;
        for (int64_t n0 = 0; n0 < nend; n0 += NK) {
            const int64_t nk = n0 + NK <= nend ? NK : nend - n0;
            const int64_t ncols = CAT(up, SUF)(nk, NVA * VL);
            CAT(gemm_a, SUF)(qb_buf, d, rows4, d, kt + n0, lkp, s, NK, ncols);
            for (int64_t r = 0; r < rows; r++) {
                const int64_t m = a->start + i0 + r;
                T_ *sr = s + r * NK;
                int64_t valid = m - n0 + 1;
                if (valid > nk) valid = nk;
                if (valid <= 0) {
                    memset(sr, 0, sizeof(T_) * NK);
                    continue;
                }
                const T_ *rt = table ? table + (a->ts[2] ? (i0 + r) * a->ts[2] : 0) : NULL;
                CAT(add_bias, SUF)(sr, valid, n0, m, scale, rt, nb);
                T_ bmax = -INFINITY;
                for (int64_t n = 0; n < valid; n++) bmax = sr[n] > bmax ? sr[n] : bmax;
                const T_ newmax = bmax > mx[r] ? bmax : mx[r];
                const T_ alpha = mx[r] == -INFINITY ? 0 : (T_)exp(mx[r] - newmax);
                VEC total = (VEC){0};
                int64_t n = 0;
                for (; n + VL <= valid; n += VL) {
                    VEC e = CAT(vexp, SUF)(CAT(load, SUF)(sr + n) - newmax);
                    CAT(store, SUF)(sr + n, e);
                    total += e;
                }
                T_ tail = 0;
                for (; n < valid; n++) {
                    sr[n] = (T_)exp(sr[n] - newmax);
                    tail += sr[n];
                }
                for (; n < NK; n++) sr[n] = 0;
                sm[r] = sm[r] * alpha + CAT(hsum, SUF)(total) + tail;
                if (alpha != 1) {
                    T_ *orow = o + r * dvp;
                    for (int64_t c = 0; c < dvp; c += VL)
                        CAT(store, SUF)(orow + c, CAT(load, SUF)(orow + c) * alpha);
                    if (wrow0)
                        for (int64_t c = 0; c < nb; c++) wrow0[r * nb + c] *= alpha;
                }
                mx[r] = newmax;
                if (wrow0) CAT(add_bins, SUF)(wrow0 + r * nb, sr, valid, n0, m, nb);
            }
            for (int64_t r = rows; r < rows4; r++) memset(s + r * NK, 0, sizeof(T_) * NK);
            CAT(gemm_b, SUF)(s, NK, 1, rows4, nk, vp + n0 * dvp, dvp, o, dvp, dvp);
        }
        for (int64_t r = 0; r < rows; r++) {
            T_ *out = (T_ *)a->out + ((b * a->H + h) * Lq + i0 + r) * dv;
            const T_ inv = 1 / sm[r];
            for (int64_t c = 0; c < dv; c++) out[c] = o[r * dvp + c] * inv;
            ((T_ *)a->lse)[(b * a->H + h) * Lq + i0 + r] = mx[r] + (T_)log(sm[r]);
            if (wrow0)
                for (int64_t c = 0; c < nb; c++) wrow0[r * nb + c] *= inv;
        }
    }
    free(kt);
}

static void CAT(forward, SUF)(const AttnArgs *a) {
    const int64_t pairs = a->B * a->H, nqb = (a->Lq + MQ - 1) / MQ;
    int64_t nchunks = pairs >= 2 * a->threads ? 1 : (2 * a->threads + pairs - 1) / pairs;
    if (nchunks > nqb) nchunks = nqb;
    const int64_t tasks = pairs * nchunks;
    const int many = a->threads > 1 && tasks > 1 && a->Lq * a->Lk * a->d >= 16384;
    _Pragma("omp parallel for schedule(dynamic, 1) num_threads(a->threads) if(many)")
    for (int64_t t = 0; t < tasks; t++)
        CAT(forward_task, SUF)(a, t / nchunks / a->H, t / nchunks % a->H, t % nchunks, nchunks);
}

/* Backward pass of one (batch, head): dq, dk, dv and the bias table's gradient. */
static void CAT(backward_task, SUF)(const AttnArgs *a, int64_t b, int64_t h) {
    const int64_t d = a->d, dv = a->dv, Lq = a->Lq, Lk = a->Lk, nb = a->nb;
    const int64_t dp = CAT(up, SUF)(d, VL), dvp = CAT(up, SUF)(dv, VL);
    const int64_t bh = b * a->H + h;
    const T_ *q = (const T_ *)a->q + b * a->qs[0] + h * a->qs[1];
    const T_ *k = (const T_ *)a->k + b * a->ks[0] + h * a->ks[1];
    const T_ *v = (const T_ *)a->v + b * a->vs[0] + h * a->vs[1];
    const T_ *go = (const T_ *)a->grad_out + bh * Lq * dv;
    const T_ *lse = (const T_ *)a->lse + bh * Lq, *dsum = (const T_ *)a->dsum + bh * Lq;
    const T_ *table = a->table ? (const T_ *)a->table + b * a->ts[0] + h * a->ts[1] : NULL;
    const T_ *gtab = a->gtable ? (const T_ *)a->gtable + bh * Lq * nb : NULL;
    T_ *dtab = a->dtable ? (T_ *)a->dtable + bh * (a->ts[2] ? Lq : 1) * nb : NULL;
    const T_ scale = (T_)a->scale;
    const int64_t kmax = a->start + Lq < Lk ? a->start + Lq : Lk;
    const int64_t lkp = CAT(up, SUF)(kmax, NK), lqp = CAT(up, SUF)(Lq, MQ);
    T_ *kt = calloc((size_t)CAT(backward_scratch, SUF)(a), sizeof(T_));
    if (!kt) return;
    T_ *vt = kt + d * lkp, *kp = vt + dv * lkp, *qp = kp + lkp * dp, *gop = qp + lqp * dp;
    T_ *dq = gop + lqp * dvp, *p = dq + lqp * dp, *dpm = p + MQ * NK, *ds = dpm + MQ * NK;
    T_ *dk = ds + MQ * NK, *dvb = dk + NK * dp, *qr = dvb + NK * dvp, *gor = qr + lqp * d;
    for (int64_t n = 0; n < kmax; n++) {
        const T_ *kr = k + n * a->ks[2], *vr = v + n * a->vs[2];
        for (int64_t c = 0; c < d; c++) kt[c * lkp + n] = kr[c];
        for (int64_t c = 0; c < dv; c++) vt[c * lkp + n] = vr[c];
        memcpy(kp + n * dp, kr, (size_t)d * sizeof(T_));
    }
    for (int64_t i = 0; i < Lq; i++) {
        memcpy(qp + i * dp, q + i * a->qs[2], (size_t)d * sizeof(T_));
        memcpy(qr + i * d, q + i * a->qs[2], (size_t)d * sizeof(T_));
        memcpy(gop + i * dvp, go + i * dv, (size_t)dv * sizeof(T_));
        memcpy(gor + i * dv, go + i * dv, (size_t)dv * sizeof(T_));
    }
    for (int64_t n0 = 0; n0 < kmax; n0 += NK) {
        const int64_t nk = n0 + NK <= kmax ? NK : kmax - n0;
        const int64_t ncols = CAT(up, SUF)(nk, NVA * VL), nk4 = CAT(up, SUF)(nk, RB);
        memset(dk, 0, sizeof(T_) * NK * dp);
        memset(dvb, 0, sizeof(T_) * NK * dvp);
        int64_t ifirst = n0 - a->start; /* first query that sees key n0 */
        if (ifirst < 0) ifirst = 0;
        for (int64_t i0 = ifirst / MQ * MQ; i0 < Lq; i0 += MQ) {
            const int64_t rows = i0 + MQ <= Lq ? MQ : Lq - i0;
            const int64_t rows4 = CAT(up, SUF)(rows, RA);
            CAT(gemm_a, SUF)(qr + i0 * d, d, rows4, d, kt + n0, lkp, p, NK, ncols);
            CAT(gemm_a, SUF)(gor + i0 * dv, dv, rows4, dv, vt + n0, lkp, dpm, NK, ncols);
            for (int64_t r = 0; r < rows4; r++) {
                T_ *pr = p + r * NK, *dpr = dpm + r * NK, *dsr = ds + r * NK;
                const int64_t m = a->start + i0 + r;
                int64_t valid = m - n0 + 1;
                if (valid > nk) valid = nk;
                if (r >= rows || valid <= 0) {
                    memset(pr, 0, sizeof(T_) * NK);
                    memset(dsr, 0, sizeof(T_) * NK);
                    continue;
                }
                const T_ *rt = table ? table + (a->ts[2] ? (i0 + r) * a->ts[2] : 0) : NULL;
                CAT(add_bias, SUF)(pr, valid, n0, m, scale, rt, nb);
                if (gtab) { /* dP += the gradient of the bin sums, binned like the bias */
                    const T_ *gr = gtab + (i0 + r) * nb;
                    for (int64_t n = 0; n < valid; n++) {
                        const int64_t idx = n0 + n - (m - nb + 1);
                        dpr[n] += gr[idx > 0 ? idx : 0];
                    }
                }
                const T_ l = lse[i0 + r], dd = dsum[i0 + r];
                int64_t n = 0;
                for (; n + VL <= valid; n += VL) {
                    VEC e = CAT(vexp, SUF)(CAT(load, SUF)(pr + n) - l);
                    CAT(store, SUF)(pr + n, e);
                    CAT(store, SUF)(dsr + n, e * (CAT(load, SUF)(dpr + n) - dd));
                }
                for (; n < valid; n++) {
                    pr[n] = (T_)exp(pr[n] - l);
                    dsr[n] = pr[n] * (dpr[n] - dd);
                }
                for (; n < NK; n++) pr[n] = dsr[n] = 0;
                if (dtab) CAT(add_bins, SUF)(dtab + (a->ts[2] ? (i0 + r) * nb : 0), dsr, valid, n0, m, nb);
            }
            /* dV += P^T dO, dK += dS^T Q, dQ += dS K (scale applied at the end) */
            CAT(gemm_b, SUF)(p, 1, NK, nk4, rows, gop + i0 * dvp, dvp, dvb, dvp, dvp);
            CAT(gemm_b, SUF)(ds, 1, NK, nk4, rows, qp + i0 * dp, dp, dk, dp, dp);
            CAT(gemm_b, SUF)(ds, NK, 1, rows4, nk, kp + n0 * dp, dp, dq + i0 * dp, dp, dp);
        }
        for (int64_t n = 0; n < nk; n++) {
            T_ *dko = (T_ *)a->dk + (bh * Lk + n0 + n) * d;
            T_ *dvo = (T_ *)a->dv_out + (bh * Lk + n0 + n) * dv;
            for (int64_t c = 0; c < d; c++) dko[c] = dk[n * dp + c] * scale;
            memcpy(dvo, dvb + n * dvp, (size_t)dv * sizeof(T_));
        }
    }
    for (int64_t i = 0; i < Lq; i++) {
        T_ *dqo = (T_ *)a->dq + (bh * Lq + i) * d;
        for (int64_t c = 0; c < d; c++) dqo[c] = dq[i * dp + c] * scale;
    }
    free(kt);
}

static void CAT(backward, SUF)(const AttnArgs *a) {
    const int64_t tasks = a->B * a->H;
    const int many = a->threads > 1 && tasks > 1 && a->Lq * a->Lk * a->d >= 16384;
    _Pragma("omp parallel for schedule(dynamic, 1) num_threads(a->threads) if(many)")
    for (int64_t t = 0; t < tasks; t++) CAT(backward_task, SUF)(a, t / a->H, t % a->H);
}

#undef VL
#undef VEC
#undef IVEC
#undef RA
#undef NVA
#undef RB
#undef NVMAX
#undef MQ
#undef NK
#undef CAT
#undef CAT2
