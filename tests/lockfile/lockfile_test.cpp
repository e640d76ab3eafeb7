#include <gtest/gtest.h>
#include <chrono>
#include <set>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "envlock/atomic_file.hpp"
#include "envlock/lockfile.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;

LockedPackage pkg(const std::string& name, const std::string& version, const std::string& build,
                  std::vector<std::string> depends = {}, const std::string& layer = "default") {
  LockedPackage p;
  p.name = name;
  p.version = Version::parse(version).value();
  p.build = build;
  p.build_number = 0;
  p.subdir = "linux-64";
  p.channel = "https://conda.anaconda.org/conda-forge";
  p.file_name = name + "-" + version + "-" + build + ".conda";
  p.url = p.channel + "/linux-64/" + p.file_name;
  p.sha256 = std::string(64, 'a');
  p.md5 = std::string(32, 'b');
  p.size = 1234;
  p.depends = std::move(depends);
  p.license = "BSD-3-Clause";
  p.timestamp = 1700000000000;
  p.layer = layer;
  return p;
}

Lockfile small() {
  Lockfile lf;
  lf.manifest_hash = "sha256:" + std::string(64, 'c');
  LockedEnvironment env;
  env.name = "default";
  env.requested = {"python 3.12.*", "numpy >=1.26"};
  LockedPlatform lp;
  lp.platform = "linux-64";
  lp.channels = {"https://conda.anaconda.org/conda-forge"};
  lp.virtual_packages = {VirtualPackage{"__glibc", "2.28", "0"}};
  lp.packages = {pkg("python", "3.12.1", "h1_0", {"libzlib >=1.2.13,<2.0a0"}), pkg("libzlib", "1.3.1", "h2_1"),
                 pkg("numpy", "1.26.4", "py312h3_0", {"python >=3.12,<3.13.0a0", "libzlib"})};
  lp.packages[2].constrains = {"numpy-base <0a0"};
  lp.packages[2].build_number = 7;
  env.platforms["linux-64"] = lp;
  lf.environments["default"] = env;
  return lf;
}

const char* const kSmallYaml = R"(# envlock.lock — written by `envlock lock`; do not edit by hand. Format: docs/lockfile.md
version: 1
manifest_hash: sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc
environments:
  default:
    requested:
      - numpy >=1.26
      - python 3.12.*
    platforms:
      linux-64:
        channels:
          - https://conda.anaconda.org/conda-forge
        virtual_packages:
          - __glibc=2.28=0
        packages:
          - name: libzlib
            version: "1.3.1"
            build: h2_1
            build_number: 0
            subdir: linux-64
            channel: https://conda.anaconda.org/conda-forge
            url: https://conda.anaconda.org/conda-forge/linux-64/libzlib-1.3.1-h2_1.conda
            sha256: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
            md5: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
            size: 1234
            depends: []
            constrains: []
            license: BSD-3-Clause
            timestamp: 1700000000000
            track_features: []
            layer: default
          - name: numpy
            version: "1.26.4"
            build: py312h3_0
            build_number: 7
            subdir: linux-64
            channel: https://conda.anaconda.org/conda-forge
            url: https://conda.anaconda.org/conda-forge/linux-64/numpy-1.26.4-py312h3_0.conda
            sha256: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
            md5: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
            size: 1234
            depends:
              - python >=3.12,<3.13.0a0
              - libzlib
            constrains:
              - numpy-base <0a0
            license: BSD-3-Clause
            timestamp: 1700000000000
            track_features: []
            layer: default
          - name: python
            version: "3.12.1"
            build: h1_0
            build_number: 0
            subdir: linux-64
            channel: https://conda.anaconda.org/conda-forge
            url: https://conda.anaconda.org/conda-forge/linux-64/python-3.12.1-h1_0.conda
            sha256: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
            md5: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
            size: 1234
            depends:
              - libzlib >=1.2.13,<2.0a0
            constrains: []
            license: BSD-3-Clause
            timestamp: 1700000000000
            track_features: []
            layer: default
)";

