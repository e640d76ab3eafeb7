// Tests of envlock/extract.hpp: every real package of the corpus channels unpacks and matches its
// own info/paths.json; corrupt, truncated and hostile archives are refused with nothing left.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "archive_builder.hpp"
#include "envlock/extract.hpp"
#include "envlock/hash.hpp"

namespace fs = std::filesystem;
namespace t = envlock::testing;
using envlock::ErrorKind;
using envlock::HashAlgorithm;

namespace {

const fs::path kPackages = fs::path(ENVLOCK_SHARED_DIR) / "corpus/packages";

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// Every path below `root` (files, symlinks and directories), relative, with a short description.
std::map<std::string, std::string> tree(const fs::path& root, bool skip_info) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string rel = fs::relative(it->path(), root).string();
    if (skip_info && (rel == "info" || rel.rfind("info/", 0) == 0)) continue;
    if (it->is_symlink()) {
      out[rel] = "-> " + fs::read_symlink(it->path()).string();
    } else if (it->is_directory()) {
      out[rel] = "dir";
    } else {
      out[rel] = envlock::hash_file(it->path(), HashAlgorithm::Sha256).value();
    }
  }
  return out;
}

const std::vector<t::TestEntry> kInfo = {t::file("info/index.json", R"({"name": "x", "version": "1", "build": "0"})")};

class Extract : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("envlock-extract-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "out");
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Extracts a hostile tar.bz2 and expects an Integrity error mentioning `why`; nothing may be
  /// left: no destination, no staging directory, nothing written next to them.
  void expect_refused(const std::vector<t::TestEntry>& entries, const std::string& why,
                      const envlock::ExtractLimits& limits = {}) {
    std::vector<t::TestEntry> all = kInfo;
    all.insert(all.end(), entries.begin(), entries.end());
    const fs::path bz2 = dir_ / "bad-1-0.tar.bz2";
    t::write_tar_bz2(bz2, all);
    const fs::path conda = dir_ / "bad-1-0.conda";
    t::write_conda(conda, kInfo, entries);
    for (const fs::path& archive : {bz2, conda}) {
      auto res = envlock::extract_package(archive, dir_ / "out/pkg", limits);
      ASSERT_FALSE(res.ok()) << archive;
      EXPECT_EQ(res.error().kind, ErrorKind::Integrity) << res.error().to_string();
      EXPECT_NE(res.error().message.find(why), std::string::npos) << res.error().to_string();
      EXPECT_EQ(res.error().where, archive.string());
      EXPECT_TRUE(fs::is_empty(dir_ / "out")) << "left behind in " << (dir_ / "out");
      EXPECT_FALSE(fs::exists(dir_ / "evil"));
      EXPECT_FALSE(fs::exists(dir_ / "out/evil"));
    }
  }

  fs::path dir_;
};

/// Checks an extracted package against its own info/paths.json (paths_version 1): every listed
/// file present with the recorded size and sha256, every listed symlink a symlink.
void expect_matches_paths_json(const fs::path& root) {
  const fs::path pj = root / "info/paths.json";
  if (!fs::exists(pj)) return;  // old packages list info/files only
  auto j = nlohmann::json::parse(read_file(pj));
  for (const auto& p : j.at("paths")) {
    const fs::path f = root / p.at("_path").get<std::string>();
    const std::string type = p.value("path_type", "hardlink");
    if (type == "softlink") {
      // A symlink; or, for packages built where symlinks had no target, an empty file.
      EXPECT_TRUE(fs::is_symlink(f) || (fs::is_regular_file(fs::symlink_status(f)) && fs::file_size(f) == 0)) << f;
    } else if (type == "hardlink") {
      ASSERT_TRUE(fs::is_regular_file(fs::symlink_status(f))) << f;
      if (p.contains("size_in_bytes")) {
        EXPECT_EQ(fs::file_size(f), p["size_in_bytes"].get<std::uint64_t>()) << f;
      }
      if (p.contains("sha256")) {
        EXPECT_EQ(envlock::hash_file(f, HashAlgorithm::Sha256).value(), p["sha256"].get<std::string>()) << f;
      }
    }
  }
}

