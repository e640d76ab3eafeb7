// The package cache trusts an entry only when whole (issue 23, point 3), with packages the tests
// build (tests/extract/archive_builder): every file of info/paths.json by size (and sha256 with
// CacheValidation::Hashes, `--extra-safety-checks`), old packages without paths.json by the files
// recorded at extraction; a lockfile with a wrong hash never deletes a good archive; read-only
// pkgs_dirs serve as sources and the first writable folder gets new entries (conda's
// PackageCacheData.first_writable, mamba's MultiPackageCache); an archive bomb is refused with
// the cap named; and SIGKILL during a repair never leaves an entry that passes the check but is
// not whole.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "envlock/hash.hpp"
#include "envlock/install.hpp"
#include "envlock/package_cache.hpp"
#include "extract/archive_builder.hpp"
#include "support/files.hpp"

namespace fs = std::filesystem;
namespace t = envlock::testing;
using envlock::CacheOrigin;
using envlock::CacheValidation;
using envlock::ErrorKind;
using envlock::PackageCache;
using envlock::RepoDataRecord;

namespace {

using t::slurp;
using t::spit;

/// info/paths.json (paths_version 1) for `files` (path -> content) and `links` (path -> target).
std::string paths_json(const std::map<std::string, std::string>& files, const std::map<std::string, std::string>& links) {
  nlohmann::json paths = nlohmann::json::array();
  for (const auto& [p, data] : files) {
    paths.push_back({{"_path", p}, {"path_type", "hardlink"}, {"size_in_bytes", data.size()},
                     {"sha256", envlock::hash_bytes(data, envlock::HashAlgorithm::Sha256)}});
  }
  for (const auto& [p, target] : links) paths.push_back({{"_path", p}, {"path_type", "softlink"}});
  return nlohmann::json{{"paths_version", 1}, {"paths", paths}}.dump();
}

class WholeEntry : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("envlock-whole-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "chan");
  }
  void TearDown() override {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory()) fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    }
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }

  /// Writes a package into the channel and returns its record (file:// URL, sha256, md5, size).
  /// `with_paths_json` false makes an old-style package (info/files only).
  RepoDataRecord package(const std::string& name, const std::map<std::string, std::string>& files,
                         const std::map<std::string, std::string>& links = {}, bool with_paths_json = true,
                         const std::string& ext = ".tar.bz2") {
    const std::string dist = name + "-1.0-0";
    std::vector<t::TestEntry> info = {t::file("info/index.json", R"({"name": ")" + name + R"(", "version": "1.0", "build": "0"})")};
    if (with_paths_json) {
      info.push_back(t::file("info/paths.json", paths_json(files, links)));
    } else {
      std::string list;
      for (const auto& [p, data] : files) list += p + "\n";
      info.push_back(t::file("info/files", list));
    }
    std::vector<t::TestEntry> pkg;
    for (const auto& [p, data] : files) pkg.push_back(t::file(p, data));
    for (const auto& [p, target] : links) pkg.push_back(t::symlink(p, target));
    const fs::path archive = dir_ / "chan" / (dist + ext);
    if (ext == ".conda") {
      t::write_conda(archive, info, pkg);
    } else {
      std::vector<t::TestEntry> all = info;
      all.insert(all.end(), pkg.begin(), pkg.end());
      t::write_tar_bz2(archive, all);
    }
    RepoDataRecord r;
    r.name = name;
    r.version = envlock::Version::parse("1.0").value();
    r.build = "0";
    r.subdir = "noarch";
    r.file_name = dist + ext;
    r.url = "file://" + archive.string();
    auto d = envlock::digest_file(archive);
    EXPECT_TRUE(d.ok());
    r.sha256 = d->sha256;
    r.md5 = d->md5;
    r.size = d->size;
    return r;
  }

  static envlock::CacheOptions with(CacheValidation v) {
    envlock::CacheOptions o;
    o.validation = v;
    o.fetch.max_retries = 0;
    o.fetch.use_netrc = false;
    o.extract_threads = 1;
    return o;
  }

  /// Origin of ensure() with validation `v`, or the error text.
  std::string ensure(PackageCache& cache, const RepoDataRecord& r, CacheValidation v = CacheValidation::Files) {
    auto e = cache.ensure(r, with(v));
    if (!e.ok()) return e.error().to_string();
    static const char* names[] = {"hit", "extracted", "downloaded"};
    return names[static_cast<int>(e->origin)];
  }

  fs::path dir_;
};

