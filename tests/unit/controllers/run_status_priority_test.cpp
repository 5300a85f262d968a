// observe_run's priority order as a table: each row holds several causes at
// once (cancel, agent missing, budget spent, deadline, stall, a container
// the kubelet cannot configure, the Job gone or done, the exit code) and the
// outcome the fixed order gives. Reordering the causes breaks a row.
//
// Times: the run started 12:05:00 with timeoutSeconds 300 + graceSeconds 30
// + 30 s slack, so its deadline is 12:11:00; without beats it stalls 120 s
// after the start, at 12:07:00.
#include <gtest/gtest.h>

#include "controllers/run/run_status.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;

enum class JobIs { kGone, kRunning, kComplete, kFailedDeadline, kFailedBackoff };
enum class PodIs {
  kNone,
  kExited,             // the runner terminated by itself
  kStoppedAndExited,   // terminated after the operator deleted its Job
  kConfigError,        // waiting: CreateContainerConfigError, created 12:05:01
  kConfigErrorDeleted  // the same, deleted at 12:05:30 (gone 10 s later)
};

constexpr const char* kBeforeStall = "2024-05-01T12:06:10Z";
constexpr const char* kAfterStall = "2024-05-01T12:08:00Z";
constexpr const char* kAfterDeadline = "2024-05-01T12:12:00Z";
constexpr const char* kExitedAfterDeadline = "2024-05-01T12:11:30Z";
constexpr const char* kBeatBeforeExit = "2024-05-01T12:07:30Z";

struct Row {
  const char* why;
  // Causes.
  bool cancel = false;
  bool agent_missing = false;
  bool budget_spent = false;
  bool started = true;  // false: Queued, no Job ever made
  JobIs job = JobIs::kRunning;
  PodIs pod = PodIs::kNone;
  int exit_code = 0;
  const char* exited_at = "2024-05-01T12:06:00Z";
  bool result_unreadable = false;
  const char* lease_renewed = nullptr;
  const char* stored_reason = "";
  const char* now = kBeforeStall;
  // Outcome: status.phase ("" when absent); status.reason, else the first
  // Event's reason, else ""; whether the Job is deleted.
  const char* phase = "";
  const char* reason = "";
  bool delete_job = false;
};

