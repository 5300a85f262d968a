// Every process a tool call started, found and killed. The tools server is a
// child subreaper (PR_SET_CHILD_SUBREAPER): a command's children that escape
// its session (setsid, double fork) are reparented to the server, not to
// init, so "every descendant of the server" is exactly what the calls left.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string_view>
#include <vector>

namespace hb::tools {

using namespace std::chrono_literals;

// Rounds of stop-and-kill before giving up on a process that keeps forking.
inline constexpr int kKillRoundsMax = 200;
inline constexpr std::chrono::milliseconds kKillRoundPause = 5ms;

// The parent pid in the text of /proc/PID/stat ("pid (comm) state ppid ...";
// comm may hold spaces and parentheses); -1 when unreadable. Pure.
pid_t parent_from_stat(std::string_view stat);

// The CPU time in /proc/PID/stat (utime + stime + cutime + cstime, in clock
// ticks); -1 when unreadable. Pure.
long long cpu_ticks_from_stat(std::string_view stat);

// The CPU time of every descendant of this process and of the children it
// reaped, in clock ticks: it moves while a call's processes compute.
long long descendants_cpu_ticks();

// Pids whose parent chain reaches `root`, from a pid -> parent map. Pure.
std::vector<pid_t> descendants(pid_t root, const std::map<pid_t, pid_t>& parents);

// The live processes' pid -> parent map, from /proc.
std::map<pid_t, pid_t> read_process_parents();

// SIGKILLs every descendant of this process and reaps them, until none is
// left (each round stops the survivors first, so a fork bomb cannot outrun
// it). Returns how many processes were killed.
int kill_all_descendants();

}  // namespace hb::tools
