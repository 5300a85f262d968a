#include "kube/stored_object.h"

#include <cstring>
#include <limits>
#include <new>

#include "api/hb_assert.h"

namespace hb::kube {

void StoredObjectDelete::operator()(StoredObject* object) const {
  object->~StoredObject();
  ::operator delete(object);
}

StoredObjectPtr StoredObject::make(std::string_view key, std::string_view resource_version,
                                   CompressedTextView text, bool identity_elided) {
  // Kubernetes bounds names (253), namespaces (63) and resourceVersions are
  // etcd revisions: far inside 16 bits.
  HB_ASSERT(key.size() <= std::numeric_limits<uint16_t>::max());
  HB_ASSERT(resource_version.size() <= std::numeric_limits<uint16_t>::max());
  const Header header{static_cast<uint32_t>(text.bytes.size()),
                      text.text_bytes,
                      static_cast<uint16_t>(key.size()),
                      static_cast<uint16_t>(resource_version.size()),
                      text.compressed,
                      identity_elided};
  void* block = ::operator new(sizeof(StoredObject) + key.size() + resource_version.size() +
                               text.bytes.size());
  StoredObjectPtr object(new (block) StoredObject(header));
  char* at = reinterpret_cast<char*>(object.get() + 1);
  std::memcpy(at, key.data(), key.size());
  at += key.size();
  std::memcpy(at, resource_version.data(), resource_version.size());
  at += resource_version.size();
  std::memcpy(at, text.bytes.data(), text.bytes.size());
  return object;
}

StoredObjectPtr StoredObject::make(const StoredEntryView& entry) {
  return make(entry.key, entry.resource_version, entry.text, entry.identity_elided);
}

std::string_view StoredObject::key() const {
  return {payload(), header_.key_bytes};
}

std::string_view StoredObject::resource_version() const {
  return {payload() + header_.key_bytes, header_.resource_version_bytes};
}

CompressedTextView StoredObject::text() const {
  return {{payload() + header_.key_bytes + header_.resource_version_bytes, header_.stored_bytes},
          header_.text_bytes,
          header_.compressed};
}

}  // namespace hb::kube
