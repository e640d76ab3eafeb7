// What `envlock install` and `install --dry-run` say of the packages that stay (issue 23): a
// record rewritten where only the lockfile's record of the same archive changed, and the clobber
// losers a dry run cannot place from the package cache as it is. End to end through the envlock
// executable, on the fixture channel and conda's own test recipes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "envlock/lockfile.hpp"
#include "support/run_command.hpp"

namespace fs = std::filesystem;
using namespace envlock;
using envlock::testing::envlock_cmd;
using envlock::testing::run_command;

namespace {

const fs::path kCorpus = fs::path(ENVLOCK_SHARED_DIR) / "corpus";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

/// Every record of `subdir`'s repodata whose archive is present, one per name (the last file name
/// in order), locked with URLs under `base_url`.
std::vector<LockedPackage> channel_records(const fs::path& channel, const std::string& subdir, const std::string& base_url) {
  std::map<std::string, LockedPackage> by_name;
  const auto j = nlohmann::json::parse(slurp(channel / subdir / "repodata.json"));
  for (const char* key : {"packages", "packages.conda"}) {
    if (!j.contains(key)) continue;
    for (auto it = j[key].begin(); it != j[key].end(); ++it) {
      if (!fs::exists(channel / subdir / it.key())) continue;
      auto rec = PackageRecord::from_json(it.value());
      EXPECT_TRUE(rec.ok()) << it.key();
      if (!rec.ok()) continue;
      LockedPackage p;
      static_cast<PackageRecord&>(p) = *rec;
      p.file_name = it.key();
      p.channel = base_url;
      p.url = base_url + "/" + subdir + "/" + it.key();
      p.layer = "default";
      auto& slot = by_name[p.name];
      if (slot.name.empty() || slot.file_name < p.file_name) slot = p;
    }
  }
  std::vector<LockedPackage> out;
  for (auto& [n, p] : by_name) out.push_back(p);
  return out;
}

Lockfile make_lockfile(std::vector<LockedPackage> packages) {
  Lockfile lf;
  lf.manifest_hash = "sha256:" + std::string(64, '0');
  LockedEnvironment env;
  env.name = "default";
  LockedPlatform lp;
  lp.platform = "linux-64";
  std::sort(packages.begin(), packages.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::set<std::string> channels;
  for (const auto& p : packages) channels.insert(p.channel);
  lp.channels.assign(channels.begin(), channels.end());
  lp.packages = std::move(packages);
  env.platforms["linux-64"] = std::move(lp);
  lf.environments["default"] = std::move(env);
  return lf;
}

class TransactionCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("envlock-transaction-cli-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    env_ = {{"ENVLOCK_PKGS_DIR", (root_ / "pkgs").string()}, {"NO_COLOR", "1"}};
    prefix_ = root_ / "env";
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path write_lock(const Lockfile& lf, const std::string& name) {
    const fs::path p = root_ / name;
    auto st = lf.write(p);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().to_string());
    return p;
  }
  envlock::testing::CommandResult envlock(const std::string& args) { return run_command(envlock_cmd() + " " + args, env_); }
  std::string dry_run_head() const {
    return "dry run: environment 'default' (linux-64) in " + prefix_.string() + " would change as follows; nothing was changed\n";
  }

  fs::path root_, prefix_;
  std::map<std::string, std::string> env_;
};

// The lockfile's record of an installed archive changes in record-only fields (a repodata patch
// adds a dependency and a license; the sha256 stays): the dry run lists the package as `record`
// with the fields, and the install rewrites conda-meta's record without linking a file, so the
// prefix says what the lockfile says; the next dry run finds nothing to do. It kept the old
// record, and the dry run called the package unchanged.
TEST_F(TransactionCli, ARecordOnlyChangeIsShownByTheDryRunAndRewrittenByTheInstall) {
  const fs::path channel = root_ / "channel";
  auto made = run_command("'" + std::string(ENVLOCK_SOURCE_DIR) + "/scripts/make-fixture-channel' " + q(channel));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto records = channel_records(channel, "linux-64", "file://" + channel.string());
  ASSERT_EQ(records.size(), 2u);
  ASSERT_EQ(records[0].name, "envlock-hello");
  ASSERT_EQ(records[1].name, "python");
  const std::string hello = records[0].dist_name(), python = records[1].dist_name();
  auto first = envlock("install -l " + q(write_lock(make_lockfile(records), "envlock.lock")) + " -p " + q(prefix_));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string binary_before = slurp(prefix_ / "bin/envlock-hello");
  struct stat before {};
  ASSERT_EQ(::stat((prefix_ / "bin/envlock-hello").c_str(), &before), 0);

  auto patched = records;
  patched[0].depends.push_back("libzlib >=1.3.1,<2.0a0");
  patched[0].license = "BSD-3-Clause-patched";
  const std::string lock = q(write_lock(make_lockfile(patched), "patched.lock"));
  auto dry = envlock("install --dry-run -l " + lock + " -p " + q(prefix_));
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(dry.out, dry_run_head() + "  record     " + hello + " (depends, license)\n"
                                      "  unchanged  " + python + "\n"
                                      "  0 added, 0 removed, 0 changed, 1 record rewritten, 1 unchanged\n");
  EXPECT_EQ(dry.err, "");
  auto json = envlock("install --dry-run --json -l " + lock + " -p " + q(prefix_));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["record"], nlohmann::json::parse(R"([{"dist": ")" + hello + R"(", "fields": ["depends", "license"]}])"));
  EXPECT_EQ(j["unchanged"], nlohmann::json::array({python}));

