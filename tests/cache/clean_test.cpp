// `envlock clean` through the executable over caches the tests lay out (whole stdout, stderr and
// exit code), with an entry locked by another process; and the `.envlock/.gitignore` that
// `envlock create` writes (docs/cache.md, "Freeing space"; docs/environments.md).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/files.hpp"
#include "support/run_command.hpp"

namespace fs = std::filesystem;
using envlock::testing::envlock_cmd;
using envlock::testing::q;
using envlock::testing::slurp;
using envlock::testing::spit;
using envlock::testing::run_command;

namespace {

/// A child process that holds an exclusive flock on `path` (as a running install holds an entry's
/// lock) until it is killed.
class LockHolder {
 public:
  explicit LockHolder(const fs::path& path) {
    int ready[2];
    if (::pipe(ready) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
      if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
      if (::write(ready[1], "x", 1) != 1) ::_exit(1);
      for (;;) ::pause();
    }
    char c = 0;
    ::close(ready[1]);
    held_ = ::read(ready[0], &c, 1) == 1;
    ::close(ready[0]);
  }
  ~LockHolder() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  LockHolder(const LockHolder&) = delete;
  LockHolder& operator=(const LockHolder&) = delete;
  [[nodiscard]] bool held() const { return held_; }

 private:
  pid_t pid_ = -1;
  bool held_ = false;
};

class Clean : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("envlock-clean-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    pkgs_ = root_ / "pkgs";
    repodata_ = root_ / "cache" / "repodata";
    env_ = {{"ENVLOCK_PKGS_DIR", pkgs_.string()},
            {"ENVLOCK_CACHE_DIR", (root_ / "cache").string()},
            {"ENVLOCK_PKGS_DIRS", "\x01unset"},
            {"NO_COLOR", "1"}};
  }
  void TearDown() override { fs::remove_all(root_); }

  envlock::testing::CommandResult envlock(const std::string& args) {
    return run_command(envlock_cmd() + " " + args, env_);
  }

  /// A cache of every kind: repodata (a copy, its state, a shard, an index file: 10 + 5 + 3 + 2
  /// bytes), two archives (100 bytes, a 7-byte partial download), two extracted packages (20 bytes,
  /// and a 4-byte staging folder a killed extraction left) and their lock files.
  void lay_out_cache() {
    spit(repodata_ / "0123abcd.json", std::string(10, 'j'));
    spit(repodata_ / "0123abcd.state.json", std::string(5, 's'));
    spit(repodata_ / "shards" / "ff00.msgpack.zst", std::string(3, 'z'));
    spit(repodata_ / "index" / "0123abcd.idx", std::string(2, 'i'));
    spit(pkgs_ / "a-1.0-0.conda", std::string(100, 'a'));
    spit(pkgs_ / "a-1.0-0" / "info" / "index.json", std::string(20, '{'));
    spit(pkgs_ / "a-1.0-0.lock", "");
    spit(pkgs_ / "b-2.0-0.tar.bz2.partial", std::string(7, 'b'));
    spit(pkgs_ / ".c-3.0-0.extracting-99999-0" / "info" / "x", std::string(4, 'c'));
    spit(pkgs_ / "urls.txt", "not envlock's\n");
  }

  /// The three lines of sizes clean prints first: each kind's label, count, unit and size in
  /// columns (19, 6, 8 and 10 wide), then its folder.
  struct Kind {
    int items;
    const char* size;
  };
  std::string kinds(Kind r, Kind a, Kind p) const {
    auto line = [](const char* label, int n, const char* unit, const char* size, const fs::path& folder) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%-19s %6d %-8s %10s  ", label, n, unit, size);
      return std::string(buf) + folder.string() + "\n";
    };
    return line("repodata cache", r.items, r.items == 1 ? "file" : "files", r.size, repodata_) +
           line("package archives", a.items, a.items == 1 ? "file" : "files", a.size, pkgs_) +
           line("extracted packages", p.items, p.items == 1 ? "folder" : "folders", p.size, pkgs_);
  }

  fs::path root_, pkgs_, repodata_;
  std::map<std::string, std::string> env_;
};

// What `conda clean --all` removes (conda/cli/main_clean.py: the index cache, tarballs with their
// .part files, unused packages), listed per kind with sizes; --dry-run changes nothing.
TEST_F(Clean, ListsEveryKindWithItsSizeAndADryRunRemovesNothing) {
  lay_out_cache();
  const auto dry = envlock("clean --dry-run");
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(dry.err, "");
  EXPECT_EQ(dry.out, kinds({4, "20 B"}, {2, "107 B"}, {2, "24 B"}) +
                         "would free 151 B (8 items; dry run: nothing removed)\n");
  for (const char* p : {"0123abcd.json", "0123abcd.state.json", "shards/ff00.msgpack.zst", "index/0123abcd.idx"})
    EXPECT_TRUE(fs::exists(repodata_ / p)) << p;
  for (const char* p : {"a-1.0-0.conda", "a-1.0-0/info/index.json", "b-2.0-0.tar.bz2.partial",
                        ".c-3.0-0.extracting-99999-0/info/x", "a-1.0-0.lock", "urls.txt"})
    EXPECT_TRUE(fs::exists(pkgs_ / p)) << p;
  EXPECT_FALSE(fs::exists(pkgs_ / "b-2.0-0.lock"));  // a dry run creates no lock file either
}

