#include "tests/sim/feed.h"

namespace hb::sim {

Feed::Feed(const ApiServer& server, uint64_t id, std::string resource, std::string ns,
           std::string selector, LagFn lag)
    : server_(server),
      id_(id),
      resource_(std::move(resource)),
      ns_(std::move(ns)),
      selector_(std::move(selector)),
      lag_(std::move(lag)) {}

void Feed::relist(TimePoint now) {
  const Answer list = server_.list(resource_, ns_, selector_);
  std::vector<nlohmann::json> items(list.body["items"].begin(), list.body["items"].end());
  store_.replace(std::move(items));
  next_ = server_.changes().size();
  last_arrival_ = now;
  synced_ = true;
}

std::optional<kube::WatchEvent> Feed::view(const Change& c) const {
  if (c.resource != resource_ || (!ns_.empty() && c.ns != ns_)) return std::nullopt;
  const bool now_matches = selector_matches(selector_, c.object);
  if (c.type != "MODIFIED") {
    if (!now_matches) return std::nullopt;
    return kube::WatchEvent{
        c.type == "ADDED" ? kube::WatchEventType::kAdded : kube::WatchEventType::kDeleted,
        c.object};
  }
  const bool matched = c.before && selector_matches(selector_, *c.before);
  if (!matched && !now_matches) return std::nullopt;
  if (!now_matches) return kube::WatchEvent{kube::WatchEventType::kDeleted, c.object};
  return kube::WatchEvent{matched ? kube::WatchEventType::kModified : kube::WatchEventType::kAdded,
                          c.object};
}

TimePoint Feed::arrival(std::size_t index) const {
  const Change& c = server_.changes()[index];
  return std::max(last_arrival_, c.at + lag_(id_, c.rv));
}

void Feed::deliver(TimePoint now) {
  if (!started_ || !synced_) return;
  const auto& log = server_.changes();
  while (next_ < log.size()) {
    std::optional<kube::WatchEvent> event = view(log[next_]);
    if (!event) {
      ++next_;
      continue;
    }
    const TimePoint at = arrival(next_);
    if (at > now) return;
    last_arrival_ = at;
    ++next_;
    store_.apply(std::move(*event));
  }
}

std::optional<TimePoint> Feed::next_arrival() {
  if (!started_ || !synced_) return std::nullopt;
  const auto& log = server_.changes();
  for (; next_ < log.size(); ++next_) {
    if (view(log[next_])) return arrival(next_);
  }
  return std::nullopt;
}

}  // namespace hb::sim
