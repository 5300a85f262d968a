// Local child processes for Pods' containers: each in its own session (so its
// whole process tree can be signalled and swept), output appended to a log
// file, stdin /dev/null, SIGKILL if the executor thread that started it dies,
// and, when asked, as another user (the executor must be root for that).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/local_kubelet/launch_plan.h"

namespace hb::local_kubelet {

// The user a child becomes before exec: setgroups, setgid, setuid, in that
// order (the last drops root and its capabilities).
struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary
};

struct SpawnSpec {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  std::string working_dir;
  std::string log_path;
  std::optional<Identity> identity;  // unset: stays the executor's user
  bool no_new_privs = false;         // PR_SET_NO_NEW_PRIVS before exec
};

struct Spawned {
  pid_t pid = -1;     // also the session and process-group id
  std::string error;  // set when it could not start (exec failed, ...)
};

// How a planned container is spawned: its argv, env, working dir, log, and
// its identity when it has a runAsUser.
SpawnSpec spawn_spec_for(const ContainerLaunch& launch);

// argv[0] without a '/' is looked up on the PATH of spec.env, as exec in a
// container does.
Spawned spawn(const SpawnSpec& spec);

// The raw waitpid() status once the process ended, else nullopt. Never blocks.
std::optional<int> try_wait(pid_t pid);

// Sends sig to the process group (the session leader's group).
void signal_group(pid_t pid, int sig);

// SIGKILL to every process left in the session (grandchildren that moved to
// their own process group included). Returns how many were signalled.
int kill_session(pid_t session_id);

// A regular file the executor may execute.
bool is_executable_file(const std::string& path);

// "NAME" -> "/dir/NAME" on `path_list`, or "" when not found.
std::string find_on_path(const std::string& name, const std::string& path_list);

}  // namespace hb::local_kubelet
