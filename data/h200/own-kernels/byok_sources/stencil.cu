#include <cuda_runtime.h>
#include <stencil_coeffs.h>
extern "C" __global__ void stencil5(float* __restrict__ out, const float* __restrict__ in, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i >= 2 && i + 2 < n)
    out[i] = C0 * in[i] + C1 * (in[i - 1] + in[i + 1]) + C2 * (in[i - 2] + in[i + 2]);
  else if (i < n)
    out[i] = in[i];
}
