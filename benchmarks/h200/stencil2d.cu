// A 2-D 5-point Jacobi step on a rows x cols grid (row-major, edges copied), written the way a user
// brings a kernel to `hipexplore bench --source` (benchmarks/h200/counters.py counts it):
//
//   hipexplore bench stencil2d --source benchmarks/h200/stencil2d.cu \
//     --args "out:next:f32[rows*cols],in:grid:f32[rows*cols],rows:i32=n//1024,cols:i32=1024" \
//     --grid "ceil(cols/block_x),ceil(rows/block_y)" --block 32,8
//
// Each launch reads the grid once (its neighbours come from the caches) and writes the next one.
extern "C" __global__ void stencil2d(float* __restrict__ next, const float* __restrict__ grid, int rows, int cols) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= cols || y >= rows) return;
  long i = (long)y * cols + x;
  if (x == 0 || y == 0 || x == cols - 1 || y == rows - 1) {
    next[i] = grid[i];
    return;
  }
  next[i] = 0.2f * (grid[i] + grid[i - 1] + grid[i + 1] + grid[i - cols] + grid[i + cols]);
}