const std::map<std::string, std::string> kFiles = {{"bin/tool", "#!/bin/sh\necho tool\n"}, {"share/data.txt", "12345"}};
const std::map<std::string, std::string> kLinks = {{"bin/alias", "tool"}};

TEST_F(WholeEntry, EveryListedFileMustBeThereWithItsSize) {
  auto r = package("whole", kFiles, kLinks);
  auto cache = PackageCache::open(dir_ / "pkgs");
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ(ensure(*cache, r), "downloaded");
  EXPECT_EQ(ensure(*cache, r), "hit");
  const fs::path entry = dir_ / "pkgs/whole-1.0-0";
  fs::remove_all(dir_ / "chan");  // from here on, repairs come from the cached archive

  spit(entry / "share/data.txt", "123");  // other size
  EXPECT_EQ(ensure(*cache, r), "extracted");
  EXPECT_EQ(slurp(entry / "share/data.txt"), "12345");

  fs::remove(entry / "bin/tool");  // missing
  EXPECT_EQ(ensure(*cache, r), "extracted");

  fs::remove(entry / "bin/alias");  // a symlink of paths.json missing
  EXPECT_EQ(ensure(*cache, r), "extracted");
  EXPECT_TRUE(fs::is_symlink(entry / "bin/alias"));

  fs::remove(entry / "share/data.txt");  // a file replaced by a symlink
  fs::create_symlink("/etc/hostname", entry / "share/data.txt");
  EXPECT_EQ(ensure(*cache, r), "extracted");
  EXPECT_FALSE(fs::is_symlink(entry / "share/data.txt"));

  fs::remove(entry / "info/paths.json");  // the list itself gone
  EXPECT_EQ(ensure(*cache, r), "extracted");
  EXPECT_TRUE(fs::exists(entry / "info/paths.json"));

  // Same size, other bytes: only the sha256 check (--extra-safety-checks) sees it.
  spit(entry / "share/data.txt", "54321");
  EXPECT_EQ(ensure(*cache, r), "hit");
  EXPECT_EQ(ensure(*cache, r, CacheValidation::Hashes), "extracted");
  EXPECT_EQ(slurp(entry / "share/data.txt"), "12345");
  EXPECT_EQ(ensure(*cache, r, CacheValidation::Hashes), "hit");
}

TEST_F(WholeEntry, AnArchiveUnlikeItsOwnPathsJsonIsRefusedWhenExtracted) {
  // A new-user attack (session 8): a tar member given twice (tar keeps the later one) installed,
  // and only `verify` found that the file differs from paths.json. conda warns (safety_checks:
  // warn); envlock refuses the package, keeping nothing of it, as conda with safety_checks: enabled.
  const std::string dist = "dup-1.0-0";
  const std::string listed = R"({"paths_version": 1, "paths": [{"_path": "share/f", "path_type": "hardlink", "size_in_bytes": 6}]})";
  auto r = package("dup", {{"share/f", "first\n"}});  // the record; then the archive swapped for the bad one
  const fs::path archive = dir_ / "chan" / (dist + ".tar.bz2");
  t::write_tar_bz2(archive, {t::file("info/index.json", R"({"name": "dup", "version": "1.0", "build": "0"})"),
                             t::file("info/paths.json", listed), t::file("share/f", "first\n"),
                             t::file("share/f", "second-longer\n")});
  // The record of a package whose archive was written again: its digests follow the new bytes.
  const auto redigest = [](RepoDataRecord& rec, const fs::path& file) {
    auto d = envlock::digest_file(file);
    ASSERT_TRUE(d.ok());
    rec.sha256 = d->sha256;
    rec.md5 = d->md5;
    rec.size = d->size;
  };
  redigest(r, archive);
  auto cache = PackageCache::open(dir_ / "pkgs");
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ(ensure(*cache, r), "dup-1.0-0.tar.bz2: does not hold what its info/paths.json lists: share/f is 14 bytes, "
                               "listed as 6 (info/paths.json)\n"
                               "hint: the package is broken at its source: rebuild it, or ask the channel's maintainers "
                               "for a fixed build");
  EXPECT_FALSE(fs::exists(dir_ / "pkgs" / dist));
  // A file paths.json lists that the archive lacks: the same refusal.
  auto missing = package("lacking", {{"share/a", "a"}});
  const fs::path lacking = dir_ / "chan" / "lacking-1.0-0.tar.bz2";
  t::write_tar_bz2(lacking, {t::file("info/index.json", R"({"name": "lacking", "version": "1.0", "build": "0"})"),
                             t::file("info/paths.json", paths_json({{"share/a", "a"}, {"share/b", "b"}}, {})),
                             t::file("share/a", "a")});
  redigest(missing, lacking);
  EXPECT_EQ(ensure(*cache, missing), "lacking-1.0-0.tar.bz2: does not hold what its info/paths.json lists: share/b is "
                                     "missing (info/paths.json)\n"
                                     "hint: the package is broken at its source: rebuild it, or ask the channel's "
                                     "maintainers for a fixed build");
}

