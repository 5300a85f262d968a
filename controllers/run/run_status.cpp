#include "controllers/run/run_status.h"

#include <algorithm>

#include "api/hb_assert.h"
#include "api/run_result.h"
#include "api/usage_report.h"
#include "controllers/model/names.h"
#include "controllers/model/provider_backoff.h"
#include "controllers/model/text_util.h"
#include "controllers/policy/provider_hold.h"
#include "controllers/run/run_final_status.h"
#include "controllers/run/run_pod_state.h"
#include "controllers/run/run_record.h"
#include "controllers/schedule/blocks.h"
#include "controllers/schedule/utc_time.h"

namespace hb::controllers {

namespace {

// A run checked by time alone is looked at again just past the moment it
// could change.
constexpr std::chrono::seconds kRecheckPast{1};

// Why the operator ends the run itself, strongest first: spec.cancel, the
// agent gone, a paused policy with spec.cancelRunning, the month's budget
// spent.
struct CancelCause {
  bool before_start = false;  // cancel or agent gone: ends even a run that never started
  bool any = false;           // or a policy's pause or the budget: ends a started run
  std::string reason, message;
};

CancelCause cancel_cause(const RunView& view, const RunObservationInput& in) {
  CancelCause cause;
  cause.before_start = view.cancel || in.agent_missing;
  cause.any = cause.before_start || !in.cancelled_by_policy.empty() ||
              !in.stopped_by_team_budget.empty() || in.budget_exceeded || in.daily_budget_exceeded;
  if (view.cancel) {
    cause.reason = kReasonCancelled;
    cause.message = "spec.cancel was set";
  } else if (in.agent_missing) {
    cause.reason = kReasonAgentNotFound;
    cause.message = "the agent " + view.agent_name + " is gone";
  } else if (!in.cancelled_by_policy.empty()) {
    cause.reason = schedule::kReasonPolicyPaused;
    cause.message =
        "HeartbeatPolicy " + in.cancelled_by_policy + " is paused with spec.cancelRunning: true";
  } else if (in.budget_exceeded) {
    cause.reason = kReasonBudgetExceeded;
    cause.message = "the agent's monthly budget (spec.budget.monthlyCents) is spent";
  } else if (in.daily_budget_exceeded) {
    cause.reason = std::string(schedule::kReasonDailyBudgetExceeded);
    cause.message = "the agent's daily budget (spec.budget.dailyCents) is spent for today";
  } else {
    cause.reason = std::string(in.team_budget_daily ? schedule::kReasonPolicyDailyBudgetExceeded
                                                    : schedule::kReasonPolicyBudgetExceeded);
    cause.message =
        "the team budget of HeartbeatPolicy " + in.stopped_by_team_budget + " (" +
        (in.team_budget_daily ? "spec.budget.dailyCents, today" : "spec.budget.monthlyCents") +
        ") is spent; spec.onExceeded: Finish lets runs in flight finish";
  }
  HB_ASSERT_MSG(!cause.reason.empty() && !cause.message.empty(),
                "a run the operator ends is told why");
  return cause;
}

// When the run started, when it passes its deadline and when it stalls.
struct RunClock {
  TimePoint started;
  TimePoint deadline_at;                 // the controller-side deadline
  TimePoint stalled_at;                  // the last beat (or the start) + the stall timeout
  std::optional<TimePoint> lease_renew;  // the last beat believed
};

TimePoint job_started_at(const Json* job, TimePoint now) {
  if (job == nullptr) return now;
  if (auto stamped = parse_rfc3339(annotation_at(*job, kAnnotationStartedAt))) return *stamped;
  return time_at(*job, "metadata/creationTimestamp").value_or(now);
}

RunClock run_clock(const RunView& view, const RunObservationInput& in) {
  RunClock clock;
  // A Job found without a recorded start (the Job is the start; Running is
  // written a pass later) started when the operator stamped it, by the
  // operator's clock; a Job without the stamp when it was created.
  clock.started = view.started_at.value_or(job_started_at(in.job, in.now));
  clock.deadline_at =
      clock.started + in.timeouts.timeout + in.timeouts.grace + kControllerDeadlineSlack;
  clock.lease_renew = in.lease ? time_at(*in.lease, "spec/renewTime") : std::nullopt;
  if (clock.lease_renew && *clock.lease_renew > in.now + kLeaseRenewFutureSkewMax) {
    clock.lease_renew.reset();
  }
  TimePoint last_alive =
      clock.lease_renew ? std::max(*clock.lease_renew, clock.started) : clock.started;
  if (in.lease != nullptr && in.lease_seen_at) {
    last_alive = std::max(last_alive, std::min(*in.lease_seen_at, in.now));
  }
  if (in.run_seen_at) last_alive = std::max(last_alive, std::min(*in.run_seen_at, in.now));
  clock.stalled_at = last_alive + in.timeouts.stall_window;
  HB_ASSERT_MSG(!clock.lease_renew || *clock.lease_renew <= in.now + kLeaseRenewFutureSkewMax,
                "a Lease renewal from the far future is not believed");
  HB_ASSERT_MSG(clock.stalled_at >= clock.started + in.timeouts.stall_window,
                "a run stalls no sooner than a stall window after it started");
  return clock;
}

std::string timed_out_message(const RunObservationInput& in) {
  return "the run passed runtime.timeoutSeconds (" + std::to_string(in.timeouts.timeout.count()) +
         "s)";
}

// The status of a started run, Running (also adopts a Job whose status
// write was lost).
Json running_status(Json status, const RunView& view, const Json* job, TimePoint started) {
  HB_ASSERT_MSG(!is_final(view.phase), "a final phase stays final: never marked Running again");
  status["phase"] = std::string(to_string(RunPhase::kRunning));
  // Why it waited (a Queued message, ConcurrencyLimited) is over.
  status.erase("reason");
  status.erase("message");
  status["jobName"] = job_name_for_run(view.name);
  if (job != nullptr) status["jobUID"] = string_at(*job, "metadata/uid");
  status["startedAt"] = schedule::format_rfc3339(started);
  return status;
}

std::string succeeded_reason(const api::ParsedResult& parsed) {
  if (!parsed.result) return "Completed";
  const std::string& stop = parsed.result->stop_reason;
  if (stop == "budget") return "BudgetExhausted";
  if (stop == "daily_budget") return "DailyBudgetExhausted";
  return camel_case(stop.empty() ? "completed" : stop);
}

// The runner's result on the outcome: its error joins a failure's message.
// An unreadable one renames an outcome read from the exit code; cancel,
// deadline and stall keep their reason.
Final with_result(Final f, api::ParsedResult parsed) {
  HB_ASSERT_MSG(is_final(f.phase), "a runner's result is joined only to a final outcome");
  if (!parsed.result) {
    const bool decided_by_operator = f.phase == RunPhase::kCancelled ||
                                     f.phase == RunPhase::kTimedOut || f.reason == kReasonStalled;
    if (!decided_by_operator) f.reason = kReasonResultUnreadable;
    f.message = (f.message.empty() ? std::string() : f.message + "; ") + parsed.problem;
    return f;
  }
  if (!parsed.result->error.empty() && f.phase == RunPhase::kFailed && f.reason != kReasonStalled) {
    f.message += ": " + parsed.result->error;
  }
  f.result = std::move(parsed.result);
  return f;
}

// Only the watchdog's own stop can be a stall: it deletes the Job, so a Pod
// that ended while its Job stood (by itself, or stopped by the Job
// controller's deadline or an eviction) says why with its exit code or the
// Job's condition. Its finish time is on the node's clock and the stall
// window on the operator's, too far apart to call a beating run Stalled.
bool stopped_by_watchdog(const RunObservationInput& in) {
  return in.job == nullptr || find_path(*in.job, "metadata/deletionTimestamp") != nullptr;
}

// The Pod finished: cancel > exit 0 > deadline > stall > the exit code.
Final finished_pod_outcome(const Json& pod, const CancelCause& cancel, const JobState& job,
                           const RunClock& clock, const RunObservationInput& in) {
  const PodExit exit = pod_exit(pod);
  // The budget or a policy's pause cancels only a Pod we stopped for it;
  // one that ended by itself keeps its own outcome (its cost may be what
  // spent the budget).
  const bool stopped_by_us = find_path(pod, "metadata/deletionTimestamp") != nullptr;
  const bool cancelled = cancel.before_start || (cancel.any && stopped_by_us);
  const TimePoint at = exit.finished_at.value_or(in.now);
  api::ParsedResult parsed = api::parse_run_result(exit.message);
  Final f{};
  // A Pod we stopped for a cancel is Cancelled even when its runner still
  // exited 0: on a real node the kubelet signals both containers at once,
  // so the tools server can end the agent's last call before the runner's
  // own SIGTERM lands, and the heartbeat "completes" only because it was
  // cut short. Its result and cost are kept either way.
  if (cancelled && (exit.exit_code != 0 || stopped_by_us)) {
    f = make_final(RunPhase::kCancelled, cancel.reason, cancel.message);
  } else if (exit.exit_code == 0) {
    f = make_final(RunPhase::kSucceeded, succeeded_reason(parsed), "");
  } else if (job.deadline || at > clock.deadline_at) {
    f = make_final(RunPhase::kTimedOut, kReasonDeadlineExceeded, timed_out_message(in));
  } else if (stopped_by_watchdog(in) && at > clock.stalled_at) {
    f = make_final(RunPhase::kFailed, kReasonStalled,
                   stall_message(in.timeouts.stall_window, &pod));
  } else {
    std::string reason = reason_for_exit(exit.exit_code, exit.terminated_reason);
    // A spent quota is not an outage: the quota hold waits for it, so it
    // must not also count into provider backoff's streak.
    if (reason == kReasonProviderError && parsed.result &&
        parsed.result->stop_reason == kStopReasonProviderQuota) {
      reason = kReasonProviderQuota;
    }
    f = make_final(RunPhase::kFailed, std::move(reason),
                   "the runner exited with code " + std::to_string(exit.exit_code));
  }
  f.pod_name = exit.pod_name;
  f.exit_code = exit.exit_code;
  f.signal = exit.signal;
  f.finished_at = exit.finished_at;
  const RunPhase decided = f.phase;
  Final out = with_result(std::move(f), std::move(parsed));
  HB_ASSERT_MSG(out.phase == decided, "the runner's result never changes the phase decided");
  return out;
}

// No Pod result and the Job gone or done: cancel > deadline > config error >
// stall > Job complete > Job failed > Job deleted.
Final outcome_without_result(const Json* pod, const CancelCause& cancel, const JobState& job,
                             const RunClock& clock, const RunView& view,
                             const RunObservationInput& in) {
  HB_ASSERT_MSG(pod == nullptr || !pod_finished(*pod),
                "a run is decided without a result only when no Pod of it finished");
  const std::string pod_name = pod != nullptr ? string_at(*pod, "metadata/name") : "";
  if (cancel.any) return make_final(RunPhase::kCancelled, cancel.reason, cancel.message, pod_name);
  if (job.deadline || in.now > clock.deadline_at) {
    return make_final(RunPhase::kTimedOut, kReasonDeadlineExceeded, timed_out_message(in),
                      pod_name);
  }
  if (auto config_error = container_config_error(pod)) {
    return make_final(RunPhase::kFailed, kReasonContainerConfigError, *config_error, pod_name);
  }
  if (view.reason == kReasonContainerConfigError) {
    // Decided before the Job was deleted; its Pod may be gone from every
    // cache since (a restarted operator keeps no tombstones).
    return make_final(RunPhase::kFailed, kReasonContainerConfigError, view.message, pod_name);
  }
  if (in.now > clock.stalled_at) {
    return make_final(RunPhase::kFailed, kReasonStalled,
                      stall_message(in.timeouts.stall_window, pod), pod_name);
  }
  if (job.complete) {
    return make_final(RunPhase::kSucceeded, kReasonResultUnreadable,
                      "the Job completed but no Pod result was seen", pod_name);
  }
  if (job.failed) {
    return make_final(RunPhase::kFailed, job.fail_reason.empty() ? "JobFailed" : job.fail_reason,
                      job.fail_message, pod_name);
  }
  return make_final(RunPhase::kFailed, kReasonJobDeleted,
                    "the Job was deleted before its Pod reported a result", pod_name);
}

// The Job is still running: whether to delete it and why, or when to look again.
struct RunningJobVerdict {
  bool delete_job = false;
  std::optional<Event> event;
  std::optional<std::string> config_error;  // written down with the delete: it outlives the Pod
  std::optional<TimePoint> recheck_at;
};

// cancel > deadline > config error (a runner that cannot start cannot beat:
// the kubelet's reason, not a stall) > stall.
RunningJobVerdict watch_running_job(const Json* pod, const CancelCause& cancel,
                                    const RunClock& clock, const RunView& view,
                                    const RunObservationInput& in) {
  RunningJobVerdict v;
  const std::optional<TimePoint> config_error_at = config_error_deadline(pod, clock.started);
  if (cancel.any) {
    v.delete_job = true;
  } else if (in.now > clock.deadline_at) {
    v.delete_job = true;
    v.event = Event{EventTarget::kRun, view.name, true, kReasonDeadlineExceeded,
                    "the run passed its deadline; deleting its Job"};
  } else if (config_error_at && in.now > *config_error_at) {
    v.delete_job = true;
    v.config_error = container_config_error(pod);
    v.event = Event{EventTarget::kRun, view.name, true, kReasonContainerConfigError,
                    *v.config_error + "; deleting its Job"};
  } else if (config_error_at) {
    v.recheck_at = std::min(clock.deadline_at, *config_error_at) + kRecheckPast;
  } else if (in.now > clock.stalled_at) {
    v.delete_job = true;
    v.event = Event{EventTarget::kRun, view.name, true, kReasonStalled,
                    stall_message(in.timeouts.stall_window, pod, "; deleting its Job")};
  } else {
    v.recheck_at = std::min(clock.deadline_at, clock.stalled_at) + kRecheckPast;
  }
  HB_ASSERT_MSG(v.delete_job != v.recheck_at.has_value(),
                "a running Job is either deleted or looked at again, never both or neither");
  HB_ASSERT_MSG(!v.recheck_at || *v.recheck_at > in.now, "a running run is looked at again later");
  return v;
}

// status.reportedUsage as the operator wrote it; nullopt when absent or
// not five non-negative counts.
std::optional<UsageCounts> stored_reported_usage(const Json& run) {
  const Json* stored = find_path(run, std::string("status/") + kStatusReportedUsage);
  if (stored == nullptr || !stored->is_object()) return std::nullopt;
  UsageCounts u;
  const std::pair<const char*, int64_t*> fields[] = {
      {"llmCalls", &u.llm_calls},
      {"inputTokens", &u.input_tokens},
      {"outputTokens", &u.output_tokens},
      {"toolCalls", &u.tool_calls},
      {"iterations", &u.iterations},
      {kCacheReadInputTokens, &u.cache_read_input_tokens},
      {kCacheWriteInputTokens, &u.cache_write_input_tokens}};
  for (const auto& [key, out] : fields) {
    if (!api::read_usage_count(*stored, key, *out).empty()) return std::nullopt;
  }
  HB_ASSERT_MSG(u.llm_calls >= 0 && u.input_tokens >= 0 && u.output_tokens >= 0 &&
                    u.tool_calls >= 0 && u.iterations >= 0 && u.cache_read_input_tokens >= 0 &&
                    u.cache_write_input_tokens >= 0,
                "a stored usage report holds no negative count");
  return u;
}

Json usage_counts_json(const UsageCounts& u) {
  Json out = {{"llmCalls", u.llm_calls},
              {"inputTokens", u.input_tokens},
              {"outputTokens", u.output_tokens},
              {"toolCalls", u.tool_calls},
              {"iterations", u.iterations}};
  put_cache_counts(out, u);
  return out;
}

// The Lease now reports less than the run reported before, or no longer
// names the run: whoever rewrote it may not lower the charge. The highest
// report is kept in the run's status (once: a restarted operator reads it
// back) with a warning Event.
void keep_highest_report(RunObservation& obs, const RunObservationInput& in) {
  HB_ASSERT_MSG(obs.view != nullptr && in.run != nullptr, "the run observed is in hand");
  const std::string& name = obs.view->name;
  const std::optional<UsageCounts> high = highest_reported_usage(in, name);
  if (!high) return;
  const std::optional<UsageCounts> current = beat_usage(in.lease, name);
  if (current && !usage_below_in_some_field(*current, *high)) return;
  if (stored_reported_usage(*in.run) == high) return;
  obs.status[kStatusReportedUsage] = usage_counts_json(*high);
  obs.events.push_back(
      {EventTarget::kRun, name, true, kReasonUsageReportLowered,
       "the agent's Lease reports less usage for this run than it reported before (it was "
       "rewritten, for example by a Pod running as the agent's runner ServiceAccount); the "
       "highest report is kept in status.reportedUsage and charged"});
}

}  // namespace

std::optional<UsageCounts> beat_usage(const Json* lease, const std::string& run_name) {
  if (lease == nullptr) return std::nullopt;
  const std::string_view text = annotation_at(*lease, api::kAnnotationUsage);
  if (text.empty()) return std::nullopt;
  api::DecodedUsageReport decoded = api::decode_usage_report(text);
  if (!decoded.report || decoded.report->run != run_name) return std::nullopt;
  const UsageCounts counts = usage_counts(*decoded.report);
  HB_ASSERT_MSG(counts.llm_calls >= 0 && counts.input_tokens >= 0 && counts.output_tokens >= 0 &&
                    counts.tool_calls >= 0 && counts.iterations >= 0,
                "a usage report that decodes holds no negative count");
  return counts;
}

std::optional<UsageCounts> highest_reported_usage(const RunObservationInput& in,
                                                  const std::string& run_name) {
  const std::optional<UsageCounts> beat = beat_usage(in.lease, run_name);
  std::optional<UsageCounts> high = beat;
  for (const std::optional<UsageCounts>& other :
       {in.reported_high, stored_reported_usage(*in.run)}) {
    if (other) high = high ? usage_field_max(*high, *other) : *other;
  }
  HB_ASSERT_MSG(!beat || !usage_below_in_some_field(*high, *beat),
                "the highest report is at least what the Lease reports now");
  return high;
}

namespace {

RunObservation observe_unchecked(const RunObservationInput& in) {
  HB_ASSERT_MSG(in.run != nullptr, "every caller observes a run it holds");
  RunObservation obs;
  obs.view = in.view != nullptr ? in.view : std::make_shared<const RunView>(view_run(*in.run));
  const RunView& view = *obs.view;
  obs.phase = view.phase;
  obs.settled = is_settled(view);
  if (obs.settled) return obs;
  const Json* stored = find_path(*in.run, "status");
  obs.status = stored != nullptr && stored->is_object() ? *stored : Json::object();
  if (is_final(view.phase)) return obs;
  const CancelCause cancel = cancel_cause(view, in);

  // Never started: no Job recorded and none in the cache.
  if (view.job_name.empty() && in.job == nullptr) {
    if (!cancel.before_start) return obs;
    Final f =
        make_final(RunPhase::kCancelled, cancel.reason, cancel.message + " before the run started");
    return finish_run(std::move(obs), std::move(f), in, view.created, std::nullopt);
  }

  // Started: its Job exists, the Running status not yet written (the
  // reconciler writes it after the dispatch, or a crash lost it). Nothing
  // else is decided until it is stored: the start time every later verdict
  // reads (stall, deadline) must not move when the Job goes away. Except a
  // Pod that has already ended while the Job is there to date the start:
  // its final status (which records the start too) is written at once, so
  // the agent's next run does not wait for a Running status queued behind
  // other agents' dispatches.
  keep_highest_report(obs, in);
  const RunClock clock = run_clock(view, in);
  const Json* pod = pick_pod(in.pods);
  obs.runner_started = pod != nullptr && runner_started(*pod);
  const bool ended_before_recorded = in.job != nullptr && pod != nullptr && pod_finished(*pod);
  if (view.job_name.empty() || view.phase != RunPhase::kRunning) {
    obs.status = running_status(std::move(obs.status), view, in.job, clock.started);
    obs.phase = RunPhase::kRunning;
    if (!ended_before_recorded) return obs;
  }
  const JobState job = job_state(in.job);
  if (pod != nullptr && pod_finished(*pod)) {
    Final f = finished_pod_outcome(*pod, cancel, job, clock, in);
    return finish_run(std::move(obs), std::move(f), in, clock.started, clock.lease_renew);
  }

  if (in.job == nullptr || job.complete || job.failed) {
    // Wait for the cache to show a Job just made, and for Pods going away.
    const bool cache_lag = in.job == nullptr && !cancel.any && in.pods.empty() &&
                           in.now < clock.started + kJobCacheGrace;
    if (cache_lag) {
      obs.recheck_at = clock.started + kJobCacheGrace;
      return obs;
    }
    const PodsGoingAway going = pods_going_away(in.pods, in.now);
    if (going.alive && in.now <= clock.deadline_at + kPodGoneSlack) {
      obs.recheck_at = going.gone_by.value_or(clock.deadline_at + kPodGoneSlack);
      obs.delete_job = in.job != nullptr && cancel.any;
      return obs;
    }
    Final f = outcome_without_result(pod, cancel, job, clock, view, in);
    return finish_run(std::move(obs), std::move(f), in, clock.started, clock.lease_renew);
  }

  RunningJobVerdict verdict = watch_running_job(pod, cancel, clock, view, in);
  obs.delete_job = verdict.delete_job;
  obs.recheck_at = verdict.recheck_at;
  if (verdict.config_error) {
    obs.status["reason"] = kReasonContainerConfigError;
    obs.status["message"] = *verdict.config_error;
  }
  if (verdict.event) obs.events.push_back(std::move(*verdict.event));
  return obs;
}

}  // namespace

RunObservation observe_run(const RunObservationInput& in) {
  RunObservation obs = observe_unchecked(in);
  HB_ASSERT_MSG(!is_final(obs.view->phase) || obs.phase == obs.view->phase,
                "a final phase stays final");
  HB_ASSERT(!obs.became_final || is_final(obs.phase));
  HB_ASSERT(!obs.settled || !obs.became_final);
  return obs;
}

}  // namespace hb::controllers