TEST(LockfileFormat, GoldenText) { EXPECT_EQ(small().to_yaml(), kSmallYaml); }

TEST(LockfileFormat, RoundTripIsByteIdentical) {
  const Lockfile lf = small();
  auto back = Lockfile::parse(lf.to_yaml(), "envlock.lock");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->manifest_hash, lf.manifest_hash);
  const LockedPlatform* lp = back->find("default", "linux-64");
  ASSERT_NE(lp, nullptr);
  ASSERT_EQ(lp->packages.size(), 3u);
  EXPECT_EQ(lp->packages[0].name, "libzlib");  // sorted on read
  EXPECT_EQ(lp->packages[1], [&] {
    auto p = small().environments["default"].platforms["linux-64"].packages[2];
    return p;
  }());
  EXPECT_EQ(back->to_yaml(), lf.to_yaml());
  EXPECT_EQ(back->find("default", "osx-64"), nullptr);
  EXPECT_EQ(back->find("nope", "linux-64"), nullptr);
}

TEST(LockfileFormat, ShuffledInputGivesTheSameBytes) {
  const std::string want = small().to_yaml();
  std::mt19937 rng(42);
  for (int i = 0; i < 20; ++i) {
    Lockfile lf = small();
    auto& lp = lf.environments["default"].platforms["linux-64"];
    std::shuffle(lp.packages.begin(), lp.packages.end(), rng);
    std::shuffle(lf.environments["default"].requested.begin(), lf.environments["default"].requested.end(), rng);
    EXPECT_EQ(lf.to_yaml(), want);
  }
}

TEST(LockfileFormat, QuotesWhatYamlWouldMisread) {
  Lockfile lf = small();
  auto& p = lf.environments["default"].platforms["linux-64"].packages[0];
  p.build = "0";                 // a number
  // The URL names the same build, as the reader checks (envlock/record_url.hpp).
  p.url = p.url.substr(0, p.url.rfind('-') + 1) + "0.conda";
  p.file_name = p.url.substr(p.url.rfind('/') + 1);
  p.license = "yes";             // a YAML 1.1 boolean
  p.depends = {"foo: bar", "x #y", "[weird]", "tab\there", "quote\"s"};
  p.track_features = {"null"};
  const std::string text = lf.to_yaml();
  EXPECT_NE(text.find("build: \"0\"\n"), std::string::npos);
  EXPECT_NE(text.find("license: \"yes\"\n"), std::string::npos);
  EXPECT_NE(text.find("- \"foo: bar\"\n"), std::string::npos);
  EXPECT_NE(text.find("- \"x #y\"\n"), std::string::npos);
  EXPECT_NE(text.find("- \"tab\\there\"\n"), std::string::npos);
  EXPECT_NE(text.find("- \"quote\\\"s\"\n"), std::string::npos);
  auto back = Lockfile::parse(text, "x.lock");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  const auto& q = back->find("default", "linux-64")->packages;
  auto it = std::find_if(q.begin(), q.end(), [&](const auto& r) { return r.name == p.name; });
  ASSERT_NE(it, q.end());
  EXPECT_EQ(*it, p);
}

TEST(LockfileFormat, CredentialsNeverWritten) {
  Lockfile lf = small();
  auto& lp = lf.environments["default"].platforms["linux-64"];
  lp.channels = {"https://user:pw@conda.example.com/t/tk-1234/private"};
  lp.packages[0].url = "https://conda.example.com/t/tk-1234/private/linux-64/x-1-0.conda";
  lp.packages[0].channel = "https://user:pw@conda.example.com/private";
  const std::string text = lf.to_yaml();
  EXPECT_EQ(text.find("tk-1234"), std::string::npos);
  EXPECT_EQ(text.find("pw@"), std::string::npos);
  EXPECT_NE(text.find("https://conda.example.com/private/linux-64/x-1-0.conda"), std::string::npos);
  // A lockfile that carries credentials is refused when read.
  std::string bad = kSmallYaml;
  const std::string from = "url: https://conda.anaconda.org/conda-forge/linux-64/numpy";
  bad.replace(bad.find(from), from.size(), "url: https://conda.anaconda.org/t/secret-tok/conda-forge/linux-64/numpy");
  auto r = Lockfile::parse(bad, "envlock.lock");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "envlock.lock:38:18");
  EXPECT_EQ(r.error().message, "url of numpy carries credentials");
  EXPECT_EQ(r.error().detail.find("secret-tok"), std::string::npos) << "the error must not echo the token";
}

