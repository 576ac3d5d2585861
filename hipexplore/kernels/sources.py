"""Kernel source texts, written once for hiprtc and NVRTC, and their host C twins.

No ``#include``: both runtime compilers provide ``__global__``, ``threadIdx`` and friends built in,
and a source without includes compiles the same wherever the toolkit lives (and keys the cache on
its text alone).
"""

from __future__ import annotations

#: Shared prelude: tells the two GPU compilers apart and gives a nanosecond clock.
GPU_PRELUDE = r"""
#if defined(__HIPCC_RTC__) || defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
#define HX_AMD 1
#endif
#define HX_KERNEL extern "C" __global__
typedef unsigned long long hx_u64;
typedef unsigned int hx_u32;
/* 16-byte vector: the streaming kernels move float4s (buffers from cuMemAlloc/hipMalloc are
   256-byte aligned) and finish the n % 4 tail element by element. */
struct __attribute__((aligned(16))) hx_f4 { float x, y, z, w; };
__device__ static inline hx_u64 hx_now_ns() {
#ifdef HX_AMD
  /* s_memrealtime: the constant 100 MHz wall clock of gfx9 parts (MI100/MI200/MI300). */
  return (hx_u64)__builtin_amdgcn_s_memrealtime() * 10ull;
#else
  hx_u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}
/* The in-kernel timer (compiled with -DHX_TIMED, the "in-kernel" timer of the harness): an extra
   last argument t, t[0] = the first block's start (atomicMin), t[1] = the last block's end
   (atomicMax), in ns of the device's wall clock (%globaltimer; s_memrealtime x 10 on AMD). It
   excludes what events include around the kernel: launch and block-scheduling latency before the
   first block starts, and the drain after the last block ends. A block's end is read after every
   thread's fence (__threadfence: its stores are visible device-wide), so the window holds the last
   block's write-back to the L2, which the kernel's completion waits for too; without the fence the
   16 MiB triad's (events - floor) read 5.2% above it on the H200. Without HX_TIMED the macros vanish. */
#ifdef HX_TIMED
#define HX_T_PARAM , hx_u64* __restrict__ hx_t
#define HX_T_BEGIN if (threadIdx.x == 0) atomicMin(&hx_t[0], hx_now_ns());
#define HX_T_END __threadfence(); __syncthreads(); if (threadIdx.x == 0) atomicMax(&hx_t[1], hx_now_ns());
#else
#define HX_T_PARAM
#define HX_T_BEGIN
#define HX_T_END
#endif
"""

TRIAD_GPU = (
    GPU_PRELUDE
    + r"""
HX_KERNEL void triad(float* __restrict__ a, const float* __restrict__ b,
                     const float* __restrict__ c, float s, hx_u64 n HX_T_PARAM) {
  HX_T_BEGIN
  hx_u64 tid = (hx_u64)blockIdx.x * blockDim.x + threadIdx.x;
  hx_u64 stride = (hx_u64)gridDim.x * blockDim.x;
  hx_u64 n4 = n / 4;
  hx_f4* a4 = (hx_f4*)a;
  const hx_f4* b4 = (const hx_f4*)b;
  const hx_f4* c4 = (const hx_f4*)c;
  for (hx_u64 i = tid; i < n4; i += stride) {
    hx_f4 x = b4[i], y = c4[i], r;
    r.x = x.x + s * y.x; r.y = x.y + s * y.y; r.z = x.z + s * y.z; r.w = x.w + s * y.w;
    a4[i] = r;
  }
  for (hx_u64 i = 4 * n4 + tid; i < n; i += stride) a[i] = b[i] + s * c[i];
  HX_T_END
}
"""
)

COPY_GPU = (
    GPU_PRELUDE
    + r"""
HX_KERNEL void copy(float* __restrict__ dst, const float* __restrict__ src, hx_u64 n HX_T_PARAM) {
  HX_T_BEGIN
  hx_u64 tid = (hx_u64)blockIdx.x * blockDim.x + threadIdx.x;
  hx_u64 stride = (hx_u64)gridDim.x * blockDim.x;
  hx_u64 n4 = n / 4;
  for (hx_u64 i = tid; i < n4; i += stride) ((hx_f4*)dst)[i] = ((const hx_f4*)src)[i];
  for (hx_u64 i = 4 * n4 + tid; i < n; i += stride) dst[i] = src[i];
  HX_T_END
}
"""
)

FILL_GPU = (
    GPU_PRELUDE
    + r"""
HX_KERNEL void fill(float* __restrict__ dst, float value, hx_u64 n HX_T_PARAM) {
  HX_T_BEGIN
  hx_u64 tid = (hx_u64)blockIdx.x * blockDim.x + threadIdx.x;
  hx_u64 stride = (hx_u64)gridDim.x * blockDim.x;
  hx_u64 n4 = n / 4;
  hx_f4 v; v.x = value; v.y = value; v.z = value; v.w = value;
  for (hx_u64 i = tid; i < n4; i += stride) ((hx_f4*)dst)[i] = v;
  for (hx_u64 i = 4 * n4 + tid; i < n; i += stride) dst[i] = value;
  HX_T_END
}
"""
)

