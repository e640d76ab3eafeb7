// Platform: conda subdirs.
#include <gtest/gtest.h>

#include "envlock/platform.hpp"

namespace envlock {
namespace {

TEST(Platform, ParsesKnownSubdirsAndRejectsOthers) {
  for (const auto& name : Platform::known()) {
    auto p = Platform::parse(name);
    ASSERT_TRUE(p) << name;
    EXPECT_EQ(p->to_string(), name);
  }
  EXPECT_EQ(Platform::known().front(), "noarch");
  auto bad = Platform::parse("linux-65");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::Parse);
  EXPECT_NE(bad.error().message.find("linux-65"), std::string::npos);
  EXPECT_NE(bad.error().hint.find("linux-aarch64"), std::string::npos);
}

TEST(Platform, Families) {
  auto linux64 = *Platform::parse("linux-64");
  EXPECT_TRUE(linux64.is_linux());
  EXPECT_TRUE(linux64.is_unix());
  EXPECT_FALSE(linux64.is_windows());
  EXPECT_EQ(linux64.arch(), "x86_64");
  EXPECT_EQ(Platform::parse("osx-arm64")->arch(), "arm64");
  EXPECT_TRUE(Platform::parse("osx-arm64")->is_osx());
  EXPECT_EQ(Platform::parse("linux-aarch64")->arch(), "aarch64");
  EXPECT_EQ(Platform::parse("win-32")->arch(), "x86");
  EXPECT_TRUE(Platform::parse("win-64")->is_windows());
  EXPECT_FALSE(Platform::parse("win-64")->is_unix());
  EXPECT_TRUE(Platform::noarch().is_noarch());
  EXPECT_EQ(Platform::noarch().arch(), "");
}

TEST(Platform, HostMatchesTheCompiler) {
  Platform host = Platform::host();
  EXPECT_FALSE(host.is_noarch());
#if defined(__linux__) && defined(__x86_64__)
  EXPECT_EQ(host.to_string(), "linux-64");
#elif defined(__linux__) && defined(__aarch64__)
  EXPECT_EQ(host.to_string(), "linux-aarch64");
#endif
  EXPECT_TRUE(Platform::parse(host.to_string()));
}

}  // namespace
}  // namespace envlock
