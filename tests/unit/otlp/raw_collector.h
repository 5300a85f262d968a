// A hostile OTLP collector below HTTP, on 127.0.0.1: it accepts each
// connection, reads what comes, and answers with bytes that are not HTTP
// (kGarbage) or with a reply head (a body under the exporter's reply cap)
// and then one body byte per drip interval for as long as the client stays
// (kSlowDrip). For the exporter's tests.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace hb::otlp::testing {

class RawCollector {
 public:
  enum class Mode { kGarbage, kSlowDrip };
  static constexpr std::chrono::milliseconds kDripInterval{50};

  explicit RawCollector(Mode mode);
  ~RawCollector();
  RawCollector(const RawCollector&) = delete;
  RawCollector& operator=(const RawCollector&) = delete;
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_.load(); }

 private:
  void serve();
  void answer(int fd);

  Mode mode_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

}  // namespace hb::otlp::testing
