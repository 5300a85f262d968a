// The operator's side of api/context_document.h.
#include "api/context_document.h"

namespace hb::api {
namespace {

using nlohmann::json;

json render_model(const ModelConfig& model) {
  json out = {{"provider", std::string(to_string(model.provider))},
              {"model", model.model},
              {"maxTokens", model.max_tokens},
              {"pricing",
               {{"inputCentsPerMillionTokens", model.pricing.input_cents_per_million_tokens},
                {"outputCentsPerMillionTokens", model.pricing.output_cents_per_million_tokens}}}};
  if (!model.base_url.empty()) out["baseURL"] = model.base_url;
  const Pricing& p = model.pricing;
  if (p.cached_input_cents_per_million_tokens) {
    out["pricing"]["cachedInputCentsPerMillionTokens"] = *p.cached_input_cents_per_million_tokens;
  }
  if (p.cache_write_input_cents_per_million_tokens) {
    out["pricing"]["cacheWriteInputCentsPerMillionTokens"] =
        *p.cache_write_input_cents_per_million_tokens;
  }
  return out;
}

json render_memory(const ContextDocument& doc) {
  json blocks = json::array();
  for (const MemoryBlock& block : doc.memory_blocks) {
    blocks.push_back({{"label", block.label}, {"value", block.value}, {"limit", block.limit}});
  }
  return {{"configMapName", doc.memory_config_map}, {"blocks", std::move(blocks)}};
}

json render_budget(const Budget& budget) {
  json out = json::object();
  if (budget.per_run_cents) out["perRunCents"] = *budget.per_run_cents;
  if (budget.month_remaining_cents) out["monthRemainingCents"] = *budget.month_remaining_cents;
  if (budget.day_remaining_cents) out["dayRemainingCents"] = *budget.day_remaining_cents;
  if (budget.per_run_tokens) out["perRunTokens"] = *budget.per_run_tokens;
  return out;
}

json render_recent_runs(const std::vector<RecentRun>& runs) {
  json out = json::array();
  for (const RecentRun& run : runs) {
    out.push_back({{"name", run.name},
                   {"finishedAt", run.finished_at},
                   {"phase", run.phase},
                   {"stopReason", run.stop_reason},
                   {"output", run.output}});
  }
  return out;
}

json render_run(const RunIdentity& run) {
  json out = {{"name", run.name},
              {"uid", run.uid},
              {"invocationSource", run.invocation_source},
              {"deadline", format_rfc3339_millis(run.deadline)}};
  if (!run.trigger_detail.empty()) out["triggerDetail"] = run.trigger_detail;
  if (!run.metadata.empty()) out["metadata"] = run.metadata;
  if (run.scheduled_time) out["scheduledTime"] = format_rfc3339_millis(*run.scheduled_time);
  return out;
}

}  // namespace

json render_context_document(const ContextDocument& doc) {
  json out = {{"kind", kContextDocumentKind}, {"version", kContextDocumentVersion}};
  out["agent"] = {{"name", doc.agent_name},
                  {"namespace", doc.agent_namespace},
                  {"type", std::string(to_string(doc.agent_type))}};
  out["model"] = render_model(doc.model);
  out["persona"] = doc.persona;
  out["memory"] = render_memory(doc);
  out["heartbeat"] = {{"prompt", doc.heartbeat_prompt}};
  out["budget"] = render_budget(doc.budget);
  out["recentRuns"] = render_recent_runs(doc.recent_runs);
  out["run"] = render_run(doc.run);
  if (doc.lease) {
    out["lease"] = {{"name", doc.lease->name},
                    {"durationSeconds", doc.lease->stall_window.count()},
                    {"renewIntervalSeconds", doc.lease->renew_interval.count()}};
  }
  if (!doc.archival_path.empty()) out["archival"] = {{"path", doc.archival_path}};
  if (!doc.transcript_dir.empty()) {
    out["transcripts"] = {{"dir", doc.transcript_dir}, {"keep", doc.transcript_keep}};
  }
  return out;
}

}  // namespace hb::api
