#include "runner/tools/protocol.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "api/json_depth.h"

namespace hb::tools {
namespace {

using nlohmann::json;

constexpr int64_t kExitCodeMax = 255;
constexpr int64_t kSignalMax = 64;
constexpr int64_t kCountMax = int64_t{1} << 53;  // exact in a double

// The object on one line, or why it is not one.
Decoded<json> parse_line(std::string_view line, std::size_t bytes_max) {
  Decoded<json> out;
  if (line.size() > bytes_max) {
    out.error = "longer than " + std::to_string(bytes_max) + " bytes";
  } else if (api::json_nested_deeper_than(line, kJsonDepthMax)) {
    out.error = "nested deeper than " + std::to_string(kJsonDepthMax);
  } else if (json doc = json::parse(line, nullptr, false); doc.is_discarded() || !doc.is_object()) {
    out.error = "not a JSON object";
  } else {
    out.value = std::move(doc);
  }
  return out;
}

enum class Range { kClamp, kReject };

// A whole number at `key` in [min, max] (clamped into it, or refused), or
// `fallback` when absent; nullopt when present but not such a number. The
// range is applied to the double, so no cast can overflow.
std::optional<int64_t> bounded_integer(const json& doc, const char* key, int64_t min, int64_t max,
                                       int64_t fallback, Range range) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return fallback;
  if (!it->is_number()) return std::nullopt;
  const double value = it->get<double>();
  if (!std::isfinite(value) || value != std::floor(value)) return std::nullopt;
  const double low = static_cast<double>(min), high = static_cast<double>(max);
  if (range == Range::kReject && (value < low || value > high)) return std::nullopt;
  return static_cast<int64_t>(std::clamp(value, low, high));
}

bool flag(const json& doc, const char* key) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

std::string encode_lifeline() {
  return json{{"op", "lifeline"}}.dump() + "\n";
}

std::string encode_exec(const ExecRequest& r) {
  return json{{"op", "exec"},
              {"command", r.command},
              {"timeoutMs", r.timeout.count()},
              {"outputHeadBytes", r.head_bytes},
              {"outputTailBytes", r.tail_bytes}}
             .dump(-1, ' ', false, json::error_handler_t::replace) +
         "\n";
}

Decoded<Request> decode_request(std::string_view line) {
  Decoded<Request> out;
  Decoded<json> doc = parse_line(line, kRequestBytesMax);
  if (!doc.value) {
    out.error = "request: " + doc.error;
    return out;
  }
  const json& d = *doc.value;
  const std::string op = d.value("op", json()).is_string() ? d["op"].get<std::string>() : "";
  Request r;
  if (op == "lifeline") {
    r.op = Request::Op::kLifeline;
    out.value = r;
    return out;
  }
  if (op != "exec") {
    out.error = "request: op must be lifeline or exec";
    return out;
  }
  auto command = d.find("command");
  if (command == d.end() || !command->is_string() || command->get<std::string>().empty()) {
    out.error = "request: command must be a non-empty string";
    return out;
  }
  auto timeout = bounded_integer(d, "timeoutMs", kExecTimeoutMin.count(), kExecTimeoutMax.count(),
                                 r.exec.timeout.count(), Range::kClamp);
  auto head = bounded_integer(d, "outputHeadBytes", 0, kOutputCaptureBytesMax, r.exec.head_bytes,
                              Range::kClamp);
  auto tail = bounded_integer(d, "outputTailBytes", 0, kOutputCaptureBytesMax, r.exec.tail_bytes,
                              Range::kClamp);
  if (!timeout || !head || !tail) {
    out.error = "request: timeoutMs, outputHeadBytes and outputTailBytes must be whole numbers";
    return out;
  }
  r.exec.command = command->get<std::string>();
  r.exec.timeout = std::chrono::milliseconds(*timeout);
  r.exec.head_bytes = static_cast<std::size_t>(*head);
  r.exec.tail_bytes = static_cast<std::size_t>(*tail);
  out.value = std::move(r);
  return out;
}

std::string encode_progress() {
  return "{\"progress\":true}\n";
}

bool is_progress(std::string_view line) {
  return line == "{\"progress\":true}";
}

std::string encode_reply(const ExecReply& r) {
  json doc = json::object();
  if (!r.error.empty()) {
    doc["error"] = r.error;
  } else {
    doc = {{"exitCode", r.exit_code ? json(*r.exit_code) : json()},
           {"signal", r.signal},
           {"timedOut", r.timed_out},
           {"output", r.output},
           {"outputBytes", r.output_bytes},
           {"truncated", r.truncated},
           {"durationMs", r.duration.count()}};
  }
  return doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Decoded<ExecReply> decode_reply(std::string_view line) {
  Decoded<ExecReply> out;
  Decoded<json> doc = parse_line(line, kReplyBytesMax);
  if (!doc.value) {
    out.error = "reply: " + doc.error;
    return out;
  }
  const json& d = *doc.value;
  ExecReply r;
  if (auto error = d.find("error"); error != d.end()) {
    r.error = error->is_string() ? error->get<std::string>() : "the server reported an error";
    out.value = std::move(r);
    return out;
  }
  auto output = d.find("output");
  auto exit_code = bounded_integer(d, "exitCode", 0, kExitCodeMax, -1, Range::kReject);
  auto signal = bounded_integer(d, "signal", 0, kSignalMax, 0, Range::kReject);
  auto bytes = bounded_integer(d, "outputBytes", 0, kCountMax, 0, Range::kReject);
  auto duration = bounded_integer(d, "durationMs", 0, kCountMax, 0, Range::kReject);
  if (output == d.end() || !output->is_string() || !exit_code || !signal || !bytes || !duration) {
    out.error = "reply: not an exec result";
    return out;
  }
  if (*exit_code >= 0) r.exit_code = static_cast<int>(*exit_code);
  r.signal = static_cast<int>(*signal);
  r.timed_out = flag(d, "timedOut");
  r.truncated = flag(d, "truncated");
  r.output = output->get<std::string>();
  r.output_bytes = static_cast<std::size_t>(*bytes);
  r.duration = std::chrono::milliseconds(*duration);
  out.value = std::move(r);
  return out;
}

}  // namespace hb::tools