TEST_F(Extract, RealZlibBothFormatsGiveTheSameFiles) {
  const fs::path base = kPackages / "conda__conda/tests__data__conda_format_repo__linux-64__zlib-1.2.11-h7b6447c_3";
  if (!fs::exists(base.string() + ".conda")) GTEST_SKIP() << "shared corpus absent: " << base;
  // The extension must be on the file name, so give the corpus files their real names.
  fs::copy_file(base.string() + ".conda", dir_ / "zlib-1.2.11-h7b6447c_3.conda");
  fs::copy_file(base.string() + ".tar.bz2", dir_ / "zlib-1.2.11-h7b6447c_3.tar.bz2");
  auto a = envlock::extract_package(dir_ / "zlib-1.2.11-h7b6447c_3.conda", dir_ / "out/a");
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  auto b = envlock::extract_package(dir_ / "zlib-1.2.11-h7b6447c_3.tar.bz2", dir_ / "out/b");
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  EXPECT_EQ(tree(dir_ / "out/a", true), tree(dir_ / "out/b", true));
  EXPECT_EQ(a->files, b->files);
  // This package's .conda holds lib/libz.so as a symlink with an empty target and its .tar.bz2
  // as an empty file: both formats must give the empty file.
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(dir_ / "out/a/lib/libz.so")));
  EXPECT_EQ(fs::file_size(dir_ / "out/a/lib/libz.so"), 0u);
  EXPECT_EQ(fs::file_size(dir_ / "out/a/lib/libz.so.1.2.11"), 133384u);
  auto index = nlohmann::json::parse(read_file(dir_ / "out/a/info/index.json"));
  EXPECT_EQ(index["name"], "zlib");
  EXPECT_EQ(index["version"], "1.2.11");
  expect_matches_paths_json(dir_ / "out/a");
  expect_matches_paths_json(dir_ / "out/b");
  // No staging directories left.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "out"), fs::directory_iterator()), 2);
}

TEST_F(Extract, RealMockPairedFormats) {
  const fs::path base = kPackages / "conda__conda-package-handling/tests__data__mock-2.0.0-py37_1000";
  if (!fs::exists(base.string() + ".conda")) GTEST_SKIP() << "shared corpus absent: " << base;
  fs::copy_file(base.string() + ".conda", dir_ / "mock-2.0.0-py37_1000.conda");
  fs::copy_file(base.string() + ".tar.bz2", dir_ / "mock-2.0.0-py37_1000.tar.bz2");
  auto a = envlock::extract_package(dir_ / "mock-2.0.0-py37_1000.conda", dir_ / "out/a");
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  auto b = envlock::extract_package(dir_ / "mock-2.0.0-py37_1000.tar.bz2", dir_ / "out/b");
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  EXPECT_EQ(tree(dir_ / "out/a", true), tree(dir_ / "out/b", true));
  EXPECT_GT(a->files, 10u);
  expect_matches_paths_json(dir_ / "out/a");
}

TEST_F(Extract, EveryRealChannelPackageMatchesItsPathsJson) {
  std::vector<std::pair<fs::path, std::string>> archives;
  for (const auto& owner : {"JanCaha__conda-channel", "conda__conda", "prefix-dev__pixi", "conda__conda-index",
                            "conda__rattler", "mamba-org__quetz"}) {
    if (!fs::exists(kPackages / owner)) continue;
    for (const auto& e : fs::directory_iterator(kPackages / owner)) {
      const std::string name = e.path().filename().string();
      if (name.find("__corrupt__") != std::string::npos) continue;
      const std::string real = name.substr(name.rfind("__") + 2);
      // name-version-build only: tests__archives__a.tar.bz2 and the like are not packages.
      if (envlock::archive_format(real) && std::count(real.begin(), real.end(), '-') >= 2) {
        archives.emplace_back(e.path(), real);
      }
    }
  }
  if (archives.empty()) GTEST_SKIP() << "shared corpus absent: " << kPackages;
  EXPECT_GT(archives.size(), 60u);
  int n = 0;
  for (const auto& [src, real] : archives) {
    const fs::path copy = dir_ / real;
    fs::copy_file(src, copy, fs::copy_options::overwrite_existing);
    const fs::path dest = dir_ / "out" / std::to_string(n++);
    auto res = envlock::extract_package(copy, dest);
    ASSERT_TRUE(res.ok()) << src << ": " << res.error().to_string();
    EXPECT_TRUE(fs::is_regular_file(dest / "info/index.json")) << src;
    // conda-index's spiffy-test-app fixture has a paths.json that does not describe its archive.
    if (real.rfind("spiffy-test-app-", 0) != 0) expect_matches_paths_json(dest);
    fs::remove(copy);
  }
}

