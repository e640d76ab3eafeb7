// Tests of envlock/package_cache.hpp over the real channels of the corpus: cold and warm runs,
// repair of damaged entries, refusal of bad packages with nothing left behind, and two processes
// sharing one cache.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "envlock/hash.hpp"
#include "envlock/package_cache.hpp"
#include "envlock/paths.hpp"
#include "support/http_server.hpp"

namespace fs = std::filesystem;
using envlock::CacheOrigin;
using envlock::ErrorKind;
using envlock::PackageCache;
using envlock::RepoDataRecord;
using envlock::testing::HttpServer;

namespace {

const fs::path kPackages = fs::path(ENVLOCK_SHARED_DIR) / "corpus/packages";

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// Records of one subdir of a corpus channel, with URLs under `base_url`.
std::vector<RepoDataRecord> records_of(const fs::path& repodata, const std::string& base_url) {
  auto j = nlohmann::json::parse(read_file(repodata));
  std::vector<RepoDataRecord> out;
  for (const char* key : {"packages", "packages.conda"}) {
    if (!j.contains(key)) continue;
    for (const auto& [fn, entry] : j[key].items()) {
      auto rec = envlock::PackageRecord::from_json(entry);
      EXPECT_TRUE(rec.ok()) << fn << ": " << rec.error().to_string();
      if (!rec.ok()) continue;
      RepoDataRecord r;
      static_cast<envlock::PackageRecord&>(r) = *rec;
      r.file_name = fn;
      r.url = base_url + "/" + fn;
      r.channel = base_url.substr(0, base_url.rfind('/'));
      out.push_back(std::move(r));
    }
  }
  return out;
}

/// Copies corpus files `<prefix><subdir>__<name>` to `dest/<subdir>/<name>` (a channel tree).
void rebuild_channel(const std::string& prefix, const fs::path& dest, const std::string& subdir) {
  fs::create_directories(dest / subdir);
  const fs::path dir = fs::path(prefix).parent_path();
  const std::string stem = fs::path(prefix).filename().string() + subdir + "__";
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(stem, 0) == 0) fs::copy_file(e.path(), dest / subdir / name.substr(stem.size()));
  }
}

envlock::CacheOptions quick() {
  envlock::CacheOptions o;
  o.fetch.retry_base_delay = std::chrono::milliseconds(5);
  o.fetch.retry_max_delay = std::chrono::milliseconds(20);
  o.fetch.max_retries = 1;
  o.fetch.use_netrc = false;
  o.extract_threads = 2;
  return o;
}

class Cache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("envlock-cache-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// JanCaha's real linux-64 channel under dir_/chan; false when the corpus is absent.
  bool jancaha() {
    const std::string prefix = (kPackages / "JanCaha__conda-channel/").string();
    if (!fs::exists(prefix)) return false;
    rebuild_channel(prefix, dir_ / "chan", "linux-64");
    return true;
  }

  /// Everything in the cache folder except lock files.
  std::set<std::string> cache_listing(const fs::path& root) const {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(root)) {
      const std::string n = e.path().filename().string();
      if (n.size() < 5 || n.substr(n.size() - 5) != ".lock") out.insert(n);
    }
    return out;
  }

  fs::path dir_;
};

