// A nesting-depth check that runs before any JSON parser: nlohmann's parser
// recurses once per level, so a hostile document of 100,000 '[' would
// overflow the stack. Every parse of text from outside the process (model
// replies, tool arguments, results, reports) checks this first. Pure.
#pragma once

#include <cstddef>
#include <string_view>

namespace hb::api {

// Strings and nesting of JSON text, byte by byte and without recursion:
// what the list splitter, an informer's refusal check and
// json_nested_deeper_than count alike. Copied into a local for a run of
// bytes (a char read may alias members, which the compiler would then
// reload per byte).
struct JsonNesting {
  int depth = 0;
  int deepest = 0;  // the largest depth reached
  bool in_string = false;
  bool escaped = false;
  void take(char c) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      return;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > deepest) deepest = depth;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
};

// Objects and arrays nested more than depth_max deep (strings skipped).
bool json_nested_deeper_than(std::string_view text, std::size_t depth_max);

}  // namespace hb::api
