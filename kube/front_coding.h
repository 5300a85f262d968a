// Front coding: a key written as the length it shares with the key before it
// and the rest of it, lengths as varints. Sorted keys with long common
// prefixes (an agent's runs are "namespace/agent-...") shrink to their last
// few bytes. The cache's pages (stored_objects.cpp) and key lists use it.
//
// What is read back is this process's own memory, so a record that does not
// decode is a bug: it aborts rather than guessing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hb::kube {

void put_varint(std::string& out, uint64_t value);
uint64_t get_varint(const char*& at, const char* end);
// The next `bytes` bytes at `at`, which moves past them.
std::string_view take_bytes(const char*& at, const char* end, uint64_t bytes);
// Appends `key` front-coded against `previous` (the key written before it).
void put_front_coded(std::string& out, std::string_view previous, std::string_view key);
// Reads a key put_front_coded wrote; `key` holds the one before it on entry.
void get_front_coded(const char*& at, const char* end, std::string& key);

// An append-only list of keys, front-coded in one string: what a relist
// reports (added, changed, deleted) is in key order, and at 160,000 runs a
// std::vector<std::string> of those keys is about 13 MiB at the operator's
// peak; front-coded it is about 1 MiB.
class FrontCodedKeys {
 public:
  void push_back(std::string_view key);
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::size_t bytes() const { return bytes_.size(); }

  // Walks the keys in the order they were pushed; key() is valid until the
  // next next(). The list must not grow while a cursor walks it.
  class Cursor {
   public:
    explicit Cursor(const FrontCodedKeys& keys)
        : at_(keys.bytes_.data()), end_(keys.bytes_.data() + keys.bytes_.size()) {}
    bool next();  // false past the last key
    const std::string& key() const { return key_; }

   private:
    const char* at_;
    const char* end_;
    std::string key_;
  };

 private:
  std::string bytes_;
  std::string last_;
  std::size_t size_ = 0;
};

}  // namespace hb::kube
