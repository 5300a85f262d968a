// Objects for the decision tests: an Agent, runs, Jobs and Pods as the API
// server would return them, and a fake clock.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "controllers/agent/agent_decision.h"
#include "controllers/model/json_util.h"
#include "controllers/model/names.h"
#include "controllers/plan/write_plan.h"
#include "controllers/pod/job_builder.h"
#include "controllers/run/run_status.h"
#include "controllers/schedule/utc_time.h"
#include "controllers/spend/ledger_record.h"

namespace hb::controllers::testing {

using Json = nlohmann::json;
using namespace std::chrono_literals;

inline TimePoint at(const char* rfc3339) {
  return *parse_rfc3339(rfc3339);
}
inline std::string fmt(TimePoint t) {
  return schedule::format_rfc3339(t);
}

// A clock the test moves by hand, forward or back.
class FakeClock {
 public:
  explicit FakeClock(TimePoint start) : now_(start) {}
  TimePoint now() const { return now_; }
  void advance(std::chrono::seconds d) { now_ += d; }
  void set(TimePoint t) { now_ = t; }

 private:
  TimePoint now_;
};

inline Json agent(const std::string& name = "bot", const char* created = "2024-05-01T12:00:00Z") {
  return {{"apiVersion", "heartbeat.dev/v1alpha1"},
          {"kind", "Agent"},
          {"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"uid", "uid-" + name},
            {"generation", 1},
            {"resourceVersion", "100"},
            {"creationTimestamp", created}}},
          {"spec",
           {{"type", "memgpt_agent"},
            {"model",
             {{"provider", "openai"},
              {"model", "gpt-4o-mini"},
              {"apiKeySecretRef", {{"name", "llm"}, {"key", "api-key"}}}}},
            {"heartbeat", {{"prompt", "Heartbeat."}, {"interval", "5m"}}},
            {"runtime", {{"timeoutSeconds", 300}, {"graceSeconds", 30}}}}}};
}

inline Json run(const std::string& name, const std::string& source = "scheduler",
                std::optional<TimePoint> slot = std::nullopt,
                const char* created = "2024-05-01T12:05:00Z") {
  Json r = {{"apiVersion", "heartbeat.dev/v1alpha1"},
            {"kind", "HeartbeatRun"},
            {"metadata",
             {{"name", name},
              {"namespace", "ns"},
              {"uid", "uid-" + name},
              {"resourceVersion", "200"},
              {"creationTimestamp", created}}},
            {"spec", {{"agentRef", {{"name", "bot"}}}, {"invocationSource", source}}}};
  if (slot) r["spec"]["scheduledTime"] = fmt(*slot);
  return r;
}

// render_context of a stored Agent and run, typed as the reconciler types
// them: `in`'s agent, run and spend are filled in here.
inline Json render_stored(const Json& agent, const Json& run, ContextInput in,
                          const JobConfig& config = {},
                          const std::optional<Pricing>& pricing = std::nullopt,
                          std::optional<int64_t> per_run_tokens = std::nullopt) {
  const AgentSpec spec = parse_agent_spec(agent).spec;
  const StartingRun started = starting_run(run);
  in.agent = &spec;
  in.run = &started;
  in.spend = agent_spend(agent);
  return render_context(in, config, pricing, per_run_tokens);
}

// build_job of a stored run and Agent, typed as the reconciler types them.
inline JobPlan build_stored_job(const Json& run, const Json& agent, const std::string& context,
                                const JobConfig& config) {
  return build_job(starting_run(run), parse_agent_spec(agent).spec, context, config);
}

inline Json with_status(Json object, Json status) {
  object["status"] = std::move(status);
  return object;
}

inline Json job(const std::string& name, const char* created = "2024-05-01T12:05:00Z") {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", name}, {"namespace", "ns"}, {"creationTimestamp", created}}},
          {"status", Json::object()}};
}

inline Json job_condition(Json j, const std::string& type, const std::string& reason = "") {
  j["status"]["conditions"] =
      Json::array({{{"type", type}, {"status", "True"}, {"reason", reason}}});
  return j;
}

inline Json pod(const std::string& name, const char* created = "2024-05-01T12:05:01Z") {
  return {{"metadata", {{"name", name}, {"namespace", "ns"}, {"creationTimestamp", created}}},
          {"status", {{"phase", "Running"}}}};
}

inline Json terminated(Json p, int exit_code, const std::string& message,
                       const char* finished = "2024-05-01T12:06:00Z",
                       const std::string& reason = "") {
  p["status"]["phase"] = exit_code == 0 ? "Succeeded" : "Failed";
  Json term = {{"exitCode", exit_code}, {"message", message}, {"finishedAt", finished}};
  if (!reason.empty()) term["reason"] = reason;
  p["status"]["containerStatuses"] =
      Json::array({{{"name", "runner"}, {"state", {{"terminated", term}}}}});
  return p;
}

