// A read-only twin of the catalog triad (same reads of b and c, float4, grid-stride), used by the
// lead's 256 MiB experiment in BENCHMARKS.md: it leaves no dirty L2 lines behind, so 'none' and
// 'l2-read' should agree for it if the triad's gap is the write-back of the previous launch's lines.
extern "C" __global__ void rsum(float* a, const float* b, const float* c, float s, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const float4* b4 = (const float4*)b;
    const float4* c4 = (const float4*)c;
    float acc = 0.f;
    for (unsigned long long k = i; k < n / 4; k += stride) {
        float4 x = b4[k], y = c4[k];
        acc += (x.x + x.y + x.z + x.w) + s * (y.x + y.y + y.z + y.w);
    }
    if (acc == -1.2345e30f) a[i % n] = acc;  // never true for our inputs: keeps the reads alive, writes nothing
}