TEST_F(Clean, ACleanRemovesAndASecondCleanHasNothingToFree) {
  lay_out_cache();
  const auto r = envlock("clean");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, kinds({4, "20 B"}, {2, "107 B"}, {2, "24 B"}) +
                       "freed 151 B (8 items removed)\n");
  for (const char* p : {"0123abcd.json", "0123abcd.state.json", "shards/ff00.msgpack.zst", "index/0123abcd.idx"})
    EXPECT_FALSE(fs::exists(repodata_ / p)) << p;
  for (const char* p : {"a-1.0-0.conda", "a-1.0-0", "b-2.0-0.tar.bz2.partial", ".c-3.0-0.extracting-99999-0"})
    EXPECT_FALSE(fs::exists(pkgs_ / p)) << p;
  // Lock files stay (a process may be waiting on one), and what is not envlock's is not touched.
  EXPECT_TRUE(fs::exists(pkgs_ / "a-1.0-0.lock"));
  EXPECT_EQ(slurp(pkgs_ / "urls.txt"), "not envlock's\n");

  const auto again = envlock("clean");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err, "");
  EXPECT_EQ(again.out, kinds({0, "0 B"}, {0, "0 B"}, {0, "0 B"}) +
                           "nothing to free\n");

  const auto json = envlock("clean --json");
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.err, "");
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["items"], 0);
  EXPECT_EQ(j["bytes"], 0);
  EXPECT_EQ(j["dry_run"], false);
  ASSERT_EQ(j["kinds"].size(), 3u) << json.out;
  EXPECT_EQ(j["kinds"][0]["kind"], "repodata");
  EXPECT_EQ(j["kinds"][1]["kind"], "archives");
  EXPECT_EQ(j["kinds"][2]["kind"], "packages");
  EXPECT_EQ(j["kinds"][2]["folder"], pkgs_.string());
}

// Another envlock process holds an entry's lock (downloading or extracting it): clean takes the
// package cache's own entry locks without waiting, keeps that entry whole and names it.
TEST_F(Clean, AnEntryLockedByAnotherProcessIsKeptAndNamed) {
  lay_out_cache();
  LockHolder holder(pkgs_ / "a-1.0-0.lock");
  ASSERT_TRUE(holder.held());
  const auto r = envlock("clean");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, kinds({4, "20 B"}, {1, "7 B"}, {1, "4 B"}) +
                       "kept " + (pkgs_ / "a-1.0-0").string() + ": in use by another envlock process\n" +
                       "freed 31 B (6 items removed)\n");
  EXPECT_EQ(slurp(pkgs_ / "a-1.0-0.conda"), std::string(100, 'a'));
  EXPECT_TRUE(fs::exists(pkgs_ / "a-1.0-0" / "info" / "index.json"));

  const auto json = envlock("clean --json --dry-run");
  EXPECT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["in_use"].size(), 1u) << json.out;
  EXPECT_EQ(j["in_use"][0], (pkgs_ / "a-1.0-0").string());
  EXPECT_EQ(j["items"], 0);
}

// conda clean's "unused packages": an extracted package a file of which is hard-linked elsewhere
// (an environment uses it) is kept; its archive goes.
TEST_F(Clean, AnExtractedPackageLinkedIntoAnEnvironmentIsKept) {
  spit(pkgs_ / "a-1.0-0.conda", std::string(100, 'a'));
  spit(pkgs_ / "a-1.0-0" / "info" / "index.json", std::string(20, '{'));
  spit(pkgs_ / "a-1.0-0" / "lib" / "liba.so", std::string(30, 'l'));
  fs::create_directories(root_ / "env" / "lib");
  fs::create_hard_link(pkgs_ / "a-1.0-0" / "lib" / "liba.so", root_ / "env" / "lib" / "liba.so");
  const auto r = envlock("clean");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, kinds({0, "0 B"}, {1, "100 B"}, {0, "0 B"}) +
                       "kept 1 extracted package linked into environments\n" + "freed 100 B (1 item removed)\n");
  EXPECT_TRUE(fs::exists(pkgs_ / "a-1.0-0" / "lib" / "liba.so"));
  EXPECT_FALSE(fs::exists(pkgs_ / "a-1.0-0.conda"));
}

