// hx/kernels/array.hpp - a fixed-size array with elementwise arithmetic and index arithmetic
// (multi-index <-> linear index conversions), as shape computations need.
#ifndef HX_KERNELS_ARRAY_HPP
#define HX_KERNELS_ARRAY_HPP
#include <hx/kernels/functional.hpp>

namespace hx {

template <class T, index_int N>
struct array {
    T d[N];
    using value_type = T;
    HX_DEVICE_CONSTEXPR T& operator[](index_int i) { return d[i]; }
    HX_DEVICE_CONSTEXPR const T& operator[](index_int i) const { return d[i]; }
    HX_DEVICE_CONSTEXPR T& front() { return d[0]; }
    HX_DEVICE_CONSTEXPR const T& front() const { return d[0]; }
    HX_DEVICE_CONSTEXPR T& back() { return d[N - 1]; }
    HX_DEVICE_CONSTEXPR const T& back() const { return d[N - 1]; }
    HX_DEVICE_CONSTEXPR T* data() { return d; }
    HX_DEVICE_CONSTEXPR const T* data() const { return d; }
    HX_DEVICE_CONSTEXPR static index_constant<N> size() { return {}; }
    HX_DEVICE_CONSTEXPR static bool empty() { return N == 0; }
    HX_DEVICE_CONSTEXPR T* begin() { return d; }
    HX_DEVICE_CONSTEXPR const T* begin() const { return d; }
    HX_DEVICE_CONSTEXPR T* end() { return d + N; }
    HX_DEVICE_CONSTEXPR const T* end() const { return d + N; }

