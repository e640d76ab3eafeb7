// The snapshot file (round trip, determinism, format version, partial captures), the lockfile made
// from it, compatibility checks and snapshot diffs.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <unistd.h>
#include <random>

#include "envlock/snapshot.hpp"
#include "envlock/snapshot_deploy.hpp"
#include "snapshot/fake_host.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

using testing::FakeHost;
using testing::captured_package;
namespace fs = std::filesystem;

// A complete fake GPU host with the corpus python 3.13t prefix, a pip install over conda's pip,
// an editable install and a dpkg database.
struct CorpusHost {
  FakeHost host;
  CaptureOptions options;
  CorpusHost() {
    options.command_outputs["nvidia-smi"] = host.complete_gpu_host(FakeHost::Gpu::A100Driver535);
    host.corpus_prefix("/opt/conda/envs/train");
    options.prefixes = {"/opt/conda/envs/train"};
    const std::string site = "/opt/conda/envs/train/lib/python3.13t/site-packages/";
    host.write(site + "mylib-0.3.dev0.dist-info/METADATA", "Metadata-Version: 2.1\nName: MyLib\nVersion: 0.3.dev0\n");
    host.write(site + "mylib-0.3.dev0.dist-info/INSTALLER", "pip\n");
    host.write(site + "mylib-0.3.dev0.dist-info/RECORD", "mylib-0.3.dev0.dist-info/METADATA,,\n");
    host.write(site + "mylib-0.3.dev0.dist-info/direct_url.json",
               R"({"url": "file:///srv/src/mylib", "dir_info": {"editable": true}})");
    host.write(site + "mylib-0.3.dev0.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: cp313-cp313t-manylinux_2_28_x86_64\n");
  }
  [[nodiscard]] Snapshot capture_it() const { return capture(Host::tree(host.root()), options); }
};

TEST(SnapshotFile, RoundTripIsExactAndOutputIsDeterministic) {
  SKIP_WITHOUT_CORPUS();
  CorpusHost h;
  const Snapshot s = h.capture_it();
  ASSERT_TRUE(s.complete()) << s.problems.front().where << ": " << s.problems.front().message;
  const std::string text = s.to_yaml();
  EXPECT_EQ(h.capture_it().to_yaml(), text) << "same host, same bytes";
  EXPECT_EQ(text.find("\n  timestamp: "), std::string::npos) << "no capture clock unless asked";
  EXPECT_EQ(text.find("GPU-513536b6"), std::string::npos) << "no GPU UUID unless asked";
  const auto back = Snapshot::parse(text, "snap.yaml");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  ASSERT_EQ(back->environments.size(), 1u);
  EXPECT_EQ(back->host, s.host);
  EXPECT_EQ(back->environments[0].pip, s.environments[0].pip);
  EXPECT_EQ(back->environments[0].drift, s.environments[0].drift);
  ASSERT_EQ(back->environments[0].packages.size(), s.environments[0].packages.size());
  for (std::size_t i = 0; i < s.environments[0].packages.size(); ++i) {
    EXPECT_EQ(back->environments[0].packages[i], s.environments[0].packages[i]) << s.environments[0].packages[i].record.name;
  }
  EXPECT_EQ(*back, s);
  EXPECT_EQ(back->to_yaml(), text);
}

// Issue 17, point 9: a snapshot names no home folder: a prefix and an editable pip source under
// $HOME are written `~/…` (in the snapshot block and in the envlock.lock part's url and
// requirement) and read back against the reader's $HOME; the bytes are the same on re-writing.
TEST(SnapshotFile, PathsUnderTheHomeFolderAreWrittenWithTilde) {
  SKIP_WITHOUT_CORPUS();
  const char* old_home = std::getenv("HOME");
  const std::string saved = old_home != nullptr ? old_home : "";
  CorpusHost h;
  const Snapshot s = h.capture_it();
  ::setenv("HOME", "/opt/conda", 1);
  const std::string prefix_text = s.to_yaml();
  EXPECT_NE(prefix_text.find("\n      prefix: \"~/envs/train\"\n"), std::string::npos) << prefix_text;
  EXPECT_EQ(prefix_text.find("/opt/conda/"), std::string::npos);
  ::setenv("HOME", "/srv", 1);
  const std::string pip_text = s.to_yaml();
  EXPECT_EQ(pip_text.find("/srv/"), std::string::npos) << pip_text;
  EXPECT_NE(pip_text.find(" url: \"~/src/mylib\"\n"), std::string::npos) << pip_text;  // the envlock.lock part
  EXPECT_NE(pip_text.find(" requirement: MyLib @ ~/src/mylib\n"), std::string::npos) << pip_text;
  // The snapshot block, quoted as the envlock.lock part is (one emitter, one quoting policy).
  EXPECT_NE(pip_text.find("\n          url: \"~/src/mylib\"\n"), std::string::npos) << pip_text;
  ::setenv("HOME", "/home/bo", 1);  // read by another user: their home folder
  const auto back = Snapshot::parse(prefix_text, "snap.yaml");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->environments.at(0).prefix, "/home/bo/envs/train");
  const auto pip_back = Snapshot::parse(pip_text, "snap.yaml");
  ASSERT_TRUE(pip_back.ok()) << pip_back.error().to_string();
  const auto& pip = pip_back->environments.at(0).pip;
  const auto mylib = std::find_if(pip.begin(), pip.end(), [](const PipDistribution& d) { return d.name == "mylib" || d.name == "MyLib"; });
  ASSERT_NE(mylib, pip.end());
  EXPECT_EQ(mylib->url, "file:///home/bo/src/mylib");
  const auto lock = Lockfile::parse(pip_text, "snap.yaml", "/work");
  ASSERT_TRUE(lock.ok()) << lock.error().to_string();
  const auto& lock_pip = lock->environments.begin()->second.platforms.begin()->second.pip;
  const auto in_lock = std::find_if(lock_pip.begin(), lock_pip.end(), [](const PipPackage& p) { return p.name == "mylib"; });
  ASSERT_NE(in_lock, lock_pip.end());
  EXPECT_EQ(in_lock->url, "file:///home/bo/src/mylib");
  EXPECT_EQ(in_lock->requirement, "MyLib @ file:///home/bo/src/mylib");
  EXPECT_EQ(pip_back->to_yaml(), pip_text);
  EXPECT_EQ(back->to_yaml(), prefix_text);
  if (old_home != nullptr) ::setenv("HOME", saved.c_str(), 1);
  else ::unsetenv("HOME");
}

