#include "controllers/run/run_record.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>

#include "api/hb_assert.h"
#include "controllers/model/agent_grants.h"
#include "controllers/model/names.h"
#include "controllers/model/run_view.h"
#include "controllers/schedule/duration.h"

namespace hb::controllers {

static_assert(kRunRetentionDefault > std::chrono::seconds::zero() &&
              kRunRetentionDefault <= kRunRetentionMax);

namespace {

// The annotation's value, or nullptr when the object has none.
const std::string* annotation_ptr(const Json& object, const char* key,
                                  const char* annotations_path = "metadata/annotations") {
  HB_ASSERT(key != nullptr && *key != '\0' && annotations_path != nullptr);
  const Json* annotations = find_path(object, annotations_path);
  if (annotations == nullptr || !annotations->is_object()) return nullptr;
  auto it = annotations->find(key);
  if (it == annotations->end() || !it->is_string()) return nullptr;
  return &it->get_ref<const std::string&>();
}

std::optional<std::vector<std::string>> split_policies(const std::string* value) {
  if (value == nullptr) return std::nullopt;
  std::vector<std::string> names;
  std::string_view rest = *value;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    if (!name.empty()) names.emplace_back(name);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return names;
}

// The uid of the run's Agent ownerReference ("" without one).
std::string agent_owner_uid(const Json& run) {
  const Json* owners = find_path(run, "metadata/ownerReferences");
  if (owners == nullptr || !owners->is_array()) return "";
  for (const Json& owner : *owners) {
    if (string_at(owner, "kind") == kAgentKind) return string_at(owner, "uid");
  }
  return "";
}

// The audit line keeps its members in the documented order ("audit" first).
using OrderedJson = nlohmann::ordered_json;

// The member of `from` at `path`, when there is one.
void copy_member(OrderedJson& to, const char* key, const Json& from, std::string_view path) {
  HB_ASSERT_MSG(key != nullptr && *key != '\0', "a member is copied under a name of its own");
  if (const Json* value = find_path(from, path); value != nullptr && !value->is_null()) {
    to[key] = OrderedJson(*value);
  }
}

}  // namespace

bool run_of_agent(const Json& run, std::string_view agent_uid) {
  if (agent_uid.empty()) return false;
  if (const std::string* uid = annotation_ptr(run, kAnnotationAgentUid)) return *uid == agent_uid;
  return agent_owner_uid(run) == agent_uid;
}

bool run_of_other_agent(const Json& run, std::string_view agent_uid) {
  if (const std::string* uid = annotation_ptr(run, kAnnotationAgentUid)) {
    return !uid->empty() && *uid != agent_uid;
  }
  const std::string owner = agent_owner_uid(run);
  return !owner.empty() && owner != agent_uid;
}

std::string policies_annotation(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    if (!out.empty()) out += ",";
    out += name;
  }
  return out;
}

std::optional<std::vector<std::string>> stamped_policies(const Json& run) {
  return split_policies(annotation_ptr(run, kAnnotationPolicies));
}

bool job_of_run(const Json& job, const Json& run) {
  const std::string recorded = string_at(run, "status/jobUID");
  if (!recorded.empty() && recorded != string_at(job, "metadata/uid")) return false;
  return controlled_by(job, string_at(run, "metadata/uid"));
}

