#include "runner/agent_loop.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "api/json_depth.h"
#include "api/json_text.h"
#include "api/rfc3339.h"
#include "api/utf8.h"
#include "runner/cost.h"
#include "runner/errors.h"
#include "runner/limits.h"
#include "runner/stop_rules.h"
#include "runner/wire_util.h"

namespace hb::runner {
namespace {

using nlohmann::json;

json calls_to_json(const std::vector<ToolCall>& calls) {
  json out = json::array();
  for (const auto& call : calls) {
    out.push_back(
        {{"id", call.id}, {"name", call.name}, {"arguments", api::sanitize_utf8(call.arguments)}});
  }
  return out;
}

// A reply's token counts for the transcript; the cache parts only when reported.
json usage_json(const ModelReply& reply) {
  json usage = {{"inputTokens", reply.usage.input_tokens},
                {"outputTokens", reply.usage.output_tokens}};
  if (reply.cache_read_tokens > 0) usage["cacheReadInputTokens"] = reply.cache_read_tokens;
  if (reply.cache_write_tokens > 0) usage["cacheWriteInputTokens"] = reply.cache_write_tokens;
  return usage;
}

std::string offered_names(const std::vector<ToolSpec>& tools) {
  std::string out;
  for (const auto& tool : tools) out += (out.empty() ? "" : ", ") + tool.name;
  return out.empty() ? "(none)" : out;
}

// A failed call's error.type (api/call_durations.h): its kind, an HTTP
// status by class.
api::CallErrorType call_error_type(const ProviderError& error) {
  switch (error.kind()) {
    case ProviderError::Kind::kHttpStatus:
      return api::call_error_type_of_status(error.status());
    case ProviderError::Kind::kQuota:
      return api::CallErrorType::kQuota;
    case ProviderError::Kind::kTimeout:
      return api::CallErrorType::kTimeout;
    case ProviderError::Kind::kTransport:
      return api::CallErrorType::kTransport;
    case ProviderError::Kind::kBadResponse:
      return api::CallErrorType::kBadResponse;
    case ProviderError::Kind::kCancelled:
      return api::CallErrorType::kCancelled;
  }
  return api::CallErrorType::kOther;
}

// A runner bound reached while answering a reply's tool calls.
struct Bound {
  StopReason reason;
  std::string why;
};

class Loop {
 public:
  Loop(const LoopConfig& config, LoopDeps deps) : config_(config), deps_(deps) {}

  api::RunResult run() {
    result_.started_at = deps_.clock.now();
    result_.cost_cents = 0.0;
    result_.action_tool_calls = 0;
    messages_.push_back({Message::Role::kUser, config_.first_message, {}, {}});
    deps_.transcript.emit(
        {{"event", "user_message"}, {"text", api::sanitize_utf8(config_.first_message)}});
    try {
      step_until_stop();
    } catch (const std::exception& error) {  // the last resort: usage so far is kept
      stop(StopReason::kInternalError, std::string("internal error: ") + error.what());
    }
    result_.finished_at = deps_.clock.now();
    result_.last_beat = deps_.heartbeat.last_beat();
    deps_.transcript.emit({{"event", "stop"},
                           {"stopReason", result_.stop_reason},
                           {"iterations", result_.iterations},
                           {"costCents", spent_cents_},
                           {"error", result_.error}});
    return result_;
  }

 private:
  void stop(StopReason reason, std::string error = {}) {
    stopped_ = true;
    result_.stop_reason = to_string(reason);
    result_.error = std::move(error);
  }

  // The run ends with the provider's failure, by its kind.
  void stop_for(const ProviderError& error) {
    if (error.kind() == ProviderError::Kind::kCancelled) {
      stop(StopReason::kCancelled, "terminated by signal during a model call");
    } else if (error.kind() == ProviderError::Kind::kQuota) {
      stop(StopReason::kProviderQuota, error.what());
      result_.provider_reset_at = error.reset_at();
    } else {
      stop(StopReason::kProviderError, error.what());
    }
  }

  void step_until_stop() {
    while (!stopped_) {
      if (config_.cancelled && config_.cancelled())
        return stop(StopReason::kCancelled, "terminated by signal");
      ModelRequest request = build_request();
      if (auto reason = bound_reached(request)) return stop(*reason);
      std::optional<ModelReply> reply = call_model(request);
      if (!reply) return;  // stopped by the provider's failure
      if (reply->tool_calls.empty()) {
        return stop(reply->finish == ModelReply::Finish::kMaxTokens ? StopReason::kMaxTokens
                                                                    : StopReason::kCompleted);
      }
      run_tool_calls(reply->tool_calls);
    }
  }

