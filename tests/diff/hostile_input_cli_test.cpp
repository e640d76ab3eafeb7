// `envlock diff` and `envlock show` on hostile input (a new user's attack, issue 17): a swapped pip
// archive, a YAML alias bomb, a REV:PATH that is a git option, fields `show` left out, changes
// that were "no changes", FIFOs and devices in a prefix, Markdown injection for a PR comment,
// invisible bidi characters and package names no installer writes. Exit codes and whole outputs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "envlock/diff.hpp"
#include "envlock/text.hpp"
#include "support/run_command.hpp"

namespace fs = std::filesystem;
using envlock::testing::envlock_cmd;
using envlock::testing::run_command;

namespace {

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("envlock-hostile-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& text) const {
    fs::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name, std::ios::binary) << text;
    return path_ / name;
  }

 private:
  fs::path path_;
  static inline int counter_ = 0;
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// A conda-lock v1 file with one conda record and one pip entry, as conda-lock writes them (the
// shape of the corpus's conda__conda-lock tests__test-install-with-pip-deps__conda-lock.yml).
const std::string kCertifiUrl =
    "https://files.pythonhosted.org/packages/4c/dd/2234eab22353ffc7d94e8d13177aaa050113286e93e7b40eae01fbf7c3d9/"
    "certifi-2023.7.22-py3-none-any.whl";
const std::string kCertifiSha = "92d6037539857d8206b8f6ae472e8b77db8058fec5937a1ef3f54304089edbb9";
const std::string kZlibSha = "5d7c0e5f0005f74112a34a7425179f4eb6e73c92f5d109e6af4ddeca407c92ab";
const std::string kZlibMd5 = "c9f075ab2f33b3bbee9e62d4ad0a6cd8";

const std::string kCondaLock = "version: 1\n"
                               "metadata:\n"
                               "  content_hash:\n"
                               "    linux-64: 0000\n"
                               "  channels:\n"
                               "  - url: conda-forge\n"
                               "    used_env_vars: []\n"
                               "  platforms:\n"
                               "  - linux-64\n"
                               "  sources:\n"
                               "  - environment.yml\n"
                               "package:\n"
                               "- name: zlib\n"
                               "  version: 1.3.1\n"
                               "  manager: conda\n"
                               "  platform: linux-64\n"
                               "  dependencies:\n"
                               "    libgcc: '>=13'\n"
                               "  url: https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda\n"
                               "  hash:\n"
                               "    md5: " + kZlibMd5 + "\n"
                               "    sha256: " + kZlibSha + "\n"
                               "  category: main\n"
                               "  optional: false\n"
                               "- name: certifi\n"
                               "  version: 2023.7.22\n"
                               "  manager: pip\n"
                               "  platform: linux-64\n"
                               "  dependencies: {}\n"
                               "  url: " + kCertifiUrl + "\n"
                               "  hash:\n"
                               "    sha256: " + kCertifiSha + "\n"
                               "  category: main\n"
                               "  optional: false\n";

std::string header(const fs::path& a, const fs::path& b) {
  return "old: " + a.string() + " (conda-lock v1)\nnew: " + b.string() + " (conda-lock v1)\n\n";
}

const std::string kPad(34, ' ');  // the text renderer's column of notes

// An envlock.lock down to its one platform's channels; packages and pip follow.
const std::string kEnvlockLockHead = "version: 1\n"
                                     "environments:\n"
                                     "  default:\n"
                                     "    platforms:\n"
                                     "      linux-64:\n"
                                     "        channels: [\"https://conda.anaconda.org/conda-forge\"]\n";

}  // namespace

// The archive behind a pip pin swapped: the same wheel file name and version under another host
// with another sha256. PyPI never serves two files of one name, so this is hash-changed (a red
// flag) and channel-changed, as the same change of a conda record is; the CI gate of docs/review.md
// fails. Another host with the same sha256 is channel-changed, as for conda.
TEST(HostileInput, ASwappedPipArchiveIsAHashChangeAndAnotherHostAChannelChange) {
  TempDir dir;
  const auto a = dir.write("a.yml", kCondaLock);
  const auto swap = dir.write("swap.yml", replace_all(replace_all(kCondaLock, kCertifiUrl, "https://evil.example.com/certifi-2023.7.22-py3-none-any.whl"),
                                                      kCertifiSha, std::string(64, '0')));
  auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(swap) + " --fail-on downgraded,re-uploaded,hash-changed,variant-switch");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "1 change: 1 hash-changed; size unknown; 1 red flag\n" + header(a, swap) +
                       "default / linux-64: 1 change, size unknown (2 -> 2 packages)\n"
                       "  ! hash-changed+channel-changed  pypi:certifi  2023.7.22 -> 2023.7.22\n" +
                       kPad + "index host https://files.pythonhosted.org -> https://evil.example.com\n" + kPad +
                       "same file certifi-2023.7.22-py3-none-any.whl, sha256 92d603753985… -> 000000000000…\n");
  EXPECT_EQ(r.err, "envlock diff: failing on 1 change (1 hash-changed) (--fail-on downgraded,re-uploaded,hash-changed,variant-switch)\n");

  const auto moved = dir.write("moved.yml", replace_all(kCondaLock, kCertifiUrl, "https://mirror.example.com/certifi-2023.7.22-py3-none-any.whl"));
  r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(moved) + " --fail-on channel-changed");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "1 change: 1 channel-changed; size unknown\n" + header(a, moved) +
                       "default / linux-64: 1 change, size unknown (2 -> 2 packages)\n"
                       "    channel-changed               pypi:certifi  2023.7.22 -> 2023.7.22\n" +
                       kPad + "index host https://files.pythonhosted.org -> https://mirror.example.com\n");
  EXPECT_EQ(r.err, "envlock diff: failing on 1 change (1 channel-changed) (--fail-on channel-changed)\n");
}

