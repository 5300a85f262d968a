// hb-operator-span: the operator's span of one heartbeat, made and sent by
// the operator's own code (controllers/pod/scheduling_span.h through
// operator/tracing.h) for the OTLP receiver test (runner_otlp_test.js),
// which runs no cluster. Prints the TRACEPARENT the Job builder gives that
// run's runner, then exports the span and exits when it is sent.
//
//   hb-operator-span RUN_UID OTLP_ENDPOINT
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "api/rfc3339.h"
#include "api/trace_context.h"
#include "controllers/pod/scheduling_span.h"
#include "operator/tracing.h"

int main(int argc, char** argv) {
  using namespace hb;
  if (argc != 3) {
    std::fprintf(stderr, "usage: hb-operator-span RUN_UID OTLP_ENDPOINT\n");
    return 2;
  }
  const std::string uid = argv[1];
  const std::optional<api::TraceParent> trace = api::run_trace_parent(uid);
  std::optional<otlp::ExporterConfig> config =
      operator_::operator_trace_config(argv[2], [](const char* name) {
        const char* value = std::getenv(name);
        return value ? std::optional<std::string>(value) : std::nullopt;
      });
  if (!trace || !config) {
    std::fprintf(stderr, "hb-operator-span: no UUID or no endpoint\n");
    return 2;
  }
  const auto now = std::chrono::system_clock::now();
  const controllers::Json run = {
      {"metadata",
       {{"name", "scout-7"},
        {"namespace", "agents"},
        {"uid", uid},
        {"creationTimestamp", api::format_rfc3339_millis(now - std::chrono::seconds(1))}}},
      {"spec",
       {{"agentRef", {{"name", "scout"}}},
        {"invocationSource", "scheduler"},
        {"scheduledTime", api::format_rfc3339_millis(now - std::chrono::seconds(2))}}}};
  std::printf("%s\n", api::format_traceparent(trace->trace_id, trace->parent_span_id).c_str());
  std::fflush(stdout);
  operator_::OperatorTracing tracing(*config, "heartbeat-system");
  tracing.offer(*controllers::scheduling_span(run, {"scout-7", "uid-job-scout-7", now}));
  tracing.shutdown();
  return 0;
}