TEST(SnapshotFile, CondaPartIsAnEnvlockLockDocument) {
  SKIP_WITHOUT_CORPUS();
  CorpusHost h;
  const Snapshot s = h.capture_it();
  const std::string text = s.to_yaml();
  // Everything before `snapshot:` is what Lockfile::to_yaml writes for to_lockfile().
  const auto at = text.find("\nsnapshot:\n");
  ASSERT_NE(at, std::string::npos);
  const std::string lock_text = to_lockfile(s, ShadowedRecords::LeftOut).to_yaml();
  EXPECT_NE(text.substr(0, at + 1).find(lock_text), std::string::npos);
  const auto lock = Lockfile::parse(lock_text, "lock");
  ASSERT_TRUE(lock.ok()) << lock.error().to_string();
  const auto& lp = lock->environments.at("train").platforms.at("osx-arm64");
  EXPECT_EQ(lp.packages.size(), 16u);
  // The editable install is a direct reference, never `mylib==0.3.dev0`.
  ASSERT_EQ(lp.pip.size(), 2u);
  EXPECT_EQ(lp.pip[1].name, "mylib");
  EXPECT_EQ(lp.pip[1].requirement, "MyLib @ file:///srv/src/mylib");
  EXPECT_EQ(lp.pip[0].name, "imagesize");
  EXPECT_EQ(lp.pip[0].version, "1.4.1");
  // Never solved: only the environment's own platform family, none of the capture host's facts
  // (this osx-arm64 prefix sits on a linux GPU host with glibc, a kernel and CUDA 12.2).
  EXPECT_EQ(lp.virtual_packages, (std::vector<VirtualPackage>{{"__osx", "0", "0"}, {"__unix", "0", "0"}}));
}

