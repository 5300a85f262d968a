#include "tools/fake_model/decision.h"

#include <algorithm>
#include <cctype>

namespace hb::fake_model {
namespace {

std::string trim(std::string_view text) {
  std::size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return std::string(text.substr(begin, end - begin));
}

std::optional<int> parse_int(const std::string& text, int min, int max) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  int value = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < min || value > max) return std::nullopt;
  return value;
}

bool offered(const std::vector<std::string>& tools, const std::string& name) {
  return std::find(tools.begin(), tools.end(), name) != tools.end();
}

// Text the model writes never contains "[[", so an earlier run's output that
// the next heartbeat sees as context cannot act as a directive.
std::string defang(std::string text) {
  for (auto pos = text.find("[["); pos != std::string::npos; pos = text.find("[[", pos)) {
    text.replace(pos, 2, "[ [");
  }
  return text;
}

std::string excerpt(const std::string& text) {
  std::string out = trim(text);
  std::replace(out.begin(), out.end(), '\n', ' ');
  if (out.size() > kToolResultEchoBytesMax) {
    std::size_t cut = kToolResultEchoBytesMax;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
    out = out.substr(0, cut) + "...";
  }
  return defang(out);
}

}  // namespace

Directives parse_directives(std::string_view text) {
  Directives out;
  for (std::size_t pos = text.find("[["); pos != std::string_view::npos;
       pos = text.find("[[", pos + 2)) {
    std::size_t end = text.find("]]", pos + 2);
    if (end == std::string_view::npos) break;
    const std::string inner = trim(text.substr(pos + 2, end - pos - 2));
    const std::size_t space = inner.find_first_of(" \t\n");
    std::string name = inner.substr(0, space);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const std::string arg = space == std::string::npos ? "" : trim(inner.substr(space));
    auto problem = [&](const std::string& what) {
      out.problems.push_back("[[" + inner + "]]: " + what);
    };
    if (name == "pause") {
      if (out.pause_minutes) continue;  // the first of each kind wins
      if (auto minutes = parse_int(arg, 1, 60)) {
        out.pause_minutes = minutes;
        out.order.push_back("pause");
      } else {
        problem("minutes must be a whole number 1..60");
      }
    } else if (name == "sleep") {
      if (out.sleep_seconds) continue;
      if (auto seconds = parse_int(arg, 0, 24 * 3600)) {
        out.sleep_seconds = seconds;
        out.order.push_back("sleep");
      } else {
        problem("seconds must be a whole number");
      }
    } else if (name == "memory") {
      if (out.memory_text) continue;
      if (arg.empty()) {
        problem("needs the text to remember");
      } else {
        out.memory_text = arg;
        out.order.push_back("memory");
      }
    } else if (name == "shell") {
      if (arg.empty()) {
        problem("needs the command to run");
      } else if (out.shell_commands.size() < kShellDirectivesMax) {
        out.order.push_back("shell:" + std::to_string(out.shell_commands.size()));
        out.shell_commands.push_back(arg);
      }
    } else if (name == "fail") {
      if (out.fail_status) continue;
      if (auto status = parse_int(arg, 400, 599)) {
        out.fail_status = status;
      } else {
        problem("status must be 400..599");
      }
    } else if (name == "quota") {
      if (out.quota_seconds) continue;
      constexpr int kQuotaSecondsMax = 86400;
      if (auto seconds = parse_int(arg, 1, kQuotaSecondsMax)) {
        out.quota_seconds = seconds;
      } else {
        problem("seconds must be 1..86400");
      }
    } else if (name == "hang") {
      out.hang = true;
    } else if (name == "expensive") {
      out.expensive = true;
    } else if (name == "idle") {
      out.idle = true;
    } else if (name == "say") {
      if (out.say) continue;
      if (arg.empty()) {
        problem("needs the text to answer");
      } else {
        out.say = defang(arg);
      }
    }
    // Anything else in double brackets is ordinary text.
  }
  return out;
}

