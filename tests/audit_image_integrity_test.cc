// Reader integrity: layers of uncompressed `docker save` tars are read from their byte ranges
// (found from the outer tar's headers, pax long names included) with the same result as the
// streaming path of a compressed outer tar; truncated outer tars are clean errors; blob digests
// (always for manifests/configs, with --verify-digests for layers) catch tampering in every format.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "audit/image/image_audit.h"
#include "audit/image/oci_image.h"
#include "tests/fixtures/make_images.h"
#include "tests/support/test_util.h"

namespace tg::audit {
namespace {

using nlohmann::json;
using testing::RunTruegreen;
using testing::TempDir;
using namespace testing::images;

constexpr Format kAllFormats[] = {Format::kLegacy, Format::kDocker25, Format::kOciLayout,
                                  Format::kOciArchive};

std::string Build(const TempDir& t, const ImageSpec& spec, Format f, const std::string& name) {
  return WriteImageIn(t.path(), spec, f, name);
}

// Three plain layers (so their bytes appear verbatim inside tar formats) with distinctive
// content to tamper with, a whiteout and an env marker in the config.
ImageSpec Spec() {
  ImageSpec s;
  LayerSpec a;
  a.comp = Comp::kNone;
  a.created_by = "ADD rootfs /";
  a.files = {Dir("usr"), Dir("usr/bin"), File("usr/bin/gcc", std::string(3000, 'g')),
             File("etc/motd", "TAMPER-ME-layer0"), Big("usr/lib/libbig.so", 70000)};
  LayerSpec b;
  b.comp = Comp::kNone;
  b.files = {File("app/.env", "K=V"), File("app/data", "TAMPER-ME-layer1"),
             File("usr/bin/.wh.gcc", "")};
  LayerSpec c;
  c.comp = Comp::kNone;
  c.files = {File("app/notes.ipynb", "{}"), File("app/last", "TAMPER-ME-layer2")};
  s.layers = {a, b, c};
  s.env = {"PATH=/usr/bin", "MARKER=config-v1"};
  return s;
}

// Replaces the first occurrence of `from` with `to` (same length) in every file under `root`
// (or in `root` itself); returns how many files changed.
int Patch(const std::string& root, const std::string& from, const std::string& to) {
  EXPECT_EQ(from.size(), to.size());
  std::vector<std::string> files;
  if (std::filesystem::is_directory(root)) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
      if (e.is_regular_file()) files.push_back(e.path().string());
    }
  } else {
    files.push_back(root);
  }
  int changed = 0;
  for (const auto& f : files) {
    std::string data = detail::ReadAll(f);
    auto pos = data.find(from);
    if (pos == std::string::npos) continue;
    data.replace(pos, from.size(), to);
    detail::WriteStringFile(f, data);
    ++changed;
  }
  return changed;
}

// Gzips a file as a whole (`docker save | gzip`).
std::string Gzip(const std::string& in, const std::string& out) {
  detail::WritePtr a(archive_write_new());
  archive_write_set_format_raw(a.get());
  archive_write_add_filter_gzip(a.get());
  archive_write_set_bytes_in_last_block(a.get(), 1);
  EXPECT_EQ(archive_write_open_filename(a.get(), out.c_str()), ARCHIVE_OK);
  detail::AddFileEntry(a.get(), "x", in);
  EXPECT_EQ(archive_write_close(a.get()), ARCHIVE_OK);
  return out;
}

std::vector<Finding> DigestFindings(const Image& img) {
  std::vector<Finding> out;
  for (const auto& f : img.findings) {
    if (f.rule == "image.digest-mismatch") out.push_back(f);
  }
  return out;
}

// What a scan saw, independent of how the bytes were fetched.
std::string Fingerprint(const Image& img) {
  std::string s;
  for (const auto& l : img.layers) {
    s += fmt::format("layer {} {} {}\n", l.index, l.scan.uncompressed_bytes, l.declared_size);
    for (const auto& e : l.scan.entries) {
      s += fmt::format("  {} {} {} {}\n", e.path, EntryTypeName(e.type), e.size, e.link);
    }
    for (const auto& [p, c] : l.scan.captured) s += fmt::format("  captured {} {}\n", p, c.size());
  }
  for (const auto& f : img.findings)
    s += fmt::format("finding {} {} {}\n", f.rule, f.path, f.layer);
  return s;
}

