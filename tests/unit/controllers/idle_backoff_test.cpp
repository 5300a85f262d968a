// Idle backoff (spec.heartbeat.idleBackoff): the pure parts as tables, then
// the Agent decision on a fake clock as idle runs come and go.
#include "controllers/model/idle_backoff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/model/agent_spec.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;
using ::testing::HasSubstr;

Json with_backoff(Json backoff, const char* interval = "5m") {
  Json a = agent();
  a["spec"]["heartbeat"]["interval"] = interval;
  a["spec"]["heartbeat"]["idleBackoff"] = std::move(backoff);
  return a;
}

TEST(IdleBackoffSpec, DefaultsAreThreeRunsEightIntervalsAndHeartbeatOk) {
  const SpecCheck check = parse_agent_spec(with_backoff(Json::object()));
  ASSERT_TRUE(check.valid()) << check.message();
  ASSERT_TRUE(check.spec.idle_backoff);
  EXPECT_EQ(check.spec.idle_backoff->after, 3);
  EXPECT_EQ(check.spec.idle_backoff->max_interval_seconds, 8 * 300);
  EXPECT_EQ(check.spec.idle_backoff->idle_token, "HEARTBEAT_OK");
  EXPECT_FALSE(parse_agent_spec(agent()).spec.idle_backoff) << "off by default";
}

TEST(IdleBackoffSpec, BadFieldsAreNamedWithTheFix) {
  struct Case {
    Json agent;
    const char* error;
  };
  Json cron = with_backoff(Json::object());
  cron["spec"]["heartbeat"].erase("interval");
  cron["spec"]["heartbeat"]["schedule"] = "*/5 * * * *";
  Json manual_only = with_backoff(Json::object());
  manual_only["spec"]["heartbeat"].erase("interval");
  const std::vector<Case> cases = {
      {with_backoff({{"maxInterval", "4m"}}),
       "spec.heartbeat.idleBackoff.maxInterval \"4m\": shorter than the interval 5m"},
      {with_backoff({{"maxInterval", "soon"}}), "spec.heartbeat.idleBackoff.maxInterval \"soon\""},
      {with_backoff({{"after", 0}}), "spec.heartbeat.idleBackoff.after: must be 1..1000"},
      {with_backoff({{"after", 1001}}), "spec.heartbeat.idleBackoff.after: must be 1..1000"},
      {with_backoff({{"idleToken", "  "}}), "spec.heartbeat.idleBackoff.idleToken: must be 1-64"},
      {with_backoff({{"idleToken", std::string(65, 'x')}}),
       "spec.heartbeat.idleBackoff.idleToken: must be 1-64"},
      {cron, "spec.heartbeat.idleBackoff: applies to spec.heartbeat.interval; a schedule fires"},
      {manual_only,
       "spec.heartbeat.idleBackoff: applies to spec.heartbeat.interval, which is "
       "not set"},
  };
  for (const Case& c : cases) {
    const SpecCheck check = parse_agent_spec(c.agent);
    EXPECT_THAT(check.message(), HasSubstr(c.error)) << c.agent["spec"]["heartbeat"].dump();
    EXPECT_FALSE(check.spec.idle_backoff);
  }
}

// A spread or time zone with no heartbeat at all is refused, not ignored.
TEST(IdleBackoffSpec, SpreadOrTimeZoneWithoutAHeartbeatIsNamed) {
  Json a = agent();
  a["spec"]["heartbeat"].erase("interval");
  a["spec"]["heartbeat"]["spread"] = "Auto";
  a["spec"]["heartbeat"]["timeZone"] = "Europe/Berlin";
  const std::string message = parse_agent_spec(a).message();
  EXPECT_THAT(message, HasSubstr("spec.heartbeat.spread: applies to a heartbeat"));
  EXPECT_THAT(message, HasSubstr("spec.heartbeat.timeZone: applies to a heartbeat"));
  a["spec"]["heartbeat"]["spread"] = "None";
  a["spec"]["heartbeat"].erase("timeZone");
  EXPECT_TRUE(parse_agent_spec(a).valid()) << "None is the default, so fine anywhere";
}

