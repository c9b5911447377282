// Image reader: the four on-disk formats, compression sniffing, whiteouts/opaque directories,
// history mapping, and hostile archives (reported, survived, bounded).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

#include <filesystem>

#include "audit/image/image_audit.h"
#include "audit/image/image_fs.h"
#include "audit/image/oci_image.h"
#include "tests/fixtures/make_images.h"
#include "tests/support/test_util.h"

namespace tg::audit {
namespace {

using testing::TempDir;
using namespace testing::images;

std::string Build(const TempDir& t, const ImageSpec& spec, Format f, const std::string& name) {
  return WriteImageIn(t.path(), spec, f, name);
}

ImageSpec LayeredSpec() {
  ImageSpec s;
  LayerSpec base;
  base.created_by = "ADD rootfs /";
  base.files = {Dir("usr"),
                Dir("usr/bin"),
                File("usr/bin/tool", std::string(1000, 'a')),
                Dir("app"),
                File("app/keep.txt", "keep"),
                File("app/old.bin", std::string(4096, 'o')),
                Dir("data"),
                File("data/a", "aaaa"),
                File("data/b", "bbbb")};
  LayerSpec l1;
  l1.created_by = "RUN rm /app/old.bin && refresh data";
  l1.comp = Comp::kZstd;
  l1.empty_before = {"ENV A=1", "WORKDIR /app"};
  l1.files = {Dir("app"),
              File("app/.wh.old.bin", ""),
              Dir("data"),
              File("data/.wh..wh..opq", ""),
              File("data/c", "cccc"),
              File("usr/bin/tool", std::string(1500, 'b'))};
  LayerSpec l2;
  l2.created_by = "COPY x /x";
  l2.comp = Comp::kNone;
  l2.files = {File("x", "xx"), Symlink("usr/bin/t2", "tool")};
  s.layers = {base, l1, l2};
  s.env = {"PATH=/usr/bin", "CUDA_VERSION=12.4.1", "EMPTY="};
  return s;
}

TEST(AuditImageReader, SniffsCompressionFromMagicBytes) {
  EXPECT_EQ(SniffCompression(std::string("\x1f\x8b\x08\x00", 4)), Compression::kGzip);
  EXPECT_EQ(SniffCompression(std::string("\x28\xb5\x2f\xfd", 4)), Compression::kZstd);
  EXPECT_EQ(SniffCompression("usr/"), Compression::kNone);
  EXPECT_EQ(SniffCompression("BZh9"), std::nullopt);
}

TEST(AuditImageReader, NormalizesMemberNames) {
  bool abs = false;
  EXPECT_EQ(NormalizeMemberName("./usr//bin/./gcc/", &abs), "usr/bin/gcc");
  EXPECT_FALSE(abs);
  EXPECT_EQ(NormalizeMemberName("/etc/passwd", &abs), "etc/passwd");
  EXPECT_TRUE(abs);
  EXPECT_EQ(NormalizeMemberName("a/../../etc", &abs), std::nullopt);
}

TEST(AuditImageReader, AllFormatsGiveTheSameModel) {
  TempDir t;
  ImageSpec spec = LayeredSpec();
  for (Format f : {Format::kLegacy, Format::kDocker25, Format::kOciLayout, Format::kOciArchive}) {
    SCOPED_TRACE(FormatTag(f));
    std::string path = Build(t, spec, f, "layered");
    auto img = ReadImage(path, ReaderLimits{}, nullptr);
    ASSERT_TRUE(img.ok()) << img.status().message();
    ASSERT_EQ(img->layers.size(), 3u);
    EXPECT_EQ(img->env.at("CUDA_VERSION"), "12.4.1");
    EXPECT_EQ(img->env.at("EMPTY"), "");
    // History: 5 entries, two empty ones map to no layer.
    ASSERT_EQ(img->history.size(), 5u);
    EXPECT_EQ(img->history[0].layer, 0);
    EXPECT_TRUE(img->history[1].empty_layer);
    EXPECT_EQ(img->history[1].layer, -1);
    EXPECT_EQ(img->history[3].layer, 1);
    EXPECT_EQ(img->layers[2].created_by, "COPY x /x");
    // Compression is sniffed: docker tars always carry plain layers, OCI keeps the written one.
    bool docker = f == Format::kLegacy || f == Format::kDocker25;
    EXPECT_EQ(img->layers[0].scan.compression, docker ? Compression::kNone : Compression::kGzip);
    EXPECT_EQ(img->layers[1].scan.compression, docker ? Compression::kNone : Compression::kZstd);
    if (!docker) {
      EXPECT_LT(img->layers[0].scan.compressed_bytes, img->layers[0].scan.uncompressed_bytes);
    }
    EXPECT_GT(img->layers[0].scan.uncompressed_bytes, 1000u + 4096u);
    EXPECT_EQ(img->format == ImageFormat::kDockerLegacy, f == Format::kLegacy);
    EXPECT_EQ(img->format == ImageFormat::kDockerOci, f == Format::kDocker25);

    FileSystem fs = MergeLayers(*img);
    EXPECT_EQ(fs.count("app/old.bin"), 0u) << "whiteout applied";
    EXPECT_EQ(fs.count("app/keep.txt"), 1u);
    EXPECT_EQ(fs.count("data/a"), 0u) << "opaque dir hides lower content";
    EXPECT_EQ(fs.count("data/b"), 0u);
    EXPECT_EQ(fs.count("data/c"), 1u) << "opaque dir keeps same-layer content";
    ASSERT_NE(fs.find("usr/bin/tool"), fs.end());
    EXPECT_EQ(fs.find("usr/bin/tool")->size(), 1500u);
    EXPECT_EQ(fs.find("usr/bin/tool")->layer(), 1);
    EXPECT_EQ(ResolvePath(fs, "usr/bin/t2"), "usr/bin/tool");
  }
}

TEST(AuditImageReader, ErrorCodesSayWhoseFaultItIs) {
  EXPECT_EQ(FileErrorStatus(ENOENT, "m").code(), common::StatusCode::kNotFound);
  EXPECT_EQ(FileErrorStatus(ENOTDIR, "m").code(), common::StatusCode::kNotFound);
  for (int e : {ENOMEM, EMFILE, ENFILE, EIO}) {
    EXPECT_EQ(FileErrorStatus(e, "m").code(), common::StatusCode::kUnavailable) << e;
  }
  for (int e : {EACCES, ENAMETOOLONG, ELOOP, EISDIR}) {
    EXPECT_EQ(FileErrorStatus(e, "m").code(), common::StatusCode::kInvalidArg) << e;
  }
  EXPECT_EQ(FileErrorStatus(EMFILE, "blob: cannot open").message(), "blob: cannot open");
}

// Out of descriptors while opening the image is this machine's failure (UNAVAILABLE), not a
// corrupt archive: libarchive's open of the tar fails with EMFILE.
TEST(AuditImageReader, OutOfDescriptorsIsUnavailable) {
  TempDir t;
  ImageSpec spec;
  LayerSpec l;
  l.files = {File("a", "b")};
  spec.layers.push_back(l);
  const std::string tar = Build(t, spec, Format::kLegacy, "fd");
  ASSERT_TRUE(ReadImage(tar, ReaderLimits{}, nullptr).ok());
  // The lowest free descriptor becomes the limit, so the next open() fails with EMFILE.
  const int lowest = ::dup(0);
  ASSERT_GE(lowest, 0);
  ::close(lowest);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit tight = old;
  tight.rlim_cur = static_cast<rlim_t>(lowest);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  auto img = ReadImage(tar, ReaderLimits{}, nullptr);
  ::setrlimit(RLIMIT_NOFILE, &old);
  ASSERT_FALSE(img.ok());
  EXPECT_EQ(img.status().code(), common::StatusCode::kUnavailable) << img.status().message();
  EXPECT_NE(img.status().message().find(tar), std::string::npos) << img.status().message();
}

TEST(AuditImageReader, DiveEfficiencyCountsEveryCopyAndDeletions) {
  TempDir t;
  std::string path = Build(t, LayeredSpec(), Format::kOciLayout, "eff");
  auto img = ReadImage(path, ReaderLimits{}, nullptr);
  ASSERT_TRUE(img.ok()) << img.status().message();
  Efficiency e = ComputeEfficiency(*img);
  // Paths with >= 2 copies: usr/bin/tool (1000 + 1500) and app/old.bin (4096 + deletion 4096)
  // and the opaque data dir (its deletion of a+b, 8 bytes, counted once under "data").
  EXPECT_EQ(e.wasted_bytes, 1000u + 1500u + 4096u + 4096u);
  // Minimum per path over all copies / all copies.
  std::uint64_t all = 1000 + 1500 + 4 + 4096 + 4096 + 4 + 4 + 8 + 4 + 2 + 0;
  std::uint64_t min = 1000 + 4 + 4096 + 4 + 4 + 8 + 4 + 2 + 0;
  EXPECT_NEAR(e.score, static_cast<double>(min) / all, 1e-9);
  ASSERT_FALSE(e.inefficient.empty());
  EXPECT_EQ(e.inefficient[0].path, "app/old.bin");
  EXPECT_EQ(e.inefficient[0].copies, 2);
  // Per layer, as dive attributes it: the base's first copies of tool and old.bin, then layer 1's
  // second tool and its deletion of old.bin; the shares add up to the total.
  ASSERT_EQ(e.layer_wasted_bytes.size(), 3u);
  EXPECT_EQ(e.layer_wasted_bytes[0], 1000u + 4096u);
  EXPECT_EQ(e.layer_wasted_bytes[1], 1500u + 4096u);
  EXPECT_EQ(e.layer_wasted_bytes[2], 0u);
}

TEST(AuditImageReader, MissingAndCorruptInputsNameTheFile) {
  TempDir t;
  auto missing = ReadImage(t / "nope.tar", ReaderLimits{}, nullptr);
  EXPECT_EQ(missing.status().code(), common::StatusCode::kNotFound);
  testing::WriteFile(t / "junk.tar", std::string(3000, 'j'));
  auto junk = ReadImage(t / "junk.tar", ReaderLimits{}, nullptr);
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.status().message().find("junk.tar"), std::string::npos) << junk.status().message();
  std::filesystem::create_directories(t / "emptydir");
  auto dir = ReadImage(t / "emptydir", ReaderLimits{}, nullptr);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("oci-layout"), std::string::npos);
  // A layout whose index points at a missing blob.
  std::string lay = Build(t, LayeredSpec(), Format::kOciLayout, "broken");
  for (const auto& e : std::filesystem::directory_iterator(lay + "/blobs/sha256")) {
    if (detail::ReadAll(e.path().string()).front() != '{') {
      std::filesystem::remove(e.path());
      break;
    }
  }
  auto broken = ReadImage(lay, ReaderLimits{}, nullptr);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("blobs/sha256/"), std::string::npos)
      << broken.status().message();
}

