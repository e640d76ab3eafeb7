// Unit tests of the installer on packages the tests lay out as a package cache would hold them
// (info/index.json, info/paths.json, info/link.json, files).
#include <fcntl.h>
#include <gtest/gtest.h>

#include <csignal>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>

#include <algorithm>
#include <map>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "envlock/hash.hpp"
#include "envlock/install.hpp"

namespace fs = std::filesystem;
using namespace envlock;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const fs::path& p, const std::string& data, fs::perms perms = fs::perms::owner_read | fs::perms::owner_write) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << data;
  fs::permissions(p, perms | fs::perms::owner_read | fs::perms::owner_write);
}

const std::string kBinPh = "/opt/placeholder_placehold_placehold_placehold_placehold_placehold";  // 67
const std::string kTextPh = "/opt/anaconda1anaconda2anaconda3";

struct FakeFile {
  std::string path;
  std::string content;
  bool executable = false;
  std::string file_mode;     ///< "", "text", "binary"
  std::string placeholder;
  std::string symlink_to;    ///< non-empty: a symlink
};

class Installer : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("envlock-install-test-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "pkgs");
    prefix_ = root_ / "envs" / "demo";
  }
  void TearDown() override { fs::remove_all(root_); }

  PackageToLink make_package(const std::string& name, const std::string& version, const std::vector<FakeFile>& files,
                             const std::string& noarch = "", const std::vector<std::string>& entry_points = {},
                             const std::string& build = "0") {
    const std::string dist = name + "-" + version + "-" + build;
    const fs::path dir = root_ / "pkgs" / dist;
    fs::remove_all(dir);
    nlohmann::json paths = nlohmann::json::array();
    for (const auto& f : files) {
      nlohmann::json e{{"_path", f.path}};
      if (!f.symlink_to.empty()) {
        fs::create_directories((dir / f.path).parent_path());
        fs::create_symlink(f.symlink_to, dir / f.path);
        e["path_type"] = "softlink";
      } else {
        spit(dir / f.path, f.content, f.executable ? fs::perms::owner_exec : fs::perms::none);
        e["path_type"] = "hardlink";
        e["sha256"] = hash_bytes(f.content, HashAlgorithm::Sha256);
        e["size_in_bytes"] = f.content.size();
        if (!f.file_mode.empty()) {
          e["file_mode"] = f.file_mode;
          e["prefix_placeholder"] = f.placeholder;
        }
      }
      paths.push_back(e);
    }
    spit(dir / "info" / "paths.json", nlohmann::json{{"paths", paths}, {"paths_version", 1}}.dump());
    nlohmann::json index{{"name", name}, {"version", version}, {"build", build}, {"build_number", 0},
                         {"subdir", noarch.empty() ? "linux-64" : "noarch"}};
    if (!noarch.empty()) index["noarch"] = noarch;
    spit(dir / "info" / "index.json", index.dump());
    if (!noarch.empty()) {
      nlohmann::json link{{"noarch", {{"type", noarch}}}, {"package_metadata_version", 1}};
      if (!entry_points.empty()) link["noarch"]["entry_points"] = entry_points;
      spit(dir / "info" / "link.json", link.dump());
    }
    auto rec = RepoDataRecord::from_json(index);
    EXPECT_TRUE(rec.ok()) << (rec.ok() ? "" : rec.error().to_string());
    PackageToLink p;
    p.record = *rec;
    p.record.file_name = dist + ".conda";
    p.record.channel = "file:///channel";
    p.record.url = "file:///channel/" + p.record.subdir + "/" + p.record.file_name;
    p.record.sha256 = hash_bytes(dist + slurp(dir / "info" / "paths.json"), HashAlgorithm::Sha256);
    p.extracted_dir = dir;
    p.archive_path = root_ / "pkgs" / p.record.file_name;
    return p;
  }

  InstallOptions options(RunScripts scripts = RunScripts::Yes) {
    InstallOptions o;
    o.scripts = scripts;
    o.origin.command = "install";
    o.origin.lockfile = "envlock.lock";
    o.origin.lockfile_hash = "sha256:" + std::string(64, 'a');
    o.origin.environment = "default";
    o.origin.platform = "linux-64";
    return o;
  }

  std::vector<fs::path> siblings() {
    std::vector<fs::path> out;
    if (!fs::exists(prefix_.parent_path())) return out;  // a refused new environment removes the folders it made
    for (const auto& e : fs::directory_iterator(prefix_.parent_path()))
      if (e.path() != prefix_ && e.path().filename().string().find("envlock-lock") == std::string::npos)
        out.push_back(e.path());
    return out;
  }

  fs::path root_, prefix_;
};

// ---------------------------------------------------------------------------------------------

TEST(Relocate, TextPlaceholderReplacedEverywhere) {
  std::string data = "a=/opt/ph/bin\nb=/opt/ph/lib:/opt/ph\n";
  EXPECT_EQ(replace_text_placeholder(data, "/opt/ph", "/home/u/env"), 3u);
  EXPECT_EQ(data, "a=/home/u/env/bin\nb=/home/u/env/lib:/home/u/env\n");
  std::string none = "nothing here";
  EXPECT_EQ(replace_text_placeholder(none, "/opt/ph", "/x"), 0u);
  EXPECT_EQ(none, "nothing here");
}

TEST(Relocate, BinaryPlaceholderKeepsLengthAndPadsWithNul) {
  const std::string ph = "/opt/placeholder_long_enough";
  std::string data = std::string("\x7f" "ELF", 4) + ph + "/lib/x.so" + std::string(1, '\0') + "tail" + ph +
                     std::string(1, '\0');
  const std::size_t size = data.size();
  auto n = replace_binary_placeholder(data, ph, "/env", "test.bin");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2u);
  EXPECT_EQ(data.size(), size);
  const std::string first = "/env/lib/x.so" + std::string(ph.size() - 4, '\0') + std::string(1, '\0');
  EXPECT_EQ(data.substr(4, first.size()), first);
  EXPECT_EQ(data.substr(4 + first.size(), 4), "tail");
  EXPECT_EQ(data.substr(8 + first.size()), "/env" + std::string(ph.size() - 4 + 1, '\0'));
}

TEST(Relocate, BinaryPlaceholderRefusesALongerPrefix) {
  std::string data = std::string("xx/opt/ph\0yy", 12);
  const std::string before = data;
  auto n = replace_binary_placeholder(data, "/opt/ph", "/a/much/longer/prefix", "pkg-1-0: lib/x.so");
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().kind, ErrorKind::Incompatible);
  EXPECT_EQ(n.error().where, "pkg-1-0: lib/x.so");
  EXPECT_NE(n.error().message.find("(21 > 7 bytes)"), std::string::npos) << n.error().message;
  EXPECT_EQ(data, before);
}

TEST(Relocate, LongShebangBecomesEnvForm) {
  const std::string prefix = "/very" + std::string(130, 'x');
  std::string script = "#!" + prefix + "/bin/python3.11 -u\nprint(1)\n";
  EXPECT_TRUE(rewrite_long_shebang(script));
  EXPECT_EQ(script, "#!/usr/bin/env python3.11 -u\nprint(1)\n");
  std::string short_one = "#!/env/bin/python3.11\nprint(1)\n";
  EXPECT_FALSE(rewrite_long_shebang(short_one));
  EXPECT_EQ(short_one, "#!/env/bin/python3.11\nprint(1)\n");
  std::string not_script = "hello";
  EXPECT_FALSE(rewrite_long_shebang(not_script));
}

// ---------------------------------------------------------------------------------------------

TEST(HostCheck, NamesPackageRequirementAndHost) {
  RepoDataRecord torch;
  torch.name = "pytorch";
  torch.version = *Version::parse("2.3.1");
  torch.depends = {"__cuda >=12.0", "__glibc >=2.17,<3.0.a0", "python >=3.11"};
  const std::vector<VirtualPackage> host{{"__cuda", "11.8", "0"}, {"__glibc", "2.36", "0"},
                                         {"__linux", "6.1.0", "0"}, {"__unix", "0", "0"}};
  auto m = check_host({torch}, {}, host);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].to_string(), "pytorch 2.3.1 needs __cuda >=12.0; this host's driver supports CUDA 11.8");

  auto none = check_host({torch}, {}, {{"__glibc", "2.36", "0"}});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].host, "this host has no usable NVIDIA driver (no __cuda)");

  const std::vector<VirtualPackage> newer{{"__cuda", "12.4", "0"}, {"__glibc", "2.36", "0"}};
  EXPECT_TRUE(check_host({torch}, {}, newer).empty());
  Error e = host_mismatch_error(m);
  EXPECT_EQ(e.kind, ErrorKind::Incompatible);
  EXPECT_NE(e.hint.find("--ignore-host"), std::string::npos);
}

// docs/solving.md rule 4: a record's `constrains` on a virtual package binds the host's value
// when the host has it, and nothing when it does not.
TEST(HostCheck, ConstraintsOnVirtualPackagesBindTheHost) {
  RepoDataRecord cv;
  cv.name = "cuda-version";
  cv.version = *Version::parse("12.4");
  cv.constrains = {"__cuda >=12", "cudatoolkit 12.4|12.4.*"};
  auto m = check_host({cv}, {}, {{"__cuda", "11.8", "0"}, {"__glibc", "2.36", "0"}});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].to_string(), "cuda-version 12.4 needs __cuda >=12 (constrains); this host's driver supports CUDA 11.8");
  EXPECT_TRUE(check_host({cv}, {}, {{"__cuda", "12.4", "0"}}).empty());
  EXPECT_TRUE(check_host({cv}, {}, {{"__glibc", "2.36", "0"}}).empty());  // no GPU: nothing to constrain
}

TEST(HostCheck, LockedVirtualPackagesAreMinimums) {
  const std::vector<VirtualPackage> locked{{"__glibc", "2.28", "0"}, {"__archspec", "1", "x86_64_v3"}};
  EXPECT_TRUE(check_host({}, locked, {{"__glibc", "2.36", "0"}, {"__archspec", "1", "x86_64_v4"}}).empty());
  auto m = check_host({}, locked, {{"__glibc", "2.17", "0"}, {"__archspec", "1", "x86_64_v2"}});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].requirement, "__glibc >=2.28");
  EXPECT_EQ(m[0].host, "this host has glibc 2.17");
  EXPECT_EQ(m[1].host, "this host's CPU is x86_64_v2");
}

TEST(HostCheck, ArchspecLevelsAreOrdered) {
  RepoDataRecord r;
  r.name = "optimized";
  r.version = *Version::parse("1.0");
  r.depends = {"__archspec 1 x86_64_v3"};
  EXPECT_TRUE(check_host({r}, {}, {{"__archspec", "1", "x86_64_v4"}}).empty());
  EXPECT_EQ(check_host({r}, {}, {{"__archspec", "1", "x86_64_v2"}}).size(), 1u);
}

// ---------------------------------------------------------------------------------------------

TEST_F(Installer, LinksRelocatesAndRecords) {
  const std::string text = "#!/bin/sh\necho " + kTextPh + "/share\n";
  const std::string binary = std::string("BIN\0", 4) + kBinPh + "/lib" + std::string(1, '\0') + "end";
  auto p = make_package("tool", "1.2", {{"bin/tool", text, true, "text", kTextPh},
                                        {"lib/libtool.so", binary, false, "binary", kBinPh},
                                        {"share/tool/data.txt", "plain data\n"},
                                        {"lib/libtool.so.1", "", false, "", "", "libtool.so"}});
  auto report = install_packages(prefix_, {p}, options());
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->installed, std::vector<std::string>{"tool-1.2-0"});
  EXPECT_EQ(report->files_linked, 1u);
  EXPECT_EQ(report->files_relocated, 2u);

  EXPECT_EQ(slurp(prefix_ / "bin/tool"), "#!/bin/sh\necho " + prefix_.string() + "/share\n");
  EXPECT_TRUE((fs::status(prefix_ / "bin/tool").permissions() & fs::perms::owner_exec) != fs::perms::none);
  const std::string installed_bin = slurp(prefix_ / "lib/libtool.so");
  EXPECT_EQ(installed_bin.size(), binary.size());
  EXPECT_EQ(installed_bin.substr(4, prefix_.string().size() + 4), prefix_.string() + "/lib");
  EXPECT_EQ(slurp(p.extracted_dir / "lib/libtool.so"), binary) << "the cache copy must stay untouched";
  EXPECT_TRUE(fs::is_symlink(prefix_ / "lib/libtool.so.1"));
  EXPECT_EQ(fs::read_symlink(prefix_ / "lib/libtool.so.1"), "libtool.so");

  struct stat a {}, b {};
  ASSERT_EQ(::stat((prefix_ / "share/tool/data.txt").c_str(), &a), 0);
  ASSERT_EQ(::stat((p.extracted_dir / "share/tool/data.txt").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino) << "unchanged files are hard links into the package cache";
  ASSERT_EQ(::stat((prefix_ / "bin/tool").c_str(), &a), 0);
  ASSERT_EQ(::stat((p.extracted_dir / "bin/tool").c_str(), &b), 0);
  EXPECT_NE(a.st_ino, b.st_ino) << "relocated files are new files";

  auto records = read_conda_meta(prefix_);
  ASSERT_TRUE(records.ok()) << records.error().to_string();
  ASSERT_EQ(records->size(), 1u);
  const PrefixRecord& rec = records->front();
  EXPECT_EQ(rec.files, (std::vector<std::string>{"bin/tool", "lib/libtool.so", "lib/libtool.so.1",
                                                  "share/tool/data.txt"}));
  EXPECT_EQ(rec.link_type, "hardlink");
  EXPECT_EQ(rec.extracted_package_dir, p.extracted_dir.string());
  for (const auto& e : rec.paths) {
    if (e.type != PathEntry::Type::HardLink) continue;
    EXPECT_EQ(e.sha256, *hash_file(prefix_ / e.path, HashAlgorithm::Sha256)) << e.path;
    EXPECT_EQ(*e.size_in_bytes, fs::file_size(prefix_ / e.path)) << e.path;
  }
  const std::string history = slurp(prefix_ / "conda-meta/history");
  EXPECT_NE(history.find("# cmd: envlock install -l envlock.lock -e default"), std::string::npos) << history;
  EXPECT_NE(history.find("+file:///channel/linux-64::tool-1.2-0\n"), std::string::npos) << history;
  auto origin = read_prefix_origin(prefix_);
  ASSERT_TRUE(origin.ok() && origin->has_value());
  EXPECT_EQ((*origin)->lockfile_hash, "sha256:" + std::string(64, 'a'));
  EXPECT_EQ((*origin)->environment, "default");
  EXPECT_TRUE(siblings().empty()) << "no staging folder may be left behind";

  auto verify = verify_prefix(prefix_);
  ASSERT_TRUE(verify.ok()) << verify.error().to_string();
  EXPECT_TRUE(verify->clean());
  EXPECT_EQ(verify->files_checked, 4u);
}

TEST_F(Installer, CopyModeSharesNoInode) {
  auto p = make_package("data", "1", {{"share/d.txt", "d\n"}});
  auto o = options();
  o.link_mode = LinkMode::Copy;
  ASSERT_TRUE(install_packages(prefix_, {p}, o).ok());
  struct stat a {}, b {};
  ::stat((prefix_ / "share/d.txt").c_str(), &a);
  ::stat((p.extracted_dir / "share/d.txt").c_str(), &b);
  EXPECT_NE(a.st_ino, b.st_ino);
  EXPECT_EQ(read_conda_meta(prefix_)->front().link_type, "copy");
}

