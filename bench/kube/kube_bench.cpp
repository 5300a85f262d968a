// Watch-event decode throughput and informer memory per cached object.
//   build/bench/kube/hb_kube_bench
// Targets (issue 2): >= 50,000 events/s on one core for a 2 KiB Agent;
// informer memory <= 2x the object's JSON size.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <fstream>

#include "kube/list_page_splitter.h"
#include "kube/store.h"
#include "kube/watch_decoder.h"
#include "kube/watch_scan.h"

namespace {

using nlohmann::json;

constexpr size_t kAgentJsonBytesTarget = 2048;

// A realistic Agent as the API server sends it, padded to about 2 KiB.
json make_agent(int i) {
  json a = json::parse(R"({
    "apiVersion":"heartbeat.dev/v1alpha1","kind":"Agent",
    "metadata":{"name":"agent","namespace":"fleet","uid":"5f0c8a52-3c1e-4c0a-9d8e-6f1f2b7c9a10",
      "resourceVersion":"1","generation":3,"creationTimestamp":"2026-11-01T10:00:00Z",
      "labels":{"team":"platform","tier":"gold"},
      "annotations":{"heartbeat.dev/owner":"ops@example.com"},
      "managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"heartbeat.dev/v1alpha1",
        "time":"2026-11-01T10:00:00Z","fieldsType":"FieldsV1",
        "fieldsV1":{"f:spec":{".":{},"f:type":{},"f:paused":{},"f:model":{".":{},"f:provider":{}}}}}]},
    "spec":{"type":"memgpt_agent",
      "model":{"provider":"openai","model":"gpt-4o-mini","baseURL":"https://llm.internal/v1",
        "apiKeySecretRef":{"name":"llm","key":"apiKey"},"maxTokens":1024,
        "pricing":{"inputCentsPerMillionTokens":15,"outputCentsPerMillionTokens":60}},
      "persona":"You are the on-call assistant for the platform team.",
      "memory":{"blocks":[{"label":"persona","value":"Calm, precise, brief.","limit":2000},
                          {"label":"human","value":"The platform team.","limit":2000}]},
      "heartbeat":{"prompt":"Check the alert queue and summarise anything new.","interval":"5m",
        "startingDeadlineSeconds":120,"contextRuns":3,"historyLimits":{"succeeded":10,"failed":5}},
      "paused":false,"budget":{"monthlyCents":5000,"perRunCents":50},
      "runtime":{"image":"ghcr.io/example/heartbeat-runner:0.1.0","timeoutSeconds":600,"graceSeconds":30}},
    "status":{"observedGeneration":3,"phase":"Idle",
      "conditions":[{"type":"Ready","status":"True","observedGeneration":3,
        "lastTransitionTime":"2026-11-01T10:00:05Z","reason":"Scheduled","message":"next heartbeat at 10:05"}],
      "lastScheduleTime":"2026-11-22T09:55:00Z","nextHeartbeatTime":"2026-11-22T10:00:00Z",
      "spend":{"period":"2026-11","cents":1234,"inputTokens":123456,"outputTokens":23456}}
  })");
  a["metadata"]["name"] = "agent-" + std::to_string(i);
  a["metadata"]["resourceVersion"] = std::to_string(1000 + i);
  std::string pad(
      kAgentJsonBytesTarget > a.dump().size() ? kAgentJsonBytesTarget - a.dump().size() : 0, 'x');
  a["metadata"]["annotations"]["heartbeat.dev/notes"] =
      pad.substr(0, pad.size() > 40 ? pad.size() - 40 : 0);
  return a;
}

std::string event_line(const json& object) {
  return json{{"type", "MODIFIED"}, {"object", object}}.dump() + "\n";
}