#: The blocking kernel (nvbench's method): one thread spins on a host-mapped flag so that every
#: launch queued behind it starts back to back once the host releases the flag. It gives up after
#: ``timeout_ns`` and writes 1 to ``status`` so the host can tell the hold broke.
SPIN_GPU = (
    GPU_PRELUDE
    + r"""
HX_KERNEL void hx_spin(volatile int* flag, volatile int* status, hx_u64 timeout_ns) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  hx_u64 t0 = hx_now_ns();
  while (*flag == 0) {
    if (hx_now_ns() - t0 > timeout_ns) { *status = 1; return; }
  }
}
"""
)

#: Read flush: every thread reads 16-byte words and folds them; the store happens only if the fold
#: equals a value a zero-filled buffer can never give, so the loads cannot be removed and nothing
#: dirty is left in the cache (a clean eviction).
READ_FLUSH_GPU = (
    GPU_PRELUDE
    + r"""
struct __attribute__((aligned(16))) hx_v4 { hx_u32 x, y, z, w; };
HX_KERNEL void hx_read_flush(const hx_v4* __restrict__ buf, hx_u64 n4, hx_u32* sink) {
  hx_u32 acc = 0;
  hx_u64 stride = (hx_u64)gridDim.x * blockDim.x;
  for (hx_u64 i = (hx_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    hx_v4 v = buf[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}
"""
)

#: The launch floor (bench.floor): a kernel that does nothing, so that the event pair around it reads
#: only what it adds to every launch (the launch, block scheduling, the drain).
EMPTY_GPU = (
    GPU_PRELUDE
    + r"""
HX_KERNEL void hx_empty() {}
"""
)

#: Write flush: the fill kernel over a buffer of at least the LLC (rocMLIR's old flushL2Cache, a
#: memset of L2 + 20%; triton's do_bench zeroes 256 MiB). Leaves the cache full of dirty lines.
WRITE_FLUSH_GPU = (
    GPU_PRELUDE
    + r"""
HX_KERNEL void hx_write_flush(hx_u32* __restrict__ buf, hx_u32 value, hx_u64 n) {
  hx_u64 stride = (hx_u64)gridDim.x * blockDim.x;
  for (hx_u64 i = (hx_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    buf[i] = value;
}
"""
)

#: AMD instruction-cache flush as a separate kernel (rocMLIR's old flushInstructionCache): launched
#: on compute_units * 60 blocks so every CU runs s_icache_inv.
ICACHE_INV_ASM = "s_icache_inv\n" + "s_nop 0\n" * 16
ICACHE_FLUSH_GPU = (
    GPU_PRELUDE
    + r"""
HX_KERNEL void hx_icache_flush() {
#ifdef HX_AMD
  asm volatile("s_icache_inv\n\t"
               "s_nop 0\n\ts_nop 0\n\ts_nop 0\n\ts_nop 0\n\t"
               "s_nop 0\n\ts_nop 0\n\ts_nop 0\n\ts_nop 0\n\t"
               "s_nop 0\n\ts_nop 0\n\ts_nop 0\n\ts_nop 0\n\t"
               "s_nop 0\n\ts_nop 0\n\ts_nop 0\n\ts_nop 0" ::: "memory");
#endif
}
"""
)

HOST_KERNELS_C = r"""
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
typedef unsigned long long hx_u64;
/* The in-kernel timer on the host (-DHX_TIMED): CLOCK_MONOTONIC at the function's start and end,
   so the ctypes call around it is left out. */
#ifdef HX_TIMED
static inline hx_u64 hx_now_ns(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return (hx_u64)ts.tv_sec * 1000000000ull + (hx_u64)ts.tv_nsec; }
#define HX_T_PARAM , hx_u64* restrict hx_t
#define HX_T_BEGIN hx_u64 hx_t0 = hx_now_ns();
#define HX_T_END hx_t[0] = hx_t0; hx_t[1] = hx_now_ns();
#else
#define HX_T_PARAM
#define HX_T_BEGIN
#define HX_T_END
#endif

void triad(float* restrict a, const float* restrict b, const float* restrict c, float s, hx_u64 n HX_T_PARAM) {
  HX_T_BEGIN
  for (hx_u64 i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
  HX_T_END
}

void copy(float* restrict dst, const float* restrict src, hx_u64 n HX_T_PARAM) {
  HX_T_BEGIN
  for (hx_u64 i = 0; i < n; ++i) dst[i] = src[i];
  HX_T_END
}

void fill(float* restrict dst, float value, hx_u64 n HX_T_PARAM) {
  HX_T_BEGIN
  for (hx_u64 i = 0; i < n; ++i) dst[i] = value;
  HX_T_END
}

/* The launch floor (bench.floor): a function that does nothing, timed like any kernel. */
void hx_empty(void) {}

/* Write flush: store over a buffer of at least the last-level cache. */
void hx_write_flush(uint32_t* restrict buf, uint32_t value, hx_u64 n) {
  for (hx_u64 i = 0; i < n; ++i) ((volatile uint32_t*)buf)[i] = value;
}

/* Read flush: fold every word; the result is returned so the loads cannot be removed. */
/* n16 counts 16-byte words, like the GPU version. */
uint32_t hx_read_flush(const uint32_t* restrict buf, hx_u64 n16, uint32_t* sink) {
  uint32_t acc = 0;
  for (hx_u64 i = 0; i < 4 * n16; ++i) acc ^= buf[i];
  if (acc == 0x9e3779b9u) sink[0] = acc;
  return acc;
}
"""