TEST_F(Installer, PrefixLongerThanBinaryPlaceholderIsRefusedAndOldEnvironmentStays) {
  auto v1 = make_package("tool", "1", {{"share/v", "one\n"}});
  ASSERT_TRUE(install_packages(prefix_, {v1}, options()).ok());
  const std::string binary = std::string("\0", 1) + "/opt/short" + std::string(1, '\0');
  auto v2 = make_package("tool", "2", {{"lib/x.so", binary, false, "binary", "/opt/short"}, {"share/v", "two\n"}});
  auto r = install_packages(prefix_, {v2}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Incompatible);
  EXPECT_EQ(r.error().where, "tool-2-0: lib/x.so");
  EXPECT_NE(r.error().hint.find("shorter prefix"), std::string::npos);
  EXPECT_EQ(slurp(prefix_ / "share/v"), "one\n");
  EXPECT_FALSE(fs::exists(prefix_ / "lib/x.so"));
  EXPECT_EQ(read_conda_meta(prefix_)->front().version.to_string(), "1");
  EXPECT_TRUE(siblings().empty());
}

TEST_F(Installer, NoarchPythonGoesToSitePackagesWithEntryPoints) {
  auto python = make_package("python", "3.11.7", {{"bin/python3.11", "#!/bin/sh\n", true}});
  auto pkg = make_package("demo", "1.0", {{"site-packages/demo/__init__.py", "def main():\n    return 0\n"},
                                          {"python-scripts/demo-tool", "#!" + kTextPh + "/bin/python\n", true,
                                           "text", kTextPh}},
                          "python", {"demo-cli = demo.cli:main"}, "pyh_0");
  auto r = install_packages(prefix_, {python, pkg}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(fs::exists(prefix_ / "lib/python3.11/site-packages/demo/__init__.py"));
  EXPECT_EQ(slurp(prefix_ / "bin/demo-tool"), "#!" + prefix_.string() + "/bin/python\n");
  const std::string ep = slurp(prefix_ / "bin/demo-cli");
  EXPECT_TRUE(ep.starts_with("#!" + prefix_.string() + "/bin/python3.11\n")) << ep;
  EXPECT_NE(ep.find("from demo.cli import main\n"), std::string::npos) << ep;
  EXPECT_NE(ep.find("sys.exit(main())"), std::string::npos) << ep;
  EXPECT_TRUE((fs::status(prefix_ / "bin/demo-cli").permissions() & fs::perms::owner_exec) != fs::perms::none);
  auto records = read_conda_meta(prefix_);
  ASSERT_TRUE(records.ok());
  const auto& demo = (*records)[0].name == "demo" ? (*records)[0] : (*records)[1];
  EXPECT_EQ(demo.files, (std::vector<std::string>{"bin/demo-cli", "bin/demo-tool",
                                                   "lib/python3.11/site-packages/demo/__init__.py"}));
  ASSERT_TRUE(verify_prefix(prefix_)->clean());

  fs::remove_all(root_ / "envs");
  auto alone = install_packages(prefix_, {pkg}, options());
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(alone.error().kind, ErrorKind::Incompatible);
  EXPECT_EQ(alone.error().where, "demo-1.0-pyh_0");
  EXPECT_FALSE(fs::exists(prefix_));
}

TEST_F(Installer, ChangingAPrefixKeepsUnchangedAndUserFilesAndDropsRemoved) {
  auto a = make_package("a", "1", {{"share/a", "a\n"}});
  auto b = make_package("b", "1", {{"share/b", "b\n"}});
  auto c = make_package("c", "1", {{"share/c", "c\n"}});
  ASSERT_TRUE(install_packages(prefix_, {a, b}, options()).ok());
  spit(prefix_ / "notes/user.txt", "mine\n");
  spit(prefix_ / "conda-meta/pinned", "a 1\n");
  auto r = install_packages(prefix_, {a, c}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->kept, std::vector<std::string>{"a-1-0"});
  EXPECT_EQ(r->installed, std::vector<std::string>{"c-1-0"});
  EXPECT_EQ(r->removed, std::vector<std::string>{"b-1-0"});
  EXPECT_TRUE(fs::exists(prefix_ / "share/a"));
  EXPECT_TRUE(fs::exists(prefix_ / "share/c"));
  EXPECT_FALSE(fs::exists(prefix_ / "share/b"));
  EXPECT_EQ(slurp(prefix_ / "notes/user.txt"), "mine\n");
  EXPECT_EQ(slurp(prefix_ / "conda-meta/pinned"), "a 1\n");
  EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/b-1-0.json"));
  const std::string history = slurp(prefix_ / "conda-meta/history");
  EXPECT_NE(history.find("+file:///channel/linux-64::b-1-0"), std::string::npos);
  EXPECT_NE(history.find("-file:///channel/linux-64::b-1-0"), std::string::npos);
  EXPECT_NE(history.find("+file:///channel/linux-64::c-1-0"), std::string::npos);
  auto v = verify_prefix(prefix_);
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->drift.size(), 1u);
  EXPECT_EQ(v->drift[0].path, "notes/user.txt");
  EXPECT_EQ(v->drift[0].kind, FileDrift::Kind::Extra);
  EXPECT_TRUE(siblings().empty());
}

