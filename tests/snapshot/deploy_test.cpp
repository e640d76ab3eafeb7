// Redeploy round trip on this machine with real packages from the corpus (the JanCaha linux-64
// channel, over file://): make an environment, drift it (edit a file, pip over a conda package),
// capture, deploy into a new prefix, and check that the new prefix verifies clean and holds the
// same conda packages and pip distributions. Also: refusals name the requirement and leave the
// target untouched.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

#include "envlock/diff.hpp"
#include "envlock/generations.hpp"
#include "envlock/extract.hpp"
#include "envlock/hash.hpp"
#include "envlock/install.hpp"
#include "envlock/readers.hpp"
#include "envlock/snapshot.hpp"
#include "envlock/snapshot_deploy.hpp"
#include "envlock/url.hpp"
#include "envlock/work_folder.hpp"
#include "snapshot/fake_host.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

using testing::corpus_dir;
using testing::slurp;
namespace fs = std::filesystem;

using testing::b64_sha256;

struct RoundTrip {
  fs::path dir;
  HostFacts here;
  DeployOptions options;
  Snapshot seed;
  RoundTrip() {
    dir = fs::temp_directory_path() / ("envlock-deploy-" + std::to_string(getpid()));
    fs::remove_all(dir);
    const fs::path chan = dir / "channel/linux-64";
    fs::create_directories(chan);
    const fs::path src = corpus_dir() / "packages/JanCaha__conda-channel";
    const auto repodata = nlohmann::json::parse(slurp(src / "linux-64__repodata.json"));
    CapturedEnvironment env;
    env.name = "geo";
    env.platform = "linux-64";
    for (const std::string fn : {"libsimplerasters-0.9.0-h29872b0_0.conda", "libviewshed-5.0.0-h29872b0_0.conda"}) {
      fs::copy_file(src / ("linux-64__" + fn), chan / fn);
      auto rec = RepoDataRecord::from_json(repodata["packages.conda"][fn]);
      EXPECT_TRUE(rec.ok()) << rec.error().to_string();
      rec->file_name = fn;
      rec->channel = "file://" + (dir / "channel").string();
      rec->url = rec->channel + "/linux-64/" + fn;
      CapturedPackage p;
      p.record = *rec;
      env.packages.push_back(p);
    }
    seed.environments.push_back(env);
    Host seam = Host::system();
    seam.run = nullptr;
    std::vector<CaptureProblem> problems;
    here = capture_host_facts(seam, {}, problems);
    seed.host = here;
    options.package_cache = dir / "pkgs";
  }
  ~RoundTrip() { fs::remove_all(dir); }
  /// Captures `prefix` of this machine (no commands run).
  [[nodiscard]] Snapshot capture_of(const fs::path& prefix) const {
    Host seam = Host::system();
    seam.run = nullptr;
    CaptureOptions copt;
    copt.prefixes = {prefix};
    return capture(seam, copt);
  }
  /// Writes `snap` as `bundle`, archives from this round trip's package cache.
  void bundle_of(const Snapshot& snap, const fs::path& bundle) const {
    Host seam = Host::system();
    seam.run = nullptr;
    BundleOptions bo;
    bo.package_dirs = {options.package_cache};
    const auto written = write_bundle(seam, snap, bundle, bo);
    ASSERT_TRUE(written.ok()) << written.error().to_string();
  }
};

// `pip install libsimplerasters==0.9.1` over the conda package libsimplerasters 0.9.0, as pip
// does it: its uninstall of the conda package removed the files it knew of (here
// lib/libsimplerasters.a), then its wheel wrote a new module and, as a data file, a header over
// the conda package's own. lib/libsimplerasters.so.0.9.0 is a conda file pip did not touch.
struct PipOverConda {
  static constexpr const char* kSite = "lib/python3.12/site-packages/";
  static constexpr const char* kHeader = "include/SimpleRasters/simplerasters.h";  // overwritten by pip
  static constexpr const char* kRemoved = "lib/libsimplerasters.a";              // removed by pip's uninstall
  static constexpr const char* kKept = "lib/libsimplerasters.so.0.9.0";          // untouched conda file
  std::string module = "import math\n";
  std::string header = "// simplerasters 0.9.1, from the wheel\n";
  explicit PipOverConda(const fs::path& prefix) {
    EXPECT_TRUE(fs::remove(prefix / kRemoved));
    // pip overwrites the conda package's header (replacing the file: the prefix's is a hard link
    // of the package cache's).
    EXPECT_TRUE(fs::is_regular_file(prefix / kHeader));
    testing::pip_install(prefix / kSite, "libsimplerasters", "0.9.1",
                         {{"simplerasters.py", module}, {std::string("../../../") + kHeader, header}});
  }
  /// `deployed` holds what the captured prefix `source` held of libsimplerasters: its conda-meta
  /// record, the conda file pip did not touch (same bytes), pip's header and module, and not the
  /// file pip's uninstall removed.
  void expect_reproduced(const fs::path& source, const fs::path& deployed) const {
    EXPECT_TRUE(fs::is_regular_file(deployed / "conda-meta/libsimplerasters-0.9.0-h29872b0_0.json"));
    ASSERT_TRUE(fs::is_regular_file(deployed / kKept)) << "a file of the shadowed conda package that pip did not overwrite";
    EXPECT_EQ(slurp(deployed / kKept), slurp(source / kKept));
    EXPECT_EQ(slurp(deployed / kHeader), header);
    EXPECT_EQ(slurp(deployed / kSite / "simplerasters.py"), module);
    EXPECT_FALSE(fs::exists(fs::symlink_status(deployed / kRemoved))) << "pip's uninstall had removed it";
  }
};

/// `envlock diff SOURCE DEPLOYED` on the two prefixes (conda-meta and dist-info): no change.
void expect_same_packages(const fs::path& source, const fs::path& deployed) {
  const auto x = read_prefix(source), y = read_prefix(deployed);
  ASSERT_TRUE(x.ok()) << x.error().to_string();
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  const LockDiff d = diff_lockfiles(*x, *y);
  for (const auto& g : d.groups) {
    for (const auto& c : g.changes) ADD_FAILURE() << "envlock diff: " << change_kind_name(c.kind) << " " << c.name;
  }
  EXPECT_TRUE(d.empty());
}

/// verify's findings as "kind path (package)" lines.
std::vector<std::string> verify_lines(const fs::path& prefix) {
  const auto v = verify_prefix(prefix);
  EXPECT_TRUE(v.ok()) << v.error().to_string();
  std::vector<std::string> out;
  if (!v.ok()) return out;
  for (const auto& d : v->drift) {
    out.push_back(std::string(d.kind == FileDrift::Kind::Missing ? "missing " : d.kind == FileDrift::Kind::Extra ? "extra " : "modified ") +
                  d.path + " (" + d.package + ")");
  }
  return out;
}

