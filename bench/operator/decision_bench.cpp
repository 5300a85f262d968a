// Scheduling decisions for 10,000 agents in one process (target: at most
// 50 ms in total). Printed, not asserted:
//   build-operator/bench/operator/hb_operator_decision_bench
#include <benchmark/benchmark.h>

#include <vector>

#include "controllers/agent_decision.h"
#include "controllers/json_util.h"
#include "controllers/run_status.h"
#include "controllers/schedule/utc_time.h"

namespace {

using hb::controllers::Json;
using hb::controllers::TimePoint;
namespace hc = hb::controllers;

constexpr int kAgents = 10000;
constexpr int kFinishedRunsPerAgent = 3;

Json make_agent(int i) {
  return {{"apiVersion", "heartbeat.dev/v1alpha1"},
          {"kind", "Agent"},
          {"metadata",
           {{"name", "agent-" + std::to_string(i)},
            {"namespace", "bench"},
            {"uid", "uid-" + std::to_string(i)},
            {"generation", 1},
            {"resourceVersion", "1"},
            {"creationTimestamp", "2024-05-01T00:00:00Z"}}},
          {"spec",
           {{"type", "memgpt_agent"},
            {"model",
             {{"provider", "openai"},
              {"model", "m"},
              {"apiKeySecretRef", {{"name", "llm"}, {"key", "k"}}}}},
            {"heartbeat", {{"prompt", "Heartbeat."}, {"interval", i % 2 ? "1m" : "5m"}}},
            {"budget", {{"monthlyCents", 1000}}}}}};
}

Json make_run(int agent, int k, bool finished) {
  Json r = {{"metadata",
             {{"name", "agent-" + std::to_string(agent) + "-" + std::to_string(k)},
              {"namespace", "bench"},
              {"creationTimestamp", "2024-05-01T11:00:00Z"}}},
            {"spec",
             {{"agentRef", {{"name", "agent-" + std::to_string(agent)}}},
              {"invocationSource", "scheduler"},
              {"scheduledTime", "2024-05-01T11:0" + std::to_string(k) + ":00Z"}}}};
  if (finished) {
    r["status"] = {{"phase", "Succeeded"},
                   {"finishedAt", "2024-05-01T11:0" + std::to_string(k) + ":30Z"},
                   {"costRecorded", true},
                   {"usage", {{"costCents", 0.5}}}};
  }
  return r;
}

struct Fleet {
  std::vector<Json> agents;
  std::vector<std::vector<Json>> runs;
  Fleet() {
    for (int i = 0; i < kAgents; ++i) {
      agents.push_back(make_agent(i));
      std::vector<Json> r;
      for (int k = 0; k < kFinishedRunsPerAgent; ++k) r.push_back(make_run(i, k, true));
      runs.push_back(std::move(r));
      // Settle each agent's status once, so the measured pass is the steady state.
      hc::AgentDecisionInput in;
      in.agent = &agents.back();
      in.now = *hc::parse_rfc3339("2024-05-01T11:59:00Z");
      for (const Json& run : runs.back()) {
        hc::RunObservationInput o;
        o.run = &run;
        o.now = in.now;
        in.runs.push_back(hc::observe_run(o));
      }
      agents.back()["status"] = hc::decide_agent(in).status;
    }
  }
};

// One pass = observe every run and decide every agent of the fleet.
void BM_DecideTenThousandAgents(benchmark::State& state) {
  static Fleet fleet;
  const TimePoint now = *hc::parse_rfc3339("2024-05-01T12:00:00Z");  // a slot for every agent
  int64_t created = 0;
  for (auto _ : state) {
    created = 0;
    for (size_t i = 0; i < fleet.agents.size(); ++i) {
      hc::AgentDecisionInput in;
      in.agent = &fleet.agents[i];
      in.now = now;
      in.runs.reserve(fleet.runs[i].size());
      for (const Json& run : fleet.runs[i]) {
        hc::RunObservationInput o;
        o.run = &run;
        o.now = now;
        in.runs.push_back(hc::observe_run(o));
      }
      hc::AgentDecision d = hc::decide_agent(in);
      created += d.create_run.has_value();
      benchmark::DoNotOptimize(d);
    }
  }
  state.counters["agents"] = kAgents;
  state.counters["runs_created"] = static_cast<double>(created);
  state.counters["per_agent_us"] = benchmark::Counter(
      static_cast<double>(kAgents),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_DecideTenThousandAgents)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The pure schedule part alone (no JSON): decide_slot for 10,000 agents.
void BM_DecideSlotOnly(benchmark::State& state) {
  auto schedule = hb::schedule::parse_schedule("1m", "");
  const TimePoint created = *hc::parse_rfc3339("2024-05-01T00:00:00Z");
  const TimePoint last = *hc::parse_rfc3339("2024-05-01T11:59:00Z");
  const TimePoint now = *hc::parse_rfc3339("2024-05-01T12:00:00Z");
  for (auto _ : state) {
    for (int i = 0; i < kAgents; ++i) {
      auto d = hb::schedule::decide_slot(*schedule.value, created, last, std::nullopt, now);
      benchmark::DoNotOptimize(d);
    }
  }
}
BENCHMARK(BM_DecideSlotOnly)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
