// Split-K reduction: C[i] = sum over z < SPLIT of W[z * RED_MN + i], one text for hiprtc and NVRTC.
extern "C" __global__ void gemm_reduce(const float* __restrict__ W, float* __restrict__ C)
{
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < (long)(RED_MN); i += (long)gridDim.x * blockDim.x) {
        float s = 0.0f;
#pragma unroll
        for (int z = 0; z < SPLIT; ++z) s += W[(long)z * RED_MN + i];
        C[i] = s;
    }
}
