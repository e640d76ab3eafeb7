// Generations (issue 21 point 4; envlock/generations.hpp, docs/environments.md "Generations"):
// every CLI install that changes a prefix keeps the tree it replaces; `envlock history` lists
// them, `envlock rollback` makes one current in one rename (nix profiles' generations, not
// micromamba's revisions, which re-solve), `envlock gc --keep K` removes old ones and the cache
// entries nothing uses. End to end through the envlock executable over the fixture channel;
// SIGKILL at seeded random moments of rollback and of installs that keep a generation.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>

#include "envlock/generations.hpp"
#include "envlock/install.hpp"
#include "envlock/lockfile.hpp"
#include "support/files.hpp"
#include "support/run_command.hpp"

namespace fs = std::filesystem;
using namespace envlock;
using envlock::testing::envlock_cmd;
using envlock::testing::q;
using envlock::testing::run_command;
using envlock::testing::slurp;

namespace {

class Generations : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("envlock-generations-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    env_ = {{"ENVLOCK_PKGS_DIR", (root_ / "pkgs").string()}, {"NO_COLOR", "1"}};
    prefix_ = root_ / "env";
    gens_ = root_ / ".env.envlock-generations";
    const fs::path channel = root_ / "channel";
    auto r = run_command("'" + std::string(ENVLOCK_SOURCE_DIR) + "/scripts/make-fixture-channel' " + q(channel));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* subdir : {"linux-64", "noarch"}) {
      auto j = nlohmann::json::parse(slurp(channel / subdir / "repodata.json"));
      for (const char* key : {"packages", "packages.conda"})
        for (auto it = j[key].begin(); j.contains(key) && it != j[key].end(); ++it) {
          auto rec = PackageRecord::from_json(it.value());
          ASSERT_TRUE(rec.ok()) << it.key();
          LockedPackage p;
          static_cast<PackageRecord&>(p) = *rec;
          p.file_name = it.key();
          p.channel = "file://" + channel.string();
          p.url = p.channel + "/" + subdir + "/" + it.key();
          p.layer = "default";
          packages_[p.name] = p;
        }
    }
    // A: hello alone; B: all four (envlock-greet has a post-link script, so the install keeps the
    // previous tree after its commit); C: hello and python (no script: kept right at the swap).
    a_ = write_lock({"envlock-hello"}, "a.lock");
    b_ = write_lock({"envlock-hello", "python", "envlock-greet", "envlock-demo"}, "b.lock");
    c_ = write_lock({"envlock-hello", "python"}, "c.lock");
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path write_lock(const std::vector<std::string>& names, const std::string& file) {
    Lockfile lf;
    lf.manifest_hash = "sha256:" + std::string(64, '0');
    LockedEnvironment env;
    env.name = "default";
    LockedPlatform lp;
    lp.platform = "linux-64";
    for (const auto& n : names) lp.packages.push_back(packages_.at(n));
    std::sort(lp.packages.begin(), lp.packages.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
    lp.channels = {lp.packages.front().channel};
    env.platforms["linux-64"] = std::move(lp);
    lf.environments["default"] = std::move(env);
    const fs::path p = root_ / file;
    EXPECT_TRUE(lf.write(p).ok());
    return p;
  }

  envlock::testing::CommandResult envlock(const std::string& args) { return run_command(envlock_cmd() + " " + args, env_); }

  void install(const fs::path& lock) {
    auto r = envlock("install -l " + q(lock) + " -p " + q(prefix_));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  static std::set<std::string> dists(const fs::path& tree) {
    auto v = generation_dists(tree);
    return {v.begin(), v.end()};
  }
  std::set<std::string> dists_of(const fs::path& lock) {
    auto lf = Lockfile::read(lock);
    std::set<std::string> out;
    for (const auto& p : lf->environments.at("default").platforms.at("linux-64").packages) out.insert(p.dist_name());
    return out;
  }
  /// `history` output with the install times (the clock's) written TIME.
  static std::string untimed(const std::string& text) {
    return std::regex_replace(text, std::regex("\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d"), "TIME");
  }
  void expect_clean_and_locked_as(const fs::path& lock) {
    auto v = envlock("verify -p " + q(prefix_));
    EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
    auto d = envlock("diff " + q(lock) + " " + q(prefix_) + " --fail-on any");
    EXPECT_EQ(d.exit_code, 0) << d.out << d.err;
    EXPECT_EQ(dists(prefix_), dists_of(lock));
  }

  fs::path root_, prefix_, gens_, a_, b_, c_;
  std::map<std::string, LockedPackage> packages_;
  std::map<std::string, std::string> env_;
};

// An update keeps the tree it replaced as generation 1; rollback makes it current again exactly
// (verify clean, diff against the older lockfile empty), and forward again.
TEST_F(Generations, AnUpdateKeepsThePreviousTreeAndRollbackRestoresItExactly) {
  install(a_);
  const std::string a_history = slurp(prefix_ / "conda-meta/history");
  install(b_);
  auto h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(h.err, "");
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 2 generations (* current)\n"
                            "     1  TIME  1 package   envlock install -l a.lock -e default\n"
                            "*    2  TIME  4 packages  envlock install -l b.lock -e default\n");
  EXPECT_EQ(dists(gens_ / "1"), dists_of(a_));

  // A process that has a file of the current tree open keeps it through the rollback.
  const int fd = ::open((prefix_ / "conda-meta/history").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const std::string b_history = slurp(prefix_ / "conda-meta/history");
  auto r = envlock("rollback -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "rolled back " + prefix_.string() +
                       " from generation 2 to generation 1 (1 package); generation 2 is kept: envlock rollback --to 2 "
                       "returns to it\n");
  std::string seen(b_history.size() + 16, '\0');
  seen.resize(static_cast<std::size_t>(::pread(fd, seen.data(), seen.size(), 0)));
  ::close(fd);
  EXPECT_EQ(seen, b_history) << "the open file is the one it was";
  EXPECT_EQ(slurp(prefix_ / "conda-meta/history"), a_history) << "the tree is generation 1's, as it was";
  expect_clean_and_locked_as(a_);
  EXPECT_EQ(run_command(q(prefix_ / "bin/envlock-hello")).exit_code, 0) << "relocated for this very prefix";

  h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 2 generations (* current)\n"
                            "*    1  TIME  1 package   envlock install -l a.lock -e default\n"
                            "     2  TIME  4 packages  envlock install -l b.lock -e default\n");
  // No older generation than 1: refused, nothing changed.
  r = envlock("rollback -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + prefix_.string() + ": has no generation older than the current one (1)\n"
                   "generations: 1 (current), 2\n"
                   "hint: an install that changes the environment keeps the one it replaces; `envlock history` lists "
                   "them\n");
  r = envlock("rollback -p " + q(prefix_) + " --to 9");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: " + prefix_.string() + ": has no generation 9\ngenerations: 1 (current), 2\n"
                   "hint: list them with `envlock history -p " + prefix_.string() + "`\n");
  r = envlock("rollback -p " + q(prefix_) + " --to 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, prefix_.string() + ": generation 1 is the current one already; nothing was changed\n");

  r = envlock("rollback -p " + q(prefix_) + " --to 2 --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out),
            nlohmann::json({{"prefix", prefix_.string()}, {"from", 1}, {"to", 2}, {"changed", true},
                            {"interrupted_install", false}, {"environment_left", true}, {"packages", 4},
                            {"warnings", nlohmann::json::array()}}));
  expect_clean_and_locked_as(b_);
  EXPECT_EQ(slurp(prefix_ / "conda-meta/history"), b_history);

  // The JSON listing names each generation's kept lockfile: the very bytes it was installed from.
  h = envlock("history -p " + q(prefix_) + " --json");
  ASSERT_EQ(h.exit_code, 0) << h.err;
  const auto j = nlohmann::json::parse(h.out);
  EXPECT_EQ(j["current"], 2);
  ASSERT_EQ(j["generations"].size(), 2u);
  EXPECT_EQ(slurp(j["generations"][0]["lockfile_copy"].get<std::string>()), slurp(a_));
  EXPECT_EQ(slurp(j["generations"][1]["lockfile_copy"].get<std::string>()), slurp(b_));
  EXPECT_EQ(j["generations"][0]["tree"], (gens_ / "1").string());
  EXPECT_EQ(j["generations"][1]["tree"], prefix_.string());
  EXPECT_EQ(j["generations"][1]["command"], "envlock install -l b.lock -e default");
  EXPECT_EQ(j["generations"][1]["packages"], 4);

  // An install that changes no package keeps the generation's number and keeps no tree.
  install(b_);
  EXPECT_EQ(list_generations(prefix_)->size(), 2u);
  EXPECT_EQ(read_prefix_origin(prefix_).value()->generation, 2u);
}

// gc --keep K keeps the current generation, the pinned ones and the K newest others, and removes
// the package cache entries that only the removed generations used.
TEST_F(Generations, GcKeepsCurrentPinnedAndNewestAndFreesWhatNothingUses) {
  install(a_);
  install(b_);
  install(c_);
  auto p = envlock("history -p " + q(prefix_) + " --pin 1");
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(p.out, "pinned generation 1 of " + prefix_.string() + " (envlock gc keeps it)\n");
  p = envlock("history -p " + q(prefix_) + " --pin 7");
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_EQ(p.err, "error: " + prefix_.string() + ": has no generation 7\ngenerations: 1, 2, 3 (current)\n"
                   "hint: list them with `envlock history -p " + prefix_.string() + "`\n");
  auto h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 3 generations (* current)\n"
                            "     1  TIME  1 package   envlock install -l a.lock -e default  (pinned)\n"
                            "     2  TIME  4 packages  envlock install -l b.lock -e default\n"
                            "*    3  TIME  2 packages  envlock install -l c.lock -e default\n");
  const fs::path pkgs = root_ / "pkgs";
  const std::string greet = packages_.at("envlock-greet").dist_name(), demo = packages_.at("envlock-demo").dist_name();
  ASSERT_TRUE(fs::is_directory(pkgs / greet));

