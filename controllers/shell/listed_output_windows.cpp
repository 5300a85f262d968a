#include "controllers/shell/listed_output_windows.h"

#include <algorithm>

#include "api/hb_assert.h"
#include "controllers/model/run_view.h"

namespace hb::controllers {

ListedOutputWindows::Admission ListedOutputWindows::admit(const std::string& agent_key,
                                                          std::string_view run_name,
                                                          TimePoint finished_at,
                                                          std::optional<int> context_runs) {
  Admission out;
  if (!context_runs) return out;
  const auto window = static_cast<std::size_t>(std::max(0, *context_runs));
  std::vector<Listed>& newest = windows_[agent_key];
  auto newer = [](const Listed& a, const Listed& b) {
    return finished_after(a.finished_at, a.name, b.finished_at, b.name);
  };
  Listed run{finished_at, std::string(run_name)};
  auto at = std::lower_bound(newest.begin(), newest.end(), run, newer);
  if (static_cast<std::size_t>(at - newest.begin()) >= window) {
    out.in_window = false;
    return out;
  }
  newest.insert(at, std::move(run));
  if (newest.size() > window) {
    out.pushed_out = std::move(newest.back().name);
    newest.pop_back();
  }
  HB_ASSERT(newest.size() <= window);
  return out;
}

}  // namespace hb::controllers
