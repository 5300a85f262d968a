#include "runner/wire_util.h"

namespace hb::runner {

std::string dump_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json parse_json_or_discarded(const std::string& text) {
  return nlohmann::json::parse(text, nullptr, false);
}

}  // namespace hb::runner

namespace hb::runner {

long long json_int(const nlohmann::json& object, const char* key, long long fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return fallback;
  return it->is_number_float() ? static_cast<long long>(it->get<double>()) : it->get<long long>();
}

std::string json_string(const nlohmann::json& object, const char* key,
                        const std::string& fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

}  // namespace hb::runner