  // The dry run counts what the real run frees, byte for byte: generation 2 still links its
  // packages while it is only listed for removal, and those links count as gone.
  auto dry = envlock("gc --keep 0 -p " + q(prefix_) + " --dry-run");
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(dry.err, "");
  const std::string size = dry.out.substr(dry.out.find('(') + 1, dry.out.find(')') - dry.out.find('(') - 1);
  EXPECT_TRUE(std::regex_match(size, std::regex("[0-9]+\\.[0-9] KiB"))) << dry.out;
  EXPECT_EQ(dry.out, prefix_.string() + ": would remove generation 2; kept 1, 3\n"
                     "package cache: would remove 2 packages and 2 archives (" + size + ") that no environment links "
                     "and no kept generation or lockfile names\n"
                     "dry run: nothing was removed\n");
  EXPECT_TRUE(fs::is_directory(gens_ / "2"));
  EXPECT_TRUE(fs::is_directory(pkgs / greet));

  auto gc = envlock("gc --keep 0 -p " + q(prefix_));
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(gc.err, "");
  EXPECT_EQ(gc.out, prefix_.string() + ": removed generation 2; kept 1, 3\n"
                    "package cache: removed 2 packages and 2 archives (" + size + ") that no environment links "
                    "and no kept generation or lockfile names\n");
  EXPECT_FALSE(fs::exists(gens_ / "2"));
  EXPECT_FALSE(fs::exists(pkgs / greet)) << "only generation 2 used it";
  EXPECT_FALSE(fs::exists(pkgs / demo));
  EXPECT_FALSE(fs::exists(pkgs / packages_.at("envlock-greet").file_name));
  EXPECT_TRUE(fs::is_directory(pkgs / packages_.at("envlock-hello").dist_name()));
  EXPECT_TRUE(fs::is_directory(pkgs / packages_.at("python").dist_name()));
  // The pinned generation is still whole and can be made current.
  auto r = envlock("rollback -p " + q(prefix_) + " --to 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_clean_and_locked_as(a_);
  // Unpinned and not current any more: gc --keep 0 removes generation 3 and 1 stays as current.
  EXPECT_EQ(envlock("history -p " + q(prefix_) + " --unpin 1").exit_code, 0);
  // A lockfile named with -l keeps its packages in the cache though nothing links them. The dry
  // run's JSON is the real run's but for dry_run.
  dry = envlock("gc --keep 0 -p " + q(prefix_) + " -l " + q(c_) + " --json --dry-run");
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  auto would = nlohmann::json::parse(dry.out);
  EXPECT_EQ(would["dry_run"], true);
  gc = envlock("gc --keep 0 -p " + q(prefix_) + " -l " + q(c_) + " --json");
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  const auto j = nlohmann::json::parse(gc.out);
  would["dry_run"] = false;
  EXPECT_EQ(would, j);
  EXPECT_EQ(j["removed"], nlohmann::json::array({3}));
  EXPECT_EQ(j["kept"], nlohmann::json::array({1}));
  EXPECT_EQ(j["lockfiles_removed"], 1);  // c.lock's copy (b.lock's went with generation 2)
  EXPECT_EQ(j["cache"]["packages"], 0);
  EXPECT_TRUE(fs::is_directory(pkgs / packages_.at("python").dist_name()));
  dry = envlock("gc --keep 0 -p " + q(prefix_) + " --dry-run");
  gc = envlock("gc --keep 0 -p " + q(prefix_));
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(std::regex_replace(dry.out, std::regex("would remove"), "removed"), gc.out + "dry run: nothing was removed\n");
  EXPECT_EQ(gc.out, prefix_.string() + ": no generation to remove; kept 1\n"
                    "package cache: removed 1 package and 1 archive (" + gc.out.substr(gc.out.find('(') + 1, gc.out.find(')') - gc.out.find('(') - 1) +
                    ") that no environment links and no kept generation or lockfile names\n");
  EXPECT_FALSE(fs::is_directory(pkgs / packages_.at("python").dist_name()));
  expect_clean_and_locked_as(a_);
  // remove takes the generations with the environment.
  EXPECT_EQ(envlock("remove -p " + q(prefix_)).exit_code, 0);
  EXPECT_FALSE(fs::exists(gens_));
}

// A rollback killed between its swap and the rename of the folder it left (the tree of the
// generation it made current's predecessor under the chosen number) is whole: history lists it by
// the tree's own number, and the next command that takes the lock renames the folder.
TEST_F(Generations, AFolderLeftMisnamedByAKilledRollbackIsPutRight) {
  install(a_);
  install(b_);
  ASSERT_EQ(::renameat2(AT_FDCWD, (gens_ / "1").c_str(), AT_FDCWD, prefix_.c_str(), RENAME_EXCHANGE), 0);
  auto h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 2 generations (* current)\n"
                            "*    1  TIME  1 package   envlock install -l a.lock -e default\n"
                            "     2  TIME  4 packages  envlock install -l b.lock -e default\n");
  expect_clean_and_locked_as(a_);
  auto r = envlock("rollback -p " + q(prefix_) + " --to 2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_clean_and_locked_as(b_);
  EXPECT_EQ(dists(gens_ / "1"), dists_of(a_));
  EXPECT_FALSE(fs::exists(gens_ / "2"));
}

/// Forks `envlock ARGS...` with output to /dev/null.
pid_t spawn(const std::vector<std::string>& args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    std::vector<char*> argv{const_cast<char*>(ENVLOCK_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(ENVLOCK_BINARY, argv.data());
    ::_exit(127);
  }
  return pid;
}

// SIGKILL at 40 seeded random moments of `envlock rollback`: one whole generation is current each
// time (verify clean, its packages those of one lockfile), both are listed, and the next
// rollback works.
TEST_F(Generations, SigkillAtRandomMomentsOfRollbackLeavesOneWholeGenerationCurrent) {
  install(a_);
  install(b_);
  for (const auto& [k, v] : env_) ::setenv(k.c_str(), v.c_str(), 1);
  const auto a = dists_of(a_), b = dists_of(b_);
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  pid_t pid = spawn({"rollback", "-p", prefix_.string(), "--to", "1"});
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto full_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  std::mt19937 rng(20261203);
  std::uniform_int_distribution<long> delay(0, static_cast<long>(full_us * 1.2));
  int moved = 0, stayed = 0;
  for (int run = 0; run < 40; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const auto before = dists(prefix_);
    const std::string to = before == a ? "2" : "1";
    pid = spawn({"rollback", "-p", prefix_.string(), "--to", to});
    ::usleep(static_cast<useconds_t>(delay(rng)));
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    const auto now = dists(prefix_);
    ASSERT_TRUE(now == a || now == b) << "not one whole generation";
    (now == before ? stayed : moved)++;
    auto v = verify_prefix(prefix_);
    ASSERT_TRUE(v.ok()) << v.error().to_string();
    ASSERT_TRUE(v->clean()) << v->drift.front().path << ": " << v->drift.front().reason;
    auto gens = list_generations(prefix_);
    ASSERT_TRUE(gens.ok());
    ASSERT_EQ(gens->size(), 2u);
    EXPECT_EQ((*gens)[0].number, 1u);
    EXPECT_EQ((*gens)[1].number, 2u);
    EXPECT_EQ((*gens)[0].current, now == a);
    EXPECT_EQ(dists((*gens)[0].tree), a);
    EXPECT_EQ(dists((*gens)[1].tree), b);
  }
  for (const auto& [k, v] : env_) ::unsetenv(k.c_str());
  EXPECT_GT(moved, 0);
  EXPECT_GT(stayed, 0);
  auto r = envlock("rollback -p " + q(prefix_) + " --to " + (dists(prefix_) == a ? "2" : "1"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const auto& e : fs::directory_iterator(gens_))
    EXPECT_TRUE(e.path().filename() == "1" || e.path().filename() == "2" || e.path().filename() == "lockfiles")
        << e.path();
}

// SIGKILL at 30 seeded random moments of installs that keep a generation (A <-> C, no scripts, so
// the previous tree is moved at the swap): the prefix is one lockfile's environment, every listed
// generation is a whole tree of one of them, none is lost, and a number never changes its tree.
TEST_F(Generations, SigkillDuringInstallsThatKeepGenerationsLeavesWholeTrees) {
  install(a_);
  install(c_);
  for (const auto& [k, v] : env_) ::setenv(k.c_str(), v.c_str(), 1);
  const auto a = dists_of(a_), c = dists_of(c_);
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  pid_t pid = spawn({"install", "-l", a_.string(), "-p", prefix_.string()});
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto full_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  std::mt19937 rng(20261204);
  std::uniform_int_distribution<long> delay(0, static_cast<long>(full_us * 1.2));
  std::map<std::uint64_t, std::set<std::string>> seen;  // number -> the packages of its tree
  for (int run = 0; run < 30; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const fs::path target = dists(prefix_) == a ? c_ : a_;
    pid = spawn({"install", "-l", target.string(), "-p", prefix_.string()});
    ::usleep(static_cast<useconds_t>(delay(rng)));
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    const auto now = dists(prefix_);
    ASSERT_TRUE(now == a || now == c) << "a mix";
    auto gens = list_generations(prefix_);
    ASSERT_TRUE(gens.ok()) << gens.error().to_string();
    int current = 0;
    for (const auto& g : *gens) {
      const auto d = dists(g.tree);
      ASSERT_TRUE(d == a || d == c) << g.tree;
      auto v = verify_prefix(g.tree);
      ASSERT_TRUE(v.ok()) << v.error().to_string();
      EXPECT_TRUE(v->clean()) << g.tree << ": " << (v->clean() ? "" : v->drift.front().path);
      current += g.current;
      if (g.number == 0) continue;
      auto [it, fresh] = seen.emplace(g.number, d);
      EXPECT_EQ(it->second, d) << "generation " << g.number << " changed its packages";
    }
    EXPECT_EQ(current, 1);
    // None lost: a number that was current once is listed (kept at the swap, or by the next run
    // from the note written before it), so the numbers run 1..N without a gap.
    for (std::size_t i = 0; i < gens->size(); ++i) EXPECT_EQ((*gens)[i].number, i + 1) << "a generation was lost";
  }
  for (const auto& [k, v] : env_) ::unsetenv(k.c_str());
}

}  // namespace

namespace {

// Without -p the commands work on the project's .envlock/envs/<-e, default: default> beside -f
// (only the manifest's folder is used); wrong combinations are usage errors, a prefix that is
// nothing a failure.
TEST_F(Generations, TheProjectsEnvironmentIsTheDefaultAndBadTargetsAreRefused) {
  const fs::path project = root_ / "project", env = project / ".envlock/envs/default";
  auto r = envlock("install -l " + q(a_) + " -p " + q(env));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // No manifest: said as run says it, not as a -p the user never gave (attack 30, F10 item 1).
  for (const std::string cmd : {"history", "rollback", "gc --keep 1"}) {
    SCOPED_TRACE(cmd);
    r = run_command("cd " + q(project) + " && " + envlock_cmd() + " " + cmd, env_);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, "error: envlock.yaml: no manifest in the current folder\n"
                     "hint: run in the project's folder, or pass the manifest with -f or the environment with -p\n");
    r = envlock(cmd + " -f " + q(project / "envlock.yaml"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, "error: " + (project / "envlock.yaml").string() + ": no such manifest\n"
                     "hint: pass the project's envlock.yaml with -f, or the environment with -p\n");
  }
  envlock::testing::spit(project / "envlock.yaml", "channels: [x]\nplatforms: [linux-64]\ndependencies: [envlock-hello]\n");
  r = envlock("history -e gpu -f " + q(project / "envlock.yaml"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: " + (project / "envlock.yaml").string() + ": has no environment 'gpu'\n"
                   "environments in it: default\nhint: pass one of them with -e\n");
  r = envlock("history -f " + q(project / "envlock.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(untimed(r.out), env.string() + ": 1 generation (* current)\n"
                            "*    1  TIME  1 package   envlock install -l a.lock -e default\n");
  r = envlock("history -p " + q(env) + " -e default");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: -p: names the environment itself; -e and -f are not read with it\n"
                   "hint: pass either -p PREFIX or -e ENV [-f MANIFEST]\n");
  r = envlock("rollback -e ../x -f " + q(project / "envlock.yaml"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: -e ../x: is not an environment name ([A-Za-z0-9][A-Za-z0-9._-]*)\n"
                   "hint: pass the environment's name as the manifest spells it\n");
  r = envlock("history -p " + q(root_ / "nothing"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: " + (root_ / "nothing").string() + ": is not an environment and has no generations\n"
                   "hint: check the path given with -p\n");
  r = envlock("rollback -p " + q(root_ / "no/such/env"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: " + (root_ / "no/such/env").string() + ": is not an environment and has no generations\n"
                   "hint: check the path given with -p\n");
  EXPECT_FALSE(fs::exists(root_ / "no"));
  r = envlock("rollback -p " + q(env));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: " + env.string() + ": has no generation older than the current one (1)\n"
                   "generations: 1 (current)\n"
                   "hint: an install that changes the environment keeps the one it replaces; `envlock history` lists "
                   "them\n");
}

}  // namespace

namespace {

// Every number option of history, rollback and gc is decimal digits in range or a usage error
// naming the option and the range (attack 23 F3): `gc --keep ''` (an unset variable) was --keep 0
// and removed every old generation, `-1` wrapped, a 20-digit number saturated, `0x3` was 3, and
// `--to 0` printed a 309-digit range. gc of a folder that is no environment fails as history does,
// and leaves the package cache alone.
TEST_F(Generations, NumberOptionsAreDecimalsInRangeAndGcOfNoEnvironmentFails) {
  install(a_);
  install(b_);
  install(c_);
  const struct {
    std::string command, option, value, range;
  } bad[] = {{"gc", "--keep", "", "0 to 999999999"},
             {"gc", "--keep", "-1", "0 to 999999999"},
             {"gc", "--keep", "99999999999999999999", "0 to 999999999"},
             {"gc", "--keep", "1000000000", "0 to 999999999"},
             {"gc", "--keep", "0x3", "0 to 999999999"},
             {"gc", "--keep", " 1", "0 to 999999999"},
             {"rollback", "--to", "0", "1 to 999999999"},
             {"rollback", "--to", "0x3", "1 to 999999999"},
             {"rollback", "--to", "3abc", "1 to 999999999"},
             {"rollback", "--to", "+2", "1 to 999999999"},
             {"rollback", "--to", "99999999999999999999", "1 to 999999999"},
             {"history", "--pin", "0", "1 to 999999999"},
             {"history", "--pin", "", "1 to 999999999"},
             {"history", "--unpin", "-1", "1 to 999999999"}};
  for (const auto& b : bad) {
    SCOPED_TRACE(b.command + " " + b.option + " '" + b.value + "'");
    auto r = envlock(b.command + " -p " + q(prefix_) + " " + b.option + " " + q(b.value));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "error: " + b.command + ": " + b.option + ": '" + b.value + "' is not a whole number from " +
                         b.range + " (decimal digits)\nhint: run `envlock " + b.command + " --help` for its options\n");
  }
  auto r = envlock("history -p " + q(prefix_) + " --pin " + q("1\x1b[31m"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: history: --pin: '1\\x1b[31m' is not a whole number from 1 to 999999999 (decimal digits)\n"
                   "hint: run `envlock history --help` for its options\n");
  auto h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 3 generations (* current)\n"
                            "     1  TIME  1 package   envlock install -l a.lock -e default\n"
                            "     2  TIME  4 packages  envlock install -l b.lock -e default\n"
                            "*    3  TIME  2 packages  envlock install -l c.lock -e default\n")
      << "nothing was removed";
  r = envlock("rollback -p " + q(prefix_) + " --to 2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "rolled back " + prefix_.string() + " from generation 3 to generation 2 (4 packages); generation 3 "
                   "is kept: envlock rollback --to 3 returns to it\n");

  // gc of a folder that is no environment: history's error, exit 1, the package cache untouched
  // (the packages no generation of this prefix links would otherwise go).
  const fs::path pkgs = root_ / "pkgs";
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(pkgs)) ++entries;
  // rollback and history --pin refuse it the same way, before a lock file is made beside it
  // (`rollback -p /etc` had created /.etc.envlock-lock, issue 21).
  for (const fs::path& nothing : {root_ / "nothing", root_ / "channel"})
    for (const std::string cmd : {"gc --keep 0", "rollback", "rollback --to 1", "history --pin 1", "history --unpin 1"}) {
      SCOPED_TRACE(cmd + " " + nothing.string());
      r = envlock(cmd + " -p " + q(nothing));
      EXPECT_EQ(r.exit_code, 1);
      EXPECT_EQ(r.out, "");
      EXPECT_EQ(r.err, "error: " + nothing.string() + ": is not an environment and has no generations\n"
                       "hint: check the path given with -p\n");
      EXPECT_FALSE(fs::exists(root_ / ("." + nothing.filename().string() + ".envlock-lock"))) << "no lock file made";
    }
  std::size_t after = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(pkgs)) ++after;
  EXPECT_EQ(after, entries);
}

// An install killed while its post-link scripts ran leaves its tree at the prefix, marked pending,
// and the tree it replaced beside it (attack 23 F2): history marked the never-committed tree
// current and left the good one out, and a plain rollback, after rolling the interrupted install
// back, went on to the generation before: two steps from what history showed. Now history lists
// the replaced tree as current and the pending one as interrupted, and the rollback stops at the
// generation it restores; with --to, and in gc, the rollback of the interrupted install is named.
TEST_F(Generations, AfterAnInterruptedInstallHistoryMarksTheRestoredGenerationAndRollbackStopsThere) {
  install(a_);
  install(b_);
  install(c_);
  const fs::path stage = root_ / ".env.envlock-stage-1-2";
  const auto interrupt = [&] {  // what a kill during post-link leaves (an install of generation 4)
    ASSERT_EQ(run_command("cp -a " + q(prefix_) + " " + q(stage)).exit_code, 0);
    auto origin = nlohmann::json::parse(slurp(prefix_ / "conda-meta/envlock"));
    origin["generation"] = 4;
    envlock::testing::spit(prefix_ / "conda-meta/envlock", origin.dump(2) + "\n");
    envlock::testing::spit(prefix_ / "conda-meta/envlock-pending",
                           R"({"previous": [".env.envlock-stage-1-2", ".env.envlock-old-1"]})" "\n");
  };
  interrupt();
  const std::string warning = "warning: " + prefix_.string() + ": an install did not finish (conda-meta/envlock-pending: "
                              "killed, or stopped while its post-link scripts ran): generation 4 was never committed; "
                              "the next envlock command that takes its lock (install, rollback, gc) rolls it back to "
                              "generation 3\n";
  auto h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(h.err, warning);
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 4 generations (* current)\n"
                            "     1  TIME  1 package   envlock install -l a.lock -e default\n"
                            "     2  TIME  4 packages  envlock install -l b.lock -e default\n"
                            "*    3  TIME  2 packages  envlock install -l c.lock -e default\n"
                            "     4  TIME  2 packages  envlock install -l c.lock -e default  (interrupted: never committed)\n");
  h = envlock("history -p " + q(prefix_) + " --json");
  ASSERT_EQ(h.exit_code, 0) << h.err;
  auto j = nlohmann::json::parse(h.out);
  EXPECT_EQ(j["current"], 3);
  ASSERT_EQ(j["generations"].size(), 4u);
  EXPECT_EQ(j["generations"][2]["tree"], stage.string());
  EXPECT_EQ(j["generations"][2]["current"], true);
  EXPECT_EQ(j["generations"][2]["interrupted"], false);
  EXPECT_EQ(j["generations"][3]["tree"], prefix_.string());
  EXPECT_EQ(j["generations"][3]["current"], false);
  EXPECT_EQ(j["generations"][3]["interrupted"], true);

  // A plain rollback undoes the interrupted install and stops at generation 3.
  auto r = envlock("rollback -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "rolled back " + prefix_.string() + " from generation 4, an install that did not finish (never "
                   "committed; not kept), to generation 3 (2 packages), the one before it; `envlock rollback` again "
                   "goes back further\n");
  EXPECT_FALSE(fs::exists(stage));
  expect_clean_and_locked_as(c_);
  h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(h.err, "");
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 3 generations (* current)\n"
                            "     1  TIME  1 package   envlock install -l a.lock -e default\n"
                            "     2  TIME  4 packages  envlock install -l b.lock -e default\n"
                            "*    3  TIME  2 packages  envlock install -l c.lock -e default\n");
  interrupt();
  r = envlock("rollback -p " + q(prefix_) + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out),
            nlohmann::json({{"prefix", prefix_.string()}, {"from", 4}, {"to", 3}, {"changed", true},
                            {"interrupted_install", true}, {"environment_left", true}, {"packages", 2}, {"warnings", nlohmann::json::array()}}));
  expect_clean_and_locked_as(c_);

  // --to N goes on to N, and says what it rolled back first; so does gc.
  const std::string rolled = "warning: rolled back an install into " + prefix_.string() + " that did not finish "
                             "(conda-meta/envlock-pending: killed, or stopped while its post-link scripts ran): "
                             "generation 4 was never committed; generation 3 is current again\n";
  interrupt();
  r = envlock("rollback -p " + q(prefix_) + " --to 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, rolled);
  EXPECT_EQ(r.out, "rolled back " + prefix_.string() + " from generation 3 to generation 1 (1 package); generation 3 "
                   "is kept: envlock rollback --to 3 returns to it\n");
  expect_clean_and_locked_as(a_);
  r = envlock("rollback -p " + q(prefix_) + " --to 3");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  interrupt();
  auto gc = envlock("gc --keep 5 -p " + q(prefix_));
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(gc.err, rolled);
  EXPECT_EQ(gc.out.substr(0, gc.out.find('\n') + 1), prefix_.string() + ": no generation to remove; kept 1, 2, 3\n");
  EXPECT_FALSE(fs::exists(stage));
  expect_clean_and_locked_as(c_);
  // A link planted under a pin's name is no pin, and --pin replaces it (attack 30, F10 item 3).
  fs::create_symlink(root_ / "elsewhere", gens_ / "1.pinned");
  auto listed = envlock("history -p " + q(prefix_));
  EXPECT_EQ(listed.out.find("(pinned)"), std::string::npos) << listed.out;
  auto pinned = envlock("history --pin 1 -p " + q(prefix_));
  EXPECT_EQ(pinned.exit_code, 0) << pinned.err;
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(gens_ / "1.pinned")));
  EXPECT_FALSE(fs::exists(root_ / "elsewhere"));
  ASSERT_EQ(envlock("history --unpin 1 -p " + q(prefix_)).exit_code, 0);
  // history --pin takes the lock too, and says so (issue 21: it rolled the install back silently).
  interrupt();
  auto pin = envlock("history --pin 2 -p " + q(prefix_));
  EXPECT_EQ(pin.exit_code, 0) << pin.err;
  EXPECT_EQ(pin.err, rolled);
  EXPECT_EQ(pin.out, "pinned generation 2 of " + prefix_.string() + " (envlock gc keeps it)\n");
  EXPECT_FALSE(fs::exists(stage));
  expect_clean_and_locked_as(c_);
}

