// Anthropic Messages wire format (POST {baseURL}/v1/messages).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "runner/conversation.h"

namespace hb::runner::anthropic {

inline constexpr std::string_view kApiVersion = "2023-06-01";  // anthropic-version header

nlohmann::json encode_request(const ModelRequest& request);
ModelResult decode_response(const std::string& body);
std::string error_message(const std::string& body);

}  // namespace hb::runner::anthropic
