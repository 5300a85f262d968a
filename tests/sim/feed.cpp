#include "tests/sim/feed.h"

#include "api/hb_assert.h"
#include "kube/watch_decoder.h"
#include "kube/watch_scan.h"

namespace hb::sim {

Feed::Feed(const ApiServer& server, uint64_t id, std::string resource,
           const kube::InformerOptions& options, LagFn lag)
    : server_(server),
      id_(id),
      resource_(std::move(resource)),
      ns_(options.namespace_),
      selector_text_(options.label_selector),
      selector_(options.label_selector),
      lag_(std::move(lag)) {
  store_.set_projection(options.projection, options.list_pass, options.text_cut);
}

void Feed::relist(TimePoint now) {
  const Answer list = server_.list(resource_, ns_, selector_text_);
  std::vector<nlohmann::json> items(list.body["items"].begin(), list.body["items"].end());
  store_.replace(std::move(items));
  next_ = server_.changes(resource_).end();
  last_arrival_ = now;
  synced_ = true;
}

std::optional<kube::WatchEventType> Feed::event_type(const Change& c) const {
  using Type = kube::WatchEventType;
  if (!ns_.empty() && c.ns != ns_) return std::nullopt;
  const bool now_matches = selector_.matches(c.object);
  if (c.type != "MODIFIED") {
    if (!now_matches) return std::nullopt;
    return c.type == "ADDED" ? Type::kAdded : Type::kDeleted;
  }
  const bool matched = c.labels_before && selector_.matches(*c.labels_before);
  if (!matched && !now_matches) return std::nullopt;
  if (!now_matches) return Type::kDeleted;  // it left the selector: gone for this watch
  return matched ? Type::kModified : Type::kAdded;
}

TimePoint Feed::arrival(const Change& c) const {
  return std::max(last_arrival_, c.at + lag_(id_, c.rv));
}

void Feed::deliver(TimePoint now) {
  if (!started_ || !synced_) return;
  const ChangeLog& log = server_.changes(resource_);
  while (next_ < log.end()) {
    const Change& change = log.at(next_);
    const std::optional<kube::WatchEventType> type = event_type(change);
    if (!type) {
      ++next_;
      continue;
    }
    const TimePoint at = arrival(change);
    if (at > now) return;
    last_arrival_ = at;
    apply(*type, change);
    ++next_;
  }
}

void Feed::apply(kube::WatchEventType type, const Change& change) {
  if (!encoder_) {
    store_.apply(kube::WatchEvent{type, change.object});
    return;
  }
  const std::string line = encoder_(type, change.object);
  if (const std::optional<kube::ScannedWatchEvent> scanned = kube::scan_watch_event(line)) {
    store_.apply(*scanned);
  } else {
    kube::Result<kube::WatchEvent> decoded = kube::decode_watch_event(line);
    HB_ASSERT_MSG(decoded.ok(), "the feed's encoder made a line the decoder refuses");
    store_.apply(std::move(decoded).value());
  }
}

std::optional<TimePoint> Feed::next_arrival() {
  if (!started_ || !synced_) return std::nullopt;
  const ChangeLog& log = server_.changes(resource_);
  for (; next_ < log.end(); ++next_) {
    if (event_type(log.at(next_))) return arrival(log.at(next_));
  }
  return std::nullopt;
}

}  // namespace hb::sim
