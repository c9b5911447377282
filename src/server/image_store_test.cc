#include "server/image_store.h"

#include <gtest/gtest.h>

#include <set>

namespace tg::server {
namespace {

using std::chrono::seconds;

TEST(ImageStoreTest, TokensAreRandomHexAndImagesComeBackUntilTheirTtl) {
  ImageStore store(1 << 20, seconds(60));
  const auto t0 = ImageStore::Clock::now();
  std::set<std::string> tokens;
  for (int i = 0; i < 50; ++i) {
    auto t = store.Put("png" + std::to_string(i), t0);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    ASSERT_EQ(t->size(), 32u);
    EXPECT_EQ(t->find_first_not_of("0123456789abcdef"), std::string::npos) << *t;
    tokens.insert(*t);
  }
  EXPECT_EQ(tokens.size(), 50u);
  auto t = store.Put("abc", t0);
  ASSERT_TRUE(t.ok());
  ASSERT_NE(store.Get(*t, t0 + seconds(59)), nullptr);
  EXPECT_EQ(*store.Get(*t, t0 + seconds(59)), "abc");
  EXPECT_EQ(store.Get("0123", t0), nullptr);
  EXPECT_EQ(store.Get(*t, t0 + seconds(61)), nullptr);  // expired
  EXPECT_EQ(store.bytes(), 0u);                         // and released
}

TEST(ImageStoreTest, TheOldestImagesGoWhenTheStoreIsFull) {
  ImageStore store(1000, seconds(3600));
  const auto now = ImageStore::Clock::now();
  auto a = store.Put(std::string(400, 'a'), now);
  auto b = store.Put(std::string(400, 'b'), now);
  auto c = store.Put(std::string(400, 'c'), now);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(store.Get(*a, now), nullptr);
  EXPECT_NE(store.Get(*b, now), nullptr);
  EXPECT_NE(store.Get(*c, now), nullptr);
  EXPECT_LE(store.bytes(), 1000u);
  auto huge = store.Put(std::string(1001, 'h'), now);
  ASSERT_FALSE(huge.ok());
  // The request's problem (it must ask for the image inline), not the server's: 400, not 503.
  EXPECT_EQ(huge.status().code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(huge.status().message().find("--image-store-bytes"), std::string::npos);
  EXPECT_NE(store.Get(*c, now), nullptr);  // a refused image evicts nothing
}

}  // namespace
}  // namespace tg::server
