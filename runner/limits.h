// Every bound the runner alone enforces, with its unit in its name. The
// bounds it shares with the operator are in api/contract_limits.h.
#pragma once

#include <chrono>
#include <cstddef>

#include "api/contract_limits.h"

namespace hb::runner {

using namespace std::chrono_literals;

// Model replies (and any wire JSON) nested deeper than this are malformed:
// refused before the parser recurses into them.
inline constexpr std::size_t kWireJsonDepthMax = 128;

// Tool arguments nested deeper than this are refused before parsing (the
// parser recurses per level; a hostile reply must not overflow the stack).
inline constexpr std::size_t kToolArgumentsDepthMax = 32;

// The same tool with the same arguments this many times in a row stops the run.
inline constexpr int kRepeatedToolCallsMax = 3;

// What one untrusted model can make the runner hold (each stops the run with
// its own stopReason; the tool results say why a call was not run). Sizes
// are JSON-escaped bytes, as every later request carries them: a control
// byte of tool output is six bytes there.
// Tool calls one reply may ask for; the calls past it are not run.
inline constexpr std::size_t kToolCallsPerReplyMax = 32;
// Tool results of one run; the result that passes it is replaced by a notice.
inline constexpr std::size_t kToolOutputBytesPerRunMax = 4 * 1024 * 1024;
// One model request's content (system prompt, messages, tool schemas),
// checked before it is sent.
inline constexpr std::size_t kModelRequestBytesMax = 8 * 1024 * 1024;
// Per message and per tool call in a request: the JSON around the content.
inline constexpr std::size_t kRequestItemOverheadBytes = 64;

// Stop this long before the Job's deadline so the result is always written.
inline constexpr std::chrono::seconds kDeadlineMargin = 20s;

// Model calls (max_tokens bounds: api/contract_limits.h).
inline constexpr std::chrono::seconds kModelCallTimeout = 120s;
inline constexpr int kProviderRetriesMax = 4;  // retries after the first attempt
// A reply body longer than this is refused unread (kBadResponse): an
// endpoint sending without end would otherwise fill the runner's memory.
// The largest max_tokens (kMaxTokensMax, 200,000) at 20 bytes a token, as
// escaped JSON, stays under it; the runner holds a reply a few times over
// (body, parse, conversation, transcript line), so it sets the peak RSS
// under the worst reply (hb_runner_bench (d): at most 64 MiB).
inline constexpr std::size_t kModelReplyBytesMax = 4 * 1024 * 1024;
// The model name a reply reports, kept up to this many bytes.
inline constexpr std::size_t kResponseModelBytesMax = 256;
inline constexpr std::chrono::milliseconds kRetryDelayInitial = 500ms;
inline constexpr std::chrono::milliseconds kRetryBackoffMax = 8s;
// A server's retry-after / retry-after-ms hint is honoured up to this.
inline constexpr std::chrono::milliseconds kRetryAfterMax = 60s;
// Budget check: a request is assumed to cost at least one token per this many
// bytes of prompt (English text averages about four).
inline constexpr std::size_t kPromptBytesPerTokenMin = 3;

// Shell tool.
inline constexpr std::chrono::seconds kShellTimeoutDefault = 60s;
inline constexpr std::chrono::seconds kShellTimeoutMax = 600s;
inline constexpr std::size_t kShellOutputHeadBytes = 8 * 1024;
inline constexpr std::size_t kShellOutputTailBytes = 8 * 1024;
inline constexpr std::chrono::seconds kShellBeatInterval = 5s;

// Memory.
inline constexpr int kMemorySaveAttemptsMax = 3;  // on 409 Conflict
inline constexpr int kSearchResultsMax = 5;
inline constexpr std::size_t kSearchResultBytesMax = 1000;  // per hit shown to the model

}  // namespace hb::runner