TEST(SnapshotFile, PartialCaptureIsMarkedAndSurvivesTheRoundTrip) {
  SKIP_WITHOUT_CORPUS();
  CorpusHost h;
  fs::remove(h.host.local("/etc/os-release"));
  h.host.write("/opt/conda/envs/train/conda-meta/zlib-1.3-0.json", "not json");
  const Snapshot s = h.capture_it();
  ASSERT_FALSE(s.complete());
  ASSERT_EQ(s.problems.size(), 2u);
  EXPECT_EQ(s.problems[0].where, "/etc/os-release");
  EXPECT_EQ(s.problems[1].where, "/opt/conda/envs/train/conda-meta/zlib-1.3-0.json");
  const std::string text = s.to_yaml();
  EXPECT_NE(text.find("complete: false"), std::string::npos);
  const auto back = Snapshot::parse(text, "s");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_FALSE(back->complete());
  EXPECT_EQ(back->problems, s.problems);
}

TEST(SnapshotFile, NewerFormatIsRefusedNamingBothVersions) {
  SKIP_WITHOUT_CORPUS();
  CorpusHost h;
  std::string text = h.capture_it().to_yaml();
  const auto at = text.find("  format: 1\n");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 12, "  format: 2\n");
  const auto r = Snapshot::parse(text, "future.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Parse);
  EXPECT_NE(r.error().message.find("format 2"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("format 1"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().where.rfind("future.yaml:", 0), 0u) << r.error().where;
}

TEST(SnapshotFile, BadInputNamesFileLineAndColumn) {
  const auto yaml = Snapshot::parse("snapshot:\n  format: [1\n", "bad.yaml");
  ASSERT_FALSE(yaml.ok());
  EXPECT_EQ(yaml.error().where.rfind("bad.yaml:", 0), 0u);
  const auto lockfile = Snapshot::parse("version: 1\nenvironments: {}\n", "lock.yaml");
  ASSERT_FALSE(lockfile.ok());
  EXPECT_NE(lockfile.error().message.find("not an envlock snapshot"), std::string::npos);
  const auto lie = Snapshot::parse("snapshot:\n  format: 1\n  complete: true\n  problems:\n    - {where: x, message: y}\n  host: {}\n",
                                   "lie.yaml");
  ASSERT_FALSE(lie.ok());
  EXPECT_EQ(lie.error().where, "lie.yaml:3:13");
}

// Hand edits that would make the file read differently from what it shows, or deploy an empty
// environment, are refused at their line: a key given twice (yaml-cpp would keep one silently),
// an environment without its prefix or platform, or on a platform its lockfile part does not lock.
TEST(SnapshotFile, HandEditsThatChangeItsMeaningAreRefused) {
  SKIP_WITHOUT_CORPUS();
  CorpusHost h;
  const std::string text = h.capture_it().to_yaml();
  ASSERT_TRUE(Snapshot::parse(text, "s.yaml").ok());
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) t.replace(at, from.size(), to);
    return Snapshot::parse(t, "s.yaml");
  };
  auto line_of = [&](const std::string& needle) {
    const auto at = text.find(needle);
    return std::to_string(1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  };
  const std::string glibc = "    glibc: \"2.36\"\n";
  const auto dup = edited(glibc, glibc + "    glibc: \"2.17\"\n");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().message, "duplicate key `glibc` (first at line " + line_of(glibc) + ")");
  EXPECT_EQ(dup.error().where, "s.yaml:" + std::to_string(std::stoi(line_of(glibc)) + 1) + ":5");
  const auto two = edited("\nsnapshot:\n", "\nsnapshot:\n  format: 1\nsnapshot:\n");  // a second section
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.error().message, "duplicate key `snapshot`");
  const std::string plat = "      platform: osx-arm64\n";  // the corpus prefix is osx-arm64
  const auto noplat = edited(plat, "");
  ASSERT_FALSE(noplat.ok());
  EXPECT_EQ(noplat.error().message, "environment `train` has no `platform`");
  const auto other = edited(plat, "      platform: linux-64\n");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().message,
            "environment `train` was captured on platform `linux-64`, which its lockfile part does not lock (it has: osx-arm64)");
  EXPECT_EQ(other.error().where, "s.yaml:" + line_of(plat) + ":17");
  const auto noprefix = edited("      prefix: /opt/conda/envs/train\n", "");
  ASSERT_FALSE(noprefix.ok());
  EXPECT_EQ(noprefix.error().message, "environment `train` has no `prefix`");
}