TEST(AuditImageIntegrity, PlainDockerTarsAreReadByRangeLikeTheStreamedGzipCopy) {
  TempDir t;
  ImageSpec spec = Spec();
  for (Format f : {Format::kLegacy, Format::kDocker25, Format::kOciArchive}) {
    SCOPED_TRACE(FormatTag(f));
    std::string plain = Build(t, spec, f, "img");
    std::string gz = Gzip(plain, plain + ".gz");
    ReadOptions verify;
    verify.verify_layer_digests = true;
    auto a = ReadImage(plain, ReaderLimits{}, CaptureForRules, verify);
    auto b = ReadImage(gz, ReaderLimits{}, CaptureForRules, verify);
    ASSERT_TRUE(a.ok()) << a.status().message();
    ASSERT_TRUE(b.ok()) << b.status().message();
    for (const auto& l : a->layers) EXPECT_FALSE(l.streamed) << "layer " << l.index;
    for (const auto& l : b->layers) EXPECT_TRUE(l.streamed) << "layer " << l.index;
    EXPECT_EQ(Fingerprint(*a), Fingerprint(*b));
    EXPECT_EQ(a->layers.size(), 3u);
    for (std::size_t i = 0; i < a->layers.size(); ++i) {
      EXPECT_EQ(a->layers[i].actual_digest, a->layers[i].expected_digest) << i;
      EXPECT_EQ(b->layers[i].actual_digest, a->layers[i].actual_digest) << i;
    }
    // Same verdicts through the whole audit, and the same as the OCI layout directory.
    auto ra = AuditImage(plain, ImageAuditOptions{});
    auto rd = AuditImage(Build(t, spec, Format::kOciLayout, "img"), ImageAuditOptions{});
    ASSERT_TRUE(ra.ok() && rd.ok());
    EXPECT_EQ(FindingsToJson(ra->findings), FindingsToJson(rd->findings));
  }
}

// A hand-written docker save tar: a junk member first, layers stored under pax long names in
// reverse manifest order, metadata last.
std::string LongNameDockerTar(const TempDir& t, const ImageSpec& spec) {
  std::vector<detail::Blob> blobs;
  std::filesystem::create_directories(t / "ln-work");
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    blobs.push_back(detail::BuildLayer(spec.layers[i], t / "ln-work", static_cast<int>(i), true));
  }
  std::string config = detail::ConfigJson(spec, blobs);
  std::string config_hex = common::Sha256Hex(config.data(), config.size());
  std::string out = t / "longnames.tar";
  detail::WritePtr a = detail::OpenTar(out);
  detail::AddDataEntry(a.get(), "junk/first.bin", std::string(5000, 'j'));
  json layers = json::array();
  for (std::size_t i = 0; i < blobs.size(); ++i) {
    // One 200-character component: too long for ustar's name/prefix split, so pax 'path'.
    layers.push_back(std::string(200, 'd') + "-" + std::to_string(i) + "/layer.tar");
  }
  for (std::size_t i = blobs.size(); i-- > 0;) {
    detail::AddFileEntry(a.get(), layers[i].get<std::string>(), blobs[i].file);
  }
  detail::AddDataEntry(a.get(), config_hex + ".json", config);
  json m = json::array({{{"Config", config_hex + ".json"}, {"Layers", layers}}});
  detail::AddDataEntry(a.get(), "manifest.json", m.dump());
  EXPECT_EQ(archive_write_close(a.get()), ARCHIVE_OK);
  return out;
}

TEST(AuditImageIntegrity, PaxLongNamesAndLayersThatAreNotTheFirstMember) {
  TempDir t;
  ImageSpec spec = Spec();
  std::string tar = LongNameDockerTar(t, spec);
  ASSERT_NE(detail::ReadAll(tar).find("path="), std::string::npos) << "pax headers were written";
  ReadOptions verify;
  verify.verify_layer_digests = true;
  auto img = ReadImage(tar, ReaderLimits{}, CaptureForRules, verify);
  ASSERT_TRUE(img.ok()) << img.status().message();
  ASSERT_EQ(img->layers.size(), 3u);
  auto ref = ReadImage(Build(t, spec, Format::kOciLayout, "ref"), ReaderLimits{}, CaptureForRules);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  for (std::size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_FALSE(img->layers[i].streamed);
    EXPECT_EQ(img->layers[i].actual_digest, img->layers[i].expected_digest);
    ASSERT_EQ(img->layers[i].scan.entries.size(), ref->layers[i].scan.entries.size());
    for (std::size_t k = 0; k < ref->layers[i].scan.entries.size(); ++k) {
      EXPECT_EQ(img->layers[i].scan.entries[k].path, ref->layers[i].scan.entries[k].path);
      EXPECT_EQ(img->layers[i].scan.entries[k].size, ref->layers[i].scan.entries[k].size);
    }
  }
  EXPECT_TRUE(DigestFindings(*img).empty());
}

