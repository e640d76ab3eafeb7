// Tests of envlock/fetch.hpp: real channels through file:// and tests/support/http_server.py, and
// every failure a download can meet (status errors, retries, a dropped connection, resume, digest
// and size mismatch, credentials).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "envlock/credentials.hpp"
#include "envlock/fetch.hpp"
#include "envlock/url.hpp"
#include "envlock/hash.hpp"
#include "support/http_server.hpp"

namespace fs = std::filesystem;
using envlock::ErrorKind;
using envlock::FetchOptions;
using envlock::FetchRequest;
using envlock::HashAlgorithm;
using envlock::testing::HttpServer;

namespace {

const fs::path kCorpus = fs::path(ENVLOCK_SHARED_DIR) / "corpus/packages";

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}

FetchOptions fast_retries() {
  FetchOptions o;
  o.retry_base_delay = std::chrono::milliseconds(5);
  o.retry_max_delay = std::chrono::milliseconds(20);
  o.max_retries = 3;
  o.use_netrc = false;
  return o;
}

class Fetch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("envlock-fetch-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "srv");
    fs::create_directories(dir_ / "out");
    // A deterministic 300 kB payload for transfer-fault tests.
    std::mt19937 rng(42);
    payload_.resize(300000);
    for (char& c : payload_) c = static_cast<char>(rng() & 0xff);
    write_file(dir_ / "srv/payload.bin", payload_);
    payload_sha_ = envlock::hash_bytes(payload_, HashAlgorithm::Sha256);
  }
  void TearDown() override { fs::remove_all(dir_); }

  FetchRequest payload_request(const HttpServer& s) const {
    FetchRequest r;
    r.url = s.url("/payload.bin");
    r.destination = dir_ / "out/payload.bin";
    r.sha256 = payload_sha_;
    r.size = payload_.size();
    return r;
  }

  /// Nothing of a failed download is left behind.
  void expect_no_leftovers(const fs::path& dest) const {
    EXPECT_FALSE(fs::exists(dest)) << dest;
    EXPECT_FALSE(fs::exists(envlock::partial_path(dest))) << envlock::partial_path(dest);
  }

  fs::path dir_;
  std::string payload_;
  std::string payload_sha_;
};

TEST_F(Fetch, FileUrlRealPackageVerified) {
  const fs::path pkg = kCorpus / "conda__conda/tests__data__conda_format_repo__linux-64__zlib-1.2.11-h7b6447c_3.conda";
  if (!fs::exists(pkg)) GTEST_SKIP() << "shared corpus absent: " << pkg;
  FetchRequest r;
  r.url = "file://" + pkg.string();
  r.destination = dir_ / "out/zlib-1.2.11-h7b6447c_3.conda";
  r.sha256 = "f33afff2144e1d6c4cf2e3e184937db8bf825b4537df74662aea5ee207b6a31b";
  r.size = 105917;
  auto res = envlock::fetch_to_file(r);
  ASSERT_TRUE(res.ok()) << res.error().to_string();
  EXPECT_EQ(res->size, 105917u);
  EXPECT_EQ(res->sha256, r.sha256);
  EXPECT_EQ(res->http_status, 0);
  EXPECT_EQ(res->attempts, 1u);
  EXPECT_EQ(read_file(r.destination), read_file(pkg));
  EXPECT_FALSE(fs::exists(envlock::partial_path(r.destination)));
}

TEST_F(Fetch, RealChannelInParallelOverHttp) {
  const fs::path src = kCorpus / "JanCaha__conda-channel";
  if (!fs::exists(src)) GTEST_SKIP() << "shared corpus absent: " << src;
  fs::create_directories(dir_ / "srv/linux-64");
  for (const auto& e : fs::directory_iterator(src)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("linux-64__", 0) == 0) fs::copy_file(e.path(), dir_ / "srv/linux-64" / name.substr(10));
  }
  auto repodata = nlohmann::json::parse(read_file(dir_ / "srv/linux-64/repodata.json"));
  HttpServer server(dir_ / "srv");
  ASSERT_TRUE(server.ok()) << server.error();

  std::vector<FetchRequest> reqs;
  std::uint64_t total = 0;
  for (const auto& [fn, rec] : repodata["packages.conda"].items()) {
    FetchRequest r;
    r.url = server.url("/linux-64/" + fn);
    r.destination = dir_ / "out" / fn;
    r.sha256 = rec["sha256"].get<std::string>();
    r.size = rec["size"].get<std::uint64_t>();
    total += *r.size;
    reqs.push_back(r);
  }
  ASSERT_EQ(reqs.size(), 22u);
  FetchOptions opts = fast_retries();
  opts.parallel = 4;
  envlock::FetchProgress last;
  int calls = 0;
  opts.on_progress = [&](const envlock::FetchProgress& p) {
    ++calls;
    EXPECT_LE(p.files_active, 4u);
    EXPECT_LE(p.bytes_done, p.bytes_total);
    last = p;
  };
  auto results = envlock::fetch_all(reqs, opts);
  ASSERT_EQ(results.size(), reqs.size());
  for (std::size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].error().to_string();
    EXPECT_EQ(results[i]->path, reqs[i].destination);
    EXPECT_EQ(results[i]->sha256, reqs[i].sha256);
    EXPECT_EQ(results[i]->http_status, 200);
    EXPECT_EQ(results[i]->etag, "\"" + reqs[i].sha256 + "\"");
    EXPECT_FALSE(results[i]->last_modified.empty());
    EXPECT_EQ(envlock::hash_file(reqs[i].destination, HashAlgorithm::Sha256).value(), reqs[i].sha256);
  }
  EXPECT_GE(calls, 1);
  EXPECT_EQ(last.files_total, 22u);
  EXPECT_EQ(last.files_done, 22u);
  EXPECT_EQ(last.files_failed, 0u);
  EXPECT_EQ(last.bytes_done, total);
  EXPECT_EQ(last.bytes_total, total);
}

TEST_F(Fetch, Sha256MismatchRefusedWithBothDigests) {
  HttpServer server(dir_ / "srv");
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = payload_request(server);
  r.sha256 = std::string(64, 'a');
  auto res = envlock::fetch_to_file(r, fast_retries());
  ASSERT_FALSE(res.ok());
  const auto& e = res.error();
  EXPECT_EQ(e.kind, ErrorKind::Integrity);
  EXPECT_EQ(e.where, r.url);
  const std::string text = e.to_string();
  EXPECT_NE(text.find("sha256 mismatch for payload.bin"), std::string::npos) << text;
  EXPECT_NE(text.find("expected: sha256 " + std::string(64, 'a') + ", 300000 bytes"), std::string::npos) << text;
  EXPECT_NE(text.find("actual:   sha256 " + payload_sha_ + ", 300000 bytes"), std::string::npos) << text;
  expect_no_leftovers(r.destination);
  EXPECT_EQ(server.request_count("/payload.bin"), 1);  // a mismatch is not retried
}

