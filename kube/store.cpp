#include "kube/store.h"

namespace hb::kube {

namespace {
nlohmann::json parse(const std::string& text) {
  return nlohmann::json::parse(text);
}
}  // namespace

std::string Store::key_of(const nlohmann::json& object) {
  const auto& meta = object.at("metadata");
  std::string name = meta.value("name", "");
  std::string ns = meta.value("namespace", "");
  return ns.empty() ? name : ns + "/" + name;
}

Store::Entry Store::encode(nlohmann::json& object) {
  // Server-side-apply bookkeeping: large, and nothing here reads it.
  if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    meta->erase("managedFields");
  }
  Entry entry;
  entry.resource_version = object.value("/metadata/resourceVersion"_json_pointer, "");
  entry.text = object.dump();
  entry.text.shrink_to_fit();
  return entry;
}

void Store::set_handlers(StoreHandlers handlers) {
  std::lock_guard lock(mutex_);
  handlers_ = std::move(handlers);
}

void Store::apply(WatchEvent event) {
  nlohmann::json& object = event.object;
  std::string key = key_of(object);
  std::optional<std::string> old_text;
  StoreHandlers handlers;
  {
    std::lock_guard lock(mutex_);
    handlers = handlers_;
    auto it = items_.find(key);
    if (it != items_.end()) old_text = it->second.text;
    if (event.type == WatchEventType::kDeleted) {
      if (it != items_.end()) items_.erase(it);
    } else {
      Entry entry = encode(object);
      items_.insert_or_assign(key, std::move(entry));
    }
  }
  // Handlers run outside the lock so they may read the store.
  if (event.type == WatchEventType::kDeleted) {
    if (handlers.on_delete) handlers.on_delete(object);
  } else if (old_text) {
    if (handlers.on_update) handlers.on_update(parse(*old_text), object);
  } else if (handlers.on_add) {
    handlers.on_add(object);
  }
}

void Store::replace(std::vector<nlohmann::json> items) {
  std::map<std::string, Entry> fresh;
  for (auto& object : items) fresh.insert_or_assign(key_of(object), encode(object));

  std::map<std::string, Entry> old;
  StoreHandlers handlers;
  {
    std::lock_guard lock(mutex_);
    handlers = handlers_;
    old.swap(items_);
    items_ = fresh;  // the swap: readers never see a half-built cache
  }
  for (const auto& [key, entry] : old) {
    if (!fresh.count(key) && handlers.on_delete) handlers.on_delete(parse(entry.text));
  }
  for (const auto& [key, entry] : fresh) {
    auto it = old.find(key);
    if (it == old.end()) {
      if (handlers.on_add) handlers.on_add(parse(entry.text));
    } else if (it->second.resource_version != entry.resource_version && handlers.on_update) {
      handlers.on_update(parse(it->second.text), parse(entry.text));
    }
  }
}

std::optional<nlohmann::json> Store::get(const std::string& key) const {
  std::string text;
  {
    std::lock_guard lock(mutex_);
    auto it = items_.find(key);
    if (it == items_.end()) return std::nullopt;
    text = it->second.text;
  }
  return parse(text);
}

std::vector<nlohmann::json> Store::list() const {
  std::vector<std::string> texts;
  {
    std::lock_guard lock(mutex_);
    texts.reserve(items_.size());
    for (const auto& [key, entry] : items_) texts.push_back(entry.text);
  }
  std::vector<nlohmann::json> out;
  out.reserve(texts.size());
  for (const auto& text : texts) out.push_back(parse(text));
  return out;
}

std::vector<std::string> Store::keys() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [key, entry] : items_) out.push_back(key);
  return out;
}

size_t Store::size() const {
  std::lock_guard lock(mutex_);
  return items_.size();
}

size_t Store::payload_bytes() const {
  std::lock_guard lock(mutex_);
  size_t total = 0;
  for (const auto& [key, entry] : items_) {
    total += key.capacity() + entry.text.capacity() + entry.resource_version.capacity();
  }
  return total;
}

}  // namespace hb::kube
