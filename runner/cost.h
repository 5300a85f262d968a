// Cost of model calls in cents, and the worst case of the next call for the
// budget check.
#pragma once

#include "api/context_document.h"
#include "runner/conversation.h"

namespace hb::runner {

double cost_cents(const Usage& usage, const api::Pricing& pricing);
// As the operator charges a reply (controllers/model/run_cost.h): its cache reads
// and writes, parts of usage.input_tokens, at their prices when together
// within it; the rest of the input at the input price.
double cost_cents(const Usage& usage, long long cache_read_tokens, long long cache_write_tokens,
                  const api::Pricing& pricing);

// Upper estimate of a request's input tokens from its size: every byte of the
// system prompt, messages and tool schemas, at kPromptBytesPerTokenMin bytes
// per token.
long long estimate_input_tokens(const ModelRequest& request);

// The most the call can cost: estimated input plus max_tokens of output.
double worst_case_call_cents(const ModelRequest& request, const api::Pricing& pricing);

// The most tokens the call can use: estimated input plus max_tokens of output.
long long worst_case_call_tokens(const ModelRequest& request);

}  // namespace hb::runner