TEST_F(Installer, AReinstallKeepsFifosSocketsEmptyFoldersAndFolderModes) {
  // A new-user attack (session 8): reinstalling dropped the user's FIFOs and sockets and reset
  // the mode of folders no package owns. conda changes a prefix in place, where all of them stay.
  auto a = make_package("a", "1", {{"share/a/data.txt", "a\n"}});
  auto b = make_package("b", "1", {{"share/b.txt", "b\n"}});
  ASSERT_TRUE(install_packages(prefix_, {a, b}, options()).ok());
  ASSERT_EQ(::mkfifo((prefix_ / "share/queue").c_str(), 0640), 0);
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = (prefix_ / "agent.sock").string();
  ASSERT_LT(sock_path.size(), sizeof addr.sun_path);
  std::copy(sock_path.begin(), sock_path.end(), addr.sun_path);
  ASSERT_EQ(::bind(sock, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  ::close(sock);
  fs::create_directories(prefix_ / "shared/empty");
  spit(prefix_ / "shared/f", "x\n");
  ASSERT_EQ(::chmod((prefix_ / "shared").c_str(), 02770), 0);
  ASSERT_EQ(::chmod((prefix_ / "share/a").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(prefix_.c_str(), 0750), 0);
  struct stat fifo_before {};
  ASSERT_EQ(::lstat((prefix_ / "share/queue").c_str(), &fifo_before), 0);
  auto mode_of = [](const fs::path& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 ? st.st_mode : mode_t{0};
  };
  // b goes: share/ stays for a; a stays, its folder's mode with it.
  auto r = install_packages(prefix_, {a}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  struct stat fifo_after {};
  ASSERT_EQ(::lstat((prefix_ / "share/queue").c_str(), &fifo_after), 0);
  EXPECT_TRUE(S_ISFIFO(fifo_after.st_mode));
  EXPECT_EQ(fifo_after.st_ino, fifo_before.st_ino) << "the same FIFO, hard-linked into the new tree";
  EXPECT_TRUE(S_ISSOCK(mode_of(prefix_ / "agent.sock")));
  EXPECT_EQ(mode_of(prefix_ / "shared") & 07777, 02770u);
  EXPECT_TRUE(fs::is_directory(prefix_ / "shared/empty"));
  EXPECT_EQ(mode_of(prefix_ / "share/a") & 07777, 0700u);
  EXPECT_EQ(mode_of(prefix_) & 07777, 0750u);
  EXPECT_EQ(slurp(prefix_ / "shared/f"), "x\n");
  EXPECT_FALSE(fs::exists(prefix_ / "share/b.txt"));
  // A folder that only held files of a package that goes is not made again.
  auto c = make_package("c", "1", {{"opt/c/only.txt", "c\n"}});
  ASSERT_TRUE(install_packages(prefix_, {a, c}, options()).ok());
  ASSERT_TRUE(install_packages(prefix_, {a}, options()).ok());
  EXPECT_FALSE(fs::exists(prefix_ / "opt/c"));
}

TEST_F(Installer, AnInterruptedFirstInstallHoldingUserFilesIsUndoneInPlaceKeepingThem) {
  // A new-user attack (session 9): a first install killed during post-link, then worked in, was
  // deleted with the user's files by the next install, which said "ready". Session 10 refused it
  // instead, and also refused when the undo in place (a first install rolled back by this run)
  // was killed part way (issue 23): the next run now finishes what the undo does — only the files
  // the packages own go, as conda's rollback undoes only what it linked (link.py,
  // UnlinkLinkTransaction) — and installs, so the prefix ends up whole, with the user's files.
  auto a = make_package("a", "1", {{"share/a", "a\n"}, {"share/deep/a2", "a2\n"}, {"bin/a", "#!/bin/sh\n"}});
  for (const bool undo_killed : {false, true}) {
    SCOPED_TRACE(undo_killed ? "the undo in place was killed part way" : "killed during post-link");
    fs::remove_all(root_ / "envs");
    ASSERT_TRUE(install_packages(prefix_, {a}, options()).ok());
    spit(prefix_ / "conda-meta/envlock-pending", "{\"previous\": []}\n");
    spit(prefix_ / "results.csv", "a week of work\n");
    spit(prefix_ / "conda-meta/pinned", "a 1\n");  // conda-meta's own files count (session 10)
    if (undo_killed) {  // what undo_first_install_in_place() had deleted when it was killed
      fs::remove(prefix_ / "bin/a");
      fs::remove(prefix_ / "share/deep/a2");
      fs::remove(prefix_ / "share/deep");
    }
    auto r = install_packages(prefix_, {a}, options());
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->warnings, std::vector<std::string>{
                               "rolled back a first install that an earlier run left unfinished "
                               "(conda-meta/envlock-pending); kept 2 file(s) written into it since, which no package "
                               "owns: conda-meta/pinned, results.csv"});
    EXPECT_EQ(r->installed, std::vector<std::string>{"a-1-0"});
    EXPECT_EQ(r->kept, std::vector<std::string>{});
    EXPECT_EQ(r->removed, std::vector<std::string>{});
    EXPECT_EQ(slurp(prefix_ / "results.csv"), "a week of work\n");
    EXPECT_EQ(slurp(prefix_ / "conda-meta/pinned"), "a 1\n");
    EXPECT_EQ(slurp(prefix_ / "share/deep/a2"), "a2\n");
    EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/envlock-pending"));
    auto v = verify_prefix(prefix_);
    ASSERT_TRUE(v.ok());
    ASSERT_EQ(v->drift.size(), 1u);
    EXPECT_EQ(v->drift.front().path, "results.csv");
    EXPECT_TRUE(siblings().empty());
  }
  // Without files of its own, the unfinished first install is rolled back whole, as before.
  spit(prefix_ / "conda-meta/envlock-pending", "{\"previous\": []}\n");
  fs::remove(prefix_ / "results.csv");
  fs::remove(prefix_ / "conda-meta/pinned");
  auto again = install_packages(prefix_, {a}, options());
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/envlock-pending"));
  EXPECT_EQ(again->installed, std::vector<std::string>{"a-1-0"});
  EXPECT_EQ(again->warnings, std::vector<std::string>{});
}

TEST_F(Installer, ARefusedNewEnvironmentLeavesNoFolderOrLockFileBehind) {
  // A new-user attack (session 8): a prefix refused at link time left its 30 parent folders and
  // its lock file. A binary placeholder shorter than the prefix refuses at link time.
  const std::string binary = std::string("\0", 1) + "/opt/short" + std::string(1, '\0');
  auto p = make_package("tool", "1", {{"lib/x.so", binary, false, "binary", "/opt/short"}});
  const fs::path deep = root_ / "made/for/this";
  prefix_ = deep / "env";
  auto r = install_packages(prefix_, {p}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(fs::exists(root_ / "made"));
  // A parent that was there stays, without the lock file.
  fs::create_directories(deep);
  ASSERT_FALSE(install_packages(prefix_, {p}, options()).ok());
  EXPECT_TRUE(fs::is_directory(deep));
  EXPECT_TRUE(fs::is_empty(deep));
}

TEST_F(Installer, APrefixNameTooLongForItsSiblingsIsRefusedBeforeAnything) {
  auto a = make_package("a", "1", {{"share/a", "a\n"}});
  prefix_ = root_ / "envs" / std::string(222, 'x');
  auto r = install_packages(prefix_, {a}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Usage);
  EXPECT_EQ(r.error().message, "has a last component of 222 bytes; envlock allows at most 221");
  EXPECT_FALSE(fs::exists(root_ / "envs"));
  prefix_ = root_ / "envs" / std::string(221, 'x');
  auto ok = install_packages(prefix_, {a}, options());
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
}

TEST_F(Installer, PostLinkScriptsRunAsCondaRunsThem) {
  auto p = make_package("hook", "2.1",
                        {{"bin/.hook-post-link.sh",
                          "echo \"$PKG_NAME $PKG_VERSION $PKG_BUILDNUM\" > \"$PREFIX/share-marker\"\n"
                          "echo 'hello from hook' > \"$PREFIX/.messages.txt\"\n",
                          true}});
  auto r = install_packages(prefix_, {p}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(slurp(prefix_ / "share-marker"), "hook 2.1 0\n");
  EXPECT_EQ(r->messages, std::vector<std::string>{"hello from hook\n"});
  EXPECT_FALSE(fs::exists(prefix_ / ".messages.txt"));

  fs::remove_all(root_ / "envs");
  ASSERT_TRUE(install_packages(prefix_, {p}, options(RunScripts::No)).ok());
  EXPECT_FALSE(fs::exists(prefix_ / "share-marker"));
}

TEST_F(Installer, FailingPostLinkLeavesThePreviousEnvironment) {
  auto good = make_package("base", "1", {{"share/base", "base\n"}});
  ASSERT_TRUE(install_packages(prefix_, {good}, options()).ok());
  auto bad = make_package("broken", "1", {{"bin/.broken-post-link.sh", "echo 'cannot configure'\nexit 3\n", true}});
  auto r = install_packages(prefix_, {good, bad}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "broken-1-0");
  EXPECT_EQ(r.error().message, "post-link script exited with status 3");
  EXPECT_NE(r.error().detail.find("cannot configure"), std::string::npos) << r.error().detail;
  EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/broken-1-0.json"));
  EXPECT_FALSE(fs::exists(prefix_ / "bin/.broken-post-link.sh"));
  EXPECT_TRUE(fs::exists(prefix_ / "share/base"));
  EXPECT_TRUE(siblings().empty());
  EXPECT_TRUE(install_packages(prefix_, {good, bad}, options(RunScripts::No)).ok());
}

TEST_F(Installer, PostLinkSeesTheFinalPrefixNotTheStage) {
  auto p = make_package("where", "1",
                        {{"bin/.where-post-link.sh",
                          "echo \"$PREFIX\" > \"$PREFIX/prefix-seen\"\n"
                          "test -f \"$PREFIX/conda-meta/where-1-0.json\" && echo records >> \"$PREFIX/prefix-seen\"\n"
                          "pwd >> \"$PREFIX/prefix-seen\"\n",
                          true}});
  auto r = install_packages(prefix_, {p}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const std::string final_prefix = fs::absolute(prefix_).lexically_normal().string();
  EXPECT_EQ(slurp(prefix_ / "prefix-seen"), final_prefix + "\nrecords\n" + final_prefix + "/bin\n");
  EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/envlock-pending")) << "the install committed";
  EXPECT_TRUE(siblings().empty());

  // Over an existing environment too: the script runs in the prefix, after the swap.
  auto q = make_package("where", "2",
                        {{"bin/.where-post-link.sh",
                          "test -f \"$PREFIX/share/base\" && echo base-present > \"$PREFIX/second\"\n", true}});
  auto base = make_package("base", "1", {{"share/base", "b\n"}});
  ASSERT_TRUE(install_packages(prefix_, {base, q}, options()).ok());
  EXPECT_EQ(slurp(prefix_ / "second"), "base-present\n");
  EXPECT_TRUE(siblings().empty());
}

TEST_F(Installer, FailingPostLinkAfterTheSwapRestoresTheOldTree) {
  auto good = make_package("base", "1", {{"share/base", "base v1\n"}});
  ASSERT_TRUE(install_packages(prefix_, {good}, options()).ok());
  spit(prefix_ / "notes/user.txt", "mine\n");
  const auto before = read_conda_meta(prefix_);
  ASSERT_TRUE(before.ok());
  auto good2 = make_package("base", "2", {{"share/base", "base v2\n"}});
  // The script sees the new tree in place, damages it, then fails.
  auto bad = make_package("broken", "1",
                          {{"bin/.broken-post-link.sh",
                            "echo half > \"$PREFIX/share/half-done\"\necho 'cannot configure'\nexit 4\n", true}});
  auto r = install_packages(prefix_, {good2, bad}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "broken-1-0");
  EXPECT_EQ(r.error().message, "post-link script exited with status 4");
  EXPECT_NE(r.error().detail.find("cannot configure"), std::string::npos) << r.error().detail;
  EXPECT_NE(r.error().hint.find("previous environment was restored"), std::string::npos) << r.error().hint;
  EXPECT_EQ(slurp(prefix_ / "share/base"), "base v1\n");
  EXPECT_EQ(slurp(prefix_ / "notes/user.txt"), "mine\n");
  // What was written into the prefix while the scripts ran, and that no package owns, is kept
  // (conda's rollback, link.py: each action's reverse() undoes only the paths it linked).
  EXPECT_EQ(slurp(prefix_ / "share/half-done"), "half\n");
  EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/envlock-pending"));
  auto after = read_conda_meta(prefix_);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ(after->front().dist_name(), "base-1-0");
  EXPECT_TRUE(verify_prefix(prefix_)->drift.size() == 2u) << "only notes/user.txt and share/half-done are extra";
  EXPECT_TRUE(siblings().empty());

  // A failing script on a new prefix leaves no prefix at all.
  fs::remove_all(root_ / "envs");
  ASSERT_FALSE(install_packages(prefix_, {bad}, options()).ok());
  EXPECT_FALSE(fs::exists(prefix_));
  EXPECT_TRUE(siblings().empty());
}

TEST_F(Installer, ATreeLeftPendingByAKilledRunIsRolledBack) {
  // What a run killed while post-link scripts ran leaves: the new tree in place, marked pending,
  // the previous tree under its stage name.
  auto a = make_package("a", "1", {{"share/a", "a\n"}});
  auto b = make_package("b", "1", {{"share/b", "b\n"}});
  ASSERT_TRUE(install_packages(prefix_, {a}, options()).ok());
  fs::rename(prefix_, root_ / "held");
  ASSERT_TRUE(install_packages(prefix_, {b}, options()).ok());
  fs::rename(root_ / "held", prefix_.parent_path() / ".demo.envlock-stage-77-1");
  spit(prefix_ / "conda-meta/envlock-pending", "{\"previous\": [\".demo.envlock-stage-77-1\", \".demo.envlock-old-77\"]}\n");

  auto r = install_packages(prefix_, {a, b}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->kept, std::vector<std::string>{"a-1-0"}) << "the run started from the restored tree";
  EXPECT_EQ(r->installed, std::vector<std::string>{"b-1-0"});
  EXPECT_TRUE(siblings().empty());

  // No previous tree (the prefix was new): the pending tree is discarded.
  spit(prefix_ / "conda-meta/envlock-pending", "{\"previous\": []}\n");
  ASSERT_TRUE(install_packages(prefix_, {a}, options()).ok());
  EXPECT_EQ(read_conda_meta(prefix_)->size(), 1u);
  EXPECT_FALSE(fs::exists(prefix_ / "share/b"));
  EXPECT_TRUE(siblings().empty());
}

// A new-user attack (issue 23, H1): a training job writes checkpoints into the prefix while an
// update's post-link script runs; the script fails, or SIGTERM arrives, and the rollback deleted
// them with the discarded tree. They are kept in the restored environment, named in the error's
// detail. conda never deletes what it did not link (link.py, UnlinkLinkTransaction rollback:
// each action's reverse()); mamba's transaction.cpp rolls back the same way.
TEST_F(Installer, ARolledBackUpdateKeepsFilesWrittenIntoItMeanwhile) {
  auto base1 = make_package("base", "1", {{"share/base", "1\n"}});
  auto base2 = make_package("base", "2", {{"share/base", "2\n"}});
  ASSERT_TRUE(install_packages(prefix_, {base1}, options()).ok());
  for (const std::string how : {"exit 1", "kill -TERM $PPID"}) {
    SCOPED_TRACE(how);
    auto job = make_package("job", "1",
                            {{"bin/.job-post-link.sh",
                              "mkdir -p \"$PREFIX/ckpt\"; echo weights > \"$PREFIX/ckpt/epoch1.pt\"\n" + how + "\n", true}});
    auto r = install_packages(prefix_, {base2, job}, options());
    ASSERT_FALSE(r.ok());
    const bool killed = how != "exit 1";
    EXPECT_EQ(install_interrupted_by(), killed ? SIGTERM : 0);
    EXPECT_EQ(r.error().message, killed ? "install interrupted by SIGTERM" : "post-link script exited with status 1");
    const std::string pfx = fs::absolute(prefix_).lexically_normal().string();
    const std::string trace = "script: bin/.job-post-link.sh\noutput:\n"
                              "+ for _envlock_hook in \"$PREFIX\"/etc/conda/activate.d/*.sh\n"
                              "+ '[' -f '" + pfx + "/etc/conda/activate.d/*.sh' ']'\n"
                              "+ unset _envlock_hook\n"
                              "+ . " + pfx + "/bin/.job-post-link.sh\n"
                              "++ mkdir -p " + pfx + "/ckpt\n"
                              "++ echo weights\n"
                              "++ exit 1\n";
    EXPECT_EQ(r.error().detail, (killed ? std::string() : trace) +
                                    "rolled back an update that did not finish; kept 1 file(s) written into it since, "
                                    "which no package owns: ckpt/epoch1.pt");
    EXPECT_EQ(r.error().hint, killed ? "the previous environment was restored"
                                     : "the previous environment was restored; fix the package or pass --no-scripts to "
                                       "skip post-link scripts");
    EXPECT_EQ(slurp(prefix_ / "ckpt/epoch1.pt"), "weights\n");
    EXPECT_EQ(slurp(prefix_ / "share/base"), "1\n");
    EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/job-1-0.json"));
    EXPECT_TRUE(siblings().empty());
    fs::remove_all(prefix_ / "ckpt");
  }
}

// The same on a first install (issue 23, H1): there is no previous tree to carry the job's files
// into, and the whole new tree was discarded with them. Only what the install linked is undone,
// in place, as conda's rollback does (link.py, UnlinkLinkTransaction: each action's reverse());
// the prefix stays, holding the files, with no packages, and a later install carries them.
TEST_F(Installer, ARolledBackFirstInstallKeepsFilesWrittenIntoItMeanwhile) {
  auto base = make_package("base", "1", {{"share/base", "1\n"}, {"lib/deep/libbase.so", "so\n"}});
  for (const std::string how : {"exit 1", "kill -TERM $PPID"}) {
    SCOPED_TRACE(how);
    auto job = make_package("job", "1",
                            {{"bin/.job-post-link.sh",
                              "mkdir -p \"$PREFIX/ckpt\" \"$PREFIX/share/notes\"; echo weights > \"$PREFIX/ckpt/epoch1.pt\"; "
                              "echo n > \"$PREFIX/share/notes/n.txt\"\n" + how + "\n", true}});
    auto r = install_packages(prefix_, {base, job}, options());
    ASSERT_FALSE(r.ok());
    const bool killed = how != "exit 1";
    EXPECT_EQ(install_interrupted_by(), killed ? SIGTERM : 0);
    EXPECT_EQ(r.error().where, killed ? fs::absolute(prefix_).lexically_normal().string() : "job-1-0");
    EXPECT_EQ(r.error().message, killed ? "install interrupted by SIGTERM" : "post-link script exited with status 1");
    const std::string kept = "rolled back a first install that did not finish; kept 2 file(s) written into it since, "
                             "which no package owns: ckpt/epoch1.pt, share/notes/n.txt; the environment stays, with "
                             "no packages";
    const std::string pfx = fs::absolute(prefix_).lexically_normal().string();
    const std::string trace = "script: bin/.job-post-link.sh\noutput:\n"
                              "+ for _envlock_hook in \"$PREFIX\"/etc/conda/activate.d/*.sh\n"
                              "+ '[' -f '" + pfx + "/etc/conda/activate.d/*.sh' ']'\n"
                              "+ unset _envlock_hook\n"
                              "+ . " + pfx + "/bin/.job-post-link.sh\n"
                              "++ mkdir -p " + pfx + "/ckpt " + pfx + "/share/notes\n"
                              "++ echo weights\n"
                              "++ echo n\n"
                              "++ exit 1\n";
    EXPECT_EQ(r.error().detail, (killed ? std::string() : trace) + kept);
    EXPECT_EQ(r.error().hint, killed ? "nothing was installed; the files written meanwhile stay in the prefix"
                                     : "nothing was installed; the files written meanwhile stay in the prefix; fix the "
                                       "package or pass --no-scripts to skip post-link scripts");
    std::vector<std::string> left;
    for (auto it = fs::recursive_directory_iterator(prefix_); it != fs::recursive_directory_iterator(); ++it)
      left.push_back(it->path().lexically_relative(prefix_).generic_string());
    std::sort(left.begin(), left.end());
    EXPECT_EQ(left, (std::vector<std::string>{"ckpt", "ckpt/epoch1.pt", "conda-meta", "conda-meta/envlock", "share",
                                              "share/notes", "share/notes/n.txt"}));
    EXPECT_EQ(slurp(prefix_ / "ckpt/epoch1.pt"), "weights\n");
    auto origin = read_prefix_origin(prefix_);
    ASSERT_TRUE(origin.ok() && origin->has_value());
    EXPECT_EQ((*origin)->lockfile_hash, "") << "names no lockfile: nothing takes it for up to date";
    EXPECT_TRUE(siblings().empty());
    // A later install makes it the environment, carrying the files.
    ASSERT_TRUE(install_packages(prefix_, {base}, options()).ok());
    EXPECT_EQ(slurp(prefix_ / "ckpt/epoch1.pt"), "weights\n");
    EXPECT_EQ(slurp(prefix_ / "share/base"), "1\n");
    fs::remove_all(root_ / "envs");
  }
}

// A new-user attack (issue 23, M1): a job creates and deletes temporary files inside the prefix
// while updates scan and carry the old tree; a file gone between the listing and the link is not
// an error (ENOENT stopped the update). conda's path_actions.py and rattler's install/ treat
// what is no longer there as nothing to carry.
TEST_F(Installer, FilesDeletedWhileTheOldTreeIsScannedAreSkipped) {
  auto v1 = make_package("p", "1", {{"share/p", "1\n"}});
  auto v2 = make_package("p", "2", {{"share/p", "2\n"}});
  ASSERT_TRUE(install_packages(prefix_, {v1}, options()).ok());
  fs::create_directories(prefix_ / "scratch");
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    for (unsigned i = 0; !stop; ++i) {
      const fs::path f = prefix_ / "scratch" / ("tmp" + std::to_string(i % 64));
      if (FILE* out = std::fopen(f.c_str(), "w")) std::fclose(out);
      std::remove((prefix_ / "scratch" / ("tmp" + std::to_string((i + 32) % 64))).c_str());
    }
  });
  std::vector<std::string> failures;
  for (int round = 0; round < 20; ++round) {
    auto r = install_packages(prefix_, {round % 2 ? v1 : v2}, options());
    if (!r.ok()) failures.push_back(r.error().to_string());
  }
  stop = true;
  churn.join();
  EXPECT_EQ(failures, std::vector<std::string>{});
  EXPECT_EQ(slurp(prefix_ / "share/p"), "1\n");
}

// The same for folders (issue 23, M1): a job that makes and removes whole folders inside the
// prefix while updates scan the old tree (a folder gone between its listing and its reading
// stopped the update: "cannot walk the environment"); a folder gone meanwhile is skipped with
// what it held, as conda's path_actions.py and rattler's install/ act only on what is there.
TEST_F(Installer, FoldersRemovedWhileTheOldTreeIsScannedAreSkipped) {
  auto v1 = make_package("p", "1", {{"share/p", "1\n"}});
  auto v2 = make_package("p", "2", {{"share/p", "2\n"}});
  ASSERT_TRUE(install_packages(prefix_, {v1}, options()).ok());
  fs::create_directories(prefix_ / "scratch");
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    for (unsigned i = 0; !stop; ++i) {
      const fs::path made = prefix_ / "scratch" / ("run" + std::to_string(i % 16));
      std::error_code ec;
      fs::create_directories(made / "a/b", ec);
      if (FILE* out = std::fopen((made / "a/b/f").c_str(), "w")) std::fclose(out);
      fs::remove_all(prefix_ / "scratch" / ("run" + std::to_string((i + 8) % 16)), ec);
    }
  });
  std::vector<std::string> failures;
  for (int round = 0; round < 30; ++round) {
    auto r = install_packages(prefix_, {round % 2 ? v1 : v2}, options());
    if (!r.ok()) failures.push_back(r.error().to_string());
  }
  stop = true;
  churn.join();
  EXPECT_EQ(failures, std::vector<std::string>{});
  EXPECT_EQ(slurp(prefix_ / "share/p"), "1\n");
}

// What the user wrote into an update that did not finish (killed during post-link, then worked
// in) is kept in the restored environment: it was deleted with the discarded tree, the run
// saying only "ready" (a new-user attack, session 10: results.csv and conda-meta/pinned). Files
// carried from the previous tree (the same inode) are not counted.
TEST_F(Installer, AnUnfinishedUpdateIsRolledBackKeepingWhatWasWrittenIntoIt) {
  auto a = make_package("a", "1", {{"share/a", "a\n"}});
  auto b = make_package("b", "1", {{"share/b", "b\n"}});
  ASSERT_TRUE(install_packages(prefix_, {a}, options()).ok());
  spit(prefix_ / "notes/old.txt", "carried\n");
  ASSERT_EQ(::link((prefix_ / "notes/old.txt").c_str(), (root_ / "old-link").c_str()), 0);
  fs::rename(prefix_, root_ / "held");
  ASSERT_TRUE(install_packages(prefix_, {b}, options()).ok());
  fs::create_directories(prefix_ / "notes");
  ASSERT_EQ(::link((root_ / "old-link").c_str(), (prefix_ / "notes/old.txt").c_str()), 0);  // as carried over
  fs::rename(root_ / "held", prefix_.parent_path() / ".demo.envlock-stage-77-1");
  spit(prefix_ / "conda-meta/envlock-pending", "{\"previous\": [\".demo.envlock-stage-77-1\"]}\n");
  spit(prefix_ / "results.csv", "a week of work\n");
  spit(prefix_ / "conda-meta/pinned", "b 1\n");

  auto r = install_packages(prefix_, {a}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->warnings, std::vector<std::string>{"rolled back an update that did not finish; kept 2 file(s) written "
                                                  "into it since, which no package owns: conda-meta/pinned, results.csv"});
  EXPECT_EQ(slurp(prefix_ / "results.csv"), "a week of work\n");
  EXPECT_EQ(slurp(prefix_ / "conda-meta/pinned"), "b 1\n");
  EXPECT_EQ(slurp(prefix_ / "notes/old.txt"), "carried\n");
  EXPECT_FALSE(fs::exists(prefix_ / "share/b"));
  EXPECT_TRUE(siblings().empty());
}

// The lock file beside the prefix is never opened through a symbolic link: root would create
// (and lock) a file wherever a planted link points (a new-user attack, session 10: /etc/nologin).
TEST_F(Installer, APlantedLinkAsTheLockFileIsRefused) {
  fs::create_directories(prefix_.parent_path());
  fs::create_symlink(root_ / "victim", prefix_.parent_path() / ".demo.envlock-lock");
  auto r = install_packages(prefix_, {make_package("a", "1", {{"share/a", "a\n"}})}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, (prefix_.parent_path() / ".demo.envlock-lock").string());
  EXPECT_EQ(r.error().message, "is a symbolic link, not the lock file envlock makes");
  EXPECT_FALSE(fs::exists(root_ / "victim"));
  EXPECT_FALSE(fs::exists(prefix_));
}

// A mount point inside the environment (a bind-mounted dataset, a scratch tmpfs) is refused by
// an update and by remove, naming it: the update copied the mounted data into the new tree and
// then deleted it at its real place outside the prefix (a new-user attack, session 10).
TEST_F(Installer, AMountPointInsideTheEnvironmentIsRefusedAndNeverCrossed) {
  auto v1 = make_package("p", "1", {{"share/p", "1\n"}});
  auto v2 = make_package("p", "2", {{"share/p", "2\n"}});
  ASSERT_TRUE(install_packages(prefix_, {v1}, options()).ok());
  const fs::path dataset = root_ / "datasets";
  spit(dataset / "imagenet/a.jpg", "pixels\n");
  fs::create_directories(prefix_ / "data");
  // Mounting needs CAP_SYS_ADMIN in this mount namespace (root on a machine, not every container).
  if (::mount(dataset.c_str(), (prefix_ / "data").c_str(), nullptr, MS_BIND, nullptr) != 0)
    GTEST_SKIP() << "cannot bind-mount here (needs CAP_SYS_ADMIN)";
  auto r = install_packages(prefix_, {v2}, options());
  auto removed = remove_environment(prefix_, RunScripts::Yes, DryRun::No);
  ::umount2((prefix_ / "data").c_str(), MNT_DETACH);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, (prefix_ / "data").string());
  EXPECT_EQ(r.error().message, "is a mount point inside the environment (another filesystem)");
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.error().message, "is a mount point inside the environment (another filesystem)");
  EXPECT_EQ(slurp(dataset / "imagenet/a.jpg"), "pixels\n");
  EXPECT_EQ(slurp(prefix_ / "share/p"), "1\n");
  EXPECT_TRUE(siblings().empty());
}

