#include "http/url.h"

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

bool token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string at_offset(std::size_t offset) {
  return " at byte " + std::to_string(offset);
}

}  // namespace

std::optional<std::string> url_problem(std::string_view url) {
  for (std::size_t i = 0; i < url.size(); ++i) {
    const auto byte = static_cast<unsigned char>(url[i]);
    if (byte <= 0x20 || byte == 0x7f) return "the URL holds a control byte or space" + at_offset(i);
    if (byte >= 0x80) return "the URL holds a byte outside ASCII" + at_offset(i);
    if (byte == '#') return "the URL holds a fragment ('#')" + at_offset(i);
  }
  return std::nullopt;
}

std::optional<std::string> header_problem(std::string_view name, std::string_view value) {
  if (name.empty()) return std::string("a header has an empty name");
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!token_char(name[i]))
      return "a header name holds a byte that is not a token character" + at_offset(i);
  }
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto byte = static_cast<unsigned char>(value[i]);
    if ((byte < 0x20 && byte != '\t') || byte == 0x7f) {
      return "header " + std::string(name) + " holds a control byte" + at_offset(i);
    }
  }
  return std::nullopt;
}

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