TEST_F(WholeEntry, DamagedEntryWithoutArchiveIsDownloadedAgain) {
  auto r = package("refetch", kFiles, {}, true, ".conda");
  auto cache = PackageCache::open(dir_ / "pkgs");
  EXPECT_EQ(ensure(*cache, r), "downloaded");
  fs::remove(dir_ / "pkgs" / r.file_name);
  fs::remove(dir_ / "pkgs/refetch-1.0-0/bin/tool");
  EXPECT_EQ(ensure(*cache, r), "downloaded");
  EXPECT_EQ(slurp(dir_ / "pkgs/refetch-1.0-0/bin/tool"), kFiles.at("bin/tool"));
}

// Old packages have no info/paths.json (info/files only): the files extracted are recorded in the
// completion marker, and checked against it.
TEST_F(WholeEntry, OldPackageWithoutPathsJsonIsCheckedAgainstTheMarker) {
  auto r = package("old", kFiles, {}, false);
  auto cache = PackageCache::open(dir_ / "pkgs");
  EXPECT_EQ(ensure(*cache, r), "downloaded");
  const fs::path entry = dir_ / "pkgs/old-1.0-0";
  const auto marker = nlohmann::json::parse(slurp(entry / "info/envlock_cache.json"));
  EXPECT_EQ(marker["format"], 2);
  EXPECT_EQ(marker["has_paths_json"], false);
  nlohmann::json recorded;
  for (const char* f : {"bin/tool", "info/files", "info/index.json", "share/data.txt"}) recorded[f] = fs::file_size(entry / f);
  EXPECT_EQ(marker["files"], recorded);
  EXPECT_EQ(ensure(*cache, r), "hit");
  spit(entry / "share/data.txt", "1");
  EXPECT_EQ(ensure(*cache, r), "extracted");
  fs::remove(entry / "info/files");
  EXPECT_EQ(ensure(*cache, r), "extracted");
  // A format-1 marker (an older envlock) is not trusted: extracted again.
  auto old = nlohmann::json::parse(slurp(entry / "info/envlock_cache.json"));
  old["format"] = 1;
  spit(entry / "info/envlock_cache.json", old.dump());
  EXPECT_EQ(ensure(*cache, r), "extracted");
}

