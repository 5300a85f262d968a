#include "kube/stored_object.h"

#include <cassert>
#include <cstring>
#include <limits>

namespace hb::kube {

StoredObject::StoredObject(std::string_view key, std::string_view resource_version,
                           const CompressedText& text) {
  // Kubernetes bounds names (253), namespaces (63) and resourceVersions are
  // etcd revisions: far inside 16 bits.
  assert(key.size() <= std::numeric_limits<uint16_t>::max());
  assert(resource_version.size() <= std::numeric_limits<uint16_t>::max());
  const Header header{static_cast<uint32_t>(text.bytes.size()), text.text_bytes,
                      static_cast<uint16_t>(key.size()),
                      static_cast<uint16_t>(resource_version.size()), text.compressed};
  data_ = std::make_unique_for_overwrite<char[]>(sizeof(Header) + key.size() +
                                                 resource_version.size() + text.bytes.size());
  char* at = data_.get();
  std::memcpy(at, &header, sizeof header);
  at += sizeof header;
  std::memcpy(at, key.data(), key.size());
  at += key.size();
  std::memcpy(at, resource_version.data(), resource_version.size());
  at += resource_version.size();
  std::memcpy(at, text.bytes.data(), text.bytes.size());
}

StoredObject::Header StoredObject::header() const {
  Header h;  // copied out: the bytes hold no Header object to point at
  std::memcpy(&h, data_.get(), sizeof h);
  return h;
}

const char* StoredObject::after_header() const {
  return data_.get() + sizeof(Header);
}

std::string_view StoredObject::key() const {
  return {after_header(), header().key_bytes};
}

std::string_view StoredObject::resource_version() const {
  return {after_header() + header().key_bytes, header().resource_version_bytes};
}

CompressedTextView StoredObject::text() const {
  const Header h = header();
  return {{after_header() + h.key_bytes + h.resource_version_bytes, h.stored_bytes},
          h.text_bytes,
          h.compressed};
}

}  // namespace hb::kube
