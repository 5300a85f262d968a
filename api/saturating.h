// Integer sums and products that stop at the ends of int64 instead of
// overflowing. Counts and tokens are added up from reports the operator does
// not control (a runner's usage, a tenant's budget); a wrapped sum would turn
// a huge spend negative and let it pass every budget, where a pinned one only
// overstates it. One definition for the operator and the contract. Pure.
#pragma once

#include <cstdint>
#include <limits>

namespace hb::api {

// a + b, or the int64 end it passed (the maximum upward, the minimum downward).
constexpr int64_t saturating_add(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return out;
}

// a x b, or the int64 end it passed (by the sign the true product has).
constexpr int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) {
    return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min()
                              : std::numeric_limits<int64_t>::max();
  }
  return out;
}

}  // namespace hb::api
