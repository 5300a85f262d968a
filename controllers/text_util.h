// Text helpers for status fields: bounded, valid UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hb::controllers {

// At most max_bytes, cut at a UTF-8 character boundary.
std::string truncate_utf8(std::string_view text, std::size_t max_bytes);

// "pause_heartbeats" -> "PauseHeartbeats" (a CamelCase Event/condition reason).
std::string camel_case(std::string_view snake);

}  // namespace hb::controllers
