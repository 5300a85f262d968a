#include "kube/http_url.h"

#include <charconv>

namespace hb::http {
namespace {

constexpr int kPortMax = 65535;

bool valid_port(std::string_view port) {
  int value = 0;
  const auto* end = port.data() + port.size();
  auto [ptr, ec] = std::from_chars(port.data(), end, value);
  return ec == std::errc() && ptr == end && value >= 1 && value <= kPortMax;
}

}  // namespace

std::optional<Url> parse_url(std::string_view url) {
  Url out;
  constexpr std::string_view kHttp = "http://", kHttps = "https://";
  std::string_view rest;
  if (url.substr(0, kHttps.size()) == kHttps) {
    out.tls = true;
    rest = url.substr(kHttps.size());
  } else if (url.substr(0, kHttp.size()) == kHttp) {
    rest = url.substr(kHttp.size());
  } else {
    return std::nullopt;
  }
  const std::size_t path_at = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, path_at);
  out.target = path_at == std::string_view::npos ? "/" : std::string(rest.substr(path_at));
  if (out.target.front() == '?') out.target.insert(0, "/");
  std::string_view host = authority, port;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return std::nullopt;
    has_port = !after.empty();
    if (has_port) port = after.substr(1);
  } else if (const std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    has_port = true;
  }
  if (host.empty() || (has_port && !valid_port(port))) {
    return std::nullopt;
  }
  out.host = std::string(host);
  out.port = has_port ? std::string(port) : (out.tls ? "443" : "80");
  out.origin = std::string(url.substr(0, url.size() - rest.size() + authority.size()));
  out.host_header = std::string(authority);
  return out;
}

bool replayable_method(std::string_view method) {
  for (std::string_view idempotent : {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}) {
    if (method == idempotent) return true;
  }
  return false;
}

}  // namespace hb::http
