// The client's URL builder: for any namespace, name and query value, either
// the client refuses the segment before sending, or the path it builds is
// one origin-form request target (RFC 9112 3.2.1) with exactly the segments
// it was given, that the HTTP layer sends as it is.
#include <string>
#include <vector>

#include "http/url.h"
#include "kube/resource.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// Bytes a built target may hold: unreserved, '%' escapes, and the
// separators the builder itself writes.
bool target_byte(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("-._~%/?&=").find(c) != std::string_view::npos;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view encoded) {
  std::string out;
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] != '%') {
      out.push_back(encoded[i]);
      continue;
    }
    hb::fuzz::require(i + 2 < encoded.size(), "an escape has two hex digits");
    const int high = hex_value(encoded[i + 1]), low = hex_value(encoded[i + 2]);
    hb::fuzz::require(high >= 0 && low >= 0, "an escape is two uppercase hex digits");
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> out(1);
  for (char c : text) {
    if (c == separator) {
      out.emplace_back();
    } else {
      out.back().push_back(c);
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = split(hb::fuzz::as_text(data, size), '\0');
  const std::string& ns = parts[0];
  const std::string name = parts.size() > 1 ? parts[1] : "";
  const std::string query = parts.size() > 2 ? parts[2] : "";
  if (ns.empty() || hb::kube::path_segment_problem(ns) || hb::kube::path_segment_problem(name)) {
    return 0;  // refused before any request is built
  }
  const hb::kube::Resource& r = hb::kube::resources::kConfigMaps;
  const std::string target =
      r.path(ns, name) + "?labelSelector=" + hb::kube::url_encode(query) + "&watch=1";
  hb::fuzz::require(target.front() == '/', "origin-form starts with '/'");
  for (char c : target) hb::fuzz::require(target_byte(c), "only unreserved bytes and escapes");
  hb::fuzz::require(!hb::http::url_problem("https://h" + target), "the HTTP layer sends it");
  const std::size_t query_at = target.find('?');
  hb::fuzz::require(target.find('?', query_at + 1) == std::string::npos, "one query");
  const std::vector<std::string> segments = split(target.substr(1, query_at - 1), '/');
  hb::fuzz::require(segments.size() == (name.empty() ? 5u : 6u), "exactly the segments given");
  hb::fuzz::require(percent_decode(segments[3]) == ns, "the namespace decodes to itself");
  if (!name.empty()) hb::fuzz::require(percent_decode(segments[5]) == name, "the name too");
  const std::vector<std::string> params = split(target.substr(query_at + 1), '&');
  hb::fuzz::require(params.size() == 2, "one parameter per value given");
  hb::fuzz::require(percent_decode(params[0].substr(params[0].find('=') + 1)) == query,
                    "the query value decodes to itself");
  return 0;
}
