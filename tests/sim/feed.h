// A simulated watch cache: a real kube::Store (and the real ClusterCache's
// handlers on it) fed from the ApiServer's change log, each change arriving
// after a lag drawn from the seed, in order, filtered by namespace and label
// selector as a watch is. A dropped watch relists (the informer's 410 path).
#pragma once

#include <optional>

#include "kube/informer.h"
#include "tests/sim/api_server.h"

namespace hb::sim {

// Lag of one change to one feed: a pure function of (feed, change) so a
// seed replays exactly.
using LagFn = std::function<std::chrono::milliseconds(uint64_t feed_id, uint64_t rv)>;

// Renders one watch event as the API server sends it (a line of the
// stream): a feed given one decodes each change as the informer does.
using WatchEncoder = std::function<std::string(kube::WatchEventType, const Json& object)>;

class Feed final : public kube::CachedResource {
 public:
  // Watches `resource` as `options` say (namespace, selector, projection).
  Feed(const ApiServer& server, uint64_t id, std::string resource,
       const kube::InformerOptions& options, LagFn lag);

  void set_handlers(kube::StoreHandlers handlers) override {
    store_.set_handlers(std::move(handlers));
  }
  void start() override { started_ = true; }
  void stop() override { started_ = false; }
  bool has_synced() const override { return synced_; }
  bool wait_for_sync(std::chrono::milliseconds) const override { return synced_; }
  const kube::Store& store() const override { return store_; }
  void reproject(const std::string& key) override { store_.reproject(key); }

  // Each change then reaches the store as text through the informer's
  // decoder (kube::scan_watch_event), not as a copy of the server's tree:
  // what the capacity benchmark measures. Set before the first delivery.
  void set_encoder(WatchEncoder encoder) { encoder_ = std::move(encoder); }

  // The list (first sync or after a drop): the server's state now.
  void relist(TimePoint now);
  // Applies every change that has arrived by `now`.
  void deliver(TimePoint now);
  // When the next pending change arrives (nullopt: none pending); skips
  // past changes that are not for this watch.
  std::optional<TimePoint> next_arrival();
  bool started() const { return started_; }
  const std::string& resource() const { return resource_; }
  // The position in its resource's change log of the next change it has
  // not taken: what it still needs of the log.
  uint64_t position() const { return next_; }

 private:
  // How this watch sees a change (nullopt: not for it), without a copy.
  std::optional<kube::WatchEventType> event_type(const Change& change) const;
  void apply(kube::WatchEventType type, const Change& change);
  TimePoint arrival(const Change& change) const;

  const ApiServer& server_;
  uint64_t id_;
  std::string resource_, ns_, selector_text_;
  LabelSelector selector_;
  LagFn lag_;
  WatchEncoder encoder_;
  kube::Store store_;
  bool started_ = false;
  bool synced_ = false;
  uint64_t next_ = 0;  // position in the resource's change log of the next change to look at
  TimePoint last_arrival_{};
};

}  // namespace hb::sim