// pip entries: a line that names no project (`-e .`, an index option) is written without a
// `name` key and read back as it was; every URL in a requirement is written and read
// credential-free (an older envlock wrote a manifest's pip line verbatim).
TEST(LockfileFormat, PipLinesWithoutANameAndWithoutCredentials) {
  Lockfile lf = small();
  auto& lp = lf.environments["default"].platforms["linux-64"];
  lp.pip = {PipPackage{"mypkg", "", "git+https://github.com/acme/mypkg.git@main", "",
                       "mypkg @ git+https://alice:ghp_SECRET777@github.com/acme/mypkg.git@main"},
            PipPackage{"", "", "", "", "--extra-index-url https://bob:PW_SECRET_888@pypi.corp.example.com/simple"},
            PipPackage{"", "", "", "", "-e ."}};
  const std::string text = lf.to_yaml();
  EXPECT_EQ(text.find("SECRET"), std::string::npos) << text;
  EXPECT_EQ(text.find("name: \"\""), std::string::npos) << text;
  EXPECT_NE(text.find("        pip:\n"
                      "          - requirement: \"--extra-index-url https://pypi.corp.example.com/simple\"\n"
                      "          - requirement: \"-e .\"\n"
                      "          - name: mypkg\n"
                      "            url: git+https://github.com/acme/mypkg.git@main\n"
                      "            requirement: mypkg @ git+https://github.com/acme/mypkg.git@main\n"),
            std::string::npos)
      << text;
  auto back = Lockfile::parse(text, "envlock.lock");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  const auto& pip = back->find("default", "linux-64")->pip;
  ASSERT_EQ(pip.size(), 3u);
  EXPECT_EQ(pip[0], (PipPackage{"", "", "", "", "--extra-index-url https://pypi.corp.example.com/simple"}));
  EXPECT_EQ(pip[1], (PipPackage{"", "", "", "", "-e ."}));
  EXPECT_EQ(pip[2].requirement, "mypkg @ git+https://github.com/acme/mypkg.git@main");
  EXPECT_EQ(back->to_yaml(), text);

  // What an older envlock wrote: `name: ""` and the token in the requirement.
  std::string old = kSmallYaml;
  old += "        pip:\n"
         "          - name: \"\"\n"
         "            requirement: \"-e .\"\n"
         "          - name: mypkg\n"
         "            requirement: mypkg @ git+https://alice:ghp_SECRET777@github.com/acme/mypkg.git@main\n";
  auto read = Lockfile::parse(old, "envlock.lock");
  ASSERT_TRUE(read.ok()) << read.error().to_string();
  const auto& old_pip = read->find("default", "linux-64")->pip;
  ASSERT_EQ(old_pip.size(), 2u);
  EXPECT_EQ(old_pip[0], (PipPackage{"", "", "", "", "-e ."}));
  EXPECT_EQ(old_pip[1].requirement, "mypkg @ git+https://github.com/acme/mypkg.git@main");
  EXPECT_EQ(read->to_yaml().find("SECRET"), std::string::npos);

  // An entry with neither a name nor a requirement is refused at its line.
  std::string empty = kSmallYaml;
  empty += "        pip:\n          - version: \"1.0\"\n";
  auto bad = Lockfile::parse(empty, "envlock.lock");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "a pip entry needs a name or a requirement");
  EXPECT_EQ(bad.error().where, "envlock.lock:69:13");
}

TEST(LockfileFormat, NewerVersionIsRefusedNamingBoth) {
  auto r = Lockfile::parse("version: 2\nsomething_new: {}\n", "envlock.lock");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Parse);
  EXPECT_EQ(r.error().where, "envlock.lock:1:10");
  EXPECT_EQ(r.error().message, "lockfile format version 2 is newer than this envlock reads (version 1)");
}

