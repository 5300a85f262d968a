// An in-process ModelClient that answers from a script and records requests;
// for loop tests that need no HTTP. (fake_model_server.h speaks the real wire
// formats over HTTP.)
#pragma once

#include <deque>
#include <functional>
#include <stdexcept>
#include <vector>

#include "runner/conversation.h"
#include "runner/errors.h"

namespace hb::fakes {

class ScriptedModel final : public runner::ModelClient {
 public:
  using Step = std::function<runner::ModelResult(const runner::ModelRequest&)>;

  void push(runner::ModelReply reply) {
    steps_.push_back([reply](const runner::ModelRequest&) { return reply; });
  }
  void push(Step step) { steps_.push_back(std::move(step)); }

  runner::ModelResult complete(const runner::ModelRequest& request) override {
    requests_.push_back(request);
    if (steps_.empty()) {
      return runner::ProviderError(runner::ProviderError::Kind::kHttpStatus, 500,
                                   "script exhausted");
    }
    Step step = std::move(steps_.front());
    steps_.pop_front();
    return step(request);
  }

  const std::vector<runner::ModelRequest>& requests() const { return requests_; }

  static runner::ModelReply text(std::string text, long long in = 100, long long out = 20) {
    runner::ModelReply reply;
    reply.text = std::move(text);
    reply.finish = runner::ModelReply::Finish::kEndTurn;
    reply.finish_raw = "end_turn";
    reply.usage = {in, out};
    return reply;
  }
  static runner::ModelReply call(std::string name, std::string arguments, std::string id = "",
                                 long long in = 100, long long out = 20) {
    runner::ModelReply reply;
    static int counter = 0;
    reply.tool_calls.push_back({id.empty() ? "call_" + std::to_string(++counter) : id,
                                std::move(name), std::move(arguments)});
    reply.finish = runner::ModelReply::Finish::kToolUse;
    reply.finish_raw = "tool_use";
    reply.usage = {in, out};
    return reply;
  }

 private:
  std::deque<Step> steps_;
  std::vector<runner::ModelRequest> requests_;
};

}  // namespace hb::fakes
