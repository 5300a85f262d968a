// Deterministic names for scheduler-created HeartbeatRuns.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "controllers/schedule/utc_time.h"

namespace hb::schedule {

// A DNS-1123 label: the run name is reused for the Job, whose name also
// becomes a label value and a pod-name prefix, all limited to 63 characters.
inline constexpr std::size_t kRunNameCharsMax = 63;
inline constexpr std::size_t kRunNameHashChars = 8;

// Format: "<agent>-<unix seconds of slot>", e.g. "news-bot-1709208000".
// Seconds, not the minutes of CronJob, because interval slots can be 30s
// apart. The same (agent, slot) always gives the same name, so a crash or a
// second replica gets AlreadyExists instead of creating a duplicate run.
// When the agent name is too long or holds characters a label may not
// ('.' is legal in an agent name), the form is
// "<agent prefix>-<8 hex FNV-1a of the full agent name>-<seconds>": the
// prefix keeps the name readable, the hash keeps distinct agents distinct.
std::string scheduled_run_name(std::string_view agent_name, TimePoint slot);

// RFC 1123 label: 1-63 of [a-z0-9-], starting and ending alphanumeric.
bool is_dns1123_label(std::string_view name);

}  // namespace hb::schedule
