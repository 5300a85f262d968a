// The agent's runs as the next run's context document reads them
// (job_builder.h): the earlier runs it shows, and the transcripts an
// archival claim keeps. Pure.
#pragma once

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

// Each of `runs` (nulls skipped), in their order.
std::vector<EarlierRun> earlier_runs(const std::vector<const Json*>& runs);

}  // namespace hb::controllers
