// A list answer's body split into its items as the bytes arrive, so a page
// is never held whole: at 1,000 agents the bodies of the pages the
// informers listed at once (each grown by doubling, with the transport's own
// copy beside it) were 17 of the operator's 21 MiB of peak heap, and the
// same at any fleet size. Only the item being received and the list's
// envelope (kind, metadata) are kept; each whole item goes to the handler.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace hb::kube {

// One item larger than this is not an object the API server stores (etcd
// takes at most 1.5 MiB per request by default): a larger one fails the list
// instead of growing the buffer without end.
inline constexpr std::size_t kListItemBytesMax = 16 * 1024 * 1024;
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
  explicit ListPageSplitter(ItemHandler on_item) : on_item_(std::move(on_item)) {}

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
  // Tracks strings and nesting of the text being read (envelope or item).
  void track_structure(char c);
  bool fail(std::string why);

  ItemHandler on_item_;
  Items items_ = Items::kOutside;
  std::string envelope_;
  std::string item_;
  std::string last_string_;  // the last string read at the envelope's top level
  std::string member_key_;   // the key of the envelope member being read
  bool in_string_ = false;
  bool escaped_ = false;
  int depth_ = 0;  // of the envelope, or within the item
  std::string problem_;
};

}  // namespace hb::kube