  // A bound that stops the loop before `request` is sent; a budget stop
  // leaves its figures in the transcript.
  std::optional<StopReason> bound_reached(const ModelRequest& request) {
    BoundsInput bounds{static_cast<int>(result_.iterations),
                       api::capabilities(config_.agent_type).max_iterations,
                       deps_.clock.now(),
                       config_.wall_deadline,
                       spent_cents_,
                       worst_case_call_cents(request, config_.pricing),
                       config_.budget_cents,
                       result_.input_tokens + result_.output_tokens,
                       worst_case_call_tokens(request),
                       config_.budget_tokens,
                       request_content_bytes(request),
                       config_.day_budget_cents};
    auto reason = check_bounds_before_call(bounds);
    if (reason) result_.error.clear();
    if (reason == StopReason::kBudget || reason == StopReason::kDailyBudget) {
      deps_.transcript.emit({{"event", "budget_stop"},
                             {"spentCents", bounds.spent_cents},
                             {"nextCallWorstCents", bounds.next_call_worst_cents},
                             {"budgetCents", *bounds.budget_cents},
                             {"daily", reason == StopReason::kDailyBudget}});
    } else if (reason == StopReason::kPerRunTokenBudget) {
      deps_.transcript.emit({{"event", "token_budget_stop"},
                             {"tokensUsed", bounds.tokens_used},
                             {"nextCallWorstTokens", bounds.next_call_worst_tokens},
                             {"budgetTokens", *bounds.budget_tokens}});
    } else if (reason == StopReason::kRequestBytes) {
      result_.error = "the next model request would hold " + std::to_string(bounds.request_bytes) +
                      " bytes; the runner sends at most " + std::to_string(kModelRequestBytesMax);
      deps_.transcript.emit({{"event", "request_bytes_stop"},
                             {"requestBytes", bounds.request_bytes},
                             {"requestBytesMax", kModelRequestBytesMax}});
    }
    return reason;
  }

  ModelRequest build_request() const {
    ModelRequest request;
    request.model = config_.model;
    request.system = config_.system_prompt ? config_.system_prompt() : std::string();
    request.messages = messages_;
    request.tools = config_.tools;
    request.max_tokens = config_.max_tokens;
    request.deadline = config_.wall_deadline;
    return request;
  }

  // The reply, its usage counted and reported; nullopt when the provider
  // gave none (the loop is stopped).
  std::optional<ModelReply> call_model(const ModelRequest& request) {
    deps_.heartbeat.beat();
    deps_.transcript.emit({{"event", "model_request"},
                           {"iteration", result_.iterations + 1},
                           {"messages", request.messages.size()},
                           {"tools", request.tools.size()},
                           {"estimatedInputTokens", estimate_input_tokens(request)}});
    ++result_.llm_calls;
    ++result_.iterations;
    const TimePoint call_start = deps_.clock.now();
    ModelResult answer = deps_.model.complete(request);
    if (!answer.ok()) {
      time_call(call_start, call_error_type(answer.error()));
      stop_for(answer.error());
      return std::nullopt;
    }
    ModelReply reply = std::move(answer).value();
    time_call(call_start, std::nullopt);
    deps_.heartbeat.beat();
    estimate_missing_usage(request, reply);
    result_.input_tokens += reply.usage.input_tokens;
    result_.output_tokens += reply.usage.output_tokens;
    result_.cache_read_input_tokens += reply.cache_read_tokens;
    result_.cache_write_input_tokens += reply.cache_write_tokens;
    spent_cents_ +=
        cost_cents(reply.usage, reply.cache_read_tokens, reply.cache_write_tokens, config_.pricing);
    result_.cost_cents = spent_cents_;
    // On the Lease at once: a runner killed after this call is still charged for it.
    deps_.heartbeat.report_usage(api::UsageReport{result_, ""});
    if (!reply.text.empty()) result_.output = reply.text;
    deps_.transcript.emit({{"event", "model_reply"},
                           {"iteration", result_.iterations},
                           {"text", api::sanitize_utf8(reply.text)},
                           {"toolCalls", calls_to_json(reply.tool_calls)},
                           {"finishReason", reply.finish_raw},
                           {"model", api::sanitize_utf8(reply.model)},
                           {"usage", usage_json(reply)},
                           {"costCents", spent_cents_}});
    messages_.push_back({Message::Role::kAssistant, reply.text, reply.tool_calls, {}});
    return reply;
  }

