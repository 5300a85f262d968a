// Pure parts of the HTTP client (http_client.cpp): an absolute URL split into
// what a connection needs.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hb::http {

struct Url {
  bool tls = false;         // https
  std::string host;         // without brackets for an IPv6 literal
  std::string port;         // explicit, or 80 / 443 by scheme
  std::string target;       // path and query, "/" at least
  std::string origin;       // scheme://host[:port] as written: the connection pool's key
  std::string host_header;  // what the Host header carries
};

// Splits "https://host:6443/api?x=1". nullopt for another scheme, no host,
// a port that is not a number in 1..65535, or an unclosed IPv6 bracket.
std::optional<Url> parse_url(std::string_view url);

// Whether a request may be sent again when a kept-alive connection proves
// closed before any byte of its answer came: the method is idempotent
// (RFC 9110 9.2.2), so a server that did receive it cannot act twice.
bool replayable_method(std::string_view method);

}  // namespace hb::http
