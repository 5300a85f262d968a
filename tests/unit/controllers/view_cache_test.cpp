// The reconciler's view cache: a view is rebuilt only when its object's
// resourceVersion moved, and views of objects that are gone are dropped.
#include "controllers/shell/view_cache.h"

#include <gtest/gtest.h>

#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;

TEST(ViewCache, ReusesViewsWhileTheResourceVersionStays) {
  ViewCache cache;
  Json a = agent();
  std::vector<Json> runs = {run("bot-1"), run("bot-2")};
  const AgentViews first = cache.views("ns/bot", a, runs);
  const AgentViews again = cache.views("ns/bot", a, runs);
  EXPECT_EQ(first.agent, again.agent);
  EXPECT_EQ(first.runs, again.runs);
  EXPECT_EQ(first.runs[1]->name, "bot-2");

  // The agent changed (its status written): a new view with the new status.
  a["status"] = {{"phase", "Running"}};
  a["metadata"]["resourceVersion"] = "101";
  runs[0]["status"] = {{"phase", "Running"}};
  runs[0]["metadata"]["resourceVersion"] = "201";
  const AgentViews changed = cache.views("ns/bot", a, runs);
  EXPECT_NE(changed.agent, first.agent);
  EXPECT_EQ(changed.agent->status.phase, "Running");
  EXPECT_NE(changed.runs[0], first.runs[0]);
  EXPECT_EQ(changed.runs[0]->phase, RunPhase::kRunning);
  EXPECT_EQ(changed.runs[1], first.runs[1]);  // untouched run: same view
}

// Only the most recently reconciled agents keep views: the least recent
// goes past the bound and is viewed afresh when its turn comes again.
TEST(ViewCache, KeepsOnlyTheMostRecentlyViewedAgents) {
  ViewCache cache(2);
  const Json a = agent();
  const std::vector<Json> runs = {run("bot-1")};
  const AgentViews first_a = cache.views("ns/a", a, runs);
  const AgentViews first_b = cache.views("ns/b", a, runs);
  EXPECT_EQ(cache.views("ns/a", a, runs).agent, first_a.agent);  // a is now the most recent
  (void)cache.views("ns/c", a, runs);                            // b goes
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.views("ns/a", a, runs).agent, first_a.agent);
  const AgentViews again_b = cache.views("ns/b", a, runs);  // c goes
  EXPECT_NE(again_b.agent, first_b.agent);
  EXPECT_EQ(again_b.agent->spec.spec.name, first_b.agent->spec.spec.name);  // built again
  EXPECT_EQ(again_b.agent->resource_version, first_b.agent->resource_version);
  cache.forget("ns/a");
  cache.forget("ns/a");  // twice: nothing
  EXPECT_EQ(cache.size(), 1u);
}

// Most of a fleet's runs are settled history: their views are built each
// pass and not kept, and read the same as a kept one would.
TEST(ViewCache, ViewsOfSettledRunsAreNotKept) {
  ViewCache cache;
  const Json a = agent();
  Json settled = run("bot-1");
  settled["status"] = {{"phase", "Succeeded"}, {"costRecorded", true}};
  Json uncounted = run("bot-2");
  uncounted["status"] = {{"phase", "Succeeded"}, {"costRecorded", false}};
  const std::vector<Json> runs = {settled, uncounted};
  const AgentViews first = cache.views("ns/bot", a, runs);
  const AgentViews again = cache.views("ns/bot", a, runs);
  EXPECT_NE(first.runs[0], again.runs[0]);  // built again
  EXPECT_TRUE(*first.runs[0] == *again.runs[0]);
  EXPECT_TRUE(again.runs[0]->cost_recorded);
  EXPECT_EQ(first.runs[1], again.runs[1]);  // may still change: kept
}

// An agent whose runs are all settled keeps no entry: its next pass comes
// with a write to it or at its next slot. One with a run in flight does.
TEST(ViewCache, AnAgentWithoutARunInFlightKeepsNoViews) {
  ViewCache cache;
  const Json a = agent();
  Json settled = run("bot-1");
  settled["status"] = {{"phase", "Succeeded"}, {"costRecorded", true}};
  (void)cache.views("ns/bot", a, {settled});
  EXPECT_EQ(cache.size(), 0u);
  (void)cache.views("ns/bot", a, {});
  EXPECT_EQ(cache.size(), 0u);

  const AgentViews busy = cache.views("ns/bot", a, {settled, run("bot-2")});
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.views("ns/bot", a, {settled, run("bot-2")}).agent, busy.agent);  // kept

  Json done = run("bot-2");
  done["status"] = {{"phase", "Failed"}, {"costRecorded", true}};
  done["metadata"]["resourceVersion"] = "301";
  const AgentViews idle = cache.views("ns/bot", a, {settled, done});
  EXPECT_EQ(idle.agent, busy.agent);  // reused on the way out
  EXPECT_EQ(idle.runs[1]->phase, RunPhase::kFailed);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_NE(cache.views("ns/bot", a, {settled, done}).agent, busy.agent);  // afresh
}

TEST(ViewCache, ViewsOfDeletedRunsAndAgentsAreDropped) {
  ViewCache cache;
  const Json a = agent();
  AgentViews both = cache.views("ns/bot", a, {run("bot-1"), run("bot-2")});
  const std::weak_ptr<const RunView> gone = both.runs[0];
  const AgentViews one = cache.views("ns/bot", a, {run("bot-2")});
  EXPECT_EQ(one.runs[0], both.runs[1]);
  const std::weak_ptr<const RunView> kept = both.runs[1];
  { AgentViews drop = std::move(both); }
  EXPECT_TRUE(gone.expired());  // the cache no longer holds bot-1's view
  EXPECT_FALSE(kept.expired());
  EXPECT_EQ(cache.size(), 1u);
  cache.forget("ns/bot");
  EXPECT_EQ(cache.size(), 0u);
}

TEST(ViewCache, ObjectsWithoutAResourceVersionAreViewedEveryTime) {
  ViewCache cache;
  Json a = agent();
  a["metadata"].erase("resourceVersion");
  const AgentViews first = cache.views("ns/bot", a, {});
  const AgentViews second = cache.views("ns/bot", a, {});
  EXPECT_NE(first.agent, second.agent);
}

}  // namespace
}  // namespace hb::controllers
