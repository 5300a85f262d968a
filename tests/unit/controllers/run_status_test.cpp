// Run status derivation from Job, Pod, Lease and now.
#include "controllers/run/run_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "api/agent_types.h"
#include "api/heartbeat_pod.h"
#include "api/usage_report.h"
#include "controllers/run/cache_projection.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;

const TimePoint kStart = at("2024-05-01T12:05:00Z");

Json running_run(const std::string& name = "r1") {
  return with_status(run(name),
                     {{"phase", "Running"}, {"jobName", name}, {"startedAt", fmt(kStart)}});
}

RunObservation observe(const Json& r, const Json* j, std::vector<const Json*> pods, TimePoint now,
                       const Json* lease = nullptr, bool agent_missing = false,
                       bool budget_exceeded = false, const std::string& cancelled_by_policy = "",
                       const std::string& stopped_by_team_budget = "",
                       std::optional<int64_t> per_run_tokens = std::nullopt) {
  RunObservationInput in;
  in.per_run_tokens = per_run_tokens;
  in.budget_exceeded = budget_exceeded;
  in.cancelled_by_policy = cancelled_by_policy;
  in.stopped_by_team_budget = stopped_by_team_budget;
  in.run = &r;
  in.job = j;
  in.pods = std::move(pods);
  in.lease = lease;
  in.now = now;
  in.agent_missing = agent_missing;
  in.timeouts = {std::chrono::seconds(300), std::chrono::seconds(30), std::chrono::seconds(120)};
  in.pricing = kTestPricing;
  in.bounds = usage_bounds(AgentSpec{});  // memgpt: 5 calls, 1024 output tokens each
  return observe_run(in);
}

Json lease_renewed(const char* t) {
  return {{"spec", {{"renewTime", t}}}};
}

TEST(RunStatus, SucceededWithUsageCostAndPause) {
  Json r = running_run();
  Json j = job("r1");
  Json p = terminated(pod("r1-abc"), 0, result_json(3, 1000, 200, 5, "pause_heartbeats"));
  const TimePoint now = at("2024-05-01T12:06:10Z");
  RunObservation o = observe(r, &j, {&p}, now);
  EXPECT_TRUE(o.became_final);
  EXPECT_EQ(o.phase, RunPhase::kSucceeded);
  EXPECT_EQ(o.status["phase"], "Succeeded");
  EXPECT_EQ(o.status["reason"], "PauseHeartbeats");
  EXPECT_EQ(o.status["exitCode"], 0);
  EXPECT_EQ(o.status["podName"], "r1-abc");
  EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], 3.0);  // 1000 x 0.001 + 200 x 0.01
  EXPECT_EQ(o.status["usage"]["inputTokens"], 1000);
  EXPECT_EQ(o.status["usage"]["llmCalls"], 2);
  EXPECT_EQ(o.status["stopReason"], "pause_heartbeats");
  EXPECT_EQ(o.status["finishedAt"], "2024-05-01T12:06:00Z");
  EXPECT_EQ(o.status["durationSeconds"], 60);
  EXPECT_EQ(o.status["output"], "did a thing");
  // pausedUntil = operator clock + pauseMinutes.
  EXPECT_EQ(o.status["pauseUntil"], "2024-05-01T12:11:10Z");
  EXPECT_FALSE(o.status.contains("costRecorded"));
}

// A run on a spent provider quota keeps the provider's reset time,
// bounded to a day after the run ended (every agent on the key waits for it).
TEST(RunStatus, AProviderQuotaStopKeepsTheBoundedResetTime) {
  Json r = running_run();
  Json j = job("r1");
  Json result = Json::parse(result_json(0, 10, 0, std::nullopt, "provider_quota"));
  result["providerResetAt"] = "2024-05-01T13:30:00.000Z";
  Json p = terminated(pod("r1-abc"), 69, result.dump());
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
  EXPECT_EQ(o.status["stopReason"], "provider_quota");
  EXPECT_EQ(o.status["reason"], "ProviderQuota") << "not ProviderError: no provider backoff";
  EXPECT_EQ(o.status["providerResetAt"], "2024-05-01T13:30:00Z");
  result["providerResetAt"] = "2024-06-01T00:00:00.000Z";
  p = terminated(pod("r1-abc"), 69, result.dump());
  o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
  EXPECT_EQ(o.status["providerResetAt"], "2024-05-02T12:06:00Z") << "a day after it ended";
  result.erase("providerResetAt");
  result["stopReason"] = "provider_error";
  p = terminated(pod("r1-abc"), 69, result.dump());
  o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
  EXPECT_FALSE(o.status.contains("providerResetAt"));
  EXPECT_EQ(o.status["reason"], "ProviderError");
}

// Run logs: the container log's ref, the ends of stdout and stderr, and the
// stored transcript where the Agent has an archival claim (only there: a
// record a result claims without one is not believed).
TEST(RunStatus, TheFinalStatusSaysWhereTheLogIsAndItsEnds) {
  Json r = running_run();
  Json j = job("r1");
  Json result = Json::parse(result_json(3, 1000, 200));
  result["stdoutExcerpt"] = "{\"event\":\"model_reply\"}\n";
  result["stderrExcerpt"] = "info heartbeat finished\n";
  result["transcript"] = {{"bytes", 2048},
                          {"sha256", std::string(64, 'c')},
                          {"compressed", true},
                          {"truncated", true},
                          {"note", "the transcript reached its bound"}};
  Json p = terminated(pod("r1-abc"), 0, result.dump());
  RunObservationInput in;
  in.run = &r;
  in.job = &j;
  in.pods = {&p};
  in.now = at("2024-05-01T12:06:10Z");
  in.timeouts = {std::chrono::seconds(300), std::chrono::seconds(30), std::chrono::seconds(120)};
  in.pricing = kTestPricing;
  in.bounds = usage_bounds(AgentSpec{});
  in.archival_claim = "bot-archive";
  RunObservation o = observe_run(in);
  ASSERT_TRUE(o.became_final);
  EXPECT_EQ(o.status["stdoutExcerpt"], "{\"event\":\"model_reply\"}\n");
  EXPECT_EQ(o.status["stderrExcerpt"], "info heartbeat finished\n");
  EXPECT_EQ(o.status["log"]["ref"], "pod/ns/r1-abc/runner");
  const Json& t = o.status["log"]["transcript"];
  EXPECT_EQ(t["ref"], "pvc/bot-archive/transcripts/r1.jsonl.gz");
  EXPECT_EQ(t["bytes"], 2048);
  EXPECT_EQ(t["sha256"], std::string(64, 'c'));
  EXPECT_EQ(t["truncated"], true);
  EXPECT_EQ(t["note"], "the transcript reached its bound");

  in.archival_claim.clear();  // no volume: the record is not the Agent's
  o = observe_run(in);
  EXPECT_FALSE(o.status["log"].contains("transcript"));
  EXPECT_EQ(o.status["log"]["ref"], "pod/ns/r1-abc/runner");
}

