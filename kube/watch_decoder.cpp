#include "kube/watch_decoder.h"

namespace hb::kube {
namespace {

Error malformed(std::string message) {
  Error error;
  error.kind = ErrorKind::kMalformed;
  error.message = std::move(message);
  return error;
}

// What a Store reads: metadata, its name, namespace and resourceVersion as
// strings.
bool keyable(const nlohmann::json& object) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return false;
  for (const char* key : {"name", "namespace", "resourceVersion"}) {
    const auto it = meta->find(key);
    if (it != meta->end() && !it->is_string()) return false;
  }
  return true;
}

}  // namespace

Done LineSplitter::feed(std::string_view chunk,
                        const std::function<void(std::string_view)>& on_line) {
  while (!chunk.empty()) {
    size_t newline = chunk.find('\n');
    if (newline == std::string_view::npos) {
      if (partial_.size() + chunk.size() > kWatchLineBytesMax) {
        partial_.clear();
        return malformed("watch event longer than " + std::to_string(kWatchLineBytesMax) +
                         " bytes without a newline");
      }
      partial_.append(chunk);
      return done();
    }
    std::string_view head = chunk.substr(0, newline);
    chunk.remove_prefix(newline + 1);
    if (partial_.empty()) {
      if (!head.empty()) on_line(head);  // the common case: no copy
    } else {
      partial_.append(head);
      std::string line;
      line.swap(partial_);
      on_line(line);
    }
  }
  return done();
}

Result<WatchEvent> decode_watch_event(std::string_view line) {
  nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return malformed("watch event is not a JSON object: " + std::string(line.substr(0, 120)));
  }
  auto type_it = parsed.find("type");
  auto object_it = parsed.find("object");
  if (type_it == parsed.end() || !type_it->is_string()) {
    return malformed("watch event has no string \"type\"");
  }
  if (object_it == parsed.end() || !object_it->is_object()) {
    return malformed("watch event has no \"object\"");
  }
  const std::string& type = type_it->get_ref<const std::string&>();
  WatchEventType kind;
  if (type == "ADDED") {
    kind = WatchEventType::kAdded;
  } else if (type == "MODIFIED") {
    kind = WatchEventType::kModified;
  } else if (type == "DELETED") {
    kind = WatchEventType::kDeleted;
  } else if (type == "BOOKMARK") {
    kind = WatchEventType::kBookmark;
  } else if (type == "ERROR") {
    kind = WatchEventType::kError;
  } else {
    return malformed("watch event has unknown type \"" + type + "\"");
  }
  const bool keyed = kind != WatchEventType::kBookmark && kind != WatchEventType::kError;
  if (keyed && !keyable(*object_it)) {
    return malformed(
        "watch event's object has no metadata with string name, namespace and resourceVersion");
  }
  return WatchEvent{kind, std::move(*object_it)};
}

std::string event_resource_version(const WatchEvent& event) {
  if (event.type == WatchEventType::kError) return "";
  auto meta = event.object.find("metadata");
  if (meta == event.object.end() || !meta->is_object()) return "";
  auto rv = meta->find("resourceVersion");
  return rv != meta->end() && rv->is_string() ? rv->get<std::string>() : "";
}

}  // namespace hb::kube
