// The OpenTelemetry GenAI semantic conventions' client token metrics on the
// operator's /metrics, from what the ledger charged each run (never the
// runner's claim): by default the v1.36 histogram gen_ai.client.token.usage
// (kGenAiTokenUsageMetric: dots as underscores; one observation per charged
// run and token type, operation invoke_agent: a heartbeat is one agent
// invocation); with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental
// the successors gen_ai.client.inference.usage.{input,output}_tokens
// instead (counters, exposed with _total), as the conventions' transition
// plan says. Beside them, in either mode, gen_ai.client.operation.duration
// (kGenAiOperationDurationMetric, seconds, operation chat): the run's model
// calls as the runner timed them (api/call_durations.h), in the
// conventions' bucket boundaries, once the operator found the summary
// believable against the run's charged calls and its wall time; the one
// runner claim the metrics read, as no other side can time a model call.
// Failed calls are observed too, labelled error_type (the conventions'
// error.type) from the contract's fixed vocabulary (api::kCallErrorTypeNames);
// an answered call's series has no error_type.
//
// Cardinality is bounded: at most kGenAiModelsMax (provider, model) pairs
// get labels of their own, later ones and over-long or unknown values
// share kGenAiOther. Each run is observed once (a charge repeated after its
// mark failed is not counted again), remembering the last
// kGenAiRunsRememberedMax runs. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "api/call_durations.h"
#include "controllers/runtime/metrics.h"

namespace hb::controllers {

inline constexpr std::size_t kGenAiModelsMax = 32;
inline constexpr std::size_t kGenAiLabelValueBytesMax = 128;
inline constexpr std::size_t kGenAiRunsRememberedMax = 1024;
// The conventions' fallback value (as error.type's `_OTHER`).
inline constexpr const char* kGenAiOther = "_OTHER";

inline constexpr const char* kGenAiTokenUsageMetric = "gen_ai_client_token_usage";
inline constexpr const char* kGenAiInputTokensMetric =
    "gen_ai_client_inference_usage_input_tokens_total";
inline constexpr const char* kGenAiOutputTokensMetric =
    "gen_ai_client_inference_usage_output_tokens_total";
inline constexpr const char* kGenAiOperationDurationMetric =
    "gen_ai_client_operation_duration_seconds";
// error.type as a Prometheus label, on the duration of a failed call.
inline constexpr const char* kGenAiErrorTypeLabel = "error_type";

// One run's charge as the metrics read it.
struct GenAiCharge {
  std::string run_key;   // "namespace/run"
  std::string provider;  // the Agent's spec.model.provider ("" when unknown)
  std::string model;     // its spec.model.model, the request model
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  // status.usage.modelCallDurations (answered and failed calls); unset when
  // the run had none believed.
  std::optional<api::CallDurations> call_durations = {};
};

class GenAiChargeMetrics {
 public:
  // Describes the families of the chosen conventions in `metrics`.
  GenAiChargeMetrics(Metrics& metrics, bool latest_experimental);
  void record(const GenAiCharge& charge);

 private:
  // The (provider, model) labels for a charge, under the bound.
  std::pair<std::string, std::string> labels_for(const std::string& provider,
                                                 const std::string& model);
  bool seen(const std::string& run_key);  // remembers it
  void observe_durations(const api::CallDurations& durations, const std::string& provider,
                         const std::string& model);
  void observe_buckets(const api::DurationBuckets& buckets, Labels labels);

  Metrics& metrics_;
  const bool latest_;
  std::mutex mutex_;
  std::set<std::pair<std::string, std::string>> pairs_;
  std::set<std::string> runs_;
  std::deque<std::string> runs_order_;  // oldest first
};

}  // namespace hb::controllers
