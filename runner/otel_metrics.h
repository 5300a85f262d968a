// The GenAI client metrics of one run, from its chat spans, as an OTLP/JSON
// ExportMetricsServiceRequest (encoded by otlp/encode.h). Pure.
#pragma once

#include <string>
#include <vector>

#include "runner/otel_trace.h"

namespace hb::runner::otel {

// Attributes gen_ai.operation.name, gen_ai.provider.name,
// gen_ai.request.model, gen_ai.response.model and, on a failed call,
// error.type; the conventions' bucket bounds; delta temporality from
// `start` to `end` (a runner lives one heartbeat). By default the v1.36
// histograms gen_ai.client.token.usage ({token}; gen_ai.token.type input,
// output) and gen_ai.client.operation.duration (s); with `gen_ai_latest`
// their successors instead: the histograms gen_ai.client.inference.duration
// and gen_ai.client.inference.operation.{input,output}_tokens, and the
// counters gen_ai.client.inference.usage.{input,output}_tokens and
// gen_ai.client.inference.usage.{cache_read,cache_write}.input_tokens
// (gen_ai.token.modality text; unknown for a call that reported no usage).
std::string encode_otlp_metrics(const Resource& resource, const std::vector<Span>& chats,
                                TimePoint start, TimePoint end, bool gen_ai_latest = false);

}  // namespace hb::runner::otel