// clang-format off
const Row kRows[] = {
    // A Pod that finished: cancel > exit 0 > deadline > stall (a Pod the
    // watchdog stopped) > exit code.
    {.why = "exit code alone", .pod = PodIs::kExited, .exit_code = 1, .phase = "Failed", .reason = "Error"},
    {.why = "exit code names the cause", .pod = PodIs::kExited, .exit_code = 69, .phase = "Failed", .reason = "ProviderError"},
    {.why = "exit 0", .pod = PodIs::kExited, .exit_code = 0, .phase = "Succeeded", .reason = "Completed"},
    {.why = "stall > exit code, its Job deleted", .job = JobIs::kGone, .pod = PodIs::kExited, .exit_code = 1, .exited_at = "2024-05-01T12:08:00Z", .now = kAfterStall, .phase = "Failed", .reason = "Stalled"},
    {.why = "stopped while its Job stands (the Job's deadline, an eviction): the exit code, not the window", .pod = PodIs::kStoppedAndExited, .exit_code = 143, .exited_at = "2024-05-01T12:08:00Z", .now = kAfterStall, .phase = "Failed", .reason = "Terminated"},
    {.why = "exited by itself, its Job standing: the exit code, not the window", .pod = PodIs::kExited, .exit_code = 1, .exited_at = "2024-05-01T12:08:00Z", .now = kAfterStall, .phase = "Failed", .reason = "Error"},
    {.why = "a beat holds off the stall", .pod = PodIs::kExited, .exit_code = 1, .exited_at = "2024-05-01T12:08:00Z", .lease_renewed = kBeatBeforeExit, .now = kAfterStall, .phase = "Failed", .reason = "Error"},
    {.why = "deadline > stall", .pod = PodIs::kExited, .exit_code = 1, .exited_at = kExitedAfterDeadline, .now = kAfterDeadline, .phase = "TimedOut", .reason = "DeadlineExceeded"},
    {.why = "the Job's deadline > exit code", .job = JobIs::kFailedDeadline, .pod = PodIs::kExited, .exit_code = 143, .phase = "TimedOut", .reason = "DeadlineExceeded"},
    {.why = "exit 0 > deadline", .pod = PodIs::kExited, .exit_code = 0, .exited_at = kExitedAfterDeadline, .now = kAfterDeadline, .phase = "Succeeded", .reason = "Completed"},
    {.why = "cancel > deadline", .cancel = true, .pod = PodIs::kExited, .exit_code = 1, .exited_at = kExitedAfterDeadline, .now = kAfterDeadline, .phase = "Cancelled", .reason = "Cancelled"},
    {.why = "exit 0 before the cancel took effect", .cancel = true, .pod = PodIs::kExited, .exit_code = 0, .phase = "Succeeded", .reason = "Completed"},
    {.why = "cancel > exit 0 of a Pod we stopped", .cancel = true, .pod = PodIs::kStoppedAndExited, .exit_code = 0, .phase = "Cancelled", .reason = "Cancelled"},
    {.why = "cancel > agent missing", .cancel = true, .agent_missing = true, .pod = PodIs::kExited, .exit_code = 1, .phase = "Cancelled", .reason = "Cancelled"},
    {.why = "agent missing > budget", .agent_missing = true, .budget_spent = true, .pod = PodIs::kExited, .exit_code = 1, .phase = "Cancelled", .reason = "AgentNotFound"},
    {.why = "budget cancels only a Pod we stopped", .budget_spent = true, .pod = PodIs::kExited, .exit_code = 1, .phase = "Failed", .reason = "Error"},
    {.why = "budget > exit code of a Pod we stopped", .budget_spent = true, .pod = PodIs::kStoppedAndExited, .exit_code = 1, .phase = "Cancelled", .reason = "BudgetExceeded"},
    {.why = "unreadable result > exit code", .pod = PodIs::kExited, .exit_code = 1, .result_unreadable = true, .phase = "Failed", .reason = "ResultUnreadable"},
    {.why = "deadline > unreadable result", .pod = PodIs::kExited, .exit_code = 1, .exited_at = kExitedAfterDeadline, .result_unreadable = true, .now = kAfterDeadline, .phase = "TimedOut", .reason = "DeadlineExceeded"},
    {.why = "stall > unreadable result", .job = JobIs::kGone, .pod = PodIs::kExited, .exit_code = 1, .exited_at = "2024-05-01T12:08:00Z", .result_unreadable = true, .now = kAfterStall, .phase = "Failed", .reason = "Stalled"},

    // The Job gone or done, no Pod result: cancel > deadline > config error >
    // stall > Job complete > Job failed > Job deleted.
    {.why = "a Job missing just after the start is cache lag", .job = JobIs::kGone, .now = "2024-05-01T12:05:10Z", .phase = "Running"},
    {.why = "cancel > cache lag", .cancel = true, .job = JobIs::kGone, .now = "2024-05-01T12:05:10Z", .phase = "Cancelled", .reason = "Cancelled"},
    {.why = "Job deleted", .job = JobIs::kGone, .phase = "Failed", .reason = "JobDeleted"},
    {.why = "budget > Job deleted", .budget_spent = true, .job = JobIs::kGone, .phase = "Cancelled", .reason = "BudgetExceeded"},
    {.why = "agent missing > budget, Job gone", .agent_missing = true, .budget_spent = true, .job = JobIs::kGone, .phase = "Cancelled", .reason = "AgentNotFound"},
    {.why = "deadline > Job deleted", .job = JobIs::kGone, .now = kAfterDeadline, .phase = "TimedOut", .reason = "DeadlineExceeded"},
    {.why = "cancel > deadline, Job gone", .cancel = true, .job = JobIs::kGone, .now = kAfterDeadline, .phase = "Cancelled", .reason = "Cancelled"},
    {.why = "the Job's deadline, no Pod", .job = JobIs::kFailedDeadline, .phase = "TimedOut", .reason = "DeadlineExceeded"},
    {.why = "config error > stall, Job gone", .job = JobIs::kGone, .pod = PodIs::kConfigErrorDeleted, .now = kAfterStall, .phase = "Failed", .reason = "ContainerConfigError"},
    {.why = "deadline > config error, Job gone", .job = JobIs::kGone, .pod = PodIs::kConfigErrorDeleted, .now = kAfterDeadline, .phase = "TimedOut", .reason = "DeadlineExceeded"},
    {.why = "a config error decided earlier > stall", .job = JobIs::kGone, .stored_reason = "ContainerConfigError", .now = kAfterStall, .phase = "Failed", .reason = "ContainerConfigError"},
    {.why = "stall > Job deleted", .job = JobIs::kGone, .now = kAfterStall, .phase = "Failed", .reason = "Stalled"},
    {.why = "Job complete without a result", .job = JobIs::kComplete, .phase = "Succeeded", .reason = "ResultUnreadable"},
    {.why = "stall > Job complete", .job = JobIs::kComplete, .now = kAfterStall, .phase = "Failed", .reason = "Stalled"},
    {.why = "Job failed", .job = JobIs::kFailedBackoff, .phase = "Failed", .reason = "BackoffLimitExceeded"},

    // The Job running: cancel > deadline > config error > stall; the run
    // stays Running until its Pod is gone.
    {.why = "cancel deletes the Job", .cancel = true, .phase = "Running", .delete_job = true},
    {.why = "cancel > deadline, Job running", .cancel = true, .now = kAfterDeadline, .phase = "Running", .delete_job = true},
    {.why = "budget deletes the Job", .budget_spent = true, .phase = "Running", .delete_job = true},
    {.why = "deadline", .now = kAfterDeadline, .phase = "Running", .reason = "DeadlineExceeded", .delete_job = true},
    {.why = "deadline > config error", .pod = PodIs::kConfigError, .now = kAfterDeadline, .phase = "Running", .reason = "DeadlineExceeded", .delete_job = true},
    {.why = "config error past its grace", .pod = PodIs::kConfigError, .now = "2024-05-01T12:05:40Z", .phase = "Running", .reason = "ContainerConfigError", .delete_job = true},
    {.why = "config error > stall", .pod = PodIs::kConfigError, .now = kAfterStall, .phase = "Running", .reason = "ContainerConfigError", .delete_job = true},
    {.why = "config error within its grace", .pod = PodIs::kConfigError, .now = "2024-05-01T12:05:20Z", .phase = "Running"},
    {.why = "stall", .now = kAfterStall, .phase = "Running", .reason = "Stalled", .delete_job = true},
    {.why = "a beat holds off the stall, Job running", .lease_renewed = kBeatBeforeExit, .now = kAfterStall, .phase = "Running"},

    // Never started: cancel > agent missing; a spent budget keeps it Queued.
    {.why = "cancel before the start", .cancel = true, .started = false, .job = JobIs::kGone, .phase = "Cancelled", .reason = "Cancelled"},
    {.why = "agent missing before the start", .agent_missing = true, .started = false, .job = JobIs::kGone, .phase = "Cancelled", .reason = "AgentNotFound"},
    {.why = "cancel > agent missing before the start", .cancel = true, .agent_missing = true, .started = false, .job = JobIs::kGone, .phase = "Cancelled", .reason = "Cancelled"},
    {.why = "budget keeps a Queued run waiting", .budget_spent = true, .started = false, .job = JobIs::kGone},
};
// clang-format on

