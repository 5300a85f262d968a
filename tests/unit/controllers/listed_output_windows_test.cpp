// One list's output windows, run by run: whatever order the list names the
// runs in, the runs holding their output after each step are exactly the
// newest contextRuns of those listed so far, each run is pushed out at most
// once, and the end agrees with the run index.
#include "controllers/shell/listed_output_windows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "controllers/model/run_view.h"
#include "controllers/shell/run_index.h"

namespace hb::controllers {
namespace {

const TimePoint kT0 = TimePoint{} + std::chrono::hours(24 * 365 * 56);

struct ListedRun {
  std::string name;
  TimePoint finished_at;
};

// The newest `window` of `runs`, by name.
std::set<std::string> newest(std::vector<ListedRun> runs, int window) {
  std::sort(runs.begin(), runs.end(), [](const ListedRun& a, const ListedRun& b) {
    return finished_after(a.finished_at, a.name, b.finished_at, b.name);
  });
  std::set<std::string> out;
  for (int i = 0; i < window && i < static_cast<int>(runs.size()); ++i) out.insert(runs[i].name);
  return out;
}

// 16 runs whose names do not follow their finish order; some finish in the
// same second (the later name is the newer then).
std::vector<ListedRun> history(std::mt19937& rng) {
  std::vector<ListedRun> runs;
  for (int i = 0; i < 16; ++i) {
    const std::string name = "bot-" + std::string(i < 10 ? "0" : "") + std::to_string(i);
    runs.push_back({name, kT0 + std::chrono::seconds(static_cast<int>(rng() % 10))});
  }
  std::shuffle(runs.begin(), runs.end(), rng);
  return runs;
}

TEST(ListedOutputWindows, HoldsTheNewestOfWhatIsListedSoFarInAnyListOrder) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int window = static_cast<int>(trial % 5);  // 0 .. 4, 0 keeps no output
    const std::vector<ListedRun> runs = history(rng);
    ListedOutputWindows windows;
    std::set<std::string> holding, pushed_out_ever;
    std::vector<ListedRun> listed;
    for (const ListedRun& r : runs) {
      const auto admission = windows.admit("ns/bot", r.name, r.finished_at, window);
      listed.push_back(r);
      if (admission.in_window) holding.insert(r.name);
      if (admission.pushed_out) {
        EXPECT_EQ(holding.erase(*admission.pushed_out), 1u) << *admission.pushed_out;
        EXPECT_TRUE(pushed_out_ever.insert(*admission.pushed_out).second);
      }
      ASSERT_EQ(holding, newest(listed, window)) << "trial " << trial << " after " << r.name;
    }
    // The run index, given every run, picks the same ones.
    RunIndex index;
    index.set_context_runs("ns/bot", window);
    for (const ListedRun& r : runs)
      index.set("ns/bot", r.name, IndexedRun{r.finished_at, true, true});
    const std::vector<std::string> past_window = index.outputs_past_window("ns/bot");
    const std::set<std::string> past(past_window.begin(), past_window.end());
    for (const ListedRun& r : runs) EXPECT_EQ(holding.count(r.name) == 1, past.count(r.name) == 0);
  }
}

TEST(ListedOutputWindows, AnAgentNotKnownKeepsEveryOutputAndAgentsAreApart) {
  ListedOutputWindows windows;
  for (int i = 0; i < 30; ++i) {
    const auto a = windows.admit("ns/unknown", "u-" + std::to_string(i), kT0, std::nullopt);
    EXPECT_TRUE(a.in_window);
    EXPECT_FALSE(a.pushed_out);
  }
  EXPECT_TRUE(windows.admit("ns/a", "a-1", kT0, 1).in_window);
  EXPECT_TRUE(windows.admit("ns/b", "b-1", kT0, 1).in_window);  // another agent's window
  const auto newer = windows.admit("ns/a", "a-2", kT0 + std::chrono::seconds(1), 1);
  EXPECT_TRUE(newer.in_window);
  EXPECT_EQ(newer.pushed_out, "a-1");
  EXPECT_FALSE(windows.admit("ns/a", "a-0", kT0 - std::chrono::seconds(1), 1).in_window);
  // A negative contextRuns (clamped by the cache anyway) keeps none.
  EXPECT_FALSE(windows.admit("ns/c", "c-1", kT0, -3).in_window);
}

}  // namespace
}  // namespace hb::controllers
