/* Host twin of the generated hx pointwise tail: y = epilogue(x, e0, e1) over PW_M x PW_N. */
#include "hxh_epilogue.h"

void hx_pointwise(const float* x, const float* e0, const float* e1, float* y)
{
    for (long r = 0; r < PW_M; ++r)
        for (long c = 0; c < PW_N; ++c) y[r * PW_N + c] = hxh_epilogue(x[r * PW_N + c], e0, e1, r, c, PW_N);
}