// 10 cents per thousand input tokens, 10 cents per thousand output tokens...
// in cents per million: 1,000 and 10,000, so 1 input token costs 0.001 cent
// and 1 output token 0.01 cent.
inline const Pricing kTestPricing{1000, 10000};

inline std::string result_json(double cost, int64_t in_tokens = 100, int64_t out_tokens = 20,
                               std::optional<int> pause_minutes = std::nullopt,
                               const std::string& stop = "completed") {
  Json r = {{"version", 1},
            {"stopReason", stop},
            {"usage",
             {{"inputTokens", in_tokens},
              {"outputTokens", out_tokens},
              {"costCents", cost},
              {"llmCalls", 2},
              {"toolCalls", 1},
              {"iterations", 2}}},
            {"output", "did a thing"}};
  if (pause_minutes) r["pauseMinutes"] = *pause_minutes;
  return r.dump();
}

// Observes runs by their stored status: a started run's Job exists and runs
// (no Pod result yet), with a fresh Lease.
inline std::vector<RunObservation> observe_all(const std::vector<Json>& runs, TimePoint now) {
  std::vector<RunObservation> out;
  const Json lease = {{"spec", {{"renewTime", fmt(now)}}}};
  for (const Json& r : runs) {
    RunObservationInput in;
    in.run = &r;
    in.now = now;
    in.lease = &lease;
    Json j = job(r["metadata"]["name"]);
    const bool started = r.contains("status") && r["status"].contains("jobName");
    if (started) in.job = &j;
    out.push_back(observe_run(in));
  }
  return out;
}

inline AgentDecision decide(const Json& a, const std::vector<Json>& runs, TimePoint now,
                            std::chrono::seconds coalesce = std::chrono::seconds(0)) {
  AgentDecisionInput in;
  in.agent = &a;
  in.runs = observe_all(runs, now);
  in.now = now;
  in.status_coalesce = coalesce;
  return decide_agent(in);
}

// The object the shell would create for the decision's scheduler run.
inline Json created_run(const Json& agent, const AgentDecision& d) {
  return make_run_object(view_agent(agent).spec.spec, *d.create_run);
}