// A type without heartbeat support (react_agent, letta_v1_agent) or a
// command runner whose Agent did not opt in: a pauseMinutes in its result
// (forged by the agent, say) does not move the schedule.
TEST(RunStatus, APauseWhereTheAgentMayNotPauseIsIgnoredWithAWarning) {
  Json r = running_run();
  Json j = job("r1");
  Json p = terminated(pod("r1-abc"), 0, result_json(3, 1000, 200, 5, "pause_heartbeats"));
  RunObservationInput in;
  in.run = &r;
  in.job = &j;
  in.pods = {&p};
  in.timeouts = {300s, 30s, 120s};
  in.pricing = kTestPricing;
  in.bounds = usage_bounds(AgentSpec{});
  in.now = at("2024-05-01T12:06:10Z");
  in.pause_allowed = false;
  RunObservation o = observe_run(in);
  EXPECT_TRUE(o.became_final);
  EXPECT_EQ(o.status["phase"], "Succeeded");
  EXPECT_FALSE(o.status.contains("pauseUntil")) << o.status.dump();
  bool warned = false;
  for (const Event& e : o.events) warned = warned || (e.reason == "PauseIgnored" && e.warning);
  EXPECT_TRUE(warned);
}

// The result with `durations` as its modelCallDurations (2 model calls).
std::string result_with_durations(const Json& durations) {
  Json result = Json::parse(result_json(3));
  result["modelCallDurations"] = durations;
  return result.dump();
}

Json fifteen_counts() {
  return Json::array({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
}

bool has_warning(const RunObservation& o, const std::string& reason) {
  for (const Event& e : o.events) {
    if (e.reason == reason && e.warning) return true;
  }
  return false;
}

// The runner's call durations are kept in status.usage once believable
// against what the operator saw (the charged calls, the run's 60 s); a
// forged summary is dropped with a warning and nothing else is.
TEST(RunStatus, ModelCallDurationsAreKeptOnlyWhenBelievable) {
  Json r = running_run();
  Json j = job("r1");
  Json counts = fifteen_counts();
  counts[6] = 1;   // 0.5 s
  counts[12] = 1;  // 30 s
  const Json believable = {{"bucketCounts", counts}, {"sumSeconds", 30.5}};
  Json p = terminated(pod("r1-abc"), 0, result_with_durations(believable));
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
  ASSERT_TRUE(o.became_final);
  EXPECT_EQ(o.status["usage"]["modelCallDurations"], believable) << o.status.dump();
  EXPECT_FALSE(has_warning(o, kReasonCallDurationsDropped));

  Json slow = fifteen_counts();
  slow[14] = 2;  // two calls past 81.92 s in a run of 60 s
  Json too_many = fifteen_counts();
  too_many[0] = 3;  // three calls in a result of two
  for (const Json& forged : {Json{{"bucketCounts", slow}, {"sumSeconds", 200}},
                             Json{{"bucketCounts", too_many}, {"sumSeconds", 0.01}},
                             Json{{"bucketCounts", Json::array({1})}, {"sumSeconds", 1}}}) {
    Json q = terminated(pod("r1-abc"), 0, result_with_durations(forged));
    o = observe(r, &j, {&q}, at("2024-05-01T12:06:10Z"));
    ASSERT_TRUE(o.became_final);
    EXPECT_FALSE(o.status["usage"].contains("modelCallDurations")) << forged.dump();
    EXPECT_TRUE(has_warning(o, kReasonCallDurationsDropped)) << forged.dump();
    EXPECT_EQ(o.status["phase"], "Succeeded");
    EXPECT_EQ(o.status["usage"]["llmCalls"], 2);
    EXPECT_EQ(o.status["output"], "did a thing");
  }
}

// Failed calls are believed with the answered ones: together no more calls
// than charged and no longer than the run; a failed call's 50 s past the
// run's 60 s with the answered 30.5 s drops the whole summary.
TEST(RunStatus, FailedCallDurationsAreKeptWithTheAnsweredOnes) {
  Json r = running_run();
  Json j = job("r1");
  Json counts = fifteen_counts();
  counts[6] = 1;  // 0.5 s
  Json failed = fifteen_counts();
  failed[12] = 1;  // 25 s
  const Json believable = {
      {"bucketCounts", counts},
      {"sumSeconds", 0.5},
      {"failed", {{"timeout", {{"bucketCounts", failed}, {"sumSeconds", 25}}}}}};
  Json p = terminated(pod("r1-abc"), 0, result_with_durations(believable));
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
  ASSERT_TRUE(o.became_final);
  EXPECT_EQ(o.status["usage"]["modelCallDurations"], believable) << o.status.dump();
  EXPECT_FALSE(has_warning(o, kReasonCallDurationsDropped));

  Json too_long = fifteen_counts();
  too_long[13] = 1;  // 50 s
  counts[6] = 0;
  counts[12] = 1;  // 30.5 s
  const Json forged = {{"bucketCounts", counts},
                       {"sumSeconds", 30.5},
                       {"failed", {{"5xx", {{"bucketCounts", too_long}, {"sumSeconds", 50}}}}}};
  Json q = terminated(pod("r1-abc"), 0, result_with_durations(forged));
  o = observe(r, &j, {&q}, at("2024-05-01T12:06:10Z"));
  ASSERT_TRUE(o.became_final);
  EXPECT_FALSE(o.status["usage"].contains("modelCallDurations")) << o.status.dump();
  EXPECT_TRUE(has_warning(o, kReasonCallDurationsDropped));
  EXPECT_EQ(o.status["phase"], "Succeeded");
}

// A run whose Agent is gone is charged nothing, so its calls are bounded by
// its own count and by what any agent type may make, not by its charge.
TEST(RunStatus, AnOrphanedRunsDurationsAreBoundedByAnyTypesCalls) {
  Json r = running_run();
  Json j = job("r1");
  const int64_t most = api::max_iterations_of_any_type();
  for (const int64_t calls : {int64_t{2}, most, most + 1}) {
    Json counts = fifteen_counts();
    counts[0] = calls;  // each at most 10 ms
    Json result = Json::parse(result_json(3));
    result["usage"]["llmCalls"] = 1000;  // the runner's claim, past any type's
    result["modelCallDurations"] = {{"bucketCounts", counts}, {"sumSeconds", 0}};
    Json p = terminated(pod("r1-abc"), 0, result.dump());
    const RunObservation o =
        observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"), nullptr, /*agent_missing=*/true);
    ASSERT_TRUE(o.became_final);
    EXPECT_EQ(o.status["usage"].contains("modelCallDurations"), calls <= most) << calls;
    EXPECT_EQ(has_warning(o, kReasonCallDurationsDropped), calls > most) << calls;
  }
}

TEST(RunStatus, PauseIsAllowedByTheTypeTableOrACommandRunnersOptIn) {
  AgentSpec spec;
  spec.type = api::AgentType::kMemgpt;
  EXPECT_TRUE(pause_allowed(spec));
  spec.type = api::AgentType::kReact;
  EXPECT_FALSE(pause_allowed(spec));
  spec.type = api::AgentType::kLettaV1;
  EXPECT_FALSE(pause_allowed(spec));
  spec.mode = RuntimeMode::kCommand;
  EXPECT_FALSE(pause_allowed(spec));
  spec.command_may_pause = true;
  EXPECT_TRUE(pause_allowed(spec));
}

TEST(RunStatus, FailedExitCodesMapToReasons) {
  Json r = running_run();
  Json j = job("r1");
  struct Case {
    int exit;
    const char* reason;
  } cases[] = {{69, "ProviderError"}, {70, "InternalError"}, {78, "ConfigError"}, {3, "Error"}};
  for (const Case& c : cases) {
    Json p = terminated(pod("r1-abc"), c.exit, result_json(0.3));
    RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
    EXPECT_EQ(o.status["phase"], "Failed") << c.exit;
    EXPECT_EQ(o.status["reason"], c.reason) << c.exit;
    EXPECT_EQ(o.status["exitCode"], c.exit);
    EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], 0.3);  // a failed run still costs
  }
}

