// The entries of one informer store, ordered by key, packed in pages: runs
// of neighbouring entries (by key) in one allocation, each key written as
// the length it shares with the previous key and the rest of it.
//
// Why pages: at fleet size a store holds hundreds of thousands of entries
// (mostly runs' history: 160,000 at 10,000 agents), and an entry on its own
// cost about 80 bytes besides its text (tree links 24, lengths 16, its whole
// key 27, malloc's 8), more than its compressed text. Neighbours share most
// of their key (an agent's runs are named after it, in its namespace), so in
// a page a key costs its last few bytes and a record's lengths a few
// varint bytes. A read finds the page by binary search over the pages'
// first keys and scans at most kStoredPageEntriesMax records; a write
// rewrites one page (a few KB at most).
//
// Not thread-safe: the store holds its lock. A view read out of it is valid
// until the next put or erase.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/stored_object.h"

namespace hb::kube {

// A page holds at most this many entries, and is split when a write would
// take it past this many bytes (an entry larger than that has a page alone).
inline constexpr std::size_t kStoredPageEntriesMax = 16;
inline constexpr std::size_t kStoredPageBytesMax = 4096;

class StoredObjects {
 public:
  StoredObjects();
  StoredObjects(StoredObjects&& other) noexcept;
  StoredObjects& operator=(StoredObjects&& other) noexcept;
  ~StoredObjects();

  // The entry for `key` (its key view is `key` itself), or nullopt.
  std::optional<StoredEntryView> find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key).has_value(); }
  // Keeps a copy of `entry`, replacing the one with the same key. `entry`
  // must not be a view into this set.
  void put(const StoredEntryView& entry);
  // True when there was one.
  bool erase(std::string_view key);
  std::size_t size() const { return size_; }
  void swap(StoredObjects& other) noexcept;
  // fn(entry) for each entry in key order; the views (its key too) are
  // valid during the call only, and fn must not change this set.
  void for_each(const std::function<void(const StoredEntryView&)>& fn) const;
  // fn(entry) for each entry whose key starts with `prefix`, in key order
  // (found by the pages' first keys, not a walk of the whole set); the same
  // rules as for_each.
  void for_each_with_prefix(std::string_view prefix,
                            const std::function<void(const StoredEntryView&)>& fn) const;
  // Walks the entries in key order, one at a time: two sets side by side
  // (a relist against what was kept) compare in one pass. The set must not
  // change while a cursor walks it; entry() is valid until the next next().
  class Cursor {
   public:
    explicit Cursor(const StoredObjects& set, std::size_t first_page = 0)
        : set_(&set), page_(first_page) {}
    bool next();  // false past the last entry
    const StoredEntryView& entry() const { return entry_; }

   private:
    const StoredObjects* set_;
    std::size_t page_;  // the next page to read
    const char* at_ = nullptr;
    const char* end_ = nullptr;
    std::string key_;
    StoredEntryView entry_;
  };
  // Pages in use (tests, benchmarks).
  std::size_t pages() const { return pages_.size(); }

 private:
  struct Page;
  struct Record;
  // The page whose key range holds `key` (the last whose first key is not
  // after it; the first page for a key before every page).
  std::size_t page_for(std::string_view key) const;
  static std::vector<Record> decode(const Page& page);
  // Replaces pages [at, at + count) with `records`, split into pages; an
  // entry appended after every other fills a page before starting the next.
  void write(std::size_t at, std::size_t count, const std::vector<Record>& records, bool appended);

  std::vector<std::unique_ptr<Page>> pages_;
  std::size_t size_ = 0;
};

}  // namespace hb::kube