TEST(LockfileFormat, ErrorsNameFileLineColumn) {
  struct Case {
    std::string from, to, where, message;
  };
  const std::vector<Case> cases = {
      {"sha256: aaaa", "sha256: zzzz", "envlock.lock:23:21", "sha256 of libzlib must be 64 lower-case hex digits"},
      {"build_number: 7", "build_number: -7", "envlock.lock:35:27", "build_number of numpy must be a non-negative integer"},
      {"version: \"1.26.4\"", "version: \"1..2\"", "envlock.lock:33:22", "invalid version '1..2' of numpy"},
      {"          - name: numpy\n            version: \"1.26.4\"\n            build: py312h3_0\n            build_number: 7\n"
       "            subdir: linux-64\n            channel: https://conda.anaconda.org/conda-forge\n"
       "            url: https://conda.anaconda.org/conda-forge/linux-64/numpy-1.26.4-py312h3_0.conda",
       "          - name: libzlib\n            version: \"1.3.1\"\n            build: h2_1\n            build_number: 7\n"
       "            subdir: linux-64\n            channel: https://conda.anaconda.org/conda-forge\n"
       "            url: https://conda.anaconda.org/conda-forge/linux-64/libzlib-1.3.1-h2_1.conda",
       "envlock.lock:32:13",
       "package 'libzlib' is locked twice for platform linux-64"},
      // A record that disagrees with the archive its URL (or its `file_name`) names, or a URL
      // segment that decodes to '/' or '..', is refused as the other readers refuse it (issue 17,
      // M4 and D2; envlock/record_url.hpp).
      {"numpy-1.26.4-py312h3_0.conda", "numpy-1.26.3-py312h3_0.conda", "envlock.lock:33:22",
       "package 'numpy': `version` '1.26.4' disagrees with the file its URL names, numpy-1.26.3-py312h3_0.conda (version '1.26.3')"},
      {"numpy-1.26.4-py312h3_0.conda", "numpy-1.26.4-py312h3_1.conda", "envlock.lock:34:20",
       "package 'numpy': `build` 'py312h3_0' disagrees with the file its URL names, numpy-1.26.4-py312h3_1.conda (build 'py312h3_1')"},
      {"numpy-1.26.4-py312h3_0.conda", "numpy-1.26.4-py312h3_0.conda\n            file_name: numpy-1.26.4-py312h3_1.conda",
       "envlock.lock:34:20",
       "package 'numpy': `build` 'py312h3_0' disagrees with its `file_name`, numpy-1.26.4-py312h3_1.conda (build 'py312h3_1')"},
      {"linux-64/numpy-1.26.4-py312h3_0.conda", "linux-64/%2e%2e/linux-64/numpy-1.26.4-py312h3_0.conda", "envlock.lock:38:18",
       "package 'numpy': URL 'https://conda.anaconda.org/conda-forge/linux-64/%2e%2e/linux-64/numpy-1.26.4-py312h3_0.conda' "
       "has a path segment that decodes to a '/', '\\', '.' or '..' ('%2e%2e')"},
      {"            layer: default\n          - name: python", "            lyer: default\n          - name: python",
       "envlock.lock:50:13", "unknown key 'lyer' in a package of platform linux-64"},
      {"version: 1\n", "", "envlock.lock:2:1", "not an envlock lockfile: no `version`"},
      {"        channels:\n", "        channels: 5\n", "envlock.lock:11:19", "channels of platform linux-64 must be a list"},
      {"    requested:", "    base: nowhere\n    requested:", "envlock.lock:6:11",
       "base 'nowhere' of environment default is not in the lockfile"},
      {"md5: bbbb", "md5: bbbb\n            md5: bbbb", "envlock.lock:25:13", "duplicate key 'md5'"},
      {"            layer: default\n          - name: numpy", "          - name: numpy", "envlock.lock:16:13",
       "a package of platform linux-64 has no `layer`"},
      {"  default:\n", "  default: [\n", "envlock.lock:", "invalid YAML"},
  };
  for (const auto& c : cases) {
    std::string text = kSmallYaml;
    auto at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, c.from.size(), c.to);
    auto r = Lockfile::parse(text, "envlock.lock");
    ASSERT_FALSE(r.ok()) << c.from;
    EXPECT_TRUE(r.error().where.starts_with(c.where)) << c.from << "\n" << r.error().to_string();
    EXPECT_TRUE(r.error().message.starts_with(c.message)) << c.from << "\n" << r.error().to_string();
    // Every error quotes its line but "no `version`", about the whole file, which quotes none of it
    // (a link to a credentials file must not put its first line in a CI log: attack 30, F13).
    EXPECT_EQ(r.error().detail.empty(), c.message == std::string("not an envlock lockfile: no `version`")) << c.from;
  }
  auto empty = Lockfile::parse("", "envlock.lock");
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(empty.error().message.starts_with("not an envlock lockfile")) << empty.error().to_string();
}