TEST(RunStatus, KilledBySignal) {
  Json r = running_run();
  Json j = job("r1");
  Json p = terminated(pod("r1-abc"), 137, "", "2024-05-01T12:06:00Z", "OOMKilled");
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
  EXPECT_EQ(o.status["phase"], "Failed");
  EXPECT_EQ(o.status["signal"], 9);
  EXPECT_EQ(o.status["exitCode"], 137);
  // Empty message: the result is unreadable, but the run still finishes.
  EXPECT_EQ(o.status["reason"], "ResultUnreadable");
}

TEST(RunStatus, MalformedResultFinishesWithResultUnreadable) {
  Json r = running_run();
  Json j = job("r1");
  const std::string deep(4000, '[');  // under the size cap: must not recurse in the parser
  for (const std::string& message :
       {std::string("not json"), std::string("[1,2]"),
        std::string("{\"stopReason\": \"completed\"}"), std::string("{\"usage\": 7}"), deep}) {
    Json p = terminated(pod("r1-abc"), 0, message);
    RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
    EXPECT_TRUE(o.became_final) << message.substr(0, 40);
    EXPECT_EQ(o.status["phase"], "Succeeded") << message.substr(0, 40);
    EXPECT_EQ(o.status["reason"], "ResultUnreadable") << message.substr(0, 40);
    EXPECT_EQ(o.status["usage"]["costCents"], 0);
  }
}

TEST(RunStatus, PauseMinutesAreClamped) {
  Json r = running_run();
  Json j = job("r1");
  Json p = terminated(pod("r1-abc"), 0, result_json(0, 1, 1, 500));
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:00:00Z"));
  EXPECT_EQ(o.status["pauseUntil"], "2024-05-01T13:00:00Z");
}

TEST(RunStatus, JobDeadlineExceededGivesTimedOut) {
  Json r = running_run();
  Json j = job_condition(job("r1"), "Failed", "DeadlineExceeded");
  Json p = terminated(pod("r1-abc"), 143, result_json(0.011, 1, 1, std::nullopt, "cancelled"));
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:10:10Z"));
  EXPECT_EQ(o.status["phase"], "TimedOut");
  EXPECT_EQ(o.status["reason"], "DeadlineExceeded");
  EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], 0.011);
  // The Job controller killed the pod and it is gone: still TimedOut.
  o = observe(r, &j, {}, at("2024-05-01T12:10:10Z"));
  EXPECT_EQ(o.status["phase"], "TimedOut");
}

TEST(RunStatus, ControllerSideDeadlineDeletesTheJob) {
  Json r = running_run();
  Json j = job("r1");
  Json p = pod("r1-abc");
  // 300 s timeout + 30 s grace + 30 s slack after 12:05:00.
  Json lease = lease_renewed("2024-05-01T12:10:50.000000Z");
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:10:59Z"), &lease);
  EXPECT_FALSE(o.delete_job);
  o = observe(r, &j, {&p}, at("2024-05-01T12:11:01Z"), &lease);
  EXPECT_TRUE(o.delete_job);
  EXPECT_FALSE(o.became_final);
  // Job gone, pod gone: TimedOut.
  o = observe(r, nullptr, {}, at("2024-05-01T12:11:05Z"), &lease);
  EXPECT_EQ(o.status["phase"], "TimedOut");
}

// A renewTime far in the future (a skewed clock, a forged Lease) is no beat:
// the stall watchdog still fails a silent run.
TEST(RunStatus, ARenewTimeInTheFutureIsNotABeat) {
  Json r = running_run();
  Json j = job("r1");
  Json p = pod("r1-abc");
  Json lease = lease_renewed("2200-01-01T00:00:00.000000Z");
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:07:01Z"), &lease);
  EXPECT_TRUE(o.delete_job);
  EXPECT_EQ(o.events.at(0).reason, "Stalled");
  // Within the skew allowance it counts.
  lease = lease_renewed("2024-05-01T12:07:30.000000Z");
  o = observe(r, &j, {&p}, at("2024-05-01T12:07:01Z"), &lease);
  EXPECT_FALSE(o.delete_job);
}

// The runner's clock lags an hour, so its renewTime says nothing; the
// operator saw the Lease change moments ago (client-go's observedTime), so
// the run is beating. A sighting older than the stall window is a stall.
TEST(RunStatus, ABeatTheOperatorSawLatelyIsAliveWhateverTheRunnersClock) {
  Json r = running_run();
  Json j = job("r1");
  Json p = pod("r1-abc");
  Json lease = lease_renewed("2024-05-01T11:08:00.000000Z");
  const TimePoint now = at("2024-05-01T12:08:01Z");
  RunObservationInput in;
  in.run = &r;
  in.job = &j;
  in.pods = {&p};
  in.lease = &lease;
  in.now = now;
  in.timeouts = {std::chrono::seconds(300), std::chrono::seconds(30), std::chrono::seconds(120)};
  EXPECT_TRUE(observe_run(in).delete_job);  // renewTime alone: stalled
  in.lease_seen_at = at("2024-05-01T12:08:00Z");
  EXPECT_FALSE(observe_run(in).delete_job);
  in.lease_seen_at = at("2024-05-01T12:06:00Z");
  EXPECT_TRUE(observe_run(in).delete_job);
  // A sighting is of a Lease: without one it means nothing.
  in.lease = nullptr;
  in.lease_seen_at = at("2024-05-01T12:08:00Z");
  EXPECT_TRUE(observe_run(in).delete_job);
}