TEST(SnapshotFile, WriteIsAtomicAndReadable) {
  SKIP_WITHOUT_CORPUS();
  CorpusHost h;
  const Snapshot s = h.capture_it();
  const fs::path out = h.host.root() / "out/snap.yaml";
  fs::create_directories(out.parent_path());
  std::ofstream(out) << "old content";
  ASSERT_TRUE(s.write(out).ok());
  const auto back = Snapshot::read(out);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, s);
  EXPECT_EQ(std::distance(fs::directory_iterator(out.parent_path()), fs::directory_iterator()), 1) << "no temporary left";
  const auto missing = Snapshot::read(h.host.root() / "nope.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::Io);
}

// ----- compatibility -------------------------------------------------------------------------

HostFacts linux_host(const std::string& glibc, const std::string& cuda, const std::string& level) {
  HostFacts h;
  h.platform = "linux-64";
  h.kernel = "5.15.0-105-generic";
  h.glibc = glibc;
  h.cpu_arch = "x86_64";
  h.cpu_level = level;
  h.libstdcxx_glibcxx = "3.4.30";
  h.libstdcxx_cxxabi = "1.3.13";
  if (!cuda.empty()) h.nvidia = NvidiaFacts{"535.54.03", cuda, {}};
  return h;
}

TEST(Compatibility, TooOldGlibcAndDriverNameThePackage) {
  Snapshot s;
  s.host = linux_host("2.36", "12.2", "x86_64_v3");
  CapturedEnvironment env;
  env.name = "train";
  env.platform = "linux-64";
  env.packages = {captured_package("libgcc-ng", "13.2.0", {"__glibc >=2.17,<3.0.a0"}),
                  captured_package("pytorch", "2.3.1", {"__cuda", "__glibc >=2.28"}),
                  captured_package("cuda-version", "12.4", {}, {"__cuda >=12", "cudatoolkit 12.4|12.4.*"}),
                  captured_package("libstdcxx-ng", "13.2.0", {}),
                  captured_package("numpy", "2.0.0", {"__archspec 1 x86_64_v3"})};
  EXPECT_TRUE(check_compatibility(s, env, s.host).empty()) << check_compatibility(s, env, s.host)[0].to_string();

  const auto old = check_compatibility(s, env, linux_host("2.27", "11.8", "x86_64_v2"));
  ASSERT_EQ(old.size(), 3u);
  EXPECT_EQ(old[0].to_string(), "pytorch 2.3.1 needs __glibc >=2.28; the target has 2.27");
  EXPECT_EQ(old[1].to_string(), "cuda-version 12.4 needs __cuda >=12; the target has 11.8");
  EXPECT_EQ(old[2].needed_by, "numpy 2.0.0");
  EXPECT_EQ(old[2].target_has, "x86_64_v2");

  const auto no_gpu = check_compatibility(s, env, linux_host("2.36", "", "x86_64_v4"));
  ASSERT_EQ(no_gpu.size(), 1u) << "constrains only bind when the target has a driver";
  EXPECT_EQ(no_gpu[0].to_string(), "pytorch 2.3.1 needs __cuda; the target has no NVIDIA driver");
}

TEST(Compatibility, PlatformPipWheelsAndSystemLibstdcxx) {
  Snapshot s;
  s.host = linux_host("2.36", "", "x86_64_v3");
  CapturedEnvironment env;
  env.name = "app";
  env.platform = "linux-64";
  env.packages = {captured_package("python", "3.11.9", {})};
  PipDistribution wheel;
  wheel.name = "tokenizers";
  wheel.version = "0.19.1";
  wheel.wheel_tags = {"cp311-cp311-manylinux_2_17_x86_64", "cp311-cp311-manylinux2014_x86_64"};
  env.pip = {wheel};
  HostFacts target = linux_host("2.12", "", "x86_64_v3");
  target.libstdcxx_glibcxx = "3.4.19";
  auto failed = check_compatibility(s, env, target);
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[0].to_string(), "pip:tokenizers 0.19.1 needs glibc >=2.17 (manylinux); the target has 2.12");
  EXPECT_EQ(failed[1].requirement, "libstdc++ GLIBCXX_3.4.30");
  EXPECT_EQ(failed[1].target_has, "GLIBCXX_3.4.19");
  HostFacts arm = linux_host("2.36", "", "aarch64");
  arm.platform = "linux-aarch64";
  arm.cpu_arch = "aarch64";
  failed = check_compatibility(s, env, arm);
  ASSERT_GE(failed.size(), 2u);
  EXPECT_EQ(failed[0].to_string(), "environment app needs platform linux-64; the target has linux-aarch64");
  EXPECT_EQ(failed[1].requirement, "a wheel for x86_64");
}