// An interrupted first install has no tree before it (issue 21): history marked nothing current
// yet printed `"current": 0`, and rollback, having rolled it back, failed with "holds no
// environment". Now history says the rollback leaves no environment, and rollback says it did.
TEST_F(Generations, AnInterruptedFirstInstallHasNoCurrentGenerationAndRollbackSaysNothingIsLeft) {
  const auto interrupt = [&] {  // what a kill during the post-link scripts of a first install leaves
    install(a_);
    envlock::testing::spit(prefix_ / "conda-meta/envlock-pending", R"({"previous": []})" "\n");
  };
  interrupt();
  auto h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(h.err, "warning: " + prefix_.string() + ": an install did not finish (conda-meta/envlock-pending: killed, "
                   "or stopped while its post-link scripts ran): generation 1 was never committed; the next envlock "
                   "command that takes its lock (install, rollback, gc) rolls it back; it was the first install into "
                   "it, so that leaves no environment\n");
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 1 generation (* current)\n"
                            "     1  TIME  1 package   envlock install -l a.lock -e default  (interrupted: never committed)\n");
  h = envlock("history --json -p " + q(prefix_));
  ASSERT_EQ(h.exit_code, 0) << h.err;
  auto j = nlohmann::json::parse(h.out);
  EXPECT_TRUE(j["current"].is_null()) << h.out;
  EXPECT_EQ(j["generations"][0]["interrupted"], true);

  auto r = envlock("rollback -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "rolled back " + prefix_.string() + " from generation 1, an install that did not finish (never "
                   "committed; not kept); it was the first install into it, so no environment is left: run the "
                   "install again to make it\n");
  EXPECT_FALSE(fs::exists(prefix_));
  interrupt();
  r = envlock("rollback --json -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out),
            nlohmann::json({{"prefix", prefix_.string()}, {"from", 1}, {"to", 0}, {"changed", true},
                            {"interrupted_install", true}, {"environment_left", false}, {"packages", 0},
                            {"warnings", nlohmann::json::array()}}));
  EXPECT_FALSE(fs::exists(prefix_));
  install(a_);  // and the install makes it again
  expect_clean_and_locked_as(a_);
}

