// Scheduling decisions for 10,000 agents in one process (target: at most
// 50 ms in total). Printed, not asserted:
//   build/bench/operator/hb_operator_decision_bench
#include <benchmark/benchmark.h>

#include <memory>
#include <optional>
#include <vector>

#include "controllers/agent/agent_decision.h"
#include "controllers/agent/agent_view.h"
#include "controllers/model/json_util.h"
#include "controllers/run/run_status.h"
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

// The fleet as the operator holds it: objects in the informer cache and,
// per stored version, their typed views (controllers/shell/view_cache.h).
struct Fleet {
  std::vector<Json> agents;
  std::vector<std::vector<Json>> runs;
  std::vector<std::shared_ptr<const hc::AgentView>> agent_views;
  std::vector<std::vector<std::shared_ptr<const hc::RunView>>> run_views;
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
      agents.back()["status"] = hc::decide_agent(in).status_json();
      agent_views.push_back(std::make_shared<const hc::AgentView>(hc::view_agent(agents.back())));
      std::vector<std::shared_ptr<const hc::RunView>> views;
      for (const Json& run : runs.back()) {
        views.push_back(std::make_shared<const hc::RunView>(hc::view_run(run)));
      }
      run_views.push_back(std::move(views));
    }
  }
};

Fleet& fleet() {
  static Fleet f;
  return f;
}

// One decision as the reconciler makes it: observe the agent's runs and
// decide. `cached`: the views come from the view cache (the steady state);
// otherwise every object is viewed from its JSON first (every object changed).
hc::AgentDecision decide_one(const Fleet& f, size_t i, TimePoint now, bool cached) {
  hc::AgentDecisionInput in;
  if (cached) {
    in.view = f.agent_views[i].get();
  } else {
    in.agent = &f.agents[i];
  }
  in.now = now;
  in.runs.reserve(f.runs[i].size());
  for (size_t k = 0; k < f.runs[i].size(); ++k) {
    hc::RunObservationInput o;
    o.run = &f.runs[i][k];
    if (cached) o.view = f.run_views[i][k];
    o.now = now;
    in.runs.push_back(hc::observe_run(o));
  }
  return hc::decide_agent(in);
}

void run_pass(benchmark::State& state, bool cached, bool render) {
  const Fleet& f = fleet();
  const TimePoint now = *hc::parse_rfc3339("2024-05-01T12:00:00Z");  // a slot for every agent
  int64_t created = 0, changed = 0;
  for (auto _ : state) {
    created = changed = 0;
    for (size_t i = 0; i < f.agents.size(); ++i) {
      hc::AgentDecision d = decide_one(f, i, now, cached);
      created += d.create_run.has_value();
      changed += d.status_changed;
      if (render && d.status_changed) {
        Json body = d.status_json();
        benchmark::DoNotOptimize(body);
      }
      benchmark::DoNotOptimize(d);
    }
  }
  state.counters["agents"] = kAgents;
  state.counters["runs_created"] = static_cast<double>(created);
  state.counters["status_changed"] = static_cast<double>(changed);
  state.counters["per_agent_us"] = benchmark::Counter(
      static_cast<double>(kAgents),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// The target: one pass over 10,000 agents with views from the cache, every
// agent due (each creates its slot's run and starts it).
void BM_DecideTenThousandAgents(benchmark::State& state) {
  run_pass(state, /*cached=*/true, /*render=*/false);
}
BENCHMARK(BM_DecideTenThousandAgents)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The same plus rendering each changed status as the JSON body of its write.
void BM_DecideAndRenderStatus(benchmark::State& state) {
  run_pass(state, /*cached=*/true, /*render=*/true);
}
BENCHMARK(BM_DecideAndRenderStatus)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// Worst case: every Agent and run changed since the last pass, so each is
// viewed from its JSON first.
void BM_DecideViewingEveryObject(benchmark::State& state) {
  run_pass(state, /*cached=*/false, /*render=*/false);
}
BENCHMARK(BM_DecideViewingEveryObject)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The pure schedule part alone (no JSON): decide_slot for 10,000 agents.
void BM_DecideSlotOnly(benchmark::State& state) {
  auto schedule = hb::schedule::parse_schedule({"1m", "", "", "", ""});
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
