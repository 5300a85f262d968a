// The cache's index from an agent to its runs: whether each is settled, and
// which settled runs' outputs are within the agent's context window.
#include "controllers/shell/run_index.h"

#include <gtest/gtest.h>

#include <set>

namespace hb::controllers {
namespace {

const IndexedRun kOpen{};
const TimePoint kT0 = TimePoint{} + std::chrono::hours(24 * 365 * 56);

IndexedRun settled_at(int minute, bool output_kept = true) {
  return IndexedRun{kT0 + std::chrono::minutes(minute), true, output_kept};
}

TEST(RunIndex, TellsWhenARunHasJustSettledAndListsNamesSorted) {
  RunIndex index;
  EXPECT_FALSE(index.set("ns/a", "a-3", kOpen));
  EXPECT_FALSE(index.set("ns/a", "a-1", kOpen));
  EXPECT_TRUE(index.set("ns/a", "a-2", settled_at(2)));  // first seen settled: it has just settled
  EXPECT_EQ(index.names("ns/a"), (std::vector<std::string>{"a-1", "a-2", "a-3"}));
  EXPECT_TRUE(index.set("ns/a", "a-1", settled_at(1)));
  EXPECT_FALSE(index.set("ns/a", "a-1", settled_at(1)));  // already settled
  EXPECT_TRUE(index.settled("ns/a", "a-1"));
  EXPECT_FALSE(index.settled("ns/a", "a-3"));
  EXPECT_FALSE(index.settled("ns/a", "a-9"));  // not indexed
  EXPECT_FALSE(index.settled("ns/b", "a-1"));  // another agent
  EXPECT_TRUE(index.names("ns/b").empty());
}

TEST(RunIndex, ErasingTheLastRunForgetsTheAgent) {
  RunIndex index;
  index.set("ns/a", "a-1", settled_at(1));
  index.set("ns/a", "a-2", kOpen);
  index.erase("ns/a", "a-1");
  index.erase("ns/a", "a-1");  // twice: nothing
  index.erase("ns/x", "a-2");  // another agent: nothing
  EXPECT_EQ(index.names("ns/a"), (std::vector<std::string>{"a-2"}));
  index.erase("ns/a", "a-2");
  EXPECT_TRUE(index.names("ns/a").empty());
  EXPECT_FALSE(index.set("ns/a", "a-2", kOpen));  // indexed again from nothing
  EXPECT_EQ(index.names("ns/a"), (std::vector<std::string>{"a-2"}));
}

// Until the agent is cached its window is unknown: every output is kept.
TEST(RunIndex, AnAgentNotCachedKeepsEveryOutput) {
  RunIndex index;
  for (int m = 0; m < 6; ++m) index.set("ns/a", "a-" + std::to_string(m), settled_at(m));
  EXPECT_TRUE(index.in_output_window("ns/a", "a-0", kT0));
  EXPECT_TRUE(index.outputs_past_window("ns/a").empty());
  EXPECT_TRUE(index.set_context_runs("ns/a", 2));  // known now: a window at all lowers it
  EXPECT_EQ(index.outputs_past_window("ns/a"),
            (std::vector<std::string>{"a-0", "a-1", "a-2", "a-3"}));
  EXPECT_FALSE(index.in_output_window("ns/a", "a-3", kT0 + std::chrono::minutes(3)));
  EXPECT_TRUE(index.in_output_window("ns/a", "a-4", kT0 + std::chrono::minutes(4)));
}

// The window is the newest contextRuns settled runs by finish time (not by
// name), ties broken by name; runs not settled do not count.
TEST(RunIndex, TheWindowIsTheNewestSettledRunsByFinishTime) {
  RunIndex index;
  index.set_context_runs("ns/a", 2);
  index.set("ns/a", "a-9", settled_at(1));  // the name sorts last, it finished first
  index.set("ns/a", "a-1", settled_at(5));
  index.set("ns/a", "a-2", settled_at(5));  // the same second as a-1: a-2 is the later
  index.set("ns/a", "a-3", kOpen);          // running: not in the count
  EXPECT_EQ(index.outputs_past_window("ns/a"), (std::vector<std::string>{"a-9"}));
  EXPECT_FALSE(index.in_output_window("ns/a", "a-0", kT0 + std::chrono::minutes(5)));
  EXPECT_TRUE(index.in_output_window("ns/a", "a-5", kT0 + std::chrono::minutes(6)));
  index.set_output_kept("ns/a", "a-9", false);  // dropped: nothing left past the window
  EXPECT_TRUE(index.outputs_past_window("ns/a").empty());
  // A newer run settles: a-1 falls out.
  index.set("ns/a", "a-3", settled_at(7));
  EXPECT_EQ(index.outputs_past_window("ns/a"), (std::vector<std::string>{"a-1"}));
}

TEST(RunIndex, RaisingTheWindowDropsNothingAndLoweringItDoes) {
  RunIndex index;
  EXPECT_TRUE(index.set_context_runs("ns/a", 3));
  for (int m = 0; m < 4; ++m) index.set("ns/a", "a-" + std::to_string(m), settled_at(m));
  index.set_output_kept("ns/a", "a-0", false);
  EXPECT_FALSE(index.set_context_runs("ns/a", 5));  // raised: a-0 is read from the server
  EXPECT_FALSE(index.set_context_runs("ns/a", 5));  // unchanged
  EXPECT_TRUE(index.outputs_past_window("ns/a").empty());
  EXPECT_TRUE(index.set_context_runs("ns/a", 0));  // lowered to none
  EXPECT_EQ(index.outputs_past_window("ns/a"), (std::vector<std::string>{"a-1", "a-2", "a-3"}));
  EXPECT_TRUE(index.set_context_runs("ns/b", -4));  // below none: none
  EXPECT_FALSE(index.in_output_window("ns/b", "b-1", kT0));
}

// An agent deleted with its runs still cached: the window is unknown again,
// and the entry goes once the last run does.
TEST(RunIndex, ForgettingTheAgentKeepsItsRunsUntilTheyGo) {
  RunIndex index;
  index.set_context_runs("ns/a", 1);
  index.set("ns/a", "a-1", settled_at(1));
  index.set("ns/a", "a-2", settled_at(2));
  EXPECT_FALSE(index.set_context_runs("ns/a", std::nullopt));
  EXPECT_TRUE(index.outputs_past_window("ns/a").empty());
  EXPECT_EQ(index.names("ns/a").size(), 2u);
  index.erase("ns/a", "a-1");
  index.erase("ns/a", "a-2");
  EXPECT_TRUE(index.names("ns/a").empty());
  EXPECT_FALSE(index.set_context_runs("ns/z", std::nullopt));  // never seen: nothing
}

// Names are kept back to back per agent; erasing leaves dead bytes until
// they are half, then the names are packed again. Every lookup stays right
// through inserts in any order, erases and packs.
TEST(RunIndex, NamesStayRightThroughErasesAndPacking) {
  RunIndex index;
  std::set<std::string> expected;
  uint32_t state = 12345;
  auto next = [&] { return state = state * 1103515245u + 12345u; };
  for (int step = 0; step < 2000; ++step) {
    const std::string name = "a-" + std::to_string(next() % 200);
    if (next() % 3 == 0) {
      index.erase("ns/a", name);
      expected.erase(name);
    } else {
      const bool settled = next() % 2 == 0;
      index.set("ns/a", name, IndexedRun{kT0, settled, settled});
      expected.insert(name);
      EXPECT_EQ(index.settled("ns/a", name), settled);
    }
    ASSERT_EQ(index.names("ns/a"), std::vector<std::string>(expected.begin(), expected.end()))
        << "step " << step;
  }
}

// Runs named "<agent>-..." are kept without that prefix; one named
// otherwise puts it back on all of them. Neither shows outside.
TEST(RunIndex, KeepsNamesWithoutTheAgentsPrefixAndPutsItBackForOneWithout) {
  RunIndex index;
  index.set("ns/a", "a-3", settled_at(3));
  index.set("ns/a", "a-1", settled_at(1));
  EXPECT_EQ(index.names("ns/a"), (std::vector<std::string>{"a-1", "a-3"}));
  EXPECT_TRUE(index.settled("ns/a", "a-1"));
  EXPECT_FALSE(index.settled("ns/a", "1"));                 // what is kept is not a name
  EXPECT_TRUE(index.in_output_window("ns/a", "a-0", kT0));  // no window yet: all kept
  index.set_context_runs("ns/a", 1);
  EXPECT_FALSE(index.in_output_window("ns/a", "a-2", kT0 + std::chrono::minutes(3)));
  EXPECT_TRUE(index.in_output_window("ns/a", "a-4", kT0 + std::chrono::minutes(3)));
  // A name without the prefix ties with a-3 by the full names ("a-3" is
  // after "3x"), not by what is kept of a-3 ("3").
  EXPECT_FALSE(index.in_output_window("ns/a", "3x", kT0 + std::chrono::minutes(3)));
  EXPECT_TRUE(index.in_output_window("ns/a", "3x", kT0 + std::chrono::minutes(4)));
  index.set("ns/a", "manual", settled_at(2));  // no prefix: every name gets it back
  EXPECT_EQ(index.names("ns/a"), (std::vector<std::string>{"a-1", "a-3", "manual"}));
  EXPECT_TRUE(index.settled("ns/a", "manual"));
  EXPECT_TRUE(index.settled("ns/a", "a-3"));
  EXPECT_EQ(index.outputs_past_window("ns/a"), (std::vector<std::string>{"a-1", "manual"}));
  index.set_output_kept("ns/a", "a-1", false);
  EXPECT_EQ(index.outputs_past_window("ns/a"), (std::vector<std::string>{"manual"}));
  for (const char* name : {"manual", "a-1", "a-3"}) index.erase("ns/a", name);
  EXPECT_TRUE(index.names("ns/a").empty());
  index.set("ns/a", "a-9", kOpen);  // from nothing: kept short again
  index.set("ns/a", "a-10", kOpen);
  index.erase("ns/a", "10");  // not a name: nothing
  EXPECT_EQ(index.names("ns/a"), (std::vector<std::string>{"a-10", "a-9"}));
  // Another agent whose name the first one's prefix begins.
  index.set("ns/ab", "a-1", kOpen);
  index.set("ns/ab", "ab-1", kOpen);
  EXPECT_EQ(index.names("ns/ab"), (std::vector<std::string>{"a-1", "ab-1"}));
}

}  // namespace
}  // namespace hb::controllers