// A download past a file-size limit (`ulimit -f`) fails with EFBIG: the error says so and how to
// get past it, as install's writes and the lockfile writer do (a new-user attack, session 11: a
// bare "File too large" for downloads only). Run in a child under RLIMIT_FSIZE, SIGXFSZ ignored
// as the CLI's handler makes it harmless.
TEST_F(Fetch, AFileSizeLimitNamesUlimitInTheWriteError) {
  HttpServer server(dir_ / "srv");
  ASSERT_TRUE(server.ok()) << server.error();
  const FetchRequest r = payload_request(server);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{64 * 1024, 64 * 1024};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    auto res = envlock::fetch_to_file(r, fast_retries());
    const std::string text = res.ok() ? "ok" : res.error().to_string();
    (void)!::write(fds[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(text, envlock::partial_path(r.destination).string() +
                      ": cannot write download of payload.bin: File too large\n"
                      "hint: a file-size limit is set (`ulimit -f`): raise it and retry");
  expect_no_leftovers(r.destination);
}

TEST_F(Fetch, SizeMismatchRefused) {
  HttpServer server(dir_ / "srv");
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = payload_request(server);
  r.size = 1000;  // the server sends more
  auto res = envlock::fetch_to_file(r, fast_retries());
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, ErrorKind::Integrity);
  EXPECT_NE(res.error().to_string().find("expected: 1000 bytes"), std::string::npos) << res.error().to_string();
  expect_no_leftovers(r.destination);

  r.size = payload_.size() + 5;  // the server sends less
  auto shorter = envlock::fetch_to_file(r, fast_retries());
  ASSERT_FALSE(shorter.ok());
  EXPECT_EQ(shorter.error().kind, ErrorKind::Integrity);
  EXPECT_NE(shorter.error().to_string().find("size mismatch"), std::string::npos);
  EXPECT_NE(shorter.error().to_string().find("actual:   sha256 " + payload_sha_ + ", 300000 bytes"),
            std::string::npos)
      << shorter.error().to_string();
  expect_no_leftovers(r.destination);
}

TEST_F(Fetch, Md5OnlyWhenNoSha256) {
  HttpServer server(dir_ / "srv");
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = payload_request(server);
  r.sha256.clear();
  r.md5 = envlock::hash_bytes(payload_, HashAlgorithm::Md5);
  auto ok = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_EQ(ok->md5, r.md5);
  EXPECT_EQ(ok->sha256, payload_sha_);
  fs::remove(r.destination);

  r.md5 = std::string(32, '0');
  auto bad = envlock::fetch_to_file(r, fast_retries());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().to_string().find("md5 mismatch"), std::string::npos) << bad.error().to_string();
  expect_no_leftovers(r.destination);

  // With a sha256 present, a wrong md5 is not consulted.
  r.sha256 = payload_sha_;
  auto both = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(both.ok()) << both.error().to_string();
  EXPECT_TRUE(both->md5.empty());
}

TEST_F(Fetch, NotFoundIsNotRetried) {
  HttpServer server(dir_ / "srv");
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r;
  r.url = server.url("/missing.conda");
  r.destination = dir_ / "out/missing.conda";
  auto res = envlock::fetch_to_file(r, fast_retries());
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, ErrorKind::Network);
  EXPECT_EQ(res.error().message, "HTTP 404 Not Found for missing.conda");
  EXPECT_EQ(res.error().http_status, 404);
  EXPECT_EQ(res.error().where, r.url);
  EXPECT_FALSE(res.error().hint.empty());
  EXPECT_EQ(server.request_count("/missing.conda"), 1);
  expect_no_leftovers(r.destination);
}

TEST_F(Fetch, ServerErrorRetriedThenSucceeds) {
  HttpServer server(dir_ / "srv", {"--fail", "/payload.bin=500:2"});
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = payload_request(server);
  auto res = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(res.ok()) << res.error().to_string();
  EXPECT_EQ(res->attempts, 3u);
  EXPECT_EQ(server.request_count("/payload.bin"), 3);
  EXPECT_EQ(read_file(r.destination), payload_);
}

TEST_F(Fetch, PersistentServerErrorGivesUp) {
  HttpServer server(dir_ / "srv", {"--fail", "/payload.bin=503"});
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = payload_request(server);
  FetchOptions o = fast_retries();
  o.max_retries = 2;
  auto res = envlock::fetch_to_file(r, o);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, ErrorKind::Network);
  EXPECT_EQ(res.error().message, "HTTP 503 Service Unavailable for payload.bin");
  EXPECT_NE(res.error().detail.find("gave up after 3 attempts"), std::string::npos);
  EXPECT_EQ(server.request_count("/payload.bin"), 3);
  expect_no_leftovers(r.destination);
}

TEST_F(Fetch, DroppedConnectionResumesWithRange) {
  const fs::path log = dir_ / "requests.log";
  HttpServer server(dir_ / "srv", {"--drop", "/payload.bin=100000:1", "--log", log.string()});
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = payload_request(server);
  auto res = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(res.ok()) << res.error().to_string();
  EXPECT_EQ(res->attempts, 2u);
  EXPECT_EQ(res->resumed_from, 100000u);
  EXPECT_EQ(res->http_status, 206);
  EXPECT_EQ(read_file(r.destination), payload_);
  const std::string requests = read_file(log);
  EXPECT_NE(requests.find("\"range\": \"bytes=100000-\""), std::string::npos) << requests;
}

TEST_F(Fetch, DroppedConnectionWithoutRangeSupportRestarts) {
  HttpServer server(dir_ / "srv", {"--drop", "/payload.bin=100000:1", "--no-range"});
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = payload_request(server);
  auto res = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(res.ok()) << res.error().to_string();
  EXPECT_EQ(res->http_status, 200);
  EXPECT_EQ(res->sha256, payload_sha_);
  EXPECT_EQ(read_file(r.destination), payload_);
}

