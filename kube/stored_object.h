// One object as an informer store keeps it: its key ("namespace/name"),
// resourceVersion and compressed text in a single allocation, which is also
// its node in the store's tree (an intrusive red-black tree: no separate
// node per object). At fleet size a store holds hundreds of thousands of
// these (mostly runs' history), and a map node with three strings per
// object cost more than the compressed text.
#pragma once

#include <boost/intrusive/set.hpp>
#include <cstdint>
#include <memory>
#include <string_view>

#include "kube/compressed_text.h"

namespace hb::kube {

class StoredObject;

// Frees what StoredObject::make allocated.
struct StoredObjectDelete {
  void operator()(StoredObject* object) const;
};
using StoredObjectPtr = std::unique_ptr<StoredObject, StoredObjectDelete>;

using StoredObjectHook =
    boost::intrusive::set_base_hook<boost::intrusive::optimize_size<true>,
                                    boost::intrusive::link_mode<boost::intrusive::normal_link>>;

class StoredObject : public StoredObjectHook {
 public:
  // `identity_elided`: the text lacks the object's name, namespace and
  // resourceVersion, which the key and resource_version give back
  // (object_identity.h).
  static StoredObjectPtr make(std::string_view key, std::string_view resource_version,
                              const CompressedText& text, bool identity_elided = false);
  // The same entry in an allocation of its own (not in any tree).
  static StoredObjectPtr copy_of(const StoredObject& other);
  StoredObject(const StoredObject&) = delete;
  StoredObject& operator=(const StoredObject&) = delete;

  std::string_view key() const;
  std::string_view resource_version() const;
  CompressedTextView text() const;
  bool identity_elided() const { return header_.identity_elided; }

 private:
  struct Header {
    uint32_t stored_bytes;
    uint32_t text_bytes;
    uint16_t key_bytes;
    uint16_t resource_version_bytes;
    bool compressed;
    bool identity_elided;
  };
  explicit StoredObject(const Header& header) : header_(header) {}
  const char* payload() const { return reinterpret_cast<const char*>(this + 1); }
  Header header_;
  // Followed in the same allocation by the key, resourceVersion and stored bytes.
};

// The objects of one store, ordered by key and found by a plain key. Owns
// them: erasing or replacing one frees it.
class StoredObjects {
 public:
  StoredObjects() = default;
  StoredObjects(StoredObjects&& other) noexcept;
  StoredObjects& operator=(StoredObjects&& other) noexcept;
  ~StoredObjects();

  // Nullptr when there is none.
  const StoredObject* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  // Keeps `object`, freeing the one it replaces (the same key).
  void put(StoredObjectPtr object);
  // True when there was one.
  bool erase(std::string_view key);
  std::size_t size() const { return set_.size(); }
  void swap(StoredObjects& other) noexcept { set_.swap(other.set_); }

  struct ByKey {
    bool operator()(const StoredObject& a, const StoredObject& b) const {
      return a.key() < b.key();
    }
    bool operator()(std::string_view a, const StoredObject& b) const { return a < b.key(); }
    bool operator()(const StoredObject& a, std::string_view b) const { return a.key() < b; }
  };
  using Set = boost::intrusive::set<StoredObject, boost::intrusive::compare<ByKey>,
                                    boost::intrusive::constant_time_size<true>>;
  Set::const_iterator begin() const { return set_.begin(); }
  Set::const_iterator end() const { return set_.end(); }

 private:
  void clear();
  Set set_;
};

}  // namespace hb::kube
