// Text helpers for status fields (cutting UTF-8 text: api/utf8.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hb::controllers {

// "pause_heartbeats" -> "PauseHeartbeats" (a CamelCase Event/condition reason).
std::string camel_case(std::string_view snake);

// Empty or only ASCII whitespace (a prompt with nothing to do).
bool is_blank(std::string_view text);

// `text` without ASCII whitespace at either end.
std::string_view trim_blank(std::string_view text);

}  // namespace hb::controllers