TEST_F(Cache, ColdThenWarmOverHttpRealChannel) {
  if (!jancaha()) GTEST_SKIP() << "shared corpus absent: " << kPackages;
  std::vector<RepoDataRecord> records;
  {
    HttpServer server(dir_ / "chan");
    ASSERT_TRUE(server.ok()) << server.error();
    records = records_of(dir_ / "chan/linux-64/repodata.json", server.url("/linux-64"));
    ASSERT_EQ(records.size(), 22u);
    auto cache = PackageCache::open(dir_ / "pkgs");
    ASSERT_TRUE(cache.ok()) << cache.error().to_string();
    auto results = cache->ensure_all(records, quick());
    const auto counts = server.request_counts();
    for (std::size_t i = 0; i < records.size(); ++i) {
      ASSERT_TRUE(results[i].ok()) << results[i].error().to_string();
      const auto& e = *results[i];
      EXPECT_EQ(e.origin, CacheOrigin::Downloaded);
      EXPECT_EQ(e.dist_name, records[i].name + "-" + records[i].version.to_string() + "-" + records[i].build);
      EXPECT_EQ(e.archive, dir_ / "pkgs" / records[i].file_name);
      EXPECT_EQ(e.extracted_dir, dir_ / "pkgs" / e.dist_name);
      EXPECT_EQ(e.sha256, records[i].sha256);
      EXPECT_EQ(e.size, *records[i].size);
      EXPECT_EQ(envlock::hash_file(e.archive, envlock::HashAlgorithm::Sha256).value(), records[i].sha256);
      auto index = nlohmann::json::parse(read_file(e.extracted_dir / "info/index.json"));
      EXPECT_EQ(index["name"], records[i].name);
      auto rr = nlohmann::json::parse(read_file(e.extracted_dir / "info/repodata_record.json"));
      EXPECT_EQ(rr["url"], records[i].url);
      EXPECT_EQ(rr["fn"], records[i].file_name);
      EXPECT_EQ(rr["sha256"], records[i].sha256);
      EXPECT_EQ(rr["md5"], records[i].md5);
      EXPECT_EQ(counts.value("/linux-64/" + records[i].file_name, 0), 1);
    }
    // Exactly the archives and their folders: no .partial, no staging folders.
    EXPECT_EQ(cache_listing(dir_ / "pkgs").size(), 44u);
  }
  // The server is gone: a warm run must not need it.
  auto cache = PackageCache::open(dir_ / "pkgs");
  auto warm = cache->ensure_all(records, quick());
  for (std::size_t i = 0; i < records.size(); ++i) {
    ASSERT_TRUE(warm[i].ok()) << warm[i].error().to_string();
    EXPECT_EQ(warm[i]->origin, CacheOrigin::Hit);
    auto found = cache->lookup(records[i]);
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->extracted_dir, warm[i]->extracted_dir);
  }
}

TEST_F(Cache, FileChannelTestRecipes) {
  const std::string prefix = (kPackages / "conda__conda/tests__data__test-recipes__").string();
  if (!fs::exists(kPackages / "conda__conda")) GTEST_SKIP() << "shared corpus absent: " << kPackages;
  std::vector<RepoDataRecord> records;
  for (const std::string subdir : {"noarch", "linux-fake"}) {
    rebuild_channel(prefix, dir_ / "chan", subdir);
    auto part = records_of(dir_ / "chan" / subdir / "repodata.json", "file://" + (dir_ / "chan" / subdir).string());
    records.insert(records.end(), part.begin(), part.end());
  }
  ASSERT_GT(records.size(), 20u);
  auto cache = PackageCache::open(dir_ / "pkgs");
  auto results = cache->ensure_all(records, quick());
  for (std::size_t i = 0; i < records.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].error().to_string();
    EXPECT_TRUE(fs::is_regular_file(results[i]->extracted_dir / "info/index.json"));
  }
}

