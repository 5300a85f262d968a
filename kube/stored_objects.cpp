#include "kube/stored_objects.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <utility>

#include "kube/front_coding.h"

namespace hb::kube {

namespace {

constexpr uint8_t kFlagCompressed = 1;
constexpr uint8_t kFlagIdentityElided = 2;

// Reads the record at `at` into `key` (which holds the record before it:
// keys are front-coded) and `entry`.
void read_record(const char*& at, const char* end, std::string& key, StoredEntryView& entry) {
  get_front_coded(at, end, key);
  entry.resource_version = take_bytes(at, end, get_varint(at, end));
  const auto text_bytes = static_cast<uint32_t>(get_varint(at, end));
  const uint64_t stored_bytes = get_varint(at, end);
  const auto flags = static_cast<uint8_t>(*take_bytes(at, end, 1).data());
  entry.text = CompressedTextView(take_bytes(at, end, stored_bytes), text_bytes,
                                  (flags & kFlagCompressed) != 0);
  entry.identity_elided = (flags & kFlagIdentityElided) != 0;
  entry.key = key;
}

// Reads one page's records in order; each entry's key lives in the reader.
class PageReader {
 public:
  explicit PageReader(std::string_view bytes)
      : at_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  bool next() {
    if (at_ == end_) return false;
    read_record(at_, end_, key_, entry_);
    return true;
  }
  const std::string& key() const { return key_; }
  const StoredEntryView& entry() const { return entry_; }

