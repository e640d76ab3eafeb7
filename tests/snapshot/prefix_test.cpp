// Prefix capture: conda-meta records, pip dist-info, shadowing, drift, corrupt input.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "envlock/diff.hpp"
#include "envlock/hash.hpp"
#include "envlock/pypi_name.hpp"
#include "envlock/readers.hpp"
#include "envlock/snapshot.hpp"
#include "snapshot/fake_host.hpp"

namespace envlock {
namespace {

using testing::FakeHost;
using testing::corpus_dir;
using testing::slurp;
namespace fs = std::filesystem;

std::string sha256_hex(const std::string& bytes) {
  Hasher h(HashAlgorithm::Sha256);
  h.update(bytes);
  return h.hex_digest();
}

const CapturedPackage* find_pkg(const CapturedEnvironment& env, const std::string& name) {
  for (const auto& p : env.packages) {
    if (p.record.name == name) return &p;
  }
  return nullptr;
}

// ----- pip dist-info ---------------------------------------------------------------------------

TEST(DistInfo, RealImagesizeInstalledByPip) {
  SKIP_WITHOUT_CORPUS();
  FakeHost host;
  host.corpus_prefix("/opt/env");
  const fs::path dir = host.local("/opt/env/lib/python3.13t/site-packages/imagesize-1.4.1.dist-info");
  const auto d = read_dist_info(dir, "lib/python3.13t/site-packages/imagesize-1.4.1.dist-info");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->name, "imagesize");
  EXPECT_EQ(d->version, "1.4.1");
  EXPECT_EQ(d->installer, "pip");
  EXPECT_EQ(d->source, PipSource::Index);
  EXPECT_EQ(d->requirement(), "imagesize==1.4.1");
  // RECORD's urlsafe-base64 hash of INSTALLER decodes to the sha256 of the bytes pip wrote.
  const auto installer = std::find_if(d->files.begin(), d->files.end(),
                                      [](const RecordEntry& e) { return e.path == "imagesize-1.4.1.dist-info/INSTALLER"; });
  ASSERT_NE(installer, d->files.end());
  EXPECT_EQ(installer->sha256, sha256_hex("pip\n"));
  EXPECT_EQ(installer->size, 4u);
  // Unhashed rows (RECORD itself, .pyc) keep an empty hash.
  const auto record = std::find_if(d->files.begin(), d->files.end(),
                                   [](const RecordEntry& e) { return e.path == "imagesize-1.4.1.dist-info/RECORD"; });
  ASSERT_NE(record, d->files.end());
  EXPECT_TRUE(record->sha256.empty());
  EXPECT_FALSE(record->size.has_value());
}

TEST(DistInfo, WithoutRecordIsAnErrorNamingRecord) {
  SKIP_WITHOUT_CORPUS();
  FakeHost host;
  host.corpus_prefix("/opt/env");
  const fs::path dir = host.local("/opt/env/lib/python3.13t/site-packages/imagesize-1.4.1.dist-info");
  fs::remove(dir / "RECORD");
  const auto d = read_dist_info(dir, "site/imagesize-1.4.1.dist-info");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().where, "site/imagesize-1.4.1.dist-info/RECORD");
  EXPECT_NE(d.error().message.find("imagesize 1.4.1"), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().hint.find("--force-reinstall"), std::string::npos);
}