TEST_F(Fetch, DroppedConnectionEveryTimeKeepsPartialForLater) {
  FetchRequest r;
  {
    HttpServer server(dir_ / "srv", {"--drop", "/payload.bin=1000:10"});
    ASSERT_TRUE(server.ok()) << server.error();
    r = payload_request(server);
    FetchOptions o = fast_retries();
    o.max_retries = 1;
    auto res = envlock::fetch_to_file(r, o);
    ASSERT_FALSE(res.ok());
    EXPECT_EQ(res.error().kind, ErrorKind::Network);
    EXPECT_NE(res.error().hint.find("resume"), std::string::npos) << res.error().to_string();
    EXPECT_NE(res.error().detail.find("gave up after 2 attempts"), std::string::npos) << res.error().to_string();
    EXPECT_FALSE(fs::exists(r.destination));
    // Two attempts each kept 1000 bytes: the second resumed the first.
    ASSERT_TRUE(fs::exists(envlock::partial_path(r.destination)));
    EXPECT_EQ(fs::file_size(envlock::partial_path(r.destination)), 2000u);
  }
  // A later run (a new server, as after a restart) continues from there.
  HttpServer healthy(dir_ / "srv");
  ASSERT_TRUE(healthy.ok()) << healthy.error();
  r.url = healthy.url("/payload.bin");
  auto again = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(again->resumed_from, 2000u);
  EXPECT_EQ(read_file(r.destination), payload_);
}

TEST_F(Fetch, PartialFromEarlierRunIsResumed) {
  HttpServer server(dir_ / "srv");
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = payload_request(server);
  write_file(envlock::partial_path(r.destination), payload_.substr(0, 123456));
  auto res = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(res.ok()) << res.error().to_string();
  EXPECT_EQ(res->resumed_from, 123456u);
  EXPECT_EQ(res->attempts, 1u);
  EXPECT_EQ(read_file(r.destination), payload_);
  EXPECT_FALSE(fs::exists(envlock::partial_path(r.destination)));
}

// A download no digest checks (a base lockfile) resumes only the version its .partial began:
// the first answer's ETag is kept beside the .partial (written before the body, so a kill -9
// keeps it too) and sent as If-Range (RFC 9110 §13.1.5), as curl's -C - needs and conda/rattler
// get by restarting: attack on issue 18, B2 (a base locked on a splice of two versions).
class FetchResume : public Fetch {
 protected:
  /// A request for /base.lock that no digest and no size check.
  FetchRequest unchecked(const HttpServer& s) const {
    FetchRequest r;
    r.url = s.url("/base.lock");
    r.destination = dir_ / "out/base.lock";
    return r;
  }
  /// The first try is cut after 1000 bytes (a process killed mid-body leaves the same files).
  void cut_first_try(const HttpServer& s) const {
    FetchOptions o = fast_retries();
    o.max_retries = 0;
    auto first = envlock::fetch_to_file(unchecked(s), o);
    ASSERT_FALSE(first.ok());
    EXPECT_EQ(fs::file_size(envlock::partial_path(dir_ / "out/base.lock")), 1000u);
  }
  std::string v1_ = std::string(5000, 'a');
  std::string v2_ = std::string(7000, 'b');
  std::string etag(const std::string& v) const { return "\"" + envlock::hash_bytes(v, HashAlgorithm::Sha256) + "\""; }
  std::string line(int status, const std::string& range, const std::string& if_range = "") const {
    std::string out = "{\"path\": \"/base.lock\", \"status\": " + std::to_string(status) + ", \"range\": " +
                      (range.empty() ? std::string("null") : "\"" + range + "\"");
    if (!if_range.empty()) out += ", \"if_range\": \"\\\"" + if_range.substr(1, if_range.size() - 2) + "\\\"\"";
    return out + ", \"auth\": false}\n";
  }
  fs::path validators() const { return envlock::partial_path(dir_ / "out/base.lock").string() + ".validators"; }
};

TEST_F(FetchResume, SameVersionResumesWithIfRange) {
  write_file(dir_ / "srv/base.lock", v1_);
  HttpServer server(dir_ / "srv", {"--drop", "/base.lock=1000:1", "--log", (dir_ / "log").string()});
  ASSERT_TRUE(server.ok()) << server.error();
  cut_first_try(server);
  // etag, last-modified (the server's date of the file), and the length the first answer gave.
  const std::string kept = read_file(validators());
  EXPECT_EQ(kept.substr(0, 73), "etag: " + etag(v1_) + "\n") << kept;
  EXPECT_TRUE(kept.substr(73).starts_with("last-modified: ")) << kept;
  EXPECT_TRUE(kept.ends_with(" GMT\nlength: 5000\n")) << kept;
  auto got = envlock::fetch_to_file(unchecked(server), fast_retries());
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(got->http_status, 206);
  EXPECT_EQ(got->resumed_from, 1000u);
  EXPECT_EQ(read_file(dir_ / "out/base.lock"), v1_);
  EXPECT_EQ(read_file(dir_ / "log"), line(200, "") + line(206, "bytes=1000-", etag(v1_)));
  EXPECT_FALSE(fs::exists(envlock::partial_path(dir_ / "out/base.lock")));
  EXPECT_FALSE(fs::exists(validators()));
}

TEST_F(FetchResume, ChangedFileIsTakenWholeFromThe200) {
  write_file(dir_ / "srv/base.lock", v1_);
  HttpServer server(dir_ / "srv", {"--drop", "/base.lock=1000:1", "--log", (dir_ / "log").string()});
  ASSERT_TRUE(server.ok()) << server.error();
  cut_first_try(server);
  write_file(dir_ / "srv/base.lock", v2_);  // published in between
  auto got = envlock::fetch_to_file(unchecked(server), fast_retries());
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(got->http_status, 200);
  EXPECT_EQ(got->resumed_from, 0u);
  EXPECT_EQ(got->attempts, 1u);  // the 200 answer to If-Range is the whole file: no second request
  EXPECT_EQ(read_file(dir_ / "out/base.lock"), v2_);
  EXPECT_EQ(read_file(dir_ / "log"), line(200, "") + line(200, "bytes=1000-", etag(v1_)));
  EXPECT_FALSE(fs::exists(validators()));
}

TEST_F(FetchResume, A206OfAnotherVersionRestartsFromZero) {
  // A server that ignores If-Range (as the attacker's did) answers 206 with v2's ETag.
  write_file(dir_ / "srv/base.lock", v1_);
  HttpServer server(dir_ / "srv",
                    {"--drop", "/base.lock=1000:1", "--ignore-if-range", "--log", (dir_ / "log").string()});
  ASSERT_TRUE(server.ok()) << server.error();
  cut_first_try(server);
  write_file(dir_ / "srv/base.lock", v2_);
  auto got = envlock::fetch_to_file(unchecked(server), fast_retries());
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(got->http_status, 200);
  EXPECT_EQ(got->resumed_from, 0u);
  EXPECT_EQ(got->attempts, 2u);
  EXPECT_EQ(read_file(dir_ / "out/base.lock"), v2_);
  EXPECT_EQ(read_file(dir_ / "log"), line(200, "") + line(206, "bytes=1000-", etag(v1_)) + line(200, ""));
}

