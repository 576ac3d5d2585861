// A sum of n floats into one accumulator (grid-stride loads, a shared-memory tree per block, one
// atomic add per block), written the way a user brings a kernel to `hipexplore bench --source`
// (benchmarks/h200/counters.py counts it):
//
//   hipexplore bench reduce_sum --source benchmarks/h200/reduce_sum.cu \
//     --args "in:x:f32[n],inout:total:f32[1],n:u64=n" --block 256
//
// The accumulator is read and written (inout): its 4 bytes count among the launch's inputs.
extern "C" __global__ void reduce_sum(const float* __restrict__ x, float* total, unsigned long long n) {
  __shared__ float part[256];
  float acc = 0.0f;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) acc += x[i];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(total, part[0]);
}