// A prefix on /dev/shm (a tmpfs CI jobs use for speed): its conda-meta records were refused as
// "in /dev", so an update there saw no old records, replaced every file as owned by no package
// and kept no generation (found by scripts/bench 23-rollback). Read as anywhere else.
TEST_F(Generations, AnEnvironmentOnDevShmIsUpdatedAndRolledBackAsAnyOther) {
  const fs::path shm = "/dev/shm";
  if (::access(shm.c_str(), W_OK) != 0) GTEST_SKIP() << "no writable " << shm;
  const fs::path root = shm / ("envlock-generations-test-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path prefix = root / "env";
  auto r = envlock("install -l " + q(a_) + " -p " + q(prefix));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = envlock("install -l " + q(c_) + " -p " + q(prefix));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("1 installed, 1 unchanged, 0 removed"), std::string::npos) << r.out;
  r = envlock("rollback -p " + q(prefix) + " --to 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "rolled back " + prefix.string() + " from generation 2 to generation 1 (1 package); generation 2 "
                   "is kept: envlock rollback --to 2 returns to it\n");
  EXPECT_EQ(dists(prefix), dists_of(a_));
  fs::remove_all(root);
}

// Attack 23 F15, F17, F13, F12: a hand-edited generation number above 999999999 counts as none
// (2^64-1 wrapped the next number to 0 and hid the kept tree); a generations folder that is a
// link is named by history (a warning), rollback and gc (an error), as install names it, instead
// of "no generations"; rollback and gc say once on stderr that they wait for a held prefix lock;
// a newline or ESC in the command line is written escaped into conda-meta/history's `# cmd:`.
TEST_F(Generations, OutOfRangeNumbersLinkedFoldersHeldLocksAndControlBytesAreHandled) {
  install(a_);
  auto origin = nlohmann::json::parse(slurp(prefix_ / "conda-meta/envlock"));
  origin["generation"] = 18446744073709551615ull;
  envlock::testing::spit(prefix_ / "conda-meta/envlock", origin.dump(2) + "\n");
  auto h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 1 generation (* current)\n"
                            "*    -  TIME  1 package   envlock install -l a.lock -e default\n");
  install(b_);
  h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 2 generations (* current)\n"
                            "     1  TIME  1 package   envlock install -l a.lock -e default\n"
                            "*    2  TIME  4 packages  envlock install -l b.lock -e default\n");

  // A held lock: one line on stderr, then the command runs.
  const std::string waiting = "waiting for another envlock command that installs or removes " + prefix_.string() + "\n";
  for (const std::string& cmd : {"rollback -p " + q(prefix_) + " --to 1", "gc --keep 0 --dry-run -p " + q(prefix_),
                                "history --unpin 1 -p " + q(prefix_)}) {
    SCOPED_TRACE(cmd);
    auto r = run_command("(flock " + q(root_ / ".env.envlock-lock") + " sleep 1 & sleep 0.3; " + envlock_cmd() + " " + cmd +
                             "; rc=$?; wait; exit $rc)",
                         env_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, waiting);
  }
  EXPECT_EQ(envlock("rollback -p " + q(prefix_) + " --to 2").exit_code, 0);

  // The generations folder moved elsewhere and linked back: named, never followed.
  const fs::path elsewhere = root_ / "elsewhere";
  fs::rename(gens_, elsewhere);
  fs::create_directory_symlink(elsewhere, gens_);
  const std::string why = gens_.string() + ": is not a folder of this user's (a link, a file, or another owner's)";
  h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_EQ(h.err, "warning: " + why + "; envlock keeps the generations of " + prefix_.string() + " there, and uses "
                   "nothing it did not make: no generation in it is listed (remove it, then run the command again)\n");
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 1 generation (* current)\n"
                            "*    2  TIME  4 packages  envlock install -l b.lock -e default\n");
  for (const std::string& cmd : {std::string("rollback"), std::string("gc --keep 0")}) {
    SCOPED_TRACE(cmd);
    auto r = envlock(cmd + " -p " + q(prefix_));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "error: " + why + "\nenvlock keeps the generations of " + prefix_.string() + " there, and uses "
                     "nothing it did not make\nhint: remove it, then run the command again\n");
  }
  EXPECT_TRUE(fs::is_directory(elsewhere / "1")) << "nothing in it deleted";
  fs::remove(gens_);
  fs::rename(elsewhere, gens_);

  // A newline and an ESC in the lockfile's name: escaped in the `# cmd:` line, no line of its own.
  const fs::path evil = root_ / "evil\n+defaults::openssl-0.9.8-0 \x1b[31m.lock";
  fs::copy_file(a_, evil);
  install(evil);
  const std::string history = slurp(prefix_ / "conda-meta/history");
  EXPECT_NE(history.find("\n# cmd: envlock install -l evil\\x0a+defaults::openssl-0.9.8-0 \\x1b[31m.lock -e default\n"),
            std::string::npos)
      << history;
  EXPECT_EQ(history.find("\n+defaults::openssl"), std::string::npos) << history;
  h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 3 generations (* current)\n"
                            "     1  TIME  1 package   envlock install -l a.lock -e default\n"
                            "     2  TIME  4 packages  envlock install -l b.lock -e default\n"
                            "*    3  TIME  1 package   envlock install -l evil\\x0a+defaults::openssl-0.9.8-0 "
                            "\\x1b[31m.lock -e default\n");
}

