// An Event the reconcilers want recorded: decided by the pure code, written
// by the shell (core/v1 Event, CamelCase reason, never a secret).
#pragma once

#include <string>

namespace hb::controllers {

enum class EventTarget { kAgent, kRun };

struct Event {
  EventTarget target = EventTarget::kAgent;
  std::string object_name;  // agent or run name (same namespace)
  bool warning = false;
  std::string reason;  // CamelCase
  std::string message;
  // Routine events (a run created, a run succeeded) are only written when the
  // operator runs with --routine-events: each Event is one API write.
  bool routine = false;
};

}  // namespace hb::controllers