TEST_F(Installer, PreUnlinkScriptsRunBeforeTheirFilesGo) {
  const fs::path log = root_ / "unlink.log";
  auto script = [&](const std::string& tag) {
    return "echo \"" + tag + " $PKG_NAME $PKG_VERSION $PREFIX $(cat \"$PREFIX/share/goer\")\" >> '" + log.string() +
           "'\nrm -f \"$PREFIX/etc/goer-registered\"\n";
  };
  auto keep = make_package("keep", "1", {{"share/keep", "k\n"}});
  auto goer = make_package("goer", "1",
                           {{"share/goer", "goer files present"},
                            {"bin/.goer-post-link.sh", "mkdir -p \"$PREFIX/etc\"; echo yes > \"$PREFIX/etc/goer-registered\"\n", true},
                            {"bin/.goer-pre-unlink.sh", script("v1"), true}});
  ASSERT_TRUE(install_packages(prefix_, {keep, goer}, options()).ok());
  ASSERT_TRUE(fs::exists(prefix_ / "etc/goer-registered"));
  EXPECT_FALSE(fs::exists(log)) << "nothing was unlinked yet";
  const std::string final_prefix = fs::absolute(prefix_).lexically_normal().string();

  // Replaced by another build: the old build's pre-unlink runs, with its files still there.
  auto goer2 = make_package("goer", "2",
                            {{"share/goer", "goer files present"}, {"bin/.goer-pre-unlink.sh", script("v2"), true}});
  auto r = install_packages(prefix_, {keep, goer2}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(slurp(log), "v1 goer 1 " + final_prefix + " goer files present\n");
  EXPECT_FALSE(fs::exists(prefix_ / "etc/goer-registered")) << "what pre-unlink deleted is not carried over";
  EXPECT_TRUE(r->warnings.empty());

  // Unchanged packages are not unlinked; removed ones are.
  ASSERT_TRUE(install_packages(prefix_, {keep, goer2}, options()).ok());
  EXPECT_EQ(slurp(log), "v1 goer 1 " + final_prefix + " goer files present\n");
  ASSERT_TRUE(install_packages(prefix_, {keep}, options()).ok());
  EXPECT_EQ(slurp(log), "v1 goer 1 " + final_prefix + " goer files present\nv2 goer 2 " + final_prefix +
                            " goer files present\n");

  // A failing pre-unlink is a warning, as in conda; --no-scripts skips them.
  auto failing = make_package("failing", "1", {{"bin/.failing-pre-unlink.sh", "echo nope\nexit 2\n", true}});
  ASSERT_TRUE(install_packages(prefix_, {keep, failing}, options()).ok());
  auto w = install_packages(prefix_, {keep}, options());
  ASSERT_TRUE(w.ok()) << w.error().to_string();
  ASSERT_EQ(w->warnings.size(), 1u);
  EXPECT_TRUE(w->warnings[0].starts_with("failing-1-0: pre-unlink script exited with status 2")) << w->warnings[0];
  EXPECT_EQ(w->removed, std::vector<std::string>{"failing-1-0"});

  // remove: every package's pre-unlink runs before the prefix goes.
  ASSERT_TRUE(install_packages(prefix_, {keep, goer2}, options()).ok());
  fs::remove(log);
  auto rm = remove_environment(prefix_);
  ASSERT_TRUE(rm.ok()) << rm.error().to_string();
  EXPECT_EQ(slurp(log), "v2 goer 2 " + final_prefix + " goer files present\n");
  EXPECT_EQ(rm->removed, (std::vector<std::string>{"goer-2-0", "keep-1-0"}));
  EXPECT_FALSE(fs::exists(prefix_));
  ASSERT_TRUE(install_packages(prefix_, {keep, goer2}, options()).ok());
  fs::remove(log);
  ASSERT_TRUE(remove_environment(prefix_, RunScripts::No).ok());
  EXPECT_FALSE(fs::exists(log));
}

TEST_F(Installer, VerifyReportsModifiedMissingAndExtra) {
  auto p = make_package("v", "1", {{"share/one", "1\n"}, {"share/two", "2\n"}, {"share/three", "3\n"}});
  auto o = options();
  o.link_mode = LinkMode::Copy;  // editing a hard link would edit the package cache
  ASSERT_TRUE(install_packages(prefix_, {p}, o).ok());
  spit(prefix_ / "share/one", "X\n");       // same size, other bytes
  spit(prefix_ / "share/three", "three\n"); // other size
  fs::remove(prefix_ / "share/two");
  spit(prefix_ / "share/new", "n\n");
  spit(prefix_ / "lib/python3.11/site-packages/__pycache__/m.cpython-311.pyc", "pyc");
  auto v = verify_prefix(prefix_);
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->drift.size(), 4u);
  EXPECT_EQ(v->drift[0].path, "share/new");
  EXPECT_EQ(v->drift[0].kind, FileDrift::Kind::Extra);
  EXPECT_EQ(v->drift[1].path, "share/one");
  EXPECT_EQ(v->drift[1].kind, FileDrift::Kind::Modified);
  EXPECT_TRUE(v->drift[1].reason.starts_with("sha256 ")) << v->drift[1].reason;
  EXPECT_EQ(v->drift[2].path, "share/three");
  EXPECT_EQ(v->drift[2].reason, "size 6 != recorded 2");
  EXPECT_EQ(v->drift[3].path, "share/two");
  EXPECT_EQ(v->drift[3].kind, FileDrift::Kind::Missing);
  EXPECT_EQ(v->drift[3].package, "v-1-0");
}

TEST_F(Installer, RefusesToSwallowAFolderThatIsNotAnEnvironment) {
  spit(prefix_ / "important.txt", "keep me\n");
  auto p = make_package("x", "1", {{"share/x", "x\n"}});
  auto r = install_packages(prefix_, {p}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Io);
  EXPECT_EQ(slurp(prefix_ / "important.txt"), "keep me\n");
  auto rm = remove_environment(prefix_);
  ASSERT_FALSE(rm.ok());
  EXPECT_NE(rm.error().message.find("was not made by envlock"), std::string::npos);
  EXPECT_TRUE(fs::exists(prefix_ / "important.txt"));
}

TEST_F(Installer, RemoveDeletesAnEnvironmentEnvlockMade) {
  auto p = make_package("x", "1", {{"share/x", "x\n"}});
  ASSERT_TRUE(install_packages(prefix_, {p}, options()).ok());
  ASSERT_TRUE(remove_environment(prefix_).ok());
  EXPECT_FALSE(fs::exists(prefix_));
  EXPECT_TRUE(fs::exists(p.extracted_dir / "share/x")) << "the package cache is not touched";
  EXPECT_TRUE(siblings().empty());
}

TEST_F(Installer, UnsafePathsAreRefused) {
  auto p = make_package("evil", "1", {{"share/ok", "ok\n"}});
  spit(p.extracted_dir / "info/paths.json",
       R"({"paths":[{"_path":"../../outside","path_type":"hardlink"}],"paths_version":1})");
  auto r = install_packages(prefix_, {p}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Integrity);
  EXPECT_NE(r.error().message.find("../../outside"), std::string::npos);
  EXPECT_FALSE(fs::exists(prefix_));
  EXPECT_FALSE(fs::exists(root_ / "outside"));
}

// An `.<name>.envlock-old-*` tree beside a missing prefix is restored only where the two-rename
// fallback swap can have left it: a folder of this user on a filesystem without RENAME_EXCHANGE.
// Here (ext4/tmpfs swap atomically) one is planted — by whoever can write the parent, or a pull
// request's checkout (a new-user attack, session 10: its activate.d hook ran as root, and the
// planter owned the prefix) — so it is deleted as a leftover and a fresh environment made.
TEST_F(Installer, LeftoversOfAKilledRunAreCleanedAndAPlantedOldTreeIsNeverAdopted) {
  auto p = make_package("x", "1", {{"share/x", "x\n"}});
  ASSERT_TRUE(install_packages(prefix_, {p}, options()).ok());
  const fs::path planted = prefix_.parent_path() / ".demo.envlock-old-123";
  fs::rename(prefix_, planted);
  spit(planted / "etc/conda/activate.d/x.sh", "touch '" + (root_ / "pwned").string() + "'\n");
  fs::create_directories(prefix_.parent_path() / ".demo.envlock-stage-123-9/share");
  auto q = make_package("y", "1", {{"share/y", "y\n"}});
  auto r = install_packages(prefix_, {q}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  // Deleted, but named (attack 20, L5: a tree beside the prefix went without a word).
  EXPECT_EQ(r->warnings, std::vector<std::string>{"deleted 2 tree(s) that an earlier envlock run left beside " +
                                                  fs::absolute(prefix_).lexically_normal().string() +
                                                  " (killed, or a previous environment that could not all be "
                                                  "deleted): .demo.envlock-stage-123-9, .demo.envlock-old-123"});
  EXPECT_FALSE(fs::exists(prefix_ / "share/x"));
  EXPECT_FALSE(fs::exists(prefix_ / "etc/conda/activate.d/x.sh"));
  EXPECT_TRUE(fs::exists(prefix_ / "share/y"));
  EXPECT_TRUE(siblings().empty());
}

TEST_F(Installer, OldStyleHasPrefixPackagesAreRelocated) {
  auto p = make_package("old", "1", {{"bin/old", "#!/bin/sh\necho " + kTextPh + "\n", true}});
  fs::remove(p.extracted_dir / "info/paths.json");
  spit(p.extracted_dir / "info/files", "bin/old\n");
  spit(p.extracted_dir / "info/has_prefix", "bin/old\n");
  ASSERT_TRUE(install_packages(prefix_, {p}, options()).ok());
  EXPECT_EQ(slurp(prefix_ / "bin/old"), "#!/bin/sh\necho " + prefix_.string() + "\n");
  ASSERT_TRUE(verify_prefix(prefix_)->clean());
}

/// Everything an install leaves in `prefix` that a user could see: per path its type, mode,
/// content (or link target), and the conda-meta records (history and origin carry a time).
std::map<std::string, std::string> tree_of(const fs::path& prefix) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(prefix)) {
    const std::string rel = e.path().lexically_relative(prefix).generic_string();
    if (rel == "conda-meta/history" || rel.starts_with("conda-meta/envlock")) continue;
    struct stat st {};
    EXPECT_EQ(::lstat(e.path().c_str(), &st), 0) << rel;
    std::string what = std::to_string(st.st_mode) + " ";
    if (S_ISLNK(st.st_mode)) what += "-> " + fs::read_symlink(e.path()).string();
    else if (S_ISREG(st.st_mode)) what += slurp(e.path());
    out[rel] = what;
  }
  return out;
}