TEST(RunStatus, StalledLeaseFailsTheRunAndDeletesItsJob) {
  Json r = running_run();
  Json j = job("r1");
  Json p = pod("r1-abc");
  Json lease = lease_renewed("2024-05-01T12:06:00.000000Z");
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:07:59Z"), &lease);
  EXPECT_FALSE(o.delete_job);
  ASSERT_TRUE(o.recheck_at);
  EXPECT_EQ(*o.recheck_at, at("2024-05-01T12:08:01Z"));
  o = observe(r, &j, {&p}, at("2024-05-01T12:08:01Z"), &lease);
  EXPECT_TRUE(o.delete_job);
  EXPECT_EQ(o.events.at(0).reason, "Stalled");
  // After the Job is deleted the runner got SIGTERM: still Stalled.
  Json killed = terminated(pod("r1-abc"), 143, "", "2024-05-01T12:08:05Z");
  o = observe(r, nullptr, {&killed}, at("2024-05-01T12:08:06Z"), &lease);
  EXPECT_EQ(o.status["phase"], "Failed");
  EXPECT_EQ(o.status["reason"], "Stalled");
  EXPECT_EQ(o.status["lastBeatTime"], "2024-05-01T12:06:00Z");
}

TEST(RunStatus, StallOfAPodThatNeverStartedSaysWhyItWaits) {
  Json r = running_run();
  Json j = job("r1");
  Json p = pod("r1-abc");
  p["status"]["phase"] = "Pending";
  p["status"]["containerStatuses"] = Json::array(
      {{{"name", "runner"},
        {"state",
         {{"waiting",
           {{"reason", "ImagePullBackOff"}, {"message", "Back-off pulling image \"x:1\""}}}}}}});
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:07:01Z"));
  ASSERT_TRUE(o.delete_job);
  EXPECT_THAT(o.events.at(0).message,
              ::testing::HasSubstr("ImagePullBackOff (Back-off pulling image"));
  EXPECT_THAT(o.events.at(0).message, ::testing::EndsWith("; deleting its Job"));
  // The Job is gone, its Pod still terminating: the final status keeps the why.
  p["metadata"]["deletionTimestamp"] = "2024-05-01T12:07:02Z";
  o = observe(r, nullptr, {&p}, at("2024-05-01T12:07:20Z"));
  EXPECT_EQ(o.status["reason"], "Stalled");
  EXPECT_THAT(o.status["message"].get<std::string>(),
              ::testing::HasSubstr("its container is waiting: ImagePullBackOff"));

  Json unscheduled = pod("r1-abc");
  unscheduled["status"] = {{"phase", "Pending"},
                           {"conditions", Json::array({{{"type", "PodScheduled"},
                                                        {"status", "False"},
                                                        {"reason", "Unschedulable"},
                                                        {"message", "0/3 nodes are available"}}})}};
  o = observe(r, &j, {&unscheduled}, at("2024-05-01T12:07:01Z"));
  EXPECT_THAT(
      o.events.at(0).message,
      ::testing::HasSubstr("its Pod is not scheduled: Unschedulable (0/3 nodes are available)"));
}

// The operator never reads Secrets: a missing API key shows up as the
// kubelet's CreateContainerConfigError, which fails the run after a grace.
TEST(RunStatus, AContainerTheKubeletCannotConfigureFailsTheRunAfterItsGrace) {
  Json r = running_run();
  Json j = job("r1");
  Json p = pod("r1-abc", "2024-05-01T12:05:01Z");
  p["status"]["phase"] = "Pending";
  p["status"]["containerStatuses"] =
      Json::array({{{"name", "tools"}, {"state", {{"running", Json::object()}}}},
                   {{"name", "runner"},
                    {"state",
                     {{"waiting",
                       {{"reason", "CreateContainerConfigError"},
                        {"message", "couldn't find key api-key in Secret ns/llm"}}}}}}});
  // Within the grace (the Secret may be created a moment after the Agent).
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:05:30Z"));
  EXPECT_FALSE(o.delete_job);
  ASSERT_TRUE(o.recheck_at);
  EXPECT_EQ(*o.recheck_at, at("2024-05-01T12:05:32Z"));
  // Past it: the Job goes, with the kubelet's words.
  o = observe(r, &j, {&p}, at("2024-05-01T12:05:32Z"));
  ASSERT_TRUE(o.delete_job);
  EXPECT_EQ(o.events.at(0).reason, "ContainerConfigError");
  EXPECT_THAT(o.events.at(0).message,
              ::testing::HasSubstr("couldn't find key api-key in Secret ns/llm"));
  // The Job and the Pod are gone (the Pod's last state kept): Failed, named.
  p["metadata"]["deletionTimestamp"] = "2024-05-01T12:05:33Z";
  o = observe(r, nullptr, {&p}, at("2024-05-01T12:05:50Z"));
  EXPECT_EQ(o.status["phase"], "Failed");
  EXPECT_EQ(o.status["reason"], "ContainerConfigError");
  EXPECT_THAT(o.status["message"].get<std::string>(),
              ::testing::HasSubstr("couldn't find key api-key in Secret ns/llm"));
  EXPECT_THAT(o.status["message"].get<std::string>(),
              ::testing::HasSubstr("spec.model.apiKeySecretRef"));
  // The decision is recorded with the delete: the run stays Failed with the
  // kubelet's words when the Pod is gone from every cache (operator restart).
  o = observe(r, &j, {&p}, at("2024-05-01T12:05:32Z"));
  EXPECT_EQ(o.status["phase"], "Running");
  EXPECT_EQ(o.status["reason"], "ContainerConfigError");
  Json recorded = r;
  recorded["status"] = o.status;
  o = observe(recorded, nullptr, {}, at("2024-05-01T12:05:50Z"));
  EXPECT_EQ(o.status["phase"], "Failed");
  EXPECT_EQ(o.status["reason"], "ContainerConfigError");
  EXPECT_THAT(o.status["message"].get<std::string>(),
              ::testing::HasSubstr("couldn't find key api-key in Secret ns/llm"));
  // Only the runner container counts: the tools container waiting is not it.
  Json tools_waiting = pod("r1-abc");
  tools_waiting["status"]["containerStatuses"] = Json::array(
      {{{"name", "tools"}, {"state", {{"waiting", {{"reason", "CreateContainerConfigError"}}}}}}});
  o = observe(r, &j, {&tools_waiting}, at("2024-05-01T12:05:40Z"));
  EXPECT_FALSE(o.delete_job);
}

TEST(RunStatus, OldLeaseFromAnEarlierRunDoesNotStallANewOne) {
  Json r = running_run();
  Json j = job("r1");
  Json p = pod("r1-abc");
  Json lease = lease_renewed("2024-05-01T11:00:00.000000Z");
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:00Z"), &lease);
  EXPECT_FALSE(o.delete_job);
}

TEST(RunStatus, SuccessfulExitWithoutBeatsIsNotStalled) {
  Json r = running_run();
  Json j = job("r1");
  Json p = terminated(pod("r1-abc"), 0, result_json(1), "2024-05-01T12:09:00Z");
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T13:00:00Z"));
  EXPECT_EQ(o.status["phase"], "Succeeded");
}

