// The memory this process may use on the host, read from the kernel: the cgroup's limit (v2
// memory.max, else v1 memory.limit_in_bytes), /proc/meminfo's MemAvailable, and this process's
// resident and peak resident set (/proc/self/status VmRSS, VmHWM). The memory budget
// (sd/memory_model.h) is computed from these; `truegreen serve` and `generate` read them once at
// start.
//
// Every reader takes a root prefix ("" = the real /) so tests point it at a fixture tree. A value
// that cannot be read is absent, with why in `unavailable`; never reported as 0. A cgroup limit of
// "max" (v2) or a v1 limit at or above 2^60 (the kernel's "no limit") is absent with that reason.
// Pure functions of the files; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tg::probe {

struct HostMemory {
  std::optional<std::int64_t> cgroup_limit_bytes;   // memory.max / memory.limit_in_bytes
  std::string cgroup_limit_file;                    // the file the limit came from
  std::optional<std::int64_t> mem_available_bytes;  // /proc/meminfo MemAvailable
  std::optional<std::int64_t> mem_total_bytes;      // /proc/meminfo MemTotal
  std::string unavailable;                          // why a field is absent ("" when all read)
};

// Reads the cgroup of this process (/proc/self/cgroup: the v2 "0::<path>" line, else the v1
// memory controller's path) under root + /sys/fs/cgroup, then /proc/meminfo.
HostMemory ReadHostMemory(const std::string& root = "");

// This process's resident set now and its peak since start (or since the last ResetPeakRss):
// /proc/self/status VmRSS and VmHWM. Absent when the file cannot be read.
std::optional<std::int64_t> CurrentRssBytes();
std::optional<std::int64_t> PeakRssBytes();
// Resets VmHWM to the current RSS (writes 5 to /proc/self/clear_refs; Linux 4.0+). False when the
// kernel or the mount refuses it (the peak then keeps counting from the earlier high-water mark).
bool ResetPeakRss();

}  // namespace tg::probe
