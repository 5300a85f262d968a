// The tools-container socket protocol, both directions (either side may be
// hostile): decoded or an error; a decoded message re-encodes and decodes equal.
#include "runner/tools/protocol.h"
#include "tests/fuzz/fuzz_util.h"

using hb::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(hb::fuzz::as_text(data, size));
  auto request = hb::tools::decode_request(line);
  require(request.value.has_value() == request.error.empty(), "request: a value xor an error");
  if (request.value && request.value->op == hb::tools::Request::Op::kExec) {
    const auto& exec = request.value->exec;
    require(
        exec.timeout >= hb::tools::kExecTimeoutMin && exec.timeout <= hb::tools::kExecTimeoutMax,
        "timeout within bounds");
    auto again = hb::tools::decode_request(hb::tools::encode_exec(exec));
    require(again.value && again.value->exec.command == exec.command, "exec round-trips");
  }
  auto reply = hb::tools::decode_reply(line);
  require(reply.value.has_value() == reply.error.empty(), "reply: a value xor an error");
  if (reply.value) {
    auto again = hb::tools::decode_reply(hb::tools::encode_reply(*reply.value));
    require(again.value && again.value->output == reply.value->output &&
                again.value->exit_code == reply.value->exit_code,
            "reply round-trips");
  }
  return 0;
}