Json run_for(const Row& row) {
  Json r = run("r1");
  if (row.started) {
    r["status"] = {{"phase", "Running"}, {"jobName", "r1"}, {"startedAt", "2024-05-01T12:05:00Z"}};
    if (*row.stored_reason != '\0') {
      r["status"]["reason"] = row.stored_reason;
      r["status"]["message"] = "the kubelet cannot start the runner";
    }
  }
  if (row.cancel) r["spec"]["cancel"] = true;
  return r;
}

std::optional<Json> job_for(const Row& row) {
  switch (row.job) {
    case JobIs::kGone:
      return std::nullopt;
    case JobIs::kRunning:
      return job("r1");
    case JobIs::kComplete:
      return job_condition(job("r1"), "Complete");
    case JobIs::kFailedDeadline:
      return job_condition(job("r1"), "Failed", "DeadlineExceeded");
    case JobIs::kFailedBackoff:
      return job_condition(job("r1"), "Failed", "BackoffLimitExceeded");
  }
  return std::nullopt;
}

std::optional<Json> pod_for(const Row& row) {
  const std::string result = row.result_unreadable ? "not json" : result_json(0.1);
  switch (row.pod) {
    case PodIs::kNone:
      return std::nullopt;
    case PodIs::kExited:
      return terminated(pod("r1-abc"), row.exit_code, result, row.exited_at);
    case PodIs::kStoppedAndExited: {
      Json p = terminated(pod("r1-abc"), row.exit_code, result, row.exited_at);
      p["metadata"]["deletionTimestamp"] = "2024-05-01T12:05:50Z";
      return p;
    }
    case PodIs::kConfigError:
    case PodIs::kConfigErrorDeleted: {
      Json p = pod("r1-abc", "2024-05-01T12:05:01Z");
      p["status"]["phase"] = "Pending";
      p["status"]["containerStatuses"] =
          Json::array({{{"name", "runner"},
                        {"state",
                         {{"waiting",
                           {{"reason", "CreateContainerConfigError"},
                            {"message", "couldn't find key api-key in Secret ns/llm"}}}}}}});
      if (row.pod == PodIs::kConfigErrorDeleted) {
        p["metadata"]["deletionTimestamp"] = "2024-05-01T12:05:30Z";
      }
      return p;
    }
  }
  return std::nullopt;
}

