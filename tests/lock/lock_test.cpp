// Locking end to end: lock_manifest and the `lock` / `search` commands over real repodata from
// the shared corpus (conda-forge subset for two platforms, the pytorch channel), through a local
// channel directory and through an HTTP server on 127.0.0.1.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "channel/corpus_channel.hpp"
#include "envlock/host.hpp"
#include "envlock/lock.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/manifest.hpp"
#include "support/http_server.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using testing::envlock_cmd;
using testing::run_command;
using testing::slurp;
using testing::spit;
using testing::TempDir;

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

/// A project folder with the conda-forge subset as ./cf and a manifest.
struct Project {
  TempDir tmp{"lock"};
  fs::path dir() const { return tmp.path(); }
  fs::path manifest() const { return tmp.path() / "envlock.yaml"; }
  fs::path lockfile() const { return tmp.path() / "envlock.lock"; }
  explicit Project(const std::string& manifest_text, std::vector<std::string> platforms = {"linux-64", "osx-64"}) {
    testing::make_conda_forge_subset(tmp.path() / "cf", platforms);
    spit(manifest(), manifest_text);
  }
};

const char* kLayered = R"(name: demo
channels: [./cf]
platforms: [linux-64, osx-64]
environments:
  base:
    dependencies:
      - python 3.9.* *_cpython
  project:
    base: base
    dependencies:
      - pip
      - six
      - curl
)";

const LockedPackage* pkg(const Lockfile& l, const std::string& env, const std::string& platform, const std::string& name) {
  auto e = l.environments.find(env);
  if (e == l.environments.end()) return nullptr;
  auto p = e->second.platforms.find(platform);
  if (p == e->second.platforms.end()) return nullptr;
  for (const auto& x : p->second.packages)
    if (x.name == name) return &x;
  return nullptr;
}

/// Rewrites every repodata.json below `dir` with its records in a shuffled order.
void shuffle_repodata(const fs::path& dir, unsigned seed) {
  std::mt19937 rng(seed);
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename() != "repodata.json") continue;
    auto j = nlohmann::ordered_json::parse(slurp(e.path()));
    for (const char* section : {"packages", "packages.conda"}) {
      if (!j.contains(section)) continue;
      std::vector<std::pair<std::string, nlohmann::ordered_json>> items;
      for (auto it = j[section].begin(); it != j[section].end(); ++it) items.emplace_back(it.key(), it.value());
      std::shuffle(items.begin(), items.end(), rng);
      nlohmann::ordered_json shuffled = nlohmann::ordered_json::object();
      for (auto& [k, v] : items) shuffled[k] = std::move(v);
      j[section] = std::move(shuffled);
    }
    spit(e.path(), j.dump(1));
  }
}

