// Pure decoding of a watch stream: newline-delimited JSON events whose lines
// may be cut anywhere by the transport's chunk boundaries.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kube/errors.h"
#include "kube/object_limits.h"

namespace hb::kube {

// A single event larger than this is a broken stream, not an object (the
// watch relists; the list refuses the object as too large). It holds an
// object at the bound and the event around it.
inline constexpr size_t kWatchLineBytesMax = kKubeObjectBytesMax + 64 * 1024;

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type;
  nlohmann::json object;  // the object, or the Status for kError
};

// Reassembles lines across chunks. Bounded: a partial line over
// kWatchLineBytesMax is a kMalformed Error (the partial line is dropped).
class LineSplitter {
 public:
  // Calls on_line for each complete line (without '\n'; blank lines skipped).
  Done feed(std::string_view chunk, const std::function<void(std::string_view)>& on_line);
  size_t pending_bytes() const { return partial_.size(); }

 private:
  std::string partial_;
};

// Parses one line; a kMalformed Error names what is wrong. An ADDED,
// MODIFIED or DELETED event's object has metadata whose name, namespace and
// resourceVersion, where present, are strings (what a cache reads).
Result<WatchEvent> decode_watch_event(std::string_view line);

// The resourceVersion an event moves the watch to ("" when it has none).
std::string event_resource_version(const WatchEvent& event);

}  // namespace hb::kube