TEST(Deploy, RoundTripCreateDriftCaptureDeployVerify) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  // "Create" the environment from the seed through deploy (the installer of envlock install).
  const fs::path a = t.dir / "host-a/envs/geo";
  auto made = deploy_snapshot(t.seed, a, t.here, t.options);
  ASSERT_TRUE(made.ok()) << made.error().to_string();
  EXPECT_EQ(made->installed.size(), 2u);
  ASSERT_TRUE(verify_prefix(a).ok());
  EXPECT_TRUE(verify_prefix(a)->clean());

  // Drift: edit a file libviewshed installed; pip-install a distribution over libsimplerasters.
  std::string edited;
  const auto viewshed = nlohmann::json::parse(slurp(a / "conda-meta/libviewshed-5.0.0-h29872b0_0.json"));
  for (const auto& f : viewshed.at("files")) {
    if (fs::is_regular_file(fs::symlink_status(a / f.get<std::string>()))) {
      edited = f.get<std::string>();
      break;
    }
  }
  ASSERT_FALSE(edited.empty());
  // Replace the file, as editors do: appending in place would write through the hardlink that
  // the prefix shares with the package cache (conda's layout) and change the cached copy too.
  {
    const std::string content = slurp(a / edited) + "// edited by hand\n";
    fs::remove(a / edited);
    std::ofstream(a / edited, std::ios::binary) << content;
  }
  const std::string site = PipOverConda::kSite;
  const PipOverConda pip(a);
  const std::string removed_line = "missing " + std::string(PipOverConda::kRemoved) + " (libsimplerasters-0.9.0-h29872b0_0)";
  std::vector<std::string> expected_findings{removed_line, "modified " + edited + " (libviewshed-5.0.0-h29872b0_0)"};
  std::sort(expected_findings.begin(), expected_findings.end(), [](const std::string& x, const std::string& y) {
    return x.substr(x.find(' ')) < y.substr(y.find(' '));  // verify sorts by path
  });
  EXPECT_EQ(verify_lines(a), expected_findings);

  // Capture, through the file.
  Host seam = Host::system();
  seam.run = nullptr;
  CaptureOptions copt;
  copt.prefixes = {a};
  const Snapshot captured = capture(seam, copt);
  ASSERT_EQ(captured.environments.size(), 1u);
  const auto& env = captured.environments[0];
  ASSERT_EQ(env.drift.modified.size(), 1u);
  EXPECT_EQ(env.drift.modified[0].path, edited);
  EXPECT_EQ(env.drift.modified[0].owner, "libviewshed");
  ASSERT_EQ(env.pip.size(), 1u);
  EXPECT_EQ(env.pip[0].shadows, "libsimplerasters");
  EXPECT_EQ(env.packages.at(0).shadowed_by, "pip:libsimplerasters");
  // The shadowed record's own files are checked as verify checks them: the one pip removed is missing.
  EXPECT_EQ(env.drift.missing, (std::map<std::string, std::vector<std::string>>{{"libsimplerasters", {PipOverConda::kRemoved}}}));
  const fs::path file = t.dir / "geo.snapshot.yaml";
  ASSERT_TRUE(captured.write(file).ok());
  const auto reread = Snapshot::read(file);
  ASSERT_TRUE(reread.ok()) << reread.error().to_string();

  // Deploy into a new prefix: the shadowed conda package as installed there, pip's install over it.
  const fs::path b = t.dir / "host-b/envs/geo";
  auto deployed = deploy_snapshot(*reread, b, t.here, t.options);
  ASSERT_TRUE(deployed.ok()) << deployed.error().to_string();
  EXPECT_EQ(deployed->installed, (std::vector<std::string>{"libsimplerasters-0.9.0-h29872b0_0", "libviewshed-5.0.0-h29872b0_0"}));
  EXPECT_EQ(deployed->pip_restored, std::vector<std::string>{"libsimplerasters 0.9.1"});
  EXPECT_TRUE(std::any_of(deployed->checklist.begin(), deployed->checklist.end(), [](const std::string& l) {
    return l == "drift: 1 modified, 0 unowned and 0 missing files of the captured prefix are not reproduced (see the snapshot's drift section)";
  })) << ::testing::PrintToString(deployed->checklist);
  pip.expect_reproduced(a, b);
  // `envlock diff SNAPSHOT PREFIX`: the prefix deployed from the snapshot is that snapshot (its
  // environment from conda-meta/envlock, pip's install over the conda package it shadowed).
  {
    const auto d = testing::run_command(testing::envlock_cmd() + " diff '" + file.string() + "' '" + b.string() + "' --fail-on any", {});
    EXPECT_EQ(d.exit_code, 0) << d.out << d.err;
    EXPECT_EQ(d.out, "no changes\n"
                     "old: " + file.string() + " (envlock.lock v1)\n"
                     "new: " + b.string() + " (conda-meta prefix)\n"
                     "\n"
                     "geo / linux-64: no changes (3 packages)\n");
    EXPECT_EQ(d.err, "");
  }
  // verify finds in the deployed prefix what it finds in the captured one, less the hand edit
  // (drift is not reproduced): the pip files check against RECORD, the file pip removed is
  // missing in both.
  EXPECT_EQ(verify_lines(b), std::vector<std::string>{removed_line});
  const auto verify = verify_prefix(b);
  ASSERT_TRUE(verify.ok()) << verify.error().to_string();
  EXPECT_EQ(verify->pip_files, 5u);  // module, header, INSTALLER, METADATA, RECORD
  // `envlock diff A B` on the prefixes: the same conda records (the shadowed one too) and pip distributions.
  expect_same_packages(a, b);

  // The deployed prefix holds what was captured: no conda or pip difference, the same missing
  // file; only the hand edit is not reproduced.
  copt.prefixes = {b};
  const Snapshot again = capture(seam, copt);
  for (const auto& c : diff_snapshots(captured, again)) {
    if (c.section == "environment" || c.section == "capture") continue;  // another prefix path; completeness is the host's
    EXPECT_TRUE(c.section == "drift:geo" && (c.name == "modified files" || c.name == "modified " + edited))
        << c.section << " " << c.name << ": " << c.before << " -> " << c.after;
  }
  EXPECT_TRUE(again.environments[0].drift.modified.empty());
  EXPECT_TRUE(again.environments[0].drift.unowned.empty());
  EXPECT_EQ(again.environments[0].drift.missing, env.drift.missing);
  // Had the deploy lost the shadowed conda package, `snapshot diff` would say so (as `envlock diff` does).
  {
    Snapshot lost = again;
    auto& pkgs = lost.environments[0].packages;
    pkgs.erase(std::remove_if(pkgs.begin(), pkgs.end(), [](const CapturedPackage& p) { return p.record.name == "libsimplerasters"; }),
               pkgs.end());
    const auto changes = diff_snapshots(captured, lost);
    const auto gone = std::find_if(changes.begin(), changes.end(), [](const SnapshotChange& c) { return c.section == "conda:geo"; });
    ASSERT_NE(gone, changes.end());
    EXPECT_EQ(gone->kind, SnapshotChange::Kind::Removed);
    EXPECT_EQ(gone->name, "libsimplerasters");
    EXPECT_TRUE(gone->before.starts_with("0.9.0 h29872b0_0 (") && gone->before.ends_with("), shadowed by pip:libsimplerasters")) << gone->before;
  }

  // --without-pip: the conda package as it was recorded, whole (nothing of pip's install).
  const fs::path c = t.dir / "host-c/envs/geo";
  DeployOptions conda_only = t.options;
  conda_only.without_pip = true;
  auto plain = deploy_snapshot(*reread, c, t.here, conda_only);
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  EXPECT_EQ(plain->installed, deployed->installed);
  EXPECT_TRUE(plain->pip_restored.empty());
  EXPECT_TRUE(fs::is_regular_file(c / "conda-meta/libsimplerasters-0.9.0-h29872b0_0.json"));
  EXPECT_TRUE(fs::is_regular_file(c / PipOverConda::kRemoved));
  EXPECT_NE(slurp(c / PipOverConda::kHeader), pip.header);
  EXPECT_FALSE(fs::exists(c / site / "libsimplerasters-0.9.1.dist-info"));
  EXPECT_EQ(verify_lines(c), std::vector<std::string>{});
  EXPECT_TRUE(std::any_of(plain->checklist.begin(), plain->checklist.end(), [](const std::string& l) {
    return l == "pip: libsimplerasters==0.9.1 was not restored (--without-pip)";
  })) << ::testing::PrintToString(plain->checklist);

  // A pip file edited after the deploy is drift of the pip distribution, named by RECORD's hash.
  {
    fs::remove(b / site / "simplerasters.py");
    std::ofstream(b / site / "simplerasters.py") << "import cmath\n";
  }
  const auto edited_pip = verify_prefix(b);
  ASSERT_TRUE(edited_pip.ok()) << edited_pip.error().to_string();
  ASSERT_EQ(edited_pip->drift.size(), 2u);  // and the file pip removed
  const auto module_drift = std::find_if(edited_pip->drift.begin(), edited_pip->drift.end(),
                                         [&](const FileDrift& d) { return d.path == site + "simplerasters.py"; });
  ASSERT_NE(module_drift, edited_pip->drift.end());
  EXPECT_EQ(module_drift->kind, FileDrift::Kind::Modified);
  EXPECT_EQ(module_drift->package, "pip:libsimplerasters-0.9.1");
  EXPECT_NE(module_drift->reason.find("!= RECORD"), std::string::npos) << module_drift->reason;
}

TEST(Deploy, RefusesTooOldGlibcAndDriverNamingThePackageAndLeavesTheTargetUntouched) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  t.seed.environments[0].packages[0].record.depends.push_back("__glibc >=2.99");
  t.seed.environments[0].packages[1].record.depends.push_back("__cuda >=12.0");
  HostFacts old = t.here;
  old.nvidia = NvidiaFacts{"470.74", "11.4", {}};
  const fs::path target = t.dir / "never";
  const auto r = deploy_snapshot(t.seed, target, old, t.options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Incompatible);
  EXPECT_NE(r.error().message.find("libsimplerasters 0.9.0 needs __glibc >=2.99"), std::string::npos) << r.error().to_string();
  EXPECT_NE(r.error().detail.find("libviewshed 5.0.0 needs __cuda >=12.0; the target has 11.4"), std::string::npos)
      << r.error().to_string();
  EXPECT_FALSE(fs::exists(target));
  EXPECT_FALSE(fs::exists(t.dir / "pkgs" / "libviewshed-5.0.0-h29872b0_0")) << "nothing downloaded before the check";
}

TEST(Deploy, AChangedPipFileOrACorruptArchiveLeavesNothingBehind) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  // A pip distribution whose file no longer matches its RECORD hash.
  PipDistribution d;
  d.name = "toy";
  d.version = "1.0";
  d.installer = "pip";
  d.dist_info = "lib/python3.12/site-packages/toy-1.0.dist-info";
  d.files = {{"toy.py", std::string(64, 'a'), 5}};
  t.seed.environments[0].pip = {d};
  const fs::path source = t.dir / "source";
  fs::create_directories(source / "lib/python3.12/site-packages");
  std::ofstream(source / "lib/python3.12/site-packages/toy.py") << "x = 1";
  t.options.pip_source = source;
  const fs::path target = t.dir / "target";
  auto r = deploy_snapshot(t.seed, target, t.here, t.options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Integrity);
  EXPECT_NE(r.error().message.find("pip:toy 1.0"), std::string::npos) << r.error().to_string();
  EXPECT_FALSE(fs::exists(target));
  // Without pip: a corrupt package archive (wrong sha256 in the record) is refused, target untouched.
  t.options.without_pip = true;
  t.seed.environments[0].packages[0].record.sha256 = std::string(64, '0');
  r = deploy_snapshot(t.seed, target, t.here, t.options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Integrity) << r.error().to_string();
  EXPECT_FALSE(fs::exists(target));
  for (const auto& e : fs::directory_iterator(t.dir)) {
    EXPECT_FALSE(e.path().filename().string().starts_with(".target")) << "staging left: " << e.path();
  }
}

