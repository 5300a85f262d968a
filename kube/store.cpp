#include "kube/store.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "api/hb_assert.h"
#include "kube/front_coding.h"
#include "kube/object_identity.h"

namespace hb::kube {

std::string Store::key_of(const nlohmann::json& object) {
  const auto& meta = object.at("metadata");
  std::string name = meta.value("name", "");
  std::string ns = meta.value("namespace", "");
  return ns.empty() ? name : ns + "/" + name;
}

void Store::set_projection(Projection projection, ListPassFactory list_pass,
                           std::shared_ptr<const TextCut> text_cut) {
  std::lock_guard lock(mutex_);
  projection_ = std::move(projection);
  list_pass_ = std::move(list_pass);
  text_cut_ = std::move(text_cut);
}

bool Store::project(nlohmann::json& object) const {
  // Server-side-apply bookkeeping: large, and nothing here reads it.
  if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    meta->erase("managedFields");
  }
  if (projection_) projection_(object);
  return !object.is_null();
}

StoredObjectPtr Store::stored(const std::string& key, nlohmann::json& projected) const {
  const std::string version = projected.value("/metadata/resourceVersion"_json_pointer, "");
  const bool elided = elide_identity(key, version, projected);
  StoredObjectPtr entry = StoredObject::make(key, version, compress(projected.dump()), elided);
  if (elided) restore_identity(key, version, projected);  // the caller's object as it was
  return entry;
}

StoredObjectPtr Store::encode(const std::string& key, nlohmann::json& object) const {
  if (!project(object)) return nullptr;
  return stored(key, object);
}

CompressedText Store::compress(std::string_view text) const {
  std::call_once(dictionary_once_,
                 [&] { dictionary_ = std::make_unique<const TextDictionary>(text); });
  return dictionary_->compress(text);
}

void Store::decompress(CompressedTextView text, std::string& plain) const {
  if (!dictionary_ || !dictionary_->decompress(text, plain)) {
    std::fputs("heartbeat-operator: a cached object does not decompress (a bug)\n", stderr);
    std::abort();
  }
}

void Store::read_out(const StoredEntryView& entry, Plain& out) const {
  decompress(entry.text, out.text);
  out.key.assign(entry.key);
  out.resource_version.assign(entry.resource_version);
  out.identity_elided = entry.identity_elided;
}

nlohmann::json Store::object_of(const Plain& plain) {
  nlohmann::json object = nlohmann::json::parse(plain.text);
  if (plain.identity_elided) restore_identity(plain.key, plain.resource_version, object);
  return object;
}

nlohmann::json Store::parse(const StoredEntryView& entry) const {
  thread_local Plain plain;  // reused: no allocation per read
  read_out(entry, plain);
  return object_of(plain);
}

void Store::set_handlers(StoreHandlers handlers) {
  std::lock_guard lock(mutex_);
  handlers_ = std::make_shared<const StoreHandlers>(std::move(handlers));
}

void Store::commit(bool deleted, StoredObjectPtr entry, const nlohmann::json* parsed) {
  const std::string key(entry->key());
  std::optional<Plain> old_text;  // decompressed under the lock, parsed outside
  Plain new_text;
  bool existed = false;
  std::shared_ptr<const StoreHandlers> handlers;
  {
    std::lock_guard lock(mutex_);
    handlers = handlers_;
    const std::optional<StoredEntryView> kept = items_.find(key);
    existed = kept.has_value();
    const bool old_wanted = deleted ? handlers->on_delete && parsed == nullptr
                                    : handlers->on_update && handlers->update_reads_old;
    if (existed && old_wanted) read_out(*kept, old_text.emplace());
    const bool new_wanted =
        existed ? static_cast<bool>(handlers->on_update) : static_cast<bool>(handlers->on_add);
    if (!deleted && new_wanted && parsed == nullptr) read_out(entry->view(), new_text);
    if (deleted) {
      if (existed) items_.erase(key);
    } else {
      items_.put(entry->view());
    }
  }
  // Handlers run outside the lock so they may read the store. The caller's
  // tree is handed on as it is, not copied: a projected object (every
  // watched run, Job and Pod) comes parsed.
  if (handlers->on_change && (existed || !deleted)) handlers->on_change(key);
  nlohmann::json parsed_here;
  if (deleted) {
    if (existed && handlers->on_delete) {
      if (parsed == nullptr) parsed_here = object_of(*old_text);
      handlers->on_delete(parsed ? *parsed : parsed_here);
    }
    return;
  }
  const bool new_read =
      existed ? static_cast<bool>(handlers->on_update) : static_cast<bool>(handlers->on_add);
  if (!new_read) return;
  if (parsed == nullptr) parsed_here = object_of(new_text);
  const nlohmann::json& new_object = parsed ? *parsed : parsed_here;
  if (existed) {
    handlers->on_update(old_text ? object_of(*old_text) : nlohmann::json(), new_object);
  } else {
    handlers->on_add(new_object);
  }
}