TEST(AuditImageIntegrity, TruncatedOuterTarIsACleanErrorNamingTheMember) {
  TempDir t;
  ImageSpec spec = Spec();
  // Metadata first so the manifest is intact and only the last layer's data is cut off.
  std::vector<detail::Blob> blobs;
  std::filesystem::create_directories(t / "tr-work");
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    blobs.push_back(detail::BuildLayer(spec.layers[i], t / "tr-work", static_cast<int>(i), true));
  }
  std::string config = detail::ConfigJson(spec, blobs);
  std::string config_hex = common::Sha256Hex(config.data(), config.size());
  std::string tar = t / "cut.tar";
  {
    detail::WritePtr a = detail::OpenTar(tar);
    json layers = json::array();
    for (std::size_t i = 0; i < blobs.size(); ++i) layers.push_back("l" + std::to_string(i));
    detail::AddDataEntry(a.get(), config_hex + ".json", config);
    json m = json::array({{{"Config", config_hex + ".json"}, {"Layers", layers}}});
    detail::AddDataEntry(a.get(), "manifest.json", m.dump());
    for (std::size_t i = 0; i < blobs.size(); ++i) {
      detail::AddFileEntry(a.get(), layers[i].get<std::string>(), blobs[i].file);
    }
    ASSERT_EQ(archive_write_close(a.get()), ARCHIVE_OK);
  }
  ASSERT_TRUE(ReadImage(tar, ReaderLimits{}, nullptr).ok());
  std::string data = detail::ReadAll(tar);
  auto at = data.find("TAMPER-ME-layer2");
  ASSERT_NE(at, std::string::npos);
  detail::WriteStringFile(tar, data.substr(0, at + 4));
  auto img = ReadImage(tar, ReaderLimits{}, nullptr);
  ASSERT_FALSE(img.ok());
  const std::string& m = img.status().message();
  EXPECT_NE(m.find("cut.tar"), std::string::npos) << m;
  EXPECT_NE(m.find("l2"), std::string::npos) << m;
  EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  // The compressed copy of the same truncated tar takes the streaming path: also a clean error.
  auto gz = ReadImage(Gzip(tar, tar + ".gz"), ReaderLimits{}, nullptr);
  ASSERT_FALSE(gz.ok());
  EXPECT_NE(gz.status().message().find("cut.tar.gz"), std::string::npos) << gz.status().message();
  // The byte-range source refuses a range past the end of the file on its own.
  auto src = FileSource::OpenRange(tar, at, 1 << 20);
  ASSERT_FALSE(src.ok());
  EXPECT_NE(src.status().message().find("truncated"), std::string::npos);
}

