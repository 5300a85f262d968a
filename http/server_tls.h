// The TLS side of a listener (http::make_server): the OpenSSL server context
// it serves with. ServerTls lets the certificate change under a running
// listener: each new connection takes the context current at its accept, and
// a connection keeps the one it started with. operator/tls_server_context.h
// makes the contexts.
#pragma once

#include <memory>
#include <mutex>

namespace boost::asio::ssl {
class context;
}

namespace hb::http {

using SslContext = std::shared_ptr<boost::asio::ssl::context>;

class ServerTls {
 public:
  explicit ServerTls(SslContext context) : context_(std::move(context)) {}
  SslContext current() const {
    std::lock_guard lock(mutex_);
    return context_;
  }
  void replace(SslContext context) {
    std::lock_guard lock(mutex_);
    context_ = std::move(context);
  }

 private:
  mutable std::mutex mutex_;
  SslContext context_;
};

}  // namespace hb::http
