/* One decoding step of a Llama-style decoder at batch 1: every layer in one call.

   Decoding one token reads every weight once and does little else; in PyTorch the little
   else is 20-odd small operations per layer (norms, rotary embeddings, cache appends,
   attention, the residual sums, SiLU), each with its own fixed cost, which at batch 1
   add up to half the time the weights take to stream in. Here the whole step is one C
   function that writes into buffers it is given:

     for every layer:  h = rms_norm(x) * gain1
                       q, k, v = h W_Q, h W_K, h W_V    (rows kernels of row_kernels.c)
                       rotate q and k (RoPE), append k and v to the cache at `length`
                       z = softmax(q k^T / sqrt(d_head)) v   over the cached positions,
                           query head h reading key/value head h / (n_heads / n_kv_heads)
                       x = x + z W_O
                       h = rms_norm(x) * gain2
                       x = x + (silu(h W_gate) * (h W_up)) W_down
     logits = (rms_norm(x) * gain_final) W_head

   The matrices are the stored rows of stored_weights.py (float32, bfloat16 or int8 with
   per-row or per-group scales), multiplied by the same row kernels the unfused path uses; everything
   else is float32, in the order the PyTorch code computes it (sums may be ordered
   differently, so results agree to float rounding). The key/value cache is one buffer
   [n_layers, 2, n_kv_heads, capacity, d_head] (keys at 0, values at 1), kv_cache.py's. */
#include <math.h>

#include "row_kernels.c"

typedef struct {
  long n_layers, d_model, n_heads, n_kv_heads, d_head, d_mlp, d_vocab;
  long kind;                  /* 0: float32 rows, 1: bfloat16, 2: int8 */
  long group;                 /* int8: inputs per scale (0: one scale per row) */
  double eps;                 /* RMSNorm's epsilon (used as a float32, as PyTorch does) */
  const void *const *rows;    /* per layer W_Q, W_K, W_V, W_O, W_gate, W_up, W_down; the head */
  const float *const *scales; /* the same order: int8's per-row scales, or NULL */
  const float *const *gains;  /* per layer norm1, norm2; then the final norm */
} DecoderWeights;

enum { N_MATRICES = 7 };

static void product(const DecoderWeights *m, long index, const float *x, float *y, long n_in,
                    long n_out) {
  const void *w = m->rows[index];
  const float *scale = m->scales[index];
  if (m->kind == 0)
    rows_float32(x, (const float *)w, scale, y, 1, n_in, n_out);
  else if (m->kind == 1)
    rows_bfloat16(x, (const uint16_t *)w, scale, y, 1, n_in, n_out);
  else if (m->group)
    rows_int8_groups(x, (const int8_t *)w, scale, y, 1, n_in, n_out, m->group);
  else
    rows_int8(x, (const int8_t *)w, scale, y, 1, n_in, n_out);
}

/* mask of the first `left` of 16 lanes (all 16 when left >= 16) */
static inline __mmask16 lanes(long left) {
  return left >= 16 ? ALL : (__mmask16)((1u << left) - 1u);
}

static float dot(const float *a, const float *b, long n) {
  __m512 s = _mm512_setzero_ps();
  for (long i = 0; i < n; i += 16) {
    __mmask16 k = lanes(n - i);
    s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + i), _mm512_maskz_loadu_ps(k, b + i), s);
  }
  return _mm512_reduce_add_ps(s);
}

/* e^x in 16 lanes: 2^n e^r with n = round(x / ln 2) and r = x - n ln 2 (in two parts), e^r
   by Cephes' expf polynomial (within 2 ulp of e^x); NaN stays NaN, large x saturates */
static inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), _mm512_min_ps(_mm512_set1_ps(88.7f), x));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

/* gate = silu(gate) * up = gate / (1 + e^-gate) * up, over n numbers */
static void silu_times(float *gate, const float *up, long n) {
  for (long i = 0; i < n; i += 16) {
    __mmask16 k = lanes(n - i);
    __m512 g = _mm512_maskz_loadu_ps(k, gate + i);
    __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
    __m512 silu = _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
    _mm512_mask_storeu_ps(gate + i, k, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(k, up + i)));
  }
}

/* s[j] = e^(s[j] - top) over n numbers; returns their sum */
static float exp_shifted(float *s, float top, long n) {
  __m512 total = _mm512_setzero_ps(), t = _mm512_set1_ps(top);
  for (long j = 0; j < n; j += 16) {
    __mmask16 k = lanes(n - j);
    __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + j), t));
    _mm512_mask_storeu_ps(s + j, k, e);
    total = _mm512_add_ps(total, _mm512_maskz_mov_ps(k, e));
  }
  return _mm512_reduce_add_ps(total);
}

/* y += a * x over n numbers */
static void add_scaled(float *y, float a, const float *x, long n) {
  __m512 va = _mm512_set1_ps(a);
  for (long i = 0; i < n; i += 16) {
    __mmask16 k = lanes(n - i);
    __m512 r = _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, y + i));
    _mm512_mask_storeu_ps(y + i, k, r);
  }
}

