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

// Core memory blocks, in characters (Unicode code points).
inline constexpr int kCoreMemoryBlockLimitDefault = 2000;
inline constexpr int kCoreMemoryBlockLimitMax = 1000000;

}  // namespace hb::api
