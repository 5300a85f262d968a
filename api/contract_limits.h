// The bounds the operator and the runner must agree on, with units in their
// names. One definition each: both sides include this file.
#pragma once

#include <chrono>
#include <cstddef>

namespace hb::api {

using namespace std::chrono_literals;

// The result rides in the termination message; Kubernetes keeps at most
// 4096 bytes of it.
inline constexpr std::size_t kTerminationMessageBytesMax = 4096;
// A result nested deeper than this is not a result: refused before the
// parser recurses into it.
inline constexpr std::size_t kResultDepthMax = 8;

// pause_heartbeats (Kelpie ADR-010): asked for by the runner, clamped again
// by the operator.
inline constexpr int kPauseMinutesMin = 1;
inline constexpr int kPauseMinutesMax = 60;
inline constexpr int kPauseMinutesDefault = 2;

// Run logs (issue 18): the result carries the last characters the runner
// wrote to stdout (its transcript) and to stderr (its log), for a quick look
// in `kubectl get hbr -o yaml` after the Pod is gone.
inline constexpr std::size_t kLogExcerptCharsMax = 500;
// The full transcript on the Agent's archival volume: one gzip file per run
// under this directory of the volume, at most this many uncompressed bytes
// (the rest is cut with a note, never failing the run); transcripts of runs
// the operator no longer keeps are deleted by the next run (at most this
// many names are kept).
inline constexpr const char* kTranscriptDirName = "transcripts";
inline constexpr const char* kTranscriptFileSuffix = ".jsonl.gz";
inline constexpr std::size_t kTranscriptBytesMax = 64 * 1024 * 1024;
inline constexpr std::size_t kTranscriptKeepMax = 256;
inline constexpr std::size_t kTranscriptNoteBytesMax = 256;

// The context document: a ConfigMap holds at most 1 MiB.
inline constexpr std::size_t kContextDocumentBytesMax = 1024 * 1024;
inline constexpr std::size_t kContextDocumentDepthMax = 128;
// Each earlier run's output, in the document and in the prompt.
inline constexpr std::size_t kRecentRunOutputBytesMax = 4000;

// A run's metadata (spec.metadata, from a wakeup's body; issue 18): string
// pairs such as a task id or a priority, shown to the model. The CRD
// schema, the wakeup endpoint and the context document hold the same bounds.
inline constexpr std::size_t kRunMetadataEntriesMax = 16;
inline constexpr std::size_t kRunMetadataKeyCharsMax = 63;
inline constexpr std::size_t kRunMetadataValueBytesMax = 256;

// The run stall window: a run whose agent Lease is not renewed for this long
// is failed as Stalled. The runner writes it as the Lease's
// leaseDurationSeconds (the LeaseExtender defaults).
inline constexpr std::chrono::seconds kRunStallWindowDefault = 300s;
inline constexpr std::chrono::seconds kRunStallWindowMin = 10s;
inline constexpr std::chrono::seconds kRunStallWindowMax = 86400s;
inline constexpr std::chrono::seconds kLeaseRenewIntervalDefault = 60s;

// Model output per call (max_tokens).
inline constexpr int kMaxTokensDefault = 1024;
inline constexpr int kMaxTokensMax = 200000;
// budget.perRunTokens (Agent, HeartbeatPolicy, context document): input plus
// output tokens of one run; 0 or absent: no cap.
inline constexpr long long kPerRunTokensMax = 1000000000;

// Core memory blocks, in characters (Unicode code points). The CRD's default
// for memory.blocks[].limit is the same (tests/unit/controllers/crd_bounds_test).
inline constexpr int kCoreMemoryBlockLimitDefault = 5000;
inline constexpr int kCoreMemoryBlockLimitMax = 1000000;

// The limits that depend on each other.
static_assert(kPauseMinutesMin <= kPauseMinutesDefault && kPauseMinutesDefault <= kPauseMinutesMax);
static_assert(kLogExcerptCharsMax * 4 < kTerminationMessageBytesMax,
              "the output excerpt, at 4 bytes a character, fits the termination message");
static_assert(kRecentRunOutputBytesMax < kContextDocumentBytesMax);
static_assert(kRunStallWindowMin <= kRunStallWindowDefault &&
              kRunStallWindowDefault <= kRunStallWindowMax);
static_assert(kLeaseRenewIntervalDefault < kRunStallWindowDefault,
              "a beating runner renews its Lease before the stall window ends");
static_assert(kMaxTokensDefault <= kMaxTokensMax);
static_assert(kCoreMemoryBlockLimitDefault <= kCoreMemoryBlockLimitMax);
static_assert(kRunMetadataEntriesMax * (kRunMetadataKeyCharsMax * 4 + kRunMetadataValueBytesMax) <
              kContextDocumentBytesMax);

}  // namespace hb::api