  auto real = envlock("install -l " + lock + " -p " + q(prefix_));
  EXPECT_EQ(real.exit_code, 0) << real.err;
  EXPECT_EQ(real.out, "environment 'default' (linux-64) is ready in " + prefix_.string() +
                          "\n  0 installed, 1 record rewritten, 1 unchanged, 0 removed; files: 0 linked, 0 copied, 0 relocated\n");
  EXPECT_EQ(real.err, "packages: 2 (0 downloaded, 2 from the package cache)\n");
  const auto record = nlohmann::json::parse(slurp(prefix_ / "conda-meta" / (hello + ".json")));
  EXPECT_EQ(record["depends"], nlohmann::json(patched[0].depends));
  EXPECT_EQ(record["license"], "BSD-3-Clause-patched");
  EXPECT_EQ(slurp(prefix_ / "bin/envlock-hello"), binary_before);
  struct stat after {};
  ASSERT_EQ(::stat((prefix_ / "bin/envlock-hello").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "carried over, not linked again";
  auto verify = envlock("verify -p " + q(prefix_));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;

  auto again = envlock("install --dry-run -l " + lock + " -p " + q(prefix_));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, dry_run_head() + "  unchanged  " + hello + "\n  unchanged  " + python +
                           "\n  0 added, 0 removed, 0 changed, 2 unchanged\n");
}

// A dry run whose package cache lacks a clobber's loser (the cache was cleaned since the install)
// cannot know that the install links the loser again to put its copy back when the winner goes
// (that needs the loser's paths.json): conda's test recipes clobber-a and clobber-b both ship
// bin/clobber-test-file, b wins it, and a lockfile without b makes the install link a again. The
// dry run listed a as unchanged without a word; it lists it as undecided and says why, and the
// install (which downloads a first) relinks it.
TEST_F(TransactionCli, ADryRunWithoutTheLoserInTheCacheSaysItCannotDecide) {
  const fs::path recipes = kCorpus / "packages/conda__conda";
  if (!fs::exists(recipes)) GTEST_SKIP() << "the shared corpus is absent (looked in " << kCorpus.string() << ")";
  const fs::path dir = root_ / "channels/test-recipes";
  fs::create_directories(dir / "noarch");
  const std::string stem = "tests__data__test-recipes__noarch__";
  for (const auto& e : fs::directory_iterator(recipes)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(stem)) fs::copy_file(e.path(), dir / "noarch" / name.substr(stem.size()));
  }
  std::vector<LockedPackage> both;
  for (const auto& r : channel_records(dir, "noarch", "file://" + dir.string()))
    if (r.name == "clobber-a" || r.name == "clobber-b") both.push_back(r);
  ASSERT_EQ(both.size(), 2u);
  ASSERT_EQ(envlock("install -l " + q(write_lock(make_lockfile(both), "both.lock")) + " -p " + q(prefix_)).exit_code, 0);
  both.erase(both.begin() + 1);
  const std::string only_a = q(write_lock(make_lockfile(both), "a.lock"));
  fs::remove_all(root_ / "pkgs");

  auto dry = envlock("install --dry-run -l " + only_a + " -p " + q(prefix_));
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(dry.out, dry_run_head() + "  removed    clobber-b-1.0-0\n"
                                      "  undecided  clobber-a-1.0-0\n"
                                      "  0 added, 1 removed, 0 changed, 1 undecided, 0 unchanged\n");
  EXPECT_EQ(dry.err, "warning: whether the install keeps 1 package(s) as they are or links them again, to put back a "
                     "file that a package which goes took from them (a clobber), depends on packages that are not in "
                     "the package cache (the install downloads them first and decides): clobber-a-1.0-0\n");
  auto json = envlock("install --dry-run --json -l " + only_a + " -p " + q(prefix_));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["undecided"], nlohmann::json::array({"clobber-a-1.0-0"}));
  EXPECT_EQ(j["unchanged"], nlohmann::json::array());
  EXPECT_EQ(j["relinked"], nlohmann::json::array());

  auto real = envlock("install -l " + only_a + " -p " + q(prefix_));
  EXPECT_EQ(real.exit_code, 0) << real.err;
  EXPECT_EQ(real.out, "environment 'default' (linux-64) is ready in " + prefix_.string() +
                          "\n  1 installed, 0 unchanged, 1 removed; files: 1 linked, 0 copied, 0 relocated\n");
  EXPECT_EQ(slurp(prefix_ / "bin/clobber-test-file"), slurp(root_ / "pkgs/clobber-a-1.0-0/bin/clobber-test-file"));
  // With the loser in the cache again, the dry run decides: nothing goes now, a is unchanged.
  auto after = envlock("install --dry-run -l " + only_a + " -p " + q(prefix_));
  EXPECT_EQ(after.out, dry_run_head() + "  unchanged  clobber-a-1.0-0\n  0 added, 0 removed, 0 changed, 1 unchanged\n");
  EXPECT_EQ(after.err, "");
}

}  // namespace