// ----- diff ---------------------------------------------------------------------------------------

// A partial capture on one side is said first: `complete` and each problem, so a package its
// unreadable record left out does not read as a plain removal.
TEST(SnapshotDiff, APartialSideIsSaidWithItsProblems) {
  SKIP_WITHOUT_CORPUS();
  CorpusHost before;
  const Snapshot a = before.capture_it();
  CorpusHost after;
  after.host.write("/opt/conda/envs/train/conda-meta/tzdata-2025a-h78e105d_0.json", "{ not json");
  const Snapshot b = after.capture_it();
  ASSERT_FALSE(b.complete());
  const auto changes = diff_snapshots(a, b);
  ASSERT_GE(changes.size(), 3u);
  EXPECT_EQ(changes[0].section, "capture");
  EXPECT_EQ(changes[0].name, "complete");
  EXPECT_EQ(changes[0].before, "yes");
  EXPECT_EQ(changes[0].after, "no (partial capture)");
  EXPECT_EQ(changes[1].section, "capture");
  EXPECT_EQ(changes[1].kind, SnapshotChange::Kind::Added);
  EXPECT_EQ(changes[1].name, "problem /opt/conda/envs/train/conda-meta/tzdata-2025a-h78e105d_0.json");
  EXPECT_TRUE(std::any_of(changes.begin(), changes.end(),
                          [](const SnapshotChange& c) { return c.section == "conda:train" && c.name == "tzdata"; }));
}

TEST(SnapshotDiff, PackagesPipDriftAndHostFacts) {
  SKIP_WITHOUT_CORPUS();
  CorpusHost before;
  const Snapshot a = before.capture_it();
  CorpusHost after;
  after.host.write("/proc/sys/kernel/osrelease", "6.1.0-21-amd64\n");
  after.options.command_outputs["nvidia-smi"] =
      after.host.nvidia("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024",
                        "influxdata__telegraf/plugins__inputs__nvidia_smi__testdata__rtx-3060-v12.xml");
  fs::remove(after.host.local("/opt/conda/envs/train/conda-meta/tzdata-2025a-h78e105d_0.json"));
  after.host.write("/opt/conda/envs/train/stray.txt", "x");
  after.host.dpkg_status("pkg__fanal__analyzer__pkg__dpkg__testdata__dpkg_apt");
  const Snapshot b = after.capture_it();
  const auto changes = diff_snapshots(a, b);
  auto find = [&](const std::string& section, const std::string& name) -> const SnapshotChange* {
    for (const auto& c : changes) {
      if (c.section == section && c.name == name) return &c;
    }
    return nullptr;
  };
  const auto* kernel = find("host", "kernel");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->before, "6.1.0-18-amd64");
  EXPECT_EQ(kernel->after, "6.1.0-21-amd64");
  const auto* driver = find("host", "nvidia driver");
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver->after, "550.54.14");
  ASSERT_NE(find("host", "cuda (driver)"), nullptr);
  ASSERT_NE(find("host", "gpus"), nullptr);
  const auto* tz = find("conda:train", "tzdata");
  ASSERT_NE(tz, nullptr);
  EXPECT_EQ(tz->kind, SnapshotChange::Kind::Removed);
  const auto* stray = find("drift:train", "unowned files");
  ASSERT_NE(stray, nullptr);
  // mylib's RECORD lists only METADATA: its INSTALLER, RECORD, WHEEL and direct_url.json are unowned.
  EXPECT_EQ(stray->before, "4");
  EXPECT_EQ(stray->after, "5");
  EXPECT_NE(find("system", "fdisk:amd64"), nullptr);
  EXPECT_TRUE(diff_snapshots(a, a).empty());
}