// ---- hostile archives -------------------------------------------------------------------------

ImageSpec OneLayer(LayerSpec l) {
  ImageSpec s;
  s.layers = {std::move(l)};
  return s;
}

TEST(AuditImageReader, PathTraversalAndAbsoluteNamesAreReportedNotApplied) {
  TempDir t;
  LayerSpec l;
  l.files = {File("../../etc/passwd", "root::0:0"), File("/etc/abs", "a"), File("ok", "ok"),
             FileSpec{"link", 'h', "", 0, true, "../../outside"}};
  std::string path = Build(t, OneLayer(l), Format::kOciArchive, "trav");
  auto img = ReadImage(path, ReaderLimits{}, nullptr);
  ASSERT_TRUE(img.ok()) << img.status().message();
  FileSystem fs = MergeLayers(*img);
  EXPECT_EQ(fs.count("etc/passwd"), 0u);
  EXPECT_EQ(fs.count("etc/abs"), 1u);
  EXPECT_EQ(fs.count("ok"), 1u);
  EXPECT_EQ(fs.count("link"), 0u);
  int traversal = 0, absolute = 0;
  for (const auto& f : img->findings) {
    if (f.rule == "image.hostile.path-traversal") ++traversal;
    if (f.rule == "image.hostile.absolute-path") ++absolute;
    EXPECT_EQ(f.layer, 0);
  }
  EXPECT_EQ(traversal, 2);
  EXPECT_EQ(absolute, 1);
}

