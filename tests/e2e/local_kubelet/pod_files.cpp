#include "tests/e2e/local_kubelet/pod_files.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace hb::local_kubelet {
namespace fs = std::filesystem;

namespace {
constexpr auto kPodDirPermissions = fs::perms::owner_all;  // it holds secrets
}

std::string pod_dir_for(const std::string& state_dir, const std::string& ns,
                        const std::string& name, const std::string& uid) {
  return state_dir + "/pods/" + ns + "_" + name + "_" + uid;
}

void materialize(const std::string& pod_dir, const LocalLaunch& launch) {
  std::error_code ec;
  fs::create_directories(pod_dir, ec);
  if (ec) throw std::runtime_error("cannot create " + pod_dir + ": " + ec.message());
  fs::permissions(pod_dir, kPodDirPermissions, ec);
  for (const auto& dir : launch.dirs) {
    fs::create_directories(dir, ec);
    if (ec) throw std::runtime_error("cannot create " + dir + ": " + ec.message());
  }
  for (const auto& file : launch.files) {
    fs::create_directories(fs::path(file.path).parent_path(), ec);
    std::ofstream out(file.path, std::ios::binary | std::ios::trunc);
    out << file.content;
    out.close();
    if (!out) throw std::runtime_error("cannot write " + file.path);
    ::chmod(file.path.c_str(), static_cast<mode_t>(file.mode));
  }
}

void remove_secrets(const std::string& pod_dir) {
  std::error_code ec;
  fs::remove_all(pod_dir + "/volumes", ec);
  fs::remove(pod_dir + "/kubeconfig", ec);
}

std::string read_tail(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > static_cast<std::streamoff>(max_bytes)
                                   ? size - static_cast<std::streamoff>(max_bytes)
                                   : 0;
  in.seekg(start);
  std::string out(static_cast<std::size_t>(size - start), '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  return out;
}

std::string read_head(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::string out(max_bytes, '\0');
  in.read(out.data(), static_cast<std::streamsize>(max_bytes));
  out.resize(static_cast<std::size_t>(in.gcount()));
  return out;
}

}  // namespace hb::local_kubelet
