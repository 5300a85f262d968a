// The one saturating sum and product (api/saturating.h): exact inside int64,
// pinned to the end passed outside it, in both directions.
#include "api/saturating.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace hb::api {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

static_assert(saturating_add(kMax, 1) == kMax, "usable in constant expressions");

TEST(SaturatingAdd, IsExactInsideTheRange) {
  EXPECT_EQ(saturating_add(2, 3), 5);
  EXPECT_EQ(saturating_add(-2, 3), 1);
  EXPECT_EQ(saturating_add(2, -3), -1);
  EXPECT_EQ(saturating_add(-2, -3), -5);
  EXPECT_EQ(saturating_add(kMax, 0), kMax);
  EXPECT_EQ(saturating_add(kMin, 0), kMin);
  EXPECT_EQ(saturating_add(kMax, kMin), -1);
  EXPECT_EQ(saturating_add(kMax - 1, 1), kMax);
  EXPECT_EQ(saturating_add(kMin + 1, -1), kMin);
}

TEST(SaturatingAdd, PinsAtTheMaximumUpward) {
  EXPECT_EQ(saturating_add(kMax, 1), kMax);
  EXPECT_EQ(saturating_add(1, kMax), kMax);
  EXPECT_EQ(saturating_add(kMax, kMax), kMax);
  EXPECT_EQ(saturating_add(kMax / 2 + 1, kMax / 2 + 1), kMax);
}

TEST(SaturatingAdd, PinsAtTheMinimumDownward) {
  EXPECT_EQ(saturating_add(kMin, -1), kMin);
  EXPECT_EQ(saturating_add(-1, kMin), kMin);
  EXPECT_EQ(saturating_add(kMin, kMin), kMin);
  EXPECT_EQ(saturating_add(-5, kMin + 3), kMin);
}

TEST(SaturatingMul, IsExactInsideTheRangeAndPinsByTheTrueSign) {
  EXPECT_EQ(saturating_mul(6, 7), 42);
  EXPECT_EQ(saturating_mul(-6, 7), -42);
  EXPECT_EQ(saturating_mul(0, kMin), 0);
  EXPECT_EQ(saturating_mul(kMax, 2), kMax);
  EXPECT_EQ(saturating_mul(kMax, -2), kMin);
  EXPECT_EQ(saturating_mul(kMin, -1), kMax);
  EXPECT_EQ(saturating_mul(kMin, kMin), kMax);
}

}  // namespace
}  // namespace hb::api
