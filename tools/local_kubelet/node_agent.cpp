#include "tools/local_kubelet/node_agent.h"

#include <spdlog/spdlog.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <thread>

#include "tools/local_kubelet/kube_io.h"

namespace hb::local_kubelet {

namespace {
constexpr std::chrono::seconds kRetryDelay{2};
}

NodeAgent::NodeAgent(std::shared_ptr<kube::Client> client, NodeFacts facts)
    : client_(std::move(client)), facts_(std::move(facts)) {}

NodeFacts NodeAgent::local_facts(const std::string& name, int max_pods) {
  NodeFacts f;
  f.name = name;
  f.max_pods = max_pods;
  f.cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  f.memory_kib = pages > 0 && page_size > 0 ? static_cast<long long>(pages) * page_size / 1024 : 0;
  utsname u{};
  if (::uname(&u) == 0) f.kernel_version = u.release;
#if defined(__x86_64__)
  f.architecture = "amd64";
#elif defined(__aarch64__)
  f.architecture = "arm64";
#else
  f.architecture = "unknown";
#endif
  return f;
}

void NodeAgent::tick(std::chrono::steady_clock::time_point now) {
  if (now < next_) return;
  const std::string stamp = now_rfc3339();
  try {
    if (!registered_) {
      ready_since_ = stamp;
      try {
        client_->create(kNodes, "", node_object(facts_, stamp)).or_throw();
        spdlog::info("node {} registered (Ready)", facts_.name);
      } catch (const kube::ApiError& error) {
        if (error.kind() != kube::ErrorKind::kAlreadyExists) throw;
        client_
            ->merge_patch(kNodes, "", facts_.name,
                          {{"metadata", node_object(facts_, stamp)["metadata"]}})
            .or_throw();
        client_
            ->merge_patch_status(kNodes, "", facts_.name,
                                 node_status_patch(facts_, true, stamp, stamp))
            .or_throw();
        spdlog::info("node {} existed; marked Ready", facts_.name);
      }
      registered_ = true;
    } else {
      client_
          ->merge_patch_status(kNodes, "", facts_.name,
                               node_status_patch(facts_, true, ready_since_, stamp))
          .or_throw();
    }
    next_ = now + kNodeStatusInterval;
  } catch (const kube::ApiError& error) {
    if (error.kind() == kube::ErrorKind::kNotFound) registered_ = false;  // deleted under us
    spdlog::warn("node {}: {}", facts_.name, error.what());
    next_ = now + kRetryDelay;
  } catch (const std::exception& error) {
    spdlog::warn("node {}: {}", facts_.name, error.what());
    next_ = now + kRetryDelay;
  }
}

void NodeAgent::shutdown(bool delete_node) {
  if (!registered_) return;
  try {
    if (delete_node) {
      client_->remove(kNodes, "", facts_.name).or_throw();
      spdlog::info("node {} deleted", facts_.name);
    } else {
      const std::string stamp = now_rfc3339();
      client_
          ->merge_patch_status(kNodes, "", facts_.name,
                               node_status_patch(facts_, false, stamp, stamp))
          .or_throw();
      spdlog::info("node {} marked not ready", facts_.name);
    }
  } catch (const std::exception& error) {
    spdlog::warn("node {}: on exit: {}", facts_.name, error.what());
  }
}

}  // namespace hb::local_kubelet
