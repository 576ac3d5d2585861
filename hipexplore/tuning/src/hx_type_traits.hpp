// hx/kernels/type_traits.hpp - the type traits the device library needs (no <type_traits> on
// either runtime compiler: MIGraphX's kernels carry their own the same way).
#ifndef HX_KERNELS_TYPE_TRAITS_HPP
#define HX_KERNELS_TYPE_TRAITS_HPP
#include <hx/kernels/types.hpp>

namespace hx {

template <class T> struct type_identity { using type = T; };
template <class T> using type_identity_t = typename type_identity<T>::type;

template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { using type = T; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;

template <bool B, class T, class F> struct conditional { using type = T; };
template <class T, class F> struct conditional<false, T, F> { using type = F; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;

template <class T, class U> struct is_same : false_type {};
template <class T> struct is_same<T, T> : true_type {};
template <class T, class U> constexpr bool is_same_v = is_same<T, U>::value;

template <class T> struct remove_reference { using type = T; };
template <class T> struct remove_reference<T&> { using type = T; };
template <class T> struct remove_reference<T&&> { using type = T; };
template <class T> using remove_reference_t = typename remove_reference<T>::type;

template <class T> struct remove_const { using type = T; };
template <class T> struct remove_const<const T> { using type = T; };
template <class T> struct remove_volatile { using type = T; };
template <class T> struct remove_volatile<volatile T> { using type = T; };
template <class T> struct remove_cv { using type = typename remove_volatile<typename remove_const<T>::type>::type; };
template <class T> using remove_cv_t = typename remove_cv<T>::type;
template <class T> struct remove_cvref { using type = remove_cv_t<remove_reference_t<T>>; };
template <class T> using remove_cvref_t = typename remove_cvref<T>::type;

template <class T> struct remove_pointer { using type = T; };
template <class T> struct remove_pointer<T*> { using type = T; };
template <class T> struct remove_pointer<T* const> { using type = T; };
template <class T> using remove_pointer_t = typename remove_pointer<T>::type;
template <class T> struct add_pointer { using type = remove_reference_t<T>*; };
template <class T> using add_pointer_t = typename add_pointer<T>::type;
template <class T> struct add_const { using type = const T; };
template <class T> using add_const_t = typename add_const<T>::type;

template <class T> struct is_pointer_helper : false_type {};
template <class T> struct is_pointer_helper<T*> : true_type {};
template <class T> struct is_pointer : is_pointer_helper<remove_cv_t<T>> {};
template <class T> constexpr bool is_pointer_v = is_pointer<T>::value;

template <class T> struct is_reference : false_type {};
template <class T> struct is_reference<T&> : true_type {};
template <class T> struct is_reference<T&&> : true_type {};
template <class T> struct is_const : false_type {};
template <class T> struct is_const<const T> : true_type {};
template <class T> struct is_void : is_same<void, remove_cv_t<T>> {};
template <class T> struct is_array : false_type {};
template <class T> struct is_array<T[]> : true_type {};
template <class T, size_t N> struct is_array<T[N]> : true_type {};

template <class T> struct is_integral_helper : false_type {};
#define HX_IS_INTEGRAL(T) template <> struct is_integral_helper<T> : true_type {};
HX_IS_INTEGRAL(bool)
HX_IS_INTEGRAL(char)
HX_IS_INTEGRAL(signed char)
HX_IS_INTEGRAL(unsigned char)
HX_IS_INTEGRAL(short)
HX_IS_INTEGRAL(unsigned short)
HX_IS_INTEGRAL(int)
HX_IS_INTEGRAL(unsigned int)
HX_IS_INTEGRAL(long)
HX_IS_INTEGRAL(unsigned long)
HX_IS_INTEGRAL(long long)
HX_IS_INTEGRAL(unsigned long long)
template <class T> struct is_integral : is_integral_helper<remove_cv_t<T>> {};
template <class T> constexpr bool is_integral_v = is_integral<T>::value;

template <class T> struct is_floating_point_helper : false_type {};
template <> struct is_floating_point_helper<float> : true_type {};
template <> struct is_floating_point_helper<double> : true_type {};
template <class T> struct is_floating_point : is_floating_point_helper<remove_cv_t<T>> {};
template <class T> constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T> struct is_arithmetic : bool_constant<is_integral<T>{} or is_floating_point<T>{}> {};
template <class T> constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T> struct is_signed : bool_constant<is_arithmetic<T>{} and (T(-1) < T(0))> {};
template <class T> struct is_unsigned : bool_constant<is_arithmetic<T>{} and (T(0) < T(-1))> {};

template <class T> struct make_unsigned;
template <> struct make_unsigned<signed char> { using type = unsigned char; };
template <> struct make_unsigned<unsigned char> { using type = unsigned char; };
template <> struct make_unsigned<short> { using type = unsigned short; };
template <> struct make_unsigned<unsigned short> { using type = unsigned short; };
template <> struct make_unsigned<int> { using type = unsigned int; };
template <> struct make_unsigned<unsigned int> { using type = unsigned int; };
template <> struct make_unsigned<long long> { using type = unsigned long long; };
template <> struct make_unsigned<unsigned long long> { using type = unsigned long long; };
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;

template <class T> __device__ __host__ T&& declval_impl(int);
template <class T> __device__ __host__ T declval_impl(long);
template <class T> __device__ __host__ decltype(declval_impl<T>(0)) declval() noexcept;

template <class...> using void_t = void;

template <class...> struct conjunction : true_type {};
template <class B> struct conjunction<B> : B {};
template <class B, class... Bs> struct conjunction<B, Bs...> : conditional_t<bool(B::value), conjunction<Bs...>, B> {};
template <class...> struct disjunction : false_type {};
template <class B> struct disjunction<B> : B {};
template <class B, class... Bs> struct disjunction<B, Bs...> : conditional_t<bool(B::value), B, disjunction<Bs...>> {};
template <class B> struct negation : bool_constant<not bool(B::value)> {};

template <class T> struct decay { using type = remove_cv_t<remove_reference_t<T>>; };
template <class T, size_t N> struct decay<T[N]> { using type = T*; };
template <class T> using decay_t = typename decay<T>::type;

template <class... Ts> struct common_type;
template <class T> struct common_type<T> { using type = decay_t<T>; };
template <class T, class U> struct common_type<T, U> { using type = decay_t<decltype(true ? declval<T>() : declval<U>())>; };
template <class T, class U, class... Us> struct common_type<T, U, Us...> : common_type<typename common_type<T, U>::type, Us...> {};
template <class... Ts> using common_type_t = typename common_type<Ts...>::type;

template <class From, class To, class = void> struct is_convertible : false_type {};
template <class From, class To>
struct is_convertible<From, To, void_t<decltype(static_cast<void (*)(To)>(nullptr)(declval<From>()))>> : true_type {};

template <class T, class = void> struct has_value_type : false_type {};
template <class T> struct has_value_type<T, void_t<typename T::value_type>> : true_type {};

template <class T> struct is_integral_constant : false_type {};
template <class T, T V> struct is_integral_constant<integral_constant<T, V>> : true_type {};

template <class T> struct rank : integral_constant<size_t, 0> {};
template <class T, size_t N> struct rank<T[N]> : integral_constant<size_t, rank<T>::value + 1> {};

template <class T> using is_trivially_copyable = bool_constant<__is_trivially_copyable(T)>;

#define HX_REQUIRES(...) class HX_CONCAT(HxReq, __LINE__) = enable_if_t<(__VA_ARGS__)>

template <class T> HX_DEVICE_CONSTEXPR T&& forward(remove_reference_t<T>& x) noexcept { return static_cast<T&&>(x); }
template <class T> HX_DEVICE_CONSTEXPR T&& forward(remove_reference_t<T>&& x) noexcept { return static_cast<T&&>(x); }
template <class T> HX_DEVICE_CONSTEXPR remove_reference_t<T>&& move(T&& x) noexcept { return static_cast<remove_reference_t<T>&&>(x); }
template <class T> HX_DEVICE_CONSTEXPR void swap(T& a, T& b) { T t = move(a); a = move(b); b = move(t); }

template <class To, class From>
HX_INLINE To bit_cast(From x)
{
    static_assert(sizeof(To) == sizeof(From), "bit_cast needs types of one size");
    union { From f; To t; } u{x};
    return u.t;
}

}  // namespace hx
#endif  // HX_KERNELS_TYPE_TRAITS_HPP
