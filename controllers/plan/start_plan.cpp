#include "controllers/plan/start_plan.h"

#include <utility>

#include "api/hb_assert.h"
#include "controllers/model/names.h"
#include "controllers/run/run_record.h"
#include "controllers/run/run_status.h"
#include "controllers/schedule/utc_time.h"

namespace hb::controllers {

std::optional<StartRefusal> prompt_refusal(const PromptText& prompt) {
  if (prompt.text != nullptr) return std::nullopt;
  HB_ASSERT_MSG(prompt.gap != nullptr, "a prompt without text says why");
  return StartRefusal{prompt.gap->reason, prompt.gap->message};
}

RunStart plan_run_start(RunStartInput in) {
  HB_ASSERT_MSG(in.spec && in.run && in.prompt.text && in.hold && in.job,
                "a start is planned from a valid spec, its run, a prompt and a committed hold");
  HB_ASSERT_MSG(in.hold->start, "a run waiting for budget room is not started");
  HB_ASSERT_MSG(!in.hold->cents || *in.hold->cents >= 0, "a hold keeps room, never gives it");
  const Json context =
      render_context({in.spec, in.run, *in.prompt.text, std::move(in.earlier), in.now,
                      in.hold->cents, is_day_pool(in.hold->bound_by), in.spend},
                     *in.job, in.pricing, in.per_run_tokens);
  const std::string context_text = context.dump();
  if (auto too_large =
          context_too_large(context_text.size(), in.prompt.source, in.prompt.text->size())) {
    return StartRefusal{kReasonContextTooLarge, *too_large};
  }
  JobPlan plan = build_job(*in.run, *in.spec, context_text, *in.job);
  plan.job["metadata"]["annotations"][kAnnotationStartedAt] = schedule::format_rfc3339(in.now);
  // The admitting policies' trusted copy and the cents held for the run:
  // a Job's template cannot change.
  Json& template_annotations = plan.job["spec"]["template"]["metadata"]["annotations"];
  template_annotations[kAnnotationPolicies] = in.admitting_policies;
  if (in.hold->cents)
    template_annotations[kAnnotationBudgetHold] = format_hold_cents(*in.hold->cents);
  return plan;
}

Json failed_before_start_status(const StartRefusal& refusal, TimePoint now) {
  // Refusals are made above with a run_status.h reason, never one read back.
  HB_ASSERT_MSG(!refusal.reason.empty(), "a refused start names why");
  const std::string at = schedule::format_rfc3339(now);
  return {{"phase", "Failed"},
          {"reason", refusal.reason},
          {"message", refusal.message},
          {"startedAt", at},
          {"finishedAt", at},
          {"durationSeconds", 0},
          {"usage", {{"inputTokens", 0}, {"outputTokens", 0}, {"costCents", 0}}}};
}

}  // namespace hb::controllers