void Store::apply(WatchEvent event) {
  nlohmann::json& object = event.object;
  std::string key = key_of(object);
  // Projects `object`: handlers see what is kept.
  if (!project(object)) {
    forget(key);
    return;
  }
  if (event.type == WatchEventType::kDeleted) {
    commit(true, StoredObject::make(key, "", CompressedText{}), &object);  // only its key is read
    return;
  }
  commit(false, stored(key, object), &object);
}

void Store::apply(const ScannedWatchEvent& event) {
  if (projection_) {  // a projection needs the tree the fast path avoids
    // Cut first, when the projection keeps little of a large object: only
    // what it may keep is parsed (managedFields goes with the cut).
    const std::string text =
        text_cut_ ? cut_text(event.object_text, *text_cut_) : event.compact_object_text();
    apply(WatchEvent{event.type, nlohmann::json::parse(text)});
    return;
  }
  std::string key(event.name);
  if (!event.namespace_.empty()) key = std::string(event.namespace_) + "/" + key;
  if (event.type == WatchEventType::kDeleted) {
    commit(true, StoredObject::make(key, "", CompressedText{}), nullptr);  // only its key is read
    return;
  }
  commit(false,
         StoredObject::make(key, event.resource_version, compress(event.compact_object_text())),
         nullptr);
}

void Store::remove(const std::string& key) {
  commit(true, StoredObject::make(key, "", CompressedText{}), nullptr);  // only its key is read
}

void Store::Replacement::add(nlohmann::json object) {
  const std::string key = key_of(object);
  if (!store_->project(object)) return;
  std::vector<std::string> pushed_out;
  if (pass_) pushed_out = pass_->admit(object);
  HB_ASSERT(!object.is_null());  // a pass cuts objects, it does not discard them
  entries_.put(store_->stored(key, object)->view());
  for (const std::string& earlier : pushed_out) revisit(earlier);
}

std::optional<nlohmann::json> Store::Replacement::get(const std::string& key) const {
  const std::optional<StoredEntryView> kept = entries_.find(key);
  if (!kept) return std::nullopt;
  return store_->parse(*kept);
}

void Store::Replacement::revisit(const std::string& key) {
  const std::optional<StoredEntryView> kept = entries_.find(key);
  if (!kept) return;  // not listed (or discarded by the projection)
  nlohmann::json object = store_->parse(*kept);
  pass_->revisit(object);
  entries_.put(store_->stored(key, object)->view());
}

void Store::replace(std::vector<nlohmann::json> items) {
  Replacement replacement = begin_replace();
  for (auto& object : items) replacement.add(std::move(object));
  items.clear();
  replace(std::move(replacement));
}

// What a swap changed, each list in key order. Keys only, front-coded: at
// 160,000 runs a vector of the added keys is about 13 MiB at the
// operator's peak (the first list), front-coded about 1 MiB.
struct Store::SwapChanges {
  FrontCodedKeys added, changed, deleted;
  StoredObjects old;  // the changed and deleted entries as they were
};

// Both sets in key order, compared in one pass (a lookup for each entry held
// the store's lock for about 0.3 s at 160,000 runs).
Store::SwapChanges Store::compare(const StoredObjects& now_set, const StoredObjects& was_set) {
  SwapChanges out;
  StoredObjects::Cursor now(now_set), was(was_set);
  bool more_now = now.next(), more_was = was.next();
  while (more_now || more_was) {
    const int order = !more_was ? -1 : !more_now ? 1 : now.entry().key.compare(was.entry().key);
    if (order < 0) {
      out.added.push_back(now.entry().key);
    } else if (order > 0) {
      out.deleted.push_back(was.entry().key);
      out.old.put(was.entry());
    } else if (was.entry().resource_version != now.entry().resource_version) {
      out.changed.push_back(now.entry().key);
      out.old.put(was.entry());
    }
    if (order <= 0) more_now = now.next();
    if (order >= 0) more_was = was.next();
  }
  return out;
}

void Store::replace(Replacement replacement) {
  SwapChanges changes;
  std::shared_ptr<const StoreHandlers> handlers;
  {
    std::lock_guard lock(mutex_);
    handlers = handlers_;
    StoredObjects before = std::move(items_);
    items_ = std::move(replacement.entries_);  // the swap: readers never see a half-built cache
    changes = compare(items_, before);
  }  // the unchanged old entries are freed here, under the lock
  report(*handlers, changes);
}