// Deploys the round trip's seed into `prefix` and captures it from this machine (no commands run).
Snapshot deploy_and_capture(const RoundTrip& t, const fs::path& prefix) {
  EXPECT_TRUE(deploy_snapshot(t.seed, prefix, t.here, t.options).ok());
  Host seam = Host::system();
  seam.run = nullptr;
  CaptureOptions copt;
  copt.prefixes = {prefix};
  return capture(seam, copt);
}

TEST(Deploy, SnapshotToLockfileToEnvlockInstallGivesTheSameEnvironment) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  const Snapshot captured = deploy_and_capture(t, t.dir / "a/geo");
  Host seam = Host::system();
  seam.run = nullptr;
  CaptureOptions copt;
  const fs::path snap = t.dir / "a.yaml", lock = t.dir / "envlock.lock", c = t.dir / "c/geo";
  ASSERT_TRUE(captured.write(snap).ok());
  const std::map<std::string, std::string> env{{"ENVLOCK_PKGS_DIR", t.options.package_cache.string()}};
  const auto l = testing::run_command(testing::envlock_cmd() + " snapshot lock '" + snap.string() + "' -o '" + lock.string() + "'", env);
  ASSERT_EQ(l.exit_code, 0) << l.err;
  const auto i = testing::run_command(testing::envlock_cmd() + " install -l '" + lock.string() + "' -e geo -p '" + c.string() + "'", env);
  ASSERT_EQ(i.exit_code, 0) << i.out << i.err;
  const auto v = testing::run_command(testing::envlock_cmd() + " verify -p '" + c.string() + "'", env);
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  copt.prefixes = {c};
  const Snapshot installed = capture(seam, copt);
  for (const auto& ch : diff_snapshots(captured, installed)) {
    EXPECT_NE(ch.section, "conda:geo") << ch.name << ": " << ch.before << " -> " << ch.after;
  }
  ASSERT_EQ(installed.environments.size(), 1u);
  EXPECT_TRUE(installed.environments[0].drift.empty());
}

// A partial capture that could not read libsimplerasters' conda-meta record: libviewshed needs
// it, so deploy refuses (naming both) unless --allow-partial, which lists it to do by hand.
TEST(Deploy, APartialSnapshotLackingADependencyIsRefused) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  Snapshot partial = t.seed;
  partial.environments.at(0).prefix = "/opt/envs/geo";
  auto& pkgs = partial.environments.at(0).packages;
  pkgs.erase(std::remove_if(pkgs.begin(), pkgs.end(), [](const CapturedPackage& p) { return p.record.name == "libsimplerasters"; }),
             pkgs.end());
  ASSERT_EQ(pkgs.size(), 1u);
  partial.problems.push_back({partial.environments[0].prefix + "/conda-meta/libsimplerasters-0.9.0-h29872b0_0.json", "not valid JSON"});
  const fs::path prefix = t.dir / "partial/geo";
  const auto refused = deploy_snapshot(partial, prefix, t.here, t.options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::Incompatible);
  // The seed's records name libraries it does not hold (libgcc, ...): every unmet one is listed.
  EXPECT_NE(refused.error().message.find("the snapshot is partial and lacks packages its environment needs: "), std::string::npos)
      << refused.error().to_string();
  EXPECT_NE(refused.error().detail.find("  - libviewshed-5.0.0-h29872b0_0 needs libsimplerasters\n"), std::string::npos)
      << refused.error().to_string();
  EXPECT_NE(refused.error().hint.find("--allow-partial"), std::string::npos);
  EXPECT_FALSE(fs::exists(prefix)) << "nothing written";
  DeployOptions anyway = t.options;
  anyway.allow_partial = true;
  const auto deployed = deploy_snapshot(partial, prefix, t.here, anyway);
  ASSERT_TRUE(deployed.ok()) << deployed.error().to_string();
  EXPECT_EQ(deployed->installed, std::vector<std::string>{"libviewshed-5.0.0-h29872b0_0"});
  EXPECT_NE(std::find(deployed->checklist.begin(), deployed->checklist.end(),
                      "dependency not met: libviewshed-5.0.0-h29872b0_0 needs libsimplerasters"),
            deployed->checklist.end())
      << ::testing::PrintToString(deployed->checklist);
}

// pip over conda, then snapshot lock and envlock install: the lockfile keeps the shadowed conda
// package (libviewshed may need it; the host had it under pip's files) and pins pip's version
// beside it; install brings the conda package and names the pip one it left to pip.
TEST(Deploy, SnapshotLockKeepsTheCondaPackagePipShadowed) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  const fs::path a = t.dir / "a/geo";
  ASSERT_TRUE(deploy_snapshot(t.seed, a, t.here, t.options).ok());
  const PipOverConda pip(a);
  Host seam = Host::system();
  seam.run = nullptr;
  CaptureOptions copt;
  copt.prefixes = {a};
  const Snapshot captured = capture(seam, copt);
  ASSERT_EQ(captured.environments.at(0).packages.at(0).shadowed_by, "pip:libsimplerasters");
  const fs::path snap = t.dir / "a.yaml", lock = t.dir / "envlock.lock", c = t.dir / "c/geo";
  ASSERT_TRUE(captured.write(snap).ok());
  const std::map<std::string, std::string> env{{"ENVLOCK_PKGS_DIR", t.options.package_cache.string()}};
  // capture's summary tells the file pip's uninstall removed from the missing ones of real damage.
  const auto cap = testing::run_command(testing::envlock_cmd() + " snapshot capture -p '" + a.string() + "' -o '" + (t.dir / "cli.yaml").string() + "'", env);
  EXPECT_NE(cap.err.find("2 conda packages (1 shadowed by pip), 1 pip distributions; drift: 0 modified, 0 unowned, 1 missing files "
                         "(1 of them removed by pip as it replaced a conda package)"),
            std::string::npos)
      << cap.err;
  const auto l = testing::run_command(testing::envlock_cmd() + " snapshot lock '" + snap.string() + "' -o '" + lock.string() + "'", env);
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_NE(l.err.find("1 environment(s), 2 conda package(s), 1 pip package(s)"), std::string::npos) << l.out << l.err;
  const auto i = testing::run_command(testing::envlock_cmd() + " install -l '" + lock.string() + "' -e geo -p '" + c.string() + "'", env);
  ASSERT_EQ(i.exit_code, 0) << i.out << i.err;
  EXPECT_TRUE(fs::is_regular_file(c / "conda-meta/libsimplerasters-0.9.0-h29872b0_0.json"));
  EXPECT_TRUE(fs::is_regular_file(c / PipOverConda::kRemoved)) << "the conda package as built, pip's changes not applied";
  EXPECT_NE(i.err.find("libsimplerasters==0.9.1"), std::string::npos) << i.err;
  const auto v = testing::run_command(testing::envlock_cmd() + " verify -p '" + c.string() + "'", env);
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;

  // The snapshot, the lockfile `snapshot lock` made of it and the prefix it was captured from
  // diff as no change against each other, each pair both ways: the conda record pip shadowed is
  // on every side (docs/review.md, "pip over conda").
  const std::map<fs::path, std::string> formats{{snap, "envlock.lock v1"}, {lock, "envlock.lock v1"}, {a, "conda-meta prefix"}};
  for (const auto& [x, y] : std::vector<std::pair<fs::path, fs::path>>{{snap, a}, {lock, a}, {snap, lock}, {a, snap}, {a, lock}, {lock, snap}}) {
    const auto d = testing::run_command(testing::envlock_cmd() + " diff '" + x.string() + "' '" + y.string() + "' --fail-on any", env);
    EXPECT_EQ(d.exit_code, 0) << x << " " << y << "\n" << d.out << d.err;
    EXPECT_EQ(d.out, "no changes\n"
                     "old: " + x.string() + " (" + formats.at(x) + ")\n"
                     "new: " + y.string() + " (" + formats.at(y) + ")\n"
                     "\n"
                     "geo / linux-64: no changes (3 packages)\n");
    EXPECT_EQ(d.err, "");
  }
  // The prefix before pip's install against the one after: pip's distribution is added, the
  // conda record it shadows stays as it was (it is not "removed": conda-meta still holds it).
  const auto before = testing::run_command(testing::envlock_cmd() + " diff '" + c.string() + "' '" + a.string() + "'", env);
  EXPECT_EQ(before.exit_code, 0) << before.err;
  EXPECT_EQ(before.out, "1 change: 1 added; size unknown\n"
                        "old: " + c.string() + " (conda-meta prefix)\n"
                        "new: " + a.string() + " (conda-meta prefix)\n"
                        "\n"
                        "geo / linux-64: 1 change, size unknown (2 -> 3 packages)\n"
                        "    added                         pypi:libsimplerasters  0.9.1\n");
}

// A process id that no process has any more: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

