#include "controllers/agent/coalesce.h"

#include <algorithm>
#include <iterator>

#include "api/hb_assert.h"
#include "controllers/model/run_view.h"
#include "controllers/schedule/utc_time.h"

namespace hb::controllers {

namespace {

bool foldable(const RunObservation& run) {
  return run.view->source == kSourceCallback && run.view->job_name.empty() && !run.view->cancel;
}

}  // namespace

std::vector<Coalescing> coalesce_callbacks(const std::vector<const RunObservation*>& queued) {
  std::vector<Coalescing> out;
  const RunObservation* kept = nullptr;
  for (const RunObservation* run : queued) {
    if (!foldable(*run)) continue;
    if (kept == nullptr) {
      kept = run;
      continue;
    }
    out.push_back({run->view->name, kept->view->name, run->view->trigger_detail});
  }
  HB_ASSERT_MSG(out.size() < queued.size() || queued.empty(), "one queued callback run is kept");
  return out;
}

Json coalesced_record(const Json& stored_status, const std::vector<Coalescing>& folded) {
  const Json* stored = find_path(stored_status, "coalesced");
  Json record = stored != nullptr && stored->is_object() ? *stored : Json::object();
  Json runs = record.contains("runs") && record["runs"].is_array() ? record["runs"] : Json::array();
  const int64_t stored_count = int_at(record, "count").value_or(0);
  int64_t count = stored_count;
  for (const Coalescing& c : folded) {
    const bool listed = std::any_of(runs.begin(), runs.end(),
                                    [&](const Json& r) { return string_at(r, "run") == c.run; });
    if (listed) continue;
    ++count;
    runs.push_back({{"run", c.run}, {"reason", c.reason}});
  }
  while (runs.size() > kCoalescedRunsListedMax) runs.erase(runs.begin());
  HB_ASSERT_MSG(count >= stored_count && count - stored_count <= std::ssize(folded),
                "the coalesced count grows by at most the runs folded now, never shrinks");
  record["count"] = count;
  record["runs"] = std::move(runs);
  return record;
}

Json coalesced_final_status(const Json& stored_status, const std::string& into, TimePoint now) {
  HB_ASSERT_MSG(!into.empty(), "a folded run names the run it folded into");
  Json status = stored_status.is_object() ? stored_status : Json::object();
  status["phase"] = std::string(to_string(RunPhase::kCancelled));
  status["reason"] = kReasonCoalesced;
  status["message"] = "coalesced into the queued callback run " + into;
  status["finishedAt"] = schedule::format_rfc3339(now);
  status["usage"] = {{"inputTokens", 0}, {"outputTokens", 0}, {"costCents", 0}};
  status["costRecorded"] = true;
  return status;
}

}  // namespace hb::controllers
