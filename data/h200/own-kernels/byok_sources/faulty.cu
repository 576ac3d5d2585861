extern "C" __global__ void scale_faulty(float* y, const float* x, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (n > (1ull << 20) && i == 0) *(volatile float*)0 = 1.0f;  // past 4 MiB per array: a null write
  if (i < n) y[i] = 2.0f * x[i];
}