// Nine levels of ten aliases (6 KB) would expand to 10^9 nodes: refused at once, exit 2, at the
// alias that goes past the budget, by every YAML reader (conda-lock here, envlock.lock, a snapshot).
TEST(HostileInput, AYamlAliasBombIsRefusedAtItsLineAtOnce) {
  TempDir dir;
  std::string bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? "," : "") + "*" + static_cast<char>(c - 1);
    bomb += "]\n";
  }
  const auto lock = dir.write("bomb-conda-lock.yml", replace_all(kCondaLock, "metadata:\n", bomb + "metadata:\n"));
  const auto start = std::chrono::steady_clock::now();
  auto r = run_command(envlock_cmd() + " show " + q(lock));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));  // not minutes of expansion
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  // The alias past the budget: the first of line 7 (`h: &h [*g,...]`, 10^7 nodes).
  auto refused = [](const fs::path& file) {
    return "error: " + file.string() +
           ":7:29: YAML aliases expand the document by more than 1000000 nodes (an alias bomb); the file is not read\n"
           "hint: lockfiles, manifests and snapshots need no aliases this large: regenerate the file with the tool that wrote it\n";
  };
  EXPECT_EQ(r.err, refused(lock));
  const auto own = dir.write("envlock.lock", "version: 1\n" + bomb + "environments: {}\n");
  r = run_command(envlock_cmd() + " diff " + q(own) + " " + q(own) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, refused(own));
  // A few aliases that expand to little are YAML like any other.
  const auto small = dir.write("small-conda-lock.yml", replace_all(kCondaLock, "  - environment.yml\n", "  - &src environment.yml\n  - *src\n"));
  r = run_command(envlock_cmd() + " diff " + q(small) + " " + q(small) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// A REV beginning with '-' would reach git as an option (`--output=FILE:x` writes FILE): refused,
// exit 2, nothing written; git is run with --end-of-options besides.
TEST(HostileInput, ARevisionThatIsAnOptionIsRefusedAndWritesNothing) {
  TempDir dir;
  const auto a = dir.write("a.yml", kCondaLock);
  ASSERT_EQ(run_command("cd " + q(dir.path()) + " && git -c init.defaultBranch=main init -q . && git add a.yml && "
                        "git -c user.name=t -c user.email=t@example.invalid commit -q -m one").exit_code, 0);
  const fs::path victim = dir.path() / "victim";
  for (const std::string& cmd : {" diff -- '--output=" + victim.string() + ":x' a.yml", " show -- '--output=" + victim.string() + ":x'"}) {
    auto r = run_command("cd " + q(dir.path()) + " && " + envlock_cmd() + cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "error: --output=" + victim.string() + ":x: '--output=" + victim.string() +
                         "' is not a git revision: a revision never starts with '-'\n"
                         "hint: name a revision such as HEAD~1:conda-lock.yml; a file whose name starts with '-' is read as ./NAME\n");
    EXPECT_FALSE(fs::exists(victim.string() + ":x")) << cmd;
  }
  auto r = run_command("cd " + q(dir.path()) + " && " + envlock_cmd() + " diff HEAD:a.yml a.yml --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.err;  // an ordinary revision still reads
}

// Attack 20 D1: a pull request committing a file named `origin/main:envlock.lock` made the
// documented CI gate `envlock diff origin/main:envlock.lock envlock.lock --fail-on any` compare the
// PR's file with itself. Following git (`git show X` refuses an X that is both a revision and a
// file: "ambiguous argument ... both revision and filename"), such an argument is refused, exit 2;
// `./NAME` reads the file, and a REV git does not resolve leaves the name a plain file.
TEST(HostileInput, AFileNamedLikeRevPathIsAmbiguous) {
  TempDir dir;
  const auto a = dir.write("a.yml", kCondaLock);
  ASSERT_EQ(run_command("cd " + q(dir.path()) + " && git -c init.defaultBranch=main init -q . && git add a.yml && "
                        "git -c user.name=t -c user.email=t@example.invalid commit -q -m one").exit_code, 0);
  dir.write("HEAD:a.yml", replace_all(kCondaLock, "1.3.1", "1.3.2"));
  dir.write("nope:a.yml", kCondaLock);
  const std::string cd = "cd " + q(dir.path()) + " && ";
  for (const std::string& cmd : {std::string(" diff HEAD:a.yml a.yml --fail-on any"), std::string(" show HEAD:a.yml")}) {
    auto r = run_command(cd + envlock_cmd() + cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_EQ(r.out, "") << cmd;
    EXPECT_EQ(r.err, "error: HEAD:a.yml: ambiguous: both a file in the working tree and revision 'HEAD' of git\n"
                     "hint: write ./HEAD:a.yml for the file, or remove the file to read it from git (as git asks for '--')\n")
        << cmd;
  }
  auto r = run_command(cd + envlock_cmd() + " diff ./HEAD:a.yml a.yml --fail-on any");
  EXPECT_EQ(r.exit_code, 1) << r.err;  // the file, which differs
  EXPECT_EQ(r.err, "envlock diff: failing on 1 change (1 downgraded) (--fail-on any)\n");
  r = run_command(cd + envlock_cmd() + " diff nope:a.yml a.yml --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.err;  // no revision 'nope': the file
  EXPECT_EQ(r.err, "");
  fs::remove(dir.path() / "HEAD:a.yml");
  r = run_command(cd + envlock_cmd() + " diff HEAD:a.yml a.yml --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.err;  // git's copy
  EXPECT_EQ(r.err, "");
}

// `envlock show` (git's textconv) prints every field that changes what is installed, so a change of
// one is a line in `git diff`: md5, depends, conda-lock category and optional; pip VCS commit,
// editable flag (an envlock.lock pip entry).
TEST(HostileInput, ShowPrintsEveryInstallingField) {
  TempDir dir;
  const auto a = dir.write("a.yml", replace_all(replace_all(kCondaLock, "    libgcc: '>=13'\n", "    libgcc: '>=13'\n    evil: '*'\n"),
                                                "  category: main\n  optional: false\n- name: certifi",
                                                "  category: main\n  optional: true\n- name: certifi"));
  auto r = run_command(envlock_cmd() + " show " + q(a));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "default/linux-64  channel conda-forge\n"
                   "default/linux-64 zlib 1.3.1 hb9d3cd8_2 https://conda.anaconda.org/conda-forge sha256:" + kZlibSha + "\n"
                   "default/linux-64 zlib  md5 " + kZlibMd5 + "\n"
                   "default/linux-64 zlib  depends evil *\n"
                   "default/linux-64 zlib  depends libgcc >=13\n"
                   "default/linux-64 zlib  category main;optional\n"
                   "default/linux-64 pypi:certifi 2023.7.22 " + kCertifiUrl + " sha256:" + kCertifiSha + "\n");
  EXPECT_EQ(r.err, "");
  const auto own = dir.write("envlock.lock",
                             kEnvlockLockHead +
                             "        packages: []\n"
                             "        pip:\n"
                             "          - name: detectron2\n"
                             "            version: \"0.6\"\n"
                             "            requirement: \"detectron2 @ git+https://github.com/facebookresearch/detectron2.git@cafebabe\"\n"
                             "          - name: mylib\n"
                             "            version: \"0.1\"\n"
                             "            url: \"file:///src/mylib\"\n"
                             "            editable: true\n");
  r = run_command(envlock_cmd() + " show " + q(own));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "default/linux-64  channel https://conda.anaconda.org/conda-forge\n"
                   "default/linux-64 pypi:detectron2 0.6 - -\n"
                   "default/linux-64 pypi:detectron2  source vcs git+https://github.com/facebookresearch/detectron2.git@cafebabe\n"
                   "default/linux-64 pypi:detectron2  requirement detectron2 @ git+https://github.com/facebookresearch/detectron2.git@cafebabe\n"
                   "default/linux-64 pypi:mylib 0.1 file:///src/mylib -\n"
                   "default/linux-64 pypi:mylib  source editable file:///src/mylib\n"
                   "default/linux-64 pypi:mylib  editable\n");
  EXPECT_EQ(r.err, "");
}

// An md5 that changed under the same sha256, and a conda-lock category or optional flag that
// changed, were "no changes": one hash is wrong (an md5-checking installer refuses the pin), and
// `conda-lock install --no-dev` leaves the record out.
TEST(HostileInput, Md5AndCategoryChangesAreChanges) {
  TempDir dir;
  const auto a = dir.write("a.yml", kCondaLock);
  const auto md5 = dir.write("md5.yml", replace_all(kCondaLock, kZlibMd5, std::string(32, '0')));
  auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(md5) + " --fail-on hash-changed");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "1 change: 1 hash-changed; size unknown; 1 red flag\n" + header(a, md5) +
                       "default / linux-64: 1 change, size unknown (2 -> 2 packages)\n"
                       "  ! hash-changed                  zlib  1.3.1 hb9d3cd8_2 -> 1.3.1 hb9d3cd8_2\n" +
                       kPad + "md5 " + kZlibMd5 + " -> " + std::string(32, '0') +
                       " with the same sha256: one of the two hashes is wrong\n" + kPad + "pulled by: zlib\n");
  EXPECT_EQ(r.err, "envlock diff: failing on 1 change (1 hash-changed) (--fail-on hash-changed)\n");
  const auto dev = dir.write("dev.yml", replace_all(kCondaLock, "  category: main\n  optional: false\n- name: certifi",
                                                    "  category: dev\n  optional: true\n- name: certifi"));
  r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(dev) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "1 change: 1 metadata-changed; size unknown\n" + header(a, dev) +
                       "default / linux-64: 1 change, size unknown (2 -> 2 packages)\n"
                       "    metadata-changed              zlib  1.3.1 hb9d3cd8_2 -> 1.3.1 hb9d3cd8_2\n" +
                       kPad + "category main -> dev\n" + kPad + "pulled by: zlib\n");
  const auto opt = dir.write("opt.yml", replace_all(kCondaLock, "  category: main\n  optional: false\n- name: certifi",
                                                    "  category: main\n  optional: true\n- name: certifi"));
  r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(opt) + " --fail-on metadata-changed");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(kPad + "category main -> main;optional\n"), std::string::npos) << r.out;
}

namespace {

// A conda-meta record as conda writes it, without files.
std::string meta_record(const std::string& name, const std::string& version) {
  return R"({"name": ")" + name + R"(", "version": ")" + version +
         R"(", "build": "0", "build_number": 0, "subdir": "noarch", "channel": "https://conda.anaconda.org/conda-forge",
 "url": "https://conda.anaconda.org/conda-forge/noarch/)" + name + "-" + version + R"(-0.conda", "sha256": ")" +
         std::string(64, 'a') + R"(", "depends": [], "files": [], "paths_data": {"paths": [], "paths_version": 1}})";
}

}  // namespace

// A prefix is read as a lockfile would hold it, and what does not fit is named: two records of one
// package (the newest compared, as snapshot capture keeps it), a conda-meta *.json or a dist-info
// METADATA that is a FIFO or a link to /dev/zero (never opened: it would block or fill memory);
// `show /dev/zero` is exit 2; a record whose name is no conda name is refused (exit 2).
TEST(HostileInput, APrefixNamesWhatItCannotReadAndNeverBlocks) {
  TempDir dir;
  const fs::path env = dir.path() / "env";
  dir.write("env/conda-meta/hello-1.0.0-0.json", meta_record("hello", "1.0.0"));
  dir.write("env/conda-meta/hello-0.9-0.json", meta_record("hello", "0.9"));
  ASSERT_EQ(::mkfifo((env / "conda-meta/fifo-1-0.json").c_str(), 0644), 0);
  fs::create_symlink("/dev/zero", env / "conda-meta/zero-1-0.json");
  const fs::path info = env / "lib/python3.11/site-packages/x-1.0.dist-info";
  fs::create_directories(info);
  ASSERT_EQ(::mkfifo((info / "METADATA").c_str(), 0644), 0);
  const fs::path info2 = env / "lib/python3.11/site-packages/y-1.0.dist-info";
  fs::create_directories(info2);
  fs::create_symlink("/dev/zero", info2 / "direct_url.json");
  dir.write("env/lib/python3.11/site-packages/y-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: y\nVersion: 1.0\n");
  const auto lock = dir.write("hello.txt", "# platform: noarch\n@EXPLICIT\nhttps://conda.anaconda.org/conda-forge/noarch/hello-1.0.0-0.conda#" +
                                              std::string(64, 'a') + "\n");
  auto r = run_command("timeout 60 " + envlock_cmd() + " diff " + q(lock) + " " + q(env) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "no changes\nold: " + lock.string() + " (@EXPLICIT)\nnew: " + env.string() +
                       " (conda-meta prefix)\n\ndefault / noarch: no changes (1 package)\n");
  EXPECT_EQ(r.err,
            "warning: " + (env / "conda-meta/fifo-1-0.json").string() +
                ": is not a regular file (a FIFO, device, socket or broken link); not read, the package it describes is left out\n"
                "warning: " + (env / "conda-meta/zero-1-0.json").string() +
                ": is not a regular file (a FIFO, device, socket or broken link); not read, the package it describes is left out\n"
                "warning: " + (env / "conda-meta/hello-0.9-0.json").string() +
                ": a second record of package hello (0.9 0) beside hello-1.0.0-0.json; the newest is compared and this one left out "
                "(remove the stale record)\n"
                "warning: " + (info / "METADATA").string() +
                ": is not a regular file (a FIFO, device or socket), so it is not read; left out of the pip packages (a dist-info "
                "holds regular files only; reinstall the distribution)\n"
                "warning: " + (info2 / "direct_url.json").string() +
                ": is not a regular file (a FIFO, device or socket), so it is not read; left out of the pip packages (a dist-info "
                "holds regular files only; reinstall the distribution)\n");
  r = run_command(envlock_cmd() + " show /dev/zero");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: /dev/zero: is a device or socket, not a lockfile\n"
                   "hint: pass a lockfile, a prefix, '-' for standard input or REV:PATH\n");
  dir.write("env/conda-meta/evil-1-0.json", meta_record("evil|name\\n<b>", "1"));
  r = run_command("timeout 60 " + envlock_cmd() + " show " + q(env));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.substr(r.err.find("error:")), "error: " + (env / "conda-meta/evil|name\\x0a<b>-1-0.json").string() +
                                                    ": conda package name 'evil|name\\x0a<b>' is not valid\n"
                                                    "hint: a conda package name holds only letters, digits, '.', '_', '+' and '-'\n");
}