// A 206 that drops the ETag its If-Range named (RFC 9110 §15.3.7 asks for it) is not known to be
// the version the .partial began: restart, never splice (attack 22, A6: a server answering 206
// with another version's bytes and no ETag gave a base lockfile half v1, half v2, locked on).
TEST_F(FetchResume, A206WithoutTheValidatorRestartsFromZero) {
  write_file(dir_ / "srv/base.lock", v1_);
  HttpServer server(dir_ / "srv", {"--drop", "/base.lock=1000:1", "--ignore-if-range", "--bare-206", "--log",
                                   (dir_ / "log").string()});
  ASSERT_TRUE(server.ok()) << server.error();
  cut_first_try(server);
  write_file(dir_ / "srv/base.lock", std::string(5000, 'b'));  // same length, another version
  auto got = envlock::fetch_to_file(unchecked(server), fast_retries());
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(got->http_status, 200);
  EXPECT_EQ(got->resumed_from, 0u);
  EXPECT_EQ(read_file(dir_ / "out/base.lock"), std::string(5000, 'b'));
  EXPECT_EQ(read_file(dir_ / "log"), line(200, "") + line(206, "bytes=1000-", etag(v1_)) + line(200, ""));
}

TEST_F(FetchResume, NoValidatorNoResume) {
  write_file(dir_ / "srv/base.lock", v1_);
  HttpServer server(dir_ / "srv",
                    {"--drop", "/base.lock=1000:1", "--no-validators", "--log", (dir_ / "log").string()});
  ASSERT_TRUE(server.ok()) << server.error();
  cut_first_try(server);
  EXPECT_FALSE(fs::exists(validators()));
  write_file(dir_ / "srv/base.lock", v2_);
  auto got = envlock::fetch_to_file(unchecked(server), fast_retries());
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(got->http_status, 200);
  EXPECT_EQ(got->resumed_from, 0u);
  EXPECT_EQ(read_file(dir_ / "out/base.lock"), v2_);
  EXPECT_EQ(read_file(dir_ / "log"), line(200, "") + line(200, ""));
}

TEST_F(FetchResume, ARepodataRequestKeepsNeitherPartialNorValidators) {
  // A conditional request (repodata with its ETag) is never resumed, so nothing is kept for it.
  write_file(dir_ / "srv/base.lock", v1_);
  HttpServer server(dir_ / "srv", {"--drop", "/base.lock=1000:1"});
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = unchecked(server);
  r.if_none_match = "\"older\"";
  FetchOptions o = fast_retries();
  o.max_retries = 0;
  auto got = envlock::fetch_to_file(r, o);
  ASSERT_FALSE(got.ok());
  expect_no_leftovers(r.destination);
  EXPECT_FALSE(fs::exists(validators()));
}

TEST_F(FetchResume, ADigestCheckedDownloadResumesWithoutValidatorAndRefusesASplice) {
  // A package archive: its sha256 is known, so a resume needs no validator; a changed file is
  // caught by the digest and fetched again from zero (one fresh retry), as before.
  write_file(dir_ / "srv/base.lock", v1_);
  HttpServer server(dir_ / "srv", {"--no-validators", "--log", (dir_ / "log").string()});
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = unchecked(server);
  r.sha256 = envlock::hash_bytes(v1_, HashAlgorithm::Sha256);
  write_file(envlock::partial_path(r.destination), std::string(1000, 'x'));  // not v1's bytes
  auto got = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(got->attempts, 2u);
  EXPECT_EQ(read_file(r.destination), v1_);
  EXPECT_EQ(read_file(dir_ / "log"), line(206, "bytes=1000-") + line(200, ""));
  EXPECT_FALSE(fs::exists(validators()));
}

TEST_F(Fetch, CompletePartialIsVerifiedWithoutNetwork) {
  HttpServer server(dir_ / "srv");
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = payload_request(server);
  write_file(envlock::partial_path(r.destination), payload_);
  auto res = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(res.ok()) << res.error().to_string();
  EXPECT_EQ(server.request_count("/payload.bin"), 0);
  EXPECT_EQ(read_file(r.destination), payload_);
}

// A .partial (or its validators file) that is a link — planted by anyone who can write into a
// shared package cache — is removed and the download written into a file envlock creates, never
// through the link (attack 22, A2: run as root, the link made envlock overwrite /etc/passwd).
// pip, uv and rattler write downloads only into temporary files they just created.
TEST_F(Fetch, APartialThatIsALinkIsReplacedNeverWrittenThrough) {
  HttpServer server(dir_ / "srv");
  ASSERT_TRUE(server.ok()) << server.error();
  const fs::path victim = dir_ / "outside/victim.txt";
  fs::create_directories(victim.parent_path());
  write_file(victim, "precious\n");
  FetchRequest r = payload_request(server);
  fs::create_directories(r.destination.parent_path());
  fs::create_symlink(victim, envlock::partial_path(r.destination));
  auto res = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(res.ok()) << res.error().to_string();
  EXPECT_EQ(res->resumed_from, 0u);
  EXPECT_EQ(read_file(victim), "precious\n");
  EXPECT_FALSE(fs::is_symlink(r.destination));
  EXPECT_EQ(read_file(r.destination), payload_);

  // The same for the validators of a download no digest checks.
  const fs::path victim2 = dir_ / "outside/victim2.txt";
  write_file(victim2, "also precious\n");
  write_file(dir_ / "srv/base.lock", std::string(3000, 'v'));
  FetchRequest u;
  u.url = server.url("/base.lock");
  u.destination = dir_ / "out/base.lock";
  fs::create_symlink(victim2, envlock::partial_path(u.destination).string() + ".validators");
  fs::create_symlink(victim, envlock::partial_path(u.destination));
  auto unchecked = envlock::fetch_to_file(u, fast_retries());
  ASSERT_TRUE(unchecked.ok()) << unchecked.error().to_string();
  EXPECT_EQ(read_file(victim), "precious\n");
  EXPECT_EQ(read_file(victim2), "also precious\n");
  EXPECT_EQ(read_file(u.destination), std::string(3000, 'v'));
}

