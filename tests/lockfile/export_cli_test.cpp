// `envlock export` end to end, through the executable.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "envlock/lockfile.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using testing::envlock_cmd;
using testing::run_command;

LockedPackage pkg(const std::string& name, std::vector<std::string> depends) {
  LockedPackage p;
  p.name = name;
  p.version = Version::parse("1.0").value();
  p.build = "h0_0";
  p.subdir = "linux-64";
  p.channel = "https://conda.anaconda.org/conda-forge";
  p.file_name = name + "-1.0-h0_0.conda";
  p.url = p.channel + "/linux-64/" + p.file_name;
  p.sha256 = std::string(64, 'f');
  p.depends = std::move(depends);
  p.layer = "default";
  return p;
}

class ExportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("envlock-export-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    Lockfile lf;
    LockedPlatform lp;
    lp.platform = "linux-64";
    lp.channels = {"https://conda.anaconda.org/conda-forge"};
    lp.packages = {pkg("app", {"lib >=1"}), pkg("lib", {})};
    LockedPlatform osx = lp;
    osx.platform = "osx-arm64";
    for (auto& p : osx.packages) p.subdir = "osx-arm64";
    lf.environments["default"] = LockedEnvironment{"default", "", {"app"}, {{"linux-64", lp}, {"osx-arm64", osx}}, std::nullopt};
    ASSERT_TRUE(lf.write(dir_ / "envlock.lock").ok());
    expected_ = to_explicit(lp).value();
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string lock() const { return "'" + (dir_ / "envlock.lock").string() + "'"; }

  fs::path dir_;
  std::string expected_;
};

TEST_F(ExportCli, WritesExplicitFileInInstallOrder) {
  const fs::path out = dir_ / "linux-64.txt";
  auto r = run_command(envlock_cmd() + " export -l " + lock() + " -e default --platform linux-64 --format explicit -o '" +
                       out.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), expected_);
  EXPECT_LT(ss.str().find("/lib-1.0-h0_0.conda#sha256:"), ss.str().find("/app-1.0-h0_0.conda#sha256:"));
  EXPECT_NE(r.out.find("exported default/linux-64 (2 packages)"), std::string::npos) << r.out;
}

TEST_F(ExportCli, StdoutAndJson) {
  auto r = run_command(envlock_cmd() + " export -l " + lock() + " --platform linux-64");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected_);
  auto j = run_command(envlock_cmd() + " export --json -l " + lock() + " --platform linux-64");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["environment"], "default");
  EXPECT_EQ(doc["platform"], "linux-64");
  EXPECT_EQ(doc["packages"], 2);
  EXPECT_EQ(doc["content"], expected_);
}

TEST_F(ExportCli, UsageAndFailureExitCodes) {
  // An environment the lockfile lacks: exit 1, as every command with -e (pick_environment).
  auto env = run_command(envlock_cmd() + " export -l " + lock() + " -e nope --platform linux-64");
  EXPECT_EQ(env.exit_code, 1);
  EXPECT_EQ(env.out, "");
  EXPECT_EQ(env.err, "error: " + (dir_ / "envlock.lock").string() +
                         ": has no environment 'nope'\nenvironments in it: default\nhint: pass one of them with -e\n");
  auto plat = run_command(envlock_cmd() + " export -l " + lock() + " --platform win-64");
  EXPECT_EQ(plat.exit_code, 2);
  EXPECT_NE(plat.err.find("platforms: linux-64, osx-arm64"), std::string::npos) << plat.err;
  auto fmt = run_command(envlock_cmd() + " export -l " + lock() + " --platform linux-64 --format yaml");
  EXPECT_EQ(fmt.exit_code, 2) << fmt.err;
  auto missing = run_command(envlock_cmd() + " export -l '" + (dir_ / "absent.lock").string() + "'");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("cannot open the lockfile"), std::string::npos) << missing.err;
  { std::ofstream(dir_ / "new.lock") << "version: 3\n"; }
  auto newer = run_command(envlock_cmd() + " export -l '" + (dir_ / "new.lock").string() + "'");
  EXPECT_EQ(newer.exit_code, 1);
  EXPECT_NE(newer.err.find("lockfile format version 3 is newer than this envlock reads (version 1)"), std::string::npos)
      << newer.err;
  auto bad_out = run_command(envlock_cmd() + " export -l " + lock() + " --platform linux-64 -o '" +
                             (dir_ / "no" / "such" / "x.txt").string() + "'");
  EXPECT_EQ(bad_out.exit_code, 1);
  EXPECT_FALSE(fs::exists(dir_ / "no"));
}

}  // namespace
}  // namespace envlock