// conda-meta/envlock (which names the environment and platform) is opened only when it is a
// regular file: a FIFO there blocked `diff LOCK PREFIX` and `show PREFIX` forever (a new-user
// attack, session 10); now it is named and the prefix read without it.
TEST(HostileInput, AnEnvironmentRecordThatIsAFifoIsNamedNotOpened) {
  TempDir dir;
  const fs::path env = dir.path() / "env";
  dir.write("env/conda-meta/hello-1.0.0-0.json", meta_record("hello", "1.0.0"));
  ASSERT_EQ(::mkfifo((env / "conda-meta/envlock").c_str(), 0644), 0);
  const std::string warning = "warning: " + (env / "conda-meta/envlock").string() +
                              ": is not a regular file (a FIFO, device, socket or folder); not read, the prefix is "
                              "compared as environment 'default' on the platform of its records\n";
  auto r = run_command("timeout 60 " + envlock_cmd() + " show " + q(env));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, warning);
  EXPECT_NE(r.out.find("default/noarch hello 1.0.0 0 "), std::string::npos) << r.out;
  fs::remove(env / "conda-meta/envlock");
  fs::create_symlink("/dev/zero", env / "conda-meta/envlock");
  r = run_command("timeout 60 " + envlock_cmd() + " show " + q(env));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, warning);
}

// An envlock.lock names its packages as conda-lock's reader requires: `|`, `<>`, white space refused.
TEST(HostileInput, AnEnvlockLockWithAnInjectedNameIsRefused) {
  TempDir dir;
  const auto own = dir.write("envlock.lock",
                             kEnvlockLockHead +
                             "        packages:\n"
                             "          - name: \"envlock|greet <b>\"\n"
                             "            version: \"1.0\"\n"
                             "            build: \"0\"\n"
                             "            build_number: 0\n"
                             "            subdir: linux-64\n"
                             "            channel: \"https://conda.anaconda.org/conda-forge\"\n"
                             "            url: \"https://conda.anaconda.org/conda-forge/linux-64/x-1.0-0.conda\"\n"
                             "            sha256: \"" + std::string(64, 'a') + "\"\n"
                             "            layer: default\n");
  auto r = run_command(envlock_cmd() + " show " + q(own));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + own.string() + ":8:19: conda package name 'envlock|greet <b>' is not valid\n"
                   "            - name: \"envlock|greet <b>\"\n"
                   "                    ^\n"
                   "hint: a conda package name holds only letters, digits, '.', '_', '+' and '-'\n");
}

// A PR comment must not ping people, link or load from elsewhere, or hide text: every text from
// the input (names, versions, URLs, channels, notes, environment and platform names) is a CommonMark
// code span, where `@name` mentions nobody, `[l](...)`, `![i](...)`, `https://…` autolinks, `<b>`
// and `&amp;` are text; its fence is one backtick longer than the longest run inside (CommonMark
// 6.1: "``x`y``"), padded with a space where the text starts or ends with a backtick, and a `|`
// in a table cell is `\|` (GFM tables). A bidi override (U+202E) is shown as \u{202e} in markdown
// and text alike.
TEST(HostileInput, MarkdownIsSafeForAGithubComment) {
  TempDir dir;
  const auto a = dir.write("a.yml", kCondaLock);
  const auto b = dir.write("b.yml", replace_all(kCondaLock, "https://conda.anaconda.org/conda-forge/linux-64/zlib",
                                                "https://conda.anaconda.org/@octocat/[l](http:/e.vil)![i](http:/e.vil/p.png)<b>x</b>&amp;\u202e"
                                                "/a``b|c`/linux-64/zlib"));
  auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b) + " --format markdown");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "### envlock diff: `" + a.string() + "` → `" + b.string() + "`\n\n"
                   "**1 change: 1 channel-changed; size unknown**\n\n"
                   "| environment | platform | channel-changed | size |\n"
                   "|---|---|---:|---:|\n"
                   "| `default` | `linux-64` | 1 | unknown |\n\n"
                   "<details><summary>default / linux-64: 1 change, size unknown</summary>\n\n"
                   "| package | change | old | new | size | pulled by | notes |\n"
                   "|---|---|---|---|---:|---|---|\n"
                   "| `zlib` | channel-changed | `1.3.1 hb9d3cd8_2` | `1.3.1 hb9d3cd8_2` |  | `zlib` | ``` channel "
                   "https://conda.anaconda.org/conda-forge -> https://conda.anaconda.org/@octocat/[l](http:/e.vil)![i]"
                   "(http:/e.vil/p.png)<b>x</b>&amp;\\u{202e}/a``b\\|c` ``` |\n\n"
                   "</details>\n\n");
  EXPECT_EQ(r.err, "");
  r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("<b>x</b>&amp;\\u{202e}/a``b|c`\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\u202e"), std::string::npos);
}

// A gate's options are read strictly: an empty element (an unset CI variable inside the list), a
// kind in another case, a --max-bytes that is negative or past 2^40 are usage errors (exit 2); a
// budget below the mandatory header is said on standard error.
TEST(HostileInput, GateOptionsAreReadStrictly) {
  TempDir dir;
  const auto a = dir.write("a.yml", kCondaLock);
  const auto swap = dir.write("swap.yml", replace_all(kCondaLock, kCertifiSha, std::string(64, '0')));
  const std::string diff = envlock_cmd() + " diff " + q(a) + " " + q(a);
  auto r = run_command(diff + " --fail-on downgraded,,added");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: --fail-on: an empty element in 'downgraded,,added'\n"
                   "hint: list kinds separated by single commas, e.g. downgraded,hash-changed,variant-switch\n");
  // `host-changed` is read by the same rules: the error quotes the whole list as given.
  for (const std::string list : {"host-changed,", "host-changed,,added", ",host-changed"}) {
    r = run_command(diff + " --fail-on '" + list + "'");
    EXPECT_EQ(r.exit_code, 2) << list;
    EXPECT_EQ(r.err, "error: --fail-on: an empty element in '" + list + "'\n"
                     "hint: list kinds separated by single commas, e.g. downgraded,hash-changed,variant-switch\n");
  }
  r = run_command(diff + " --fail-on Host-Changed");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: --fail-on: unknown change kind 'Host-Changed'\n"
                   "hint: valid kinds: any, re-uploaded, hash-changed, variant-switch, added, removed, downgraded, upgraded, "
                   "rebuilt, channel-changed, host-floor-raised, source-changed, metadata-changed, license-changed, inputs-changed, "
                   "host-changed\n");
  r = run_command(diff + " --fail-on ANY");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: --fail-on: unknown change kind 'ANY'\n"
                   "hint: valid kinds: any, re-uploaded, hash-changed, variant-switch, added, removed, downgraded, upgraded, "
                   "rebuilt, channel-changed, host-floor-raised, source-changed, metadata-changed, license-changed, inputs-changed, "
                   "host-changed\n");
  r = run_command(diff + " --max-bytes -5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: diff: --max-bytes: Value -5 not in range 0 to 1099511627776\n"
                   "hint: run `envlock diff --help` for its options\n");
  r = run_command(diff + " --max-bytes 99999999999999999999");
  EXPECT_EQ(r.exit_code, 2);
  r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(swap) + " --format markdown --max-bytes 100");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "warning: the comment takes " + std::to_string(r.out.size()) +
                       " bytes, more than --max-bytes 100: its title and summary table are never left out\n");
}

// A failing gate counts changes as the summary line does (one per package), then the kinds, a
// change under its kind and each of its flags: one re-uploaded archive whose depends also changed
// is "1 change", not "failing on 1 re-uploaded, 1 metadata-changed" under a summary of 1 change.
TEST(HostileInput, AFailingGateCountsChangesAsTheSummaryDoes) {
  TempDir dir;
  const auto a = dir.write("a.yml", kCondaLock);
  const auto b = dir.write("b.yml", replace_all(replace_all(kCondaLock, kZlibSha, std::string(64, 'a')),
                                                "    libgcc: '>=13'\n", "    libgcc: '>=14'\n"));
  auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "1 change: 1 re-uploaded; size unknown; 1 red flag\n" + header(a, b) +
                       "default / linux-64: 1 change, size unknown (2 -> 2 packages)\n"
                       "  ! re-uploaded+metadata-changed  zlib  1.3.1 hb9d3cd8_2 -> 1.3.1 hb9d3cd8_2\n" +
                       kPad + "re-uploaded: same URL, sha256 5d7c0e5f0005… -> aaaaaaaaaaaa…\n" +
                       kPad + "depends -libgcc >=13 +libgcc >=14\n" +
                       kPad + "pulled by: zlib\n");
  EXPECT_EQ(r.err, "envlock diff: failing on 1 change (1 re-uploaded, 1 metadata-changed; a change counts under its kind and "
                   "each of its flags) (--fail-on any)\n");
  r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b) + " --fail-on metadata-changed,downgraded");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "envlock diff: failing on 1 change (1 metadata-changed) (--fail-on metadata-changed,downgraded)\n");
}