TEST(IdleBackoff, WhatCountsAsIdle) {
  auto result = [](const char* stop, const char* output, std::optional<int64_t> actions) {
    api::RunResult r;
    r.stop_reason = stop;
    r.output = output;
    r.action_tool_calls = actions;
    return r;
  };
  EXPECT_TRUE(result_is_idle(result("pause_heartbeats", "later", 0), "HEARTBEAT_OK", "me"));
  EXPECT_TRUE(result_is_idle(result("completed", " HEARTBEAT_OK\n", 0), "HEARTBEAT_OK", "me"));
  EXPECT_TRUE(result_is_idle(result("completed", "checked, all fine", 0), "HEARTBEAT_OK", "me"));
  EXPECT_FALSE(
      result_is_idle(result("completed", "HEARTBEAT_OK, and I fixed X", 1), "HEARTBEAT_OK", "me"));
  EXPECT_FALSE(result_is_idle(result("completed", "heartbeat_ok", 1), "HEARTBEAT_OK", "me"));
  EXPECT_FALSE(result_is_idle(result("completed", "did it", std::nullopt), "HEARTBEAT_OK", "me"))
      << "a runner that does not count actions is not idle by that rule";
  EXPECT_TRUE(result_is_idle(result("completed", "NOTHING", std::nullopt), "NOTHING", "me"));
  EXPECT_FALSE(result_is_idle(result("completed", "", std::nullopt), "", "me"));
}

// A run that acted is never idle, whatever else it did after.
TEST(IdleBackoff, ARunThatActedIsNeverIdle) {
  auto result = [](const char* stop, const char* output, std::optional<int64_t> actions) {
    api::RunResult r;
    r.stop_reason = stop;
    r.output = output;
    r.action_tool_calls = actions;
    return r;
  };
  EXPECT_FALSE(result_is_idle(result("pause_heartbeats", "later", 3), "HEARTBEAT_OK", "me"))
      << "acted, then paused";
  EXPECT_FALSE(result_is_idle(result("completed", "HEARTBEAT_OK", 2), "HEARTBEAT_OK", "me"))
      << "acted, then said the idle token";
  EXPECT_FALSE(
      result_is_idle(result("completed", "@ops the disk is full", 0), "HEARTBEAT_OK", "me"))
      << "a mention may wake another agent";
  EXPECT_FALSE(result_is_idle(result("pause_heartbeats", "ask @ops", std::nullopt), "X", "me"));
  EXPECT_TRUE(result_is_idle(result("completed", "noted @me", 0), "HEARTBEAT_OK", "me"))
      << "naming itself wakes nobody";
  EXPECT_TRUE(result_is_idle(result("completed", "mail a@ops.example", 0), "HEARTBEAT_OK", "me"))
      << "an e-mail address is no mention";
}

TEST(IdleBackoff, OnlyAnIdleSucceededScheduledRunAddsToTheStreak) {
  EXPECT_EQ(next_idle_streak(2, kSourceScheduler, RunPhase::kSucceeded, true), 3);
  EXPECT_EQ(next_idle_streak(2, kSourceScheduler, RunPhase::kSucceeded, false), 0);
  EXPECT_EQ(next_idle_streak(2, kSourceScheduler, RunPhase::kFailed, true), 0);
  EXPECT_EQ(next_idle_streak(2, kSourceManual, RunPhase::kSucceeded, true), 0);
  EXPECT_EQ(next_idle_streak(2, kSourceCallback, RunPhase::kSucceeded, true), 0);
  EXPECT_EQ(next_idle_streak(kIdleStreakMax, kSourceScheduler, RunPhase::kSucceeded, true),
            kIdleStreakMax);
}