TEST_F(Cache, RepairsDamagedEntriesWithoutNetworkWhenTheArchiveIsGood) {
  if (!jancaha()) GTEST_SKIP() << "shared corpus absent: " << kPackages;
  auto records = records_of(dir_ / "chan/linux-64/repodata.json", "file://" + (dir_ / "chan/linux-64").string());
  records.resize(3);
  auto cache = PackageCache::open(dir_ / "pkgs");
  for (auto& r : cache->ensure_all(records, quick())) ASSERT_TRUE(r.ok()) << r.error().to_string();
  // From here on the channel is gone: any download would fail.
  fs::remove_all(dir_ / "chan");

  // 1. Extracted folder deleted: re-extracted from the cached archive.
  fs::remove_all(dir_ / "pkgs" / records[0].file_name.substr(0, records[0].file_name.size() - 6));
  // 2. Completion marker missing (a folder left by something else): replaced.
  const fs::path dir1 = dir_ / "pkgs" / records[1].file_name.substr(0, records[1].file_name.size() - 6);
  fs::remove(dir1 / "info/envlock_cache.json");
  std::ofstream(dir1 / "stray") << "x";
  // Debris of a process killed while extracting records[0]: removed when it is extracted again.
  const std::string dist0 = records[0].file_name.substr(0, records[0].file_name.size() - 6);
  fs::create_directories(dir_ / "pkgs" / ("." + dist0 + ".extracting-99999-0/lib"));
  // 3. A file inside deleted: found only by CacheValidation::Files.
  const fs::path dir2 = dir_ / "pkgs" / records[2].file_name.substr(0, records[2].file_name.size() - 6);
  auto paths = nlohmann::json::parse(read_file(dir2 / "info/paths.json"));
  const std::string victim = paths["paths"][0]["_path"];
  fs::remove(dir2 / victim);

  auto marker_only = cache->ensure(records[2], quick());
  ASSERT_TRUE(marker_only.ok());
  EXPECT_EQ(marker_only->origin, CacheOrigin::Hit);

  auto opts = quick();
  opts.validation = envlock::CacheValidation::Files;
  auto again = cache->ensure_all(records, opts);
  for (auto& r : again) ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(again[0]->origin, CacheOrigin::Extracted);
  EXPECT_EQ(again[1]->origin, CacheOrigin::Extracted);
  EXPECT_FALSE(fs::exists(dir1 / "stray"));
  EXPECT_EQ(again[2]->origin, CacheOrigin::Extracted);
  EXPECT_TRUE(fs::exists(dir2 / victim));
  EXPECT_FALSE(fs::exists(dir_ / "pkgs" / ("." + dist0 + ".extracting-99999-0")));
  EXPECT_EQ(cache_listing(dir_ / "pkgs").size(), 6u);

  // 4. A paths.json of the wrong shape (a number where a path belongs; the entries are checked on
  // worker threads): extracted again, never a crash.
  auto bad = nlohmann::json::parse(read_file(dir1 / "info/paths.json"));
  bad["paths"][0]["_path"] = 5;
  std::ofstream(dir1 / "info/paths.json", std::ios::trunc) << bad.dump();
  auto reshaped = cache->ensure_all(records, opts);
  for (auto& r : reshaped) ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(reshaped[0]->origin, CacheOrigin::Hit);
  EXPECT_EQ(reshaped[1]->origin, CacheOrigin::Extracted);
  EXPECT_EQ(nlohmann::json::parse(read_file(dir1 / "info/paths.json"))["paths"][0]["_path"].type(),
            nlohmann::json::value_t::string);
}