TEST_F(Extract, CorruptCorpusPackagesRefused) {
  const fs::path corrupt = kPackages / "conda__conda-index";
  if (!fs::exists(corrupt)) GTEST_SKIP() << "shared corpus absent: " << corrupt;
  for (const auto& [src, real] : std::vector<std::pair<std::string, std::string>>{
           {"tests__index_data__corrupt__noarch__another_bad_package.conda", "another_bad_package.conda"},
           {"tests__index_data__corrupt__noarch__bad_package.tar.bz2", "bad_package.tar.bz2"}}) {
    fs::copy_file(corrupt / src, dir_ / real);
    auto res = envlock::extract_package(dir_ / real, dir_ / "out/pkg");
    ASSERT_FALSE(res.ok()) << real;
    EXPECT_EQ(res.error().kind, ErrorKind::Integrity) << res.error().to_string();
    EXPECT_EQ(res.error().where, (dir_ / real).string());
    EXPECT_FALSE(res.error().hint.empty());
    EXPECT_TRUE(fs::is_empty(dir_ / "out")) << real;
  }
}

TEST_F(Extract, TruncatedArchivesRefused) {
  const fs::path base = kPackages / "conda__conda/tests__data__conda_format_repo__linux-64__zlib-1.2.11-h7b6447c_3";
  if (!fs::exists(base.string() + ".conda")) GTEST_SKIP() << "shared corpus absent: " << base;
  for (const std::string ext : {".conda", ".tar.bz2"}) {
    const std::string bytes = read_file(base.string() + ext);
    // (A .conda cut only inside its ZIP central directory still holds every member complete;
    // the sha256 check before extraction is what refuses such a file.)
    for (const std::size_t keep : {bytes.size() / 2, bytes.size() - 1000, std::size_t{10}}) {
      const fs::path p = dir_ / ("zlib-1.2.11-h7b6447c_3" + ext);
      std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes.substr(0, keep);
      auto res = envlock::extract_package(p, dir_ / "out/pkg");
      ASSERT_FALSE(res.ok()) << ext << " cut at " << keep;
      EXPECT_EQ(res.error().kind, ErrorKind::Integrity) << res.error().to_string();
      EXPECT_TRUE(fs::is_empty(dir_ / "out")) << ext << " cut at " << keep;
    }
  }
}

TEST_F(Extract, DotDotRefused) { expect_refused({t::file("../evil", "x")}, "'..' component"); }

TEST_F(Extract, NestedDotDotRefused) { expect_refused({t::file("lib/../../evil", "x")}, "'..' component"); }

TEST_F(Extract, AbsolutePathRefused) {
  expect_refused({t::file((fs::temp_directory_path() / "envlock-evil").string(), "x")}, "absolute path");
  EXPECT_FALSE(fs::exists(fs::temp_directory_path() / "envlock-evil"));
}

TEST_F(Extract, EscapingSymlinkRefused) {
  expect_refused({t::symlink("lib/evil", "../../evil")}, "leaves the package directory");
}

TEST_F(Extract, AbsoluteSymlinkRefused) { expect_refused({t::symlink("lib/passwd", "/etc/passwd")}, "absolute path"); }

TEST_F(Extract, SymlinkChainEscapeRefused) {
  // Each link alone stays inside; followed together, `a` points above the package directory.
  expect_refused({t::symlink("sub/x", ".."), t::symlink("a", "sub/x/..")}, "through other symlinks");
}

TEST_F(Extract, WritingThroughSymlinkRefused) {
  expect_refused({t::dir("real"), t::symlink("link", "real"), t::file("link/evil", "x")}, "goes through the symlink");
}

