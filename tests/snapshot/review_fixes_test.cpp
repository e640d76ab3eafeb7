// Fixes from a newcomer's review of the snapshot commands, end to end: an empty path option is a
// usage error naming the option (every command), and a deploy target that is not an empty folder
// is a failure (exit 1) that says what it is.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "envlock/extract.hpp"
#include "envlock/hash.hpp"
#include "envlock/snapshot.hpp"
#include "snapshot/fake_host.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

using testing::FakeHost;
using testing::envlock_cmd;
using testing::run_command;
namespace fs = std::filesystem;

TEST(ReviewFixes, AnEmptyPathOptionIsAUsageErrorNamingTheOption) {
  struct Case {
    std::string args;
    std::string option;
  };
  const std::vector<Case> cases = {
      {"snapshot deploy snap.yaml -p ''", "--prefix"},
      {"snapshot capture -p '' -o x.yaml", "--prefix"},
      {"snapshot capture --root '' -o x.yaml", "--root"},
      {"snapshot capture -o ''", "--output"},
      {"snapshot capture --bundle ''", "--bundle"},
      {"snapshot lock snap.yaml -o ''", "--output"},
      {"install -l envlock.lock -p ''", "--prefix"},
      {"install -l '' -p somewhere", "--lockfile"},
      {"lock -f envlock.yaml -o ''", "--output"},
      {"list -p ''", "--prefix"},
      {"export -o ''", "--output"},
  };
  for (const auto& c : cases) {
    const auto r = run_command(envlock_cmd() + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.option + ": is empty (an empty path"), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.find("internal"), std::string::npos) << c.args << "\n" << r.err;
  }
  // --json: the same usage error as JSON on stdout.
  const auto j = run_command(envlock_cmd() + " --json snapshot deploy snap.yaml -p ''");
  EXPECT_EQ(j.exit_code, 2);
  EXPECT_NE(j.out.find("\"kind\": \"usage\""), std::string::npos) << j.out;
}

