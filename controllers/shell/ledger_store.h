// The durable ledger's records (ledger_record.h) as the operator holds
// them: every record is read once from the operator's namespace (one list,
// at the first need), then kept from the operator's own writes, which are
// the only ones (an agent's author cannot write there). A write is
// conditional on the resourceVersion last read or written: a 409 forgets
// the record, the pass fails and its retry reads it again. Told changes go
// to the policy index, which sums them per team.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "controllers/spend/ledger_record.h"
#include "kube/client.h"

namespace hb::controllers {

class LedgerStore {
 public:
  using OnChange = std::function<void(const LedgerRecord* before, const LedgerRecord* after)>;
  // `home`: the namespace the records live in (the operator's own).
  LedgerStore(std::shared_ptr<kube::Client> client, std::string home);
  // Told each record read or written (before: null when new), and once
  // every record has been read (`loaded`). Set before the first get.
  void on_change(OnChange changed, std::function<void()> loaded);

  // The agent's record; none when it has none. The first call reads every
  // record (an error: the caller's pass fails and is retried).
  kube::Result<std::optional<LedgerRecord>> get(const std::string& ns, const std::string& agent);
  // Writes `record`: created when the store has none, else replaced,
  // conditional on the version it holds.
  kube::Done put(const LedgerRecord& record);

  const std::string& home() const { return home_; }
  std::size_t size() const;

 private:
  struct Entry {
    std::string resource_version;
    LedgerRecord record;
  };
  kube::Done load();
  // Reads one record again (after a 409 or an AlreadyExists).
  kube::Done reread(const std::string& ns, const std::string& agent);
  void store(const std::string& key, std::optional<Entry> entry);

  std::shared_ptr<kube::Client> client_;
  std::string home_;
  OnChange changed_;
  std::function<void()> loaded_;
  std::mutex load_mutex_;     // one list at a time
  mutable std::mutex mutex_;  // the map (a record's writes are serial: one
                              // pass per agent at a time, the work queue's rule)
  bool loaded_all_ = false;
  std::map<std::string, Entry> entries_;  // by "ns/agent"
};

}  // namespace hb::controllers