// A pull request that changes a package's hash must not destroy the good cached archive: the
// download with the wrong hash fails, and the archive and the entry are kept for the right record.
TEST_F(WholeEntry, WrongLockfileHashNeverDeletesAGoodArchive) {
  auto good = package("keep", kFiles);
  auto cache = PackageCache::open(dir_ / "pkgs");
  EXPECT_EQ(ensure(*cache, good), "downloaded");
  const fs::path archive = dir_ / "pkgs" / good.file_name;
  RepoDataRecord wrong = good;
  wrong.sha256 = std::string(64, 'a');
  auto res = cache->ensure(wrong, with(CacheValidation::Files));
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, ErrorKind::Integrity);
  EXPECT_EQ(res.error().message, "sha256 mismatch for keep-1.0-0.tar.bz2") << res.error().to_string();
  EXPECT_EQ(envlock::hash_file(archive, envlock::HashAlgorithm::Sha256).value(), good.sha256);
  EXPECT_FALSE(fs::exists(archive.string() + ".partial"));
  // A wrong hash and size with an unreachable URL: the download fails, the archive is kept.
  RepoDataRecord gone = wrong;
  gone.size = *good.size + 1;
  fs::remove_all(dir_ / "chan");
  auto unreachable = cache->ensure(gone, with(CacheValidation::Files));
  ASSERT_FALSE(unreachable.ok());
  EXPECT_EQ(unreachable.error().kind, ErrorKind::Network) << unreachable.error().to_string();
  EXPECT_EQ(envlock::hash_file(archive, envlock::HashAlgorithm::Sha256).value(), good.sha256);
  // The right record still finds its entry, with no network, and its archive for a repair.
  EXPECT_EQ(ensure(*cache, good), "hit");
  fs::remove_all(dir_ / "pkgs/keep-1.0-0");
  EXPECT_EQ(ensure(*cache, good), "extracted");
}

// pkgs_dirs: read-only folders serve what they hold and are never changed; the first writable one
// gets every new entry, also the extraction of an archive only a read-only folder holds.
TEST_F(WholeEntry, ReadOnlyPkgsDirsAreSourcesTheFirstWritableGetsNewEntries) {
  auto shared = package("shared", kFiles);
  auto archived = package("archived", kFiles);
  auto damaged = package("damaged", kFiles);
  auto fresh = package("fresh", kFiles);
  const fs::path ro = dir_ / "ro";
  {
    auto seed = PackageCache::open(ro);
    for (const auto& r : {shared, archived, damaged}) ASSERT_EQ(ensure(*seed, r), "downloaded");
  }
  fs::remove_all(ro / "archived-1.0-0");         // only its archive is left there
  fs::remove(ro / "damaged-1.0-0/bin/tool");     // an entry that is not whole
  auto listing = [](const fs::path& d) {
    std::set<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(d)) out.insert(e.path().lexically_relative(d).string());
    return out;
  };
  const auto before = listing(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read | fs::perms::group_exec |
                          fs::perms::others_read | fs::perms::others_exec);

  auto cache = PackageCache::open(std::vector<fs::path>{ro, dir_ / "rw"});
  ASSERT_TRUE(cache.ok()) << cache.error().to_string();
  EXPECT_EQ(cache->root(), dir_ / "rw");
  EXPECT_EQ(cache->dirs(), (std::vector<fs::path>{ro, dir_ / "rw"}));

  auto hit = cache->ensure(shared, with(CacheValidation::Files));
  ASSERT_TRUE(hit.ok()) << hit.error().to_string();
  EXPECT_EQ(hit->origin, CacheOrigin::Hit);
  EXPECT_EQ(hit->extracted_dir, ro / "shared-1.0-0");

  auto from_ro_archive = cache->ensure(archived, with(CacheValidation::Files));
  ASSERT_TRUE(from_ro_archive.ok()) << from_ro_archive.error().to_string();
  EXPECT_EQ(from_ro_archive->origin, CacheOrigin::Extracted);
  EXPECT_EQ(from_ro_archive->archive, ro / archived.file_name);
  EXPECT_EQ(from_ro_archive->extracted_dir, dir_ / "rw/archived-1.0-0");

  EXPECT_EQ(ensure(*cache, damaged), "extracted");  // rebuilt in rw from ro's archive
  EXPECT_TRUE(fs::exists(dir_ / "rw/damaged-1.0-0/bin/tool"));
  EXPECT_EQ(ensure(*cache, fresh), "downloaded");
  EXPECT_TRUE(fs::exists(dir_ / "rw" / fresh.file_name));

  EXPECT_EQ(listing(ro), before) << "a read-only cache folder was changed";
  EXPECT_FALSE(cache->lookup(damaged, CacheValidation::Files)->extracted_dir.string().starts_with(ro.string()));

  // Without a writable folder, what is there is served, and a miss says why it cannot be filled.
  auto only_ro = PackageCache::open(std::vector<fs::path>{ro});
  ASSERT_TRUE(only_ro.ok());
  EXPECT_TRUE(only_ro->root().empty());
  EXPECT_EQ(ensure(*only_ro, shared), "hit");
  EXPECT_EQ(ensure(*only_ro, fresh),
            "fresh-1.0-0.tar.bz2: no package cache folder is writable (read-only: " + ro.string() +
                ")\nhint: add a writable folder to ENVLOCK_PKGS_DIRS (the first writable one gets new packages)");
  EXPECT_EQ(listing(ro), before);
}