TEST(AuditImageIntegrity, RangeSourceReadsAndSkipsOnlyItsRange) {
  TempDir t;
  std::string f = t / "bytes";
  detail::WriteStringFile(f, "0123456789abcdef");
  auto src = FileSource::OpenRange(f, 4, 8);
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_EQ((*src)->Skip(3), 3);
  auto b = (*src)->Next();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(std::string(b->data(), b->size()), "789ab");
  EXPECT_EQ((*src)->Skip(100), 0);
  auto end = (*src)->Next();
  ASSERT_TRUE(end.ok());
  EXPECT_TRUE(end->empty());
  EXPECT_EQ(*DigestOf("sha256", "abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_FALSE(DigestOf("md5", "abc").ok());
}

TEST(AuditImageIntegrity, TamperedLayerIsCaughtWithVerifyDigestsInEveryFormat) {
  TempDir t;
  for (Format f : kAllFormats) {
    SCOPED_TRACE(FormatTag(f));
    std::string path = Build(t, Spec(), f, std::string("tl") + FormatTag(f));
    ReadOptions verify;
    verify.verify_layer_digests = true;
    auto clean = ReadImage(path, ReaderLimits{}, nullptr, verify);
    ASSERT_TRUE(clean.ok()) << clean.status().message();
    EXPECT_TRUE(DigestFindings(*clean).empty());
    for (const auto& l : clean->layers) {
      EXPECT_FALSE(l.actual_digest.empty());
      EXPECT_EQ(l.actual_digest, l.expected_digest);
    }
    ASSERT_EQ(Patch(path, "TAMPER-ME-layer1", "TAMPERED-layer-1"), 1);
    // Same size, so without hashing nothing notices (documented: opt-in).
    auto quick = ReadImage(path, ReaderLimits{}, nullptr);
    ASSERT_TRUE(quick.ok()) << quick.status().message();
    EXPECT_TRUE(DigestFindings(*quick).empty());
    auto img = ReadImage(path, ReaderLimits{}, nullptr, verify);
    ASSERT_TRUE(img.ok()) << img.status().message();
    auto found = DigestFindings(*img);
    ASSERT_EQ(found.size(), 1u) << Fingerprint(*img);
    EXPECT_EQ(found[0].layer, 1);
    EXPECT_EQ(found[0].severity, Severity::kError);
    const auto& l1 = img->layers[1];
    EXPECT_NE(l1.actual_digest, l1.expected_digest);
    EXPECT_NE(found[0].message.find(l1.expected_digest), std::string::npos) << found[0].message;
    EXPECT_NE(found[0].message.find(l1.actual_digest), std::string::npos) << found[0].message;
    EXPECT_NE(found[0].message.find("layer 1"), std::string::npos) << found[0].message;
  }
}

TEST(AuditImageIntegrity, TamperedConfigIsAlwaysCaught) {
  TempDir t;
  for (Format f : kAllFormats) {
    SCOPED_TRACE(FormatTag(f));
    std::string path = Build(t, Spec(), f, std::string("tc") + FormatTag(f));
    ASSERT_EQ(Patch(path, "MARKER=config-v1", "MARKER=config-v2"), 1);
    auto img = ReadImage(path, ReaderLimits{}, nullptr);
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->env.at("MARKER"), "config-v2");
    auto found = DigestFindings(*img);
    ASSERT_EQ(found.size(), 1u) << Fingerprint(*img);
    EXPECT_NE(found[0].message.find("config"), std::string::npos) << found[0].message;
    EXPECT_NE(found[0].message.find(img->config_digest.substr(img->config_digest.size() - 20)),
              std::string::npos)
        << found[0].message;
  }
}

TEST(AuditImageIntegrity, ReplacedBlobWithAnotherSizeIsCaughtWithoutHashing) {
  TempDir t;
  ImageSpec spec = Spec();
  spec.layers[0].comp = Comp::kGzip;
  std::string dir = Build(t, spec, Format::kOciLayout, "sz");
  ImageSpec other = spec;
  other.layers[0].files.push_back(File("extra", std::string(5000, 'e')));
  std::string dir2 = Build(t, other, Format::kOciLayout, "sz2");
  auto a = ReadImage(dir, ReaderLimits{}, nullptr);
  auto b = ReadImage(dir2, ReaderLimits{}, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  // A valid gzip layer of another image, under the first image's digest.
  std::filesystem::copy_file(dir2 + "/" + b->layers[0].blob, dir + "/" + a->layers[0].blob,
                             std::filesystem::copy_options::overwrite_existing);
  auto img = ReadImage(dir, ReaderLimits{}, nullptr);
  ASSERT_TRUE(img.ok()) << img.status().message();
  auto found = DigestFindings(*img);
  ASSERT_EQ(found.size(), 1u) << Fingerprint(*img);
  EXPECT_EQ(found[0].layer, 0);
  EXPECT_NE(found[0].message.find("descriptor declares"), std::string::npos) << found[0].message;
}

TEST(AuditImageIntegrity, CliVerifyDigestsExitCodes) {
  TempDir t;
  ImageSpec spec;
  LayerSpec l;
  l.comp = Comp::kNone;
  l.files = {Dir("app"), File("app/server", "TAMPER-ME-server")};
  spec.layers = {l};
  std::string img = Build(t, spec, Format::kLegacy, "cli");
  auto ok = RunTruegreen({"audit", "image", img, "--verify-digests", "--json"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  json j = json::parse(ok.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << ok.out;
  EXPECT_EQ(j["verify_digests"], true);
  EXPECT_EQ(j["layers"][0]["digest_verified"], true);
  ASSERT_EQ(Patch(img, "TAMPER-ME-server", "TAMPERED-server!"), 1);
  auto plain = RunTruegreen({"audit", "image", img});
  EXPECT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  EXPECT_NE(plain.out.find("--verify-digests"), std::string::npos) << plain.out;
  auto bad = RunTruegreen({"audit", "image", img, "--verify-digests"});
  EXPECT_EQ(bad.exit_code, 6) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("image.digest-mismatch"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("0 of 1 layer blobs"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace tg::audit
