#include "controllers/runtime/genai_metrics.h"

#include <algorithm>
#include <vector>

#include "api/context_document.h"

namespace hb::controllers {
namespace {

// The conventions' advisory explicit bucket boundaries for token counts.
const std::vector<double> kTokenBuckets = {
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864};

bool known_provider(const std::string& provider) {
  return api::parse_provider(provider).has_value();
}

}  // namespace

GenAiChargeMetrics::GenAiChargeMetrics(Metrics& metrics, bool latest_experimental)
    : metrics_(metrics), latest_(latest_experimental) {
  if (latest_) {
    metrics_.describe(kGenAiInputTokensMetric, "counter",
                      "Input tokens the ledger charged (gen_ai.client.inference.usage."
                      "input_tokens, {token}), by provider and request model.");
    metrics_.describe(kGenAiOutputTokensMetric, "counter",
                      "Output tokens the ledger charged (gen_ai.client.inference.usage."
                      "output_tokens, {token}), by provider and request model.");
  } else {
    metrics_.describe(kGenAiTokenUsageMetric, "histogram",
                      "Tokens the ledger charged per heartbeat (gen_ai.client.token.usage, "
                      "{token}), by provider, request model and token type.",
                      kTokenBuckets);
  }
  metrics_.describe(
      kGenAiOperationDurationMetric, "histogram",
      "Model calls' durations as the runner timed them "
      "(gen_ai.client.operation.duration, s), by provider and request model, and for a "
      "failed call its error type; observed when the run is charged.",
      {api::kCallDurationBoundsSeconds.begin(), api::kCallDurationBoundsSeconds.end()});
}

bool GenAiChargeMetrics::seen(const std::string& run_key) {
  if (!runs_.insert(run_key).second) return true;
  runs_order_.push_back(run_key);
  if (runs_order_.size() > kGenAiRunsRememberedMax) {
    runs_.erase(runs_order_.front());
    runs_order_.pop_front();
  }
  return false;
}

std::pair<std::string, std::string> GenAiChargeMetrics::labels_for(const std::string& provider,
                                                                   const std::string& model) {
  std::string p = known_provider(provider) ? provider : kGenAiOther;
  std::string m = model.empty() || model.size() > kGenAiLabelValueBytesMax ? kGenAiOther : model;
  if (m != kGenAiOther && !pairs_.contains({p, m})) {
    if (pairs_.size() >= kGenAiModelsMax) {
      m = kGenAiOther;
    } else {
      pairs_.insert({p, m});
    }
  }
  return {std::move(p), std::move(m)};
}

void GenAiChargeMetrics::observe_buckets(const api::DurationBuckets& buckets, Labels labels) {
  if (api::call_count(buckets) == 0) return;
  std::vector<uint64_t> per_bucket;
  for (const int64_t count : buckets.counts) {
    per_bucket.push_back(static_cast<uint64_t>(std::max<int64_t>(count, 0)));
  }
  metrics_.observe_bucketed(kGenAiOperationDurationMetric, labels, per_bucket, buckets.sum_seconds);
}

void GenAiChargeMetrics::observe_durations(const api::CallDurations& durations,
                                           const std::string& provider, const std::string& model) {
  const Labels labels = {{"gen_ai_operation_name", "chat"},
                         {"gen_ai_provider_name", provider},
                         {"gen_ai_request_model", model}};
  // The conventions set error.type only on an operation that ended in an error.
  observe_buckets(durations, labels);
  for (std::size_t i = 0; i < api::kCallErrorTypeCount; ++i) {
    Labels failed = labels;
    failed.emplace_back(kGenAiErrorTypeLabel, std::string(api::kCallErrorTypeNames[i]));
    observe_buckets(durations.failed[i], std::move(failed));
  }
}

void GenAiChargeMetrics::record(const GenAiCharge& charge) {
  std::lock_guard lock(mutex_);
  if (seen(charge.run_key)) return;
  const auto [provider, model] = labels_for(charge.provider, charge.model);
  if (charge.call_durations) observe_durations(*charge.call_durations, provider, model);
  const auto input = static_cast<double>(charge.input_tokens);
  const auto output = static_cast<double>(charge.output_tokens);
  if (latest_) {
    // The counters sum the run's model calls, each a chat operation.
    const Labels labels = {{"gen_ai_operation_name", "chat"},
                           {"gen_ai_provider_name", provider},
                           {"gen_ai_request_model", model},
                           {"gen_ai_token_modality", "unknown"}};
    metrics_.counter_add(kGenAiInputTokensMetric, labels, input);
    metrics_.counter_add(kGenAiOutputTokensMetric, labels, output);
    return;
  }
  for (const auto& [type, tokens] : {std::pair{"input", input}, std::pair{"output", output}}) {
    metrics_.observe(kGenAiTokenUsageMetric,
                     {{"gen_ai_operation_name", "invoke_agent"},
                      {"gen_ai_provider_name", provider},
                      {"gen_ai_request_model", model},
                      {"gen_ai_token_type", type}},
                     tokens);
  }
}

}  // namespace hb::controllers