// A deploy killed with SIGKILL leaves its work folders beside the target (its staged pip files,
// an unpacked bundle): the next deploy there removes those whose process is gone and whose lock is
// free, and leaves alone one whose process runs, one another process holds locked (a pid of
// another pid namespace looks dead here), and names that are not a work folder's.
TEST(Deploy, WorkFoldersAKilledDeployLeftAreRemovedByTheNext) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  const fs::path a = t.dir / "a/geo";
  ASSERT_TRUE(deploy_snapshot(t.seed, a, t.here, t.options).ok());
  const PipOverConda pip(a);
  const fs::path snap = t.dir / "a.yaml";
  ASSERT_TRUE(t.capture_of(a).write(snap).ok());
  const fs::path parent = t.dir / "d";
  const auto leave = [&](const std::string& name) {
    fs::create_directories(parent / name / "lib/python3.12/site-packages");
    std::ofstream(parent / name / "lib/python3.12/site-packages/simplerasters.py") << "import math\n";
    return parent / name;
  };
  const std::string dead = std::to_string(dead_pid()), dead2 = std::to_string(dead_pid());
  leave(".geo.envlock-pip-" + dead);
  leave(".geo.envlock-bundle-" + dead + "-2");
  leave(".geo.envlock-pip-" + std::to_string(::getppid()));  // its process runs
  const fs::path held = leave(".geo.envlock-pip-" + dead2);
  const int fd = ::open(held.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  leave(".geo.envlock-pip-12ab");   // not a process id
  leave(".geo2.envlock-pip-" + dead);  // another target's: that deploy removes it
  const std::map<std::string, std::string> env{{"ENVLOCK_PKGS_DIR", t.options.package_cache.string()}};
  const auto d = testing::run_command(testing::envlock_cmd() + " snapshot deploy '" + snap.string() + "' -p '" + (parent / "geo").string() + "'", env);
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  ::close(fd);
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(parent)) left.insert(e.path().filename().string());
  // (.geo.envlock-generations: the deploy keeps generations as install does, the snapshot as its lockfile.)
  EXPECT_EQ(left, (std::set<std::string>{"geo", ".geo.envlock-generations", ".geo.envlock-lock", ".geo.envlock-pip-" + std::to_string(::getppid()),
                                         ".geo.envlock-pip-" + dead2, ".geo.envlock-pip-12ab", ".geo2.envlock-pip-" + dead}));
  pip.expect_reproduced(a, parent / "geo");

  // The library's own: a work folder is held while it lives, and gone with it.
  fs::path made;
  {
    auto w = WorkFolder::create(parent, ".geo.envlock-pip-");
    ASSERT_TRUE(w.ok()) << w.error().to_string();
    made = w->path();
    EXPECT_EQ(made.filename().string().rfind(".geo.envlock-pip-" + std::to_string(::getpid()), 0), 0u) << made;
    const int other = ::open(made.c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(other, 0);
    EXPECT_NE(::flock(other, LOCK_EX | LOCK_NB), 0) << "held by its maker";
    ::close(other);
    EXPECT_FALSE(remove_if_abandoned(made, {.folder = true}));
  }
  EXPECT_FALSE(fs::exists(made));
}

// Captured on a GPU host with a newer glibc, kernel and CPU than this one, a CPU-only environment
// still locks and installs here: a snapshot was never solved, so the capture host's facts are not
// the lockfile's virtual packages (each package's own `__*` depends are checked). `snapshot lock`'s
// lockfile and the snapshot read as a lockfile behave the same.
TEST(Deploy, ACpuOnlySnapshotFromAGpuHostInstallsOnAHostWithoutAGpu) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  Snapshot captured = deploy_and_capture(t, t.dir / "a/geo");
  captured.host.nvidia = NvidiaFacts{};
  captured.host.nvidia->cuda_version = "12.2";
  captured.host.glibc = "99.1";
  captured.host.kernel = "99.0.0-1-amd64";
  captured.host.cpu_level = "x86_64_v4";
  const fs::path snap = t.dir / "a.yaml", lock = t.dir / "envlock.lock";
  ASSERT_TRUE(captured.write(snap).ok());
  const std::map<std::string, std::string> env{{"ENVLOCK_PKGS_DIR", t.options.package_cache.string()},
                                               {"CONDA_OVERRIDE_CUDA", ""}};
  const auto l = testing::run_command(testing::envlock_cmd() + " snapshot lock '" + snap.string() + "' -o '" + lock.string() + "'", env);
  ASSERT_EQ(l.exit_code, 0) << l.err;
  const auto lf = Lockfile::read(lock);
  ASSERT_TRUE(lf.ok()) << lf.error().to_string();
  const auto& lp = lf->environments.at("geo").platforms.begin()->second;
  EXPECT_EQ(lp.virtual_packages, unsolved_virtual_packages(lp.platform));
  for (const auto& vp : lp.virtual_packages) EXPECT_EQ(vp.version, "0") << vp.to_string();
  for (const fs::path& from : {lock, snap}) {
    const fs::path c = t.dir / ("c-" + from.filename().string()) / "geo";
    const auto i = testing::run_command(testing::envlock_cmd() + " install -l '" + from.string() + "' -e geo -p '" + c.string() + "'", env);
    ASSERT_EQ(i.exit_code, 0) << from << "\n" << i.out << i.err;
    const auto v = testing::run_command(testing::envlock_cmd() + " verify -p '" + c.string() + "'", env);
    EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  }
}

// A pip distribution "toolbox 1.0" installed into `prefix` (its own files, no conda package shadowed).
void pip_install_toolbox(const fs::path& prefix) {
  testing::pip_install(prefix / "lib/python3.12/site-packages", "toolbox", "1.0", {{"toolbox.py", "def tool():\n    return 42\n"}});
}

// Rewrites the unpacked bundle `dir` as `bundle` after `edit` changed it.
void repack_bundle(const fs::path& dir, const fs::path& bundle) {
  std::vector<ArchiveEntry> entries;
  for (const auto& f : fs::recursive_directory_iterator(dir)) {
    if (!f.is_regular_file()) continue;
    ArchiveEntry e;
    e.path = f.path().lexically_relative(dir).generic_string();
    e.source = f.path();
    entries.push_back(std::move(e));
  }
  ASSERT_TRUE(write_tar_zst(bundle, std::move(entries)).ok());
}

void flip_last_byte(const fs::path& file) {
  std::string bytes = slurp(file);
  bytes[bytes.size() - 1] = static_cast<char>(bytes.back() ^ 0x5a);
  fs::remove(file);
  std::ofstream(file, std::ios::binary) << bytes;
}

TEST(Bundle, OfflineRoundTripWithAReRepackedPackageAndPipFiles) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  const fs::path a = t.dir / "host-a/envs/geo";
  ASSERT_TRUE(deploy_snapshot(t.seed, a, t.here, t.options).ok());
  pip_install_toolbox(a);
  // libviewshed's archive is gone from every package folder: the bundle re-packs it.
  const std::string viewshed = "libviewshed-5.0.0-h29872b0_0";
  ASSERT_TRUE(fs::remove(t.options.package_cache / (viewshed + ".conda")));

  Host seam = Host::system();
  seam.run = nullptr;
  CaptureOptions copt;
  copt.prefixes = {a};
  const Snapshot captured = capture(seam, copt);
  ASSERT_TRUE(captured.complete()) << captured.problems.front().where << ": " << captured.problems.front().message;
  const fs::path bundle = t.dir / "geo.tar.zst";
  BundleOptions bo;
  bo.package_dirs = {t.options.package_cache};
  const auto written = write_bundle(seam, captured, bundle, bo);
  ASSERT_TRUE(written.ok()) << written.error().to_string();
  EXPECT_EQ(written->archives, 1u);
  EXPECT_EQ(written->repacked, std::vector<std::string>{"geo: " + viewshed});
  EXPECT_EQ(written->pip_files, 4u);  // toolbox.py, INSTALLER, METADATA, RECORD

  // No channel is reachable any more, and the target uses an empty package cache.
  fs::remove_all(t.dir / "channel");
  const fs::path b = t.dir / "host-b/envs/geo";
  const std::map<std::string, std::string> env{{"ENVLOCK_PKGS_DIR", (t.dir / "pkgs-b").string()}};
  const auto d = testing::run_command(testing::envlock_cmd() + " snapshot deploy '" + bundle.string() + "' -p '" + b.string() + "'", env);
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  EXPECT_NE(d.out.find("2 conda packages, 1 pip distributions"), std::string::npos) << d.out;
  const auto v = verify_prefix(b);
  ASSERT_TRUE(v.ok()) << v.error().to_string();
  for (const auto& f : v->drift) ADD_FAILURE() << f.path << ": " << f.package << " " << f.reason;
  EXPECT_EQ(v->pip_files, 4u);
  copt.prefixes = {b};
  const Snapshot again = capture(seam, copt);
  for (const auto& c : diff_snapshots(captured, again)) {
    EXPECT_TRUE(c.section != "conda:geo" && c.section != "pip:geo") << c.section << " " << c.name << ": " << c.before << " -> " << c.after;
  }
  ASSERT_EQ(again.environments.size(), 1u);
  EXPECT_TRUE(again.environments[0].drift.empty());
  for (const auto& e : fs::directory_iterator(t.dir / "host-b")) {
    EXPECT_FALSE(e.path().filename().string().starts_with(".")) << "left behind: " << e.path();
  }

  // A file of the package to re-pack changed since it was installed: no faithful re-pack.
  std::string edited;
  const auto record = nlohmann::json::parse(slurp(a / ("conda-meta/" + viewshed + ".json")));
  for (const auto& f : record.at("files")) {
    if (fs::is_regular_file(fs::symlink_status(a / f.get<std::string>()))) edited = f.get<std::string>();
  }
  ASSERT_FALSE(edited.empty());
  const std::string content = slurp(a / edited) + "// edited\n";
  fs::remove(a / edited);
  std::ofstream(a / edited, std::ios::binary) << content;
  const auto refused = write_bundle(seam, captured, t.dir / "edited.tar.zst", bo);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::Integrity);
  EXPECT_NE(refused.error().message.find(viewshed + ": its archive is in no package folder and this file changed"), std::string::npos)
      << refused.error().to_string();
  EXPECT_EQ(refused.error().where, (a / edited).string());
  EXPECT_FALSE(fs::exists(t.dir / "edited.tar.zst"));
}