// A .partial that is a hard link (another inode's name: st_nlink > 1) is not resumed from nor
// written into: it is removed and the download goes into a file created here (attack 22, A15).
TEST_F(Fetch, APartialThatIsAHardLinkIsNeitherResumedNorWritten) {
  HttpServer server(dir_ / "srv");
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = payload_request(server);
  const fs::path victim = r.destination.parent_path() / "elsewhere/victim.txt";
  fs::create_directories(victim.parent_path());
  write_file(victim, payload_.substr(0, 1000));  // even a true prefix of the file is not taken
  fs::create_hard_link(victim, envlock::partial_path(r.destination));
  auto res = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(res.ok()) << res.error().to_string();
  EXPECT_EQ(res->resumed_from, 0u);
  EXPECT_EQ(read_file(victim), payload_.substr(0, 1000));
  EXPECT_EQ(fs::hard_link_count(victim), 1u);
  EXPECT_EQ(read_file(r.destination), payload_);
}

TEST_F(Fetch, CorruptPartialIsDiscardedAndRefetched) {
  HttpServer server(dir_ / "srv");
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = payload_request(server);
  write_file(envlock::partial_path(r.destination), std::string(50000, 'Z'));
  auto res = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(res.ok()) << res.error().to_string();
  EXPECT_EQ(res->attempts, 2u);
  EXPECT_EQ(server.request_count("/payload.bin"), 2);
  EXPECT_EQ(read_file(r.destination), payload_);
}

TEST_F(Fetch, NetrcCredentialsAndRedaction) {
  HttpServer server(dir_ / "srv", {"--auth", "alice:s3cret-pw"});
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = payload_request(server);

  auto denied = envlock::fetch_to_file(r, fast_retries());
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().message, "HTTP 401 Unauthorized for payload.bin");
  EXPECT_NE(denied.error().hint.find("netrc"), std::string::npos);

  const fs::path netrc = dir_ / "netrc";
  write_file(netrc, "machine 127.0.0.1\nlogin alice\npassword s3cret-pw\n");
  FetchOptions o = fast_retries();
  o.use_netrc = true;
  o.netrc_file = netrc;
  auto ok = envlock::fetch_to_file(r, o);
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_EQ(read_file(r.destination), payload_);

  // Credentials in the URL work, and never appear in results or errors.
  fs::remove(r.destination);
  r.url = "http://alice:s3cret-pw@127.0.0.1:" + std::to_string(server.port()) + "/payload.bin";
  auto inurl = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(inurl.ok()) << inurl.error().to_string();
  EXPECT_EQ(inurl->url.find("s3cret"), std::string::npos) << inurl->url;
  r.url = "http://alice:s3cret-pw@127.0.0.1:" + std::to_string(server.port()) + "/nothing-here";
  r.destination = dir_ / "out/nothing";
  auto missing = envlock::fetch_to_file(r, fast_retries());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().to_string().find("s3cret"), std::string::npos) << missing.error().to_string();
  EXPECT_EQ(missing.error().where, server.url("/nothing-here"));
}

TEST_F(Fetch, ConditionalRequestNotModified) {
  HttpServer server(dir_ / "srv");
  ASSERT_TRUE(server.ok()) << server.error();
  FetchRequest r = payload_request(server);
  auto first = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  ASSERT_FALSE(first->etag.empty());
  r.if_none_match = first->etag;
  r.if_modified_since = first->last_modified;
  auto second = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(second.ok()) << second.error().to_string();
  EXPECT_TRUE(second->not_modified);
  EXPECT_EQ(second->http_status, 304);
  EXPECT_EQ(read_file(r.destination), payload_);
  EXPECT_FALSE(fs::exists(envlock::partial_path(r.destination)));
}

TEST_F(Fetch, UsageErrors) {
  std::vector<FetchRequest> reqs(4);
  reqs[0].url = "ftp://example.org/x.conda";
  reqs[0].destination = dir_ / "out/x.conda";
  reqs[1].url = "file://" + (dir_ / "srv/payload.bin").string();
  reqs[1].destination = dir_ / "out/same";
  reqs[2].url = "file://" + (dir_ / "srv/payload.bin").string();
  reqs[2].destination = dir_ / "out/./same";
  reqs[3].url = "file://" + (dir_ / "srv/payload.bin").string();
  reqs[3].destination = dir_ / "out/y";
  reqs[3].sha256 = "xyz";
  auto res = envlock::fetch_all(reqs, fast_retries());
  ASSERT_EQ(res.size(), 4u);
  ASSERT_FALSE(res[0].ok());
  EXPECT_EQ(res[0].error().kind, ErrorKind::Usage);
  EXPECT_EQ(res[0].error().message, "unsupported URL scheme");
  EXPECT_TRUE(res[1].ok()) << res[1].error().to_string();
  ASSERT_FALSE(res[2].ok());
  EXPECT_EQ(res[2].error().kind, ErrorKind::Usage);
  ASSERT_FALSE(res[3].ok());
  EXPECT_NE(res[3].error().message.find("not 64 hex digits"), std::string::npos);
}

// A local file whose path holds a space, '#', '%', '?' and non-ASCII bytes: fetched from its
// encoded URL (file_url_from_path) and from the raw spelling older lockfiles hold (libcurl alone
// refuses a raw space: "URL using bad/illegal format or missing URL").
TEST_F(Fetch, FileUrlsOfPathsWithSpacesAndOddBytes) {
  const fs::path folder = dir_ / "srv/my chan #1 100% caf\xc3\xa9?";
  fs::create_directories(folder);
  write_file(folder / "payload.bin", payload_);
  std::vector<FetchRequest> reqs(2);
  reqs[0].url = envlock::file_url_from_path((folder / "payload.bin").string());
  EXPECT_EQ(reqs[0].url.find(' '), std::string::npos) << reqs[0].url;
  reqs[1].url = "file://" + (folder / "payload.bin").string();
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].destination = dir_ / ("out/payload" + std::to_string(i));
    reqs[i].sha256 = payload_sha_;
    reqs[i].size = payload_.size();
  }
  auto res = envlock::fetch_all(reqs, fast_retries());
  ASSERT_EQ(res.size(), 2u);
  for (std::size_t i = 0; i < res.size(); ++i) {
    ASSERT_TRUE(res[i].ok()) << reqs[i].url << ": " << res[i].error().to_string();
    EXPECT_EQ(read_file(reqs[i].destination), payload_);
  }

  // A file URL naming another host is refused before any transfer, with the reason.
  FetchRequest remote;
  remote.url = "file://fileserver/share/payload.bin";
  remote.destination = dir_ / "out/remote";
  auto refused = envlock::fetch_to_file(remote, fast_retries());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::Usage);
  EXPECT_EQ(refused.error().where, remote.url);
  EXPECT_EQ(refused.error().message, "file URL names the host 'fileserver'; envlock reads local paths only");
  expect_no_leftovers(remote.destination);
}

