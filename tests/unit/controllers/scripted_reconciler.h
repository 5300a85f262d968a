// The shell's unit tests run the real AgentReconciler over a fake cache
// (FakeView) and a real kube::Client whose transport is the test's scripted
// http::Client (no rate limit), with the clock fixed; a test of what the
// pass writes records its writes with a fake writer instead
// (fake_agent_api_writes.h) and scripts only the reads.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "controllers/model/names.h"
#include "controllers/run/run_after_job.h"
#include "controllers/shell/agent_reconciler.h"
#include "kube/client.h"
#include "kube/request_priority.h"

namespace hb::controllers::testing {

// The cache as a test fills it: Agents by name, the agent's runs, Jobs by
// name and the Pods of every run (one namespace).
class FakeView final : public ClusterView {
 public:
  std::map<std::string, Json> agents_by_name;
  std::vector<Json> runs;
  std::map<std::string, Json> jobs;
  std::vector<Json> pods;
  std::optional<Json> agent(const std::string&, const std::string& name) const override {
    return find(agents_by_name, name);
  }
  void for_each_agent(const std::function<void(const Json&)>& fn) const override {
    for (const auto& [name, agent] : agents_by_name) fn(agent);
  }
  std::vector<Json> runs_of(const std::string&, const std::string&) const override { return runs; }
  std::optional<Json> job(const std::string&, const std::string& name) const override {
    return find(jobs, name);
  }
  std::vector<Json> jobs_awaiting_run(const std::string&, const std::string& agent) const override {
    std::vector<Json> out;
    for (const auto& [name, job] : jobs) {
      if (awaits_its_run(job) && annotation_at(job, kAnnotationAgentName) == agent) {
        out.push_back(job);
      }
    }
    return out;
  }
  std::vector<Json> pods_of(const std::string&, const std::string&) const override { return pods; }
  std::optional<Json> lease(const std::string&, const std::string&) const override { return {}; }
  std::optional<UsageCounts> reported_usage(const std::string&, const std::string&) const override {
    return {};
  }
  bool synced() const override { return true; }

 private:
  static std::optional<Json> find(const std::map<std::string, Json>& by_name,
                                  const std::string& name) {
    auto it = by_name.find(name);
    return it == by_name.end() ? std::nullopt : std::optional<Json>(it->second);
  }
};

// The API server as the shell's tests script it: every write succeeds,
// its body echoed with a uid and a newer resourceVersion; a GET answers
// what `get_answers` holds for a part of its URL, else 404; a POST or PUT
// whose URL has `fail_url_part` answers 403. Records every request and the
// give-way time it was sent with.
class RecordingApi final : public http::Client {
 public:
  std::vector<http::Request> requests;
  std::vector<kube::GiveWayTime> give_way;
  std::string fail_url_part;
  std::map<std::string, http::Response> get_answers;  // by a part of the URL
  // When set, each request's method and URL are appended here too (a test
  // ordering these requests against a fake writer's calls).
  std::vector<std::string>* journal = nullptr;
  http::Response send(const http::Request& r) override {
    requests.push_back(r);
    give_way.push_back(kube::current_give_way_time());
    if (journal != nullptr) journal->push_back(r.method + " " + r.url);
    if (r.method == "GET") {
      for (const auto& [part, answer] : get_answers) {
        if (r.url.find(part) != std::string::npos) return answer;
      }
      return {404, {}, R"({"kind":"Status","code":404,"reason":"NotFound"})"};
    }
    if (!fail_url_part.empty() && r.url.find(fail_url_part) != std::string::npos) {
      return {403, {}, R"({"kind":"Status","code":403,"reason":"Forbidden"})"};
    }
    Json body = Json::parse(r.body, nullptr, false);
    if (body.is_object()) {
      body["metadata"]["uid"] = "uid-made";
      body["metadata"]["resourceVersion"] = std::to_string(++version_);
    }
    return {r.method == "POST" ? 201 : 200, {}, body.dump()};
  }
  http::Response stream(const http::Request&, const http::ChunkHandler&) override {
    return {200, {}, ""};
  }
  // The index of the first request with this method whose URL has the part.
  std::optional<std::size_t> first(const std::string& method, const std::string& url_part) const {
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].method == method && requests[i].url.find(url_part) != std::string::npos) {
        return i;
      }
    }
    return std::nullopt;
  }

 private:
  int version_ = 300;
};

// A client whose transport is `api`, without a rate limit.
inline std::shared_ptr<kube::Client> client_over(std::shared_ptr<http::Client> api) {
  kube::ClusterConfig cluster;
  cluster.server = "https://api.invalid";
  kube::ClientOptions options;
  options.qps = 0;
  return std::make_shared<kube::Client>(cluster, options, std::move(api));
}

inline std::unique_ptr<AgentReconciler> reconciler_over(
    std::shared_ptr<kube::Client> client, const ClusterView& view, Metrics& metrics, TimePoint now,
    ReconcilerConfig config, AgentReconciler::SteadyClock steady = std::chrono::steady_clock::now) {
  return std::make_unique<AgentReconciler>(
      std::move(client), view, std::move(config), metrics, [now] { return now; },
      std::move(steady));
}

inline std::unique_ptr<AgentReconciler> reconciler_over(
    std::shared_ptr<http::Client> api, const ClusterView& view, Metrics& metrics, TimePoint now,
    AgentReconciler::SteadyClock steady = std::chrono::steady_clock::now) {
  return reconciler_over(client_over(std::move(api)), view, metrics, now, ReconcilerConfig{},
                         std::move(steady));
}

// Reads through `reads`, writes through `writes` (a recording fake).
inline std::unique_ptr<AgentReconciler> reconciler_over(
    std::shared_ptr<http::Client> reads, std::shared_ptr<AgentApiWrites> writes,
    const ClusterView& view, Metrics& metrics, TimePoint now,
    AgentReconciler::SteadyClock steady = std::chrono::steady_clock::now,
    ReconcilerConfig config = {}) {
  return std::make_unique<AgentReconciler>(
      client_over(std::move(reads)), std::move(writes), view, std::move(config), metrics,
      [now] { return now; }, std::move(steady));
}

}  // namespace hb::controllers::testing