TEST(DistInfo, EditableAndVcsInstallsAreNeverPlainPins) {
  FakeHost host;
  const fs::path site = host.local("/env/lib/python3.11/site-packages");
  auto make = [&](const std::string& name, const std::string& direct_url) {
    const fs::path d = site / (name + "-0.1.dist-info");
    fs::create_directories(d);
    std::ofstream(d / "METADATA") << "Metadata-Version: 2.1\nName: " << name << "\nVersion: 0.1\n\nbody\n";
    std::ofstream(d / "INSTALLER") << "pip\n";
    std::ofstream(d / "RECORD") << name << "-0.1.dist-info/METADATA,,\n";
    std::ofstream(d / "direct_url.json") << direct_url;
    return read_dist_info(d, name + "-0.1.dist-info");
  };
  const auto editable = make("mylib", R"({"url": "file:///home/user/src/mylib", "dir_info": {"editable": true}})");
  ASSERT_TRUE(editable.ok()) << editable.error().to_string();
  EXPECT_EQ(editable->source, PipSource::Editable);
  EXPECT_EQ(editable->requirement(), "mylib @ file:///home/user/src/mylib");
  const auto vcs = make("tool", R"({"url": "https://user:tok@github.com/org/tool.git",
      "vcs_info": {"vcs": "git", "commit_id": "4f1c7a1e0f0e1d2c3b4a59687766554433221100", "requested_revision": "main"}})");
  ASSERT_TRUE(vcs.ok()) << vcs.error().to_string();
  EXPECT_EQ(vcs->source, PipSource::Vcs);
  EXPECT_EQ(vcs->url, "https://github.com/org/tool.git") << "credentials stripped";
  EXPECT_EQ(vcs->requirement(), "tool @ git+https://github.com/org/tool.git@4f1c7a1e0f0e1d2c3b4a59687766554433221100");
  const auto archive = make("whl", R"({"url": "https://example.org/whl-0.1-py3-none-any.whl", "archive_info": {"hashes": {"sha256": "ab"}}})");
  ASSERT_TRUE(archive.ok());
  EXPECT_EQ(archive->requirement(), "whl @ https://example.org/whl-0.1-py3-none-any.whl#sha256=ab");
  const auto broken = make("bad", R"({"url": 5})");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().where, "bad-0.1.dist-info/direct_url.json");
}

TEST(DistInfo, MalformedRecordRowNamesTheLine) {
  FakeHost host;
  const fs::path d = host.local("/env/site/x-1.dist-info");
  fs::create_directories(d);
  std::ofstream(d / "METADATA") << "Name: x\nVersion: 1\n";
  std::ofstream(d / "RECORD") << "x/__init__.py,sha256=AAAA,0\n";
  const auto r = read_dist_info(d, "site/x-1.dist-info");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "site/x-1.dist-info/RECORD:1");
  std::ofstream(d / "RECORD") << "\"x/a,b.py\",,\n\"unterminated,,\n";
  const auto q = read_dist_info(d, "site/x-1.dist-info");
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().where, "site/x-1.dist-info/RECORD:2");
}

// ----- the real corpus prefix --------------------------------------------------------------------

TEST(PrefixCapture, RealPython313PrefixFromTheCorpus) {
  SKIP_WITHOUT_CORPUS();
  FakeHost host;
  host.corpus_prefix("/home/ana/miniforge3/envs/for_pip");
  std::vector<CaptureProblem> problems;
  CaptureOptions opt;
  const auto env = capture_prefix(Host::tree(host.root()), "/home/ana/miniforge3/envs/for_pip", "linux-64", opt, problems);
  ASSERT_TRUE(env.ok()) << env.error().to_string();
  EXPECT_TRUE(problems.empty()) << problems.front().where << ": " << problems.front().message;
  EXPECT_EQ(env->name, "for_pip");
  EXPECT_EQ(env->prefix, "/home/ana/miniforge3/envs/for_pip");
  EXPECT_EQ(env->platform, "osx-arm64");
  ASSERT_EQ(env->packages.size(), 16u);
  const auto* python = find_pkg(*env, "python");
  ASSERT_NE(python, nullptr);
  EXPECT_EQ(python->record.version.to_string(), "3.13.2");
  EXPECT_EQ(python->record.build, "hfd29fff_1_cp313t");
  EXPECT_EQ(python->record.channel, "https://conda.anaconda.org/conda-forge");
  EXPECT_EQ(python->record.url, "https://conda.anaconda.org/conda-forge/osx-arm64/python-3.13.2-hfd29fff_1_cp313t.conda");
  EXPECT_EQ(python->files.size(), 1875u);
  EXPECT_TRUE(python->shadowed_by.empty());
  // pip's own dist-info belongs to the conda package pip; only imagesize was installed by pip.
  ASSERT_EQ(env->pip.size(), 1u);
  EXPECT_EQ(env->pip[0].name, "imagesize");
  EXPECT_EQ(env->pip[0].installer, "pip");
  EXPECT_TRUE(env->pip[0].shadows.empty());
  // The corpus holds the records, not the files: every package with files has them missing;
  // imagesize's modules are missing too, and its INSTALLER (written by the test) matches RECORD.
  EXPECT_EQ(env->drift.missing.at("python").size(), 1875u);
  EXPECT_EQ(env->drift.missing.count("python_abi"), 0u) << "python_abi installs no files";
  EXPECT_TRUE(env->drift.missing.count("pip:imagesize"));
  EXPECT_TRUE(env->drift.modified.empty());
  EXPECT_TRUE(env->drift.unowned.empty()) << env->drift.unowned.front();

  // Round trip: the snapshot's lockfile against the prefix it describes (read by read_prefix, as
  // `envlock diff LOCK PREFIX` reads it) shows no pip change.
  Snapshot snap;
  snap.environments.push_back(*env);
  auto installed = read_prefix(host.local("/home/ana/miniforge3/envs/for_pip"));
  ASSERT_TRUE(installed.ok()) << installed.error().to_string();
  ASSERT_EQ(installed->environments.at("default").platforms.at("osx-arm64").pip.size(), 1u);
  const LockDiff d = diff_lockfiles(to_lockfile(snap, ShadowedRecords::LeftOut), *installed);
  for (const auto& g : d.groups) {
    for (const auto& c : g.changes) EXPECT_FALSE(c.pypi) << c.name << " " << change_kind_name(c.kind);
  }
}