TEST_F(Extract, HardlinkOutsideRefused) { expect_refused({t::hardlink("lib/evil", "../etc/passwd")}, "hard link"); }

TEST_F(Extract, DeviceAndFifoRefused) {
  t::TestEntry dev;
  dev.kind = t::TestEntry::Kind::CharDevice;
  dev.path = "dev/null";
  expect_refused({dev}, "device file");
  t::TestEntry fifo;
  fifo.kind = t::TestEntry::Kind::Fifo;
  fifo.path = "pipe";
  expect_refused({fifo}, "FIFO");
}

TEST_F(Extract, SizeAndEntryLimits) {
  envlock::ExtractLimits small;
  small.max_total_bytes = 1000;
  expect_refused({t::file("big", std::string(5000, 'x'))},
                 "the package expands past the absolute cap of 1000 bytes of content", small);
  envlock::ExtractLimits few;
  few.max_entries = 3;
  expect_refused({t::file("a", "1"), t::file("b", "2"), t::file("c", "3"), t::file("d", "4")},
                 "more entries than the cap of 3 entries per archive", few);
}

// A bomb: 8 MiB of zeros compress to a few hundred bytes. The cap derived from the archive's size
// (ratio x size, at least the floor) refuses it, and the error names that cap with its numbers.
TEST_F(Extract, ExpansionCapDerivedFromTheArchiveSize) {
  envlock::ExtractLimits limits;
  limits.max_expansion_ratio = 250;
  limits.expansion_floor = 64 << 10;
  const std::vector<t::TestEntry> bomb = {t::file("share/zeros", std::string(8 << 20, '\0'))};
  std::vector<t::TestEntry> all = kInfo;
  all.insert(all.end(), bomb.begin(), bomb.end());
  const fs::path bz2 = dir_ / "bomb-1-0.tar.bz2";
  t::write_tar_bz2(bz2, all);
  const fs::path conda = dir_ / "bomb-1-0.conda";
  t::write_conda(conda, kInfo, bomb);
  for (const auto& [archive, in] : {std::pair{bz2, std::string()}, std::pair{conda, std::string(" in pkg-bomb-1-0.tar.zst")}}) {
    const std::uint64_t size = fs::file_size(archive);
    ASSERT_LT(size * 250, std::uint64_t{8} << 20) << "not a bomb";
    const std::uint64_t cap = std::max<std::uint64_t>(size * 250, 64 << 10);
    auto res = envlock::extract_package(archive, dir_ / "out/pkg", limits);
    ASSERT_FALSE(res.ok());
    EXPECT_EQ(res.error().to_string(),
              archive.string() + ": refused at entry 'share/zeros'" + in + ": the package expands past the expansion cap of " +
                  std::to_string(cap) + " bytes of content (250 x the archive's " + std::to_string(size) +
                  " bytes, at least 65536)\n"
                  "hint: nothing of it was kept: a package past these caps is refused as a decompression bomb (docs/cache.md, Caps)");
    EXPECT_TRUE(fs::is_empty(dir_ / "out"));
  }
  // The same archives within the cap: a floor above their content lets them through.
  limits.expansion_floor = 16 << 20;
  for (const fs::path& archive : {bz2, conda}) {
    auto res = envlock::extract_package(archive, dir_ / "out/pkg", limits);
    ASSERT_TRUE(res.ok()) << res.error().to_string();
    fs::remove_all(dir_ / "out/pkg");
  }
}

// The default caps let every real package of the corpus through (the widest expansion there is
// conda-forge-repodata-patches, about 30x).
TEST_F(Extract, DefaultCapsFitEveryCorpusPackage) {
  const fs::path corpus = fs::path(envlock::testing::shared_dir()) / "corpus" / "packages";
  if (!fs::is_directory(corpus)) GTEST_SKIP() << "the shared corpus is absent (looked in " << corpus.string() << ")";
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(corpus)) {
    const std::string name = e.path().filename().string();
    if (name.find("corrupt") != std::string::npos || !envlock::archive_format(name)) continue;
    auto res = envlock::extract_package(e.path(), dir_ / "out/pkg");
    if (!res.ok()) {
      EXPECT_EQ(res.error().message.find("cap"), std::string::npos) << res.error().to_string();
    }
    fs::remove_all(dir_ / "out/pkg");
    ++n;
  }
  EXPECT_GT(n, 40u);
}