TEST_F(Cache, CorruptCachedArchiveIsDownloadedAgain) {
  if (!jancaha()) GTEST_SKIP() << "shared corpus absent: " << kPackages;
  auto records = records_of(dir_ / "chan/linux-64/repodata.json", "file://" + (dir_ / "chan/linux-64").string());
  records.resize(1);
  auto cache = PackageCache::open(dir_ / "pkgs");
  ASSERT_TRUE(cache->ensure(records[0], quick()).ok());
  const fs::path archive = dir_ / "pkgs" / records[0].file_name;
  fs::remove_all(dir_ / "pkgs" / records[0].file_name.substr(0, records[0].file_name.size() - 6));
  {
    std::fstream f(archive, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x42');
  }
  auto again = cache->ensure(records[0], quick());
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(again->origin, CacheOrigin::Downloaded);
  EXPECT_EQ(envlock::hash_file(archive, envlock::HashAlgorithm::Sha256).value(), records[0].sha256);
}

TEST_F(Cache, HashMismatchLeavesNothing) {
  if (!jancaha()) GTEST_SKIP() << "shared corpus absent: " << kPackages;
  HttpServer server(dir_ / "chan");
  ASSERT_TRUE(server.ok()) << server.error();
  auto records = records_of(dir_ / "chan/linux-64/repodata.json", server.url("/linux-64"));
  records.resize(2);
  const std::string wrong(64, 'f');
  records[0].sha256 = wrong;
  auto cache = PackageCache::open(dir_ / "pkgs");
  auto results = cache->ensure_all(records, quick());
  ASSERT_FALSE(results[0].ok());
  const std::string text = results[0].error().to_string();
  EXPECT_EQ(results[0].error().kind, ErrorKind::Integrity);
  EXPECT_NE(text.find(records[0].url), std::string::npos) << text;
  EXPECT_NE(text.find("expected: sha256 " + wrong + ", " + std::to_string(*records[0].size) + " bytes"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("actual:   sha256 "), std::string::npos) << text;
  ASSERT_TRUE(results[1].ok()) << results[1].error().to_string();  // the other one is unaffected
  // Only the good package is in the cache.
  const std::string good_dist = records[1].file_name.substr(0, records[1].file_name.size() - 6);
  EXPECT_EQ(cache_listing(dir_ / "pkgs"), (std::set<std::string>{records[1].file_name, good_dist}));
  EXPECT_FALSE(cache->lookup(records[0]).has_value());
}

TEST_F(Cache, CorruptChannelPackagesRefusedCleanly) {
  const fs::path src = kPackages / "conda__conda-index";
  if (!fs::exists(src)) GTEST_SKIP() << "shared corpus absent: " << src;
  rebuild_channel((src / "tests__index_data__corrupt__").string(), dir_ / "chan", "noarch");
  std::vector<RepoDataRecord> records;
  for (const std::string fn : {"another_bad_package-1.0-0.conda", "bad_package-1.0-0.tar.bz2"}) {
    // The corpus names them without version and build; serve them under package-shaped names,
    // with the digests of the bytes as they are (so the download succeeds and extraction judges).
    const std::string orig = fn.rfind("another", 0) == 0 ? "another_bad_package.conda" : "bad_package.tar.bz2";
    fs::copy_file(dir_ / "chan/noarch" / orig, dir_ / "chan/noarch" / fn);
    RepoDataRecord r;
    r.name = fn.substr(0, fn.find("-1.0"));
    r.version = *envlock::Version::parse("1.0");
    r.build = "0";
    r.file_name = fn;
    r.url = "file://" + (dir_ / "chan/noarch" / fn).string();
    auto d = envlock::digest_file(dir_ / "chan/noarch" / fn);
    ASSERT_TRUE(d.ok());
    r.sha256 = d->sha256;
    r.size = d->size;
    records.push_back(r);
  }
  auto cache = PackageCache::open(dir_ / "pkgs");
  auto results = cache->ensure_all(records, quick());
  for (std::size_t i = 0; i < records.size(); ++i) {
    ASSERT_FALSE(results[i].ok()) << records[i].file_name;
    EXPECT_EQ(results[i].error().kind, ErrorKind::Integrity) << results[i].error().to_string();
    EXPECT_NE(results[i].error().where.find(records[i].file_name), std::string::npos) << results[i].error().to_string();
  }
  EXPECT_TRUE(cache_listing(dir_ / "pkgs").empty());
}

TEST_F(Cache, NotFoundAndUsageErrors) {
  HttpServer server(dir_);
  ASSERT_TRUE(server.ok()) << server.error();
  RepoDataRecord missing;
  missing.name = "ghost";
  missing.version = *envlock::Version::parse("1.0");
  missing.build = "0";
  missing.file_name = "ghost-1.0-0.conda";
  missing.url = server.url("/ghost-1.0-0.conda");
  RepoDataRecord nourl = missing;
  nourl.url.clear();
  RepoDataRecord badname = missing;
  badname.file_name = "ghost.zip";
  // A file name other than the record's identity could take another cache entry's lock file or
  // archive name (a new-user attack, session 8): refused before anything is fetched.
  RepoDataRecord lockname = missing;
  lockname.file_name = "ghost-1.0-0.lock.tar.bz2";
  RepoDataRecord archivename = missing;
  archivename.file_name = "ghost-1.0-0.tar.bz2.conda";
  auto cache = PackageCache::open(dir_ / "pkgs");
  auto results = cache->ensure_all({missing, nourl, badname, lockname, archivename}, quick());
  ASSERT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].error().kind, ErrorKind::Network);
  EXPECT_EQ(results[0].error().message, "HTTP 404 Not Found for ghost-1.0-0.conda");
  ASSERT_FALSE(results[1].ok());
  EXPECT_EQ(results[1].error().kind, ErrorKind::Usage);
  EXPECT_EQ(results[1].error().where, "ghost-1.0-0.conda");
  ASSERT_FALSE(results[2].ok());
  EXPECT_EQ(results[2].error().kind, ErrorKind::Parse);  // what the lockfile holds: exit 1
  for (std::size_t i : {3u, 4u}) {
    ASSERT_FALSE(results[i].ok());
    EXPECT_EQ(results[i].error().kind, ErrorKind::Parse);
    EXPECT_EQ(results[i].error().message, "the file name is not the record's ghost-1.0-0.conda or .tar.bz2");
  }
  EXPECT_TRUE(cache_listing(dir_ / "pkgs").empty());
}

