#include "controllers/schedule/cron.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <vector>

#include "api/hb_assert.h"
#include "controllers/schedule/cron_zoned.h"
#include "controllers/schedule/stable_hash.h"

namespace hb::schedule {
namespace {

using std::chrono::days;
using std::chrono::minutes;
using std::chrono::sys_days;

constexpr int kMinutesPerDay = 24 * 60;
// Numbers longer than this are out of range in every field; the cap keeps
// parsing free of integer overflow.
constexpr std::size_t kCronNumberDigitsMax = 3;
constexpr int kCronSearchDaysMax = kCronSearchYearsMax * 366;

constexpr std::array<std::string_view, 12> kMonthNames = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                          "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<std::string_view, 7> kDayNames = {"SUN", "MON", "TUE", "WED",
                                                       "THU", "FRI", "SAT"};

struct FieldSpec {
  std::string_view name;
  int min;
  int max;
  // The highest value a bare H or H/n picks: day-of-month stops at 28 so a
  // hashed day exists in every month (as Jenkins does), day-of-week at 6 so
  // Sunday is not twice as likely.
  int hash_max;
  const std::string_view* names = nullptr;  // names[i] has value names_base + i
  int name_count = 0;
  int names_base = 0;
  std::string_view names_hint = {};
};

const FieldSpec kFields[5] = {
    {"minute", 0, 59, 59},
    {"hour", 0, 23, 23},
    {"day-of-month", 1, 31, 28},
    {"month", 1, 12, 12, kMonthNames.data(), 12, 1, "month name (JAN-DEC)"},
    // 7 is accepted as a second Sunday, as in Vixie cron.
    {"day-of-week", 0, 7, 6, kDayNames.data(), 7, 0, "day name (SUN-SAT)"},
};

struct Macro {
  std::string_view name;
  std::string_view fields;
};

constexpr Macro kMacros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

bool is_space(char c) {
  return c == ' ' || c == '\t';
}
bool is_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}
bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) !=
        std::toupper(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}
std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = s.find(sep, start);
    parts.push_back(
        s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) {
      HB_ASSERT_MSG(parts.size() <= s.size() + 1, "one more part than separators at most");
      return parts;
    }
    start = at + 1;
  }
}
std::vector<std::string_view> split_whitespace(std::string_view s) {
  std::vector<std::string_view> parts;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const std::size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > start) parts.push_back(s.substr(start, i - start));
  }
  HB_ASSERT_MSG(parts.size() * 2 <= s.size() + 1, "parts are separated by whitespace");
  return parts;
}

// A number or a name of `spec`, checked against its range. Sets `error`
// (without the schedule prefix) on failure.
std::optional<int> parse_value(std::string_view token, const FieldSpec& spec, std::string& error) {
  int value = 0;
  if (is_digits(token)) {
    if (token.size() > kCronNumberDigitsMax) {
      value = spec.max + 1;  // certainly out of range; reported below
    } else {
      for (char c : token) value = value * 10 + (c - '0');
    }
  } else {
    bool found = false;
    for (int i = 0; i < spec.name_count; ++i) {
      if (iequals(token, spec.names[i])) {
        value = spec.names_base + i;
        found = true;
        break;
      }
    }
    if (!found) {
      error = std::string(spec.name) + " \"" + std::string(token) + "\" is not a number";
      if (spec.name_count > 0) error += " or " + std::string(spec.names_hint);
      return std::nullopt;
    }
  }
  if (value < spec.min || value > spec.max) {
    error = std::string(spec.name) + " " + std::string(token) + " out of range " +
            std::to_string(spec.min) + "-" + std::to_string(spec.max);
    return std::nullopt;
  }
  HB_ASSERT_MSG(error.empty(), "a value parsed leaves no error");
  return value;
}

// The step after '/', 1..span.
std::optional<int> parse_step(std::string_view step_text, int span, const std::string& field,
                              std::string& error) {
  HB_ASSERT_MSG(span >= 1, "a field spans at least one value");
  if (!is_digits(step_text)) {
    error = field + " step \"" + std::string(step_text) + "\" is not a number";
    return std::nullopt;
  }
  const int step =
      step_text.size() > kCronNumberDigitsMax ? span + 1 : std::stoi(std::string(step_text));
  if (step < 1 || step > span) {
    error = field + " step " + std::string(step_text) + " out of range 1-" + std::to_string(span);
    return std::nullopt;
  }
  return step;
}

