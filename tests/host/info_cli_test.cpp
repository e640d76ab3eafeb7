// `envlock info` end to end: JSON shape, overrides, bad overrides, usage errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_command.hpp"

namespace envlock {
namespace {

using testing::envlock_cmd;
using testing::run_command;

nlohmann::json vp_named(const nlohmann::json& info, const std::string& name) {
  for (const auto& vp : info.at("virtual_packages")) {
    if (vp.at("name") == name) return vp;
  }
  return nullptr;
}

TEST(InfoCli, JsonHasVersionsPlatformAndVirtualPackages) {
  auto r = run_command(envlock_cmd() + " info --json",
                       {{"CONDA_OVERRIDE_CUDA", "12.4"}, {"CONDA_OVERRIDE_GLIBC", "2.28"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j.at("version").get<std::string>().empty());
  EXPECT_EQ(j.at("libsolv_version").get<std::string>().rfind("0.7.", 0), 0u);
  EXPECT_EQ(j.at("platform"), "linux-64");
  EXPECT_EQ(vp_named(j, "__cuda").at("version"), "12.4");
  EXPECT_EQ(vp_named(j, "__glibc").at("version"), "2.28");
  EXPECT_EQ(vp_named(j, "__unix").at("build"), "0");
  EXPECT_TRUE(vp_named(j, "__linux").is_object());
  EXPECT_TRUE(vp_named(j, "__archspec").is_object());
}

TEST(InfoCli, EmptyOverrideRemovesCuda) {
  auto r = run_command(envlock_cmd() + " info --json", {{"CONDA_OVERRIDE_CUDA", ""}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(vp_named(nlohmann::json::parse(r.out), "__cuda").is_null());
}

TEST(InfoCli, FakeDriverLibraryWithoutSymbolsMeansNoCuda) {
  // A library that loads but is not a CUDA driver: no __cuda, no crash.
  auto r = run_command(envlock_cmd() + " info --json",
                       {{"CONDA_OVERRIDE_CUDA", "\x01unset"}, {"ENVLOCK_LIBCUDA", "libz.so.1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(vp_named(nlohmann::json::parse(r.out), "__cuda").is_null());
}

TEST(InfoCli, BadOverrideIsAClearErrorExit1) {
  auto r = run_command(envlock_cmd() + " info", {{"CONDA_OVERRIDE_GLIBC", "2.x.."}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("CONDA_OVERRIDE_GLIBC"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2.x.."), std::string::npos) << r.err;
}

TEST(InfoCli, TextOutputListsVirtualPackages) {
  auto r = run_command(envlock_cmd() + " info", {{"CONDA_OVERRIDE_CUDA", "12.1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("__cuda=12.1=0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("platform"), std::string::npos);
}

TEST(InfoCli, UnknownOptionIsAUsageErrorExit2) {
  auto r = run_command(envlock_cmd() + " info --no-such-option");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(r.err.empty());
  auto r2 = run_command(envlock_cmd() + " no-such-command");
  EXPECT_EQ(r2.exit_code, 2);
}

}  // namespace
}  // namespace envlock