// pip over conda, offline: the bundle carries the shadowed conda package (its archive, or a
// re-pack of the files pip left as conda installed them) and pip's files; the deployed prefix
// holds what the captured one held.
TEST(Bundle, PipOverCondaDeploysTheShadowedPackageAndPipsFilesOverIt) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  const fs::path a = t.dir / "host-a/envs/geo";
  ASSERT_TRUE(deploy_snapshot(t.seed, a, t.here, t.options).ok());
  const PipOverConda pip(a);
  const Snapshot captured = t.capture_of(a);
  ASSERT_EQ(captured.environments.size(), 1u);
  ASSERT_EQ(captured.environments[0].packages.at(0).shadowed_by, "pip:libsimplerasters");
  const std::string removed_line = "missing " + std::string(PipOverConda::kRemoved) + " (libsimplerasters-0.9.0-h29872b0_0)";
  ASSERT_EQ(verify_lines(a), std::vector<std::string>{removed_line});
  Host seam = Host::system();
  seam.run = nullptr;
  BundleOptions bo;
  bo.package_dirs = {t.options.package_cache};

  // Both archives are in the package cache.
  const fs::path bundle = t.dir / "geo.tar.zst";
  const auto written = write_bundle(seam, captured, bundle, bo);
  ASSERT_TRUE(written.ok()) << written.error().to_string();
  EXPECT_EQ(written->archives, 2u);
  EXPECT_TRUE(written->repacked.empty());
  EXPECT_EQ(written->pip_files, 5u);
  fs::remove_all(t.dir / "channel");  // no network
  const fs::path b = t.dir / "host-b/envs/geo";
  const auto d = testing::run_command(testing::envlock_cmd() + " snapshot deploy '" + bundle.string() + "' -p '" + b.string() + "'",
                                      {{"ENVLOCK_PKGS_DIR", (t.dir / "pkgs-b").string()}});
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  EXPECT_NE(d.out.find("2 conda packages, 1 pip distributions"), std::string::npos) << d.out;
  pip.expect_reproduced(a, b);
  expect_same_packages(a, b);
  EXPECT_EQ(verify_lines(b), std::vector<std::string>{removed_line});
  const auto vcli = testing::run_command(testing::envlock_cmd() + " diff '" + a.string() + "' '" + b.string() + "'", {});
  EXPECT_EQ(vcli.exit_code, 0) << vcli.out << vcli.err;
  EXPECT_NE(vcli.out.find("no changes"), std::string::npos) << vcli.out;

  // The shadowed package's archive is gone: it is re-packed from the files pip left as conda
  // installed them (not the header pip overwrote, not the file pip removed).
  const std::string rasters = "libsimplerasters-0.9.0-h29872b0_0";
  ASSERT_TRUE(fs::remove(t.options.package_cache / (rasters + ".conda")));
  const fs::path repacked = t.dir / "geo-repacked.tar.zst";
  const auto written2 = write_bundle(seam, captured, repacked, bo);
  ASSERT_TRUE(written2.ok()) << written2.error().to_string();
  EXPECT_EQ(written2->repacked, std::vector<std::string>{"geo: " + rasters});
  const fs::path c = t.dir / "host-c/envs/geo";
  const auto d2 = testing::run_command(testing::envlock_cmd() + " snapshot deploy '" + repacked.string() + "' -p '" + c.string() + "'",
                                       {{"ENVLOCK_PKGS_DIR", (t.dir / "pkgs-c").string()}});
  ASSERT_EQ(d2.exit_code, 0) << d2.out << d2.err;
  pip.expect_reproduced(a, c);
  expect_same_packages(a, c);
  // The re-packed record lists only the files it holds, so verify has nothing to miss.
  EXPECT_EQ(verify_lines(c), std::vector<std::string>{});
}

TEST(Bundle, ATamperedArchiveIsRefusedNamingThePackageAndTheTargetStaysUntouched) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  const fs::path a = t.dir / "host-a/envs/geo";
  ASSERT_TRUE(deploy_snapshot(t.seed, a, t.here, t.options).ok());
  const std::string viewshed = "libviewshed-5.0.0-h29872b0_0", rasters = "libsimplerasters-0.9.0-h29872b0_0";
  ASSERT_TRUE(fs::remove(t.options.package_cache / (viewshed + ".conda")));
  // Through the command line: capture --bundle with the package cache as the archive folder.
  const fs::path bundle = t.dir / "geo.tar.zst";
  const auto c = testing::run_command(testing::envlock_cmd() + " snapshot capture -p '" + a.string() + "' --bundle '" + bundle.string() +
                                          "' --pkgs-dir '" + t.options.package_cache.string() + "' -o '" + (t.dir / "geo.yaml").string() + "'",
                                      {});
  EXPECT_TRUE(c.exit_code == 0 || c.exit_code == 3) << c.out << c.err;  // 3: a partial host capture (no nvidia-smi here)
  EXPECT_NE(c.err.find("wrote bundle " + bundle.string() + ": 1 package archives, 1 re-packed from installed files"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("re-packed (archive gone): geo: " + viewshed), std::string::npos) << c.err;
  // -o is the capture as it is (deployable from the prefix); only the bundle's own snapshot.yaml
  // names the re-packed archive.
  const auto snap = Snapshot::read(t.dir / "geo.yaml");
  ASSERT_TRUE(snap.ok()) << snap.error().to_string();
  EXPECT_EQ(snap->environments.at(0).packages.at(1).record.name, "libviewshed");
  EXPECT_EQ(snap->environments.at(0).packages.at(1).repacked_sha256, "");
  {
    const fs::path dir = t.dir / "inner";
    fs::create_directories(dir);
    const auto inner = open_bundle(bundle, dir);
    ASSERT_TRUE(inner.ok()) << inner.error().to_string();
    EXPECT_EQ(inner->environments.at(0).packages.at(1).repacked_sha256.size(), 64u);
    fs::remove_all(dir);
  }
  fs::remove_all(t.dir / "channel");
  // check, diff and lock read the snapshot inside a bundle too.
  const auto same = testing::run_command(testing::envlock_cmd() + " snapshot diff '" + (t.dir / "geo.yaml").string() + "' '" + bundle.string() + "'", {});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.out, "no differences\n");
  const auto lock = testing::run_command(testing::envlock_cmd() + " snapshot lock '" + bundle.string() + "' -o '" + (t.dir / "envlock.lock").string() + "'", {});
  EXPECT_EQ(lock.exit_code, 0) << lock.err;
  EXPECT_TRUE(fs::is_regular_file(t.dir / "envlock.lock"));

  // One archive copied as found, one re-packed: each tampered one is refused by name.
  for (const auto& [member, name] : std::vector<std::pair<std::string, std::string>>{
           {"pkgs/" + rasters + ".conda", rasters}, {"repacked/geo/" + viewshed + ".conda", viewshed}}) {
    const fs::path dir = t.dir / "unpacked";
    fs::remove_all(dir);
    fs::create_directories(dir);
    ASSERT_TRUE(extract_tar_zst_into(bundle, dir).ok());
    ASSERT_TRUE(fs::is_regular_file(dir / member)) << member;
    flip_last_byte(dir / member);
    const fs::path tampered = t.dir / "tampered.tar.zst";
    repack_bundle(dir, tampered);
    const fs::path target = t.dir / "target/geo";
    const std::map<std::string, std::string> env{{"ENVLOCK_PKGS_DIR", (t.dir / ("pkgs-" + name)).string()}};
    const auto r = testing::run_command(testing::envlock_cmd() + " snapshot deploy '" + tampered.string() + "' -p '" + target.string() + "'", env);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find(name), std::string::npos) << r.err;
    // Named as the bundle and its member, blamed on the bundle: never the temporary folder it
    // was unpacked into, never a server.
    EXPECT_NE(r.err.find("error: " + tampered.string() + ": " + member), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the bundle is damaged or was altered"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("envlock-bundle"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("server"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("maintainers"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(target));
    if (fs::exists(t.dir / "target")) {
      for (const auto& e : fs::directory_iterator(t.dir / "target")) ADD_FAILURE() << "left behind: " << e.path();
    }
  }
  // A re-packed archive rebuilt around an altered file, its new sha256 written into the
  // snapshot: the archive hash matches, the conda-meta file hash does not.
  {
    const fs::path dir = t.dir / "unpacked";
    fs::remove_all(dir);
    fs::create_directories(dir);
    ASSERT_TRUE(extract_tar_zst_into(bundle, dir).ok());
    const fs::path conda = dir / "repacked/geo" / (viewshed + ".conda");
    const fs::path x = t.dir / "x";
    fs::remove_all(x);
    fs::create_directories(x);
    ASSERT_TRUE(extract_into(conda, x).ok());
    std::vector<ArchiveEntry> entries;
    std::string altered;
    for (const auto& f : fs::recursive_directory_iterator(x)) {
      if (f.is_directory() && !f.is_symlink()) continue;
      ArchiveEntry e;
      e.path = f.path().lexically_relative(x).generic_string();
      if (f.is_symlink()) {
        e.kind = ArchiveEntry::Kind::Symlink;
        e.link_target = fs::read_symlink(f.path()).string();
      } else if (altered.empty() && !e.path.starts_with("info/") && fs::file_size(f.path()) > 0) {
        // Same size, other bytes: past the extraction's size check against info/paths.json, so
        // the sha256 that conda-meta records is what finds it.
        altered = e.path;
        e.content = slurp(f.path());
        e.content[0] = static_cast<char>(e.content[0] ^ 0x20);
      } else {
        e.source = f.path();
      }
      entries.push_back(std::move(e));
    }
    ASSERT_FALSE(altered.empty());
    fs::remove(conda);
    ASSERT_TRUE(write_conda_package(conda, std::move(entries)).ok());
    auto inner = Snapshot::read(dir / "snapshot.yaml");
    ASSERT_TRUE(inner.ok());
    for (auto& p : inner->environments[0].packages) {
      if (!p.repacked_sha256.empty()) p.repacked_sha256 = digest_file(conda)->sha256;
    }
    ASSERT_TRUE(inner->write(dir / "snapshot.yaml").ok());
    const fs::path tampered = t.dir / "tampered.tar.zst";
    repack_bundle(dir, tampered);
    const fs::path target = t.dir / "target/geo";
    const std::map<std::string, std::string> env{{"ENVLOCK_PKGS_DIR", (t.dir / "pkgs-altered").string()}};
    const auto r = testing::run_command(testing::envlock_cmd() + " snapshot deploy '" + tampered.string() + "' -p '" + target.string() + "'", env);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find(viewshed), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(altered + " does not match its conda-meta sha256"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(target));
  }
  // Not a bundle at all.
  std::ofstream(t.dir / "junk.tar.zst") << "not zstd";
  const auto junk = testing::run_command(testing::envlock_cmd() + " snapshot deploy '" + (t.dir / "junk.tar.zst").string() + "' -p '" +
                                         (t.dir / "target/geo").string() + "'", {});
  EXPECT_NE(junk.exit_code, 0);
  EXPECT_NE(junk.err.find("junk.tar.zst"), std::string::npos) << junk.err;
}