// Split + scan + cache update: everything the informer does per event when
// its handlers are key-based (on_change), as the operator's are.
void BM_WatchEventDecodeAndApply(benchmark::State& state) {
  std::vector<std::string> lines;
  for (int i = 0; i < 256; ++i) lines.push_back(event_line(make_agent(i)));
  // Feed the stream in 16 KiB transport chunks, as the HTTP layer does.
  std::string stream;
  for (const auto& l : lines) stream += l;
  constexpr size_t kChunkBytes = 16 * 1024;
  hb::kube::Store store;
  hb::kube::LineSplitter splitter;
  size_t events = 0;
  for (auto _ : state) {
    for (size_t off = 0; off < stream.size(); off += kChunkBytes) {
      (void)splitter.feed(std::string_view(stream).substr(off, kChunkBytes),
                          [&](std::string_view line) {
                            store.apply(*hb::kube::scan_watch_event(line));
                            ++events;
                          });
    }
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["event_bytes"] = static_cast<double>(lines[0].size());
  state.SetBytesProcessed(static_cast<int64_t>(stream.size()) * state.iterations());
}
BENCHMARK(BM_WatchEventDecodeAndApply)->Unit(benchmark::kMillisecond);

// Scan alone: the informer's decode of one event.
void BM_WatchEventScanOnly(benchmark::State& state) {
  std::string line = event_line(make_agent(1));
  size_t events = 0;
  for (auto _ : state) {
    auto e = hb::kube::scan_watch_event(line);
    benchmark::DoNotOptimize(e);
    ++events;
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<int64_t>(line.size()) * state.iterations());
}
BENCHMARK(BM_WatchEventScanOnly);

// For comparison: a full JSON tree per event (nlohmann), which handlers that
// take parsed objects pay.
void BM_WatchEventDecodeToJsonTree(benchmark::State& state) {
  std::string line = event_line(make_agent(1));
  size_t events = 0;
  for (auto _ : state) {
    auto e = hb::kube::decode_watch_event(line);
    benchmark::DoNotOptimize(e);
    ++events;
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_WatchEventDecodeToJsonTree);

// A list page of 500 Agents (the informer's page size) through the splitter
// alone, in 16 KiB transport chunks: what a relist pays before each item's
// parse.
void BM_ListPageSplit(benchmark::State& state) {
  json page = {
      {"apiVersion", "heartbeat.dev/v1alpha1"},
      {"kind", "AgentList"},
      {"metadata", {{"resourceVersion", "4242"}, {"continue", "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"}}},
      {"items", json::array()}};
  for (int i = 0; i < 500; ++i) page["items"].push_back(make_agent(i));
  const std::string body = page.dump();
  constexpr size_t kChunkBytes = 16 * 1024;
  size_t items = 0;
  for (auto _ : state) {
    hb::kube::ListPageSplitter splitter([&items](std::string_view item) {
      benchmark::DoNotOptimize(item.data());
      ++items;
      return true;
    });
    for (size_t off = 0; off < body.size(); off += kChunkBytes) {
      splitter.feed(std::string_view(body).substr(off, kChunkBytes));
    }
    benchmark::DoNotOptimize(splitter.finish());
  }
  state.counters["items_per_s"] =
      benchmark::Counter(static_cast<double>(items), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<int64_t>(body.size()) * state.iterations());
}
BENCHMARK(BM_ListPageSplit)->Unit(benchmark::kMillisecond);

size_t heap_in_use_bytes() {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

// Heap bytes per cached object, against the object's own JSON size.
void BM_InformerMemoryPerObject(benchmark::State& state) {
  const int objects = static_cast<int>(state.range(0));
  std::vector<json> agents;
  size_t json_bytes = 0;
  for (int i = 0; i < objects; ++i) {
    agents.push_back(make_agent(i));
    json_bytes += agents.back().dump().size();
  }
  double per_object = 0;
  for (auto _ : state) {
    state.PauseTiming();
    malloc_trim(0);
    size_t before = heap_in_use_bytes();  // measured before the input copy exists
    auto copy = agents;
    state.ResumeTiming();
    auto store = std::make_unique<hb::kube::Store>();
    store->replace(std::move(copy));
    state.PauseTiming();
    // The input copy was moved in and freed there; what remains is the cache.
    size_t after = heap_in_use_bytes();
    per_object = static_cast<double>(after - before) / objects;
    store.reset();
    state.ResumeTiming();
  }
  double avg_json = static_cast<double>(json_bytes) / objects;
  state.counters["json_bytes_per_object"] = avg_json;
  state.counters["cache_bytes_per_object"] = per_object;
  state.counters["cache_to_json_ratio"] = per_object / avg_json;
}
BENCHMARK(BM_InformerMemoryPerObject)->Arg(10000)->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