// Two snapshots whose packages agree but whose host moved (another OS release): `--fail-on any`
// gates packages only, as documented; `host-changed` gates the host facts too.
TEST(HostileInput, HostChangedGatesTheHostFactsOfTwoSnapshots) {
  TempDir dir;
  for (const char* v : {"12", "13"}) {
    dir.write(std::string("root") + v + "/etc/os-release",
              std::string("PRETTY_NAME=\"Debian ") + v + "\"\nID=debian\nVERSION_ID=\"" + v + "\"\n");
    auto r = run_command(envlock_cmd() + " snapshot capture --root " + q(dir.path() / (std::string("root") + v)) + " -o " +
                         q(dir.path() / (std::string("s") + v + ".yaml")));
    ASSERT_EQ(r.exit_code, 3) << r.err;  // partial: a bare tree has no kernel or glibc
  }
  const std::string diff = envlock_cmd() + " diff " + q(dir.path() / "s12.yaml") + " " + q(dir.path() / "s13.yaml");
  auto r = run_command(diff + " --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  r = run_command(diff + " --fail-on added,host-changed");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.substr(r.out.find("host facts")), "host facts of the two snapshots (2 changes):\n"
                                                     "host:\n"
                                                     "  ~ os: debian 12 -> debian 13\n"
                                                     "  ~ os pretty name: Debian 12 -> Debian 13\n");
  EXPECT_EQ(r.err, "envlock diff: failing on 2 host facts of the two snapshots (host-changed) (--fail-on added,host-changed)\n");
  r = run_command(envlock_cmd() + " diff " + q(dir.path() / "s12.yaml") + " " + q(dir.path() / "s12.yaml") + " --fail-on host-changed");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// An @EXPLICIT file is one platform's render of a lockfile: against a conda-lock.yml of several
// platforms it is compared on its own platform, not reported as every other platform removed.
TEST(HostileInput, AnExplicitRenderIsComparedOnItsOwnPlatform) {
  TempDir dir;
  std::string two = replace_all(kCondaLock, "  - linux-64\n", "  - linux-64\n  - osx-64\n");
  two += "- name: zlib\n"
         "  version: 1.3.1\n"
         "  manager: conda\n"
         "  platform: osx-64\n"
         "  dependencies: {}\n"
         "  url: https://conda.anaconda.org/conda-forge/osx-64/zlib-1.3.1-hd23fc13_2.conda\n"
         "  hash:\n"
         "    md5: " + std::string(32, '1') + "\n"
         "    sha256: " + std::string(64, '1') + "\n"
         "  category: main\n"
         "  optional: false\n";
  const auto lock = dir.write("conda-lock.yml", two);
  const auto render = dir.write("linux-64.txt", "# platform: linux-64\n@EXPLICIT\n"
                                                "https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda#" +
                                                    kZlibMd5 + "\n# pip certifi @ " + kCertifiUrl + "#sha256=" + kCertifiSha + "\n");
  auto r = run_command(envlock_cmd() + " diff " + q(lock) + " " + q(render) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "no changes\nold: " + lock.string() + " (conda-lock v1)\nnew: " + render.string() +
                       " (@EXPLICIT)\n\ndefault / linux-64: no changes (2 packages)\n");
  EXPECT_EQ(r.err, "");
}

namespace {

// A pixi.lock 6 with one conda record and one git pin, as pixi writes them (the shape of the
// corpus's prefix-dev__pixi examples: `conda:` / `pypi:` keys, hashes beside them).
const std::string kPixiLock = "version: 6\n"
                              "environments:\n"
                              "  default:\n"
                              "    channels:\n"
                              "    - url: https://conda.anaconda.org/conda-forge/\n"
                              "    packages:\n"
                              "      linux-64:\n"
                              "      - conda: https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda\n"
                              "      - pypi: git+https://github.com/acme/mylib.git?rev=main#0123456789abcdef0123456789abcdef01234567\n"
                              "packages:\n"
                              "- conda: https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda\n"
                              "  sha256: " + kZlibSha + "\n"
                              "  md5: " + kZlibMd5 + "\n"
                              "  size: 92286\n"
                              "- pypi: git+https://github.com/acme/mylib.git?rev=main#0123456789abcdef0123456789abcdef01234567\n"
                              "  name: mylib\n"
                              "  version: 0.1.0\n";

}  // namespace

// A key written twice in any map of a conda-lock.yml or pixi.lock -- a package's `hash`, a
// `metadata.channels` entry, a pixi.lock package -- is refused at the second one (exit 2), as
// duplicate `url` and top-level keys were: PyYAML (conda-lock) keeps the last value, yaml-cpp the
// first, so a second `sha256:` read as "no changes" while another archive installs (issue 17,
// findings 1 and 12).
TEST(HostileInput, ADuplicateKeyInAnyMapOfALockfileIsRefused) {
  TempDir dir;
  const auto a = dir.write("a.yml", kCondaLock);
  const std::string sha_line = "    sha256: " + kZlibSha + "\n";
  const auto dup_sha = dir.write("dupsha.yml", replace_all(kCondaLock, sha_line, sha_line + "    sha256: " + std::string(64, 'a') + "\n"));
  auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(dup_sha) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + dup_sha.string() + ":23:5: duplicate key 'sha256' in `hash` (first at " + dup_sha.string() +
                       ":22:5)\nhint: keep one of the two entries\n");
  const auto dup_md5 = dir.write("dupmd5.yml", replace_all(kCondaLock, "    md5: " + kZlibMd5 + "\n",
                                                           "    md5: " + kZlibMd5 + "\n    md5: " + std::string(32, 'b') + "\n"));
  r = run_command(envlock_cmd() + " show " + q(dup_md5));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + dup_md5.string() + ":22:5: duplicate key 'md5' in `hash` (first at " + dup_md5.string() +
                       ":21:5)\nhint: keep one of the two entries\n");
  const auto dup_channel = dir.write("dupchan.yml", replace_all(kCondaLock, "  - url: conda-forge\n    used_env_vars: []\n",
                                                                "  - url: conda-forge\n    used_env_vars: []\n    url: evilchan\n"));
  r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(dup_channel));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + dup_channel.string() + ":8:5: duplicate key 'url' in an entry of `channels` (first at " +
                       dup_channel.string() + ":6:5)\nhint: keep one of the two entries\n");

  const auto p = dir.write("pixi.lock", kPixiLock);
  r = run_command(envlock_cmd() + " diff " + q(p) + " " + q(p) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string pixi_sha = "  sha256: " + kZlibSha + "\n";
  const auto pixi_dup = dir.write("dup/pixi.lock", replace_all(kPixiLock, pixi_sha, pixi_sha + "  sha256: " + std::string(64, 'a') + "\n"));
  r = run_command(envlock_cmd() + " diff " + q(p) + " " + q(pixi_dup) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + pixi_dup.string() + ":13:3: duplicate key 'sha256' in an entry of `packages` (first at " +
                       pixi_dup.string() + ":12:3)\nhint: keep one of the two entries\n");
}

// `https://evil.example\@conda.anaconda.org/...`: WHATWG URL parsers, requests and urllib3 read
// the backslash as '/', so the download goes to evil.example; reading `evil.example\` as a user
// name (and redacting it) showed conda.anaconda.org and "no changes". A backslash in a network URL
// is refused, exit 2, the URL shown whole (issue 17, finding 2); a Windows path is not a URL.
TEST(HostileInput, ABackslashInANetworkUrlIsRefusedAndHidesNoHost) {
  TempDir dir;
  const std::string zlib = "https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda";
  const std::string evil = "https://evil.example\\@conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda";
  const auto a = dir.write("a.yml", kCondaLock);
  const auto b = dir.write("b.yml", replace_all(kCondaLock, zlib, evil));
  const std::string refused = ":13:3: package 'zlib': URL '" + evil +
                              "' holds a backslash, which downloaders read differently\n"
                              "hint: WHATWG URL parsers, requests and urllib3 read '\\' as '/' (`https://a\\@b/` is host a), "
                              "others as part of the user name; a lockfile URL never holds one: regenerate the lockfile\n";
  auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + b.string() + refused);
  r = run_command(envlock_cmd() + " show " + q(b));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + b.string() + refused);
  const auto pip = dir.write("pip.yml", replace_all(kCondaLock, kCertifiUrl, "https://evil.example\\@files.pythonhosted.org/certifi-2023.7.22-py3-none-any.whl"));
  r = run_command(envlock_cmd() + " show " + q(pip));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + pip.string() +
                       ":25:3: package 'certifi': URL 'https://evil.example\\@files.pythonhosted.org/certifi-2023.7.22-py3-none-any.whl' "
                       "holds a backslash, which downloaders read differently\n"
                       "hint: WHATWG URL parsers, requests and urllib3 read '\\' as '/' (`https://a\\@b/` is host a), "
                       "others as part of the user name; a lockfile URL never holds one: regenerate the lockfile\n");
}

