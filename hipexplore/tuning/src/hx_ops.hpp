// hx/kernels/ops.hpp - operator functors (sum, product, max, min, id, ...) for reductions and
// the generated pointwise lambdas.
#ifndef HX_KERNELS_OPS_HPP
#define HX_KERNELS_OPS_HPP
#include <hx/kernels/math.hpp>

namespace hx {
namespace op {

struct id {
    template <class T>
    HX_DEVICE_CONSTEXPR T operator()(T x) const { return x; }
};
struct sum {
    template <class T, class U>
    HX_DEVICE_CONSTEXPR auto operator()(T x, U y) const { return x + y; }
    template <class T>
    HX_DEVICE_CONSTEXPR static T identity() { return T(0); }
};
struct product {
    template <class T, class U>
    HX_DEVICE_CONSTEXPR auto operator()(T x, U y) const { return x * y; }
    template <class T>
    HX_DEVICE_CONSTEXPR static T identity() { return T(1); }
};
struct max {
    template <class T, class U>
    HX_DEVICE_CONSTEXPR auto operator()(T x, U y) const { return hx::max(x, y); }
    template <class T>
    HX_DEVICE_CONSTEXPR static T identity() { return numeric_limits<T>::lowest(); }
};
struct min {
    template <class T, class U>
    HX_DEVICE_CONSTEXPR auto operator()(T x, U y) const { return hx::min(x, y); }
    template <class T>
    HX_DEVICE_CONSTEXPR static T identity() { return numeric_limits<T>::max(); }
};
struct square {
    template <class T>
    HX_DEVICE_CONSTEXPR T operator()(T x) const { return x * x; }
};
template <class T>
struct convert_to {
    template <class U>
    HX_INLINE T operator()(U x) const { return convert<T>(x); }
};
struct mean {
    index_int n;
    template <class T>
    HX_DEVICE_CONSTEXPR T operator()(T x) const { return x / static_cast<T>(n); }
};

}  // namespace op

// accumulate `f` over a pack: sum_of(a, b, c) == a + b + c
template <class... Ts>
HX_DEVICE_CONSTEXPR auto sum_of(Ts... xs) { return fold(op::sum{})(xs...); }
template <class... Ts>
HX_DEVICE_CONSTEXPR auto product_of(Ts... xs) { return fold(op::product{})(xs...); }
template <class... Ts>
HX_DEVICE_CONSTEXPR auto max_of(Ts... xs) { return fold(op::max{})(xs...); }

}  // namespace hx
#endif  // HX_KERNELS_OPS_HPP
