// The watcher's transitions, one row each: from a phase, an action's
// outcome, to the next state and what the informer does about it.
#include "kube/watcher_state.h"

#include <gtest/gtest.h>

namespace hb::kube {
namespace {

constexpr auto kEmpty = WatcherPhase::kEmpty;
constexpr auto kListed = WatcherPhase::kListed;
constexpr auto kWatching = WatcherPhase::kWatching;
constexpr auto kNone = WatcherWait::kNone;
constexpr auto kBackoff = WatcherWait::kBackoff;
constexpr auto kRecheck = WatcherWait::kAbsentRecheck;

// Each step has one effect besides its state and wait.
enum class Effect { kListed, kResetBackoff, kGone, kAbsent, kCountError };

struct Row {
  const char* what;
  WatcherPhase from;
  std::optional<ErrorKind> error;  // nullopt: the action succeeded
  bool optional_resource;
  WatcherPhase to;
  const char* resource_version;  // after the step
  WatcherWait wait;
  Effect effect;
};

// The state before each row's action: "3" before a list, a list at "7" after.
WatcherState before(WatcherPhase phase) {
  return WatcherState{phase, phase == kEmpty ? "3" : "7"};
}

using E = ErrorKind;
using F = Effect;
constexpr bool kOpt = true;   // an optional resource
constexpr bool kReq = false;  // a required one

// clang-format off
const Row kRows[] = {
  // what                                   from       error             opt   to         rv   wait      effect
  {"list in the cache",                     kEmpty,    std::nullopt,     kReq, kListed,   "9", kNone,    F::kListed},
  {"list refused 410",                      kEmpty,    E::kGone,         kReq, kEmpty,    "3", kNone,    F::kGone},
  {"list fails (5xx)",                      kEmpty,    E::kServerError,  kReq, kEmpty,    "3", kBackoff, F::kCountError},
  {"list of a required resource 404",       kEmpty,    E::kNotFound,     kReq, kEmpty,    "3", kBackoff, F::kCountError},
  {"list of an optional resource 404",      kEmpty,    E::kNotFound,     kOpt, kEmpty,    "",  kRecheck, F::kAbsent},
  {"list of an optional resource 403",      kEmpty,    E::kForbidden,    kOpt, kEmpty,    "",  kRecheck, F::kAbsent},
  {"list answer malformed",                 kEmpty,    E::kMalformed,    kReq, kEmpty,    "3", kBackoff, F::kCountError},
  {"first watch ends by timeout",           kListed,   std::nullopt,     kReq, kWatching, "7", kNone,    F::kResetBackoff},
  {"watch ends by timeout",                 kWatching, std::nullopt,     kReq, kWatching, "7", kNone,    F::kResetBackoff},
  {"first watch 410",                       kListed,   E::kGone,         kReq, kEmpty,    "7", kNone,    F::kGone},
  {"watch 410 (status or ERROR event)",     kWatching, E::kGone,         kReq, kEmpty,    "7", kNone,    F::kGone},
  {"watch drops (transport)",               kWatching, E::kTransport,    kReq, kWatching, "7", kBackoff, F::kCountError},
  {"first watch drops (transport)",         kListed,   E::kTransport,    kReq, kListed,   "7", kBackoff, F::kCountError},
  {"watch stream broken mid-event",         kWatching, E::kMalformed,    kReq, kEmpty,    "7", kBackoff, F::kCountError},
  {"watch of a required resource 404",      kWatching, E::kNotFound,     kReq, kWatching, "7", kBackoff, F::kCountError},
  {"optional resource's CRD deleted",       kWatching, E::kNotFound,     kOpt, kEmpty,    "7", kBackoff, F::kCountError},
  {"optional resource's grant withdrawn",   kListed,   E::kForbidden,    kOpt, kEmpty,    "7", kBackoff, F::kCountError},
};
// clang-format on

TEST(WatcherState, EachPhaseHasOneAction) {
  EXPECT_EQ(watcher_action(kEmpty), WatcherAction::kList);
  EXPECT_EQ(watcher_action(kListed), WatcherAction::kWatch);
  EXPECT_EQ(watcher_action(kWatching), WatcherAction::kWatch);
}

TEST(WatcherState, Transitions) {
  for (const Row& row : kRows) {
    WatcherOutcome outcome{row.error, row.error ? "" : "9"};
    const WatcherStep got = step_watcher(before(row.from), outcome, row.optional_resource);
    WatcherStep want;
    want.state = WatcherState{row.to, row.resource_version};
    want.wait = row.wait;
    want.listed = row.effect == F::kListed;
    want.reset_backoff = row.effect == F::kResetBackoff;
    want.gone = row.effect == F::kGone;
    want.absent = row.effect == F::kAbsent;
    want.count_error = row.effect == F::kCountError;
    EXPECT_EQ(got, want) << row.what;
  }
}

// Every failure either relists at once (410), waits out the recheck (an
// optional resource not served) or backs off and is counted: never a tight loop.
TEST(WatcherState, NoFailureLoopsWithoutWaiting) {
  for (WatcherPhase from : {kEmpty, kListed, kWatching}) {
    for (int k = 0; k <= static_cast<int>(ErrorKind::kOther); ++k) {
      for (bool optional : {false, true}) {
        const auto kind = static_cast<ErrorKind>(k);
        const WatcherStep step = step_watcher(before(from), WatcherOutcome{kind, ""}, optional);
        EXPECT_TRUE(step.gone || step.wait != kNone) << to_string(kind);
        EXPECT_EQ(step.count_error, step.wait == kBackoff) << to_string(kind);
        EXPECT_FALSE(step.listed);
        EXPECT_FALSE(step.reset_backoff);
      }
    }
  }
}

}  // namespace
}  // namespace hb::kube