TEST(Deploy, ChecklistNamesDriverAndSystemPackageDifferences) {
  HostFacts captured, target;
  captured.nvidia = NvidiaFacts{"535.54.03", "12.2", {}};
  captured.system_package_manager = target.system_package_manager = "dpkg";
  captured.system_packages = {{"libcudnn8", "8.9.7.29-1+cuda12.2", "amd64", "install ok installed"},
                              {"openssh-server", "1:9.2p1-2", "amd64", "install ok installed"},
                              {"old", "1", "amd64", "deinstall ok config-files"}};
  target.system_packages = {{"openssh-server", "1:9.2p1-2+deb12u2", "amd64", "install ok installed"}};
  const auto list = host_checklist(captured, target);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0], "driver: NVIDIA 535.54.03 on the capture host; this host has none");
  EXPECT_EQ(list[1], "system package: libcudnn8 8.9.7.29-1+cuda12.2 (amd64) is not installed here");
  EXPECT_EQ(list[2], "system package: openssh-server 1:9.2p1-2 (amd64) is 1:9.2p1-2+deb12u2 here");
}


// A file edited in place in an environment writes through the hard link into the package cache.
// `envlock install` notices (the cached file's size differs from paths.json) and extracts the
// package again; deploy — from a snapshot and from a bundle — goes through the same check.
TEST(Deploy, AFileEditedInThePackageCacheIsExtractedAgainAsInstallDoes) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  const fs::path a = t.dir / "host-a/envs/geo";
  ASSERT_TRUE(deploy_snapshot(t.seed, a, t.here, t.options).ok());
  const Snapshot captured = t.capture_of(a);
  const fs::path bundle = t.dir / "geo.tar.zst";
  t.bundle_of(captured, bundle);
  // Append in place: the prefix's file is a hard link of the cached one.
  std::string edited;
  const auto record = nlohmann::json::parse(slurp(a / "conda-meta/libviewshed-5.0.0-h29872b0_0.json"));
  for (const auto& f : record.at("files")) {
    const fs::path p = a / f.get<std::string>();
    if (fs::is_regular_file(fs::symlink_status(p)) && fs::hard_link_count(p) > 1) edited = f.get<std::string>();
  }
  ASSERT_FALSE(edited.empty()) << "the install did not hard-link from the cache";
  std::ofstream(a / edited, std::ios::binary | std::ios::app) << "edit2\n";

  const fs::path b = t.dir / "host-b/envs/geo";
  auto from_snapshot = deploy_snapshot(captured, b, t.here, t.options);
  ASSERT_TRUE(from_snapshot.ok()) << from_snapshot.error().to_string();
  auto vb = verify_prefix(b);
  ASSERT_TRUE(vb.ok()) << vb.error().to_string();
  for (const auto& f : vb->drift) ADD_FAILURE() << "from a snapshot: " << f.path << ": " << f.reason;

  std::ofstream(b / edited, std::ios::binary | std::ios::app) << "edit3\n";  // the cache again
  const fs::path c = t.dir / "host-c/envs/geo";
  const std::map<std::string, std::string> env{{"ENVLOCK_PKGS_DIR", t.options.package_cache.string()}};
  const auto d = testing::run_command(testing::envlock_cmd() + " snapshot deploy '" + bundle.string() + "' -p '" + c.string() + "'", env);
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  auto vc = verify_prefix(c);
  ASSERT_TRUE(vc.ok()) << vc.error().to_string();
  for (const auto& f : vc->drift) ADD_FAILURE() << "from a bundle: " << f.path << ": " << f.reason;
}

// A VCS pip install whose direct_url.json holds a token: the bundle carries no credential (its
// direct_url.json is redacted and the RECORD row rewritten to match), and the deployed prefix
// verifies clean.
TEST(Bundle, AVcsPipInstallsCredentialIsNeitherBundledNorDeployed) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  const fs::path a = t.dir / "host-a/envs/geo";
  ASSERT_TRUE(deploy_snapshot(t.seed, a, t.here, t.options).ok());
  const fs::path site = a / "lib/python3.12/site-packages";
  const std::string module = "X = 1\n", installer = "pip\n", metadata = "Metadata-Version: 2.1\nName: mypkg\nVersion: 0.3.dev0\n",
                    direct = R"({"url": "https://bob:ghp_SECRET@github.com/acme/mypkg.git", "vcs_info": {"commit_id": )"
                             R"("0123456789abcdef0123456789abcdef01234567", "vcs": "git"}})";
  const std::string di = "mypkg-0.3.dev0.dist-info/";
  fs::create_directories(site / di);
  std::ofstream(site / "mypkg.py") << module;
  std::ofstream(site / (di + "INSTALLER")) << installer;
  std::ofstream(site / (di + "METADATA")) << metadata;
  std::ofstream(site / (di + "direct_url.json")) << direct;
  std::ofstream(site / (di + "RECORD")) << "mypkg.py,sha256=" << b64_sha256(module) << "," << module.size() << "\n"
                                        << di << "INSTALLER,sha256=" << b64_sha256(installer) << "," << installer.size() << "\n"
                                        << di << "METADATA,sha256=" << b64_sha256(metadata) << "," << metadata.size() << "\n"
                                        << di << "direct_url.json,sha256=" << b64_sha256(direct) << "," << direct.size() << "\n"
                                        << di << "RECORD,,\n";
  const Snapshot captured = t.capture_of(a);
  ASSERT_EQ(captured.environments.at(0).pip.size(), 1u);
  EXPECT_EQ(captured.environments[0].pip[0].source, PipSource::Vcs);
  const fs::path bundle = t.dir / "geo.tar.zst";
  t.bundle_of(captured, bundle);
  const fs::path x = t.dir / "unpacked";
  fs::create_directories(x);
  ASSERT_TRUE(extract_tar_zst_into(bundle, x).ok());
  for (const auto& f : fs::recursive_directory_iterator(x)) {
    if (f.is_regular_file()) {
      EXPECT_EQ(slurp(f.path()).find("ghp_SECRET"), std::string::npos) << f.path();
    }
  }
  const std::string bundled = slurp(x / "pip/geo/lib/python3.12/site-packages" / (di + "direct_url.json"));
  EXPECT_NE(bundled.find("\"https://github.com/acme/mypkg.git\""), std::string::npos) << bundled;
  EXPECT_NE(slurp(x / "pip/geo/lib/python3.12/site-packages" / (di + "RECORD")).find(di + "direct_url.json,sha256=" + b64_sha256(bundled) + "," + std::to_string(bundled.size())),
            std::string::npos);

  const fs::path b = t.dir / "host-b/envs/geo";
  const std::map<std::string, std::string> env{{"ENVLOCK_PKGS_DIR", (t.dir / "pkgs-b").string()}};
  const auto d = testing::run_command(testing::envlock_cmd() + " snapshot deploy '" + bundle.string() + "' -p '" + b.string() + "'", env);
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  EXPECT_EQ(slurp(b / "lib/python3.12/site-packages" / (di + "direct_url.json")), bundled);
  const auto v = verify_prefix(b);
  ASSERT_TRUE(v.ok()) << v.error().to_string();
  for (const auto& f : v->drift) ADD_FAILURE() << f.path << ": " << f.package << " " << f.reason;
  EXPECT_EQ(v->pip_files, 5u);
  const auto vcli = testing::run_command(testing::envlock_cmd() + " verify -p '" + b.string() + "'", {});
  EXPECT_EQ(vcli.exit_code, 0) << vcli.out << vcli.err;

  // `capture --bundle B -o S`: S is byte for byte the capture without --bundle (the live
  // prefix's RECORD hash of direct_url.json, not the bundle's redacted one), so it deploys from
  // the prefix; the bundle still holds no secret.
  const std::string plain = (t.dir / "plain.yaml").string(), with = (t.dir / "with-bundle.yaml").string();
  const fs::path bundle2 = t.dir / "geo2.tar.zst";
  const auto c1 = testing::run_command(testing::envlock_cmd() + " snapshot capture -p '" + a.string() + "' -o '" + plain + "'", {});
  const auto c2 = testing::run_command(testing::envlock_cmd() + " snapshot capture -p '" + a.string() + "' -o '" + with + "' --bundle '" +
                                           bundle2.string() + "' --pkgs-dir '" + t.options.package_cache.string() + "'",
                                       {});
  EXPECT_TRUE(c1.exit_code == 0 || c1.exit_code == 3) << c1.err;  // 3: a partial host capture (no nvidia-smi here)
  EXPECT_EQ(c2.exit_code, c1.exit_code) << c2.err;
  ASSERT_TRUE(fs::is_regular_file(with) && fs::is_regular_file(bundle2));
  EXPECT_EQ(slurp(with), slurp(plain));
  const fs::path x2 = t.dir / "unpacked2";
  fs::create_directories(x2);
  ASSERT_TRUE(extract_tar_zst_into(bundle2, x2).ok());
  EXPECT_EQ(slurp(x2 / "pip/geo/lib/python3.12/site-packages" / (di + "direct_url.json")), bundled);
  EXPECT_EQ(slurp(x2 / "snapshot.yaml").find("ghp_SECRET"), std::string::npos);
  const fs::path e = t.dir / "host-e/envs/geo";
  const auto d2 = testing::run_command(testing::envlock_cmd() + " snapshot deploy '" + with + "' -p '" + e.string() + "'",
                                       {{"ENVLOCK_PKGS_DIR", t.options.package_cache.string()}});
  ASSERT_EQ(d2.exit_code, 0) << d2.out << d2.err;
  // From the live prefix, its files are copied as they are.
  EXPECT_EQ(slurp(e / "lib/python3.12/site-packages" / (di + "direct_url.json")), direct);
  EXPECT_EQ(verify_lines(e), std::vector<std::string>{});
}

