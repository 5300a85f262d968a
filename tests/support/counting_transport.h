// An HTTP transport for kube client tests that answers every request 200
// with a small object and counts what was sent, so a test sees whether a
// request left the client at all.
#pragma once

#include <atomic>
#include <string>

#include "http/http.h"

namespace hb::test {

class CountingTransport : public http::Client {
 public:
  http::Response send(const http::Request& request) override {
    ++sent;
    last_method = request.method;
    return {200, {}, R"({"metadata":{"name":"x"}})"};
  }
  http::Response stream(const http::Request&, const http::ChunkHandler&) override {
    return {200, {}, ""};
  }
  std::atomic<int> sent{0};
  std::string last_method;
};

}  // namespace hb::test
