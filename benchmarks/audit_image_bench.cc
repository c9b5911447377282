// Benchmark: `audit image` against `tar -tvf` over the same layers, side by side.
//
// Generates an image of --image_mib MiB uncompressed (default 256; use 1024 for the 1 GiB target)
// in $TMPDIR/tg-audit-bench-<MiB>/ (kept between runs, never in git) in four forms: an OCI layout
// with gzip layers, an OCI layout with uncompressed layers, a legacy `docker save` tar and a
// Docker >= 25 `docker save` tar (OCI layout inside). Each benchmark iteration runs the full audit
// (read, merge, rules, efficiency) in-process and then `tar -tvf` on every layer blob of the
// matching layout (after one untimed warm-up of both, so both read from the page cache).
// Counters: wall seconds (audit_s, tar_s, ratio) and CPU seconds (audit_cpu_s: this process's
// user+sys during the audit; tar_cpu_s: the tar children's user+sys from RUSAGE_CHILDREN;
// cpu_ratio), since wall time is noisy on a shared machine. "+verify" cases add
// --verify-digests (every layer blob hashed). Target: ratio <= 1.2. Results: docs/PERFORMANCE.md.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../tests/fixtures/make_images.h"
#include "audit/image/image_audit.h"

namespace {

namespace fs = std::filesystem;
using namespace tg::testing::images;

std::uint64_t g_mib = 256;
std::string g_root;

// 45% many small files (16 KiB, incompressible), 25% medium (1 MiB), 30% large files that a later
// layer partly overwrites (dive waste), in five layers.
ImageSpec MakeSpec(Comp comp) {
  ImageSpec s;
  std::uint64_t total = g_mib << 20;
  std::uint64_t small = total * 45 / 100, medium = total * 25 / 100, large = total * 30 / 100;
  LayerSpec l0, l1, l2, l3, l4;
  for (auto* l : {&l0, &l1, &l2, &l3, &l4}) l->comp = comp;
  std::uint64_t n_small = small / (16 << 10);
  for (std::uint64_t i = 0; i < n_small; ++i) {
    LayerSpec& l = i % 2 ? l0 : l1;
    l.files.push_back(
        Big("usr/lib/pkg" + std::to_string(i % 97) + "/f" + std::to_string(i), 16 << 10));
  }
  for (std::uint64_t i = 0; i < medium >> 20; ++i) {
    l2.files.push_back(Big("opt/app/lib/m" + std::to_string(i) + ".so", 1 << 20));
  }
  std::uint64_t n_large = std::max<std::uint64_t>(1, large / (64ull << 20));
  for (std::uint64_t i = 0; i < n_large; ++i) {
    l3.files.push_back(Big("models/w" + std::to_string(i) + ".bin", large / n_large, false));
  }
  l4.files = {File("models/.wh.w0.bin", ""), File("usr/bin/gcc", "x"), File("app/.env", "K=V")};
  l0.created_by = "ADD rootfs";
  s.layers = {l0, l1, l2, l3, l4};
  return s;
}

std::vector<std::string> LayerBlobs(const std::string& layout) {
  // The manifest's layer order is irrelevant for tar -tvf; every blob that is not JSON is a layer.
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(layout + "/blobs/sha256")) {
    std::ifstream in(e.path(), std::ios::binary);
    std::string head(1, '\0');
    in.read(head.data(), 1);
    if (fs::file_size(e.path()) > 4096 || head != "{") out.push_back(e.path().string());
  }
  return out;
}

void Prepare() {
  g_root = (fs::temp_directory_path() / ("tg-audit-bench-" + std::to_string(g_mib))).string();
  if (fs::exists(g_root + "/done-v2")) return;
  fs::remove_all(g_root);
  fs::create_directories(g_root);
  WriteImage(MakeSpec(Comp::kGzip), Format::kOciLayout, g_root + "/oci-gzip", g_root + "/work");
  WriteImage(MakeSpec(Comp::kNone), Format::kOciLayout, g_root + "/oci-plain", g_root + "/work");
  WriteImage(MakeSpec(Comp::kNone), Format::kLegacy, g_root + "/docker-save.tar", g_root + "/work");
  WriteImage(MakeSpec(Comp::kNone), Format::kDocker25, g_root + "/docker-save-oci.tar",
             g_root + "/work");
  detail::WriteStringFile(g_root + "/done-v2", "ok");
}