TEST_F(Fetch, MissingLocalFileAndMissingDirectory) {
  FetchRequest r;
  r.url = "file://" + (dir_ / "srv/absent.conda").string();
  r.destination = dir_ / "out/absent.conda";
  auto res = envlock::fetch_to_file(r, fast_retries());
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, ErrorKind::Network);
  expect_no_leftovers(r.destination);

  r.url = "file://" + (dir_ / "srv/payload.bin").string();
  r.destination = dir_ / "no/such/dir/payload.bin";
  auto nodir = envlock::fetch_to_file(r, fast_retries());
  ASSERT_FALSE(nodir.ok());
  EXPECT_EQ(nodir.error().kind, ErrorKind::Io);
  EXPECT_NE(nodir.error().hint.find("directory must exist"), std::string::npos);
}

TEST_F(Fetch, RedirectToAnotherHostDropsCredentials) {
  // Server B (reached as "localhost", another host name for libcurl) logs whether a request
  // carried an Authorization header; server A (127.0.0.1) wants basic auth and redirects there.
  HttpServer b(dir_ / "srv", {"--log", (dir_ / "b.log").string()});
  ASSERT_TRUE(b.ok()) << b.error();
  const std::string elsewhere = "http://localhost:" + std::to_string(b.port()) + "/payload.bin";
  HttpServer a(dir_ / "srv", {"--auth", "u:SECRET-pw", "--redirect", "/moved.bin=" + elsewhere});
  ASSERT_TRUE(a.ok()) << a.error();
  FetchRequest r = payload_request(a);
  r.url = "http://u:SECRET-pw@127.0.0.1:" + std::to_string(a.port()) + "/moved.bin";
  auto got = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(got->url, elsewhere);
  EXPECT_EQ(read_file(dir_ / "b.log"), "{\"path\": \"/payload.bin\", \"status\": 200, \"range\": null, \"auth\": false}\n");
  // The same with a bearer token from the credentials file.
  write_file(dir_ / "creds.json", R"({"127.0.0.1": {"BearerToken": "SECRET-tok"}, "localhost": {"BasicHTTP": {"username": "x", "password": "y"}}})");
  HttpServer c(dir_ / "srv", {"--bearer", "SECRET-tok", "--redirect", "/moved.bin=" + elsewhere});
  ASSERT_TRUE(c.ok()) << c.error();
  FetchOptions o = fast_retries();
  o.credentials_file = dir_ / "creds.json";
  std::filesystem::remove(dir_ / "out/payload.bin");
  FetchRequest rc = payload_request(c);
  rc.url = c.url("/moved.bin");
  auto viaa = envlock::fetch_to_file(rc, o);
  ASSERT_TRUE(viaa.ok()) << viaa.error().to_string();
  // localhost's own entry is not used on a redirect either: libcurl keeps the first host's.
  EXPECT_EQ(read_file(dir_ / "b.log"), "{\"path\": \"/payload.bin\", \"status\": 200, \"range\": null, \"auth\": false}\n"
                                       "{\"path\": \"/payload.bin\", \"status\": 200, \"range\": null, \"auth\": false}\n");
}

// A redirect from https:// to plain http:// is refused before the http request is sent (pip and
// uv refuse such downgrades; CURLOPT_REDIR_PROTOCOLS_STR "https"), and so is one from an
// http:// URL on this machine to another host (the manifest allows http:// only on loopback):
// attack on issue 18, A1. An error after a redirect names the URL that failed and the original.
TEST_F(Fetch, HttpsRedirectToPlainHttpIsRefused) {
  if (std::system("command -v openssl >/dev/null") != 0) GTEST_SKIP() << "openssl not installed";
  const fs::path cert = dir_ / "cert.pem", key = dir_ / "key.pem";
  const std::string make = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -addext "
                           "subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " + key.string() + " -out " +
                           cert.string() + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(make.c_str()), 0);
  HttpServer plain(dir_ / "srv", {"--log", (dir_ / "plain.log").string()});
  ASSERT_TRUE(plain.ok()) << plain.error();
  const std::string cleartext = plain.url("/payload.bin");
  HttpServer tls(dir_ / "srv", {"--tls", cert.string() + ":" + key.string(), "--redirect",
                                "/down.bin=" + cleartext, "--redirect", "/scheme-relative.bin=//127.0.0.1:" +
                                std::to_string(plain.port()) + "/payload.bin", "--redirect", "/up.bin=/payload.bin"});
  ASSERT_TRUE(tls.ok()) << tls.error();
  const std::string https = "https://127.0.0.1:" + std::to_string(tls.port());
  FetchOptions o = fast_retries();
  o.ca_bundle = cert;
  FetchRequest r = payload_request(plain);
  r.url = "https://u:SECRET-pw@127.0.0.1:" + std::to_string(tls.port()) + "/down.bin";
  auto got = envlock::fetch_to_file(r, o);
  ASSERT_FALSE(got.ok());
  // (user info is dropped from every URL shown, as redact_url() does)
  EXPECT_EQ(got.error().to_string(),
            "https://127.0.0.1:" + std::to_string(tls.port()) + "/down.bin: refusing the redirect of down.bin from "
            "https://127.0.0.1:" + std::to_string(tls.port()) + "/down.bin to plain " + cleartext +
            ": a download that starts on https:// stays on https://\n"
            "hint: ask the server's owners to redirect to https://, or write the https:// URL it should reach");
  expect_no_leftovers(r.destination);
  r.url = https + "/scheme-relative.bin";  // `//host/…` keeps https: refused by libcurl's https-only rule
  auto relative = envlock::fetch_to_file(r, o);
  ASSERT_FALSE(relative.ok());
  EXPECT_FALSE(fs::exists(dir_ / "plain.log"));  // not one request reached the cleartext server
  // A redirect that stays on https:// is followed.
  r.url = https + "/up.bin";
  auto up = envlock::fetch_to_file(r, o);
  ASSERT_TRUE(up.ok()) << up.error().to_string();
  EXPECT_EQ(up->url, https + "/payload.bin");
  EXPECT_EQ(read_file(r.destination), payload_);
}