TEST_F(WholeEntry, PkgsDirsFromTheEnvironment) {
  const char* saved = std::getenv("ENVLOCK_PKGS_DIRS");
  const std::string keep = saved != nullptr ? saved : "";
  ::setenv("ENVLOCK_PKGS_DIRS", "/srv/ro-pkgs,,/data/pkgs", 1);
  EXPECT_EQ(envlock::default_package_cache_dirs().value(), (std::vector<fs::path>{"/srv/ro-pkgs", "/data/pkgs"}));
  ::setenv("ENVLOCK_PKGS_DIRS", "/srv/ro-pkgs,relative/pkgs", 1);
  auto bad = envlock::default_package_cache_dirs();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().to_string(),
            "ENVLOCK_PKGS_DIRS: 'relative/pkgs' is not an absolute path\nhint: list absolute folders, separated by commas "
            "(as CONDA_PKGS_DIRS)");
  ::setenv("ENVLOCK_PKGS_DIRS", ((dir_ / "a").string() + "," + (dir_ / "b").string()).c_str(), 1);
  auto cache = PackageCache::open_default();
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ(cache->root(), dir_ / "a");  // missing: created, and the first writable
  if (saved != nullptr) ::setenv("ENVLOCK_PKGS_DIRS", keep.c_str(), 1);
  else ::unsetenv("ENVLOCK_PKGS_DIRS");
}

// An archive bomb through the cache: refused with the cap named, nothing kept.
TEST_F(WholeEntry, ArchiveBombRefusedWithTheCapNamed) {
  auto r = package("bomb", {{"share/zeros", std::string(4 << 20, '\0')}});
  auto cache = PackageCache::open(dir_ / "pkgs");
  auto o = with(CacheValidation::Files);
  o.limits.expansion_floor = 64 << 10;
  auto res = cache->ensure(r, o);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, ErrorKind::Integrity);
  EXPECT_NE(res.error().message.find("the package expands past the expansion cap of "), std::string::npos)
      << res.error().to_string();
  EXPECT_NE(res.error().message.find("at least "), std::string::npos);
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(dir_ / "pkgs")) left.insert(e.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"bomb-1.0-0.lock"}));
}

// SIGKILL at random points of a repair (a damaged entry extracted again from its archive) leaves
// either the damaged entry, which the check still refuses, or the whole new one — never an entry
// that passes the check but is not whole; the next run repairs it and removes the debris.
TEST_F(WholeEntry, KilledRepairNeverLeavesAnEntryThatPassesButIsNotWhole) {
  std::map<std::string, std::string> many;
  std::mt19937 rng(23);
  for (int i = 0; i < 400; ++i) {
    std::string data(2000 + rng() % 20000, '\0');
    for (char& c : data) c = static_cast<char>('a' + rng() % 26);
    many["lib/f" + std::to_string(i)] = data;
  }
  auto r = package("big", many, {}, true, ".conda");
  {
    auto cache = PackageCache::open(dir_ / "pkgs");
    ASSERT_EQ(ensure(*cache, r), "downloaded");
  }
  fs::remove_all(dir_ / "chan");
  const fs::path entry = dir_ / "pkgs/big-1.0-0";
  int killed_midway = 0;
  for (int round = 0; round < 12; ++round) {
    fs::remove(entry / "lib/f7");  // damage
    const pid_t pid = ::fork();
    if (pid == 0) {
      auto cache = PackageCache::open(dir_ / "pkgs");
      auto res = cache->ensure(r, with(CacheValidation::Files));
      ::_exit(res.ok() ? 0 : 1);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500 + rng() % 40000));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) ++killed_midway;
    auto cache = PackageCache::open(dir_ / "pkgs");
    auto files = cache->lookup(r, CacheValidation::Files);
    auto hashes = cache->lookup(r, CacheValidation::Hashes);
    EXPECT_EQ(files.has_value(), hashes.has_value()) << "round " << round << ": an entry passed the size check but not the hashes";
    if (files) {
      for (const auto& [p, data] : many) ASSERT_EQ(fs::file_size(entry / p), data.size()) << p;
    }
  }
  EXPECT_GT(killed_midway, 0) << "no kill landed before the repair finished";
  auto cache = PackageCache::open(dir_ / "pkgs");
  const std::string last = ensure(*cache, r);
  EXPECT_TRUE(last == "extracted" || last == "hit") << last;
  EXPECT_TRUE(cache->lookup(r, CacheValidation::Hashes).has_value());
  for (const auto& e : fs::directory_iterator(dir_ / "pkgs")) {
    EXPECT_EQ(e.path().filename().string().find(".extracting-"), std::string::npos) << "debris left: " << e.path();
  }
}

