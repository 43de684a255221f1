/* Matrix-vector products that read a weight matrix in address order.

   At batch 1 a decoder multiplies a few activation vectors x [m, n_in] by each weight
   matrix, kept here as rows w [n_out, n_in] (one row per output). Every weight is used
   once per token, so the speed is set by how fast the weights stream in from memory.
   Each function walks the rows in the order they lie in memory, reads a row once, and
   takes its dot product with every x while the row is still in the fastest cache:

       y[b][r] = scale[r] * sum_i x[b][i] * w[r][i]      (scale may be NULL: 1)

   The three functions differ only in how a weight is stored and widened to float32:
   float32 as is; bfloat16 (the upper 16 bits of a float32, shifted back into place);
   int8 (converted to float32, times the row's scale at the end). Products and sums are
   float32 (AVX-512: 16 numbers per instruction, four running sums per row).

   rows_int8_groups is int8 with one scale per `group` inputs of a row (a power of two, at
   least 16; the last group of a row may be shorter), scale[r][g] for group g:

       y[b][r] = sum_i x[b][i] * (w[r][i] * scale[r][i / group])                           */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define ALL ((__mmask16)0xFFFF)

/* 16 weights from p, widened to float32: all 16 (m == ALL) or those that m marks. */
static inline __m512 widen_float32(const float *p, __mmask16 m) {
  return m == ALL ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}
static inline __m512 widen_bfloat16(const uint16_t *p, __mmask16 m) {
  __m256i raw = m == ALL ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
}
static inline __m512 widen_int8(const int8_t *p, __mmask16 m) {
  __m128i raw = m == ALL ? _mm_loadu_si128((const __m128i *)p) : _mm_maskz_loadu_epi8(m, p);
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(raw));
}

#define ROW_PRODUCT(NAME, TYPE, WIDEN)                                                    \
  void NAME(const float *x, const TYPE *w, const float *scale, float *y, long m,          \
            long n_in, long n_out) {                                                      \
    for (long r = 0; r < n_out; r++) {                                                    \
      const TYPE *row = w + r * n_in;                                                     \
      for (long b = 0; b < m; b++) {                                                      \
        const float *xb = x + b * n_in;                                                   \
        __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;                       \
        long i = 0;                                                                       \
        for (; i + 64 <= n_in; i += 64) {                                                 \
          s0 = _mm512_fmadd_ps(_mm512_loadu_ps(xb + i), WIDEN(row + i, ALL), s0);         \
          s1 = _mm512_fmadd_ps(_mm512_loadu_ps(xb + i + 16), WIDEN(row + i + 16, ALL), s1); \
          s2 = _mm512_fmadd_ps(_mm512_loadu_ps(xb + i + 32), WIDEN(row + i + 32, ALL), s2); \
          s3 = _mm512_fmadd_ps(_mm512_loadu_ps(xb + i + 48), WIDEN(row + i + 48, ALL), s3); \
        }                                                                                 \
        for (; i < n_in; i += 16) {                                                       \
          long left = n_in - i;                                                           \
          __mmask16 k = left >= 16 ? ALL : (__mmask16)((1u << left) - 1u);                \
          s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, xb + i), WIDEN(row + i, k), s0);  \
        }                                                                                 \
        float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1),              \
                                                       _mm512_add_ps(s2, s3)));            \
        y[b * n_out + r] = scale ? sum * scale[r] : sum;                                  \
      }                                                                                   \
    }                                                                                     \
  }

ROW_PRODUCT(rows_float32, float, widen_float32)
ROW_PRODUCT(rows_bfloat16, uint16_t, widen_bfloat16)
ROW_PRODUCT(rows_int8, int8_t, widen_int8)

void rows_int8_groups(const float *x, const int8_t *w, const float *scale, float *y, long m,
                      long n_in, long n_out, long group) {
  /* group is a power of two >= 16: the scale of input i is row_scale[i >> shift]; each 16
     weights are widened, times their scale, and summed into one of four running sums */
  long shift = __builtin_ctzl((unsigned long)group), n_groups = (n_in + group - 1) >> shift;
  for (long r = 0; r < n_out; r++) {
    const int8_t *row = w + r * n_in;
    const float *rs = scale + r * n_groups;
    for (long b = 0; b < m; b++) {
      const float *xb = x + b * n_in;
      __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
      long i = 0;
      for (; i + 64 <= n_in; i += 64) {
        __m512 w0 = _mm512_mul_ps(widen_int8(row + i, ALL), _mm512_set1_ps(rs[i >> shift]));
        __m512 w1 = _mm512_mul_ps(widen_int8(row + i + 16, ALL),
                                  _mm512_set1_ps(rs[(i + 16) >> shift]));
        __m512 w2 = _mm512_mul_ps(widen_int8(row + i + 32, ALL),
                                  _mm512_set1_ps(rs[(i + 32) >> shift]));
        __m512 w3 = _mm512_mul_ps(widen_int8(row + i + 48, ALL),
                                  _mm512_set1_ps(rs[(i + 48) >> shift]));
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(xb + i), w0, s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(xb + i + 16), w1, s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(xb + i + 32), w2, s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(xb + i + 48), w3, s3);
      }
      for (; i < n_in; i += 16) {
        long left = n_in - i;
        __mmask16 k = left >= 16 ? ALL : (__mmask16)((1u << left) - 1u);
        __m512 wv = _mm512_mul_ps(widen_int8(row + i, k), _mm512_set1_ps(rs[i >> shift]));
        s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, xb + i), wv, s0);
      }
      y[b * n_out + r] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1),
                                                            _mm512_add_ps(s2, s3)));
    }
  }
}

/* A streaming read: the sum of x[0..n), four running sums of 16 numbers (AVX-512), so
   that the loads, not the adds, set the pace; the analysis measures the memory's
   bandwidth with it (analysis.roofline.read_bandwidth). */
float stream_sum(const float *x, long n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  long i = 0;
  for (; i + 64 <= n; i += 64) {
    s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + i));
    s1 = _mm512_add_ps(s1, _mm512_loadu_ps(x + i + 16));
    s2 = _mm512_add_ps(s2, _mm512_loadu_ps(x + i + 32));
    s3 = _mm512_add_ps(s3, _mm512_loadu_ps(x + i + 48));
  }
  float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
  for (; i < n; i++) sum += x[i];
  return sum;
}