std::vector<std::string> admitting_policies(
    const Json* job, const Json& run,
    const std::function<bool(const std::string& policy)>& policy_exists) {
  std::vector<std::string> names;
  const std::string* trusted =
      job != nullptr && job_of_run(*job, run)
          ? annotation_ptr(*job, kAnnotationPolicies, "spec/template/metadata/annotations")
          : nullptr;
  if (trusted != nullptr) {
    names = *split_policies(trusted);
  } else {
    for (std::string& name : stamped_policies(run).value_or(names)) {
      if (policy_exists(name)) names.push_back(std::move(name));
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  if (names.size() > kAdmittingPoliciesMax) names.resize(kAdmittingPoliciesMax);
  HB_ASSERT_MSG(
      std::adjacent_find(names.begin(), names.end(), std::greater_equal<>()) == names.end(),
      "the admitting policies are named once each, in order");
  return names;
}

Json charge_record(const std::string& provider, const std::string& model, const Pricing& pricing,
                   const std::string& source, const std::string& policy) {
  Json charge = Json::object();
  charge["provider"] = provider;
  charge["model"] = model;
  charge["inputCentsPerMillionTokens"] = pricing.input_cents_per_million_tokens;
  charge["outputCentsPerMillionTokens"] = pricing.output_cents_per_million_tokens;
  charge["cachedInputCentsPerMillionTokens"] = cached_input_price(pricing);
  charge["cacheWriteInputCentsPerMillionTokens"] = cache_write_input_price(pricing);
  charge["source"] = source;
  if (!policy.empty()) charge["policy"] = policy;
  return charge;
}

void put_cache_counts(Json& out, const UsageCounts& usage) {
  HB_ASSERT_MSG(out.is_object(), "cache counts join the other usage counts");
  if (usage.cache_read_input_tokens > 0) out[kCacheReadInputTokens] = usage.cache_read_input_tokens;
  if (usage.cache_write_input_tokens > 0)
    out[kCacheWriteInputTokens] = usage.cache_write_input_tokens;
}

std::string audit_line(const Json& run) {
  OrderedJson line = OrderedJson::object();
  line[kAuditKey] = kAuditRunValue;
  line["namespace"] = string_at(run, "metadata/namespace");
  line["agent"] = string_at(run, "spec/agentRef/name");
  line["run"] = string_at(run, "metadata/name");
  line["uid"] = string_at(run, "metadata/uid");
  line["agentUid"] = annotation_ptr(run, kAnnotationAgentUid) != nullptr
                         ? *annotation_ptr(run, kAnnotationAgentUid)
                         : agent_owner_uid(run);
  line["source"] = string_at(run, "spec/invocationSource");
  for (const auto& [key, path] : std::initializer_list<std::pair<const char*, std::string_view>>{
           {"scheduledTime", "spec/scheduledTime"},
           {"phase", "status/phase"},
           {"reason", "status/reason"},
           {"stopReason", "status/stopReason"},
           {"exitCode", "status/exitCode"},
           {"startedAt", "status/startedAt"},
           {"finishedAt", "status/finishedAt"},
           {"durationSeconds", "status/durationSeconds"}}) {
    copy_member(line, key, run, path);
  }
  OrderedJson usage = OrderedJson::object();
  for (const char* key : {"inputTokens", kCacheReadInputTokens, kCacheWriteInputTokens,
                          "outputTokens", "llmCalls", "toolCalls", "iterations"}) {
    copy_member(usage, key, run, std::string("status/usage/") + key);
  }
  line["usage"] = std::move(usage);
  line["costCents"] = number_at(run, "status/usage/costCents").value_or(0);
  if (const Json* charge = find_path(run, "status/charge");
      charge != nullptr && charge->is_object()) {
    OrderedJson ordered = OrderedJson::object();
    for (const char* key : {"provider", "model", "inputCentsPerMillionTokens",
                            "outputCentsPerMillionTokens", "cachedInputCentsPerMillionTokens",
                            "cacheWriteInputCentsPerMillionTokens", "source", "policy"}) {
      copy_member(ordered, key, *charge, key);
    }
    line["charge"] = std::move(ordered);
  }
  copy_member(line, "policies", run, "status/policies");
  copy_member(line, "heldCents", run, "status/heldCents");
  // One line whatever a tenant wrote: the encoder escapes every control
  // byte and quote; invalid UTF-8 is replaced rather than thrown on.
  std::string text = line.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
  HB_ASSERT_MSG(text.find('\n') == std::string::npos, "an audit record is one line");
  return text;
}

RetentionPlan plan_retention(const std::vector<Json>& orphans, std::chrono::seconds retention,
                             TimePoint now) {
  RetentionPlan plan;
  if (retention <= std::chrono::seconds::zero()) return plan;
  for (const Json& run : orphans) {
    if (!is_settled(run) || find_path(run, "metadata/deletionTimestamp") != nullptr) continue;
    const std::optional<TimePoint> finished = time_at(run, "status/finishedAt");
    if (!finished) continue;
    const TimePoint due = *finished + retention;
    if (due <= now) {
      plan.due.push_back(name_of(run));
    } else if (!plan.next_at || due < *plan.next_at) {
      plan.next_at = due;
    }
  }
  HB_ASSERT_MSG(!plan.next_at || *plan.next_at > now, "the next deletion is after now");
  return plan;
}

std::optional<std::chrono::seconds> parse_retention(std::string_view text, std::string& why) {
  if (!text.empty() && text.back() == 'd') {
    const std::string_view digits = text.substr(0, text.size() - 1);
    int64_t days = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), days);
    if (ec == std::errc() && end == digits.data() + digits.size() && !digits.empty() && days >= 0 &&
        days <= kRunRetentionMax.count() / 86400) {
      return std::chrono::seconds(days * 86400);
    }
    why = "\"" + std::string(text) + "\": use whole days like 30d, or a duration like 720h";
    return std::nullopt;
  }
  const schedule::ParseResult<int64_t> parsed =
      schedule::parse_duration_seconds(text, "run-retention");
  if (!parsed.ok()) {
    why = parsed.error + " (or whole days like 30d)";
    return std::nullopt;
  }
  if (*parsed.value > kRunRetentionMax.count()) {
    why = "\"" + std::string(text) + "\": at most 3650d";
    return std::nullopt;
  }
  HB_ASSERT(*parsed.value >= 0);
  return std::chrono::seconds(*parsed.value);
}

}  // namespace hb::controllers
