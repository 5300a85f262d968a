// The cache's index from an agent ("ns/name") to its runs, each with whether
// it is settled (final, cost recorded: its Jobs and Pods are not kept), when
// it finished and whether the cache keeps its output. At fleet size it names
// every run of the history (160,000 at 10,000 agents), so each run is one
// entry in a sorted vector, not a tree node with its namespaced key.
//
// A settled run's output is only read for the next runs' context: the
// agent's newest `contextRuns` settled runs (by finish time) keep theirs in
// the cache, the others' are dropped (cache_projection.h). The index says
// which is which. Not thread-safe: the cache holds its lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/model/json_util.h"

namespace hb::controllers {

struct IndexedRun {
  TimePoint finished_at{};  // for a settled run: its status.finishedAt
  bool settled = false;
  bool output_kept = false;  // a settled run whose output the cache still holds
};

class RunIndex {
 public:
  // Records the run, settled or not; true when it has just become settled.
  bool set(const std::string& agent_key, std::string_view run_name, const IndexedRun& run);
  void erase(const std::string& agent_key, std::string_view run_name);
  // False for a run not indexed.
  bool settled(const std::string& agent_key, std::string_view run_name) const;
  // True for an indexed run that is not settled.
  bool unsettled(const std::string& agent_key, std::string_view run_name) const;
  // The agent's runs' names, sorted.
  std::vector<std::string> names(const std::string& agent_key) const;

  // The agent's contextRuns (nullopt: the agent is not cached, and every
  // settled run keeps its output until it is). True when it lowers the
  // window, so outputs_past_window may name runs now.
  bool set_context_runs(const std::string& agent_key, std::optional<int> context_runs);
  // As last set (nullopt: not known).
  std::optional<int> context_runs(const std::string& agent_key) const;
  // Whether a settled run that finished at `finished_at` is within the
  // agent's window: fewer than contextRuns of its other settled runs
  // finished later (the same time: by name).
  bool in_output_window(const std::string& agent_key, std::string_view run_name,
                        TimePoint finished_at) const;
  // Records what the cache keeps of an indexed run's output.
  void set_output_kept(const std::string& agent_key, std::string_view run_name, bool kept);
  // Settled runs whose output is kept but that are past the window now.
  std::vector<std::string> outputs_past_window(const std::string& agent_key) const;

 private:
  // One run: its name is `length` bytes at `offset` in its agent's `names`.
  struct Entry {
    TimePoint finished_at{};
    uint32_t offset = 0;
    uint16_t length = 0;
    bool settled = false;
    bool output_kept = false;
  };
  // An agent's runs: every name back to back in one string (no allocation
  // per run; at fleet size a string each cost more than the name), and the
  // entries sorted by name. An erased name's bytes stay until they are a
  // quarter. The operator names an agent's runs "<agent>-<slot>" (names.h):
  // while every name has that prefix, each is kept without it (prefix_bytes;
  // sorting and comparing the rest gives the same order), and a name without
  // it puts the prefix back on all of them.
  struct Agent {
    std::string names;
    std::vector<Entry> runs;
    std::size_t dead_bytes = 0;
    std::optional<int> context_runs;
    uint16_t prefix_bytes = 0;
    std::string_view name_of(const Entry& e) const { return {names.data() + e.offset, e.length}; }
    // A full name as kept here; nullopt when it lacks the prefix kept names lack.
    std::optional<std::string_view> kept_form(std::string_view full, std::string_view prefix) const;
    std::string full_name(const Entry& e, std::string_view prefix) const;
    void put_prefix_back(std::string_view prefix);
    std::vector<Entry>::const_iterator find(std::string_view name) const;
    Entry* find_mutable(std::string_view name);
    void compact();
    void append_name(std::string_view name);
  };
  using Agents = std::map<std::string, Agent, std::less<>>;
  // How many of the agent's settled runs other than `name` (a full name)
  // finished after it.
  static int settled_later(const Agent& agent, std::string_view prefix, std::string_view name,
                           TimePoint finished_at);
  void forget_if_empty(Agents::iterator it);
  // The run's entry; null when it is not indexed.
  const Entry* entry(const std::string& agent_key, std::string_view run_name) const;
  Agents by_agent_;
};

}  // namespace hb::controllers