// A prefix made before generations (no number in its conda-meta/envlock, no generations folder)
// is listed as `-`; its first update numbers it 1 and keeps it.
TEST_F(Generations, AnEnvironmentMadeBeforeGenerationsBecomesGenerationOneAtItsFirstUpdate) {
  install(a_);
  auto origin = nlohmann::json::parse(slurp(prefix_ / "conda-meta/envlock"));
  origin.erase("generation");
  envlock::testing::spit(prefix_ / "conda-meta/envlock", origin.dump(2) + "\n");
  fs::remove_all(gens_);
  auto h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 1 generation (* current)\n"
                            "*    -  TIME  1 package   envlock install -l a.lock -e default\n");
  install(b_);
  h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 2 generations (* current)\n"
                            "     1  TIME  1 package   envlock install -l a.lock -e default\n"
                            "*    2  TIME  4 packages  envlock install -l b.lock -e default\n");
  auto r = envlock("rollback -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_clean_and_locked_as(a_);
}

}  // namespace

namespace {

// Killed after the swap (or the commit) and before the tree it replaced was moved into the
// generations folder: the note written before the swap names where it waits, and the next
// command that takes the lock keeps it instead of deleting it as a leftover.
TEST_F(Generations, APreviousTreeAKillLeftBesideThePrefixIsKeptNotDeleted) {
  install(a_);
  install(c_);
  const fs::path waiting = root_ / ".env.envlock-stage-999-1";
  fs::rename(gens_ / "1", waiting);
  envlock::testing::spit(gens_ / "keeping", R"({"number": 2, "previous": 1, "trees": [".env.envlock-stage-999-1", ".env.envlock-old-999"]})" "\n");
  auto h = envlock("history -p " + q(prefix_));  // read only: listed where it waits
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 2 generations (* current)\n"
                            "     1  TIME  1 package   envlock install -l a.lock -e default\n"
                            "*    2  TIME  2 packages  envlock install -l c.lock -e default\n");
  EXPECT_TRUE(fs::exists(waiting));
  auto r = envlock("rollback -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  expect_clean_and_locked_as(a_);
  EXPECT_FALSE(fs::exists(waiting));
  EXPECT_FALSE(fs::exists(gens_ / "keeping"));
  EXPECT_EQ(dists(gens_ / "2"), dists_of(c_));
  // A note about a swap that did not happen (the prefix is not the new number) keeps nothing:
  // the tree beside is a leftover, deleted by the next install.
  const fs::path stage = root_ / ".env.envlock-stage-998-1";
  fs::create_directories(stage / "conda-meta");
  envlock::testing::spit(stage / "conda-meta/envlock", R"({"generation": 3})" "\n");
  envlock::testing::spit(gens_ / "keeping", R"({"number": 4, "previous": 3, "trees": [".env.envlock-stage-998-1"]})" "\n");
  install(c_);
  EXPECT_FALSE(fs::exists(stage));
  EXPECT_FALSE(fs::exists(gens_ / "3"));
  EXPECT_FALSE(fs::exists(gens_ / "keeping"));
}

}  // namespace

