// Benchmark: `audit image` against `tar -tvf` over the same layers, side by side.
//
// Generates an image of --image_mib MiB uncompressed (default 256; use 1024 for the 1 GiB target)
// in $TMPDIR/tg-audit-bench-<MiB>/ (kept between runs, never in git) in three forms: an OCI layout
// with gzip layers, an OCI layout with uncompressed layers, and a legacy `docker save` tar. Each
// benchmark iteration runs the full audit (read, merge, rules, efficiency) in-process and then
// `tar -tvf` on every layer blob of the matching layout; counters report both times and their
// ratio (target <= 1.2). Results and the exact command: docs/perf/audit_image.md.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "../tests/fixtures/make_images.h"
#include "audit/image_audit.h"

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
    std::string head = detail::ReadAll(e.path().string()).substr(0, 1);
    if (fs::file_size(e.path()) > 4096 || head != "{") out.push_back(e.path().string());
  }
  return out;
}

void Prepare() {
  g_root = (fs::temp_directory_path() / ("tg-audit-bench-" + std::to_string(g_mib))).string();
  if (fs::exists(g_root + "/done")) return;
  fs::remove_all(g_root);
  fs::create_directories(g_root);
  WriteImage(MakeSpec(Comp::kGzip), Format::kOciLayout, g_root + "/oci-gzip", g_root + "/work");
  WriteImage(MakeSpec(Comp::kNone), Format::kOciLayout, g_root + "/oci-plain", g_root + "/work");
  WriteImage(MakeSpec(Comp::kNone), Format::kLegacy, g_root + "/docker-save.tar", g_root + "/work");
  detail::WriteStringFile(g_root + "/done", "ok");
}

double Seconds(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

// image: what the audit reads; layout: whose layer blobs tar -tvf lists.
void BM_AuditVsTar(benchmark::State& state, std::string image, std::string layout) {
  image = g_root + "/" + image;
  layout = g_root + "/" + layout;
  std::string cmd;
  for (const auto& b : LayerBlobs(layout)) cmd += "tar -tvf '" + b + "' > /dev/null && ";
  cmd += "true";
  tg::audit::ImageAuditOptions opts;
  double audit_total = 0, tar_total = 0;
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = tg::audit::AuditImage(image, opts);
    double audit_s = Seconds(t0);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    bytes = r->total_bytes;
    benchmark::DoNotOptimize(r->findings.size());
    auto t1 = std::chrono::steady_clock::now();
    if (std::system(cmd.c_str()) != 0) {
      state.SkipWithError("tar -tvf failed");
      return;
    }
    double tar_s = Seconds(t1);
    state.SetIterationTime(audit_s);
    audit_total += audit_s;
    tar_total += tar_s;
  }
  state.counters["audit_s"] = benchmark::Counter(audit_total, benchmark::Counter::kAvgIterations);
  state.counters["tar_s"] = benchmark::Counter(tar_total, benchmark::Counter::kAvgIterations);
  state.counters["ratio"] = audit_total / tar_total;
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
  benchmark::RegisterBenchmark("AuditVsTar/oci-gzip", BM_AuditVsTar, "oci-gzip", "oci-gzip")
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(3);
  benchmark::RegisterBenchmark("AuditVsTar/oci-plain", BM_AuditVsTar, "oci-plain", "oci-plain")
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(3);
  benchmark::RegisterBenchmark("AuditVsTar/docker-save", BM_AuditVsTar, "docker-save.tar",
                               "oci-plain")
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(3);
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
