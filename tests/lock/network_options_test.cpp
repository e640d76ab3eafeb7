// Network settings as options (--connect-timeout, --read-timeout, --low-speed-limit, --max-time,
// --retries, --ca-bundle) on every command that transfers: checked as they are parsed (exit 2
// naming the option), and winning over the ENVLOCK_* environment variables; a variable that cannot
// be used is named in a warning.
#include <gtest/gtest.h>

#include <chrono>

#include "channel/corpus_channel.hpp"
#include "support/http_server.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using testing::envlock_cmd;
using testing::run_command;
using testing::spit;
using testing::TempDir;

/// `<www>/ch`: a channel with one noarch package, foo 1.0.
void make_channel(const fs::path& www) {
  spit(www / "ch/noarch/repodata.json",
       R"({"info":{"subdir":"noarch"},"packages":{"foo-1.0-0.tar.bz2":{"name":"foo","version":"1.0","build":"0",)"
       R"("build_number":0,"depends":[],"subdir":"noarch","sha256":")" + std::string(64, '0') + R"(","size":10}}})");
  spit(www / "ch/linux-64/repodata.json", R"({"info":{"subdir":"linux-64"},"packages":{}})");
}

TEST(NetworkOptions, BadValuesAreUsageErrorsNamingTheOption) {
  TempDir tmp("netopt");
  const std::string m = "'" + (tmp.path() / "envlock.yaml").string() + "'";
  const std::string p = "'" + (tmp.path() / "env").string() + "'";
  const struct {
    std::string word, args;
  } commands[] = {{"lock", "lock -f " + m},
                  {"create", "create -f " + m},
                  {"install", "install -l " + m + " -p " + p},
                  {"snapshot", "snapshot deploy " + m + " -p " + p}};
  for (const auto& c : commands) {
    const std::string hint = "hint: run `envlock " + c.word + " --help` for its options\n";
    const std::string head = "error: " + c.word + ": ";
    auto r = run_command(envlock_cmd() + " " + c.args + " --connect-timeout soon");
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, head + "--connect-timeout: 'soon' is not a whole number of seconds (at most 6 digits)\n" + hint);
    r = run_command(envlock_cmd() + " " + c.args + " --read-timeout 0");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, head + "--read-timeout: must be at least 1 second\n" + hint);
    r = run_command(envlock_cmd() + " " + c.args + " --low-speed-limit 0");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, head + "--low-speed-limit: must be at least 1\n" + hint);
    r = run_command(envlock_cmd() + " " + c.args + " --max-time 0");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, head + "--max-time: must be at least 1 second\n" + hint);
    r = run_command(envlock_cmd() + " " + c.args + " --retries -1");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, head + "--retries: '-1' is not a whole number (at most 6 digits)\n" + hint);
    const std::string missing = (tmp.path() / "no-such-ca.pem").string();
    r = run_command(envlock_cmd() + " " + c.args + " --ca-bundle '" + missing + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, head + "--ca-bundle: " + missing + " is not a readable file (give a PEM file of CA certificates)\n" + hint);
    r = run_command(envlock_cmd() + " " + c.args + " --ca-bundle '" + tmp.path().string() + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, head + "--ca-bundle: " + tmp.path().string() +
                         " is not a readable file (give a PEM file of CA certificates)\n" + hint);
  }
}

TEST(NetworkOptions, RetriesOptionWinsOverTheEnvironment) {
  TempDir tmp("netopt");
  make_channel(tmp.path() / "www");
  // The first two requests for noarch/repodata.json fail with 503.
  testing::HttpServer server(tmp.path() / "www", {"--fail", "/ch/noarch/repodata.json=503:2"});
  ASSERT_TRUE(server.ok()) << server.error();
  spit(tmp.path() / "envlock.yaml", "channels: [" + server.url("/ch") + "]\nplatforms: [linux-64]\ndependencies: [foo]\n");
  const std::string lock = envlock_cmd() + " lock -f '" + (tmp.path() / "envlock.yaml").string() + "' -o '" +
                           (tmp.path() / "envlock.lock").string() + "'";
  const std::map<std::string, std::string> env{{"ENVLOCK_CACHE_DIR", (tmp.path() / "cache").string()},
                                               {"ENVLOCK_RETRIES", "0"}};
  auto r = run_command(lock, env);  // ENVLOCK_RETRIES=0: the first 503 is final
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: " + server.url("/ch/noarch/repodata.json") +
                       ": HTTP 503 Service Unavailable for noarch/repodata.json\n");
  EXPECT_EQ(server.request_count("/ch/noarch/repodata.json"), 1);
  r = run_command(lock + " --retries 2", env);  // the option: two more tries, the second is served
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "locked " + (tmp.path() / "envlock.lock").string() + "\n  default / linux-64: 1 packages\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(server.request_count("/ch/noarch/repodata.json"), 3);
}