TEST(IdleBackoff, IntervalsDoubleFromTheAfterthRunUpToTheWholeIntervalsInTheCap) {
  const IdleBackoff b{.after = 3, .max_interval_seconds = 3600, .idle_token = "x"};
  const std::vector<std::pair<int64_t, int64_t>> streak_to_intervals = {
      {0, 1}, {2, 1}, {3, 2}, {4, 4}, {5, 6}, {6, 6}, {kIdleStreakMax, 6}};
  for (auto [streak, intervals] : streak_to_intervals) {
    EXPECT_EQ(backoff_intervals(b, 600, streak), intervals) << "streak " << streak;
  }
  // A cap that is not a whole number of intervals rounds down, so a gap is
  // never longer than maxInterval and slots stay on the agent's grid.
  EXPECT_EQ(backoff_intervals({1, 25 * 60, "x"}, 600, 5), 2);
  EXPECT_EQ(backoff_intervals({1, 600, "x"}, 600, 5), 1);
}

TEST(IdleBackoffLedger, ARunMovesTheStreakExactlyOnce) {
  LedgerInput in;
  in.now = at("2024-05-01T12:30:00Z");
  in.idle_streak = 4;
  auto finished = [](const char* name, const char* source, const char* when) {
    FinishedRun f;
    f.name = name;
    f.source = source;
    f.idle = true;
    f.finished_at = at(when);
    return f;
  };
  in.finished = {finished("r2", "scheduler", "2024-05-01T12:20:00Z"),
                 finished("r1", "manual", "2024-05-01T12:10:00Z")};
  LedgerResult first = apply_ledger(in);
  EXPECT_EQ(first.idle_streak, 1) << "oldest first: the manual run resets, then r2 adds one";
  // The pass's mark writes failed: the same runs are seen again, unmarked.
  in.recent = first.recent;
  in.idle_streak = first.idle_streak;
  EXPECT_EQ(apply_ledger(in).idle_streak, 1);
}

// World::finish, then the runner's verdict as finish_run would write it.
void finish(World& w, const std::string& run, TimePoint when, bool idle) {
  w.finish(run, when, 0.5);
  (*w.find(run))["status"]["idle"] = idle;
}

std::string run_at(const char* slot) {
  return "bot-" + std::to_string(schedule::unix_seconds(at(slot)));
}

// One scheduled heartbeat: the slot's pass, the run ending a minute later
// idle or not, and the pass that counts it.
AgentDecision heartbeat(World& w, const char* slot, bool idle) {
  w.step(at(slot));
  const TimePoint done = at(slot) + 1min;
  finish(w, run_at(slot), done, idle);
  return w.step(done);
}

TEST(IdleBackoffDecision, AnIdleAgentsGapDoublesAndAnActingRunResetsIt) {
  World w{with_backoff({{"after", 2}, {"maxInterval", "20m"}})};
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_EQ(d.status_json()["idleStreak"], 0);
  EXPECT_EQ(d.status_json()["effectiveInterval"], "5m");
  finish(w, run_at("2024-05-01T12:05:00Z"), at("2024-05-01T12:06:00Z"), true);
  d = w.step(at("2024-05-01T12:06:00Z"));
  EXPECT_EQ(d.status_json()["idleStreak"], 1);
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:10:00Z");

  d = heartbeat(w, "2024-05-01T12:10:00Z", true);
  EXPECT_EQ(d.status_json()["idleStreak"], 2);
  EXPECT_EQ(d.status_json()["effectiveInterval"], "10m");
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:20:00Z");
  EXPECT_EQ(*d.requeue_at, at("2024-05-01T12:20:00Z"));
  d = w.step(at("2024-05-01T12:15:00Z"));
  EXPECT_FALSE(d.create_run) << "12:15 is backed off, neither run nor missed";
  EXPECT_FALSE(has_event(d, "MissedSchedule"));

  d = heartbeat(w, "2024-05-01T12:20:00Z", true);
  EXPECT_EQ(d.status_json()["effectiveInterval"], "20m");
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:40:00Z");

  d = heartbeat(w, "2024-05-01T12:40:00Z", true);
  EXPECT_EQ(d.status_json()["idleStreak"], 4);
  EXPECT_EQ(d.status_json()["effectiveInterval"], "20m") << "capped at maxInterval";
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T13:00:00Z");

  d = heartbeat(w, "2024-05-01T13:00:00Z", false);
  EXPECT_EQ(d.status_json()["idleStreak"], 0);
  EXPECT_EQ(d.status_json()["effectiveInterval"], "5m");
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T13:05:00Z");
}