TEST(RunStatus, CancelDeletesTheJobAndWaitsForTheResult) {
  Json r = running_run();
  r["spec"]["cancel"] = true;
  Json j = job("r1");
  Json p = pod("r1-abc");
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:00Z"));
  EXPECT_TRUE(o.delete_job);
  EXPECT_FALSE(o.became_final);
  // The runner wrote its result on SIGTERM and exited 143.
  Json done = terminated(pod("r1-abc"), 143, result_json(0.011, 1, 1, std::nullopt, "cancelled"));
  o = observe(r, nullptr, {&done}, at("2024-05-01T12:06:05Z"));
  EXPECT_EQ(o.status["phase"], "Cancelled");
  EXPECT_EQ(o.status["reason"], "Cancelled");
  EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], 0.011);
  // Or the pod vanished without a result.
  o = observe(r, nullptr, {}, at("2024-05-01T12:06:05Z"));
  EXPECT_EQ(o.status["phase"], "Cancelled");
}

// Seen on a real node: the kubelet signals both containers at once, the
// tools server's SIGTERM ends the agent's call, and the runner finishes with
// exit 0 before its own SIGTERM lands. A Pod we stopped for the cancel is
// Cancelled, its result's cost kept; one that ended before we stopped it
// (no deletionTimestamp) keeps its own outcome.
TEST(RunStatus, ACancelledPodWhoseRunnerStillExitedZeroIsCancelled) {
  const TimePoint now = at("2024-05-01T12:06:05Z");
  Json r = running_run();
  r["spec"]["cancel"] = true;
  Json stopped = terminated(pod("r1-abc"), 0, result_json(0.02, 2, 1));
  stopped["metadata"]["deletionTimestamp"] = fmt(now - std::chrono::seconds(1));
  RunObservation o = observe(r, nullptr, {&stopped}, now);
  EXPECT_EQ(o.status["phase"], "Cancelled");
  EXPECT_EQ(o.status["reason"], "Cancelled");
  EXPECT_EQ(o.status["exitCode"], 0);
  EXPECT_EQ(o.status["usage"]["llmCalls"], 2);  // charged from its result
  EXPECT_GT(o.status["usage"]["costCents"].get<double>(), 0.0);
  Json ended_alone = terminated(pod("r1-abc"), 0, result_json(0.02, 2, 1));
  o = observe(r, nullptr, {&ended_alone}, now);
  EXPECT_EQ(o.status["phase"], "Succeeded");
}

TEST(RunStatus, SpentBudgetCancelsARunningRunButNotAQueuedOne) {
  const TimePoint now = at("2024-05-01T12:06:00Z");
  Json queued = run("q1", "manual");
  RunObservation o = observe(queued, nullptr, {}, now, nullptr, false, /*budget_exceeded=*/true);
  EXPECT_FALSE(o.became_final);
  Json r = running_run();
  Json j = job("r1");
  Json p = pod("r1-abc");
  o = observe(r, &j, {&p}, now, nullptr, false, true);
  EXPECT_TRUE(o.delete_job);
  EXPECT_FALSE(o.became_final);
  // The Pod we stopped ends with 143: cancelled for the budget.
  Json stopped = terminated(pod("r1-abc"), 143, result_json(0.2, 1, 1, std::nullopt, "cancelled"));
  stopped["metadata"]["deletionTimestamp"] = fmt(now);
  o = observe(r, nullptr, {&stopped}, now + std::chrono::seconds(5), nullptr, false, true);
  EXPECT_EQ(o.status["phase"], "Cancelled");
  EXPECT_EQ(o.status["reason"], "BudgetExceeded");
  // A Pod that failed by itself keeps its own outcome, even when its cost
  // is what spent the budget.
  Json failed = terminated(pod("r1-abc"), 1, result_json(0.2, 1, 1, std::nullopt, "error"));
  o = observe(r, &j, {&failed}, now, nullptr, false, true);
  EXPECT_EQ(o.status["phase"], "Failed");
}

// A spent day (the Agent's dailyCents, or a team's) ends a run in flight as
// a spent month does, with the day's reason; the control goes on.
TEST(RunStatus, ASpentDayCancelsARunningRunWithTheDaysReason) {
  const TimePoint now = at("2024-05-01T12:06:00Z");
  Json r = running_run();
  Json j = job("r1");
  Json p = pod("r1-abc");
  Json stopped = terminated(pod("r1-abc"), 143, result_json(0.2, 1, 1, std::nullopt, "cancelled"));
  stopped["metadata"]["deletionTimestamp"] = fmt(now);
  const auto observed = [&](const Json* job, std::vector<const Json*> pods, bool own_day,
                            const std::string& team, TimePoint when) {
    RunObservationInput in;
    in.run = &r;
    in.job = job;
    in.pods = std::move(pods);
    in.now = when;
    in.daily_budget_exceeded = own_day;
    in.stopped_by_team_budget = team;
    in.team_budget_daily = !team.empty();
    in.timeouts = {std::chrono::seconds(300), std::chrono::seconds(30), std::chrono::seconds(120)};
    in.pricing = kTestPricing;
    in.bounds = usage_bounds(AgentSpec{});
    return observe_run(in);
  };
  EXPECT_FALSE(observed(&j, {&p}, false, "", now).delete_job) << "control: nothing spent";
  EXPECT_TRUE(observed(&j, {&p}, true, "", now).delete_job);
  RunObservation o = observed(nullptr, {&stopped}, true, "", now + std::chrono::seconds(5));
  EXPECT_EQ(o.status["phase"], "Cancelled");
  EXPECT_EQ(o.status["reason"], "DailyBudgetExceeded");
  o = observed(nullptr, {&stopped}, false, "ns/team", now + std::chrono::seconds(5));
  EXPECT_EQ(o.status["reason"], "PolicyDailyBudgetExceeded");
  EXPECT_NE(o.status["message"].get<std::string>().find("dailyCents"), std::string::npos);
}