// Finding H3: a pip package's subdirectory (PEP 610 `subdirectory`, pip's `#subdirectory=`
// fragment, pixi's `?subdirectory=` query: crates/pixi_record/src/pinned_source.rs
// `into_locked_git_url`) names another project of one repository: another one is a source
// change, as pixi's GitSubdirectoryMismatch says; `show` prints it.
TEST(HostileInput, AnotherPipSubdirectoryIsASourceChange) {
  TempDir dir;
  auto lock = [&](const std::string& name, const std::string& requirement) {
    return dir.write(name, kEnvlockLockHead +
                               "        packages: []\n"
                               "        pip:\n"
                               "          - name: tool\n"
                               "            version: \"0.1\"\n"
                               "            requirement: \"" + requirement + "\"\n");
  };
  const std::string repo = "tool @ git+https://github.com/acme/mono.git@cafebabe";
  const auto a = lock("a/envlock.lock", repo + "#subdirectory=tool");
  const auto b = lock("b/envlock.lock", repo + "#egg=tool&subdirectory=evil");
  auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b) + " --fail-on source-changed");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "1 change: 1 source-changed; size unknown\n"
                   "old: " + a.string() + " (envlock.lock v1)\nnew: " + b.string() + " (envlock.lock v1)\n\n"
                   "default / linux-64: 1 change, size unknown (1 -> 1 packages)\n"
                   "    source-changed                pypi:tool  0.1 -> 0.1\n" + kPad +
                   "source vcs git+https://github.com/acme/mono.git@cafebabe#subdirectory=tool -> "
                   "vcs git+https://github.com/acme/mono.git@cafebabe#subdirectory=evil\n");
  EXPECT_EQ(r.err, "envlock diff: failing on 1 change (1 source-changed) (--fail-on source-changed)\n");
  // pixi's query spelling of the same subdirectory is the same source.
  const auto pixi = lock("c/envlock.lock", "tool @ git+https://github.com/acme/mono.git?subdirectory=tool#cafebabe");
  r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(pixi) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = run_command(envlock_cmd() + " show " + q(b));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "default/linux-64  channel https://conda.anaconda.org/conda-forge\n"
                   "default/linux-64 pypi:tool 0.1 - -\n"
                   "default/linux-64 pypi:tool  source vcs git+https://github.com/acme/mono.git@cafebabe#subdirectory=evil\n"
                   "default/linux-64 pypi:tool  requirement " + repo + "#egg=tool&subdirectory=evil\n");
  EXPECT_EQ(r.err, "");
}

// H3 on installed prefixes: a PEP 610 direct_url.json's top-level `subdirectory` is read, so two
// prefixes with the same repository and commit but another subdirectory differ.
TEST(HostileInput, AnInstalledPipSubdirectoryIsReadAndCompared) {
  TempDir dir;
  auto prefix = [&](const std::string& name, const std::string& subdirectory) {
    const std::string info = name + "/lib/python3.11/site-packages/tool-0.1.dist-info/";
    dir.write(name + "/conda-meta/history", "");
    dir.write(info + "METADATA", "Metadata-Version: 2.1\nName: tool\nVersion: 0.1\n");
    dir.write(info + "INSTALLER", "pip\n");
    dir.write(info + "direct_url.json", R"({"url": "https://github.com/acme/mono.git", "subdirectory": ")" + subdirectory +
                                            R"(", "vcs_info": {"vcs": "git", "commit_id": "cafebabe"}})");
    return dir.path() / name;
  };
  const auto a = prefix("a", "tool"), b = prefix("b", "evil");
  auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b) + " --fail-on source-changed");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "1 change: 1 source-changed; size unknown\n"
                   "old: " + a.string() + " (conda-meta prefix)\nnew: " + b.string() + " (conda-meta prefix)\n\n"
                   "default / noarch: 1 change, size unknown (1 -> 1 packages)\n"
                   "    source-changed                pypi:tool  0.1 -> 0.1\n" + kPad +
                   "source vcs git+https://github.com/acme/mono.git@cafebabe#subdirectory=tool -> "
                   "vcs git+https://github.com/acme/mono.git@cafebabe#subdirectory=evil\n");
  EXPECT_EQ(r.err, "envlock diff: failing on 1 change (1 source-changed) (--fail-on source-changed)\n");
}

// Finding M8: a comment over its budget keeps a re-uploaded record (same URL, another sha256)
// before a downgrade (and a hash-changed one likewise): the pin no longer names one file, as the
// text report and the primary kind order already say. Before, the downgrade was kept instead.
TEST(HostileInput, ABudgetKeepsReUploadsFirst) {
  TempDir dir;
  dir.write("a.yml", kCondaLock);
  // zlib re-uploaded; certifi downgraded.
  dir.write("b.yml", replace_all(replace_all(kCondaLock, kZlibSha, std::string(64, 'f')), "2023.7.22", "2022.12.7"));
  auto r = run_command("cd " + q(dir.path()) + " && " + envlock_cmd() + " diff a.yml b.yml --format markdown --max-bytes 800");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
                   "### envlock diff: `a.yml` → `b.yml`\n"
                   "\n"
                   "**2 changes: 1 re-uploaded, 1 downgraded; size unknown; 2 red flags**\n"
                   "\n"
                   "| environment | platform | re-uploaded | downgraded | size |\n"
                   "|---|---|---:|---:|---:|\n"
                   "| `default` | `linux-64` | 1 | 1 | unknown |\n"
                   "\n"
                   "#### Most important changes\n"
                   "\n"
                   "| environment / platform | package | change | old | new | size | pulled by | notes |\n"
                   "|---|---|---|---|---|---:|---|---|\n"
                   "| `default` / `linux-64` | `zlib` | :warning: re-uploaded | `1.3.1 hb9d3cd8_2` | `1.3.1 hb9d3cd8_2` |  | `zlib` | `re-uploaded: same URL, sha256 5d7c0e5f0005… -> ffffffffffff…` |\n"
                   "\n"
                   "**1 more change not shown** (1 downgraded) to keep this comment within 800 bytes; `envlock diff OLD NEW` (text, or `--format json`) lists every change, and `--max-bytes` sets the budget.\n");
  EXPECT_EQ(r.err, "");
}

// Finding M9: an endless standard input (`envlock show - </dev/zero`) ran forever, and a file of
// GBs cost GBs of memory: every input of diff and show is read up to 64 MiB (as a dist-info's
// metadata files), then refused, exit 2, naming it and what to do.
TEST(HostileInput, AnEndlessOrHugeInputIsRefusedAt64MiB) {
  TempDir dir;
  const std::string hint = "hint: check that this is the lockfile meant (a lockfile is a few MB); envlock diff and show read at most 64 MiB of one input\n";
  const auto start = std::chrono::steady_clock::now();
  auto r = run_command(envlock_cmd() + " show - </dev/zero");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: <stdin>: is larger than 64 MiB, more than any lockfile; it is not read\n" + hint);
  const auto a = dir.write("a.yml", kCondaLock);
  r = run_command(envlock_cmd() + " diff - " + q(a) + " --fail-on any </dev/zero");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: <stdin>: is larger than 64 MiB, more than any lockfile; it is not read\n" + hint);
  // A file one byte past the cap, read by diff and by show (which reads channels as written).
  const fs::path big = dir.path() / "big.yml";
  fs::resize_file(dir.write("big.yml", ""), (64u << 20) + 1);
  for (const std::string& cmd : {" diff " + q(big) + " " + q(a), " show " + q(big)}) {
    r = run_command(envlock_cmd() + cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_EQ(r.out, "") << cmd;
    EXPECT_EQ(r.err, "error: " + big.string() + ": is larger than 64 MiB, more than any lockfile; it is not read\n" + hint) << cmd;
  }
  // install (Lockfile::read) had a cap of its own, 512 MiB: one value now, kMaxLockfileBytes
  // (envlock/lockfile.hpp), so what `show` refuses `install` refuses too; exit 1, a bad lockfile.
  r = run_command(envlock_cmd() + " install -l " + q(big) + " -p " + q(dir.path() / "env"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + big.string() + ": is larger than 64 MiB, more than any lockfile; it is not read\n"
                   "hint: check that this is the lockfile meant (a lockfile is a few MB); envlock reads at most 64 MiB of one lockfile\n");
  EXPECT_FALSE(fs::exists(dir.path() / "env"));
  // `REV:PATH`, read through `git show`, was captured whole: git is stopped at the cap and the
  // input refused the same way, named as given.
  const std::string git = "cd " + q(dir.path()) +
                          " && git -c init.defaultBranch=main init -q . && git add big.yml && "
                          "git -c user.name=t -c user.email=t@example.invalid commit -q -m big";
  ASSERT_EQ(run_command(git).exit_code, 0);
  for (const std::string& cmd : {" diff HEAD:big.yml " + q(a) + " --fail-on any", std::string(" show HEAD:big.yml")}) {
    r = run_command("cd " + q(dir.path()) + " && " + envlock_cmd() + cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_EQ(r.out, "") << cmd;
    EXPECT_EQ(r.err, "error: HEAD:big.yml: is larger than 64 MiB, more than any lockfile; it is not read\n" + hint) << cmd;
  }
}

// Finding M4: a record whose `version:` or `build:` disagrees with the archive its URL names was
// read silently, so `show` and `diff` printed one package while `install` downloads another (a
// conda-lock 1.3.1 entry for the zlib-1.2.13 archive read as "upgraded to 1.3.1"). The peers do
// not check it: conda-lock's LockedDependency (conda_lock/lockfile/v1/models.py) holds `version`
// as a plain string beside `url`, and rattler_lock (crates/rattler_lock/src/parse/models/v6/
// conda_package_data.rs) lets a written `name`/`version`/`build` win over the ones derived from
// the URL's file name. envlock refuses the entry instead (exit 2) at its `version:`/`build:`,
// naming the package, both values and the file: a reviewer's diff must show what installs
// (docs/review.md, "Records that disagree with their URL"). `1.3.1` and `1.3.01` are one version.
TEST(HostileInput, ARecordThatDisagreesWithItsUrlIsRefused) {
  TempDir dir;
  const std::string hint = "hint: an installer downloads the URL, so the entry would be shown as one package and installed "
                           "as another; regenerate the lockfile, or fix the entry or its URL\n";
  const auto a = dir.write("a.yml", kCondaLock);
  const auto old_url = dir.write("old-url.yml", replace_all(kCondaLock, "zlib-1.3.1-hb9d3cd8_2.conda", "zlib-1.2.13-hd590300_5.conda"));
  auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(old_url) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + old_url.string() + ":14:12: package 'zlib': `version` '1.3.1' disagrees with the file its URL "
                   "names, zlib-1.2.13-hd590300_5.conda (version '1.2.13')\n" + hint);
  const auto build = dir.write("build.yml", replace_all(kCondaLock, "  manager: conda\n", "  manager: conda\n  build: hb9d3cd8_1\n"));
  r = run_command(envlock_cmd() + " show " + q(build));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + build.string() + ":16:10: package 'zlib': `build` 'hb9d3cd8_1' disagrees with the file its URL "
                   "names, zlib-1.3.1-hb9d3cd8_2.conda (build 'hb9d3cd8_2')\n" + hint);
  const auto pixi = dir.write("pixi.lock", replace_all(kPixiLock, "  size: 92286\n", "  size: 92286\n  version: 1.3.2\n"));
  r = run_command(envlock_cmd() + " show " + q(pixi));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + pixi.string() + ":15:12: package 'zlib': `version` '1.3.2' disagrees with the file its URL "
                   "names, zlib-1.3.1-hb9d3cd8_2.conda (version '1.3.1')\n" + hint);
  const auto pixi_name = dir.write("name/pixi.lock", replace_all(kPixiLock, "  size: 92286\n", "  size: 92286\n  name: libzlib\n"));
  r = run_command(envlock_cmd() + " show " + q(pixi_name));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + pixi_name.string() + ":15:9: package 'libzlib': `name` 'libzlib' disagrees with the file its URL "
                   "names, zlib-1.3.1-hb9d3cd8_2.conda (name 'zlib')\n" + hint);
  // The same version spelled otherwise, and the build the URL names, written out: read as before.
  const auto same = dir.write("same.yml", replace_all(replace_all(kCondaLock, "  version: 1.3.1\n", "  version: 1.3.01\n"),
                                                      "  manager: conda\n", "  manager: conda\n  build: hb9d3cd8_2\n"));
  r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(same) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "no changes\n" + header(a, same) + "default / linux-64: no changes (2 packages)\n");
  EXPECT_EQ(r.err, "");
}