    template <class F>
    HX_DEVICE_CONSTEXPR auto apply(F f) const
    {
        array<decltype(f(d[0])), N> result{};
        for(index_int i = 0; i < N; i++)
            result[i] = f(d[i]);
        return result;
    }
    HX_DEVICE_CONSTEXPR T product() const
    {
        T result = 1;
        for(index_int i = 0; i < N; i++)
            result *= d[i];
        return result;
    }
    HX_DEVICE_CONSTEXPR T sum() const
    {
        T result = 0;
        for(index_int i = 0; i < N; i++)
            result += d[i];
        return result;
    }
    HX_DEVICE_CONSTEXPR T dot(const array& x) const
    {
        T result = 0;
        for(index_int i = 0; i < N; i++)
            result += x[i] * d[i];
        return result;
    }
    HX_DEVICE_CONSTEXPR bool all_of(T v) const
    {
        for(index_int i = 0; i < N; i++)
            if(d[i] != v)
                return false;
        return true;
    }
    HX_DEVICE_CONSTEXPR index_int count(T v) const
    {
        index_int c = 0;
        for(index_int i = 0; i < N; i++)
            c += d[i] == v;
        return c;
    }
    HX_DEVICE_CONSTEXPR T max_element() const
    {
        T m = d[0];
        for(index_int i = 1; i < N; i++)
            m = d[i] > m ? d[i] : m;
        return m;
    }
    // multi-index of a linear index for these lengths (row-major)
    HX_DEVICE_CONSTEXPR array carry(array result) const
    {
        index_int overflow = 0;
        for(diff_int i = N - 1; i > 0; i--)
        {
            auto z = result[i] + overflow;
            overflow = z / d[i];
            result[i] = z % d[i];
        }
        result[0] += overflow;
        return result;
    }
    HX_DEVICE_CONSTEXPR array multi(T idx) const
    {
        array result{};
        for(diff_int i = N - 1; i >= 0; i--)
        {
            result[i] = idx % d[i];
            idx /= d[i];
        }
        return result;
    }
    HX_DEVICE_CONSTEXPR T single(const array& idx) const
    {
        T result = 0;
        T stride = 1;
        for(diff_int i = N - 1; i >= 0; i--)
        {
            result += idx[i] * stride;
            stride *= d[i];
        }
        return result;
    }
    HX_DEVICE_CONSTEXPR array packed_strides() const
    {
        array result{};
        T s = 1;
        for(diff_int i = N - 1; i >= 0; i--)
        {
            result[i] = s;
            s *= d[i];
        }
        return result;
    }

#define HX_ARRAY_OP(op)                                                                           \
    HX_DEVICE_CONSTEXPR array& operator op##=(const array& x)                                     \
    {                                                                                             \
        for(index_int i = 0; i < N; i++)                                                          \
            d[i] op## = x[i];                                                                     \
        return *this;                                                                             \
    }                                                                                             \
    HX_DEVICE_CONSTEXPR array& operator op##=(const T& x)                                         \
    {                                                                                             \
        for(index_int i = 0; i < N; i++)                                                          \
            d[i] op## = x;                                                                        \
        return *this;                                                                             \
    }                                                                                             \
    friend HX_DEVICE_CONSTEXPR array operator op(array x, const array& y) { return x op## = y; }  \
    friend HX_DEVICE_CONSTEXPR array operator op(array x, const T& y) { return x op## = y; }      \
    friend HX_DEVICE_CONSTEXPR array operator op(const T& y, array x)                             \
    {                                                                                             \
        for(index_int i = 0; i < N; i++)                                                          \
            x[i] = y op x[i];                                                                     \
        return x;                                                                                 \
    }
    HX_ARRAY_OP(+)
    HX_ARRAY_OP(-)
    HX_ARRAY_OP(*)
    HX_ARRAY_OP(/)
    HX_ARRAY_OP(%)
    HX_ARRAY_OP(&)
    HX_ARRAY_OP(|)
    HX_ARRAY_OP(^)
#undef HX_ARRAY_OP

    friend HX_DEVICE_CONSTEXPR bool operator==(const array& x, const array& y)
    {
        for(index_int i = 0; i < N; i++)
            if(x[i] != y[i])
                return false;
        return true;
    }
    friend HX_DEVICE_CONSTEXPR bool operator!=(const array& x, const array& y) { return not(x == y); }
    friend HX_DEVICE_CONSTEXPR bool operator<(const array& x, const array& y)
    {
        for(index_int i = 0; i < N; i++)
        {
            if(x[i] < y[i]) return true;
            if(y[i] < x[i]) return false;
        }
        return false;
    }
};

template <class T, class... Ts>
HX_DEVICE_CONSTEXPR array<T, sizeof...(Ts) + 1> make_array(T x, Ts... xs)
{
    return {x, static_cast<T>(xs)...};
}

template <class T, index_int N, class F>
HX_DEVICE_CONSTEXPR auto array_transform(const array<T, N>& a, F f)
{
    return a.apply(f);
}

template <class T, index_int N, class U, index_int M>
HX_DEVICE_CONSTEXPR auto array_concat(const array<T, N>& a, const array<U, M>& b)
{
    array<T, N + M> r{};
    for(index_int i = 0; i < N; i++) r[i] = a[i];
    for(index_int i = 0; i < M; i++) r[N + i] = b[i];
    return r;
}

// an array of index_ints known at compile time: the type carries the values
template <index_int... Xs>
struct index_ints {
    static constexpr index_int size_v = sizeof...(Xs);
    HX_DEVICE_CONSTEXPR static array<index_int, sizeof...(Xs)> value() { return {Xs...}; }
    HX_DEVICE_CONSTEXPR static index_constant<sizeof...(Xs)> size() { return {}; }
    HX_DEVICE_CONSTEXPR static index_int product() { return (index_int{1} * ... * Xs); }
    HX_DEVICE_CONSTEXPR static index_int sum() { return (index_int{0} + ... + Xs); }
    template <index_int I>
    HX_DEVICE_CONSTEXPR static index_int at() { return value()[I]; }
    HX_DEVICE_CONSTEXPR index_int operator[](index_int i) const { return value()[i]; }
};

template <index_int... Xs>
HX_DEVICE_CONSTEXPR auto to_array(index_ints<Xs...>) { return array<index_int, sizeof...(Xs)>{Xs...}; }

}  // namespace hx
#endif  // HX_KERNELS_ARRAY_HPP