// A paused HeartbeatPolicy with spec.cancelRunning ends a run in flight as
// a spent budget does: its Job deleted, Cancelled with reason PolicyPaused
// naming the policy, charged what it used. A Queued run keeps waiting.
// Without it (the control) the same run goes on and finishes by itself.
TEST(RunStatus, APausedPolicyWithCancelRunningCancelsARunningRun) {
  const TimePoint now = at("2024-05-01T12:06:00Z");
  const std::string policy = "ns/team-a";
  Json queued = run("q1", "manual");
  RunObservation o = observe(queued, nullptr, {}, now, nullptr, false, false, policy);
  EXPECT_FALSE(o.became_final);
  EXPECT_FALSE(o.delete_job);
  Json r = running_run();
  Json j = job("r1");
  Json p = pod("r1-abc");
  o = observe(r, &j, {&p}, now, nullptr, false, false, policy);
  EXPECT_TRUE(o.delete_job);
  EXPECT_FALSE(o.became_final);
  // The Pod we stopped ends with 143 after one model call: cancelled, charged.
  Json stopped =
      terminated(pod("r1-abc"), 143, result_json(0.2, 100, 10, std::nullopt, "cancelled"));
  stopped["metadata"]["deletionTimestamp"] = fmt(now);
  o = observe(r, nullptr, {&stopped}, now + std::chrono::seconds(5), nullptr, false, false, policy);
  EXPECT_TRUE(o.became_final);
  EXPECT_EQ(o.status["phase"], "Cancelled");
  EXPECT_EQ(o.status["reason"], "PolicyPaused");
  EXPECT_THAT(o.status["message"].get<std::string>(),
              ::testing::HasSubstr("HeartbeatPolicy ns/team-a"));
  EXPECT_GT(o.status["usage"]["costCents"].get<double>(), 0);
  // The control: no policy cancels, the run goes on and then succeeds.
  o = observe(r, &j, {&p}, now);
  EXPECT_FALSE(o.delete_job);
  EXPECT_FALSE(o.became_final);
  Json done = terminated(pod("r1-abc"), 0, result_json(0.2, 100, 10));
  o = observe(r, &j, {&done}, now + std::chrono::seconds(5));
  EXPECT_EQ(o.status["phase"], "Succeeded");
}

// A spent team budget (onExceeded: Cancel) ends a run in flight as a spent
// agent budget does: Job deleted, Cancelled with reason PolicyBudgetExceeded
// naming the policy, charged what it used; a Queued run keeps waiting. The
// control without it is the test above's: the run goes on.
TEST(RunStatus, ASpentTeamBudgetCancelsARunningRun) {
  const TimePoint now = at("2024-05-01T12:06:00Z");
  const std::string policy = "ns/team-a";
  Json queued = run("q1", "manual");
  RunObservation o = observe(queued, nullptr, {}, now, nullptr, false, false, "", policy);
  EXPECT_FALSE(o.became_final);
  EXPECT_FALSE(o.delete_job);
  Json r = running_run();
  Json j = job("r1");
  Json p = pod("r1-abc");
  o = observe(r, &j, {&p}, now, nullptr, false, false, "", policy);
  EXPECT_TRUE(o.delete_job);
  Json stopped =
      terminated(pod("r1-abc"), 143, result_json(0.2, 100, 10, std::nullopt, "cancelled"));
  stopped["metadata"]["deletionTimestamp"] = fmt(now);
  o = observe(r, nullptr, {&stopped}, now + std::chrono::seconds(5), nullptr, false, false, "",
              policy);
  EXPECT_TRUE(o.became_final);
  EXPECT_EQ(o.status["phase"], "Cancelled");
  EXPECT_EQ(o.status["reason"], "PolicyBudgetExceeded");
  EXPECT_THAT(o.status["message"].get<std::string>(),
              ::testing::HasSubstr("HeartbeatPolicy ns/team-a"));
  EXPECT_GT(o.status["usage"]["costCents"].get<double>(), 0);
}

TEST(RunStatus, CancelBeforeStartAndAgentGone) {
  Json r = run("r1", "manual");
  r["spec"]["cancel"] = true;
  RunObservation o = observe(r, nullptr, {}, kStart);
  EXPECT_EQ(o.status["phase"], "Cancelled");
  Json r2 = run("r2", "manual");
  o = observe(r2, nullptr, {}, kStart, nullptr, /*agent_missing=*/true);
  EXPECT_EQ(o.status["reason"], "AgentNotFound");
}

TEST(RunStatus, JobMissingRightAfterCreationIsCacheLagNotFailure) {
  Json r = running_run();
  RunObservation o = observe(r, nullptr, {}, kStart + 5s);
  EXPECT_FALSE(o.became_final);
  EXPECT_EQ(*o.recheck_at, kStart + kJobCacheGrace);
  o = observe(r, nullptr, {}, kStart + 31s);
  EXPECT_EQ(o.status["phase"], "Failed");
  EXPECT_EQ(o.status["reason"], "JobDeleted");
}

TEST(RunStatus, JobFoundWithoutStatusIsAdoptedAsRunning) {
  // Killed between creating the Job and writing the run status.
  Json r = run("r1");
  Json j = job("r1", "2024-05-01T12:05:03Z");
  RunObservation o = observe(r, &j, {}, at("2024-05-01T12:05:10Z"));
  EXPECT_EQ(o.phase, RunPhase::kRunning);
  EXPECT_EQ(o.status["phase"], "Running");
  EXPECT_EQ(o.status["jobName"], "r1");
  EXPECT_EQ(o.status["startedAt"], "2024-05-01T12:05:03Z");
}

// Under a saturated rate limiter the Running status waits behind other
// agents' dispatches; a Pod that ends meanwhile is judged from the Job's
// start stamp, and its final status records the start as well, so the
// agent's next run need not wait for the Running write.
TEST(RunStatus, APodThatEndedBeforeRunningWasStoredIsJudgedAtOnce) {
  Json r = run("r1");
  Json j = job("r1", "2024-05-01T12:05:03Z");
  j["metadata"]["annotations"]["heartbeat.dev/started-at"] = "2024-05-01T12:05:05Z";
  j["metadata"]["uid"] = "uid-job-r1";
  Json p = terminated(pod("r1-abc"), 0, result_json(3, 1000, 200), "2024-05-01T12:05:40Z");
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
  EXPECT_TRUE(o.became_final);
  EXPECT_EQ(o.phase, RunPhase::kSucceeded);
  EXPECT_EQ(o.status["phase"], "Succeeded");
  EXPECT_EQ(o.status["jobName"], "r1");
  EXPECT_EQ(o.status["jobUID"], "uid-job-r1");
  EXPECT_EQ(o.status["startedAt"], "2024-05-01T12:05:05Z");
  EXPECT_EQ(o.status["durationSeconds"], 35);
  EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], 3.0);

  // A Pod still running waits for the Running status, as before.
  Json running_pod = pod("r1-abc");
  o = observe(r, &j, {&running_pod}, at("2024-05-01T12:06:10Z"));
  EXPECT_FALSE(o.became_final);
  EXPECT_EQ(o.status["phase"], "Running");
}

// Found by the simulation: with the operator's clock a minute ahead of the
// API server's, a run adopted from its Job's creationTimestamp was judged
// stalled seconds after it started. The operator's own stamp on the Job wins.
TEST(RunStatus, AdoptedJobStartsAtTheOperatorsStampNotTheServersClock) {
  Json r = run("r1");
  Json j = job("r1", "2024-05-01T12:04:00Z");  // the API server's clock, 65 s behind
  j["metadata"]["annotations"]["heartbeat.dev/started-at"] = "2024-05-01T12:05:05Z";
  RunObservation o = observe(r, &j, {}, at("2024-05-01T12:05:10Z"));
  EXPECT_EQ(o.status["phase"], "Running");
  EXPECT_EQ(o.status["startedAt"], "2024-05-01T12:05:05Z");
  EXPECT_FALSE(o.became_final) << o.status.dump();
  Json projected = j;  // the cache keeps the stamp
  project_job(projected);
  EXPECT_EQ(projected["metadata"]["annotations"]["heartbeat.dev/started-at"],
            "2024-05-01T12:05:05Z");
}

