// JSON text parsed without exceptions, keeping the parser's own message
// ("[json.exception.parse_error.101] parse error at line 1, column 2: ..."),
// which json::parse(text, nullptr, false) drops. The caller bounds the
// nesting first (api/json_depth.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "api/expected.h"

namespace hb::api {

struct JsonTextError {
  std::string message;  // a parse error, or a number too large for a double
};

Expected<nlohmann::json, JsonTextError> parse_json_text(std::string_view text);

}  // namespace hb::api
