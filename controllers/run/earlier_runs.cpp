#include "controllers/run/earlier_runs.h"

#include "api/contract_limits.h"
#include "api/utf8.h"
#include "controllers/run/cache_projection.h"

namespace hb::controllers {

std::vector<EarlierRun> earlier_runs(const std::vector<const Json*>& runs) {
  std::vector<EarlierRun> out;
  out.reserve(runs.size());
  for (const Json* r : runs) {
    if (r == nullptr) continue;
    EarlierRun& run = out.emplace_back();
    run.name = string_at(*r, "metadata/name");
    run.finished_at = time_at(*r, "status/finishedAt");
    // Most of an agent's runs are never shown: only a finished one is read further.
    if (!run.finished_at) continue;
    run.finished_at_text = string_at(*r, "status/finishedAt");
    run.phase = string_at(*r, "status/phase");
    run.stop_reason = string_at(*r, "status/stopReason");
    run.output =
        api::utf8_prefix(string_view_at(*r, "status/output"), api::kRecentRunOutputBytesMax);
    run.output_dropped = output_dropped(*r);
  }
  return out;
}

}  // namespace hb::controllers