// ---- atomic writes ---------------------------------------------------------------------------

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("envlock-lockfile-" + std::to_string(::getpid()) + "-" +
                                               std::to_string(counter++));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  static inline int counter = 0;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(LockfileWrite, ReplacesAtomicallyAndLeavesNoTemporaries) {
  TempDir dir;
  const fs::path path = dir.path / "envlock.lock";
  { std::ofstream(path) << "old contents\n"; }
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  const Lockfile lf = small();
  auto st = lf.write(path);
  ASSERT_TRUE(st.ok()) << st.error().to_string();
  EXPECT_EQ(slurp(path), lf.to_yaml());
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++entries;
  EXPECT_EQ(entries, 1);
  auto back = Lockfile::read(path);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->to_yaml(), lf.to_yaml());
}

// A killed `envlock lock` left its temporary file for good (a new-user attack, session 9): the
// next write removes those no writer holds (flock free) that are over a minute old, and keeps
// a fresh one, or one a writer still holds, and other files.
TEST(LockfileWrite, TemporariesOfKilledWritersAreRemovedByTheNextWrite) {
  TempDir dir;
  const fs::path path = dir.path / "envlock.lock";
  const auto make = [&](const std::string& name, bool old) {
    std::ofstream(dir.path / name) << "half";
    if (old) fs::last_write_time(dir.path / name, fs::file_time_type::clock::now() - std::chrono::minutes(5));
  };
  make(".envlock.lock.tmp-abc123", true);   // abandoned
  make(".envlock.lock.tmp-def456", false);  // too fresh: maybe being written
  make(".envlock.lock.tmp-held00", true);   // held by a writer
  make(".other.lock.tmp-abc123", true);     // another file's
  make(".envlock.lock.tmp-toolong1", true);  // not a mkstemp name
  const int held = ::open((dir.path / ".envlock.lock.tmp-held00").c_str(), O_RDONLY);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  ASSERT_TRUE(write_file_atomic(path, "new\n").ok());
  ::close(held);
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path)) left.insert(e.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"envlock.lock", ".envlock.lock.tmp-def456", ".envlock.lock.tmp-held00",
                                         ".other.lock.tmp-abc123", ".envlock.lock.tmp-toolong1"}));
}

// A writer killed part-way leaves no file at all (attack 20, L1: `kill -9` of `envlock lock` left
// `.envlock.lock.tmp-*`, removed only by a later write of the same file): the temporary file has
// no name (O_TMPFILE) until just before its rename. The child writes 256 MiB (and fsyncs them) and
// is killed 20 ms in, while it writes or flushes.
TEST(LockfileWrite, AWriterKilledPartWayLeavesNoFile) {
  TempDir dir;
  const fs::path path = dir.path / "envlock.lock";
  { std::ofstream(path) << "old contents\n"; }
  constexpr std::size_t kSize = 256u << 20;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string big(kSize, 'x');
    (void)::write(ready[1], "w", 1);  // about to write
    (void)write_file_atomic(path, big);
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  ::usleep(20 * 1000);  // 256 MiB take this machine over 100 ms to write and flush
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path)) left.insert(e.path().filename().string());
  EXPECT_EQ(left, std::set<std::string>{"envlock.lock"});
  const auto size = fs::file_size(path);
  EXPECT_TRUE(size == 13 || size == kSize) << size;  // the old file or the whole new one
}

