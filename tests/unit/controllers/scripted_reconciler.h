// The shell's unit tests run the real AgentReconciler over a fake cache
// (FakeView) and a real kube::Client whose transport is the test's scripted
// http::Client (no rate limit), with the clock fixed.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "controllers/shell/agent_reconciler.h"
#include "kube/client.h"

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

}  // namespace hb::controllers::testing
