// The runner's side of api/context_document.h. The operator writes the
// document, but the runner checks every field anyway: an error names the
// field, so a broken operator or a hand-made document is easy to fix.
#include <set>

#include "api/context_document.h"
#include "api/json_depth.h"
#include "api/json_text.h"

namespace hb::api {
namespace {

using nlohmann::json;

constexpr std::string_view kOpenAIBaseURLDefault = "https://api.openai.com/v1";
constexpr std::string_view kAnthropicBaseURLDefault = "https://api.anthropic.com";

ContextDocumentError problem_at(const std::string& field, const std::string& problem) {
  return {field, "context document: " + field + ": " + problem};
}

std::string join(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

const char* type_name(const json& value) {
  return value.type_name();
}

// Each accessor takes the object and the field path of that object. The
// first problem is kept; after it the accessors answer with empty values,
// and the section that read them is the last one parsed.
class Fields {
 public:
  void fail(const std::string& field, const std::string& problem) {
    if (!problem_) problem_ = problem_at(field, problem);
  }
  const std::optional<ContextDocumentError>& problem() const { return problem_; }

  static const json* find(const json& object, const std::string& key) {
    if (!object.is_object()) return nullptr;
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    return &*it;
  }

  const json& require_object(const json& object, const std::string& path, const std::string& key) {
    static const json kEmpty = json::object();
    const json* value = find(object, key);
    if (!value) {
      fail(join(path, key), "is required");
      return kEmpty;
    }
    if (!value->is_object()) {
      fail(join(path, key), std::string("must be an object, not ") + type_name(*value));
      return kEmpty;
    }
    return *value;
  }

  const json* optional_object(const json& object, const std::string& path, const std::string& key) {
    const json* value = find(object, key);
    if (value && !value->is_object()) {
      fail(join(path, key), std::string("must be an object, not ") + type_name(*value));
      return nullptr;
    }
    return value;
  }

  std::optional<std::string> optional_string(const json& object, const std::string& path,
                                             const std::string& key) {
    const json* value = find(object, key);
    if (!value) return std::nullopt;
    if (!value->is_string()) {
      fail(join(path, key), std::string("must be a string, not ") + type_name(*value));
      return std::nullopt;
    }
    return value->get<std::string>();
  }

  std::string require_string(const json& object, const std::string& path, const std::string& key) {
    auto value = optional_string(object, path, key);
    if (!value || value->empty()) {
      fail(join(path, key), "is required and must be a non-empty string");
      return {};
    }
    return *value;
  }

  std::optional<double> optional_number(const json& object, const std::string& path,
                                        const std::string& key, double min) {
    const json* value = find(object, key);
    if (!value) return std::nullopt;
    if (!value->is_number()) {
      fail(join(path, key), std::string("must be a number, not ") + type_name(*value));
      return std::nullopt;
    }
    double number = value->get<double>();
    if (number < min) {
      fail(join(path, key), "must be at least " + json(min).dump() + ", got " + value->dump());
      return std::nullopt;
    }
    return number;
  }

  std::optional<long long> optional_integer(const json& object, const std::string& path,
                                            const std::string& key, long long min, long long max) {
    const json* value = find(object, key);
    if (!value) return std::nullopt;
    if (!value->is_number_integer()) {
      fail(join(path, key), std::string("must be an integer, not ") +
                                (value->is_number() ? value->dump() : type_name(*value)));
      return std::nullopt;
    }
    long long number = value->get<long long>();
    if (number < min || number > max) {
      fail(join(path, key), "must be between " + std::to_string(min) + " and " +
                                std::to_string(max) + ", got " + std::to_string(number));
      return std::nullopt;
    }
    return number;
  }

  TimePoint require_time(const json& object, const std::string& path, const std::string& key) {
    std::string text = require_string(object, path, key);
    if (text.empty()) return {};
    return time_or_fail(text, join(path, key)).value_or(TimePoint{});
  }

  std::optional<TimePoint> optional_time(const json& object, const std::string& path,
                                         const std::string& key) {
    auto text = optional_string(object, path, key);
    if (!text || text->empty()) return std::nullopt;
    return time_or_fail(*text, join(path, key));
  }

 private:
  std::optional<TimePoint> time_or_fail(const std::string& text, const std::string& field) {
    auto time = parse_rfc3339(text);
    if (!time) {
      fail(field, "must be an RFC 3339 time like 2024-05-01T12:00:00Z, got \"" + text + "\"");
    }
    return time;
  }

  std::optional<ContextDocumentError> problem_;
};

void parse_agent(Fields& f, const json& doc, ContextDocument& out) {
  const json& agent = f.require_object(doc, "", "agent");
  out.agent_name = f.require_string(agent, "agent", "name");
  out.agent_namespace = f.optional_string(agent, "agent", "namespace").value_or("");
  if (auto type = f.optional_string(agent, "agent", "type"); type && !type->empty()) {
    auto parsed = api::parse_agent_type(*type);
    if (!parsed) {
      return f.fail("agent.type", "must be one of " + std::string(api::agent_type_names()) +
                                      ", got \"" + *type + "\"");
    }
    out.agent_type = *parsed;
  }
}

void parse_model(Fields& f, const json& doc, ContextDocument& out) {
  const json& model = f.require_object(doc, "", "model");
  std::string provider = f.require_string(model, "model", "provider");
  auto parsed = parse_provider(provider);
  if (!parsed) {
    return f.fail("model.provider",
                  "must be \"openai\" (any OpenAI-compatible endpoint) or \"anthropic\", got \"" +
                      provider + "\"");
  }
  out.model.provider = *parsed;
  out.model.model = f.require_string(model, "model", "model");
  out.model.base_url = f.optional_string(model, "model", "baseURL").value_or("");
  if (out.model.base_url.empty()) {
    out.model.base_url = std::string(
        out.model.provider == Provider::kOpenAI ? kOpenAIBaseURLDefault : kAnthropicBaseURLDefault);
  }
  if (out.model.base_url.rfind("http://", 0) != 0 && out.model.base_url.rfind("https://", 0) != 0) {
    return f.fail("model.baseURL",
                  "must start with https:// or http://, got \"" + out.model.base_url + "\"");
  }
  while (!out.model.base_url.empty() && out.model.base_url.back() == '/')
    out.model.base_url.pop_back();
  out.model.max_tokens =
      static_cast<int>(f.optional_integer(model, "model", "maxTokens", 1, kMaxTokensMax)
                           .value_or(kMaxTokensDefault));
  if (const json* pricing = f.optional_object(model, "model", "pricing")) {
    out.model.pricing.input_cents_per_million_tokens =
        f.optional_number(*pricing, "model.pricing", "inputCentsPerMillionTokens", 0).value_or(0);
    out.model.pricing.output_cents_per_million_tokens =
        f.optional_number(*pricing, "model.pricing", "outputCentsPerMillionTokens", 0).value_or(0);
    out.model.pricing.cached_input_cents_per_million_tokens =
        f.optional_number(*pricing, "model.pricing", "cachedInputCentsPerMillionTokens", 0);
    out.model.pricing.cache_write_input_cents_per_million_tokens =
        f.optional_number(*pricing, "model.pricing", "cacheWriteInputCentsPerMillionTokens", 0);
  }
}

void parse_memory(Fields& f, const json& doc, ContextDocument& out) {
  const json* memory = f.optional_object(doc, "", "memory");
  if (!memory) return;
  out.memory_config_map = f.optional_string(*memory, "memory", "configMapName").value_or("");
  const json* blocks = Fields::find(*memory, "blocks");
  if (!blocks) return;
  if (!blocks->is_array())
    return f.fail("memory.blocks", std::string("must be an array, not ") + type_name(*blocks));
  std::set<std::string> labels;
  for (std::size_t i = 0; i < blocks->size(); ++i) {
    std::string path = "memory.blocks[" + std::to_string(i) + "]";
    const json& block = (*blocks)[i];
    if (!block.is_object()) {
      return f.fail(path, std::string("must be an object, not ") + type_name(block));
    }
    MemoryBlock parsed;
    parsed.label = f.require_string(block, path, "label");
    if (!labels.insert(parsed.label).second)
      return f.fail(path + ".label", "duplicate label \"" + parsed.label + "\"");
    parsed.value = f.optional_string(block, path, "value").value_or("");
    parsed.limit =
        static_cast<int>(f.optional_integer(block, path, "limit", 1, kCoreMemoryBlockLimitMax)
                             .value_or(kCoreMemoryBlockLimitDefault));
    out.memory_blocks.push_back(std::move(parsed));
  }
}

void parse_budget(Fields& f, const json& doc, ContextDocument& out) {
  const json* budget = f.optional_object(doc, "", "budget");
  if (!budget) return;
  out.budget.per_run_cents = f.optional_number(*budget, "budget", "perRunCents", 0);
  out.budget.month_remaining_cents = f.optional_number(*budget, "budget", "monthRemainingCents", 0);
  out.budget.day_remaining_cents = f.optional_number(*budget, "budget", "dayRemainingCents", 0);
  // 0 means no cap, as on the Agent.
  if (auto tokens = f.optional_integer(*budget, "budget", "perRunTokens", 0, kPerRunTokensMax);
      tokens && *tokens > 0) {
    out.budget.per_run_tokens = *tokens;
  }
}

void parse_recent_runs(Fields& f, const json& doc, ContextDocument& out) {
  const json* runs = Fields::find(doc, "recentRuns");
  if (!runs) return;
  if (!runs->is_array())
    return f.fail("recentRuns", std::string("must be an array, not ") + type_name(*runs));
  for (std::size_t i = 0; i < runs->size(); ++i) {
    std::string path = "recentRuns[" + std::to_string(i) + "]";
    const json& run = (*runs)[i];
    if (!run.is_object()) {
      return f.fail(path, std::string("must be an object, not ") + type_name(run));
    }
    RecentRun parsed;
    parsed.name = f.optional_string(run, path, "name").value_or("");
    parsed.finished_at = f.optional_string(run, path, "finishedAt").value_or("");
    parsed.phase = f.optional_string(run, path, "phase").value_or("");
    parsed.stop_reason = f.optional_string(run, path, "stopReason").value_or("");
    parsed.output = f.optional_string(run, path, "output").value_or("");
    out.recent_runs.push_back(std::move(parsed));
  }
}

void parse_run(Fields& f, const json& doc, ContextDocument& out) {
  const json& run = f.require_object(doc, "", "run");
  out.run.name = f.require_string(run, "run", "name");
  out.run.uid = f.optional_string(run, "run", "uid").value_or("");
  out.run.invocation_source =
      f.optional_string(run, "run", "invocationSource").value_or("scheduler");
  static const std::set<std::string> kSources = {"scheduler", "manual", "callback"};
  if (!kSources.count(out.run.invocation_source)) {
    f.fail("run.invocationSource",
           "must be scheduler, manual or callback, got \"" + out.run.invocation_source + "\"");
  }
  out.run.trigger_detail = f.optional_string(run, "run", "triggerDetail").value_or("");
  if (const json* metadata = f.optional_object(run, "run", "metadata")) {
    if (std::string problem = run_metadata_problem(*metadata); !problem.empty()) {
      f.fail("run.metadata", problem);
    }
    out.run.metadata = usable_run_metadata(metadata);
  }
  out.run.scheduled_time = f.optional_time(run, "run", "scheduledTime");
  out.run.deadline = f.require_time(run, "run", "deadline");
}

void parse_lease(Fields& f, const json& doc, ContextDocument& out) {
  const json* lease = f.optional_object(doc, "", "lease");
  if (!lease) return;
  LeaseConfig parsed;
  parsed.name = f.require_string(*lease, "lease", "name");
  parsed.stall_window = std::chrono::seconds(f.optional_integer(*lease, "lease", "durationSeconds",
                                                                kRunStallWindowMin.count(),
                                                                kRunStallWindowMax.count())
                                                 .value_or(kRunStallWindowDefault.count()));
  parsed.renew_interval = std::chrono::seconds(
      f.optional_integer(*lease, "lease", "renewIntervalSeconds", 1, kRunStallWindowMax.count())
          .value_or(kLeaseRenewIntervalDefault.count()));
  if (parsed.renew_interval >= parsed.stall_window) {
    f.fail("lease.renewIntervalSeconds", "must be shorter than lease.durationSeconds (" +
                                             std::to_string(parsed.stall_window.count()) + ")");
  }
  out.lease = parsed;
}

void parse_transcripts(Fields& f, const json& doc, ContextDocument& out) {
  const json* transcripts = f.optional_object(doc, "", "transcripts");
  if (transcripts == nullptr) return;
  out.transcript_dir = f.require_string(*transcripts, "transcripts", "dir");
  const json* keep = Fields::find(*transcripts, "keep");
  if (keep == nullptr) return;
  if (!keep->is_array() || keep->size() > kTranscriptKeepMax) {
    return f.fail("transcripts.keep", "must be an array of at most " +
                                          std::to_string(kTranscriptKeepMax) + " run names");
  }
  for (const json& name : *keep) {
    if (!name.is_string()) return f.fail("transcripts.keep", "must hold run names (strings)");
    out.transcript_keep.push_back(name.get<std::string>());
  }
}

void parse_heartbeat(Fields& f, const json& doc, ContextDocument& out) {
  const json& heartbeat = f.require_object(doc, "", "heartbeat");
  out.heartbeat_prompt = f.require_string(heartbeat, "heartbeat", "prompt");
}

void parse_archival(Fields& f, const json& doc, ContextDocument& out) {
  if (const json* archival = f.optional_object(doc, "", "archival")) {
    out.archival_path = f.optional_string(*archival, "archival", "path").value_or("");
  }
}

void parse_header(Fields& f, const json& doc, ContextDocument& /*out*/) {
  if (!doc.is_object()) {
    return f.fail("(document)", std::string("must be a JSON object, not ") + type_name(doc));
  }
  if (auto kind = f.optional_string(doc, "", "kind"); kind && *kind != kContextDocumentKind) {
    f.fail("kind", "must be HeartbeatContext, got \"" + *kind + "\"");
  }
}

void parse_persona(Fields& f, const json& doc, ContextDocument& out) {
  out.persona = f.optional_string(doc, "", "persona").value_or("");
}

// In the document's order: the first problem found is the one reported.
using Section = void (*)(Fields&, const json&, ContextDocument&);
constexpr Section kSections[] = {
    parse_header, parse_agent,       parse_model, parse_persona, parse_memory,   parse_heartbeat,
    parse_budget, parse_recent_runs, parse_run,   parse_lease,   parse_archival, parse_transcripts,
};

}  // namespace

ContextDocumentResult parse_context_document(const json& doc) {
  Fields fields;
  ContextDocument out;
  for (Section section : kSections) {
    section(fields, doc, out);
    if (fields.problem()) return *fields.problem();
  }
  return out;
}

ContextDocumentResult parse_context_document_text(std::string_view text) {
  if (text.size() > kContextDocumentBytesMax) {
    return problem_at("(document)", "is " + std::to_string(text.size()) +
                                        " bytes, more than the limit of " +
                                        std::to_string(kContextDocumentBytesMax));
  }
  if (api::json_nested_deeper_than(text, kContextDocumentDepthMax)) {
    return problem_at("(document)", "is nested deeper than " +
                                        std::to_string(kContextDocumentDepthMax) + " levels");
  }
  auto doc = parse_json_text(text);
  if (!doc.ok()) return problem_at("(document)", "is not valid JSON: " + doc.error().message);
  return parse_context_document(doc.value());
}

}  // namespace hb::api
