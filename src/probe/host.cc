// Host, device-node and environment parts of the snapshot (no libraries involved).
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <dirent.h>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <sstream>

#include "common/file_handles.h"
#include "common/file_util.h"
#include "common/strings.h"
#include "probe/host_internal.h"

extern char** environ;  // POSIX: the process environment

namespace tg::probe::internal {
namespace {

std::string JoinRoot(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") return path;
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  return r + path;
}

// Reads a small text file (procfs, sysfs, os-release) through the one reader: a FIFO, device or
// directory planted under --root is refused, never waited on; over `max` bytes is unreadable.
std::optional<std::string> ReadSmall(const std::string& path, std::size_t max = 1 << 16) {
  auto text = common::ReadFileLimited(path, max);
  if (!text.ok()) return std::nullopt;
  return std::move(text).value();
}

PathCheck Check(const std::string& root, const std::string& path) {
  PathCheck c;
  c.path = path;
  struct stat st {};
  if (::stat(JoinRoot(root, path).c_str(), &st) != 0) {
    c.error = std::strerror(errno);
    return c;
  }
  c.present = true;
  if (S_ISCHR(st.st_mode)) {
    c.type = "char-device";
  } else if (S_ISREG(st.st_mode)) {
    c.type = "file";
  } else if (S_ISDIR(st.st_mode)) {
    c.type = "directory";
  } else {
    c.type = "other";
  }
  return c;
}

}  // namespace

void ProbeHost(const std::string& root, const std::map<std::string, std::string>& env,
               HostInfo* h) {
  struct utsname u {};
  if (::uname(&u) == 0) {
    h->kernel = u.release;
    h->architecture = u.machine;
  } else {
    h->errors["kernel"] = std::strerror(errno);
  }
  if (auto os = ReadSmall(JoinRoot(root, "/etc/os-release"))) {
    std::smatch m;
    static const std::regex kPretty(R"re(PRETTY_NAME="?([^"\n]*)"?)re");
    if (std::regex_search(*os, m, kPretty)) h->os = m[1];
  } else {
    h->errors["os"] = "cannot read " + JoinRoot(root, "/etc/os-release");
  }
  if (auto cpu = ReadSmall("/proc/cpuinfo", 1 << 20)) {
    std::istringstream in(*cpu);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("model name", 0) == 0) {
        auto colon = line.find(':');
        if (colon != std::string::npos) h->cpu_model = common::Trim(line.substr(colon + 1));
        break;
      }
    }
    if (h->cpu_model.empty()) h->errors["cpu_model"] = "no 'model name' in /proc/cpuinfo";
  } else {
    h->errors["cpu_model"] = "cannot read /proc/cpuinfo";
  }
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  h->cpu_count = n > 0 ? static_cast<int>(n) : 0;
  if (auto mem = ReadSmall("/proc/meminfo")) {
    std::smatch m;
    static const std::regex kTotal(R"(MemTotal:\s+(\d+)\s*kB)");
    if (std::regex_search(*mem, m, kTotal)) {
      h->memory_total_bytes = std::strtoull(m[1].str().c_str(), nullptr, 10) * 1024ull;
    }
  }

  // Container hints: each is weak alone; together they explain "why is there no /dev/nvidia0".
  if (Check(root, "/.dockerenv").present) h->container_hints.push_back("/.dockerenv exists");
  if (Check(root, "/run/.containerenv").present) {
    h->container_hints.push_back("/run/.containerenv exists (podman)");
  }
  if (env.count("KUBERNETES_SERVICE_HOST") != 0) {
    h->container_hints.push_back("KUBERNETES_SERVICE_HOST set (Kubernetes pod)");
  }
  if (auto c = env.find("container"); c != env.end()) {
    h->container_hints.push_back("container=" + c->second);
  }
  std::string cgroup = ReadSmall("/proc/self/cgroup").value_or("");
  for (const char* word : {"docker", "kubepods", "containerd", "libpod", "crio"}) {
    if (cgroup.find(word) != std::string::npos) {
      h->container_hints.push_back(std::string("/proc/self/cgroup mentions ") + word);
    }
  }
  h->container = !h->container_hints.empty();

  // cgroup version and our limits. v2: a single "0::/path" line and cgroup.controllers at the
  // mount root.
  struct stat st {};
  if (::stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0) {
    h->cgroup_version = "v2";
    std::string rel;
    if (auto p = cgroup.find("0::"); p != std::string::npos) {
      rel = common::Trim(cgroup.substr(p + 3, cgroup.find('\n', p) - p - 3));
    }
    std::string dir = "/sys/fs/cgroup" + (rel == "/" ? std::string() : rel);
    if (auto v = ReadSmall(dir + "/memory.max", 256)) h->cgroup_memory_limit = common::Trim(*v);
    if (auto v = ReadSmall(dir + "/cpu.max", 256)) h->cgroup_cpu_limit = common::Trim(*v);
  } else if (::stat("/sys/fs/cgroup/memory", &st) == 0) {
    h->cgroup_version = "v1";
    if (auto v = ReadSmall("/sys/fs/cgroup/memory/memory.limit_in_bytes", 256)) {
      h->cgroup_memory_limit = common::Trim(*v);
    }
  } else {
    h->cgroup_version = "unknown";
  }
}

void ProbeDeviceNodes(const std::string& root, DeviceNodes* d) {
  d->root = root.empty() ? "/" : root;
  d->nvidiactl = Check(root, "/dev/nvidiactl");
  d->nvidia_uvm = Check(root, "/dev/nvidia-uvm");
  // /dev/nvidiaN: list the directory rather than probing 0..k, so gaps (a GPU hidden by the
  // runtime) are visible.
  std::vector<int> indexes;
  if (common::UniqueDir dir(JoinRoot(root, "/dev")); dir) {
    while (dirent* e = ::readdir(dir.get())) {
      std::string name = e->d_name;
      if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
          std::all_of(name.begin() + 6, name.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
          name.size() <= 12) {
        indexes.push_back(std::atoi(name.c_str() + 6));
      }
    }
  }
  std::sort(indexes.begin(), indexes.end());
  for (int i : indexes) d->gpus.push_back(Check(root, "/dev/nvidia" + std::to_string(i)));

  d->proc_driver_version = Check(root, "/proc/driver/nvidia/version");
  if (d->proc_driver_version.present) {
    auto text = ReadSmall(JoinRoot(root, "/proc/driver/nvidia/version"), 4096);
    if (!text) {
      d->proc_driver_version.error = "exists but cannot be read";
    } else {
      std::string first = text->substr(0, text->find('\n'));
      d->proc_driver_version_text = common::Trim(first);
      // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ..."
      std::smatch m;
      static const std::regex kVersion(R"(Kernel Module\s+(?:for \S+\s+)?(\d+\.\d+(?:\.\d+)?))");
      if (std::regex_search(first, m, kVersion)) d->kernel_module_version = m[1];
    }
  }
}

void ProbeEnv(const std::map<std::string, std::string>& env, std::vector<EnvVar>* out) {
  for (const char* name : kProbedEnvVars) {
    EnvVar v;
    v.name = name;
    if (auto it = env.find(name); it != env.end()) v.value = it->second;
    out->push_back(std::move(v));
  }
}

std::map<std::string, std::string> ProcessEnv() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) out[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return out;
}

}  // namespace tg::probe::internal
