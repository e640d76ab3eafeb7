// End-to-end tests through the envlock executable: the fixture channel (the README's main job),
// the real channels of ../shared/corpus/packages over file:// and HTTP, bad inputs, and SIGKILL
// at random moments of `envlock install`.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "envlock/hash.hpp"
#include "envlock/encoding.hpp"
#include "envlock/install.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/process.hpp"
#include "support/http_server.hpp"
#include "support/run_command.hpp"

namespace fs = std::filesystem;
using namespace envlock;
using envlock::testing::envlock_cmd;
using envlock::testing::run_command;

namespace {

const fs::path kShared = ENVLOCK_SHARED_DIR;
const fs::path kCorpus = kShared / "corpus";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const fs::path& p, const std::string& data) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << data;
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

/// Rebuilds a corpus channel (files named <prefix><subdir>__<file>) under `dest`.
void corpus_channel(const std::string& src_prefix, const fs::path& dest, const std::vector<std::string>& subdirs) {
  for (const auto& sd : subdirs) {
    fs::create_directories(dest / sd);
    const fs::path dir = (kCorpus / "packages" / src_prefix).parent_path();
    const std::string stem = fs::path(src_prefix).filename().string() + sd + "__";
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (name.starts_with(stem)) fs::copy_file(e.path(), dest / sd / name.substr(stem.size()));
    }
  }
}