  // The operator's gen_ai.client.operation.duration (api/call_durations.h):
  // a call, retries included, as the client waited for it; one that failed
  // under its error type.
  void time_call(TimePoint started, std::optional<api::CallErrorType> failed) {
    const std::chrono::duration<double> took = deps_.clock.now() - started;
    if (!result_.call_durations) result_.call_durations.emplace();
    if (failed) {
      api::add_failed_call(*result_.call_durations, *failed, took.count());
    } else {
      api::add_call(*result_.call_durations, took.count());
    }
  }

  // A count the provider did not report is charged as estimated, so the
  // budget still holds; each estimated field is named once in the result.
  void estimate_missing_usage(const ModelRequest& request, ModelReply& reply) {
    if (!reply.input_reported) {
      reply.usage.input_tokens = std::max(reply.usage.input_tokens, estimate_input_tokens(request));
      mark_estimated("inputTokens");
    }
    if (!reply.output_reported) {
      reply.usage.output_tokens = static_cast<long long>(
          (reply.text.size() + reply.tool_calls.size() * 64) / kPromptBytesPerTokenMin + 1);
      mark_estimated("outputTokens");
    }
  }

  void mark_estimated(const std::string& field) {
    auto& fields = result_.estimated_usage;
    if (std::find(fields.begin(), fields.end(), field) != fields.end()) return;
    fields.push_back(field);
    result_.notes.push_back("the provider did not report usage." + field +
                            "; it was estimated from the request and reply sizes");
  }

  bool offered(const std::string& name) const {
    return std::any_of(config_.tools.begin(), config_.tools.end(),
                       [&](const ToolSpec& tool) { return tool.name == name; });
  }

  // Answers the reply's calls in order. Past a runner bound the remaining
  // calls are answered "not run" (the model's next turn would see why) and
  // the run stops with that bound's reason once the answers are recorded.
  void run_tool_calls(const std::vector<ToolCall>& calls) {
    Message results{Message::Role::kToolResults, {}, {}, {}};
    std::optional<Bound> bound;
    std::size_t not_run = 0;
    for (const auto& call : calls) {
      if (!bound && results.tool_results.size() >= kToolCallsPerReplyMax) {
        bound = Bound{StopReason::kToolCallsPerReply,
                      "the model asked for " + std::to_string(calls.size()) +
                          " tool calls in one reply; the runner runs at most " +
                          std::to_string(kToolCallsPerReplyMax)};
      }
      if (bound) {
        results.tool_results.push_back({call.id, call.name, "not run: " + bound->why, true});
        ++not_run;
        continue;
      }
      auto answered = run_tool_call(call);
      if (stopped_) return;  // pause_heartbeats, tools_unavailable, repeated call
      if (!answered) continue;
      bound = charge_tool_output(answered->content);
      deps_.transcript.emit({{"event", "tool_result"},
                             {"id", answered->call_id},
                             {"name", answered->name},
                             {"isError", answered->is_error},
                             {"content", answered->content}});
      results.tool_results.push_back(std::move(*answered));
    }
    if (not_run > 0) {
      deps_.transcript.emit(
          {{"event", "tool_calls_not_run"}, {"count", not_run}, {"why", bound->why}});
    }
    messages_.push_back(std::move(results));
    if (bound) stop(bound->reason, bound->why);
  }

  // One call run; nullopt when the loop stopped instead.
  std::optional<ToolResult> run_tool_call(const ToolCall& call) {
    ++result_.tool_calls;
    deps_.transcript.emit({{"event", "tool_call"},
                           {"id", call.id},
                           {"name", call.name},
                           {"arguments", api::sanitize_utf8(call.arguments)}});
    if (detector_.record(call.name, call.arguments)) {
      stop(StopReason::kRepeatedToolCall,
           "the model called " + call.name + " with the same arguments " +
               std::to_string(kRepeatedToolCallsMax) + " times in a row");
      return std::nullopt;
    }
    if (offered(call.name) && !api::tool_only_reads(call.name)) ++*result_.action_tool_calls;
    ToolOutcome outcome = answer(call);
    if (stopped_) return std::nullopt;
    return ToolResult{call.id, call.name, api::sanitize_utf8(outcome.content), outcome.is_error};
  }

