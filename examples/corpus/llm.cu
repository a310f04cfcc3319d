// Transformer training kernels of the kinds LLM trainers run: GELU, softmax (five ways), layernorm forward and
// backward, attention, cross-entropy, a fused classifier, Adam/AdamW, the global gradient norm, a matmul with
// bias and the token+position encoder. Written for gpuemu's corpus; small sizes, one launch each.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <float.h>
#include <math.h>

#define SQRT_2_OVER_PI 0.7978845608028654f
#define GELU_CUBIC 0.044715f

static __device__ __forceinline__ float warp_sum(float value) {
    for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
    return value;
}

static __device__ __forceinline__ float warp_max(float value) {
    for (int offset = 16; offset > 0; offset >>= 1) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
    return value;
}

// sum over the block through one shared slot per warp; every thread gets the total
static __device__ float block_sum(float value, float* scratch) {
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    value = warp_sum(value);
    __syncthreads();
    if (lane == 0) scratch[warp] = value;
    __syncthreads();
    value = lane < warps ? scratch[lane] : 0.0f;
    return warp_sum(value);
}

__global__ void gelu_forward(float* out, const float* inp, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = inp[i];
        float inner = SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x);
        out[i] = 0.5f * x * (1.0f + tanhf(inner));
    }
}

__global__ void gelu_backward(float* dinp, const float* inp, const float* dout, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = inp[i];
        float inner = SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x);
        float t = tanhf(inner);
        float c = coshf(inner);
        float sech2 = 1.0f / (c * c);
        float grad = 0.5f * (1.0f + t) + 0.5f * x * sech2 * SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_CUBIC * x * x);
        dinp[i] = grad * dout[i];
    }
}

// one thread per row
__global__ void softmax_naive(float* out, const float* inp, int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* x = inp + row * cols;
    float top = -INFINITY;
    for (int j = 0; j < cols; ++j) top = fmaxf(top, x[j]);
    float total = 0.0f;
    for (int j = 0; j < cols; ++j) {
        float e = expf(x[j] - top);
        out[row * cols + j] = e;
        total += e;
    }
    float inverse = 1.0f / total;
    for (int j = 0; j < cols; ++j) out[row * cols + j] *= inverse;
}

// one block per row, tree reductions in shared memory
__global__ void softmax_shared(float* out, const float* inp, int cols) {
    extern __shared__ float partial[];
    const float* x = inp + blockIdx.x * cols;
    float* y = out + blockIdx.x * cols;
    float top = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) top = fmaxf(top, x[j]);
    partial[threadIdx.x] = top;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + stride]);
        __syncthreads();
    }
    top = partial[0];
    __syncthreads();
    float total = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float e = expf(x[j] - top);
        y[j] = e;
        total += e;
    }
    partial[threadIdx.x] = total;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    total = partial[0];
    for (int j = threadIdx.x; j < cols; j += blockDim.x) y[j] = y[j] / total;
}

// one warp per row, butterfly shuffles
__global__ void softmax_warp(float* out, const float* inp, int rows, int cols) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* x = inp + row * cols;
    float top = -INFINITY;
    for (int j = lane; j < cols; j += 32) top = fmaxf(top, x[j]);
    top = warp_max(top);
    float total = 0.0f;
    for (int j = lane; j < cols; j += 32) total += expf(x[j] - top);
    total = warp_sum(total);
    for (int j = lane; j < cols; j += 32) out[row * cols + j] = expf(x[j] - top) / total;
}

// one thread per row, a single pass for max and sum (online softmax)
__global__ void softmax_online(float* out, const float* inp, int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* x = inp + row * cols;
    float top = -INFINITY, total = 0.0f;
    for (int j = 0; j < cols; ++j) {
        float next = fmaxf(top, x[j]);
        total = total * expf(top - next) + expf(x[j] - next);
        top = next;
    }
    for (int j = 0; j < cols; ++j) out[row * cols + j] = expf(x[j] - top) / total;
}

