// cpprestsdk + OpenSSL implementation of hb::http::Client. The only file that
// knows about cpprestsdk; the server side is Boost.Beast (http_server.cpp).
#include <cpprest/http_client.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/ssl.hpp>
#include <fstream>
#include <sstream>

#include "kube/http.h"

namespace hb::http {
namespace {

namespace chttp = web::http;
namespace cclient = web::http::client;

constexpr size_t kStreamReadBytes = 64 * 1024;
// A body's announced Content-Length is reserved up front only up to this:
// the length is the server's word, and the body may still stop short.
constexpr utility::size64_t kReserveBodyBytesMax = 64 * 1024 * 1024;

std::string origin_of(const std::string& url) {
  auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return url;
  auto path_start = url.find('/', scheme_end + 3);
  return path_start == std::string::npos ? url : url.substr(0, path_start);
}

std::string path_of(const std::string& url) {
  auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return "/";
  auto path_start = url.find('/', scheme_end + 3);
  return path_start == std::string::npos ? "/" : url.substr(path_start);
}

bool looks_like_tls_failure(const std::string& what) {
  for (const char* needle : {"handshake", "certificate", "SSL", "ssl", "verify"}) {
    if (what.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::map<std::string, std::string> lower_headers(const chttp::http_headers& headers) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : headers) {
    std::string lower = name;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out[lower] = value;
  }
  return out;
}

TransportError body_too_large(const Request& request, size_t limit) {
  return TransportError(TransportError::Kind::kTooLarge,
                        request.method + " " + request.url + ": the answer's body is over " +
                            std::to_string(limit) + " bytes, the most this caller takes");
}

// Hands the body to on_piece as it arrives, until it ends or on_piece
// returns false (then the transfer stops: cancel). getn(n) waits for all n
// bytes, so this waits for one, then takes whatever else has arrived: a
// watch event reaches the caller as soon as it lands.
void pump_body(const chttp::http_response& resp, pplx::cancellation_token_source& cancel,
               const ChunkHandler& on_piece) {
  auto body = resp.body();
  if (!body.is_valid()) return;
  auto source = body.streambuf();
  std::vector<uint8_t> buffer(kStreamReadBytes);
  while (true) {
    size_t n = source.getn(buffer.data(), 1).get();
    if (n == 0) return;  // end of body
    const auto ready = static_cast<size_t>(std::max<std::streamsize>(0, source.in_avail()));
    if (ready > 0) n += source.getn(buffer.data() + 1, std::min(ready, buffer.size() - 1)).get();
    if (!on_piece(std::string_view(reinterpret_cast<const char*>(buffer.data()), n))) {
      cancel.cancel();  // the connection is not reused
      return;
    }
  }
}

// The body read into one string as it arrives. extract_vector() held a
// body three times at once (the transport's buffer, the vector, the copy
// get() returns) and a fourth as our string. Past request.body_bytes_max
// the transfer stops with an error.
std::string read_whole_body(const chttp::http_response& resp, const Request& request,
                            pplx::cancellation_token_source& cancel) {
  const size_t limit = request.body_bytes_max;
  const utility::size64_t announced = resp.headers().content_length();
  if (limit > 0 && announced > limit) {
    cancel.cancel();
    throw body_too_large(request, limit);
  }
  std::string out;
  if (announced > 0 && announced <= kReserveBodyBytesMax) out.reserve(announced);
  pump_body(resp, cancel, [&out, limit](std::string_view piece) {
    out.append(piece);
    return limit == 0 || out.size() <= limit;
  });
  if (limit > 0 && out.size() > limit) throw body_too_large(request, limit);
  return out;
}

class CpprestClient final : public Client {
 public:
  explicit CpprestClient(ClientOptions options) : options_(std::move(options)) {
    if (options_.ca_description.empty()) {
      options_.ca_description = !options_.tls.ca_file.empty()  ? options_.tls.ca_file
                                : !options_.tls.ca_pem.empty() ? "inline certificate-authority-data"
                                                               : "system CAs";
    }
  }

  Response send(const Request& request) override { return exchange(request, nullptr); }

  Response stream(const Request& request, const ChunkHandler& on_chunk) override {
    return exchange(request, &on_chunk);
  }

  Response send_in_pieces(const Request& request, const ChunkHandler& on_chunk) override {
    return exchange(request, &on_chunk);
  }

 private:
  std::shared_ptr<cclient::http_client> client_for(const std::string& origin,
                                                   std::chrono::milliseconds timeout) {
    std::string key = origin + "|" + std::to_string(timeout.count());
    std::lock_guard lock(mutex_);
    auto it = clients_.find(key);
    if (it != clients_.end()) return it->second;

    cclient::http_client_config config;
    config.set_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
    config.set_validate_certificates(!options_.tls.insecure_skip_verify);
    TlsOptions tls = options_.tls;
    config.set_ssl_context_callback([tls](boost::asio::ssl::context& ctx) {
      // Errors here surface as handshake failures, named with the CA below.
      // cpprestsdk has already loaded the system CA store into this context;
      // with a configured CA, only that CA may vouch for the API server.
      if (!tls.ca_file.empty() || !tls.ca_pem.empty()) {
        SSL_CTX_set_cert_store(ctx.native_handle(), X509_STORE_new());
      }
      if (!tls.ca_file.empty()) {
        ctx.load_verify_file(tls.ca_file);
      } else if (!tls.ca_pem.empty()) {
        ctx.add_certificate_authority(boost::asio::buffer(tls.ca_pem.data(), tls.ca_pem.size()));
      }
      if (!tls.client_cert_pem.empty()) {
        ctx.use_certificate_chain(
            boost::asio::buffer(tls.client_cert_pem.data(), tls.client_cert_pem.size()));
      }
      if (!tls.client_key_pem.empty()) {
        ctx.use_private_key(
            boost::asio::buffer(tls.client_key_pem.data(), tls.client_key_pem.size()),
            boost::asio::ssl::context::pem);
      }
    });
    auto client = std::make_shared<cclient::http_client>(origin, config);
    clients_.emplace(key, client);
    return client;
  }

  [[noreturn]] void rethrow_transport(const Request& request, const std::exception& e,
                                      bool cancelled) {
    std::string what = e.what();
    if (cancelled) {
      throw TransportError(TransportError::Kind::kCancelled,
                           request.method + " " + request.url + ": cancelled");
    }
    if (auto* he = dynamic_cast<const chttp::http_exception*>(&e)) {
      if (he->error_code() == std::errc::timed_out) {
        throw TransportError(TransportError::Kind::kTimeout,
                             request.method + " " + request.url + ": no answer within " +
                                 std::to_string(request.timeout.count()) + " ms");
      }
    }
    if (looks_like_tls_failure(what)) {
      throw TransportError(TransportError::Kind::kTls,
                           "TLS with " + origin_of(request.url) +
                               " failed (trusted CA: " + options_.ca_description + "): " + what);
    }
    throw TransportError(TransportError::Kind::kConnect,
                         request.method + " " + request.url + ": " + what);
  }

  Response exchange(const Request& request, const ChunkHandler* on_chunk) {
    auto client = client_for(origin_of(request.url), request.timeout);
    chttp::http_request req(request.method);
    req.set_request_uri(path_of(request.url));
    for (const auto& [name, value] : request.headers) req.headers().add(name, value);
    if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
        request.method == "PATCH") {
      std::string content_type = "application/json";
      for (const auto& [name, value] : request.headers) {
        if (name == "Content-Type" || name == "content-type") content_type = value;
      }
      req.set_body(request.body, content_type);
    }

    pplx::cancellation_token_source cts;
    uint64_t cancel_id = 0;
    if (request.cancel) cancel_id = request.cancel->add([cts]() mutable { cts.cancel(); });
    struct Unregister {
      std::shared_ptr<CancelSource> source;
      uint64_t id;
      ~Unregister() {
        if (source && id) source->remove(id);
      }
    } unregister{request.cancel, cancel_id};
    auto is_cancelled = [&] { return request.cancel && request.cancel->cancelled(); };

    Response out;
    try {
      chttp::http_response resp = client->request(req, cts.get_token()).get();
      out.status = resp.status_code();
      out.headers = lower_headers(resp.headers());
      const bool in_pieces = on_chunk != nullptr && out.status >= 200 && out.status < 300;
      if (in_pieces) {
        pump_body(resp, cts, *on_chunk);
      } else {
        out.body = read_whole_body(resp, request, cts);
      }
      return out;
    } catch (const TransportError&) {
      throw;
    } catch (const pplx::task_canceled& e) {
      rethrow_transport(request, e, true);
    } catch (const std::exception& e) {
      rethrow_transport(request, e, is_cancelled());
    }
  }

  ClientOptions options_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<cclient::http_client>> clients_;
};

}  // namespace

std::unique_ptr<Client> make_client(const ClientOptions& options) {
  return std::make_unique<CpprestClient>(options);
}

}  // namespace hb::http