// Jenkins' H: "H" (one hashed value), "H/n" (every n from a hashed start),
// "H(a-b)" (one hashed value in a..b), "H(a-b)/n" (every n in a..b from a
// hashed start). `hash` is this field's stable_hash.
bool parse_hashed(std::string_view element, const FieldSpec& spec, uint64_t hash,
                  std::vector<bool>& bits, std::string& error) {
  const std::string field(spec.name);
  const std::size_t slash = element.find('/');
  std::string_view range = element.substr(1, slash == std::string_view::npos ? slash : slash - 1);
  int low = spec.min;
  int high = spec.hash_max;
  if (!range.empty()) {
    if (range.size() < 2 || range.front() != '(' || range.back() != ')' ||
        range.find('-') == std::string_view::npos) {
      error = field + " \"" + std::string(element) +
              "\": H takes an optional range in parentheses, e.g. H(0-29) or H(0-29)/10";
      return false;
    }
    range = range.substr(1, range.size() - 2);
    const std::size_t dash = range.find('-');
    const auto lo = parse_value(range.substr(0, dash), spec, error);
    if (!lo) return false;
    const auto hi = parse_value(range.substr(dash + 1), spec, error);
    if (!hi) return false;
    if (*lo > *hi) {
      error =
          field + " range " + std::string(range) + " is backwards; write the smaller value first";
      return false;
    }
    low = *lo;
    high = *hi;
  }
  const int span = high - low + 1;
  HB_ASSERT_MSG(spec.min <= low && high <= spec.max && spec.hash_max <= spec.max &&
                    static_cast<std::size_t>(spec.max) < bits.size(),
                "a hashed value stays in its field's bits");
  if (slash == std::string_view::npos) {
    bits[static_cast<std::size_t>(low + static_cast<int>(hash % static_cast<uint64_t>(span)))] =
        true;
    return true;
  }
  const auto step = parse_step(element.substr(slash + 1), span, field, error);
  if (!step) return false;
  const int start = low + static_cast<int>(hash % static_cast<uint64_t>(*step));
  for (int v = start; v <= high; v += *step) bits[static_cast<std::size_t>(v)] = true;
  return true;
}

// Parses one comma-separated element into `bits` (indexed by value).
bool parse_element(std::string_view element, const FieldSpec& spec, uint64_t hash,
                   std::vector<bool>& bits, std::string& error) {
  const std::string field(spec.name);
  if (element.empty()) {
    error = field + " has an empty list element";
    return false;
  }
  if (element.front() == 'H') return parse_hashed(element, spec, hash, bits, error);
  const std::size_t slash = element.find('/');
  const std::string_view range = element.substr(0, slash);
  int step = 1;
  if (slash != std::string_view::npos) {
    const auto parsed =
        parse_step(element.substr(slash + 1), spec.max - spec.min + 1, field, error);
    if (!parsed) return false;
    step = *parsed;
  }
  int low = spec.min;
  int high = spec.max;
  if (range != "*") {
    const std::size_t dash = range.find('-');
    const auto lo = parse_value(range.substr(0, dash), spec, error);
    if (!lo) return false;
    low = *lo;
    if (dash != std::string_view::npos) {
      const auto hi = parse_value(range.substr(dash + 1), spec, error);
      if (!hi) return false;
      high = *hi;
      if (low > high) {
        error =
            field + " range " + std::string(range) + " is backwards; write the smaller value first";
        return false;
      }
    } else if (slash == std::string_view::npos) {
      high = low;  // a single value; "a/n" keeps high = max
    }
  }
  HB_ASSERT_MSG(spec.min <= low && high <= spec.max && step >= 1 &&
                    static_cast<std::size_t>(spec.max) < bits.size(),
                "a parsed range stays in its field's bits");
  for (int v = low; v <= high; v += step) bits[static_cast<std::size_t>(v)] = true;
  return true;
}