// one warp per row: each lane keeps an online (max, sum), the lanes merge them with shuffles
__global__ void softmax_online_warp(float* out, const float* inp, int rows, int cols) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* x = inp + row * cols;
    float top = -INFINITY, total = 0.0f;
    for (int j = lane; j < cols; j += 32) {
        float next = fmaxf(top, x[j]);
        total = total * __expf(top - next) + __expf(x[j] - next);
        top = next;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        float other_top = __shfl_down_sync(0xffffffffu, top, offset);
        float other_total = __shfl_down_sync(0xffffffffu, total, offset);
        float next = fmaxf(top, other_top);
        total = total * __expf(top - next) + other_total * __expf(other_top - next);
        top = next;
    }
    top = __shfl_sync(0xffffffffu, top, 0);
    total = __shfl_sync(0xffffffffu, total, 0);
    float inverse = 1.0f / total;
    for (int j = lane; j < cols; j += 32) out[row * cols + j] = __expf(x[j] - top) * inverse;
}

// causal, scaled softmax of attention scores, one warp per row, float4 loads
__global__ void softmax_causal_vec4(float* out, const float* scores, int rows, int cols, float scale) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    int own = row % cols;
    const float4* x = reinterpret_cast<const float4*>(scores + row * cols);
    float top = -INFINITY;
    for (int j = lane; j * 4 <= own; j += 32) {
        float4 v = x[j];
        float vals[4] = {v.x, v.y, v.z, v.w};
        for (int k = 0; k < 4; ++k)
            if (j * 4 + k <= own) top = fmaxf(top, vals[k] * scale);
    }
    top = warp_max(top);
    float total = 0.0f;
    for (int j = lane; j * 4 <= own; j += 32) {
        float4 v = x[j];
        float vals[4] = {v.x, v.y, v.z, v.w};
        for (int k = 0; k < 4; ++k)
            if (j * 4 + k <= own) total += expf(vals[k] * scale - top);
    }
    total = warp_sum(total);
    for (int j = lane; j < cols; j += 32)
        out[row * cols + j] = j <= own ? expf(scores[row * cols + j] * scale - top) / total : 0.0f;
}

// one warp per row; saves mean and rstd for the backward pass
__global__ void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                  const float* bias, int rows, int cols) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* x = inp + row * cols;
    float sum = 0.0f;
    for (int j = lane; j < cols; j += 32) sum += x[j];
    float m = warp_sum(sum) / cols;
    float squares = 0.0f;
    for (int j = lane; j < cols; j += 32) {
        float d = x[j] - m;
        squares += d * d;
    }
    float s = rsqrtf(warp_sum(squares) / cols + 1e-5f);
    for (int j = lane; j < cols; j += 32) out[row * cols + j] = s * (x[j] - m) * weight[j] + bias[j];
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = s;
    }
}

// one thread per row, Welford's running mean and variance
__global__ void layernorm_welford(float* out, const float* inp, const float* weight, const float* bias, int rows,
                                  int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* x = inp + row * cols;
    float m = 0.0f, m2 = 0.0f;
    for (int j = 0; j < cols; ++j) {
        float delta = x[j] - m;
        m += delta / (j + 1);
        m2 += delta * (x[j] - m);
    }
    float s = 1.0f / sqrtf(m2 / cols + 1e-5f);
    for (int j = 0; j < cols; ++j) out[row * cols + j] = (x[j] - m) * s * weight[j] + bias[j];
}

// one warp per row: the gradient of the input
__global__ void layernorm_backward(float* dinp, const float* dout, const float* inp, const float* weight,
                                   const float* mean, const float* rstd, int rows, int cols) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* x = inp + row * cols;
    const float* dy = dout + row * cols;
    float m = mean[row], s = rstd[row];
    float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
    for (int j = lane; j < cols; j += 32) {
        float norm = (x[j] - m) * s;
        float dnorm = weight[j] * dy[j];
        dnorm_sum += dnorm;
        dnorm_norm_sum += dnorm * norm;
    }
    float dnorm_mean = warp_sum(dnorm_sum) / cols;
    float dnorm_norm_mean = warp_sum(dnorm_norm_sum) / cols;
    for (int j = lane; j < cols; j += 32) {
        float norm = (x[j] - m) * s;
        float dnorm = weight[j] * dy[j];
        dinp[row * cols + j] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
}