TEST_F(Installer, PackagesLinkedInParallelMakeTheTreeLinkingInOrderMakes) {
  std::vector<PackageToLink> packages;
  packages.push_back(make_package("python", "3.12.1", {{"bin/python3.12", "py\n", true}}));
  for (int i = 0; i < 12; ++i) {
    const std::string n = "pkg" + std::to_string(i);
    packages.push_back(make_package(
        n, "1." + std::to_string(i),
        {{"lib/" + n + "/a/b/data.txt", "data " + n + "\n"},
         {"lib/" + n + "/a/c.txt", "c\n"},
         {"lib/lib" + n + ".so", "so " + n},
         {"lib/lib" + n + ".so.1", "", false, "", "", "lib" + n + ".so"},
         {"bin/" + n, "#!/bin/sh\necho " + kTextPh + "/" + n + "\n", true, "text", kTextPh},
         {"share/" + n + "/deep/er/and/deeper/x", n}}));
  }
  packages.push_back(make_package("pytool", "2", {{"site-packages/pytool/__init__.py", "def main(): pass\n"}},
                                  "python", {"pytool = pytool:main"}));
  auto sequential = options();
  sequential.link_threads = 1;
  auto report1 = install_packages(prefix_, packages, sequential);
  ASSERT_TRUE(report1.ok()) << report1.error().to_string();
  const auto tree1 = tree_of(prefix_);
  ASSERT_GT(tree1.size(), 80u);
  ASSERT_TRUE(remove_environment(prefix_).ok());
  auto parallel = options();
  parallel.link_threads = 4;
  auto report2 = install_packages(prefix_, packages, parallel);
  ASSERT_TRUE(report2.ok()) << report2.error().to_string();
  EXPECT_EQ(tree_of(prefix_), tree1);
  EXPECT_EQ(report2->installed, report1->installed);
  EXPECT_EQ(report2->files_linked, report1->files_linked);
  EXPECT_EQ(report2->files_copied, report1->files_copied);
  EXPECT_EQ(report2->files_relocated, report1->files_relocated);
  EXPECT_TRUE(report2->clobbered.empty());
  EXPECT_TRUE(verify_prefix(prefix_)->clean());
}

// Removing a clobber's winner (issue 23, M3): the loser, kept, had lost the path from its
// record, so the path went with the winner and verify said clean. The loser is linked again and
// its copy is back, in its record (rattler's install/clobber_registry.rs keeps each package's
// clobbered paths and puts the next one's copy back when the winner goes); a winner that stays
// keeps its copy, and the loser is not linked again.
TEST_F(Installer, RemovingAClobbersWinnerPutsTheLosersCopyBack) {
  auto a = make_package("a", "1", {{"share/common.txt", "from a\n"}, {"share/a.txt", "a\n"}});
  auto b = make_package("b", "1", {{"share/b.txt", "b\n"}});
  auto c = make_package("c", "1", {{"share/common.txt", "from c\n"}, {"share/c.txt", "c\n"}});
  ASSERT_TRUE(install_packages(prefix_, {a, b, c}, options()).ok());
  ASSERT_EQ(slurp(prefix_ / "share/common.txt"), "from c\n");
  auto keep_winner = install_packages(prefix_, {a, c}, options());
  ASSERT_TRUE(keep_winner.ok()) << keep_winner.error().to_string();
  EXPECT_EQ(keep_winner->kept, (std::vector<std::string>{"a-1-0", "c-1-0"}));
  EXPECT_EQ(keep_winner->installed, std::vector<std::string>{});
  EXPECT_EQ(keep_winner->removed, std::vector<std::string>{"b-1-0"});
  EXPECT_EQ(slurp(prefix_ / "share/common.txt"), "from c\n");

  auto without_c = install_packages(prefix_, {a}, options());
  ASSERT_TRUE(without_c.ok()) << without_c.error().to_string();
  EXPECT_EQ(without_c->kept, std::vector<std::string>{});
  EXPECT_EQ(without_c->installed, std::vector<std::string>{"a-1-0"});
  EXPECT_EQ(without_c->removed, std::vector<std::string>{"c-1-0"});
  EXPECT_EQ(without_c->clobbered, std::vector<std::string>{});
  EXPECT_EQ(without_c->warnings, std::vector<std::string>{});
  EXPECT_EQ(slurp(prefix_ / "share/common.txt"), "from a\n");
  EXPECT_FALSE(fs::exists(prefix_ / "share/c.txt"));
  auto records = read_conda_meta(prefix_);
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ(records->front().files, (std::vector<std::string>{"share/a.txt", "share/common.txt"}));
  EXPECT_TRUE(verify_prefix(prefix_)->clean());
  fs::remove(prefix_ / "share/common.txt");
  auto v = verify_prefix(prefix_);
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->drift.size(), 1u) << "the path is a's again: its loss is drift";
  EXPECT_EQ(v->drift.front().path, "share/common.txt");
}

TEST_F(Installer, PackagesSharingAPathAreLinkedInOrderTheLaterOneWinning) {
  auto a = make_package("a", "1", {{"share/common.txt", "from a\n"}, {"share/a.txt", "a\n"}});
  auto b = make_package("b", "1", {{"share/b.txt", "b\n"}});
  auto c = make_package("c", "1", {{"share/common.txt", "from c\n"}, {"share/c.txt", "c\n"}});
  auto o = options();
  o.link_threads = 4;
  auto report = install_packages(prefix_, {a, b, c}, o);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->clobbered, std::vector<std::string>{"share/common.txt"});
  EXPECT_EQ(report->clobbered_owners, std::vector<std::string>{"c-1-0 over a-1-0"});
  EXPECT_EQ(slurp(prefix_ / "share/common.txt"), "from c\n");
  EXPECT_EQ(slurp(prefix_ / "share/b.txt"), "b\n");
  // Only the winner's record lists the path (a new-user attack, session 8: verify of the
  // untouched environment reported the loser's recorded size), so verify is clean and removing
  // the loser later keeps the winner's file (conda deletes it: conda/conda#7775).
  auto records = read_conda_meta(prefix_);
  ASSERT_TRUE(records.ok());
  for (const auto& r : *records) {
    const bool lists = std::count(r.files.begin(), r.files.end(), "share/common.txt") > 0;
    const bool in_paths = std::any_of(r.paths.begin(), r.paths.end(), [](const PathEntry& e) {
      return e.path == "share/common.txt";
    });
    EXPECT_EQ(lists, r.name == "c") << r.name;
    EXPECT_EQ(in_paths, r.name == "c") << r.name;
  }
  EXPECT_TRUE(verify_prefix(prefix_)->clean());
  auto without_a = install_packages(prefix_, {b, c}, o);
  ASSERT_TRUE(without_a.ok()) << without_a.error().to_string();
  EXPECT_EQ(slurp(prefix_ / "share/common.txt"), "from c\n");
  EXPECT_FALSE(fs::exists(prefix_ / "share/a.txt"));
  // A kept package's file that a new package writes too: the new one's copy, in its record only.
  auto kept_then_new = install_packages(prefix_, {b, c, a}, o);
  ASSERT_TRUE(kept_then_new.ok()) << kept_then_new.error().to_string();
  EXPECT_EQ(kept_then_new->clobbered_owners, std::vector<std::string>{"a-1-0 over c-1-0"});
  EXPECT_EQ(slurp(prefix_ / "share/common.txt"), "from a\n");
  EXPECT_TRUE(verify_prefix(prefix_)->clean());
  // A file where another package has a folder: the same error whatever the thread count, naming
  // the package that brings the file.
  auto d = make_package("d", "1", {{"share/dir/x.txt", "x\n"}});
  auto e = make_package("e", "1", {{"share/dir", "a file\n"}});
  auto refused = install_packages(prefix_, {a, d, e}, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().where, "e-1-0: share/dir");
  EXPECT_NE(refused.error().message.find("would replace a directory"), std::string::npos);
  EXPECT_EQ(slurp(prefix_ / "share/common.txt"), "from a\n") << "the previous environment stays";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Issue 23: no write outside the prefix, for the transaction as a whole. Each victim is a file
// (or folder) beside the environment that must stay untouched.

TEST_F(Installer, ALinkTargetOrPathLeavingThePrefixIsRefusedNamingPackageAndField) {
  spit(root_ / "victim.txt", "precious\n");
  struct Case {
    std::vector<FakeFile> files;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{{"lib/evil", "", false, "", "", "../../victim.txt"}},
       "symbolic link target of lib/evil \"../../victim.txt\" is not a relative path inside the prefix"},
      {{{"lib/abs", "", false, "", "", "/etc/passwd"}},
       "symbolic link target of lib/abs \"/etc/passwd\" is not a relative path inside the prefix"},
      {{{"conda-meta/x.json", "{}\n"}},
       "info/paths.json _path (as installed) \"conda-meta/x.json\" is not a relative path inside the prefix"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.message);
    auto p = make_package("evil", "1", c.files);
    auto r = install_packages(prefix_, {p}, options());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::Integrity);
    EXPECT_EQ(r.error().where, "evil-1-0");
    EXPECT_EQ(r.error().message, c.message);
    EXPECT_FALSE(fs::exists(prefix_));
    EXPECT_TRUE(siblings().empty());
  }
  // paths.json itself naming a way out.
  auto p = make_package("evil", "1", {{"share/ok", "ok\n"}});
  spit(p.extracted_dir / "info/paths.json", R"({"paths":[{"_path":"share/../../victim.txt"}],"paths_version":1})");
  auto r = install_packages(prefix_, {p}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "info/paths.json _path \"share/../../victim.txt\" is not a relative path inside the prefix");
  EXPECT_EQ(slurp(root_ / "victim.txt"), "precious\n");
}

TEST_F(Installer, TwoPackagesWhoseLinksTogetherLeadOutsideAreRefused) {
  // Each link looks harmless alone (lexically inside the prefix); together `up` resolves to the
  // folder above the prefix, and the second package's file would land there.
  const fs::path victim = root_ / "envs" / "victim.txt";
  spit(victim, "precious\n");
  auto links = make_package("links", "1", {{"x", "", false, "", "", "."}, {"up", "", false, "", "", "x/x/.."}});
  auto writer = make_package("writer", "1", {{"up/victim.txt", "overwritten\n"}});
  auto r = install_packages(prefix_, {links, writer}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Integrity);
  EXPECT_EQ(r.error().where, "writer-1-0");
  EXPECT_EQ(r.error().message,
            "up/victim.txt: the folder up is, or is below, a symbolic link that points outside the prefix; refusing "
            "to write through it");
  EXPECT_EQ(slurp(victim), "precious\n");
  EXPECT_FALSE(fs::exists(prefix_));
  // The links alone make no write outside, but the environment would hold a link leading out.
  auto alone = install_packages(prefix_, {links}, options());
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(alone.error().where, "links-1-0");
  EXPECT_EQ(alone.error().message,
            "symbolic link up resolves outside the prefix (through the links of the packages installed together)");
  EXPECT_FALSE(fs::exists(prefix_));
  // In the other order, and with a kept environment under them, the same.
  auto r2 = install_packages(prefix_, {writer, links}, options());
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(slurp(victim), "precious\n");
  EXPECT_TRUE(siblings().size() == 1 && siblings()[0] == victim);
}

// A new-user attack (session 8): `share/root -> ..` from one package and
// `share/root/conda-meta/okpkg-1.0-0.json` from another put a forged record (and a
// conda-meta/state with env_vars) into the environment; the text rule alone ("not in conda-meta/")
// never saw it. The folder each write lands in is checked by identity, so both orders fail, the
// link alone installs, and the old environment is kept.
TEST_F(Installer, TwoPackagesWhoseLinksTogetherLeadIntoCondaMetaAreRefused) {
  auto base = make_package("okpkg", "1", {{"share/hello.txt", "hi\n"}});
  ASSERT_TRUE(install_packages(prefix_, {base}, options()).ok());
  const std::string record = slurp(prefix_ / "conda-meta/okpkg-1-0.json");
  auto link = make_package("aaa-link", "1", {{"share/root", "", false, "", "", ".."}});
  auto into_records = make_package("bbb-write", "1", {{"share/root/conda-meta/okpkg-1-0.json", "{}\n"}});
  auto into_root = make_package("bbb-root", "1", {{"share/root/conda-meta", "a file named conda-meta\n"}});
  auto via_records = make_package("ccc-meta", "1", {{"share/cm", "", false, "", "", "../conda-meta"}});
  auto through_records = make_package("ddd-write", "1", {{"share/cm/state", "{\"env_vars\": {}}\n"}});
  struct Case {
    std::vector<PackageToLink> packages;
    std::string where, message;
  };
  const std::vector<Case> cases = {
      {{base, link, into_records}, "bbb-write-1-0",
       "share/root/conda-meta/okpkg-1-0.json: the folder share/root/conda-meta is, or is below, a symbolic link that "
       "leads to the prefix itself or to its conda-meta/; refusing to write through it"},
      {{base, into_records, link}, "bbb-write-1-0", ""},
      {{base, link, into_root}, "bbb-root-1-0",
       "share/root/conda-meta: the folder share/root is, or is below, a symbolic link that leads to the prefix itself "
       "or to its conda-meta/; refusing to write through it"},
      {{base, via_records, through_records}, "ddd-write-1-0",
       "share/cm/state: the folder share/cm is, or is below, a symbolic link that leads to the prefix itself or to its "
       "conda-meta/; refusing to write through it"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.where);
    auto r = install_packages(prefix_, c.packages, options());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::Integrity);
    if (!c.message.empty()) {
      EXPECT_EQ(r.error().where, c.where);
      EXPECT_EQ(r.error().message, c.message);
    }
    EXPECT_EQ(slurp(prefix_ / "conda-meta/okpkg-1-0.json"), record);
    EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/state"));
    EXPECT_FALSE(fs::exists(prefix_ / "share/root"));
  }
  // Each link alone is harmless and installs.
  auto alone = install_packages(prefix_, {base, link, via_records}, options());
  ASSERT_TRUE(alone.ok()) << alone.error().to_string();
  EXPECT_EQ(fs::read_symlink(prefix_ / "share/root"), "..");
}

TEST_F(Installer, AFileReplacingAnotherPackagesLinkNeverWritesThroughIt) {
  // `a` links bin/tool to its own data file; `b` installs bin/tool as a relocated file, then as a
  // hard link: the link is replaced, the file it pointed to stays as `a` made it.
  auto a = make_package("a", "1", {{"share/real", "a's data\n"}, {"bin/tool", "", false, "", "", "../share/real"}});
  auto b = make_package("b", "1", {{"bin/tool", "#!/bin/sh\necho " + kTextPh + "\n", true, "text", kTextPh}});
  auto c = make_package("c", "1", {{"bin/tool", "plain\n"}});
  for (const auto& second : {b, c}) {
    fs::remove_all(root_ / "envs");
    auto r = install_packages(prefix_, {a, second}, options());
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->clobbered, std::vector<std::string>{"bin/tool"});
    EXPECT_FALSE(fs::is_symlink(prefix_ / "bin/tool"));
    EXPECT_EQ(slurp(prefix_ / "share/real"), "a's data\n");
    EXPECT_EQ(slurp(a.extracted_dir / "share/real"), "a's data\n") << "the package cache stays untouched";
  }
}

