#include "kube/resource.h"

#include <cctype>

namespace hb::kube {

std::string Resource::path(const std::string& ns, const std::string& name) const {
  std::string out = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !ns.empty()) out += "/namespaces/" + url_encode(ns);
  out += "/" + resource;
  if (!name.empty()) out += "/" + url_encode(name);
  return out;
}

std::string url_encode(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

std::optional<std::string> path_segment_problem(std::string_view segment) {
  if (segment == "." || segment == "..") return "may not be \".\" or \"..\"";
  for (char c : segment) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '/' || c == '%') return "may not contain '/' or '%'";
    if (byte <= 0x20 || byte >= 0x7f) return "may hold printable ASCII only";
  }
  return std::nullopt;
}

}  // namespace hb::kube
