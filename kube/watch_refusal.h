// The watch path's half of the refusal decision (object_refusal.h): for an
// event line the fast scanner did not take, whether the event is sound
// around an object that is refused (too large, too deep, malformed). Then
// the informer skips and reports that object, as a list would, and reads
// on; a line that is not one event at all still breaks the stream.
#pragma once

#include <optional>
#include <string_view>

#include "kube/object_refusal.h"
#include "kube/watch_decoder.h"

namespace hb::kube {

struct RefusedWatchObject {
  WatchEventType type;
  RefusalReason reason;
  std::string_view object_text;
};

// Where an event's "type" and "object" are, found by following strings and
// nesting only (no recursion, no limit on depth), and the object's
// refusal_of_text. nullopt when the object is taken (the full decoder reads
// the line), when the line is not one object with a string "type" and an
// object "object", and for BOOKMARK and ERROR events.
std::optional<RefusedWatchObject> refused_watch_object(std::string_view line);

}  // namespace hb::kube