TEST(RunStatus, ARunFirstSeenRecentlyIsNotStalledAfterAWallClockJump) {
  Json r = running_run();
  RunObservationInput in;
  in.run = &r;
  Json j = job("r1", "2024-05-01T12:05:00Z");
  in.job = &j;
  in.timeouts = {300s, 30s, 60s};
  in.pricing = kTestPricing;
  in.bounds = usage_bounds(AgentSpec{});
  in.now = kStart + 85s;  // 5 s after the start, then an 80 s jump
  RunObservation jumped = observe_run(in);
  EXPECT_TRUE(jumped.delete_job) << "without the sighting the jump stalls it";
  in.run_seen_at = in.now - 5s;  // seen 5 s ago on the steady clock
  RunObservation seen = observe_run(in);
  EXPECT_FALSE(seen.delete_job) << seen.status.dump();
  in.now = in.run_seen_at.value() + 61s;  // a real stall still stalls
  RunObservation stalled = observe_run(in);
  EXPECT_TRUE(stalled.delete_job);
  EXPECT_EQ(stalled.events.at(0).reason, "Stalled");
}

TEST(RunStatus, FinalRunsAreLeftAlone) {
  Json r = with_status(run("r1"), {{"phase", "Succeeded"}, {"costRecorded", true}});
  RunObservation o = observe(r, nullptr, {}, kStart + 3600s);
  EXPECT_FALSE(o.became_final);
  EXPECT_FALSE(o.delete_job);
  // Settled: nothing to count or write, so its status is not copied.
  EXPECT_TRUE(o.settled);
  EXPECT_TRUE(o.status.is_null());
  EXPECT_EQ(o.phase, RunPhase::kSucceeded);
  // Not yet counted: the ledger and the mark need its status.
  Json u = with_status(run("r2"), {{"phase", "Failed"}, {"usage", {{"costCents", 1.5}}}});
  RunObservation p = observe(u, nullptr, {}, kStart + 3600s);
  EXPECT_FALSE(p.settled);
  EXPECT_FALSE(p.became_final);
  EXPECT_EQ(p.status, u["status"]);
}

TEST(RunStatus, PickPodPrefersTheFinishedOne) {
  Json a = pod("a", "2024-05-01T12:05:01Z");
  Json b = terminated(pod("b", "2024-05-01T12:05:00Z"), 0, "");
  Json c = pod("c", "2024-05-01T12:05:02Z");
  EXPECT_EQ(pick_pod({&a, &b, &c}), &b);
  EXPECT_EQ(pick_pod({&a, &c}), &c);
}

Json lease_with_usage(const std::string& run, int64_t calls, int64_t in, int64_t out) {
  Json lease = lease_renewed("2024-05-01T12:05:30Z");
  lease["metadata"]["annotations"][api::kAnnotationUsage] =
      api::encode_usage_report({{calls, in, out, 0, calls}, run});
  return lease;
}

// A count the provider did not report is charged as estimated, and the run
// says so.
TEST(RunCharge, EstimatedCountsAreMarkedOnTheRun) {
  Json r = running_run();
  Json j = job("r1");
  Json result = Json::parse(result_json(3, 1000, 200));
  result["usage"]["estimated"] = {"inputTokens"};
  Json p = terminated(pod("r1-abc"), 0, result.dump());
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
  EXPECT_EQ(o.status["usage"]["estimated"], Json::array({"inputTokens"}));
  EXPECT_EQ(o.status["usage"]["inputTokens"], 1000);
  Json plain = terminated(pod("r1-abc"), 0, result_json(3, 1000, 200));
  EXPECT_FALSE(
      observe(r, &j, {&plain}, at("2024-05-01T12:06:10Z")).status["usage"].contains("estimated"));
}

// Money is tokens x the Agent's pricing; the runner's own figure is a cross-check.
TEST(RunCharge, CostIsTokensTimesPricingNotTheReportedFigure) {
  Json r = running_run();
  Json j = job("r1");
  Json p = terminated(pod("r1-abc"), 0, result_json(0, 1000, 200));  // says it cost nothing
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
  EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], 3.0);
  EXPECT_EQ(o.status["usage"]["reportedCostCents"], 0);
  EXPECT_TRUE(o.cost_mismatch);
  EXPECT_THAT(o.events, ::testing::Contains(::testing::Field(&Event::reason, kReasonCostMismatch)));
}

// The runner starts only a call that fits under budget.perRunTokens, so a
// run past twice its cap did not keep it (a command runtime, another runner):
// named, charged as reported.
TEST(RunCharge, TokensPastTheCapByMoreThanOneCallAreNamedAndStillCharged) {
  Json r = running_run();
  Json j = job("r1");
  Json p = terminated(pod("r1-abc"), 0, result_json(0, 1500, 200));  // 1,700 tokens
  const TimePoint now = at("2024-05-01T12:06:10Z");
  const RunObservation uncapped = observe(r, &j, {&p}, now);
  EXPECT_EQ(uncapped.status["reason"], "Completed");
  RunObservation o = observe(r, &j, {&p}, now, nullptr, false, false, "", "", 800);
  EXPECT_EQ(o.status["phase"], "Succeeded");
  EXPECT_EQ(o.status["reason"], kReasonTokenCapExceeded);
  EXPECT_THAT(o.status["message"].get<std::string>(),
              ::testing::HasSubstr("used 1700 tokens, past budget.perRunTokens 800"));
  EXPECT_THAT(o.status["message"].get<std::string>(), ::testing::HasSubstr("Completed"));
  EXPECT_EQ(o.status["usage"], uncapped.status["usage"]) << "the charge is unchanged";
  EXPECT_EQ(o.status["charge"]["perRunTokens"], 800) << "the cap is recorded";
  EXPECT_FALSE(uncapped.status["charge"].contains("perRunTokens"));
  // Within one call's worth of the cap (at most twice it): not named.
  o = observe(r, &j, {&p}, now, nullptr, false, false, "", "", 850);
  EXPECT_EQ(o.status["reason"], "Completed");
  EXPECT_EQ(o.status.value("message", ""), uncapped.status.value("message", ""));
}

