/* Host C twin of gemm_pointwise.cu: Y = act(X + bias[column]); ACT 0 identity, 1 relu, 2 gelu (tanh). */
#include <math.h>

void gemm_pointwise(const float* restrict X, const float* restrict bias, float* restrict Y)
{
    for (long i = 0; i < (long)PW_M * PW_N; ++i) {
        float v = X[i] + bias[i % PW_N];
#if ACT == 1
        v = v > 0.0f ? v : 0.0f;
#elif ACT == 2
        v = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
#endif
        Y[i] = v;
    }
}