  // Adds `content` to the run's tool output; past the bound it is replaced
  // by a notice and the bound returned.
  std::optional<Bound> charge_tool_output(std::string& content) {
    tool_output_bytes_ += json_escaped_bytes(content);
    if (tool_output_bytes_ <= kToolOutputBytesPerRunMax) return std::nullopt;
    Bound bound{StopReason::kToolOutputBytes, "this run's tool output reached " +
                                                  std::to_string(kToolOutputBytesPerRunMax) +
                                                  " bytes (JSON-escaped), the runner's bound"};
    content = "output withheld: " + bound.why;
    return bound;
  }

  ToolOutcome answer(const ToolCall& call) {
    if (!offered(call.name)) {
      deps_.transcript.emit({{"event", "forbidden_tool"},
                             {"name", call.name},
                             {"agentType", std::string(api::to_string(config_.agent_type))}});
      if (config_.log_warning) {
        config_.log_warning("refused tool \"" + call.name + "\": not available to type " +
                            std::string(api::to_string(config_.agent_type)));
      }
      return {"tool \"" + call.name + "\" is not available to this agent (type " +
                  std::string(api::to_string(config_.agent_type)) +
                  "); available tools: " + offered_names(config_.tools),
              true};
    }
    if (api::json_nested_deeper_than(call.arguments, kToolArgumentsDepthMax)) {
      return {"arguments are nested deeper than " + std::to_string(kToolArgumentsDepthMax) +
                  " levels; send a flat JSON object matching the tool's schema",
              true};
    }
    const auto parsed = api::parse_json_text(call.arguments);
    if (!parsed.ok()) {
      return {"arguments are not valid JSON (" + parsed.error().message +
                  "); send a JSON object matching the tool's schema",
              true};
    }
    const json& arguments = parsed.value();
    if (!arguments.is_object()) {
      return {"arguments must be a JSON object, got " + std::string(arguments.type_name()), true};
    }
    if (call.name == api::kToolPauseHeartbeats) {
      int minutes = pause_minutes_from_arguments(arguments);
      result_.pause_minutes = minutes;
      result_.pause_until = deps_.clock.now() + std::chrono::minutes(minutes);
      deps_.transcript.emit({{"event", "pause_heartbeats"},
                             {"minutes", minutes},
                             {"pauseUntil", api::format_rfc3339_millis(*result_.pause_until)}});
      stop(StopReason::kPauseHeartbeats);
      return {"heartbeats paused for " + std::to_string(minutes) + " minutes", false};
    }
    deps_.heartbeat.beat();
    ToolOutcome outcome = deps_.tools.run(call.name, arguments, config_.wall_deadline);
    deps_.heartbeat.beat();
    if (outcome.tools_unavailable) stop(StopReason::kToolsUnavailable, outcome.content);
    return outcome;
  }

  const LoopConfig& config_;
  LoopDeps deps_;
  api::RunResult result_;
  double spent_cents_ = 0;  // written into result_.cost_cents
  std::vector<Message> messages_;
  RepeatedCallDetector detector_;
  std::size_t tool_output_bytes_ = 0;  // JSON-escaped, against kToolOutputBytesPerRunMax
  bool stopped_ = false;
};

}  // namespace

int pause_minutes_from_arguments(const json& arguments) {
  double minutes = api::kPauseMinutesDefault;
  auto it = arguments.find("minutes");
  if (it != arguments.end()) {
    if (it->is_number()) {
      minutes = it->get<double>();
    } else if (it->is_string()) {
      const std::string text = it->get<std::string>();
      char* end = nullptr;
      double parsed = std::strtod(text.c_str(), &end);
      if (end != text.c_str() && *end == '\0') minutes = parsed;
    }
  }
  if (!std::isfinite(minutes)) minutes = api::kPauseMinutesDefault;
  minutes =
      std::clamp(std::round(minutes), double(api::kPauseMinutesMin), double(api::kPauseMinutesMax));
  return static_cast<int>(minutes);
}

api::RunResult run_agent_loop(const LoopConfig& config, LoopDeps deps) {
  return Loop(config, deps).run();
}

}  // namespace hb::runner
