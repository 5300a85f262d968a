#include "kube/stored_object.h"

#include <cassert>
#include <cstring>
#include <limits>
#include <new>

namespace hb::kube {

void StoredObjectDelete::operator()(StoredObject* object) const {
  object->~StoredObject();
  ::operator delete(object);
}

StoredObjectPtr StoredObject::make(std::string_view key, std::string_view resource_version,
                                   const CompressedText& text, bool identity_elided) {
  // Kubernetes bounds names (253), namespaces (63) and resourceVersions are
  // etcd revisions: far inside 16 bits.
  assert(key.size() <= std::numeric_limits<uint16_t>::max());
  assert(resource_version.size() <= std::numeric_limits<uint16_t>::max());
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

StoredObjectPtr StoredObject::copy_of(const StoredObject& other) {
  const std::size_t payload_bytes =
      other.header_.key_bytes + other.header_.resource_version_bytes + other.header_.stored_bytes;
  void* block = ::operator new(sizeof(StoredObject) + payload_bytes);
  StoredObjectPtr object(new (block) StoredObject(other.header_));
  std::memcpy(reinterpret_cast<char*>(object.get() + 1), other.payload(), payload_bytes);
  return object;
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

StoredObjects::StoredObjects(StoredObjects&& other) noexcept {
  set_.swap(other.set_);
}

StoredObjects& StoredObjects::operator=(StoredObjects&& other) noexcept {
  if (this != &other) {
    clear();
    set_.swap(other.set_);
  }
  return *this;
}

StoredObjects::~StoredObjects() {
  clear();
}

void StoredObjects::clear() {
  set_.clear_and_dispose(StoredObjectDelete{});
}

const StoredObject* StoredObjects::find(std::string_view key) const {
  auto it = set_.find(key, ByKey{});
  return it == set_.end() ? nullptr : &*it;
}

void StoredObjects::put(StoredObjectPtr object) {
  auto it = set_.find(object->key(), ByKey{});
  if (it == set_.end()) {
    set_.insert(*object.release());
    return;
  }
  StoredObject& old = *it;
  set_.replace_node(it, *object.release());  // the same key: the same place in the tree
  StoredObjectDelete{}(&old);
}

bool StoredObjects::erase(std::string_view key) {
  auto it = set_.find(key, ByKey{});
  if (it == set_.end()) return false;
  set_.erase_and_dispose(it, StoredObjectDelete{});
  return true;
}

}  // namespace hb::kube
