// The informer's cache: the latest copy of each object, kept by a reflector.
// Objects are held as compact JSON text (managedFields stripped), which costs
// about the object's own size; readers get a parsed copy.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kube/watch_decoder.h"

namespace hb::kube {

struct StoreHandlers {
  std::function<void(const nlohmann::json& object)> on_add;
  std::function<void(const nlohmann::json& old_object, const nlohmann::json& object)> on_update;
  std::function<void(const nlohmann::json& object)> on_delete;
};

class Store {
 public:
  // "namespace/name", or "name" for cluster-scoped objects.
  static std::string key_of(const nlohmann::json& object);

  void set_handlers(StoreHandlers handlers);

  // Applies one ADDED, MODIFIED or DELETED event and runs the handler.
  void apply(WatchEvent event);

  // Buffer and swap: builds the new contents from a complete list off to the
  // side, swaps them in at once, then reports what changed against the old
  // contents: deletes for objects that vanished (including deletions missed
  // while disconnected), adds for new ones, updates where resourceVersion moved.
  void replace(std::vector<nlohmann::json> items);

  std::optional<nlohmann::json> get(const std::string& key) const;
  std::vector<nlohmann::json> list() const;
  std::vector<std::string> keys() const;
  size_t size() const;
  // Bytes held by cached texts and keys (for the memory benchmark).
  size_t payload_bytes() const;

 private:
  struct Entry {
    std::string resource_version;
    std::string text;
  };
  static Entry encode(nlohmann::json& object);

  mutable std::mutex mutex_;
  std::map<std::string, Entry> items_;
  StoreHandlers handlers_;
};

}  // namespace hb::kube
