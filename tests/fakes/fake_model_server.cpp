#include "tests/fakes/fake_model_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <stdexcept>

namespace hb::fakes {
namespace {

using nlohmann::json;

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 529:
      return "Overloaded";
    default:
      return "Status";
  }
}

// How often a hung or delayed reply checks whether its client went away.
constexpr std::chrono::milliseconds kPeerCheckInterval{50};
constexpr int kListenBacklog = 64;

// True when the peer closed its end (or the connection failed).
bool peer_closed(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  if (::poll(&pfd, 1, 0) <= 0) return false;
  if ((pfd.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return true;
  char byte;
  return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

void write_all(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<std::size_t>(n);
  }
}

}  // namespace

FakeModelServer::FakeModelServer(int port, const std::string& address_text)
    : address_(address_text) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listen_fd_ < 0) throw std::runtime_error("fake model server: socket failed");
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, address_.c_str(), &address.sin_addr) != 1 ||
      ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listen_fd_, kListenBacklog) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error("fake model server: cannot listen on " + address_ + ":" +
                             std::to_string(port));
  }
  socklen_t length = sizeof address;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FakeModelServer::~FakeModelServer() {
  stop();
}

std::string FakeModelServer::url() const {
  return "http://" + address_ + ":" + std::to_string(port_);
}

void FakeModelServer::push(ScriptedResponse response) {
  std::lock_guard lock(mutex_);
  script_.push_back(std::move(response));
}

void FakeModelServer::set_responder(Responder responder) {
  std::lock_guard lock(mutex_);
  responder_ = std::move(responder);
}

void FakeModelServer::set_recording(bool on) {
  std::lock_guard lock(mutex_);
  recording_ = on;
}

std::vector<RecordedRequest> FakeModelServer::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

std::size_t FakeModelServer::pending() const {
  std::lock_guard lock(mutex_);
  return script_.size();
}

void FakeModelServer::stop() {
  if (stopping_.exchange(true)) return;
  cv_.notify_all();
  if (acceptor_.joinable()) acceptor_.join();
  std::list<Worker> workers;
  {
    std::lock_guard lock(mutex_);
    workers.swap(workers_);
  }
  for (auto& worker : workers) worker.thread.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

void FakeModelServer::accept_loop() {
  while (!stopping_) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 20) <= 0) continue;
    int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    reap_finished_workers();
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::lock_guard lock(mutex_);
    workers_.push_back({std::thread([this, fd, done] {
                          serve(fd);
                          *done = true;
                        }),
                        done});
  }
}

void FakeModelServer::reap_finished_workers() {
  std::list<Worker> finished;
  {
    std::lock_guard lock(mutex_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      auto next = std::next(it);
      if (*it->done) finished.splice(finished.end(), workers_, it);
      it = next;
    }
  }
  for (auto& worker : finished) worker.thread.join();
}

