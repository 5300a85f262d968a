#include "operator/http_routes.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "operator/wakeup.h"  // kWakeupBodyBytesMax

namespace hb::operator_ {

namespace {

http::ServerResponse text(int status, std::string body) {
  http::ServerResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

}  // namespace

http::ServerResponse route(const Endpoints& endpoints, const RouteHandlers& handlers,
                           const std::string& address, const http::ServerRequest& request) {
  if (address == endpoints.metrics_address && request.path == "/metrics") {
    if (handlers.metrics_gate) {
      if (std::optional<http::ServerResponse> refused = handlers.metrics_gate(request)) {
        return *refused;
      }
    }
    http::ServerResponse response = text(200, handlers.metrics());
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return response;
  }
  if (address == endpoints.health_address && request.path == "/healthz") return text(200, "ok");
  if (address == endpoints.health_address && request.path == "/readyz") {
    return handlers.caches_synced() ? text(200, "ok") : text(503, "caches not synced");
  }
  if (address == endpoints.wakeup_address) return handlers.wakeup(request);
  return text(404, "not found");
}

std::vector<std::string> listen_addresses(const Endpoints& endpoints) {
  std::vector<std::string> out;
  for (const std::string& address :
       {endpoints.health_address, endpoints.metrics_address, endpoints.wakeup_address}) {
    if (address.empty() || std::find(out.begin(), out.end(), address) != out.end()) continue;
    out.push_back(address);
  }
  return out;
}

http::ServerLimits limits_for(const Endpoints& endpoints, const std::string& address) {
  http::ServerLimits limits;
  limits.body_bytes_max = address == endpoints.wakeup_address ? kWakeupBodyBytesMax : 0;
  return limits;
}

std::vector<std::unique_ptr<http::Server>> start_servers(
    const Endpoints& endpoints, const RouteHandlers& handlers,
    std::shared_ptr<http::ServerTls> metrics_tls) {
  std::vector<std::unique_ptr<http::Server>> servers;
  for (const std::string& address : listen_addresses(endpoints)) {
    auto handler = [&endpoints, &handlers, address](const http::ServerRequest& request) {
      return route(endpoints, handlers, address, request);
    };
    const bool tls = metrics_tls && address == endpoints.metrics_address;
    servers.push_back(http::make_server(address, handler, limits_for(endpoints, address),
                                        tls ? metrics_tls : nullptr));
    spdlog::info("event=listening address={} scheme={}", address, tls ? "https" : "http");
  }
  return servers;
}

}  // namespace hb::operator_
