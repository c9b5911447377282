// `audit image` by containers-transport reference: docker-archive: and oci: (and oci-archive:)
// read the same image as the plain path; a registry reference that cannot be fetched, and a
// daemon transport, are exit 2 with a clear message.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/fixtures/make_images.h"
#include "tests/support/test_util.h"

namespace tg::testing {
namespace {

using namespace images;

ImageSpec Spec() {
  ImageSpec s;
  LayerSpec base;
  base.files = {Dir("usr"), Dir("usr/bin"), File("usr/bin/tool", std::string(1000, 'a'))};
  LayerSpec app;
  app.files = {Dir("app"), File("app/main.py", "print(1)\n"), File("app/tmp.bin", "zz")};
  s.layers = {base, app};
  return s;
}

// The audit's JSON without the fields that name the input.
nlohmann::json Audit(const std::string& ref) {
  ProcessResult r = RunTruegreen({"--json", "audit", "image", ref});
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 6) << ref << "\n" << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
  if (j.is_object()) {
    j.erase("image");
    j.erase("path");
    j.erase("format");
  }
  return j;
}

TEST(AuditImageRef, TransportsReadTheSameImageAsThePath) {
  TempDir t;
  std::string tar = WriteImageIn(t.path(), Spec(), Format::kLegacy, "docker");
  nlohmann::json plain = Audit(tar);
  ASSERT_TRUE(plain.contains("layers")) << plain.dump(2);
  EXPECT_EQ(Audit("docker-archive:" + tar), plain);
  EXPECT_EQ(Audit("docker-archive:" + tar + ":example/app:1"), plain);

  std::string layout = WriteImageIn(t.path(), Spec(), Format::kOciLayout, "layout");
  nlohmann::json oci_plain = Audit(layout);
  ASSERT_TRUE(oci_plain.contains("layers")) << oci_plain.dump(2);
  EXPECT_EQ(Audit("oci:" + layout), oci_plain);
  EXPECT_EQ(Audit("oci:" + layout + ":latest"), oci_plain);
  // The same files whichever container format carried them.
  EXPECT_EQ(oci_plain["files"], plain["files"]);

  std::string archive = WriteImageIn(t.path(), Spec(), Format::kOciArchive, "archive");
  EXPECT_EQ(Audit("oci-archive:" + archive), Audit(archive));
}

TEST(AuditImageRef, UnreachableRegistryAndDaemonTransportsAreExitTwo) {
  // ".invalid" never resolves (RFC 2606), so this fails the same way online and offline.
  ProcessResult r = RunTruegreen({"audit", "image", "docker://registry.invalid/none/app:1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("docker://registry.invalid/none/app:1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cannot copy the image"), std::string::npos) << r.err;
  ProcessResult d = RunTruegreen({"audit", "image", "docker-daemon:app:1"});
  EXPECT_EQ(d.exit_code, 2) << d.err;
  EXPECT_NE(d.err.find("not supported"), std::string::npos) << d.err;
}

}  // namespace
}  // namespace tg::testing