// Handlers run outside the lock; each reads its object's text when it is its
// turn, so the new contents are never copied whole. An object dropped
// meanwhile (reproject, from another thread) is not reported.
void Store::report(const StoreHandlers& handlers, const SwapChanges& changes) {
  auto current = [this](const std::string& key) -> std::optional<Plain> {
    std::lock_guard lock(mutex_);
    const std::optional<StoredEntryView> kept = items_.find(key);
    if (!kept) return std::nullopt;
    Plain text;
    read_out(*kept, text);
    return text;
  };
  auto old_object = [&](const std::string& key) { return parse(*changes.old.find(key)); };
  for (FrontCodedKeys::Cursor at(changes.deleted); at.next();) {
    if (handlers.on_change) handlers.on_change(at.key());
    if (handlers.on_delete) handlers.on_delete(old_object(at.key()));
  }
  for (FrontCodedKeys::Cursor at(changes.added); at.next();) {
    if (handlers.on_change) handlers.on_change(at.key());
    if (!handlers.on_add) continue;
    if (std::optional<Plain> text = current(at.key())) handlers.on_add(object_of(*text));
  }
  for (FrontCodedKeys::Cursor at(changes.changed); at.next();) {
    if (handlers.on_change) handlers.on_change(at.key());
    if (!handlers.on_update) continue;
    if (std::optional<Plain> text = current(at.key())) {
      handlers.on_update(handlers.update_reads_old ? old_object(at.key()) : nlohmann::json(),
                         object_of(*text));
    }
  }
}

void Store::reproject(const std::string& key) {
  std::lock_guard lock(mutex_);
  const std::optional<StoredEntryView> kept = items_.find(key);
  if (!kept || !projection_) return;
  nlohmann::json object = parse(*kept);
  if (StoredObjectPtr entry = encode(key, object)) {
    items_.put(entry->view());
  } else {
    items_.erase(key);
  }
}

void Store::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  items_.erase(key);
}

std::optional<nlohmann::json> Store::get(const std::string& key) const {
  thread_local Plain text;  // reused: no allocation per read
  {
    std::lock_guard lock(mutex_);
    const std::optional<StoredEntryView> kept = items_.find(key);
    if (!kept) return std::nullopt;
    read_out(*kept, text);  // not parsed under the lock: that is the slow part
  }
  return object_of(text);
}

void Store::for_each(const std::function<void(nlohmann::json&&)>& fn) const {
  // Only the stored bytes are copied under the lock (a quarter of the text,
  // no work): decompressing 10,000 Agents there held every watch event and
  // read of the store back for tens of milliseconds.
  std::vector<StoredObjectPtr> stored;
  {
    std::lock_guard lock(mutex_);
    stored.reserve(items_.size());
    items_.for_each(
        [&stored](const StoredEntryView& entry) { stored.push_back(StoredObject::make(entry)); });
  }
  for (const StoredObjectPtr& entry : stored) fn(parse(entry->view()));
}

std::vector<nlohmann::json> Store::with_key_prefix(std::string_view prefix) const {
  std::vector<StoredObjectPtr> stored;
  {
    std::lock_guard lock(mutex_);
    items_.for_each_with_prefix(prefix, [&stored](const StoredEntryView& entry) {
      stored.push_back(StoredObject::make(entry));
    });
  }
  std::vector<nlohmann::json> out;
  out.reserve(stored.size());
  for (const StoredObjectPtr& entry : stored) out.push_back(parse(entry->view()));
  return out;
}

std::vector<nlohmann::json> Store::list() const {
  std::vector<nlohmann::json> out;
  for_each([&out](nlohmann::json&& object) { out.push_back(std::move(object)); });
  return out;
}

std::vector<std::string> Store::keys() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  out.reserve(items_.size());
  items_.for_each([&out](const StoredEntryView& entry) { out.emplace_back(entry.key); });
  return out;
}

bool Store::contains(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return items_.contains(key);
}

size_t Store::size() const {
  std::lock_guard lock(mutex_);
  return items_.size();
}

Store::Footprint Store::footprint() const {
  std::lock_guard lock(mutex_);
  Footprint out;
  items_.for_each([&out](const StoredEntryView& entry) {
    out.stored_bytes += entry.text.bytes.size();
    out.text_bytes += entry.text.text_bytes;
  });
  if (dictionary_) out.dictionary_bytes = dictionary_->footprint_bytes();
  return out;
}

}  // namespace hb::kube
