#include "controllers/shell/ledger_store.h"

#include <spdlog/spdlog.h>

#include "api/hb_assert.h"

namespace hb::controllers {

namespace {

std::string key_of(const std::string& ns, const std::string& agent) {
  return ns + "/" + agent;
}

kube::Error malformed(const Json& configmap, const std::string& why) {
  kube::Error e;
  e.message = "ledger ConfigMap " + string_at(configmap, "metadata/name") + " is malformed: " + why;
  e.context = "ledger";
  return e;
}

}  // namespace

LedgerStore::LedgerStore(std::shared_ptr<kube::Client> client, std::string home)
    : client_(std::move(client)), home_(std::move(home)) {
  HB_ASSERT(client_ != nullptr && !home_.empty());
}

void LedgerStore::on_change(OnChange changed, std::function<void()> loaded) {
  changed_ = std::move(changed);
  loaded_ = std::move(loaded);
}

void LedgerStore::store(const std::string& key, std::optional<Entry> entry) {
  std::optional<LedgerRecord> before;
  {
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(key);
    if (it != entries_.end()) before = std::move(it->second.record);
    if (entry) {
      entries_.insert_or_assign(key, *entry);
    } else if (it != entries_.end()) {
      entries_.erase(it);
    }
  }
  if (changed_ && (before || entry)) {
    changed_(before ? &*before : nullptr, entry ? &entry->record : nullptr);
  }
}

// A malformed record fails the load: its agent's spend would be unknown
// (and the operator alone writes them, so a person has edited it).
kube::Done LedgerStore::load() {
  std::lock_guard load_lock(load_mutex_);
  {
    std::lock_guard lock(mutex_);
    if (loaded_all_) return kube::done();
  }
  kube::ListOptions options;
  options.label_selector = std::string(kLabelLedger) + "=" + kLedgerKindAgent;
  HB_TRY_ASSIGN(const Json list, client_->list_all(kube::resources::kConfigMaps, home_, options));
  const Json* items = find_path(list, "items");
  if (items != nullptr && items->is_array()) {
    for (const Json& cm : *items) {
      ParsedLedger parsed = parse_ledger_configmap(cm);
      if (!parsed.record) return malformed(cm, parsed.error);
      const std::string key = key_of(parsed.record->ns, parsed.record->agent);
      store(key, Entry{string_at(cm, "metadata/resourceVersion"), std::move(*parsed.record)});
    }
  }
  {
    std::lock_guard lock(mutex_);
    loaded_all_ = true;
  }
  spdlog::info("event=ledger_loaded namespace={} records={}", home_, size());
  if (loaded_) loaded_();
  return kube::done();
}

kube::Result<std::optional<LedgerRecord>> LedgerStore::get(const std::string& ns,
                                                           const std::string& agent) {
  HB_TRY(load());
  const std::string key = key_of(ns, agent);
  {
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(key);
    if (it != entries_.end()) return std::optional(it->second.record);
  }
  return std::optional<LedgerRecord>();  // every record was read: it has none
}

kube::Done LedgerStore::put(const LedgerRecord& record) {
  const std::string key = key_of(record.ns, record.agent);
  std::string version;
  {
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(key);
    if (it != entries_.end()) version = it->second.resource_version;
  }
  const Json object = ledger_configmap(record, home_, version);
  kube::Result<Json> written =
      version.empty() ? client_->create(kube::resources::kConfigMaps, home_, object)
                      : client_->replace(kube::resources::kConfigMaps, home_,
                                         ledger_object_name(record.ns, record.agent), object);
  if (!written.ok()) {
    if (written.is(kube::ErrorKind::kConflict) || written.is(kube::ErrorKind::kAlreadyExists)) {
      // Someone else's version (a replica that led before, a lost answer):
      // read it again, and the pass that retries decides from it.
      HB_TRY(reread(record.ns, record.agent));
    }
    return written.error();
  }
  store(key, Entry{string_at(written.value(), "metadata/resourceVersion"), record});
  return kube::done();
}

kube::Done LedgerStore::reread(const std::string& ns, const std::string& agent) {
  kube::Result<Json> cm =
      client_->get(kube::resources::kConfigMaps, home_, ledger_object_name(ns, agent));
  if (cm.is(kube::ErrorKind::kNotFound)) {
    store(key_of(ns, agent), std::nullopt);
    return kube::done();
  }
  if (!cm.ok()) return cm.error();
  ParsedLedger parsed = parse_ledger_configmap(cm.value());
  if (!parsed.record) return malformed(cm.value(), parsed.error);
  store(key_of(ns, agent),
        Entry{string_at(cm.value(), "metadata/resourceVersion"), std::move(*parsed.record)});
  return kube::done();
}

std::size_t LedgerStore::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace hb::controllers