/// Every record of `subdir`'s repodata whose archive is present, as locked records (one per name:
/// the last file name in order), with URLs under `base_url`.
std::vector<LockedPackage> channel_records(const fs::path& channel, const std::string& subdir,
                                           const std::string& base_url,
                                           const std::set<std::string>& skip = {}) {
  std::map<std::string, LockedPackage> by_name;
  auto j = nlohmann::json::parse(slurp(channel / subdir / "repodata.json"));
  for (const char* key : {"packages", "packages.conda"}) {
    if (!j.contains(key)) continue;
    for (auto it = j[key].begin(); it != j[key].end(); ++it) {
      if (!fs::exists(channel / subdir / it.key())) continue;
      auto rec = PackageRecord::from_json(it.value());
      EXPECT_TRUE(rec.ok()) << it.key();
      if (!rec.ok() || skip.count(rec->name)) continue;
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

Lockfile make_lockfile(std::vector<LockedPackage> packages, const std::string& platform = "linux-64",
                       std::vector<VirtualPackage> vps = {}) {
  Lockfile lf;
  lf.manifest_hash = "sha256:" + std::string(64, '0');
  LockedEnvironment env;
  env.name = "default";
  LockedPlatform lp;
  lp.platform = platform;
  lp.virtual_packages = std::move(vps);
  std::sort(packages.begin(), packages.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::set<std::string> channels;
  for (const auto& p : packages) channels.insert(p.channel);
  lp.channels.assign(channels.begin(), channels.end());
  lp.packages = std::move(packages);
  env.platforms[platform] = std::move(lp);
  lf.environments["default"] = std::move(env);
  return lf;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("envlock-cli-install-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    env_ = {{"ENVLOCK_PKGS_DIR", (root_ / "pkgs").string()}, {"NO_COLOR", "1"}};
  }
  void TearDown() override { fs::remove_all(root_); }

  bool have_corpus() const { return fs::exists(kCorpus / "packages"); }

  fs::path write_lock(const Lockfile& lf, const std::string& name = "envlock.lock") {
    const fs::path p = root_ / name;
    auto st = lf.write(p);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().to_string());
    return p;
  }

  envlock::testing::CommandResult envlock(const std::string& args,
                                          const std::map<std::string, std::string>& extra = {}) {
    auto env = env_;
    for (const auto& [k, v] : extra) env[k] = v;
    return run_command(envlock_cmd() + " " + args, env);
  }

  fs::path make_fixture_channel() {
    const fs::path channel = root_ / "channel";
    auto r = run_command("'" + std::string(ENVLOCK_SOURCE_DIR) + "/scripts/make-fixture-channel' " + q(channel));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return channel;
  }

  fs::path root_;
  std::map<std::string, std::string> env_;
};

// install, list -l, export and probe -l read envlock.lock only. Given another format the error
// names it (recognised as `show` and `diff` recognise it) and says what to do, rather than quoting
// envlock.lock's parser.
TEST_F(Cli, OtherLockfileFormatsAreNamedWithWhatToDo) {
  const fs::path explicit_file = root_ / "env.txt";
  std::ofstream(explicit_file) << "# platform: linux-64\n@EXPLICIT\n"
                                  "https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda\n";
  std::vector<std::pair<fs::path, std::string>> files{{explicit_file, "@EXPLICIT"}};
  const fs::path lockfiles = kCorpus / "lockfiles";
  if (fs::exists(lockfiles)) {
    files.emplace_back(lockfiles / "conda__conda-lock/example__zlib__conda-lock.yml", "conda-lock v1");
    files.emplace_back(lockfiles / "prefix-dev__pixi/examples__cpp-sdl__pixi.lock", "pixi.lock v6");
    // pixi.lock 1 is the conda-lock v1 format; its name says pixi wrote it, and pixi installs it.
    files.emplace_back(lockfiles / "prefix-dev__pixi/examples__pypi__pixi.lock@ced21182_metadata", "pixi.lock v1");
  }
  for (const auto& [file, format] : files) {
    for (const std::string command : {"install", "list", "export", "probe"}) {
      std::string args = command + " -l " + q(file);
      if (command == "install") args += " -p " + q(root_ / "p");
      const auto r = envlock(args);
      EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.err;  // the file's contents, not the command line
      EXPECT_NE(r.err.find("error: " + file.string() + ": is a " + format + " file, not an envlock.lock; `envlock " +
                           command + "` reads envlock.lock only"),
                std::string::npos)
          << args << "\n" << r.err;
      EXPECT_NE(r.err.find("hint: `envlock show` and `envlock diff` read it as it is; install it with "),
                std::string::npos) << r.err;
      EXPECT_NE(r.err.find("`envlock lock -f environment.yml`"), std::string::npos) << r.err;
      const char* tool = format.starts_with("pixi.lock") ? "`pixi install`" : "`conda-lock install`";
      if (format != "@EXPLICIT") {
        EXPECT_NE(r.err.find(tool), std::string::npos) << r.err;
      }
    }
    EXPECT_FALSE(fs::exists(root_ / "p")) << file;
  }
  // An envlock.lock that is broken keeps its own parser's error.
  const fs::path broken = root_ / "envlock.lock";
  std::ofstream(broken) << "version: 1\nenvironments: [\n";
  const auto r = envlock("list -l " + q(broken));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.find("not an envlock.lock"), std::string::npos) << r.err;
}

// ---------------------------------------------------------------------------------------------
// The README's main job: create from a manifest over the fixture channel, run a program from it.

TEST_F(Cli, CreateFromTheExampleManifestAndRunItsPrograms) {
  const fs::path channel = make_fixture_channel();
  const fs::path project = root_ / "project";
  spit(project / "envlock.yaml", "name: example\nchannels: [" + channel.string() +
                                     "]\nplatforms: [linux-64]\ndependencies:\n  - envlock-demo >=1.0\n  - envlock-greet\n");
  auto r = envlock("create -f " + q(project / "envlock.yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("envlock-greet 1.0.0: post-link ran"), std::string::npos) << r.out;
  const fs::path prefix = project / ".envlock/envs/default";
  ASSERT_TRUE(fs::exists(project / "envlock.lock"));
  ASSERT_TRUE(fs::exists(prefix / "conda-meta/envlock"));

  // conda-meta/history names the command as typed: the manifest's file name, not the lockfile.
  EXPECT_NE(slurp(prefix / "conda-meta/history").find("# cmd: envlock create -f envlock.yaml -e default\n"),
            std::string::npos)
      << slurp(prefix / "conda-meta/history");

  auto demo = run_command(q(prefix / "bin/envlock-demo"));
  ASSERT_EQ(demo.exit_code, 0) << demo.out << demo.err;
  EXPECT_NE(demo.out.find("Hello from an environment that envlock made."), std::string::npos) << demo.out;
  EXPECT_NE(demo.out.find("envlock-hello: running from " + prefix.string() + "\n"), std::string::npos) << demo.out;
  EXPECT_NE(demo.out.find("imported from " + (prefix / "lib").string()), std::string::npos) << demo.out;
  auto greet = run_command(q(prefix / "bin/envlock-greet"));
  ASSERT_EQ(greet.exit_code, 0) << greet.err;
  EXPECT_NE(greet.out.find("envlock-greet: prefix is " + prefix.string() + "\n"), std::string::npos) << greet.out;

  // The lockfile is fresh now: --locked and --frozen install it again without locking.
  auto locked = envlock("create --locked -f " + q(project / "envlock.yaml"));
  EXPECT_EQ(locked.exit_code, 0) << locked.err;
  EXPECT_EQ(locked.err.find("locked "), std::string::npos) << locked.err;
  EXPECT_NE(locked.out.find("0 installed, 4 unchanged, 0 removed"), std::string::npos) << locked.out;
  EXPECT_EQ(envlock("create --frozen -f " + q(project / "envlock.yaml")).exit_code, 0);

  // A manifest change makes the lockfile stale: --locked refuses, the default re-locks.
  spit(project / "envlock.yaml", "name: example\nchannels: [" + channel.string() +
                                     "]\nplatforms: [linux-64]\ndependencies:\n  - envlock-greet\n");
  auto stale = envlock("create --locked -f " + q(project / "envlock.yaml"));
  EXPECT_EQ(stale.exit_code, 1);
  EXPECT_NE(stale.err.find("no longer matches"), std::string::npos) << stale.err;
  auto relock = envlock("create -f " + q(project / "envlock.yaml") + " --json");
  ASSERT_EQ(relock.exit_code, 0) << relock.err;
  auto j = nlohmann::json::parse(relock.out);
  ASSERT_EQ(j["removed"].size(), 2u) << relock.out;
  EXPECT_EQ(j["removed"][0], "envlock-demo-1.0.0-pyh_0");
  EXPECT_TRUE(std::string(j["removed"][1]).starts_with("python-")) << relock.out;
  EXPECT_FALSE(fs::exists(prefix / "bin/envlock-demo"));
  EXPECT_EQ(run_command(q(prefix / "bin/envlock-greet")).exit_code, 0);
}

// Under a file-size limit (`ulimit -f`) a write past it raised SIGXFSZ and killed envlock with
// no message (exit 153, a new-user attack, session 9); Python, so conda, ignores the signal and
// reports "File too large". envlock does too, and nothing is left half-written.
// A pull request that commits `.envlock` (or `.envlock/envs`) as a symbolic link would have
// `create` replace and relocate an environment wherever the link points (attack 20, I6): refused
// before anything is read or written, by create, run and shell-hook; `-p PREFIX` still installs.
// pixi moves environments out of the project only through the user's configuration
// (detached-environments), never through the checkout.
TEST_F(Cli, AProjectEnvsFolderThatIsALinkIsRefused) {
  const fs::path channel = make_fixture_channel();
  const fs::path project = root_ / "project";
  const fs::path elsewhere = root_ / "production";
  fs::create_directories(elsewhere / "envs");
  spit(project / "envlock.yaml",
       "channels: [" + channel.string() + "]\nplatforms: [linux-64]\ndependencies: [envlock-demo]\n");
  fs::create_directory_symlink(elsewhere, project / ".envlock");
  const std::string link_refusal =
      "error: " + (project / ".envlock").string() +
      ": is a symbolic link: the project's environments must live in the project's own folder\n"
      "hint: remove the link (a checkout should not carry one), or install elsewhere with -p PREFIX\n";
  for (const std::string command : {"create", "run", "shell-hook"}) {
    auto r = envlock(command + " -f " + q(project / "envlock.yaml") + (command == "run" ? " -- true" : ""));
    EXPECT_EQ(r.exit_code, 1) << command << r.err;
    EXPECT_EQ(r.out, "") << command;
    EXPECT_EQ(r.err, link_refusal) << command;
  }
  EXPECT_TRUE(fs::is_empty(elsewhere / "envs"));
  EXPECT_FALSE(fs::exists(project / "envlock.lock"));  // refused before locking

  // A real .envlock whose envs/ is the link.
  fs::remove(project / ".envlock");
  fs::create_directory(project / ".envlock");
  fs::create_directory_symlink(elsewhere / "envs", project / ".envlock/envs");
  auto nested = envlock("create -f " + q(project / "envlock.yaml"));
  EXPECT_EQ(nested.exit_code, 1);
  EXPECT_EQ(nested.err, "error: " + (project / ".envlock/envs").string() +
                            ": is a symbolic link: the project's environments must live in the project's own folder\n"
                            "hint: remove the link (a checkout should not carry one), or install elsewhere with -p PREFIX\n");
  EXPECT_TRUE(fs::is_empty(elsewhere / "envs"));

  // A file where the folder should be.
  fs::remove_all(project / ".envlock");
  spit(project / ".envlock", "not a folder\n");
  auto file = envlock("create -f " + q(project / "envlock.yaml"));
  EXPECT_EQ(file.exit_code, 1);
  EXPECT_EQ(file.err, "error: " + (project / ".envlock").string() +
                          ": is not a folder: the project's environments live in it\n"
                          "hint: move it away, or install elsewhere with -p PREFIX\n");

  // -p names the place itself: the link is not consulted.
  auto explicit_prefix = envlock("create -f " + q(project / "envlock.yaml") + " -p " + q(root_ / "env"));
  EXPECT_EQ(explicit_prefix.exit_code, 0) << explicit_prefix.err;
  EXPECT_TRUE(fs::exists(root_ / "env/conda-meta/envlock"));
}

TEST_F(Cli, AFileSizeLimitIsAnErrorWithAMessageNotASignal) {
  const fs::path channel = make_fixture_channel();
  const fs::path project = root_ / "project";
  spit(project / "envlock.yaml", "name: example\nchannels: [" + channel.string() +
                                     "]\nplatforms: [linux-64]\ndependencies:\n  - envlock-demo >=1.0\n");
  auto r = run_command("ulimit -f 1; exec " + envlock_cmd() + " create -f " + q(project / "envlock.yaml"), env_);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + (project / "envlock.lock").string() +
                       ": cannot write: File too large\nhint: a file-size limit is set (`ulimit -f`): raise it and "
                       "retry\n");
  EXPECT_FALSE(fs::exists(project / "envlock.lock"));
  EXPECT_FALSE(fs::exists(project / ".envlock"));
}

TEST_F(Cli, PackagesExtractedAgainFromTheirCachedArchiveCountAsFromTheCache) {
  // A new-user attack (session 8): "packages: 4 (0 downloaded, 0 from the package cache)".
  const fs::path channel = make_fixture_channel();
  const fs::path project = root_ / "project";
  spit(project / "envlock.yaml", "name: example\nchannels: [" + channel.string() +
                                     "]\nplatforms: [linux-64]\ndependencies:\n  - envlock-demo >=1.0\n  - envlock-greet\n");
  ASSERT_EQ(envlock("create -f " + q(project / "envlock.yaml")).exit_code, 0);
  for (const auto& e : fs::directory_iterator(root_ / "pkgs"))
    if (e.is_directory()) fs::remove_all(e.path());
  auto r = envlock("install -l " + q(project / "envlock.lock") + " -p " + q(root_ / "other"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("\npackages: 4 (0 downloaded, 4 from the package cache)\n"), std::string::npos) << r.err;
}

TEST_F(Cli, InfoShowsThePackageCacheFoldersInUse) {
  // A new-user attack (session 8): with ENVLOCK_PKGS_DIRS set, `info` named the default folder
  // as the package cache, which install did not use.
  fs::create_directories(root_ / "ro");
  fs::permissions(root_ / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  auto r = envlock("info", {{"ENVLOCK_PKGS_DIRS", (root_ / "rw").string() + "," + (root_ / "ro").string()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\npackage cache     : " + (root_ / "rw").string() + " (ENVLOCK_PKGS_DIRS)\n" +
                       "                    " + (root_ / "ro").string() + " (read-only)\nvirtual packages  :"),
            std::string::npos)
      << r.out;
  auto j = envlock("info --json", {{"ENVLOCK_PKGS_DIRS", (root_ / "rw").string() + "," + (root_ / "ro").string()}});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto info = nlohmann::json::parse(j.out);
  EXPECT_EQ(info["pkgs_dir"], (root_ / "rw").string());
  EXPECT_EQ(info["pkgs_dirs"], nlohmann::json::array({(root_ / "rw").string(), (root_ / "ro").string()}));
  auto plain = envlock("info");
  EXPECT_NE(plain.out.find("\npackage cache     : " + (root_ / "pkgs").string() + "\n"), std::string::npos) << plain.out;
  fs::permissions(root_ / "ro", fs::perms::owner_all);
}

// ENVLOCK_CACHE_DIR moves the package cache with the rest of the cache (attack 22 A1): the package
// cache had a second copy of the folder rule that ignored it, so `create` filled ~/.cache while
// `info` named ENVLOCK_CACHE_DIR/pkgs. One rule now (package_cache_dir, envlock/paths.hpp) for
// create, install, info and clean.
TEST_F(Cli, EnvlockCacheDirHoldsThePackageCacheThatInfoNames) {
  const fs::path channel = make_fixture_channel();
  const fs::path project = root_ / "project";
  const fs::path cache = root_ / "cache";
  const fs::path home = root_ / "home";
  spit(project / "envlock.yaml", "name: example\nchannels: [" + channel.string() +
                                     "]\nplatforms: [linux-64]\ndependencies:\n  - envlock-demo >=1.0\n");
  const std::map<std::string, std::string> env{{"ENVLOCK_PKGS_DIR", "\x01unset"}, {"ENVLOCK_PKGS_DIRS", "\x01unset"},
                                               {"ENVLOCK_CACHE_DIR", cache.string()}, {"HOME", home.string()},
                                               {"XDG_CACHE_HOME", "\x01unset"}};
  auto r = envlock("create -f " + q(project / "envlock.yaml"), env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path prefix = project / ".envlock/envs/default";
  EXPECT_EQ(r.out, "environment 'default' (linux-64) is ready in " + prefix.string() +
                       "\n  3 installed, 0 unchanged, 0 removed; files: 2 linked, 3 copied, 2 relocated\n");
  const std::string outside = "warning: 3 package(s) come from file://" + channel.string() +
                              ", a local folder outside the lockfile's folder " + project.string() +
                              " (check that it is the one meant): envlock-demo-1.0.0-pyh_0, envlock-hello-1.0.0-0, "
                              "python-3.11.7-0_host_shim\n";
  EXPECT_EQ(r.err, "locked " + (project / "envlock.yaml").string() + " -> " + (project / "envlock.lock").string() +
                       "\n" + outside + "packages: 3 (3 downloaded, 0 from the package cache)\n");
  std::set<std::string> entries;
  for (const auto& e : fs::directory_iterator(cache / "pkgs")) entries.insert(e.path().filename().string());
  EXPECT_EQ(entries, (std::set<std::string>{"envlock-demo-1.0.0-pyh_0", "envlock-demo-1.0.0-pyh_0.conda",
                                            "envlock-demo-1.0.0-pyh_0.lock", "envlock-hello-1.0.0-0",
                                            "envlock-hello-1.0.0-0.conda", "envlock-hello-1.0.0-0.lock",
                                            "python-3.11.7-0_host_shim", "python-3.11.7-0_host_shim.lock",
                                            "python-3.11.7-0_host_shim.tar.bz2"}));
  EXPECT_FALSE(fs::exists(home)) << "nothing written under HOME";
  EXPECT_FALSE(fs::exists(root_ / "pkgs"));

  // install into a second prefix takes every package from that cache.
  r = envlock("install -l " + q(project / "envlock.lock") + " -p " + q(root_ / "other"), env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("\npackages: 3 (0 downloaded, 3 from the package cache)\n"), std::string::npos) << r.err;

  // info names the folder, whole up to the host's virtual packages (versions filtered).
  r = envlock("info", env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  std::string head = r.out.substr(0, r.out.find("virtual packages  :"));
  for (const char* field : {"envlock version   : ", "libsolv version   : "}) {
    const auto at = head.find(field);
    ASSERT_NE(at, std::string::npos) << r.out;
    const auto value = at + std::string_view(field).size();
    head.replace(value, head.find(field[0] == 'e' ? '\n' : ' ', value) - value, "V");
  }
  EXPECT_EQ(head, "envlock version   : V\nlibsolv version   : V (conda)\nplatform          : linux-64\n"
                  "cache directory   : " + cache.string() + "\npackage cache     : " + (cache / "pkgs").string() + "\n");
  auto j = envlock("info --json", env);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto info = nlohmann::json::parse(j.out);
  EXPECT_EQ(info["cache_dir"], cache.string());
  EXPECT_EQ(info["pkgs_dir"], (cache / "pkgs").string());
  EXPECT_FALSE(info.contains("pkgs_dirs"));

  // clean looks at the same folders.
  r = envlock("clean --dry-run", env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> folders;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (const auto at = line.rfind("  /"); at != std::string::npos) folders.push_back(line.substr(0, 20) + line.substr(at + 2));
  EXPECT_EQ(folders, (std::vector<std::string>{"repodata cache      " + (cache / "repodata").string(),
                                               "package archives    " + (cache / "pkgs").string(),
                                               "extracted packages  " + (cache / "pkgs").string()}))
      << r.out;

  // With no folder to name, info says so and install refuses (never a folder under /tmp).
  const std::map<std::string, std::string> none{{"ENVLOCK_PKGS_DIR", "\x01unset"}, {"ENVLOCK_PKGS_DIRS", "\x01unset"},
                                                {"ENVLOCK_CACHE_DIR", "\x01unset"}, {"HOME", "\x01unset"},
                                                {"XDG_CACHE_HOME", "\x01unset"}};
  r = envlock("info", none);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\npackage cache     : (none: cannot place the package cache: none of ENVLOCK_PKGS_DIR, "
                       "ENVLOCK_CACHE_DIR, XDG_CACHE_HOME or HOME is set)\nvirtual packages  :"),
            std::string::npos)
      << r.out;
  r = envlock("install -l " + q(project / "envlock.lock") + " -p " + q(root_ / "third"), none);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, outside + "error: cannot place the package cache: none of ENVLOCK_PKGS_DIR, ENVLOCK_CACHE_DIR, XDG_CACHE_HOME or "
                   "HOME is set\nhint: set ENVLOCK_PKGS_DIR (or ENVLOCK_CACHE_DIR) to a writable folder\n");
  EXPECT_FALSE(fs::exists(root_ / "third"));
}

// Attack 22 A17 and A8, as a user sees them: a control character written as a YAML escape is
// refused naming the file, line, column and key, with nothing raw on the terminal, and a 1 MB
// value is quoted cut; nothing is written.
TEST_F(Cli, ManifestEscapesAndHugeValuesAreRefusedReadably) {
  const fs::path project = root_ / "project";
  spit(project / "envlock.yaml", "name: x\nchannels: [conda-forge]\nplatforms: [linux-64]\n"
                                 "dependencies: [numpy, \"python\\e]0;owned\\a\"]\n");
  auto r = envlock("lock -f " + q(project / "envlock.yaml"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + (project / "envlock.yaml").string() +
                       ":4:23: the value of `dependencies[1]` holds the control character U+001B (character 7 of the "
                       "value, as YAML reads it)\n  dependencies: [numpy, \"python\\e]0;owned\\a\"]\n"
                       "                        ^\nhint: manifest keys and values are printable text: remove the escape "
                       "(\\a, \\e, \\n, \\x.., \\u..) or the line break from the string\n");
  spit(project / "envlock.yaml", "name: x\nchannels: [conda-forge]\nplatforms: [linux-" + std::string(1'000'000, 'a') +
                                     "]\ndependencies: [numpy]\n");
  r = envlock("lock -f " + q(project / "envlock.yaml"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  const std::string a(1000, 'a');
  EXPECT_LT(r.err.size(), 1200u);
  EXPECT_EQ(r.err.substr(0, r.err.find("\nhint: ")),
            "error: " + (project / "envlock.yaml").string() + ":3:13: unknown platform (conda subdir) 'linux-" +
                a.substr(0, 121) + "…" + a.substr(0, 79) + "'\n  platforms: [linux-" + a.substr(0, 222) + "…\n" +
                std::string(14, ' ') + "^");
  EXPECT_FALSE(fs::exists(project / "envlock.lock"));
}

// Attack 22 A16: a conda-meta/*.json record of a prefix is read as every input is
// (read_input_file): at most 64 MiB (one byte more, a sparse file, is refused by its size), never
// through a link into /proc. verify and list stop naming the record; install skips it with a
// warning; nothing of /proc/self/environ is read or printed.
TEST_F(Cli, ACondaMetaRecordOverTheCapOrLinkedIntoProcIsNotRead) {
  const fs::path channel = make_fixture_channel();
  const fs::path project = root_ / "project";
  spit(project / "envlock.yaml", "name: example\nchannels: [" + channel.string() +
                                     "]\nplatforms: [linux-64]\ndependencies:\n  - envlock-demo >=1.0\n");
  ASSERT_EQ(envlock("create -f " + q(project / "envlock.yaml")).exit_code, 0);
  const fs::path prefix = project / ".envlock/envs/default";
  const fs::path big = prefix / "conda-meta/zz-big-1-0.json";
  { std::ofstream(big, std::ios::binary); }
  fs::resize_file(big, (64u << 20) + 1);
  const std::string hint = "\nhint: the record is damaged; reinstall the package or remove the file\n";
  for (const std::string command : {"verify", "list"}) {
    const auto r = envlock(command + " -p " + q(prefix));
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_EQ(r.out, "") << command;
    EXPECT_EQ(r.err, "error: " + big.string() +
                         ": is larger than 64 MiB, the most envlock reads of a conda-meta record; it is not read" + hint)
        << command;
  }
  fs::remove(big);
  const fs::path environ_link = prefix / "conda-meta/zz-env-1-0.json";
  fs::create_symlink("/proc/self/environ", environ_link);
  auto r = envlock("verify -p " + q(prefix), {{"ENVLOCK_TEST_SECRET", "hunter2"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + environ_link.string() + ": is in /proc, not a file of a project; it is not read" + hint);
  // install skips what it cannot read, as it does a damaged record, and says so.
  { std::ofstream(big, std::ios::binary); }
  fs::resize_file(big, (64u << 20) + 1);
  r = envlock("install -l " + q(project / "envlock.lock") + " -p " + q(prefix), {{"ENVLOCK_TEST_SECRET", "hunter2"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("hunter2"), std::string::npos);
  const std::string tail = r.err.substr(r.err.find("packages: 3 "));
  EXPECT_EQ(tail, "packages: 3 (0 downloaded, 3 from the package cache)\n"
                  "warning: conda-meta/zz-big-1-0.json is larger than 64 MiB, the most envlock reads of a conda-meta "
                  "record; it is not read; skipped (its files are treated as not owned by any package)\n"
                  "warning: conda-meta/zz-env-1-0.json is in /proc, not a file of a project; it is not read; skipped "
                  "(its files are treated as not owned by any package)\n");
  EXPECT_EQ(r.out, "environment 'default' (linux-64) is ready in " + prefix.string() +
                       "\n  0 installed, 3 unchanged, 0 removed; files: 0 linked, 0 copied, 0 relocated\n");
}

// Attack 22 A9, the conda half (the wheel half is PipInstallCli.AWheelUrlLinkedIntoProcIsNotRead):
// a locked package whose file:// url is a link into /proc is refused unread (system_file_refusal),
// so neither the digest nor the size of /proc/self/environ reaches the mismatch error; nothing is
// installed or cached.
TEST_F(Cli, APackageUrlLinkedIntoProcIsNotRead) {
  const fs::path channel = make_fixture_channel();
  const fs::path project = root_ / "project";
  spit(project / "envlock.yaml", "name: example\nchannels: [../channel]\nplatforms: [linux-64]\n"
                                 "dependencies:\n  - envlock-hello\n");
  ASSERT_EQ(envlock("lock -f " + q(project / "envlock.yaml")).exit_code, 0);
  const fs::path archive = channel / "linux-64/envlock-hello-1.0.0-0.conda";
  fs::remove(archive);
  fs::create_symlink("/proc/self/environ", archive);
  const std::string url = "file://" + archive.string();
  const auto r = envlock("install -l " + q(project / "envlock.lock") + " -p " + q(root_ / "p"),
                         {{"ENVLOCK_TEST_SECRET", "hunter2"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "warning: 1 package(s) come from file://" + channel.string() +
                       ", a local folder outside the lockfile's folder " + project.string() +
                       " (check that it is the one meant): envlock-hello-1.0.0-0\n"
                       "error: envlock-hello-1.0.0-0.conda: its url " + url +
                       " is in /proc, not a file of a project; it is not read\npackage: envlock-hello-1.0.0-0 from " + url +
                       "\nnothing was installed; the prefix was not touched\nhint: a locked package's url names a "
                       "package file of a channel or a download\n");
  EXPECT_FALSE(fs::exists(root_ / "p"));
  EXPECT_FALSE(fs::exists(root_ / "pkgs/envlock-hello-1.0.0-0.conda"));
}

// A channel folder, a project and prefixes whose paths hold a space (and '#', '%', non-ASCII):
// lock, create, install, and a bundle deployed with a cold package cache. Channel URLs are
// percent-encoded (envlock/url.hpp); before, libcurl refused the raw space ("URL using
// bad/illegal format") and deploy blamed the bundle.
TEST_F(Cli, ChannelProjectAndPrefixPathsWithSpaces) {
  const fs::path x = root_ / "x";
  const fs::path channel = x / "my chan #1 100% caf\xc3\xa9";
  auto made = run_command("'" + std::string(ENVLOCK_SOURCE_DIR) + "/scripts/make-fixture-channel' " + q(channel));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const fs::path project = x / "proj sp";
  spit(project / "envlock.yaml", "name: spaces\nchannels: [\"../my chan #1 100% caf\xc3\xa9\"]\n"
                                 "platforms: [linux-64]\ndependencies:\n  - envlock-greet\n  - envlock-demo\n");

  // create: lock, then install into the project's prefix (.envlock/envs/default under "proj sp").
  auto created = envlock("create -f " + q(project / "envlock.yaml"));
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;
  EXPECT_NE(created.out.find("envlock-greet 1.0.0: post-link ran"), std::string::npos) << created.out;
  const std::string text = slurp(project / "envlock.lock");
  // The lockfile holds the channel as the manifest wrote it: a path relative to its folder.
  EXPECT_NE(text.find("url: \"../my chan #1 100% caf\xc3\xa9/noarch/envlock-greet-1.0.0-0.tar.bz2\"\n"),
            std::string::npos) << text;
  const fs::path env_prefix = project / ".envlock/envs/default";
  auto greet = run_command(q(env_prefix / "bin/envlock-greet"));
  ASSERT_EQ(greet.exit_code, 0) << greet.err;
  EXPECT_NE(greet.out.find("envlock-greet: prefix is " + env_prefix.string() + "\n"), std::string::npos) << greet.out;
  EXPECT_NE(greet.out.find("envlock-hello: running from " + env_prefix.string() + "\n"), std::string::npos) << greet.out;
  // A noarch: python entry point: no shebang can name a python under "proj sp", so the script
  // starts under /bin/sh and execs the prefix's own python (not one found on PATH).
  EXPECT_TRUE(slurp(env_prefix / "bin/envlock-demo").starts_with("#!/bin/sh\n'''exec' '" + env_prefix.string() + "/bin/python"));
  auto demo = run_command("env PATH=/usr/bin:/bin " + q(env_prefix / "bin/envlock-demo"));
  ASSERT_EQ(demo.exit_code, 0) << demo.out << demo.err;
  EXPECT_NE(demo.out.find("imported from " + (env_prefix / "lib").string()), std::string::npos) << demo.out;
  auto check = envlock("lock --check -f " + q(project / "envlock.yaml"));
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  auto fresh = envlock("verify -p " + q(env_prefix));
  EXPECT_EQ(fresh.exit_code, 0) << fresh.out << fresh.err;

  // The channel by its absolute path: the lockfile records the encoded file:// URL (as mamba
  // writes one), and install reads it from a prefix with a space.
  spit(project / "abs.yaml", "name: spaces\nchannels: [\"" + channel.string() +
                                 "\"]\nplatforms: [linux-64]\ndependencies:\n  - envlock-hello\n");
  auto locked = envlock("lock -f " + q(project / "abs.yaml") + " -o " + q(project / "abs.lock"));
  ASSERT_EQ(locked.exit_code, 0) << locked.out << locked.err;
  const std::string abs_text = slurp(project / "abs.lock");
  const std::string encoded = "file://" + (x / "my%20chan%20%231%20100%25%20caf%C3%A9").string();
  EXPECT_NE(abs_text.find("url: " + encoded + "/linux-64/envlock-hello-1.0.0-0.conda\n"), std::string::npos) << abs_text;
  const fs::path prefix = x / "pre fix";
  auto installed = envlock("install -l " + q(project / "abs.lock") + " -p " + q(prefix));
  ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  auto hello = run_command(q(prefix / "bin/envlock-hello"));
  ASSERT_EQ(hello.exit_code, 0) << hello.err;
  EXPECT_NE(hello.out.find("envlock-hello: running from " + prefix.string() + "\n"), std::string::npos) << hello.out;

  // A lockfile an older envlock wrote (the raw path in the URL) installs too, with a cold cache.
  auto records = channel_records(channel, "linux-64", "file://" + channel.string());
  const fs::path old_lock = write_lock(make_lockfile(records), "old.lock");
  EXPECT_NE(slurp(old_lock).find("file://" + channel.string() + "/linux-64/"), std::string::npos);
  auto old_install = envlock("install -l " + q(old_lock) + " -p " + q(x / "old prefix"),
                             {{"ENVLOCK_PKGS_DIR", (root_ / "pkgs old").string()}});
  EXPECT_EQ(old_install.exit_code, 0) << old_install.out << old_install.err;

  // A bundle of the environment, deployed into a prefix with a space with a cold cache: the
  // archives come from the bundle unpacked beside that prefix, through file:// URLs.
  const fs::path bundle = x / "bundle sp.tar.zst";
  auto captured = envlock("snapshot capture -p " + q(env_prefix) + " --bundle " + q(bundle) + " --pkgs-dir " +
                          q(root_ / "pkgs") + " -o " + q(x / "snap.yaml"));
  ASSERT_TRUE(captured.exit_code == 0 || captured.exit_code == 3) << captured.out << captured.err;  // 3: partial host facts
  ASSERT_TRUE(fs::exists(bundle)) << captured.err;
  fs::remove_all(channel);  // nothing may come from the channel now
  const fs::path deployed = x / "dep sp2";
  auto deploy = envlock("snapshot deploy " + q(bundle) + " -p " + q(deployed),
                        {{"ENVLOCK_PKGS_DIR", (root_ / "cold pkgs").string()}});
  ASSERT_EQ(deploy.exit_code, 0) << deploy.out << deploy.err;
  EXPECT_EQ(deploy.err.find("damaged"), std::string::npos) << deploy.err;
  auto greet2 = run_command(q(deployed / "bin/envlock-greet"));
  ASSERT_EQ(greet2.exit_code, 0) << greet2.err;
  EXPECT_NE(greet2.out.find("envlock-hello: running from " + deployed.string() + "\n"), std::string::npos) << greet2.out;
}

TEST_F(Cli, VerifyListAndRemoveOnTheFixtureEnvironment) {
  const fs::path channel = make_fixture_channel();
  auto records = channel_records(channel, "linux-64", "file://" + channel.string());
  auto noarch = channel_records(channel, "noarch", "file://" + channel.string());
  records.insert(records.end(), noarch.begin(), noarch.end());
  const fs::path lock = write_lock(make_lockfile(records));
  const fs::path prefix = root_ / "env";
  auto r = envlock("install -l " + q(lock) + " -p " + q(prefix) + " --copy");
  ASSERT_EQ(r.exit_code, 0) << r.err;

  auto clean = envlock("verify -p " + q(prefix) + " --json");
  ASSERT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  auto cj = nlohmann::json::parse(clean.out);
  EXPECT_EQ(cj["clean"], true);
  EXPECT_EQ(cj["packages"], 4);

  // Edit one file, delete another, add a third: verify names each and exits 1.
  spit(prefix / "share/envlock-hello/greeting.txt", "Hello from somewhere else!!!!!!!!!!!!!!!!!!!!\n");
  fs::remove(prefix / "bin/envlock-greet");
  spit(prefix / "bin/stray", "x");
  auto drift = envlock("verify -p " + q(prefix) + " --json");
  EXPECT_EQ(drift.exit_code, 1);
  auto dj = nlohmann::json::parse(drift.out);
  ASSERT_EQ(dj["modified"].size(), 1u);
  EXPECT_EQ(dj["modified"][0]["path"], "share/envlock-hello/greeting.txt");
  EXPECT_EQ(dj["modified"][0]["package"], "envlock-hello-1.0.0-0");
  ASSERT_EQ(dj["missing"].size(), 1u);
  EXPECT_EQ(dj["missing"][0]["path"], "bin/envlock-greet");
  ASSERT_EQ(dj["extra"].size(), 1u);
  EXPECT_EQ(dj["extra"][0]["path"], "bin/stray");
  auto text = envlock("verify -p " + q(prefix));
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("modified  share/envlock-hello/greeting.txt  (envlock-hello-1.0.0-0: size "), std::string::npos)
      << text.out;

  // A file name that is not UTF-8, with a newline: --json still prints JSON (U+FFFD for the
  // bad byte), the text lists it on one line.
  spit(prefix / "bin/bad\xff\nname", "x");
  auto odd = envlock("verify -p " + q(prefix) + " --json");
  EXPECT_EQ(odd.exit_code, 1) << odd.err;
  const auto oj = nlohmann::json::parse(odd.out);
  ASSERT_EQ(oj["extra"].size(), 2u);
  EXPECT_EQ(oj["extra"][0]["path"], "bin/bad\\xff\nname");  // the raw byte as text, as verify prints it
  auto odd_text = envlock("verify -p " + q(prefix));
  EXPECT_NE(odd_text.out.find("extra  bin/bad\xff\\x0aname  ("), std::string::npos) << odd_text.out;
  fs::remove(prefix / "bin/bad\xff\nname");

  // list: the prefix and the lockfile give the same records in one shape.
  auto from_prefix = envlock("list -p " + q(prefix) + " --json");
  auto from_lock = envlock("list -l " + q(lock) + " --json");
  ASSERT_EQ(from_prefix.exit_code, 0) << from_prefix.err;
  ASSERT_EQ(from_lock.exit_code, 0) << from_lock.err;
  auto lp = nlohmann::json::parse(from_prefix.out);
  auto ll = nlohmann::json::parse(from_lock.out);
  ASSERT_EQ(lp.size(), 4u);
  ASSERT_EQ(ll.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    for (const char* key : {"name", "version", "build", "build_number", "channel", "url", "sha256"})
      EXPECT_EQ(lp[i][key], ll[i][key]) << key;
    EXPECT_TRUE(lp[i]["layer"].is_null());
    EXPECT_EQ(ll[i]["layer"], "default");
  }
  EXPECT_EQ(lp[0]["name"], "envlock-demo");
  EXPECT_EQ(lp[0]["url"], "file://" + channel.string() + "/noarch/envlock-demo-1.0.0-pyh_0.conda");

  // remove: refuses a folder envlock did not make, deletes the one it made.
  fs::create_directories(root_ / "other/conda-meta");
  auto refuse = envlock("remove -p " + q(root_ / "other"));
  EXPECT_EQ(refuse.exit_code, 1);  // a refused request is a failure, not a usage error
  EXPECT_NE(refuse.err.find("was not made by envlock"), std::string::npos) << refuse.err;
  EXPECT_TRUE(fs::exists(root_ / "other/conda-meta"));
  auto rm = envlock("remove -p " + q(prefix));
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_FALSE(fs::exists(prefix));
}

// A conda base-style prefix: nested environments (envs/<name>/ and any folder with its own
// conda-meta/, at any depth) and the package cache (pkgs/) are not the prefix's files. verify
// leaves them out as snapshot capture does (one rule, prefix_foreign_folder): only the stray
// file is drift, and both count the same.
TEST_F(Cli, VerifySkipsNestedEnvironmentsAndThePackageCacheAsCaptureDoes) {
  const fs::path channel = make_fixture_channel();
  auto records = channel_records(channel, "linux-64", "file://" + channel.string());
  auto noarch = channel_records(channel, "noarch", "file://" + channel.string());
  records.insert(records.end(), noarch.begin(), noarch.end());
  const fs::path lock = write_lock(make_lockfile(records));
  const fs::path base = root_ / "base";
  auto r = envlock("install -l " + q(lock) + " -p " + q(base) + " --copy");
  ASSERT_EQ(r.exit_code, 0) << r.err;

  spit(base / "envs/train/conda-meta/history", "");
  spit(base / "envs/train/bin/python", "#!/bin/sh\n");
  spit(base / "pkgs/zlib-1.3.1-0/info/index.json", "{}");
  spit(base / "pkgs/urls.txt", "");
  spit(base / "lib/sub/conda-meta/history", "");
  spit(base / "lib/sub/data.txt", "x");
  spit(base / "share/deep/er/conda-meta/history", "");
  spit(base / "share/deep/er/file.txt", "x");
  spit(base / "notes.txt", "mine");

  auto v = envlock("verify -p " + q(base) + " --json");
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  const auto vj = nlohmann::json::parse(v.out);
  ASSERT_EQ(vj["extra"].size(), 1u) << v.out;
  EXPECT_EQ(vj["extra"][0]["path"], "notes.txt");
  EXPECT_TRUE(vj["modified"].empty()) << v.out;
  EXPECT_TRUE(vj["missing"].empty()) << v.out;
  auto text = envlock("verify -p " + q(base));
  EXPECT_EQ(text.out.find("envs/train"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("pkgs/"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("lib/sub"), std::string::npos) << text.out;

  auto c = envlock("snapshot capture -p " + q(base) + " -o " + q(root_ / "snap.yaml") + " --json");
  ASSERT_TRUE(c.exit_code == 0 || c.exit_code == 3) << c.out << c.err;  // 3: partial host facts
  const auto cj = nlohmann::json::parse(c.out);
  ASSERT_EQ(cj["environments"].size(), 1u) << c.out;
  EXPECT_EQ(cj["environments"][0]["unowned_files"], vj["extra"].size()) << c.out;

  // Without the stray file both call the prefix clean.
  fs::remove(base / "notes.txt");
  auto clean = envlock("verify -p " + q(base));
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
}

// ---------------------------------------------------------------------------------------------
// Real channels from the corpus.

struct RealChannel {
  const char* label;
  const char* prefix;  ///< corpus file prefix before the subdir
  std::vector<std::string> subdirs;
  std::set<std::string> skip;
  /// Paths verify must report: conda's zlib test archive ships lib/libz.so and lib/libz.so.1 as
  /// empty regular files while its own info/paths.json declares them softlinks to the library,
  /// so an honest verify flags exactly those two.
  std::set<std::string> expected_drift = {};
};

TEST_F(Cli, InstallsTheRealCorpusChannelsThroughFileUrls) {
  if (!have_corpus()) GTEST_SKIP() << "the shared corpus is absent (looked in " << kCorpus.string() << "; set ENVLOCK_SHARED_DIR): the real-channel test needs it";
  const std::vector<RealChannel> channels = {
      {"jancaha", "JanCaha__conda-channel/", {"linux-64", "noarch"}, {}},
      {"test-recipes", "conda__conda/tests__data__test-recipes__", {"noarch"}, {"failing_post_link", "post_link-c", "clobber-b"}},
      {"pixi-dummy", "prefix-dev__pixi/tests__data__channels__channels__dummy_channel_1__", {"linux-64", "noarch"}, {}},
      {"zlib-tarbz2", "conda__conda/tests__data__conda_format_repo__", {"linux-64", "noarch"}, {},
       {"lib/libz.so", "lib/libz.so.1"}},
  };
  for (const auto& c : channels) {
    SCOPED_TRACE(c.label);
    const fs::path dir = root_ / "channels" / c.label;
    corpus_channel(c.prefix, dir, c.subdirs);
    std::vector<LockedPackage> records;
    for (const auto& sd : c.subdirs) {
      auto more = channel_records(dir, sd, "file://" + dir.string(), c.skip);
      records.insert(records.end(), more.begin(), more.end());
    }
    ASSERT_FALSE(records.empty());
    const fs::path lock = write_lock(make_lockfile(records), std::string(c.label) + ".lock");
    const fs::path prefix = root_ / "envs" / c.label;
    // conda's test recipes include post-link scripts that fail on purpose; linking is tested here.
    auto r = envlock("install --no-scripts -l " + q(lock) + " -p " + q(prefix) + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["installed"].size(), records.size());
    auto installed = read_conda_meta(prefix);
    ASSERT_TRUE(installed.ok()) << installed.error().to_string();
    ASSERT_EQ(installed->size(), records.size());
    for (const auto& rec : *installed) {
      EXPECT_FALSE(rec.url.empty());
      for (const auto& f : rec.files) EXPECT_TRUE(fs::exists(fs::symlink_status(prefix / f))) << rec.name << ": " << f;
    }
    auto v = verify_prefix(prefix);
    ASSERT_TRUE(v.ok());
    std::set<std::string> drifted;
    for (const auto& d : v->drift) drifted.insert(d.path);
    EXPECT_EQ(drifted, c.expected_drift) << (v->drift.empty() ? "" : v->drift[0].path + ": " + v->drift[0].reason);
  }
}

// A dry run shows what the install does (issue 23 point 7, attack 20 I1): conda's own test
// recipes clobber-a and clobber-b both ship bin/clobber-test-file; b wins it. Dropping b, the
// install links a again to put its copy back (rattler's clobber registry), and --dry-run listed a
// as unchanged. It now lists it as relinked, with the real run's counts.
TEST_F(Cli, ADryRunListsTheClobberLoserTheInstallRelinks) {
  if (!have_corpus()) GTEST_SKIP() << "the shared corpus is absent (looked in " << kCorpus.string() << "; set ENVLOCK_SHARED_DIR)";
  const fs::path dir = root_ / "channels/test-recipes";
  corpus_channel("conda__conda/tests__data__test-recipes__", dir, {"noarch"});
  std::vector<LockedPackage> both;
  for (const auto& r : channel_records(dir, "noarch", "file://" + dir.string()))
    if (r.name == "clobber-a" || r.name == "clobber-b") both.push_back(r);
  ASSERT_EQ(both.size(), 2u);
  const fs::path prefix = root_ / "env";
  ASSERT_EQ(envlock("install -l " + q(write_lock(make_lockfile(both), "both.lock")) + " -p " + q(prefix)).exit_code, 0);
  ASSERT_EQ(slurp(prefix / "bin/clobber-test-file"), slurp(root_ / "pkgs/clobber-b-1.0-0/bin/clobber-test-file"));
  both.erase(both.begin() + 1);
  const std::string only_a = q(write_lock(make_lockfile(both), "a.lock"));
  auto dry = envlock("install --dry-run -l " + only_a + " -p " + q(prefix));
  EXPECT_EQ(dry.exit_code, 0);
  EXPECT_EQ(dry.out, "dry run: environment 'default' (linux-64) in " + prefix.string() +
                         " would change as follows; nothing was changed\n"
                         "  removed    clobber-b-1.0-0\n"
                         "  relinked   clobber-a-1.0-0\n"
                         "  0 added, 1 removed, 0 changed, 1 relinked, 0 unchanged\n");
  EXPECT_EQ(dry.err, "");
  auto json = envlock("install --dry-run --json -l " + only_a + " -p " + q(prefix));
  ASSERT_EQ(json.exit_code, 0);
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["relinked"], nlohmann::json::array({"clobber-a-1.0-0"}));
  EXPECT_EQ(j["unchanged"], nlohmann::json::array());
  auto real = envlock("install -l " + only_a + " -p " + q(prefix));
  EXPECT_EQ(real.exit_code, 0) << real.err;
  EXPECT_EQ(real.out, "environment 'default' (linux-64) is ready in " + prefix.string() +
                          "\n  1 installed, 0 unchanged, 1 removed; files: 1 linked, 0 copied, 0 relocated\n");
  EXPECT_EQ(slurp(prefix / "bin/clobber-test-file"), slurp(root_ / "pkgs/clobber-a-1.0-0/bin/clobber-test-file"));
}

TEST_F(Cli, CondaMetaRecordsHaveTheShapeCondaWrites) {
  if (!have_corpus()) GTEST_SKIP() << "the shared corpus is absent (looked in " << kCorpus.string() << "; set ENVLOCK_SHARED_DIR): the conda-meta comparison needs it";
  const fs::path dir = root_ / "zlib";
  corpus_channel("conda__conda/tests__data__conda_format_repo__", dir, {"linux-64"});
  auto records = channel_records(dir, "linux-64", "file://" + dir.string());
  const fs::path prefix = root_ / "env";
  ASSERT_EQ(envlock("install -l " + q(write_lock(make_lockfile(records))) + " -p " + q(prefix)).exit_code, 0);
  auto ours = nlohmann::json::parse(slurp(prefix / "conda-meta/zlib-1.2.11-h7b6447c_3.json"));
  auto theirs = nlohmann::json::parse(slurp(
      kCorpus / "prefix/conda__conda/tests__data__env_metadata__envpy313tosx_whl__conda-meta__libzlib-1.3.1-h8359307_2.json"));
  // Every key envlock writes is one conda writes, with the same JSON type.
  for (auto it = ours.begin(); it != ours.end(); ++it) {
    ASSERT_TRUE(theirs.contains(it.key())) << "conda has no key " << it.key();
    EXPECT_EQ(it.value().type_name(), theirs[it.key()].type_name()) << it.key();
  }
  // ...and the keys tools rely on are all there.
  for (const char* key : {"name", "version", "build", "build_number", "channel", "subdir", "url", "fn", "md5",
                          "sha256", "depends", "files", "paths_data", "link", "extracted_package_dir",
                          "package_tarball_full_path"})
    EXPECT_TRUE(ours.contains(key)) << key;
  EXPECT_EQ(ours["paths_data"]["paths_version"], 1);
  EXPECT_EQ(ours["link"]["type"], 1);
  const auto& path0 = ours["paths_data"]["paths"][0];
  for (auto it = path0.begin(); it != path0.end(); ++it)
    EXPECT_TRUE(theirs["paths_data"]["paths"][0].contains(it.key()) || it.key() == "prefix_placeholder" ||
                it.key() == "file_mode")
        << it.key();
  EXPECT_EQ(ours["fn"], "zlib-1.2.11-h7b6447c_3.tar.bz2") << "the last file name in order is the .tar.bz2";
  const std::string history = slurp(prefix / "conda-meta/history");
  EXPECT_NE(history.find("+file://" + dir.string() + "/linux-64::zlib-1.2.11-h7b6447c_3\n"), std::string::npos) << history;
}

TEST_F(Cli, InstallsOverHttpAndRefusesTheCorruptChannel) {
  if (!have_corpus()) GTEST_SKIP() << "the shared corpus is absent (looked in " << kCorpus.string() << "; set ENVLOCK_SHARED_DIR): the HTTP install test needs it";
  const fs::path dir = root_ / "www";
  corpus_channel("prefix-dev__pixi/tests__data__channels__channels__dummy_channel_1__", dir, {"linux-64"});
  corpus_channel("conda__conda-index/tests__index_data__corrupt__", dir / "corrupt", {"noarch"});
  envlock::testing::HttpServer server(dir);
  ASSERT_TRUE(server.ok()) << server.error();
  const std::string base = server.url("");
  auto records = channel_records(dir, "linux-64", base);
  const fs::path prefix = root_ / "env";
  auto r = envlock("install -l " + q(write_lock(make_lockfile(records))) + " -p " + q(prefix));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(prefix / "conda-meta/dummy-a-0.1.0-hb0f4dca_0.json"));

  // bad_package.tar.bz2: 16 bytes that are not an archive; locked with their true hash.
  const fs::path bad = dir / "corrupt/noarch/bad_package.tar.bz2";
  LockedPackage p;
  p.name = "bad_package";
  p.version = *Version::parse("1.0");
  p.build = "0";
  p.subdir = "noarch";
  p.layer = "default";
  p.file_name = "bad_package-1.0-0.tar.bz2";
  fs::copy_file(bad, dir / "corrupt/noarch" / p.file_name);
  p.sha256 = *hash_file(bad, HashAlgorithm::Sha256);
  p.size = fs::file_size(bad);
  p.channel = base + "/corrupt";
  p.url = base + "/corrupt/noarch/" + p.file_name;
  auto bad_records = records;
  bad_records.push_back(p);
  auto refused = envlock("install -l " + q(write_lock(make_lockfile(bad_records), "bad.lock")) + " -p " + q(prefix));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("bad_package-1.0-0"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("the prefix was not touched"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(prefix / "conda-meta/bad_package-1.0-0.json"));
  EXPECT_TRUE(verify_prefix(prefix)->clean());
}

// ---------------------------------------------------------------------------------------------
// Bad input: each a clear message, non-zero exit, the previous environment intact.

class BadInput : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    channel_ = make_fixture_channel();
    good_ = channel_records(channel_, "linux-64", "file://" + channel_.string());
    prefix_ = root_ / "env";
    auto r = envlock("install -l " + q(write_lock(make_lockfile(good_), "good.lock")) + " -p " + q(prefix_));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    before_ = slurp(prefix_ / "conda-meta/history");
  }
  void expect_intact() {
    EXPECT_EQ(slurp(prefix_ / "conda-meta/history"), before_);
    auto v = verify_prefix(prefix_);
    ASSERT_TRUE(v.ok());
    EXPECT_TRUE(v->clean());
    EXPECT_EQ(run_command(q(prefix_ / "bin/envlock-hello")).exit_code, 0);
    for (const auto& e : fs::directory_iterator(prefix_.parent_path()))
      EXPECT_EQ(e.path().filename().string().find("envlock-stage"), std::string::npos) << e.path();
  }
  fs::path channel_, prefix_;
  std::vector<LockedPackage> good_;
  std::string before_;
};

// A base environment's envs/<name> is where conda puts nested environments: installing there is
// allowed (verify and capture of the base leave envs/ out), and the base stays clean. A prefix
// below a nested one is inside that one.
TEST_F(BadInput, ANestedEnvironmentUnderABasesEnvsFolderIsAllowed) {
  const std::string good = q(root_ / "good.lock");
  auto r = envlock("install -l " + good + " -p " + q(prefix_ / "envs/inner"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_directory(prefix_ / "envs/inner/conda-meta"));
  expect_intact();
  auto deeper = envlock("install -l " + good + " -p " + q(prefix_ / "envs/inner/lib/x"));
  EXPECT_EQ(deeper.exit_code, 1) << deeper.err;
  EXPECT_NE(deeper.err.find("error: " + (prefix_ / "envs/inner/lib/x").string() + ": is inside the environment " +
                            (prefix_ / "envs/inner").string()),
            std::string::npos)
      << deeper.err;
  EXPECT_NE(deeper.err.find("hint: choose a folder outside that environment as the prefix"), std::string::npos) << deeper.err;
  EXPECT_FALSE(fs::exists(prefix_ / "envs/inner/lib/x"));
}

// An update of a base environment rebuilds its whole tree, the nested environments in envs/
// included: it waits while an install holds a nested environment's lock (attack 20, I0: run at
// the same moment, both exited 0 and the nested environment was left empty or mixed).
TEST_F(BadInput, AnUpdateOfTheBaseWaitsForAnInstallInANestedEnvironment) {
  ASSERT_EQ(envlock("install -l " + q(root_ / "good.lock") + " -p " + q(prefix_ / "envs/inner")).exit_code, 0);
  const fs::path nested_lock = prefix_ / "envs/.inner.envlock-lock";
  ASSERT_TRUE(fs::exists(nested_lock));
  const int held = ::open(nested_lock.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);  // an install of envs/inner under way
  for (const auto& [k, v] : env_) ::setenv(k.c_str(), v.c_str(), 1);
  const std::string lock = (root_ / "good.lock").string();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  const fs::path err = root_ / "base.err";
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    const int errfd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(devnull, 1);
    ::dup2(errfd, 2);
    ::execl(ENVLOCK_BINARY, ENVLOCK_BINARY, "install", "-l", lock.c_str(), "-p", prefix_.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::usleep(1500 * 1000);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, WNOHANG), 0) << "the base's install did not wait for the nested one";
  // It says why it waits (attack 20, L10: a waiting install said nothing), naming the environment.
  const std::string waited = "packages: 2 (0 downloaded, 2 from the package cache)\n"
                             "waiting for another envlock command that installs or removes " +
                             (prefix_ / "envs/inner").string() + "\n";
  EXPECT_EQ(slurp(err), waited);
  ::close(held);  // the nested install is done
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(slurp(err), waited);
  for (const fs::path& env : {prefix_, prefix_ / "envs/inner"}) {
    auto v = verify_prefix(env);
    ASSERT_TRUE(v.ok()) << env;
    EXPECT_TRUE(v->clean()) << env;
    EXPECT_EQ(run_command(q(env / "bin/envlock-hello")).exit_code, 0) << env;
  }
}

// A base prefix's envs/ holds other environments (issue 23, M4): `remove` of the base deleted
// them with it. conda refuses to remove its root environment, the one holding envs/
// (conda/cli/main_remove.py: "cannot remove root environment"); envlock refuses a prefix whose
// envs/ holds environments, naming them, for a dry run too, and removes it once they are gone.
TEST_F(BadInput, RemoveRefusesABaseWhoseEnvsFolderHoldsEnvironments) {
  ASSERT_EQ(envlock("install -l " + q(root_ / "good.lock") + " -p " + q(prefix_ / "envs/inner")).exit_code, 0);
  fs::create_directories(prefix_ / "envs/not-an-env/lib");  // no conda-meta/: deleted with the base
  const std::string refusal =
      "error: " + prefix_.string() + ": holds other environments in envs/ (envs/inner)\n"
      "removing it would delete them too; nothing was removed\n"
      "hint: remove them first (envlock remove -p " + (prefix_ / "envs/inner").string() + "), or move them out of " +
      (prefix_ / "envs").string() + ", then run the command again\n";
  for (const std::string extra : {"", " --dry-run"}) {
    auto r = envlock("remove -p " + q(prefix_) + extra);
    EXPECT_EQ(r.exit_code, 1) << extra;
    EXPECT_EQ(r.out, "") << extra;
    EXPECT_EQ(r.err, refusal) << extra;
  }
  EXPECT_TRUE(fs::is_directory(prefix_ / "envs/inner/conda-meta"));
  expect_intact();
  auto inner = envlock("remove -p " + q(prefix_ / "envs/inner"));
  ASSERT_EQ(inner.exit_code, 0) << inner.err;
  auto base = envlock("remove -p " + q(prefix_));
  EXPECT_EQ(base.exit_code, 0) << base.err;
  EXPECT_EQ(base.err, "");
  EXPECT_FALSE(fs::exists(prefix_));
}

TEST_F(BadInput, HashMismatchIsRefusedAndTheCacheNotPoisoned) {
  auto records = good_;
  for (auto& r : records)
    if (r.name == "envlock-hello") r.sha256 = std::string(64, 'f');
  fs::remove_all(root_ / "pkgs");
  auto r = envlock("install -l " + q(write_lock(make_lockfile(records), "bad.lock")) + " -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("envlock-hello-1.0.0-0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ffffffff"), std::string::npos) << "the expected digest is shown: " << r.err;
  expect_intact();
  bool cached = false;
  for (const auto& e : fs::directory_iterator(root_ / "pkgs"))
    if (e.path().filename().string().starts_with("envlock-hello")) cached = cached || !e.path().string().ends_with(".lock");
  EXPECT_FALSE(cached) << "a mismatching archive must not stay in the package cache";
}

TEST_F(BadInput, TruncatedArchiveIsRefused) {
  const fs::path archive = channel_ / "linux-64/envlock-hello-1.0.0-0.conda";
  std::string data = slurp(archive);
  data.resize(data.size() / 2);
  spit(archive, data);
  auto records = good_;
  for (auto& r : records) {
    if (r.name != "envlock-hello") continue;
    r.sha256 = hash_bytes(data, HashAlgorithm::Sha256);
    r.md5.clear();
    r.size = data.size();
  }
  fs::remove_all(root_ / "pkgs");
  auto r = envlock("install -l " + q(write_lock(make_lockfile(records), "bad.lock")) + " -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("envlock-hello-1.0.0-0"), std::string::npos) << r.err;
  expect_intact();
}

TEST_F(BadInput, PrefixLongerThanTheBinaryPlaceholderIsRefused) {
  const fs::path deep = root_ / std::string(120, 'a') / std::string(120, 'b') / "env";
  auto r = envlock("install -l " + q(root_ / "good.lock") + " -p " + q(deep));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("envlock-hello-1.0.0-0: bin/envlock-hello"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("longer than the binary prefix placeholder"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(deep));
  expect_intact();
}

// A prefix is written into relocated shell scripts and into PATH (attack 30, F2): a path holding
// a quote, `$`, a backquote, `\\`, `;` or `:` made envlock-greet's `prefix="..."` line run part of
// the path as a command. Refused before anything is written, naming the character.
TEST_F(BadInput, APrefixHoldingShellQuotingCharactersIsRefused) {
  for (const std::string bad : {"\"", "'", "`", "$", "\\", ";", ":"}) {
    const fs::path odd = root_ / ("r" + bad + "touch x" + bad) / "env";
    SCOPED_TRACE(odd.string());
    spit(root_ / "odd-path", odd.string());  // passed through a file: no shell quoting to get right
    auto r = run_command(envlock_cmd() + " install -l " + q(root_ / "good.lock") + " -p \"$(cat " +
                             q(root_ / "odd-path") + ")\"",
                         env_);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "error: " + odd.string() + ": contains '" + bad + "'\n"
                     "the environment's relocated scripts would hold the path in their text, where it ends a quoted "
                     "string or runs a command, and PATH would split at ':'\n"
                     "hint: choose a prefix made of letters, digits, spaces and - _ . / + = @ , % ~\n");
    EXPECT_FALSE(fs::exists(odd.parent_path()));
  }
  expect_intact();
}

TEST_F(BadInput, LockfileWithoutThisPlatformIsRefused) {
  auto r = envlock("install -l " + q(write_lock(make_lockfile(good_, "osx-arm64"), "mac.lock")) + " -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is not locked for this host's platform linux-64"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("locked platforms: osx-arm64"), std::string::npos) << r.err;
  expect_intact();
}

// An environment the lockfile does not have is about what the lockfile holds, not the command
// line: exit 1, as conda's EnvironmentLocationNotFound (it exited 2, a usage error, while
// docs/install.md said 1; a new-user attack, session 11). --json says "incompatible", as for a
// platform the lockfile lacks.
TEST_F(BadInput, AnEnvironmentTheLockfileLacksIsAFailureNotAUsageError) {
  const fs::path lock = root_ / "good.lock";
  const std::string expected = "error: " + lock.string() + ": has no environment 'nosuchenv'\n"
                               "environments in it: default\nhint: pass one of them with -e\n";
  for (const std::string dry : {"", " --dry-run"}) {
    auto r = envlock("install" + dry + " -e nosuchenv -l " + q(lock) + " -p " + q(prefix_));
    EXPECT_EQ(r.exit_code, 1) << dry;
    EXPECT_EQ(r.out, "") << dry;
    EXPECT_EQ(r.err, expected) << dry;
  }
  auto j = envlock("install --json -e nosuchenv -l " + q(lock) + " -p " + q(prefix_));
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(j.out)["error"]["kind"], "incompatible") << j.out;
  const fs::path project = root_ / "project";
  spit(project / "envlock.yaml", "name: p\nchannels: [" + channel_.string() +
                                     "]\nplatforms: [linux-64]\ndependencies:\n  - envlock-hello\n");
  auto c = envlock("create --dry-run -e nosuchenv -f " + q(project / "envlock.yaml"));
  EXPECT_EQ(c.exit_code, 1) << c.err;
  EXPECT_EQ(c.out, "");
  EXPECT_EQ(c.err, "locked " + (project / "envlock.yaml").string() + " (dry run: " +
                       (project / "envlock.lock").string() + " not written)\nerror: " +
                       (project / "envlock.lock").string() +
                       ": has no environment 'nosuchenv'\nenvironments in it: default\nhint: pass one of them with -e\n");
  expect_intact();
}

// Every command that takes -e says the same of an environment the lockfile lacks, with the same
// exit code (1; docs/cli.md): export and probe exited 2 ("no environment 'x' in the lockfile",
// "the lockfile has no environment 'x'"), verify --reference and reference record too (issue 23).
// One function decides for all of them (pick_environment, envlock/reference.hpp).
TEST_F(BadInput, EveryCommandWithDashESaysTheSameOfAnEnvironmentTheLockfileLacks) {
  const fs::path lock = root_ / "good.lock";
  const std::string expected = "error: " + lock.string() + ": has no environment 'nosuchenv'\n"
                               "environments in it: default\nhint: pass one of them with -e\n";
  for (const std::string& args :
       {"export -e nosuchenv -l " + q(lock), "list -e nosuchenv -l " + q(lock), "probe -e nosuchenv -l " + q(lock),
        "verify --reference -e nosuchenv -l " + q(lock) + " -p " + q(prefix_), "verify -e nosuchenv -l " + q(lock) + " -p " + q(prefix_),
        "reference record -e nosuchenv -l " + q(lock) + " -p " + q(prefix_),
        "install -e nosuchenv -l " + q(lock) + " -p " + q(prefix_)}) {
    SCOPED_TRACE(args);
    auto r = envlock(args);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, expected);
    auto j = envlock("--json " + args);
    EXPECT_EQ(j.exit_code, 1);
    EXPECT_EQ(j.err, expected);
    EXPECT_EQ(nlohmann::json::parse(j.out)["error"]["kind"], "incompatible") << j.out;
  }
  // diff says the same (issue 23): `-e nosuchenv` of two one-environment lockfiles compared them
  // and said "no changes", exit 0. It exits 2, as diff does for every error (docs/review.md: 1
  // means only that --fail-on found a change), with the same words and JSON kind.
  for (const std::string& args : {"diff -e nosuchenv " + q(lock) + " " + q(lock),
                                  "diff -e nosuchenv --fail-on any " + q(lock) + " " + q(prefix_)}) {
    SCOPED_TRACE(args);
    auto r = envlock(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, expected);
    auto j = envlock("--json " + args);
    EXPECT_EQ(j.exit_code, 2);
    EXPECT_EQ(j.err, expected);
    EXPECT_EQ(j.out, "{\n  \"error\": {\n    \"detail\": \"environments in it: default\",\n    \"hint\": \"pass one of "
                     "them with -e\",\n    \"kind\": \"incompatible\",\n    \"message\": \"has no environment "
                     "'nosuchenv'\",\n    \"where\": " + nlohmann::json(lock.string()).dump() + "\n  }\n}\n");
  }
  // verify reads -e only with -l (its pip packages' wheel sha256 against the lockfile's, issue 20),
  // --reference or --clean: without them it ignored it and said "no drift", exit 0, whatever -e
  // named. A usage error now (as run and shell-hook refuse -e without a manifest).
  {
    auto r = envlock("verify -e default -p " + q(prefix_));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "error: verify: -e is read only with -l, --reference or --clean\n"
                     "hint: drop it to check the files of -p PREFIX against its records, or add -l LOCKFILE, --reference or "
                     "--clean\n");
  }
  expect_intact();
}

TEST_F(BadInput, HostThatDoesNotFitIsRefusedBeforeDownloading) {
  auto records = good_;
  for (auto& r : records)
    if (r.name == "envlock-hello") r.depends.push_back("__cuda >=12.0");
  const fs::path lock = write_lock(make_lockfile(records), "gpu.lock");
  fs::remove_all(root_ / "pkgs");
  auto r = envlock("install -l " + q(lock) + " -p " + q(prefix_), {{"CONDA_OVERRIDE_CUDA", "11.8"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error: envlock-hello 1.0.0 needs __cuda >=12.0; this host's driver supports CUDA 11.8"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(root_ / "pkgs") && !fs::is_empty(root_ / "pkgs")) << "nothing may be downloaded";
  expect_intact();
  auto forced = envlock("install --ignore-host -l " + q(lock) + " -p " + q(prefix_), {{"CONDA_OVERRIDE_CUDA", "11.8"}});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.err.find("warning: --ignore-host"), std::string::npos) << forced.err;
}

TEST_F(BadInput, RealPackageNeedingANewerGlibcIsRefused) {
  if (!have_corpus()) GTEST_SKIP() << "the shared corpus is absent (looked in " << kCorpus.string() << "; set ENVLOCK_SHARED_DIR)";
  const fs::path dir = root_ / "fake";
  corpus_channel("conda__conda/tests__data__test-recipes__", dir, {"linux-fake"});
  auto records = channel_records(dir, "linux-fake", "file://" + dir.string());
  auto r = envlock("install -l " + q(write_lock(make_lockfile(records), "glibc.lock")) + " -p " + q(prefix_),
                   {{"CONDA_OVERRIDE_GLIBC", "2.17"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("virtualdep-package 2.0 needs __glibc >=2.28; this host has glibc 2.17"), std::string::npos)
      << r.err;
  expect_intact();
}

TEST_F(BadInput, FailingPostLinkOfARealPackageLeavesTheEnvironment) {
  if (!have_corpus()) GTEST_SKIP() << "the shared corpus is absent (looked in " << kCorpus.string() << "; set ENVLOCK_SHARED_DIR)";
  const fs::path dir = root_ / "recipes";
  corpus_channel("conda__conda/tests__data__test-recipes__", dir, {"noarch"});
  auto records = good_;
  for (const auto& p : channel_records(dir, "noarch", "file://" + dir.string()))
    if (p.name == "failing_post_link") records.push_back(p);
  ASSERT_EQ(records.size(), good_.size() + 1);
  auto r = envlock("install -l " + q(write_lock(make_lockfile(records), "post.lock")) + " -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("failing_post_link-1.0-0: post-link script exited with status 1"), std::string::npos) << r.err;
  expect_intact();
}

// ---------------------------------------------------------------------------------------------
// SIGKILL at random moments: the prefix is always the old environment or the new one.

std::set<std::string> dists(const fs::path& prefix) {
  std::set<std::string> out;
  auto records = read_conda_meta(prefix);
  if (!records) return {"<unreadable: " + records.error().to_string() + ">"};
  for (const auto& r : *records) out.insert(r.dist_name());
  return out;
}

LockedPackage make_post_link_package(const fs::path& dir, const std::string& name, const std::string& post_link,
                                     const std::string& action = "post-link");

// The new environment runs post-link scripts (envlock-greet's, and one that takes a while, so
// kills land inside scripts too): a kill during them leaves the new tree marked pending, with the
// old one kept beside it for the next run to restore — still the old or the new, never a mix.
TEST_F(Cli, SigkillAtRandomMomentsLeavesTheOldOrTheNewEnvironment) {
  const fs::path channel = make_fixture_channel();
  auto linux = channel_records(channel, "linux-64", "file://" + channel.string());
  auto noarch = channel_records(channel, "noarch", "file://" + channel.string());
  std::vector<LockedPackage> old_set, new_set = linux;
  for (const auto& p : linux)
    if (p.name == "envlock-hello") old_set.push_back(p);
  new_set.insert(new_set.end(), noarch.begin(), noarch.end());
  new_set.push_back(make_post_link_package(root_ / "slow", "envlock-slowpost",
                                           "sleep 0.1\necho slowpost ran > \"$PREFIX/.messages.txt\"\n"));
  const fs::path old_lock = write_lock(make_lockfile(old_set), "old.lock");
  const fs::path new_lock = write_lock(make_lockfile(new_set), "new.lock");
  const fs::path prefix = root_ / "env";

  ASSERT_EQ(envlock("install -l " + q(new_lock) + " -p " + q(prefix)).exit_code, 0);  // warm the cache
  const auto new_dists = dists(prefix);
  ASSERT_EQ(envlock("install -l " + q(old_lock) + " -p " + q(prefix)).exit_code, 0);
  const auto old_dists = dists(prefix);
  ASSERT_NE(old_dists, new_dists);

  for (const auto& [k, v] : env_) ::setenv(k.c_str(), v.c_str(), 1);
  auto spawn = [&](const fs::path& lock) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
      ::execl(ENVLOCK_BINARY, ENVLOCK_BINARY, "install", "--copy", "-l", lock.c_str(), "-p", prefix.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  };
  // How long a full install takes here, so kills spread over its whole life.
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = spawn(new_lock);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto full_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();

  std::mt19937 rng(20261130);
  int saw_old = 0, saw_new = 0, saw_pending = 0, damaged = 0, saw_fresh_nothing = 0;
  for (int run = 0; run < 100; ++run) {
    const bool forward = run % 2 == 0;  // alternate old->new and new->old
    const fs::path target = forward ? new_lock : old_lock;
    const auto& from = forward ? old_dists : new_dists;
    const auto& to = forward ? new_dists : old_dists;
    if (dists(prefix) != from) {
      ASSERT_EQ(envlock("install --copy -l " + q(forward ? old_lock : new_lock) + " -p " + q(prefix)).exit_code, 0);
    }
    // The install repairs a damaged package cache entry as well (issue 23, "How it is proven"):
    // before each install of the new set, a file of each noarch package's extracted folder is
    // replaced by a shorter one (a new inode: the prefix's hard links keep theirs), so the install
    // extracts it again from its archive — and may be killed doing it.
    if (forward)
      for (const auto& p : noarch) {
        std::string dist = p.file_name;
        for (const char* ext : {".conda", ".tar.bz2"})
          if (dist.ends_with(ext)) dist.resize(dist.size() - std::string_view(ext).size());
        const fs::path entry = root_ / "pkgs" / dist;
        if (!fs::is_directory(entry)) continue;
        for (const auto& e : fs::recursive_directory_iterator(entry)) {
          const std::string rel = e.path().lexically_relative(entry).generic_string();
          if (!e.is_regular_file() || rel.starts_with("info/") || rel.find('/') == std::string::npos) continue;
          fs::remove(e.path());
          spit(e.path(), "damaged\n");
          ++damaged;
          break;
        }
      }
    // Every tenth run is a first install into a fresh prefix: killed, it leaves nothing or the
    // whole new tree (maybe pending), and the next run recovers it.
    const bool fresh = run % 10 == 4;
    if (fresh) fs::remove_all(prefix);
    // A first install an earlier run killed in its post-link scripts left no environment to go
    // back to: this run starts by rolling it back (moving the whole tree aside), so a kill here
    // may leave nothing, as after a fresh run (seen in CI, stop 32: run 5 after run 4).
    const bool after_first_pending = [&] {
      auto p = interrupted_install(prefix);
      return p.ok() && p->has_value() && (*p)->empty();
    }();
    std::uniform_int_distribution<long> delay(0, static_cast<long>(full_us * 1.2));
    pid = spawn(target);
    ::usleep(static_cast<useconds_t>(delay(rng)));
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    SCOPED_TRACE("run " + std::to_string(run) + (fresh ? " (first install)" : ""));
    if ((fresh || after_first_pending) && !fs::exists(fs::symlink_status(prefix))) {
      ++saw_fresh_nothing;
      continue;
    }
    ASSERT_TRUE(fs::is_directory(prefix)) << "the prefix vanished";
    const auto now = dists(prefix);
    ASSERT_TRUE(now == to || (!fresh && now == from)) << "a mix of old and new";
    // A child the killed envlock started (a post-link script, the driver check's child) may
    // still hold the prefix lock for a moment: "running right now" is then the truth. Wait for
    // it, as a user rerunning the command would, before judging the tree.
    auto pending = interrupted_install(prefix);
    for (int i = 0; i < 200 && !pending.ok() && pending.error().message.find("running right now") != std::string::npos; ++i) {
      ::usleep(50000);
      pending = interrupted_install(prefix);
    }
    ASSERT_TRUE(pending.ok()) << pending.error().to_string();
    if (pending->has_value()) {
      // Killed while post-link scripts ran (in this run or an earlier one the next run would roll
      // back): only the new set has them, and the old tree waits beside it.
      ASSERT_EQ(now, new_dists);
      if (!(*pending)->empty()) {
        EXPECT_EQ(dists(**pending), old_dists) << "the tree kept for the rollback";
      }
      ++saw_pending;
    }
    auto v = verify_prefix(prefix);
    ASSERT_TRUE(v.ok()) << v.error().to_string();
    ASSERT_TRUE(v->clean()) << v->drift.front().path << ": " << v->drift.front().reason;
    auto origin = read_prefix_origin(prefix);
    ASSERT_TRUE(origin.ok() && origin->has_value());
    EXPECT_EQ((*origin)->lockfile, (now == new_dists ? new_lock : old_lock).filename().string());
    (now == old_dists ? saw_old : saw_new)++;
  }
  for (const auto& [k, v] : env_) ::unsetenv(k.c_str());
  EXPECT_GT(saw_old, 0);
  EXPECT_GT(saw_new, 0);
  EXPECT_GT(saw_pending, 0) << "no kill landed in a post-link script";
  EXPECT_GT(damaged, 0) << "no cache entry was damaged";
  // The next run cleans whatever a killed run left beside the prefix, and the cache entries it
  // links from are whole (verify checks them against their info/paths.json: Kind::Cache).
  ASSERT_EQ(envlock("install -l " + q(new_lock) + " -p " + q(prefix)).exit_code, 0);
  auto final_check = verify_prefix(prefix);
  ASSERT_TRUE(final_check.ok());
  EXPECT_TRUE(final_check->clean()) << final_check->drift.front().path << ": " << final_check->drift.front().reason;
  for (const auto& e : fs::directory_iterator(prefix.parent_path()))
    EXPECT_EQ(e.path().filename().string().find("envlock-stage"), std::string::npos) << e.path();
}

// ---------------------------------------------------------------------------------------------
// What a newcomer found (issue 4): interrupted installs, symlinked and odd prefixes, lock files,
// damaged records, records edited by hand.

/// Builds a noarch .tar.bz2 package NAME-1.0-0 under `dir/noarch` whose post-link script (or
/// `action` script: pre-link, pre-unlink) is `post_link`, and returns its locked record.
LockedPackage make_post_link_package(const fs::path& dir, const std::string& name, const std::string& post_link,
                                     const std::string& action) {
  fs::create_directories(dir / "noarch");
  const fs::path script = dir / "make.py";
  spit(script, R"PY(
import io, json, sys, tarfile, hashlib
dest, name, post = sys.argv[1], sys.argv[2], open(sys.argv[3]).read().encode()
rel = "bin/." + name + "-" + sys.argv[4] + ".sh"
index = {"name": name, "version": "1.0", "build": "0", "build_number": 0, "depends": [],
         "subdir": "noarch", "noarch": "generic", "license": "MIT"}
paths = {"paths_version": 1, "paths": [{"_path": rel, "path_type": "hardlink",
         "sha256": hashlib.sha256(post).hexdigest(), "size_in_bytes": len(post)}]}
with tarfile.open(dest, "w:bz2") as tar:
    for path, data, mode in [("info/index.json", json.dumps(index).encode(), 0o644),
                             ("info/paths.json", json.dumps(paths).encode(), 0o644),
                             ("info/files", (rel + "\n").encode(), 0o644), (rel, post, 0o755)]:
        info = tarfile.TarInfo(path)
        info.size, info.mode, info.mtime = len(data), mode, 1767225600
        tar.addfile(info, io.BytesIO(data))
)PY");
  spit(dir / "post.sh", post_link);
  const std::string file = name + "-1.0-0.tar.bz2";
  auto r = run_command("python3 " + q(script) + " " + q(dir / "noarch" / file) + " " + name + " " + q(dir / "post.sh") + " " + action);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j{{"name", name}, {"version", "1.0"}, {"build", "0"}, {"build_number", 0},
                   {"depends", nlohmann::json::array()}, {"subdir", "noarch"}, {"noarch", "generic"},
                   {"sha256", *hash_file(dir / "noarch" / file, HashAlgorithm::Sha256)},
                   {"size", fs::file_size(dir / "noarch" / file)}};
  auto rec = PackageRecord::from_json(j);
  EXPECT_TRUE(rec.ok()) << (rec.ok() ? "" : rec.error().to_string());
  LockedPackage p;
  static_cast<PackageRecord&>(p) = *rec;
  p.file_name = file;
  p.channel = "file://" + dir.string();
  p.url = "file://" + dir.string() + "/noarch/" + file;
  p.layer = "default";
  return p;
}

TEST_F(BadInput, CtrlCDuringPostLinkRestoresTheOldEnvironmentAndExits130) {
  const fs::path started = root_ / "post-link-started";
  auto records = good_;
  records.push_back(make_post_link_package(root_ / "slow", "envlock-slowpost",
                                           "touch '" + started.string() + "'\nsleep 2\n"));
  const fs::path lock = write_lock(make_lockfile(records), "slow.lock");
  for (const auto& [k, v] : env_) ::setenv(k.c_str(), v.c_str(), 1);
  // Each case: where the signal goes (envlock alone, or the whole process group as Ctrl-C
  // sends it), which signal, and the exit status expected.
  struct Case {
    bool group;
    int sig;
    int code;
    fs::path prefix;
  };
  const fs::path fresh = root_ / "fresh";
  for (const Case& c : {Case{false, SIGINT, 130, prefix_}, Case{true, SIGINT, 130, prefix_},
                        Case{false, SIGTERM, 143, prefix_}, Case{true, SIGINT, 130, fresh}}) {
    SCOPED_TRACE(std::string(c.group ? "group " : "process ") + std::to_string(c.sig) + " " + c.prefix.string());
    fs::remove(started);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      const int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
      ::execl(ENVLOCK_BINARY, ENVLOCK_BINARY, "install", "-l", lock.c_str(), "-p", c.prefix.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 3000 && !fs::exists(started); ++i) ::usleep(10000);
    ASSERT_TRUE(fs::exists(started)) << "the post-link script never started";
    ::kill(c.group ? -pid : pid, c.sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status)) << "envlock was killed by the signal instead of rolling back";
    EXPECT_EQ(WEXITSTATUS(status), c.code);
    if (c.prefix == prefix_) {
      EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/envlock-pending"));
      EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/envlock-slowpost-1.0-0.json"));
      expect_intact();
    } else {
      EXPECT_FALSE(fs::exists(fresh)) << "nothing may be installed";
    }
  }
  for (const auto& [k, v] : env_) ::unsetenv(k.c_str());
  // Without a signal the same install completes.
  auto r = envlock("install -l " + q(lock) + " -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(prefix_ / "conda-meta/envlock-slowpost-1.0-0.json"));
}

// A SIGTERM to envlock alone (a CI runner's cancel, a supervisor) or a Ctrl-C to its process group
// while a pre-link script runs: the signal is passed on to the script's process group, envlock
// waits for it, changes nothing and exits 143 or 130, as conda and mamba stop (attack 20 I2:
// envlock exited 143 at once and left the script running, or 1 for the Ctrl-C). envlock is
// started from here with the default dispositions: a background job of a non-interactive shell
// would ignore SIGINT (and envlock keeps an ignored signal ignored, as conda does).
TEST_F(BadInput, SigtermOrCtrlCDuringPreLinkStopsTheScriptAndChangesNothing) {
  const fs::path started = root_ / "pre-link-started";
  auto records = good_;
  records.push_back(make_post_link_package(root_ / "slowpre", "envlock-slowpre",
                                           "set +x\necho \"$$\" > '" + started.string() + ".tmp'\nmv '" +
                                               started.string() + ".tmp' '" + started.string() + "'\nsleep 30\n",
                                           "pre-link"));
  const fs::path lock = write_lock(make_lockfile(records), "slowpre.lock");
  struct Case {
    bool group;
    int sig;
    int code;
    fs::path prefix;
  };
  const fs::path fresh = root_ / "fresh";
  for (const Case& c : {Case{false, SIGTERM, 143, fresh}, Case{true, SIGINT, 130, fresh},
                        Case{false, SIGTERM, 143, prefix_}, Case{true, SIGINT, 130, prefix_}}) {
    SCOPED_TRACE(std::string(c.group ? "group " : "process ") + std::to_string(c.sig) + " " + c.prefix.string());
    fs::remove(started);
    SpawnOptions spawn;
    spawn.argv = {ENVLOCK_BINARY, "install", "-l", lock.string(), "-p", c.prefix.string()};
    std::vector<std::string> environment;  // env_ first: getenv(3) takes the first of a name
    for (const auto& [k, v] : env_) environment.push_back(k + "=" + v);
    for (char** e = environ; *e != nullptr; ++e) environment.emplace_back(*e);
    spawn.environment = environment;
    spawn.group = ProcessGroup::Own;  // envlock leads its group, as a shell's job does
    spawn.signals = ChildSignals::Reset;
    pid_t script = 0, envlock_pid = 0;
    std::thread sender([&] {
      for (int i = 0; i < 3000 && !fs::exists(started); ++i) ::usleep(10000);
      std::ifstream in(started);
      in >> script;
      // The script's parent is envlock, whose group is its own process id.
      std::ifstream stat("/proc/" + std::to_string(script) + "/stat");
      std::string line;
      std::getline(stat, line);
      std::istringstream fields(line.substr(line.rfind(')') + 2));
      std::string state;
      fields >> state >> envlock_pid;
      if (envlock_pid > 0) ::kill(c.group ? -envlock_pid : envlock_pid, c.sig);
    });
    const auto t0 = std::chrono::steady_clock::now();
    const ChildResult r = run_process(spawn);
    sender.join();
    ASSERT_GT(script, 0) << "the pre-link script never started\n" << r.err;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20)) << "envlock waited for the script's sleep";
    EXPECT_EQ(r.exit_status, c.code) << r.ending() << "\n" << r.err;
    const std::string name = c.sig == SIGINT ? "SIGINT" : "SIGTERM";
    const std::string ending = c.sig == SIGINT ? "was killed by signal 2" : "was killed by signal 15";
    EXPECT_EQ(r.out, "");
    const std::size_t downloaded = c.group || c.prefix != fresh ? 0 : 1;  // the first case fetches slowpre
    EXPECT_EQ(r.err, "packages: " + std::to_string(records.size()) + " (" + std::to_string(downloaded) +
                         " downloaded, " + std::to_string(records.size() - downloaded) + " from the package cache)\n"
                         "error: envlock-slowpre-1.0-0: pre-link script interrupted by " + name + "\n"
                         "script: bin/.envlock-slowpre-pre-link.sh\n"
                         "the signal was passed on to it; it " + ending + "\n"
                         "output:\n"
                         "+ set +x\n"
                         "hint: nothing was installed; the prefix was not touched\n")
        << r.err;
    int alive = 0;
    for (int i = 0; i < 200 && (alive = ::kill(script, 0)) == 0; ++i) ::usleep(10000);
    EXPECT_NE(alive, 0) << "the pre-link script outlived envlock";
    if (c.prefix == prefix_) {
      expect_intact();
    } else {
      EXPECT_FALSE(fs::exists(fresh)) << "nothing may be installed";
      for (const auto& e : fs::directory_iterator(root_))
        EXPECT_EQ(e.path().filename().string().find(".fresh.envlock"), std::string::npos) << e.path();
    }
  }
}

// A SIGHUP (a terminal or ssh hangup, a CI agent's stop) while a post-link script runs does what a
// SIGTERM does: it is passed on to the script's process group at once, the previous environment is
// restored and envlock exits 129 (attack 30, F11: SIGHUP stayed blocked while the script ran, so
// envlock waited for the script to end by itself, which then wrote into the tree that was
// restored). What the script runs gets the default dispositions of SIGHUP and SIGQUIT whatever
// envlock blocked or inherited ignored.
TEST_F(BadInput, SighupDuringPostLinkStopsTheScriptRestoresTheOldEnvironmentAndExits129) {
  const fs::path started = root_ / "post-link-started", dispositions = root_ / "post-link-dispositions";
  auto records = good_;
  records.push_back(make_post_link_package(
      root_ / "hup", "envlock-huppost",
      "set +x\nignored=0x$(sed -n 's/^SigIgn:\\t//p' /proc/self/status)\necho $((ignored & 0x7fffffff)) > '" +
          dispositions.string() + "'\necho \"$$\" > '" +
          started.string() + ".tmp'\nmv '" + started.string() + ".tmp' '" + started.string() +
          "'\nsleep 30\necho late > \"$PREFIX/share/LATE-MARKER\"\n"));
  const fs::path lock = write_lock(make_lockfile(records), "hup.lock");
  for (const bool group : {false, true}) {
    SCOPED_TRACE(group ? "to the group" : "to envlock");
    fs::remove(started);
    SpawnOptions spawn;
    spawn.argv = {ENVLOCK_BINARY, "install", "-l", lock.string(), "-p", prefix_.string()};
    std::vector<std::string> environment;  // env_ first: getenv(3) takes the first of a name
    for (const auto& [k, v] : env_) environment.push_back(k + "=" + v);
    for (char** e = environ; *e != nullptr; ++e) environment.emplace_back(*e);
    spawn.environment = environment;
    spawn.group = ProcessGroup::Own;  // envlock leads its group, as a shell's job does
    spawn.signals = ChildSignals::Reset;
    pid_t script = 0, envlock_pid = 0;
    std::thread sender([&] {
      for (int i = 0; i < 3000 && !fs::exists(started); ++i) ::usleep(10000);
      std::ifstream in(started);
      in >> script;
      std::ifstream stat("/proc/" + std::to_string(script) + "/stat");
      std::string line;
      std::getline(stat, line);
      std::istringstream fields(line.substr(line.rfind(')') + 2));
      std::string state;
      fields >> state >> envlock_pid;
      if (envlock_pid > 0) ::kill(group ? -envlock_pid : envlock_pid, SIGHUP);
    });
    const auto t0 = std::chrono::steady_clock::now();
    const ChildResult r = run_process(spawn);
    sender.join();
    ASSERT_GT(script, 0) << "the post-link script never started\n" << r.err;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20)) << "envlock waited for the script's sleep";
    EXPECT_EQ(r.exit_status, 129) << r.ending() << "\n" << r.err;
    EXPECT_EQ(r.out, "");
    const std::size_t downloaded = group ? 0 : 1;  // the first case fetches huppost
    EXPECT_EQ(r.err, "packages: " + std::to_string(records.size()) + " (" + std::to_string(downloaded) +
                         " downloaded, " + std::to_string(records.size() - downloaded) + " from the package cache)\n"
                         "error: " + prefix_.string() + ": install interrupted by SIGHUP\n"
                         "hint: the previous environment was restored\n")
        << r.err;
    // No signal 1-31 ignored in a program the script runs (SIGQUIT was, when envlock's caller
    // ignored it; bash itself ignores SIGQUIT while it runs a script, and gives programs it starts
    // their default back, so /proc/$$/status of the script's own shell shows it ignored).
    EXPECT_EQ(slurp(dispositions), "0\n");
    int alive = 0;
    for (int i = 0; i < 200 && (alive = ::kill(script, 0)) == 0; ++i) ::usleep(10000);
    EXPECT_NE(alive, 0) << "the post-link script outlived envlock";
    EXPECT_FALSE(fs::exists(prefix_ / "share/LATE-MARKER"));
    EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/envlock-pending"));
    EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/envlock-huppost-1.0-0.json"));
    expect_intact();
  }
}

TEST_F(BadInput, AnInterruptedInstallIsReportedByVerifyAndListAndRolledBackByInstallAndRemove) {
  // What a kill during post-link leaves: the new tree marked pending, the old one beside it.
  auto interrupt = [&] {
    const fs::path stage = prefix_.parent_path() / ".env.envlock-stage-1-2";
    EXPECT_EQ(run_command("cp -a " + q(prefix_) + " " + q(stage)).exit_code, 0);
    spit(prefix_ / "bin/half-done", "new tree\n");
    spit(prefix_ / "conda-meta/envlock-pending",
         R"({"previous": [".env.envlock-stage-1-2", ".env.envlock-old-1"]})" "\n");
    return stage;
  };
  const fs::path stage = interrupt();
  for (const char* cmd : {"verify", "list"}) {
    auto r = envlock(std::string(cmd) + " -p " + q(prefix_));
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_NE(r.err.find("an install was interrupted"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the old environment is kept in " + stage.string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("run `envlock install` again"), std::string::npos) << r.err;
  }
  auto again = envlock("install -l " + q(root_ / "good.lock") + " -p " + q(prefix_));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  // A file written into the unfinished tree that no package owns is kept in the restored one,
  // and named (session 10: the rollback deleted what the user wrote after the kill).
  EXPECT_EQ(slurp(prefix_ / "bin/half-done"), "new tree\n");
  EXPECT_NE(again.err.find("warning: rolled back an update that did not finish; kept 1 file(s) written into it since, "
                           "which no package owns: bin/half-done\n"),
            std::string::npos)
      << again.err;
  EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/envlock-pending"));
  EXPECT_FALSE(fs::exists(stage));
  fs::remove(prefix_ / "bin/half-done");
  EXPECT_EQ(envlock("verify -p " + q(prefix_)).exit_code, 0);

  interrupt();
  auto rm = envlock("remove -p " + q(prefix_));
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_FALSE(fs::exists(prefix_));
  for (const auto& e : fs::directory_iterator(root_))
    EXPECT_EQ(e.path().filename().string().find(".env.envlock"), std::string::npos) << e.path();
}

TEST_F(BadInput, PrefixesThatAreLinksEmptyOrInsideAnEnvironmentAreRefusedWritingNothing) {
  const fs::path link = root_ / "link";
  fs::create_directory_symlink(prefix_, link);
  auto listing = [&](const fs::path& dir) {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
    return names;
  };
  const auto before_root = listing(root_);
  const auto before_env = listing(prefix_);
  const std::string good = q(root_ / "good.lock");
  fs::create_directories(root_ / "stuff");
  spit(root_ / "stuff/notes.txt", "mine\n");
  spit(root_ / "a-file", "x");
  struct Refusal {
    std::string args;
    std::string says;
  };
  fs::remove_all(root_ / "pkgs");
  for (const Refusal& c : std::vector<Refusal>{
           {"remove -p " + q(link), "is a symbolic link (to " + prefix_.string() + ")"},
           {"install -l " + good + " -p " + q(link), "is a symbolic link (to " + prefix_.string() + ")"},
           {"remove -p /", "is the filesystem root"},
           {"remove -p " + q(prefix_ / "bin"), "was not made by envlock"},
           {"install -l " + good + " -p " + q(prefix_ / "sub"), "is inside the environment " + prefix_.string()},
           // Deeper than a direct child: still inside (its files would be the outer one's extras).
           {"install -l " + good + " -p " + q(prefix_ / "lib/sub2"), "is inside the environment " + prefix_.string()},
           {"install -l " + good + " -p " + q(prefix_ / "share/a/b/c"), "is inside the environment " + prefix_.string()},
           {"install -l " + good + " -p " + q(root_ / "stuff"), "is a non-empty folder that is not an environment"},
           {"install -l " + good + " -p " + q(root_ / "a-file"), "exists and is not a directory"},
           {"install -l " + good + " -p ''", "-p/--prefix: is empty"},
           {"remove -p ''", "-p/--prefix: is empty"},
           {"install -l " + q(root_ / "missing.lock") + " -p ''", "-p/--prefix: is empty"},
           // No #! line could name it; the newline is shown escaped (an attack, session 8).
           {"install -l " + good + " -p " + q(root_ / "a\nb"),
            "error: " + root_.string() + "/a\\x0ab: contains a control character (newline, tab, ...)\n"},
       }) {
    auto r = envlock(c.args);
    // docs/cli.md: only a malformed command line (an empty -p) is a usage error (2); a prefix
    // that exists but is unfit is a failure (1).
    const int expected =
        c.says.find("-p/--prefix: is empty") != std::string::npos || c.says.find("control character") != std::string::npos ? 2 : 1;
    EXPECT_EQ(r.exit_code, expected) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.find("internal"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(envlock("verify -p " + q(link)).exit_code, 0) << "read-only commands follow a link";
  EXPECT_FALSE(fs::exists("/..envlock-lock") && fs::last_write_time("/..envlock-lock") > fs::last_write_time(link));
  EXPECT_EQ(listing(prefix_), before_env) << "nothing may be written inside the environment";
  EXPECT_FALSE(fs::exists(prefix_ / "lib/sub2"));
  EXPECT_FALSE(fs::exists(prefix_ / "share/a"));
  auto after_root = listing(root_);
  after_root.erase("stuff");
  after_root.erase("a-file");
  after_root.erase("link");
  auto expected_root = before_root;
  expected_root.erase("link");
  expected_root.erase("pkgs");
  after_root.erase("pkgs");
  EXPECT_EQ(after_root, expected_root) << "no lock file beside a refused prefix";
  EXPECT_FALSE(fs::exists(root_ / "pkgs") && !fs::is_empty(root_ / "pkgs")) << "nothing may be downloaded";
  expect_intact();
  // After a successful remove, no lock file stays beside the prefix.
  ASSERT_EQ(envlock("remove -p " + q(prefix_)).exit_code, 0);
  EXPECT_FALSE(fs::exists(root_ / ".env.envlock-lock"));
}

// A prefix that is a mount point (issue 23, M6): the swap's rename failed with EBUSY after all the
// work, and the lock file stayed beside a prefix that held no environment. conda and rattler
// (pixi) change a prefix in place, so a mount point works there; envlock renames a tree into
// place, so it refuses before any work, saying what to do, and leaves nothing beside it.
TEST_F(BadInput, APrefixThatIsAMountPointIsRefusedBeforeAnyWorkLeavingNoLock) {
  const fs::path mnt = root_ / "mnt";
  fs::create_directories(mnt);
  // Mounting needs CAP_SYS_ADMIN in this mount namespace (root on a machine, not every container).
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") != 0) GTEST_SKIP() << "cannot mount here (needs CAP_SYS_ADMIN)";
  const bool bound = ::mount(prefix_.c_str(), prefix_.c_str(), nullptr, MS_BIND, nullptr) == 0;
  fs::remove_all(root_ / "pkgs");
  const std::string good = q(root_ / "good.lock");
  auto fresh = envlock("install -l " + good + " -p " + q(mnt));
  auto update = envlock("install -l " + good + " -p " + q(prefix_));
  auto removed = envlock("remove -p " + q(prefix_));
  std::set<std::string> beside;
  for (const auto& e : fs::directory_iterator(root_)) beside.insert(e.path().filename().string());
  const bool mnt_empty = fs::is_empty(mnt);
  ::umount2(mnt.c_str(), MNT_DETACH);
  if (bound) ::umount2(prefix_.c_str(), MNT_DETACH);
  auto refusal = [](const fs::path& p) {
    return "error: " + p.string() + ": is a mount point (another filesystem than its parent folder)\n"
           "envlock builds an environment beside its prefix and renames it into place (and moves it aside to "
           "remove it), which cannot be done to a mount point; nothing was changed\n"
           "hint: use a folder inside the mount as the prefix (for example " + (p / "env").string() +
           "), or mount the filesystem one folder up\n";
  };
  EXPECT_EQ(fresh.exit_code, 1);
  EXPECT_EQ(fresh.out, "");
  EXPECT_EQ(fresh.err, refusal(mnt));
  EXPECT_TRUE(mnt_empty);
  EXPECT_EQ(beside.count(".mnt.envlock-lock"), 0u) << "no stale lock file beside the refused prefix";
  EXPECT_EQ(beside.count("pkgs") && !fs::is_empty(root_ / "pkgs"), false) << "refused before any download";
  if (bound) {
    EXPECT_EQ(update.exit_code, 1);
    EXPECT_EQ(update.out, "");
    EXPECT_EQ(update.err, refusal(prefix_));
    EXPECT_EQ(removed.exit_code, 1);
    EXPECT_EQ(removed.out, "");
    EXPECT_EQ(removed.err, refusal(prefix_));
  }
  expect_intact();
}

// Attack 20, L5: an environment made at `real/.e5.envlock-stage-999999-7` was deleted without a
// word by the next install of `real/e5`, as a leftover. Names of the form .<name>.envlock-… are
// envlock's own and refused as a prefix (exit 2, before anything is written); a leftover that is
// deleted is named. L9: a prefix through /proc/self/cwd was written into the files as given,
// naming another folder for every process; refused, naming the real folder.
TEST_F(BadInput, PrefixesNamedLikeLeftoversOrThroughProcAreRefusedAndLeftoversNamed) {
  const std::string good = q(root_ / "good.lock");
  const fs::path inner = root_ / "real" / ".e5.envlock-stage-999999-7";
  auto named = envlock("install -l " + good + " -p " + q(inner));
  EXPECT_EQ(named.exit_code, 2);
  EXPECT_EQ(named.out, "");
  EXPECT_EQ(named.err, "error: " + inner.string() +
                           ": has a name of the form .<name>.envlock-…, which envlock gives the folders it keeps beside "
                           "an environment\nan install beside it would take it for a tree an earlier run left, and "
                           "delete it\nhint: choose another name for the environment folder\n");
  EXPECT_FALSE(fs::exists(root_ / "real"));
  // One left there anyway (by an older envlock, or by hand) is deleted by the next install of
  // real/e5, with a line naming it.
  fs::create_directories(inner / "conda-meta");
  auto beside = envlock("install -l " + good + " -p " + q(root_ / "real/e5"));
  EXPECT_EQ(beside.exit_code, 0) << beside.err;
  EXPECT_EQ(beside.err, "packages: 2 (0 downloaded, 2 from the package cache)\n"
                        "warning: deleted 1 tree(s) that an earlier envlock run left beside " +
                            (root_ / "real/e5").string() +
                            " (killed, or a previous environment that could not all be deleted): "
                            ".e5.envlock-stage-999999-7\n");
  EXPECT_FALSE(fs::exists(inner));

  const fs::path cwd = fs::current_path();
  const fs::path through = fs::path("/proc/self/cwd") / root_.lexically_relative("/") / "e4";
  const fs::path via_link = root_ / "here";
  fs::create_symlink("/proc/self/cwd", via_link);
  for (const fs::path& p : {through, via_link / "e4"}) {
    auto r = envlock("install -l " + good + " -p " + q(p));
    EXPECT_EQ(r.exit_code, 2) << p;
    EXPECT_EQ(r.out, "") << p;
    EXPECT_EQ(r.err, "error: " + p.string() +
                         ": leads through /proc, where a path names another folder for every process (or none)\n"
                         "the environment's files and conda-meta/envlock record the prefix, which must name one "
                         "folder\nhint: pass the real folder with -p (here " +
                         fs::weakly_canonical(p).string() + ")\n")
        << p;
  }
  EXPECT_FALSE(fs::exists(root_ / "e4"));
  EXPECT_FALSE(fs::exists(cwd / "e4"));
  expect_intact();
}

// Recovery applies install's mount-point rule (issue 23): a tree beside the prefix named like an
// earlier run's leftover but mounted (a tmpfs, a bind-mounted dataset) was emptied by the next
// install's clean-up — its files deleted on the mounted filesystem. Refused, nothing changed.
TEST_F(BadInput, ALeftoverBesideThePrefixThatIsAMountPointIsRefusedNeverEmptied) {
  const fs::path mnt = prefix_.parent_path() / ".env.envlock-stage-1-1";
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") != 0) {
    fs::remove_all(mnt);
    GTEST_SKIP() << "cannot mount here (needs CAP_SYS_ADMIN)";
  }
  spit(mnt / "dataset/part-0", "data\n");
  auto r = envlock("install -l " + q(root_ / "good.lock") + " -p " + q(prefix_));
  auto rm = envlock("remove -p " + q(prefix_));
  const bool kept = fs::exists(mnt / "dataset/part-0");
  ::umount2(mnt.c_str(), MNT_DETACH);
  fs::remove_all(mnt);
  const std::string refusal = "error: " + mnt.string() + ": is a mount point named like a tree an earlier envlock run "
                              "left beside " + prefix_.string() +
                              "\nrecovering the environment renames and deletes such trees, which envlock never does "
                              "to a mount point; nothing was changed\nhint: unmount it (or rename it), then run the "
                              "command again\n";
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "packages: 2 (0 downloaded, 2 from the package cache)\n" + refusal);
  EXPECT_EQ(rm.exit_code, 1);
  EXPECT_EQ(rm.out, "");
  EXPECT_EQ(rm.err, refusal);
  EXPECT_TRUE(kept) << "the mounted filesystem's files were deleted";
  expect_intact();
}

// Attack 20, L4: `envlock create … | head` died of SIGPIPE (exit 141, no message) where
// docs/cli.md promises exit 1 and `cannot write output`. stdout here is a pipe whose reader is
// gone before envlock writes: the install commits (an unchanged environment), then the report
// cannot be written, said so, exit 1.
TEST_F(BadInput, AClosedPipeOnStdoutIsAnErrorWithAMessageNotASignal) {
  for (const auto& [k, v] : env_) ::setenv(k.c_str(), v.c_str(), 1);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);  // the reader is gone
  const fs::path err = root_ / "install.err";
  const std::string lock = (root_ / "good.lock").string();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int errfd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fds[1], 1);
    ::dup2(errfd, 2);
    ::execl(ENVLOCK_BINARY, ENVLOCK_BINARY, "install", "-l", lock.c_str(), "-p", prefix_.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 1);
  EXPECT_EQ(slurp(err), "packages: 2 (0 downloaded, 2 from the package cache)\n"
                        "error: cannot write output: Broken pipe\n"
                        "hint: check that the disk or pipe stdout goes to has room and is still open\n");
  auto v = verify_prefix(prefix_);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->clean());
  EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/envlock-pending"));
}

TEST_F(BadInput, ADamagedRecordDoesNotStopInstallOrRemove) {
  const fs::path record = prefix_ / "conda-meta/envlock-hello-1.0.0-0.json";
  ASSERT_TRUE(fs::exists(record));
  spit(record, "{\"name\": ");
  auto r = envlock("install -l " + q(root_ / "good.lock") + " -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("conda-meta/envlock-hello-1.0.0-0.json is not valid JSON"), std::string::npos) << r.err;
  EXPECT_EQ(envlock("verify -p " + q(prefix_)).exit_code, 0) << "the install wrote the record anew";
  spit(record, "garbage");
  auto rm = envlock("remove -p " + q(prefix_));
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_NE(rm.err.find("envlock-hello-1.0.0-0.json"), std::string::npos) << rm.err;
  EXPECT_FALSE(fs::exists(prefix_));
}

TEST_F(BadInput, ARecordEditedToAnotherVersionIsRefused) {
  auto records = good_;
  for (auto& r : records)
    if (r.name == "envlock-hello") r.version = *Version::parse("9.9.9");
  const fs::path edited = write_lock(make_lockfile(records), "edited.lock");
  auto r = envlock("install -l " + q(edited) + " -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 1);
  // The record's identity no longer matches the archive its URL names: refused by the lockfile
  // reader, at the record's `version`, before anything is fetched (issue 17, M4; the archive's own
  // info/index.json would refuse it too, after the download).
  EXPECT_NE(r.err.find("error: " + edited.string() + ":14:22: package 'envlock-hello': `version` '9.9.9' disagrees with the "
                       "file its URL names, envlock-hello-1.0.0-0.conda (version '1.0.0')\n"),
            std::string::npos)
      << r.err;
  expect_intact();
  EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/envlock-hello-9.9.9-0.json"));
}

TEST_F(BadInput, AFileEditedThroughAHardLinkIsNotLinkedIntoTheNextEnvironment) {
  const std::string rel = "share/envlock-hello/greeting.txt";
  const std::string original = slurp(prefix_ / rel);
  ASSERT_FALSE(original.empty());
  auto installed = [&](const std::string& name, const std::string& flags = "") {
    auto r = envlock("install " + flags + " -l " + q(root_ / "good.lock") + " -p " + q(root_ / name));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return slurp(root_ / name / rel);
  };
  {  // Edited in place (same inode): the package cache's copy changes too, the hazard documented.
    std::ofstream(prefix_ / rel, std::ios::binary | std::ios::trunc) << original << "edited\n";
  }
  EXPECT_EQ(slurp(root_ / "pkgs/envlock-hello-1.0.0-0" / rel), original + "edited\n");
  EXPECT_EQ(installed("second"), original) << "a cached file of another size is extracted again";
  EXPECT_EQ(envlock("verify -p " + q(root_ / "second")).exit_code, 0);
  // conda-meta records size and sha256 both from paths.json, so verify sees the edit.
  auto v = envlock("verify -p " + q(prefix_) + " --json");
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_NE(v.out.find(rel), std::string::npos) << v.out;
  // An edit that keeps the size is found only by --verify-cache (every byte hashed).
  const fs::path cached = root_ / "pkgs/envlock-hello-1.0.0-0" / rel;
  std::string same = slurp(cached);
  same[0] = same[0] == 'X' ? 'Y' : 'X';
  {
    std::ofstream(cached, std::ios::binary | std::ios::trunc) << same;
  }
  EXPECT_EQ(installed("third", "--verify-cache"), original);
  EXPECT_EQ(envlock("verify -p " + q(root_ / "third")).exit_code, 0);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Issue 23: unverified content, virtual packages as records, local files outside the lockfile's
// folder, foreign conda environments, dry runs, terminal-safe messages, conda's test recipes.

TEST_F(BadInput, ARecordWithoutAHashIsRefusedUnlessAllowUnverified) {
  auto records = good_;
  for (auto& r : records) r.sha256.clear(), r.md5.clear();
  const fs::path lock = write_lock(make_lockfile(records), "nohash.lock");
  fs::remove_all(root_ / "pkgs");
  const fs::path fresh = root_ / "fresh";
  auto r = envlock("install -l " + q(lock) + " -p " + q(fresh));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "error: envlock-hello-1.0.0-0: has neither a sha256 nor an md5 in the lockfile, so its archive cannot be "
            "verified\nrecords without a hash: envlock-hello-1.0.0-0, python-" +
                std::string(records[1].version.to_string()) + "-" + records[1].build +
                "\nnothing was downloaded; the prefix was not touched\nhint: lock again (envlock records sha256 and "
                "md5), or pass --allow-unverified to install them unchecked\n");
  EXPECT_FALSE(fs::exists(fresh));
  EXPECT_FALSE(fs::exists(root_ / "pkgs") && !fs::is_empty(root_ / "pkgs")) << "nothing may be downloaded";
  auto allowed = envlock("install --allow-unverified -l " + q(lock) + " -p " + q(fresh));
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_NE(allowed.err.find("warning: --allow-unverified: installing 2 package(s) whose archives cannot be verified "
                             "(no sha256 or md5): envlock-hello-1.0.0-0, python-"),
            std::string::npos)
      << allowed.err;
  // md5 alone is a hash conda verifies with: no flag needed.
  records = good_;
  for (auto& rec : records) rec.sha256.clear();
  EXPECT_EQ(envlock("install -l " + q(write_lock(make_lockfile(records), "md5.lock")) + " -p " + q(root_ / "md5")).exit_code, 0);
  expect_intact();
}

TEST_F(BadInput, AVirtualPackageAsARecordIsNeverInstalled) {
  auto records = good_;
  LockedPackage v = records[0];
  v.name = "__cuda";
  v.version = *Version::parse("12.0");  // as its file name says (the lockfile reader checks it)
  v.file_name = "__cuda-12.0-0.conda";
  v.url = "file://" + channel_.string() + "/linux-64/__cuda-12.0-0.conda";
  records.push_back(v);
  const fs::path lock = write_lock(make_lockfile(records), "virtual.lock");
  for (const std::string flags : {"", "--allow-unverified --force --ignore-host "}) {
    auto r = envlock("install " + flags + "-l " + q(lock) + " -p " + q(prefix_));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err, "error: __cuda-" + v.version.to_string() + "-" + v.build +
                         ": is a virtual package (__cuda), which describes the host and is never installed\nlockfile: " +
                         lock.string() +
                         "\nhint: remove the record from the lockfile's packages (virtual packages belong in its "
                         "virtual_packages), or lock again\n");
  }
  expect_intact();
}

TEST_F(BadInput, ALocalFileOutsideTheLockfilesFolderIsNamedInAWarning) {
  const fs::path elsewhere = root_ / "review" / "pr-42";
  fs::create_directories(elsewhere);
  const fs::path lock = elsewhere / "envlock.lock";
  ASSERT_TRUE(make_lockfile(good_).write(lock).ok());
  auto r = envlock("install -l " + q(lock) + " -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> names;
  for (const auto& rec : good_) names.push_back(rec.dist_name());
  std::sort(names.begin(), names.end());
  EXPECT_NE(r.err.find("warning: " + std::to_string(names.size()) + " package(s) come from file://" + channel_.string() +
                       ", a local folder outside the lockfile's folder " + elsewhere.string() +
                       " (check that it is the one meant): " + names[0] + ", " + names[1] + "\n"),
            std::string::npos)
      << r.err;
  auto inside = envlock("install -l " + q(root_ / "good.lock") + " -p " + q(prefix_));
  EXPECT_EQ(inside.err.find("outside the lockfile's folder"), std::string::npos) << inside.err;
}

TEST_F(BadInput, ACondaEnvironmentEnvlockDidNotMakeNeedsForce) {
  const fs::path theirs = root_ / "conda-env";
  spit(theirs / "conda-meta/history", "==> 2024-01-01 00:00:00 <==\n");
  spit(theirs / "bin/mine", "user file\n");
  const std::string good = q(root_ / "good.lock");
  auto r = envlock("install -l " + good + " -p " + q(theirs));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + theirs.string() +
                       ": holds a conda environment that envlock did not make (conda-meta/ without conda-meta/envlock)\n"
                       "installing would replace its packages with the lockfile's and drop the ones it lacks\n"
                       "hint: choose another prefix, or pass --force to make it the lockfile's environment\n");
  EXPECT_FALSE(fs::exists(theirs / "bin/envlock-hello"));
  EXPECT_FALSE(fs::exists(root_ / ".conda-env.envlock-lock"));
  auto forced = envlock("install --force -l " + good + " -p " + q(theirs));
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(slurp(theirs / "bin/mine"), "user file\n");
  EXPECT_EQ(run_command(q(theirs / "bin/envlock-hello")).exit_code, 0);
}

TEST_F(BadInput, DryRunsPrintTheTransactionAndTouchNothing) {
  auto records = channel_records(channel_, "noarch", "file://" + channel_.string());
  auto with_noarch = good_;
  with_noarch.insert(with_noarch.end(), records.begin(), records.end());
  const fs::path lock = write_lock(make_lockfile(with_noarch), "more.lock");
  fs::remove_all(root_ / "pkgs");
  auto r = envlock("install --dry-run -l " + q(lock) + " -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::string expected = "dry run: environment 'default' (linux-64) in " + prefix_.string() +
                         " would change as follows; nothing was changed\n";
  std::vector<std::string> added;
  for (const auto& p : records) added.push_back(p.dist_name());
  std::sort(added.begin(), added.end());
  for (const auto& d : added) expected += "  added      " + d + "\n";
  std::vector<std::string> kept;
  for (const auto& p : good_) kept.push_back(p.dist_name());
  std::sort(kept.begin(), kept.end());
  for (const auto& d : kept) expected += "  unchanged  " + d + "\n";
  expected += "  " + std::to_string(added.size()) + " added, 0 removed, 0 changed, " + std::to_string(kept.size()) +
              " unchanged\n";
  EXPECT_EQ(r.out, expected);
  EXPECT_EQ(r.err, "");
  auto j = envlock("install --dry-run --json -l " + q(lock) + " -p " + q(root_ / "new-env"));
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto json = nlohmann::json::parse(j.out);
  EXPECT_EQ(json["dry_run"], true);
  EXPECT_EQ(json["added"].size(), with_noarch.size());
  EXPECT_FALSE(fs::exists(root_ / "new-env"));
  EXPECT_FALSE(fs::exists(root_ / ".new-env.envlock-lock"));
  EXPECT_FALSE(fs::exists(root_ / "pkgs") && !fs::is_empty(root_ / "pkgs")) << "nothing may be downloaded";

  auto rm = envlock("remove --dry-run -p " + q(prefix_));
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  std::string rm_expected = "dry run: " + prefix_.string() + " would be removed; nothing was changed\n";
  for (const auto& d : kept) rm_expected += "  removed    " + d + "\n";
  rm_expected += "  " + std::to_string(kept.size()) + " removed\n";
  EXPECT_EQ(rm.out, rm_expected);
  expect_intact();

  // create --dry-run neither writes the lockfile nor the environment.
  const fs::path project = root_ / "project";
  spit(project / "envlock.yaml", "name: p\nchannels: [" + channel_.string() +
                                     "]\nplatforms: [linux-64]\ndependencies:\n  - envlock-hello\n");
  auto c = envlock("create --dry-run -f " + q(project / "envlock.yaml"));
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("  added      envlock-hello-1.0.0-0\n"), std::string::npos) << c.out;
  EXPECT_FALSE(fs::exists(project / "envlock.lock"));
  EXPECT_FALSE(fs::exists(project / ".envlock"));
}

/// The `warning: ` lines of `err`, in order.
std::vector<std::string> warning_lines(const std::string& err) {
  std::vector<std::string> out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("warning: ")) out.push_back(line);
  return out;
}

// A dry run says what the install would say about the files no package owns: the same warnings
// (a user's file a package replaces, a user's file where a package makes a folder) and the same
// refusal (a user's files below a path a package makes a file), from the one function the install
// uses (classify_unowned/unowned_outcome, over the packages' plans); the dry run printed none of
// them (issue 23). The packages must be in the package cache; nothing is downloaded.
TEST_F(BadInput, ADryRunWarnsAndRefusesAsTheInstallWouldAboutFilesNoPackageOwns) {
  auto noarch = channel_records(channel_, "noarch", "file://" + channel_.string());
  auto all = good_;
  all.insert(all.end(), noarch.begin(), noarch.end());
  const fs::path lock = write_lock(make_lockfile(all), "more.lock");
  ASSERT_EQ(envlock("install -l " + q(lock) + " -p " + q(root_ / "filler")).exit_code, 0);  // fills the cache
  std::string greet, python_xy;
  for (const auto& r : all) {
    if (r.name == "envlock-greet") greet = r.dist_name();
    if (r.name == "python") python_xy = r.version.to_string().substr(0, r.version.to_string().rfind('.'));
  }
  ASSERT_FALSE(greet.empty());
  const std::string demo_folder = "lib/python" + python_xy + "/site-packages/envlock_demo";
  ASSERT_TRUE(fs::is_directory(root_ / "filler" / demo_folder));
  spit(prefix_ / "bin/envlock-greet", "mine\n");
  spit(prefix_ / demo_folder, "mine\n");
  spit(prefix_ / "notes.txt", "kept, no warning\n");
  const std::vector<std::string> warnings = {
      "warning: " + greet + " replaced 1 path(s) no package owned (yours, or another package manager's; conda warns the "
      "same way: UnknownPackageClobberError): bin/envlock-greet",
      "warning: 1 path(s) no package owned are folders of the new packages now, and were not kept: " + demo_folder};

  auto dry = envlock("install --dry-run -l " + q(lock) + " -p " + q(prefix_));
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  std::string expected = "dry run: environment 'default' (linux-64) in " + prefix_.string() +
                         " would change as follows; nothing was changed\n";
  std::vector<std::string> added, kept;
  for (const auto& p : noarch) added.push_back(p.dist_name());
  for (const auto& p : good_) kept.push_back(p.dist_name());
  std::sort(added.begin(), added.end());
  std::sort(kept.begin(), kept.end());
  for (const auto& d : added) expected += "  added      " + d + "\n";
  for (const auto& d : kept) expected += "  unchanged  " + d + "\n";
  expected += "  " + std::to_string(added.size()) + " added, 0 removed, 0 changed, " + std::to_string(kept.size()) +
              " unchanged\n";
  EXPECT_EQ(dry.out, expected);
  EXPECT_EQ(dry.err, warnings[0] + "\n" + warnings[1] + "\n");
  EXPECT_EQ(slurp(prefix_ / "bin/envlock-greet"), "mine\n");
  auto dry_json = envlock("install --dry-run --json -l " + q(lock) + " -p " + q(prefix_));
  ASSERT_EQ(dry_json.exit_code, 0) << dry_json.err;
  EXPECT_EQ(nlohmann::json::parse(dry_json.out)["warnings"],
            (nlohmann::json{warnings[0].substr(9), warnings[1].substr(9)}));

  auto real = envlock("install -l " + q(lock) + " -p " + q(prefix_));
  ASSERT_EQ(real.exit_code, 0) << real.err;
  EXPECT_EQ(warning_lines(real.err), warning_lines(dry.err));
  EXPECT_EQ(real.err, "packages: " + std::to_string(all.size()) + " (0 downloaded, " + std::to_string(all.size()) +
                          " from the package cache)\n" + warnings[0] + "\n" + warnings[1] + "\n");
  EXPECT_EQ(slurp(prefix_ / "notes.txt"), "kept, no warning\n");

  // Files below a path a package makes a file: the install refuses, and the dry run says so too.
  const fs::path other = root_ / "other";
  ASSERT_EQ(envlock("install -l " + q(root_ / "good.lock") + " -p " + q(other)).exit_code, 0);
  spit(other / "bin/envlock-greet/a.txt", "mine\n");
  const std::string refusal = "error: " + greet +
                              ": makes bin/envlock-greet a file, where the environment has a folder holding files no "
                              "package owns: bin/envlock-greet/a.txt\ncarried over, they would be lost\nnothing was "
                              "installed; the environment was not changed\nhint: move those files out of "
                              "bin/envlock-greet/ (or delete them), then run the command again\n";
  auto dry_refused = envlock("install --dry-run -l " + q(lock) + " -p " + q(other));
  EXPECT_EQ(dry_refused.exit_code, 1);
  EXPECT_EQ(dry_refused.out, "");
  EXPECT_EQ(dry_refused.err, refusal);
  auto refused = envlock("install -l " + q(lock) + " -p " + q(other));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(refused.err, "packages: " + std::to_string(all.size()) + " (0 downloaded, " + std::to_string(all.size()) +
                             " from the package cache)\n" + refusal);
  EXPECT_EQ(slurp(other / "bin/envlock-greet/a.txt"), "mine\n");

  // Without the packages in the cache the dry run compares nothing, and says so.
  fs::remove_all(root_ / "pkgs");
  auto uncached = envlock("install --dry-run -l " + q(lock) + " -p " + q(other));
  EXPECT_EQ(uncached.exit_code, 0) << uncached.err;
  EXPECT_EQ(uncached.err, "warning: " + std::to_string(added.size()) +
                              " package(s) to link are not in the package cache, so the files of the environment were "
                              "not compared with the paths of the new packages (the install downloads them first): " +
                              added[0] + ", " + added[1] + "\n");
  EXPECT_FALSE(fs::exists(root_ / "pkgs"));
}

/// True when `s` holds a raw control byte other than a line break (a C1 as UTF-8 counts).
bool has_raw_control(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9f)
      return true;
  }
  return false;
}

TEST_F(BadInput, ControlBytesFromALockfileNeverReachTheTerminalRaw) {
  auto records = good_;
  records[0].build = "0\x1b]0;pwned\x07";
  records[0].file_name = "envlock-hello-1.0.0-0\x1b]0;pwned\x07.conda";  // the build it names (the reader checks it)
  records[0].url += "\x1b[2J";
  records[0].sha256.clear();
  records[0].md5.clear();
  const fs::path lock = write_lock(make_lockfile(records), "evil.lock");
  for (const std::string& args : {"install -l " + q(lock) + " -p " + q(root_ / "x"),
                                 "install --dry-run -l " + q(lock) + " -p " + q(prefix_),
                                 "list -l " + q(lock), "show " + q(lock), "diff " + q(root_ / "good.lock") + " " + q(lock),
                                 "export -l " + q(lock)}) {
    auto r = envlock(args);
    SCOPED_TRACE(args);
    EXPECT_FALSE(has_raw_control(r.out)) << r.out;
    EXPECT_FALSE(has_raw_control(r.err)) << r.err;
  }
  auto r = envlock("install -l " + q(lock) + " -p " + q(root_ / "x"));
  EXPECT_NE(r.err.find("error: envlock-hello-1.0.0-0\\x1b]0;pwned\\x07: has neither a sha256"), std::string::npos) << r.err;
}

TEST_F(Cli, CondasTestRecipesWithBashScriptsAndPrelinkMessagesInstall) {
  if (!have_corpus()) GTEST_SKIP() << "the shared corpus is absent (looked in " << kCorpus.string() << "; set ENVLOCK_SHARED_DIR): conda's test recipes are in it";
  // conda's test recipes are bash scripts: without bash they cannot run as conda runs them.
  if (::access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "bash is not installed";
  const fs::path dir = root_ / "channels" / "test-recipes";
  corpus_channel("conda__conda/tests__data__test-recipes__", dir, {"noarch"});
  // post_link-c checks with bash's [[ ]] and returns at top level (conda sources it) that
  // post_link-b's file is there; post_link-d that post_link-e's post-link script made bin/file.
  const std::set<std::string> wanted = {"post_link-b", "post_link-c", "post_link-d", "post_link-e",
                                        "pre_link_messages_package", "post_link_run_in_env_package"};
  std::vector<LockedPackage> records;
  for (auto& p : channel_records(dir, "noarch", "file://" + dir.string()))
    if (wanted.count(p.name)) records.push_back(p);
  ASSERT_EQ(records.size(), wanted.size());
  const fs::path prefix = root_ / "envs" / "recipes";
  // post_link_run_in_env_package's own etc/conda/activate.d/test.sh sets TEST_VAR, which its
  // post-link script checks: it passes because the script runs inside the activated environment.
  auto r = envlock("install -l " + q(write_lock(make_lockfile(records), "recipes.lock")) + " -p " + q(prefix));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(slurp(prefix / "bin/file"), "test\n");
  EXPECT_NE(r.out.find("pre_link_messages_package-1.0-0: PRELINK MESSAGES\n  File message-from-pkg.txt:\n    Lorem ipsum "
                       "dolor sit amet, consectetur adipiscing elit,\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  File message-from-pkg2.txt:\n    Spam spam spam,\n    SPAM!\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TEST_VAR is set to :1:\nSuccess: TEST_VAR is set correctly\n"), std::string::npos) << r.out;
}

TEST_F(BadInput, APythonSitePackagesPathLeavingThePrefixIsRefusedAndShownByDiff) {
  auto records = good_;
  for (auto& r : records)
    if (r.name == "python") r.python_site_packages_path = "../../outside";
  const fs::path lock = write_lock(make_lockfile(records), "site.lock");
  auto d = envlock("diff " + q(root_ / "good.lock") + " " + q(lock));
  EXPECT_NE(d.out.find("python_site_packages_path (none) -> ../../outside"), std::string::npos) << d.out << d.err;
  // python alone has no noarch: python package to place, yet the field is refused all the same.
  auto r = envlock("install -l " + q(lock) + " -p " + q(prefix_));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::string python_dist;
  for (const auto& rec : records)
    if (rec.name == "python") python_dist = rec.dist_name();
  EXPECT_NE(r.err.find("error: " + python_dist +
                       ": python_site_packages_path \"../../outside\" is not a relative path inside the prefix\n"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(root_ / "outside"));
  expect_intact();
}

namespace {

// A lockfile from `envlock snapshot lock` carries the captured pip distributions; envlock install
// installs conda packages only, so it names each one it leaves out and points to snapshot deploy.
TEST(InstallCli, InstallWarnsAboutThePipPackagesItDoesNotInstall) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-review-pip-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path lock = dir / "envlock.lock";
  std::ofstream(lock) << "version: 1\nmanifest_hash: \"\"\nenvironments:\n  default:\n    requested: []\n    platforms:\n"
                         "      linux-64:\n        channels: []\n        virtual_packages: []\n        packages: []\n"
                         "        pip:\n          - name: mypkg\n            version: \"0.3.dev0\"\n"
                         "            url: https://github.com/acme/mypkg.git\n"
                         "            requirement: mypkg @ git+https://github.com/acme/mypkg.git@0123456789abcdef0123456789abcdef01234567\n"
                         "          - name: toolbox\n            version: \"1.0\"\n";
  const std::map<std::string, std::string> env{{"ENVLOCK_PKGS_DIR", (dir / "pkgs").string()}};
  const auto r = run_command(envlock_cmd() + " install -l '" + lock.string() + "' -p '" + (dir / "p").string() + "'", env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("warning: 2 pip package(s) in the lockfile were not installed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("toolbox==1.0"), std::string::npos) << r.err;
  // A VCS install is named by its requirement, never as a name==version pin.
  EXPECT_NE(r.err.find("mypkg @ git+https://github.com/acme/mypkg.git@0123456789abcdef0123456789abcdef01234567, toolbox==1.0"),
            std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("mypkg==0.3.dev0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("envlock snapshot deploy"), std::string::npos) << r.err;
  const auto j = run_command(envlock_cmd() + " --json install -l '" + lock.string() + "' -p '" + (dir / "q").string() + "'", env);
  ASSERT_EQ(j.exit_code, 0) << j.out << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["warnings"].size(), 1u) << j.out;
  EXPECT_NE(doc["warnings"][0].get<std::string>().find("toolbox==1.0"), std::string::npos) << j.out;
  fs::remove_all(dir);
}

// `verify -p` of a path that does not exist says so (exit 1), not "it has no conda-meta/".
TEST(VerifyCli, VerifyOfAMissingPrefixSaysItDoesNotExist) {
  const std::string missing = "/nonexistent-envlock-" + std::to_string(::getpid());
  const auto v = run_command(envlock_cmd() + " verify -p " + missing);
  EXPECT_EQ(v.exit_code, 1) << v.err;
  EXPECT_NE(v.err.find("error: " + missing + ": does not exist"), std::string::npos) << v.err;
  EXPECT_EQ(v.err.find("conda-meta"), std::string::npos) << v.err;
}

// attack 20 (I0's aside): `mkdir -p X/conda-meta; envlock verify -p X` said "0 packages, 0 files
// checked: no drift", exit 0. conda's mark of an environment is conda-meta/history (`conda list
// -p X` answers "Not a conda environment"); envlock's is conda-meta/envlock too. A conda-meta/
// with neither and no record is not an environment.
TEST(VerifyCli, VerifyOfAnEmptyCondaMetaSaysItIsNotAnEnvironment) {
  const fs::path p = fs::temp_directory_path() / ("envlock-verify-empty-meta-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p / "conda-meta");
  const auto v = run_command(envlock_cmd() + " verify -p " + p.string(), {{"NO_COLOR", "1"}});
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_EQ(v.out, "");
  EXPECT_EQ(v.err, "error: " + p.string() +
                       ": is not an environment: its conda-meta/ holds no package record, no history and no "
                       "conda-meta/envlock\n"
                       "hint: check the path given with -p (an environment folder made by envlock, conda, mamba or "
                       "pixi)\n");
  const auto l = run_command(envlock_cmd() + " list -p " + p.string(), {{"NO_COLOR", "1"}});
  EXPECT_EQ(l.exit_code, 1);
  EXPECT_EQ(l.out, "");
  EXPECT_EQ(l.err, v.err);
  // conda's mark alone makes it an (empty) environment, as for conda.
  std::ofstream(p / "conda-meta" / "history") << "";
  const auto h = run_command(envlock_cmd() + " verify -p " + p.string(), {{"NO_COLOR", "1"}});
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(h.out, p.string() + ": 0 packages, 0 files checked: no drift\n");
  EXPECT_EQ(h.err, "");
  fs::remove_all(p);
}

std::string sha256_hex(const std::string& bytes) {
  Hasher h(HashAlgorithm::Sha256);
  h.update(bytes);
  return h.hex_digest();
}

// A RECORD row's hash (PEP 376/627): URL-safe base64 of the raw sha256 digest, no padding.
std::string record_b64_sha256(const std::string& bytes) {
  return base64_encode(*hex_decode(sha256_hex(bytes)), Base64Alphabet::UrlSafe, Base64Padding::No);
}

// pip replaced a conda package's file: verify checks it against the pip RECORD (the conda record
// is shadowed), as the snapshot attributes it; a later edit is reported against RECORD.
TEST(VerifyCli, VerifyChecksAPipReplacedFileAgainstRecordNotTheShadowedCondaRecord) {
  const fs::path p = fs::temp_directory_path() / ("envlock-review-verify-" + std::to_string(::getpid()));
  fs::remove_all(p);
  const std::string site = "lib/python3.12/site-packages";
  fs::create_directories(p / "conda-meta");
  fs::create_directories(p / site / "envlock_demo");
  fs::create_directories(p / site / "envlock_demo-2.0.dist-info");
  const std::string conda_init = "VERSION = '1.0'\n", pip_init = "VERSION = '2.0'\n";
  std::ofstream(p / "conda-meta/envlock_demo-1.0-0.json")
      << R"({"name": "envlock_demo", "version": "1.0", "build": "0", "build_number": 0, "subdir": "noarch",
           "channel": "https://conda.anaconda.org/x", "url": "https://conda.anaconda.org/x/noarch/envlock_demo-1.0-0.tar.bz2",
           "files": [")" << site << R"(/envlock_demo/__init__.py"],
           "paths_data": {"paths_version": 1, "paths": [{"_path": ")" << site << R"(/envlock_demo/__init__.py",
           "path_type": "hardlink", "sha256": ")" << sha256_hex(conda_init) << R"(", "size_in_bytes": )" << conda_init.size()
      << "}]}}\n";
  std::ofstream(p / site / "envlock_demo/__init__.py") << pip_init;
  std::ofstream(p / site / "envlock_demo-2.0.dist-info/RECORD")
      << "envlock_demo/__init__.py,sha256=" << record_b64_sha256(pip_init) << "," << pip_init.size() << "\n"
      << "envlock_demo-2.0.dist-info/RECORD,,\n";
  const auto r = run_command(envlock_cmd() + " verify -p '" + p.string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ((r.out + r.err).find("envlock_demo/__init__.py"), std::string::npos) << r.out << r.err;

  std::ofstream(p / site / "envlock_demo/__init__.py") << "VERSION = '2.1'\n";
  const auto edited = run_command(envlock_cmd() + " verify -p '" + p.string() + "'");
  EXPECT_NE(edited.exit_code, 0) << edited.out << edited.err;
  const std::string all = edited.out + edited.err;
  EXPECT_NE(all.find("envlock_demo/__init__.py"), std::string::npos) << all;
  EXPECT_NE(all.find("RECORD"), std::string::npos) << all;
  EXPECT_EQ(all.find("recorded"), std::string::npos) << all;  // not against the conda record
  fs::remove_all(p);
}

}  // namespace

// A new-user attack (issue 23, M5): a lockfile whose url has an unknown scheme made `install`
// exit 2 (usage error). It is bad input data: exit 1, naming the package, the URL and
// file:line:col, as pixi and conda-lock name a bad lockfile entry.
TEST(InstallCli, ALockedUrlWithAnUnknownSchemeIsBadInputAtItsLine) {
  const fs::path d = fs::temp_directory_path() / ("envlock-bad-url-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  std::ofstream(d / "bad.lock") << "version: 1\nmanifest_hash: sha256:" << std::string(64, 'c') << R"(
environments:
  default:
    requested:
      - numpy
    platforms:
      linux-64:
        channels:
          - https://conda.anaconda.org/conda-forge
        packages:
          - name: numpy
            version: "1.26.4"
            build: py312h8753938_0
            build_number: 0
            subdir: linux-64
            channel: https://conda.anaconda.org/conda-forge
            url: "gopher://x/numpy-1.26.4-py312h8753938_0.conda"
            sha256: )" << std::string(64, 'a') << R"(
            depends: []
            layer: default
)";
  const auto r = run_command("cd '" + d.string() + "' && " + envlock_cmd() + " install -l bad.lock -p '" +
                             (d / "env").string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "error: bad.lock:18:19: url of numpy 'gopher://x/numpy-1.26.4-py312h8753938_0.conda': unsupported URL scheme\n"
            "package: numpy-1.26.4-py312h8753938_0 from gopher://x/numpy-1.26.4-py312h8753938_0.conda\n"
            "nothing was installed; the prefix was not touched\n"
            "hint: use an http://, https:// or file:// URL\n");
  EXPECT_FALSE(fs::exists(d / "env"));
  fs::remove_all(d);
}

// A FIFO (or any file that is not a regular one) at a locked file:// URL (issue 23): libcurl's
// read waited for a writer forever, and the install hung. It is refused at once, naming the URL,
// as conda's local channels read only files; a device and a folder the same.
TEST(InstallCli, AFileUrlNamingAFifoOrDeviceIsRefusedNotReadForever) {
  const fs::path d = fs::temp_directory_path() / ("envlock-fifo-url-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d / "channel/linux-64");
  ASSERT_EQ(::mkfifo((d / "channel/linux-64/numpy-1.26.4-py312h8753938_0.conda").c_str(), 0644), 0);
  const std::string file = "linux-64/numpy-1.26.4-py312h8753938_0.conda";
  fs::create_directories((d / "device" / file).parent_path());
  fs::create_symlink("/dev/zero", d / "device" / file);  // a link to a device: what it names counts
  fs::create_directories(d / "folder" / file);
  struct Case {
    std::string url, what;
  };
  for (const Case& c : std::vector<Case>{{"file://" + (d / "channel" / file).string(), "a FIFO (named pipe)"},
                                         {"file://" + (d / "device" / file).string(), "a device"},
                                         {"file://" + (d / "folder" / file).string(), "a folder"}}) {
    SCOPED_TRACE(c.url);
    std::ofstream(d / "fifo.lock") << "version: 1\nmanifest_hash: sha256:" << std::string(64, 'c') << R"(
environments:
  default:
    requested:
      - numpy
    platforms:
      linux-64:
        channels:
          - file://)" << (d / "channel").string() << R"(
        packages:
          - name: numpy
            version: "1.26.4"
            build: py312h8753938_0
            build_number: 0
            subdir: linux-64
            channel: file://)" << (d / "channel").string() << R"(
            url: ")" << c.url << R"("
            sha256: )" << std::string(64, 'a') << R"(
            depends: []
            layer: default
)";
    const auto r = run_command("cd '" + d.string() + "' && ENVLOCK_PKGS_DIRS='" + (d / "pkgs").string() +
                               "' timeout 60 " + envlock_cmd() + " install -l fifo.lock -p '" + (d / "env").string() + "'");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    // The link resolves outside the lockfile's folder (to /dev/zero): named first, as any such file.
    const std::string outside =
        c.what != "a device" ? ""
                             : "warning: 1 package(s) come from file://" + (d / "device/linux-64").string() +
                                   ", a local folder outside the lockfile's folder " + d.string() +
                                   " (check that it is the one meant): numpy-1.26.4-py312h8753938_0\n";
    EXPECT_EQ(r.err, outside + "error: " + c.url + ": names " + c.what + ", not a regular file; refusing to read it\n"
                     "package: numpy-1.26.4-py312h8753938_0 from " + c.url + "\n"
                     "nothing was installed; the prefix was not touched\n"
                     "hint: point the URL at the file itself (a file:// URL is read only when it names a regular file)\n");
    EXPECT_FALSE(fs::exists(d / "env"));
  }
  fs::remove_all(d);
}