TEST(PrefixCapture, PipOverACondaPackageShadowsIt) {
  SKIP_WITHOUT_CORPUS();
  FakeHost host;
  host.corpus_prefix("/opt/conda/envs/x");
  // `pip install --upgrade pip` over conda's pip: the conda dist-info goes, pip writes its own.
  const fs::path site = host.local("/opt/conda/envs/x/lib/python3.13t/site-packages");
  fs::remove_all(site / "pip-25.0.1.dist-info");
  fs::create_directories(site / "pip-25.1.dist-info");
  std::ofstream(site / "pip-25.1.dist-info/METADATA") << "Metadata-Version: 2.1\nName: pip\nVersion: 25.1\n";
  std::ofstream(site / "pip-25.1.dist-info/INSTALLER") << "pip\n";
  std::ofstream(site / "pip-25.1.dist-info/RECORD")
      << "pip-25.1.dist-info/INSTALLER,sha256=zuuue4knoyJ-UwPPXg8fezS7VCrXJQrAP7zeNuwvFQg,4\npip-25.1.dist-info/RECORD,,\n";
  std::vector<CaptureProblem> problems;
  const auto env = capture_prefix(Host::tree(host.root()), "/opt/conda/envs/x", "linux-64", {}, problems);
  ASSERT_TRUE(env.ok()) << env.error().to_string();
  const auto* pip = find_pkg(*env, "pip");
  ASSERT_NE(pip, nullptr);
  EXPECT_EQ(pip->shadowed_by, "pip:pip");
  ASSERT_EQ(env->pip.size(), 2u);
  EXPECT_EQ(env->pip[1].name, "pip");
  EXPECT_EQ(env->pip[1].shadows, "pip");
  // The shadowed record's own files are checked as `envlock verify` checks them: those pip's
  // upgrade removed (the conda dist-info) are missing, which deploy reproduces.
  ASSERT_EQ(env->drift.missing.count("pip"), 1u);
  const auto& gone = env->drift.missing.at("pip");
  EXPECT_TRUE(std::any_of(gone.begin(), gone.end(), [](const std::string& f) { return f.ends_with("/pip-25.0.1.dist-info/METADATA"); }));
  EXPECT_TRUE(std::none_of(gone.begin(), gone.end(), [](const std::string& f) { return f.find("/pip-25.1.dist-info/") != std::string::npos; }));
  // In a lockfile the shadowed conda record stays (others may depend on it; the host had it
  // under pip's files); pip's install is pinned beside it.
  Snapshot s;
  s.environments.push_back(*env);
  const Lockfile lock = to_lockfile(s, ShadowedRecords::Kept);
  const auto& lp = lock.environments.at("x").platforms.at("osx-arm64");
  EXPECT_EQ(lp.packages.size(), env->packages.size());
  const auto conda_pip = std::find_if(lp.packages.begin(), lp.packages.end(), [](const LockedPackage& p) { return p.name == "pip"; });
  ASSERT_NE(conda_pip, lp.packages.end());
  EXPECT_EQ(conda_pip->version, pip->record.version);
  ASSERT_EQ(lp.pip.size(), 2u);
  EXPECT_EQ(lp.pip[1].name, "pip");
  EXPECT_EQ(lp.pip[1].version, "25.1");
}

