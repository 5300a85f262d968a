// hb-fake-model: a scripted, stateless stand-in for an LLM endpoint on
// 127.0.0.1, speaking OpenAI Chat Completions (POST .../chat/completions) and
// Anthropic Messages (POST .../v1/messages). What it answers is decided from
// each request's prompt (directives: decision.h). Every reply is labelled as
// a stand-in (model "hb-fake-model").
//
//   hb-fake-model [--port N] [--port-file PATH] [--address IPV4]
//
// --port 0 (the default) picks a free port. The first stdout line is
// "listening on ADDRESS:PORT"; --port-file also gets the port. --address
// (default 127.0.0.1) lets a real node's Pods reach it. One log line
// per request goes to stderr. SIGTERM or SIGINT stops it (exit 0).
#include <signal.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>

#include "tests/fakes/fake_model_server.h"
#include "tools/fake_model/responder.h"

namespace {

constexpr int kExitUsage = 2;
constexpr int kPortMax = 65535;

std::string utc_text(std::time_t t, bool millis, int ms = 0) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[40];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = buffer;
  if (millis) {
    char frac[8];
    std::snprintf(frac, sizeof frac, ".%03d", ms);
    out += frac;
  }
  return out + "Z";
}

void usage(std::ostream& out) {
  out << "usage: hb-fake-model [--port N] [--port-file PATH] [--address IPV4]\n"
         "  a scripted stand-in model server (OpenAI and Anthropic wire formats) on 127.0.0.1\n"
         "  (--address: another local IPv4 address, e.g. one a real node's Pods can reach);\n"
         "  prompt directives: [[pause N]] [[sleep N]] [[memory TEXT]] [[fail STATUS]] [[hang]]\n";
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  std::string port_file;
  std::string address = "127.0.0.1";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const std::string& flag) -> std::optional<std::string> {
      if (arg.rfind(flag + "=", 0) == 0) return arg.substr(flag.size() + 1);
      if (arg == flag) {
        if (i + 1 >= argc) {
          std::cerr << "hb-fake-model: " << flag << " needs a value\n";
          std::exit(kExitUsage);
        }
        return std::string(argv[++i]);
      }
      return std::nullopt;
    };
    if (auto v = value("--port")) {
      try {
        std::size_t used = 0;
        port = std::stoi(*v, &used);
        if (used != v->size() || port < 0 || port > kPortMax) throw std::out_of_range("port");
      } catch (const std::exception&) {
        std::cerr << "hb-fake-model: --port: \"" << *v << "\" is not a port number 0..65535\n";
        return kExitUsage;
      }
    } else if (auto a = value("--address")) {
      address = *a;
    } else if (auto f = value("--port-file")) {
      port_file = *f;
    } else if (arg == "--help" || arg == "-h") {
      usage(std::cout);
      return 0;
    } else {
      std::cerr << "hb-fake-model: unknown argument " << arg << "\n";
      usage(std::cerr);
      return kExitUsage;
    }
  }

  // Block the stop signals in every thread; main waits for them below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::optional<hb::fakes::FakeModelServer> server;
  try {
    server.emplace(port, address);
  } catch (const std::exception& error) {
    std::cerr << "hb-fake-model: " << error.what() << " (--address " << address << " --port "
              << port << ")\n";
    return 1;
  }
  server->set_recording(false);
  std::mutex log_mutex;
  server->set_responder([&](const hb::fakes::RecordedRequest& request) {
    const auto now = std::chrono::system_clock::now();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    const int ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
        1000);
    hb::fake_model::HttpReply reply = hb::fake_model::respond(
        request.method, request.path, request.body, utc_text(seconds, false), seconds);
    {
      std::lock_guard lock(log_mutex);
      std::cerr << utc_text(seconds, true, ms) << " " << request.method << " " << request.path
                << " " << request.body.size() << "B -> " << reply.status << " " << reply.summary
                << std::endl;
    }
    hb::fakes::ScriptedResponse out;
    out.status = reply.status;
    out.body = std::move(reply.body);
    out.hang = reply.hang;
    if (reply.retry_after_seconds) {
      out.headers.emplace_back("retry-after", std::to_string(*reply.retry_after_seconds));
    }
    return out;
  });

  std::cout << "listening on " << address << ":" << server->port() << std::endl;
  if (!port_file.empty()) {
    const std::string temp = port_file + ".tmp";
    std::ofstream out(temp, std::ios::trunc);
    out << server->port() << "\n";
    out.close();
    if (!out || std::rename(temp.c_str(), port_file.c_str()) != 0) {
      std::cerr << "hb-fake-model: --port-file: cannot write " << port_file << "\n";
      return 1;
    }
  }

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::cerr << "hb-fake-model: stopping on signal " << signal_number << std::endl;
  server->stop();
  return 0;
}