TEST_F(Fetch, LoopbackHttpRedirectLeavingTheMachineIsRefusedAndErrorsNameBothUrls) {
  HttpServer b(dir_ / "srv");
  ASSERT_TRUE(b.ok()) << b.error();
  HttpServer a(dir_ / "srv", {"--redirect", "/away.bin=http://10.255.255.1/payload.bin", "--redirect",
                              "/moved.bin=" + b.url("/missing.bin"), "--redirect", "/near.bin=" + b.url("/payload.bin")});
  ASSERT_TRUE(a.ok()) << a.error();
  FetchRequest r = payload_request(a);
  r.url = a.url("/away.bin");
  auto away = envlock::fetch_to_file(r, fast_retries());
  ASSERT_FALSE(away.ok());
  EXPECT_EQ(away.error().to_string(),
            a.url("/away.bin") + ": refusing the redirect of away.bin from " + a.url("/away.bin") +
                " to http://10.255.255.1/payload.bin: plain http:// is followed only on this machine (127.0.0.1, "
                "localhost, [::1])\n"
                "hint: ask the server's owners to redirect to https://, or write the https:// URL it should reach");
  EXPECT_EQ(a.request_count("/away.bin"), 1);  // not retried
  r.url = "http://u:SECRET-pw@127.0.0.1:" + std::to_string(a.port()) + "/moved.bin";
  auto moved = envlock::fetch_to_file(r, fast_retries());
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.error().http_status, 404);
  EXPECT_EQ(moved.error().to_string(),
            "http://127.0.0.1:" + std::to_string(a.port()) + "/moved.bin: HTTP 404 Not Found for moved.bin at " +
                b.url("/missing.bin") + " (redirected from http://127.0.0.1:" + std::to_string(a.port()) +
                "/moved.bin)\n"
                "hint: the file is not on the server; check the channel URL, or refresh the lockfile");
  r.url = a.url("/near.bin");  // loopback to loopback: followed
  auto near = envlock::fetch_to_file(r, fast_retries());
  ASSERT_TRUE(near.ok()) << near.error().to_string();
  EXPECT_EQ(near->url, b.url("/payload.bin"));
}

TEST_F(Fetch, CredentialsFileBearerBasicAndCondaToken) {
  write_file(dir_ / "creds.json", R"({"127.0.0.1": {"BearerToken": "SECRET-tok"}})");
  HttpServer bearer(dir_ / "srv", {"--bearer", "SECRET-tok"});
  ASSERT_TRUE(bearer.ok()) << bearer.error();
  FetchOptions o = fast_retries();
  auto denied = envlock::fetch_to_file(payload_request(bearer), o);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().http_status, 401);
  EXPECT_EQ(denied.error().hint, "check the credentials for this host: in the channel URL, the credentials file "
                                 "(ENVLOCK_AUTH_FILE) or ~/.netrc (or $NETRC)");
  o.credentials_file = dir_ / "creds.json";
  ASSERT_TRUE(envlock::fetch_to_file(payload_request(bearer), o).ok());

  write_file(dir_ / "creds.json", R"({"127.0.0.1": {"CondaToken": "SECRET-ct"}})");
  HttpServer token(dir_ / "srv", {"--path-token", "SECRET-ct"});
  ASSERT_TRUE(token.ok()) << token.error();
  std::filesystem::remove(dir_ / "out/payload.bin");
  auto got = envlock::fetch_to_file(payload_request(token), o);
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(got->url, token.url("/payload.bin"));  // the token never shows
  EXPECT_EQ(token.request_count("/t/SECRET-ct/payload.bin"), 1);

  // A credentials file that does not parse stops the batch, naming the file only.
  write_file(dir_ / "creds.json", R"({"127.0.0.1": {"BearerToken": 42}})");
  auto bad = envlock::fetch_to_file(payload_request(token), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().to_string(),
            (dir_ / "creds.json").string() + ": credentials for '127.0.0.1': BearerToken is not a string\n"
            "hint: an entry is {\"BearerToken\": \"...\"}, {\"CondaToken\": \"...\"} or "
            "{\"BasicHTTP\": {\"username\": \"...\", \"password\": \"...\"}}");
  o.credentials_file = dir_ / "absent.json";
  auto absent = envlock::fetch_to_file(payload_request(token), o);
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.error().kind, ErrorKind::Io);
}

TEST(CredentialStore, LookupFollowsRattler) {
  // rattler_networking authentication_storage/storage.rs get_by_url_with_host: host, then
  // `*.<domain>` from the host outwards; envlock adds URL prefixes after them.
  auto store = envlock::CredentialStore::parse(R"({
    "repo.prefix.dev": {"BearerToken": "exact"},
    "*.prefix.dev": {"BearerToken": "wild"},
    "*.anaconda.org": {"CondaToken": "ct"},
    "https://mirror.example.net/private": {"BasicHTTP": {"username": "u", "password": "p"}},
    "https://mirror.example.net/private/deeper": {"BearerToken": "deeper"},
    "s3://bucket": {"S3Credentials": {"access_key_id": "a", "secret_access_key": "b"}}
  })", "creds.json");
  ASSERT_TRUE(store.ok()) << store.error().to_string();
  auto token = [&](const std::string& url) -> std::string {
    const envlock::Credential* c = store->find(url);
    if (c == nullptr) return "-";
    return c->kind == envlock::Credential::Kind::Basic ? c->username + ":" + c->password : c->token;
  };
  EXPECT_EQ(token("https://repo.prefix.dev/chan/noarch/repodata.json"), "exact");
  EXPECT_EQ(token("https://REPO.prefix.dev:8443/chan"), "exact");  // host compared without port, any case
  EXPECT_EQ(token("https://other.prefix.dev/chan"), "wild");
  EXPECT_EQ(token("https://a.b.prefix.dev/chan"), "wild");
  EXPECT_EQ(token("https://prefix.dev/chan"), "wild");  // `*.prefix.dev` is tried for the host itself
  EXPECT_EQ(token("https://conda.anaconda.org/private/linux-64/x.conda"), "ct");
  EXPECT_EQ(token("https://mirror.example.net/private/linux-64/x.conda"), "u:p");
  EXPECT_EQ(token("https://mirror.example.net/private/deeper/x"), "deeper");
  EXPECT_EQ(token("https://mirror.example.net/privateer/x"), "-");
  EXPECT_EQ(token("https://mirror.example.net/public/x"), "-");
  EXPECT_EQ(token("https://example.com/x"), "-");
  const envlock::Credential* ct = store->find("https://conda.anaconda.org/private/linux-64/x.conda");
  ASSERT_NE(ct, nullptr);
  EXPECT_EQ(envlock::CredentialStore::apply_to_url("https://conda.anaconda.org/private/linux-64/x.conda", *ct),
            "https://conda.anaconda.org/t/ct/private/linux-64/x.conda");
  EXPECT_EQ(envlock::CredentialStore::apply_to_url("https://conda.anaconda.org/t/mine/private", *ct),
            "https://conda.anaconda.org/t/mine/private");
}

