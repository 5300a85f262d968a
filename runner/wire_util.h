// Helpers shared by the wire codecs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace hb::runner {

// Dumps without throwing on invalid UTF-8 (replaced with U+FFFD).
std::string dump_json(const nlohmann::json& value);
// Parses; returns a discarded value on malformed input.
nlohmann::json parse_json_or_discarded(const std::string& text);

}  // namespace hb::runner

namespace hb::runner {

// object[key] when it is a number (integer part) / a string; otherwise the fallback.
long long json_int(const nlohmann::json& object, const char* key, long long fallback = 0);
// Whether `key` holds a number (a token count the provider reported).
bool json_has_number(const nlohmann::json& object, const char* key);
// A usage count from a provider: clamped to 0..api::kInputTokensPerModelCallMax.
long long json_token_count(const nlohmann::json& object, const char* key);
std::string json_string(const nlohmann::json& object, const char* key,
                        const std::string& fallback = std::string());

}  // namespace hb::runner
