#include "controllers/run_status.h"

#include <algorithm>
#include <cmath>

#include "api/exit_codes.h"
#include "api/heartbeat_pod.h"
#include "api/run_result.h"
#include "api/usage_report.h"
#include "api/utf8.h"
#include "controllers/names.h"
#include "controllers/schedule/utc_time.h"
#include "controllers/text_util.h"

namespace hb::controllers {

namespace {

constexpr int kSignalMax = 64;
// The kernel's, not the runner's: a runner killed outright (OOM, grace ran out).
constexpr int kExitSigkill = api::kExitSignalBase + 9;

// The runner container's status, by name only: the tools container's own
// termination message is the agent's to write and must never be read as
// the run's result.
const Json* runner_status(const Json& pod) {
  const Json* statuses = find_path(pod, "status/containerStatuses");
  if (statuses == nullptr || !statuses->is_array()) return nullptr;
  for (const Json& status : *statuses) {
    if (string_at(status, "name") == api::kRunnerContainerName) return &status;
  }
  return nullptr;
}

const Json* terminated_state(const Json& pod) {
  const Json* status = runner_status(pod);
  return status == nullptr ? nullptr : find_path(*status, "state/terminated");
}

bool pod_finished(const Json& pod) {
  const std::string phase = string_at(pod, "status/phase");
  return terminated_state(pod) != nullptr || phase == "Succeeded" || phase == "Failed";
}

// Why a Pod has not started its runner, when it says: a waiting container
// (ImagePullBackOff, CreateContainerConfigError for a missing Secret key) or
// an unschedulable Pod. Empty when the Pod gives no reason.
std::string pod_waiting_detail(const Json* pod) {
  if (pod == nullptr) return {};
  if (const Json* status = runner_status(*pod)) {
    if (const Json* waiting = find_path(*status, "state/waiting")) {
      const std::string reason = string_at(*waiting, "reason");
      const std::string message = string_at(*waiting, "message");
      if (!reason.empty()) {
        return "its container is waiting: " + reason +
               (message.empty() ? "" : " (" + message + ")");
      }
    }
  }
  const Json* conditions = find_path(*pod, "status/conditions");
  if (conditions != nullptr && conditions->is_array()) {
    for (const Json& c : *conditions) {
      if (string_at(c, "type") == "PodScheduled" && string_at(c, "status") == "False") {
        return "its Pod is not scheduled: " + string_at(c, "reason") + " (" +
               string_at(c, "message") + ")";
      }
    }
  }
  return {};
}

// The kubelet's message when it cannot configure the runner's container. The
// operator never reads Secrets: this is where a missing API key shows up.
std::optional<std::string> container_config_error(const Json* pod) {
  if (pod == nullptr || pod_finished(*pod)) return std::nullopt;
  const Json* status = runner_status(*pod);
  const Json* waiting = status == nullptr ? nullptr : find_path(*status, "state/waiting");
  if (waiting == nullptr || string_at(*waiting, "reason") != "CreateContainerConfigError") {
    return std::nullopt;
  }
  return std::string(api::utf8_prefix(
      "the kubelet cannot start the runner: " + string_at(*waiting, "message") +
          "; check that spec.model.apiKeySecretRef names a Secret and key in this namespace",
      kRunMessageBytesMax));
}

// When a config error fails the run: its grace after the Pod was created.
std::optional<TimePoint> config_error_deadline(const Json* pod, TimePoint started) {
  if (!container_config_error(pod)) return std::nullopt;
  return time_at(*pod, "metadata/creationTimestamp").value_or(started) + kContainerConfigErrorGrace;
}

std::string stall_message(std::chrono::seconds stall_window, const Json* pod,
                          std::string_view tail = {}) {
  std::string message =
      "no beat renewed the agent's Lease for " + std::to_string(stall_window.count()) + "s";
  if (std::string detail = pod_waiting_detail(pod); !detail.empty()) message += "; " + detail;
  message += tail;
  return std::string(api::utf8_prefix(message, kRunMessageBytesMax));
}

bool job_condition(const Json* job, std::string_view type, std::string* reason = nullptr,
                   std::string* message = nullptr) {
  if (job == nullptr) return false;
  const Json* conditions = find_path(*job, "status/conditions");
  if (conditions == nullptr || !conditions->is_array()) return false;
  for (const Json& c : *conditions) {
    if (string_at(c, "type") == type && string_at(c, "status") == "True") {
      if (reason) *reason = string_at(c, "reason");
      if (message) *message = string_at(c, "message");
      return true;
    }
  }
  return false;
}

std::string reason_for_exit(int64_t exit_code, const std::string& terminated_reason) {
  switch (exit_code) {
    case api::kExitProviderError:
      return "ProviderError";
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

struct Final {
  RunPhase phase;
  std::string reason;
  std::string message;
  std::optional<int64_t> exit_code;
  std::optional<int64_t> signal;
  std::string pod_name;
  std::optional<TimePoint> finished_at;
  std::optional<api::RunResult> result;
  Charge charge;
};

Final make_final(RunPhase phase, std::string reason, std::string message,
                 std::string pod_name = "") {
  Final f{};
  f.phase = phase;
  f.reason = std::move(reason);
  f.message = std::move(message);
  f.pod_name = std::move(pod_name);
  return f;
}

Json build_final_status(const Json& stored, const Final& f, TimePoint started,
                        const std::string& job_name, std::optional<TimePoint> lease_renew,
                        TimePoint now) {
  Json status = stored.is_object() ? stored : Json::object();
  const TimePoint finished = f.finished_at.value_or(now);
  status["phase"] = std::string(to_string(f.phase));
  status["reason"] = f.reason;
  if (f.message.empty()) {
    status.erase("message");
  } else {
    status["message"] = std::string(api::utf8_prefix(f.message, kRunMessageBytesMax));
  }
  if (!job_name.empty()) status["jobName"] = job_name;
  if (!f.pod_name.empty()) status["podName"] = f.pod_name;
  status["startedAt"] = schedule::format_rfc3339(started);
  status["finishedAt"] = schedule::format_rfc3339(finished);
  status["durationSeconds"] =
      std::max<int64_t>(0, schedule::unix_seconds(finished) - schedule::unix_seconds(started));
  if (f.exit_code) status["exitCode"] = *f.exit_code;
  if (f.signal) status["signal"] = *f.signal;
  const Charge& c = f.charge;
  Json usage = {{"inputTokens", c.usage.input_tokens}, {"outputTokens", c.usage.output_tokens},
                {"costCents", c.cost_cents},           {"llmCalls", c.usage.llm_calls},
                {"toolCalls", c.usage.tool_calls},     {"iterations", c.usage.iterations}};
  if (c.runner_cost_cents && std::isfinite(*c.runner_cost_cents) && *c.runner_cost_cents >= 0) {
    usage["reportedCostCents"] = *c.runner_cost_cents;
  }
  if (f.result) {
    const api::RunResult& r = *f.result;
    if (!r.stop_reason.empty()) status["stopReason"] = r.stop_reason;
    if (!r.output.empty())
      status["output"] = std::string(api::utf8_prefix(r.output, kRunOutputExcerptBytesMax));
    if (r.pause_minutes) {
      status["pauseUntil"] = schedule::format_rfc3339(now + std::chrono::minutes(*r.pause_minutes));
    }
    if (r.last_beat) status["lastBeatTime"] = schedule::format_rfc3339(*r.last_beat);
  }
  if (!status.contains("lastBeatTime") && lease_renew && *lease_renew >= started) {
    status["lastBeatTime"] = schedule::format_rfc3339(*lease_renew);
  }
  status["usage"] = usage;
  return status;
}

ChargeInput charge_input(const std::optional<api::RunResult>& result, const RunObservationInput& in,
                         const std::string& run_name) {
  ChargeInput charge;
  if (result) {
    charge.result = UsageCounts{result->llm_calls, result->input_tokens, result->output_tokens,
                                result->tool_calls, result->iterations};
    charge.result_usage_problem = result->usage_problem;
    charge.runner_cost_cents = result->cost_cents;
  }
  charge.beat = beat_usage(in.lease, run_name);
  charge.pricing = in.pricing;
  charge.bounds = in.bounds;
  return charge;
}

}  // namespace

std::optional<UsageCounts> beat_usage(const Json* lease, const std::string& run_name) {
  if (lease == nullptr) return std::nullopt;
  const Json* annotations = find_path(*lease, "metadata/annotations");
  if (annotations == nullptr || !annotations->is_object()) return std::nullopt;
  auto it = annotations->find(api::kAnnotationUsage);
  if (it == annotations->end() || !it->is_string()) return std::nullopt;
  api::DecodedUsageReport decoded = api::decode_usage_report(it->get<std::string>());
  if (!decoded.report || decoded.report->run != run_name) return std::nullopt;
  const api::UsageReport& r = *decoded.report;
  return UsageCounts{r.llm_calls, r.input_tokens, r.output_tokens, r.tool_calls, r.iterations};
}

const Json* pick_pod(const std::vector<const Json*>& pods) {
  const Json* best = nullptr;
  for (const Json* pod : pods) {
    if (pod == nullptr) continue;
    if (best == nullptr) {
      best = pod;
      continue;
    }
    const bool fin = pod_finished(*pod), best_fin = pod_finished(*best);
    if (fin != best_fin) {
      if (fin) best = pod;
      continue;
    }
    if (time_at(*pod, "metadata/creationTimestamp") >
        time_at(*best, "metadata/creationTimestamp")) {
      best = pod;
    }
  }
  return best;
}

RunObservation observe_run(const RunObservationInput& in) {
  RunObservation obs;
  const Json& run = *in.run;
  obs.view = in.view != nullptr ? in.view : std::make_shared<const RunView>(view_run(run));
  obs.phase = obs.view->phase;
  obs.settled = is_final(obs.view->phase) && obs.view->cost_recorded;
  if (obs.settled) return obs;
  const Json* stored = find_path(run, "status");
  obs.status = stored != nullptr && stored->is_object() ? *stored : Json::object();
  if (is_final(obs.view->phase)) return obs;

  const bool cancel_before_start = obs.view->cancel || in.agent_missing;
  const bool cancel = cancel_before_start || in.budget_exceeded;
  const std::string cancel_reason = obs.view->cancel   ? kReasonCancelled
                                    : in.agent_missing ? kReasonAgentNotFound
                                                       : kReasonBudgetExceeded;
  const std::string cancel_message =
      obs.view->cancel   ? "spec.cancel was set"
      : in.agent_missing ? "the agent " + obs.view->agent_name + " is gone"
                         : "the agent's monthly budget (spec.budget.monthlyCents) is spent";

  auto finish = [&](Final f, TimePoint started, std::optional<TimePoint> renew) {
    f.charge = charge_run(charge_input(f.result, in, obs.view->name));
    if (!f.charge.out_of_bounds.empty()) {
      f.message =
          std::string(api::utf8_prefix(f.charge.out_of_bounds + "; charged the bound; " + f.reason +
                                           (f.message.empty() ? "" : ": " + f.message),
                                       kRunMessageBytesMax));
      f.reason = kReasonUsageOutOfBounds;
    }
    if (f.charge.cost_mismatch) {
      obs.cost_mismatch = true;
      obs.events.push_back({EventTarget::kRun, obs.view->name, true, kReasonCostMismatch,
                            "the runner reported a cost that differs from tokens x "
                            "spec.model.pricing; charged the operator's figure"});
    }
    obs.phase = f.phase;
    obs.became_final = true;
    obs.status = build_final_status(
        obs.status, f, started,
        obs.view->job_name.empty() ? job_name_for_run(obs.view->name) : obs.view->job_name, renew,
        in.now);
    if (f.phase != RunPhase::kSucceeded) {
      obs.events.push_back(
          {EventTarget::kRun, obs.view->name, true, f.reason,
           "run " + std::string(to_string(f.phase)) + (f.message.empty() ? "" : ": " + f.message)});
    } else {
      obs.events.push_back({EventTarget::kRun, obs.view->name, false, "RunSucceeded",
                            "run finished: " + f.reason, /*routine=*/true});
    }
  };

  // Never started: no Job recorded and none in the cache.
  if (obs.view->job_name.empty() && in.job == nullptr) {
    if (cancel_before_start) {
      Final f = make_final(RunPhase::kCancelled, cancel_reason,
                           cancel_message + " before the run started");
      finish(f, obs.view->created, std::nullopt);
    }
    return obs;
  }

  // Started (or its Job exists though the status write was lost: adopt).
  const TimePoint started = obs.view->started_at.value_or(
      in.job ? time_at(*in.job, "metadata/creationTimestamp").value_or(in.now) : in.now);
  if (obs.view->job_name.empty() || obs.view->phase != RunPhase::kRunning) {
    obs.status["phase"] = std::string(to_string(RunPhase::kRunning));
    obs.status["jobName"] = job_name_for_run(obs.view->name);
    if (in.job != nullptr) obs.status["jobUID"] = string_at(*in.job, "metadata/uid");
    obs.status["startedAt"] = schedule::format_rfc3339(started);
    obs.phase = RunPhase::kRunning;
  }
  const TimePoint deadline_at =
      started + in.timeouts.timeout + in.timeouts.grace + kControllerDeadlineSlack;
  std::optional<TimePoint> renew =
      in.lease ? time_at(*in.lease, "spec/renewTime") : std::optional<TimePoint>();
  if (renew && *renew > in.now + kLeaseRenewFutureSkewMax) renew.reset();
  const TimePoint last_alive = renew ? std::max(*renew, started) : started;
  const TimePoint stalled_at = last_alive + in.timeouts.stall_window;

  std::string job_fail_reason, job_fail_message;
  const bool job_complete = job_condition(in.job, "Complete");
  const bool job_failed = job_condition(in.job, "Failed", &job_fail_reason, &job_fail_message);
  const bool job_deadline = job_failed && job_fail_reason == kReasonDeadlineExceeded;

  const Json* pod = pick_pod(in.pods);
  if (pod != nullptr && pod_finished(*pod)) {
    // The budget cancels only a Pod we stopped for it; one that ended by
    // itself keeps its own outcome (its cost may be what spent the budget).
    const bool stopped_by_us = find_path(*pod, "metadata/deletionTimestamp") != nullptr;
    const bool cancel_finished = cancel_before_start || (in.budget_exceeded && stopped_by_us);
    const Json* term = terminated_state(*pod);
    Final f{};
    f.pod_name = string_at(*pod, "metadata/name");
    const std::string pod_phase = string_at(*pod, "status/phase");
    int64_t exit_code = 0;
    std::string term_reason;
    std::string message;
    if (term != nullptr) {
      exit_code = int_at(*term, "exitCode").value_or(0);
      term_reason = string_at(*term, "reason");
      message = string_at(*term, "message");
      f.finished_at = time_at(*term, "finishedAt");
      if (int64_t sig = int_at(*term, "signal").value_or(0); sig > 0) f.signal = sig;
    } else {
      exit_code = pod_phase == "Succeeded" ? 0 : 1;
      term_reason = string_at(*pod, "status/reason");
    }
    if (!f.signal && exit_code > api::kExitSignalBase &&
        exit_code <= api::kExitSignalBase + kSignalMax) {
      f.signal = exit_code - api::kExitSignalBase;
    }
    f.exit_code = exit_code;
    const TimePoint at = f.finished_at.value_or(in.now);
    api::ParsedResult parsed = api::parse_run_result(message);
    f.result = parsed.result;
    // A Pod we stopped for a cancel is Cancelled even when its runner still
    // exited 0: on a real node the kubelet signals both containers at once,
    // so the tools server can end the agent's last call before the runner's
    // own SIGTERM lands, and the heartbeat "completes" only because it was
    // cut short. Its result and cost are kept either way.
    if (cancel_finished && (exit_code != 0 || stopped_by_us)) {
      f.phase = RunPhase::kCancelled;
      f.reason = cancel_reason;
      f.message = cancel_message;
    } else if (exit_code == 0) {
      f.phase = RunPhase::kSucceeded;
      f.reason = parsed.result ? camel_case(parsed.result->stop_reason.empty()
                                                ? api::to_string(api::StopReason::kCompleted)
                                                : parsed.result->stop_reason)
                               : "Completed";
      if (parsed.result && parsed.result->stop_reason == api::to_string(api::StopReason::kBudget)) {
        f.reason = "BudgetExhausted";
      }
    } else if (job_deadline || at > deadline_at) {
      f.phase = RunPhase::kTimedOut;
      f.reason = kReasonDeadlineExceeded;
      f.message = "the run passed runtime.timeoutSeconds (" +
                  std::to_string(in.timeouts.timeout.count()) + "s)";
    } else if (at > stalled_at) {
      f.phase = RunPhase::kFailed;
      f.reason = kReasonStalled;
      f.message = stall_message(in.timeouts.stall_window, pod);
    } else {
      f.phase = RunPhase::kFailed;
      f.reason = reason_for_exit(exit_code, term_reason);
      f.message = "the runner exited with code " + std::to_string(exit_code);
    }
    if (parsed.result && !parsed.result->error.empty() && f.phase == RunPhase::kFailed &&
        f.reason != kReasonStalled) {
      f.message += ": " + parsed.result->error;
    }
    if (!parsed.result) {
      // Cancel, deadline and stall keep their reason; the exit-code ones give way.
      const bool decided_by_operator = f.phase == RunPhase::kCancelled ||
                                       f.phase == RunPhase::kTimedOut || f.reason == kReasonStalled;
      if (!decided_by_operator) f.reason = kReasonResultUnreadable;
      f.message = (f.message.empty() ? std::string() : f.message + "; ") + parsed.problem;
    }
    finish(std::move(f), started, renew);
    return obs;
  }

  // No finished Pod. Are Pods still going away?
  std::optional<TimePoint> pod_gone_by;
  bool pods_alive = false;
  for (const Json* p : in.pods) {
    if (p == nullptr || pod_finished(*p)) continue;
    if (auto deleting = time_at(*p, "metadata/deletionTimestamp")) {
      const TimePoint by = *deleting + kPodGoneSlack;
      if (in.now < by) {
        pods_alive = true;
        pod_gone_by = pod_gone_by ? std::min(*pod_gone_by, by) : by;
      }
    } else {
      pods_alive = true;
    }
  }

  const bool job_done = job_complete || job_failed;
  if (in.job == nullptr || job_done) {
    const bool cache_lag =
        in.job == nullptr && !cancel && in.pods.empty() && in.now < started + kJobCacheGrace;
    if (cache_lag) {
      obs.recheck_at = started + kJobCacheGrace;
      return obs;
    }
    if (pods_alive && in.now <= deadline_at + kPodGoneSlack) {
      obs.recheck_at = pod_gone_by.value_or(deadline_at + kPodGoneSlack);
      if (in.job != nullptr && cancel) obs.delete_job = true;
      return obs;
    }
    Final f{};
    if (pod != nullptr) f.pod_name = string_at(*pod, "metadata/name");
    if (cancel) {
      f = make_final(RunPhase::kCancelled, cancel_reason, cancel_message, f.pod_name);
    } else if (job_deadline || in.now > deadline_at) {
      f = make_final(RunPhase::kTimedOut, kReasonDeadlineExceeded,
                     "the run passed runtime.timeoutSeconds (" +
                         std::to_string(in.timeouts.timeout.count()) + "s)",
                     f.pod_name);
    } else if (auto config_error = container_config_error(pod)) {
      f = make_final(RunPhase::kFailed, kReasonContainerConfigError, *config_error, f.pod_name);
    } else if (obs.view->reason == kReasonContainerConfigError) {
      // Decided before the Job was deleted; its Pod may be gone from every
      // cache since (a restarted operator keeps no tombstones).
      f = make_final(RunPhase::kFailed, kReasonContainerConfigError, obs.view->message, f.pod_name);
    } else if (in.now > stalled_at) {
      f = make_final(RunPhase::kFailed, kReasonStalled,
                     stall_message(in.timeouts.stall_window, pod), f.pod_name);
    } else if (job_complete) {
      f = make_final(RunPhase::kSucceeded, kReasonResultUnreadable,
                     "the Job completed but no Pod result was seen", f.pod_name);
    } else if (job_failed) {
      f = make_final(RunPhase::kFailed, job_fail_reason.empty() ? "JobFailed" : job_fail_reason,
                     job_fail_message, f.pod_name);
    } else {
      f = make_final(RunPhase::kFailed, kReasonJobDeleted,
                     "the Job was deleted before its Pod reported a result", f.pod_name);
    }
    finish(std::move(f), started, renew);
    return obs;
  }

  // The Job is running.
  const std::optional<TimePoint> config_error_at = config_error_deadline(pod, started);
  if (cancel) {
    obs.delete_job = true;
  } else if (in.now > deadline_at) {
    obs.delete_job = true;
    obs.events.push_back({EventTarget::kRun, obs.view->name, true, kReasonDeadlineExceeded,
                          "the run passed its deadline; deleting its Job"});
  } else if (config_error_at) {
    // A runner that cannot start cannot beat: the kubelet's reason, not a stall.
    if (in.now > *config_error_at) {
      // The decision is written down with the delete, so it outlives the Pod.
      const std::string config_error = *container_config_error(pod);
      obs.delete_job = true;
      obs.status["reason"] = kReasonContainerConfigError;
      obs.status["message"] = config_error;
      obs.events.push_back({EventTarget::kRun, obs.view->name, true, kReasonContainerConfigError,
                            config_error + "; deleting its Job"});
    } else {
      obs.recheck_at = std::min(deadline_at, *config_error_at) + std::chrono::seconds(1);
    }
  } else if (in.now > stalled_at) {
    obs.delete_job = true;
    obs.events.push_back({EventTarget::kRun, obs.view->name, true, kReasonStalled,
                          stall_message(in.timeouts.stall_window, pod, "; deleting its Job")});
  } else {
    obs.recheck_at = std::min(deadline_at, stalled_at) + std::chrono::seconds(1);
  }
  return obs;
}

}  // namespace hb::controllers
