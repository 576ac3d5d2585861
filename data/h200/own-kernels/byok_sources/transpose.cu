#include <cuda_runtime.h>
template <int TILE, int ROWS_PER_PASS>
__global__ void transpose_tiled(float* __restrict__ out, const float* __restrict__ in, int rows, int cols) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS_PER_PASS)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(long)(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS_PER_PASS)
    if (x < rows && y + j < cols) out[(long)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
