// Channels as teams have them, end to end through the CLI against servers on 127.0.0.1
// (tests/support/http_server.py): CEP-16 sharded repodata locking exactly as the unsharded
// channel does, and private channels (basic auth, bearer token, path token, the credentials file,
// ~/.netrc) whose server refuses repodata and packages without credentials, on `lock`,
// `install` and `create`, with no secret in any output, lockfile or cache file name.
#include <gtest/gtest.h>

#include <cstring>
#include <regex>

#include "channel/corpus_channel.hpp"
#include "envlock/lockfile.hpp"
#include "support/http_server.hpp"
#include "support/run_command.hpp"
#include "support/shard_writer.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using testing::envlock_cmd;
using testing::run_command;
using testing::slurp;
using testing::spit;
using testing::TempDir;

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

/// Names of every file under `dir`, and the text of the small ones.
std::string everything_under(const fs::path& dir) {
  std::string out;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    out += e.path().string() + "\n";
    if (e.is_regular_file() && e.file_size() < (1 << 20)) out += slurp(e.path()) + "\n";
  }
  return out;
}

// --- CEP-16 ------------------------------------------------------------------------------------

TEST(ShardedLock, LocksByteIdenticallyToTheUnshardedChannel) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("shardlock");
  const fs::path www = tmp.path() / "www";
  // The same conda-forge records twice: plain (repodata.json + .zst) and sharded only.
  testing::make_conda_forge_subset(tmp.path() / "plain/cf", {"linux-64"});
  for (const char* s : {"linux-64", "noarch"})
    testing::write_shards(slurp(tmp.path() / "plain/cf" / s / "repodata.json"), tmp.path() / "sharded/cf" / s, s);
  fs::create_directories(www);
  fs::rename(tmp.path() / "plain/cf", www / "cf");
  testing::HttpServer server(www);
  ASSERT_TRUE(server.ok()) << server.error();
  spit(tmp.path() / "envlock.yaml", "channels: [" + server.url("/cf") +
                                        "]\nplatforms: [linux-64]\ndependencies: [python 3.9.* *_cpython, pip, curl]\n");
  auto lock = [&](const std::string& out, const std::string& cache) {
    return run_command(envlock_cmd() + " lock -f " + q(tmp.path() / "envlock.yaml") + " -o " + q(tmp.path() / out),
                       {{"ENVLOCK_CACHE_DIR", (tmp.path() / cache).string()}});
  };
  auto plain = lock("plain.lock", "cache-plain");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(server.request_count("/cf/linux-64/repodata_shards.msgpack.zst"), 1);  // asked, 404
  EXPECT_EQ(server.request_count("/cf/linux-64/repodata.json.zst"), 1);

  // Swap in the sharded copy (no repodata.json at all) and lock with a cold cache.
  fs::rename(www / "cf", tmp.path() / "plain-served");
  fs::rename(tmp.path() / "sharded/cf", www / "cf");
  auto sharded = lock("sharded.lock", "cache-sharded");
  ASSERT_EQ(sharded.exit_code, 0) << sharded.err;
  EXPECT_EQ(slurp(tmp.path() / "sharded.lock"), slurp(tmp.path() / "plain.lock"));
  EXPECT_EQ(std::regex_replace(sharded.out, std::regex("sharded.lock"), "X"),
            std::regex_replace(plain.out, std::regex("plain.lock"), "X"));
  EXPECT_EQ(sharded.err, plain.err);
  // Only reachable names' shards were fetched, each once; repodata.json was never asked for.
  int shard_requests = 0, shard_files = 0;
  for (const auto& [path, n] : testing::counts_under(server.request_counts(), "/shards/")) {
    shard_requests += n;
    ++shard_files;
  }
  std::size_t all_shards = 0;
  for (const char* s : {"linux-64", "noarch"})
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(www / "cf" / s / "shards")) ++all_shards;
  EXPECT_EQ(shard_requests, shard_files);
  EXPECT_GT(shard_files, 5);
  // The subset is itself the closure of a few requests, so most of its names are reachable;
  // Shards.PrefetchFetchesOnlyWhatTheRequestReaches checks the walk name by name.
  EXPECT_LT(static_cast<std::size_t>(shard_files), all_shards);
  EXPECT_EQ(server.request_count("/cf/linux-64/repodata.json"), 1);  // the plain lock's fallback only
  EXPECT_EQ(server.request_count("/cf/noarch/repodata.json.zst"), 1);

  // Warm: the index is revalidated, no shard is fetched again.
  auto warm = run_command(envlock_cmd() + " lock --update-all -f " + q(tmp.path() / "envlock.yaml") + " -o " +
                              q(tmp.path() / "sharded.lock"),
                          {{"ENVLOCK_CACHE_DIR", (tmp.path() / "cache-sharded").string()}});
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  int again = 0;
  for (const auto& [path, n] : testing::counts_under(server.request_counts(), "/shards/")) again += n;
  EXPECT_EQ(again, shard_requests);
  EXPECT_EQ(server.request_count("/cf/linux-64/repodata_shards.msgpack.zst"), 3);
}

