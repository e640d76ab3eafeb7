// Real package records (../shared/corpus repodata: the Anaconda r channel for linux-64 and the
// pytorch channel) through the lockfile writer and reader: every record survives the round trip,
// the text is byte-stable under shuffled input, and the @EXPLICIT export lists every package.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "envlock/lock.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/manifest.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;

fs::path corpus() { return fs::path(ENVLOCK_SHARED_DIR) / "corpus" / "repodata"; }

/// The newest record (by version, then build number) of every name in a repodata.json.
LockedPlatform newest_per_name(const fs::path& file, const std::string& channel) {
  std::ifstream in(file);
  nlohmann::json j = nlohmann::json::parse(in);
  std::map<std::string, LockedPackage> best;
  for (const char* key : {"packages", "packages.conda"}) {
    if (!j.contains(key)) continue;
    for (const auto& [fn, entry] : j[key].items()) {
      auto rec = PackageRecord::from_json(entry);
      EXPECT_TRUE(rec.ok()) << fn << ": " << (rec ? "" : rec.error().to_string());
      if (!rec) continue;
      LockedPackage p;
      static_cast<PackageRecord&>(p) = std::move(*rec);
      p.file_name = fn;
      p.channel = channel;
      p.url = channel + "/" + p.subdir + "/" + fn;
      p.layer = "default";
      auto it = best.find(p.name);
      if (it == best.end() || std::tie(it->second.version, it->second.build_number) < std::tie(p.version, p.build_number))
        best[p.name] = std::move(p);
    }
  }
  LockedPlatform lp;
  lp.platform = "linux-64";
  lp.channels = {channel};
  for (auto& [name, p] : best) lp.packages.push_back(std::move(p));
  return lp;
}

void round_trip(const fs::path& file, const std::string& channel, std::size_t min_packages) {
  if (!fs::exists(file)) GTEST_SKIP() << "corpus file not found: " << file << "; set ENVLOCK_SHARED_DIR to the folder holding corpus/";
  Lockfile lf;
  lf.manifest_hash = "sha256:" + std::string(64, 'e');
  LockedEnvironment env;
  env.name = "default";
  env.platforms["linux-64"] = newest_per_name(file, channel);
  const std::size_t n = env.platforms["linux-64"].packages.size();
  ASSERT_GE(n, min_packages);
  lf.environments["default"] = env;

  const std::string text = lf.to_yaml();
  auto back = Lockfile::parse(text, file.filename().string() + ".lock");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  const auto& got = back->find("default", "linux-64")->packages;
  const auto& want = lf.find("default", "linux-64")->packages;
  ASSERT_EQ(got.size(), n);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(got[i], want[i]) << want[i].name;
  EXPECT_EQ(back->to_yaml(), text);

  std::mt19937 rng(7);
  Lockfile shuffled = lf;
  auto& pk = shuffled.environments["default"].platforms["linux-64"].packages;
  std::shuffle(pk.begin(), pk.end(), rng);
  EXPECT_EQ(shuffled.to_yaml(), text);

  auto ex = to_explicit(*lf.find("default", "linux-64"));
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  EXPECT_EQ(static_cast<std::size_t>(std::count(ex->begin(), ex->end(), '\n')), n + 4);
}

// The README's `ENVLOCK_SHARED_DIR=DIR ./scripts/test`: the test programs take the corpus folder
// from the environment when they run (not only when the tests were configured), as an absolute
// path, and a corpus test run against a folder without the corpus skips naming where it looked.
TEST(SharedDir, IsReadFromTheEnvironmentWhenTheTestsRun) {
  const fs::path here = fs::current_path();
  const char* before = std::getenv("ENVLOCK_SHARED_DIR");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("ENVLOCK_SHARED_DIR", "/nonexistent-envlock-shared/", 1);
  EXPECT_EQ(testing::shared_dir(), "/nonexistent-envlock-shared");
  ::setenv("ENVLOCK_SHARED_DIR", "rel/shared", 1);
  EXPECT_EQ(testing::shared_dir(), (here / "rel/shared").string());
  ::setenv("ENVLOCK_SHARED_DIR", "", 1);
  EXPECT_EQ(testing::shared_dir(), fs::absolute(ENVLOCK_SHARED_DIR_DEFAULT).lexically_normal().string());
  if (before != nullptr) ::setenv("ENVLOCK_SHARED_DIR", saved.c_str(), 1);
  else ::unsetenv("ENVLOCK_SHARED_DIR");

  const auto r = testing::run_command(
      "'/proc/" + std::to_string(::getpid()) + "/exe' --gtest_filter=CorpusLockfile.PytorchChannelRoundTrips",
      {{"ENVLOCK_SHARED_DIR", "/nonexistent-envlock-shared"}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[  SKIPPED ] CorpusLockfile.PytorchChannelRoundTrips"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"/nonexistent-envlock-shared/corpus/repodata/"), std::string::npos) << r.out;
}

TEST(CorpusLockfile, AnacondaRChannelRoundTrips) {
  round_trip(corpus() / "conda__conda" / "tests__data__repodata__r_linux-64.json", "https://repo.anaconda.com/pkgs/r", 100);
}

TEST(CorpusLockfile, PytorchChannelRoundTrips) {
  round_trip(corpus() / "conda__rattler" / "test-data__channels__pytorch__linux-64__repodata.json",
             "https://conda.anaconda.org/pytorch", 10);
}

}  // namespace
}  // namespace envlock