namespace {

// `envlock snapshot deploy` over an environment envlock made keeps the tree it replaces as a
// generation, as install and create do: history lists the deploy with its command, rollback
// undoes it (verify clean, the earlier lockfile's packages), and the snapshot's bytes are the
// deployed generation's kept lockfile. A prefix holding a conda environment envlock did not make
// is refused, nothing changed.
TEST_F(Generations, SnapshotDeployKeepsAGenerationThatRollbackUndoes) {
  const fs::path source = root_ / "train";
  auto r = envlock("install -l " + q(b_) + " -p " + q(source));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path snap = root_ / "train.yaml";
  r = envlock("snapshot capture -p " + q(source) + " -o " + q(snap));
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err;
  install(a_);

  r = envlock("snapshot deploy " + q(snap) + " -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "deployed train into " + prefix_.string() + ": 4 conda packages, 0 pip distributions\n"
                   "the environment it replaced is kept as generation 1: envlock rollback -p " + prefix_.string() +
                       " returns to it\n");
  EXPECT_EQ(dists(prefix_), dists_of(b_));
  auto h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 2 generations (* current)\n"
                            "     1  TIME  1 package   envlock install -l a.lock -e default\n"
                            "*    2  TIME  4 packages  envlock snapshot deploy train.yaml -e train\n");
  h = envlock("history -p " + q(prefix_) + " --json");
  ASSERT_EQ(h.exit_code, 0) << h.err;
  const auto j = nlohmann::json::parse(h.out);
  ASSERT_EQ(j["generations"].size(), 2u);
  EXPECT_EQ(j["generations"][1]["lockfile"], "train.yaml");
  EXPECT_EQ(slurp(j["generations"][1]["lockfile_copy"].get<std::string>()), slurp(snap)) << "the snapshot, as deployed";