TEST_F(Installer, AnInsidePathThroughAnotherPackagesFolderLinkIsFollowedAsCondaDoes) {
  auto a = make_package("a", "1", {{"lib/real/.keep", ""}, {"lib64", "", false, "", "", "lib/real"}});
  auto b = make_package("b", "1", {{"lib64/libb.so", "b\n"}});
  auto r = install_packages(prefix_, {a, b}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(slurp(prefix_ / "lib/real/libb.so"), "b\n");
}

TEST_F(Installer, PathFieldsOfTheLockfileAndLinkJsonMustStayInsideThePrefix) {
  auto python = make_package("python", "3.13.0", {{"bin/python3.13", "#!/bin/sh\n", true}});
  auto pkg = make_package("demo", "1.0", {{"site-packages/demo/__init__.py", "x = 1\n"}}, "python", {}, "pyh_0");
  for (const std::string bad : {"../../victim", "/etc", "lib/python3.13t/../../..", "conda-meta/x"}) {
    SCOPED_TRACE(bad);
    auto py = python;
    py.record.python_site_packages_path = bad;
    auto r = install_packages(prefix_, {py, pkg}, options());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::Integrity);
    EXPECT_EQ(r.error().where, "python-3.13.0-0");
    EXPECT_EQ(r.error().message, "python_site_packages_path \"" + bad + "\" is not a relative path inside the prefix");
    EXPECT_FALSE(fs::exists(prefix_));
  }
  auto py = python;
  py.record.python_site_packages_path = "lib/python3.13t/site-packages";
  ASSERT_TRUE(install_packages(prefix_, {py, pkg}, options()).ok());
  EXPECT_TRUE(fs::exists(prefix_ / "lib/python3.13t/site-packages/demo/__init__.py"));

  fs::remove_all(root_ / "envs");
  auto ep = make_package("epkg", "1.0", {{"site-packages/e/__init__.py", ""}}, "python", {"../../escape = e:main"},
                         "pyh_0");
  auto r = install_packages(prefix_, {python, ep}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "info/link.json entry point name \"../../escape\" is not a relative path inside the prefix");
  EXPECT_FALSE(fs::exists(root_ / "escape"));
}

// Entry point names are one file name of bin/, printable, at most NAME_MAX bytes; targets are
// `module:function` (they are written into the script as code). conda checks neither
// (conda/core/portability.py splits on '=' and ':'); a new-user attack (session 9) installed
// `ev\x1b]0;PWNED\x07il` into bin/ and a 300-byte name that failed late, naming the stage.
TEST_F(Installer, EntryPointNamesAndTargetsAreCheckedBeforeAnythingIsWritten) {
  auto python = make_package("python", "3.13.0", {{"bin/python3.13", "#!/bin/sh\n", true}});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ev\x1b]0;PWNED\x07il = e:main",
       "info/link.json has an entry point name with a control or invisible character: \"ev\\x1b]0;PWNED\\x07il\""},
      {"ev\nil = e:main", "info/link.json has an entry point name with a control or invisible character: \"ev\\x0ail\""},
      {std::string(300, 'e') + " = e:main",
       "info/link.json has an entry point name of 300 bytes; a file name holds at most 255"},
      {"evy = os:system(\"touch x\")",
       "info/link.json has an unusable entry point \"evy = os:system(\"touch x\")\": module and function must be "
       "dotted Python names (name = package.module:function)"},
      {"evz = e..x:main",
       "info/link.json has an unusable entry point \"evz = e..x:main\": module and function must be dotted Python "
       "names (name = package.module:function)"},
      {"evw = e", "info/link.json has an entry point \"evw = e\" that is not \"name = module:function\""},
      {"evi = import:main",
       "info/link.json has an unusable entry point \"evi = import:main\": module and function must be dotted Python "
       "names (name = package.module:function)"},
      {"-rf = e:main", "info/link.json has an entry point name that starts with '-': \"-rf\""},
  };
  for (const auto& [spec, message] : cases) {
    SCOPED_TRACE(spec);
    auto ep = make_package("epkg", "1.0", {{"site-packages/e/__init__.py", ""}}, "python", {spec}, "pyh_0");
    auto r = install_packages(prefix_, {python, ep}, options());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::Integrity);
    EXPECT_EQ(r.error().where, "epkg-1.0-pyh_0");
    EXPECT_EQ(r.error().message, message);
    EXPECT_FALSE(fs::exists(prefix_));
  }
  auto ep = make_package("epkg", "1.0", {{"site-packages/e/__init__.py", ""}}, "python",
                         {"e-run = e.cli:Main.run", "\xc3\xa9t\xc3\xa9 = \xc3\xa9t\xc3\xa9:main"}, "pyh_0");
  auto r = install_packages(prefix_, {python, ep}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_NE(slurp(prefix_ / "bin/e-run").find("from e.cli import Main\n"), std::string::npos);
  EXPECT_TRUE(fs::exists(prefix_ / "bin/\xc3\xa9t\xc3\xa9"));
}

// Where a package of the update puts a path, a file no package owned (the user's, pip's) is
// replaced with a warning, as conda warns (UnknownPackageClobberError under its default
// path_conflict: clobber); a user's file or link where a package now makes a folder is named
// too. Files below a folder that a package makes a symbolic link or a file are refused: carried
// over they would go through the link (or be lost). A new-user attack (session 9) lost lib/d/s
// and carried lib/d/history into share/ through the link, and lost etc/app.conf, silently.
TEST_F(Installer, PathsNoPackageOwnedThatAnUpdateReplacesAreNamedOrRefused) {
  auto v1 = make_package("p", "1", {{"lib/d/f", "1\n"}, {"share/s", "s\n"}});
  ASSERT_TRUE(install_packages(prefix_, {v1}, options()).ok());
  spit(prefix_ / "etc/app.conf", "tuned\n");
  fs::create_symlink("/nonexistent-elsewhere", prefix_ / "out");
  spit(prefix_ / "lib/d/history", "mine\n");
  spit(prefix_ / "lib/d/pinned", "mine\n");

  // lib/d becomes a link (and, in another update, a file): refused, nothing changed.
  auto to_link = make_package("p", "2", {{"lib/d", "", false, "", "", "../share"}, {"share/s", "s\n"}});
  auto to_file = make_package("p", "3", {{"lib/d", "now a file\n"}, {"share/s", "s\n"}});
  for (const auto& [pkg, what, after] : {std::tuple{to_link, "a symbolic link", "written through the link"},
                                         std::tuple{to_file, "a file", "lost"}}) {
    SCOPED_TRACE(what);
    auto r = install_packages(prefix_, {pkg}, options());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().where, pkg.record.dist_name());
    EXPECT_EQ(r.error().message, std::string("makes lib/d ") + what +
                                     ", where the environment has a folder holding files no package owns: "
                                     "lib/d/history, lib/d/pinned");
    EXPECT_EQ(r.error().detail,
              std::string("carried over, they would be ") + after + "\nnothing was installed; the environment was not changed");
    EXPECT_EQ(r.error().hint, "move those files out of lib/d/ (or delete them), then run the command again");
    EXPECT_EQ(slurp(prefix_ / "lib/d/history"), "mine\n");
    EXPECT_EQ(slurp(prefix_ / "lib/d/f"), "1\n");
    EXPECT_TRUE(siblings().empty());
  }

  // Without the files below it, the link installs; the user's etc/app.conf and out are replaced.
  fs::remove(prefix_ / "lib/d/history");
  fs::remove(prefix_ / "lib/d/pinned");
  auto conf = make_package("conf", "1", {{"etc/app.conf", "default\n"}, {"out/x", "x\n"}});
  auto r = install_packages(prefix_, {to_link, conf}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->warnings, (std::vector<std::string>{
                             "conf-1-0 replaced 1 path(s) no package owned (yours, or another package manager's; conda "
                             "warns the same way: UnknownPackageClobberError): etc/app.conf",
                             "1 path(s) no package owned are folders of the new packages now, and were not kept: out"}));
  EXPECT_EQ(slurp(prefix_ / "etc/app.conf"), "default\n");
  EXPECT_EQ(fs::read_symlink(prefix_ / "lib/d"), "../share");
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(prefix_ / "out")));
  auto v = verify_prefix(prefix_);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->drift.empty());
  EXPECT_TRUE(siblings().empty());
}

// A package shipping `lib -> lib64` and listing its files through the link (lib/libx.so, which
// is lib64/libx.so on disk): an update warned "... are folders of the new packages now, and were
// not kept: lib64/libx.so" about the package's own file (a new-user attack, session 11).
TEST_F(Installer, FilesReachedThroughAPackagesOwnLinkAreNotNamedAsUserFiles) {
  auto files = [](const std::string& v) {
    return std::vector<FakeFile>{{"lib64/real.so", v}, {"lib", "", false, "", "", "lib64"}, {"lib/libx.so", v}};
  };
  auto v1 = make_package("p", "1", files("1\n"));
  auto v2 = make_package("p", "2", files("2\n"));
  ASSERT_TRUE(install_packages(prefix_, {v1}, options()).ok());
  ASSERT_EQ(slurp(prefix_ / "lib64/libx.so"), "1\n");
  auto r = install_packages(prefix_, {v2}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->warnings, std::vector<std::string>{});
  EXPECT_EQ(slurp(prefix_ / "lib/libx.so"), "2\n");
  EXPECT_TRUE(siblings().empty());
}

// An update re-creates the symbolic links no package owns in the new tree and makes its folders
// again: a user's link came back owned by root with the update's time, and every folder's times
// were reset (issue 23). conda changes a prefix in place, where both stay; so they stay here: a
// carried link keeps its owner (as root) and times, a folder whose entries the update leaves as
// they were keeps its times, one that gained an entry has the time it changed (as in place).
TEST_F(Installer, CarriedLinksAndFoldersKeepTheirOwnerAndTimes) {
  auto v1 = make_package("p", "1", {{"lib/p/f", "1\n"}, {"share/p/s", "s\n"}});
  auto v2 = make_package("p", "2", {{"lib/p/f", "2\n"}, {"share/p/s", "s\n"}, {"share/p/new", "n\n"}});
  ASSERT_TRUE(install_packages(prefix_, {v1}, options()).ok());
  spit(prefix_ / "data/results.csv", "1,2\n");
  fs::create_symlink("results.csv", prefix_ / "data/latest");
  fs::create_symlink("/nonexistent-elsewhere", prefix_ / "dangling");
  const bool root = ::geteuid() == 0;  // owners can be given away only as root (CI runs as root)
  if (root) {
    for (const char* rel : {"data", "data/latest", "dangling"})
      ASSERT_EQ(::lchown((prefix_ / rel).c_str(), 4242, 4343), 0) << rel;
  }
  const timespec then{1000000000, 123456789};  // 2001-09-09, with nanoseconds
  // Links first, then folders from the deepest up (setting a child's times leaves its parent's).
  for (const char* rel : {"data/latest", "dangling", "data", "lib/p", "lib", "share/p", "share", ""}) {
    const timespec times[2] = {then, then};
    ASSERT_EQ(::utimensat(AT_FDCWD, (prefix_ / rel).c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << rel;
  }
  auto r = install_packages(prefix_, {v2}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->warnings, std::vector<std::string>{});
  EXPECT_EQ(r->installed, std::vector<std::string>{"p-2-0"});
  EXPECT_EQ(r->removed, std::vector<std::string>{"p-1-0"});
  auto at = [&](const char* rel) {
    struct stat st {};
    EXPECT_EQ(::lstat((prefix_ / rel).c_str(), &st), 0) << rel;
    return st;
  };
  for (const char* rel : {"data/latest", "dangling", "data", "lib/p", "lib", "share", ""}) {
    SCOPED_TRACE(rel);
    EXPECT_EQ(at(rel).st_mtim.tv_sec, then.tv_sec);
    EXPECT_EQ(at(rel).st_mtim.tv_nsec, then.tv_nsec);
  }
  EXPECT_EQ(fs::read_symlink(prefix_ / "data/latest"), "results.csv");
  EXPECT_EQ(fs::read_symlink(prefix_ / "dangling"), "/nonexistent-elsewhere");
  EXPECT_GT(at("share/p").st_mtim.tv_sec, then.tv_sec + 1000) << "share/p gained share/p/new: its time is the update's";
  EXPECT_EQ(slurp(prefix_ / "share/p/new"), "n\n");
  if (root) {
    for (const char* rel : {"data", "data/latest", "dangling"}) {
      SCOPED_TRACE(rel);
      EXPECT_EQ(at(rel).st_uid, 4242u);
      EXPECT_EQ(at(rel).st_gid, 4343u);
    }
  }
  EXPECT_TRUE(siblings().empty());
}

// Files that running jobs write into the environment while an update builds its new tree land in
// the old tree after its scan; they went with it at the swap (issue 23; docs/install.md called it
// a limitation). Now every path the scan did not see is carried into the new tree after the swap
// and named; one where the new tree has a package's path stays behind, named too. The seam
// (InstallOptions::before_swap) writes them between the scan and the swap.
TEST_F(Installer, FilesWrittenWhileAnUpdateIsBuiltAreCarriedIntoTheNewTree) {
  auto v1 = make_package("p", "1", {{"share/p/f", "1\n"}});
  auto v2 = make_package("p", "2", {{"share/p/f", "2\n"}, {"share/p/added", "package\n"}});
  ASSERT_TRUE(install_packages(prefix_, {v1}, options()).ok());
  spit(prefix_ / "runs/old.log", "before\n");
  auto o = options();
  bool called = false;
  o.before_swap = [&] {
    called = true;
    spit(prefix_ / "runs/late.log", "during\n");
    spit(prefix_ / "runs/new/out.csv", "1,2\n");
    fs::create_symlink("late.log", prefix_ / "runs/latest");
    spit(prefix_ / "share/p/added", "mine\n");
    spit(prefix_ / "conda-meta/pinned", "p 2\n");
  };
  auto r = install_packages(prefix_, {v2}, o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(called);
  EXPECT_EQ(r->warnings,
            (std::vector<std::string>{
                "4 path(s) were written into the environment while the update was built, and were carried into the "
                "updated environment: conda-meta/pinned, runs/late.log, runs/latest, runs/new",
                "1 path(s) were written into the environment while the update was built where the updated environment "
                "has a package's path, and were deleted with the previous environment: share/p/added"}));
  EXPECT_EQ(slurp(prefix_ / "runs/old.log"), "before\n");
  EXPECT_EQ(slurp(prefix_ / "runs/late.log"), "during\n");
  EXPECT_EQ(slurp(prefix_ / "runs/new/out.csv"), "1,2\n");
  EXPECT_EQ(fs::read_symlink(prefix_ / "runs/latest"), "late.log");
  EXPECT_EQ(slurp(prefix_ / "conda-meta/pinned"), "p 2\n");
  EXPECT_EQ(slurp(prefix_ / "share/p/added"), "package\n");
  EXPECT_EQ(slurp(prefix_ / "share/p/f"), "2\n");
  EXPECT_TRUE(siblings().empty());

  // Nothing written meanwhile: no warning (and the same tree again is no change).
  auto again = install_packages(prefix_, {v2}, options());
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(again->warnings, std::vector<std::string>{});
  EXPECT_EQ(slurp(prefix_ / "runs/new/out.csv"), "1,2\n");
}

/// A job started in `dir` (its working folder) that, each time it reads a byte on the returned
/// pipe, writes the file named by the line it reads, by relative path; it exits at end of input.
struct Job {
  pid_t pid = -1;
  int to = -1;
  void write_file(const std::string& name) const {
    const std::string line = name + "\n";
    ASSERT_EQ(::write(to, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    ::usleep(100 * 1000);
  }
  void finish() {
    ::close(to);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
};
Job job_in(const fs::path& dir) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  Job job;
  job.pid = ::fork();
  if (job.pid == 0) {
    ::close(fds[1]);
    if (::chdir(dir.c_str()) != 0) ::_exit(1);
    std::string name;
    char c;
    while (::read(fds[0], &c, 1) == 1) {
      if (c != '\n') {
        name += c;
        continue;
      }
      const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) (void)!::write(fd, "out\n", 4), ::close(fd);
      name.clear();
    }
    ::_exit(0);
  }
  ::close(fds[0]);
  job.to = fds[1];
  return job;
}

// Attack 20, I5: a job whose working folder is in the environment (`cd $ENV/runs/c && python
// train.py`) wrote into the previous tree after the swap, and lost what it wrote with it (61 of
// 369 files left; the next install deleted the rest). conda, mamba and pixi update in place, so
// the folder stays the environment's. Now the job's folder, holding no package path, is handed
// into the updated environment (exchanged with its copy): what the job writes there after the
// update is in the environment. A working folder that cannot be handed over (the prefix root, a
// folder of package files) is named, and the previous tree kept for it.
TEST_F(Installer, AJobWorkingInAFolderOfTheEnvironmentKeepsWritingIntoItAfterAnUpdate) {
  auto v1 = make_package("p", "1", {{"share/p/f", "1\n"}});
  auto v2 = make_package("p", "2", {{"share/p/f", "2\n"}});
  ASSERT_TRUE(install_packages(prefix_, {v1}, options()).ok());
  fs::create_directories(prefix_ / "runs/c/sub");
  spit(prefix_ / "runs/c/before", "1\n");
  Job job = job_in(prefix_ / "runs/c");
  job.write_file("early");
  auto o = options();
  o.before_swap = [&] { job.write_file("during"); };
  auto r = install_packages(prefix_, {v2}, o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  job.write_file("after");
  job.write_file("sub/deeper");
  job.finish();
  EXPECT_EQ(r->warnings, std::vector<std::string>{
                             "1 path(s) were written into the environment while the update was built, and were carried "
                             "into the updated environment: runs/c/during"});
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(prefix_ / "runs/c"))
    files.push_back(e.path().lexically_relative(prefix_ / "runs/c").generic_string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"after", "before", "during", "early", "sub", "sub/deeper"}));
  EXPECT_EQ(slurp(prefix_ / "share/p/f"), "2\n");
  EXPECT_TRUE(siblings().empty());
  EXPECT_TRUE(verify_prefix(prefix_).ok());

  // At the prefix root (or among package files) the folder cannot be handed over: named, and the
  // previous tree kept for what the job writes.
  Job root_job = job_in(prefix_);
  auto back = install_packages(prefix_, {v1}, options());
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  root_job.write_file("at-root");
  root_job.finish();
  const auto left = siblings();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(back->warnings, std::vector<std::string>{
                                "process " + std::to_string(root_job.pid) + " works in " +
                                fs::absolute(prefix_).lexically_normal().string() +
                                ", which the update replaced: what it writes there by relative path from now on goes "
                                "to the previous environment's tree, kept at " + left.front().string()});
  EXPECT_EQ(slurp(left.front() / "at-root"), "out\n");
  EXPECT_FALSE(fs::exists(prefix_ / "at-root"));
}

// A file with the immutable or append-only flag (chattr +i / +a) can be neither hard-linked nor
// deleted, root included: carried over as a copy it lost the flag, and the previous tree could
// never be deleted, so every later install and remove failed naming a folder the user never made
// (a new-user attack, session 9). Now the update is refused naming the file; a leftover tree that
// cannot be deleted is a warning naming the file, not an error that blocks the environment.
TEST_F(Installer, AnImmutableFileIsRefusedBeforeTheSwapAndALeftoverThatCannotGoIsAWarning) {
  auto v1 = make_package("p", "1", {{"share/p/f", "1\n"}});
  auto v2 = make_package("p", "2", {{"share/p/f", "2\n"}});
  ASSERT_TRUE(install_packages(prefix_, {v1}, options()).ok());
  const fs::path imm = prefix_ / "imm.txt";
  spit(imm, "keep\n");
  auto set_flag = [](const fs::path& p, bool on) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    int flags = 0;
    bool done = fd >= 0 && ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
    done = done && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    if (fd >= 0) ::close(fd);
    return done;
  };
  // Setting the flag needs CAP_LINUX_IMMUTABLE and a filesystem with inode flags (ext4, xfs,
  // btrfs; not tmpfs or overlayfs on every kernel).
  if (!set_flag(imm, true)) GTEST_SKIP() << "cannot set the immutable flag here (needs root and ext4/xfs/btrfs)";
  auto r = install_packages(prefix_, {v2}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, imm.string());
  EXPECT_EQ(r.error().message,
            "is immutable or append-only (chattr +i / +a): it cannot be carried into the updated environment, nor the "
            "previous environment deleted");
  EXPECT_EQ(r.error().detail, "nothing was installed; the environment was not changed");
  EXPECT_EQ(slurp(prefix_ / "share/p/f"), "1\n");
  EXPECT_TRUE(siblings().empty());
  // An immutable folder is refused the same way (its copy would drop the flag; session 10).
  ASSERT_TRUE(set_flag(imm, false));
  fs::create_directories(prefix_ / "ud");
  ASSERT_TRUE(set_flag(prefix_ / "ud", true));
  r = install_packages(prefix_, {v2}, options());
  ASSERT_TRUE(set_flag(prefix_ / "ud", false));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, (prefix_ / "ud").string());
  EXPECT_TRUE(siblings().empty());
  ASSERT_TRUE(set_flag(imm, true));

  // A leftover tree beside the prefix holding an immutable file: the install goes on and says so.
  const fs::path leftover = prefix_.parent_path() / ".demo.envlock-stage-1-1";
  spit(leftover / "stuck", "x\n");
  ASSERT_TRUE(set_flag(imm, false));
  ASSERT_TRUE(set_flag(leftover / "stuck", true));
  r = install_packages(prefix_, {v2}, options());
  const bool cleared = set_flag(leftover / "stuck", false);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_TRUE(cleared);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_EQ(r->warnings[0], "a tree an earlier run left could not all be deleted: " + (leftover / "stuck").string() +
                                ": cannot remove: Operation not permitted (while deleting " + leftover.string() +
                                "); " + (leftover / "stuck").string() +
                                " is immutable or append-only (lsattr shows 'i' or 'a'): as root, run `chattr -i -a` "
                                "on it, then run the command again");
  EXPECT_EQ(slurp(prefix_ / "share/p/f"), "2\n");
  EXPECT_EQ(slurp(imm), "keep\n");
}