using testing::envlock_cmd;
using testing::run_command;

const SnapshotChange* find_change(const std::vector<SnapshotChange>& changes, const std::string& section, const std::string& name) {
  for (const auto& c : changes) {
    if (c.section == section && c.name == name) return &c;
  }
  return nullptr;
}

// capture(src) -> deploy(dep) -> capture: one environment on each side is compared whatever the
// names, and drift lists the paths that differ, not only the counts.
TEST(SnapshotDiff, SnapshotDiffPairsTheOnlyEnvironmentsAndListsDriftedPaths) {
  Snapshot a, b;
  CapturedEnvironment src;
  src.name = "src";
  src.prefix = "/opt/conda/envs/src";
  src.drift.unowned = {"notes.txt"};
  CapturedPackage pkg;
  pkg.record.name = "zlib";
  pkg.record.version = *Version::parse("1.3");
  pkg.record.build = "h0";
  src.packages.push_back(pkg);
  CapturedEnvironment dep = src;
  dep.name = "dep";
  dep.prefix = "/opt/conda/envs/dep";
  dep.drift.unowned = {"new.txt"};
  a.environments = {src};
  b.environments = {dep};
  const auto changes = diff_snapshots(a, b);
  const auto* paired = find_change(changes, "environment", "compared (the only one on each side)");
  ASSERT_NE(paired, nullptr);
  EXPECT_EQ(paired->before, "src");
  EXPECT_EQ(paired->after, "dep");
  EXPECT_EQ(find_change(changes, "environment", "src"), nullptr);
  EXPECT_EQ(find_change(changes, "environment", "dep"), nullptr);
  EXPECT_EQ(find_change(changes, "conda:src->dep", "zlib"), nullptr);  // same package: no change
  const auto* prefix = find_change(changes, "environment", "src->dep");
  ASSERT_NE(prefix, nullptr);
  EXPECT_EQ(prefix->after, "/opt/conda/envs/dep");
  const auto* gone = find_change(changes, "drift:src->dep", "unowned notes.txt");
  ASSERT_NE(gone, nullptr);
  EXPECT_EQ(gone->kind, SnapshotChange::Kind::Removed);
  const auto* added = find_change(changes, "drift:src->dep", "unowned new.txt");
  ASSERT_NE(added, nullptr);
  EXPECT_EQ(added->kind, SnapshotChange::Kind::Added);
  EXPECT_EQ(find_change(changes, "drift:src->dep", "unowned files"), nullptr);  // 1 and 1

  // Several environments: still paired by name.
  CapturedEnvironment other = src;
  other.name = "other";
  a.environments.push_back(other);
  const auto by_name = diff_snapshots(a, b);
  EXPECT_EQ(find_change(by_name, "environment", "compared (the only one on each side)"), nullptr);
  ASSERT_NE(find_change(by_name, "environment", "dep"), nullptr);
  EXPECT_TRUE(diff_snapshots(a, a).empty());
}

// snapshot diff: the host first, then each environment's sections; a drifted path's line says
// "unowned"/"missing" once (was `+ unowned new.txt unowned`, `+ missing bin/x missing (libx)`).
TEST(SnapshotDiff, SnapshotDiffPutsTheHostFirstAndSaysEachWordOnce) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-snapdiff-order-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Snapshot a;
  a.host.platform = "linux-64";
  a.host.kernel = "6.1.0-18-amd64";
  CapturedEnvironment train;
  train.name = "train";
  train.prefix = "/opt/conda/envs/train";
  train.platform = "linux-64";
  train.drift.unowned = {"notes.txt"};
  a.environments = {train};
  Snapshot b = a;
  b.host.kernel = "6.1.0-21-amd64";
  b.environments[0].drift.unowned = {"new.txt"};
  b.environments[0].drift.missing = {{"libx", {"bin/x"}}};
  const auto changes = diff_snapshots(a, b);
  ASSERT_FALSE(changes.empty());
  EXPECT_EQ(changes.front().section, "host");
  EXPECT_EQ(changes.back().section, "drift:train");
  ASSERT_TRUE(a.write(dir / "a.yaml").ok());
  ASSERT_TRUE(b.write(dir / "b.yaml").ok());
  const auto r = run_command(envlock_cmd() + " snapshot diff '" + (dir / "a.yaml").string() + "' '" + (dir / "b.yaml").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "host:\n"
            "  ~ kernel: 6.1.0-18-amd64 -> 6.1.0-21-amd64\n"
            "drift:train:\n"
            "  + missing bin/x (libx)\n"
            "  ~ missing files: 0 -> 1\n"
            "  + unowned new.txt\n"
            "  - unowned notes.txt\n");
  fs::remove_all(dir);
}

