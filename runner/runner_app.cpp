#include "runner/runner_app.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <variant>

#include "api/exit_codes.h"
#include "api/rfc3339.h"
#include "otlp/exporter.h"
#include "runner/agent_loop.h"
#include "runner/archival_store.h"
#include "runner/http_model_client.h"
#include "runner/limits.h"
#include "runner/memory_tools.h"
#include "runner/otel_metrics.h"
#include "runner/prompt.h"
#include "runner/stop_rules.h"
#include "runner/tool_specs.h"
#include "runner/toolbox.h"
#include "runner/transcript.h"
#include "runner/transcript_file.h"
#include "runner/wire_util.h"

namespace hb::runner {
namespace {

// What went wrong before the loop could start: a configuration error (exit 78).
struct ConfigProblem {
  std::string message;
};

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A document that cannot be read or does not parse is a configuration error.
std::variant<api::ContextDocument, ConfigProblem> read_context_document(const std::string& path) {
  const std::optional<std::string> text = read_file(path);
  if (!text) return ConfigProblem{"context document " + path + ": cannot be read"};
  api::ContextDocumentResult parsed = api::parse_context_document_text(*text);
  if (!parsed.ok()) return ConfigProblem{parsed.error().message};
  return std::move(parsed).value();
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
  std::unique_ptr<otlp::Exporter> exporter;
  std::unique_ptr<otel::SpanRecorder> recorder;
  otel::Resource resource;
  bool gen_ai_latest = false;
  std::function<void(const std::string&)> log_warning;
};

void start_tracing(Tracing& tracing, const AppOptions& options, const AppDeps& deps,
                   const api::ContextDocument& doc, Transcript& transcript, TimePoint started) {
  if (!options.otel) return;
  otel::RunIdentity identity{doc.agent_name, doc.agent_namespace, doc.run.name,
                             std::string(to_string(doc.model.provider)), doc.model.model};
  otlp::ExporterConfig config = *options.otel;
  config.queue_spans_max = otel::kSpansPerRunMax;  // the recorder's own bound: none lost here
  tracing.resource = otel::run_resource(config, identity);
  tracing.gen_ai_latest = config.gen_ai_latest;
  tracing.log_warning = deps.log_warning;
  tracing.exporter = std::make_unique<otlp::Exporter>(config, tracing.resource, otel::kScopeName,
                                                      deps.http, deps.log_warning);
  tracing.recorder = std::make_unique<otel::SpanRecorder>(
      transcript, deps.clock, std::move(identity), started,
      otel::parse_traceparent(options.traceparent),
      [&exporter = *tracing.exporter](otel::Span span) { exporter.offer(std::move(span)); },
      config.gen_ai_latest);
}

// After the result is written: the root span ends, the last spans and the
// run's metrics go out, and what was lost is logged once.
void finish_tracing(Tracing& tracing, const api::RunResult& result, int exit_code) {
  if (!tracing.recorder) return;
  tracing.recorder->finish(
      result.stop_reason, exit_code == api::kExitFinished ? std::string() : result.stop_reason,
      result.input_tokens, result.output_tokens, result.finished_at.value_or(TimePoint()));
  if (std::vector<otel::Span> chats = tracing.recorder->chat_spans(); !chats.empty()) {
    const auto [start, end] = tracing.recorder->window();
    tracing.exporter->offer_metrics(
        otel::encode_otlp_metrics(tracing.resource, chats, start, end, tracing.gen_ai_latest));
  }
  tracing.exporter->shutdown();
  const std::uint64_t lost = tracing.exporter->stats().lost() + tracing.recorder->dropped();
  if (lost > 0 && tracing.log_warning) {
    tracing.log_warning("trace export: " + std::to_string(lost) +
                        " spans of this run were not exported");
  }
}

// What one heartbeat holds from its start to its result.
struct Session {
  explicit Session(AppDeps caller_deps)
      : deps(std::move(caller_deps)),
        transcript(deps.transcript_out, deps.clock),
        heartbeat(deps.clock),
        started(deps.clock.now()) {
    transcript.set_taps(&stdout_tail, nullptr);
  }
  AppDeps deps;  // its log sinks get the agent/run prefix once the document is read
  JsonLinesTranscript transcript;
  LogTail stdout_tail;
  std::unique_ptr<TranscriptFile> stored_transcript;  // on the archival volume, when it has one
  Heartbeat heartbeat;
  std::unique_ptr<ToolsLifeline> lifeline;
  std::unique_ptr<ShellExecutor> shell;
  Tracing tracing;
  TimePoint started;
  std::vector<std::string> notes;  // for the result, before the loop's own
};

// First, so the tools server sees the lifeline before anything can fail; it
// lives until the result is written.
void open_tools(Session& s, const AppOptions& options) {
  if (!options.tools_socket.empty()) {
    s.lifeline = std::make_unique<ToolsLifeline>(options.tools_socket, kToolsConnectWait);
    s.shell =
        std::make_unique<RemoteShell>(options.tools_socket, kToolsConnectWait, s.lifeline.get());
  } else if (options.tools_local) {
    s.shell = std::make_unique<LocalShell>();
  }
}

// Every log line from here on names the agent and the run.
void name_the_run_in_logs(AppDeps& deps, const api::ContextDocument& doc) {
  const std::string prefix =
      "agent=" + doc.agent_namespace + "/" + doc.agent_name + " run=" + doc.run.name + " ";
  for (auto* sink : {&deps.log_info, &deps.log_warning}) {
    if (*sink) {
      *sink = [inner = *sink, prefix](const std::string& message) { inner(prefix + message); };
    }
  }
}

std::optional<ConfigProblem> check_config(const api::ContextDocument& doc,
                                          const AppOptions& options) {
  if (doc.model.provider == api::Provider::kAnthropic && options.api_key.empty()) {
    return ConfigProblem{std::string("the Anthropic provider needs an API key in ") +
                         api::kEnvApiKey};
  }
  return std::nullopt;
}

// The agent's Lease: every beat may renew it, at most once per interval.
struct LeaseBeats {
  std::unique_ptr<LeaseRenewer> renewer;
  std::unique_ptr<LeaseExtender> extender;
};

LeaseBeats start_lease_beats(Session& s, const api::ContextDocument& doc) {
  LeaseBeats beats;
  if (doc.lease && s.deps.make_lease_renewer) beats.renewer = s.deps.make_lease_renewer(doc);
  if (beats.renewer) {
    beats.extender = std::make_unique<LeaseExtender>(
        *beats.renewer, doc.lease->renew_interval, doc.lease->stall_window, s.deps.log_warning,
        [&heartbeat = s.heartbeat] { return heartbeat.usage(); });
    s.heartbeat.add_callback(beats.extender->callback());
  }
  s.heartbeat.beat();
  return beats;
}

// Core memory: the spec's blocks merged with the agent's stored edits.
struct Memory {
  std::unique_ptr<MemoryStore> store;
  std::unique_ptr<CoreMemoryService> core;
  std::unique_ptr<ArchivalStore> archival;  // archival memory and conversation history
};

void open_core_memory(Session& s, const api::ContextDocument& doc, Memory& memory) {
  if (!doc.memory_config_map.empty() && s.deps.make_memory_store) {
    memory.store = s.deps.make_memory_store(doc);
  }
  if (!memory.store) {
    s.notes.push_back("memory edits last only for this heartbeat: no memory ConfigMap store");
  }
  memory.core = std::make_unique<CoreMemoryService>(doc.memory_blocks, memory.store.get());
  if (const kube::Done loaded = memory.core->load(); !loaded.ok()) {
    s.notes.push_back("stored memory could not be loaded: " + loaded.error().describe());
    log(s.deps.log_warning, s.notes.back());
  }
}

// Opens the store and records the outputs of recent runs; on any failure the
// heartbeat goes on without archival storage, and says why.
ArchivalDone open_archival_store(const api::ContextDocument& doc, Memory& memory) {
  auto opened = ArchivalStore::open(doc.archival_path);
  if (!opened.ok()) return std::move(opened).error();
  memory.archival = std::move(opened).value();
  for (const auto& run : doc.recent_runs) {
    if (run.name.empty()) continue;
    if (ArchivalDone failed =
            memory.archival->record_run_output(run.name, run.output, run.finished_at)) {
      return failed;
    }
  }
  return std::nullopt;
}

void open_archival(Session& s, const api::ContextDocument& doc, Memory& memory) {
  if (doc.archival_path.empty()) return;
  if (ArchivalDone failed = open_archival_store(doc, memory)) {
    memory.archival.reset();
    s.notes.push_back("archival storage unavailable: " + failed->message);
    log(s.deps.log_warning, s.notes.back());
  }
}

HttpModelClientOptions model_client_options(const Session& s, const AppOptions& options,
                                            const api::ContextDocument& doc) {
  HttpModelClientOptions model_options;
  model_options.provider = doc.model.provider;
  model_options.base_url = doc.model.base_url;
  model_options.api_key = options.api_key;
  model_options.call_timeout = options.model_call_timeout;
  model_options.retries_max = options.model_retries_max;
  model_options.cancel = s.deps.cancel;
  if (s.tracing.recorder) {
    model_options.traceparent = [&recorder = *s.tracing.recorder] {
      return recorder.chat_traceparent();
    };
  }
  return model_options;
}

LoopConfig loop_config(const Session& s, const api::ContextDocument& doc,
                       const CoreMemoryService& memory, const OfferedTools& offered) {
  LoopConfig config;
  config.model = doc.model.model;
  config.agent_type = doc.agent_type;
  config.tools = offered.tools;
  config.max_tokens = doc.model.max_tokens;
  config.pricing = doc.model.pricing;
  config.budget_cents = doc.budget.run_limit_cents();
  config.day_budget_cents = doc.budget.day_remaining_cents;
  config.budget_tokens = doc.budget.per_run_tokens;
  config.wall_deadline = wall_deadline_for(doc.run.deadline);
  config.first_message = render_heartbeat_message(doc);
  config.system_prompt = [&doc, &memory, tools = offered.tools, &clock = s.deps.clock] {
    return render_system_prompt(doc, memory.blocks(), tools, clock.now());
  };
  config.cancelled = s.deps.cancelled;
  config.log_warning = s.deps.log_warning;
  return config;
}

void announce_run(Session& s, const api::ContextDocument& doc, const LoopConfig& config) {
  nlohmann::json tool_names = nlohmann::json::array();
  for (const auto& tool : config.tools) tool_names.push_back(tool.name);
  s.transcript.emit({{"event", "run_started"},
                     {"agent", doc.agent_namespace + "/" + doc.agent_name},
                     {"run", doc.run.name},
                     {"agentType", std::string(api::to_string(doc.agent_type))},
                     {"provider", std::string(to_string(doc.model.provider))},
                     {"model", doc.model.model},
                     {"tools", tool_names},
                     {"wallDeadline", api::format_rfc3339_millis(config.wall_deadline)},
                     {"system", config.system_prompt()}});
  log(s.deps.log_info, "heartbeat started: type " + std::string(api::to_string(doc.agent_type)) +
                           ", " + std::to_string(config.tools.size()) + " tools");
}

// After the loop: what conversation_search finds next time.
void record_output(Session& s, const api::ContextDocument& doc, Memory& memory,
                   const api::RunResult& result) {
  if (memory.core->saves() > 0) {
    s.transcript.emit({{"event", "memory_saved"}, {"saves", memory.core->saves()}});
  }
  if (!memory.archival) return;
  if (ArchivalDone failed = memory.archival->record_run_output(
          doc.run.name, result.output, api::format_rfc3339_millis(s.deps.clock.now()))) {
    log(s.deps.log_warning,
        "could not record the output for conversation_search: " + failed->message);
  }
}

// The loop with everything it uses: memory, tools, the model, its config.
api::RunResult run_loop(Session& s, const AppOptions& options, const api::ContextDocument& doc) {
  LeaseBeats beats = start_lease_beats(s, doc);
  Memory memory;
  open_core_memory(s, doc, memory);
  open_archival(s, doc, memory);
  OfferedTools offered =
      offered_tools(api::capabilities(doc.agent_type), memory.archival != nullptr);
  s.notes.insert(s.notes.end(), offered.notes.begin(), offered.notes.end());
  Transcript& loop_transcript =
      s.tracing.recorder ? static_cast<Transcript&>(*s.tracing.recorder) : s.transcript;
  HttpModelClient model(model_client_options(s, options, doc), s.deps.http, s.deps.clock,
                        &loop_transcript, [&s] { s.heartbeat.beat(); });
  Toolbox tools({*memory.core, memory.archival.get(), s.heartbeat, s.deps.clock, doc.run.name,
                 options.secret_env, s.deps.cancelled, s.shell.get()});
  const LoopConfig config = loop_config(s, doc, *memory.core, offered);
  announce_run(s, doc, config);
  api::RunResult result =
      run_agent_loop(config, {model, tools, s.deps.clock, s.heartbeat, loop_transcript});
  result.notes.insert(result.notes.begin(), s.notes.begin(), s.notes.end());
  record_output(s, doc, memory, result);
  return result;
}

api::RunResult config_error(const ConfigProblem& problem, TimePoint started) {
  api::RunResult result;
  result.stop_reason = to_string(StopReason::kConfigError);
  result.error = problem.message;
  result.started_at = started;
  return result;
}

// Reads and checks the document, opens the stored transcript and the trace,
// runs the loop.
api::RunResult run_document(Session& s, const AppOptions& options) {
  auto read = read_context_document(options.context_path);
  if (const auto* problem = std::get_if<ConfigProblem>(&read)) {
    return config_error(*problem, s.started);
  }
  const api::ContextDocument& doc = std::get<api::ContextDocument>(read);
  name_the_run_in_logs(s.deps, doc);
  if (auto problem = check_config(doc, options)) return config_error(*problem, s.started);
  s.stored_transcript = open_stored_transcript(doc, s.notes, s.deps);
  s.transcript.set_taps(&s.stdout_tail, s.stored_transcript.get());
  start_tracing(s.tracing, options, s.deps, doc, s.transcript, s.started);
  return run_loop(s, options, doc);
}

// The result completed, recorded in the transcript(s), written, traced, logged.
AppOutcome finish(Session& s, const AppOptions& options, api::RunResult result) {
  AppOutcome outcome;
  if (!result.finished_at) result.finished_at = s.deps.clock.now();
  if (!result.last_beat) result.last_beat = s.heartbeat.last_beat();
  outcome.exit_code = api::exit_code_for(
      api::parse_stop_reason(result.stop_reason).value_or(StopReason::kInternalError));
  result.stdout_excerpt = s.stdout_tail.text();
  if (s.deps.stderr_tail) result.stderr_excerpt = s.deps.stderr_tail();
  if (s.stored_transcript) {
    s.transcript.set_taps(&s.stdout_tail, nullptr);
    close_stored_transcript(*s.stored_transcript, result, outcome.exit_code);
  }
  outcome.result_json = api::render_result(result);
  s.transcript.emit({{"event", "result"},
                     {"exitCode", outcome.exit_code},
                     {"result", nlohmann::json::parse(outcome.result_json)}});
  write_result(options.termination_path, outcome.result_json, s.deps);
  finish_tracing(s.tracing, result, outcome.exit_code);
  std::string summary = "heartbeat finished: stopReason " + result.stop_reason + ", exit " +
                        std::to_string(outcome.exit_code);
  if (!result.error.empty()) summary += ", error: " + result.error;
  log(outcome.exit_code == api::kExitFinished ? s.deps.log_info : s.deps.log_warning, summary);
  outcome.result = std::move(result);
  return outcome;
}

}  // namespace

AppOutcome run_heartbeat(const AppOptions& options, const AppDeps& caller_deps) {
  Session s(caller_deps);
  open_tools(s, options);
  api::RunResult result;
  try {
    result = run_document(s, options);
  } catch (const std::exception& error) {  // the last resort: a result is still written
    result.stop_reason = to_string(StopReason::kInternalError);
    result.error = std::string("internal error: ") + error.what();
  }
  return finish(s, options, std::move(result));
}

}  // namespace hb::runner
