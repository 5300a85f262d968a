// The informer's fast path: finds what a cache needs in a watch event line
// (type, the object's text, name, namespace, resourceVersion, where
// managedFields sits) without building a JSON tree (list pages:
// list_page_splitter.h). Building the tree costs ~10x more and most events are only
// stored and keyed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kube/object_limits.h"
#include "kube/watch_decoder.h"

namespace hb::kube {

struct ScannedWatchEvent {
  WatchEventType type;
  std::string_view object_text;  // the whole object, as sent
  std::string_view name;
  std::string_view namespace_;
  std::string_view resource_version;
  // metadata.managedFields as a member ("managedFields":[...]) plus one
  // adjoining comma, to cut from object_text; empty when absent.
  std::string_view managed_fields_member;

  // object_text without managedFields.
  std::string compact_object_text() const;
};

// Returns nullopt when the line is not a well-formed event this scanner can
// vouch for (malformed JSON, escapes in metadata strings, an ERROR event):
// the caller then uses decode_watch_event, which names the problem.
std::optional<ScannedWatchEvent> scan_watch_event(std::string_view line);

}  // namespace hb::kube