TEST(IdleBackoffDecision, ASpecChangeStartsTheCountAgain) {
  Json a = with_backoff({{"after", 1}});
  a["status"] = {
      {"observedGeneration", 1}, {"lastScheduleTime", "2024-05-01T12:05:00Z"}, {"idleStreak", 3}};
  World w{a};
  AgentDecision d = w.step(at("2024-05-01T12:06:00Z"));
  EXPECT_EQ(d.status_json()["effectiveInterval"], "40m");
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:45:00Z");
  w.agent["metadata"]["generation"] = 2;
  w.agent["spec"]["heartbeat"]["prompt"] = "A new prompt: look again.";
  d = w.step(at("2024-05-01T12:07:00Z"));
  EXPECT_EQ(d.status_json()["idleStreak"], 0);
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:10:00Z");
}

TEST(IdleBackoffDecision, AHandEditedStreakIsClampedAndRewritten) {
  Json a = with_backoff(Json::object());
  a["status"] = {{"observedGeneration", 1}, {"idleStreak", -7}};
  World w{a};
  AgentDecision d = w.step(at("2024-05-01T12:01:00Z"));
  EXPECT_TRUE(d.status_changed);
  EXPECT_EQ(d.status_json()["idleStreak"], 0);
}

TEST(IdleBackoffDecision, TurningBackoffOffDropsItsStatus) {
  Json a = agent();
  a["status"] = {{"observedGeneration", 1}, {"idleStreak", 5}, {"effectiveInterval", "40m"}};
  World w{a};
  AgentDecision d = w.step(at("2024-05-01T12:01:00Z"));
  EXPECT_FALSE(d.status_json().contains("idleStreak"));
  EXPECT_FALSE(d.status_json().contains("effectiveInterval"));
  EXPECT_EQ(d.status_json()["nextHeartbeatTime"], "2024-05-01T12:05:00Z");
}

// The verdict is the operator's, from the result, written once with the
// final status.
TEST(IdleBackoffRun, TheFinalStatusSaysWhetherTheRunWasIdle) {
  auto observe = [](const std::string& message, int exit_code) {
    Json r = with_status(
        run("r1", "scheduler", at("2024-05-01T12:05:00Z")),
        {{"phase", "Running"}, {"jobName", "r1"}, {"startedAt", "2024-05-01T12:05:01Z"}});
    Json j = job("r1");
    Json p = terminated(pod("r1-abc"), exit_code, message);
    RunObservationInput in;
    in.run = &r;
    in.job = &j;
    in.pods = {&p};
    in.pricing = kTestPricing;
    in.bounds = usage_bounds(AgentSpec{});
    in.now = at("2024-05-01T12:06:10Z");
    return observe_run(in).status;
  };
  Json ok = Json::parse(result_json(1));
  ok["output"] = "HEARTBEAT_OK";
  EXPECT_EQ(observe(ok.dump(), 0)["idle"], true);
  EXPECT_EQ(observe(result_json(1), 0)["idle"], false) << "did a thing, actions uncounted";
  Json quiet = Json::parse(result_json(1));
  quiet["usage"]["actionToolCalls"] = 0;
  EXPECT_EQ(observe(quiet.dump(), 0)["idle"], true);
  EXPECT_FALSE(observe(ok.dump(), 3).contains("idle")) << "a failed run is not judged";
}

}  // namespace
}  // namespace hb::controllers
