#include "controllers/run/earlier_runs.h"

#include <algorithm>

#include "api/contract_limits.h"
#include "api/hb_assert.h"
#include "api/utf8.h"
#include "controllers/model/run_view.h"
#include "controllers/run/cache_projection.h"

namespace hb::controllers {

std::vector<const EarlierRun*> newest_finished(const std::vector<EarlierRun>& runs,
                                               const std::string& current_run, int64_t shown) {
  std::vector<const EarlierRun*> finished;
  for (const EarlierRun& r : runs) {
    if (r.finished_at && r.name != current_run) finished.push_back(&r);
  }
  // Ranked as the cache's window ranks them, so a run the context shows has its output cached.
  std::sort(finished.begin(), finished.end(), [](const EarlierRun* a, const EarlierRun* b) {
    return finished_after(*a->finished_at, a->name, *b->finished_at, b->name);
  });
  if (static_cast<int64_t>(finished.size()) > shown) {
    finished.resize(static_cast<std::size_t>(std::max<int64_t>(0, shown)));
  }
  HB_ASSERT(static_cast<int64_t>(finished.size()) <= std::max<int64_t>(0, shown));
  return finished;
}

std::vector<EarlierRun> earlier_runs(const std::vector<const Json*>& runs,
                                     const std::string& current_run, int64_t shown) {
  std::vector<EarlierRun> out;
  std::vector<const Json*> source;  // out[i] was read from source[i]
  out.reserve(runs.size());
  source.reserve(runs.size());
  for (const Json* r : runs) {
    if (r == nullptr) continue;
    EarlierRun& run = out.emplace_back();
    run.name = string_at(*r, "metadata/name");
    run.finished_at = time_at(*r, "status/finishedAt");
    source.push_back(r);
  }
  for (const EarlierRun* shown_run : newest_finished(out, current_run, shown)) {
    EarlierRun& run = out[static_cast<std::size_t>(shown_run - out.data())];
    const Json& r = *source[static_cast<std::size_t>(shown_run - out.data())];
    run.finished_at_text = string_at(r, "status/finishedAt");
    run.phase = string_at(r, "status/phase");
    run.stop_reason = string_at(r, "status/stopReason");
    run.output =
        api::utf8_prefix(string_view_at(r, "status/output"), api::kRecentRunOutputBytesMax);
    run.output_dropped = output_dropped(r);
    HB_ASSERT(run.output.size() <= api::kRecentRunOutputBytesMax);
  }
  HB_ASSERT_MSG(out.size() == source.size(), "each run read is told from its own object");
  return out;
}

}  // namespace hb::controllers