void FakeModelServer::serve(int fd) {
  // Connections are kept alive: read requests until the peer closes.
  std::string buffer;
  char chunk[4096];
  auto read_more = [&]() -> bool {
    while (!stopping_) {
      pollfd pfd{fd, POLLIN, 0};
      int ready = ::poll(&pfd, 1, 20);
      if (ready < 0) return false;
      if (ready == 0) continue;
      ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
    return false;
  };
  while (!stopping_) {
    std::size_t header_end;
    while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
      if (!read_more()) {
        ::close(fd);
        return;
      }
    }
    RecordedRequest request;
    std::string head = buffer.substr(0, header_end);
    std::size_t line_end = head.find("\r\n");
    std::string request_line = head.substr(0, line_end);
    auto first_space = request_line.find(' ');
    auto second_space = request_line.find(' ', first_space + 1);
    request.method = request_line.substr(0, first_space);
    request.path = request_line.substr(first_space + 1, second_space - first_space - 1);
    std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      std::size_t end = head.find("\r\n", pos);
      if (end == std::string::npos) end = head.size();
      std::string line = head.substr(pos, end - pos);
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        request.headers[lower(line.substr(0, colon))] = value;
      }
      pos = end + 2;
    }
    std::size_t content_length = 0;
    if (auto it = request.headers.find("content-length"); it != request.headers.end()) {
      content_length = std::stoul(it->second);
    }
    std::size_t body_start = header_end + 4;
    while (buffer.size() < body_start + content_length) {
      if (!read_more()) {
        ::close(fd);
        return;
      }
    }
    request.body = buffer.substr(body_start, content_length);
    request.received = std::chrono::steady_clock::now();
    buffer.erase(0, body_start + content_length);

    ScriptedResponse response;
    Responder responder;
    bool scripted = false;
    {
      std::lock_guard lock(mutex_);
      if (recording_) requests_.push_back(request);
      if (!script_.empty()) {
        response = std::move(script_.front());
        script_.pop_front();
        scripted = true;
      } else {
        responder = responder_;
      }
    }
    if (!scripted) {
      response = responder
                     ? responder(request)
                     : error(500, R"({"error":{"message":"fake model server: script exhausted",)"
                                  R"("type":"server_error"}})");
    }
    bool peer_gone = false;
    if (response.hang || response.delay.count() > 0) {
      // Wait until the delay passes (never, for a hang), the server stops or
      // the client gives up.
      const auto until = std::chrono::steady_clock::now() + response.delay;
      std::unique_lock lock(mutex_);
      while (!stopping_) {
        auto now = std::chrono::steady_clock::now();
        if (!response.hang && now >= until) break;
        auto slice = kPeerCheckInterval;
        if (!response.hang) {
          slice =
              std::min(slice, std::chrono::duration_cast<std::chrono::milliseconds>(until - now) +
                                  std::chrono::milliseconds(1));
        }
        cv_.wait_for(lock, slice);
        if (peer_closed(fd)) {
          peer_gone = true;
          break;
        }
      }
    }
    if (stopping_ || peer_gone) break;
    std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                      reason_phrase(response.status) + "\r\n";
    out += "Content-Type: application/json\r\n";
    out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
    for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
    out += "\r\n" + response.body;
    write_all(fd, out);
  }
  ::close(fd);
}

ScriptedResponse FakeModelServer::openai_text(const std::string& text, int prompt_tokens,
                                              int completion_tokens) {
  json body = {{"id", "chatcmpl-fake"},
               {"object", "chat.completion"},
               {"model", "fake"},
               {"choices",
                {{{"index", 0},
                  {"message", {{"role", "assistant"}, {"content", text}}},
                  {"finish_reason", "stop"}}}},
               {"usage",
                {{"prompt_tokens", prompt_tokens},
                 {"completion_tokens", completion_tokens},
                 {"total_tokens", prompt_tokens + completion_tokens}}}};
  return {200, {}, body.dump(), {}, false};
}

ScriptedResponse FakeModelServer::openai_tool_calls(const std::vector<FakeToolCall>& calls,
                                                    int prompt_tokens, int completion_tokens) {
  json tool_calls = json::array();
  for (const auto& call : calls) {
    tool_calls.push_back({{"id", call.id},
                          {"type", "function"},
                          {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  }
  json body = {
      {"id", "chatcmpl-fake"},
      {"object", "chat.completion"},
      {"choices",
       {{{"index", 0},
         {"message", {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", tool_calls}}},
         {"finish_reason", "tool_calls"}}}},
      {"usage",
       {{"prompt_tokens", prompt_tokens},
        {"completion_tokens", completion_tokens},
        {"total_tokens", prompt_tokens + completion_tokens}}}};
  return {200, {}, body.dump(), {}, false};
}

ScriptedResponse FakeModelServer::anthropic_text(const std::string& text, int input_tokens,
                                                 int output_tokens) {
  json body = {{"id", "msg_fake"},
               {"type", "message"},
               {"role", "assistant"},
               {"model", "fake"},
               {"content", {{{"type", "text"}, {"text", text}}}},
               {"stop_reason", "end_turn"},
               {"stop_sequence", nullptr},
               {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}};
  return {200, {}, body.dump(), {}, false};
}

ScriptedResponse FakeModelServer::anthropic_tool_use(const std::vector<FakeToolCall>& calls,
                                                     int input_tokens, int output_tokens) {
  json content = json::array();
  for (const auto& call : calls) {
    content.push_back({{"type", "tool_use"},
                       {"id", call.id},
                       {"name", call.name},
                       {"input", json::parse(call.arguments)}});
  }
  json body = {{"id", "msg_fake"},
               {"type", "message"},
               {"role", "assistant"},
               {"content", content},
               {"stop_reason", "tool_use"},
               {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}};
  return {200, {}, body.dump(), {}, false};
}

ScriptedResponse FakeModelServer::error(int status, const std::string& body,
                                        std::vector<std::pair<std::string, std::string>> headers) {
  return {status, std::move(headers), body, {}, false};
}

}  // namespace hb::fakes
