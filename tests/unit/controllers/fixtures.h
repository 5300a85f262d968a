// Objects for the decision tests: an Agent, runs, Jobs and Pods as the API
// server would return them, and a fake clock.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "controllers/agent_decision.h"
#include "controllers/json_util.h"
#include "controllers/run_status.h"
#include "controllers/schedule/utc_time.h"

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

// Applies a decision the way the shell would, with every write succeeding:
// the created run appears, the started run is Running, marks are written.
struct World {
  explicit World(Json a) : agent(std::move(a)) {}
  Json agent;
  std::vector<Json> runs;
  std::chrono::seconds coalesce{0};  // AgentDecisionInput::status_coalesce

  AgentDecision step(TimePoint now) {
    AgentDecision d = decide(agent, runs, now, coalesce);
    if (d.create_run) {
      Json r = created_run(agent, d);
      r["metadata"]["uid"] = "uid-" + r["metadata"]["name"].get<std::string>();
      r["metadata"]["creationTimestamp"] = fmt(now);
      runs.push_back(r);
    }
    if (d.start_run) {
      for (Json& r : runs) {
        if (r["metadata"]["name"] == *d.start_run) {
          r["status"] = {{"phase", "Running"}, {"jobName", *d.start_run}, {"startedAt", fmt(now)}};
        }
      }
    }
    if (d.status_changed) agent["status"] = d.status_json();
    for (const std::string& name : d.mark) {
      for (Json& r : runs) {
        if (r["metadata"]["name"] == name) r["status"]["costRecorded"] = true;
      }
    }
    return d;
  }

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
