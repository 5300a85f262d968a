// A HeartbeatPolicy as any namespace admin (or a broken GitOps repo) can
// write it: parsed into limits or errors that name the field, never an
// exception; an invalid policy selects nobody; its status renders.
#include <nlohmann/json.hpp>

#include "controllers/policy/policy_status.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json policy =
      nlohmann::json::parse(hb::fuzz::as_text(data, size), nullptr, /*allow_exceptions=*/false);
  if (policy.is_discarded() || !policy.is_object()) return 0;
  const hb::controllers::PolicySpec spec = hb::controllers::parse_policy(policy);
  hb::fuzz::require(spec.monthly_budget_cents >= 0 && spec.max_concurrent_runs >= 0, "limits");
  hb::fuzz::require(
      spec.selector.requirements.size() <= hb::controllers::kSelectorRequirementsMax + 1,
      "selector bound");
  for (const auto& labels : std::vector<std::map<std::string, std::string>>{
           {}, {{"team", "a"}}, {{"team", "b"}, {"tier", "gold"}}}) {
    if (!spec.valid()) hb::fuzz::require(!spec.selects(labels), "invalid selects nobody");
  }
  const auto now = std::chrono::system_clock::time_point{std::chrono::seconds(1767225600)};
  const nlohmann::json* stored = hb::controllers::find_path(policy, "status");
  const nlohmann::json status = hb::controllers::desired_policy_status(
      spec, stored != nullptr && stored->is_object() ? stored : nullptr, {1, 0, 1.5, "2026-01"},
      now);
  hb::fuzz::require(status.contains("conditions"), "status");
  return 0;
}
