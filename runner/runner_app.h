// One heartbeat, end to end, with its I/O injected: read the context
// document, wire memory, archival storage, tools, the lease extender and the
// model client, run the loop, write the result. main() supplies the real
// clock, HTTP transport and Kubernetes adapters; tests supply fakes.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "api/context_document.h"
#include "api/env_names.h"
#include "api/run_result.h"
#include "http/http.h"
#include "otlp/exporter_config.h"
#include "runner/clock.h"
#include "runner/heartbeat.h"
#include "runner/memory_store.h"

namespace hb::runner {

struct AppOptions {
  std::string context_path;
  std::string termination_path;  // empty: do not write
  std::string api_key;
  // Environment variables the shell tool must not pass on.
  std::vector<std::string> secret_env = {api::kEnvApiKey};
  // Where the shell tool's commands run: the tools server's socket
  // (HEARTBEAT_TOOLS_SOCKET); else in this process when tools_local
  // (HEARTBEAT_TOOLS_LOCAL=1, development only); else nowhere.
  std::string tools_socket;
  bool tools_local = false;
  Millis model_call_timeout = std::chrono::duration_cast<Millis>(std::chrono::seconds(120));
  int model_retries_max = 4;
  // Set: the heartbeat's trace goes to this OTLP endpoint (otlp/exporter.h).
  std::optional<otlp::ExporterConfig> otel;
  std::string traceparent;  // W3C; the root span's parent when valid
};

struct AppDeps {
  Clock& clock;
  std::ostream& transcript_out;  // JSON lines
  http::Client& http;            // to the model provider
  // Each may return null (no Kubernetes access): no Lease renewal / memory
  // edits last only for this heartbeat.
  std::function<std::unique_ptr<LeaseRenewer>(const api::ContextDocument&)> make_lease_renewer;
  std::function<std::unique_ptr<MemoryStore>(const api::ContextDocument&)> make_memory_store;
  std::function<bool()> cancelled;
  std::function<void(const std::string&)> log_info;
  std::function<void(const std::string&)> log_warning;
  std::shared_ptr<http::CancelSource> cancel;  // fired on SIGTERM; aborts model calls
  // The last characters of the runner's stderr log (the result's
  // stderrExcerpt); unset: none.
  std::function<std::string()> stderr_tail;
};

struct AppOutcome {
  int exit_code = 0;
  api::RunResult result;
  std::string result_json;  // as written to the termination path
};

AppOutcome run_heartbeat(const AppOptions& options, const AppDeps& deps);

}  // namespace hb::runner
