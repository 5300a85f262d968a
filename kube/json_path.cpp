#include "kube/json_path.h"

#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <utility>

namespace hb::kube {

const Json* find_path(const Json& object, std::string_view path) {
  const Json* current = &object;
  while (!path.empty()) {
    if (!current->is_object()) return nullptr;
    const size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    auto it = current->find(part);  // heterogeneous lookup: no allocation
    if (it == current->end()) return nullptr;
    current = &*it;
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  return current->is_null() ? nullptr : current;
}

std::string string_at(const Json& object, std::string_view path, std::string_view fallback) {
  const Json* value = find_path(object, path);
  if (value == nullptr || !value->is_string()) return std::string(fallback);
  return value->get<std::string>();
}

std::vector<std::string> string_array_at(const Json& object, std::string_view path) {
  std::vector<std::string> out;
  const Json* value = find_path(object, path);
  if (value == nullptr || !value->is_array()) return out;
  for (const Json& item : *value) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

std::string_view string_view_at(const Json& object, std::string_view path,
                                std::string_view fallback) {
  const Json* value = find_path(object, path);
  if (value == nullptr || !value->is_string()) return fallback;
  return value->get_ref<const std::string&>();
}

std::string_view annotation_at(const Json& object, std::string_view key) {
  const Json* annotations = find_path(object, "metadata/annotations");
  if (annotations == nullptr || !annotations->is_object()) return {};
  const auto it = annotations->find(key);
  if (it == annotations->end() || !it->is_string()) return {};
  return it->get_ref<const std::string&>();
}

int64_t saturating_int64(double value) {
  // 2^63 is exact in a double; every double below it converts without UB.
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (std::isnan(value)) return 0;
  if (value >= kTwoTo63) return INT64_MAX;
  if (value < -kTwoTo63) return INT64_MIN;
  return static_cast<int64_t>(value);
}

std::optional<int64_t> int_at(const Json& object, std::string_view path) {
  const Json* value = find_path(object, path);
  if (value == nullptr || !value->is_number()) return std::nullopt;
  if (value->is_number_unsigned()) {
    // Saturates: a count past INT64_MAX is not wrapped into a negative one.
    const uint64_t u = value->get<uint64_t>();
    return u > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(u);
  }
  if (value->is_number_float()) return saturating_int64(value->get<double>());
  return value->get<int64_t>();
}

std::optional<double> number_at(const Json& object, std::string_view path) {
  const Json* value = find_path(object, path);
  if (value == nullptr || !value->is_number()) return std::nullopt;
  return value->get<double>();
}

bool bool_at(const Json& object, std::string_view path, bool fallback) {
  const Json* value = find_path(object, path);
  if (value == nullptr || !value->is_boolean()) return fallback;
  return value->get<bool>();
}

std::optional<TimePoint> time_at(const Json& object, std::string_view path) {
  const Json* value = find_path(object, path);
  if (value == nullptr || !value->is_string()) return std::nullopt;
  return parse_rfc3339(value->get_ref<const std::string&>());
}

bool same_json(const Json& a, const Json& b) {
  if (a.type() != b.type()) {
    // Signed and unsigned integers of the same value print the same.
    if (!a.is_number_integer() || !b.is_number_integer()) return false;
    const Json& u = a.is_number_unsigned() ? a : b;
    const int64_t v = (a.is_number_unsigned() ? b : a).get<int64_t>();
    return v >= 0 && static_cast<uint64_t>(v) == u.get<uint64_t>();
  }
  switch (a.type()) {
    case Json::value_t::object: {
      if (a.size() != b.size()) return false;
      for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
        if (ia.key() != ib.key() || !same_json(*ia, *ib)) return false;
      }
      return true;
    }
    case Json::value_t::array: {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!same_json(a[i], b[i])) return false;
      }
      return true;
    }
    case Json::value_t::number_float:
      return std::bit_cast<uint64_t>(a.get<double>()) == std::bit_cast<uint64_t>(b.get<double>());
    default:
      return a == b;
  }
}

std::string object_key(const Json& object) {
  return object_key(string_at(object, "metadata/namespace"), string_at(object, "metadata/name"));
}

std::string namespace_of_key(std::string_view key) {
  return std::string(key.substr(0, key.find('/')));
}

std::string object_key(std::string_view ns, std::string_view name) {
  std::string key;
  key.reserve(ns.size() + name.size() + 1);
  key.append(ns).append("/").append(name);
  return key;
}

std::string name_of(const Json& object) {
  return string_at(object, "metadata/name");
}

std::string namespace_of(const Json& object) {
  return string_at(object, "metadata/namespace");
}

bool owned_by(const Json& object, std::string_view uid) {
  const Json* owners = find_path(object, "metadata/ownerReferences");
  if (owners == nullptr || !owners->is_array()) return false;
  for (const Json& owner : *owners) {
    if (string_at(owner, "uid") == uid) return true;
  }
  return false;
}

const Json* find_named(const std::vector<Json>& objects, std::string_view name) {
  for (const Json& object : objects) {
    if (string_at(object, "metadata/name") == name) return &object;
  }
  return nullptr;
}

Json* find_named(std::vector<Json>& objects, std::string_view name) {
  return const_cast<Json*>(find_named(std::as_const(objects), name));
}

int64_t resource_version_number(const Json& object) {
  const std::string text = string_at(object, "metadata/resourceVersion");
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return 0;
  return value;
}

}  // namespace hb::kube
