#include "controllers/run/run_final_status.h"

#include <algorithm>
#include <cmath>

#include "api/agent_types.h"
#include "api/contract_limits.h"
#include "api/exit_codes.h"
#include "api/hb_assert.h"
#include "api/heartbeat_pod.h"
#include "api/utf8.h"
#include "controllers/model/names.h"
#include "controllers/model/provider_backoff.h"
#include "controllers/model/text_util.h"
#include "controllers/policy/provider_hold.h"
#include "controllers/run/run_record.h"
#include "controllers/schedule/utc_time.h"
#include "controllers/spend/budget_hold_ahead.h"

namespace hb::controllers {

namespace {

// The run's times are whole seconds (the Pod's start and finish) while the
// runner times its calls to the millisecond: a run's calls may sum to
// this much more than its times say it lasted.
constexpr double kCallDurationsClockSlackSeconds = 2;

// The kernel's, not the runner's: a runner killed outright (OOM, grace ran out).
constexpr int kExitSigkill = api::kExitSignalBase + 9;

Json build_final_status(const Json& stored, const Final& f, const Charge& c, TimePoint started,
                        const std::string& job_name, std::optional<TimePoint> lease_renew,
                        TimePoint now) {
  HB_ASSERT_MSG(is_final(f.phase), "only a final outcome is written as a final status");
  Json status = stored.is_object() ? stored : Json::object();
  const TimePoint finished = f.finished_at.value_or(now);
  status["phase"] = std::string(to_string(f.phase));
  status["reason"] = f.reason;
  if (f.message.empty()) {
    status.erase("message");
  } else {
    status["message"] = api::utf8_prefix_string(f.message, kRunMessageBytesMax);
  }
  if (!job_name.empty()) status["jobName"] = job_name;
  if (!f.pod_name.empty()) status["podName"] = f.pod_name;
  status["startedAt"] = schedule::format_rfc3339(started);
  status["finishedAt"] = schedule::format_rfc3339(finished);
  status["durationSeconds"] =
      std::max<int64_t>(0, schedule::unix_seconds(finished) - schedule::unix_seconds(started));
  if (f.exit_code) status["exitCode"] = *f.exit_code;
  if (f.signal) status["signal"] = *f.signal;
  Json usage = {{"inputTokens", c.usage.input_tokens}, {"outputTokens", c.usage.output_tokens},
                {"costCents", c.cost_cents},           {"llmCalls", c.usage.llm_calls},
                {"toolCalls", c.usage.tool_calls},     {"iterations", c.usage.iterations}};
  put_cache_counts(usage, c.usage);
  if (c.runner_cost_cents && std::isfinite(*c.runner_cost_cents) && *c.runner_cost_cents >= 0) {
    usage["reportedCostCents"] = *c.runner_cost_cents;
  }
  if (f.result) {
    const api::RunResult& r = *f.result;
    if (!r.stop_reason.empty()) status["stopReason"] = r.stop_reason;
    if (!r.output.empty())
      status["output"] = api::utf8_prefix_string(r.output, kRunOutputExcerptBytesMax);
    if (r.pause_minutes) {
      status["pauseUntil"] = schedule::format_rfc3339(now + std::chrono::minutes(*r.pause_minutes));
    }
    if (r.last_beat) status["lastBeatTime"] = schedule::format_rfc3339(*r.last_beat);
    // Counts the provider did not report, charged as the runner estimated them.
    if (!r.estimated_usage.empty()) usage["estimated"] = r.estimated_usage;
    if (r.stop_reason == kStopReasonProviderQuota) {
      // Bounded here, once: every agent sharing the key is held until then.
      status["providerResetAt"] =
          schedule::format_rfc3339(provider_hold_until(r.provider_reset_at, finished));
    }
  }
  if (!status.contains("lastBeatTime") && lease_renew && *lease_renew >= started) {
    status["lastBeatTime"] = schedule::format_rfc3339(*lease_renew);
  }
  status["usage"] = usage;
  return status;
}

// Where the run's log is, and its ends: the runner container's log while
// the Job's Pod is kept, the transcript on the archival volume (a record is
// believed only where the Agent has that volume), the last characters of
// stdout and stderr.
void put_run_logs(Json& status, const Final& f, const RunObservationInput& in,
                  const std::string& run_name) {
  HB_ASSERT_MSG(in.run != nullptr, "a run's logs are written for the run observed");
  Json log = Json::object();
  if (!f.pod_name.empty()) {
    log["ref"] = "pod/" + string_at(*in.run, "metadata/namespace") + "/" + f.pod_name + "/" +
                 api::kRunnerContainerName;
  }
  if (f.result) {
    const api::RunResult& r = *f.result;
    if (!r.stdout_excerpt.empty()) status["stdoutExcerpt"] = r.stdout_excerpt;
    if (!r.stderr_excerpt.empty()) status["stderrExcerpt"] = r.stderr_excerpt;
    if (r.transcript && !in.archival_claim.empty()) {
      Json& t = log["transcript"] = Json::object();
      t["ref"] = "pvc/" + in.archival_claim + "/" + api::kTranscriptDirName + "/" + run_name +
                 api::kTranscriptFileSuffix;
      t["bytes"] = r.transcript->bytes;
      t["sha256"] = r.transcript->sha256;
      t["compressed"] = r.transcript->compressed;
      t["truncated"] = r.transcript->truncated;
      if (!r.transcript->note.empty()) t["note"] = r.transcript->note;
    }
  }
  if (!log.empty()) status["log"] = std::move(log);
}

// What the run was charged at (the Agent's model and the effective prices now, and whose, and the
// token cap now; none when the Agent is gone and nobody is charged) and the policies that admitted
// it (run_record.h admitting_policies).
void put_audit_fields(Json& status, const RunObservationInput& in) {
  if (in.agent_missing) {
    status.erase("charge");
  } else {
    status["charge"] =
        charge_record(in.provider, in.model, in.pricing, in.pricing_source, in.pricing_policy);
    if (in.per_run_tokens) status["charge"]["perRunTokens"] = *in.per_run_tokens;
  }
  status["policies"] = in.admitting_policies;
  if (in.job != nullptr) {
    if (const std::optional<double> held = held_cents_of_job(*in.job)) status["heldCents"] = *held;
  }
}

ChargeInput charge_input(const std::optional<api::RunResult>& result, const RunObservationInput& in,
                         const std::string& run_name) {
  HB_ASSERT_MSG(in.run != nullptr, "the run's own status is read for its highest report");
  ChargeInput charge;
  if (result) {
    charge.result = static_cast<const UsageCounts&>(*result);
    charge.result_usage_problem = result->usage_problem;
    charge.runner_cost_cents = result->cost_cents;
  }
  charge.beat = highest_reported_usage(in, run_name);
  charge.pricing = in.pricing;
  charge.bounds = in.bounds;
  return charge;
}

// `what` becomes the message's head and `reason` the reason; the outcome's
// reason and message are kept after it.
void rename_outcome(Final& f, const std::string& what, const char* reason) {
  f.message = api::utf8_prefix_string(
      what + "; " + f.reason + (f.message.empty() ? "" : ": " + f.message), kRunMessageBytesMax);
  f.reason = reason;
  HB_ASSERT_MSG(f.message.size() <= kRunMessageBytesMax, "a run's message stays within its cap");
}

// The charge for `f`; usage out of bounds is charged the bound and becomes
// the reason, and tokens past the run's cap by more than one call's worth
// (in.per_run_tokens) are named.
Charge charge_final(Final& f, const RunObservationInput& in, const std::string& run_name) {
  HB_ASSERT_MSG(is_final(f.phase), "only a run's final outcome is charged");
  Charge charge = charge_run(charge_input(f.result, in, run_name));
  if (!charge.out_of_bounds.empty()) {
    rename_outcome(f, charge.out_of_bounds + "; charged the bound", kReasonUsageOutOfBounds);
    return charge;
  }
  const int64_t tokens = saturating_add(charge.usage.input_tokens, charge.usage.output_tokens);
  if (in.per_run_tokens && *in.per_run_tokens > 0 &&
      tokens > saturating_mul(*in.per_run_tokens, 2)) {
    rename_outcome(f,
                   "used " + std::to_string(tokens) + " tokens, past budget.perRunTokens " +
                       std::to_string(*in.per_run_tokens) + " by more than one call's worth",
                   kReasonTokenCapExceeded);
  }
  return charge;
}

// The result's model-call durations, kept in status.usage when they can be
// true of the run as the operator saw it: no more calls than it charged and
// no longer than it ran (a runner's claim; the metric reads only this).
// Without its Agent a run is charged nothing (no bounds, no prices): its
// calls are bounded by its own count and what any agent type may make.
// Dropped with a warning Event otherwise; nothing else of the result is.
void put_call_durations(RunObservation& obs, const Final& f, const Charge& charge,
                        TimePoint started, const RunObservationInput& in) {
  HB_ASSERT_MSG(obs.view != nullptr, "a finished run's durations are told of the run observed");
  if (!f.result) return;
  std::string problem = f.result->call_durations_problem;
  if (problem.empty() && f.result->call_durations) {
    const std::chrono::duration<double> ran = f.finished_at.value_or(in.now) - started;
    const int64_t calls_max =
        in.agent_missing ? std::min<int64_t>(f.result->llm_calls, api::max_iterations_of_any_type())
                         : charge.usage.llm_calls;
    problem = api::call_durations_problem(*f.result->call_durations, calls_max,
                                          ran.count() + kCallDurationsClockSlackSeconds);
    if (problem.empty()) {
      obs.status["usage"]["modelCallDurations"] =
          api::call_durations_to_json(*f.result->call_durations);
      return;
    }
  }
  if (problem.empty()) return;
  obs.events.push_back({EventTarget::kRun, obs.view->name, true, kReasonCallDurationsDropped,
                        "the result's modelCallDurations were dropped: " + problem});
}

Event final_event(const std::string& run_name, const Final& f) {
  HB_ASSERT_MSG(is_final(f.phase) && (f.phase == RunPhase::kSucceeded || !f.reason.empty()),
                "a finished run's Event says why it ended");
  if (f.phase == RunPhase::kSucceeded) {
    return {EventTarget::kRun, run_name, false, "RunSucceeded", "run finished: " + f.reason,
            /*routine=*/true};
  }
  return {EventTarget::kRun, run_name, true, f.reason,
          "run " + std::string(to_string(f.phase)) + (f.message.empty() ? "" : ": " + f.message)};
}

}  // namespace

std::string reason_for_exit(int64_t exit_code, const std::string& terminated_reason) {
  // The runner's own codes are below the signal range: a code read as a kill never is one of them.
  static_assert(api::kExitProviderError < api::kExitSignalBase &&
                api::kExitInternalError < api::kExitSignalBase &&
                api::kExitConfigError < api::kExitSignalBase &&
                api::kExitToolsUnavailable < api::kExitSignalBase &&
                kExitSigkill > api::kExitSignalBase);
  switch (exit_code) {
    case api::kExitProviderError:
      return kReasonProviderError;
    case api::kExitInternalError:
      return "InternalError";
    case api::kExitConfigError:
      return "ConfigError";
    case api::kExitToolsUnavailable:
      return kReasonToolsUnavailable;
    case kExitSigkill:
      return terminated_reason == "OOMKilled" ? "OOMKilled" : "Killed";
    case api::kExitCancelled:
      return "Terminated";
    default:
      return terminated_reason == "OOMKilled" ? "OOMKilled" : "Error";
  }
}

Final make_final(RunPhase phase, std::string reason, std::string message, std::string pod_name) {
  HB_ASSERT_MSG(is_final(phase), "an outcome's phase is a final one");
  Final f{};
  f.phase = phase;
  f.reason = std::move(reason);
  f.message = std::move(message);
  f.pod_name = std::move(pod_name);
  return f;
}

RunObservation finish_run(RunObservation obs, Final f, const RunObservationInput& in,
                          TimePoint started, std::optional<TimePoint> lease_renew) {
  HB_ASSERT_MSG(!is_final(obs.view->phase), "a run finishes once: a final phase stays final");
  const std::string& name = obs.view->name;
  const Charge charge = charge_final(f, in, name);
  if (charge.cost_mismatch) {
    obs.cost_mismatch = true;
    obs.events.push_back({EventTarget::kRun, name, true, kReasonCostMismatch,
                          "the runner reported a cost that differs from tokens x "
                          "spec.model.pricing; charged the operator's figure"});
  }
  if (f.result && f.result->pause_minutes && !in.pause_allowed) {
    f.result->pause_minutes.reset();
    obs.events.push_back({EventTarget::kRun, name, true, kReasonPauseIgnored,
                          "the result asked to pause heartbeats, which this agent may not (its "
                          "type does not support heartbeats, or a command runner without "
                          "spec.runtime.pauseHeartbeats); the schedule is unchanged"});
  }
  HB_ASSERT_MSG(is_final(f.phase), "a run finishes only into a final phase");
  obs.phase = f.phase;
  obs.became_final = true;
  const std::string job_name =
      obs.view->job_name.empty() ? job_name_for_run(name) : obs.view->job_name;
  obs.status = build_final_status(obs.status, f, charge, started, job_name, lease_renew, in.now);
  put_run_logs(obs.status, f, in, name);
  put_audit_fields(obs.status, in);
  put_call_durations(obs, f, charge, started, in);
  // Judged once, here, from the result: the ledger counts it into the
  // agent's idle streak (idle_backoff.h).
  if (f.result && f.phase == RunPhase::kSucceeded) {
    obs.status["idle"] = result_is_idle(*f.result, in.idle_token, obs.view->agent_name);
  }
  obs.events.push_back(final_event(name, f));
  return obs;
}

}  // namespace hb::controllers