TEST(LockfileWrite, FailureLeavesTheOldFile) {
  TempDir dir;
  const fs::path missing = dir.path / "no-such-dir" / "envlock.lock";
  auto st = small().write(missing);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::Io);
  EXPECT_EQ(st.error().where, missing.string());
  // Target is a directory: rename fails, the directory and its content stay.
  fs::create_directories(dir.path / "taken" / "x");
  auto st2 = write_file_atomic(dir.path / "taken", "new");
  ASSERT_FALSE(st2.ok());
  EXPECT_TRUE(fs::is_directory(dir.path / "taken" / "x"));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++entries;
  EXPECT_EQ(entries, 1) << "the temporary file must be removed";
}

// `-o` names where the file goes: a link is written through (the link stays), a FIFO, a device
// or a folder is refused before anything is written (`-o /dev/null` once replaced the node).
TEST(LockfileWrite, FollowsALinkAndRefusesWhatIsNotAFile) {
  TempDir dir;
  fs::create_directories(dir.path / "real");
  fs::create_symlink("real/envlock.lock", dir.path / "link.lock");
  fs::create_symlink("link.lock", dir.path / "link2.lock");  // a chain, relative targets
  ASSERT_TRUE(small().write(dir.path / "link2.lock").ok());
  EXPECT_TRUE(fs::is_symlink(dir.path / "link2.lock"));
  EXPECT_TRUE(fs::is_symlink(dir.path / "link.lock"));
  EXPECT_EQ(slurp(dir.path / "real/envlock.lock"), small().to_yaml());

  ASSERT_EQ(::mkfifo((dir.path / "fifo").c_str(), 0644), 0);
  auto st = small().write(dir.path / "fifo");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::Io);
  EXPECT_EQ(st.error().where, (dir.path / "fifo").string());
  EXPECT_EQ(st.error().message, "is a FIFO, not a file envlock can write");
  EXPECT_TRUE(fs::is_fifo(dir.path / "fifo"));
  fs::create_symlink("fifo", dir.path / "to-fifo");
  auto via = write_file_atomic(dir.path / "to-fifo", "x");
  ASSERT_FALSE(via.ok());
  EXPECT_EQ(via.error().where, (dir.path / "to-fifo").string() + " (-> " + (dir.path / "fifo").string() + ")");
  auto folder = write_file_atomic(dir.path / "real", "x");
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.error().message.find("is a folder"), std::string::npos) << folder.error().message;
  fs::create_symlink("loop", dir.path / "loop");
  EXPECT_FALSE(write_file_atomic(dir.path / "loop", "x").ok());
  EXPECT_TRUE(fs::is_fifo(dir.path / "fifo"));
  EXPECT_TRUE(fs::is_directory(dir.path / "real"));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++entries;
  EXPECT_EQ(entries, 6) << "no temporary file left";
}

TEST(LockfileRead, MissingFileIsAnIoError) {
  auto r = Lockfile::read("/nonexistent/envlock.lock");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Io);
  EXPECT_EQ(r.error().where, "/nonexistent/envlock.lock");
}

