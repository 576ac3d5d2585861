// hx/kernels/shape.hpp - tensor shapes known at compile time: lengths and strides as types, so
// every index computation folds to constants (MIGraphX bakes its shapes into each kernel the same way).
#ifndef HX_KERNELS_SHAPE_HPP
#define HX_KERNELS_SHAPE_HPP
#include <hx/kernels/array.hpp>

namespace hx {

template <class Lens, class Strides>
struct shape {
    using lens_type = Lens;
    using strides_type = Strides;
    static constexpr index_int ndim = Lens::size_v;
    static_assert(Lens::size_v == Strides::size_v, "lens and strides must have the same rank");
    using index_array = array<index_int, Lens::size_v>;

    HX_DEVICE_CONSTEXPR static index_array lens() { return Lens::value(); }
    HX_DEVICE_CONSTEXPR static index_array strides() { return Strides::value(); }
    HX_DEVICE_CONSTEXPR static index_int elements() { return Lens::product(); }
    HX_DEVICE_CONSTEXPR static index_int element_space()
    {
        auto l = lens();
        auto s = strides();
        index_int r = 1;
        for(index_int i = 0; i < ndim; i++)
            r += (l[i] - 1) * s[i];
        return r;
    }
    HX_DEVICE_CONSTEXPR static bool packed() { return elements() == element_space() and not broadcasted(); }
    HX_DEVICE_CONSTEXPR static bool broadcasted() { return strides().count(0) > 0; }
    HX_DEVICE_CONSTEXPR static bool standard() { return strides() == lens().packed_strides(); }
    HX_DEVICE_CONSTEXPR static bool transposed() { return packed() and not standard(); }
    HX_DEVICE_CONSTEXPR static index_int inner_stride() { return strides().back(); }
    HX_DEVICE_CONSTEXPR static index_int inner_len() { return lens().back(); }

    HX_DEVICE_CONSTEXPR static index_int index(index_array i) { return i.dot(strides()); }
    HX_DEVICE_CONSTEXPR static index_int index(index_int i)
    {
        if constexpr(standard())
            return i;
        else
            return index(multi(i));
    }
    HX_DEVICE_CONSTEXPR static index_array multi(index_int i) { return lens().multi(i); }
    HX_DEVICE_CONSTEXPR static index_int single(index_array i) { return lens().single(i); }
    HX_DEVICE_CONSTEXPR static bool in_range(index_array i)
    {
        auto l = lens();
        for(index_int d = 0; d < ndim; d++)
            if(i[d] >= l[d])
                return false;
        return true;
    }
    // can the innermost dimension be read N elements at a time?
    template <index_int N>
    HX_DEVICE_CONSTEXPR static bool vectorizable()
    {
        return (inner_stride() == 1 and inner_len() % N == 0) or inner_stride() == 0;
    }
};

template <class Lens, class Strides>
HX_DEVICE_CONSTEXPR shape<Lens, Strides> make_shape(Lens, Strides) { return {}; }

namespace detail {
template <class Lens, class Seq> struct packed_strides_of;
template <index_int... Ls, index_int... Is>
struct packed_strides_of<index_ints<Ls...>, seq<Is...>> {
    static constexpr index_int n = sizeof...(Ls);
    HX_DEVICE_CONSTEXPR static index_int stride(index_int i)
    {
        constexpr index_int lens[] = {Ls...};
        index_int s = 1;
        for(index_int d = i + 1; d < n; d++)
            s *= lens[d];
        return s;
    }
    using type = index_ints<stride(Is)...>;
};
}  // namespace detail

template <index_int... Ls>
using packed_shape = shape<index_ints<Ls...>,
                           typename detail::packed_strides_of<index_ints<Ls...>, make_seq<sizeof...(Ls)>>::type>;

// the lengths of an N-d tensor broadcast along every axis but `Axis`
template <index_int Axis, index_int... Ls>
struct broadcast_axis {
    template <index_int... Is>
    HX_DEVICE_CONSTEXPR static auto strides(seq<Is...>) { return index_ints<(Is == Axis ? 1u : 0u)...>{}; }
    using type = shape<index_ints<Ls...>, decltype(strides(make_seq<sizeof...(Ls)>{}))>;
};
template <index_int Axis, index_int... Ls>
using broadcast_shape = typename broadcast_axis<Axis, Ls...>::type;

template <class Shape>
struct shape_rank : index_constant<Shape::ndim> {};

}  // namespace hx
#endif  // HX_KERNELS_SHAPE_HPP