inline const Json* condition(const Json& status, const std::string& type) {
  for (const Json& c : status["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

inline bool has_event(const AgentDecision& d, const std::string& reason) {
  for (const Event& e : d.events) {
    if (e.reason == reason) return true;
  }
  return false;
}

// Applies a decision the way the shell does, with every write succeeding:
// the same plan (plan_writes) performed by the same loop (perform_plan) over
// objects in memory instead of the API server.
struct World : PlanWriter {
  explicit World(Json a) : agent(std::move(a)) {}
  Json agent;
  std::vector<Json> runs;
  std::chrono::seconds coalesce{0};  // AgentDecisionInput::status_coalesce
  std::vector<Event> recorded;       // Events written, in order
  // What reading spec.heartbeat.promptFrom finds (the shell's read).
  std::optional<PromptGap> prompt_from_gap;
  // Which other Agents take a mention from this one, as the shell's cache
  // answers (null: none).
  std::function<bool(const std::string&)> accepts_mention;
  // The concurrency gate as the shell counts it before each pass (nullopt: no cap).
  std::optional<GateSnapshot> gate;
  // What the first pass of the last step read before deciding (reads_needed).
  ReadsNeeded last_reads;
  ReadsNeeded pass_reads;  // the last pass's
  // The HeartbeatPolicies' team budgets over the agent (the shell's sums).
  std::vector<schedule::PolicyBudget> policy_budgets;
  std::optional<schedule::ProviderHold> provider_hold;  // the shell's quota hold
  // The HeartbeatPolicies selecting the agent and the operator's runner image.
  std::vector<PolicySpec> policies;
  std::string runner_image = "heartbeat-runner:test";
  // The agent's durable ledger record, charged as the shell charges it
  // before the plan; unset: the agent has none (its status is the ledger).
  std::optional<LedgerRecord> ledger;
  TimePoint now_{};

  // One reconcile at `now`, and the ones the shell queues at once when a
  // pass ends after the Job it made (PlanOutcome::rest_left); the first
  // pass's decision.
  AgentDecision step(TimePoint now) {
    constexpr int kPassesMax = 8;
    auto [first, rest_left] = pass(now);
    last_reads = pass_reads;
    for (int i = 1; rest_left && i < kPassesMax; ++i) rest_left = pass(now).second;
    EXPECT_FALSE(rest_left) << "passes at one instant keep leaving writes";
    return first;
  }

  std::pair<AgentDecision, bool> pass(TimePoint now) {
    now_ = now;
    AgentDecisionInput in;
    in.agent = &agent;
    in.runs = observe_all(runs, now);
    in.now = now;
    in.status_coalesce = coalesce;
    in.policy_budgets = policy_budgets;
    in.provider_hold = provider_hold;
    in.policies = policies;
    in.runner_image = runner_image;
    if (ledger) in.ledger = &*ledger;
    // As the shell: what the decision needs is read first, then it decides once.
    const AgentView view = view_agent(agent);
    pass_reads = reads_needed(view, in.runs, ledger ? &*ledger : nullptr, now);
    for (const std::string& target : pass_reads.mention_targets) {
      in.mention_accepted[target] = accepts_mention && accepts_mention(target);
    }
    if (pass_reads.gate) in.gate = gate;
    if (pass_reads.prompt) in.prompt = {true, prompt_from_gap};
    AgentDecision d = decide_agent(in);
    EXPECT_TRUE(!gate || !d.start_run || d.admission_request)
        << "reads_needed asks for the gate before every start";
    if (ledger && !d.ledger_charges.empty()) {
      std::vector<LedgerCharge> charges = d.ledger_charges;
      stamp_days(charges, view.spec.spec.time_zone, [](const std::string&) { return nullptr; });
      *ledger = charge_runs(std::move(*ledger), charges, now);
    }
    const std::vector<Json> observed_runs = runs;
    WritePlanInput plan;
    plan.decision = &d;
    plan.observed = &in.runs;
    plan.runs = &observed_runs;
    plan.now = now;
    const PlanOutcome outcome = perform_plan(plan_writes(plan), *this);
    EXPECT_TRUE(outcome.completed);
    return {d, outcome.rest_left};
  }

  WriteResult delete_job(const std::string&) override { return WriteResult::kDone; }
  WriteResult create_run(const RunRequest& request) override {
    if (find(request.name) != nullptr) return WriteResult::kDone;  // adopt
    Json r = make_run_object(view_agent(agent).spec.spec, request);
    r["metadata"]["uid"] = "uid-" + request.name;
    r["metadata"]["creationTimestamp"] = fmt(now_);
    runs.push_back(r);
    return WriteResult::kDone;
  }
  WriteResult invoke_run(const RunRequest& request) override {
    create_run(request);
    agent["metadata"]["annotations"].erase(kAnnotationInvoke);
    return WriteResult::kDone;
  }
  // Another Agent's runs are not in this world: recorded, not stored; the
  // same name again is the API server's AlreadyExists (the shell adopts it).
  std::vector<MentionRequest> mentioned;
  WriteResult mention_run(const MentionRequest& request) override {
    for (const MentionRequest& m : mentioned) {
      if (m.name == request.name) return WriteResult::kDone;
    }
    mentioned.push_back(request);
    return WriteResult::kDone;
  }
  WriteResult replace_agent_status(const Json& status) override {
    agent["status"] = status;
    return WriteResult::kDone;
  }
  WriteResult write_run_status(const PlannedWrite& w) override {
    if (Json* r = find(w.run)) (*r)["status"] = w.status;
    return WriteResult::kDone;
  }
  // The Job and the Running status the shell writes a pass later, in one
  // step: this world has no Jobs to adopt.
  WriteResult start_run(const std::string& name) override {
    if (Json* r = find(name)) {
      Json& status = (*r)["status"];
      if (!status.is_object()) status = Json::object();
      status["phase"] = "Running";
      status["jobName"] = name;
      status["startedAt"] = fmt(now_);
      status.erase("message");
      status.erase("reason");
    }
    return WriteResult::kDone;
  }
  // Job first: in this world, the run made and started in one step.
  WriteResult start_slot_run(const RunRequest& request) override {
    create_run(request);
    return start_run(request.name);
  }
  WriteResult delete_run(const std::string& name) override {
    std::erase_if(runs, [&](const Json& r) { return r["metadata"]["name"] == name; });
    return WriteResult::kDone;
  }
  void record_event(const Event& event) override { recorded.push_back(event); }

  Json* find(const std::string& name) {
    for (Json& r : runs) {
      if (r["metadata"]["name"] == name) return &r;
    }
    return nullptr;
  }

  // Finishes a Running run as the runner would have, with its final status.
  void finish(const std::string& name, TimePoint when, double cost,
              std::optional<TimePoint> pause_until = std::nullopt,
              const char* phase = "Succeeded") {
    Json* r = find(name);
    (*r)["status"]["phase"] = phase;
    (*r)["status"]["finishedAt"] = fmt(when);
    (*r)["status"]["usage"] = {{"inputTokens", 100}, {"outputTokens", 10}, {"costCents", cost}};
    if (pause_until) (*r)["status"]["pauseUntil"] = fmt(*pause_until);
  }
};

}  // namespace hb::controllers::testing