// Attack 20 D2: a URL whose file name hides `%2F..%2F` (zlib-1.2.11-….tar.bz2%2F..%2Fzlib-1.2.8-…)
// passed the version/URL check as "names no archive", while a server that decodes the path first
// (python -m http.server, nginx) serves the 1.2.8 archive. A path segment that decodes to '/',
// '\', '.' or '..' is refused, exit 2. conda-lock and pixi download the URL as written and check
// nothing; envlock refuses what it cannot show truthfully, as for a backslash.
TEST(HostileInput, AnEncodedSlashOrDotDotInAUrlIsRefused) {
  TempDir dir;
  const std::string url = "https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda";
  const std::string hint = "hint: servers that decode the path first serve another file than the one the URL names; "
                           "a lockfile URL never encodes one: regenerate the lockfile\n";
  const auto a = dir.write("a.yml", kCondaLock);
  for (const std::string& tail : {std::string("%2F..%2Fzlib-1.2.13-hd590300_5.conda"), std::string("%2f..%2fzlib-1.2.13-hd590300_5.conda"),
                                  std::string("%5C..%5Czlib-1.2.13-hd590300_5.conda")}) {
    const auto b = dir.write("b.yml", replace_all(kCondaLock, url, url + tail));
    auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b) + " --fail-on downgraded");
    EXPECT_EQ(r.exit_code, 2) << tail;
    EXPECT_EQ(r.out, "") << tail;
    EXPECT_EQ(r.err, "error: " + b.string() + ":13:3: package 'zlib': URL '" + url + tail +
                         "' has a path segment that decodes to a '/', '\\', '.' or '..' ('zlib-1.3.1-hb9d3cd8_2.conda" + tail +
                         "')\n" + hint)
        << tail;
  }
  const std::string dotdot = "https://conda.anaconda.org/conda-forge/linux-64/%2e%2e/noarch/zlib-1.3.1-hb9d3cd8_2.conda";
  const auto c = dir.write("c.yml", replace_all(kCondaLock, url, dotdot));
  auto r = run_command(envlock_cmd() + " show " + q(c));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + c.string() + ":13:3: package 'zlib': URL '" + dotdot +
                       "' has a path segment that decodes to a '/', '\\', '.' or '..' ('%2e%2e')\n" + hint);
  // The same entry with its URL as conda-lock wrote it reads as before.
  const auto d = dir.write("d.yml", kCondaLock);
  r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(d) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Attack 20 L3: the envlock.lock reader took environment and platform names the manifest refuses,
// so an environment named `runtime/linux-64 numpy 9.9 evil …\nx` made every `show` line start
// with a fake package line (git textconv readers saw "numpy 9.9"). The manifest's rules apply when
// reading envlock.lock too: `[A-Za-z0-9][A-Za-z0-9._-]*` for an environment (pixi allows fewer:
// lower case only) and a known conda subdir for a platform, exit 2 at the key.
TEST(HostileInput, AnEnvlockLockWithAnOddEnvironmentOrPlatformNameIsRefused) {
  TempDir dir;
  const auto env = dir.write("env/envlock.lock",
                             replace_all(kEnvlockLockHead, "  default:\n", "  \"default/linux-64 numpy 9.9\\nx\":\n") +
                                 "        packages: []\n");
  auto r = run_command(envlock_cmd() + " show " + q(env));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + env.string() + ":3:3: environment name 'default/linux-64 numpy 9.9\\x0ax' is not a plain name\n"
                   "    \"default/linux-64 numpy 9.9\\nx\":\n"
                   "    ^\n"
                   "hint: a manifest allows letters, digits, '.', '_' and '-' (starting with a letter or digit); lock again "
                   "with `envlock lock`\n");
  const auto plat = dir.write("plat/envlock.lock",
                              replace_all(kEnvlockLockHead, "      linux-64:\n", "      \"linux-64 evil\":\n") +
                                  "        packages: []\n");
  r = run_command(envlock_cmd() + " show " + q(plat));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + plat.string() + ":5:7: platform 'linux-64 evil' of environment default is not a known subdir\n"
                   "        \"linux-64 evil\":\n"
                   "        ^\n"
                   "hint: use one of: noarch, emscripten-wasm32, wasi-wasm32, freebsd-64, linux-32, linux-64, linux-aarch64, "
                   "linux-armv6l, linux-armv7l, linux-ppc64, linux-ppc64le, linux-riscv64, linux-s390x, osx-64, osx-arm64, "
                   "win-32, win-64, win-arm64, zos-z\n");
}