std::string outcome_reason(const RunObservation& o) {
  if (o.status.contains("reason")) return o.status["reason"];
  return o.events.empty() ? std::string() : o.events.front().reason;
}

TEST(RunStatusPriority, EachCombinationOfCausesHasItsOutcome) {
  for (const Row& row : kRows) {
    SCOPED_TRACE(row.why);
    const Json r = run_for(row);
    const std::optional<Json> j = job_for(row);
    const std::optional<Json> p = pod_for(row);
    const Json lease = {{"spec", {{"renewTime", row.lease_renewed ? row.lease_renewed : ""}}}};
    RunObservationInput in;
    in.run = &r;
    in.job = j ? &*j : nullptr;
    if (p) in.pods.push_back(&*p);
    in.lease = row.lease_renewed ? &lease : nullptr;
    in.agent_missing = row.agent_missing;
    in.budget_exceeded = row.budget_spent;
    in.timeouts = {std::chrono::seconds(300), std::chrono::seconds(30), std::chrono::seconds(120)};
    in.pricing = kTestPricing;
    in.bounds = usage_bounds(AgentSpec{});
    in.now = at(row.now);
    const RunObservation o = observe_run(in);
    EXPECT_EQ(string_at(o.status, "phase"), row.phase);
    EXPECT_EQ(outcome_reason(o), row.reason);
    EXPECT_EQ(o.delete_job, row.delete_job);
    EXPECT_EQ(o.became_final, is_final(o.phase));
  }
}

}  // namespace
}  // namespace hb::controllers
