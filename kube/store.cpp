#include "kube/store.h"

#include <utility>

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

void Store::set_projection(Projection projection) {
  std::lock_guard lock(mutex_);
  projection_ = std::move(projection);
}

Store::Entry Store::encode(nlohmann::json& object) const {
  // Server-side-apply bookkeeping: large, and nothing here reads it.
  if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    meta->erase("managedFields");
  }
  if (projection_) projection_(object);
  Entry entry;
  entry.resource_version = object.value("/metadata/resourceVersion"_json_pointer, "");
  entry.text = object.dump();
  entry.text.shrink_to_fit();
  return entry;
}

void Store::set_handlers(StoreHandlers handlers) {
  std::lock_guard lock(mutex_);
  handlers_ = std::make_shared<const StoreHandlers>(std::move(handlers));
}

void Store::commit(const std::string& key, bool deleted, Entry entry,
                   const nlohmann::json* parsed) {
  std::optional<Entry> old;
  std::shared_ptr<const StoreHandlers> handlers;
  std::string text_for_handlers;
  {
    std::lock_guard lock(mutex_);
    handlers = handlers_;
    auto it = items_.find(key);
    if (it != items_.end()) {
      if (deleted) {
        old = std::move(it->second);
        items_.erase(it);
      } else {
        old = std::exchange(it->second, std::move(entry));
        if (handlers->on_add || handlers->on_update) text_for_handlers = it->second.text;
      }
    } else if (!deleted) {
      if (handlers->on_add || handlers->on_update) text_for_handlers = entry.text;
      items_.emplace(key, std::move(entry));
    }
  }
  // Handlers run outside the lock so they may read the store.
  if (handlers->on_change && (old || !deleted)) handlers->on_change(key);
  if (deleted) {
    if (old && handlers->on_delete) handlers->on_delete(parsed ? *parsed : parse(old->text));
    return;
  }
  if (old && handlers->on_update) {
    handlers->on_update(parse(old->text), parsed ? *parsed : parse(text_for_handlers));
  } else if (!old && handlers->on_add) {
    handlers->on_add(parsed ? *parsed : parse(text_for_handlers));
  }
}

void Store::apply(WatchEvent event) {
  nlohmann::json& object = event.object;
  std::string key = key_of(object);
  bool deleted = event.type == WatchEventType::kDeleted;
  Entry entry = encode(object);  // projects `object`: handlers see what the cache keeps
  commit(key, deleted, std::move(entry), &object);
}

void Store::apply(const ScannedWatchEvent& event) {
  if (projection_) {  // a projection needs the tree the fast path avoids
    apply(WatchEvent{event.type, nlohmann::json::parse(event.compact_object_text())});
    return;
  }
  std::string key(event.name);
  if (!event.namespace_.empty()) key = std::string(event.namespace_) + "/" + key;
  Entry entry{std::string(event.resource_version), event.compact_object_text()};
  commit(key, event.type == WatchEventType::kDeleted, std::move(entry), nullptr);
}

void Store::replace(std::vector<nlohmann::json> items) {
  std::map<std::string, Entry> fresh;
  for (auto& object : items) fresh.insert_or_assign(key_of(object), encode(object));

  std::map<std::string, Entry> old;
  std::shared_ptr<const StoreHandlers> handlers;
  {
    std::lock_guard lock(mutex_);
    handlers = handlers_;
    old.swap(items_);
    items_ = fresh;  // the swap: readers never see a half-built cache
  }
  for (const auto& [key, entry] : old) {
    if (fresh.count(key)) continue;
    if (handlers->on_change) handlers->on_change(key);
    if (handlers->on_delete) handlers->on_delete(parse(entry.text));
  }
  for (const auto& [key, entry] : fresh) {
    auto it = old.find(key);
    bool added = it == old.end();
    bool changed = !added && it->second.resource_version != entry.resource_version;
    if ((added || changed) && handlers->on_change) handlers->on_change(key);
    if (added && handlers->on_add) handlers->on_add(parse(entry.text));
    if (changed && handlers->on_update)
      handlers->on_update(parse(it->second.text), parse(entry.text));
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

bool Store::contains(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return items_.count(key) != 0;
}

size_t Store::size() const {
  std::lock_guard lock(mutex_);
  return items_.size();
}

}  // namespace hb::kube
