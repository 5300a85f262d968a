// The informer's fast path: finds what a cache needs in a watch event line
// (type, the object's text, name, namespace, resourceVersion, where
// managedFields sits) or in a list page (each item's text) without building
// a JSON tree. Building the tree costs ~10x more and most events are only
// stored and keyed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/watch_decoder.h"

namespace hb::kube {

// Nesting deeper than this is not a Kubernetes object.
inline constexpr int kWatchScanDepthMax = 128;

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

// A list answer's page: each item's text (views into the body), so the
// items are parsed one at a time instead of as one tree (a page's tree was
// the operator's largest transient: about 10 MiB for 500 runs, for each
// informer listing at once).
struct ScannedListPage {
  std::vector<std::string_view> items;
  std::string_view resource_version;  // metadata.resourceVersion
  std::string_view continue_token;    // metadata.continue; empty on the last page
};

// Nullopt when the body is not a well-formed JSON object this scanner can
// vouch for (escapes in the metadata strings included): the caller parses
// the whole body then, which names the problem.
std::optional<ScannedListPage> scan_list_page(std::string_view body);

}  // namespace hb::kube
