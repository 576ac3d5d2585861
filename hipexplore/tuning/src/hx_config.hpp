// hx/kernels/config.hpp - the prelude every generated hipexplore kernel includes first.
//
// A header-only device library in the style of MIGraphX's kernel headers (index, shape,
// tensor_view, pointwise, vectorize, math, ...): generated kernels are a few lines that
// instantiate it, so their compile time is dominated by the library, as MIGraphX's are.
// One text for hiprtc (clang) and NVRTC (EDG + NVVM); nothing from the C++ standard library.
#ifndef HX_KERNELS_CONFIG_HPP
#define HX_KERNELS_CONFIG_HPP

#if defined(__HIPCC_RTC__) || defined(__HIP__) || defined(__HIP_DEVICE_COMPILE__)
#define HX_HIP 1
#define HX_WAVEFRONT 64
#else
#define HX_CUDA 1
#define HX_WAVEFRONT 32
#endif

#define HX_DEVICE __device__
#define HX_INLINE __device__ __forceinline__
#define HX_DEVICE_CONSTEXPR constexpr __device__ __host__ inline
#define HX_HD_CONSTEXPR constexpr __device__ __host__
#define HX_GLOBAL extern "C" __global__
#define HX_STRINGIZE_1(...) #__VA_ARGS__
#define HX_STRINGIZE(...) HX_STRINGIZE_1(__VA_ARGS__)
#define HX_PRAGMA(x) _Pragma(HX_STRINGIZE(x))
#define HX_UNROLL HX_PRAGMA(unroll)
#define HX_UNROLL_N(n) HX_PRAGMA(unroll n)
#define HX_RETURNS(...) -> decltype(__VA_ARGS__) { return __VA_ARGS__; }
#define HX_FWD(x) static_cast<decltype(x)&&>(x)
#define HX_LIFT(...) [](auto&&... hx_lift_xs) HX_RETURNS((__VA_ARGS__)(HX_FWD(hx_lift_xs)...))
#define HX_ASSERT(...) ((void)0)
#define HX_STATIC_ASSERT_FOR(...) static_assert(__VA_ARGS__, #__VA_ARGS__)
#define HX_CONCAT_1(a, b) a##b
#define HX_CONCAT(a, b) HX_CONCAT_1(a, b)

#endif  // HX_KERNELS_CONFIG_HPP