  r = envlock("rollback -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "rolled back " + prefix_.string() +
                       " from generation 2 to generation 1 (1 package); generation 2 is kept: envlock rollback --to 2 "
                       "returns to it\n");
  expect_clean_and_locked_as(a_);
  r = envlock("rollback -p " + q(prefix_) + " --to 2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dists(prefix_), dists_of(b_));
  auto v = envlock("verify -p " + q(prefix_));
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;

  // The same snapshot again changes no package: the same generation, nothing kept; --json says so.
  r = envlock("snapshot deploy " + q(snap) + " -p " + q(prefix_) + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto d = nlohmann::json::parse(r.out);
  EXPECT_EQ(d["generation"], 2);
  EXPECT_EQ(d["previous"], nullptr);
  EXPECT_EQ(d["warnings"], nlohmann::json::array());
  EXPECT_EQ(list_generations(prefix_)->size(), 2u);

  // gc reads the kept snapshot as the lockfile it is: no warning, its packages stay.
  auto gc = envlock("gc --keep 5 -p " + q(prefix_) + " --dry-run");
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(gc.err, "");

  // A conda environment envlock did not make is not the deploy's to replace.
  const fs::path foreign = root_ / "foreign";
  fs::create_directories(foreign / "conda-meta");
  envlock::testing::spit(foreign / "conda-meta/history", "");
  r = envlock("snapshot deploy " + q(snap) + " -p " + q(foreign));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + foreign.string() +
                       ": holds a conda environment that envlock did not make (conda-meta/ without conda-meta/envlock)\n"
                       "a deploy would replace its packages with the snapshot's, and envlock keeps no generation of it\n"
                       "hint: deploy into a new prefix, or remove that environment first\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(foreign / "conda-meta"), fs::directory_iterator()), 1);
  EXPECT_FALSE(fs::exists(root_ / ".foreign.envlock-generations"));
}

}  // namespace

namespace {

// On a filesystem without renameat2(RENAME_EXCHANGE) (forced here through the test seam) a
// rollback takes two renames, after a note: the result is the same as a swap's. Killed between
// the two (SIGKILL from the seam), no tree is at the prefix and both generations are whole;
// history says so, and the next command that takes the lock finishes the rollback first.
TEST_F(Generations, WithoutRenameExchangeRollbackTakesTwoRenamesAndAKillBetweenThemIsFinished) {
  install(a_);
  install(b_);
  set_rollback_seam_for_tests({.no_exchange = true, .between_renames = {}});
  auto r = rollback_generation(prefix_, 1);
  set_rollback_seam_for_tests({});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->from, 2u);
  EXPECT_EQ(r->to, 1u);
  EXPECT_EQ(r->packages, 1u);
  EXPECT_EQ(r->warnings, std::vector<std::string>{});
  expect_clean_and_locked_as(a_);
  EXPECT_EQ(dists(gens_ / "2"), dists_of(b_));
  EXPECT_FALSE(fs::exists(gens_ / "1"));
  EXPECT_FALSE(fs::exists(gens_ / "rolling-back"));

  // Killed between the two renames.
  const pid_t pid = ::fork();
  if (pid == 0) {
    set_rollback_seam_for_tests({.no_exchange = true, .between_renames = [] { ::raise(SIGKILL); }});
    (void)rollback_generation(prefix_, 2);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  EXPECT_FALSE(fs::exists(fs::symlink_status(prefix_)));
  EXPECT_EQ(dists(gens_ / "1"), dists_of(a_)) << "the generation it left, whole in its folder";
  EXPECT_EQ(dists(gens_ / "2"), dists_of(b_)) << "the generation it was making current, whole";
  ASSERT_TRUE(fs::exists(gens_ / "rolling-back"));

  auto h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 2 generations (* current)\n"
                            "     1  TIME  1 package   envlock install -l a.lock -e default\n"
                            "     2  TIME  4 packages  envlock install -l b.lock -e default\n");
  EXPECT_EQ(h.err, "warning: " + prefix_.string() +
                       " holds no environment: a rollback to generation 2 was stopped between its two renames (its "
                       "filesystem cannot swap two folders in one step); the next envlock command that takes its lock "
                       "finishes it: envlock rollback -p " + prefix_.string() + " --to 2\n");
  auto run = envlock("run -p " + q(prefix_) + " -- true");  // read only: it says how to end it
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "error: " + prefix_.string() + ": no such environment (the folder does not exist)\n"
                     "hint: a rollback to generation 2 was stopped between its two renames; `envlock rollback -p " +
                         prefix_.string() + " --to 2` finishes it\n");
  auto again = envlock("rollback -p " + q(prefix_) + " --to 2");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err, "warning: finished the rollback of " + prefix_.string() +
                           " to generation 2, which was stopped between its two renames (its filesystem cannot swap "
                           "two folders in one step); generation 2 is current\n");
  EXPECT_EQ(again.out, prefix_.string() + ": generation 2 is the current one already; nothing was changed\n");
  expect_clean_and_locked_as(b_);
  EXPECT_EQ(dists(gens_ / "1"), dists_of(a_));
  EXPECT_FALSE(fs::exists(gens_ / "2"));
  EXPECT_FALSE(fs::exists(gens_ / "rolling-back"));

  // A note from a kill before the first rename (the prefix is still there): only the note goes.
  envlock::testing::spit(gens_ / "rolling-back", R"({"from": 2, "to": 1, "tree": "1"})" "\n");
  h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(h.err, "");
  auto gc = envlock("gc --keep 5 -p " + q(prefix_));
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(gc.err, "");
  EXPECT_FALSE(fs::exists(gens_ / "rolling-back"));
  expect_clean_and_locked_as(b_);
  EXPECT_EQ(dists(gens_ / "1"), dists_of(a_));
}

