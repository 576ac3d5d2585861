// Zero fill of the GEMM destination (FILL_N floats), one text for hiprtc and NVRTC.
// Identical for every tuning candidate with the same destination size: the cache's target.
extern "C" __global__ void gemm_fill(float* __restrict__ p)
{
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < (long)(FILL_N); i += (long)gridDim.x * blockDim.x)
        p[i] = 0.0f;
}