// ---------------------------------------------------------------------------------------------
// Issue 23: scripts run as conda runs them.

TEST_F(Installer, ScriptsRunUnderBashWithCondasEnvironmentAndPostLinkIsSourced) {
  // The test checks bash -x output as conda produces it; where bash is absent envlock uses sh (tested elsewhere).
  if (::access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "bash is not installed";
  // bash syntax ([[ ]]) and a top-level `return`, as conda's own test recipe post_link-c has: it
  // works because conda sources post-link scripts inside the activated environment.
  auto p = make_package("hook", "2.1",
                        {{"bin/.hook-post-link.sh",
                          "if [[ -n \"$BASH_VERSION\" ]]; then\n"
                          "  echo \"$PKG_NAME $PKG_VERSION $PKG_BUILDNUM ${PATH%%:*} $CONDA_PREFIX $MY_VAR\" > "
                          "\"$PREFIX/marker\"\n"
                          "  return 0\n"
                          "fi\n"
                          "exit 3\n",
                          true},
                         {"bin/.hook-pre-unlink.sh", "[[ -f \"$PREFIX/marker\" ]] && echo 'bye' > \"$PREFIX/.messages.txt\"\n",
                          true}});
  // pre-link runs from the package cache before linking, SOURCE_DIR naming it.
  spit(p.extracted_dir / "bin/.hook-pre-link.sh", "[[ -d \"$SOURCE_DIR/info\" ]] || exit 4\n");
  spit(p.extracted_dir / "info/prelink_messages/note.txt", "read me\nfirst\n");
  fs::create_directories(prefix_ / "conda-meta");
  spit(prefix_ / "conda-meta/envlock", "{}\n");
  spit(prefix_ / "conda-meta/state", R"({"env_vars": {"MY_VAR": "from-state", "BAD NAME": "x"}})");
  auto r = install_packages(prefix_, {p}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string() << "\n" << r.error().detail;
  EXPECT_EQ(slurp(prefix_ / "marker"),
            "hook 2.1 0 " + (prefix_ / "bin").string() + " " + prefix_.string() + " from-state\n");
  EXPECT_EQ(r->messages, std::vector<std::string>{"hook-2.1-0: PRELINK MESSAGES\n  File note.txt:\n    read me\n    first\n"});
  EXPECT_EQ(r->warnings, std::vector<std::string>{
                             "hook-2.1-0 ran a pre-link script (it can change the package cache; conda warns about these too)"});
  auto removed = remove_environment(prefix_);
  ASSERT_TRUE(removed.ok()) << removed.error().to_string();
  EXPECT_EQ(removed->messages, std::vector<std::string>{"bye\n"});

  // A failing pre-link script stops the install before anything is linked.
  spit(p.extracted_dir / "bin/.hook-pre-link.sh", "echo no; exit 4\n");
  auto failed = install_packages(prefix_, {p}, options());
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().where, "hook-2.1-0");
  EXPECT_EQ(failed.error().message, "pre-link script exited with status 4");
  EXPECT_FALSE(fs::exists(prefix_));
  EXPECT_TRUE(install_packages(prefix_, {p}, options(RunScripts::No)).ok());
}

// ---------------------------------------------------------------------------------------------
// Issue 23: long and odd prefixes; the prefix written into the files is recorded.

TEST(Relocate, PythonShebangUsesTheExecTrampolineWhenNoShebangCanHoldThePrefix) {
  EXPECT_EQ(python_shebang("/opt/env/bin/python3.11"), "#!/opt/env/bin/python3.11\n");
  const std::string trampoline = "#!/bin/sh\n'''exec' '/opt/my env/bin/python3.11' \"$0\" \"$@\"\n' '''\n";
  EXPECT_EQ(python_shebang("/opt/my env/bin/python3.11"), trampoline);
  const std::string longest_plain = "/" + std::string(123, 'p');  // "#!" + 124 + "\n" = 127 bytes
  EXPECT_EQ(python_shebang(longest_plain), "#!" + longest_plain + "\n");
  const std::string too_long = "/" + std::string(124, 'l');  // 128 bytes
  EXPECT_EQ(python_shebang(too_long), "#!/bin/sh\n'''exec' '" + too_long + "' \"$0\" \"$@\"\n' '''\n");
  EXPECT_EQ(python_exec_trampoline("/it's"), "#!/bin/sh\n'''exec' '/it'\\''s' \"$0\" \"$@\"\n' '''\n");

  std::string script = "#!/opt/my env/bin/python3.11 -E\nprint(1)\n";
  EXPECT_TRUE(trampoline_python_shebang(script, "/opt/my env"));
  EXPECT_EQ(script, trampoline + "print(1)\n");
  std::string perl = "#!/opt/my env/bin/perl -w\nprint 1;\n";
  EXPECT_FALSE(trampoline_python_shebang(perl, "/opt/my env"));
  std::string short_one = "#!/opt/env/bin/python\n";
  EXPECT_FALSE(trampoline_python_shebang(short_one, "/opt/env"));
}

TEST_F(Installer, EntryPointsAndPythonScriptsInALongPrefixStartThePrefixPython) {
  prefix_ = root_ / "envs" / std::string(120, 'l');
  auto python = make_package("python", "3.11.7", {{"bin/python3.11", "#!/bin/sh\n", true}});
  auto pkg = make_package("demo", "1.0",
                          {{"site-packages/demo/__init__.py", "def main():\n    return 0\n"},
                           {"python-scripts/demo-tool", "#!" + kTextPh + "/bin/python3.11\nprint(1)\n", true, "text", kTextPh},
                           {"bin/perl-tool", "#!" + kTextPh + "/bin/perl -w\nprint 1;\n", true, "text", kTextPh}},
                          "python", {"demo-cli = demo:main"}, "pyh_0");
  auto r = install_packages(prefix_, {python, pkg}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const std::string head = "#!/bin/sh\n'''exec' '" + prefix_.string() + "/bin/python3.11' \"$0\" \"$@\"\n' '''\n";
  EXPECT_TRUE(slurp(prefix_ / "bin/demo-cli").starts_with(head)) << slurp(prefix_ / "bin/demo-cli");
  EXPECT_EQ(slurp(prefix_ / "bin/demo-tool"), head + "print(1)\n");
  EXPECT_EQ(slurp(prefix_ / "bin/perl-tool"), "#!/usr/bin/env perl -w\nprint 1;\n") << "conda's rule for other interpreters";
  EXPECT_TRUE(verify_prefix(prefix_)->clean());
}

TEST_F(Installer, TheWrittenPrefixIsRecordedAndAMovedPrefixIsRelinked) {
  auto p = make_package("tool", "1", {{"bin/tool", "#!/bin/sh\necho " + kTextPh + "\n", true, "text", kTextPh},
                                      {"share/data", "d\n"}});
  ASSERT_TRUE(install_packages(prefix_, {p}, options()).ok());
  EXPECT_EQ((*read_prefix_origin(prefix_))->prefix, prefix_.string());
  const fs::path moved = root_ / "envs" / "moved";
  fs::rename(prefix_, moved);
  auto r = install_packages(moved, {p}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->installed, std::vector<std::string>{"tool-1-0"}) << "relinked, not carried over";
  EXPECT_TRUE(r->kept.empty());
  EXPECT_TRUE(r->removed.empty());
  EXPECT_EQ(r->warnings, std::vector<std::string>{"the environment was moved from " + prefix_.string() +
                                                  " (recorded in conda-meta/envlock); every package is linked again for " +
                                                  moved.string()});
  EXPECT_EQ(slurp(moved / "bin/tool"), "#!/bin/sh\necho " + moved.string() + "\n");
  EXPECT_EQ((*read_prefix_origin(moved))->prefix, moved.string());
  // Twice is the same as once: now the recorded prefix is the real one and the package is kept.
  auto again = install_packages(moved, {p}, options());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->kept, std::vector<std::string>{"tool-1-0"});
  EXPECT_TRUE(again->warnings.empty());
  EXPECT_EQ(slurp(moved / "bin/tool"), "#!/bin/sh\necho " + moved.string() + "\n");
  EXPECT_TRUE(verify_prefix(moved)->clean());
}

// ---------------------------------------------------------------------------------------------
// Issue 23: never clobber what envlock did not make; dry runs.

TEST_F(Installer, ACondaEnvironmentEnvlockDidNotMakeIsRefusedUnlessForced) {
  spit(prefix_ / "conda-meta/history", "==> 2024-01-01 00:00:00 <==\n");
  spit(prefix_ / "bin/theirs", "conda's\n");
  auto p = make_package("tool", "1", {{"share/t", "t\n"}});
  auto st = check_install_prefix(prefix_);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::Io);
  EXPECT_EQ(st.error().to_string(),
            prefix_.string() + ": holds a conda environment that envlock did not make (conda-meta/ without "
                               "conda-meta/envlock)\ninstalling would replace its packages with the lockfile's and drop "
                               "the ones it lacks\nhint: choose another prefix, or pass --force to make it the lockfile's "
                               "environment");
  auto r = install_packages(prefix_, {p}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, st.error().message);
  EXPECT_FALSE(fs::exists(prefix_ / "share/t"));
  EXPECT_FALSE(fs::exists(root_ / "envs/.demo.envlock-lock")) << "refused before the lock is taken";
  auto o = options();
  o.foreign = ForeignPrefix::Allow;
  ASSERT_TRUE(check_install_prefix(prefix_, ForeignPrefix::Allow).ok());
  ASSERT_TRUE(install_packages(prefix_, {p}, o).ok());
  EXPECT_EQ(slurp(prefix_ / "bin/theirs"), "conda's\n") << "files no record owns are carried over";
  EXPECT_TRUE(check_install_prefix(prefix_).ok()) << "envlock's now";
}

