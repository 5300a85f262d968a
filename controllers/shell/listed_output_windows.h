// Each agent's output window as one list of runs goes by: the newest
// `contextRuns` settled runs (by finish time, then name: finished_after)
// among those listed so far. A list names runs in key order, not finish
// order, so a run can enter a window and be pushed out by one listed after
// it; the cache's list pass (cluster_cache.cpp) drops the pushed-out run's
// output then, not after the whole list is in. What a window holds only
// ever narrows as the list goes on (a run not among the newest of some runs
// is not among the newest of more), so each run is pushed out at most once
// and the windows at the end are the ones the run index computes from all
// of them. Pure; one per list.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/model/json_util.h"

namespace hb::controllers {

class ListedOutputWindows {
 public:
  struct Admission {
    bool in_window = true;                  // false: the run itself is past the window
    std::optional<std::string> pushed_out;  // a run listed earlier that no longer is in it
  };
  // A settled run of `agent_key` as listed. `context_runs` nullopt: the
  // agent is not known (yet), and every output is kept, as the index does.
  Admission admit(const std::string& agent_key, std::string_view run_name, TimePoint finished_at,
                  std::optional<int> context_runs);

 private:
  struct Listed {
    TimePoint finished_at{};
    std::string name;
  };
  // Per agent, at most contextRuns runs, newest first.
  std::map<std::string, std::vector<Listed>, std::less<>> windows_;
};

}  // namespace hb::controllers
