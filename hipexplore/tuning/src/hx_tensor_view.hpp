// hx/kernels/tensor_view.hpp - a pointer with a compile-time shape; make_tensors turns the
// kernel's void* arguments into typed views (the first transform of every generated kernel).
#ifndef HX_KERNELS_TENSOR_VIEW_HPP
#define HX_KERNELS_TENSOR_VIEW_HPP
#include <hx/kernels/shape.hpp>
#include <hx/kernels/vec.hpp>
#include <hx/kernels/tuple.hpp>

namespace hx {

template <class T, class Shape>
struct tensor_view {
    using value_type = T;
    using shape_type = Shape;
    using index_array = typename Shape::index_array;
    T* x;

    HX_DEVICE_CONSTEXPR static Shape get_shape() { return {}; }
    HX_DEVICE_CONSTEXPR static index_int size() { return Shape::elements(); }
    HX_DEVICE_CONSTEXPR T* data() const { return x; }
    HX_DEVICE_CONSTEXPR T& operator[](index_int i) const { return x[Shape::index(i)]; }
    HX_DEVICE_CONSTEXPR T& operator[](index_array i) const { return x[Shape::index(i)]; }
    HX_DEVICE_CONSTEXPR T* begin() const { return x; }
    HX_DEVICE_CONSTEXPR T* end() const { return x + Shape::element_space(); }

    // element i of the vectorized view (N consecutive elements of the innermost dimension)
    template <index_int N>
    HX_INLINE auto load(index_int i) const
    {
        if constexpr(N == 1)
            return x[Shape::index(i)];
        else if constexpr(Shape::inner_stride() == 0)
            return vec<remove_cv_t<T>, N>::broadcast(x[Shape::index(i * N)]);
        else if constexpr(Shape::standard())
            return load_vec<N>(x + i * N);
        else
        {
            vec<remove_cv_t<T>, N> r{};
            repeat_c<N>([&](auto j) { r[j] = x[Shape::index(i * N + j)]; });
            return r;
        }
    }
    template <index_int N, class V>
    HX_INLINE void store(index_int i, const V& v) const
    {
        if constexpr(N == 1)
            x[Shape::index(i)] = v;
        else if constexpr(Shape::standard())
            store_vec<N>(x + i * N, v);
        else
            repeat_c<N>([&](auto j) { x[Shape::index(i * N + j)] = v[j]; });
    }
};

template <class T, class Shape>
HX_DEVICE_CONSTEXPR tensor_view<T, Shape> make_tensor_view(T* x, Shape) { return {x}; }

template <class T> struct is_tensor_view : false_type {};
template <class T, class S> struct is_tensor_view<tensor_view<T, S>> : true_type {};

// make_tensors<T, Shapes...>()(p0, p1, ...) -> a transform continuation over typed views
template <class T, class... Shapes>
HX_DEVICE_CONSTEXPR auto make_tensors()
{
    return [](auto... ps) {
        static_assert(sizeof...(ps) == sizeof...(Shapes), "one shape per kernel argument");
        return [=](auto f) { return f(make_tensor_view(static_cast<T*>(ps), Shapes{})...); };
    };
}

template <class... Views>
HX_DEVICE_CONSTEXPR bool same_elements()
{
    constexpr index_int n[] = {Views::shape_type::elements()...};
    for(auto e : n)
        if(e != n[0])
            return false;
    return true;
}

}  // namespace hx
#endif  // HX_KERNELS_TENSOR_VIEW_HPP