 private:
  const char* at_;
  const char* end_;
  std::string key_;
  StoredEntryView entry_;
};

// `e` under `key` (its own key view is not read).
void append_record(std::string& out, std::string_view previous_key, std::string_view key,
                   const StoredEntryView& e) {
  put_front_coded(out, previous_key, key);
  put_varint(out, e.resource_version.size());
  out.append(e.resource_version);
  put_varint(out, e.text.text_bytes);
  put_varint(out, e.text.bytes.size());
  const uint8_t flags =
      (e.text.compressed ? kFlagCompressed : 0) | (e.identity_elided ? kFlagIdentityElided : 0);
  out.push_back(static_cast<char>(flags));
  out.append(e.text.bytes);
}

}  // namespace

struct StoredObjects::Page {
  std::string first_key;
  std::string bytes;  // the records, allocated to size
  std::size_t count = 0;
};

// A decoded record: its own key; the rest views the page (or the entry put).
// entry.key is not read (records move; `key` is the one copy).
struct StoredObjects::Record {
  std::string key;
  StoredEntryView entry;
};

namespace {

template <typename Records>
auto find_record(Records& records, std::string_view key) {
  return std::lower_bound(records.begin(), records.end(), key,
                          [](const auto& r, std::string_view k) { return r.key < k; });
}

}  // namespace

StoredObjects::StoredObjects(StoredObjects&& other) noexcept
    : pages_(std::move(other.pages_)), size_(std::exchange(other.size_, 0)) {
  other.pages_.clear();
}

StoredObjects& StoredObjects::operator=(StoredObjects&& other) noexcept {
  if (this != &other) {
    pages_ = std::move(other.pages_);
    other.pages_.clear();
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

StoredObjects::StoredObjects() = default;
StoredObjects::~StoredObjects() = default;

void StoredObjects::swap(StoredObjects& other) noexcept {
  pages_.swap(other.pages_);
  std::swap(size_, other.size_);
}

std::size_t StoredObjects::page_for(std::string_view key) const {
  auto after = std::upper_bound(
      pages_.begin(), pages_.end(), key,
      [](std::string_view k, const std::unique_ptr<Page>& page) { return k < page->first_key; });
  return after == pages_.begin() ? 0 : static_cast<std::size_t>(after - pages_.begin()) - 1;
}

std::optional<StoredEntryView> StoredObjects::find(std::string_view key) const {
  if (pages_.empty()) return std::nullopt;
  PageReader reader(pages_[page_for(key)]->bytes);
  while (reader.next()) {
    const int order = std::string_view(reader.key()).compare(key);
    if (order > 0) break;
    if (order == 0) {
      StoredEntryView found = reader.entry();
      found.key = key;  // the reader's copy ends with it
      return found;
    }
  }
  return std::nullopt;
}

std::vector<StoredObjects::Record> StoredObjects::decode(const Page& page) {
  std::vector<Record> records;
  records.reserve(page.count + 1);
  PageReader reader(page.bytes);
  while (reader.next()) records.push_back({reader.key(), reader.entry()});
  return records;
}

void StoredObjects::put(const StoredEntryView& entry) {
  if (pages_.empty()) {
    write(0, 0, {{std::string(entry.key), entry}}, true);
    size_ = 1;
    return;
  }
  const std::size_t at = page_for(entry.key);
  std::vector<Record> records = decode(*pages_[at]);
  auto place = find_record(records, entry.key);
  const bool appended = place == records.end() && at + 1 == pages_.size();
  if (place != records.end() && place->key == entry.key) {
    place->entry = entry;
  } else {
    records.insert(place, {std::string(entry.key), entry});
    ++size_;
  }
  write(at, 1, records, appended);
}

bool StoredObjects::erase(std::string_view key) {
  if (pages_.empty()) return false;
  const std::size_t at = page_for(key);
  std::vector<Record> records = decode(*pages_[at]);
  auto found = find_record(records, key);
  if (found == records.end() || found->key != key) return false;
  records.erase(found);
  --size_;
  // A page left under a quarter full joins a neighbour when both fit in one,
  // so erasing never leaves a trail of near-empty pages.
  std::size_t first = at, replaced = 1;
  auto fits = [&](std::size_t page) {
    return records.size() + pages_[page]->count <= kStoredPageEntriesMax;
  };
  if (records.size() < kStoredPageEntriesMax / 4) {
    if (at + 1 < pages_.size() && fits(at + 1)) {
      std::vector<Record> next = decode(*pages_[at + 1]);
      records.insert(records.end(), std::make_move_iterator(next.begin()),
                     std::make_move_iterator(next.end()));
      replaced = 2;
    } else if (at > 0 && fits(at - 1)) {
      std::vector<Record> previous = decode(*pages_[at - 1]);
      records.insert(records.begin(), std::make_move_iterator(previous.begin()),
                     std::make_move_iterator(previous.end()));
      first = at - 1;
      replaced = 2;
    }
  }
  write(first, replaced, records, false);
  return true;
}

void StoredObjects::write(std::size_t at, std::size_t count, const std::vector<Record>& records,
                          bool appended) {
  // Encoded first, swapped in after: the records view the old pages' bytes.
  std::vector<std::unique_ptr<Page>> made;
  thread_local std::string scratch;
  auto flush = [&](std::size_t from, std::size_t to) {
    scratch.clear();
    std::string_view previous;
    for (std::size_t i = from; i < to; ++i) {
      append_record(scratch, previous, records[i].key, records[i].entry);
      previous = records[i].key;
    }
    auto page = std::make_unique<Page>();
    page->first_key = records[from].key;
    page->bytes.assign(scratch);  // allocated to size: pages are most of the memory
    page->count = to - from;
    made.push_back(std::move(page));
  };
  std::size_t total_bytes = 0;
  for (const Record& r : records) total_bytes += r.key.size() + r.entry.text.bytes.size();
  const std::size_t n = records.size();
  if (n <= kStoredPageEntriesMax && total_bytes <= kStoredPageBytesMax) {
    if (n > 0) flush(0, n);
  } else if (appended && n > 1) {
    flush(0, n - 1);  // key order (a relist): the full page stays full
    flush(n - 1, n);
  } else {
    // Evenly, by count, into as few pages as the limits allow.
    const std::size_t pages =
        std::max((n + kStoredPageEntriesMax - 1) / kStoredPageEntriesMax,
                 std::min(n, (total_bytes + kStoredPageBytesMax - 1) / kStoredPageBytesMax));
    for (std::size_t i = 0; i < pages; ++i) flush(n * i / pages, n * (i + 1) / pages);
  }
  const auto first = pages_.begin() + static_cast<std::ptrdiff_t>(at);
  pages_.erase(first, first + static_cast<std::ptrdiff_t>(count));
  pages_.insert(pages_.begin() + static_cast<std::ptrdiff_t>(at),
                std::make_move_iterator(made.begin()), std::make_move_iterator(made.end()));
}

bool StoredObjects::Cursor::next() {
  while (at_ == end_) {
    if (page_ >= set_->pages_.size()) return false;
    const std::string& bytes = set_->pages_[page_++]->bytes;
    at_ = bytes.data();
    end_ = bytes.data() + bytes.size();
    key_.clear();  // a page's first key is written whole
  }
  read_record(at_, end_, key_, entry_);
  return true;
}

void StoredObjects::for_each(const std::function<void(const StoredEntryView&)>& fn) const {
  Cursor cursor(*this);
  while (cursor.next()) fn(cursor.entry());
}

void StoredObjects::for_each_with_prefix(
    std::string_view prefix, const std::function<void(const StoredEntryView&)>& fn) const {
  if (pages_.empty()) return;
  // Keys sort as bytes: those with the prefix are together, from the page
  // that would hold the prefix itself.
  Cursor cursor(*this, page_for(prefix));
  while (cursor.next()) {
    const std::string_view key = cursor.entry().key;
    if (key.substr(0, prefix.size()) == prefix) {
      fn(cursor.entry());
    } else if (key > prefix) {
      return;
    }
  }
}

}  // namespace hb::kube
