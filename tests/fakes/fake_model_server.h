// A scripted fake model server on 127.0.0.1 speaking the real wire formats
// (OpenAI Chat Completions and Anthropic Messages). Each request takes the
// next scripted response: any status and headers (retry-after, …), a delay,
// or a hang that never answers until the server stops. Every request is
// recorded so tests can assert what the runner sent.
//
// It is a small POSIX-socket HTTP/1.1 server rather than hb::http::make_server
// because a fake needs response headers, hung replies and an ephemeral port.
//
// For a long-lived stand-in (tools/fake_model) a responder can decide
// each reply from the request instead of the script, recording can be turned
// off, and a hung or delayed reply ends early when the client disconnects.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace hb::fakes {

struct ScriptedResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds delay{0};
  bool hang = false;  // never answer (until stop())
};

struct RecordedRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::chrono::steady_clock::time_point received;
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct FakeToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // OpenAI: sent as the arguments string (may be malformed);
                          // Anthropic: must be a JSON object text
};

class FakeModelServer {
 public:
  // Decides a reply from the request; used when the script is empty.
  using Responder = std::function<ScriptedResponse(const RecordedRequest&)>;

  // Listens on address:port (an IPv4 literal; loopback unless a real
  // node's Pods must reach it); 0 picks an ephemeral port. Throws
  // std::runtime_error naming the address when it cannot listen.
  explicit FakeModelServer(int port = 0, const std::string& address = "127.0.0.1");
  ~FakeModelServer();
  FakeModelServer(const FakeModelServer&) = delete;
  FakeModelServer& operator=(const FakeModelServer&) = delete;

  int port() const { return port_; }
  std::string url() const;  // "http://ADDRESS:PORT"

  void push(ScriptedResponse response);
  // Without a responder an empty script answers 500 "script exhausted".
  void set_responder(Responder responder);
  // Off: requests() stays empty (a long-lived server keeps no history).
  void set_recording(bool on);
  std::vector<RecordedRequest> requests() const;
  std::size_t pending() const;
  void stop();

  // OpenAI Chat Completions bodies.
  static ScriptedResponse openai_text(const std::string& text, int prompt_tokens = 100,
                                      int completion_tokens = 20);
  static ScriptedResponse openai_tool_calls(const std::vector<FakeToolCall>& calls,
                                            int prompt_tokens = 100, int completion_tokens = 20);
  // Anthropic Messages bodies.
  static ScriptedResponse anthropic_text(const std::string& text, int input_tokens = 100,
                                         int output_tokens = 20);
  static ScriptedResponse anthropic_tool_use(const std::vector<FakeToolCall>& calls,
                                             int input_tokens = 100, int output_tokens = 20);
  // An error status with a JSON body and optional headers.
  static ScriptedResponse error(int status, const std::string& body,
                                std::vector<std::pair<std::string, std::string>> headers = {});

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::string address_;
  void accept_loop();
  void serve(int fd);
  void reap_finished_workers();

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<ScriptedResponse> script_;
  std::vector<RecordedRequest> requests_;
  Responder responder_;
  bool recording_ = true;
  std::thread acceptor_;
  std::list<Worker> workers_;
};

}  // namespace hb::fakes