// Lockfile::read goes through read_input_file (envlock/input_file.hpp; tests/core InputFile.*)
// and names what it refused: the cap (kMaxLockfileBytes, 64 MiB, the same for install, lock, diff
// and show), a FIFO, a device, a folder, a /proc file. The cap is inclusive: a sparse file of
// exactly 64 MiB is read (and refused as no YAML map, unquoted), one byte more is refused by its
// size before a byte is read.
TEST(LockfileRead, WhatIsNoLockfileIsRefusedNamingWhy) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-read-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto refused = [](const fs::path& p) {
    auto r = Lockfile::read(p);
    return r.ok() ? std::string("read") : r.error().to_string();
  };
  const fs::path big = dir / "big.lock";
  { std::ofstream touch(big); }
  fs::resize_file(big, kMaxLockfileBytes + 1);
  EXPECT_EQ(refused(big), big.string() + ": is larger than 64 MiB, more than any lockfile; it is not read\n"
                          "hint: check that this is the lockfile meant (a lockfile is a few MB); envlock reads at most 64 MiB "
                          "of one lockfile");
  fs::resize_file(big, kMaxLockfileBytes);
  EXPECT_EQ(refused(big), big.string() + ": is not an envlock.lock: its first line is not YAML `key: value`; its text is not "
                          "shown\nhint: check the path: envlock quotes no line of a file that is not a YAML map (it could hold "
                          "secrets)");
  const fs::path fifo = dir / "fifo.lock";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(refused(fifo), fifo.string() + ": is a FIFO, not a regular file\nhint: pass the project's envlock.lock, a regular file");
  fs::create_symlink("/dev/zero", dir / "zero.lock");
  EXPECT_EQ(refused(dir / "zero.lock"), (dir / "zero.lock").string() +
                                            ": is in /dev, not a file of a project; it is not read\n"
                                            "hint: pass the project's envlock.lock, a regular file");
  fs::create_symlink("/proc/self/environ", dir / "environ.lock");
  EXPECT_EQ(refused(dir / "environ.lock"), (dir / "environ.lock").string() +
                                               ": is in /proc, not a file of a project; it is not read\n"
                                               "hint: pass the project's envlock.lock, a regular file");
  fs::remove_all(dir);
}

// ---- install order and @EXPLICIT -------------------------------------------------------------

// A snapshot file: the lockfile part that capture wrote, then its `snapshot:` block. Snapshots
// written before snapshot lockfiles stopped carrying host facts list the capture host's
// `__cuda`/`__glibc`/kernel/CPU level as virtual packages.
std::string snapshot_text(const std::string& format) {
  Lockfile lf = small();
  lf.environments["default"].platforms["linux-64"].virtual_packages = {
      {"__archspec", "1", "x86_64_v3"}, {"__cuda", "12.2", "0"}, {"__glibc", "2.36", "0"},
      {"__linux", "6.1.0", "0"}, {"__unix", "0", "0"}};
  return lf.to_yaml() + "snapshot:\n  format: " + format + "\n  complete: true\n  problems: []\n";
}

TEST(LockfileSnapshot, ASnapshotsVirtualPackagesAreItsPlatformsOnlyNeverTheCaptureHostsFacts) {
  const auto lf = Lockfile::parse(snapshot_text("1"), "snap.yaml");
  ASSERT_TRUE(lf.ok()) << lf.error().to_string();
  const auto& vps = lf->environments.at("default").platforms.at("linux-64").virtual_packages;
  std::vector<std::string> got;
  for (const auto& vp : vps) got.push_back(vp.to_string());
  EXPECT_EQ(got, (std::vector<std::string>{"__linux=0=0", "__unix=0=0"}));
  EXPECT_EQ(lf->environments.at("default").platforms.at("linux-64").packages.size(), 3u);
  // A solved lockfile keeps what the solve assumed.
  const auto plain = Lockfile::parse(kSmallYaml, "envlock.lock");
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  EXPECT_EQ(plain->environments.at("default").platforms.at("linux-64").virtual_packages,
            (std::vector<VirtualPackage>{{"__glibc", "2.28", "0"}}));
}

TEST(LockfileSnapshot, UnsolvedVirtualPackagesNameTheOperatingSystemFamilyOnly) {
  auto names = [](std::string_view platform) {
    std::vector<std::string> out;
    for (const auto& vp : unsolved_virtual_packages(platform)) out.push_back(vp.to_string());
    return out;
  };
  EXPECT_EQ(names("linux-aarch64"), (std::vector<std::string>{"__linux=0=0", "__unix=0=0"}));
  EXPECT_EQ(names("osx-arm64"), (std::vector<std::string>{"__osx=0=0", "__unix=0=0"}));
  EXPECT_EQ(names("win-64"), (std::vector<std::string>{"__win=0=0"}));
  EXPECT_EQ(names("freebsd-64"), (std::vector<std::string>{"__unix=0=0"}));
  EXPECT_TRUE(names("noarch").empty());
}

