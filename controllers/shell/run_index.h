// The cache's index from an agent ("ns/name") to its runs, each with whether
// it is settled (final, cost recorded: its Jobs and Pods are not kept). At
// fleet size it names every run of the history (160,000 at 10,000 agents),
// so each run is one name in a sorted vector, not a tree node with its
// namespaced key. Not thread-safe: the cache holds its lock.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace hb::controllers {

class RunIndex {
 public:
  // Records the run, settled or not; true when it has just become settled.
  bool set(const std::string& agent_key, std::string_view run_name, bool settled);
  void erase(const std::string& agent_key, std::string_view run_name);
  // False for a run not indexed.
  bool settled(const std::string& agent_key, std::string_view run_name) const;
  // The agent's runs' names, sorted.
  std::vector<std::string> names(const std::string& agent_key) const;

 private:
  struct Run {
    std::string name;
    bool settled = false;
  };
  using Runs = std::vector<Run>;  // sorted by name
  static Runs::const_iterator find(const Runs& runs, std::string_view name);
  std::map<std::string, Runs, std::less<>> by_agent_;
};

}  // namespace hb::controllers