TEST(AuditImageReader, SymlinkLoopsAreBoundedAndReported) {
  TempDir t;
  LayerSpec l;
  l.files = {Symlink("a", "b"), Symlink("b", "/a"), Symlink("self", "self/x"), File("f", "1"),
             Symlink("good", "f")};
  std::string path = Build(t, OneLayer(l), Format::kOciLayout, "loop");
  auto r = AuditImage(path, ImageAuditOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::set<std::string> loops;
  for (const auto& f : r->findings) {
    if (f.rule == "image.hostile.symlink-loop") loops.insert(f.path);
  }
  EXPECT_EQ(loops, (std::set<std::string>{"a", "b", "self"}));
}

TEST(AuditImageReader, DecompressionBombStopsAtTheCapWithoutInflating) {
  TempDir t;
  LayerSpec l;
  l.files = {File("small", "s"), Big("bomb", 16ull << 20, /*random=*/false), File("after", "a")};
  std::string path = Build(t, OneLayer(l), Format::kOciLayout, "bomb");
  ImageAuditOptions opts;
  opts.policy.limits.max_uncompressed_bytes = 4ull << 20;
  auto r = AuditImage(path, opts);
  ASSERT_TRUE(r.ok()) << r.status().message();
  bool found = false;
  for (const auto& f : r->findings) {
    if (f.rule == "image.hostile.size-limit") {
      found = true;
      EXPECT_EQ(f.path, "bomb");
      EXPECT_EQ(f.bytes, 16ull << 20);
    }
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(r->failed);
  EXPECT_EQ(r->fs.count("after"), 0u) << "scan stopped at the bomb";
  // The ratio guard catches a bomb that fits the size cap.
  ImageAuditOptions ratio;
  ratio.policy.limits.ratio_floor_bytes = 1 << 20;
  ratio.policy.limits.max_ratio = 50;
  auto r2 = AuditImage(path, ratio);
  ASSERT_TRUE(r2.ok()) << r2.status().message();
  bool bomb = false;
  for (const auto& f : r2->findings) bomb |= f.rule == "image.hostile.bomb";
  EXPECT_TRUE(bomb);
}

TEST(AuditImageReader, EntryCountCap) {
  TempDir t;
  LayerSpec l;
  for (int i = 0; i < 50; ++i) l.files.push_back(File("f" + std::to_string(i), "x"));
  std::string path = Build(t, OneLayer(l), Format::kOciLayout, "many");
  ReaderLimits lim;
  lim.max_entries = 10;
  auto img = ReadImage(path, lim, nullptr);
  ASSERT_TRUE(img.ok());
  EXPECT_EQ(img->layers[0].scan.entries.size(), 10u);
  EXPECT_TRUE(img->layers[0].scan.stopped_early);
  ASSERT_FALSE(img->findings.empty());
  EXPECT_EQ(img->findings[0].rule, "image.hostile.entry-limit");
}

TEST(AuditImageReader, TotalEntryCapCountsEveryLayer) {
  // Two layers of 30 entries under a 50-entry image-wide cap: the second layer is not kept.
  TempDir t;
  LayerSpec a, b;
  for (int i = 0; i < 30; ++i) a.files.push_back(File("a" + std::to_string(i), "x"));
  for (int i = 0; i < 30; ++i) b.files.push_back(File("b" + std::to_string(i), "y"));
  ImageSpec spec;
  spec.layers = {a, b};
  for (Format f : {Format::kOciLayout, Format::kLegacy}) {
    std::string path = Build(t, spec, f, f == Format::kOciLayout ? "two-oci" : "two-docker");
    ReaderLimits lim;
    lim.max_total_entries = 50;
    auto img = ReadImage(path, lim, nullptr);
    ASSERT_TRUE(img.ok()) << img.status().message();
    bool capped = false;
    std::size_t kept = 0;
    for (const auto& f2 : img->findings) capped |= f2.rule == "image.hostile.entry-limit";
    for (const auto& l : img->layers) kept += l.scan.entries.size();
    EXPECT_TRUE(capped) << path;
    EXPECT_LE(kept, 50u) << path;
    // The layer-reference limit is checked before anything is read.
    ReaderLimits one;
    one.max_layers = 1;
    auto refused = ReadImage(path, one, nullptr);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("names 2 layers"), std::string::npos);
  }
}

TEST(AuditImageReader, TruncatedGzipIsABadInputNamingTheLayer) {
  TempDir t;
  LayerSpec good;
  good.files = {Big("payload", 256 << 10)};
  std::string full = Build(t, OneLayer(good), Format::kOciLayout, "full");
  std::string blob;
  for (const auto& e : std::filesystem::directory_iterator(full + "/blobs/sha256")) {
    if (std::filesystem::file_size(e.path()) > 100000) blob = detail::ReadAll(e.path());
  }
  ASSERT_FALSE(blob.empty());
  LayerSpec cut;
  cut.raw_blob = blob.substr(0, blob.size() / 2);
  std::string path = Build(t, OneLayer(cut), Format::kOciArchive, "cut");
  auto img = ReadImage(path, ReaderLimits{}, nullptr);
  ASSERT_FALSE(img.ok());
  EXPECT_NE(img.status().message().find("layer 0"), std::string::npos) << img.status().message();
  EXPECT_NE(img.status().message().find("gzip"), std::string::npos) << img.status().message();
}

TEST(AuditImageReader, HugeDeclaredSizeIsSurvived) {
  TempDir t;
  LayerSpec l;
  // 077777777777 octal = 8 GiB - 1 declared, followed by almost nothing.
  l.raw_blob = RawTarHeader("huge", "77777777777") + std::string(1024, 'h');
  std::string path = Build(t, OneLayer(l), Format::kOciLayout, "huge");
  // Default limits: the ratio guard (8 GiB from a 1.5 KiB blob) reports it before reading.
  auto img0 = ReadImage(path, ReaderLimits{}, nullptr);
  ASSERT_TRUE(img0.ok()) << img0.status().message();
  ASSERT_FALSE(img0->findings.empty());
  EXPECT_EQ(img0->findings[0].rule, "image.hostile.bomb");
  // Without the ratio guard, skipping the entry runs into the end of the blob: a clean error.
  ReaderLimits no_ratio;
  no_ratio.max_ratio = ~0ull;
  auto img = ReadImage(path, no_ratio, nullptr);
  ASSERT_FALSE(img.ok());
  EXPECT_NE(img.status().message().find("layer 0"), std::string::npos) << img.status().message();
  // With a smaller cap it is a finding before any data is read.
  ReaderLimits lim;
  lim.max_uncompressed_bytes = 1ull << 30;
  auto img2 = ReadImage(path, lim, nullptr);
  ASSERT_TRUE(img2.ok()) << img2.status().message();
  ASSERT_FALSE(img2->findings.empty());
  EXPECT_EQ(img2->findings[0].rule, "image.hostile.size-limit");
  EXPECT_EQ(img2->findings[0].bytes, (8ull << 30) - 1);
}

TEST(AuditImageReader, UnknownCompressionIsRefused) {
  TempDir t;
  LayerSpec l;
  l.raw_blob = std::string(
                   "\xfd"
                   "7zXZ\0",
                   6) +
               std::string(600, 'z');
  std::string path = Build(t, OneLayer(l), Format::kOciLayout, "xz");
  auto img = ReadImage(path, ReaderLimits{}, nullptr);
  ASSERT_FALSE(img.ok());
  EXPECT_NE(img.status().message().find("unsupported compression"), std::string::npos);
}

}  // namespace
}  // namespace tg::audit
