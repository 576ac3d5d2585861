// Pointwise tail: Y = act(X + bias[column]) over a PW_M x PW_N row-major matrix; ACT 0 = identity,
// 1 = relu, 2 = gelu (tanh form). One text for hiprtc and NVRTC; identical across candidates.
extern "C" __global__ void gemm_pointwise(const float* __restrict__ X, const float* __restrict__ bias, float* __restrict__ Y)
{
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < (long)PW_M * PW_N; i += (long)gridDim.x * blockDim.x) {
        float v = X[i] + bias[i % PW_N];
#if ACT == 1
        v = v > 0.0f ? v : 0.0f;
#elif ACT == 2
        v = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
#endif
        Y[i] = v;
    }
}