TEST(LockCli, TwoPlatformsTwoLayersDeterministicAndFresh) {
  ENVLOCK_REQUIRE_CORPUS();
  Project p(kLayered);
  auto r = run_command(envlock_cmd() + " lock -f " + q(p.manifest()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lock = Lockfile::read(p.lockfile());
  ASSERT_TRUE(lock.ok()) << lock.error().to_string();
  ASSERT_EQ(lock->environments.size(), 2u);
  for (const char* platform : {"linux-64", "osx-64"}) {
    const LockedPackage* base_py = pkg(*lock, "base", platform, "python");
    const LockedPackage* proj_py = pkg(*lock, "project", platform, "python");
    ASSERT_NE(base_py, nullptr) << platform;
    ASSERT_NE(proj_py, nullptr) << platform;
    EXPECT_TRUE(base_py->version.to_string().starts_with("3.9.")) << platform;
    EXPECT_TRUE(base_py->build.ends_with("_cpython")) << platform;
    // The project cannot move a base pin, and the pin keeps the base's layer.
    EXPECT_EQ(proj_py->file_name, base_py->file_name);
    EXPECT_EQ(proj_py->layer, "base");
    EXPECT_EQ(base_py->layer, "base");
    const LockedPackage* curl = pkg(*lock, "project", platform, "curl");
    ASSERT_NE(curl, nullptr) << platform;
    EXPECT_EQ(curl->layer, "project");
    EXPECT_EQ(curl->subdir, platform);
    EXPECT_FALSE(curl->sha256.empty());
    EXPECT_TRUE(curl->url.starts_with("file://")) << curl->url;
    // Everything the base locked is in the project too.
    const auto& base_pkgs = lock->environments.at("base").platforms.at(platform).packages;
    for (const auto& b : base_pkgs) {
      const LockedPackage* same = pkg(*lock, "project", platform, b.name);
      ASSERT_NE(same, nullptr) << b.name;
      EXPECT_EQ(same->file_name, b.file_name);
    }
  }
  EXPECT_EQ(pkg(*lock, "base", "linux-64", "pip") != nullptr, true);  // python depends on pip here
  // The lock assumed the documented defaults, not this host.
  const auto& vps = lock->environments.at("base").platforms.at("linux-64").virtual_packages;
  ASSERT_FALSE(vps.empty());
  bool glibc = false;
  for (const auto& v : vps) {
    EXPECT_NE(v.name, "__cuda");
    if (v.name == "__glibc") glibc = v.version == "2.28";
  }
  EXPECT_TRUE(glibc);

  // Locking again gives the same bytes; so does locking from shuffled repodata.
  std::string first = slurp(p.lockfile());
  auto again = run_command(envlock_cmd() + " lock -f " + q(p.manifest()) + " -o " + q(p.dir() / "again.lock"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(slurp(p.dir() / "again.lock"), first);
  shuffle_repodata(p.dir() / "cf", 7);
  auto shuffled = run_command(envlock_cmd() + " lock --update-all -f " + q(p.manifest()) + " -o " +
                              q(p.dir() / "shuffled.lock"));
  ASSERT_EQ(shuffled.exit_code, 0) << shuffled.err;
  EXPECT_EQ(slurp(p.dir() / "shuffled.lock"), first);

  // A fresh lock passes --check.
  auto check = run_command(envlock_cmd() + " lock --check -f " + q(p.manifest()));
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  // Re-locking an unchanged manifest leaves the file alone.
  auto unchanged = run_command(envlock_cmd() + " lock -f " + q(p.manifest()));
  ASSERT_EQ(unchanged.exit_code, 0) << unchanged.err;
  EXPECT_NE(unchanged.out.find("unchanged"), std::string::npos) << unchanged.out;
}

TEST(LockCli, BasePinConflictNamesThePin) {
  ENVLOCK_REQUIRE_CORPUS();
  Project p(R"(channels: [./cf]
platforms: [linux-64]
environments:
  base:
    dependencies: [python 3.9.19 *_cpython]
  project:
    base: base
    dependencies: [python 3.9.18 *_cpython]
)",
            {"linux-64"});
  auto r = run_command(envlock_cmd() + " lock -f " + q(p.manifest()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot solve environment 'project' for linux-64"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("python 3.9.18 *_cpython (requested at"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("conflicts with python 3.9.19"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pinned by the base layer 'base'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(p.lockfile()));

  auto j = run_command(envlock_cmd() + " lock --json -f " + q(p.manifest()));
  EXPECT_EQ(j.exit_code, 1);
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["error"]["kind"], "unsatisfiable");
  EXPECT_EQ(doc["conflict"]["environment"], "project");
  EXPECT_EQ(doc["conflict"]["platform"], "linux-64");
  ASSERT_TRUE(doc["conflict"]["conflicts"].is_array());
  EXPECT_EQ(doc["conflict"]["conflicts"][0]["kind"], "requested");
  EXPECT_NE(doc.dump().find("pinned by the base layer 'base'"), std::string::npos);
}

TEST(LockCli, UnknownPackageListsWhatExists) {
  ENVLOCK_REQUIRE_CORPUS();
  Project p("channels: [./cf]\nplatforms: [linux-64]\ndependencies: [python 3.12.*, nosuchpackage]\n", {"linux-64"});
  auto r = run_command(envlock_cmd() + " lock -f " + q(p.manifest()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("versions that exist: 3.9.19, 3.9.18"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no package named 'nosuchpackage'"), std::string::npos) << r.err;
}

// A name no channel has is not reported as a conflict: the error names it, the channels and
// platforms searched, and the spec's place in the manifest (its first character, not the `[`).
TEST(LockCli, MissingPackageIsNamedNotAConflict) {
  ENVLOCK_REQUIRE_CORPUS();
  Project p("channels: [./cf]\nplatforms: [linux-64]\ndependencies: [does-not-exist]\n", {"linux-64"});
  auto r = run_command(envlock_cmd() + " lock -f " + q(p.manifest()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("envlock.yaml:3:16: no package named 'does-not-exist' in "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(linux-64 and noarch)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("envlock search"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("conflict"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("relax one of the specs"), std::string::npos) << r.err;
}

// A version no channel has is not a conflict either: the headline names the spec, where it was
// written, the channels searched and the versions that exist.
TEST(LockCli, UnavailableVersionIsNamedNotAConflict) {
  ENVLOCK_REQUIRE_CORPUS();
  Project p("channels: [./cf]\nplatforms: [linux-64]\ndependencies: [python >=99]\n", {"linux-64"});
  auto r = run_command(envlock_cmd() + " lock -f " + q(p.manifest()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("envlock.yaml:3:16: no package matches 'python >=99' in "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(linux-64 and noarch); versions that exist: 3.9.19, 3.9.18"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hint: relax the version or build in the spec"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("conflict"), std::string::npos) << r.err;
}

/// Drops from `file` every record of `name` newer than `keep_below` (conda version order).
void drop_newer(const fs::path& file, const std::string& name, const std::string& keep_below) {
  auto j = nlohmann::ordered_json::parse(slurp(file));
  auto limit = *Version::parse(keep_below);
  for (const char* section : {"packages", "packages.conda"}) {
    if (!j.contains(section)) continue;
    nlohmann::ordered_json kept = nlohmann::ordered_json::object();
    for (auto it = j[section].begin(); it != j[section].end(); ++it) {
      if (it.value()["name"] == name && *Version::parse(it.value()["version"].get<std::string>()) >= limit) continue;
      kept[it.key()] = it.value();
    }
    j[section] = std::move(kept);
  }
  spit(file, j.dump(1));
}

TEST(LockCli, UpdateChangesOnlyWhatItMust) {
  ENVLOCK_REQUIRE_CORPUS();
  Project p("channels: [./cf]\nplatforms: [linux-64]\ndependencies: [python 3.9.* *_cpython, curl]\n", {"linux-64"});
  fs::path repodata = p.dir() / "cf" / "linux-64" / "repodata.json";
  std::string full = slurp(repodata);
  // An older snapshot of the channel: newer openssl and ncurses not published yet.
  drop_newer(repodata, "openssl", "3.1");
  drop_newer(repodata, "ncurses", "6.4");
  ASSERT_EQ(run_command(envlock_cmd() + " lock -f " + q(p.manifest())).exit_code, 0);
  std::string old_lock = slurp(p.lockfile());
  auto old = *Lockfile::read(p.lockfile());
  ASSERT_NE(pkg(old, "default", "linux-64", "openssl"), nullptr);
  ASSERT_NE(pkg(old, "default", "linux-64", "ncurses"), nullptr);
  EXPECT_LT(pkg(old, "default", "linux-64", "openssl")->version, *Version::parse("3.1"));

  // The channel moves on; re-locking keeps every record that still fits: same bytes.
  spit(repodata, full);
  auto relock = run_command(envlock_cmd() + " lock -f " + q(p.manifest()));
  ASSERT_EQ(relock.exit_code, 0) << relock.err;
  EXPECT_EQ(slurp(p.lockfile()), old_lock);

  // --update openssl moves openssl (and only what must move with it).
  auto upd = run_command(envlock_cmd() + " lock --json --update openssl -f " + q(p.manifest()));
  ASSERT_EQ(upd.exit_code, 0) << upd.err;
  auto report = nlohmann::json::parse(upd.out);
  auto changed = report["environments"]["default"]["linux-64"]["changed"];
  ASSERT_FALSE(changed.empty());
  std::set<std::string> moved;
  for (const auto& c : changed) moved.insert(c.get<std::string>().substr(0, c.get<std::string>().find(' ')));
  EXPECT_EQ(moved.count("openssl"), 1u);
  EXPECT_EQ(moved.count("ncurses"), 0u);
  auto updated = *Lockfile::read(p.lockfile());
  EXPECT_GE(pkg(updated, "default", "linux-64", "openssl")->version, *Version::parse("3.1"));
  EXPECT_EQ(pkg(updated, "default", "linux-64", "ncurses")->file_name, pkg(old, "default", "linux-64", "ncurses")->file_name);
  // Every package that moved had to: it depends on openssl, or openssl itself.
  for (const auto& name : moved) {
    if (name == "openssl") continue;
    const LockedPackage* now = pkg(updated, "default", "linux-64", name);
    ASSERT_NE(now, nullptr);
    bool needs_openssl = false;
    for (const auto& d : now->depends) needs_openssl = needs_openssl || d.starts_with("openssl");
    const LockedPackage* before = pkg(old, "default", "linux-64", name);
    if (before != nullptr)
      for (const auto& d : before->depends) needs_openssl = needs_openssl || d.starts_with("openssl");
    EXPECT_TRUE(needs_openssl) << name << " moved without needing to";
  }

  // --update-all frees everything: ncurses moves to the newest too.
  ASSERT_EQ(run_command(envlock_cmd() + " lock --update-all -f " + q(p.manifest())).exit_code, 0);
  auto fresh = *Lockfile::read(p.lockfile());
  EXPECT_GE(pkg(fresh, "default", "linux-64", "ncurses")->version, *Version::parse("6.4"));

  // Unknown names and bad flag combinations are usage errors.
  EXPECT_EQ(run_command(envlock_cmd() + " lock --update opensll -f " + q(p.manifest())).exit_code, 2);
  EXPECT_EQ(run_command(envlock_cmd() + " lock --update openssl --update-all -f " + q(p.manifest())).exit_code, 2);
  EXPECT_EQ(run_command(envlock_cmd() + " lock --check --update-all -f " + q(p.manifest())).exit_code, 2);
}

TEST(LockCli, TokenUrlNeverAppearsInLockfileOrOutput) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("lock");
  fs::path www = tmp.path() / "www";
  testing::make_conda_forge_subset(www / "t" / "tk-SECRET-9f3a" / "cf", {"linux-64"});
  testing::HttpServer server(www);
  ASSERT_TRUE(server.ok()) << server.error();
  std::string channel = server.url("/t/tk-SECRET-9f3a/cf");
  spit(tmp.path() / "envlock.yaml",
       "channels: [" + channel + "]\nplatforms: [linux-64]\ndependencies: [python 3.9.* *_cpython]\n");
  std::map<std::string, std::string> env{{"ENVLOCK_CACHE_DIR", (tmp.path() / "cache").string()}};
  auto r = run_command(envlock_cmd() + " lock --json -f " + q(tmp.path() / "envlock.yaml"), env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string lock = slurp(tmp.path() / "envlock.lock");
  EXPECT_EQ(lock.find("SECRET"), std::string::npos);
  EXPECT_EQ(r.out.find("SECRET"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("SECRET"), std::string::npos) << r.err;
  EXPECT_NE(lock.find(server.url("/cf/linux-64/")), std::string::npos);
  for (const auto& e : fs::recursive_directory_iterator(tmp.path() / "cache")) {
    if (e.is_regular_file() && e.path().extension() == ".json") {
      EXPECT_EQ(slurp(e.path()).find("tk-SECRET"), std::string::npos) << e.path();
    }
  }

  // --offline relocks from the cache once the server is gone.
  auto offline = run_command(envlock_cmd() + " lock --offline --update-all -f " + q(tmp.path() / "envlock.yaml") +
                                 " -o " + q(tmp.path() / "offline.lock"),
                             env);
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  EXPECT_EQ(slurp(tmp.path() / "offline.lock"), lock);
  // A channel that was never fetched cannot be locked offline.
  auto env2 = env;
  env2["ENVLOCK_CACHE_DIR"] = (tmp.path() / "empty-cache").string();
  auto miss = run_command(envlock_cmd() + " lock --offline -f " + q(tmp.path() / "envlock.yaml") + " -o " +
                              q(tmp.path() / "x.lock"),
                          env2);
  EXPECT_EQ(miss.exit_code, 1);
  EXPECT_NE(miss.err.find("--offline"), std::string::npos) << miss.err;
  EXPECT_EQ(miss.err.find("SECRET"), std::string::npos) << miss.err;
}

TEST(LockCli, MissingChannelIsAClearError) {
  TempDir tmp("lock");
  spit(tmp.path() / "envlock.yaml", "channels: [\"./no where\"]\nplatforms: [linux-64]\ndependencies: [python]\n");
  auto r = run_command(envlock_cmd() + " lock -f " + q(tmp.path() / "envlock.yaml"));
  EXPECT_EQ(r.exit_code, 1);
  // Named as the folder the user wrote, not as its percent-encoded file:// URL.
  EXPECT_NE(r.err.find("error: " + (tmp.path() / "no where").string() + ": channel directory does not exist"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(tmp.path() / "envlock.lock"));
}

// What stands where the lockfile goes is read as every input is (read_input_file): a FIFO or a
// folder there is refused, naming it, by `lock`, `lock --update-all` and `lock --check` alike, with
// the exit code of other unreadable input (1) and nothing written. Before, --update-all passed
// over what it could not read and then blocked opening the FIFO, or failed writing over the folder
// with an internal error (attack on issue 18, A7). The commands run under timeout(1): a hang
// is exit 124, not a stuck test.
TEST(LockCli, ALockfileThatIsAFifoOrAFolderIsRefusedNamingIt) {
  TempDir tmp("lock");
  const fs::path manifest = tmp.path() / "envlock.yaml";
  const fs::path lock = tmp.path() / "envlock.lock";
  spit(manifest, "channels: [./cf]\nplatforms: [linux-64]\ndependencies: [python]\n");
  ASSERT_EQ(::mkfifo(lock.c_str(), 0644), 0);
  for (const std::string args : {"lock", "lock --update-all", "lock --check", "--json lock --update-all"}) {
    auto r = run_command("timeout 20 " + envlock_cmd() + " " + args + " -f " + q(manifest));
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_EQ(r.err, "error: " + lock.string() + ": is a FIFO, not a regular file\n"
                     "hint: a lockfile is a regular file: move this away, or write the lockfile elsewhere with -o\n")
        << args;
    EXPECT_EQ(r.out, args.starts_with("--json")
                         ? "{\n  \"error\": {\n    \"detail\": \"\",\n    \"hint\": \"a lockfile is a regular file: move this "
                           "away, or write the lockfile elsewhere with -o\",\n    \"kind\": \"io\",\n    \"message\": \"is a "
                           "FIFO, not a regular file\",\n    \"where\": \"" + lock.string() + "\"\n  }\n}\n"
                         : "")
        << args;
    EXPECT_TRUE(fs::is_fifo(lock)) << args;
  }
  fs::remove(lock);
  fs::create_directory(lock);
  for (const std::string args : {"lock", "lock --update-all", "lock --check"}) {
    auto r = run_command("timeout 20 " + envlock_cmd() + " " + args + " -f " + q(manifest));
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(r.err, "error: " + lock.string() + ": is a directory, not a regular file\n"
                     "hint: a lockfile is a regular file: move this away, or write the lockfile elsewhere with -o\n")
        << args;
    EXPECT_TRUE(fs::is_directory(lock) && fs::is_empty(lock)) << args;
  }
  // -o names the lockfile: a device there is refused as well.
  auto r = run_command("timeout 20 " + envlock_cmd() + " lock --update-all -f " + q(manifest) + " -o /dev/null");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: /dev/null: is in /dev, not a file of a project; it is not read\n"
                   "hint: a lockfile is a regular file: move this away, or write the lockfile elsewhere with -o\n");
}

TEST(SearchCli, NewestFirstWithJsonAndNoMatch) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("search");
  testing::make_conda_forge_subset(tmp.path() / "cf", {"linux-64"});
  auto r = run_command(envlock_cmd() + " search 'python 3.9.*' --json -c " + q(tmp.path() / "cf") +
                       " --platform linux-64");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["packages"].empty());
  EXPECT_EQ(j["packages"][0]["name"], "python");
  EXPECT_EQ(j["packages"][0]["version"], "3.9.19");
  std::vector<std::string> versions;
  for (const auto& p : j["packages"]) versions.push_back(p["version"]);
  for (std::size_t i = 1; i < versions.size(); ++i)
    EXPECT_GE(*Version::parse(versions[i - 1]), *Version::parse(versions[i]));

  auto text = run_command(envlock_cmd() + " search 'six' -c " + q(tmp.path() / "cf") + " --platform linux-64");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("six"), std::string::npos);
  EXPECT_NE(text.out.find("1.16.0"), std::string::npos);
  EXPECT_LT(text.out.find("1.16.0"), text.out.find("1.15.0"));

  auto none = run_command(envlock_cmd() + " search 'six >=99' -c " + q(tmp.path() / "cf") + " --platform linux-64");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no package matches 'six >=99'"), std::string::npos) << none.err;
  auto bad = run_command(envlock_cmd() + " search 'six[' -c " + q(tmp.path() / "cf"));
  EXPECT_EQ(bad.exit_code, 2);
}

// search has no manifest: a missing relative -c directory is resolved against the current
// directory, and the hint says so.
TEST(SearchCli, MissingRelativeChannelHintNamesTheCurrentDirectory) {
  TempDir tmp("search-nochan");
  auto r = run_command("cd " + q(tmp.path()) + " && " + envlock_cmd() + " search foo -c ./nochan --platform linux-64");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("channel directory does not exist"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("relative path is resolved against the current directory"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("manifest"), std::string::npos) << r.err;
}

// --- library level ---------------------------------------------------------------------------

Manifest manifest_from(const std::string& text, const fs::path& dir) {
  auto m = parse_manifest(text, "envlock.yaml", dir);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().to_string());
  return m.ok() ? *m : Manifest{};
}

/// A channel of hand-made records: `records` as repodata.json of <dir>/linux-64 (noarch empty).
void write_channel(const fs::path& dir, const nlohmann::json& records) {
  nlohmann::json j = {{"info", {{"subdir", "linux-64"}}}, {"packages", nlohmann::json::object()},
                      {"packages.conda", records}};
  spit(dir / "linux-64" / "repodata.json", j.dump(1));
  spit(dir / "noarch" / "repodata.json", R"({"info": {"subdir": "noarch"}, "packages": {}})");
}

// docs/solving.md rule 6: a CPU build of a framework where __cuda is assumed, and a re-lock that
// moves a record from its CUDA build to its CPU build, are warned about (stderr and --json).
TEST(LockCli, WarnsAboutCpuBuildsAndCudaToCpuSwitches) {
  TempDir tmp("lock");
  auto record = [](const std::string& build, std::vector<std::string> depends, int ts) {
    return nlohmann::json{{"name", "pytorch"}, {"version", "2.3.1"}, {"build", build}, {"build_number", 0},
                          {"depends", depends}, {"subdir", "linux-64"}, {"timestamp", ts}};
  };
  write_channel(tmp.path() / "gpu", {{"pytorch-2.3.1-cpu_py311h0.conda", record("cpu_py311h0", {}, 1000)},
                                     {"pytorch-2.3.1-cuda120_py311h0.conda",
                                      record("cuda120_py311h0", {"__cuda >=12.6"}, 2000)}});
  const auto manifest = [&](const std::string& cuda) {
    spit(tmp.path() / "envlock.yaml", "channels: [./gpu]\nplatforms: [linux-64]\nvirtual-packages:\n  linux-64: [__cuda=" +
                                          cuda + "]\ndependencies: [pytorch]\n");
  };
  const std::string lock = envlock_cmd() + " lock -f " + q(tmp.path() / "envlock.yaml");
  // (`env -u CONDA_OVERRIDE_CUDA`: the manifest's value counts, not the test host's.)
  // A driver new enough: the CUDA build, no warning.
  manifest("12.6");
  auto r = run_command("env -u CONDA_OVERRIDE_CUDA " + lock);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(slurp(tmp.path() / "envlock.lock").find("cuda120_py311h0"), std::string::npos);
  // The manifest now declares an older driver: the re-lock switches to the CPU build and says so.
  manifest("12.4");
  r = run_command("env -u CONDA_OVERRIDE_CUDA " + lock + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string switched =
      "default/linux-64: pytorch switched from the CUDA build pytorch 2.3.1 cuda120_py311h0 to the CPU build pytorch "
      "2.3.1 cpu_py311h0; the CUDA build no longer fits: nothing provides __cuda >=12.6 (assumed: __cuda 12.4 0 "
      "(declared in the manifest for linux-64))";
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["warnings"], nlohmann::json::array({switched}));
  // Re-locked again (now from the CPU lock), or locked afresh: still a CPU build where a GPU is
  // declared, and the warning says why the CUDA build was not taken.
  const std::string cpu_only =
      "warning: default/linux-64: pytorch is the CPU-only build pytorch 2.3.1 cpu_py311h0 although __cuda=12.4=0 "
      "is assumed (declared in the manifest for linux-64); the CUDA build pytorch 2.3.1 cuda120_py311h0 was not "
      "chosen: nothing provides __cuda >=12.6 (assumed: __cuda 12.4 0 (declared in the manifest for linux-64))\n";
  r = run_command("env -u CONDA_OVERRIDE_CUDA " + lock + " --update-all");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, cpu_only);
  fs::remove(tmp.path() / "envlock.lock");
  r = run_command("env -u CONDA_OVERRIDE_CUDA " + lock);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, cpu_only);
  // Both builds fit and the CPU one is the later upload: the warning names the rule that decided
  // (a new-user attack, session 9: it named track_features, version and build number, all equal).
  write_channel(tmp.path() / "gpu", {{"pytorch-2.3.1-cpu_py311h0.conda", record("cpu_py311h0", {}, 2000)},
                                     {"pytorch-2.3.1-cuda120_py311h0.conda",
                                      record("cuda120_py311h0", {"__cuda >=12"}, 1000)}});
  fs::remove(tmp.path() / "envlock.lock");
  r = run_command("env -u CONDA_OVERRIDE_CUDA " + lock);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err,
            "warning: default/linux-64: pytorch is the CPU-only build pytorch 2.3.1 cpu_py311h0 although __cuda=12.4=0 "
            "is assumed (declared in the manifest for linux-64); the CUDA build pytorch 2.3.1 cuda120_py311h0 was not "
            "chosen: both fit; the solver ranked the chosen build higher (same version and build number: the versions "
            "its dependencies select, then the newer upload timestamp)\n");
}

// A CONDA_OVERRIDE_* in the caller's shell decides a lock without being in the manifest (attack
// on issue 15, #12): `lock` says so with the line to declare instead, and `lock --check` (and
// `create`) compare every recorded virtual package with what a lock would assume now, as
// conda-lock's content hash covers its virtual-package spec.
TEST(LockCli, AnOverrideInTheShellIsNamedAndMakesTheLockStaleWithoutIt) {
  TempDir tmp("lock");
  write_channel(tmp.path() / "chan", {{"tool-1.0-0.conda",
                                       {{"name", "tool"}, {"version", "1.0"}, {"build", "0"}, {"build_number", 0},
                                        {"depends", nlohmann::json::array()}, {"subdir", "linux-64"}}}});
  spit(tmp.path() / "envlock.yaml", "channels: [./chan]\nplatforms: [linux-64]\ndependencies: [tool]\n");
  const std::string f = " -f " + q(tmp.path() / "envlock.yaml");
  const std::string unset = "env -u CONDA_OVERRIDE_CUDA -u CONDA_OVERRIDE_GLIBC -u CONDA_OVERRIDE_LINUX "
                            "-u CONDA_OVERRIDE_ARCHSPEC ";
  auto r = run_command(unset + "CONDA_OVERRIDE_CUDA=11.8 " + envlock_cmd() + " lock" + f);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err,
            "hint: CONDA_OVERRIDE_CUDA=11.8 decides __cuda for linux-64: the lockfile records it, and a check or lock "
            "without it assumes otherwise (`envlock lock --check` calls the lockfile stale); declare "
            "`virtual-packages: {linux-64: [__cuda=11.8]}` in the manifest to make it the project's\n");
  // The same override: fresh.
  r = run_command(unset + "CONDA_OVERRIDE_CUDA=11.8 " + envlock_cmd() + " lock --check" + f);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // Without it, or with another value: stale, naming both sets and where the new value came from.
  const std::string lock_path = (tmp.path() / "envlock.lock").string();
  const std::string manifest_path = (tmp.path() / "envlock.yaml").string();
  const std::string recorded = "[__archspec=1=x86_64, __cuda=11.8=0, __glibc=2.28=0, __linux=4.18=0, __unix=0=0]";
  r = run_command(unset + envlock_cmd() + " lock --check" + f);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + lock_path + " no longer satisfies " + manifest_path +
                       " (1 reason):\n"
                       "  - default/linux-64: virtual packages changed: a lock now assumes [__archspec=1=x86_64, "
                       "__glibc=2.28=0, __linux=4.18=0, __unix=0=0], the lockfile assumed " +
                       recorded + "\nhint: run `envlock lock -f " + manifest_path + "` to update the lockfile\n");
  r = run_command(unset + "CONDA_OVERRIDE_CUDA=12.4 " + envlock_cmd() + " lock --check --json" + f);
  EXPECT_EQ(r.exit_code, 1);
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["reasons"].size(), 1u) << r.out;
  EXPECT_EQ(doc["reasons"][0]["kind"], "virtual-packages-changed");
  EXPECT_EQ(doc["reasons"][0]["message"],
            "default/linux-64: virtual packages changed: a lock now assumes [__archspec=1=x86_64, __cuda=12.4=0 "
            "(CONDA_OVERRIDE_CUDA=12.4), __glibc=2.28=0, __linux=4.18=0, __unix=0=0], the lockfile assumed " +
                recorded);
  // Declared in the manifest instead: the lock is the project's, fresh for everyone, no hint.
  spit(tmp.path() / "envlock.yaml",
       "channels: [./chan]\nplatforms: [linux-64]\nvirtual-packages:\n  linux-64: [__cuda=11.8]\ndependencies: [tool]\n");
  r = run_command(unset + envlock_cmd() + " lock" + f);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  r = run_command(unset + envlock_cmd() + " lock --check" + f);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Channel data reaches the terminal escaped (a new-user attack on issue 15: a build string
// "0\e]0;title\a\e[2J" retitled and cleared the terminal from `search`, the unsatisfiable tree
// and the change list of a re-lock; the lockfile and user input were already escaped).
TEST(LockCli, ControlBytesOfChannelRecordsAreEscapedOnTheTerminal) {
  TempDir tmp("lock");
  const std::string evil = "0\x1b]0;t\x07\x1b[2J";
  auto rec = [](const std::string& version, const std::string& build, std::vector<std::string> depends) {
    return nlohmann::json{{"name", "a"},         {"version", version}, {"build", build}, {"build_number", 0},
                          {"depends", depends}, {"subdir", "linux-64"}};
  };
  nlohmann::json records = {{"a-1.0-0.conda", rec("1.0", "0", {})}, {"a-9.0-x.conda", rec("9.0", evil, {"zzz"})}};
  write_channel(tmp.path() / "c", records);
  const std::string shown = "0\\x1b]0;t\\x07\\x1b[2J";
  auto r = run_command("cd " + q(tmp.path()) + " && " + envlock_cmd() + " search a -c ./c --platform linux-64");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string where = "file://" + (tmp.path() / "c").string() + "/linux-64";
  EXPECT_EQ(r.out, "Name  Version  Build                 Channel/subdir\n"
                   "a     9.0      " + shown + "  " + where + "\n"
                   "a     1.0      0                     " + where + "\n");
  spit(tmp.path() / "envlock.yaml", "channels: [./c]\nplatforms: [linux-64]\ndependencies: [a 9.0]\n");
  const std::string f = " -f " + q(tmp.path() / "envlock.yaml");
  r = run_command(envlock_cmd() + " lock" + f);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a 9.0 " + shown + "\n"), std::string::npos) << r.err;
  // Locked at 1.0, then a zzz appears and `a` moves to the evil build: the change list escapes it.
  spit(tmp.path() / "envlock.yaml", "channels: [./c]\nplatforms: [linux-64]\ndependencies: [a]\n");
  ASSERT_EQ(run_command(envlock_cmd() + " lock" + f).exit_code, 0);
  records["zzz-1.0-0.conda"] = {{"name", "zzz"}, {"version", "1.0"}, {"build", "0"}, {"build_number", 0},
                                {"depends", nlohmann::json::array()}, {"subdir", "linux-64"}};
  write_channel(tmp.path() / "c", records);
  r = run_command(envlock_cmd() + " lock --update a" + f);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "locked " + (tmp.path() / "envlock.lock").string() +
                       "\n  default / linux-64: 2 packages (1 added, 0 removed, 1 changed)\n"
                       "      ~ a 1.0 0 -> 9.0 " + shown + "\n      + zzz 1.0 0\n");
}

// The channel part of a spec (a new-user attack on issue 15, #4): `search` with -c dropped it and
// listed every channel's records; `lock` blamed the package name when only the channel part
// matched no channel (a directory channel has no name but its file:// URL, as in conda).
TEST(LockCli, TheChannelPartOfASpecFiltersSearchAndIsNamedByLock) {
  TempDir tmp("lock");
  auto rec = [](const std::string& version) {
    return nlohmann::json{{"name", "a"},     {"version", version},
                          {"build", "0"},    {"build_number", 0},
                          {"depends", nlohmann::json::array()}, {"subdir", "linux-64"}};
  };
  write_channel(tmp.path() / "hi", {{"a-1.0-0.conda", rec("1.0")}});
  write_channel(tmp.path() / "lo", {{"a-3.0-0.conda", rec("3.0")}});
  const std::string hi = "file://" + (tmp.path() / "hi").string(), lo = "file://" + (tmp.path() / "lo").string();
  const std::string search = "cd " + q(tmp.path()) + " && " + envlock_cmd() + " search --platform linux-64 -c ./lo -c ./hi ";
  auto r = run_command(search + "'hi::a'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: no package matches 'hi::a' in " + lo + ", " + hi +
                       " (linux-64 and noarch)\nhint: the spec's channel part must name one of the channels searched (a "
                       "directory by its file:// URL), or leave it out\n");
  r = run_command(search + "'" + hi + "::a'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Name  Version  Build  Channel/subdir\na     1.0      0      " + hi + "/linux-64\n");
  spit(tmp.path() / "envlock.yaml", "channels: [./hi, ./lo]\nplatforms: [linux-64]\ndependencies: [\"lo::a\"]\n");
  r = run_command(envlock_cmd() + " lock -f " + q(tmp.path() / "envlock.yaml"));
  EXPECT_EQ(r.exit_code, 1);
  const std::string manifest = (tmp.path() / "envlock.yaml").string();
  EXPECT_EQ(r.err, "error: " + manifest + ":3:16: no package named 'a' in a channel named 'lo' (the channel part of "
                   "'lo::a'); searched " + hi + ", " + lo + " (linux-64 and noarch)\n"
                   "  lo::a (requested at " + manifest + ":3:16)\n"
                   "  └─ no package matches 'lo::a'; no package named 'a' in the channels for this platform\n"
                   "hint: name a channel of the manifest: a named channel (conda-forge), a channel's URL (file:///... "
                   "for a directory), or the NAME of a `{url: ..., name: NAME}` entry\n");
}

TEST(LockLibrary, VirtualPackagesDefaultsManifestAndOverrides) {
  TempDir tmp("lock");
  auto m = manifest_from("channels: [./cf]\nplatforms: [linux-64, osx-arm64]\nvirtual-packages:\n  linux-64: [__cuda=12.4, "
                         "__glibc=2.17]\ndependencies: [python]\n",
                         tmp.path());
  auto none = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  auto linux = lock_virtual_packages(m, "linux-64", none);
  ASSERT_TRUE(linux.ok());
  std::vector<std::string> got;
  for (const auto& v : *linux) got.push_back(v.to_string());
  EXPECT_EQ(got, (std::vector<std::string>{"__archspec=1=x86_64", "__cuda=12.4=0", "__glibc=2.17=0", "__linux=4.18=0",
                                           "__unix=0=0"}));
  auto osx = lock_virtual_packages(m, "osx-arm64", none);
  ASSERT_TRUE(osx.ok());
  got.clear();
  for (const auto& v : *osx) got.push_back(v.to_string());
  EXPECT_EQ(got, (std::vector<std::string>{"__archspec=1=arm64", "__osx=13.0=0", "__unix=0=0"}));

  auto env = [](const std::string& k) -> std::optional<std::string> {
    if (k == "CONDA_OVERRIDE_CUDA") return std::string("");
    if (k == "CONDA_OVERRIDE_GLIBC") return std::string("2.35");
    return std::nullopt;
  };
  auto over = lock_virtual_packages(m, "linux-64", env);
  ASSERT_TRUE(over.ok());
  got.clear();
  for (const auto& v : *over) got.push_back(v.to_string());
  EXPECT_EQ(got, (std::vector<std::string>{"__archspec=1=x86_64", "__glibc=2.35=0", "__linux=4.18=0", "__unix=0=0"}));

  auto bad = lock_virtual_packages(m, "linux-64", [](const std::string& k) -> std::optional<std::string> {
    if (k == "CONDA_OVERRIDE_GLIBC") return std::string("two..three");
    return std::nullopt;
  });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where, "CONDA_OVERRIDE_GLIBC");
  // A new-user attack (issue 15, #2): " 12" was recorded as `__cuda= 12=0`; a build or an
  // archspec with '=' or spaces passed too. Each is refused, naming the variable.
  const std::pair<const char*, const char*> refused[] = {
      {"CONDA_OVERRIDE_CUDA", " 12"}, {"CONDA_OVERRIDE_CUDA", "12.4=x"}, {"CONDA_OVERRIDE_CUDA", "banana"},
      {"CONDA_OVERRIDE_ARCHSPEC", "x86_64 v3"}, {"CONDA_OVERRIDE_ARCHSPEC", "a=b"}};
  for (const auto& [var, value] : refused) {
    auto r = lock_virtual_packages(m, "linux-64", [&](const std::string& k) -> std::optional<std::string> {
      if (k == var) return std::string(value);
      return std::nullopt;
    });
    ASSERT_FALSE(r.ok()) << var << "=" << value;
    EXPECT_EQ(r.error().where, var);
  }
}

TEST(LockLibrary, GpuHintWhenTheHostHasADriverAndNoCudaIsDeclared) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("lock");
  testing::make_conda_forge_subset(tmp.path() / "cf", {"linux-64"});
  auto m = manifest_from("channels: [./cf]\nplatforms: [linux-64]\ndependencies: [six]\n", tmp.path());
  LockDiagnostics diag;
  LockOptions o;
  o.diagnostics = &diag;
  Host host;  // no environment; a driver supporting CUDA 12.4
  host.cuda_driver_version = []() -> std::optional<std::string> { return std::string("12.4"); };
  o.host = &host;
  auto lock = lock_manifest(m, o);
  ASSERT_TRUE(lock.ok()) << lock.error().to_string();
  ASSERT_EQ(diag.hints.size(), 1u);
  EXPECT_NE(diag.hints[0].find("__cuda=12.4"), std::string::npos) << diag.hints[0];
  // Without a driver: no hint; and the lock is the same either way.
  LockDiagnostics quiet;
  o.diagnostics = &quiet;
  host.cuda_driver_version = []() -> std::optional<std::string> { return std::nullopt; };
  auto lock2 = lock_manifest(m, o);
  ASSERT_TRUE(lock2.ok());
  EXPECT_TRUE(quiet.hints.empty());
  EXPECT_EQ(lock->to_yaml(), lock2->to_yaml());
}

// The lock reads the machine through the one host seam (issue 19 step 3): the GPU hint asks the
// Host's cuda_driver_version, only when some platform declares no __cuda, and CONDA_OVERRIDE_*
// come from the Host's environment, not the process's.
TEST(LockLibrary, TheGpuHintAndTheOverridesAreAskedOfTheHost) {
  TempDir tmp("lock");
  write_channel(tmp.path() / "ch", {{"a-1.0-0.conda", {{"name", "a"}, {"version", "1.0"}, {"build", "0"},
                                                       {"build_number", 0}, {"depends", nlohmann::json::array()},
                                                       {"subdir", "linux-64"}}}});
  int asked = 0;
  Host host;
  host.getenv = [](const std::string& name) -> std::optional<std::string> {
    if (name == "CONDA_OVERRIDE_GLIBC") return std::string("2.17");
    return std::nullopt;
  };
  host.cuda_driver_version = [&asked]() -> std::optional<std::string> {
    ++asked;
    return std::string("12.2");
  };
  LockDiagnostics diag;
  LockOptions o;
  o.diagnostics = &diag;
  o.host = &host;
  o.repodata.cache_dir = tmp.path() / "cache";
  auto plain = lock_manifest(manifest_from("channels: [./ch]\nplatforms: [linux-64]\ndependencies: [a]\n", tmp.path()), o);
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  EXPECT_EQ(asked, 1);
  const std::string glibc_hint =
      "CONDA_OVERRIDE_GLIBC=2.17 decides __glibc for linux-64: the lockfile records it, and a check or lock without it "
      "assumes otherwise (`envlock lock --check` calls the lockfile stale); declare `virtual-packages: {linux-64: "
      "[__glibc=2.17]}` in the manifest to make it the project's";
  EXPECT_EQ(diag.hints, (std::vector<std::string>{
                            "this host has an NVIDIA driver supporting CUDA 12.2, but the manifest declares no __cuda: "
                            "the lock assumes no GPU; add `virtual-packages: {linux-64: [__cuda=12.2]}` to lock GPU builds",
                            glibc_hint}));
  std::vector<std::string> vps;
  for (const auto& vp : plain->environments.at("default").platforms.at("linux-64").virtual_packages)
    vps.push_back(vp.to_string());
  EXPECT_EQ(vps, (std::vector<std::string>{"__archspec=1=x86_64", "__glibc=2.17=0", "__linux=4.18=0", "__unix=0=0"}));
  // __cuda declared for every platform: the driver is not asked, and no GPU hint.
  LockDiagnostics declared;
  o.diagnostics = &declared;
  auto gpu = lock_manifest(manifest_from("channels: [./ch]\nplatforms: [linux-64]\nvirtual-packages: {linux-64: "
                                         "[__cuda=12.0]}\ndependencies: [a]\n", tmp.path()), o);
  ASSERT_TRUE(gpu.ok()) << gpu.error().to_string();
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(declared.hints, std::vector<std::string>{glibc_hint});
}

TEST(LockLibrary, PytorchChannelAboveCondaForgeSubset) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("lock");
  testing::make_conda_forge_subset(tmp.path() / "cf", {"linux-64"});
  testing::make_channel(tmp.path() / "pytorch",
                        {{"linux-64", "conda__rattler/test-data__channels__pytorch__linux-64__repodata.json"}});
  auto m = manifest_from("channels: [./pytorch, ./cf]\nplatforms: [linux-64]\ndependencies: [cuda92, six]\n",
                         tmp.path());
  LockOptions o;
  o.repodata.cache_dir = tmp.path() / "cache";
  Host host = Host::system();  // the process environment, no driver
  host.cuda_driver_version = []() -> std::optional<std::string> { return std::nullopt; };
  o.host = &host;
  auto lock = lock_manifest(m, o);
  ASSERT_TRUE(lock.ok()) << lock.error().to_string();
  const auto& lp = lock->environments.at("default").platforms.at("linux-64");
  EXPECT_EQ(lp.channels.size(), 2u);
  const LockedPackage* cuda = pkg(*lock, "default", "linux-64", "cuda92");
  ASSERT_NE(cuda, nullptr);
  EXPECT_TRUE(cuda->channel.ends_with("/pytorch")) << cuda->channel;
  const LockedPackage* six = pkg(*lock, "default", "linux-64", "six");
  ASSERT_NE(six, nullptr);
  EXPECT_TRUE(six->channel.ends_with("/cf")) << six->channel;
  // The second lock reloads the repodata index cache and gives the same lockfile.
  auto again = lock_manifest(m, o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->to_yaml(), lock->to_yaml());
}

}  // namespace
}  // namespace envlock