// `envlock verify` compares the cache entry a package was linked from with its own paths.json:
// a cache copy edited, truncated or deleted is reported (Kind::Cache), beside the prefix's own
// drift when the edit went through a hard link.
TEST_F(WholeEntry, VerifyReportsCacheCopiesThatNoLongerMatch) {
  auto r = package("seen", kFiles, kLinks);
  auto cache = PackageCache::open(dir_ / "pkgs");
  auto e = cache->ensure(r, with(CacheValidation::Files));
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  envlock::PackageToLink p;
  p.record = r;
  p.extracted_dir = e->extracted_dir;
  p.archive_path = e->archive;
  envlock::InstallOptions o;
  o.scripts = envlock::RunScripts::No;
  const fs::path prefix = dir_ / "env";
  auto installed = envlock::install_packages(prefix, {p}, o);
  ASSERT_TRUE(installed.ok()) << installed.error().to_string();
  auto clean = envlock::verify_prefix(prefix);
  ASSERT_TRUE(clean.ok());
  EXPECT_TRUE(clean->clean());

  auto describe = [](const envlock::VerifyReport& v) {
    std::vector<std::string> out;
    for (const auto& d : v.drift) {
      out.push_back(std::to_string(static_cast<int>(d.kind)) + " " + d.path + " " + d.package + ": " + d.reason);
    }
    return out;
  };
  const std::string data_sha = envlock::hash_bytes("12345", envlock::HashAlgorithm::Sha256).substr(0, 12) + "…";
  // Same size, through the hard link: the prefix file and the cache copy both changed.
  spit(prefix / "share/data.txt", "54321");
  const std::string edited_sha = envlock::hash_bytes("54321", envlock::HashAlgorithm::Sha256).substr(0, 12) + "…";
  auto linked = envlock::verify_prefix(prefix);
  ASSERT_TRUE(linked.ok());
  EXPECT_EQ(describe(*linked), (std::vector<std::string>{
                                   "0 share/data.txt seen-1.0-0: sha256 " + edited_sha + " != recorded " + data_sha,
                                   "3 share/data.txt seen-1.0-0: package cache copy: sha256 " + edited_sha +
                                       " != paths.json " + data_sha}));
  // The cache copy alone: deleted, truncated (the prefix keeps its own copy of the inode).
  spit(prefix / "share/data.txt", "12345");
  fs::remove(e->extracted_dir / "bin/tool");
  fs::remove(e->extracted_dir / "share/data.txt");
  spit(e->extracted_dir / "share/data.txt", "12");
  auto cached = envlock::verify_prefix(prefix);
  ASSERT_TRUE(cached.ok());
  EXPECT_EQ(describe(*cached), (std::vector<std::string>{"3 bin/tool seen-1.0-0: package cache copy not found",
                                                         "3 share/data.txt seen-1.0-0: package cache copy: size 2 != paths.json 5"}));
  // The cache entry gone altogether (cleaned): nothing to compare, nothing reported.
  fs::remove_all(e->extracted_dir);
  auto gone = envlock::verify_prefix(prefix);
  ASSERT_TRUE(gone.ok());
  EXPECT_TRUE(gone->clean()) << describe(*gone).size();
}

}  // namespace
