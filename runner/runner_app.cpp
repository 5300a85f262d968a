#include "runner/runner_app.h"

#include <fstream>
#include <sstream>

#include "api/exit_codes.h"
#include "api/rfc3339.h"
#include "runner/agent_loop.h"
#include "runner/archival_store.h"
#include "runner/errors.h"
#include "runner/http_model_client.h"
#include "runner/limits.h"
#include "runner/memory_tools.h"
#include "runner/prompt.h"
#include "runner/stop_rules.h"
#include "runner/tool_specs.h"
#include "runner/toolbox.h"
#include "runner/transcript.h"
#include "runner/transcript_file.h"
#include "runner/wire_util.h"

namespace hb::runner {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("context document " + path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A document that does not parse is a configuration error (exit 78).
api::ContextDocument read_context_document(const std::string& path) {
  const std::string text = read_file(path);
  try {
    return api::parse_context_document_text(text);
  } catch (const api::ContextDocumentError& error) {
    throw ConfigError(error.what());
  }
}

void write_result(const std::string& path, const std::string& text, AppDeps& deps) {
  if (path.empty()) return;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out && deps.log_warning) deps.log_warning("cannot write the result to " + path);
}

void log(const std::function<void(const std::string&)>& sink, const std::string& message) {
  if (sink) sink(message);
}

// The run's transcript file on the archival volume, after the transcripts
// of runs the operator no longer keeps are deleted; none without a volume.
std::unique_ptr<TranscriptFile> open_stored_transcript(const api::ContextDocument& doc,
                                                       std::vector<std::string>& notes,
                                                       const AppDeps& deps) {
  if (doc.transcript_dir.empty()) return nullptr;
  std::vector<std::string> keep = doc.transcript_keep;
  keep.push_back(doc.run.name);
  const std::size_t trimmed = trim_transcripts(doc.transcript_dir, keep);
  if (trimmed > 0) {
    log(deps.log_info, "deleted " + std::to_string(trimmed) + " transcripts of deleted runs");
  }
  if (!transcript_name_ok(doc.run.name)) {
    notes.push_back("no stored transcript: the run name cannot be a file name");
    return nullptr;
  }
  return std::make_unique<TranscriptFile>(doc.transcript_dir, transcript_file_name(doc.run.name));
}

// The file ends with the result (less its own record), then says its size and digest.
void close_stored_transcript(TranscriptFile& file, api::RunResult& result, int exit_code) {
  nlohmann::json last = {
      {"event", "result"}, {"exitCode", exit_code}, {"result", api::result_to_json(result)}};
  file.write_line(dump_json(last));
  result.transcript = file.finish();
  if (result.transcript) {
    result.transcript->note = file.note();
  } else if (!file.note().empty()) {
    result.notes.push_back(file.note());  // nothing was stored: say why
  }
}

// The run's trace: a recorder in front of the transcript and its exporter.
struct Tracing {
  std::unique_ptr<otel::SpanRecorder> recorder;
  std::unique_ptr<otel::TraceExporter> exporter;
};

void start_tracing(Tracing& tracing, const AppOptions& options, const AppDeps& deps,
                   const api::ContextDocument& doc, Transcript& transcript, TimePoint started) {
  if (!options.otel) return;
  otel::RunIdentity identity{doc.agent_name, doc.agent_namespace, doc.run.name,
                             std::string(to_string(doc.model.provider)), doc.model.model};
  tracing.recorder = std::make_unique<otel::SpanRecorder>(
      transcript, deps.clock, std::move(identity), started,
      otel::parse_traceparent(options.traceparent), options.otel->gen_ai_latest);
  tracing.exporter = std::make_unique<otel::TraceExporter>(*options.otel, *tracing.recorder,
                                                           deps.http, deps.log_warning);
}

// After the result is written: the root span ends, the last spans go out.
void finish_tracing(Tracing& tracing, const api::RunResult& result, int exit_code) {
  if (!tracing.recorder) return;
  tracing.recorder->finish(
      result.stop_reason, exit_code == api::kExitFinished ? std::string() : result.stop_reason,
      result.input_tokens, result.output_tokens, result.finished_at.value_or(TimePoint()));
  tracing.exporter->shutdown();
}

}  // namespace

