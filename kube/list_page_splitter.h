// A list answer's body split into its items as the bytes arrive, so a page
// is never held whole: at 1,000 agents the bodies of the pages the
// informers listed at once (each grown by doubling, with the transport's own
// copy beside it) would be 17 of the operator's 21 MiB of peak heap, and the
// same at any fleet size. Only the item being received and the list's
// envelope (kind, metadata) are kept; each whole item goes to the handler.
// An item too large or too deep (refusal_for, the decision the watch takes
// too) goes to the refused-item handler instead: one bad object is skipped
// and reported, never the whole page. What is not a list page at all (a
// stray byte between items, an envelope too deep or too large, a body cut
// short) still fails the page.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "kube/object_limits.h"
#include "kube/object_refusal.h"

namespace hb::kube {

// One item larger than this is not an object the API server stores (etcd
// takes at most 1.5 MiB per request by default): it is refused as too
// large, and only its first this many bytes are kept (for its name).
inline constexpr std::size_t kListItemBytesMax = kKubeObjectBytesMax;
// An item that goes on past this is no item but a broken body: the page
// fails (and nesting counts stay far from int's range).
inline constexpr std::size_t kListItemSkipBytesMax = 64 * kListItemBytesMax;
// Everything around the items: kind, apiVersion, metadata (the continue
// token is the largest part, a few hundred bytes).
inline constexpr std::size_t kListEnvelopeBytesMax = 64 * 1024;

struct ListPageEnd {
  std::string resource_version;  // metadata.resourceVersion
  std::string continue_token;    // metadata.continue; empty on the last page
};

class ListPageSplitter {
 public:
  // Gets each item's whole text in order; returns false to stop (the item
  // was not usable), which fails the page.
  using ItemHandler = std::function<bool(std::string_view item_text)>;
  // Gets each item refusal_for refuses, with what is kept of its text (all
  // of it, or its first kListItemBytesMax bytes); true skips it and reads
  // on, false fails the page. Without one, a refused item fails the page.
  using RefusedItemHandler = std::function<bool(RefusalReason reason, std::string_view kept_text)>;
  explicit ListPageSplitter(ItemHandler on_item, RefusedItemHandler on_refused = nullptr)
      : on_item_(std::move(on_item)), on_refused_(std::move(on_refused)) {}

  // The next bytes of the body. False once the body cannot be a list page
  // (problem() says why): stop reading it.
  bool feed(std::string_view bytes);
  // After the body's last byte: the page's metadata, or nullopt when the
  // body was not one well-formed list page (problem() says why).
  std::optional<ListPageEnd> finish();
  const std::string& problem() const { return problem_; }

 private:
  enum class Items { kOutside, kFirst, kAfterItem, kNeedItem, kInItem, kDone };
  bool feed_byte(char c);
  bool envelope_byte(char c);
  bool between_items(char c);
  // Where the item being read ends in `bytes` (past its closing brace), or
  // bytes.size() when it goes on.
  std::size_t item_end(std::string_view bytes, std::size_t at);
  bool item_done();
  bool fail(std::string why);

  ItemHandler on_item_;
  RefusedItemHandler on_refused_;
  Items items_ = Items::kOutside;
  std::string envelope_;
  std::string item_;
  std::string last_string_;     // the last string read at the envelope's top level
  std::string member_key_;      // the key of the envelope member being read
  NestingTracker nesting_;      // of the envelope, or within the item
  std::size_t item_bytes_ = 0;  // of the item being read, as far as it was read
  std::string problem_;
};

}  // namespace hb::kube
