#include "kube/store.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace hb::kube {

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

std::optional<Store::Entry> Store::encode(nlohmann::json& object) const {
  // Server-side-apply bookkeeping: large, and nothing here reads it.
  if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    meta->erase("managedFields");
  }
  if (projection_) projection_(object);
  if (object.is_null()) return std::nullopt;
  Entry entry;
  entry.resource_version = object.value("/metadata/resourceVersion"_json_pointer, "");
  entry.text = compress(object.dump());
  return entry;
}

CompressedText Store::compress(std::string_view text) const {
  std::call_once(dictionary_once_,
                 [&] { dictionary_ = std::make_unique<const TextDictionary>(text); });
  return dictionary_->compress(text);
}

void Store::decompress(const CompressedText& text, std::string& plain) const {
  if (!dictionary_ || !dictionary_->decompress(text, plain)) {
    std::fputs("heartbeat-operator: a cached object does not decompress (a bug)\n", stderr);
    std::abort();
  }
}

nlohmann::json Store::parse(const CompressedText& text) const {
  thread_local std::string plain;  // reused: no allocation per read
  decompress(text, plain);
  return nlohmann::json::parse(plain);
}

void Store::set_handlers(StoreHandlers handlers) {
  std::lock_guard lock(mutex_);
  handlers_ = std::make_shared<const StoreHandlers>(std::move(handlers));
}

void Store::commit(const std::string& key, bool deleted, Entry entry,
                   const nlohmann::json* parsed) {
  std::optional<Entry> old;
  std::shared_ptr<const StoreHandlers> handlers;
  CompressedText text_for_handlers;
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
  std::optional<Entry> entry = encode(object);  // projects `object`: handlers see what is kept
  if (!entry) {
    forget(key);
    return;
  }
  commit(key, deleted, std::move(*entry), &object);
}

void Store::apply(const ScannedWatchEvent& event) {
  if (projection_) {  // a projection needs the tree the fast path avoids
    apply(WatchEvent{event.type, nlohmann::json::parse(event.compact_object_text())});
    return;
  }
  std::string key(event.name);
  if (!event.namespace_.empty()) key = std::string(event.namespace_) + "/" + key;
  Entry entry{std::string(event.resource_version), compress(event.compact_object_text())};
  commit(key, event.type == WatchEventType::kDeleted, std::move(entry), nullptr);
}

void Store::Replacement::add(nlohmann::json object) {
  std::string key = key_of(object);
  if (std::optional<Entry> entry = store_->encode(object)) {
    entries_.insert_or_assign(std::move(key), std::move(*entry));
  }
}

void Store::replace(std::vector<nlohmann::json> items) {
  Replacement replacement = begin_replace();
  for (auto& object : items) replacement.add(std::move(object));
  items.clear();
  replace(std::move(replacement));
}

void Store::replace(Replacement replacement) {
  std::map<std::string, Entry> old;
  std::shared_ptr<const StoreHandlers> handlers;
  std::vector<std::string> added, changed, deleted;
  {
    std::lock_guard lock(mutex_);
    handlers = handlers_;
    old.swap(items_);
    items_ = std::move(replacement.entries_);  // the swap: readers never see a half-built cache
    for (const auto& [key, entry] : items_) {
      auto it = old.find(key);
      if (it == old.end()) {
        added.push_back(key);
      } else if (it->second.resource_version != entry.resource_version) {
        changed.push_back(key);
      } else {
        old.erase(it);  // unchanged: nothing to report, nothing to keep
      }
    }
    for (const auto& [key, entry] : old) {
      if (!items_.count(key)) deleted.push_back(key);
    }
  }
  // Handlers run outside the lock; each reads its object's text when it is
  // its turn, so the new contents are never copied whole. An object dropped
  // meanwhile (reproject, from another thread) is not reported.
  auto current = [this](const std::string& key) -> std::optional<CompressedText> {
    std::lock_guard lock(mutex_);
    auto it = items_.find(key);
    if (it == items_.end()) return std::nullopt;
    return it->second.text;
  };
  for (const std::string& key : deleted) {
    if (handlers->on_change) handlers->on_change(key);
    if (handlers->on_delete) handlers->on_delete(parse(old.at(key).text));
  }
  for (const std::string& key : added) {
    if (handlers->on_change) handlers->on_change(key);
    if (!handlers->on_add) continue;
    if (std::optional<CompressedText> text = current(key)) handlers->on_add(parse(*text));
  }
  for (const std::string& key : changed) {
    if (handlers->on_change) handlers->on_change(key);
    if (!handlers->on_update) continue;
    if (std::optional<CompressedText> text = current(key)) {
      handlers->on_update(parse(old.at(key).text), parse(*text));
    }
  }
}

void Store::reproject(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = items_.find(key);
  if (it == items_.end() || !projection_) return;
  nlohmann::json object = parse(it->second.text);
  if (std::optional<Entry> entry = encode(object)) {
    it->second = std::move(*entry);
  } else {
    items_.erase(it);
  }
}

void Store::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  items_.erase(key);
}

std::optional<nlohmann::json> Store::get(const std::string& key) const {
  thread_local std::string text;  // reused: no allocation per read
  {
    std::lock_guard lock(mutex_);
    auto it = items_.find(key);
    if (it == items_.end()) return std::nullopt;
    decompress(it->second.text, text);  // not parsed under the lock: that is the slow part
  }
  return nlohmann::json::parse(text);
}

std::vector<nlohmann::json> Store::list() const {
  std::vector<CompressedText> texts;
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

Store::Footprint Store::footprint() const {
  std::lock_guard lock(mutex_);
  Footprint out;
  for (const auto& [key, entry] : items_) {
    out.stored_bytes += entry.text.stored_bytes();
    out.text_bytes += entry.text.text_bytes;
  }
  if (dictionary_) out.dictionary_bytes = dictionary_->footprint_bytes();
  return out;
}

}  // namespace hb::kube
