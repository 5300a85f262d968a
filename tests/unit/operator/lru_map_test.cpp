// The edge's bounded maps: a key used again is kept, the least recently used
// one gives way, and the size never passes the bound.
#include "operator/lru_map.h"

#include <gtest/gtest.h>

#include <string>

namespace hb::operator_ {
namespace {

TEST(LruMap, TheLeastRecentlyUsedKeyGivesWayAndTheBoundHolds) {
  LruMap<std::string, int> map(2);
  map.touch("a") = 1;
  map.touch("b") = 2;
  map.touch("a");      // a is now the most recent
  map.touch("c") = 3;  // b gives way
  EXPECT_EQ(map.size(), 2u);
  EXPECT_EQ(map.find("b"), nullptr);
  ASSERT_NE(map.find("a"), nullptr);
  EXPECT_EQ(*map.find("a"), 1);
  EXPECT_EQ(map.least_recent(), 1);  // find did not reorder: a is older than c
  map.pop_least_recent();
  EXPECT_EQ(map.find("a"), nullptr);
  for (int i = 0; i < 1000; ++i) map.touch(std::to_string(i), i);
  EXPECT_EQ(map.size(), 2u);
  EXPECT_EQ(*map.find("999"), 999);
  EXPECT_EQ(map.touch("new", 7), 7);  // a fresh key takes the given value
}

}  // namespace
}  // namespace hb::operator_
