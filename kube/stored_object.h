// One object as an informer store keeps it: its key ("namespace/name"),
// resourceVersion and compressed text in a single allocation. At fleet size
// a store holds hundreds of thousands of these (mostly runs' history), and
// three separate strings per object cost more than the compressed text.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "kube/compressed_text.h"

namespace hb::kube {

class StoredObject {
 public:
  StoredObject(std::string_view key, std::string_view resource_version, const CompressedText& text);

  std::string_view key() const;
  std::string_view resource_version() const;
  CompressedTextView text() const;

 private:
  struct Header {
    uint32_t stored_bytes;
    uint32_t text_bytes;
    uint16_t key_bytes;
    uint16_t resource_version_bytes;
    bool compressed;
  };
  Header header() const;
  const char* after_header() const;
  std::unique_ptr<char[]> data_;  // Header, key, resourceVersion, stored bytes
};

// Orders by key; compares with a plain key too (transparent), so a store
// finds an object by key without building one.
struct StoredObjectByKey {
  using is_transparent = void;
  static std::string_view key_of(const StoredObject& o) { return o.key(); }
  static std::string_view key_of(std::string_view key) { return key; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return key_of(a) < key_of(b);
  }
};

}  // namespace hb::kube