TEST_F(Installer, PlanTransactionNamesAddedRemovedChangedAndUnchangedWritingNothing) {
  auto a = make_package("a", "1", {{"share/a", "a\n"}});
  auto b = make_package("b", "1", {{"share/b", "b\n"}});
  auto c1 = make_package("c", "1", {{"share/c", "1\n"}});
  auto c2 = make_package("c", "2", {{"share/c", "2\n"}});
  auto d = make_package("d", "1", {{"share/d", "d\n"}});
  auto fresh = plan_transaction(prefix_, {a.record, b.record});
  EXPECT_EQ(fresh.added, (std::vector<std::string>{"a-1-0", "b-1-0"}));
  EXPECT_TRUE(fresh.removed.empty() && fresh.changed.empty() && fresh.unchanged.empty());
  EXPECT_FALSE(fs::exists(prefix_));
  ASSERT_TRUE(install_packages(prefix_, {a, b, c1}, options()).ok());
  const auto before = slurp(prefix_ / "conda-meta/history");
  auto plan = plan_transaction(prefix_, {a.record, c2.record, d.record});
  EXPECT_EQ(plan.added, std::vector<std::string>{"d-1-0"});
  EXPECT_EQ(plan.removed, std::vector<std::string>{"b-1-0"});
  EXPECT_EQ(plan.changed, (std::vector<std::pair<std::string, std::string>>{{"c-1-0", "c-2-0"}}));
  EXPECT_EQ(plan.unchanged, std::vector<std::string>{"a-1-0"});
  EXPECT_EQ(slurp(prefix_ / "conda-meta/history"), before);

  auto dry = remove_environment(prefix_, RunScripts::Yes, DryRun::Yes);
  ASSERT_TRUE(dry.ok());
  EXPECT_EQ(dry->removed, (std::vector<std::string>{"a-1-0", "b-1-0", "c-1-0"}));
  EXPECT_TRUE(fs::exists(prefix_ / "share/a"));
  EXPECT_TRUE(siblings().empty());
}

/// The JSON of the conda-meta record of `dist` in `prefix`.
static nlohmann::json record_json(const fs::path& prefix, const std::string& dist) {
  return nlohmann::json::parse(slurp(prefix / "conda-meta" / (dist + ".json")));
}

/// `record`'s fields as the lockfile's record `r` says them (what the install writes of it).
static nlohmann::json with_fields_of(nlohmann::json record, const RepoDataRecord& r) {
  nlohmann::json fields;
  r.to_json(fields);
  for (const char* key : {"depends", "constrains", "license", "url", "channel", "size", "track_features",
                          "python_site_packages_path", "noarch"}) {
    record.erase(key);
    if (fields.contains(key)) record[key] = fields[key];
  }
  return record;
}

// The same archive (dist name and sha256) with other record fields in the lockfile — a repodata
// patch's depends and constrains, a license, a mirror's url and channel, a size (issue 23): the
// install kept the old conda-meta record, so the prefix no longer said what the lockfile says.
// It is rewritten now, whole, to the lockfile's fields, its files left as they are (the same
// inodes, paths_data kept); the dry run's preview names the fields; a second install finds
// nothing to rewrite. conda (records.py _pkey: channel, subdir, name, version, build_number,
// build) relinks a package whose channel changed and keeps the old record for a depends-only
// patch; rattler (install/transaction.rs describe_same_content) keeps the old record for any
// record-only change and rewrites only requested_specs (installer/mod.rs
// update_existing_records); envlock rewrites every record-only field, as rattler rewrites
// requested_specs.
TEST_F(Installer, ARecordOnlyChangeRewritesTheRecordAndKeepsTheFiles) {
  auto a = make_package("a", "1", {{"share/a.txt", "a\n"}, {"bin/a", "#!/bin/sh\necho " + kTextPh + "\n", true, "text", kTextPh}});
  auto b = make_package("b", "1", {{"share/b.txt", "b\n"}});
  ASSERT_TRUE(install_packages(prefix_, {a, b}, options()).ok());
  const nlohmann::json before = record_json(prefix_, "a-1-0");
  struct stat data_before {}, script_before {};
  ASSERT_EQ(::stat((prefix_ / "share/a.txt").c_str(), &data_before), 0);
  ASSERT_EQ(::stat((prefix_ / "bin/a").c_str(), &script_before), 0);

  auto patched = a;
  patched.record.depends = {"libzlib >=1.3,<2.0a0"};
  patched.record.constrains = {"b >=1"};
  patched.record.license = "MIT";
  patched.record.size = 4096;
  patched.record.channel = "https://mirror.example/conda-forge";
  patched.record.url = "https://mirror.example/conda-forge/linux-64/a-1-0.conda";
  auto preview = preview_install(prefix_, {patched, b});
  ASSERT_TRUE(preview.ok()) << preview.error().to_string();
  EXPECT_EQ(preview->relinked, std::vector<std::string>{});
  ASSERT_EQ(preview->rewritten.size(), 1u);
  EXPECT_EQ(preview->rewritten[0].dist, "a-1-0");
  EXPECT_EQ(preview->rewritten[0].fields,
            (std::vector<std::string>{"depends", "constrains", "license", "size", "url", "channel"}));
  EXPECT_EQ(plan_transaction(prefix_, {patched.record, b.record}).unchanged, (std::vector<std::string>{"a-1-0", "b-1-0"}));

  auto r = install_packages(prefix_, {patched, b}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->installed, std::vector<std::string>{});
  EXPECT_EQ(r->kept, (std::vector<std::string>{"a-1-0", "b-1-0"}));
  EXPECT_EQ(r->rewritten, std::vector<std::string>{"a-1-0"});
  EXPECT_EQ(r->removed, std::vector<std::string>{});
  EXPECT_EQ(r->files_linked + r->files_copied, 0u) << "nothing is linked again";
  EXPECT_EQ(record_json(prefix_, "a-1-0"), with_fields_of(before, patched.record));
  struct stat data_after {}, script_after {};
  ASSERT_EQ(::stat((prefix_ / "share/a.txt").c_str(), &data_after), 0);
  ASSERT_EQ(::stat((prefix_ / "bin/a").c_str(), &script_after), 0);
  EXPECT_EQ(data_after.st_ino, data_before.st_ino);
  EXPECT_EQ(script_after.st_ino, script_before.st_ino) << "the relocated copy is carried, not written again";
  EXPECT_TRUE(verify_prefix(prefix_)->clean());

  auto again = install_packages(prefix_, {patched, b}, options());
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(again->rewritten, std::vector<std::string>{});
  auto preview_again = preview_install(prefix_, {patched, b});
  ASSERT_TRUE(preview_again.ok());
  EXPECT_TRUE(preview_again->rewritten.empty());
}

// A record rewrite is part of the transaction: when the install fails after it (a new package's
// post-link script exits 3), the previous tree is swapped back and the old record is there,
// byte for byte.
TEST_F(Installer, ARecordRewriteIsRolledBackWithTheInstallThatFails) {
  auto a = make_package("a", "1", {{"share/a.txt", "a\n"}});
  ASSERT_TRUE(install_packages(prefix_, {a}, options()).ok());
  const std::string before = slurp(prefix_ / "conda-meta/a-1-0.json");
  auto patched = a;
  patched.record.depends = {"python >=3.9"};
  auto bad = make_package("broken", "1", {{"bin/.broken-post-link.sh", "exit 3\n", true}});
  auto r = install_packages(prefix_, {patched, bad}, options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(slurp(prefix_ / "conda-meta/a-1-0.json"), before);
  EXPECT_FALSE(fs::exists(prefix_ / "conda-meta/broken-1-0.json"));
  EXPECT_TRUE(siblings().empty());
}

// A field that steers where files go is no record-only change: a noarch: python package whose
// python places site-packages elsewhere now (CEP-17 python_site_packages_path added to python's
// record, the same python archive) is linked again into the new folder, and python's own record
// is rewritten; a package whose `noarch` changed is linked again too. conda
// (core/solve.py diff_for_unlink_link_precs) and rattler (install/transaction.rs, Reinstall)
// relink noarch: python packages when python's X.Y changes; another X.Y relinks them here too.
TEST_F(Installer, AChangedPlacementLinksThePackageAgainInItsNewPlace) {
  auto python = make_package("python", "3.13.0", {{"bin/python3.13", "#!/bin/sh\n", true}});
  auto demo = make_package("demo", "1.0", {{"site-packages/demo/__init__.py", "x = 1\n"}}, "python", {}, "pyh_0");
  auto gen = make_package("gen", "1", {{"share/gen.txt", "g\n"}});
  ASSERT_TRUE(install_packages(prefix_, {python, demo, gen}, options()).ok());
  ASSERT_TRUE(fs::exists(prefix_ / "lib/python3.13/site-packages/demo/__init__.py"));

  auto free_threaded = python;
  free_threaded.record.python_site_packages_path = "lib/python3.13t/site-packages";
  auto generic = gen;
  generic.record.noarch = NoArchKind::Generic;
  auto preview = preview_install(prefix_, {free_threaded, demo, generic});
  ASSERT_TRUE(preview.ok()) << preview.error().to_string();
  EXPECT_EQ(preview->relinked, (std::vector<std::string>{"demo-1.0-pyh_0", "gen-1-0"}));
  ASSERT_EQ(preview->rewritten.size(), 1u);
  EXPECT_EQ(preview->rewritten[0].dist, "python-3.13.0-0");
  EXPECT_EQ(preview->rewritten[0].fields, std::vector<std::string>{"python_site_packages_path"});

  auto r = install_packages(prefix_, {free_threaded, demo, generic}, options());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->installed, (std::vector<std::string>{"demo-1.0-pyh_0", "gen-1-0"}));
  EXPECT_EQ(r->kept, std::vector<std::string>{"python-3.13.0-0"});
  EXPECT_EQ(r->rewritten, std::vector<std::string>{"python-3.13.0-0"});
  EXPECT_EQ(r->removed, std::vector<std::string>{}) << "linked again, not removed";
  EXPECT_EQ(slurp(prefix_ / "lib/python3.13t/site-packages/demo/__init__.py"), "x = 1\n");
  EXPECT_FALSE(fs::exists(prefix_ / "lib/python3.13/site-packages/demo"));
  EXPECT_EQ(record_json(prefix_, "python-3.13.0-0")["python_site_packages_path"], "lib/python3.13t/site-packages");
  EXPECT_EQ(record_json(prefix_, "gen-1-0")["noarch"], "generic");
  EXPECT_EQ(record_json(prefix_, "demo-1.0-pyh_0")["files"],
            nlohmann::json::array({"lib/python3.13t/site-packages/demo/__init__.py"}));
  EXPECT_TRUE(verify_prefix(prefix_)->clean());

  // Another X.Y of python (a new python archive) moves them again.
  auto newer = make_package("python", "3.14.0", {{"bin/python3.14", "#!/bin/sh\n", true}});
  auto up = install_packages(prefix_, {newer, demo, generic}, options());
  ASSERT_TRUE(up.ok()) << up.error().to_string();
  EXPECT_EQ(up->installed, (std::vector<std::string>{"demo-1.0-pyh_0", "python-3.14.0-0"}));
  EXPECT_EQ(up->kept, std::vector<std::string>{"gen-1-0"});
  EXPECT_EQ(up->removed, std::vector<std::string>{"python-3.13.0-0"});
  EXPECT_EQ(slurp(prefix_ / "lib/python3.14/site-packages/demo/__init__.py"), "x = 1\n");
  EXPECT_FALSE(fs::exists(prefix_ / "lib/python3.13t"));
  EXPECT_TRUE(verify_prefix(prefix_)->clean());
}

// A dry run decides from the package cache as it is (issue 23): whether a clobber's loser is
// linked again when its winner goes needs the loser's paths.json, and whether a package to link
// takes the path over needs that package's. The preview kept a loser that was not in the cache
// (the install, which fetches it, linked it again) and relinked one whose path a package to link,
// not in the cache, has (the install kept it). Such a package is `undecided` now; where the cache
// holds what it takes, or no path is left open, the preview decides as the install does.
TEST_F(Installer, APreviewThatCannotDecideAClobberLosersFateFromTheCacheSaysSo) {
  auto a = make_package("a", "1", {{"share/common.txt", "from a\n"}, {"share/a.txt", "a\n"}});
  auto b = make_package("b", "1", {{"share/common.txt", "from b\n"}});
  auto c = make_package("c", "1", {{"share/common.txt", "from c\n"}, {"share/c.txt", "c\n"}});
  ASSERT_TRUE(install_packages(prefix_, {a, b}, options()).ok());
  ASSERT_EQ(slurp(prefix_ / "share/common.txt"), "from b\n");
  auto uncached = [](PackageToLink p) {
    p.extracted_dir.clear();
    p.archive_path.clear();
    return p;
  };
  struct Case {
    std::string what;
    std::vector<PackageToLink> preview;
    std::vector<std::string> relinked, undecided;
  };
  const std::vector<Case> cases = {
      {"the loser in the cache, b goes: relinked", {a}, {"a-1-0"}, {}},
      {"the loser not in the cache, b goes: undecided", {uncached(a)}, {}, {"a-1-0"}},
      {"the loser in the cache, c (not in it) may take the path: undecided", {a, uncached(c)}, {}, {"a-1-0"}},
      {"both in the cache: c takes the path, a is kept", {a, c}, {}, {}},
      {"the loser not in the cache, c (in it) takes the only path b had: kept", {uncached(a), c}, {}, {}},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.what);
    auto preview = preview_install(prefix_, k.preview);
    ASSERT_TRUE(preview.ok()) << preview.error().to_string();
    EXPECT_EQ(preview->relinked, k.relinked);
    EXPECT_EQ(preview->undecided, k.undecided);
  }
  // What the install does in the undecided cases, with every package in the cache.
  auto with_c = install_packages(prefix_, {a, c}, options());
  ASSERT_TRUE(with_c.ok()) << with_c.error().to_string();
  EXPECT_EQ(with_c->kept, std::vector<std::string>{"a-1-0"});
  EXPECT_EQ(with_c->installed, std::vector<std::string>{"c-1-0"});
  EXPECT_EQ(slurp(prefix_ / "share/common.txt"), "from c\n");
  ASSERT_TRUE(remove_environment(prefix_).ok());
  ASSERT_TRUE(install_packages(prefix_, {a, b}, options()).ok());
  auto only_a = install_packages(prefix_, {a}, options());
  ASSERT_TRUE(only_a.ok()) << only_a.error().to_string();
  EXPECT_EQ(only_a->installed, std::vector<std::string>{"a-1-0"});
  EXPECT_EQ(slurp(prefix_ / "share/common.txt"), "from a\n");
}
