// A map of at most `entries_max` keys that forgets the least recently used
// one to make room: the edge's caches and buckets keyed by what a client
// sends (a token's digest, an address, a namespace) stay bounded however
// many distinct keys arrive. Not thread-safe; its owners lock.
#pragma once

#include <cstddef>
#include <list>
#include <map>
#include <utility>

#include "api/hb_assert.h"

namespace hb::operator_ {

template <typename Key, typename Value>
class LruMap {
 public:
  explicit LruMap(std::size_t entries_max) : entries_max_(entries_max) {
    HB_ASSERT(entries_max_ >= 1);
  }

  // The key's value, most recently used now; a new key gets `fresh`, the
  // least recently used key giving way when the map is full.
  Value& touch(const Key& key, Value fresh = Value{}) {
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      order_.splice(order_.begin(), order_, it->second.order);
      return it->second.value;
    }
    if (entries_.size() >= entries_max_) pop_least_recent();
    order_.push_front(key);
    return entries_.emplace(key, Slot{std::move(fresh), order_.begin()}).first->second.value;
  }
  // Without changing the order; nullptr when absent.
  Value* find(const Key& key) {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second.value;
  }
  // The least recently used entry's value (the map is not empty).
  const Value& least_recent() const {
    HB_ASSERT(!order_.empty());
    return entries_.at(order_.back()).value;
  }
  void pop_least_recent() {
    HB_ASSERT(!order_.empty());
    entries_.erase(order_.back());
    order_.pop_back();
  }
  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }

 private:
  struct Slot {
    Value value;
    typename std::list<Key>::iterator order;  // into order_
  };
  const std::size_t entries_max_;
  std::map<Key, Slot> entries_;
  std::list<Key> order_;  // front: most recently used
};

}  // namespace hb::operator_
