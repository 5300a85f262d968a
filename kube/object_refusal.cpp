#include "kube/object_refusal.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "kube/object_limits.h"

namespace hb::kube {
namespace {

bool peek_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Past the closing quote of the string whose opening quote is at `at`, or
// text.size() when it does not close; escaped tells whether it held '\'.
std::size_t peek_string_end(std::string_view text, std::size_t at, bool* escaped) {
  *escaped = false;
  for (std::size_t i = at + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      *escaped = true;
      ++i;
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return text.size();
}

// A string member's value as JSON decodes it (the quoted token, escapes
// and all, parsed alone), or as sent when it does not decode.
std::string peek_decoded(std::string_view token, bool escaped, bool* cut) {
  std::string out;
  if (escaped) {
    nlohmann::json s = nlohmann::json::parse(token, nullptr, /*allow_exceptions=*/false);
    if (s.is_string()) out = s.get<std::string>();
  }
  if (out.empty()) out = std::string(token.substr(1, token.size() >= 2 ? token.size() - 2 : 0));
  if (out.size() > kRefusedIdentityBytesMax) {
    out.resize(kRefusedIdentityBytesMax);
    *cut = true;
  }
  return out;
}

bool is_dns_name(std::string_view s, std::size_t max, bool dots) {
  if (s.empty() || s.size() > max) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (alnum(c) || c == '-') continue;
    if (!dots || c != '.' || s[i - 1] == '.' || s[i - 1] == '-' || s[i + 1] == '-') return false;
  }
  return true;
}

constexpr std::size_t kRefusedNamespaceBytesMax = 63;
constexpr std::size_t kRefusedNameBytesMax = 253;
constexpr std::size_t kRefusedUidBytesMax = 64;

}  // namespace

std::string_view refusal_label(RefusalReason reason) {
  switch (reason) {
    case RefusalReason::kTooDeep:
      return "too_deep";
    case RefusalReason::kTooLarge:
      return "too_large";
    case RefusalReason::kMalformed:
      break;
  }
  return "malformed";
}

std::string refusal_limit_text(RefusalReason reason) {
  switch (reason) {
    case RefusalReason::kTooDeep:
      return "objects and arrays nested more than " + std::to_string(kKubeObjectDepthMax) +
             " levels deep; flatten the field that nests them (in an Agent, spec.runtime.volumes "
             "is the one free-form field)";
    case RefusalReason::kTooLarge:
      return "more than " + std::to_string(kKubeObjectBytesMax) +
             " bytes of JSON; shorten the object's largest fields";
    case RefusalReason::kMalformed:
      break;
  }
  return "not one well-formed JSON object; rewrite the object with kubectl apply";
}

std::optional<RefusalReason> refusal_for(const ObjectShape& shape) {
  if (shape.bytes > kKubeObjectBytesMax) return RefusalReason::kTooLarge;
  if (shape.depth > kKubeObjectDepthMax) return RefusalReason::kTooDeep;
  return std::nullopt;
}

ObjectShape measure_object_text(std::string_view text) {
  NestingTracker nesting;
  for (const char c : text) nesting.take(c);
  return ObjectShape{text.size(), nesting.deepest};
}

std::optional<RefusalReason> refusal_of_text(std::string_view text) {
  if (auto refused = refusal_for(measure_object_text(text))) return refused;
  if (text.empty() || text.front() != '{' || !nlohmann::json::accept(text)) {
    return RefusalReason::kMalformed;
  }
  return std::nullopt;
}

// One pass over the top-level object: keys at depth 1 and 2 are
// remembered, so a string value at depth 2 inside "metadata" is known by
// its key. Nothing recurses: any depth costs the same per byte.
PeekedMetadata peek_metadata(std::string_view text) {
  PeekedMetadata out;
  int depth = 0;
  std::string_view key_at_1, key_at_2;
  bool in_metadata = false;
  for (std::size_t at = 0; at < text.size();) {
    const char c = text[at];
    if (c == '"') {
      bool escaped = false;
      const std::size_t end = peek_string_end(text, at, &escaped);
      const std::string_view token = text.substr(at, end - at);
      std::size_t next = end;
      while (next < text.size() && peek_space(text[next])) ++next;
      const bool is_key = next < text.size() && text[next] == ':';
      const std::string_view plain =
          escaped ? std::string_view() : token.substr(1, token.size() - 2);
      if (is_key && depth == 1) key_at_1 = plain;
      if (is_key && depth == 2) key_at_2 = plain;
      if (!is_key && in_metadata && depth == 2 && end > at + 1 && text[end - 1] == '"') {
        std::string* member = key_at_2 == "name"              ? &out.name
                              : key_at_2 == "namespace"       ? &out.namespace_
                              : key_at_2 == "uid"             ? &out.uid
                              : key_at_2 == "resourceVersion" ? &out.resource_version
                                                              : nullptr;
        if (member != nullptr) *member = peek_decoded(token, escaped, &out.cut);
      }
      at = end;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
      if (depth == 2 && c == '{' && key_at_1 == "metadata") in_metadata = true;
    } else if (c == '}' || c == ']') {
      if (in_metadata && depth == 2) break;  // metadata's end: nothing more to read
      --depth;
    }
    ++at;
  }
  return out;
}

RefusedObject refused_object(std::string resource, RefusalReason reason,
                             std::string_view object_text) {
  RefusedObject out;
  out.resource = std::move(resource);
  out.reason = reason;
  out.metadata = peek_metadata(object_text);
  out.bytes = object_text.size();
  return out;
}

std::string shown(std::string_view raw) {
  std::string out;
  const std::size_t n = std::min(raw.size(), kShownBytesMax);
  for (std::size_t i = 0; i < n; ++i) {
    const auto byte = static_cast<unsigned char>(raw[i]);
    if (byte >= 0x20 && byte < 0x7f && byte != '"' && byte != '\\') {
      out += static_cast<char>(byte);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    }
  }
  if (raw.size() > n) out += "...";
  return out;
}

std::string shown_key(const PeekedMetadata& metadata) {
  if (metadata.name.empty()) return "(unnamed)";
  if (metadata.namespace_.empty()) return shown(metadata.name);
  return shown(metadata.namespace_) + "/" + shown(metadata.name);
}

bool addressable(const PeekedMetadata& metadata) {
  if (metadata.cut || !is_dns_name(metadata.namespace_, kRefusedNamespaceBytesMax, false) ||
      !is_dns_name(metadata.name, kRefusedNameBytesMax, true)) {
    return false;
  }
  if (metadata.uid.empty() || metadata.uid.size() > kRefusedUidBytesMax) return false;
  for (const char c : metadata.uid) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-')) return false;
  }
  return true;
}

std::string store_key(const PeekedMetadata& metadata) {
  if (metadata.name.empty() || metadata.cut) return "";
  return metadata.namespace_.empty() ? metadata.name : metadata.namespace_ + "/" + metadata.name;
}

void log_refusal(const RefusedObject& refused, std::string_view where) {
  spdlog::warn(
      "event=object_refused resource={} object=\"{}\" uid=\"{}\" reason={} bytes={} in={} "
      "action=\"skipped; the others are read on. Limit: {}\"",
      refused.resource, shown_key(refused.metadata), shown(refused.metadata.uid),
      refusal_label(refused.reason), refused.bytes, where, refusal_limit_text(refused.reason));
}

}  // namespace hb::kube