// one thread per column: the gradients of weight and bias, summed over the rows in order
__global__ void layernorm_backward_params(float* dweight, float* dbias, const float* dout, const float* inp,
                                          const float* mean, const float* rstd, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= cols) return;
    float dw = 0.0f, db = 0.0f;
    for (int row = 0; row < rows; ++row) {
        float norm = (inp[row * cols + col] - mean[row]) * rstd[row];
        dw += norm * dout[row * cols + col];
        db += dout[row * cols + col];
    }
    dweight[col] += dw;
    dbias[col] += db;
}

// causal self-attention, one thread per (batch, query, head): qkv is (B, T, 3C), out (B, T, C), att (B, H, T, T)
__global__ void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int H) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= B * T * H) return;
    int h = index % H, t = (index / H) % T, b = index / (H * T);
    int hs = C / H;
    float scale = 1.0f / sqrtf((float)hs);
    const float* q = qkv + b * T * 3 * C + t * 3 * C + h * hs;
    float* row = att + b * H * T * T + h * T * T + t * T;
    float top = -FLT_MAX;
    for (int t2 = 0; t2 <= t; ++t2) {
        const float* k = qkv + b * T * 3 * C + t2 * 3 * C + C + h * hs;
        float dot = 0.0f;
        for (int i = 0; i < hs; ++i) dot += q[i] * k[i];
        dot *= scale;
        row[t2] = dot;
        top = fmaxf(top, dot);
    }
    float total = 0.0f;
    for (int t2 = 0; t2 <= t; ++t2) {
        float e = expf(row[t2] - top);
        row[t2] = e;
        total += e;
    }
    float inverse = total == 0.0f ? 0.0f : 1.0f / total;
    for (int t2 = 0; t2 < T; ++t2) row[t2] = t2 <= t ? row[t2] * inverse : 0.0f;
    float* o = out + b * T * C + t * C + h * hs;
    for (int i = 0; i < hs; ++i) o[i] = 0.0f;
    for (int t2 = 0; t2 <= t; ++t2) {
        const float* v = qkv + b * T * 3 * C + t2 * 3 * C + 2 * C + h * hs;
        for (int i = 0; i < hs; ++i) o[i] += row[t2] * v[i];
    }
}

// causal attention in one pass over the keys (online softmax), one warp per (batch, query, head); hs == 32
__global__ void attention_online(float* out, const float* qkv, int B, int T, int C, int H) {
    int index = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (index >= B * T * H) return;
    int h = index % H, t = (index / H) % T, b = index / (H * T);
    const float scale = rsqrtf(32.0f);
    float q = qkv[b * T * 3 * C + t * 3 * C + h * 32 + lane] * scale;
    float top = -INFINITY, total = 0.0f, acc = 0.0f;
    for (int t2 = 0; t2 <= t; ++t2) {
        const float* base = qkv + b * T * 3 * C + t2 * 3 * C + h * 32 + lane;
        float score = warp_sum(q * base[C]);
        float next = fmaxf(top, score);
        float correction = expf(top - next);
        float p = expf(score - next);
        total = total * correction + p;
        acc = acc * correction + p * base[2 * C];
        top = next;
    }
    out[b * T * C + t * C + h * 32 + lane] = acc / total;
}

__global__ void crossentropy_forward(float* losses, const float* probs, const int* targets, int rows, int vocab) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows) losses[i] = -logf(probs[i * vocab + targets[i]]);
}

__global__ void crossentropy_softmax_backward(float* dlogits, const float* dlosses, const float* probs,
                                              const int* targets, int rows, int vocab) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * vocab) return;
    int row = i / vocab, v = i % vocab;
    float indicator = v == targets[row] ? 1.0f : 0.0f;
    dlogits[i] += (probs[i] - indicator) * dlosses[row];
}