// --- private channels ---------------------------------------------------------------------------

const fs::path kPixi = fs::path(ENVLOCK_SHARED_DIR) / "corpus/packages/prefix-dev__pixi";

/// pixi's dummy_channel_1 (real .conda packages) as `<dest>` for linux-64 and noarch.
void make_dummy_channel(const fs::path& dest) {
  const std::string stem = "tests__data__channels__channels__dummy_channel_1__";
  for (const char* sd : {"linux-64", "noarch"}) {
    fs::create_directories(dest / sd);
    for (const auto& e : fs::directory_iterator(kPixi)) {
      std::string n = e.path().filename().string();
      if (n.starts_with(stem + sd + "__")) fs::copy_file(e.path(), dest / sd / n.substr(stem.size() + std::strlen(sd) + 2));
    }
  }
}

struct Private {
  const char* label;
  std::vector<std::string> server;  ///< http_server.py switches
  std::string userinfo;             ///< in the channel URL (user:pass@), or empty
  std::string path;                 ///< the channel's path on the server (with /t/<token> when given in the URL)
  std::string credentials;          ///< the credentials file's text, or empty
  std::string netrc;                ///< ~/.netrc's text, or empty
  bool lockfile_alone = true;       ///< `install -l` works without the manifest (credentials outside the URL)
};

class PrivateChannel : public ::testing::TestWithParam<Private> {};