// Issue 17, M4 and D2 for envlock.lock: its reader (Lockfile::parse, which `install`, `show` and
// `diff` share) took a record whose version, build or name disagrees with the archive its URL
// names, and a URL segment that decodes to '/' or '..', which the conda-lock and pixi.lock readers
// already refused. Both are refused now at the key, with envlock.lock's caret, exit 2. The peers
// check neither (conda-lock's models.py keeps `version` beside `url` as plain strings; rattler_lock
// lets a written version win over the file name; conda, mamba and pixi download the URL as written).
TEST(HostileInput, AnEnvlockLockRecordThatDisagreesWithItsUrlIsRefused) {
  TempDir dir;
  const std::string url = "https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda";
  const std::string lock = kEnvlockLockHead +
                           "        packages:\n"
                           "          - name: zlib\n"
                           "            version: \"1.3.1\"\n"
                           "            build: hb9d3cd8_2\n"
                           "            build_number: 2\n"
                           "            subdir: linux-64\n"
                           "            channel: https://conda.anaconda.org/conda-forge\n"
                           "            url: " + url + "\n"
                           "            sha256: " + kZlibSha + "\n"
                           "            layer: default\n";
  const std::string hint = "hint: an installer downloads the URL, so the entry would be shown as one package and installed as "
                           "another; re-create the lockfile with `envlock lock`, or fix the entry or its URL\n";
  const auto good = dir.write("good/envlock.lock", lock);
  auto r = run_command(envlock_cmd() + " show " + q(good));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "default/linux-64  channel https://conda.anaconda.org/conda-forge\n"
                   "default/linux-64 zlib 1.3.1 hb9d3cd8_2 https://conda.anaconda.org/conda-forge sha256:" + kZlibSha + "\n"
                   "default/linux-64 zlib  build_number 2\n");
  EXPECT_EQ(r.err, "");

  const auto version = dir.write("version/envlock.lock", replace_all(lock, "zlib-1.3.1-hb9d3cd8_2", "zlib-1.2.13-hd590300_5"));
  r = run_command(envlock_cmd() + " diff " + q(good) + " " + q(version) + " --fail-on downgraded");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + version.string() + ":9:22: package 'zlib': `version` '1.3.1' disagrees with the file its URL names, "
                   "zlib-1.2.13-hd590300_5.conda (version '1.2.13')\n"
                   "              version: \"1.3.1\"\n"
                   "                       ^\n" + hint);

  const auto build = dir.write("build/envlock.lock", replace_all(lock, "zlib-1.3.1-hb9d3cd8_2.conda", "zlib-1.3.1-hb9d3cd8_1.conda"));
  r = run_command(envlock_cmd() + " show " + q(build));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + build.string() + ":10:20: package 'zlib': `build` 'hb9d3cd8_2' disagrees with the file its URL names, "
                   "zlib-1.3.1-hb9d3cd8_1.conda (build 'hb9d3cd8_1')\n"
                   "              build: hb9d3cd8_2\n"
                   "                     ^\n" + hint);

  // pixi's spelling of the file (`%2B` for '+', percent-decoded) names the same archive.
  const auto encoded = dir.write("encoded/envlock.lock", replace_all(replace_all(lock, "hb9d3cd8_2", "hb9d3cd8+2"),
                                                                     "zlib-1.3.1-hb9d3cd8+2.conda", "zlib-1.3.1-hb9d3cd8%2B2.conda"));
  r = run_command(envlock_cmd() + " show " + q(encoded));
  EXPECT_EQ(r.exit_code, 0) << r.err;

  const std::string dotdot = "https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda%2F..%2Fzlib-1.2.13-hd590300_5.conda";
  const auto slash = dir.write("slash/envlock.lock", replace_all(lock, "url: " + url, "url: " + dotdot));
  r = run_command(envlock_cmd() + " diff " + q(good) + " " + q(slash));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + slash.string() + ":14:18: package 'zlib': URL '" + dotdot +
                       "' has a path segment that decodes to a '/', '\\', '.' or '..' ('zlib-1.3.1-hb9d3cd8_2.conda%2F..%2Fzlib-1.2.13-hd590300_5.conda')\n"
                       "              url: " + dotdot + "\n"
                       "                   ^\n"
                       "hint: servers that decode the path first serve another file than the one the URL names; a lockfile URL "
                       "never encodes one: re-create the lockfile with `envlock lock`\n");
}