double Seconds(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

// user + system CPU seconds of this process (RUSAGE_SELF) or of its reaped children.
double CpuSeconds(int who) {
  struct rusage u {};
  getrusage(who, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// image: what the audit reads; layout: whose layer blobs tar -tvf lists.
void BM_AuditVsTar(benchmark::State& state, std::string image, std::string layout, bool verify) {
  image = g_root + "/" + image;
  layout = g_root + "/" + layout;
  std::string cmd;
  for (const auto& b : LayerBlobs(layout)) cmd += "tar -tvf '" + b + "' > /dev/null && ";
  cmd += "true";
  tg::audit::ImageAuditOptions opts;
  opts.verify_digests = verify;
  // The zero-filled "model" layer compresses > 1000x, which the bomb guard would stop at in the
  // gzip case (256 MiB floor); measure the whole image instead.
  opts.policy.limits.max_ratio = ~0ull;
  // Untimed warm-up: the page cache then holds what both sides read.
  if (!tg::audit::AuditImage(image, opts).ok() || std::system(cmd.c_str()) != 0) {
    state.SkipWithError("warm-up failed");
    return;
  }
  double audit_total = 0, tar_total = 0, audit_cpu = 0, tar_cpu = 0;
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    double c0 = CpuSeconds(RUSAGE_SELF);
    auto t0 = std::chrono::steady_clock::now();
    auto r = tg::audit::AuditImage(image, opts);
    double audit_s = Seconds(t0);
    audit_cpu += CpuSeconds(RUSAGE_SELF) - c0;
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    if (verify) {
      for (const auto& l : r->layers) {
        if (!l.digest_verified) {
          state.SkipWithError("a layer digest did not verify");
          return;
        }
      }
    }
    bytes = r->total_bytes;
    benchmark::DoNotOptimize(r->findings.size());
    double k0 = CpuSeconds(RUSAGE_CHILDREN);
    auto t1 = std::chrono::steady_clock::now();
    if (std::system(cmd.c_str()) != 0) {
      state.SkipWithError("tar -tvf failed");
      return;
    }
    double tar_s = Seconds(t1);
    tar_cpu += CpuSeconds(RUSAGE_CHILDREN) - k0;
    state.SetIterationTime(audit_s);
    audit_total += audit_s;
    tar_total += tar_s;
  }
  using benchmark::Counter;
  state.counters["audit_s"] = Counter(audit_total, Counter::kAvgIterations);
  state.counters["tar_s"] = Counter(tar_total, Counter::kAvgIterations);
  state.counters["ratio"] = audit_total / tar_total;
  state.counters["audit_cpu_s"] = Counter(audit_cpu, Counter::kAvgIterations);
  state.counters["tar_cpu_s"] = Counter(tar_cpu, Counter::kAvgIterations);
  state.counters["cpu_ratio"] = tar_cpu > 0 ? audit_cpu / tar_cpu : 0;
  state.counters["image_MiB"] = static_cast<double>(bytes) / (1 << 20);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.starts_with("--image_mib=")) {
      g_mib = std::stoull(a.substr(12));
    } else {
      rest.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(rest.size());
  Prepare();
  struct Case {
    const char* name;
    const char* image;
    const char* layout;
    bool verify;
  };
  // docker save cases compare with tar -tvf on the same layers as bare blobs (oci-plain).
  for (const Case& c : {Case{"oci-gzip", "oci-gzip", "oci-gzip", false},
                        Case{"oci-plain", "oci-plain", "oci-plain", false},
                        Case{"docker-save", "docker-save.tar", "oci-plain", false},
                        Case{"docker-save-oci", "docker-save-oci.tar", "oci-plain", false},
                        Case{"oci-gzip+verify", "oci-gzip", "oci-gzip", true},
                        Case{"oci-plain+verify", "oci-plain", "oci-plain", true},
                        Case{"docker-save+verify", "docker-save.tar", "oci-plain", true}}) {
    benchmark::RegisterBenchmark((std::string("AuditVsTar/") + c.name).c_str(), BM_AuditVsTar,
                                 std::string(c.image), std::string(c.layout), c.verify)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
  }
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
