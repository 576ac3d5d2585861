"""The ``<type_traits>`` stand-in of the runtime compilers (``std_headers.STD_HEADERS``; issue 26, item 1).

Why a module of its own: it is the largest of the stand-ins (the traits, their ``_t`` aliases and
their C++17 ``_v`` variables), and the one whose contents must track what hiprtc's preamble already
declares: ``integral_constant``, ``enable_if``, ``is_same``, ``is_integral``, ``is_arithmetic``,
``is_floating_point``, ``is_signed``, ``is_scalar`` and ``is_convertible`` are skipped under
``__HIPCC_RTC__`` (a second definition is an error there). Only what both front ends have is used
(EDG lacks ``__is_arithmetic``; the compiler built-ins ``__is_class``, ``__is_enum``... are shared).
The text is part of the cache key of every request that includes it: an edit is a new key.
"""

from __future__ import annotations

#: ``<type_traits>`` (also the first half of ``<utility>``)
TYPE_TRAITS = r"""
#ifndef __HX_TYPE_TRAITS
#define __HX_TYPE_TRAITS
namespace std {
#ifndef __HIPCC_RTC__
template <class T, T v> struct integral_constant {
  static constexpr const T value = v;
  typedef T value_type;
  typedef integral_constant type;
  __host__ __device__ constexpr operator value_type() const { return value; }
  __host__ __device__ constexpr value_type operator()() const { return value; }
};
template <class T, T v> constexpr const T integral_constant<T, v>::value;
template <bool B> using bool_constant = integral_constant<bool, B>;
typedef integral_constant<bool, true> true_type;
typedef integral_constant<bool, false> false_type;
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <class T, class U> struct is_same : false_type {};
template <class T> struct is_same<T, T> : true_type {};
#endif
template <class T> struct remove_const { typedef T type; };
template <class T> struct remove_const<const T> { typedef T type; };
template <class T> struct remove_volatile { typedef T type; };
template <class T> struct remove_volatile<volatile T> { typedef T type; };
template <class T> struct remove_cv { typedef typename remove_volatile<typename remove_const<T>::type>::type type; };
template <class T> struct remove_reference { typedef T type; };
template <class T> struct remove_reference<T&> { typedef T type; };
template <class T> struct remove_reference<T&&> { typedef T type; };
template <class T> struct remove_pointer { typedef T type; };
template <class T> struct remove_pointer<T*> { typedef T type; };
template <class T> struct remove_pointer<T* const> { typedef T type; };
template <class T> struct remove_pointer<T* volatile> { typedef T type; };
template <class T> struct remove_pointer<T* const volatile> { typedef T type; };
template <class T> struct remove_extent { typedef T type; };
template <class T> struct remove_extent<T[]> { typedef T type; };
template <class T, decltype(sizeof(0)) N> struct remove_extent<T[N]> { typedef T type; };
template <class T> struct remove_all_extents { typedef T type; };
template <class T> struct remove_all_extents<T[]> { typedef typename remove_all_extents<T>::type type; };
template <class T, decltype(sizeof(0)) N> struct remove_all_extents<T[N]> { typedef typename remove_all_extents<T>::type type; };
template <class T> struct add_const { typedef const T type; };
template <class T> struct add_volatile { typedef volatile T type; };
template <class T> struct add_cv { typedef const volatile T type; };
template <class T> struct add_pointer { typedef typename remove_reference<T>::type* type; };
template <class T> struct add_lvalue_reference { typedef T& type; };
template <> struct add_lvalue_reference<void> { typedef void type; };
template <class T> struct add_rvalue_reference { typedef T&& type; };
template <> struct add_rvalue_reference<void> { typedef void type; };
template <class T> __host__ __device__ typename add_rvalue_reference<T>::type declval() noexcept;
template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <class T> struct type_identity { typedef T type; };
template <class...> struct __hx_void { typedef void type; };
template <class... T> using void_t = typename __hx_void<T...>::type;
template <class T> struct is_void : is_same<void, typename remove_cv<T>::type> {};
template <class T> struct is_null_pointer : is_same<decltype(nullptr), typename remove_cv<T>::type> {};
template <class T> struct is_const : false_type {};
template <class T> struct is_const<const T> : true_type {};
template <class T> struct is_volatile : false_type {};
template <class T> struct is_volatile<volatile T> : true_type {};
template <class T> struct __hx_is_pointer : false_type {};
template <class T> struct __hx_is_pointer<T*> : true_type {};
template <class T> struct is_pointer : __hx_is_pointer<typename remove_cv<T>::type> {};
template <class T> struct is_lvalue_reference : false_type {};
template <class T> struct is_lvalue_reference<T&> : true_type {};
template <class T> struct is_rvalue_reference : false_type {};
template <class T> struct is_rvalue_reference<T&&> : true_type {};
template <class T> struct is_reference : integral_constant<bool, is_lvalue_reference<T>::value || is_rvalue_reference<T>::value> {};
template <class T> struct is_array : false_type {};
template <class T> struct is_array<T[]> : true_type {};
template <class T, decltype(sizeof(0)) N> struct is_array<T[N]> : true_type {};
template <class T> struct is_function : integral_constant<bool, !is_const<const T>::value && !is_reference<T>::value> {};
#ifndef __HIPCC_RTC__
template <class T> struct is_integral : false_type {};
#define __HX_INTEGRAL(T) template <> struct is_integral<T> : true_type {}; template <> struct is_integral<const T> : true_type {}; \
  template <> struct is_integral<volatile T> : true_type {}; template <> struct is_integral<const volatile T> : true_type {};
__HX_INTEGRAL(bool) __HX_INTEGRAL(char) __HX_INTEGRAL(signed char) __HX_INTEGRAL(unsigned char) __HX_INTEGRAL(wchar_t)
__HX_INTEGRAL(char16_t) __HX_INTEGRAL(char32_t) __HX_INTEGRAL(short) __HX_INTEGRAL(unsigned short) __HX_INTEGRAL(int)
__HX_INTEGRAL(unsigned int) __HX_INTEGRAL(long) __HX_INTEGRAL(unsigned long) __HX_INTEGRAL(long long) __HX_INTEGRAL(unsigned long long)
#undef __HX_INTEGRAL
template <class T> struct is_floating_point : false_type {};
#define __HX_FLOATING(T) template <> struct is_floating_point<T> : true_type {}; template <> struct is_floating_point<const T> : true_type {}; \
  template <> struct is_floating_point<volatile T> : true_type {}; template <> struct is_floating_point<const volatile T> : true_type {};
__HX_FLOATING(float) __HX_FLOATING(double) __HX_FLOATING(long double)
#undef __HX_FLOATING
template <class T> struct is_arithmetic : integral_constant<bool, is_integral<T>::value || is_floating_point<T>::value> {};
template <class T, bool = is_arithmetic<T>::value> struct is_signed : false_type {};
template <class T> struct is_signed<T, true> : integral_constant<bool, T(-1) < T(0)> {};
template <class From, class To> struct is_convertible : integral_constant<bool, __is_convertible_to(From, To)> {};
#endif
template <class T, bool = is_arithmetic<T>::value> struct is_unsigned : false_type {};
template <class T> struct is_unsigned<T, true> : integral_constant<bool, T(0) < T(-1)> {};
template <class T> struct is_enum : integral_constant<bool, __is_enum(T)> {};
template <class T> struct __hx_member_pointer : false_type {};
template <class T, class C> struct __hx_member_pointer<T C::*> : true_type {};
template <class T> struct is_member_pointer : __hx_member_pointer<typename remove_cv<T>::type> {};
#ifndef __HIPCC_RTC__
template <class T> struct is_scalar : integral_constant<bool, is_arithmetic<T>::value || is_enum<T>::value || is_pointer<T>::value ||
    is_member_pointer<T>::value || is_null_pointer<T>::value> {};
#endif
template <class T> struct is_class : integral_constant<bool, __is_class(T)> {};
template <class T> struct is_union : integral_constant<bool, __is_union(T)> {};
template <class T> struct is_empty : integral_constant<bool, __is_empty(T)> {};
template <class T> struct is_polymorphic : integral_constant<bool, __is_polymorphic(T)> {};
template <class T> struct is_abstract : integral_constant<bool, __is_abstract(T)> {};
template <class T> struct is_final : integral_constant<bool, __is_final(T)> {};
template <class T> struct is_pod : integral_constant<bool, __is_pod(T)> {};
template <class T> struct is_trivial : integral_constant<bool, __is_trivial(T)> {};
template <class T> struct is_standard_layout : integral_constant<bool, __is_standard_layout(T)> {};
template <class T> struct is_trivially_copyable : integral_constant<bool, __is_trivially_copyable(T)> {};
#ifdef __clang__
template <class T> struct is_trivially_destructible : integral_constant<bool, __is_trivially_destructible(T)> {};
#else
template <class T> struct is_trivially_destructible : integral_constant<bool, __has_trivial_destructor(T)> {};
#endif
template <class T, class... A> struct is_constructible : integral_constant<bool, __is_constructible(T, A...)> {};
template <class T, class... A> struct is_trivially_constructible : integral_constant<bool, __is_trivially_constructible(T, A...)> {};
template <class T, class... A> struct is_nothrow_constructible : integral_constant<bool, __is_nothrow_constructible(T, A...)> {};
template <class T> struct is_default_constructible : is_constructible<T> {};
template <class T> struct is_copy_constructible : is_constructible<T, const T&> {};
template <class T> struct is_move_constructible : is_constructible<T, T&&> {};
template <class T, class U> struct is_assignable : integral_constant<bool, __is_assignable(T, U)> {};
template <class T, class U> struct is_trivially_assignable : integral_constant<bool, __is_trivially_assignable(T, U)> {};
template <class B, class D> struct is_base_of : integral_constant<bool, __is_base_of(B, D)> {};
template <class T> struct has_virtual_destructor : integral_constant<bool, __has_virtual_destructor(T)> {};
template <class T> struct is_fundamental : integral_constant<bool, is_arithmetic<T>::value || is_void<T>::value || is_null_pointer<T>::value> {};
template <class T> struct is_compound : integral_constant<bool, !is_fundamental<T>::value> {};
template <class T> struct is_object : integral_constant<bool, !is_function<T>::value && !is_reference<T>::value && !is_void<T>::value> {};
template <class T> struct underlying_type { typedef __underlying_type(T) type; };
template <class T> struct alignment_of : integral_constant<decltype(sizeof(0)), alignof(T)> {};
template <class T> struct rank : integral_constant<decltype(sizeof(0)), 0> {};
template <class T> struct rank<T[]> : integral_constant<decltype(sizeof(0)), rank<T>::value + 1> {};
template <class T, decltype(sizeof(0)) N> struct rank<T[N]> : integral_constant<decltype(sizeof(0)), rank<T>::value + 1> {};
template <class T, unsigned I = 0> struct extent : integral_constant<decltype(sizeof(0)), 0> {};
template <class T> struct extent<T[], 0> : integral_constant<decltype(sizeof(0)), 0> {};
template <class T, unsigned I> struct extent<T[], I> : extent<T, I - 1> {};
template <class T, decltype(sizeof(0)) N> struct extent<T[N], 0> : integral_constant<decltype(sizeof(0)), N> {};
template <class T, decltype(sizeof(0)) N, unsigned I> struct extent<T[N], I> : extent<T, I - 1> {};
template <class T> struct decay {
  typedef typename remove_reference<T>::type U;
  typedef typename conditional<is_array<U>::value, typename remove_extent<U>::type*,
      typename conditional<is_function<U>::value, typename add_pointer<U>::type, typename remove_cv<U>::type>::type>::type type;
};
template <class T> struct remove_cvref { typedef typename remove_cv<typename remove_reference<T>::type>::type type; };
template <class T> struct __hx_signed { typedef T type; };
template <> struct __hx_signed<char> { typedef signed char type; };
template <> struct __hx_signed<unsigned char> { typedef signed char type; };
template <> struct __hx_signed<unsigned short> { typedef short type; };
template <> struct __hx_signed<unsigned int> { typedef int type; };
template <> struct __hx_signed<unsigned long> { typedef long type; };
template <> struct __hx_signed<unsigned long long> { typedef long long type; };
template <class T> struct __hx_unsigned { typedef T type; };
template <> struct __hx_unsigned<char> { typedef unsigned char type; };
template <> struct __hx_unsigned<signed char> { typedef unsigned char type; };
template <> struct __hx_unsigned<short> { typedef unsigned short type; };
template <> struct __hx_unsigned<int> { typedef unsigned int type; };
template <> struct __hx_unsigned<long> { typedef unsigned long type; };
template <> struct __hx_unsigned<long long> { typedef unsigned long long type; };
template <class T> struct make_signed { typedef typename __hx_signed<typename remove_cv<T>::type>::type type; };
template <class T> struct make_unsigned { typedef typename __hx_unsigned<typename remove_cv<T>::type>::type type; };
template <class... T> struct common_type {};
template <class T> struct common_type<T> { typedef typename decay<T>::type type; };
template <class T, class U> struct common_type<T, U> { typedef typename decay<decltype(true ? declval<T>() : declval<U>())>::type type; };
template <class T, class U, class... R> struct common_type<T, U, R...> : common_type<typename common_type<T, U>::type, R...> {};
template <class...> struct conjunction : true_type {};
template <class B> struct conjunction<B> : B {};
template <class B, class... R> struct conjunction<B, R...> : conditional<bool(B::value), conjunction<R...>, B>::type {};
template <class...> struct disjunction : false_type {};
template <class B> struct disjunction<B> : B {};
template <class B, class... R> struct disjunction<B, R...> : conditional<bool(B::value), B, disjunction<R...> >::type {};
template <class B> struct negation : integral_constant<bool, !bool(B::value)> {};
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;
template <class T> using remove_const_t = typename remove_const<T>::type;
template <class T> using remove_volatile_t = typename remove_volatile<T>::type;
template <class T> using remove_cv_t = typename remove_cv<T>::type;
template <class T> using remove_reference_t = typename remove_reference<T>::type;
template <class T> using remove_cvref_t = typename remove_cvref<T>::type;
template <class T> using remove_pointer_t = typename remove_pointer<T>::type;
template <class T> using remove_extent_t = typename remove_extent<T>::type;
template <class T> using remove_all_extents_t = typename remove_all_extents<T>::type;
template <class T> using add_const_t = typename add_const<T>::type;
template <class T> using add_pointer_t = typename add_pointer<T>::type;
template <class T> using add_lvalue_reference_t = typename add_lvalue_reference<T>::type;
template <class T> using add_rvalue_reference_t = typename add_rvalue_reference<T>::type;
template <class T> using decay_t = typename decay<T>::type;
template <class T> using make_signed_t = typename make_signed<T>::type;
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;
template <class T> using underlying_type_t = typename underlying_type<T>::type;
template <class T> using type_identity_t = typename type_identity<T>::type;
template <class... T> using common_type_t = typename common_type<T...>::type;
#if __cplusplus >= 201703L
template <class T, class U> inline constexpr bool is_same_v = is_same<T, U>::value;
template <class T> inline constexpr bool is_void_v = is_void<T>::value;
template <class T> inline constexpr bool is_integral_v = is_integral<T>::value;
template <class T> inline constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T> inline constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T> inline constexpr bool is_signed_v = is_signed<T>::value;
template <class T> inline constexpr bool is_unsigned_v = is_unsigned<T>::value;
template <class T> inline constexpr bool is_pointer_v = is_pointer<T>::value;
template <class T> inline constexpr bool is_reference_v = is_reference<T>::value;
template <class T> inline constexpr bool is_array_v = is_array<T>::value;
template <class T> inline constexpr bool is_const_v = is_const<T>::value;
template <class T> inline constexpr bool is_enum_v = is_enum<T>::value;
template <class T> inline constexpr bool is_class_v = is_class<T>::value;
template <class T> inline constexpr bool is_scalar_v = is_scalar<T>::value;
template <class T> inline constexpr bool is_trivially_copyable_v = is_trivially_copyable<T>::value;
template <class T> inline constexpr bool is_standard_layout_v = is_standard_layout<T>::value;
template <class T> inline constexpr bool is_empty_v = is_empty<T>::value;
template <class B, class D> inline constexpr bool is_base_of_v = is_base_of<B, D>::value;
template <class F, class T> inline constexpr bool is_convertible_v = is_convertible<F, T>::value;
template <class T, class... A> inline constexpr bool is_constructible_v = is_constructible<T, A...>::value;
template <class... B> inline constexpr bool conjunction_v = conjunction<B...>::value;
template <class... B> inline constexpr bool disjunction_v = disjunction<B...>::value;
template <class B> inline constexpr bool negation_v = negation<B>::value;
#endif
}
#endif
"""
