// Reflector + cache: lists a resource, then watches it from the list's
// resourceVersion, keeping a Store current. Relists on 410 (Gone/Expired,
// whether as an HTTP status or an ERROR event); reconnects with jittered
// backoff (0.8 s .. 30 s) on any other failure.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kube/backoff.h"
#include "kube/client.h"
#include "kube/object_refusal.h"
#include "kube/store.h"
#include "kube/watcher_state.h"

namespace hb::kube {

// Page size of the initial and re-lists: bounded memory per request.
inline constexpr int64_t kListPageItemsMax = 500;

struct InformerOptions {
  std::string namespace_;  // "" = all namespaces
  std::string label_selector;
  int watch_timeout_seconds = kWatchTimeoutSecondsDefault;
  // Cuts every cached object down to what readers use (Store::set_projection).
  Projection projection;
  // What of a watched object's text the projection may keep, cut before
  // the parse (Store::set_projection); null: the whole text is parsed.
  std::shared_ptr<const TextCut> text_cut;
  // Made for each list, to cut objects by what else the list holds
  // (Store::set_projection).
  ListPassFactory list_pass;
  // A resource that may not be served (an optional CRD not installed, or
  // not granted by an older Role): a 404 or 403 on list counts as an empty,
  // synced list, and the list is tried again every kAbsentResourceRecheck.
  bool optional_resource = false;
  // Told of each object the informer refuses (too deep, too large,
  // malformed), after its warning line: the operator counts it and records
  // an Event on it. The object is skipped (a stored copy is dropped, as if
  // deleted); the list, the watch and the sync go on. May be null.
  std::function<void(const RefusedObject&)> on_refused;
};

inline constexpr std::chrono::seconds kAbsentResourceRecheck{30};

struct InformerStats {
  std::atomic<uint64_t> lists{0};
  std::atomic<uint64_t> watches{0};
  std::atomic<uint64_t> events{0};
  std::atomic<uint64_t> relists_after_gone{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> items_listed{0};  // every list's items, as they arrive
  std::atomic<uint64_t> objects_refused{0};
};

// What a cache reads: a Store that something keeps current. The Informer
// keeps it from the API server on its own thread; the deterministic
// simulation feeds one step by step from its in-memory server.
class CachedResource {
 public:
  virtual ~CachedResource() = default;
  // Set before start().
  virtual void set_handlers(StoreHandlers handlers) = 0;
  virtual void start() = 0;
  virtual void stop() = 0;
  // True once the first complete list is in the cache.
  virtual bool has_synced() const = 0;
  virtual bool wait_for_sync(std::chrono::milliseconds timeout) const = 0;
  // Items its lists have brought so far: a sync that takes long but keeps
  // listing is not stuck (0 for a source that does not count them).
  virtual uint64_t items_listed() const { return 0; }
  virtual const Store& store() const = 0;
  // Store::reproject on the kept object (the cache's own bookkeeping).
  virtual void reproject(const std::string& key) = 0;
};

class Informer final : public CachedResource {
 public:
  Informer(std::shared_ptr<Client> client, Resource resource, InformerOptions options = {});
  ~Informer() override;
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Set before start().
  void set_handlers(StoreHandlers handlers) override { store_.set_handlers(std::move(handlers)); }
  void start() override;
  void stop() override;

  bool has_synced() const override { return synced_; }
  bool wait_for_sync(std::chrono::milliseconds timeout) const override;
  uint64_t items_listed() const override { return stats_.items_listed; }

  const Store& store() const override { return store_; }
  void reproject(const std::string& key) override { store_.reproject(key); }
  const Resource& resource() const { return resource_; }
  const InformerStats& stats() const { return stats_; }
  std::string last_resource_version() const;

 private:
  void run();
  // Performs the action the state asks for; what it came to.
  Result<WatcherOutcome> perform(WatcherAction action);
  // Applies a step's state and its effects (sync, counters, logs, waits).
  void take_step(const WatcherStep& step, const Error* error);
  // The list's resourceVersion.
  Result<std::string> list_and_replace();
  // An optional resource that is not served: an empty, synced cache.
  void treat_as_absent(const Error& error);
  Done watch_once();
  // One line of the watch stream; sets `failure` when it ends the stream.
  void handle_watch_line(std::string_view line, std::optional<Error>& failure);
  // Skips and reports one refused object (log line, stats, on_refused).
  RefusedObject refuse(RefusalReason reason, std::string_view object_text, const char* where);
  // A watched object refused: reported (unless deleted), and a stored copy
  // dropped as if it were deleted.
  void refuse_watched(WatchEventType type, RefusalReason reason, std::string_view object_text);
  void advance_resource_version(std::string_view version);
  bool sleep_unless_stopped(std::chrono::milliseconds delay);

  std::shared_ptr<Client> client_;
  Resource resource_;
  InformerOptions options_;
  Store store_;
  InformerStats stats_;
  Backoff backoff_;

  std::atomic<bool> synced_{false};
  std::atomic<bool> stopping_{false};
  std::shared_ptr<http::CancelSource> cancel_ = std::make_shared<http::CancelSource>();
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  WatcherState state_;  // guarded by mutex_: watch events move its resourceVersion
  std::thread thread_;
};

}  // namespace hb::kube