TEST(ReviewFixes, DeployIntoANonEmptyFolderOrAFileFailsWithExitOne) {
  SKIP_WITHOUT_CORPUS();
  FakeHost host;
  host.base_system();
  host.corpus_prefix("/opt/conda/envs/train");
  const fs::path snap = host.root() / "snap.yaml";
  const auto cap = run_command(envlock_cmd() + " snapshot capture --root '" + host.root().string() +
                               "' -p /opt/conda/envs/train -o '" + snap.string() + "'");
  ASSERT_TRUE(cap.exit_code == 0 || cap.exit_code == 3) << cap.err;

  const fs::path full = host.root() / "full";
  fs::create_directories(full);
  std::ofstream(full / "keep.txt") << "mine\n";
  const auto r = run_command(envlock_cmd() + " snapshot deploy '" + snap.string() + "' -p '" + full.string() + "'");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("the target prefix exists and is not empty"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(full / "keep.txt"));

  const fs::path file = host.root() / "a-file";
  std::ofstream(file) << "x\n";
  const auto f = run_command(envlock_cmd() + " snapshot deploy '" + snap.string() + "' -p '" + file.string() + "'");
  EXPECT_EQ(f.exit_code, 1) << f.err;
  EXPECT_NE(f.err.find("is a file, not a folder"), std::string::npos) << f.err;
  EXPECT_EQ(f.err.find("not empty"), std::string::npos) << f.err;

  // Inside another environment, at any depth: refused before anything is written (its files
  // would be that environment's extra files).
  const fs::path env = host.root() / "opt/conda/envs/train";
  for (const fs::path& inside : {env / "lib/sub", env / "share/a/b"}) {
    const auto n = run_command(envlock_cmd() + " snapshot deploy '" + snap.string() + "' -p '" + inside.string() + "'");
    EXPECT_EQ(n.exit_code, 1) << n.err;
    EXPECT_NE(n.err.find("error: " + inside.string() + ": is inside the environment " + env.string()), std::string::npos) << n.err;
    EXPECT_FALSE(fs::exists(inside)) << inside;
  }
  EXPECT_FALSE(fs::exists(env / "share/a"));

  // An environment the snapshot does not hold: the hint lists the ones it does.
  const auto e = run_command(envlock_cmd() + " snapshot deploy '" + snap.string() + "' -e nope -p '" + (host.root() / "new").string() + "'");
  EXPECT_EQ(e.exit_code, 2) << e.err;  // as `install -e` with an environment the lockfile lacks
  EXPECT_NE(e.err.find("error: nope: no such environment in the snapshot"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("hint: the snapshot's environments: train; pass one of them with -e"), std::string::npos) << e.err;
  EXPECT_FALSE(fs::exists(host.root() / "new"));
}

// A mistyped snapshot command is named, with the commands there are, as at the top level.
TEST(ReviewFixes, AnUnknownSnapshotCommandIsNamedWithTheCommands) {
  const auto bogus = run_command(envlock_cmd() + " snapshot bogus");
  EXPECT_EQ(bogus.exit_code, 2) << bogus.err;
  EXPECT_NE(bogus.err.find("error: envlock snapshot: unknown command 'bogus'"), std::string::npos) << bogus.err;
  EXPECT_NE(bogus.err.find("snapshot commands: capture, check, deploy, diff, lock"), std::string::npos) << bogus.err;
  EXPECT_NE(bogus.err.find("hint: run `envlock snapshot --help`"), std::string::npos) << bogus.err;
  const auto none = run_command(envlock_cmd() + " snapshot");
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("error: snapshot: a command is required after `envlock snapshot`"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("snapshot commands: capture, check, deploy, diff, lock"), std::string::npos) << none.err;
  // A real subcommand still runs (and reports its own errors).
  EXPECT_EQ(run_command(envlock_cmd() + " snapshot capture --help").exit_code, 0);
}

// `verify -p` of a path that does not exist says so (exit 1), not "it has no conda-meta/".
TEST(ReviewFixes, VerifyOfAMissingPrefixSaysItDoesNotExist) {
  const std::string missing = "/nonexistent-envlock-" + std::to_string(::getpid());
  const auto v = run_command(envlock_cmd() + " verify -p " + missing);
  EXPECT_EQ(v.exit_code, 1) << v.err;
  EXPECT_NE(v.err.find("error: " + missing + ": does not exist"), std::string::npos) << v.err;
  EXPECT_EQ(v.err.find("conda-meta"), std::string::npos) << v.err;
}

// capture --root that does not exist is about a named path: exit 1, as -p that does not exist
// (docs/cli.md), not a usage error.
TEST(ReviewFixes, CaptureRootThatDoesNotExistExitsOneAsPrefixDoes) {
  const std::string missing = "/nonexistent-envlock-" + std::to_string(::getpid());
  const std::string out = (fs::temp_directory_path() / ("envlock-never-" + std::to_string(::getpid()) + ".yaml")).string();
  const auto root = run_command(envlock_cmd() + " snapshot capture --root " + missing + " -p /opt/conda -o " + out);
  EXPECT_EQ(root.exit_code, 1) << root.err;
  EXPECT_NE(root.err.find("error: " + missing + ": --root does not exist"), std::string::npos) << root.err;
  const auto prefix = run_command(envlock_cmd() + " snapshot capture -p " + missing + " -o " + out);
  EXPECT_EQ(prefix.exit_code, root.exit_code) << prefix.err;
  EXPECT_FALSE(fs::exists(out));
}


// A lockfile from `envlock snapshot lock` carries the captured pip distributions; envlock install
// installs conda packages only, so it names each one it leaves out and points to snapshot deploy.
TEST(ReviewFixes, InstallWarnsAboutThePipPackagesItDoesNotInstall) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-review-pip-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path lock = dir / "envlock.lock";
  std::ofstream(lock) << "version: 1\nmanifest_hash: \"\"\nenvironments:\n  default:\n    requested: []\n    platforms:\n"
                         "      linux-64:\n        channels: []\n        virtual_packages: []\n        packages: []\n"
                         "        pip:\n          - name: mypkg\n            version: \"0.3.dev0\"\n"
                         "            url: https://github.com/acme/mypkg.git\n"
                         "            requirement: mypkg @ git+https://github.com/acme/mypkg.git@0123456789abcdef0123456789abcdef01234567\n"
                         "          - name: toolbox\n            version: \"1.0\"\n";
  const std::map<std::string, std::string> env{{"ENVLOCK_PKGS_DIR", (dir / "pkgs").string()}};
  const auto r = run_command(envlock_cmd() + " install -l '" + lock.string() + "' -p '" + (dir / "p").string() + "'", env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("warning: 2 pip package(s) in the lockfile were not installed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("toolbox==1.0"), std::string::npos) << r.err;
  // A VCS install is named by its requirement, never as a name==version pin.
  EXPECT_NE(r.err.find("mypkg @ git+https://github.com/acme/mypkg.git@0123456789abcdef0123456789abcdef01234567, toolbox==1.0"),
            std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("mypkg==0.3.dev0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("envlock snapshot deploy"), std::string::npos) << r.err;
  const auto j = run_command(envlock_cmd() + " --json install -l '" + lock.string() + "' -p '" + (dir / "q").string() + "'", env);
  ASSERT_EQ(j.exit_code, 0) << j.out << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["warnings"].size(), 1u) << j.out;
  EXPECT_NE(doc["warnings"][0].get<std::string>().find("toolbox==1.0"), std::string::npos) << j.out;
  fs::remove_all(dir);
}


// A bundle whose snapshot.yaml does not read names the bundle and the member, never the temporary
// folder it was unpacked into, and says the bundle is damaged.
TEST(ReviewFixes, ADamagedBundleNamesTheBundleAndTheMember) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-review-bundle-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "snapshot.yaml") << "format: 1\nenvironments: [unclosed\n";
  ArchiveEntry e;
  e.path = "snapshot.yaml";
  e.source = dir / "snapshot.yaml";
  const fs::path bundle = dir / "flip.tar.zst";
  ASSERT_TRUE(write_tar_zst(bundle, {e}).ok());
  const auto r = run_command("cd '" + dir.string() + "' && " + envlock_cmd() + " snapshot lock flip.tar.zst -o out.lock");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("error: flip.tar.zst: snapshot.yaml:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the bundle is damaged"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("envlock-bundle"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("truncated"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.lock"));
  fs::remove_all(dir);
}


const SnapshotChange* find_change(const std::vector<SnapshotChange>& changes, const std::string& section, const std::string& name) {
  for (const auto& c : changes) {
    if (c.section == section && c.name == name) return &c;
  }
  return nullptr;
}

// capture(src) -> deploy(dep) -> capture: one environment on each side is compared whatever the
// names, and drift lists the paths that differ, not only the counts.
TEST(ReviewFixes, SnapshotDiffPairsTheOnlyEnvironmentsAndListsDriftedPaths) {
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
TEST(ReviewFixes, SnapshotDiffPutsTheHostFirstAndSaysEachWordOnce) {
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
TEST(ReviewFixes, SnapshotDiffComparesEveryHostFact) {
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

// A saved output the user named with --nvidia-smi-xml/--rpm-qa that cannot be read is an error
// (exit 1, nothing written), not a partial capture that silently lacks the GPUs.
TEST(ReviewFixes, AMissingSavedCommandOutputIsAnError) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-snap-smi-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "host");
  const fs::path out = dir / "s.yaml";
  for (const std::string option : {"--nvidia-smi-xml", "--rpm-qa"}) {
    const auto r = run_command(envlock_cmd() + " snapshot capture --root '" + (dir / "host").string() + "' -p /opt/conda " + option +
                               " /nonexistent-envlock.xml -o '" + out.string() + "'");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("/nonexistent-envlock.xml: " + option + ": no such file"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
  }
  fs::remove_all(dir);
}

// --rpm-qa FILE on a host with dpkg: the named file is read (never silently ignored); a malformed
// line costs that one package and is named FILE:LINE; the other packages are recorded.
TEST(ReviewFixes, RpmQaFileIsReadLineByLineAndNamedInProblems) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-snap-rpm-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "host/var/lib/dpkg");
  fs::create_directories(dir / "host/opt/conda/conda-meta");
  std::ofstream(dir / "host/var/lib/dpkg/status") << "Package: apt\nVersion: 2.6.1\nArchitecture: amd64\nStatus: install ok installed\n";
  const fs::path rpm = dir / "rpm-qa.txt";
  std::ofstream(rpm) << "glibc\t0:2.34-100.el9\tx86_64\nglibc-2.34-100.el9.x86_64\nbash\t0:5.1.8-6.el9\tx86_64\n";
  const fs::path out = dir / "s.yaml";
  const auto r = run_command(envlock_cmd() + " snapshot capture --root '" + (dir / "host").string() + "' -p /opt/conda --rpm-qa '" +
                             rpm.string() + "' -o '" + out.string() + "' --json");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;  // partial: the bad line is a problem
  EXPECT_NE(r.err.find("warning: --rpm-qa " + rpm.string() + ": the system packages are recorded from this file; the host's "
                       "/var/lib/dpkg/status is not read"),
            std::string::npos)
      << r.err;
  const auto j = nlohmann::json::parse(r.out);
  bool named = false;
  for (const auto& p : j["problems"]) {
    EXPECT_EQ(p["where"].get<std::string>().find("rpm -qa"), std::string::npos) << p;
    if (p["where"] == rpm.string() + ":2") named = true;
  }
  EXPECT_TRUE(named) << r.out;
  auto snap = Snapshot::read(out);
  ASSERT_TRUE(snap.ok()) << snap.error().to_string();
  EXPECT_EQ(snap->host.system_package_manager, "rpm");
  ASSERT_EQ(snap->host.system_packages.size(), 2u);
  EXPECT_EQ(snap->host.system_packages[0].name, "bash");
  EXPECT_EQ(snap->host.system_packages[1].name, "glibc");

  // A file that is no rpm output at all is not ignored either: every line is named.
  const auto h = run_command(envlock_cmd() + " snapshot capture --root '" + (dir / "host").string() + "' -p /opt/conda --rpm-qa '" +
                             (dir / "host/var/lib/dpkg/status").string() + "' -o '" + out.string() + "' --json");
  EXPECT_EQ(h.exit_code, 3) << h.err;
  EXPECT_NE(h.out.find((dir / "host/var/lib/dpkg/status").string() + ":1"), std::string::npos) << h.out;
  fs::remove_all(dir);
}


std::string sha256_hex(const std::string& bytes) {
  Hasher h(HashAlgorithm::Sha256);
  h.update(bytes);
  return h.hex_digest();
}


// pip replaced a conda package's file: verify checks it against the pip RECORD (the conda record
// is shadowed), as the snapshot attributes it; a later edit is reported against RECORD.
TEST(ReviewFixes, VerifyChecksAPipReplacedFileAgainstRecordNotTheShadowedCondaRecord) {
  const fs::path p = fs::temp_directory_path() / ("envlock-review-verify-" + std::to_string(::getpid()));
  fs::remove_all(p);
  const std::string site = "lib/python3.12/site-packages";
  fs::create_directories(p / "conda-meta");
  fs::create_directories(p / site / "envlock_demo");
  fs::create_directories(p / site / "envlock_demo-2.0.dist-info");
  const std::string conda_init = "VERSION = '1.0'\n", pip_init = "VERSION = '2.0'\n";
  std::ofstream(p / "conda-meta/envlock_demo-1.0-0.json")
      << R"({"name": "envlock_demo", "version": "1.0", "build": "0", "build_number": 0, "subdir": "noarch",
           "channel": "https://conda.anaconda.org/x", "url": "https://conda.anaconda.org/x/noarch/envlock_demo-1.0-0.tar.bz2",
           "files": [")" << site << R"(/envlock_demo/__init__.py"],
           "paths_data": {"paths_version": 1, "paths": [{"_path": ")" << site << R"(/envlock_demo/__init__.py",
           "path_type": "hardlink", "sha256": ")" << sha256_hex(conda_init) << R"(", "size_in_bytes": )" << conda_init.size()
      << "}]}}\n";
  std::ofstream(p / site / "envlock_demo/__init__.py") << pip_init;
  std::ofstream(p / site / "envlock_demo-2.0.dist-info/RECORD")
      << "envlock_demo/__init__.py,sha256=" << testing::b64_sha256(pip_init) << "," << pip_init.size() << "\n"
      << "envlock_demo-2.0.dist-info/RECORD,,\n";
  const auto r = run_command(envlock_cmd() + " verify -p '" + p.string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ((r.out + r.err).find("envlock_demo/__init__.py"), std::string::npos) << r.out << r.err;

  std::ofstream(p / site / "envlock_demo/__init__.py") << "VERSION = '2.1'\n";
  const auto edited = run_command(envlock_cmd() + " verify -p '" + p.string() + "'");
  EXPECT_NE(edited.exit_code, 0) << edited.out << edited.err;
  const std::string all = edited.out + edited.err;
  EXPECT_NE(all.find("envlock_demo/__init__.py"), std::string::npos) << all;
  EXPECT_NE(all.find("RECORD"), std::string::npos) << all;
  EXPECT_EQ(all.find("recorded"), std::string::npos) << all;  // not against the conda record
  fs::remove_all(p);
}

}  // namespace
}  // namespace envlock