HostFacts x86_host(const std::string& level) {
  HostFacts h;
  h.platform = "linux-64";
  h.kernel = "6.1.0-18-amd64";
  h.glibc = "2.36";
  h.cpu_arch = "x86_64";
  h.cpu_level = level;
  h.libstdcxx_glibcxx = "3.4.30";
  h.libstdcxx_cxxabi = "1.3.13";
  return h;
}

CapturedPackage linux_package(const std::string& name, const std::string& version, std::vector<std::string> depends) {
  return testing::captured_package(name, version, std::move(depends), {}, "0");
}

// Restores an environment variable when the test ends.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

TEST(Compatibility, CpuLevelIsRefusedWhenAPackageNeedsItAndAlwaysListed) {
  Snapshot s;
  s.host = x86_host("x86_64_v4");
  CapturedEnvironment env;
  env.name = "train";
  env.platform = "linux-64";
  env.packages = {linux_package("python", "3.11.9", {})};
  // Nothing needs the level: runnable, but the checklist says the CPU is older.
  EXPECT_TRUE(check_compatibility(s, env, x86_host("x86_64_v3")).empty());
  const auto list = host_checklist(s.host, x86_host("x86_64_v3"));
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0], "cpu: x86_64_v4 on the capture host; this host has x86_64_v3 (programs built for the newer level may stop with an illegal instruction)");
  EXPECT_TRUE(host_checklist(s.host, x86_host("x86_64_v4")).empty());
  EXPECT_TRUE(host_checklist(x86_host("x86_64_v3"), x86_host("x86_64_v4")).empty());

  // conda-forge's microarch metapackage, and a depends on it.
  env.packages.push_back(linux_package("_x86_64-microarch-level", "4", {}));
  env.packages.push_back(linux_package("numpy", "2.0.0", {"_x86_64-microarch-level >=4"}));
  const auto failed = check_compatibility(s, env, x86_host("x86_64_v3"));
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[0].to_string(), "_x86_64-microarch-level 4 needs x86_64_v4 (built for that CPU level); the target has x86_64_v3");
  EXPECT_EQ(failed[1].to_string(), "numpy 2.0.0 needs _x86_64-microarch-level >=4; the target has x86_64_v3");
  EXPECT_TRUE(check_compatibility(s, env, x86_host("x86_64_v4")).empty());
}

TEST(Compatibility, TheTargetIsSeenThroughCondaOverridesAsInstallSeesIt) {
  Snapshot s;
  s.host = x86_host("x86_64_v3");
  CapturedEnvironment env;
  env.name = "train";
  env.platform = "linux-64";
  env.packages = {linux_package("libgcc", "14.1.0", {"__glibc >=2.28"}), linux_package("pytorch", "2.3.1", {"__cuda >=12"})};
  const HostFacts target = x86_host("x86_64_v3");  // no NVIDIA driver
  ASSERT_EQ(check_compatibility(s, env, target).size(), 1u);
  {
    ScopedEnv cuda("CONDA_OVERRIDE_CUDA", "12.4");
    ScopedEnv glibc("CONDA_OVERRIDE_GLIBC", "2.17");
    const auto failed = check_compatibility(s, env, target);
    ASSERT_EQ(failed.size(), 1u);
    EXPECT_EQ(failed[0].to_string(), "libgcc 14.1.0 needs __glibc >=2.28; the target has 2.17");
    const auto list = host_checklist(s.host, target);
    ASSERT_FALSE(list.empty());
    EXPECT_EQ(list[0], "glibc: 2.36 on the capture host; this host has 2.17");
    ScopedEnv arch("CONDA_OVERRIDE_ARCHSPEC", "x86_64_v2");
    EXPECT_NE(host_checklist(s.host, target).back().find("cpu: x86_64_v3 on the capture host; this host has x86_64_v2"), std::string::npos);
  }
  {
    ScopedEnv bad("CONDA_OVERRIDE_GLIBC", "not a version!");
    const auto failed = check_compatibility(s, env, target);
    ASSERT_EQ(failed.size(), 1u);
    EXPECT_NE(failed[0].to_string().find("CONDA_OVERRIDE_GLIBC"), std::string::npos) << failed[0].to_string();
  }
  {
    // A word parses as a conda version, but is no glibc release: the failure names the variable
    // (docs/snapshot.md), never "the target has banana".
    ScopedEnv bad("CONDA_OVERRIDE_GLIBC", "banana");
    const auto failed = check_compatibility(s, env, target);
    ASSERT_EQ(failed.size(), 1u);
    EXPECT_NE(failed[0].to_string().find("CONDA_OVERRIDE_GLIBC=banana is not a version"), std::string::npos) << failed[0].to_string();
    EXPECT_EQ(failed[0].to_string().find("the target has banana"), std::string::npos) << failed[0].to_string();
  }
}

}  // namespace
}  // namespace envlock