// A committed link that leads out of the repository (a pull request's `envlock.lock ->
// ../secret.yml`, or to /etc/shadow) was followed by `diff`/`show` of the working-tree path, and
// CI's `envlock diff origin/main:envlock.lock envlock.lock` read a file outside the checkout. git
// itself never follows a link: it stores the target's name as the blob, `git diff` shows that
// name, and textconv is never run on a link (diff.c: diff_filespec_load_driver takes the default
// driver for anything but a regular file). envlock now refuses a path whose link leaves its
// repository, and reads REV:PATH as git does: a link at REV is named as one, never its target
// read. A link inside the repository, and a link in no repository at all, read as before.
TEST(HostileInput, ALinkOutOfTheRepositoryIsNotFollowed) {
  TempDir dir;
  const fs::path repo = dir.path() / "repo";
  fs::create_directories(repo / "sub");
  const auto secret = dir.write("secret.yml", kCondaLock);  // a file outside the repository
  fs::copy_file(secret, repo / "sub" / "conda-lock.yml");
  fs::create_symlink("../secret.yml", repo / "envlock.lock");
  fs::create_symlink("sub/conda-lock.yml", repo / "inside.yml");
  ASSERT_EQ(run_command("cd " + q(repo) + " && git init -q . && git add -A && git -c user.name=t -c user.email=t@t commit -qm x")
                .exit_code,
            0);
  const std::string hint = "hint: git stores a link as the name of its target and never follows it (`git diff` shows that "
                           "name); pass the lockfile itself, or REV:PATH to read what a commit holds\n";
  auto r = run_command("cd " + q(repo) + " && " + envlock_cmd() + " show envlock.lock");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: envlock.lock: is a symbolic link that leads outside its git repository; it is not read\n" + hint);
  r = run_command(envlock_cmd() + " diff " + q(repo / "inside.yml") + " " + q(repo / "envlock.lock"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + (repo / "envlock.lock").string() +
                       ": is a symbolic link that leads outside its git repository; it is not read\n" + hint);
  // A folder of the repository that is a link out of it is the same way out.
  fs::create_symlink("..", repo / "up");
  r = run_command("cd " + q(repo) + " && " + envlock_cmd() + " show up/secret.yml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: up/secret.yml: is a symbolic link that leads outside its git repository; it is not read\n" + hint);
  // REV:PATH of the committed link: git holds the link's target name, never the file.
  r = run_command("cd " + q(repo) + " && " + envlock_cmd() + " diff HEAD:envlock.lock inside.yml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: HEAD:envlock.lock: is a symbolic link at revision 'HEAD', not a lockfile; it is not read\n"
                   "hint: git stores a link as the name of its target, which `git show` prints; name the file it links to "
                   "as REV:PATH\n");
  // A link inside the repository, and a link in no repository, are read as the file they name.
  r = run_command("cd " + q(repo) + " && " + envlock_cmd() + " diff HEAD:sub/conda-lock.yml inside.yml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "no changes\nold: HEAD:sub/conda-lock.yml (conda-lock v1)\nnew: inside.yml (conda-lock v1)\n\n"
                   "default / linux-64: no changes (2 packages)\n");
  EXPECT_EQ(r.err, "");
  fs::create_symlink("secret.yml", dir.path() / "outside-link.yml");
  r = run_command(envlock_cmd() + " diff " + q(secret) + " " + q(dir.path() / "outside-link.yml"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// `show --json` holds every field `diff` compares, as the text view does (the lists of
// envlock/diff.hpp: shown_record_fields, shown_pip_fields, shown_platform_fields), each as a key of
// its own (a pip entry's `source` is `pip_source`: `source` says conda or pypi); before, a pip
// entry's requires_dist and requires_python were compared but missing. Whole output.
TEST(HostileInput, ShowJsonHoldsEveryFieldDiffCompares) {
  TempDir dir;
  const auto pixi = dir.write("pixi.lock", kPixiLock + "  requires_dist:\n  - numpy>=1.26\n  requires_python: '>=3.10'\n");
  auto r = run_command(envlock_cmd() + " show --json " + q(pixi));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
                   "{\n"
                   "  \"format\": \"pixi.lock v6\",\n"
                   "  \"packages\": [\n"
                   "    {\n"
                   "      \"build\": \"hb9d3cd8_2\",\n"
                   "      \"build_number\": 0,\n"
                   "      \"category\": null,\n"
                   "      \"channel\": \"https://conda.anaconda.org/conda-forge\",\n"
                   "      \"constrains\": [],\n"
                   "      \"depends\": [],\n"
                   "      \"environment\": \"default\",\n"
                   "      \"features\": [],\n"
                   "      \"file_name\": \"zlib-1.3.1-hb9d3cd8_2.conda\",\n"
                   "      \"license\": \"\",\n"
                   "      \"md5\": \"c9f075ab2f33b3bbee9e62d4ad0a6cd8\",\n"
                   "      \"name\": \"zlib\",\n"
                   "      \"noarch\": \"\",\n"
                   "      \"platform\": \"linux-64\",\n"
                   "      \"python_site_packages_path\": \"\",\n"
                   "      \"sha256\": \"5d7c0e5f0005f74112a34a7425179f4eb6e73c92f5d109e6af4ddeca407c92ab\",\n"
                   "      \"size\": 92286,\n"
                   "      \"source\": \"conda\",\n"
                   "      \"subdir\": \"linux-64\",\n"
                   "      \"track_features\": [],\n"
                   "      \"url\": \"https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda\",\n"
                   "      \"version\": \"1.3.1\"\n"
                   "    },\n"
                   "    {\n"
                   "      \"build\": \"\",\n"
                   "      \"channel\": \"\",\n"
                   "      \"editable\": false,\n"
                   "      \"environment\": \"default\",\n"
                   "      \"file_name\": \"\",\n"
                   "      \"index\": \"\",\n"
                   "      \"md5\": \"\",\n"
                   "      \"name\": \"mylib\",\n"
                   "      \"pip_source\": \"vcs git+https://github.com/acme/mylib.git@0123456789abcdef0123456789abcdef01234567\",\n"
                   "      \"platform\": \"linux-64\",\n"
                   "      \"required_by\": [],\n"
                   "      \"requirement\": \"\",\n"
                   "      \"requires_dist\": [\n"
                   "        \"numpy>=1.26\"\n"
                   "      ],\n"
                   "      \"requires_python\": \">=3.10\",\n"
                   "      \"sha256\": \"\",\n"
                   "      \"size\": null,\n"
                   "      \"source\": \"pypi\",\n"
                   "      \"url\": \"git+https://github.com/acme/mylib.git?rev=main#0123456789abcdef0123456789abcdef01234567\",\n"
                   "      \"version\": \"0.1.0\"\n"
                   "    }\n"
                   "  ],\n"
                   "  \"platforms\": [\n"
                   "    {\n"
                   "      \"channel\": [\n"
                   "        \"https://conda.anaconda.org/conda-forge/\"\n"
                   "      ],\n"
                   "      \"environment\": \"default\",\n"
                   "      \"platform\": \"linux-64\",\n"
                   "      \"pypi_index\": [],\n"
                   "      \"virtual_package\": []\n"
                   "    }\n"
                   "  ]\n"
                   "}\n");
  for (const auto& f : envlock::shown_record_fields())
    EXPECT_NE(r.out.find("\"" + std::string(f.name) + "\": "), std::string::npos) << f.name;
  for (const auto& f : envlock::shown_pip_fields())
    EXPECT_NE(r.out.find("\"" + std::string(f.name == "source" ? "pip_source" : f.name) + "\": "), std::string::npos) << f.name;
  for (const auto& f : envlock::shown_platform_fields())
    EXPECT_NE(r.out.find("\"" + std::string(f.name) + "\": "), std::string::npos) << f.name;
}

// A C1 control character (U+0080-U+009F: U+009B is a terminal's CSI, U+0085 a next line), DEL and
// the line separator U+2028 in a hostile lockfile's dependency or channel reach --json output as
// \\uXXXX escapes, never raw: nlohmann's dump() escapes only U+0000-U+001F, and every --json
// output goes through json_text (json_escape_invisible, envlock/text.hpp). The document is valid
// JSON that reads back as the same strings (attack on issue 17, A5). Whole outputs.
TEST(HostileInput, ControlCharactersReachJsonOutputEscaped) {
  TempDir dir;
  const std::string conda_only = kCondaLock.substr(0, kCondaLock.find("- name: certifi"));
  const auto a = dir.write("a.yml", conda_only);
  const std::string dep = "libgcc\u009b[31m\x7f";
  const std::string spec = ">=13\u2028\u0085";
  const auto b = dir.write("b.yml", replace_all(replace_all(conda_only, "    libgcc: '>=13'\n",
                                                                  "    \"libgcc\\u009b[31m\\x7f\": \">=13\\u2028\\u0085\"\n"),
                                                  "  - url: conda-forge\n", "  - url: \"conda-forge\\u009b\"\n"));
  auto raw = [](const std::string& out) {
    for (std::size_t i = 0; i < out.size(); ++i)
      if (out[i] != '\n' && envlock::is_control_at(out, i)) return true;
    return out.find("\u2028") != std::string::npos || out.find("\u2029") != std::string::npos;
  };
  auto r = run_command(envlock_cmd() + " diff --json " + q(a) + " " + q(b));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
                     "{\n"
                     "  \"groups\": [\n"
                     "    {\n"
                     "      \"changes\": [\n"
                     "        {\n"
                     "          \"flags\": [],\n"
                     "          \"kind\": \"metadata-changed\",\n"
                     "          \"name\": \"zlib\",\n"
                     "          \"new\": {\n"
                     "            \"build\": \"hb9d3cd8_2\",\n"
                     "            \"channel\": \"https://conda.anaconda.org/conda-forge\",\n"
                     "            \"license\": \"\",\n"
                     "            \"md5\": \"c9f075ab2f33b3bbee9e62d4ad0a6cd8\",\n"
                     "            \"sha256\": \"5d7c0e5f0005f74112a34a7425179f4eb6e73c92f5d109e6af4ddeca407c92ab\",\n"
                     "            \"size\": null,\n"
                     "            \"url\": \"https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda\",\n"
                     "            \"variants\": [],\n"
                     "            \"version\": \"1.3.1\"\n"
                     "          },\n"
                     "          \"notes\": [\n"
                     "            \"depends -libgcc >=13 +libgcc\\u009b[31m\\u007f >=13\\u2028\\u0085\"\n"
                     "          ],\n"
                     "          \"old\": {\n"
                     "            \"build\": \"hb9d3cd8_2\",\n"
                     "            \"channel\": \"https://conda.anaconda.org/conda-forge\",\n"
                     "            \"license\": \"\",\n"
                     "            \"md5\": \"c9f075ab2f33b3bbee9e62d4ad0a6cd8\",\n"
                     "            \"sha256\": \"5d7c0e5f0005f74112a34a7425179f4eb6e73c92f5d109e6af4ddeca407c92ab\",\n"
                     "            \"size\": null,\n"
                     "            \"url\": \"https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda\",\n"
                     "            \"variants\": [],\n"
                     "            \"version\": \"1.3.1\"\n"
                     "          },\n"
                     "          \"pulled_by\": [\n"
                     "            \"zlib\"\n"
                     "          ],\n"
                     "          \"red_flag\": false,\n"
                     "          \"size_delta\": null,\n"
                     "          \"source\": \"conda\"\n"
                     "        },\n"
                     "        {\n"
                     "          \"flags\": [],\n"
                     "          \"kind\": \"inputs-changed\",\n"
                     "          \"name\": \"channels\",\n"
                     "          \"new\": null,\n"
                     "          \"notes\": [\n"
                     "            \"channels conda-forge -> conda-forge\\u009b\"\n"
                     "          ],\n"
                     "          \"old\": null,\n"
                     "          \"pulled_by\": [],\n"
                     "          \"red_flag\": false,\n"
                     "          \"size_delta\": null,\n"
                     "          \"source\": \"input\"\n"
                     "        }\n"
                     "      ],\n"
                     "      \"environment\": \"default\",\n"
                     "      \"host_floors\": [],\n"
                     "      \"new_packages\": 1,\n"
                     "      \"old_packages\": 1,\n"
                     "      \"platform\": \"linux-64\",\n"
                     "      \"presence\": \"both\",\n"
                     "      \"size_delta\": null\n"
                     "    }\n"
                     "  ],\n"
                     "  \"new\": {\n"
                     "    \"format\": \"conda-lock v1\",\n"
                     "    \"source\": \"" + b.string() + "\"\n"
                     "  },\n"
                     "  \"old\": {\n"
                     "    \"format\": \"conda-lock v1\",\n"
                     "    \"source\": \"" + a.string() + "\"\n"
                     "  },\n"
                     "  \"schema\": \"envlock-diff/1\",\n"
                     "  \"summary\": {\n"
                     "    \"by_kind\": {\n"
                     "      \"added\": 0,\n"
                     "      \"channel-changed\": 0,\n"
                     "      \"downgraded\": 0,\n"
                     "      \"hash-changed\": 0,\n"
                     "      \"host-floor-raised\": 0,\n"
                     "      \"inputs-changed\": 1,\n"
                     "      \"license-changed\": 0,\n"
                     "      \"metadata-changed\": 1,\n"
                     "      \"re-uploaded\": 0,\n"
                     "      \"rebuilt\": 0,\n"
                     "      \"removed\": 0,\n"
                     "      \"source-changed\": 0,\n"
                     "      \"upgraded\": 0,\n"
                     "      \"variant-switch\": 0\n"
                     "    },\n"
                     "    \"changes\": 2,\n"
                     "    \"identical\": false,\n"
                     "    \"red_flags\": 0,\n"
                     "    \"size_delta\": null\n"
                     "  }\n"
                     "}\n");
  EXPECT_FALSE(raw(r.out));
  EXPECT_EQ(nlohmann::json::parse(r.out)["groups"][0]["changes"][0]["notes"][0],
            "depends -libgcc >=13 +" + dep + " " + spec);

  r = run_command(envlock_cmd() + " show --json " + q(b));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
                     "{\n"
                     "  \"format\": \"conda-lock v1\",\n"
                     "  \"packages\": [\n"
                     "    {\n"
                     "      \"build\": \"hb9d3cd8_2\",\n"
                     "      \"build_number\": 0,\n"
                     "      \"category\": \"main\",\n"
                     "      \"channel\": \"https://conda.anaconda.org/conda-forge\",\n"
                     "      \"constrains\": [],\n"
                     "      \"depends\": [\n"
                     "        \"libgcc\\u009b[31m\\u007f >=13\\u2028\\u0085\"\n"
                     "      ],\n"
                     "      \"environment\": \"default\",\n"
                     "      \"features\": [],\n"
                     "      \"file_name\": \"zlib-1.3.1-hb9d3cd8_2.conda\",\n"
                     "      \"license\": \"\",\n"
                     "      \"md5\": \"c9f075ab2f33b3bbee9e62d4ad0a6cd8\",\n"
                     "      \"name\": \"zlib\",\n"
                     "      \"noarch\": \"\",\n"
                     "      \"platform\": \"linux-64\",\n"
                     "      \"python_site_packages_path\": \"\",\n"
                     "      \"sha256\": \"5d7c0e5f0005f74112a34a7425179f4eb6e73c92f5d109e6af4ddeca407c92ab\",\n"
                     "      \"size\": null,\n"
                     "      \"source\": \"conda\",\n"
                     "      \"subdir\": \"linux-64\",\n"
                     "      \"track_features\": [],\n"
                     "      \"url\": \"https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda\",\n"
                     "      \"version\": \"1.3.1\"\n"
                     "    }\n"
                     "  ],\n"
                     "  \"platforms\": [\n"
                     "    {\n"
                     "      \"channel\": [\n"
                     "        \"conda-forge\\u009b\"\n"
                     "      ],\n"
                     "      \"environment\": \"default\",\n"
                     "      \"platform\": \"linux-64\",\n"
                     "      \"pypi_index\": [],\n"
                     "      \"virtual_package\": []\n"
                     "    }\n"
                     "  ]\n"
                     "}\n");
  EXPECT_FALSE(raw(r.out));
  const auto shown = nlohmann::json::parse(r.out);
  EXPECT_EQ(shown["packages"][0]["depends"][0], dep + " " + spec);
  EXPECT_EQ(shown["platforms"][0]["channel"][0], "conda-forge\u009b");
}