// Every host fact a snapshot records is compared (issue 17): os-release's codename and
// PRETTY_NAME, the system package manager, nvidia-smi's driver and libcuda when they disagree with
// the kernel module, each GPU's architecture, compute capability and memory (not only its name), a
// dpkg package removed with its configuration kept (same version, another status), and the system
// Pythons' pip packages.
TEST(SnapshotDiff, SnapshotDiffComparesEveryHostFact) {
  Snapshot a;
  a.host.platform = "linux-64";
  a.host.os = {"ubuntu", "22.04", "jammy", "Ubuntu 22.04.3 LTS"};
  a.host.system_package_manager = "dpkg";
  a.host.system_packages = {{"libcudnn8", "8.9.7.29-1+cuda12.2", "amd64", "install ok installed"},
                            {"nano", "6.2-1", "amd64", "install ok installed"}};
  a.host.nvidia = NvidiaFacts{};
  a.host.nvidia->driver_version = "535.104.05";
  a.host.nvidia->cuda_version = "12.2";
  a.host.nvidia->gpus = {{"NVIDIA A100-SXM4-80GB", "Ampere", "", 81920, ""}};
  a.host.system_python = {{"/usr/lib/python3/dist-packages", {{"six", "1.16.0", "", "index"}}}};
  Snapshot b = a;
  b.host.os = {"ubuntu", "22.04", "jammy", "Ubuntu 22.04.4 LTS"};
  b.host.system_packages[1].status = "deinstall ok config-files";
  b.host.nvidia->smi_driver_version = "535.161.07";
  b.host.nvidia->libcuda_version = "535.161.07";
  b.host.nvidia->gpus = {{"NVIDIA A100-SXM4-80GB", "Ampere", "8.0", 40960, ""}};
  b.host.system_python = {{"/usr/lib/python3/dist-packages", {{"six", "1.16.0", "", "index"}}},
                          {"/usr/local/lib/python3.10/dist-packages", {{"requests", "2.31.0", "pip", "index"}}}};
  using K = SnapshotChange::Kind;
  EXPECT_EQ(diff_snapshots(a, b),
            (std::vector<SnapshotChange>{
                {K::Changed, "host", "gpus", "NVIDIA A100-SXM4-80GB (Ampere, 81920 MiB)", "NVIDIA A100-SXM4-80GB (Ampere, sm 8.0, 40960 MiB)"},
                {K::Added, "host", "libcuda", "", "535.161.07"},
                {K::Added, "host", "nvidia driver (nvidia-smi)", "", "535.161.07"},
                {K::Changed, "host", "os pretty name", "Ubuntu 22.04.3 LTS", "Ubuntu 22.04.4 LTS"},
                {K::Changed, "system", "nano:amd64", "6.2-1", "6.2-1 (deinstall ok config-files)"},
                {K::Added, "system-python", "/usr/local/lib/python3.10/dist-packages requests", "", "2.31.0 [pip]"},
            }));
  Snapshot c = b;
  c.host.system_package_manager = "rpm";
  c.host.os.version_codename = "noble";
  EXPECT_EQ(diff_snapshots(b, c), (std::vector<SnapshotChange>{{K::Changed, "host", "os codename", "jammy", "noble"},
                                                               {K::Changed, "host", "system package manager", "dpkg", "rpm"}}));
  EXPECT_TRUE(diff_snapshots(c, c).empty());
}

}  // namespace
}  // namespace envlock
