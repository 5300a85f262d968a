// HB_ASSERT stays on where the standard assert is compiled out: this file
// defines NDEBUG itself (its own test binary, so no other file sees it), as
// every Release and RelWithDebInfo build does.
#ifndef NDEBUG
#define NDEBUG
#endif

#include "api/hb_assert.h"

#include <gtest/gtest.h>

#include <cassert>

namespace {

TEST(HbAssertTest, StandardAssertIsCompiledOutHere) {
  int evaluated = 0;
  assert(++evaluated == 100);
  EXPECT_EQ(evaluated, 0);
}

TEST(HbAssertTest, TrueConditionPassesAndIsEvaluatedOnce) {
  int evaluated = 0;
  HB_ASSERT(++evaluated == 1);
  HB_ASSERT_MSG(++evaluated == 2, "counts twice");
  EXPECT_EQ(evaluated, 2);
}

TEST(HbAssertDeathTest, FalseConditionAbortsWithPlaceAndExpression) {
  const int cents = -1;
  EXPECT_DEATH(HB_ASSERT(cents >= 0), "hb_assert_test\\.cpp:[0-9]+: assertion failed: cents >= 0");
}

TEST(HbAssertDeathTest, MessageFollowsTheExpression) {
  const int cap = 3;
  EXPECT_DEATH(HB_ASSERT_MSG(cap < 2, "the gate never passes its cap"),
               "assertion failed: cap < 2: the gate never passes its cap");
}

}  // namespace