namespace envlock {
namespace {

// Every pip install form is recorded as what it is (issue 17): an editable install with PEP 610's
// direct_url.json (`dir_info.editable`, what pip >= 21.3 writes beside setuptools'
// `__editable__.<name>-<version>.pth`), a legacy `setup.py develop` one (`<name>.egg-link`, no
// dist-info: pip's freeze reads it from the link), an editable whose installer wrote no
// direct_url.json (only the `__editable__` .pth), a VCS install (URL and commit), a local
// folder, and a wheel from an index. Deploy then refuses the missing local sources, naming
// each, unless --skip-missing-sources; it never looks such a name up on an index.
TEST(Deploy, EveryPipInstallFormIsRecordedAndMissingLocalSourcesAreRefused) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  const fs::path a = t.dir / "host-a/envs/geo";
  ASSERT_TRUE(deploy_snapshot(t.seed, a, t.here, t.options).ok());
  const fs::path site = a / "lib/python3.12/site-packages";
  const fs::path src = t.dir / "work";  // a working tree that exists here
  fs::create_directories(src / "present");
  testing::pip_install(site, "mylib", "0.1",
                       {{"__editable__.mylib-0.1.pth", "/nonexistent-src/mylib/src\n"},
                        {"mylib-0.1.dist-info/direct_url.json", R"({"url": "file:///nonexistent-src/mylib", "dir_info": {"editable": true}})"}});
  testing::pip_install(site, "present", "2.0",
                       {{"present-2.0.dist-info/direct_url.json",
                         R"({"url": ")" + file_url_from_path((src / "present").string()) + R"(", "dir_info": {"editable": true}})"}});
  testing::pip_install(site, "hooked", "1.0", {{"__editable__.hooked-1.0.pth", "/nonexistent-src/hooked\n"}});
  testing::pip_install(site, "detectron2", "0.6",
                       {{"detectron2-0.6.dist-info/direct_url.json",
                         R"({"url": "https://github.com/facebookresearch/detectron2.git", "vcs_info": {"vcs": "git", "commit_id": "bcfd464d0c810f0442d91a349c0f6df945467143", "requested_revision": "main"}})"}});
  testing::pip_install(site, "localpkg", "3.0",
                       {{"localpkg-3.0.dist-info/direct_url.json", R"({"url": "file:///nonexistent-src/localpkg", "dir_info": {}})"}});
  testing::pip_install(site, "six", "1.16.0", {{"six.py", "# six\n"}});
  std::ofstream(site / "oldlib.egg-link") << "/nonexistent-src/oldlib\n.\n";

  const Snapshot snap = t.capture_of(a);
  ASSERT_EQ(snap.environments.size(), 1u);
  std::vector<std::string> forms;
  for (const auto& d : snap.environments[0].pip) forms.push_back(d.name + " " + d.version + ": " + d.requirement());
  EXPECT_EQ(forms, (std::vector<std::string>{
                       "detectron2 0.6: detectron2 @ git+https://github.com/facebookresearch/detectron2.git@bcfd464d0c810f0442d91a349c0f6df945467143",
                       "hooked 1.0: hooked @ file:///nonexistent-src/hooked",
                       "localpkg 3.0: localpkg @ file:///nonexistent-src/localpkg",
                       "mylib 0.1: mylib @ file:///nonexistent-src/mylib",
                       "oldlib : oldlib @ file:///nonexistent-src/oldlib",
                       "present 2.0: present @ " + file_url_from_path((src / "present").string()),
                       "six 1.16.0: six==1.16.0",
                   }));
  // The egg-link's version is unknown (its tree is not here): a problem says so.
  std::vector<CaptureProblem> of_prefix;
  for (const auto& p : snap.problems)
    if (p.where.starts_with(a.string())) of_prefix.push_back(p);
  EXPECT_EQ(of_prefix, (std::vector<CaptureProblem>{{(a / "lib/python3.12/site-packages/oldlib.egg-link").string(),
                                                         "editable install of oldlib at file:///nonexistent-src/oldlib: its version is "
                                                         "unknown (no <name>.egg-info/PKG-INFO there)"}}));
  const fs::path file = t.dir / "forms.yaml";
  ASSERT_TRUE(snap.write(file).ok());
  const auto reread = Snapshot::read(file);
  ASSERT_TRUE(reread.ok()) << reread.error().to_string();

  const fs::path b = t.dir / "host-b/envs/geo";
  DeployOptions opt = t.options;
  opt.allow_partial = true;
  auto refused = deploy_snapshot(*reread, b, t.here, opt);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::Incompatible);
  EXPECT_EQ(refused.error().message,
            "the source of 4 pip installs are missing here: pip:hooked 1.0 (editable install of /nonexistent-src/hooked)");
  EXPECT_EQ(refused.error().detail,
            "  - pip:hooked 1.0 (editable install of /nonexistent-src/hooked): the source is not on this host\n"
            "  - pip:localpkg 3.0 (local folder install of /nonexistent-src/localpkg): the source is not on this host\n"
            "  - pip:mylib 0.1 (editable install of /nonexistent-src/mylib): the source is not on this host\n"
            "  - pip:oldlib (editable install of /nonexistent-src/oldlib): the source is not on this host");
  EXPECT_FALSE(fs::exists(b));

  opt.skip_missing_sources = true;
  auto deployed = deploy_snapshot(*reread, b, t.here, opt);
  ASSERT_TRUE(deployed.ok()) << deployed.error().to_string();
  EXPECT_EQ(deployed->pip_restored, (std::vector<std::string>{"detectron2 0.6", "present 2.0", "six 1.16.0"}));
  for (const char* line : {"pip:hooked 1.0 (editable install of /nonexistent-src/hooked): not restored, its source is not on this host "
                           "(--skip-missing-sources)",
                           "pip:oldlib (editable install of /nonexistent-src/oldlib): not restored, its source is not on this host "
                           "(--skip-missing-sources)"}) {
    EXPECT_NE(std::find(deployed->checklist.begin(), deployed->checklist.end(), line), deployed->checklist.end())
        << line << "\n" << ::testing::PrintToString(deployed->checklist);
  }
  EXPECT_FALSE(fs::exists(b / "lib/python3.12/site-packages/mylib-0.1.dist-info"));
  EXPECT_TRUE(fs::exists(b / "lib/python3.12/site-packages/present-2.0.dist-info/direct_url.json"));

  // The lockfile of the snapshot names the editable and local sources, never an index pin.
  const auto lock = to_lockfile(*reread, ShadowedRecords::Kept);
  std::vector<std::string> entries;
  for (const auto& p : lock.environments.at("geo").platforms.at("linux-64").pip)
    entries.push_back(p.name + (p.editable ? " editable" : "") + " " + p.requirement);
  EXPECT_EQ(entries, (std::vector<std::string>{
                         "detectron2 detectron2 @ git+https://github.com/facebookresearch/detectron2.git@bcfd464d0c810f0442d91a349c0f6df945467143",
                         "hooked editable hooked @ file:///nonexistent-src/hooked",
                         "localpkg localpkg @ file:///nonexistent-src/localpkg",
                         "mylib editable mylib @ file:///nonexistent-src/mylib",
                         "oldlib editable oldlib @ file:///nonexistent-src/oldlib",
                         "present editable present @ " + file_url_from_path((src / "present").string()),
                         "six ",
                     }));
}

}  // namespace
}  // namespace envlock

namespace envlock {
namespace {

using testing::FakeHost;
using testing::envlock_cmd;
using testing::run_command;
namespace fs = std::filesystem;

TEST(Deploy, DeployIntoANonEmptyFolderOrAFileFailsWithExitOne) {
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

// A bundle whose snapshot.yaml does not read names the bundle and the member, never the temporary
// folder it was unpacked into, and says the bundle is damaged.
TEST(Bundle, ADamagedBundleNamesTheBundleAndTheMember) {
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

}  // namespace
}  // namespace envlock

namespace envlock {
namespace {

namespace fs = std::filesystem;

// A deploy over an environment envlock made replaces it as `envlock install` does: the conda
// packages and pip's files over them come in with the installer's one swap, and the tree it
// replaced is kept as a generation that rollback makes current again. A pip file that fails its
// check leaves the environment there as it was (it used to be deleted: the deploy removed the
// prefix it had just made).
TEST(Deploy, OverAnEnvironmentEnvlockMadeTheReplacedTreeIsKeptAsAGeneration) {
  SKIP_WITHOUT_CORPUS();
  RoundTrip t;
  const fs::path a = t.dir / "a/geo";
  ASSERT_TRUE(deploy_snapshot(t.seed, a, t.here, t.options).ok());
  const PipOverConda pip(a);
  const Snapshot captured = t.capture_of(a);
  const fs::path c = t.dir / "c/geo";
  DeployOptions conda_only = t.options;
  conda_only.without_pip = true;
  auto first = deploy_snapshot(captured, c, t.here, conda_only);
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  EXPECT_EQ(first->generation, 1u);
  EXPECT_EQ(first->previous, 0u);
  ASSERT_TRUE(fs::is_regular_file(c / PipOverConda::kRemoved));

  auto over = deploy_snapshot(captured, c, t.here, t.options);
  ASSERT_TRUE(over.ok()) << over.error().to_string();
  EXPECT_EQ(over->installed, (std::vector<std::string>{"libsimplerasters-0.9.0-h29872b0_0", "libviewshed-5.0.0-h29872b0_0"}));
  EXPECT_EQ(over->pip_restored, std::vector<std::string>{"libsimplerasters 0.9.1"});
  EXPECT_EQ(over->generation, 2u);
  EXPECT_EQ(over->previous, 1u);
  EXPECT_EQ(over->warnings, std::vector<std::string>{});
  pip.expect_reproduced(a, c);

  auto back = rollback_generation(c, std::nullopt);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->to, 1u);
  EXPECT_TRUE(fs::is_regular_file(c / PipOverConda::kRemoved)) << "generation 1: the conda package whole";
  EXPECT_FALSE(fs::exists(c / PipOverConda::kSite / "libsimplerasters-0.9.1.dist-info"));
  auto forth = rollback_generation(c, 2);
  ASSERT_TRUE(forth.ok()) << forth.error().to_string();
  pip.expect_reproduced(a, c);

  // A pip file changed since the capture: refused before anything moves, generation 2 stays.
  back = rollback_generation(c, 1);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  {
    const fs::path module = a / PipOverConda::kSite / "simplerasters.py";
    fs::remove(module);
    std::ofstream(module) << "import cmath\n";
  }
  auto bad = deploy_snapshot(captured, c, t.here, t.options);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::Integrity) << bad.error().to_string();
  EXPECT_TRUE(fs::is_regular_file(c / PipOverConda::kRemoved));
  EXPECT_FALSE(fs::exists(c / PipOverConda::kSite / "libsimplerasters-0.9.1.dist-info"));
  auto gens = list_generations(c);
  ASSERT_TRUE(gens.ok()) << gens.error().to_string();
  ASSERT_EQ(gens->size(), 2u);
  EXPECT_TRUE((*gens)[0].current);
}

}  // namespace
}  // namespace envlock
