#include "kube/watch_decoder.h"

namespace hb::kube {

void LineSplitter::feed(std::string_view chunk,
                        const std::function<void(std::string_view)>& on_line) {
  while (!chunk.empty()) {
    size_t newline = chunk.find('\n');
    if (newline == std::string_view::npos) {
      if (partial_.size() + chunk.size() > kWatchLineBytesMax) {
        partial_.clear();
        throw WatchDecodeError("watch event longer than " + std::to_string(kWatchLineBytesMax) +
                               " bytes without a newline");
      }
      partial_.append(chunk);
      return;
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
}

WatchEvent decode_watch_event(std::string_view line) {
  nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    throw WatchDecodeError("watch event is not a JSON object: " + std::string(line.substr(0, 120)));
  }
  auto type_it = parsed.find("type");
  auto object_it = parsed.find("object");
  if (type_it == parsed.end() || !type_it->is_string()) {
    throw WatchDecodeError("watch event has no string \"type\"");
  }
  if (object_it == parsed.end() || !object_it->is_object()) {
    throw WatchDecodeError("watch event has no \"object\"");
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
    throw WatchDecodeError("watch event has unknown type \"" + type + "\"");
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
