// The archive writers of the extract module that bundles use: write_tar_zst, write_conda_package
// (CEP-2), read back with the extractors; reproducible output; entries that would be unsafe to
// extract are refused before anything is written.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "envlock/extract.hpp"
#include "snapshot/fake_host.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using testing::slurp;

struct TempDir {
  fs::path p = fs::temp_directory_path() / ("envlock-archive-write-" + std::to_string(getpid()));
  TempDir() {
    fs::remove_all(p);
    fs::create_directories(p);
  }
  ~TempDir() { fs::remove_all(p); }
};

std::vector<ArchiveEntry> package_entries(const fs::path& src) {
  std::ofstream(src, std::ios::binary) << std::string(100000, 'x') << "#!/opt/placeholder/bin/python\n";
  std::vector<ArchiveEntry> e(5);
  e[0].path = "info/index.json";
  e[0].content = R"({"name": "toy", "version": "1.0", "build": "0", "build_number": 0})";
  e[1].path = "bin/tool";
  e[1].source = src;
  e[1].mode = 0755;
  e[2].path = "lib/libtoy.so";
  e[2].kind = ArchiveEntry::Kind::Symlink;
  e[2].link_target = "libtoy.so.1";
  e[3].path = "lib/libtoy.so.1";
  e[3].content = "ELF?";
  e[4].path = "share/empty";
  e[4].kind = ArchiveEntry::Kind::Directory;
  return e;
}

TEST(ArchiveWrite, CondaPackageRoundTripsThroughTheExtractorAndIsReproducible) {
  TempDir t;
  const fs::path pkg = t.p / "toy-1.0-0.conda";
  ASSERT_TRUE(write_conda_package(pkg, package_entries(t.p / "tool.src")).ok());
  const fs::path again = t.p / "again" / "toy-1.0-0.conda";
  fs::create_directories(again.parent_path());
  ASSERT_TRUE(write_conda_package(again, package_entries(t.p / "tool.src")).ok());
  EXPECT_EQ(slurp(pkg), slurp(again)) << "same entries, same bytes";

  const fs::path out = t.p / "out";
  const auto st = extract_package(pkg, out);
  ASSERT_TRUE(st.ok()) << st.error().to_string();
  EXPECT_EQ(st->files, 3u);
  EXPECT_EQ(st->symlinks, 1u);
  EXPECT_EQ(slurp(out / "bin/tool"), slurp(t.p / "tool.src"));
  EXPECT_EQ(fs::read_symlink(out / "lib/libtoy.so"), "libtoy.so.1");
  EXPECT_TRUE(fs::is_directory(out / "share/empty"));
  struct stat s {};
  ASSERT_EQ(::stat((out / "bin/tool").c_str(), &s), 0);
  EXPECT_EQ(s.st_mode & 0777, 0755u);
  for (const auto& e : fs::directory_iterator(t.p)) {
    EXPECT_FALSE(e.path().filename().string().starts_with(".")) << "temporary left: " << e.path();
  }
}

TEST(ArchiveWrite, TarZstRoundTripAndRefusals) {
  TempDir t;
  const fs::path tar = t.p / "b.tar.zst";
  std::vector<ArchiveEntry> e(2);
  e[0].path = "snapshot.yaml";
  e[0].content = "snapshot: {}\n";
  e[1].path = "pip/env/lib/x.py";
  e[1].content = "x = 1\n";
  ASSERT_TRUE(write_tar_zst(tar, e).ok());
  fs::create_directories(t.p / "x");
  const auto st = extract_tar_zst_into(tar, t.p / "x");
  ASSERT_TRUE(st.ok()) << st.error().to_string();
  EXPECT_EQ(slurp(t.p / "x/pip/env/lib/x.py"), "x = 1\n");

  for (const std::string bad : {"../escape", "/abs", "a/./b", "a//b"}) {
    std::vector<ArchiveEntry> one(1);
    one[0].path = bad;
    const auto r = write_tar_zst(t.p / "bad.tar.zst", one);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::Usage);
    EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
  }
  std::vector<ArchiveEntry> link(1);
  link[0].path = "l";
  link[0].kind = ArchiveEntry::Kind::Symlink;
  link[0].link_target = "/etc/passwd";
  EXPECT_FALSE(write_tar_zst(t.p / "bad.tar.zst", link).ok());
  std::vector<ArchiveEntry> gone(1);
  gone[0].path = "f";
  gone[0].source = t.p / "no-such-file";
  const auto r = write_tar_zst(t.p / "bad.tar.zst", gone);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Io);
  EXPECT_EQ(r.error().where, (t.p / "no-such-file").string());
  EXPECT_FALSE(fs::exists(t.p / "bad.tar.zst"));
  // A conda package needs info/index.json.
  EXPECT_FALSE(write_conda_package(t.p / "x-1-0.conda", e).ok());
  // A truncated bundle is an integrity error naming it.
  const std::string bytes = slurp(tar);
  std::ofstream(t.p / "cut.tar.zst", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  fs::create_directories(t.p / "y");
  const auto cut = extract_tar_zst_into(t.p / "cut.tar.zst", t.p / "y");
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().kind, ErrorKind::Integrity);
  EXPECT_EQ(cut.error().where, (t.p / "cut.tar.zst").string());
}

}  // namespace
}  // namespace envlock