TEST(PrefixCapture, CorruptCondaMetaIsReportedAndTheRestCaptured) {
  SKIP_WITHOUT_CORPUS();
  FakeHost host;
  host.corpus_prefix("/opt/env");
  host.write("/opt/env/conda-meta/broken-1.0-0.json", "{\"name\": \"broken\", \"version\": ");
  host.write("/opt/env/conda-meta/noversion-1.0-0.json", R"({"name": "noversion", "build": "0"})");
  std::vector<CaptureProblem> problems;
  const auto env = capture_prefix(Host::tree(host.root()), "/opt/env", "linux-64", {}, problems);
  ASSERT_TRUE(env.ok()) << env.error().to_string();
  EXPECT_EQ(env->packages.size(), 16u);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].where, "/opt/env/conda-meta/broken-1.0-0.json");
  EXPECT_NE(problems[0].message.find("not valid JSON"), std::string::npos);
  EXPECT_EQ(problems[1].where, "/opt/env/conda-meta/noversion-1.0-0.json");
  EXPECT_NE(problems[1].message.find("version"), std::string::npos) << problems[1].message;
}

// Two conda-meta records of one package, or two dist-info folders of one project (leftovers of a
// damaged prefix or an interrupted upgrade): the newest is kept, the other is a problem naming
// both, so the snapshot stays readable (a lockfile lists each name once) and says it is partial.
TEST(PrefixCapture, TwoRecordsOfOneNameKeepTheNewestAndSaySo) {
  SKIP_WITHOUT_CORPUS();
  FakeHost host;
  host.corpus_prefix("/opt/env");
  host.write("/opt/env/conda-meta/tk-8.6.12-h0_0.json",
             R"({"name": "tk", "version": "8.6.12", "build": "h0_0", "build_number": 0, "subdir": "osx-arm64", "files": []})");
  const std::string site = "/opt/env/lib/python3.13t/site-packages/";
  for (const char* v : {"0.9", "1.0"}) {
    const std::string d = site + "toolbox-" + v + ".dist-info/";
    host.write(d + "METADATA", std::string("Metadata-Version: 2.1\nName: toolbox\nVersion: ") + v + "\n");
    host.write(d + "INSTALLER", "pip\n");
    host.write(d + "RECORD", std::string("toolbox-") + v + ".dist-info/METADATA,,\n");
  }
  std::vector<CaptureProblem> problems;
  const auto env = capture_prefix(Host::tree(host.root()), "/opt/env", "linux-64", {}, problems);
  ASSERT_TRUE(env.ok()) << env.error().to_string();
  const auto tks = std::count_if(env->packages.begin(), env->packages.end(), [](const CapturedPackage& p) { return p.record.name == "tk"; });
  EXPECT_EQ(tks, 1);
  EXPECT_EQ(find_pkg(*env, "tk")->record.version.to_string(), "8.6.13");
  const auto toolboxes = std::count_if(env->pip.begin(), env->pip.end(), [](const PipDistribution& d) { return d.name == "toolbox"; });
  EXPECT_EQ(toolboxes, 1);
  EXPECT_TRUE(std::any_of(env->pip.begin(), env->pip.end(), [](const PipDistribution& d) { return d.version == "1.0"; }));
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].where, "/opt/env/conda-meta/tk-8.6.12-h0_0.json");
  EXPECT_EQ(problems[0].message,
            "a second record of package tk (8.6.12 h0_0); the snapshot keeps tk-8.6.13-h5083fa2_1.json and leaves this one out; "
            "remove the stale record");
  EXPECT_EQ(problems[1].where, "/opt/env/lib/python3.13t/site-packages/toolbox-0.9.dist-info");
  EXPECT_NE(problems[1].message.find("keeps lib/python3.13t/site-packages/toolbox-1.0.dist-info"), std::string::npos) << problems[1].message;
  // And the snapshot reads back (a name locked twice was refused by every command).
  Snapshot s;
  s.problems = problems;
  s.environments.push_back(*env);
  EXPECT_TRUE(Snapshot::parse(s.to_yaml(), "s.yaml").ok());
}

TEST(PrefixCapture, NotAPrefixIsAUsageError) {
  FakeHost host;
  host.write("/srv/data/file.txt", "x");
  std::vector<CaptureProblem> problems;
  const auto env = capture_prefix(Host::tree(host.root()), "/srv/data", "linux-64", {}, problems);
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.error().where, "/srv/data");
  EXPECT_NE(env.error().message.find("conda-meta"), std::string::npos);
}

