#include "tests/sim/checker.h"

#include <algorithm>
#include <cmath>

#include "controllers/model/json_util.h"
#include "controllers/model/mentions.h"
#include "controllers/model/names.h"
#include "controllers/model/run_cost.h"
#include "controllers/run/run_after_job.h"
#include "controllers/run/run_record.h"
#include "controllers/run/run_status.h"
#include "controllers/runtime/workqueue.h"
#include "controllers/schedule/spend.h"
#include "controllers/schedule/spend_day.h"
#include "controllers/schedule/time_zone.h"
#include "controllers/schedule/utc_time.h"
#include "controllers/spend/budget_hold.h"
#include "controllers/spend/ledger_record.h"
#include "tests/sim/world.h"

namespace hb::sim {

namespace {

using controllers::object_key;
using controllers::string_at;
using controllers::time_at;
using schedule::format_rfc3339;

constexpr double kCentsTolerance = 1e-5;
// The longest a pass may take from stamping a run's start to making its Job.
constexpr std::chrono::seconds kStartStampedBeforeJobMax{60};
// What adding a day's charges as doubles may lose: far below a micro-cent,
// the ledger's resolution (4.999995 of 5 cents is not spent, 5 is).
constexpr double kSumNoiseCents = 1e-9;

// metadata.labels or .annotations[key] (keys hold '/': not a path).
std::string key_at(const Json& object, const char* map, const char* key) {
  const Json* entries = controllers::find_path(object, std::string("metadata/") + map);
  if (entries == nullptr || !entries->is_object()) return {};
  const auto it = entries->find(key);
  return it != entries->end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string agent_key_of_run(const Json& run) {
  return string_at(run, "metadata/namespace") + "/" + string_at(run, "spec/agentRef/name");
}
bool is_final_phase(const std::string& phase) {
  return phase == "Succeeded" || phase == "Failed" || phase == "Cancelled" || phase == "TimedOut";
}
bool cost_recorded(const std::optional<Json>& run) {
  return run && controllers::bool_at(*run, "status/costRecorded");
}
// A run started and not final: Running, or its Job exists.
bool holds_place(const ApiServer& server, const Json& run) {
  const std::string phase = string_at(run, "status/phase");
  if (is_final_phase(phase)) return false;
  return phase == "Running" ||
         server.peek("jobs", string_at(run, "metadata/namespace"),
                     controllers::job_name_for_run(string_at(run, "metadata/name"))) != nullptr;
}

// The policies a Job's pod template was stamped with: the copy the
// operator trusts (a Job's template cannot change), read as a run's stamp.
std::vector<std::string> template_policies(const Json& job) {
  const Json* stamps = controllers::find_path(job, "spec/template/metadata/annotations");
  if (stamps == nullptr || !stamps->is_object() ||
      !stamps->contains(controllers::kAnnotationPolicies)) {
    return {};
  }
  const Json as_run = {
      {"metadata",
       {{"annotations",
         {{controllers::kAnnotationPolicies, (*stamps)[controllers::kAnnotationPolicies]}}}}}};
  return controllers::stamped_policies(as_run).value_or(std::vector<std::string>{});
}

// Every run that holds a place: the runs holding_place, and the run each
// Job made first carries until that run is made (its Job is its start).
template <typename Fn>
void for_each_place(const ApiServer& server, Fn visit) {
  server.for_each("heartbeatruns", [&](const Json& run) {
    if (holds_place(server, run)) visit(run);
  });
  server.for_each("jobs", [&](const Json& job) {
    if (!controllers::awaits_its_run(job)) return;
    const std::optional<Json> run = controllers::run_carried_by(job);
    if (run && server.peek("heartbeatruns", string_at(*run, "metadata/namespace"),
                           string_at(*run, "metadata/name")) == nullptr) {
      visit(*run);
    }
  });
}

// The run a Job is for: the name in its ownerReference of kind
// HeartbeatRun, else in its heartbeat.dev/run-name annotation (a Job made
// before its run can name no run uid).
std::string run_name_of_job(const Json& job) {
  const Json* owners = controllers::find_path(job, "metadata/ownerReferences");
  if (owners != nullptr && owners->is_array()) {
    for (const Json& ref : *owners) {
      if (string_at(ref, "kind") == controllers::kRunKind) return string_at(ref, "name");
    }
  }
  return key_at(job, "annotations", controllers::kAnnotationRunName);
}

// The uid of the run that owns the Job; empty when no run does.
std::string run_owner_uid(const Json& job) {
  const Json* owners = controllers::find_path(job, "metadata/ownerReferences");
  if (owners == nullptr || !owners->is_array()) return {};
  for (const Json& ref : *owners) {
    if (string_at(ref, "kind") == controllers::kRunKind) return string_at(ref, "uid");
  }
  return {};
}

// What Kubernetes' garbage collector promises: a dependent whose every
// owner is absent (no object has the uid its reference names, whatever
// stands under the name) is deleted, in the background and with no bound
// on when. One owner left, or no ownerReferences, and it is never deleted.
bool garbage_collector_deletes(const ApiServer& server, const Json& job) {
  const Json* owners = controllers::find_path(job, "metadata/ownerReferences");
  if (owners == nullptr || !owners->is_array() || owners->empty()) return false;
  return std::none_of(owners->begin(), owners->end(),
                      [&](const Json& ref) { return server.uid_live(string_at(ref, "uid")); });
}

}  // namespace

static_assert(kJobFindsItsRunWithin ==
                  controllers::kWorkqueueBackoffMax + controllers::kJobCacheGrace,
              "the bound is a retry at the longest backoff after the Job reached the cache");

double Checker::spend_of(const Json& agent) const {
  return controllers::number_at(agent, "status/spend/cents").value_or(0);
}

double Checker::counted_sum(const std::string& agent_key, const std::string& period) const {
  auto it = counted_sums_.find(agent_key + "|" + period);
  return it == counted_sums_.end() ? 0 : it->second;
}

void Checker::on_write(Actor actor, const std::string& resource, const std::optional<Json>& before,
                       const std::optional<Json>& after, TimePoint now) {
  const bool user_owned = resource == "agents" || resource == "heartbeatpolicies";
  if (user_owned && actor == Actor::kOperator && before && after &&
      before->value("spec", Json()) != after->value("spec", Json())) {
    violation(std::string("the operator wrote the spec of ") +
              (resource == "agents" ? "Agent " : "HeartbeatPolicy ") + object_key(*after));
  }
  if (resource == "agents" && actor == Actor::kOperator && before && after) {
    check_streaks(*before, *after);
  }
  if (resource == "heartbeatruns") on_run_write(actor, before, after);
  if (resource == "configmaps") on_ledger_write(before, after);
  if (resource == "agents" && before && !after) {
    std::map<std::string, TimePoint>& deleted = agents_deleted_at_[object_key(*before)];
    std::erase_if(deleted, [this](const auto& entry) {
      return server_.now() - entry.second >= kUserChangeSeenWithin;
    });
    deleted[string_at(*before, "metadata/uid")] = server_.now();
  }
  if (resource == "heartbeatruns" && actor == Actor::kOperator && before && !after) {
    on_run_delete(*before, now);
  }
  if (resource == "agents" || resource == "heartbeatpolicies") {
    on_policy_input_write(resource, before, after);
  }
  // A run starts when the operator creates its Job (the dispatch path's
  // second write; its Running status follows a pass later, perhaps after
  // the operator's clock jumped): the start rules hold at that instant.
  if (resource == "jobs" && actor == Actor::kOperator && !before && after) {
    on_job_create(*after);
    on_start(*after, now);
  }
}

// The operator created `job`: the run it starts, its owner or (Job first)
// the run it carries, is held to the start rules at this instant.
void Checker::on_start(const Json& job, TimePoint now) {
  const Json* owners = controllers::find_path(job, "metadata/ownerReferences");
  const bool owned = owners != nullptr && owners->is_array() && !owners->empty();
  const std::optional<Json> carried = owned ? std::nullopt : controllers::run_carried_by(job);
  const Json* run = owned ? server_.peek("heartbeatruns", string_at(job, "metadata/namespace"),
                                         string_at((*owners)[0], "name"))
                          : (carried ? &*carried : nullptr);
  if (run == nullptr) return;
  const StartSeen seen{
      owned ? controllers::admitting_policies(&job, *run, [](const std::string&) { return false; })
            : template_policies(job),
      server_.now()};
  // A carried run has no uid yet: it is kept by name until the run is made.
  if (owned) {
    started_[string_at(*run, "metadata/uid")] = seen;
  } else {
    started_before_made_[object_key(*run)] = seen;
  }
  on_run_start(*run, now);
  check_concurrency(*run);
  check_policies(*run);
}

// Never two Jobs for one slot: over the whole seed, at most one Job is
// created for a scheduler slot ("ns/agent|spec.scheduledTime"), also after
// the first was deleted, whatever deleted it. The operator allows no second
// one: the slot's run is made once (slots_, by the Agent's name, so also
// across an Agent deleted and applied again; the run and Job names are the
// Agent's name and the slot), a run's Job is made once (a run whose Job went
// away, by the operator's cancel, deadline or stall verdict or by anyone
// else, is finished, never started again), and a run is deleted only
// settled, its Job then with it by the garbage collector, for a slot that
// is never due again. A start retried after a lost answer or a crash finds
// the Job by its name (AlreadyExists) and adopts it.
void Checker::on_job_create(const Json& job) {
  jobs_made_.insert(string_at(job, "metadata/uid"));
  const std::string ns = string_at(job, "metadata/namespace");
  const std::string run_name = run_name_of_job(job);
  if (run_name.empty()) return;  // check_jobs_have_runs reports a Job of no run
  const Json* run = server_.peek("heartbeatruns", ns, run_name);
  if (run == nullptr) {
    ++jobs_before_run_[object_key(ns, run_name)];
    return;
  }
  if (string_at(*run, "spec/invocationSource") == "scheduler") {
    count_slot_job(agent_key_of_run(*run) + "|" + string_at(*run, "spec/scheduledTime"), 1);
  }
}

void Checker::count_slot_job(const std::string& slot, int jobs) {
  int& made = slot_jobs_[slot];
  made += jobs;
  if (made > 1 && made - jobs <= 1) {
    violation("a second Job for slot " + slot + " (" + std::to_string(made) + " created)");
  }
}

// Exactly one run stands for each Job the operator made: one run whose name
// gives the Job's (job_name_for_run), and if a run owns the Job, that run
// (its uid; a run of the same name made again is another). Held from when
// the Job is first seen without it, and from when a leader came up, for
// kJobFindsItsRunWithin; a Job whose every owner is gone is exempt, the
// garbage collector's to delete (a run deleted takes its Job with it).
void Checker::check_jobs_have_runs(TimePoint operator_up_since) {
  if (jobs_made_.empty()) return;
  const TimePoint true_now = server_.now();
  std::map<std::string, std::vector<std::string>> runs_by_job;  // "ns/job" -> run uids
  server_.for_each("heartbeatruns", [&](const Json& run) {
    runs_by_job[object_key(string_at(run, "metadata/namespace"),
                           controllers::job_name_for_run(string_at(run, "metadata/name")))]
        .push_back(string_at(run, "metadata/uid"));
  });
  std::set<std::string> standing;
  server_.for_each("jobs", [&](const Json& job) {
    const std::string uid = string_at(job, "metadata/uid");
    if (jobs_made_.count(uid) == 0) return;
    standing.insert(uid);
    const auto found = runs_by_job.find(object_key(job));
    const std::size_t runs = found == runs_by_job.end() ? 0 : found->second.size();
    const std::string owner = run_owner_uid(job);
    const bool has_its_run = runs == 1 && (owner.empty() || owner == found->second[0]);
    if (has_its_run || garbage_collector_deletes(server_, job)) {
      job_without_run_since_.erase(uid);
      return;
    }
    const TimePoint since = job_without_run_since_.try_emplace(uid, true_now).first->second;
    const auto without = true_now - std::max(since, operator_up_since);
    if (without > kJobFindsItsRunWithin && jobs_reported_.insert(uid).second) {
      violation("Job " + object_key(job) + " has " + std::to_string(runs) + " run(s) of its name" +
                (runs == 1 ? " and not the run that owns it (" + owner + ")" : "") + " since " +
                format_rfc3339(since) + ", over " + std::to_string(kJobFindsItsRunWithin.count()) +
                " s with a leader up");
    }
  });
  std::erase_if(job_without_run_since_,
                [&](const auto& entry) { return standing.count(entry.first) == 0; });
}

// Counted on the API server, the truth every replica's informer lags: runs
// not final that are Running or have their Job, the one just made included.
void Checker::check_concurrency(const Json& started) {
  if (config_.max_concurrent_runs <= 0) return;
  int64_t in_use = 0;
  for_each_place(server_, [&](const Json&) { ++in_use; });
  if (in_use > config_.max_concurrent_runs) {
    violation("run " + object_key(started) + " started with " + std::to_string(in_use) +
              " runs going on, over --max-concurrent-runs=" +
              std::to_string(config_.max_concurrent_runs));
  }
}

// A zone by name; nullptr (UTC) for none or one the operator refuses.
const date::time_zone* zone_named(const std::string& name) {
  auto found = schedule::find_time_zone(name);
  return found.ok() ? *found.value : nullptr;
}

// The zone an Agent's own days are counted in (spec.heartbeat.timeZone).
const date::time_zone* agent_zone(const Json* agent) {
  return agent == nullptr ? nullptr : zone_named(string_at(*agent, "spec/heartbeat/timeZone"));
}

PolicyLimits policy_limits(const Json& policy) {
  PolicyLimits p;
  p.ns = string_at(policy, "metadata/namespace");
  p.name = string_at(policy, "metadata/name");
  if (const Json* selector = controllers::find_path(policy, "spec/selector")) {
    p.selector = *selector;
  }
  p.max_concurrent_runs = controllers::int_at(policy, "spec/maxConcurrentRuns").value_or(0);
  p.monthly_cents = controllers::int_at(policy, "spec/budget/monthlyCents").value_or(0);
  p.daily_cents = controllers::int_at(policy, "spec/budget/dailyCents").value_or(0);
  p.zone = zone_named(string_at(policy, "spec/timeZone"));
  p.paused = controllers::bool_at(policy, "spec/paused");
  return p;
}

bool policy_selects(const PolicyLimits& policy, const Json& agent) {
  if (string_at(agent, "metadata/namespace") != policy.ns) return false;
  if (!policy.selector.is_object()) return true;
  const Json* labels = controllers::find_path(agent, "metadata/labels");
  auto label = [labels](const std::string& key) -> std::optional<std::string> {
    if (labels == nullptr || !labels->is_object()) return std::nullopt;
    auto it = labels->find(key);
    if (it == labels->end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  const Json match = policy.selector.value("matchLabels", Json::object());
  for (const auto& [key, value] : match.items()) {
    if (!value.is_string() || label(key) != value.get<std::string>()) return false;
  }
  for (const Json& r : policy.selector.value("matchExpressions", Json::array())) {
    const std::optional<std::string> value = label(r.value("key", std::string()));
    const Json values = r.value("values", Json::array());
    const bool listed = value && std::find(values.begin(), values.end(), *value) != values.end();
    const std::string op = r.value("operator", std::string());
    if ((op == "In" && !listed) || (op == "NotIn" && listed) || (op == "Exists" && !value) ||
        (op == "DoesNotExist" && value)) {
      return false;
    }
  }
  return true;
}

std::string Checker::current_period() const {
  return format_rfc3339(server_.now()).substr(0, 7);
}

// What the runs stamped with the policy at their start were charged this
// month: the least the operator's team figure holds (it also charges a run
// to the policies selecting its agent when counted), whatever the Agents'
// labels say now or whether they still exist.
double Checker::team_spend(const PolicyLimits& policy) const {
  const auto it = team_counted_.find(policy.ns + "/" + policy.name + "|" + current_period());
  return it == team_counted_.end() ? 0 : it->second;
}

double Checker::team_spend_today(const PolicyLimits& policy) const {
  const auto it = team_counted_.find(policy.ns + "/" + policy.name + "|" +
                                     schedule::spend_day(server_.now(), policy.zone));
  return it == team_counted_.end() ? 0 : it->second;
}

// The period whose team budget is spent: the month, else today (a day
// key); empty when neither.
std::string Checker::team_budget_spent_in(const PolicyLimits& policy) const {
  if (policy.monthly_cents > 0 &&
      std::floor(team_spend(policy) - kCentsTolerance) >= policy.monthly_cents) {
    return current_period();
  }
  if (policy.daily_cents > 0 &&
      std::floor(team_spend_today(policy) - kCentsTolerance) >= policy.daily_cents) {
    return schedule::spend_day(server_.now(), policy.zone);
  }
  return "";
}

bool Checker::team_budget_spent(const PolicyLimits& policy) const {
  return !team_budget_spent_in(policy).empty();
}

void Checker::on_policy_input_write(const std::string& resource, const std::optional<Json>& before,
                                    const std::optional<Json>& after) {
  const Json& object = after ? *after : *before;
  const std::string ns = string_at(object, "metadata/namespace");
  const char* input = resource == "agents" ? "metadata/labels" : "spec";
  auto at = [input](const std::optional<Json>& o) {
    const Json* found = o ? controllers::find_path(*o, input) : nullptr;
    return found == nullptr ? Json() : *found;
  };
  if (!before || !after || at(before) != at(after)) selection_changed_at_[ns] = server_.now();
  // Money limits a person moves under runs in flight: a budget set or
  // lowered, a price raised, a selection changed.
  const auto money = [&](const std::optional<Json>& o) {
    Json out = Json::array();
    for (const char* path :
         {"metadata/labels", "spec/budget", "spec/pricing", "spec/model/pricing"}) {
      const Json* found = o ? controllers::find_path(*o, path) : nullptr;
      out.push_back(found == nullptr ? Json() : *found);
    }
    return out;
  };

  if (!before || !after || money(before) != money(after)) limits_changed_at_[ns] = server_.now();
  if (resource == "heartbeatpolicies" && !after) team_budget_spent_.erase(object_key(object));
  if (resource == "heartbeatpolicies") {
    if (!after || !controllers::bool_at(*after, "spec/paused")) {
      policy_paused_since_.erase(object_key(object));
    } else {
      policy_paused_since_.try_emplace(object_key(object), server_.now());
    }
  }
  retime_team_budgets(ns);
}

void Checker::retime_team_budgets(const std::string& ns) {
  server_.for_each("heartbeatpolicies", [&](const Json& policy) {
    const PolicyLimits p = policy_limits(policy);
    if (p.ns != ns) return;
    const std::string period = team_budget_spent_in(p);
    if (period.empty()) {
      team_budget_spent_.erase(object_key(policy));
      return;
    }
    auto [it, first] =
        team_budget_spent_.try_emplace(object_key(policy), Spent{server_.now(), period});
    if (!first && it->second.period != period) it->second = {server_.now(), period};
  });
}

// Each policy over the started run's agent, by the server's policies and
// labels (the truth the operator's informers lag).
void Checker::check_policies(const Json& started) {
  const Json* agent = server_.peek("agents", string_at(started, "metadata/namespace"),
                                   string_at(started, "spec/agentRef/name"));
  if (agent == nullptr) return;
  server_.for_each("heartbeatpolicies", [&](const Json& policy) {
    const PolicyLimits p = policy_limits(policy);
    if (!policy_selects(p, *agent)) return;
    check_policy_cap(p, started);
    check_team_budget(p, started);
    check_policy_pause(p, started);
  });
}

// The runs of the policy's agents that hold a place (as check_concurrency
// counts them), the one just made included, are at most its cap; unless a
// policy or an Agent's labels changed there too recently for the operator
// to have seen it.
void Checker::check_policy_cap(const PolicyLimits& policy, const Json& started) {
  if (policy.max_concurrent_runs <= 0) return;
  auto changed = selection_changed_at_.find(policy.ns);
  if (changed != selection_changed_at_.end() &&
      server_.now() - changed->second < kUserChangeSeenWithin) {
    return;
  }
  int64_t in_use = 0;
  for_each_place(server_, [&](const Json& run) {
    if (string_at(run, "metadata/namespace") != policy.ns) return;
    const Json* agent = server_.peek("agents", policy.ns, string_at(run, "spec/agentRef/name"));
    in_use += agent != nullptr && policy_selects(policy, *agent);
  });
  if (in_use > policy.max_concurrent_runs) {
    violation("run " + object_key(started) + " started with " + std::to_string(in_use) +
              " runs of HeartbeatPolicy " + policy.ns + "/" + policy.name +
              "'s agents going on, over its maxConcurrentRuns=" +
              std::to_string(policy.max_concurrent_runs));
  }
}

// Once the selected agents' stored spend this month reached the team
// budget, none of them starts, after the operator had time to see it.
void Checker::check_team_budget(const PolicyLimits& policy, const Json& started) {
  auto spent = team_budget_spent_.find(policy.ns + "/" + policy.name);
  if (spent == team_budget_spent_.end() || spent->second.period != team_budget_spent_in(policy) ||
      server_.now() - spent->second.since < kUserChangeSeenWithin) {
    return;
  }
  // The operator counts days by its own clock, up to kClockSkewMax ahead:
  // near the day's end it may be in the next day already.
  const std::string& period = spent->second.period;
  if (!schedule::day_of_key(period).empty() &&
      schedule::spend_day(server_.now() + kClockSkewMax, policy.zone) != period) {
    return;
  }
  violation("run " + object_key(started) + " started while HeartbeatPolicy " + policy.ns + "/" +
            policy.name + "'s team budget is spent (" + std::to_string(team_spend(policy)) +
            " of " + std::to_string(policy.monthly_cents) + " cents this month, " +
            std::to_string(team_spend_today(policy)) + " of " + std::to_string(policy.daily_cents) +
            " today, since " + format_rfc3339(spent->second.since) + ")");
}

// While a policy stands paused, no run of an agent it selects starts
// (scheduled, manual or callback alike), once the operator had time to see
// the pause and the labels.
void Checker::check_policy_pause(const PolicyLimits& policy, const Json& started) {
  if (!policy.paused) return;
  auto since = policy_paused_since_.find(policy.ns + "/" + policy.name);
  if (since == policy_paused_since_.end() ||
      server_.now() - since->second < kUserChangeSeenWithin) {
    return;
  }
  auto changed = selection_changed_at_.find(policy.ns);
  if (changed != selection_changed_at_.end() &&
      server_.now() - changed->second < kUserChangeSeenWithin) {
    return;
  }
  violation("run " + object_key(started) + " (" + string_at(started, "spec/invocationSource") +
            ") started while HeartbeatPolicy " + policy.ns + "/" + policy.name +
            " is paused (since " + format_rfc3339(since->second) + ")");
}

// Independent of the rules' details: a streak (idle, provider errors) can
// only grow by one per run that this write newly counts (a name new in
// recentRuns), fall to 0, or stay; a new spec generation resets the idle one.
void Checker::check_streaks(const Json& before, const Json& after) {
  std::set<std::string> counted_before;
  if (const Json* runs = controllers::find_path(before, "status/recentRuns"); runs != nullptr) {
    for (const Json& r : *runs) counted_before.insert(string_at(r, "name"));
  }
  int64_t newly_counted = 0;
  if (const Json* runs = controllers::find_path(after, "status/recentRuns"); runs != nullptr) {
    for (const Json& r : *runs) newly_counted += counted_before.count(string_at(r, "name")) == 0;
  }
  const bool new_spec = controllers::int_at(before, "status/observedGeneration") !=
                        controllers::int_at(after, "metadata/generation");
  for (const char* field : {"idleStreak", "providerErrorStreak"}) {
    const std::string path = std::string("status/") + field;
    const int64_t now_streak = controllers::int_at(after, path).value_or(0);
    const int64_t was = controllers::int_at(before, path).value_or(0);
    const bool reset_by_spec = new_spec && std::string_view(field) == "idleStreak";
    const bool moved_once_per_run =
        now_streak == 0 || (now_streak >= was && now_streak <= was + newly_counted);
    if ((reset_by_spec && now_streak != 0) || !moved_once_per_run) {
      violation("Agent " + object_key(after) + " " + field + " " + std::to_string(was) + " -> " +
                std::to_string(now_streak) + " with " + std::to_string(newly_counted) +
                " newly counted run(s)" + (reset_by_spec ? " and a new spec generation" : ""));
    }
  }
}

void Checker::on_run_write(Actor actor, const std::optional<Json>& before,
                           const std::optional<Json>& after) {
  if (!before && after && string_at(*after, "spec/invocationSource") == "scheduler") {
    const std::string slot =
        agent_key_of_run(*after) + "|" + string_at(*after, "spec/scheduledTime");
    if (!slots_.insert(slot).second) violation("a second scheduler run for slot " + slot);
  }
  if (!before && after) {  // made after its Job: its start, seen then, is the run's
    const auto seen = started_before_made_.find(object_key(*after));
    if (seen != started_before_made_.end()) {
      started_[string_at(*after, "metadata/uid")] = std::move(seen->second);
      started_before_made_.erase(seen);
    }
  }
  if (!before && after) {  // the Jobs made for it before it: now their slot is known
    const auto early = jobs_before_run_.find(object_key(*after));
    if (early != jobs_before_run_.end()) {
      if (string_at(*after, "spec/invocationSource") == "scheduler") {
        count_slot_job(agent_key_of_run(*after) + "|" + string_at(*after, "spec/scheduledTime"),
                       early->second);
      }
      jobs_before_run_.erase(early);
    }
  }
  // The operator names invoke runs "<agent>-invoke-<hash>"; one per value,
  // however often the annotation is synced.
  if (!before && after && actor == Actor::kOperator &&
      string_at(*after, "metadata/name").find("-invoke-") != std::string::npos) {
    // Per Agent object: one applied again is a new Agent, whose invoke
    // annotation asks for its first manual run.
    const std::string request = agent_key_of_run(*after) + "|" +
                                key_at(*after, "annotations", controllers::kAnnotationAgentUid) +
                                "|" + string_at(*after, "spec/triggerDetail");
    if (!invokes_.insert(request).second) violation("a second run for invoke value " + request);
  }
  if (!after) return;
  const std::string name = object_key(*after);
  if (string_at(*after, "status/reason") == controllers::kReasonStalled &&
      (!before || string_at(*before, "status/reason") != controllers::kReasonStalled)) {
    on_stall_verdict(*after);
  }
  if (cost_recorded(before) && !cost_recorded(after)) {
    violation("run " + name + " lost costRecorded");
  }
  // Idle backoff's rule: a run that acted is never idle; a mention of another
  // agent is acting (it may wake that agent).
  if (controllers::bool_at(*after, "status/idle") &&
      !controllers::mentioned_agents(string_at(*after, "status/output"),
                                     string_at(*after, "spec/agentRef/name"))
           .empty()) {
    violation("run " + name + " judged idle though its output mentions another agent");
  }
  if (cost_recorded(before) &&
      (*before)["status"].value("usage", Json()) != (*after)["status"].value("usage", Json())) {
    violation("run " + name + " changed its usage after it was counted (" +
              (*before)["status"].value("usage", Json()).dump() + " -> " +
              (*after)["status"].value("usage", Json()).dump() + ", by " +
              (actor == Actor::kOperator ? "the operator" : "another") + ")");
  }
  if (!cost_recorded(before) && cost_recorded(after)) {
    const std::string uid = string_at(*after, "metadata/uid");
    const std::string agent_ns = string_at(*after, "metadata/namespace");
    const Json* agent = server_.peek("agents", agent_ns, string_at(*after, "spec/agentRef/name"));
    Counted c;
    c.agent_key = agent_key_of_run(*after);
    // The month and day the run was admitted in (its start, by the
    // operator's clock, checked against true time below), whenever it is
    // counted; a run that never started, those it finished in.
    const std::optional<TimePoint> charged = time_at(*after, "status/startedAt")
                                                 ? time_at(*after, "status/startedAt")
                                                 : time_at(*after, "status/finishedAt");
    c.period = charged ? schedule::spend_period(*charged)
                       : (agent ? string_at(*agent, "status/spend/period") : "");
    c.cents = controllers::number_at(*after, "status/usage/costCents").value_or(0);
    if (!std::isfinite(c.cents) || c.cents < 0) violation("run " + name + " counted a bad cost");
    if (!counted_.emplace(uid, c).second) {
      violation("run " + name + " counted twice");
    } else {
      counted_sums_[c.agent_key + "|" + c.period] += c.cents;
      const TimePoint day_of = charged.value_or(server_.now());
      counted_sums_[c.agent_key + "|" + schedule::spend_day(day_of, agent_zone(agent))] += c.cents;
      const double calls = controllers::number_at(*after, "status/usage/llmCalls").value_or(0);
      // A runner whose usage report was out of bounds is charged its bound:
      // it did not keep to its budget, so its overshoot is not measured.
      const bool believed =
          string_at(*after, "status/reason") != controllers::kReasonUsageOutOfBounds;
      const double measured_cents =
          believed ? c.cents
                   : std::min(c.cents,
                              controllers::number_at(*after, "status/heldCents").value_or(c.cents));
      // A run a person changed money limits under (in its namespace,
      // while it went) is measured apart: that overshoot is not concurrency's.
      const auto started = started_.find(uid);
      if (started != started_.end()) check_start_stamp(*after, started->second.at);
      const auto changed = limits_changed_at_.find(agent_ns);
      const bool limits_moved = started == started_.end() || (changed != limits_changed_at_.end() &&
                                                              changed->second > started->second.at);
      const std::vector<std::string> no_policies;
      for (const std::string& policy :
           started == started_.end() ? no_policies : started->second.admitted_by) {
        const Json* p = server_.peek("heartbeatpolicies", agent_ns, policy);
        const std::string day =
            schedule::spend_day(day_of, p == nullptr ? nullptr : policy_limits(*p).zone);
        if (believed) {
          measure_overshoot(agent_ns + "/" + policy, c.period, c.cents, calls, limits_moved);
          measure_overshoot(agent_ns + "/" + policy, day, c.cents, calls, limits_moved);
        }
        team_counted_[agent_ns + "/" + policy + "|" + c.period] += c.cents;
        team_counted_[agent_ns + "/" + policy + "|" + day] += c.cents;
        team_measured_[agent_ns + "/" + policy + "|" + c.period] += measured_cents;
        team_measured_[agent_ns + "/" + policy + "|" + day] += measured_cents;
      }
      retime_team_budgets(agent_ns);
    }
  }
}

// A run's spend belongs to the day of its status.startedAt, the operator's
// clock when it admitted the run: that clock strays at most kClockSkewMax
// from true time, so a run's day is true time's within that, give or take
// the pass that stamped it before its Job was made.
void Checker::check_start_stamp(const Json& run, TimePoint job_made) {
  const std::optional<TimePoint> stamped = time_at(run, "status/startedAt");
  if (!stamped) return;
  const auto off = *stamped > job_made ? *stamped - job_made : job_made - *stamped;
  if (off > kClockSkewMax + kStartStampedBeforeJobMax) {
    violation("run " + object_key(run) + " was stamped started at " + format_rfc3339(*stamped) +
              ", its Job made at " + format_rfc3339(job_made) + " (true time)");
  }
}

// The cents this run took the team past its budget (from the budget, or
// from the spend if a person lowered the budget below it), and as calls
// of this run's size.
void Checker::measure_overshoot(const std::string& policy_key, const std::string& period,
                                double cents, double llm_calls, bool limits_moved) {
  const auto slash = policy_key.find('/');
  const Json* policy =
      server_.peek("heartbeatpolicies", policy_key.substr(0, slash), policy_key.substr(slash + 1));
  if (policy == nullptr || cents <= 0) return;
  const PolicyLimits limits = policy_limits(*policy);
  const bool day = !schedule::day_of_key(period).empty();
  const double budget = static_cast<double>(day ? limits.daily_cents : limits.monthly_cents);
  if (budget <= 0) return;
  const auto counted = team_measured_.find(policy_key + "|" + period);
  const double before = counted == team_measured_.end() ? 0 : counted->second;
  const double over = std::max(0.0, before + cents - std::max(budget, before));
  if (over <= kCentsTolerance) return;
  Overshoot& o = overshoot_[policy_key + "|" + period];
  const double calls = over / (cents / std::max(1.0, llm_calls));
  o.cents += over;
  o.calls += calls;
  ++o.runs;
  double& worst =
      limits_moved ? worst_run_overshoot_calls_after_change_ : worst_run_overshoot_calls_;
  worst = std::max(worst, calls);
  if (o.calls > worst_overshoot_.calls) worst_overshoot_ = o;
}

namespace {

// A ledger ConfigMap's figures: "period" and "period/policy" -> millionths of a cent.
std::map<std::string, int64_t> ledger_figures(const Json& configmap) {
  std::map<std::string, int64_t> out;
  const controllers::ParsedLedger parsed = controllers::parse_ledger_configmap(configmap);
  if (!parsed.record) return out;
  for (const auto& [period, spend] : parsed.record->periods) {
    out[period] = spend.micro_cents;
    for (const auto& [policy, micros] : spend.policy_micro_cents) {
      out[period + "/" + policy] = micros;
    }
  }
  return out;
}

bool is_ledger(const std::optional<Json>& object) {
  return object &&
         string_at(*object, std::string("metadata/labels/") + controllers::kLabelLedger) ==
             controllers::kLedgerKindAgent;
}

}  // namespace

// The durable ledger never goes down within a month (per agent and per
// policy), is never deleted, and always parses.
void Checker::on_ledger_write(const std::optional<Json>& before, const std::optional<Json>& after) {
  if (!is_ledger(before) && !is_ledger(after)) return;
  const std::string name = object_key(after ? *after : *before);
  if (!after) {
    violation("ledger " + name + " was deleted");
    return;
  }
  const controllers::ParsedLedger parsed = controllers::parse_ledger_configmap(*after);
  if (!parsed.record) {
    violation("ledger " + name + " does not parse: " + parsed.error);
    return;
  }
  if (!before) return;
  const std::map<std::string, int64_t> was = ledger_figures(*before);
  const std::map<std::string, int64_t> now = ledger_figures(*after);
  const std::string oldest_kept = now.empty() ? "" : now.begin()->first.substr(0, 7);
  for (const auto& [key, micros] : was) {
    if (key.substr(0, 7) < oldest_kept) continue;  // a month past the ones kept
    const auto it = now.find(key);
    if (it == now.end() || it->second < micros) {
      violation("ledger " + name + " went down at " + key + ": " + std::to_string(micros) + " -> " +
                (it == now.end() ? "gone" : std::to_string(it->second)));
    }
  }
}

void Checker::on_run_delete(const Json& run, TimePoint now) {
  const std::string name = object_key(run);
  if (!controllers::is_settled(run)) {
    violation("the operator deleted run " + name + " before it was final and counted");
    return;
  }
  const Json* agent = server_.peek("agents", string_at(run, "metadata/namespace"),
                                   string_at(run, "spec/agentRef/name"));
  // Its live Agent's history limits, or those of an Agent the operator may
  // not have seen go.
  const bool of_live_agent =
      agent != nullptr && !controllers::run_of_other_agent(run, string_at(*agent, "metadata/uid"));
  if (of_live_agent || agent_deleted_unseen(run)) return;
  const std::optional<TimePoint> finished = time_at(run, "status/finishedAt");
  if (config_.run_retention.count() == 0 || !finished || *finished + config_.run_retention > now) {
    violation("the operator deleted run " + name + " of a deleted Agent before its retention");
  }
}

// An Agent's deletion may take kUserChangeSeenWithin to reach the
// operator's cache, and no precondition can make a run's delete wait on
// another object: a pass meanwhile trims the history of the Agent it still
// sees, as it would have a moment before.
bool Checker::agent_deleted_unseen(const Json& run) const {
  const auto it = agents_deleted_at_.find(
      object_key(string_at(run, "metadata/namespace"), string_at(run, "spec/agentRef/name")));
  if (it == agents_deleted_at_.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(), [&](const auto& entry) {
    return controllers::run_of_agent(run, entry.first) &&
           server_.now() - entry.second < kUserChangeSeenWithin;
  });
}

void Checker::on_run_start(const Json& run, TimePoint now) {
  const std::string name = object_key(run);
  const Json* agent = server_.peek("agents", string_at(run, "metadata/namespace"),
                                   string_at(run, "spec/agentRef/name"));
  if (agent == nullptr) return;
  // The user paused at true time (the server's clock); `now` is the
  // operator's, which may be skewed or have jumped.
  const TimePoint true_now = server_.now();
  if (controllers::bool_at(*agent, "spec/paused") &&
      time_at(*agent, "metadata/annotations/sim-paused-at").value_or(true_now) <
          true_now - kUserChangeSeenWithin) {
    violation("run " + name + " started while its Agent is paused");
  }
  // pause_heartbeats holds scheduled heartbeats only: a manual or callback run still starts.
  const bool scheduled = string_at(run, "spec/invocationSource") == "scheduler";
  if (auto until = time_at(*agent, "status/pausedUntil"); scheduled && until && *until > now) {
    violation("run " + name + " started at " + format_rfc3339(now) + " before pausedUntil " +
              format_rfc3339(*until));
  }
  // The month's spend by the runs counted under the Agent's name (so also
  // before an Agent applied again has a status), or its status if higher.
  const double budget = controllers::number_at(*agent, "spec/budget/monthlyCents").value_or(0);
  const double spent =
      std::max(spend_of(*agent), counted_sum(object_key(*agent), current_period()));
  if (budget > 0 && std::floor(spent + kCentsTolerance) >= budget) {
    violation("run " + name + " started over budget (" + std::to_string(spent) + " of " +
              std::to_string(budget) + " cents)");
  }
  const double daily = controllers::number_at(*agent, "spec/budget/dailyCents").value_or(0);
  const std::string day = schedule::spend_day(now, agent_zone(agent));
  const double today = counted_sum(object_key(*agent), day);
  // As for a team's day: the operator's clock may be in the next day already.
  const bool day_ending = schedule::spend_day(now + kClockSkewMax, agent_zone(agent)) != day;
  if (daily > 0 && !day_ending && std::floor(today + kSumNoiseCents) >= daily) {
    violation("run " + name + " started over its daily budget (" + std::to_string(today) + " of " +
              std::to_string(daily) + " cents)");
  }
  if (held_for_a_person(*agent)) {
    violation("run " + name + " started while a budget stop waits for a person");
  }
}

// status.budgetHold stands and nothing a person did releases it: the policy
// is Manual, the budget is not above the one that stopped the agent, the
// heartbeat.dev/resume value is the one the stop saw.
bool Checker::held_for_a_person(const Json& agent) {
  const Json* hold = controllers::find_path(agent, "status/budgetHold");
  if (hold == nullptr || controllers::find_path(*hold, "releasedAt") != nullptr) return false;
  if (controllers::string_at(agent, "spec/budget/resume", "Manual") != "Manual") return false;
  const int64_t budget = controllers::int_at(agent, "spec/budget/monthlyCents").value_or(0);
  if (budget <= 0 || budget > controllers::int_at(*hold, "budgetCents").value_or(0)) return false;
  std::optional<std::string> resume;
  if (const Json* annotations = controllers::find_path(agent, "metadata/annotations");
      annotations != nullptr && annotations->is_object()) {
    auto value = annotations->find(controllers::kAnnotationResume);
    if (value != annotations->end() && value->is_string()) resume = value->get<std::string>();
  }
  return controllers::resume_value_hash(resume) == controllers::string_at(*hold, "resumeValueHash");
}

// A runner that beat within half the stall window (true time, whatever its
// own clock or the operator's says) is alive: failing it as Stalled kills a
// healthy run.
void Checker::on_stall_verdict(const Json& run) {
  if (!config_.last_beat) return;
  const std::optional<TimePoint> beat = config_.last_beat(object_key(run));
  const TimePoint true_now = server_.now();
  if (beat && true_now - *beat < config_.stall_window / 2) {
    violation("run " + object_key(run) + " failed as Stalled " + format_rfc3339(true_now) +
              " though it beat at " + format_rfc3339(*beat));
  }
}

void Checker::check_state(TimePoint now, TimePoint operator_up_since) {
  const uint64_t runs_version = server_.version_of("heartbeatruns");
  const uint64_t agents_version = server_.version_of("agents");
  const uint64_t jobs_version = server_.version_of("jobs");
  if (runs_version == checked_runs_version_ && agents_version == checked_agents_version_ &&
      jobs_version == checked_jobs_version_ && now >= checked_at_ &&
      now < checked_at_ + kStateRecheckEvery) {
    return;
  }
  checked_runs_version_ = runs_version;
  checked_agents_version_ = agents_version;
  checked_jobs_version_ = jobs_version;
  checked_at_ = now;
  check_jobs_have_runs(operator_up_since);
  // Scheduler runs waiting, by agent: not final and not started. A run
  // whose Job exists has started (the operator writes its Running status a
  // pass later, perhaps after a failed write and a backoff), as
  // holds_place counts it.
  std::map<std::string, int> queued;
  server_.for_each("heartbeatruns", [&](const Json& run) {
    const std::string phase = string_at(run, "status/phase");
    if (string_at(run, "spec/invocationSource") == "scheduler" && !is_final_phase(phase) &&
        !holds_place(server_, run) && ++queued[agent_key_of_run(run)] > 1) {
      violation("Agent " + agent_key_of_run(run) + " has more than one queued scheduler run");
    }
    if (phase != "Running") return;
    auto started = time_at(run, "status/startedAt");
    const Json* agent = server_.peek("agents", string_at(run, "metadata/namespace"),
                                     string_at(run, "spec/agentRef/name"));
    if (!started || agent == nullptr) return;
    const auto limit = std::chrono::seconds(
        controllers::int_at(*agent, "spec/runtime/timeoutSeconds").value_or(600) +
        controllers::int_at(*agent, "spec/runtime/graceSeconds").value_or(30));
    const TimePoint deadline = *started + limit + controllers::kControllerDeadlineSlack +
                               config_.stall_window + config_.overrun_allowance;
    if (now > deadline && now - operator_up_since > config_.overrun_allowance) {
      violation("run " + object_key(run) + " still Running at " + format_rfc3339(now) +
                ", started " + format_rfc3339(*started));
    }
  });
  server_.for_each("agents", [&](const Json& agent) {
    // An Agent applied again shows its spend from the operator's first
    // status write (check_settled holds it to the sum in the end).
    if (controllers::find_path(agent, "status/spend") == nullptr) return;
    const std::string period = string_at(agent, "status/spend/period");
    if (counted_sum(object_key(agent), period) > spend_of(agent) + kCentsTolerance) {
      violation("Agent " + object_key(agent) + " spend " + std::to_string(spend_of(agent)) +
                " is less than its counted runs' " +
                std::to_string(counted_sum(object_key(agent), period)));
    }
  });
}

void Checker::check_settled() {
  for (const Json& run : server_.objects("heartbeatruns")) {
    const std::string phase = string_at(run, "status/phase");
    // Queued runs wait for their paused Agent; nothing else may be left
    // open. A run whose Job was made started, whatever its phase says (a
    // crash between its writes may have left it Queued): its runner may
    // have spent, and that charge is lost unless the run is counted.
    const bool job_made =
        started_.count(string_at(run, "metadata/uid")) > 0 ||
        server_.peek("jobs", string_at(run, "metadata/namespace"),
                     controllers::job_name_for_run(string_at(run, "metadata/name"))) != nullptr;
    const bool waiting = !job_made && (phase.empty() || phase == "Queued");
    if (!waiting && (!is_final_phase(phase) || !cost_recorded(run))) {
      violation("run " + object_key(run) + " not settled after the drain: phase " + phase +
                (is_final_phase(phase) ? ", cost not recorded" : "") +
                (job_made && !is_final_phase(phase) ? " though its Job was made" : ""));
    }
  }
  for (const Json& agent : server_.objects("agents")) {
    const double want = counted_sum(object_key(agent), string_at(agent, "status/spend/period"));
    if (std::fabs(want - spend_of(agent)) > kCentsTolerance) {
      violation("Agent " + object_key(agent) + " spend " + std::to_string(spend_of(agent)) +
                " differs from the sum of its counted runs " + std::to_string(want));
    }
  }
}

}  // namespace hb::sim
