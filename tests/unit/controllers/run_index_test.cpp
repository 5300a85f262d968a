// The cache's index from an agent to its runs and whether each is settled.
#include "controllers/shell/run_index.h"

#include <gtest/gtest.h>

namespace hb::controllers {
namespace {

TEST(RunIndex, TellsWhenARunHasJustSettledAndListsNamesSorted) {
  RunIndex index;
  EXPECT_FALSE(index.set("ns/a", "a-3", false));
  EXPECT_FALSE(index.set("ns/a", "a-1", false));
  EXPECT_TRUE(index.set("ns/a", "a-2", true));  // first seen settled: it has just settled
  EXPECT_EQ(index.names("ns/a"), (std::vector<std::string>{"a-1", "a-2", "a-3"}));
  EXPECT_TRUE(index.set("ns/a", "a-1", true));
  EXPECT_FALSE(index.set("ns/a", "a-1", true));  // already settled
  EXPECT_TRUE(index.settled("ns/a", "a-1"));
  EXPECT_FALSE(index.settled("ns/a", "a-3"));
  EXPECT_FALSE(index.settled("ns/a", "a-9"));  // not indexed
  EXPECT_FALSE(index.settled("ns/b", "a-1"));  // another agent
  EXPECT_TRUE(index.names("ns/b").empty());
}

TEST(RunIndex, ErasingTheLastRunForgetsTheAgent) {
  RunIndex index;
  index.set("ns/a", "a-1", true);
  index.set("ns/a", "a-2", false);
  index.erase("ns/a", "a-1");
  index.erase("ns/a", "a-1");  // twice: nothing
  index.erase("ns/x", "a-2");  // another agent: nothing
  EXPECT_EQ(index.names("ns/a"), (std::vector<std::string>{"a-2"}));
  index.erase("ns/a", "a-2");
  EXPECT_TRUE(index.names("ns/a").empty());
  EXPECT_FALSE(index.set("ns/a", "a-2", false));  // indexed again from nothing
  EXPECT_EQ(index.names("ns/a"), (std::vector<std::string>{"a-2"}));
}

}  // namespace
}  // namespace hb::controllers
