/* Host C twin of gemm_fill.cu: zero FILL_N floats. */
void gemm_fill(float* restrict p)
{
    for (long i = 0; i < (long)(FILL_N); ++i) p[i] = 0.0f;
}