template <std::size_t N>
bool parse_field(std::string_view text, const FieldSpec& spec, uint64_t hash, std::bitset<N>& out,
                 std::string& error) {
  HB_ASSERT_MSG(spec.min >= 0 && spec.min <= spec.max && spec.max <= static_cast<int>(N),
                "a field's values fit its bitset (day-of-week 7 folds onto 0)");
  std::vector<bool> bits(static_cast<std::size_t>(spec.max) + 1, false);
  for (std::string_view element : split(text, ',')) {
    if (!parse_element(element, spec, hash, bits, error)) return false;
  }
  for (std::size_t v = 0; v < bits.size(); ++v) {
    // Day-of-week 7 is Sunday, bit 0; other fields fit their bitset exactly.
    if (bits[v]) out.set(v % N);
  }
  return true;
}

bool day_matches(const CronSchedule& cron, sys_days day) {
  const std::chrono::year_month_day ymd{day};
  HB_ASSERT(ymd.ok());
  if (!cron.months.test(static_cast<unsigned>(ymd.month()))) return false;
  const bool dom = cron.days_of_month.test(static_cast<unsigned>(ymd.day()));
  const bool dow = cron.days_of_week.test(std::chrono::weekday{day}.c_encoding());
  if (cron.dom_star || cron.dow_star) return dom && dow;
  return dom || dow;
}

// First matching minute of the day at or after `from` (minutes since midnight).
std::optional<int> first_time_from(const CronSchedule& cron, int from) {
  HB_ASSERT(from >= 0 && from < kMinutesPerDay);
  for (int h = from / 60; h < 24; ++h) {
    if (!cron.hours.test(static_cast<std::size_t>(h))) continue;
    for (int m = (h == from / 60 ? from % 60 : 0); m < 60; ++m) {
      if (cron.minutes.test(static_cast<std::size_t>(m))) return h * 60 + m;
    }
  }
  return std::nullopt;
}

// Last matching minute of the day at or before `until` (minutes since midnight).
std::optional<int> last_time_until(const CronSchedule& cron, int until) {
  HB_ASSERT(until >= 0 && until < kMinutesPerDay);
  for (int h = until / 60; h >= 0; --h) {
    if (!cron.hours.test(static_cast<std::size_t>(h))) continue;
    for (int m = (h == until / 60 ? until % 60 : 59); m >= 0; --m) {
      if (cron.minutes.test(static_cast<std::size_t>(m))) return h * 60 + m;
    }
  }
  return std::nullopt;
}

}  // namespace

ParseResult<CronSchedule> parse_cron(std::string_view text, std::string_view field,
                                     std::string_view hash_key) {
  const std::string_view trimmed = trim(text);
  const auto fail = [&](const std::string& problem) {
    std::string message;
    message.append(field).append(" \"").append(trimmed).append("\": ").append(problem);
    return ParseResult<CronSchedule>::failure(std::move(message));
  };
  if (trimmed.empty()) {
    return fail(
        "is empty; use 5 fields (minute hour day-of-month month day-of-week) or a macro such as "
        "@daily");
  }
  if (trimmed.starts_with("TZ=") || trimmed.starts_with("CRON_TZ=")) {
    return fail("a TZ= prefix is not supported; set spec.heartbeat.timeZone (an IANA name)");
  }

  std::string_view fields_text = trimmed;
  if (trimmed.front() == '@') {
    const std::string_view name = split_whitespace(trimmed).front();
    if (iequals(name, "@every")) {
      return fail("@every is not supported; use spec.heartbeat.interval for a fixed interval");
    }
    const Macro* macro = nullptr;
    for (const Macro& m : kMacros) {
      if (iequals(name, m.name)) macro = &m;
    }
    if (macro == nullptr || name.size() != trimmed.size()) {
      return fail("unknown macro \"" + std::string(trimmed) +
                  "\"; use @hourly, @daily, @midnight, @weekly, @monthly, @yearly or @annually");
    }
    fields_text = macro->fields;
  }

  const std::vector<std::string_view> parts = split_whitespace(fields_text);
  if (parts.size() != 5) {
    std::string problem = "expected 5 fields (minute hour day-of-month month day-of-week), got " +
                          std::to_string(parts.size());
    if (parts.size() == 6) problem += "; a seconds field is not supported";
    return fail(problem);
  }

  CronSchedule cron;
  cron.text = std::string(trimmed);
  std::string error;
  const auto hash = [&](uint64_t field_index) { return stable_hash(hash_key, field_index); };
  if (!parse_field(parts[0], kFields[0], hash(0), cron.minutes, error) ||
      !parse_field(parts[1], kFields[1], hash(1), cron.hours, error) ||
      !parse_field(parts[2], kFields[2], hash(2), cron.days_of_month, error) ||
      !parse_field(parts[3], kFields[3], hash(3), cron.months, error) ||
      !parse_field(parts[4], kFields[4], hash(4), cron.days_of_week, error)) {
    return fail(error);
  }
  cron.dom_star = parts[2].front() == '*';
  cron.dow_star = parts[4].front() == '*';
  HB_ASSERT_MSG(error.empty() && !cron.text.empty(), "a parsed schedule keeps its text");
  return ParseResult<CronSchedule>::success(std::move(cron));
}