// A filesystem mounted inside the environment (a dataset, a scratch tmpfs): install refuses it,
// but rollback swapped the trees and the mount went into the generations folder, out of the
// environment's path (attack 30, F3). Rollback refuses it as install does, nothing changed. A
// generation tree holding a mount cannot be removed: gc said "removed generation 1", exit 0;
// now it keeps it listed, whole, says it could not remove it, and exits 1 (docs/cache.md's rule).
TEST_F(Generations, AMountInsideTheEnvironmentIsNeverSwappedAwayNorReportedRemoved) {
  install(a_);
  install(c_);
  const fs::path data = prefix_ / "share" / "data";
  fs::create_directories(data);
  if (::mount("tmpfs", data.c_str(), "tmpfs", 0, "size=1m") != 0) GTEST_SKIP() << "cannot mount here (needs CAP_SYS_ADMIN)";
  envlock::testing::spit(data / "precious.txt", "precious\n");
  auto rb = envlock("rollback -p " + q(prefix_));
  const bool still = fs::exists(data / "precious.txt");
  ::umount2(data.c_str(), MNT_DETACH);
  EXPECT_EQ(rb.exit_code, 1);
  EXPECT_EQ(rb.out, "");
  EXPECT_EQ(rb.err, "error: " + data.string() + ": is a mount point inside the environment (another filesystem)\n"
                    "envlock replaces an environment's tree to change it and deletes it to remove it, and never copies "
                    "or deletes what is mounted in it; nothing was changed\n"
                    "hint: unmount it (or mount it outside the environment and link to it), then run the command "
                    "again\n");
  EXPECT_TRUE(still);
  EXPECT_EQ(dists(prefix_), dists_of(c_));

  const fs::path kept = gens_ / "1" / "share" / "data";
  fs::create_directories(kept);
  ASSERT_EQ(::mount("tmpfs", kept.c_str(), "tmpfs", 0, "size=1m"), 0);
  envlock::testing::spit(kept / "precious.txt", "precious\n");
  auto gc = envlock("gc --keep 0 -p " + q(prefix_));
  const bool whole = fs::exists(kept / "precious.txt") && fs::exists(gens_ / "1" / "conda-meta");
  ::umount2(kept.c_str(), MNT_DETACH);
  EXPECT_EQ(gc.exit_code, 1);
  EXPECT_EQ(gc.err, "warning: " + kept.string() + ": is a mount point inside generation 1 (another filesystem); what is "
                    "mounted is never deleted, so the generation was kept: unmount it, then run the command again\n");
  EXPECT_EQ(gc.out, prefix_.string() + ": could not remove generation 1; kept 2\n"
                    "package cache: removed 0 packages and 0 archives (0 B) that no environment links "
                    "and no kept generation or lockfile names\n");
  EXPECT_TRUE(whole);
  auto h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_NE(h.out.find("2 generations"), std::string::npos) << h.out;
}

// A kept generation's tree (the path `history --json` prints) given as a prefix: install linked
// the lockfile there and remove deleted it, and the generation vanished from the history, pins
// ignored (attack 30, F5). Refused as a prefix inside another environment is, nothing changed,
// naming the way to use it.
TEST_F(Generations, AKeptGenerationsTreeIsRefusedAsAPrefix) {
  install(a_);
  install(c_);
  const fs::path one = gens_ / "1";
  const std::string refusal = "error: " + one.string() + ": is inside " + gens_.string() +
                              ", the generations folder of " + prefix_.string() + "\n"
                              "a kept generation is changed only by envlock rollback and gc; used as a prefix it would "
                              "vanish from the history of " + prefix_.string() + "; nothing was changed\n"
                              "hint: to make generation 1 current: envlock rollback -p " + prefix_.string() + " --to 1\n";
  const auto before = dists(one);
  for (const std::string& cmd : {"install -l " + q(b_) + " -p " + q(one), "remove -p " + q(one),
                                 "rollback -p " + q(one), "history --pin 1 -p " + q(one)}) {
    auto r = envlock(cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_EQ(r.out, "") << cmd;
    EXPECT_EQ(r.err, refusal) << cmd;
  }
  EXPECT_EQ(dists(one), before);
  EXPECT_FALSE(fs::exists(gens_ / ".1.envlock-generations"));
  auto h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_NE(h.out.find("2 generations"), std::string::npos) << h.out;
}

// install --force over a conda environment envlock did not make (conda-meta/ holds conda's
// records, no conda-meta/envlock): it always failed with "conda-meta/envlock: cannot be read as
// envlock's JSON" about a file that is not there (attack 30, F6). --force adopts it as
// docs/install.md says: the records are replaced by the lockfile's, a file no record owns stays,
// and the environment is envlock's from then on (generation 1; the conda tree is not one).
TEST_F(Generations, ForceAdoptsACondaEnvironmentEnvlockDidNotMake) {
  envlock::testing::spit(prefix_ / "conda-meta" / "zlib-1.2.13-h166bdaf_4.json",
                         R"({"name": "zlib", "version": "1.2.13", "build": "h166bdaf_4", "build_number": 4, )"
                         R"("channel": "https://conda.anaconda.org/conda-forge/linux-64", "subdir": "linux-64", )"
                         R"("files": ["lib/libz.so.1.2.13"], "paths_data": {"paths_version": 1, "paths": []}})");
  envlock::testing::spit(prefix_ / "conda-meta" / "history", "==> 2023-01-01 00:00:00 <==\n");
  envlock::testing::spit(prefix_ / "lib" / "libz.so.1.2.13", "zlib\n");
  envlock::testing::spit(prefix_ / "share" / "notes.txt", "mine\n");
  auto refused = envlock("install -l " + q(a_) + " -p " + q(prefix_));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.out, "");
  auto r = envlock("install -l " + q(a_) + " -p " + q(prefix_) + " --force");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "packages: 1 (1 downloaded, 0 from the package cache)\n");
  EXPECT_EQ(r.out, "environment 'default' (linux-64) is ready in " + prefix_.string() +
                       "\n  1 installed, 0 unchanged, 1 removed; files: 1 linked, 1 copied, 1 relocated\n");
  EXPECT_EQ(dists(prefix_), dists_of(a_));
  EXPECT_FALSE(fs::exists(prefix_ / "conda-meta" / "zlib-1.2.13-h166bdaf_4.json"));
  EXPECT_FALSE(fs::exists(prefix_ / "lib" / "libz.so.1.2.13"));
  EXPECT_EQ(slurp(prefix_ / "share" / "notes.txt"), "mine\n");
  auto h = envlock("history -p " + q(prefix_));
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(untimed(h.out), prefix_.string() + ": 1 generation (* current)\n"
                             "*    1  TIME  1 package   envlock install -l a.lock -e default\n");
}

}  // namespace
