// reduce.cc - see reduce.h.  Built with -O3 (runtime/BUILD.bazel): the loops vectorize.
#include "runtime/reduce.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <type_traits>

namespace ep::runtime {

bool one_of(MPI_Datatype t, std::initializer_list<MPI_Datatype> list) {
  return std::find(list.begin(), list.end(), t) != list.end();
}

bool is_integer(MPI_Datatype t) {
  return one_of(t, {MPI_INT,         MPI_LONG,          MPI_SHORT,         MPI_UNSIGNED_SHORT,
                    MPI_UNSIGNED,    MPI_UNSIGNED_LONG, MPI_LONG_LONG_INT, MPI_UNSIGNED_LONG_LONG,
                    MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_INT8_T,        MPI_INT16_T,
                    MPI_INT32_T,     MPI_INT64_T,       MPI_UINT8_T,       MPI_UINT16_T,
                    MPI_UINT32_T,    MPI_UINT64_T,      MPI_AINT,          MPI_OFFSET,
                    MPI_COUNT});
}
bool is_floating(MPI_Datatype t) { return one_of(t, {MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE}); }
bool is_logical(MPI_Datatype t) { return one_of(t, {MPI_C_BOOL, MPI_CXX_BOOL}); }
bool is_complex(MPI_Datatype t) {
  return one_of(t, {MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX});
}
bool is_pair(MPI_Datatype t) {
  return one_of(t, {MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT,
                    MPI_LONG_DOUBLE_INT});
}

namespace {

// out[i] = a[i] (op) b[i]; out may be b (the two-operand form), or a buffer apart from
// both.
template <class T>
bool reduce_typed(const char* a, const char* b, char* out, int64_t n, MPI_Op op) {
  auto each = [&](auto f) {
    // Element-wise and independent: the compiler vectorizes this (built with -O3).
    for (int64_t i = 0; i < n; ++i) {
      T x, y;
      std::memcpy(&x, a + i * sizeof(T), sizeof(T));  // buffers need not be aligned
      std::memcpy(&y, b + i * sizeof(T), sizeof(T));
      y = f(x, y);
      std::memcpy(out + i * sizeof(T), &y, sizeof(T));
    }
  };
  // Integer sums and products wrap: computed in uint64_t (no signed overflow, and no
  // promotion of narrow unsigned types to int).
  using Arith = std::conditional_t<std::is_integral_v<T>, uint64_t, T>;
  if (op == MPI_SUM) {
    each([](T x, T y) { return static_cast<T>(static_cast<Arith>(x) + static_cast<Arith>(y)); });
  } else if (op == MPI_PROD) {
    each([](T x, T y) { return static_cast<T>(static_cast<Arith>(x) * static_cast<Arith>(y)); });
  } else if (op == MPI_MAX) {
    each([](T x, T y) { return x > y ? x : y; });
  } else if (op == MPI_MIN) {
    each([](T x, T y) { return x < y ? x : y; });
  } else if (op == MPI_LAND) {
    each([](T x, T y) { return static_cast<T>((x != 0) && (y != 0)); });
  } else if (op == MPI_LOR) {
    each([](T x, T y) { return static_cast<T>((x != 0) || (y != 0)); });
  } else if (op == MPI_LXOR) {
    each([](T x, T y) { return static_cast<T>((x != 0) != (y != 0)); });
  } else if constexpr (std::is_integral_v<T>) {
    if (op == MPI_BAND) {
      each([](T x, T y) { return static_cast<T>(x & y); });
    } else if (op == MPI_BOR) {
      each([](T x, T y) { return static_cast<T>(x | y); });
    } else if (op == MPI_BXOR) {
      each([](T x, T y) { return static_cast<T>(x ^ y); });
    } else {
      return false;
    }
  } else {
    return false;
  }
  return true;
}

// The size of a predefined integer type's C type, without asking MPI; 0 for any other
// type.
size_t integer_size(MPI_Datatype t) {
  if (one_of(t, {MPI_INT8_T, MPI_UINT8_T, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR})) return 1;
  if (one_of(t, {MPI_INT16_T, MPI_UINT16_T})) return 2;
  if (one_of(t, {MPI_INT32_T, MPI_UINT32_T})) return 4;
  if (one_of(t, {MPI_INT64_T, MPI_UINT64_T})) return 8;
  if (one_of(t, {MPI_SHORT, MPI_UNSIGNED_SHORT})) return sizeof(short);
  if (one_of(t, {MPI_INT, MPI_UNSIGNED})) return sizeof(int);
  if (one_of(t, {MPI_LONG, MPI_UNSIGNED_LONG})) return sizeof(long);
  if (one_of(t, {MPI_LONG_LONG_INT, MPI_UNSIGNED_LONG_LONG})) return sizeof(long long);
  if (t == MPI_AINT) return sizeof(MPI_Aint);
  if (t == MPI_OFFSET) return sizeof(MPI_Offset);
  if (t == MPI_COUNT) return sizeof(MPI_Count);
  return 0;
}

// The C type behind a predefined integer or floating MPI type, by size and kind.
template <class Call>
bool dispatch(MPI_Datatype t, Call&& call) {
  if (is_floating(t) && t != MPI_LONG_DOUBLE) {
    return t == MPI_FLOAT ? call(float{}) : call(double{});
  }
  const size_t size = integer_size(t);
  if (size == 0) return false;
  const bool is_unsigned =
      one_of(t, {MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_UNSIGNED_LONG, MPI_UNSIGNED_LONG_LONG,
                 MPI_UNSIGNED_CHAR, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T});
  switch (size) {
    case 1:
      return is_unsigned ? call(uint8_t{}) : call(int8_t{});
    case 2:
      return is_unsigned ? call(uint16_t{}) : call(int16_t{});
    case 4:
      return is_unsigned ? call(uint32_t{}) : call(int32_t{});
    case 8:
      return is_unsigned ? call(uint64_t{}) : call(int64_t{});
    default:
      return false;
  }
}

}  // namespace

bool reduce_builtin(const void* in, void* target, int64_t n, MPI_Datatype t, MPI_Op op) {
  const char* x = static_cast<const char*>(in);
  char* acc = static_cast<char*>(target);
  // The same pointer for b and out: the compiler sees the in-place form.
  return dispatch(t, [&](auto tag) { return reduce_typed<decltype(tag)>(x, acc, acc, n, op); });
}

bool reduce_builtin3(const void* a, const void* b, void* out, int64_t n, MPI_Datatype t,
                     MPI_Op op) {
  return dispatch(t, [&](auto tag) {
    return reduce_typed<decltype(tag)>(static_cast<const char*>(a), static_cast<const char*>(b),
                                       static_cast<char*>(out), n, op);
  });
}

}  // namespace ep::runtime
