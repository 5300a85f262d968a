// One object an informer will not take (too deep, too large, malformed),
// decided the same way for a list's item and a watch event's object, and
// what can be said of it without a parser: its namespace, name and uid,
// read from the raw text, bounded, shown escaped (they are the author's
// bytes). One such object is its own problem: it is skipped and reported,
// the page, the watch and the sync go on.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "api/json_depth.h"

namespace hb::kube {

enum class RefusalReason { kTooDeep, kTooLarge, kMalformed };
inline constexpr RefusalReason kRefusalReasons[] = {
    RefusalReason::kTooDeep, RefusalReason::kTooLarge, RefusalReason::kMalformed};

// "too_deep", "too_large", "malformed": the counter's reason label.
std::string_view refusal_label(RefusalReason reason);
// The limit in words, with what to do: for a log line and an Event.
std::string refusal_limit_text(RefusalReason reason);

// What the list splitter counts of an item as its bytes arrive, and
// measure_object_text counts of a whole text, the same way.
struct ObjectShape {
  std::size_t bytes = 0;
  int depth = 0;  // deepest nesting of objects and arrays; the object itself is 1
};

// The nesting counter both use is api::JsonNesting (api/json_depth.h).
using NestingTracker = api::JsonNesting;

// THE decision, shared by list and watch, on what a parser may see: too
// large before too deep. A text that passes is then parsed; one that does
// not parse is kMalformed in both paths.
std::optional<RefusalReason> refusal_for(const ObjectShape& shape);

// The shape of one object's text; linear and without recursion, so any
// depth is safe to measure.
ObjectShape measure_object_text(std::string_view text);

// refusal_for(measure_object_text(text)), then whether it is one JSON
// object: the whole decision on a text held in full (the watch slow path).
std::optional<RefusalReason> refusal_of_text(std::string_view text);

// The identity a refused object's text gives, without a parser.
// Strings are as JSON decodes them when they decode, else as sent; each at
// most kRefusedIdentityBytesMax bytes (cut is set when one was longer).
inline constexpr std::size_t kRefusedIdentityBytesMax = 253;
struct PeekedMetadata {
  std::string namespace_, name, uid, resource_version;
  bool cut = false;
};
// metadata.{namespace,name,uid,resourceVersion} at the top level of an
// object's text (or a prefix of it); empty members when not found. Stops
// at metadata's end.
PeekedMetadata peek_metadata(std::string_view object_text);

// Told of one refused object's text (all of it, or its first bytes).
using RefusedTextHandler = std::function<void(RefusalReason reason, std::string_view object_text)>;

struct RefusedObject {
  std::string resource;  // Resource::describe(), e.g. agents.heartbeat.dev
  RefusalReason reason = RefusalReason::kMalformed;
  PeekedMetadata metadata;
  std::size_t bytes = 0;  // of the object's text, as far as it was read
};
RefusedObject refused_object(std::string resource, RefusalReason reason,
                             std::string_view object_text);

// At most kShownBytesMax bytes of `raw`, printable ASCII as it is and every
// other byte (and '"', '\\') as \xNN, with "..." when cut: safe inside a
// quoted log value.
inline constexpr std::size_t kShownBytesMax = 80;
std::string shown(std::string_view raw);
// "namespace/name" as shown(), or "(unnamed)".
std::string shown_key(const PeekedMetadata& metadata);
// Whether an Event can name the object: a DNS-1123 label namespace, a
// DNS-1123 subdomain name and a uid of [0-9a-f-] (nothing else reaches a
// URL or an Event).
bool addressable(const PeekedMetadata& metadata);
// "namespace/name" for Store keys when both are plain; "" otherwise.
std::string store_key(const PeekedMetadata& metadata);

// The warning line, never the object's content.
void log_refusal(const RefusedObject& refused, std::string_view where);

}  // namespace hb::kube
