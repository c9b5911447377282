#include "probe/host_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>

namespace tg::probe {
namespace {

// The kernel's v1 "unlimited" is PAGE_COUNTER_MAX pages, far above 2^60 bytes on every arch.
constexpr std::int64_t kUnlimitedV1 = std::int64_t{1} << 60;

std::optional<std::string> ReadSmall(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::string s;
  s.resize(64 * 1024);
  f.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<std::size_t>(f.gcount()));
  return s;
}

std::optional<std::int64_t> ParseInt(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// "<Key>:   1234 kB" from a /proc file, in bytes.
std::optional<std::int64_t> KbField(const std::string& text, std::string_view key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() <= key.size() || line.compare(0, key.size(), key) != 0 ||
        line[key.size()] != ':') {
      continue;
    }
    std::istringstream v(line.substr(key.size() + 1));
    std::int64_t kb = -1;
    std::string unit;
    v >> kb >> unit;
    if (kb < 0 || unit != "kB") return std::nullopt;
    return kb * 1024;
  }
  return std::nullopt;
}

// The cgroup path of this process: the v2 "0::/path" line, else the v1 line naming "memory".
std::pair<std::string, bool> CgroupPath(const std::string& root) {
  auto text = ReadSmall(root + "/proc/self/cgroup");
  if (!text) return {"", false};
  std::istringstream in(*text);
  std::string line, v1;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return {line.substr(3), true};
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ctrls = "," + line.substr(a + 1, b - a - 1) + ",";
    if (ctrls.find(",memory,") != std::string::npos) v1 = line.substr(b + 1);
  }
  return {v1, false};
}

void ReadCgroupLimit(const std::string& root, HostMemory* m) {
  const auto [path, v2] = CgroupPath(root);
  const std::string base = root + "/sys/fs/cgroup";
  // In a container the cgroup namespace makes the own cgroup the mount's root; try the path
  // first, then the root, as both layouts exist.
  const std::string name = v2 ? "memory.max" : "memory.limit_in_bytes";
  const std::string dir = v2 ? base : base + "/memory";
  for (const std::string& f : {dir + path + "/" + name, dir + "/" + name}) {
    auto text = ReadSmall(f);
    if (!text) continue;
    m->cgroup_limit_file = f.substr(root.size());
    if (text->rfind("max", 0) == 0) {
      m->unavailable += m->cgroup_limit_file + " is \"max\" (no limit); ";
      return;
    }
    auto v = ParseInt(*text);
    if (!v) {
      m->unavailable += m->cgroup_limit_file + " is not a number; ";
    } else if (*v >= kUnlimitedV1) {
      m->unavailable += m->cgroup_limit_file + " is the kernel's no-limit value; ";
    } else {
      m->cgroup_limit_bytes = *v;
    }
    return;
  }
  m->unavailable += "no cgroup memory limit file under " + base.substr(root.size()) + "; ";
}

std::optional<std::int64_t> StatusField(std::string_view key) {
  auto text = ReadSmall("/proc/self/status");
  if (!text) return std::nullopt;
  return KbField(*text, key);
}

}  // namespace

HostMemory ReadHostMemory(const std::string& root) {
  HostMemory m;
  ReadCgroupLimit(root, &m);
  auto info = ReadSmall(root + "/proc/meminfo");
  if (info) {
    m.mem_available_bytes = KbField(*info, "MemAvailable");
    m.mem_total_bytes = KbField(*info, "MemTotal");
  }
  if (!m.mem_available_bytes) m.unavailable += "/proc/meminfo has no MemAvailable; ";
  if (!m.unavailable.empty()) m.unavailable.resize(m.unavailable.size() - 2);
  return m;
}

std::optional<std::int64_t> CurrentRssBytes() { return StatusField("VmRSS"); }
std::optional<std::int64_t> PeakRssBytes() { return StatusField("VmHWM"); }

bool ResetPeakRss() {
  const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "5", 1) == 1;
  ::close(fd);
  return ok;
}

}  // namespace tg::probe