TEST(NetworkOptions, AnUnusableVariableIsNamedInAWarningAndIgnored) {
  TempDir tmp("netopt");
  make_channel(tmp.path() / "www");
  testing::HttpServer server(tmp.path() / "www");
  ASSERT_TRUE(server.ok()) << server.error();
  spit(tmp.path() / "envlock.yaml", "channels: [" + server.url("/ch") + "]\nplatforms: [linux-64]\ndependencies: [foo]\n");
  auto r = run_command(envlock_cmd() + " lock -f '" + (tmp.path() / "envlock.yaml").string() + "' -o '" +
                           (tmp.path() / "envlock.lock").string() + "'",
                       {{"ENVLOCK_CACHE_DIR", (tmp.path() / "cache").string()},
                        {"ENVLOCK_READ_TIMEOUT", "soon"},
                        {"ENVLOCK_CONNECT_TIMEOUT", "0"},
                        {"ENVLOCK_RETRIES", "1234567"},
                        {"ENVLOCK_LOW_SPEED_LIMIT", "fast"},
                        {"ENVLOCK_MAX_TIME", "0"},
                        {"ENVLOCK_CA_BUNDLE", (tmp.path() / "none.pem").string()}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "locked " + (tmp.path() / "envlock.lock").string() + "\n  default / linux-64: 1 packages\n");
  EXPECT_EQ(r.err, "warning: ENVLOCK_CONNECT_TIMEOUT='0' is not at least 1 second; ignored\n"
                   "warning: ENVLOCK_READ_TIMEOUT='soon' is not a whole number of seconds (at most 6 digits); ignored\n"
                   "warning: ENVLOCK_RETRIES='1234567' is not a whole number (at most 6 digits); ignored\n"
                   "warning: ENVLOCK_LOW_SPEED_LIMIT='fast' is not a whole number of bytes per second (at most 6 "
                   "digits); ignored\n"
                   "warning: ENVLOCK_MAX_TIME='0' is not at least 1 second; ignored\n"
                   "warning: ENVLOCK_CA_BUNDLE='" + (tmp.path() / "none.pem").string() +
                       "' is not a readable file; https transfers will fail to verify certificates\n");
}

// A server that sends a byte every half second (2 bytes/s) never stalls libcurl's read, so with
// the old limit (1 byte/s) it held `envlock lock` as long as it kept dripping. The low-speed limit
// is libmamba's (CURLOPT_LOW_SPEED_LIMIT 30 bytes/s over CURLOPT_LOW_SPEED_TIME 60 s,
// libmamba/src/download/curl.cpp; conda's remote_read_timeout_secs only bounds the wait for each
// read, which a drip satisfies), with the time as --read-timeout; past it the transfer is retried
// as a stall, and the error names the limit and its options. An overall deadline per file,
// retries included, is opt-in (--max-time, curl's name; libmamba sets none): past it the file
// fails without another try.
TEST(NetworkOptions, ADrippingServerIsGivenUpAtTheLowSpeedLimitOrTheDeadline) {
  TempDir tmp("netopt");
  make_channel(tmp.path() / "www");
  testing::HttpServer server(tmp.path() / "www", {"--drip", "/ch/noarch/repodata.json=0.5"});
  ASSERT_TRUE(server.ok()) << server.error();
  spit(tmp.path() / "envlock.yaml", "channels: [" + server.url("/ch") + "]\nplatforms: [linux-64]\ndependencies: [foo]\n");
  const std::string lock = envlock_cmd() + " lock -f '" + (tmp.path() / "envlock.yaml").string() + "' -o '" +
                           (tmp.path() / "envlock.lock").string() + "'";
  const std::string url = server.url("/ch/noarch/repodata.json");
  const std::map<std::string, std::string> env{{"ENVLOCK_CACHE_DIR", (tmp.path() / "cache").string()}};
  auto started = std::chrono::steady_clock::now();
  auto r = run_command(lock + " --read-timeout 2 --retries 1", env);
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + url + ": download of noarch/repodata.json failed: it stalled: less than 30 bytes/s for "
                   "2 s (the low-speed limit: --low-speed-limit, ENVLOCK_LOW_SPEED_LIMIT; --read-timeout, "
                   "ENVLOCK_READ_TIMEOUT)\n"
                   "gave up after 2 attempts\n"
                   "hint: the server sends too slowly; on a slow link raise --read-timeout or lower --low-speed-limit\n");
  EXPECT_EQ(server.request_count("/ch/noarch/repodata.json"), 2);  // a stall is retried
  EXPECT_LT(took, std::chrono::seconds(20));
  EXPECT_FALSE(fs::exists(tmp.path() / "envlock.lock"));

  // Under a limit of 1 byte/s the drip passes; ENVLOCK_MAX_TIME=3 ends it, retries left or not.
  auto with_deadline = env;
  with_deadline["ENVLOCK_MAX_TIME"] = "3";
  started = std::chrono::steady_clock::now();
  r = run_command(lock + " --low-speed-limit 1 --retries 3", with_deadline);
  took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + url + ": download of noarch/repodata.json failed: it took more than 3 s, the most a "
                   "download may take (--max-time, ENVLOCK_MAX_TIME)\n"
                   "hint: raise --max-time (or unset ENVLOCK_MAX_TIME) for a large file on a slow link\n");
  EXPECT_EQ(server.request_count("/ch/noarch/repodata.json"), 3);
  EXPECT_GE(took, std::chrono::seconds(3));
  EXPECT_LT(took, std::chrono::seconds(20));
  // The option wins over the variable.
  r = run_command(lock + " --low-speed-limit 1 --retries 0 --max-time 1", with_deadline);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: " + url + ": download of noarch/repodata.json failed: it took more than 1 s, the most a "
                   "download may take (--max-time, ENVLOCK_MAX_TIME)\n"
                   "hint: raise --max-time (or unset ENVLOCK_MAX_TIME) for a large file on a slow link\n");
}

