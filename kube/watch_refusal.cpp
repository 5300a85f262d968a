#include "kube/watch_refusal.h"

#include <nlohmann/json.hpp>
#include <string>

#include "api/json_depth.h"

namespace hb::kube {
namespace {

bool event_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Past the value that starts at `at` (after spaces): a string, or an object
// or array followed to its matching close; a scalar up to the next ',', '}'
// or ']'. npos when the text ends first.
std::size_t event_value_end(std::string_view text, std::size_t at) {
  api::JsonNesting nesting;
  for (std::size_t i = at; i < text.size(); ++i) {
    const char c = text[i];
    const bool was_in_string = nesting.in_string;
    if (!was_in_string && nesting.depth == 0 && (c == '}' || c == ']' || c == ',')) {
      return i;  // a scalar's end
    }
    nesting.take(c);
    if (nesting.in_string || nesting.depth != 0) continue;
    if ((was_in_string && c == '"') || c == '}' || c == ']') return i + 1;
  }
  return std::string_view::npos;
}

std::size_t skip_event_spaces(std::string_view text, std::size_t at) {
  while (at < text.size() && event_space(text[at])) ++at;
  return at;
}

// A string token's value as the full decoder reads it ("" if it is none).
std::string event_string(std::string_view token) {
  if (token.size() < 2 || token.front() != '"') return "";
  if (token.find('\\') == std::string_view::npos) {
    return std::string(token.substr(1, token.size() - 2));
  }
  const nlohmann::json s = nlohmann::json::parse(token, nullptr, /*allow_exceptions=*/false);
  return s.is_string() ? s.get<std::string>() : "";
}

struct LocatedEvent {
  std::string type;
  std::string_view object_text;
};

// The event's top-level members, each key a plain string, each value
// skipped by event_value_end; the last "type" and "object" win, as for the full
// decoder.
std::optional<LocatedEvent> locate_event(std::string_view line) {
  LocatedEvent out;
  std::size_t at = skip_event_spaces(line, 0);
  if (at >= line.size() || line[at] != '{') return std::nullopt;
  at = skip_event_spaces(line, at + 1);
  while (at < line.size() && line[at] == '"') {
    const std::size_t key_end = event_value_end(line, at);
    if (key_end == std::string_view::npos) return std::nullopt;
    const std::string key = event_string(line.substr(at, key_end - at));
    at = skip_event_spaces(line, key_end);
    if (at >= line.size() || line[at] != ':') return std::nullopt;
    const std::size_t start = skip_event_spaces(line, at + 1);
    const std::size_t end = event_value_end(line, start);
    if (end == std::string_view::npos || end == start) return std::nullopt;
    const std::string_view value = line.substr(start, end - start);
    if (key == "type") out.type = event_string(value);
    if (key == "object") out.object_text = value.front() == '{' ? value : std::string_view();
    at = skip_event_spaces(line, end);
    if (at >= line.size() || line[at] != ',') break;
    at = skip_event_spaces(line, at + 1);
    if (at >= line.size() || line[at] != '"') return std::nullopt;
  }
  if (at >= line.size() || line[at] != '}' || skip_event_spaces(line, at + 1) != line.size()) {
    return std::nullopt;
  }
  if (out.type.empty() || out.object_text.empty()) return std::nullopt;
  return out;
}

}  // namespace

std::optional<RefusedWatchObject> refused_watch_object(std::string_view line) {
  const std::optional<LocatedEvent> event = locate_event(line);
  if (!event) return std::nullopt;
  WatchEventType type;
  if (event->type == "ADDED") {
    type = WatchEventType::kAdded;
  } else if (event->type == "MODIFIED") {
    type = WatchEventType::kModified;
  } else if (event->type == "DELETED") {
    type = WatchEventType::kDeleted;
  } else {
    return std::nullopt;  // a bookmark's object is not kept; an ERROR is a Status
  }
  const std::optional<RefusalReason> reason = refusal_of_text(event->object_text);
  if (!reason) return std::nullopt;
  return RefusedWatchObject{type, *reason, event->object_text};
}

}  // namespace hb::kube
