// Shared set-up for tests against the local control plane: a client from
// $KUBECONFIG, the CRDs applied and Established, a namespace per test binary.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "kube/client.h"
#include "kube/yaml_json.h"

namespace hb::kube::testing {

inline std::string env_or_die(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    throw std::runtime_error(std::string(name) +
                             " is not set: run under ctest (fixture control_plane)");
  }
  return value;
}

inline std::shared_ptr<Client> make_test_client() {
  ClientOptions options;
  options.qps = 0;  // tests are not the subject of rate limiting
  return std::make_shared<Client>(load_default().or_throw(), options);
}

// Creates or replaces an object from a manifest.
inline Json apply(Client& client, const Resource& r, const std::string& ns, Json object) {
  std::string name = object["metadata"]["name"];
  try {
    return client.create(r, ns, object).or_throw();
  } catch (const ApiError& e) {
    if (e.kind() != ErrorKind::kAlreadyExists) throw;
    Json current = client.get(r, ns, name).or_throw();
    object["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"];
    return client.replace(r, ns, name, object).or_throw();
  }
}

inline void apply_crds(Client& client) {
  std::string src = env_or_die("HB_SOURCE_DIR");
  for (const char* file :
       {"/crds/heartbeat.dev_agents.yaml", "/crds/heartbeat.dev_heartbeatruns.yaml"}) {
    for (auto& doc : yaml_file_to_json(src + file).or_throw()) {
      std::string name = doc["metadata"]["name"];
      apply(client, resources::kCustomResourceDefinitions, "", doc);
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (true) {
        Json crd = client.get(resources::kCustomResourceDefinitions, "", name).or_throw();
        bool established = false;
        for (const auto& c : crd.value("/status/conditions"_json_pointer, Json::array())) {
          if (c.value("type", "") == "Established" && c.value("status", "") == "True")
            established = true;
        }
        if (established) break;
        if (std::chrono::steady_clock::now() > deadline)
          throw std::runtime_error(name + " not Established");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }
}

inline std::string unique_namespace(const std::string& prefix) {
  std::mt19937 rng(std::random_device{}());
  return prefix + "-" + std::to_string(rng() % 1000000);
}

inline void create_namespace(Client& client, const std::string& ns) {
  client
      .create(resources::kNamespaces, "",
              {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}})
      .or_throw();
}

inline void delete_namespace(Client& client, const std::string& ns) {
  try {
    client.remove(resources::kNamespaces, "", ns).or_throw();
  } catch (const std::exception&) {
  }
}

// Polls until pred() holds or the timeout passes.
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

inline Json agent_manifest(const std::string& name, const std::string& interval = "5m") {
  return Json::parse(R"({
    "apiVersion": "heartbeat.dev/v1alpha1", "kind": "Agent",
    "metadata": {"name": ")" +
                     name + R"(", "labels": {"team": "it"}},
    "spec": {
      "type": "memgpt_agent",
      "model": {"provider": "openai", "model": "gpt-4o-mini",
                "apiKeySecretRef": {"name": "llm", "key": "apiKey"}},
      "heartbeat": {"prompt": "Check the queue.", "interval": ")" +
                     interval + R"("}
    }
  })");
}

}  // namespace hb::kube::testing