// A filesystem mounted at a cache entry (a host folder of pre-extracted packages bind-mounted
// into a container) or inside one: clean emptied the host folder, then said "removed" (attack 30,
// F8). What is mounted is never deleted: the entry is kept whole (its archive too), a warning
// names it, the summary says what could not be removed and the exit code is 1 (the rule clean and
// gc share, docs/cache.md).
TEST_F(Clean, AnEntryThatIsOrHoldsAMountPointIsKeptAndNamed) {
  lay_out_cache();
  spit(pkgs_ / "d-1.0-0" / "info" / "index.json", std::string(20, '{'));
  spit(pkgs_ / "d-1.0-0" / "lib" / "libd.so", std::string(30, 'd'));
  fs::create_directories(pkgs_ / "d-1.0-0" / "share" / "data");
  spit(root_ / "host" / "info" / "index.json", std::string(20, '{'));
  spit(root_ / "host" / "HOST-NOTES.txt", "host-only file\n");
  spit(root_ / "data" / "precious.txt", "precious\n");
  const fs::path at = pkgs_ / "a-1.0-0", inside = pkgs_ / "d-1.0-0" / "share" / "data";
  if (::mount((root_ / "host").c_str(), at.c_str(), nullptr, MS_BIND, nullptr) != 0)
    GTEST_SKIP() << "cannot mount here (needs CAP_SYS_ADMIN)";
  const bool inner = ::mount((root_ / "data").c_str(), inside.c_str(), nullptr, MS_BIND, nullptr) == 0;
  const auto r = envlock("clean");
  const bool host_whole = fs::exists(root_ / "host" / "HOST-NOTES.txt") && fs::exists(root_ / "host" / "info");
  const bool data_whole = fs::exists(root_ / "data" / "precious.txt");
  const bool d_whole = fs::exists(pkgs_ / "d-1.0-0" / "lib" / "libd.so");
  ::umount2(at.c_str(), MNT_DETACH);
  if (inner) ::umount2(inside.c_str(), MNT_DETACH);
  ASSERT_TRUE(inner);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "warning: " + at.string() +
                       ": is a mount point; what is mounted is never deleted, so the entry was kept: unmount it, then "
                       "run the command again\n"
                       "warning: " + (pkgs_ / "d-1.0-0").string() + ": holds a mount point (" + inside.string() +
                       "); what is mounted is never deleted, so the entry was kept: unmount it, then run the command "
                       "again\n");
  EXPECT_EQ(r.out, kinds({4, "20 B"}, {1, "7 B"}, {1, "4 B"}) + "freed 31 B (6 items removed)\n" +
                       "could not remove 2 items (see the warnings)\n");
  EXPECT_TRUE(host_whole);
  EXPECT_TRUE(data_whole);
  EXPECT_TRUE(d_whole);
  EXPECT_EQ(slurp(pkgs_ / "a-1.0-0.conda"), std::string(100, 'a'));
}

// No cache yet (a fresh machine): nothing to free, and nothing is created (uv's `cache clean`
// says "No cache found" and succeeds the same way).
TEST_F(Clean, AMissingCacheFolderIsNothingToFree) {
  const auto r = envlock("clean");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, kinds({0, "0 B"}, {0, "0 B"}, {0, "0 B"}) +
                       "nothing to free\n");
  EXPECT_FALSE(fs::exists(pkgs_));
  EXPECT_FALSE(fs::exists(root_ / "cache"));
  EXPECT_EQ(envlock("clean --dry-run").exit_code, 0);
  EXPECT_FALSE(fs::exists(pkgs_));
}

// `envlock create` makes `.envlock/` with a `.gitignore` of `*` (as pixi writes .pixi/.gitignore),
// so `git status` shows the manifest and the lockfile only; an existing .gitignore is kept.
TEST_F(Clean, CreateWritesTheEnvlockFoldersGitignoreAndKeepsAnExistingOne) {
  const fs::path channel = root_ / "channel";
  ASSERT_EQ(run_command("'" + std::string(ENVLOCK_SOURCE_DIR) + "/scripts/make-fixture-channel' " + q(channel)).exit_code, 0);
  const std::string manifest = "name: example\nchannels: [" + channel.string() +
                               "]\nplatforms: [linux-64]\ndependencies:\n  - envlock-greet\n";
  const fs::path project = root_ / "project";
  spit(project / "envlock.yaml", manifest);
  const auto r = envlock("create -f " + q(project / "envlock.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(slurp(project / ".envlock" / ".gitignore"), "*\n");
  const auto git = run_command("cd " + q(project) + " && git init -q . && git status --porcelain --untracked-files=all");
  ASSERT_EQ(git.exit_code, 0) << git.err;
  EXPECT_EQ(git.out, "?? envlock.lock\n?? envlock.yaml\n");

  // A .gitignore the user wrote there is never replaced.
  const fs::path mine = root_ / "mine";
  spit(mine / "envlock.yaml", manifest);
  spit(mine / ".envlock" / ".gitignore", "envs/\n");
  ASSERT_EQ(envlock("create -f " + q(mine / "envlock.yaml")).exit_code, 0);
  EXPECT_EQ(slurp(mine / ".envlock" / ".gitignore"), "envs/\n");

  // The environment, linked from the cache, keeps its extracted packages through a clean.
  const auto c = envlock("clean");
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find(" extracted packages linked into environments\n"), std::string::npos) << c.out;
  EXPECT_EQ(run_command(q(project / ".envlock/envs/default/bin/envlock-greet")).exit_code, 0);
}

}  // namespace
