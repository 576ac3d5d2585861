/* Host C twin of gemm_reduce.cu: C[i] = sum over z < SPLIT of W[z * RED_MN + i]. */
void gemm_reduce(const float* restrict W, float* restrict C)
{
    for (long i = 0; i < (long)(RED_MN); ++i) {
        float s = 0.0f;
        for (int z = 0; z < SPLIT; ++z) s += W[(long)z * RED_MN + i];
        C[i] = s;
    }
}
