// The operator's HTTP edge: which address answers which path, and one server
// per distinct address. /metrics on the metrics address, /healthz and
// /readyz on the health address, the wakeup endpoint on the wakeup address;
// addresses may coincide (then one server answers all of their paths).
// Everything else is 404. Routing is pure; the handlers do the work.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/http.h"

namespace hb::operator_ {

struct Endpoints {
  std::string metrics_address;  // "" = no metrics server
  std::string health_address;   // "" = no health server
  std::string wakeup_address;   // "" = no wakeup server
};

struct RouteHandlers {
  std::function<std::string()> metrics;  // the Prometheus text
  std::function<bool()> caches_synced;   // /readyz
  http::Handler wakeup;
  // Asked before /metrics is rendered: the refusal to send (401, 403, 503),
  // or nullopt to serve it. Empty: plain metrics (--metrics-auth=none).
  std::function<std::optional<http::ServerResponse>(const http::ServerRequest&)> metrics_gate;
};

// The answer of the server on `address` to `request`.
http::ServerResponse route(const Endpoints& endpoints, const RouteHandlers& handlers,
                           const std::string& address, const http::ServerRequest& request);

// Each configured address once: health, metrics, wakeup order.
std::vector<std::string> listen_addresses(const Endpoints& endpoints);

// Only the wakeup endpoint takes a body; GETs of metrics and health none.
// Every listener caps connections per source IP and, at a cap, closes an
// idle connection for a new one (http/http.h), so the kubelet's probe gets
// in however many idle connections other Pods hold.
http::ServerLimits limits_for(const Endpoints& endpoints, const std::string& address);

// Listens on every address (throws std::exception naming the one that
// failed). The handlers must outlive the servers. With metrics_tls the
// metrics address serves HTTPS only; the others stay plain HTTP.
std::vector<std::unique_ptr<http::Server>> start_servers(
    const Endpoints& endpoints, const RouteHandlers& handlers,
    std::shared_ptr<http::ServerTls> metrics_tls = nullptr);

}  // namespace hb::operator_