TEST_P(PrivateChannel, LocksAndInstallsWithCredentialsAndPrintsNoSecret) {
  if (!fs::is_directory(kPixi)) GTEST_SKIP() << "the shared corpus is absent (looked in " << kPixi << ")";
  const Private& c = GetParam();
  TempDir tmp(c.label);
  make_dummy_channel(tmp.path() / "www/dc");
  testing::HttpServer server(tmp.path() / "www", c.server);
  ASSERT_TRUE(server.ok()) << server.error();
  const std::string host = "127.0.0.1:" + std::to_string(server.port());
  const std::string url = "http://" + c.userinfo + host + c.path;
  spit(tmp.path() / "p/envlock.yaml", "channels: [" + url + "]\nplatforms: [linux-64]\ndependencies: [dummy-a]\n");
  std::map<std::string, std::string> env{{"ENVLOCK_CACHE_DIR", (tmp.path() / "cache").string()},
                                         {"ENVLOCK_PKGS_DIR", (tmp.path() / "pkgs").string()},
                                         {"HOME", (tmp.path() / "home").string()},
                                         {"XDG_CONFIG_HOME", ""},
                                         {"NETRC", ""},
                                         {"ENVLOCK_AUTH_FILE", ""}};
  if (!c.credentials.empty()) {
    spit(tmp.path() / "creds.json", c.credentials);
    env["ENVLOCK_AUTH_FILE"] = (tmp.path() / "creds.json").string();
  }
  if (!c.netrc.empty()) spit(tmp.path() / "home/.netrc", c.netrc);
  fs::create_directories(tmp.path() / "home");

  std::string seen;
  auto run = [&](const std::string& args, const std::map<std::string, std::string>& e) {
    auto r = run_command(envlock_cmd() + " " + args, e);
    seen += r.out + r.err;
    return r;
  };
  // lock: repodata through the credentials.
  auto lock = run("lock -f " + q(tmp.path() / "p/envlock.yaml"), env);
  ASSERT_EQ(lock.exit_code, 0) << lock.err;
  auto json = run("lock --json --update-all -f " + q(tmp.path() / "p/envlock.yaml"), env);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const std::string lockfile = slurp(tmp.path() / "p/envlock.lock");
  EXPECT_NE(lockfile.find("url: " + server.url("/dc/linux-64/dummy-a-0.1.0-hb0f4dca_0.conda")), std::string::npos)
      << lockfile;
  // create: packages through the manifest's credentials.
  auto create = run("create -f " + q(tmp.path() / "p/envlock.yaml") + " -p " + q(tmp.path() / "env1"), env);
  ASSERT_EQ(create.exit_code, 0) << create.err;
  EXPECT_TRUE(fs::exists(tmp.path() / "env1/conda-meta/dummy-a-0.1.0-hb0f4dca_0.json"));
  // install from the lockfile alone, with a cold package cache.
  auto env2 = env;
  env2["ENVLOCK_PKGS_DIR"] = (tmp.path() / "pkgs2").string();
  auto install = run("install --json -l " + q(tmp.path() / "p/envlock.lock") + " -p " + q(tmp.path() / "env2"), env2);
  if (c.lockfile_alone) {
    ASSERT_EQ(install.exit_code, 0) << install.err;
    EXPECT_TRUE(fs::exists(tmp.path() / "env2/conda-meta/dummy-a-0.1.0-hb0f4dca_0.json"));
  } else {
    // The URL's credentials are not in the lockfile: refused (401), and told where to put them.
    EXPECT_EQ(install.exit_code, 1);
    EXPECT_NE((install.out + install.err).find("HTTP 401"), std::string::npos) << install.out << install.err;
    auto mirror = run("install -l " + q(tmp.path() / "p/envlock.lock") + " -p " + q(tmp.path() / "env2") +
                          " --channel-url dc=" + url,
                      env2);
    ASSERT_EQ(mirror.exit_code, 0) << mirror.err;
    EXPECT_TRUE(fs::exists(tmp.path() / "env2/conda-meta/dummy-a-0.1.0-hb0f4dca_0.json"));
  }
  // Without any credentials the server refuses repodata, and says so without a secret.
  auto bare = env;
  bare["ENVLOCK_AUTH_FILE"] = "";
  bare["HOME"] = (tmp.path() / "nohome").string();
  bare["ENVLOCK_CACHE_DIR"] = (tmp.path() / "cache-bare").string();
  spit(tmp.path() / "q/envlock.yaml", "channels: [" + server.url("/dc") + "]\nplatforms: [linux-64]\ndependencies: [dummy-a]\n");
  auto refused = run("lock -f " + q(tmp.path() / "q/envlock.yaml"), bare);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("HTTP 401"), std::string::npos) << refused.err;

  seen += lockfile + everything_under(tmp.path() / "cache") + everything_under(tmp.path() / "pkgs") +
          everything_under(tmp.path() / "env1/conda-meta");
  EXPECT_EQ(seen.find("SECRET"), std::string::npos) << seen.substr(seen.find("SECRET") > 200 ? seen.find("SECRET") - 200 : 0, 400);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, PrivateChannel,
    ::testing::Values(
        Private{"basic-url", {"--auth", "alice:pw-SECRET-1"}, "alice:pw-SECRET-1@", "/dc", "", "", false},
        Private{"path-token-url", {"--path-token", "tk-SECRET-2"}, "", "/t/tk-SECRET-2/dc", "", "", false},
        Private{"bearer-file", {"--bearer", "tok-SECRET-3"}, "", "/dc", R"({"127.0.0.1": {"BearerToken": "tok-SECRET-3"}})", "", true},
        Private{"basic-file", {"--auth", "bob:pw-SECRET-4"}, "", "/dc",
                R"({"*.0.0.1": {"BearerToken": "wrong"}, "127.0.0.1": {"BasicHTTP": {"username": "bob", "password": "pw-SECRET-4"}}})",
                "", true},
        Private{"conda-token-file", {"--path-token", "tk-SECRET-5"}, "", "/dc", R"({"127.0.0.1": {"CondaToken": "tk-SECRET-5"}})", "",
                true},
        Private{"netrc", {"--auth", "carol:pw-SECRET-6"}, "", "/dc", "", "machine 127.0.0.1 login carol password pw-SECRET-6\n",
                true}),
    [](const ::testing::TestParamInfo<Private>& i) {
      std::string n = i.param.label;
      for (auto& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

TEST(PrivateChannel, CredentialsFileErrorsNameTheFileNotTheSecret) {
  TempDir tmp("creds");
  spit(tmp.path() / "envlock.yaml", "channels: [http://127.0.0.1:9/x]\nplatforms: [linux-64]\ndependencies: [a]\n");
  spit(tmp.path() / "creds.json", R"({"127.0.0.1": {"BasicHTTP": {"username": "u", "password": 7}}, "x": "SECRET")");
  auto r = run_command(envlock_cmd() + " lock -f " + q(tmp.path() / "envlock.yaml"),
                       {{"ENVLOCK_AUTH_FILE", (tmp.path() / "creds.json").string()},
                        {"ENVLOCK_CACHE_DIR", (tmp.path() / "cache").string()}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + (tmp.path() / "creds.json").string() +
                       ": the credentials file is not valid JSON (at byte 77)\n"
                       "hint: write a JSON object such as {\"host\": {\"BearerToken\": \"...\"}}\n");
}

// --- mirrors -------------------------------------------------------------------------------------

TEST(Mirror, NamedMirrorMatchesNameSpecsAndInstallTakesAnotherMirror) {
  if (!fs::is_directory(kPixi)) GTEST_SKIP() << "the shared corpus is absent (looked in " << kPixi << ")";
  TempDir tmp("mirror");
  const fs::path www = tmp.path() / "www";
  make_dummy_channel(www / "artifactory/api/conda/dc-remote");
  testing::HttpServer server(www);
  ASSERT_TRUE(server.ok()) << server.error();
  const std::string mirror = server.url("/artifactory/api/conda/dc-remote");
  std::map<std::string, std::string> env{{"ENVLOCK_CACHE_DIR", (tmp.path() / "cache").string()},
                                         {"ENVLOCK_PKGS_DIR", (tmp.path() / "pkgs").string()}};
  spit(tmp.path() / "envlock.yaml", "channels:\n  - {url: " + mirror + ", name: dummy}\nplatforms: [linux-64]\n"
                                    "dependencies: [\"dummy::dummy-a\"]\n");
  auto lock = run_command(envlock_cmd() + " lock -f " + q(tmp.path() / "envlock.yaml"), env);
  ASSERT_EQ(lock.exit_code, 0) << lock.err;
  const std::string lockfile = slurp(tmp.path() / "envlock.lock");
  EXPECT_NE(lockfile.find("url: " + mirror + "/linux-64/dummy-a-0.1.0-hb0f4dca_0.conda"), std::string::npos) << lockfile;
  // The channel is recorded by the URL it was read from and the name the manifest gives it.
  EXPECT_NE(lockfile.find("        channels:\n          - " + mirror + "\n        channel_names:\n          " + mirror +
                          ": dummy\n"),
            std::string::npos)
      << lockfile;
  // Another spelling of the name that the manifest does not give matches nothing.
  spit(tmp.path() / "other.yaml", "channels:\n  - {url: " + mirror + ", name: dummy}\nplatforms: [linux-64]\n"
                                  "dependencies: [\"conda-forge::dummy-a\"]\n");
  EXPECT_EQ(run_command(envlock_cmd() + " lock -f " + q(tmp.path() / "other.yaml"), env).exit_code, 1);

  // The first mirror goes away; install from the lockfile through a second one, by name.
  fs::rename(www / "artifactory", tmp.path() / "gone");
  make_dummy_channel(www / "mirror2/dc");
  auto direct = run_command(envlock_cmd() + " install -l " + q(tmp.path() / "envlock.lock") + " -p " + q(tmp.path() / "env"), env);
  EXPECT_EQ(direct.exit_code, 1);
  EXPECT_NE(direct.err.find("HTTP 404"), std::string::npos) << direct.err;
  auto via = run_command(envlock_cmd() + " install -l " + q(tmp.path() / "envlock.lock") + " -p " + q(tmp.path() / "env") +
                             " --channel-url dc-remote=" + server.url("/mirror2/dc"),
                         env);
  ASSERT_EQ(via.exit_code, 0) << via.err;
  EXPECT_TRUE(fs::exists(tmp.path() / "env/conda-meta/dummy-a-0.1.0-hb0f4dca_0.json"));
  EXPECT_EQ(slurp(tmp.path() / "envlock.lock"), lockfile);  // not relocked
  // The recorded name picks the channel too.
  fs::remove_all(tmp.path() / "env");
  auto by_name = run_command(envlock_cmd() + " install -l " + q(tmp.path() / "envlock.lock") + " -p " +
                                 q(tmp.path() / "env") + " --channel-url dummy=" + server.url("/mirror2/dc"),
                             env);
  ASSERT_EQ(by_name.exit_code, 0) << by_name.err;
  EXPECT_TRUE(fs::exists(tmp.path() / "env/conda-meta/dummy-a-0.1.0-hb0f4dca_0.json"));
  auto unknown = run_command(envlock_cmd() + " install -l " + q(tmp.path() / "envlock.lock") + " -p " +
                                 q(tmp.path() / "env") + " --channel-url nope=" + server.url("/mirror2/dc"),
                             env);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err, "error: --channel-url: 'nope' names no channel of the lockfile\nhint: the lockfile's channels: " +
                             mirror + "\n");
}

TEST(Mirror, ChannelNamesAreReadBackAndCheckedAgainstTheChannels) {
  const std::string head =
      "version: 1\nmanifest_hash: sha256:00\nenvironments:\n  default:\n    requested: []\n    platforms:\n"
      "      linux-64:\n        channels:\n          - https://m.example.com/a\n          - https://m.example.com/b\n";
  auto ok = Lockfile::parse(head + "        channel_names:\n          https://m.example.com/b: conda-forge\n"
                                   "        packages: []\n",
                            "envlock.lock");
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  const LockedPlatform& lp = ok->environments.at("default").platforms.at("linux-64");
  EXPECT_EQ(lp.channel_names, (std::vector<std::string>{"", "conda-forge"}));
  EXPECT_EQ(ok->to_yaml({}).find("channel_names:\n          https://m.example.com/b: conda-forge\n") != std::string::npos, true)
      << ok->to_yaml({});
  auto old = Lockfile::parse(head + "        packages: []\n", "envlock.lock");  // written before names
  ASSERT_TRUE(old.ok()) << old.error().to_string();
  EXPECT_TRUE(old->environments.at("default").platforms.at("linux-64").channel_names.empty());
  EXPECT_EQ(old->to_yaml({}).find("channel_names"), std::string::npos);
  auto bad = Lockfile::parse(head + "        channel_names:\n          https://m.example.com/c: conda-forge\n"
                                    "        packages: []\n",
                             "envlock.lock");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().to_string(),
            "envlock.lock:12:11: channel_names of platform linux-64 names 'https://m.example.com/c', which is not one "
            "of its channels\n            https://m.example.com/c: conda-forge\n            ^");
}

TEST(Mirror, ChannelAliasOverHttpAndFile) {
  if (!fs::is_directory(kPixi)) GTEST_SKIP() << "the shared corpus is absent (looked in " << kPixi << ")";
  TempDir tmp("alias");
  make_dummy_channel(tmp.path() / "www/prefix/dummy");
  testing::HttpServer server(tmp.path() / "www");
  ASSERT_TRUE(server.ok()) << server.error();
  std::map<std::string, std::string> env{{"ENVLOCK_CACHE_DIR", (tmp.path() / "cache").string()}};
  for (const std::string& alias : std::vector<std::string>{server.url("/prefix"), "file://" + (tmp.path() / "www/prefix").string()}) {
    spit(tmp.path() / "envlock.yaml", "channel-alias: " + alias + "\nchannels: [dummy]\nplatforms: [linux-64]\n"
                                      "dependencies: [\"dummy::dummy-a\"]\n");
    auto lock = run_command(envlock_cmd() + " lock --update-all -f " + q(tmp.path() / "envlock.yaml"), env);
    ASSERT_EQ(lock.exit_code, 0) << alias << "\n" << lock.err;
    EXPECT_NE(slurp(tmp.path() / "envlock.lock").find("url: " + alias + "/dummy/linux-64/dummy-a-0.1.0-hb0f4dca_0.conda"),
              std::string::npos)
        << slurp(tmp.path() / "envlock.lock");
  }
}

// --- a subdir the channel does not serve --------------------------------------------------------

TEST(MissingSubdir, NoarchIsRequiredUnlessTheChannelListsItsSubdirs) {
  if (!fs::is_directory(kPixi)) GTEST_SKIP() << "the shared corpus is absent (looked in " << kPixi << ")";
  TempDir tmp("nonoarch");
  make_dummy_channel(tmp.path() / "www/dc");
  fs::remove_all(tmp.path() / "www/dc/noarch");
  testing::HttpServer server(tmp.path() / "www");
  ASSERT_TRUE(server.ok()) << server.error();
  std::map<std::string, std::string> env{{"ENVLOCK_CACHE_DIR", (tmp.path() / "cache").string()}};
  spit(tmp.path() / "envlock.yaml", "channels: [" + server.url("/dc") + "]\nplatforms: [linux-64]\ndependencies: [dummy-a]\n");
  auto r = run_command(envlock_cmd() + " lock -f " + q(tmp.path() / "envlock.yaml"), env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + server.url("/dc") +
                       ": channel unavailable or invalid: the server has no noarch/repodata.json (HTTP 404)\n"
                       "  declared at " + (tmp.path() / "envlock.yaml").string() + ":1:12\n"
                       "hint: check the channel URL; a channel that serves no noarch subdir can say so in the manifest: "
                       "{url: " + server.url("/dc") + ", subdirs: [linux-64]}\n");
  EXPECT_FALSE(fs::exists(tmp.path() / "envlock.lock"));
  spit(tmp.path() / "envlock.yaml", "channels:\n  - {url: " + server.url("/dc") +
                                        ", subdirs: [linux-64]}\nplatforms: [linux-64]\ndependencies: [dummy-a]\n");
  auto ok = run_command(envlock_cmd() + " lock -f " + q(tmp.path() / "envlock.yaml"), env);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

}  // namespace
}  // namespace envlock
