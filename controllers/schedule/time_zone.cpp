#include "controllers/schedule/time_zone.h"

#include <date/tz.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "api/hb_assert.h"

namespace hb::schedule {
namespace {

bool iana_characters(std::string_view name) {
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '/' || c == '_' || c == '-' || c == '+';
  });
}

}  // namespace

ParseResult<const date::time_zone*> find_time_zone(std::string_view name, std::string_view field) {
  using Result = ParseResult<const date::time_zone*>;
  if (name.empty() || name == "UTC") return Result::success(nullptr);
  const auto fail = [&](std::string_view problem) {
    std::string message(field);
    message.append(" \"").append(name.substr(0, kTimeZoneNameBytesMax)).append("\": ");
    message.append(problem).append(
        "; use an IANA name such as Europe/Berlin, America/New_York or UTC");
    return Result::failure(std::move(message));
  };
  if (name.size() > kTimeZoneNameBytesMax || !iana_characters(name) || name.front() == '/' ||
      name.find("..") != std::string_view::npos) {
    return fail("is not a time zone name");
  }
  try {
    const date::time_zone* zone = date::locate_zone(name);
    HB_ASSERT_MSG(zone != nullptr, "the tz library throws for a name it does not know");
    return Result::success(zone);
  } catch (const std::exception&) {
    return fail("unknown time zone");
  }
}

}  // namespace hb::schedule
