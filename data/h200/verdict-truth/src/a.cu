#define EXTRA 0ULL

extern "C" __global__ void hx_stream(float* __restrict__ out, const float* __restrict__ a,
                                     const float* __restrict__ b, float s, unsigned long long n) {
  /* EXTRA/100 more elements than n, wrapping around: that much more work, the same code shape */
  unsigned long long total = n + (n * EXTRA) / 100;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    unsigned long long j = i < n ? i : i - n;
    out[j] = a[j] * s + b[j];
  }
}
