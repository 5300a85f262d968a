// Scheduled heartbeats with nothing to say are skipped, not failed (an
// empty heartbeat.md): an empty resolved prompt, or a promptFrom
// ConfigMap or key that does not exist, lets the slot pass without a run or
// a Job, records it in status.lastSkippedHeartbeat and raises one
// HeartbeatSkipped Event when skipping begins or its reason changes. Pure
// steps of decide_agent; the shell reads the ConfigMap (needs_prompt_read).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "controllers/model/agent_spec.h"
#include "controllers/model/agent_status.h"
#include "controllers/model/event.h"

namespace hb::controllers {

struct RunRequest;

// While the last slot was skipped for a promptFrom, the ConfigMap is read
// again this often (the operator does not watch ConfigMaps), so a fixed
// prompt makes the Agent Ready again without waiting for the next slot.
inline constexpr std::chrono::seconds kPromptRecheckSeconds{60};
inline constexpr std::size_t kSkipMessageBytesMax = 1024;
inline constexpr const char* kEventHeartbeatSkipped = "HeartbeatSkipped";

// Why the prompt cannot be used.
struct PromptGap {
  std::string reason;  // kReasonPromptEmpty | kReasonPromptNotFound
  std::string message;
};

// What the shell found reading spec.heartbeat.promptFrom. `done` false:
// not read this pass (what was stored stands).
struct PromptRead {
  bool done = false;
  std::optional<PromptGap> gap;
};

// The pass must read the promptFrom ConfigMap: a scheduler slot is due
// whose run may be made (slot_run_due, due_slot_without_run), or the last
// slot was skipped (to see whether it is fixed).
bool needs_prompt_read(const AgentSpec& spec, const AgentStatus& stored, bool slot_run_due);

// The gap of an empty inline prompt, or the one the shell read.
std::optional<PromptGap> prompt_gap(const AgentSpec& spec, const PromptRead& read);

struct SkipPlan {
  bool skip_slot = false;                   // the decision's scheduled run is not made
  std::optional<SkippedHeartbeat> skipped;  // status.lastSkippedHeartbeat
  std::vector<Event> events;
};

SkipPlan plan_skip(const AgentSpec& spec, const std::optional<SkippedHeartbeat>& stored,
                   const PromptRead& read, const std::optional<RunRequest>& create_run);

// When to read the ConfigMap again: kPromptRecheckSeconds after now while a
// promptFrom skip stands, else nullopt.
std::optional<TimePoint> prompt_recheck_at(const AgentSpec& spec,
                                           const std::optional<SkippedHeartbeat>& skipped,
                                           TimePoint now);

}  // namespace hb::controllers
