#include "controllers/agent/agent_runs.h"

#include <algorithm>

#include "api/hb_assert.h"
#include "controllers/agent/agent_schedule_plan.h"

namespace hb::controllers {

namespace {

FinishedRun finished_run(const RunObservation& run, TimePoint now) {
  HB_ASSERT_MSG(is_final(run.phase), "only a finished run is counted");
  FinishedRun f;
  f.name = run.view->name;
  f.source = run.view->source;
  f.idle = bool_at(run.status, "idle");
  f.reason = string_at(run.status, "reason");
  f.phase = run.phase;
  f.exit_code = int_at(run.status, "exitCode");
  f.usage = usage_from_status(run.status);
  f.finished_at = time_at(run.status, "finishedAt").value_or(now);
  f.admitted_at = time_at(run.status, "startedAt");
  f.pause_until = time_at(run.status, "pauseUntil");
  f.policies = string_array_at(run.status, "policies");
  f.call_durations = call_durations_from_status(run.status);
  return f;
}

bool requested_earlier(const RunObservation* a, const RunObservation* b) {
  return a->view->requested != b->view->requested ? a->view->requested < b->view->requested
                                                  : a->view->name < b->view->name;
}

bool finished_later(const RunObservation* a, const RunObservation* b) {
  return a->view->finished_at.value_or(a->view->created) >
         b->view->finished_at.value_or(b->view->created);
}

// The names of `runs` past the newest `keep` (by finish time).
std::vector<std::string> oldest_beyond(std::vector<const RunObservation*> runs, int keep) {
  std::sort(runs.begin(), runs.end(), finished_later);
  const size_t kept = static_cast<size_t>(std::max(keep, 0));
  std::vector<std::string> names;
  for (size_t i = kept; i < runs.size(); ++i) names.push_back(runs[i]->view->name);
  HB_ASSERT_MSG(
      names.size() <= runs.size() && runs.size() - names.size() == std::min(kept, runs.size()),
      "exactly the newest `keep` runs are kept");
  return names;
}

}  // namespace

RunsByState sort_runs_by_state(const std::vector<RunObservation>& runs,
                               std::optional<TimePoint> stored_last_schedule, TimePoint now) {
  RunsByState sorted;
  sorted.last_scheduled = stored_last_schedule;
  for (const RunObservation& run : runs) {
    if (run.view->source == kSourceScheduler) {
      sorted.last_scheduled = later_time(sorted.last_scheduled, run.view->scheduled_time);
    }
    if (is_final(run.phase)) {
      if (!run.view->cost_recorded) sorted.uncounted.push_back(finished_run(run, now));
    } else if (run.phase == RunPhase::kRunning) {
      sorted.running = &run;
    } else {
      sorted.queued.push_back(&run);
    }
  }
  HB_ASSERT_MSG(!stored_last_schedule || *sorted.last_scheduled >= *stored_last_schedule,
                "the last scheduled slot never moves back");
  return sorted;
}

RunQueue order_queue(std::vector<const RunObservation*> queued) {
  RunQueue queue;
  std::sort(queued.begin(), queued.end(), requested_earlier);
  queue.folded = coalesce_callbacks(queued);
  std::erase_if(queued, [&](const RunObservation* q) {
    return std::any_of(queue.folded.begin(), queue.folded.end(),
                       [&](const Coalescing& c) { return c.run == q->view->name; });
  });
  queue.waiting = std::move(queued);
  HB_ASSERT_MSG(std::is_sorted(queue.waiting.begin(), queue.waiting.end(), requested_earlier),
                "the first waiting run is the one asked for first");
  return queue;
}

WaitReasons wait_reasons(bool agent_valid, const schedule::BlockResult& blocks,
                         const RunObservation* running) {
  HB_ASSERT_MSG(running == nullptr || running->phase == RunPhase::kRunning,
                "the run going on is a Running one");
  if (!agent_valid) return {"waiting: the agent's spec is invalid (see condition SpecValid)", ""};
  for (const schedule::Block& block : blocks.blocks) {
    if (block.reason != schedule::kReasonPausedByAgent) return {"waiting: " + block.message, ""};
  }
  if (running) return {"waiting for run " + running->view->name + " to finish", ""};
  if (blocks.blocked()) return {"", "waiting: " + blocks.blocks.front().message};
  return {};
}

namespace {

// wait_reasons holds every run or only the scheduled ones, never both.
bool held(const WaitReasons& why, const RunObservation& run) {
  HB_ASSERT(why.all.empty() || why.scheduled.empty());
  return !why.all.empty() || (!why.scheduled.empty() && run.view->source == kSourceScheduler);
}

// What a run that does not start now is told.
const std::string& why_waits(const WaitReasons& why, const RunObservation& run,
                             const std::string& behind) {
  HB_ASSERT(why.all.empty() || why.scheduled.empty());
  if (!why.all.empty()) return why.all;
  if (!why.scheduled.empty() && run.view->source == kSourceScheduler) return why.scheduled;
  return behind;
}

}  // namespace

StartPlan plan_start(const WaitReasons& why, const RunObservation* running,
                     const std::vector<const RunObservation*>& waiting,
                     const std::string* new_run) {
  StartPlan plan;
  if (running) plan.active = running->view->name;
  for (const RunObservation* q : waiting) {
    if (!held(why, *q)) {
      plan.start_run = q->view->name;
      break;
    }
  }
  // A new run is the slot's: a pause_heartbeats pause never makes one.
  if (!plan.start_run && new_run != nullptr && why.all.empty() && why.scheduled.empty()) {
    plan.start_run = *new_run;
  }
  HB_ASSERT_MSG(!plan.start_run || why.all.empty(), "nothing starts while every run is held");
  if (plan.start_run) plan.active = plan.start_run;
  const std::string behind =
      plan.start_run ? "waiting for run " + *plan.start_run + " to finish" : std::string();
  for (const RunObservation* q : waiting) {
    if (plan.start_run && q->view->name == *plan.start_run) continue;
    const std::string& message = why_waits(why, *q, behind);
    if (string_at(q->status, "message") != message || string_at(q->status, "phase") != "Queued") {
      plan.queued_messages[q->view->name] = message;
    }
  }
  return plan;
}

std::vector<std::string> runs_beyond_history(const std::vector<RunObservation>& runs,
                                             int keep_succeeded, int keep_failed) {
  std::vector<const RunObservation*> succeeded, failed;
  for (const RunObservation& run : runs) {
    if (!is_final(run.view->phase) || !run.view->cost_recorded) continue;
    (run.view->phase == RunPhase::kSucceeded ? succeeded : failed).push_back(&run);
  }
  std::vector<std::string> names = oldest_beyond(std::move(succeeded), keep_succeeded);
  for (std::string& name : oldest_beyond(std::move(failed), keep_failed)) {
    names.push_back(std::move(name));
  }
  HB_ASSERT_MSG(names.size() <= runs.size(), "history deletes no more runs than there are");
  return names;
}

}  // namespace hb::controllers