// softmax, loss and the logits' gradient in one kernel; one block per row, the gradient written over the logits
__global__ void fused_classifier(float* logits, float* losses, const float* dlosses, const int* targets, int vocab) {
    __shared__ float scratch[32];
    float* x = logits + blockIdx.x * vocab;
    float top = -INFINITY;
    for (int j = threadIdx.x; j < vocab; j += blockDim.x) top = fmaxf(top, x[j]);
    top = warp_max(top);
    __shared__ float tops[32];
    if (threadIdx.x % 32 == 0) tops[threadIdx.x / 32] = top;
    __syncthreads();
    top = threadIdx.x % 32 < blockDim.x / 32 ? tops[threadIdx.x % 32] : -INFINITY;
    top = warp_max(top);
    float total = 0.0f;
    for (int j = threadIdx.x; j < vocab; j += blockDim.x) total += expf(x[j] - top);
    total = block_sum(total, scratch);
    float inverse = 1.0f / total;
    int target = targets[blockIdx.x];
    float dloss = dlosses[blockIdx.x];
    if (threadIdx.x == 0) losses[blockIdx.x] = logf(total) + top - x[target];
    __syncthreads();
    for (int j = threadIdx.x; j < vocab; j += blockDim.x) {
        float p = expf(x[j] - top) * inverse;
        x[j] = (p - (j == target ? 1.0f : 0.0f)) * dloss;
    }
}

__global__ void adamw_update(float* params, float* m, float* v, const float* grads, int n, float lr, float beta1,
                             float beta2, float eps, float weight_decay, int step) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = grads[i];
    float mi = beta1 * m[i] + (1.0f - beta1) * g;
    float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float m_hat = mi / (1.0f - powf(beta1, (float)step));
    float v_hat = vi / (1.0f - powf(beta2, (float)step));
    params[i] -= lr * (m_hat / (sqrtf(v_hat) + eps) + weight_decay * params[i]);
}

// plain Adam with the bias corrections passed in and a learning rate scaled by a clip factor
__global__ void adam_update(float* params, float* m, float* v, const float* grads, const float* clip, int n, float lr,
                            float beta1, float beta2, float correction1, float correction2, float eps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = grads[i] * clip[0];
    float mi = fmaf(beta1, m[i] - g, g);
    float vi = fmaf(beta2, v[i] - g * g, g * g);
    m[i] = mi;
    v[i] = vi;
    params[i] -= lr * (mi / correction1) * rsqrtf(vi / correction2 + eps * eps);
}

// sum of squares per block (grid-stride), then a second launch combines the partial sums
__global__ void global_norm_partial(float* partial, const float* grads, int n) {
    __shared__ float scratch[32];
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) sum += grads[i] * grads[i];
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

__global__ void global_norm_clip(float* scale, float* norm, const float* partial, int count, float max_norm) {
    __shared__ float scratch[32];
    float sum = 0.0f;
    for (int i = threadIdx.x; i < count; i += blockDim.x) sum += partial[i];
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) {
        float total = sqrtf(sum);
        norm[0] = total;
        scale[0] = total > max_norm ? max_norm / (total + 1e-6f) : 1.0f;
    }
}

// out (rows, oc) = inp (rows, ic) · weightᵀ (oc, ic) + bias, 16×16 tiles in shared memory
__global__ void matmul_bias_forward(float* out, const float* inp, const float* weight, const float* bias, int rows,
                                    int ic, int oc) {
    __shared__ float a[16][17];
    __shared__ float w[16][17];
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < ic; k += 16) {
        a[threadIdx.y][threadIdx.x] = inp[row * ic + k + threadIdx.x];
        w[threadIdx.y][threadIdx.x] = weight[(blockIdx.x * 16 + threadIdx.y) * ic + k + threadIdx.x];
        __syncthreads();
        for (int kk = 0; kk < 16; ++kk) acc += a[threadIdx.y][kk] * w[threadIdx.x][kk];
        __syncthreads();
    }
    out[row * oc + col] = acc + bias[col];
}

// token embedding plus position embedding
__global__ void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int T, int C,
                                int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    int c = i % C, bt = i / C, t = bt % T;
    out[i] = wte[tokens[bt] * C + c] + wpe[t * C + c];
}

// residual add followed by GELU on half-precision activations
__global__ void residual_gelu_half(__half2* out, const __half2* a, const __half2* b, int n2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n2) return;
    float2 x = __half22float2(__hadd2(a[i], b[i]));
    float y0 = 0.5f * x.x * (1.0f + tanhf(SQRT_2_OVER_PI * (x.x + GELU_CUBIC * x.x * x.x * x.x)));
    float y1 = 0.5f * x.y * (1.0f + tanhf(SQRT_2_OVER_PI * (x.y + GELU_CUBIC * x.y * x.y * x.y)));
    out[i] = __floats2half2_rn(y0, y1);
}