// ----- drift on real files -----------------------------------------------------------------------

// A prefix with two packages whose records carry the real sha256 and sizes of their files.
struct DriftPrefix {
  FakeHost host;
  fs::path local;
  DriftPrefix() {
    local = host.local("/opt/envs/app");
    auto add = [&](const std::string& name, const std::vector<std::pair<std::string, std::string>>& files) {
      nlohmann::json paths = nlohmann::json::array(), list = nlohmann::json::array();
      for (const auto& [path, content] : files) {
        host.write("/opt/envs/app/" + path, content);
        paths.push_back({{"_path", path}, {"path_type", "hardlink"}, {"sha256", sha256_hex(content)}, {"size_in_bytes", content.size()}});
        list.push_back(path);
      }
      nlohmann::json rec = {{"name", name}, {"version", "1.0"}, {"build", "h0_0"}, {"build_number", 0}, {"subdir", "linux-64"},
                            {"channel", "https://conda.anaconda.org/conda-forge/linux-64"},
                            {"url", "https://conda.anaconda.org/conda-forge/linux-64/" + name + "-1.0-h0_0.conda"},
                            {"fn", name + "-1.0-h0_0.conda"}, {"depends", nlohmann::json::array()},
                            {"files", list}, {"paths_data", {{"paths", paths}, {"paths_version", 1}}}};
      host.write("/opt/envs/app/conda-meta/" + name + "-1.0-h0_0.json", rec.dump(1));
    };
    add("libfoo", {{"lib/libfoo.so.1", std::string(5000, 'f')}, {"include/foo.h", "int foo(void);\n"}});
    add("footool", {{"bin/foo", "#!/bin/sh\necho foo\n"}, {"share/foo/data.txt", "data\n"}});
  }
};

// PEP 376 lets RECORD name a file by its absolute path: one inside the prefix is pip's file
// there (not unowned, not missing under site-packages); one elsewhere is reported, not checked.
TEST(Drift, AbsoluteRecordRowsInsideThePrefixArePipsFiles) {
  DriftPrefix p;
  const std::string site = "/opt/envs/app/lib/python3.12/site-packages/";
  p.host.write("/opt/envs/app/bin/abstool", "#!/bin/sh\n");
  p.host.write(site + "abstool-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: abstool\nVersion: 1.0\n");
  p.host.write(site + "abstool-1.0.dist-info/INSTALLER", "pip\n");
  p.host.write(site + "abstool-1.0.dist-info/RECORD",
               "/opt/envs/app/bin/abstool,,\n/etc/abstool.conf,,\nabstool-1.0.dist-info/METADATA,,\n"
               "abstool-1.0.dist-info/INSTALLER,,\nabstool-1.0.dist-info/RECORD,,\n");
  std::vector<CaptureProblem> problems;
  const auto env = capture_prefix(Host::tree(p.host.root()), "/opt/envs/app", "linux-64", {}, problems);
  ASSERT_TRUE(env.ok()) << env.error().to_string();
  EXPECT_TRUE(env->drift.unowned.empty()) << env->drift.unowned.front();
  EXPECT_TRUE(env->drift.missing.empty());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("lists `/etc/abstool.conf`, outside the prefix; not checked"), std::string::npos) << problems[0].message;
}

TEST(Drift, ModifiedMissingAndUnownedFiles) {
  DriftPrefix p;
  std::ofstream(p.local / "include/foo.h") << "int bar(void);\n";  // same size, other content
  std::ofstream(p.local / "bin/foo", std::ios::app) << "echo more\n";
  fs::remove(p.local / "share/foo/data.txt");
  std::ofstream(p.local / "notes.txt") << "by hand\n";
  fs::create_directories(p.local / "lib/python3.11/__pycache__");
  std::ofstream(p.local / "lib/python3.11/__pycache__/x.cpython-311.pyc") << "runtime";
  std::vector<CaptureProblem> problems;
  const auto env = capture_prefix(Host::tree(p.host.root()), "/opt/envs/app", "linux-64", {}, problems);
  ASSERT_TRUE(env.ok()) << env.error().to_string();
  EXPECT_TRUE(problems.empty());
  ASSERT_EQ(env->drift.modified.size(), 2u);
  EXPECT_EQ(env->drift.modified[0].path, "bin/foo");
  EXPECT_EQ(env->drift.modified[0].owner, "footool");
  EXPECT_EQ(env->drift.modified[0].expected_size, 19u);
  EXPECT_EQ(env->drift.modified[0].actual_size, 29u);
  EXPECT_EQ(env->drift.modified[1].path, "include/foo.h");
  EXPECT_EQ(env->drift.modified[1].expected_sha256, sha256_hex("int foo(void);\n"));
  EXPECT_EQ(env->drift.modified[1].actual_sha256, sha256_hex("int bar(void);\n"));
  ASSERT_EQ(env->drift.missing.size(), 1u);
  EXPECT_EQ(env->drift.missing.at("footool"), std::vector<std::string>{"share/foo/data.txt"});
  EXPECT_EQ(env->drift.unowned, std::vector<std::string>{"notes.txt"}) << "__pycache__ is Python's, not drift";
  EXPECT_TRUE(env->drift.hashed);
}

