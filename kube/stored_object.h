// One object as an informer store keeps it: its key ("namespace/name"),
// resourceVersion and compressed text. A StoredObject holds one in a single
// allocation of its own (a new entry on its way into a store, or a copy
// read out of one); the store itself packs its entries in pages
// (stored_objects.h) and hands out views of them.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "kube/compressed_text.h"

namespace hb::kube {

// One entry as read: the views are valid while what they were read from is
// unchanged.
struct StoredEntryView {
  std::string_view key;
  std::string_view resource_version;
  CompressedTextView text;
  // The text lacks the object's name, namespace and resourceVersion, which
  // the key and resource_version give back (object_identity.h).
  bool identity_elided = false;
};

class StoredObject;

// Frees what StoredObject::make allocated.
struct StoredObjectDelete {
  void operator()(StoredObject* object) const;
};
using StoredObjectPtr = std::unique_ptr<StoredObject, StoredObjectDelete>;

class StoredObject {
 public:
  static StoredObjectPtr make(std::string_view key, std::string_view resource_version,
                              CompressedTextView text, bool identity_elided = false);
  // A copy of an entry read elsewhere, in an allocation of its own.
  static StoredObjectPtr make(const StoredEntryView& entry);
  StoredObject(const StoredObject&) = delete;
  StoredObject& operator=(const StoredObject&) = delete;

  std::string_view key() const;
  std::string_view resource_version() const;
  CompressedTextView text() const;
  bool identity_elided() const { return header_.identity_elided; }
  StoredEntryView view() const { return {key(), resource_version(), text(), identity_elided()}; }

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

}  // namespace hb::kube
