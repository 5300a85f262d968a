#include "kube/list_page_splitter.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "kube/object_limits.h"

namespace hb::kube {
namespace {

bool is_json_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// An item's buffer that grew past this is given back after the item: one
// large item should not hold its size for the rest of the list.
constexpr std::size_t kItemBufferKeptBytesMax = 1024 * 1024;

std::string too_deep() {
  return "objects or arrays nested more than " + std::to_string(kKubeObjectDepthMax) + " deep";
}

// A byte from the answer as an error message may show it: the server's
// bytes are not written to a log as they are.
std::string describe_byte(char c) {
  const auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte < 0x7f && byte != '\\' && byte != '\'')
    return std::string("'") + c + "'";
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", byte);
  return std::string("byte ") + hex;
}

}  // namespace

bool ListPageSplitter::fail(std::string why) {
  if (problem_.empty()) problem_ = std::move(why);
  return false;
}

bool ListPageSplitter::feed(std::string_view bytes) {
  if (!problem_.empty()) return false;
  std::size_t at = 0;
  while (at < bytes.size()) {
    if (items_ != Items::kInItem) {
      if (!feed_byte(bytes[at++])) return false;
      continue;
    }
    // An item's bytes are taken as one span (byte by byte, the splitter ran
    // at a quarter of the speed: 76 against 291 MB/s). Past the bound only
    // its structure is followed, to its end: it is refused, not kept.
    const std::size_t end = item_end(bytes, at);
    item_bytes_ += end - at;
    if (item_.size() < kListItemBytesMax) {
      item_.append(bytes.data() + at, std::min(end - at, kListItemBytesMax - item_.size()));
    }
    at = end;
    if (item_bytes_ > kListItemSkipBytesMax) {
      return fail("an item passes " + std::to_string(kListItemSkipBytesMax) + " bytes");
    }
    if (nesting_.depth == 0 && !item_done()) return false;
  }
  return true;
}

std::size_t ListPageSplitter::item_end(std::string_view bytes, std::size_t at) {
  NestingTracker nesting = nesting_;  // in registers for the run (NestingTracker)
  const char* data = bytes.data();
  while (at < bytes.size()) {
    nesting.take(data[at++]);
    if (nesting.depth == 0) break;
  }
  nesting_ = nesting;
  return at;
}

bool ListPageSplitter::feed_byte(char c) {
  switch (items_) {
    case Items::kOutside:
    case Items::kDone:
      return envelope_byte(c);
    default:
      return between_items(c);
  }
}

// The list object itself: its members are kept as they come, except the
// items array, which is kept as "[]" while its items go to the handler.
bool ListPageSplitter::envelope_byte(char c) {
  if (!nesting_.in_string && nesting_.depth == 1 && c == '[' && member_key_ == "items") {
    if (items_ == Items::kDone) return fail("the list has a second \"items\" array");
    envelope_ += "[]";
    items_ = Items::kFirst;
    return true;
  }
  const bool was_in_string = nesting_.in_string;
  nesting_.take(c);
  if (nesting_.depth < 0) return fail("the list closes more than it opened");
  if (nesting_.depth > kKubeObjectDepthMax) return fail(too_deep());
  if (nesting_.depth == 1 && !was_in_string && nesting_.in_string) last_string_.clear();
  if (nesting_.depth == 1 && was_in_string && nesting_.in_string) last_string_ += c;
  if (nesting_.depth == 1 && !nesting_.in_string && c == ':') member_key_ = last_string_;
  envelope_ += c;
  if (envelope_.size() > kListEnvelopeBytesMax) {
    return fail("the list's members other than its items pass " +
                std::to_string(kListEnvelopeBytesMax) + " bytes");
  }
  return true;
}

bool ListPageSplitter::between_items(char c) {
  if (is_json_space(c)) return true;
  if (c == ']' && items_ != Items::kNeedItem) {
    items_ = Items::kDone;
    nesting_.depth = 1;  // back in the list object
    return true;
  }
  if (c == ',' && items_ == Items::kAfterItem) {
    items_ = Items::kNeedItem;
    return true;
  }
  if (c == '{' && items_ != Items::kAfterItem) {
    items_ = Items::kInItem;
    item_.assign(1, c);
    nesting_.depth = 1;
    nesting_.deepest = 1;
    item_bytes_ = 1;
    nesting_.in_string = false;
    nesting_.escaped = false;
    return true;
  }
  return fail("unexpected " + describe_byte(c) + " between the list's items (items are objects)");
}

bool ListPageSplitter::item_done() {
  if (const std::optional<RefusalReason> refused =
          refusal_for(ObjectShape{item_bytes_, nesting_.deepest})) {
    if (!on_refused_ || !on_refused_(*refused, item_)) {
      return fail(*refused == RefusalReason::kTooDeep
                      ? too_deep()
                      : "an item passes " + std::to_string(kListItemBytesMax) + " bytes");
    }
  } else if (!on_item_(item_)) {
    return fail("an item is not a JSON object");
  }
  items_ = Items::kAfterItem;
  item_.clear();
  if (item_.capacity() > kItemBufferKeptBytesMax) item_.shrink_to_fit();
  return true;
}

std::optional<ListPageEnd> ListPageSplitter::finish() {
  if (!problem_.empty()) return std::nullopt;
  if (items_ != Items::kOutside && items_ != Items::kDone) {
    fail("the body ended inside the list's items");
    return std::nullopt;
  }
  nlohmann::json list = nlohmann::json::parse(envelope_, nullptr, /*allow_exceptions=*/false);
  if (list.is_discarded() || !list.is_object()) {
    fail("the body is not one JSON object");
    return std::nullopt;
  }
  // An items array this splitter did not recognise (its key escaped) would
  // otherwise be dropped unread.
  if (auto items = list.find("items");
      items != list.end() && !items->is_null() && !(items->is_array() && items->empty())) {
    fail("the list's items are not an array under the key \"items\"");
    return std::nullopt;
  }
  ListPageEnd end;
  if (auto meta = list.find("metadata"); meta != list.end() && meta->is_object()) {
    auto text = [&](const char* key) {
      auto it = meta->find(key);
      return it != meta->end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    end.resource_version = text("resourceVersion");
    end.continue_token = text("continue");
  }
  return end;
}

}  // namespace hb::kube