TEST_F(Cache, DuplicatesMd5OnlyAndRemove) {
  if (!jancaha()) GTEST_SKIP() << "shared corpus absent: " << kPackages;
  auto records = records_of(dir_ / "chan/linux-64/repodata.json", "file://" + (dir_ / "chan/linux-64").string());
  RepoDataRecord r = records[0];
  r.sha256.clear();  // md5 only, as in old repodata
  auto cache = PackageCache::open(dir_ / "pkgs");
  auto results = cache->ensure_all({r, r}, quick());
  ASSERT_TRUE(results[0].ok()) << results[0].error().to_string();
  ASSERT_TRUE(results[1].ok());
  EXPECT_EQ(results[0]->extracted_dir, results[1]->extracted_dir);
  EXPECT_EQ(results[0]->sha256, records[0].sha256);  // computed while downloading
  auto marker = nlohmann::json::parse(read_file(results[0]->extracted_dir / "info/envlock_cache.json"));
  EXPECT_EQ(marker["archive_md5"], r.md5);
  // A record with another md5 does not match the entry.
  RepoDataRecord other = r;
  other.md5 = std::string(32, '0');
  EXPECT_FALSE(cache->lookup(other).has_value());
  EXPECT_TRUE(cache->lookup(r).has_value());

  ASSERT_TRUE(cache->remove(r).ok());
  EXPECT_FALSE(cache->lookup(r).has_value());
  EXPECT_TRUE(cache_listing(dir_ / "pkgs").empty());
}

