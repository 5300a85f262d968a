// The agent's runs as the next run's context document reads them
// (job_builder.h): the earlier runs it shows, and the transcripts an
// archival claim keeps. Pure.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"

namespace hb::controllers {

struct EarlierRun {
  std::string name;
  std::optional<TimePoint> finished_at;  // status.finishedAt; unset: not finished
  // As stored (the document repeats them); read only for a finished run.
  std::string finished_at_text, phase, stop_reason;
  std::string output;           // status.output, cut to api::kRecentRunOutputBytesMax
  bool output_dropped = false;  // the cache dropped `output` (cache_projection.h)
};

// The newest `shown` finished runs other than `current_run`, newest first
// (by finish time, then name: the order the cache's output window keeps).
std::vector<const EarlierRun*> newest_finished(const std::vector<EarlierRun>& runs,
                                               const std::string& current_run, int64_t shown);

// Each of `runs` (nulls skipped), in their order; only those
// newest_finished(current_run, shown) picks carry their phase, stop reason
// and output, which nothing else reads.
std::vector<EarlierRun> earlier_runs(const std::vector<const Json*>& runs,
                                     const std::string& current_run = {},
                                     int64_t shown = std::numeric_limits<int64_t>::max());

}  // namespace hb::controllers
