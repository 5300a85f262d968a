#include "runner/wire_util.h"

#include <algorithm>
#include <cmath>

#include "api/heartbeat_pod.h"
#include "api/json_depth.h"
#include "runner/limits.h"

namespace hb::runner {

std::string dump_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json parse_json_or_discarded(const std::string& text) {
  // The parser recurses per level: a reply nested 100,000 deep must not
  // overflow the runner's stack (and lose the run's cost with it).
  if (api::json_nested_deeper_than(text, kWireJsonDepthMax))
    return nlohmann::json::value_t::discarded;
  return nlohmann::json::parse(text, nullptr, false);
}

}  // namespace hb::runner

namespace hb::runner {

long long json_int(const nlohmann::json& object, const char* key, long long fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return fallback;
  if (!it->is_number_float()) return it->get<long long>();
  // Clamped as a double first: casting 1e300 to an integer is undefined.
  const double value = it->get<double>();
  if (!std::isfinite(value)) return fallback;
  constexpr double kLimit = 9.2e18;  // inside long long's range
  return static_cast<long long>(std::clamp(value, -kLimit, kLimit));
}

bool json_has_number(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return false;
  auto it = object.find(key);
  return it != object.end() && it->is_number();
}

long long json_token_count(const nlohmann::json& object, const char* key) {
  // A provider's count is hostile input too: never negative, never more than
  // one call can carry (the operator bounds the run again, api/heartbeat_pod.h).
  return std::clamp<long long>(json_int(object, key, 0), 0, api::kInputTokensPerModelCallMax);
}

std::string json_string(const nlohmann::json& object, const char* key,
                        const std::string& fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

}  // namespace hb::runner