TEST_F(Fetch, ProxyVariablesAndTimeoutsFromTheEnvironment) {
  // libcurl's http_proxy: the test server answers a proxy's absolute-form request like any other.
  HttpServer proxy(dir_ / "srv");
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  ::setenv("http_proxy", proxy.url("").c_str(), 1);
  ::unsetenv("no_proxy");
  ::unsetenv("NO_PROXY");
  FetchRequest r = payload_request(proxy);
  r.url = "http://envlock-proxy-test.invalid/payload.bin";  // resolvable only through the proxy
  auto got = envlock::fetch_to_file(r, fast_retries());
  ::unsetenv("http_proxy");
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(proxy.request_count("/payload.bin"), 1);

  // ENVLOCK_RETRIES overrides the options: 0 retries, one attempt only.
  HttpServer flaky(dir_ / "srv", {"--fail", "/payload.bin=503"});
  ASSERT_TRUE(flaky.ok()) << flaky.error();
  ::setenv("ENVLOCK_RETRIES", "0", 1);
  std::filesystem::remove(dir_ / "out/payload.bin");
  auto once = envlock::fetch_to_file(payload_request(flaky), fast_retries());
  ::unsetenv("ENVLOCK_RETRIES");
  ASSERT_FALSE(once.ok());
  EXPECT_EQ(flaky.request_count("/payload.bin"), 1);
}

}  // namespace

namespace {

class FetchCap : public Fetch {};

/// A download without a recorded size stops at the cap of unknown sizes (HTTP and file://), keeps
/// nothing, is not retried, and names the cap and the variable that changes it.
TEST_F(FetchCap, UnknownSizeIsCappedAndTheCapNamed) {
  HttpServer server(dir_ / "srv");
  ASSERT_TRUE(server.ok()) << server.error();
  for (const std::string& url : {server.url("/payload.bin"), "file://" + (dir_ / "srv/payload.bin").string()}) {
    SCOPED_TRACE(url);
    FetchRequest r;
    r.url = url;
    r.destination = dir_ / "out/payload.bin";
    r.label = "payload.bin";
    auto o = fast_retries();
    o.max_unknown_size = 100000;
    auto res = envlock::fetch_to_file(r, o);
    ASSERT_FALSE(res.ok());
    EXPECT_EQ(res.error().kind, ErrorKind::Integrity);
    EXPECT_EQ(res.error().to_string(),
              envlock::redact_url(url) +
                  ": download of payload.bin refused: its size is not recorded and it passes the cap of 100000 bytes "
                  "for downloads of unknown size (ENVLOCK_MAX_DOWNLOAD_SIZE)\n"
                  "  url:      " + envlock::redact_url(url) + "\n  received: more than 100000 bytes\n"
                  "hint: nothing was kept; raise the cap with ENVLOCK_MAX_DOWNLOAD_SIZE (e.g. 16G) if the file is really "
                  "this large, or use a lockfile that records each package's size");
    expect_no_leftovers(r.destination);
    // At the cap exactly, and with the size recorded (which the cap never limits), it arrives.
    o.max_unknown_size = payload_.size();
    ASSERT_TRUE(envlock::fetch_to_file(r, o).ok());
    fs::remove(r.destination);
    o.max_unknown_size = 10;
    r.size = payload_.size();
    ASSERT_TRUE(envlock::fetch_to_file(r, o).ok());
    fs::remove(r.destination);
  }
  EXPECT_EQ(server.request_counts().value("/payload.bin", 0), 3) << "a capped download is not retried";
}

TEST_F(FetchCap, CapFromTheEnvironment) {
  const char* saved = std::getenv("ENVLOCK_MAX_DOWNLOAD_SIZE");
  const std::string keep = saved != nullptr ? saved : "";
  FetchOptions o;
  ::unsetenv("ENVLOCK_MAX_DOWNLOAD_SIZE");
  EXPECT_EQ(envlock::unknown_size_cap(o).value(), 4ULL << 30);
  for (const auto& [text, bytes] : std::vector<std::pair<std::string, std::uint64_t>>{
           {"1000", 1000}, {"64K", 64ULL << 10}, {"16G", 16ULL << 30}, {"2t", 2ULL << 40}}) {
    ::setenv("ENVLOCK_MAX_DOWNLOAD_SIZE", text.c_str(), 1);
    EXPECT_EQ(envlock::unknown_size_cap(o).value(), bytes) << text;
  }
  o.max_unknown_size = 7;  // the option wins over the variable
  EXPECT_EQ(envlock::unknown_size_cap(o).value(), 7u);
  o.max_unknown_size.reset();
  for (const char* bad : {"0", "12X", "-1", "1.5G", "G", "99999999999999999999"}) {
    ::setenv("ENVLOCK_MAX_DOWNLOAD_SIZE", bad, 1);
    auto cap = envlock::unknown_size_cap(o);
    ASSERT_FALSE(cap.ok()) << bad;
    EXPECT_EQ(cap.error().to_string(), "ENVLOCK_MAX_DOWNLOAD_SIZE: '" + std::string(bad) +
                                           "' is not a size\nhint: give bytes, or a number with K, M, G or T (powers of "
                                           "1024), e.g. 16G");
  }
  // A batch fails the requests without a size with that error, and fetches the others.
  ::setenv("ENVLOCK_MAX_DOWNLOAD_SIZE", "lots", 1);
  FetchRequest sized;
  sized.url = "file://" + (dir_ / "srv/payload.bin").string();
  sized.destination = dir_ / "out/a.bin";
  sized.size = payload_.size();
  FetchRequest unsized = sized;
  unsized.destination = dir_ / "out/b.bin";
  unsized.size.reset();
  auto both = envlock::fetch_all({sized, unsized}, fast_retries());
  EXPECT_TRUE(both[0].ok());
  ASSERT_FALSE(both[1].ok());
  EXPECT_EQ(both[1].error().where, "ENVLOCK_MAX_DOWNLOAD_SIZE");
  if (saved != nullptr) ::setenv("ENVLOCK_MAX_DOWNLOAD_SIZE", keep.c_str(), 1);
  else ::unsetenv("ENVLOCK_MAX_DOWNLOAD_SIZE");
}

}  // namespace