TEST(Drift, WithoutHashingOnlySizesAreCompared) {
  DriftPrefix p;
  std::ofstream(p.local / "include/foo.h") << "int bar(void);\n";
  CaptureOptions opt;
  opt.hash_files = false;
  std::vector<CaptureProblem> problems;
  const auto env = capture_prefix(Host::tree(p.host.root()), "/opt/envs/app", "linux-64", opt, problems);
  ASSERT_TRUE(env.ok());
  EXPECT_TRUE(env->drift.modified.empty()) << "same size, not hashed";
  EXPECT_FALSE(env->drift.hashed);
}

// The one-pass walk of the prefix: linked folders are not followed (a record path through one is
// still checked by its whole path), nested environments and pkgs/ are skipped, a linked file is
// checked by its target, a dangling one is missing, and a FIFO where a file should be is read as
// empty instead of blocking the capture. Sizes found while hashing match those found by lstat.
TEST(Drift, LinksNestedEnvironmentsAndSpecialFiles) {
  DriftPrefix p;
  const std::string foo(5000, 'f');
  nlohmann::json paths = nlohmann::json::array();
  paths.push_back({{"_path", "lib64/libfoo.so.1"}, {"path_type", "hardlink"}, {"sha256", sha256_hex(foo)}, {"size_in_bytes", 5000}});
  paths.push_back({{"_path", "bin/alias"}, {"path_type", "hardlink"}, {"sha256", sha256_hex("alias\n")}, {"size_in_bytes", 6}});
  paths.push_back({{"_path", "bin/gone"}, {"path_type", "hardlink"}, {"sha256", sha256_hex("gone\n")}, {"size_in_bytes", 5}});
  paths.push_back({{"_path", "var/pipe"}, {"path_type", "hardlink"}, {"sha256", sha256_hex("x")}, {"size_in_bytes", 0}});
  paths.push_back({{"_path", "lib"}, {"path_type", "directory"}});
  const nlohmann::json rec = {{"name", "extras"}, {"version", "1.0"}, {"build", "h0_0"}, {"subdir", "linux-64"},
                              {"paths_data", {{"paths", paths}, {"paths_version", 1}}}};
  std::ofstream(p.local / "conda-meta/extras-1.0-h0_0.json") << rec.dump();
  fs::create_directory_symlink("lib", p.local / "lib64");
  fs::create_symlink("../lib/libfoo.so.1", p.local / "bin/alias");  // 5000 bytes where 6 were installed
  fs::create_symlink("nowhere", p.local / "bin/gone");
  fs::create_directories(p.local / "var");
  ASSERT_EQ(::mkfifo((p.local / "var/pipe").c_str(), 0600), 0);
  fs::create_directories(p.local / "envs/sub/conda-meta");
  std::ofstream(p.local / "envs/sub/inner.txt") << "x";
  fs::create_directories(p.local / "opt/tool/meta");
  fs::create_directory_symlink("meta", p.local / "opt/tool/conda-meta");  // a nested prefix, linked conda-meta
  std::ofstream(p.local / "opt/tool/file.txt") << "x";
  std::ofstream(p.local / "opt/loose.txt") << "x";
  fs::create_directories(p.local / "pkgs/foo-1.0-0");
  std::ofstream(p.local / "pkgs/foo-1.0-0/a.txt") << "x";

  std::vector<CaptureProblem> problems;
  const auto env = capture_prefix(Host::tree(p.host.root()), "/opt/envs/app", "linux-64", {}, problems);
  ASSERT_TRUE(env.ok()) << env.error().to_string();
  EXPECT_TRUE(problems.empty()) << problems[0].where << ": " << problems[0].message;
  EXPECT_EQ(env->drift.unowned, (std::vector<std::string>{"lib64", "opt/loose.txt"}))
      << "a linked folder is a file of its own; envs/, pkgs/ and nested prefixes are not this prefix's";
  ASSERT_EQ(env->drift.missing.size(), 1u);
  EXPECT_EQ(env->drift.missing.at("extras"), std::vector<std::string>{"bin/gone"});
  ASSERT_EQ(env->drift.modified.size(), 2u);
  EXPECT_EQ(env->drift.modified[0].path, "bin/alias");
  EXPECT_EQ(env->drift.modified[0].actual_size, 5000u) << "a linked file is checked by its target";
  EXPECT_EQ(env->drift.modified[0].actual_sha256, "");
  EXPECT_EQ(env->drift.modified[1].path, "var/pipe");
  EXPECT_EQ(env->drift.modified[1].actual_sha256, sha256_hex(""));

  // Without hashing the same sizes are found (by lstat rather than from the bytes read).
  CaptureOptions no_hash;
  no_hash.hash_files = false;
  std::ofstream(p.local / "bin/foo", std::ios::app) << "echo more\n";
  std::vector<CaptureProblem> problems2, problems3;
  const auto hashed = capture_prefix(Host::tree(p.host.root()), "/opt/envs/app", "linux-64", {}, problems2);
  const auto sized = capture_prefix(Host::tree(p.host.root()), "/opt/envs/app", "linux-64", no_hash, problems3);
  ASSERT_TRUE(hashed.ok() && sized.ok());
  std::vector<ModifiedFile> by_size;
  for (const auto& m : hashed->drift.modified) {
    if (m.actual_sha256.empty()) by_size.push_back(m);
  }
  EXPECT_EQ(by_size, sized->drift.modified);
  ASSERT_EQ(sized->drift.modified.size(), 2u);
  EXPECT_EQ(sized->drift.modified[0].path, "bin/alias");
  EXPECT_EQ(sized->drift.modified[1].path, "bin/foo");
  EXPECT_EQ(sized->drift.modified[1].actual_size, 29u);
  EXPECT_EQ(sized->drift.unowned, hashed->drift.unowned);
  EXPECT_EQ(sized->drift.missing, hashed->drift.missing);
}