TEST_F(Extract, ModesTimesLinksAndInternalSymlinksKept) {
  const fs::path p = dir_ / "ok-1-0.tar.bz2";
  auto tool = t::file("bin/tool", "#!/bin/sh\necho hi\n", 0775);
  tool.mtime = 1234567890;
  t::write_tar_bz2(p, {kInfo[0], tool, t::file("lib/libx.so.1", "ELF", 0644), t::symlink("lib/libx.so", "libx.so.1"),
                       t::symlink("share/up", "../lib"), t::hardlink("lib/copy", "lib/libx.so.1"),
                       t::file("setuid", "x", 04755), t::file("./dotted", "d")});
  auto res = envlock::extract_package(p, dir_ / "out/pkg");
  ASSERT_TRUE(res.ok()) << res.error().to_string();
  const fs::path root = dir_ / "out/pkg";
  struct stat st {};
  ASSERT_EQ(::stat((root / "bin/tool").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);  // group write dropped
  EXPECT_EQ(st.st_mtime, 1234567890);
  ASSERT_EQ(::stat((root / "setuid").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);  // setuid dropped
  EXPECT_EQ(fs::read_symlink(root / "lib/libx.so"), "libx.so.1");
  EXPECT_EQ(fs::read_symlink(root / "share/up"), "../lib");
  EXPECT_EQ(read_file(root / "lib/copy"), "ELF");
  EXPECT_EQ(fs::hard_link_count(root / "lib/copy"), 2u);
  EXPECT_EQ(read_file(root / "dotted"), "d");
  EXPECT_EQ(res->files, 6u);  // index.json, tool, libx.so.1, copy, setuid, dotted
  EXPECT_EQ(res->symlinks, 2u);
  EXPECT_EQ(res->bytes, std::string("#!/bin/sh\necho hi\n").size() + 3 + 1 + 1 + kInfo[0].data.size());
}

TEST_F(Extract, MissingIndexJsonRefused) {
  const fs::path p = dir_ / "noinfo-1-0.tar.bz2";
  t::write_tar_bz2(p, {t::file("lib/x", "x")});
  auto res = envlock::extract_package(p, dir_ / "out/pkg");
  ASSERT_FALSE(res.ok());
  EXPECT_NE(res.error().message.find("no info/index.json"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir_ / "out"));
}

TEST_F(Extract, AtomicCommitAndBeforeCommitHook) {
  const fs::path p = dir_ / "ok-1-0.conda";
  t::write_conda(p, kInfo, {t::file("lib/x", "x")});
  fs::create_directories(dir_ / "out/exists");
  auto exists = envlock::extract_package(p, dir_ / "out/exists");
  ASSERT_FALSE(exists.ok());
  EXPECT_EQ(exists.error().kind, ErrorKind::Io);

  auto refused = envlock::extract_package(p, dir_ / "out/pkg", {}, [](const fs::path&) -> envlock::Status {
    return envlock::Error{ErrorKind::Io, "marker", "cannot write marker"};
  });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "cannot write marker");
  EXPECT_FALSE(fs::exists(dir_ / "out/pkg"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "out"), fs::directory_iterator()), 1);

  auto ok = envlock::extract_package(p, dir_ / "out/pkg", {}, [](const fs::path& staging) -> envlock::Status {
    std::ofstream(staging / "info/marker") << "done";
    return envlock::ok_status();
  });
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_EQ(read_file(dir_ / "out/pkg/info/marker"), "done");
  EXPECT_EQ(read_file(dir_ / "out/pkg/lib/x"), "x");
}

TEST_F(Extract, UnknownExtensionIsUsageError) {
  std::ofstream(dir_ / "x.zip") << "x";
  auto res = envlock::extract_package(dir_ / "x.zip", dir_ / "out/pkg");
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().kind, ErrorKind::Usage);
}

}  // namespace