TEST(LockProgress, ALogShowsWhichRepodataALockWaitsOn) {
  // stderr is a file here (a CI log): a batch still running after 10 s writes one plain line
  // naming the URL it waits on. noarch/repodata.json answers after 11.5 s.
  TempDir tmp("netopt");
  make_channel(tmp.path() / "www");
  testing::HttpServer server(tmp.path() / "www", {"--delay", "/ch/noarch/repodata.json=11.5"});
  ASSERT_TRUE(server.ok()) << server.error();
  spit(tmp.path() / "envlock.yaml", "channels: [" + server.url("/ch") + "]\nplatforms: [linux-64]\ndependencies: [foo]\n");
  auto r = run_command(envlock_cmd() + " lock -f '" + (tmp.path() / "envlock.yaml").string() + "' -o '" +
                           (tmp.path() / "envlock.lock").string() + "'",
                       {{"ENVLOCK_CACHE_DIR", (tmp.path() / "cache").string()}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "locked " + (tmp.path() / "envlock.lock").string() + "\n  default / linux-64: 1 packages\n");
  const auto linux_bytes = fs::file_size(tmp.path() / "www/ch/linux-64/repodata.json");  // the file done
  EXPECT_EQ(r.err, "fetch repodata 1/2 files  " + std::to_string(linux_bytes) + " B  (waiting on " +
                       server.url("/ch/noarch/repodata.json") + ")\n");
  // --json draws nothing.
  fs::remove_all(tmp.path() / "cache");
  r = run_command(envlock_cmd() + " --json lock -f '" + (tmp.path() / "envlock.yaml").string() + "' -o '" +
                      (tmp.path() / "envlock.lock").string() + "'",
                  {{"ENVLOCK_CACHE_DIR", (tmp.path() / "cache").string()}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace envlock
