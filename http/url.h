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

// Why `url` may not be sent (nullopt: it may): a byte that would end or
// split the request line or smuggle a second request (CR, LF, space and
// every other control byte), a fragment ('#', never sent to a server), or a
// byte outside ASCII. The client refuses such a request before connecting,
// whatever built the URL.
std::optional<std::string> url_problem(std::string_view url);
// The same for a header: a name of RFC 9110 token characters, a value with
// no control byte but tab (CR or LF would start a header or a request).
std::optional<std::string> header_problem(std::string_view name, std::string_view value);

// Whether a request may be sent again when a kept-alive connection proves
// closed before any byte of its answer came: the method is idempotent
// (RFC 9110 9.2.2), so a server that did receive it cannot act twice.
bool replayable_method(std::string_view method);

}  // namespace hb::http