TEST(RunStatus, ATokenCapStopSucceedsWithItsOwnReason) {
  Json r = running_run();
  Json j = job("r1");
  Json p =
      terminated(pod("r1-abc"), 0, result_json(0, 100, 20, std::nullopt, "per_run_token_budget"));
  RunObservation o =
      observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"), nullptr, false, false, "", "", 1000);
  EXPECT_EQ(o.status["phase"], "Succeeded");
  EXPECT_EQ(o.status["stopReason"], "per_run_token_budget");
  EXPECT_EQ(o.status["reason"], "PerRunTokenBudget");
}

TEST(RunCharge, ForgedHugeUsageIsChargedTheBoundAndNamed) {
  Json r = running_run();
  Json j = job("r1");
  const UsageBounds bounds = usage_bounds(AgentSpec{});
  for (const char* usage :
       {R"({"inputTokens": 9223372036854775807, "outputTokens": 1})",
        R"({"inputTokens": 10000000000000000000})", R"({"inputTokens": 1e300})",
        R"({"outputTokens": -5})", R"({"llmCalls": 1000000, "inputTokens": 1})"}) {
    const std::string message = std::string(R"({"stopReason":"completed","usage":)") + usage + "}";
    Json p = terminated(pod("r1-abc"), 0, message);
    RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
    EXPECT_EQ(o.status["reason"], kReasonUsageOutOfBounds) << usage;
    EXPECT_LE(o.status["usage"]["inputTokens"].get<int64_t>(), bounds.input_tokens) << usage;
    EXPECT_LE(o.status["usage"]["outputTokens"].get<int64_t>(), bounds.output_tokens) << usage;
    EXPECT_LE(o.status["usage"]["llmCalls"].get<int64_t>(), bounds.llm_calls) << usage;
    const double cost = o.status["usage"]["costCents"].get<double>();
    EXPECT_TRUE(std::isfinite(cost) && cost >= 0) << usage;
    EXPECT_THAT(o.status["message"].get<std::string>(), ::testing::HasSubstr("charged the bound"))
        << usage;
  }
}

TEST(RunCharge, AMalformedCountIsChargedTheFullBound) {
  Json r = running_run();
  Json j = job("r1");
  Json p = terminated(pod("r1-abc"), 0, R"({"usage":{"inputTokens":"many","outputTokens":0}})");
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
  const UsageBounds bounds = usage_bounds(AgentSpec{});
  EXPECT_EQ(o.status["usage"]["inputTokens"], bounds.input_tokens);
  EXPECT_EQ(o.status["usage"]["outputTokens"], bounds.output_tokens);
  EXPECT_THAT(o.status["message"].get<std::string>(),
              ::testing::HasSubstr("usage.inputTokens is not an integer"));
}

// A runner killed after two model calls (OOM, node loss) wrote no result:
// it is charged what its beats reported.
TEST(RunCharge, AKilledRunnerIsChargedWhatItsBeatsReported) {
  Json r = running_run();
  Json j = job("r1");
  Json lease = lease_with_usage("r1", 2, 500, 100);
  Json p = terminated(pod("r1-abc"), 137, "", "2024-05-01T12:06:00Z", "OOMKilled");
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"), &lease);
  EXPECT_EQ(o.status["usage"]["llmCalls"], 2);
  EXPECT_EQ(o.status["usage"]["inputTokens"], 500);
  EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], 1.5);  // 500 x 0.001 + 100 x 0.01
}

TEST(RunCharge, AResultCanOnlyRaiseWhatTheBeatsReported) {
  Json r = running_run();
  Json j = job("r1");
  Json lease = lease_with_usage("r1", 3, 3000, 300);
  Json p = terminated(pod("r1-abc"), 0, result_json(0.03, 10, 2));  // lower than reported
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"), &lease);
  EXPECT_EQ(o.status["usage"]["inputTokens"], 3000);
  EXPECT_EQ(o.status["usage"]["outputTokens"], 300);
  EXPECT_EQ(o.status["usage"]["llmCalls"], 3);
}

TEST(RunCharge, AnotherRunsReportOnTheLeaseIsIgnored) {
  Json r = running_run();
  Json j = job("r1");
  Json lease = lease_with_usage("r0", 5, 90000, 900);
  Json p = terminated(pod("r1-abc"), 0, result_json(0.3));
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"), &lease);
  EXPECT_EQ(o.status["usage"]["inputTokens"], 100);
  lease["metadata"]["annotations"][api::kAnnotationUsage] = std::string(50000, '[');
  o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"), &lease);
  EXPECT_EQ(o.status["usage"]["inputTokens"], 100);
}

// Cancelled after one model call, the Pod gone before its result was seen:
// still charged the call its beat reported.
TEST(RunCharge, ACancelledRunWhosePodVanishedIsChargedItsBeats) {
  Json r = running_run();
  r["spec"]["cancel"] = true;
  Json lease = lease_with_usage("r1", 1, 200, 50);
  RunObservation o = observe(r, nullptr, {}, at("2024-05-01T12:06:05Z"), &lease);
  EXPECT_EQ(o.status["phase"], "Cancelled");
  EXPECT_EQ(o.status["usage"]["llmCalls"], 1);
  EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], 0.7);  // 200 x 0.001 + 50 x 0.01
}

// The tools container's termination message is the agent's to write: it is
// never the run's result, and a finished tools container does not end the run.
TEST(RunCharge, TheToolsContainersMessageIsNeverTheResult) {
  Json r = running_run();
  Json j = job("r1");
  Json p = pod("r1-abc");
  p["status"]["containerStatuses"] = Json::array(
      {{{"name", "runner"}, {"state", {{"running", {{"startedAt", fmt(kStart)}}}}}},
       {{"name", "tools"},
        {"state",
         {{"terminated",
           {{"exitCode", 0}, {"message", result_json(0, 0, 0)}, {"finishedAt", fmt(kStart)}}}}}}});
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
  EXPECT_FALSE(o.became_final);
  p["status"]["containerStatuses"][0]["state"] = {
      {"terminated",
       {{"exitCode", 0}, {"message", result_json(0.3)}, {"finishedAt", fmt(kStart)}}}};
  o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
  EXPECT_TRUE(o.became_final);
  EXPECT_EQ(o.status["usage"]["inputTokens"], 100);
}

TEST(RunCharge, ToolsUnavailableExitCodeHasItsReason) {
  Json r = running_run();
  Json j = job("r1");
  Json p =
      terminated(pod("r1-abc"), 75, result_json(0.3, 100, 20, std::nullopt, "tools_unavailable"));
  RunObservation o = observe(r, &j, {&p}, at("2024-05-01T12:06:10Z"));
  EXPECT_EQ(o.status["phase"], "Failed");
  EXPECT_EQ(o.status["reason"], kReasonToolsUnavailable);
}

// The sums and products themselves: tests/unit/api/saturating_test.cpp.
TEST(RunCost, CostIsFiniteForAnyTokens) {
  EXPECT_TRUE(std::isfinite(cost_cents(INT64_MAX, INT64_MAX, {1e8, 1e8})));
}

}  // namespace
}  // namespace hb::controllers
