#include "controllers/json_util.h"

#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>

namespace hb::controllers {

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

std::string_view string_view_at(const Json& object, std::string_view path,
                                std::string_view fallback) {
  const Json* value = find_path(object, path);
  if (value == nullptr || !value->is_string()) return fallback;
  return value->get_ref<const std::string&>();
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

namespace {

bool parse_digits(std::string_view text, size_t pos, size_t count, int& out) {
  if (pos + count > text.size()) return false;
  int value = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    value = value * 10 + (text[i] - '0');
  }
  out = value;
  return true;
}

}  // namespace

std::optional<TimePoint> parse_rfc3339(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (text.size() < 20) return std::nullopt;
  if (!parse_digits(text, 0, 4, year) || text[4] != '-' || !parse_digits(text, 5, 2, month) ||
      text[7] != '-' || !parse_digits(text, 8, 2, day) || (text[10] != 'T' && text[10] != 't') ||
      !parse_digits(text, 11, 2, hour) || text[13] != ':' || !parse_digits(text, 14, 2, minute) ||
      text[16] != ':' || !parse_digits(text, 17, 2, second)) {
    return std::nullopt;
  }
  size_t pos = 19;
  std::chrono::nanoseconds fraction{0};
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int64_t nanos = 0;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 9) {
        nanos = nanos * 10 + (text[pos] - '0');
        ++digits;
      }
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (int i = digits; i < 9; ++i) nanos *= 10;
    fraction = std::chrono::nanoseconds(nanos);
  }
  if (pos >= text.size()) return std::nullopt;
  std::chrono::seconds offset{0};
  if (text[pos] == 'Z' || text[pos] == 'z') {
    ++pos;
  } else if (text[pos] == '+' || text[pos] == '-') {
    int oh = 0, om = 0;
    if (!parse_digits(text, pos + 1, 2, oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !parse_digits(text, pos + 4, 2, om)) {
      return std::nullopt;
    }
    offset = std::chrono::hours(oh) + std::chrono::minutes(om);
    if (text[pos] == '-') offset = -offset;
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year(year),
                                        std::chrono::month(static_cast<unsigned>(month)),
                                        std::chrono::day(static_cast<unsigned>(day))};
  // Years outside 1970..2200 are no time this operator meets (a Lease
  // renewTime in 2262 would silence the stall watchdog); they also keep
  // every later duration sum far from the clock's 2262 overflow.
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60 || year < kYearMin || year > kYearMax) {
    return std::nullopt;
  }
  const auto days = std::chrono::sys_days(ymd);
  TimePoint t = std::chrono::time_point_cast<TimePoint::duration>(days + std::chrono::hours(hour) +
                                                                  std::chrono::minutes(minute) +
                                                                  std::chrono::seconds(second));
  t += std::chrono::duration_cast<TimePoint::duration>(fraction);
  t -= offset;
  return t;
}

std::string object_key(const Json& object) {
  return object_key(string_at(object, "metadata/namespace"), string_at(object, "metadata/name"));
}

std::string object_key(std::string_view ns, std::string_view name) {
  std::string key;
  key.reserve(ns.size() + name.size() + 1);
  key.append(ns).append("/").append(name);
  return key;
}

int64_t resource_version_number(const Json& object) {
  const std::string text = string_at(object, "metadata/resourceVersion");
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return 0;
  return value;
}

}  // namespace hb::controllers
