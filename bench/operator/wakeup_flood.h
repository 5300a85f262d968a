// A flood of wakeups for one agent, for the fleet bench: POSTs to the
// operator's wakeup endpoint at a fixed rate from one thread over one
// kept-alive connection, with the namespace's valid token, counting the
// answers by status. The rate is a schedule (request i at i/rps), so a slow
// answer is caught up on, never silently lowers the rate asked for.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "http/http.h"

namespace hb::bench {

inline constexpr std::chrono::seconds kFloodRequestTimeout{10};

struct FloodCounts {
  int64_t accepted = 0;  // 201 (run made) or 202 (folded into a queued one)
  int64_t limited = 0;   // 429
  int64_t other = 0;     // any other status, or no answer
  int64_t total() const { return accepted + limited + other; }
};

class WakeupFlood {
 public:
  // Wakes namespace ns's agent `agent` through 127.0.0.1:port at `rps`/s.
  WakeupFlood(int port, std::string ns, std::string agent, std::string token, int rps)
      : url_("http://127.0.0.1:" + std::to_string(port) + "/api/v1/namespaces/" + ns + "/agents/" +
             agent + "/wakeup"),
        token_(std::move(token)),
        rps_(rps) {}
  ~WakeupFlood() { stop(); }

  void start() {
    started_ = std::chrono::steady_clock::now();
    thread_ = std::thread([this] { run(); });
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (stopped_ == std::chrono::steady_clock::time_point{}) {
      stopped_ = std::chrono::steady_clock::now();
    }
  }
  // Valid after stop().
  const FloodCounts& counts() const { return counts_; }
  double seconds() const { return std::chrono::duration<double>(stopped_ - started_).count(); }

 private:
  void run() {
    auto client = http::make_client({});
    http::Request r;
    r.method = "POST";
    r.url = url_;
    r.body = R"({"reason":"flood"})";
    r.headers = {{"Content-Type", "application/json"}, {"Authorization", "Bearer " + token_}};
    r.timeout = kFloodRequestTimeout;
    for (int64_t i = 0; !stop_; ++i) {
      std::this_thread::sleep_until(started_ + std::chrono::microseconds(i * 1000000 / rps_));
      if (stop_) break;
      try {
        const int status = client->send(r).status;
        if (status == 201 || status == 202) {
          ++counts_.accepted;
        } else if (status == 429) {
          ++counts_.limited;
        } else {
          ++counts_.other;
        }
      } catch (const http::TransportError&) {
        ++counts_.other;
      }
    }
  }

  std::string url_, token_;
  int rps_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::chrono::steady_clock::time_point started_{}, stopped_{};
  FloodCounts counts_;  // written by the thread only, read after stop()
};

}  // namespace hb::bench
