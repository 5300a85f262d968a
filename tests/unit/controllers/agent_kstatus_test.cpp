// What Flux (kstatus) concludes about an Agent in each state the operator
// writes: a state the user chose (paused, over budget, paused by the agent,
// manual runs only) is Current and Ready; a problem only a person can fix is
// Failed (Stalled) and not Ready; a generation the operator has not acted on
// is InProgress.
#include <gtest/gtest.h>

#include "controllers/agent/agent_conditions.h"
#include "tests/support/kstatus.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using hb::testing::kstatus_of;
using namespace hb::controllers::testing;

struct Case {
  const char* name;
  Json agent;
  std::vector<Json> runs;
  const char* kstatus;       // what kstatus says
  const char* ready;         // Ready's status
  const char* ready_reason;  // and reason
};

Json with_spec(Json a, const char* key, Json value) {
  a["spec"][key] = std::move(value);
  return a;
}

Json failed_run(const char* reason, const char* message) {
  return with_status(
      run("bot-1", "scheduler", std::nullopt, "2024-05-01T12:05:00Z"),
      {{"phase", "Failed"}, {"reason", reason}, {"message", message}, {"costRecorded", true}});
}

// The next slot's run, made after the failed one: still going, or done.
Json next_run(Json status) {
  return with_status(run("bot-2", "scheduler", std::nullopt, "2024-05-01T12:06:00Z"),
                     std::move(status));
}

std::vector<Case> cases() {
  Json over_budget = with_spec(agent(), "budget", {{"monthlyCents", 10}});
  over_budget["status"] = {{"spend", {{"cents", 12}, {"period", "2024-05"}}}};
  Json paused_by_agent = agent();
  paused_by_agent["status"] = {{"pausedUntil", "2024-05-01T13:00:00Z"}};
  Json manual_only = agent();
  manual_only["spec"]["heartbeat"].erase("interval");
  return {
      {"scheduled", agent(), {}, "Current", "True", "Ready"},
      {"paused by the board", with_spec(agent(), "paused", true), {}, "Current", "True", "Paused"},
      {"paused by the agent", paused_by_agent, {}, "Current", "True", "PausedByAgent"},
      {"over budget", over_budget, {}, "Current", "True", "BudgetExceeded"},
      {"manual runs only", manual_only, {}, "Current", "True", "Ready"},
      {"invalid spec",
       with_spec(agent(), "type", "no_such_type"),
       {},
       "Failed",
       "False",
       "InvalidSpec"},
      {"missing API key",
       agent(),
       {failed_run("ContainerConfigError", "couldn't find key api-key in Secret ns/llm")},
       "Failed",
       "False",
       "ContainerConfigError"},
      {"missing API key, the next run stuck at the same step",
       agent(),
       {failed_run("ContainerConfigError", "couldn't find key api-key in Secret ns/llm"),
        next_run({{"phase", "Running"}, {"jobName", "bot-2"}})},
       "Failed",
       "False",
       "ContainerConfigError"},
      {"missing API key, then a run that got past it",
       agent(),
       {failed_run("ContainerConfigError", "couldn't find key api-key in Secret ns/llm"),
        next_run({{"phase", "Succeeded"}, {"costRecorded", true}})},
       "Current",
       "True",
       "Ready"},
      {"missing prompt ConfigMap",
       agent(),
       {failed_run("PromptNotFound", "ConfigMap ns/prompts not found")},
       "Failed",
       "False",
       "PromptNotFound"},
      {"context too large",
       agent(),
       {failed_run("ContextTooLarge", "the run's context document would be 1048600 bytes")},
       "Failed",
       "False",
       "ContextTooLarge"},
      {"a run failed for another reason",
       agent(),
       {failed_run("Stalled", "no beat for 300s")},
       "Current",
       "True",
       "Ready"},
  };
}

TEST(AgentKStatus, EachStateReadsAsAGitOpsToolShouldSeeIt) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const AgentDecision d = decide(c.agent, c.runs, at("2024-05-01T12:07:00Z"));
    Json object = c.agent;
    object["status"] = d.status_json();
    EXPECT_EQ(kstatus_of(object).status, c.kstatus) << kstatus_of(object).message;
    const Json* ready = condition(object["status"], "Ready");
    ASSERT_NE(ready, nullptr);
    EXPECT_EQ((*ready)["status"], c.ready);
    EXPECT_EQ((*ready)["reason"], c.ready_reason);
    const Json* stalled = condition(object["status"], "Stalled");
    ASSERT_NE(stalled, nullptr);
    EXPECT_EQ((*stalled)["status"] == "True", std::string(c.kstatus) == "Failed");
    const Json* reconciling = condition(object["status"], "Reconciling");
    ASSERT_NE(reconciling, nullptr);
    EXPECT_EQ((*reconciling)["status"], "False");
    for (const Json& condition : object["status"]["conditions"]) {
      EXPECT_EQ(condition["observedGeneration"], object["metadata"]["generation"]);
    }
  }
}

