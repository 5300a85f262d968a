// The result of parsing user input: a value, or an error a person can act on.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace hb::schedule {

// Errors are plain strings because they end up verbatim in a condition
// message or an Event; they always name the field and the offending value.
template <typename T>
struct ParseResult {
  std::optional<T> value;
  std::string error;  // empty when value is set

  bool ok() const { return value.has_value(); }

  static ParseResult success(T v) { return ParseResult{std::move(v), {}}; }
  static ParseResult failure(std::string message) {
    return ParseResult{std::nullopt, std::move(message)};
  }
};

}  // namespace hb::schedule
