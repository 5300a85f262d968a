// A nesting-depth check that runs before any JSON parser: nlohmann's parser
// recurses once per level, so a hostile document of 100,000 '[' would
// overflow the stack. Every parse of text from outside the process (model
// replies, tool arguments, results, reports) checks this first. Pure.
#pragma once

#include <cstddef>
#include <string_view>

namespace hb::api {

// Objects and arrays nested more than depth_max deep (strings skipped).
bool json_nested_deeper_than(std::string_view text, std::size_t depth_max);

}  // namespace hb::api