/* out = gain * (x / sqrt(mean(x^2) + eps)) */
static void rms_norm(const float *x, const float *gain, float eps, float *out, long n) {
  float inv = 1.0f / sqrtf(dot(x, x, n) / (float)n + eps);
  for (long i = 0; i < n; i++) out[i] = gain[i] * (x[i] * inv);
}

/* rotate the pairs (v[i], v[i + half]) of each of n_heads heads of d_head numbers */
static void rotate(float *v, const float *cos_, const float *sin_, long n_heads, long d_head) {
  long half = d_head / 2;
  for (long h = 0; h < n_heads; h++) {
    float *a = v + h * d_head, *b = a + half;
    for (long i = 0; i < half; i++) {
      float x1 = a[i], x2 = b[i];
      a[i] = x1 * cos_[i] - x2 * sin_[i];
      b[i] = x1 * sin_[i] + x2 * cos_[i];
    }
  }
}

/* softmax attention of the query heads q over n positions of keys k and values v
   ([n_kv_heads, capacity, d_head] each); z [n_heads * d_head]; s: n floats of scratch */
static void attend(const DecoderWeights *m, const float *q, const float *k, const float *v,
                   long n, long capacity, float *z, float *s) {
  long d = m->d_head, group = m->n_heads / m->n_kv_heads;
  float scale = 1.0f / sqrtf((float)d);
  for (long h = 0; h < m->n_heads; h++) {
    const float *qh = q + h * d;
    const float *kh = k + (h / group) * capacity * d, *vh = v + (h / group) * capacity * d;
    float top = -INFINITY, total;
    for (long j = 0; j < n; j++) {
      s[j] = dot(qh, kh + j * d, d) * scale;
      top = s[j] > top ? s[j] : top;
    }
    total = exp_shifted(s, top, n);
    float *zh = z + h * d;
    for (long i = 0; i < d; i++) zh[i] = 0.0f;
    for (long j = 0; j < n; j++) add_scaled(zh, s[j], vh + j * d, d);
    float inv = 1.0f / total;
    for (long i = 0; i < d; i++) zh[i] *= inv;
  }
}

/* work: at least 3 d_model + 2 n_heads d_head + 2 n_kv_heads d_head + 2 d_mlp + capacity
   floats. embedding: the token's row of W_E [d_model]; cos_, sin_: [d_head / 2] for its
   position; kv: the cache buffer with `length` positions filled (the new one goes at
   `length`, so length < capacity); logits: [d_vocab]. */
void decode_token(const DecoderWeights *m, const float *embedding, const float *cos_,
                  const float *sin_, float *kv, long length, long capacity, float *work,
                  float *logits) {
  long dm = m->d_model, d = m->d_head, n_q = m->n_heads * d, n_kv = m->n_kv_heads * d;
  float eps = (float)m->eps;
  float *x = work, *h = x + dm, *o = h + dm, *q = o + dm, *z = q + n_q, *k = z + n_q;
  float *v = k + n_kv, *gate = v + n_kv, *up = gate + m->d_mlp, *s = up + m->d_mlp;
  for (long i = 0; i < dm; i++) x[i] = embedding[i];
  for (long layer = 0; layer < m->n_layers; layer++) {
    long w = layer * N_MATRICES;
    float *keys = kv + (layer * 2) * m->n_kv_heads * capacity * d;
    float *values = keys + m->n_kv_heads * capacity * d;
    rms_norm(x, m->gains[2 * layer], eps, h, dm);
    product(m, w + 0, h, q, dm, n_q);
    product(m, w + 1, h, k, dm, n_kv);
    product(m, w + 2, h, v, dm, n_kv);
    rotate(q, cos_, sin_, m->n_heads, d);
    rotate(k, cos_, sin_, m->n_kv_heads, d);
    for (long g = 0; g < m->n_kv_heads; g++) {
      for (long i = 0; i < d; i++) {
        keys[(g * capacity + length) * d + i] = k[g * d + i];
        values[(g * capacity + length) * d + i] = v[g * d + i];
      }
    }
    attend(m, q, keys, values, length + 1, capacity, z, s);
    product(m, w + 3, z, o, n_q, dm);
    for (long i = 0; i < dm; i++) x[i] += o[i];
    rms_norm(x, m->gains[2 * layer + 1], eps, h, dm);
    product(m, w + 4, h, gate, dm, m->d_mlp);
    product(m, w + 5, h, up, dm, m->d_mlp);
    silu_times(gate, up, m->d_mlp);
    product(m, w + 6, gate, o, m->d_mlp, dm);
    for (long i = 0; i < dm; i++) x[i] += o[i];
  }
  rms_norm(x, m->gains[2 * m->n_layers], eps, h, dm);
  product(m, m->n_layers * N_MATRICES, h, logits, dm, m->d_vocab);
}