TEST(Discovery, EnvironmentsTxtAndEnvsFolders) {
  SKIP_WITHOUT_CORPUS();
  FakeHost host;
  host.corpus_prefix("/home/ana/miniforge3");
  host.write("/home/ana/miniforge3/condabin/conda", "#!/bin/sh\n");
  host.corpus_prefix("/home/ana/miniforge3/envs/train");
  host.corpus_prefix("/home/ana/.conda/envs/scratch");
  // One prefix spelt three ways is one environment.
  host.write("/home/ana/.conda/environments.txt", "/home/ana/miniforge3\n/home/ana/gone\n/home/ana/miniforge3/\n/home/ana/./miniforge3\n");
  host.write("/home/ana/miniforge3/envs/not-an-env/readme", "x");
  const Host seam = Host::tree(host.root());
  const auto found = discover_prefixes(seam);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0], "/home/ana/.conda/envs/scratch");
  EXPECT_EQ(found[1], "/home/ana/miniforge3");
  EXPECT_EQ(found[2], "/home/ana/miniforge3/envs/train");
  CaptureOptions opt;
  opt.hash_files = false;
  const Snapshot s = capture(seam, opt);
  ASSERT_EQ(s.environments.size(), 3u);
  EXPECT_EQ(s.environments[0].name, "base");
  EXPECT_EQ(s.environments[1].name, "scratch");
  EXPECT_EQ(s.environments[2].name, "train");
  EXPECT_FALSE(s.complete()) << "an empty host tree lacks os-release, kernel, libc";
}