TEST_F(Cache, TwoProcessesShareOneCache) {
  if (!jancaha()) GTEST_SKIP() << "shared corpus absent: " << kPackages;
  auto records = records_of(dir_ / "chan/linux-64/repodata.json", "file://" + (dir_ / "chan/linux-64").string());
  // Each process writes, per record, the origin it saw (0 hit, 1 extracted, 2 downloaded).
  auto run = [&](const fs::path& report) {
    auto cache = PackageCache::open(dir_ / "pkgs");
    auto opts = quick();
    opts.extract_threads = 1;
    auto results = cache->ensure_all(records, opts);
    std::ofstream out(report);
    for (auto& r : results) out << (r.ok() ? static_cast<int>(r->origin) : -1) << "\n";
  };
  std::vector<pid_t> kids;
  for (int k = 0; k < 2; ++k) {
    pid_t pid = ::fork();
    if (pid == 0) {
      run(dir_ / ("report" + std::to_string(k)));
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::ifstream a(dir_ / "report0");
  std::ifstream b(dir_ / "report1");
  for (std::size_t i = 0; i < records.size(); ++i) {
    int x = -9;
    int y = -9;
    a >> x;
    b >> y;
    // Both succeeded; exactly one of them did the work, the other found it done.
    ASSERT_GE(x, 0);
    ASSERT_GE(y, 0);
    EXPECT_EQ(std::min(x, y), static_cast<int>(CacheOrigin::Hit)) << records[i].file_name;
    EXPECT_EQ(std::max(x, y), static_cast<int>(CacheOrigin::Downloaded)) << records[i].file_name;
  }
  auto cache = PackageCache::open(dir_ / "pkgs");
  for (const auto& r : records) EXPECT_TRUE(cache->lookup(r).has_value()) << r.file_name;
  EXPECT_EQ(cache_listing(dir_ / "pkgs").size(), 2 * records.size());
}

// One place decides the package cache folder (envlock/paths.hpp's package_cache_dir), and
// ENVLOCK_CACHE_DIR moves it with the rest of the cache (attack 22 A1: it was ignored by the
// package cache, which had a second copy of the rule).
TEST_F(Cache, DefaultLocation) {
  const char* names[4] = {"ENVLOCK_PKGS_DIR", "ENVLOCK_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  std::optional<std::string> keep[4];
  for (int i = 0; i < 4; ++i)
    if (const char* v = std::getenv(names[i])) keep[i] = v;
  ::setenv("ENVLOCK_PKGS_DIR", "/data/pkgs", 1);
  ::setenv("ENVLOCK_CACHE_DIR", "/scratch/envlock", 1);
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(envlock::package_cache_dir().value(), fs::path("/data/pkgs"));
  EXPECT_EQ(envlock::default_package_cache_dirs().value(), std::vector<fs::path>{"/data/pkgs"});
  ::unsetenv("ENVLOCK_PKGS_DIR");
  EXPECT_EQ(envlock::package_cache_dir().value(), fs::path("/scratch/envlock/pkgs"));
  EXPECT_EQ(envlock::default_package_cache_dirs().value(), std::vector<fs::path>{"/scratch/envlock/pkgs"});
  EXPECT_EQ(envlock::cache_root(), fs::path("/scratch/envlock"));
  ::unsetenv("ENVLOCK_CACHE_DIR");
  EXPECT_EQ(envlock::package_cache_dir().value(), fs::path("/xdg/envlock/pkgs"));
  EXPECT_EQ(envlock::cache_root(), fs::path("/xdg/envlock"));
  ::setenv("XDG_CACHE_HOME", "relative", 1);  // ignored, as the XDG spec says
  EXPECT_EQ(envlock::package_cache_dir().value(), fs::path("/home/u/.cache/envlock/pkgs"));
  EXPECT_EQ(envlock::cache_root(), fs::path("/home/u/.cache/envlock"));
  ::unsetenv("XDG_CACHE_HOME");
  ::unsetenv("HOME");
  auto none = envlock::package_cache_dir();  // never a folder in /tmp that another user made
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().to_string(), "cannot place the package cache: none of ENVLOCK_PKGS_DIR, ENVLOCK_CACHE_DIR, "
                                      "XDG_CACHE_HOME or HOME is set\nhint: set ENVLOCK_PKGS_DIR (or ENVLOCK_CACHE_DIR) "
                                      "to a writable folder");
  for (int i = 0; i < 4; ++i) {
    if (keep[i]) ::setenv(names[i], keep[i]->c_str(), 1);
    else ::unsetenv(names[i]);
  }
}

}  // namespace
