#include "controllers/shell/agent_pass_writer.h"

#include <spdlog/spdlog.h>

#include "controllers/model/names.h"
#include "controllers/run/run_after_job.h"
#include "controllers/run/run_record.h"
#include "controllers/runtime/agent_metrics.h"
#include "controllers/schedule/utc_time.h"

namespace hb::controllers {

namespace {

using kube::ErrorKind;

}  // namespace

AgentReconciler::PassWriter::PassWriter(AgentReconciler& reconciler, Json& agent,
                                        const AgentSpec& spec, std::vector<Json>& runs,
                                        TimePoint now)
    : r_(reconciler),
      agent_(agent),
      spec_(spec),
      runs_(runs),
      now_(now),
      ns_(string_at(agent, "metadata/namespace")),
      name_(name_of(agent)) {}

WriteResult AgentReconciler::PassWriter::check(kube::Done done) {
  if (done.ok()) return WriteResult::kDone;
  error = std::move(done).error();
  return WriteResult::kFailed;
}

// The reconcile pass holds a RequestPriorityScope, which restores the
// thread's priority when the pass ends.
void AgentReconciler::PassWriter::before(const PlannedWrite& write) {
  kube::set_current_request_priority(write.priority);
}

WriteResult AgentReconciler::PassWriter::delete_job(const std::string& run) {
  return check(r_.delete_job(ns_, job_name_for_run(run)));
}

WriteResult AgentReconciler::PassWriter::delete_run(const std::string& run) {
  return check(r_.delete_run(ns_, run));
}

// AlreadyExists: adopted when this Agent owns it (an earlier pass made it);
// anything else under the slot's name is someone else's, never started.
WriteResult AgentReconciler::PassWriter::create_run(const RunRequest& request) {
  Json run = make_run_object(spec_, request);
  r_.stamp_policies(run);
  kube::Result<CreatedOrFound> created = r_.writes_->create_or_find_run(ns_, run);
  if (!created.ok()) return check(std::move(created).error());
  if (created.value().made) {
    runs_.push_back(std::move(created).value().object);
    spdlog::info("event=run_created agent={}/{} run={} slot={}", ns_, name_, request.name,
                 schedule::format_rfc3339(request.slot.value_or(now_)));
    return WriteResult::kDone;
  }
  Json& existing = created.value().object;
  if (run_of_agent(existing, string_at(agent_, "metadata/uid"))) {
    r_.overlay_.put(kOverlayRuns, existing);  // read-your-writes, as for a run made here
    runs_.push_back(std::move(existing));
    return WriteResult::kDone;
  }
  record_event({EventTarget::kAgent, name_, true, "RunNameConflict",
                "HeartbeatRun " + request.name + " exists and is not owned by this agent"});
  return WriteResult::kNameTaken;
}

// The run for a new heartbeat.dev/invoke value; the annotation stays (Git
// may hold it) and the status written after it records the value. A pass
// repeated before that status landed finds the run by its name.
WriteResult AgentReconciler::PassWriter::invoke_run(const RunRequest& request) {
  const WriteResult result = create_run(request);
  if (result == WriteResult::kDone) {
    spdlog::info("event=run_invoked agent={}/{} run={}", ns_, name_, request.name);
  }
  return result;
}

// A callback run for the Agent another's run @mentioned, owned by that
// Agent, which starts it under its own blocks (pause, budget, queue). The
// target is looked up again here: gone or no longer accepting, nothing is
// made; AlreadyExists is this pass repeated.
WriteResult AgentReconciler::PassWriter::mention_run(const MentionRequest& request) {
  const std::optional<Json> target = r_.agent(ns_, request.target);
  if (!target || find_path(*target, "metadata/deletionTimestamp") != nullptr) {
    return WriteResult::kDone;
  }
  const AgentSpec target_spec = parse_agent_spec(*target).spec;
  if (!accepts_mention(target_spec.mentions, name_)) return WriteResult::kDone;
  Json run = make_run_object(target_spec, kSourceCallback, request.name, "", std::nullopt,
                             request.trigger_detail);
  run["metadata"]["annotations"][kAnnotationMentionDepth] = std::to_string(request.depth);
  kube::Result<Json> created = r_.create_run(ns_, run);
  if (!created.ok() && !created.is(ErrorKind::kAlreadyExists)) {
    return check(std::move(created).error());
  }
  if (created.ok()) {
    spdlog::info("event=run_mentioned agent={}/{} target={} run={} depth={}", ns_, name_,
                 request.target, request.name, request.depth);
  }
  return WriteResult::kDone;
}

// Conditional on the Agent's resourceVersion: a 409 means another pass wrote
// first, and the spend this status counts is counted by whichever one won.
WriteResult AgentReconciler::PassWriter::replace_agent_status(const Json& status) {
  Json body = agent_;
  body["status"] = status;
  kube::Result<Json> updated = r_.writes_->replace_agent_status(ns_, name_, body);
  if (!updated.ok()) return check(std::move(updated).error());
  return WriteResult::kDone;
}

WriteResult AgentReconciler::PassWriter::write_run_status(const PlannedWrite& write) {
  Json* run = find_named(runs_, write.run);
  if (run == nullptr) return WriteResult::kDone;
  const WriteResult result = check(r_.write_run_status(*run, write.status, write.final_with_label));
  if (result == WriteResult::kDone) finals_ahead.erase(write.run);
  if (result == WriteResult::kDone) count_finished(write);
  return result;
}

// Metrics and a log line for a run that ended in this write.
void AgentReconciler::PassWriter::count_finished(const PlannedWrite& write) {
  const Json& status = write.status;
  if (write.purpose == RunStatusPurpose::kFolded) {
    r_.metrics_.counter_add("heartbeat_runs_coalesced_total", {});
    spdlog::info("event=wakeup_coalesced agent={}/{} run={} into={}", ns_, name_, write.run,
                 write.folded_into);
    return;
  }
  if (write.purpose != RunStatusPurpose::kCounted) return;
  const std::string phase = string_at(status, "phase");
  const double cents = number_at(status, "usage/costCents").value_or(0);
  r_.metrics_.counter_add("heartbeat_runs_total", {{"phase", phase}});
  r_.metrics_.counter_add(kAgentRunsMetric, agent_run_labels(ns_, name_, phase));
  if (string_at(status, "reason") == kReasonStalled) {
    r_.metrics_.counter_add("heartbeat_runs_stalled_total", {});
  }
  if (write.cost_mismatch) r_.metrics_.counter_add("heartbeat_cost_mismatch_total", {});
  if (string_at(status, "reason") == kReasonUsageOutOfBounds) {
    r_.metrics_.counter_add("heartbeat_usage_out_of_bounds_total", {});
  }
  r_.metrics_.counter_add("heartbeat_cost_cents_total", {}, cents);
  spdlog::info(
      "event=run_finished agent={}/{} run={} phase={} reason={} exit_code={} cost_cents={}", ns_,
      name_, write.run, phase, string_at(status, "reason"), int_at(status, "exitCode").value_or(-1),
      cents);
}

WriteResult AgentReconciler::PassWriter::start_run(const std::string& run) {
  Json* stored = find_named(runs_, run);
  if (stored == nullptr) return WriteResult::kDone;
  if (!commit_admission(run)) return WriteResult::kHeldBack;
  std::vector<Json> ending;  // copies of the runs whose final status is still to be written
  ending.reserve(finals_ahead.size());
  std::vector<const Json*> history;
  for (const Json& r : runs_) {
    auto final_status = finals_ahead.find(name_of(r));
    if (final_status == finals_ahead.end()) {
      history.push_back(&r);
      continue;
    }
    ending.push_back(r);
    ending.back()["status"] = final_status->second;
    history.push_back(&ending.back());
  }
  kube::Result<bool> started = r_.start_run(agent_, spec_, *stored, history, prompt, now_);
  if (!started.ok()) return check(std::move(started).error());
  return started.value() ? WriteResult::kDone : WriteResult::kHeldBack;
}

// The slot's run, Job first: the run as it will be made, its Job carrying
// it (run_after_job.h); the next pass makes it. A start that does not make
// the Job makes the run here instead (queued, or failed before it started),
// so the slot is never recorded as handled without its run.
WriteResult AgentReconciler::PassWriter::start_slot_run(const RunRequest& request) {
  HB_ASSERT_MSG(request.slot.has_value(), "only a slot's own run starts before it is made");
  if (other_agents_runs.contains(request.name) || find_named(runs_, request.name) != nullptr) {
    // Its name is a run's already (an earlier Agent's): made and started
    // as any run, so a name someone else holds starts nothing.
    const WriteResult created = create_run(request);
    return created == WriteResult::kDone ? start_run(request.name) : created;
  }
  Json run = make_run_object(spec_, request);
  r_.stamp_policies(run);
  trace_before_uid(run);
  runs_.push_back(std::move(run));
  const WriteResult result = start_run(request.name);
  Json* started = find_named(runs_, request.name);
  HB_ASSERT(started != nullptr);
  if (result == WriteResult::kFailed && string_at(*started, "metadata/uid").empty()) {
    // No Job: the run made Queued, or the pass stops before it records the slot.
    kube::Done made = r_.make_unless_made(*started);
    if (!made.ok()) {
      runs_.pop_back();
      return WriteResult::kFailed;  // keeps the start's error
    }
    return WriteResult::kStartFailed;
  }
  if (result == WriteResult::kHeldBack && string_at(*started, "metadata/uid").empty()) {
    // Held back before it was made (the gate's admission went stale).
    if (check(r_.make_unless_made(*started)) == WriteResult::kFailed) return WriteResult::kFailed;
  }
  return result;
}

bool AgentReconciler::PassWriter::commit_admission(const std::string& run) {
  if (!r_.config_.concurrency) return true;
  HB_ASSERT_MSG(admission && admission->run == object_key(ns_, run),
                "a run starts only under the admission its decision asked for");
  const Admission committed = r_.config_.concurrency->admit(*admission);
  if (!committed.admitted) {
    // Another worker took the place since the snapshot: the run stays
    // Queued, and the agent, now in the gate's line, decides again.
    spdlog::info("event=admission_stale agent={}/{} run={} message=\"{}\"", ns_, name_, run,
                 committed.message);
    r_.metrics_.counter_add("heartbeat_admissions_stale_total", {});
    return false;
  }
  admitted.insert(run);
  return true;
}

void AgentReconciler::PassWriter::record_event(const Event& event) {
  const Json* run =
      event.target == EventTarget::kRun ? find_named(runs_, event.object_name) : nullptr;
  if (event.warning) {
    spdlog::warn("event=decision agent={}/{} object={} reason={} message=\"{}\"", ns_, name_,
                 event.object_name, event.reason, event.message);
  }
  r_.record_event(agent_, run, event, now_);
}

}  // namespace hb::controllers
