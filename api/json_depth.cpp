#include "api/json_depth.h"

namespace hb::api {

bool json_nested_deeper_than(std::string_view text, std::size_t depth_max) {
  JsonNesting nesting;
  for (char c : text) {
    nesting.take(c);
    if (nesting.depth < 0) nesting.depth = 0;  // a stray close never buys depth
    if (static_cast<std::size_t>(nesting.depth) > depth_max) return true;
  }
  return false;
}

}  // namespace hb::api
