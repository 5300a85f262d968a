#include "controllers/agent_runs.h"

#include <algorithm>

#include "controllers/agent_schedule_plan.h"

namespace hb::controllers {

namespace {

FinishedRun finished_run(const RunObservation& run, TimePoint now) {
  FinishedRun f;
  f.name = run.view->name;
  f.phase = run.phase;
  f.exit_code = int_at(run.status, "exitCode");
  f.usage = usage_from_status(run.status);
  f.finished_at = time_at(run.status, "finishedAt").value_or(now);
  f.pause_until = time_at(run.status, "pauseUntil");
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
  std::vector<std::string> names;
  for (size_t i = static_cast<size_t>(std::max(keep, 0)); i < runs.size(); ++i) {
    names.push_back(runs[i]->view->name);
  }
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
  return queue;
}

std::string wait_reason(bool agent_valid, const schedule::BlockResult& blocks,
                        const RunObservation* running) {
  if (!agent_valid) return "waiting: the agent's spec is invalid (see condition SpecValid)";
  if (blocks.blocked()) return "waiting: " + blocks.blocks.front().message;
  if (running) return "waiting for run " + running->view->name + " to finish";
  return {};
}

StartPlan plan_start(std::string why_waiting, const RunObservation* running,
                     const std::vector<const RunObservation*>& waiting,
                     const std::string* new_run) {
  StartPlan plan;
  if (running) plan.active = running->view->name;
  const size_t startable = waiting.size() + (new_run != nullptr ? 1 : 0);
  if (why_waiting.empty() && startable > 0) {
    plan.start_run = waiting.empty() ? *new_run : waiting.front()->view->name;
    plan.active = plan.start_run;
    if (startable > 1) why_waiting = "waiting for run " + *plan.start_run + " to finish";
  }
  for (const RunObservation* q : waiting) {
    if (plan.start_run && q->view->name == *plan.start_run) continue;
    if (string_at(q->status, "message") != why_waiting ||
        string_at(q->status, "phase") != "Queued") {
      plan.queued_messages[q->view->name] = why_waiting;
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
  return names;
}

}  // namespace hb::controllers
