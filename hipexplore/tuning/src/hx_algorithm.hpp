// hx/kernels/algorithm.hpp - sequential algorithms over pointers and ranges (per-thread work).
#ifndef HX_KERNELS_ALGORITHM_HPP
#define HX_KERNELS_ALGORITHM_HPP
#include <hx/kernels/ops.hpp>

namespace hx {

template <class Iterator, class T>
HX_DEVICE_CONSTEXPR void fill(Iterator first, Iterator last, const T& value)
{
    for(; first != last; ++first)
        *first = value;
}
template <class Iterator, class OutputIterator>
HX_DEVICE_CONSTEXPR OutputIterator copy(Iterator first, Iterator last, OutputIterator out)
{
    for(; first != last; ++first, ++out)
        *out = *first;
    return out;
}
template <class Iterator, class OutputIterator, class F>
HX_DEVICE_CONSTEXPR OutputIterator transform(Iterator first, Iterator last, OutputIterator out, F f)
{
    for(; first != last; ++first, ++out)
        *out = f(*first);
    return out;
}
template <class Iterator1, class Iterator2, class OutputIterator, class F>
HX_DEVICE_CONSTEXPR OutputIterator transform(Iterator1 first1, Iterator1 last1, Iterator2 first2, OutputIterator out, F f)
{
    for(; first1 != last1; ++first1, ++first2, ++out)
        *out = f(*first1, *first2);
    return out;
}
template <class Iterator, class T, class F>
HX_DEVICE_CONSTEXPR T accumulate(Iterator first, Iterator last, T init, F f)
{
    for(; first != last; ++first)
        init = f(init, *first);
    return init;
}
template <class Iterator, class T>
HX_DEVICE_CONSTEXPR T accumulate(Iterator first, Iterator last, T init)
{
    return accumulate(first, last, init, op::sum{});
}
template <class Iterator1, class Iterator2, class T>
HX_DEVICE_CONSTEXPR T inner_product(Iterator1 first1, Iterator1 last1, Iterator2 first2, T init)
{
    for(; first1 != last1; ++first1, ++first2)
        init = init + *first1 * *first2;
    return init;
}
template <class Iterator, class Predicate>
HX_DEVICE_CONSTEXPR Iterator find_if(Iterator first, Iterator last, Predicate p)
{
    for(; first != last; ++first)
        if(p(*first))
            return first;
    return last;
}
template <class Iterator, class Predicate>
HX_DEVICE_CONSTEXPR bool all_of(Iterator first, Iterator last, Predicate p)
{
    return find_if(first, last, [&](const auto& x) { return not p(x); }) == last;
}
template <class Iterator, class Predicate>
HX_DEVICE_CONSTEXPR bool any_of(Iterator first, Iterator last, Predicate p)
{
    return find_if(first, last, p) != last;
}
template <class Iterator, class T>
HX_DEVICE_CONSTEXPR void iota(Iterator first, Iterator last, T value)
{
    for(; first != last; ++first, ++value)
        *first = value;
}
template <class Iterator, class Compare>
HX_DEVICE_CONSTEXPR Iterator max_element(Iterator first, Iterator last, Compare comp)
{
    if(first == last)
        return last;
    Iterator best = first;
    for(++first; first != last; ++first)
        if(comp(*best, *first))
            best = first;
    return best;
}
template <class Iterator>
HX_DEVICE_CONSTEXPR void insertion_sort(Iterator first, Iterator last)
{
    for(Iterator i = first; i != last; ++i)
        for(Iterator j = i; j != first and *j < *(j - 1); --j)
            swap(*j, *(j - 1));
}

}  // namespace hx
#endif  // HX_KERNELS_ALGORITHM_HPP
