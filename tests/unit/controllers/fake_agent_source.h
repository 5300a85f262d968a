// The Agent cache an index reads on demand (shell/agent_source.h): a map the
// test changes, telling the index as the cache's handlers would.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "controllers/shell/agent_source.h"

namespace hb::controllers::testing {

struct FakeAgents {
  std::map<std::string, Json> by_key;
  // Runs before each Agent a namespace walk visits (a change told meanwhile).
  std::function<void(const std::string& key)> before_visit;

  AgentSource source() {
    AgentSource s;
    s.get = [this](const std::string& key) -> std::optional<Json> {
      const auto it = by_key.find(key);
      if (it == by_key.end()) return std::nullopt;
      return it->second;
    };
    s.contains = [this](const std::string& key) { return by_key.count(key) > 0; };
    s.for_each_in = [this](const std::string& ns, const AgentSource::Visit& visit) {
      const std::map<std::string, Json> snapshot = by_key;  // as the Store's for_each
      for (const auto& [key, agent] : snapshot) {
        if (key.rfind(ns + "/", 0) != 0) continue;
        if (before_visit) before_visit(key);
        visit(key, agent);
      }
    };
    return s;
  }
  template <typename Index>
  void put(Index& index, const std::string& key, const Json& agent) {
    by_key[key] = agent;
    index.agent_changed(key, &agent);
  }
  template <typename Index>
  void erase(Index& index, const std::string& key) {
    by_key.erase(key);
    index.agent_changed(key, nullptr);
  }
};

}  // namespace hb::controllers::testing