TEST(LockfileSnapshot, ANewerSnapshotFormatIsRefusedAtItsLineAndColumn) {
  const std::string text = snapshot_text("2");
  const auto line = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(text.find("  format: 2")), '\n') + 1;
  const auto lf = Lockfile::parse(text, "f2.yaml");
  ASSERT_FALSE(lf.ok());
  EXPECT_EQ(lf.error().kind, ErrorKind::Parse);
  EXPECT_EQ(lf.error().where, "f2.yaml:" + std::to_string(line) + ":11");
  EXPECT_EQ(lf.error().message, "snapshot format 2 is newer than this envlock reads (format 1)");
  EXPECT_EQ(lf.error().hint, "upgrade envlock to read this snapshot");
  const auto bad = Lockfile::parse(snapshot_text("two"), "bad.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where, "bad.yaml:" + std::to_string(line) + ":11");
  EXPECT_NE(bad.error().message.find("'two'"), std::string::npos) << bad.error().message;
  EXPECT_TRUE(Lockfile::parse(snapshot_text("1"), "f1.yaml").ok());
}

TEST(Explicit, DependenciesFirstTiesByName) {
  LockedPlatform lp;
  lp.platform = "linux-64";
  lp.packages = {pkg("a", "1", "0", {"c >=1", "__glibc >=2.17"}), pkg("b", "1", "0", {"c"}),
                 pkg("c", "1", "0", {"d 1.*"}), pkg("d", "1", "0"), pkg("e", "1", "0", {"conda-forge::d"})};
  std::vector<std::string> names;
  for (const auto* p : install_order(lp)) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"d", "c", "a", "b", "e"}));
}

TEST(Explicit, CyclesAreBrokenDeterministically) {
  LockedPlatform lp;
  lp.packages = {pkg("y", "1", "0", {"x"}), pkg("x", "1", "0", {"y"}), pkg("z", "1", "0", {"x"})};
  std::vector<std::string> names;
  for (const auto* p : install_order(lp)) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"x", "y", "z"}));
}

TEST(Explicit, WritesCondaExplicitFormat) {
  const Lockfile lf = small();
  auto text = to_explicit(*lf.find("default", "linux-64"));
  ASSERT_TRUE(text.ok()) << text.error().to_string();
  const std::string a64(64, 'a');
  EXPECT_EQ(*text,
            "# This file may be used to create an environment using:\n"
            "# $ conda create --name <env> --file <this file>\n"
            "# platform: linux-64\n"
            "@EXPLICIT\n"
            "https://conda.anaconda.org/conda-forge/linux-64/libzlib-1.3.1-h2_1.conda#sha256:" + a64 + "\n"
            "https://conda.anaconda.org/conda-forge/linux-64/python-3.12.1-h1_0.conda#sha256:" + a64 + "\n"
            "https://conda.anaconda.org/conda-forge/linux-64/numpy-1.26.4-py312h3_0.conda#sha256:" + a64 + "\n");
  LockedPlatform md5_only = *lf.find("default", "linux-64");
  md5_only.packages.resize(1);
  md5_only.packages[0].sha256.clear();
  md5_only.packages[0].url = "https://u:p@host/t/abc/c/linux-64/python-3.12.1-h1_0.conda";
  auto t2 = to_explicit(md5_only);
  ASSERT_TRUE(t2.ok());
  EXPECT_NE(t2->find("\nhttps://host/c/linux-64/python-3.12.1-h1_0.conda#" + std::string(32, 'b') + "\n"),
            std::string::npos)
      << *t2;
  md5_only.packages[0].url.clear();
  auto t3 = to_explicit(md5_only);
  ASSERT_FALSE(t3.ok());
  EXPECT_EQ(t3.error().where, "python");
}

}  // namespace
}  // namespace envlock
