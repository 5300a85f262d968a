// The operator-wide concurrency cap (--max-concurrent-runs): at most `cap`
// heartbeats run at once across every Agent the operator manages. Runs that
// would start beyond it wait Queued (reason ConcurrencyLimited) and start in
// the order of the time they were asked for (a scheduler run's slot), not in
// the order their agents happen to be reconciled. Pure: the shell
// (shell/concurrency_gate.h) keeps the fleet's counts and asks these.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "controllers/json_util.h"

namespace hb::controllers {

inline constexpr const char* kReasonConcurrencyLimited = "ConcurrencyLimited";
// A run held by the cap is looked at again this often, besides the wakeup
// the gate sends when a place frees (kept in memory only).
inline constexpr std::chrono::seconds kConcurrencyRecheck{60};
// The flag's bound: far above what one operator's API budget can start.
inline constexpr int64_t kMaxConcurrentRunsMax = 100000;

// One agent's run that wants to start. Agents start one run at a time, so an
// agent has at most one.
struct StartCandidate {
  std::string agent;  // "ns/name"
  std::string run;    // "ns/name"
  TimePoint order{};  // when it was asked for: earlier starts first
};

// Earlier `order` first; the agent key breaks ties, so the order is total.
bool starts_before(const StartCandidate& a, const StartCandidate& b);

struct Admission {
  bool admitted = false;
  int64_t ahead = 0;    // waiting candidates that start before this one
  std::string message;  // why it waits ("" when admitted)

  static Admission yes(int64_t ahead = 0) { return {true, ahead, {}}; }
  static Admission no(int64_t ahead, std::string message) {
    return {false, ahead, std::move(message)};
  }
};

// Whether `candidate` may start now: a place is free (`in_use` < `cap`) and
// fewer candidates that start before it wait than there are free places.
// `waiting_in_order` is sorted by starts_before and may hold the candidate
// itself (it is not counted). cap <= 0: no cap.
Admission admit_start(int64_t cap, int64_t in_use,
                      const std::vector<const StartCandidate*>& waiting_in_order,
                      const StartCandidate& candidate);

// The waiting agents to wake when places free up: the first (cap - in_use)
// in order (each then asks admit_start again).
std::vector<std::string> agents_to_wake(int64_t cap, int64_t in_use,
                                        const std::vector<const StartCandidate*>& waiting_in_order);

}  // namespace hb::controllers