// A spec changed after the status was written: the stored observedGeneration
// lags, so kstatus waits for the operator rather than trusting old conditions.
TEST(AgentKStatus, AGenerationNotYetActedOnIsInProgress) {
  Json a = agent();
  a["status"] = decide(a, {}, at("2024-05-01T12:07:00Z")).status_json();
  a["metadata"]["generation"] = 2;
  EXPECT_EQ(kstatus_of(a).status, "InProgress");
  a["status"] = decide(a, {}, at("2024-05-01T12:08:00Z")).status_json();
  EXPECT_EQ(kstatus_of(a).status, "Current");
}

// Pausing keeps Ready True (no Resumed on the way in); lifting the pause
// raises Resumed once, and a stall fixed by a newer run does too.
TEST(AgentKStatus, ResumedFollowsTheEndOfAPauseOrAStall) {
  Json a = with_spec(agent(), "paused", true);
  a["status"] = decide(a, {}, at("2024-05-01T12:07:00Z")).status_json();
  a["spec"]["paused"] = false;
  AgentDecision d = decide(a, {}, at("2024-05-01T12:08:00Z"));
  EXPECT_TRUE(has_event(d, "Resumed"));
  a["status"] = d.status_json();
  EXPECT_FALSE(has_event(decide(a, {}, at("2024-05-01T12:09:00Z")), "Resumed"));

  const std::vector<Json> broken = {failed_run("PromptNotFound", "ConfigMap ns/prompts")};
  a["status"] = decide(a, broken, at("2024-05-01T12:10:00Z")).status_json();
  EXPECT_EQ(kstatus_of(a).status, "Failed");
  const Json fixed = with_status(run("bot-2", "scheduler", std::nullopt, "2024-05-01T12:11:00Z"),
                                 {{"phase", "Succeeded"}, {"costRecorded", true}});
  d = decide(a, {broken[0], fixed}, at("2024-05-01T12:12:00Z"));
  EXPECT_TRUE(has_event(d, "Resumed"));
  a["status"] = d.status_json();
  EXPECT_EQ(kstatus_of(a).status, "Current");
}

// Creation times have one-second resolution: a run made in the same second
// as the failed one that got further ends the stall, whatever the list order.
TEST(AgentKStatus, ARunOfTheSameSecondThatGotFurtherEndsTheStall) {
  const Json broken = failed_run("PromptNotFound", "ConfigMap ns/prompts");
  const Json fixed = with_status(run("bot-0", "manual", std::nullopt, "2024-05-01T12:05:00Z"),
                                 {{"phase", "Succeeded"}, {"costRecorded", true}});
  for (const std::vector<Json>& runs : {std::vector<Json>{broken, fixed}, {fixed, broken}}) {
    Json a = agent();
    a["status"] = decide(a, runs, at("2024-05-01T12:06:00Z")).status_json();
    EXPECT_EQ(kstatus_of(a).status, "Current");
  }
}

TEST(KStatusRules, FollowTheDocumentedOrder) {
  Json o = {{"metadata", {{"generation", 3}}}, {"status", {{"observedGeneration", 3}}}};
  EXPECT_EQ(kstatus_of(o).status, "Current");
  o["status"]["conditions"] = {{{"type", "Stalled"}, {"status", "True"}}};
  EXPECT_EQ(kstatus_of(o).status, "Failed");
  o["status"]["conditions"] = {{{"type", "Reconciling"}, {"status", "True"}},
                               {{"type", "Stalled"}, {"status", "True"}}};
  EXPECT_EQ(kstatus_of(o).status, "InProgress");
  o["status"]["observedGeneration"] = 2;
  o["status"]["conditions"] = Json::array();
  EXPECT_EQ(kstatus_of(o).status, "InProgress");
  o["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z";
  EXPECT_EQ(kstatus_of(o).status, "Terminating");
}

}  // namespace
}  // namespace hb::controllers

namespace hb::controllers {
namespace {

RunObservation observed(const char* name, const char* created, RunPhase phase, const char* reason,
                        bool runner_started) {
  RunView view;
  view.name = name;
  view.created = at(created);
  view.phase = phase;
  view.reason = reason;
  RunObservation out;
  out.view = std::make_shared<const RunView>(view);
  out.phase = phase;
  out.runner_started = runner_started;
  return out;
}

// A newer run clears a missing Secret's Stalled only once its runner
// container started; a newer run's Job alone is past a missing prompt.
TEST(AgentConditions, StalledClearsOnlyPastTheStepThatFailed) {
  std::vector<RunObservation> runs = {
      observed("bot-1", "2024-05-01T12:05:00Z", RunPhase::kFailed, "ContainerConfigError", false),
      observed("bot-2", "2024-05-01T12:06:00Z", RunPhase::kRunning, "", false)};
  ASSERT_TRUE(newest_run_problem(runs));
  EXPECT_EQ(newest_run_problem(runs)->reason, "ContainerConfigError");
  runs[1].runner_started = true;
  EXPECT_FALSE(newest_run_problem(runs));

  runs = {observed("bot-1", "2024-05-01T12:05:00Z", RunPhase::kFailed, "PromptNotFound", false),
          observed("bot-2", "2024-05-01T12:06:00Z", RunPhase::kCancelled, "", false)};
  EXPECT_TRUE(newest_run_problem(runs)) << "a cancelled run proves nothing";
}

}  // namespace
}  // namespace hb::controllers
