#include "controllers/agent/prompt_skip.h"

#include "api/hb_assert.h"
#include "api/utf8.h"
#include "controllers/agent/agent_decision.h"
#include "controllers/run/run_status.h"
#include "controllers/schedule/utc_time.h"

namespace hb::controllers {

bool needs_prompt_read(const AgentSpec& spec, const AgentStatus& stored, bool slot_run_due) {
  if (!spec.prompt_from) return false;
  return slot_run_due || stored.last_skipped.has_value();
}

std::optional<PromptGap> prompt_gap(const AgentSpec& spec, const PromptRead& read) {
  if (spec.prompt_from) {
    HB_ASSERT_MSG(!read.gap || read.gap->reason == kReasonPromptEmpty ||
                      read.gap->reason == kReasonPromptNotFound,
                  "a prompt read is skipped as empty or as not found");
    return read.gap;
  }
  if (!spec.prompt_blank) return std::nullopt;
  return PromptGap{kReasonPromptEmpty,
                   "spec.heartbeat.prompt is empty: scheduled heartbeats are skipped until it "
                   "says what to do"};
}

SkipPlan plan_skip(const AgentSpec& spec, const std::optional<SkippedHeartbeat>& stored,
                   const PromptRead& read, const std::optional<RunRequest>& create_run) {
  SkipPlan plan;
  // A promptFrom not read this pass: what was stored stands.
  const bool known = !spec.prompt_from || read.done;
  const std::optional<PromptGap> gap = prompt_gap(spec, read);
  plan.skipped = known && !gap ? std::nullopt : stored;
  if (!gap || !create_run || !create_run->slot) return plan;
  plan.skip_slot = true;
  const std::string message(api::utf8_prefix(gap->message, kSkipMessageBytesMax));
  plan.skipped = SkippedHeartbeat{*create_run->slot, gap->reason, message};
  const bool continues = stored && stored->reason == gap->reason && stored->message == message;
  if (!continues) {
    plan.events.push_back({EventTarget::kAgent, spec.name, gap->reason == kReasonPromptNotFound,
                           kEventHeartbeatSkipped,
                           "the heartbeat for " + schedule::format_rfc3339(*create_run->slot) +
                               " was skipped: " + message});
  }
  HB_ASSERT(plan.skipped->message.size() <= kSkipMessageBytesMax);
  return plan;
}

std::optional<TimePoint> prompt_recheck_at(const AgentSpec& spec,
                                           const std::optional<SkippedHeartbeat>& skipped,
                                           TimePoint now) {
  static_assert(kPromptRecheckSeconds.count() > 0, "a skipped prompt is read again later, not now");
  if (!spec.prompt_from || !skipped) return std::nullopt;
  return now + kPromptRecheckSeconds;
}

}  // namespace hb::controllers