AppOutcome run_heartbeat(const AppOptions& options, const AppDeps& caller_deps) {
  AppDeps deps = caller_deps;  // its log sinks get the agent/run prefix below
  JsonLinesTranscript transcript(deps.transcript_out, deps.clock);
  LogTail stdout_tail;
  std::unique_ptr<TranscriptFile> stored_transcript;  // on the archival volume, when it has one
  transcript.set_taps(&stdout_tail, nullptr);
  Heartbeat heartbeat(deps.clock);
  // First, so the tools server sees the lifeline before anything can fail;
  // it lives until the result is written.
  std::unique_ptr<ToolsLifeline> lifeline;
  std::unique_ptr<ShellExecutor> shell;
  if (!options.tools_socket.empty()) {
    lifeline = std::make_unique<ToolsLifeline>(options.tools_socket, kToolsConnectWait);
    shell = std::make_unique<RemoteShell>(options.tools_socket, kToolsConnectWait, lifeline.get());
  } else if (options.tools_local) {
    shell = std::make_unique<LocalShell>();
  }
  AppOutcome outcome;
  api::RunResult& result = outcome.result;
  TimePoint started = deps.clock.now();
  Tracing tracing;
  try {
    api::ContextDocument doc = read_context_document(options.context_path);
    // Every log line from here on names the agent and the run.
    std::string prefix =
        "agent=" + doc.agent_namespace + "/" + doc.agent_name + " run=" + doc.run.name + " ";
    for (auto* sink : {&deps.log_info, &deps.log_warning}) {
      if (*sink)
        *sink = [inner = *sink, prefix](const std::string& message) { inner(prefix + message); };
    }
    if (doc.model.provider == api::Provider::kAnthropic && options.api_key.empty()) {
      throw ConfigError(std::string("the Anthropic provider needs an API key in ") +
                        api::kEnvApiKey);
    }
    std::vector<std::string> notes;
    stored_transcript = open_stored_transcript(doc, notes, deps);
    transcript.set_taps(&stdout_tail, stored_transcript.get());
    start_tracing(tracing, options, deps, doc, transcript, started);
    Transcript& loop_transcript =
        tracing.recorder ? static_cast<Transcript&>(*tracing.recorder) : transcript;

    // Lease: every beat may renew it, at most once per interval.
    std::unique_ptr<LeaseRenewer> renewer;
    std::unique_ptr<LeaseExtender> extender;
    if (doc.lease && deps.make_lease_renewer) renewer = deps.make_lease_renewer(doc);
    if (renewer) {
      extender = std::make_unique<LeaseExtender>(*renewer, doc.lease->renew_interval,
                                                 doc.lease->stall_window, deps.log_warning,
                                                 [&heartbeat] { return heartbeat.usage(); });
      heartbeat.add_callback(extender->callback());
    }
    heartbeat.beat();

    // Core memory: the spec's blocks merged with the agent's stored edits.
    std::unique_ptr<MemoryStore> store;
    if (!doc.memory_config_map.empty() && deps.make_memory_store)
      store = deps.make_memory_store(doc);
    if (!store)
      notes.push_back("memory edits last only for this heartbeat: no memory ConfigMap store");
    CoreMemoryService memory(doc.memory_blocks, store.get());
    try {
      memory.load();
    } catch (const std::exception& error) {
      notes.push_back(std::string("stored memory could not be loaded: ") + error.what());
      log(deps.log_warning, notes.back());
    }

    // Archival memory and conversation history.
    std::unique_ptr<ArchivalStore> archival;
    if (!doc.archival_path.empty()) {
      try {
        archival = ArchivalStore::open(doc.archival_path);
        for (const auto& run : doc.recent_runs) {
          if (!run.name.empty()) archival->record_run_output(run.name, run.output, run.finished_at);
        }
      } catch (const std::exception& error) {
        archival.reset();
        notes.push_back(std::string("archival storage unavailable: ") + error.what());
        log(deps.log_warning, notes.back());
      }
    }
    const auto& caps = api::capabilities(doc.agent_type);
    OfferedTools offered = offered_tools(caps, archival != nullptr);
    notes.insert(notes.end(), offered.notes.begin(), offered.notes.end());

    HttpModelClientOptions model_options;
    model_options.provider = doc.model.provider;
    model_options.base_url = doc.model.base_url;
    model_options.api_key = options.api_key;
    model_options.call_timeout = options.model_call_timeout;
    model_options.retries_max = options.model_retries_max;
    model_options.cancel = deps.cancel;
    if (tracing.recorder) {
      model_options.traceparent = [&recorder = *tracing.recorder] {
        return recorder.chat_traceparent();
      };
    }
    HttpModelClient model(model_options, deps.http, deps.clock, &loop_transcript,
                          [&] { heartbeat.beat(); });

    Toolbox tools({memory, archival.get(), heartbeat, deps.clock, doc.run.name, options.secret_env,
                   deps.cancelled, shell.get()});

    LoopConfig config;
    config.model = doc.model.model;
    config.agent_type = doc.agent_type;
    config.tools = offered.tools;
    config.max_tokens = doc.model.max_tokens;
    config.pricing = doc.model.pricing;
    config.budget_cents = doc.budget.run_limit_cents();
    config.budget_tokens = doc.budget.per_run_tokens;
    config.wall_deadline = wall_deadline_for(doc.run.deadline);
    config.first_message = render_heartbeat_message(doc);
    config.system_prompt = [&] {
      return render_system_prompt(doc, memory.blocks(), offered.tools, deps.clock.now());
    };
    config.cancelled = deps.cancelled;
    config.log_warning = deps.log_warning;

    nlohmann::json tool_names = nlohmann::json::array();
    for (const auto& tool : offered.tools) tool_names.push_back(tool.name);
    transcript.emit({{"event", "run_started"},
                     {"agent", doc.agent_namespace + "/" + doc.agent_name},
                     {"run", doc.run.name},
                     {"agentType", std::string(api::to_string(doc.agent_type))},
                     {"provider", std::string(to_string(doc.model.provider))},
                     {"model", doc.model.model},
                     {"tools", tool_names},
                     {"wallDeadline", api::format_rfc3339_millis(config.wall_deadline)},
                     {"system", config.system_prompt()}});
    log(deps.log_info, "heartbeat started: type " + std::string(api::to_string(doc.agent_type)) +
                           ", " + std::to_string(offered.tools.size()) + " tools");

    result = run_agent_loop(config, {model, tools, deps.clock, heartbeat, loop_transcript});
    result.notes.insert(result.notes.begin(), notes.begin(), notes.end());
    if (memory.saves() > 0) transcript.emit({{"event", "memory_saved"}, {"saves", memory.saves()}});
    if (archival) {
      try {
        archival->record_run_output(doc.run.name, result.output,
                                    api::format_rfc3339_millis(deps.clock.now()));
      } catch (const std::exception& error) {
        log(deps.log_warning,
            std::string("could not record the output for conversation_search: ") + error.what());
      }
    }
  } catch (const ConfigError& error) {
    result = api::RunResult{};
    result.stop_reason = to_string(StopReason::kConfigError);
    result.error = error.what();
    result.started_at = started;
  } catch (const std::exception& error) {
    result.stop_reason = to_string(StopReason::kInternalError);
    result.error = std::string("internal error: ") + error.what();
  }
  if (!result.finished_at) result.finished_at = deps.clock.now();
  if (!result.last_beat) result.last_beat = heartbeat.last_beat();
  outcome.exit_code = api::exit_code_for(
      api::parse_stop_reason(result.stop_reason).value_or(StopReason::kInternalError));
  result.stdout_excerpt = stdout_tail.text();
  if (deps.stderr_tail) result.stderr_excerpt = deps.stderr_tail();
  if (stored_transcript) {
    transcript.set_taps(&stdout_tail, nullptr);
    close_stored_transcript(*stored_transcript, result, outcome.exit_code);
  }
  outcome.result_json = api::render_result(result);
  transcript.emit({{"event", "result"},
                   {"exitCode", outcome.exit_code},
                   {"result", nlohmann::json::parse(outcome.result_json)}});
  write_result(options.termination_path, outcome.result_json, deps);
  finish_tracing(tracing, result, outcome.exit_code);
  std::string summary = "heartbeat finished: stopReason " + result.stop_reason + ", exit " +
                        std::to_string(outcome.exit_code);
  if (!result.error.empty()) summary += ", error: " + result.error;
  log(outcome.exit_code == api::kExitFinished ? deps.log_info : deps.log_warning, summary);
  return outcome;
}

}  // namespace hb::runner