bool cron_matches(const CronSchedule& cron, TimePoint t) {
  const auto minute = std::chrono::floor<minutes>(t);
  const auto day = std::chrono::floor<days>(minute);
  const auto of_day = static_cast<std::size_t>((minute - day).count());
  HB_ASSERT(of_day < static_cast<std::size_t>(kMinutesPerDay));
  return day_matches(cron, day) && cron.hours.test(of_day / 60) && cron.minutes.test(of_day % 60);
}

// Walks day by day: at most kCronSearchDaysMax cheap day checks, and the
// minute scan runs only on matching days. Simple, and fast enough for the
// handful of calls a reconcile makes.
std::optional<TimePoint> next_after(const CronSchedule& cron, TimePoint t) {
  const std::optional<TimePoint> next =
      cron.zone != nullptr ? next_after_zoned(cron, t) : next_after_in_utc(cron, t);
  HB_ASSERT_MSG(!next || *next > t, "the next fire time is after t, in any zone");
  return next;
}

std::optional<TimePoint> latest_at_or_before(const CronSchedule& cron, TimePoint t) {
  const std::optional<TimePoint> latest = cron.zone != nullptr
                                              ? latest_at_or_before_zoned(cron, t)
                                              : latest_at_or_before_in_utc(cron, t);
  HB_ASSERT_MSG(!latest || *latest <= t, "the latest fire time is at or before t, in any zone");
  return latest;
}

std::optional<TimePoint> next_after_in_utc(const CronSchedule& cron, TimePoint t) {
  const auto start = std::chrono::floor<minutes>(t) + minutes{1};
  const sys_days first_day = std::chrono::floor<days>(start);
  int from = static_cast<int>((start - first_day).count());
  for (int i = 0; i <= kCronSearchDaysMax; ++i, from = 0) {
    const sys_days day = first_day + days{i};
    if (!day_matches(cron, day)) continue;
    if (const auto m = first_time_from(cron, from)) {
      HB_ASSERT_MSG(day + minutes{*m} > t, "the next fire time is after t");
      return day + minutes{*m};
    }
  }
  return std::nullopt;
}

std::optional<TimePoint> latest_at_or_before_in_utc(const CronSchedule& cron, TimePoint t) {
  const auto start = std::chrono::floor<minutes>(t);
  const sys_days first_day = std::chrono::floor<days>(start);
  int until = static_cast<int>((start - first_day).count());
  for (int i = 0; i <= kCronSearchDaysMax; ++i, until = kMinutesPerDay - 1) {
    const sys_days day = first_day - days{i};
    if (!day_matches(cron, day)) continue;
    if (const auto m = last_time_until(cron, until)) {
      HB_ASSERT_MSG(day + minutes{*m} <= t, "the latest fire time is at or before t");
      return day + minutes{*m};
    }
  }
  return std::nullopt;
}

bool can_ever_match(const CronSchedule& cron) {
  if (cron.minutes.none() || cron.hours.none() || cron.months.none()) return false;
  // With day-of-week free, only the day of month restricts days: some chosen
  // month must have some chosen day. Every month has every weekday, so any
  // other combination fires eventually.
  if (!(cron.dow_star && !cron.dom_star)) return true;
  constexpr unsigned kDaysInMonthMax[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  // One entry per month bit, and every day tested has a bit.
  static_assert(std::size(kDaysInMonthMax) == decltype(CronSchedule::months)().size());
  static_assert(std::ranges::max(kDaysInMonthMax) < decltype(CronSchedule::days_of_month)().size());
  for (unsigned month = 1; month <= 12; ++month) {
    if (!cron.months.test(month)) continue;
    for (unsigned day = 1; day <= kDaysInMonthMax[month]; ++day) {
      if (cron.days_of_month.test(day)) return true;
    }
  }
  return false;
}

}  // namespace hb::schedule
