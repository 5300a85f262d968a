#include "api/object_names.h"

#include <cstdio>

namespace hb::api {
namespace {

bool lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool label_chars(std::string_view part) {
  if (part.empty() || !lower_alnum(part.front()) || !lower_alnum(part.back())) return false;
  for (char c : part) {
    if (!lower_alnum(c) && c != '-') return false;
  }
  return true;
}

}  // namespace

bool is_dns1123_label(std::string_view name) {
  return name.size() <= kDns1123LabelCharsMax && label_chars(name);
}

bool is_dns1123_subdomain(std::string_view name) {
  if (name.empty() || name.size() > kDns1123SubdomainCharsMax) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = name.find('.', start);
    if (!label_chars(name.substr(start, dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool is_config_key(std::string_view key) {
  if (key.empty() || key.size() > kConfigKeyCharsMax || key == "." || key == "..") return false;
  for (char c : key) {
    const bool alnum = lower_alnum(c) || (c >= 'A' && c <= 'Z');
    if (!alnum && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool name_follows(NameRule rule, std::string_view value) {
  switch (rule) {
    case NameRule::kDns1123Label:
      return is_dns1123_label(value);
    case NameRule::kDns1123Subdomain:
      return is_dns1123_subdomain(value);
    case NameRule::kConfigKey:
      return is_config_key(value);
  }
  return false;
}

std::string describe_rule(NameRule rule) {
  switch (rule) {
    case NameRule::kDns1123Label:
      return "a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a "
             "letter or digit, at most " +
             std::to_string(kDns1123LabelCharsMax) + " characters)";
    case NameRule::kDns1123Subdomain:
      return "a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', each dot-separated "
             "part starting and ending with a letter or digit, at most " +
             std::to_string(kDns1123SubdomainCharsMax) + " characters)";
    case NameRule::kConfigKey:
      return "a data key (letters, digits, '-', '_' and '.', not \".\" or \"..\", at most " +
             std::to_string(kConfigKeyCharsMax) + " characters)";
  }
  return "a name";
}

std::optional<std::string> name_problem(std::string_view field, std::string_view value,
                                        NameRule rule) {
  if (name_follows(rule, value)) return std::nullopt;
  return std::string(field) + " \"" + quote_untrusted(value) + "\": must be " + describe_rule(rule);
}

std::string quote_untrusted(std::string_view value) {
  std::string out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (out.size() >= kQuotedValueCharsMax) return out + "...";
    const auto byte = static_cast<unsigned char>(value[i]);
    if (byte >= 0x20 && byte < 0x7f && byte != '"' && byte != '\\') {
      out.push_back(static_cast<char>(byte));
      continue;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", byte);
    out += hex;
  }
  return out;
}

}  // namespace hb::api