std::vector<ToolStep> plan_steps(const Directives& d, const std::vector<std::string>& tools,
                                 std::vector<std::string>* skipped) {
  std::vector<ToolStep> steps;
  auto add = [&](const std::string& tool, nlohmann::json arguments) {
    if (offered(tools, tool)) {
      steps.push_back({tool, std::move(arguments)});
    } else if (skipped != nullptr) {
      skipped->push_back(tool);
    }
  };
  for (const std::string& kind : d.order) {
    if (kind == "memory") {
      add("core_memory_append", {{"label", kMemoryBlockLabel}, {"content", *d.memory_text}});
    } else if (kind == "sleep") {
      const int timeout =
          std::min(*d.sleep_seconds + kSleepTimeoutSlackSeconds, kShellTimeoutSecondsMax);
      add("shell",
          {{"command", "sleep " + std::to_string(*d.sleep_seconds)}, {"timeout_seconds", timeout}});
    } else if (kind.rfind("shell:", 0) == 0) {
      add("shell", {{"command", d.shell_commands[std::stoul(kind.substr(6))]}});
    }
  }
  if (d.pause_minutes) add("pause_heartbeats", {{"minutes", *d.pause_minutes}});
  if (d.order.empty() && !d.idle && !d.say && offered(tools, "shell")) {
    steps.push_back({"shell", {{"command", kDefaultShellCommand}}});
  }
  return steps;
}

Decision decide(const ModelRequest& request, const std::string& now) {
  const Directives d = parse_directives(request.prompt_text);
  Decision out;
  if (d.fail_status) {
    out.kind = Decision::Kind::kFail;
    out.status = *d.fail_status;
    out.text = "hb-fake-model: scripted failure (fail " + std::to_string(*d.fail_status) +
               " directive in the prompt)";
    out.summary = "fail " + std::to_string(*d.fail_status);
    return out;
  }
  if (d.quota_seconds) {
    constexpr int kTooManyRequests = 429;
    out.kind = Decision::Kind::kFail;
    out.status = kTooManyRequests;
    out.retry_after_seconds = *d.quota_seconds;
    out.text = "hb-fake-model: scripted rate limit, resets in " + std::to_string(*d.quota_seconds) +
               " s (quota directive in the prompt)";
    out.summary = "quota " + std::to_string(*d.quota_seconds);
    return out;
  }
  if (d.hang) {
    out.kind = Decision::Kind::kHang;
    out.summary = "hang";
    return out;
  }
  std::vector<std::string> skipped;
  const std::vector<ToolStep> steps = plan_steps(d, request.tools, &skipped);
  if (request.tool_turns >= 0 && static_cast<std::size_t>(request.tool_turns) < steps.size()) {
    out.kind = Decision::Kind::kToolCall;
    out.call = steps[static_cast<std::size_t>(request.tool_turns)];
    out.summary = "tool " + out.call.tool + " " + out.call.arguments.dump();
    return out;
  }
  out.kind = Decision::Kind::kText;
  if (d.say) {
    out.text = *d.say;
    out.summary = "said after " + std::to_string(request.tool_turns) + " tool turn(s)";
    return out;
  }
  if (d.idle) {
    out.text = kIdleAnswer;
    out.summary = "idle answer after " + std::to_string(request.tool_turns) + " tool turn(s)";
    return out;
  }
  out.text = "Stand-in model (hb-fake-model), not a real LLM: heartbeat done at " + now +
             " after " + std::to_string(request.tool_turns) + " tool call(s).";
  if (!request.last_tool_result.empty()) {
    out.text += " Last tool result: " + excerpt(request.last_tool_result);
  }
  for (const std::string& tool : skipped) out.text += " (" + tool + " was not offered.)";
  for (const std::string& problem : d.problems) {
    out.text += " Ignored directive " + defang(problem) + ".";
  }
  out.summary = "text after " + std::to_string(request.tool_turns) + " tool turn(s)";
  return out;
}

}  // namespace hb::fake_model