// What no installer writes is not captured but named (the snapshot says it is partial): a record
// whose name is no conda name (`evil|name`), a conda-meta *.json that is a FIFO or a link to
// /dev/zero (never opened: it would block or fill memory), a dist-info whose name is no PyPI name
// or whose version is not PEP 440, and one whose METADATA is a FIFO.
TEST(PrefixCapture, NamesVersionsAndFilesNoInstallerWritesAreProblems) {
  FakeHost host;
  host.write("/opt/env/conda-meta/ok-1.0-0.json",
             R"({"name": "ok", "version": "1.0", "build": "0", "build_number": 0, "subdir": "noarch", "files": []})");
  host.write("/opt/env/conda-meta/evil-1.0-0.json",
             R"({"name": "evil|name\n<b>", "version": "1.0", "build": "0", "build_number": 0, "subdir": "noarch", "files": []})");
  ASSERT_EQ(::mkfifo(host.local("/opt/env/conda-meta/fifo-1-0.json").c_str(), 0644), 0);
  fs::create_symlink("/dev/zero", host.local("/opt/env/conda-meta/zero-1-0.json"));
  const std::string site = "/opt/env/lib/python3.11/site-packages/";
  auto dist = [&](const std::string& dir, const std::string& name, const std::string& version) {
    host.write(site + dir + "/METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n");
    host.write(site + dir + "/INSTALLER", "pip\n");
    host.write(site + dir + "/RECORD", dir + "/METADATA,,\n");
  };
  dist("good-2.0.dist-info", "good", "2.0");
  dist("bad_version-1.0.dist-info", "bad_version", "1.0\x1b[31m");
  dist("bad_name-1.0.dist-info", "bad name|x", "1.0");
  host.write(site + "fifo-1.0.dist-info/RECORD", "fifo-1.0.dist-info/METADATA,,\n");
  ASSERT_EQ(::mkfifo(host.local(site + "fifo-1.0.dist-info/METADATA").c_str(), 0644), 0);
  std::vector<CaptureProblem> problems;
  const auto env = capture_prefix(Host::tree(host.root()), "/opt/env", "linux-64", {}, problems);
  ASSERT_TRUE(env.ok()) << env.error().to_string();
  ASSERT_EQ(env->packages.size(), 1u);
  EXPECT_EQ(env->packages[0].record.name, "ok");
  ASSERT_EQ(env->pip.size(), 1u);
  EXPECT_EQ(env->pip[0].name, "good");
  std::string all;
  std::sort(problems.begin(), problems.end(), [](const CaptureProblem& a, const CaptureProblem& b) { return a.where < b.where; });
  for (const auto& p : problems) all += p.where + ": " + p.message + "\n";
  EXPECT_EQ(all,
            "/opt/env/conda-meta/evil-1.0-0.json: conda package name 'evil|name\\x0a<b>' is not valid; the record is left out\n"
            "/opt/env/conda-meta/fifo-1-0.json: is not a regular file (a FIFO, device, socket or broken link); not read, the "
            "package it describes is left out\n"
            "/opt/env/conda-meta/zero-1-0.json: is not a regular file (a FIFO, device, socket or broken link); not read, the "
            "package it describes is left out\n"
            "/opt/env/lib/python3.11/site-packages/bad_name-1.0.dist-info/METADATA: PyPI package name 'bad name|x' is not valid "
            "(PEP 508); left out\n"
            "/opt/env/lib/python3.11/site-packages/bad_version-1.0.dist-info/METADATA: version '1.0\\x1b[31m' of bad_version is "
            "not a PEP 440 version; left out\n"
            "/opt/env/lib/python3.11/site-packages/fifo-1.0.dist-info/METADATA: is not a regular file (a FIFO, device or "
            "socket), so it is not read\n");
}

// PEP 440 as packaging's VERSION_PATTERN reads it (the spellings of packaging's tests/test_version.py).
TEST(PipVersions, Pep440AsPackagingReadsIt) {
  for (const char* v : {"1.0", "v1.0", "1!2.0", "1.0a1", "1.0.alpha.1", "1.0-rc-2", "1.0c1", "1.0.post1", "1.0-1", "1.0rev",
                        "1.0.dev0", "1.0a1.post2.dev3", "1.0+ubuntu-1", "1.0+abc.5", " 1.0 ", "2023.7.22", "1.0PRE1"})
    EXPECT_TRUE(is_pep440_version(v)) << v;
  for (const char* v : {"", "1.0\x1b[31m", "french toast", "1.0+", "1.0+_abc", "1.0-", "1.0.dev-x", "1..0", "1.0 beta"})
    EXPECT_FALSE(is_pep440_version(v)) << v;
}
}  // namespace
}  // namespace envlock
