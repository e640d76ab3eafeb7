// Change classification on small, readable lockfiles, and on the real corpus pairs.
#include <gtest/gtest.h>

#include <sstream>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "envlock/diff.hpp"
#include "envlock/pip.hpp"
#include "envlock/readers.hpp"
#include "support/pip_prefix.hpp"

namespace fs = std::filesystem;
using namespace envlock;

namespace {

fs::path lockfiles() { return fs::path(ENVLOCK_SHARED_DIR) / "corpus" / "lockfiles"; }

#define REQUIRE_CORPUS()                                                                      \
  if (!fs::is_directory(lockfiles()))                                                         \
  GTEST_SKIP() << "the shared corpus (" << lockfiles().string()                               \
               << ") is absent; the real-lockfile diff tests need ../shared/corpus/lockfiles"

// One explicit-file line per package is the smallest readable fixture; `extra` adds YAML.
struct Pkg {
  std::string name, version, build;
  std::string channel = "https://conda.anaconda.org/conda-forge";
  std::string subdir = "linux-64";
  std::string ext = ".conda";
  std::string sha256 = std::string(64, 'a');
  std::string license;
  std::vector<std::string> depends;
  std::optional<std::uint64_t> size;
  std::vector<std::string> track_features;
};

Lockfile make(const std::vector<Pkg>& pkgs, std::vector<std::string> requested = {}) {
  Lockfile lock;
  auto& env = lock.environments["default"];
  env.name = "default";
  env.requested = std::move(requested);
  auto& plat = env.platforms["linux-64"];
  plat.platform = "linux-64";
  for (const auto& p : pkgs) {
    LockedPackage r;
    r.name = p.name;
    r.version = Version::parse(p.version).value();
    r.build = p.build;
    r.subdir = p.subdir;
    r.channel = p.channel;
    r.file_name = p.name + "-" + p.version + "-" + p.build + p.ext;
    r.url = p.channel + "/" + p.subdir + "/" + r.file_name;
    r.sha256 = p.sha256;
    r.license = p.license;
    r.depends = p.depends;
    r.size = p.size;
    r.track_features = p.track_features;
    plat.packages.push_back(r);
  }
  std::sort(plat.packages.begin(), plat.packages.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return lock;
}

const PackageChange* change(const LockDiff& d, const std::string& name) {
  for (const auto& g : d.groups) {
    for (const auto& c : g.changes) {
      if (c.name == name) return &c;
    }
  }
  return nullptr;
}

Lockfile read(const std::string& rel) {
  auto r = read_lockfile_path(lockfiles() / rel);
  EXPECT_TRUE(r.ok()) << rel << ": " << (r.ok() ? "" : r.error().to_string());
  return r.ok() ? r->lockfile : Lockfile{};
}

}  // namespace

TEST(ChangeKinds, StableNamesRoundTrip) {
  for (ChangeKind k : all_change_kinds()) EXPECT_EQ(parse_change_kind(change_kind_name(k)), k);
  EXPECT_EQ(change_kind_name(ChangeKind::VariantSwitch), "variant-switch");
  EXPECT_EQ(change_kind_name(ChangeKind::HostFloorRaised), "host-floor-raised");
  EXPECT_FALSE(parse_change_kind("upgrade").has_value());
}

TEST(ChangeKinds, FailOnParsing) {
  auto k = parse_fail_on("downgraded,hash-changed, variant-switch");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(*k, (std::set<ChangeKind>{ChangeKind::Downgraded, ChangeKind::HashChanged, ChangeKind::VariantSwitch}));
  auto any = parse_fail_on("any");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->size(), all_change_kinds().size());
  auto bad = parse_fail_on("downgraded,bogus");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::Usage);
  EXPECT_EQ(bad.error().message, "unknown change kind 'bogus'");
  EXPECT_NE(bad.error().hint.find("host-floor-raised"), std::string::npos);
}

TEST(Diff, IdenticalSetsInAnyOrderGiveNoChanges) {
  Lockfile a = make({{"numpy", "1.26.4", "py312h_0"}, {"python", "3.12.1", "h_0_cpython"}});
  Lockfile b = make({{"python", "3.12.1", "h_0_cpython"}, {"numpy", "1.26.4", "py312h_0"}});
  auto d = diff_lockfiles(a, b);
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(render_text(d, {"a", "b", "x", "y"}, false).substr(0, 11), "no changes\n");
}

// The diff walks both sides in name order; a Lockfile built in code may hold its packages in any
// order (or a name twice: the last one counts, as before). Unsorted input gives the same diff.
TEST(Diff, UnsortedPackagesGiveTheSameDiff) {
  Lockfile a = make({{"numpy", "1.26.4", "py312h_0"}, {"python", "3.12.1", "h_0_cpython"}, {"zlib", "1.3", "h_0"}});
  Lockfile b = make({{"numpy", "2.0.0", "py312h_0"}, {"python", "3.12.1", "h_0_cpython"}, {"xz", "5.2", "h_0"}});
  const LockDiff sorted = diff_lockfiles(a, b);
  for (Lockfile* l : {&a, &b}) {
    auto& pkgs = l->environments["default"].platforms["linux-64"].packages;
    std::reverse(pkgs.begin(), pkgs.end());
  }
  EXPECT_EQ(diff_to_json(diff_lockfiles(a, b), {"a", "b", "x", "y"}).dump(),
            diff_to_json(sorted, {"a", "b", "x", "y"}).dump());
  auto& olds = a.environments["default"].platforms["linux-64"].packages;
  olds.insert(olds.begin(), olds.back());  // numpy twice: the later record is the one compared
  olds.front().version = Version::parse("3.0").value();
  const LockDiff unsorted = diff_lockfiles(a, b);
  ASSERT_NE(change(unsorted, "numpy"), nullptr);
  EXPECT_EQ(change(unsorted, "numpy")->kind, ChangeKind::Upgraded);
  EXPECT_EQ(change(unsorted, "python"), nullptr);  // the same record on both sides
  EXPECT_EQ(change(unsorted, "zlib")->kind, ChangeKind::Removed);
  EXPECT_EQ(change(unsorted, "xz")->kind, ChangeKind::Added);
}

TEST(Diff, VersionsCompareInCondaOrder) {
  auto d = diff_lockfiles(make({{"a", "1.9", "0"}, {"b", "2.0", "0"}, {"c", "1.0rc1", "0"}, {"d", "1.0", "0"}}),
                          make({{"a", "1.10", "0"}, {"b", "1.10", "0"}, {"c", "1.0", "0"}, {"d", "1.0.post1", "0"}}));
  EXPECT_EQ(change(d, "a")->kind, ChangeKind::Upgraded);    // 1.9 < 1.10, not string order
  EXPECT_EQ(change(d, "b")->kind, ChangeKind::Downgraded);  // red flag
  EXPECT_TRUE(change(d, "b")->red_flag());
  EXPECT_EQ(change(d, "c")->kind, ChangeKind::Upgraded);    // rc < release
  EXPECT_EQ(change(d, "d")->kind, ChangeKind::Upgraded);    // release < post
  EXPECT_EQ(d.counts.at(ChangeKind::Upgraded), 3u);
  EXPECT_EQ(d.counts.at(ChangeKind::Downgraded), 1u);
}

TEST(Diff, RebuiltAndRepackaged) {
  Pkg old_zlib{"zlib", "1.3.1", "hb9d3cd8_1"};
  Pkg new_zlib{"zlib", "1.3.1", "hb9d3cd8_2"};
  Pkg old_xz{"xz", "5.2.6", "h166bdaf_0"};
  old_xz.ext = ".tar.bz2";
  Pkg new_xz = old_xz;
  new_xz.ext = ".conda";
  new_xz.sha256 = std::string(64, 'b');
  auto d = diff_lockfiles(make({old_zlib, old_xz}), make({new_zlib, new_xz}));
  EXPECT_EQ(change(d, "zlib")->kind, ChangeKind::Rebuilt);
  EXPECT_FALSE(change(d, "zlib")->red_flag());
  // Another archive format of the same build has another hash by nature: not a red flag.
  EXPECT_EQ(change(d, "xz")->kind, ChangeKind::Rebuilt);
  EXPECT_EQ(change(d, "xz")->notes, std::vector<std::string>{"repackaged .tar.bz2 -> .conda"});
}

// The same URL now serving another archive is a re-upload, a red flag of its own kind and the
// first change shown; the same file name under another URL of the channel with another hash is
// hash-changed.
TEST(Diff, SameUrlWithAnotherHashIsAReUpload) {
  Pkg o{"openssl", "3.2.1", "hd590300_0"};
  Pkg n = o;
  n.sha256 = std::string(64, 'f');
  Pkg a{"aaa", "1.0", "h_0"};  // sorts before openssl by name: re-uploads still come first
  Pkg a2{"aaa", "0.9", "h_0"};
  auto d = diff_lockfiles(make({o, a}), make({n, a2}));
  ASSERT_NE(change(d, "openssl"), nullptr);
  EXPECT_EQ(change(d, "openssl")->kind, ChangeKind::ReUploaded);
  EXPECT_EQ(change(d, "openssl")->notes, std::vector<std::string>{"re-uploaded: same URL, sha256 aaaaaaaaaaaa… -> ffffffffffff…"});
  EXPECT_TRUE(change(d, "openssl")->red_flag());
  EXPECT_EQ(d.red_flags(), 2u);
  EXPECT_TRUE(d.has_any({ChangeKind::ReUploaded}));
  EXPECT_FALSE(d.has_any({ChangeKind::HashChanged, ChangeKind::VariantSwitch}));
  EXPECT_EQ(d.groups[0].changes[0].name, "openssl");
  const std::string pad(33, ' ');
  EXPECT_EQ(render_text(d, {"old.lock", "new.lock", "envlock.lock v1", "envlock.lock v1"}, false),
            "2 changes: 1 re-uploaded, 1 downgraded; size unknown; 2 red flags\n"
            "old: old.lock (envlock.lock v1)\n"
            "new: new.lock (envlock.lock v1)\n"
            "\n"
            "default / linux-64: 2 changes, size unknown (2 -> 2 packages)\n"
            "  ! re-uploaded" + std::string(19, ' ') + "openssl  3.2.1 hd590300_0 -> 3.2.1 hd590300_0\n" +
                pad + " re-uploaded: same URL, sha256 aaaaaaaaaaaa… -> ffffffffffff…\n" + pad + " pulled by: openssl\n"
            "  ! downgraded" + std::string(20, ' ') + "aaa      1.0 h_0 -> 0.9 h_0\n" + pad + " pulled by: aaa\n");

  // md5 only (an @EXPLICIT file): the same rule.
  Lockfile lo = make({o}), ln = make({o});
  for (Lockfile* l : {&lo, &ln}) l->environments["default"].platforms["linux-64"].packages[0].sha256.clear();
  lo.environments["default"].platforms["linux-64"].packages[0].md5 = std::string(32, '1');
  ln.environments["default"].platforms["linux-64"].packages[0].md5 = std::string(32, '2');
  EXPECT_EQ(diff_lockfiles(lo, ln).groups[0].changes.at(0).kind, ChangeKind::ReUploaded);

  // Same file name, another URL in the same channel (a mirror path), another hash: hash-changed.
  ln = make({n});
  ln.environments["default"].platforms["linux-64"].packages[0].url =
      "https://conda.anaconda.org/conda-forge/linux-64/mirror/openssl-3.2.1-hd590300_0.conda";
  auto h = diff_lockfiles(make({o}), ln);
  ASSERT_EQ(h.total, 1u);
  EXPECT_EQ(h.groups[0].changes[0].kind, ChangeKind::HashChanged);
  EXPECT_TRUE(h.groups[0].changes[0].red_flag());
}

// Everything that changes what gets installed from the same archive is a change: a repodata
// patch of depends or constrains (the same file, its record edited by the channel), the noarch
// kind, track_features, the build number, python_site_packages_path (CEP 17). Before, such a pair
// printed "no changes" and passed every --fail-on gate.
TEST(Diff, RepodataPatchesAndOtherInstallingFieldsAreChanges) {
  Pkg o{"scipy", "1.11.4", "py311h64a7726_0"};
  o.depends = {"numpy >=1.23.5,<2.0a0", "python >=3.11,<3.12.0a0"};
  Pkg n = o;
  n.depends = {"numpy >=1.23.5,<1.28", "python  >=3.11,<3.12.0a0"};  // white space is no change
  auto d = diff_lockfiles(make({o}), make({n}));
  ASSERT_EQ(d.total, 1u);
  const PackageChange& c = d.groups[0].changes[0];
  EXPECT_EQ(c.kind, ChangeKind::MetadataChanged);
  EXPECT_EQ(c.notes, std::vector<std::string>{"depends -numpy >=1.23.5,<2.0a0 +numpy >=1.23.5,<1.28"});
  EXPECT_FALSE(c.red_flag());
  EXPECT_TRUE(d.has_any({ChangeKind::MetadataChanged}));
  EXPECT_EQ(render_text(d, {"a", "b", "x", "y"}, false).substr(0, 29), "1 change: 1 metadata-changed;");

  Lockfile lo = make({o}), ln = make({o});
  auto& r = ln.environments["default"].platforms["linux-64"].packages[0];
  r.constrains = {"libblas * *mkl"};
  r.noarch = NoArchKind::Python;
  r.build_number = 1;
  r.python_site_packages_path = "lib/python3.11/site-packages";
  // envlock.lock on both sides holds every field (the CLI says so from the format).
  auto m = diff_lockfiles(lo, ln, RecordedFields{}, RecordedFields{});
  ASSERT_EQ(m.total, 1u);
  // One note per field, in the order `show` prints the fields (shown_record_fields drives both).
  EXPECT_EQ(m.groups[0].changes[0].notes,
            (std::vector<std::string>{"build_number 0 -> 1", "noarch (none) -> python",
                                      "python_site_packages_path (none) -> lib/python3.11/site-packages",
                                      "constrains +libblas * *mkl"}));
  // A field one side's format does not hold is not compared: conda-lock.yml has no constrains,
  // noarch or build number, an @EXPLICIT file not even depends.
  RecordedFields conda_lock;
  conda_lock.constrains = conda_lock.track_features = conda_lock.noarch = conda_lock.build_number = conda_lock.python_site_packages_path = false;
  EXPECT_TRUE(diff_lockfiles(lo, ln, RecordedFields{}, conda_lock).empty());
  // Without RecordedFields a field counts as held by a side when one of its records has it (the
  // old side here has no constrains), and noarch, build number and site-packages path never.
  EXPECT_TRUE(diff_lockfiles(lo, ln).empty());
  RecordedFields none{false, false, false, false, false, false, false, false};
  EXPECT_TRUE(diff_lockfiles(make({o}), make({n}), none, {}).empty());
  EXPECT_FALSE(diff_lockfiles(make({o}), make({n}), conda_lock, conda_lock).empty());  // conda-lock has depends
}

// pip packages: the source (index, URL, path, VCS URL and commit, editable) and the core metadata
// (requires_dist, requires_python) are compared, not only name, version and hash.
TEST(Diff, PipSourceAndMetadataAreCompared) {
  auto lock = [](std::vector<PipPackage> pip) {
    Lockfile l = make({{"python", "3.11.9", "h_0"}});
    l.environments["default"].platforms["linux-64"].pip = std::move(pip);
    return l;
  };
  const std::string repo = "git+https://github.com/facebookresearch/detectron2.git";
  PipPackage vcs_old{"detectron2", "0.6", repo + "?rev=main#bcfd464d0c810f0442d91a349c0f6df945467143"};
  PipPackage vcs_new{"detectron2", "0.6", repo + "?rev=main#0123456789abcdef0123456789abcdef01234567"};
  auto d = diff_lockfiles(lock({vcs_old}), lock({vcs_new}));
  ASSERT_EQ(d.total, 1u);
  EXPECT_EQ(d.groups[0].changes[0].kind, ChangeKind::SourceChanged);
  EXPECT_EQ(d.groups[0].changes[0].notes,
            std::vector<std::string>{"source vcs " + repo.substr(0) + "@bcfd464d0c810f0442d91a349c0f6df945467143 -> vcs " + repo +
                                     "@0123456789abcdef0123456789abcdef01234567"});
  // PEP 508 `@commit` (a prefix's direct_url.json, as to_pip_package writes it) reads the same.
  PipPackage installed{"detectron2", "0.6", "https://github.com/facebookresearch/detectron2.git", "",
                       "detectron2 @ " + repo + "@bcfd464d0c810f0442d91a349c0f6df945467143"};
  EXPECT_EQ(pip_source_info(installed).to_string(), "vcs " + repo + "@bcfd464d0c810f0442d91a349c0f6df945467143");
  EXPECT_TRUE(diff_lockfiles(lock({vcs_old}), lock({installed})).empty());
  PipPackage pep508{"detectron2", "0.6", repo + "@bcfd464d0c810f0442d91a349c0f6df945467143"};
  EXPECT_TRUE(diff_lockfiles(lock({vcs_old}), lock({pep508})).empty());

  // An index wheel named by its URL (pixi.lock) and an index install (a prefix: no
  // direct_url.json) are one source; an editable checkout is another.
  PipPackage wheel{"six", "1.16.0", "https://files.pythonhosted.org/packages/d9/5a/six-1.16.0-py2.py3-none-any.whl"};
  PipPackage index{"six", "1.16.0"};
  PipPackage editable{"six", "1.16.0", "file:///src/six"};
  editable.editable = true;
  EXPECT_TRUE(diff_lockfiles(lock({wheel}), lock({index})).empty());
  auto e = diff_lockfiles(lock({index}), lock({editable}));
  ASSERT_EQ(e.total, 1u);
  EXPECT_EQ(e.groups[0].changes[0].kind, ChangeKind::SourceChanged);
  EXPECT_EQ(e.groups[0].changes[0].notes, std::vector<std::string>{"source index -> editable file:///src/six"});
  PipPackage path{"six", "1.16.0", "file:///src/six"};
  EXPECT_EQ(diff_lockfiles(lock({path}), lock({editable})).groups[0].changes.at(0).notes,
            std::vector<std::string>{"source path file:///src/six -> editable file:///src/six"});

  PipPackage rd_old = index, rd_new = index;
  rd_old.requires_dist = {"numpy>=1.21"};
  rd_new.requires_dist = {"numpy>=1.21", "typing-extensions; python_version < '3.8'"};
  rd_new.requires_python = ">=3.8";
  auto m = diff_lockfiles(lock({rd_old}), lock({rd_new}), RecordedFields{}, RecordedFields{});  // two prefixes
  ASSERT_EQ(m.total, 1u);
  EXPECT_EQ(m.groups[0].changes[0].kind, ChangeKind::MetadataChanged);
  // In show's field order (shown_pip_fields drives both).
  EXPECT_EQ(m.groups[0].changes[0].notes,
            (std::vector<std::string>{"requires_python (none) -> >=3.8", "requires_dist +typing-extensions; python_version < '3.8'"}));
  RecordedFields envlock_lock;  // keeps no pip metadata
  envlock_lock.requires_dist = envlock_lock.requires_python = false;
  EXPECT_TRUE(diff_lockfiles(lock({rd_old}), lock({rd_new}), envlock_lock, {}).empty());
}

// A pin that loses its hash is a red flag (sha256 -> md5 only, or no hash: installed unverified),
// a percent-encoded spelling of the same file name is the same file (pixi writes `%2B`, pip `+`),
// and a changed pin names both URLs. A new-user attack (session 10) passed all three as "no
// changes" or "rebuilt" under the documented CI gate.
TEST(Diff, HashesThatGoAndEncodedFileNamesAreRedFlags) {
  Lockfile old_lock = make({{"zlib", "1.2.13", "hd590300_5"}, {"xz", "5.2.6", "h166bdaf_0"}, {"bz2", "1.0.8", "h_0"}});
  Lockfile new_lock = old_lock;
  auto& pkgs = new_lock.environments["default"].platforms["linux-64"].packages;
  for (auto& p : old_lock.environments["default"].platforms["linux-64"].packages) p.md5 = std::string(32, 'b');
  for (auto& p : pkgs) p.md5 = std::string(32, 'b');
  pkgs[2].sha256.clear();  // zlib: md5 only
  pkgs[1].sha256.clear();  // xz: no hash at all
  pkgs[1].md5.clear();
  pkgs[0].url = "https://mirror.example/linux-64/" + pkgs[0].file_name;  // bz2: another URL, another sha256
  pkgs[0].sha256 = std::string(64, 'c');
  auto d = diff_lockfiles(old_lock, new_lock);
  ASSERT_EQ(d.total, 3u);
  EXPECT_EQ(change(d, "zlib")->kind, ChangeKind::HashChanged);
  EXPECT_EQ(change(d, "zlib")->notes, std::vector<std::string>{"sha256 aaaaaaaaaaaa… removed, only md5 left"});
  EXPECT_EQ(change(d, "xz")->notes, std::vector<std::string>{"sha256 aaaaaaaaaaaa… removed: no hash left, installed unverified"});
  EXPECT_EQ(change(d, "bz2")->notes,
            (std::vector<std::string>{"sha256 aaaaaaaaaaaa… -> cccccccccccc…",
                                      "URL https://conda.anaconda.org/conda-forge/linux-64/bz2-1.0.8-h_0.conda -> "
                                      "https://mirror.example/linux-64/bz2-1.0.8-h_0.conda"}));

  auto pip_lock = [](std::string url, std::string sha256) {
    Lockfile l = make({{"python", "3.11.9", "h_0"}});
    PipPackage torch{"torch", "2.1.2+cu121", std::move(url), ""};
    torch.sha256 = std::move(sha256);
    l.environments["default"].platforms["linux-64"].pip = {torch};
    return l;
  };
  const std::string dir = "https://download.pytorch.org/whl/cu121/";
  auto e = diff_lockfiles(pip_lock(dir + "torch-2.1.2%2Bcu121-cp311-cp311-linux_x86_64.whl", std::string(64, 'f')),
                          pip_lock(dir + "torch-2.1.2+cu121-cp311-cp311-linux_x86_64.whl", std::string(64, '7')));
  ASSERT_EQ(e.total, 1u);
  EXPECT_EQ(e.groups[0].changes[0].kind, ChangeKind::HashChanged);
  EXPECT_EQ(e.groups[0].changes[0].notes,
            std::vector<std::string>{"same file torch-2.1.2+cu121-cp311-cp311-linux_x86_64.whl, sha256 ffffffffffff… -> "
                                     "777777777777…"});
  auto h = diff_lockfiles(pip_lock(dir + "torch-2.1.2+cu121-cp311-cp311-linux_x86_64.whl", std::string(64, 'f')),
                          pip_lock(dir + "torch-2.1.2+cu121-cp311-cp311-linux_x86_64.whl", ""),
                          RecordedFields{}, RecordedFields{});  // two lockfile formats that hold pip hashes
  ASSERT_EQ(h.total, 1u);
  EXPECT_EQ(h.groups[0].changes[0].kind, ChangeKind::HashChanged);
  EXPECT_EQ(h.groups[0].changes[0].notes,
            std::vector<std::string>{"sha256 ffffffffffff… removed: the archive would be installed unverified"});
}

// A locked wheel's sha256 is what install verifies, whatever its source's spelling: a relative
// path (find-links wheels are locked as one) moved to another folder or host, or a pin whose
// `requirement` still names the old path while its `url` and sha256 were swapped (install fetches
// `url`). Attack 23 F1 ("no changes", exit 0) and F4 (only source-changed).
TEST(Diff, ASwappedLocalWheelIsAHashChangeWhateverItsSourceSays) {
  auto pip_lock = [](std::string url, std::string sha256, std::string requirement = "") {
    Lockfile l = make({{"python", "3.11.9", "h_0"}});
    PipPackage okpkg{"okpkg", "1.0", std::move(url), std::move(sha256)};
    okpkg.requirement = std::move(requirement);
    l.environments["default"].platforms["linux-64"].pip = {okpkg};
    return l;
  };
  const std::string wheel = "okpkg-1.0-py3-none-any.whl";
  const std::string a(64, 'a'), b(64, 'b');
  // F1: the requirement is unchanged, the url and sha256 are not.
  auto f1 = diff_lockfiles(pip_lock("./wheels/" + wheel, a, "okpkg @ ./wheels/" + wheel),
                           pip_lock("./evil/" + wheel, b, "okpkg @ ./wheels/" + wheel));
  ASSERT_EQ(f1.total, 1u);
  EXPECT_EQ(f1.groups[0].changes[0].kind, ChangeKind::HashChanged);
  EXPECT_EQ(f1.groups[0].changes[0].notes,
            std::vector<std::string>{"same file okpkg-1.0-py3-none-any.whl, sha256 aaaaaaaaaaaa… -> bbbbbbbbbbbb…"});
  // F4: the path moved to a sub-folder, and to another host.
  for (const std::string& to : {"./wheels/sub/" + wheel, "https://evil.example.com/" + wheel}) {
    SCOPED_TRACE(to);
    auto f4 = diff_lockfiles(pip_lock("./wheels/" + wheel, a), pip_lock(to, b));
    ASSERT_EQ(f4.total, 1u);
    const auto& ch = f4.groups[0].changes[0];
    EXPECT_EQ(ch.kind, ChangeKind::HashChanged);
    EXPECT_TRUE(ch.red_flag());
    EXPECT_EQ(ch.notes.front(), "same file okpkg-1.0-py3-none-any.whl, sha256 aaaaaaaaaaaa… -> bbbbbbbbbbbb…");
  }
  // The same path, another sha256: re-uploaded, as before.
  auto same = diff_lockfiles(pip_lock("./wheels/" + wheel, a), pip_lock("./wheels/" + wheel, b));
  ASSERT_EQ(same.total, 1u);
  EXPECT_EQ(same.groups[0].changes[0].kind, ChangeKind::ReUploaded);
}

// Two sha256 that share their first 12 digits are printed long enough to read differently
// (attack 24 A5: `ddc51e6219a8… -> ddc51e6219a8…`), and a record's legacy `features`, which the
// solver weighs as track_features, is compared (attack 24 A4: it was "no changes").
TEST(Diff, LookalikeHashesReadDifferentlyAndFeaturesAreCompared) {
  Lockfile old_lock = make({{"zlib", "1.3.1", "h0_2"}});
  Lockfile new_lock = old_lock;
  auto& o = old_lock.environments["default"].platforms["linux-64"].packages[0];
  auto& n = new_lock.environments["default"].platforms["linux-64"].packages[0];
  o.sha256 = "ddc51e6219a8" + std::string(52, '1');
  n.sha256 = "ddc51e6219a8" + std::string(2, '1') + std::string(50, '2');
  n.features = "mkl";
  auto d = diff_lockfiles(old_lock, new_lock);
  ASSERT_EQ(d.total, 1u);
  EXPECT_EQ(change(d, "zlib")->kind, ChangeKind::ReUploaded);
  EXPECT_EQ(change(d, "zlib")->notes,
            (std::vector<std::string>{"re-uploaded: same URL, sha256 ddc51e6219a8111111… -> ddc51e6219a8112222…",
                                      "features +mkl"}));
}

// pip local labels are variants (`+cu121` -> `+cpu`, `+rocm5.6`, or the /whl/<variant>/ index
// folder), and versions compare in PEP 440 order: a local label sorts after the same public
// version without one ("Local version identifiers"), so `2.1.2+cu121 -> 2.1.2` is a downgrade.
TEST(Diff, PipLocalLabelsAreVariantsInPep440Order) {
  auto pip_lock = [](const std::string& version, const std::string& url = "") {
    Lockfile l = make({{"python", "3.11.9", "h_0"}});
    l.environments["default"].platforms["linux-64"].pip = {PipPackage{"torch", version, url}};
    return l;
  };
  struct Case {
    std::string from, to, url;
    ChangeKind kind;
    std::vector<ChangeKind> flags;
    std::vector<std::string> notes;
  };
  const std::vector<Case> cases = {
      {"2.1.2+cu121", "2.1.3+cpu", "", ChangeKind::VariantSwitch, {ChangeKind::Upgraded}, {"variant cu121 -> cpu"}},
      {"2.1.2+cu121", "2.1.2+rocm5.6", "", ChangeKind::VariantSwitch, {ChangeKind::Upgraded}, {"variant cu121 -> rocm5.6"}},
      {"2.1.2+cu121", "2.1.2", "", ChangeKind::VariantSwitch, {ChangeKind::Downgraded}, {"variant cu121 -> (none)"}},
      {"1.0+2", "1.0+10", "", ChangeKind::Upgraded, {}, {}},
      {"1.0+abc.1", "1.0+abc", "", ChangeKind::Downgraded, {}, {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.from + " -> " + c.to);
    auto d = diff_lockfiles(pip_lock(c.from), pip_lock(c.to));
    ASSERT_EQ(d.total, 1u);
    const auto& ch = d.groups[0].changes[0];
    EXPECT_EQ(ch.kind, c.kind);
    EXPECT_EQ(ch.flags, c.flags);
    EXPECT_EQ(ch.notes, c.notes);
  }
  // Without a local label, the index folder tells the variant.
  auto d = diff_lockfiles(pip_lock("2.1.2", "https://download.pytorch.org/whl/cu121/torch-2.1.2-cp311-cp311-linux_x86_64.whl"),
                          pip_lock("2.1.2", "https://download.pytorch.org/whl/cpu/torch-2.1.2-cp311-cp311-linux_x86_64.whl"));
  ASSERT_EQ(d.total, 1u);
  EXPECT_EQ(d.groups[0].changes[0].kind, ChangeKind::VariantSwitch);
}

TEST(Diff, VariantSwitches) {
  Pkg torch_cuda{"pytorch", "2.1.2", "cuda118_py311h0123abc_300"};
  Pkg torch_cpu{"pytorch", "2.1.2", "cpu_mkl_py311h0123abc_100"};
  Pkg blas_mkl{"libblas", "3.9.0", "20_linux64_mkl"};
  Pkg blas_ob{"libblas", "3.9.0", "20_linux64_openblas"};
  Pkg jax11{"jaxlib", "0.4.23", "cuda112py311h5a49573_200"};
  Pkg jax12{"jaxlib", "0.4.23", "cuda120py311h5a49573_200"};
  Pkg cupy_old{"cupy", "13.0.0", "py311h0abcdef_0"};
  cupy_old.depends = {"cuda-version >=11.2,<12", "python >=3.11,<3.12.0a0"};
  Pkg cupy_new{"cupy", "13.0.0", "py311h0abcdef_1"};
  cupy_new.depends = {"cuda-version >=12.0,<13", "python >=3.11,<3.12.0a0"};
  auto d = diff_lockfiles(make({torch_cuda, blas_mkl, jax11, cupy_old}), make({torch_cpu, blas_ob, jax12, cupy_new}));
  for (const char* n : {"pytorch", "libblas", "jaxlib", "cupy"}) {
    ASSERT_NE(change(d, n), nullptr) << n;
    EXPECT_EQ(change(d, n)->kind, ChangeKind::VariantSwitch) << n;
    EXPECT_TRUE(change(d, n)->has(ChangeKind::Rebuilt)) << n;
  }
  EXPECT_EQ(change(d, "pytorch")->notes.back(), "variant cuda+cuda11 -> cpu+mkl");
  EXPECT_EQ(change(d, "libblas")->notes.back(), "variant mkl -> openblas");
  EXPECT_EQ(change(d, "jaxlib")->notes.back(), "variant cuda+cuda11 -> cuda+cuda12");
  EXPECT_EQ(change(d, "cupy")->notes.back(), "variant cuda+cuda11 -> cuda+cuda12");
  // track_features move too
  Pkg np_old{"numpy", "1.26.4", "py311h_0"};
  np_old.track_features = {"nomkl"};
  Pkg np_new{"numpy", "1.26.4", "py311h_0"};
  auto d2 = diff_lockfiles(make({np_old}), make({np_new}));
  ASSERT_NE(change(d2, "numpy"), nullptr);
  EXPECT_EQ(change(d2, "numpy")->kind, ChangeKind::VariantSwitch);
}

TEST(Diff, ChannelLicenseAndHostFloor) {
  Pkg o{"libfoo", "1.0", "h_0"};
  o.license = "MIT";
  o.depends = {"__glibc >=2.17,<3.0.a0", "libgcc >=13"};
  o.size = 1000;
  Pkg n{"libfoo", "1.1", "h_0"};
  n.license = "GPL-3.0-only";
  n.channel = "https://prefix.dev/conda-forge";
  n.depends = {"__glibc >=2.28,<3.0.a0", "libgcc >=13"};
  n.size = 1500;
  Pkg gpu{"libbar", "2.0", "h_0"};
  gpu.depends = {"__cuda", "libfoo"};
  gpu.size = 300;
  auto d = diff_lockfiles(make({o}), make({n, gpu}));
  const PackageChange* c = change(d, "libfoo");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->kind, ChangeKind::Upgraded);
  EXPECT_TRUE(c->has(ChangeKind::ChannelChanged));
  EXPECT_TRUE(c->has(ChangeKind::LicenseChanged));
  EXPECT_TRUE(c->has(ChangeKind::HostFloorRaised));
  EXPECT_EQ(c->size_delta, std::optional<std::int64_t>(500));
  EXPECT_NE(std::find(c->notes.begin(), c->notes.end(), "__glibc >=2.28 (environment had >=2.17)"), c->notes.end());
  const PackageChange* b = change(d, "libbar");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->kind, ChangeKind::Added);
  EXPECT_TRUE(b->has(ChangeKind::HostFloorRaised));  // a new __cuda requirement
  EXPECT_EQ(d.size_delta, 800);
  ASSERT_EQ(d.groups.size(), 1u);
  ASSERT_EQ(d.groups[0].host_floors.size(), 2u);
  EXPECT_EQ(d.groups[0].host_floors[0].name, "__glibc");
  EXPECT_EQ(d.groups[0].host_floors[0].old_floor, "2.17");
  EXPECT_EQ(d.groups[0].host_floors[0].new_floor, "2.28");
  EXPECT_EQ(d.groups[0].host_floors[1].name, "__cuda");
  EXPECT_EQ(d.groups[0].host_floors[1].old_floor, "");
}

TEST(Diff, PulledByRootsOrRequestedSpecs) {
  // app -> lib -> zlib ; tool -> zlib ; zlib changes
  Pkg app{"app", "1.0", "0"};
  app.depends = {"lib >=1"};
  Pkg lib{"lib", "1.0", "0"};
  lib.depends = {"zlib >=1.2"};
  Pkg tool{"tool", "1.0", "0"};
  tool.depends = {"zlib"};
  Pkg z1{"zlib", "1.2.13", "0"};
  Pkg z2{"zlib", "1.3.1", "0"};
  auto d = diff_lockfiles(make({app, lib, tool, z1}), make({app, lib, tool, z2}));
  EXPECT_EQ(change(d, "zlib")->pulled_by, (std::vector<std::string>{"app", "tool"}));
  // With requested specs, those are the roots (a requested package lists itself).
  auto d2 = diff_lockfiles(make({app, lib, tool, z1}, {"conda-forge::lib >=1"}),
                           make({app, lib, tool, z2}, {"conda-forge::lib >=1", "zlib"}));
  EXPECT_EQ(change(d2, "zlib")->pulled_by, (std::vector<std::string>{"lib", "zlib"}));
}

TEST(Diff, RenderersAgreeOnCounts) {
  Pkg o{"openssl", "3.2.1", "hd590300_0"};
  Pkg n = o;
  n.sha256 = std::string(64, 'f');
  auto d = diff_lockfiles(make({o, {"zlib", "1.3", "0"}}), make({n, {"zlib", "1.2", "0"}}));
  DiffLabels labels{"old.lock", "new.lock", "@EXPLICIT", "@EXPLICIT"};
  const std::string text = render_text(d, labels, false);
  // No side knows a size (as conda-lock.yml and @EXPLICIT): unknown, not "+0 B".
  EXPECT_EQ(text.substr(0, text.find('\n')), "2 changes: 1 re-uploaded, 1 downgraded; size unknown; 2 red flags");
  EXPECT_NE(text.find("default / linux-64: 2 changes, size unknown ("), std::string::npos);
  EXPECT_EQ(text.find("\x1b["), std::string::npos);
  EXPECT_NE(render_text(d, labels, true).find("\x1b[1;31m"), std::string::npos);
  const std::string md = render_markdown(d, labels);
  EXPECT_NE(md.find("#### :warning: Red flags"), std::string::npos);
  EXPECT_LT(md.find("Red flags"), md.find("<details>"));
  EXPECT_NE(md.find("<details><summary>default / linux-64: 2 changes"), std::string::npos);
  auto j = diff_to_json(d, labels);
  EXPECT_EQ(j["schema"], "envlock-diff/1");
  EXPECT_EQ(j["summary"]["changes"], 2);
  EXPECT_EQ(j["summary"]["by_kind"]["re-uploaded"], 1);
  EXPECT_EQ(j["summary"]["by_kind"]["hash-changed"], 0);
  EXPECT_EQ(j["summary"]["red_flags"], 2);
  EXPECT_TRUE(j["summary"]["size_delta"].is_null());
  ASSERT_EQ(j["groups"].size(), 1u);
  EXPECT_TRUE(j["groups"][0]["size_delta"].is_null());
  EXPECT_TRUE(j["groups"][0]["changes"][0]["size_delta"].is_null());
  EXPECT_EQ(j["groups"][0]["changes"][0]["name"], "openssl");
  EXPECT_EQ(j["groups"][0]["changes"][0]["kind"], "re-uploaded");
  EXPECT_EQ(j["groups"][0]["changes"][0]["old"]["sha256"], std::string(64, 'a'));
  EXPECT_EQ(j["groups"][0]["changes"][1]["kind"], "downgraded");
}

TEST(Diff, KnownSizesStaySignedBytes) {
  Pkg o{"zlib", "1.3", "0"};
  o.size = 1000;
  Pkg n{"zlib", "1.3.1", "0"};
  n.size = 1500;
  auto d = diff_lockfiles(make({o}), make({n}));
  const std::string text = render_text(d, {"a", "b", "envlock.lock", "envlock.lock"}, false);
  EXPECT_EQ(text.substr(0, text.find('\n')), "1 change: 1 upgraded; size +500 B");
  EXPECT_EQ(diff_to_json(d, {"a", "b", "x", "y"})["summary"]["size_delta"], 500);
  // No changes: a known zero.
  EXPECT_EQ(diff_to_json(diff_lockfiles(make({o}), make({o})), {"a", "b", "x", "y"})["summary"]["size_delta"], 0);
}

TEST(Diff, NoRawControlCharactersOrMarkdownInjectionFromAnyField) {
  // The readers refuse such names; a Lockfile built otherwise (or a version, channel, note) must
  // still not inject lines, escape sequences or HTML into the output.
  Pkg o{"zz\nno changes\n\x1b[2J", "1.0", "0"};
  Pkg n{"zz\nno changes\n\x1b[2J", "1.1", "0"};
  Pkg ho{"ev|il</details><img src=x onerror=alert(1)>", "1.0", "0"};
  Pkg hn{"ev|il</details><img src=x onerror=alert(1)>", "2.0", "0"};
  auto d = diff_lockfiles(make({o, ho}), make({n, hn}));
  DiffLabels labels{"old\x1b]0;x\x07.lock", "new.lock", "conda-lock v1", "conda-lock v1"};
  const std::string text = render_text(d, labels, false);
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(c == '\n' || (u >= 0x20 && u != 0x7f)) << "raw control byte " << int(u);
  }
  EXPECT_NE(text.find("zz\\x0ano changes\\x0a\\x1b[2J"), std::string::npos);
  EXPECT_EQ(text.find("\nno changes"), std::string::npos);
  const std::string md = render_markdown(d, labels);
  // The name is a code span wherever it appears (HTML in one is text), `|` escaped in a table cell:
  // every `<img` is one of those code spans.
  const std::string in_cell = "`ev\\|il</details><img src=x onerror=alert(1)>`";
  const std::string in_text = "`ev|il</details><img src=x onerror=alert(1)>`";
  std::size_t imgs = 0, spans = 0;
  for (auto pos = md.find("<img"); pos != std::string::npos; pos = md.find("<img", pos + 1)) ++imgs;
  for (const std::string& span : {in_cell, in_text})
    for (auto pos = md.find(span); pos != std::string::npos; pos = md.find(span, pos + 1)) ++spans;
  EXPECT_EQ(imgs, spans) << md;
  EXPECT_NE(md.find("| " + in_cell + " | upgraded | `1.0 0` | `2.0 0` |"), std::string::npos) << md;
  EXPECT_EQ(md.find('\x1b'), std::string::npos);
  // Every table row keeps its 7 cells: no unescaped `|` from a field.
  std::size_t rows = 0;
  std::istringstream lines(md);
  for (std::string row; std::getline(lines, row);) {
    if (!row.starts_with("| ") || row.find("| upgraded | `1.") == std::string::npos) continue;
    std::size_t bars = 0;
    for (std::size_t i = 0; i < row.size(); ++i) bars += row[i] == '|' && (i == 0 || row[i - 1] != '\\');
    EXPECT_EQ(bars, 8u) << row;
    ++rows;
  }
  EXPECT_EQ(rows, 2u);
  // A plain name keeps its code span (output unchanged for ordinary input).
  auto plain = render_markdown(diff_lockfiles(make({{"zlib", "1.2", "0"}}), make({{"zlib", "1.3", "0"}})), labels);
  EXPECT_NE(plain.find("| `zlib` | upgraded |"), std::string::npos);
  Lockfile shown = make({o});
  const std::string show = render_show(shown);
  EXPECT_EQ(std::count(show.begin(), show.end(), '\n'), 1);
  EXPECT_EQ(show.find('\x1b'), std::string::npos);
}

TEST(Diff, FormatSize) {
  EXPECT_EQ(format_size(0, true), "+0 B");
  EXPECT_EQ(format_size(1536, true), "+1.5 KiB");
  EXPECT_EQ(format_size(-3 * 1024 * 1024, true), "-3.0 MiB");
  EXPECT_EQ(format_size(512, false), "512 B");
}

// ---- the real corpus ----

TEST(CorpusDiff, StabilityPairHasNoChanges) {
  REQUIRE_CORPUS();
  auto d = diff_lockfiles(read("conda__rattler/test-data__conda-lock__v5__stability-original.yml"),
                          read("conda__rattler/test-data__conda-lock__v5__stability-shuffled.yml"));
  EXPECT_TRUE(d.empty()) << render_text(d, {"a", "b", "", ""}, false);
}

TEST(CorpusDiff, SameEnvironmentInTwoFormatsHasNoChanges) {
  REQUIRE_CORPUS();
  auto d = diff_lockfiles(read("pangeo-data__pangeo-docker-images/ml-notebook__conda-lock.yml"),
                          read("pangeo-data__pangeo-docker-images/ml-notebook__conda-linux-64.lock"));
  EXPECT_EQ(d.total, 0u) << render_text(d, {"a", "b", "", ""}, false);
}

TEST(CorpusDiff, PixiFormatChangeGivesNoCondaChanges) {
  REQUIRE_CORPUS();
  // The same project's pixi.lock rewritten from format 5 (name, version, build spelled out) to
  // format 6 (taken from the URL): every conda record is unchanged. The project also added four
  // PyPI test dependencies and re-resolved one sdist between the commits; those are real changes.
  const auto v5 = read("prefix-dev__pixi/examples__pypi__pixi.lock@83715daa_version5");
  const auto v6 = read("prefix-dev__pixi/examples__pypi__pixi.lock");
  auto d = diff_lockfiles(v5, v6);
  ASSERT_EQ(d.groups.size(), 4u);
  for (const auto& g : d.groups) {
    for (const auto& c : g.changes) EXPECT_TRUE(c.pypi) << g.platform << " " << c.name;
  }
  EXPECT_EQ(d.counts[ChangeKind::Added], 16u);
  const PackageChange* pytest = change(d, "pytest");
  ASSERT_NE(pytest, nullptr);
  EXPECT_EQ(pytest->kind, ChangeKind::Added);
  EXPECT_EQ(pytest->new_side->version, "9.0.3");
}

TEST(CorpusDiff, PangeoMlNotebook2023To2026) {
  REQUIRE_CORPUS();
  const auto old_lock = read("pangeo-data__pangeo-docker-images/ml-notebook__conda-lock.yml@55a3b77f");
  const auto new_lock = read("pangeo-data__pangeo-docker-images/ml-notebook__conda-lock.yml@aa438254");
  auto d = diff_lockfiles(old_lock, new_lock);
  ASSERT_EQ(d.groups.size(), 1u);
  EXPECT_EQ(d.groups[0].environment, "default");
  EXPECT_EQ(d.groups[0].platform, "linux-64");
  EXPECT_GT(d.counts[ChangeKind::Added], 10u);
  EXPECT_GT(d.counts[ChangeKind::Upgraded], 100u);
  const PackageChange* py = change(d, "python");
  ASSERT_NE(py, nullptr);
  EXPECT_EQ(py->kind, ChangeKind::Upgraded);
  EXPECT_EQ(py->old_side->version.substr(0, 4), "3.10");
  // Every changed package on the new side is pulled in by at least one root.
  for (const auto& c : d.groups[0].changes) {
    if (c.new_side && !c.pypi) {
      EXPECT_FALSE(c.pulled_by.empty()) << c.name;
    }
  }
  // The rendered JSON lists exactly the counted changes.
  auto j = diff_to_json(d, {"old", "new", "conda-lock v1", "conda-lock v1"});
  EXPECT_EQ(j["groups"][0]["changes"].size(), d.total);
}

// PR comments fit (issue 17): the largest real pair of the corpus (pangeo's ml-notebook,
// 2023 -> 2026, hundreds of changes) within GitHub's 65,536 characters, and a small budget keeps
// the title, summary and table, the most severe changes first, and counts the rest.
TEST(CorpusDiff, MarkdownFitsItsBudgetMostSevereFirst) {
  REQUIRE_CORPUS();
  const auto d = diff_lockfiles(read("pangeo-data__pangeo-docker-images/ml-notebook__conda-lock.yml@55a3b77f"),
                                read("pangeo-data__pangeo-docker-images/ml-notebook__conda-lock.yml@aa438254"));
  const DiffLabels labels{"HEAD~1:conda-lock.yml", "conda-lock.yml", "conda-lock v1", "conda-lock v1"};
  const std::string full = render_markdown(d, labels, 0);
  EXPECT_EQ(full, render_markdown(d, labels));
  const std::string fitted = render_markdown(d, labels, kMarkdownBudget);
  EXPECT_LE(fitted.size(), kMarkdownBudget);
  if (full.size() <= kMarkdownBudget) {
    EXPECT_EQ(fitted, full);
  }
  for (std::size_t budget : {std::size_t{6000}, std::size_t{20000}, kMarkdownBudget / 4}) {
    const std::string md = render_markdown(d, labels, budget);
    EXPECT_LE(md.size(), budget) << budget;
    // Title, summary line and summary table as in the full comment.
    const auto table_end = full.find("\n\n", full.find("| environment | platform |")) + 2;
    EXPECT_EQ(md.substr(0, table_end), full.substr(0, table_end));
    EXPECT_EQ(md.substr(table_end, 29), "#### Most important changes\n\n");
    // Rows, most severe first: no row of a less severe kind before a more severe one.
    std::size_t rows = 0;
    int last = -1;
    static const std::vector<std::string> order = {"re-uploaded", "hash-changed", "variant-switch", "downgraded", "removed",
                                                   "host-floor-raised", "inputs-changed", "source-changed", "channel-changed", "metadata-changed",
                                                   "added", "upgraded", "rebuilt", "license-changed"};
    std::istringstream in(md.substr(table_end));
    for (std::string line; std::getline(in, line);) {
      if (!line.starts_with("| `default` / `linux-64` |")) continue;
      ++rows;
      int rank = static_cast<int>(order.size());
      for (int i = 0; i < static_cast<int>(order.size()); ++i)
        if (line.find(" " + order[static_cast<std::size_t>(i)]) != std::string::npos ||
            line.find("+" + order[static_cast<std::size_t>(i)]) != std::string::npos) {
          rank = i;
          break;
        }
      EXPECT_GE(rank, last) << line;
      last = std::max(last, rank);
    }
    EXPECT_GT(rows, 0u) << budget;
    const std::string note = "**" + std::to_string(d.total - rows) + " more changes not shown** (";
    EXPECT_NE(md.find(note), std::string::npos) << md.substr(md.size() - 400);
    EXPECT_TRUE(md.ends_with(" bytes; `envlock diff OLD NEW` (text, or `--format json`) lists every change, and `--max-bytes` sets the budget.\n"))
        << md.substr(md.size() - 300);
  }
}

// A prefix's pip side against a lockfile: pip packages pair by PEP 503 name (METADATA's "Foo_Bar"
// is a lockfile's "foo-bar"); a conda package's own dist-info (six) is no pip package.
TEST(PrefixPip, LockfileAgainstTheInstalledPipSide) {
  envlock::testing::PipPrefix prefix;
  prefix.dist_info("Foo_Bar", "1.2.0", "pip");
  auto installed = read_prefix(prefix.path());
  ASSERT_TRUE(installed.ok()) << installed.error().to_string();
  ASSERT_EQ(installed->environments.at("default").platforms.at("linux-64").pip.size(), 1u);

  Lockfile lock = *installed;  // the same conda side; the pip side as a lockfile writes it
  auto& pip = lock.environments.at("default").platforms.at("linux-64").pip;
  pip = {PipPackage{"foo-bar", "1.2.0", "", "", ""}};
  EXPECT_TRUE(diff_lockfiles(lock, *installed).empty());

  pip = {PipPackage{"foo-bar", "1.1.0", "", "", ""}};
  auto d = diff_lockfiles(lock, *installed);
  ASSERT_EQ(d.total, 1u);
  const PackageChange* c = change(d, "Foo_Bar");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->pypi);
  EXPECT_EQ(c->kind, ChangeKind::Upgraded);
  EXPECT_EQ(c->old_side->version, "1.1.0");
  EXPECT_EQ(c->new_side->version, "1.2.0");

  // The prefix without the pip package: the lockfile's entry is removed.
  pip = {PipPackage{"foo-bar", "1.2.0", "", "", ""}};
  envlock::testing::PipPrefix bare;
  auto without = read_prefix(bare.path());
  ASSERT_TRUE(without.ok());
  d = diff_lockfiles(lock, *without);
  ASSERT_EQ(d.total, 1u);
  c = change(d, "foo-bar");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->kind, ChangeKind::Removed);
}

// environment.yml `pip:` entries are requirements, not versions: met by the installed version
// is no change; unmet says which way and why.
TEST(PrefixPip, UnresolvedRequirementsAgainstAnInstalledVersion) {
  envlock::testing::PipPrefix prefix;
  prefix.dist_info("Foo_Bar", "1.2.0", "pip");
  const auto vcs = prefix.dist_info("tool", "2.0", "pip");
  prefix.write(vcs / "direct_url.json",
               R"({"url": "https://github.com/o/tool", "vcs_info": {"vcs": "git", "commit_id": "0123abc"}})");
  auto installed = read_prefix(prefix.path());
  ASSERT_TRUE(installed.ok()) << installed.error().to_string();
  Lockfile lock = *installed;
  auto& pip = lock.environments.at("default").platforms.at("linux-64").pip;
  auto with = [&](const std::string& foo, const std::string& tool) {
    pip = {PipPackage{"foo-bar", "", "", "", foo}, PipPackage{"tool", "", "", "", tool}};
    return diff_lockfiles(lock, *installed);
  };
  EXPECT_TRUE(with("foo-bar>=1.0,<2", "tool @ git+https://github.com/o/tool@main").empty());
  EXPECT_TRUE(with("Foo.Bar[extra] ~= 1.2 ; python_version >= '3.8'", "tool").empty());
  EXPECT_TRUE(with("foo-bar==1.2.*", "tool==2.0").empty());

  auto d = with("foo-bar>=2.0", "tool @ git+https://github.com/other/tool");
  ASSERT_EQ(d.total, 2u);
  const PackageChange* foo = change(d, "Foo_Bar");
  ASSERT_NE(foo, nullptr);
  EXPECT_EQ(foo->kind, ChangeKind::Downgraded);  // installed below what the lockfile asked for
  ASSERT_EQ(foo->notes.size(), 1u);
  EXPECT_EQ(foo->notes[0], "requirement `foo-bar>=2.0` is not met by 1.2.0");
  const PackageChange* tool = change(d, "tool");
  ASSERT_NE(tool, nullptr);
  EXPECT_EQ(tool->kind, ChangeKind::ChannelChanged);
  ASSERT_EQ(tool->notes.size(), 1u);
  EXPECT_EQ(tool->notes[0],
            "requirement `tool @ git+https://github.com/other/tool` is not met by 2.0 from https://github.com/o/tool");

  // The requirement on the new side: an installed version above its upper bound must go down.
  pip = {PipPackage{"foo-bar", "", "", "", "foo-bar<1.0"}, PipPackage{"tool", "", "", "", "tool!=2.0"}};
  d = diff_lockfiles(*installed, lock);
  foo = change(d, "foo-bar");
  ASSERT_NE(foo, nullptr);
  EXPECT_EQ(foo->kind, ChangeKind::Downgraded);
  tool = change(d, "tool");
  ASSERT_NE(tool, nullptr);
  EXPECT_EQ(tool->kind, ChangeKind::Downgraded);  // excluded: the direction is unknown, a human looks
}

// A pip requirement's credentials are never compared or shown: a lockfile whose requirement
// carries one token and a prefix installed with another (direct_url.json, read redacted) differ
// only in credentials, which is no change; a real change of source is named without them.
// The pip side of a prefix holding one distribution installed from a URL (PEP 610
// `direct_url_json`), and the same prefix as a lockfile whose only pip entry is `entry`.
struct DirectUrlInstall {
  Lockfile installed, locked;
  DirectUrlInstall(const std::string& name, const std::string& version, const std::string& direct_url_json) {
    envlock::testing::PipPrefix prefix;
    prefix.write(prefix.dist_info(name, version, "pip") / "direct_url.json", direct_url_json);
    auto read = read_prefix(prefix.path());
    EXPECT_TRUE(read.ok()) << read.error().to_string();
    if (read.ok()) installed = locked = *read;
  }
  /// diff(locked with `entry` as its pip list, installed).
  LockDiff against(const PipPackage& entry) {
    locked.environments["default"].platforms["linux-64"].pip = {entry};
    return diff_lockfiles(locked, installed);
  }
};

TEST(PrefixPip, CredentialsInARequirementAreNoChangeAndNeverShown) {
  DirectUrlInstall mypkg("mypkg", "0.3",
                         R"({"url": "https://alice:ghp_SECRETTOKEN123@github.com/acme/mypkg.git",
                             "vcs_info": {"vcs": "git", "commit_id": "0123456789abcdef0123456789abcdef01234567"}})");
  EXPECT_TRUE(mypkg.against({"mypkg", "", "", "", "mypkg @ git+https://alice:ghp_SECRET777@github.com/acme/mypkg.git@main"}).empty());
  const LockDiff d = mypkg.against({"mypkg", "", "", "", "mypkg @ git+https://alice:ghp_SECRET777@github.com/other/mypkg.git@main"});
  ASSERT_EQ(d.total, 1u);
  const PackageChange* c = change(d, "mypkg");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->kind, ChangeKind::ChannelChanged);
  ASSERT_EQ(c->notes.size(), 1u);
  EXPECT_EQ(c->notes[0],
            "requirement `mypkg @ git+https://github.com/other/mypkg.git@main` is not met by 0.3 from "
            "https://github.com/acme/mypkg.git");
  const DiffLabels labels{"envlock.lock", "env", "envlock.lock v1", "conda-meta prefix"};
  for (const std::string& out : {render_text(d, labels, false), render_markdown(d, labels), diff_to_json(d, labels).dump()})
    EXPECT_EQ(out.find("SECRET"), std::string::npos) << out;
}

// pip lines that name no project (`-e .`, index options) pair by their text: the same line on
// both sides is no change, another line is added/removed, named by its text (never `pypi:`).
TEST(PrefixPip, LinesThatNameNoProjectPairByTheirText) {
  Lockfile a = make({{"zlib", "1.3.1", "h0"}}), b = a;
  a.environments["default"].platforms["linux-64"].pip = {
      PipPackage{"", "", "", "", "-e ."},
      PipPackage{"", "", "", "", "--extra-index-url https://bob:PW_SECRET_888@pypi.corp.example.com/simple"},
      PipPackage{"requests", "", "", "", "requests>=2"}};
  b.environments["default"].platforms["linux-64"].pip = {
      PipPackage{"", "", "", "", "-e ."},
      PipPackage{"", "", "", "", "--extra-index-url https://pypi.corp.example.com/simple"},
      PipPackage{"", "", "", "", "-r requirements-dev.txt"},
      PipPackage{"requests", "", "", "", "requests>=2"}};
  const LockDiff d = diff_lockfiles(a, b);
  ASSERT_EQ(d.total, 1u);
  const PackageChange* c = change(d, "-r requirements-dev.txt");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->kind, ChangeKind::Added);
  EXPECT_TRUE(c->pypi);
  EXPECT_TRUE(c->pip_line);
  const DiffLabels labels{"a", "b", "envlock.lock", "envlock.lock"};
  const std::string text = render_text(d, labels, false);
  EXPECT_NE(text.find("added                         pip -r requirements-dev.txt"), std::string::npos) << text;
  EXPECT_EQ(text.find("pypi:"), std::string::npos) << text;
  EXPECT_NE(render_markdown(d, labels).find("`pip -r requirements-dev.txt`"), std::string::npos);
  const auto j = diff_to_json(d, labels);
  EXPECT_EQ(j["groups"][0]["changes"][0]["name"], "-r requirements-dev.txt");
  EXPECT_EQ(j["groups"][0]["changes"][0]["source"], "pypi");

  const LockDiff gone = diff_lockfiles(b, a);
  ASSERT_EQ(gone.total, 1u);
  EXPECT_EQ(gone.groups[0].changes[0].kind, ChangeKind::Removed);
  EXPECT_EQ(gone.groups[0].changes[0].name, "-r requirements-dev.txt");

  // `envlock show`: such a line by its text, credential-free; never `pypi: - - -`.
  const std::string show = render_show(a);
  EXPECT_NE(show.find("default/linux-64 pip -e .\n"), std::string::npos) << show;
  EXPECT_NE(show.find("default/linux-64 pip --extra-index-url https://pypi.corp.example.com/simple\n"), std::string::npos)
      << show;
  EXPECT_NE(show.find("default/linux-64 pypi:requests - - -\n"), std::string::npos) << show;
  EXPECT_EQ(show.find("pypi: "), std::string::npos) << show;
  EXPECT_EQ(show.find("SECRET"), std::string::npos) << show;
}

// A bare archive URL (`https://host/pkg-1.0.tar.gz`, named by its file name) is the direct
// reference `pkg @ URL`: met by a distribution installed from that URL, not by another file.
TEST(PrefixPip, ABareArchiveUrlIsADirectReference) {
  DirectUrlInstall pkg("pkg", "1.1", R"({"url": "https://files.example.com/pkg-1.1.tar.gz", "archive_info": {}})");
  const std::string same = "https://files.example.com/pkg-1.1.tar.gz", other = "https://files.example.com/pkg-1.0.tar.gz";
  EXPECT_TRUE(pkg.against({"pkg", "", same, "", same}).empty());
  const LockDiff d = pkg.against({"pkg", "", other, "", other});
  ASSERT_EQ(d.total, 1u);
  ASSERT_NE(change(d, "pkg"), nullptr);
  EXPECT_EQ(change(d, "pkg")->kind, ChangeKind::ChannelChanged);
  EXPECT_EQ(change(d, "pkg")->notes,
            std::vector<std::string>{
                "requirement `https://files.example.com/pkg-1.0.tar.gz` is not met by 1.1 from https://files.example.com/pkg-1.1.tar.gz"});
}

// Finding M5: `show` printed fewer fields than `diff` compares (size, license, subdir, file name,
// the platform's channels, virtual packages and PyPI indexes), so `git diff` through show's
// textconv hid a change the CI gate fails on. Both read one list (shown_record_fields,
// shown_platform_fields): each field of it, changed alone, is a change for diff and its own line
// in show. A field added to the list without a case here fails the test.
TEST(Diff, ShowPrintsEveryFieldDiffCompares) {
  Lockfile base = make({{"zlib", "1.3.1", "h0_2"}});
  auto& plat = base.environments["default"].platforms["linux-64"];
  plat.channels = {"https://conda.anaconda.org/conda-forge"};
  plat.virtual_packages = {{"__glibc", "2.17", "0"}};
  plat.pypi_indexes = {"https://pypi.org/simple"};
  LockedPackage& zlib = plat.packages[0];
  zlib.md5 = std::string(32, 'c');
  zlib.size = 100;
  zlib.license = "Zlib";
  zlib.depends = {"libgcc >=13"};
  zlib.layer = "main";
  using Edit = void (*)(LockedPlatform&, LockedPackage&);
  const std::map<std::string, Edit> edits = {
      {"md5", [](LockedPlatform&, LockedPackage& p) { p.md5 = std::string(32, 'd'); }},
      {"url", [](LockedPlatform&, LockedPackage& p) { p.url += "?mirror=2"; }},
      {"file_name", [](LockedPlatform&, LockedPackage& p) { p.file_name = "zlib-1.3.1-h0_2-renamed.conda"; }},
      {"subdir", [](LockedPlatform&, LockedPackage& p) { p.subdir = "linux-aarch64"; }},
      {"build_number", [](LockedPlatform&, LockedPackage& p) { p.build_number = 2; }},
      {"noarch", [](LockedPlatform&, LockedPackage& p) { p.noarch = NoArchKind::Generic; }},
      {"python_site_packages_path", [](LockedPlatform&, LockedPackage& p) { p.python_site_packages_path = "lib/python3.13t/site-packages"; }},
      {"size", [](LockedPlatform&, LockedPackage& p) { p.size = 101; }},
      {"license", [](LockedPlatform&, LockedPackage& p) { p.license = "MIT"; }},
      {"track_features", [](LockedPlatform&, LockedPackage& p) { p.track_features = {"mkl"}; }},
      {"features", [](LockedPlatform&, LockedPackage& p) { p.features = "mkl"; }},
      {"depends", [](LockedPlatform&, LockedPackage& p) { p.depends.push_back("evil"); }},
      {"constrains", [](LockedPlatform&, LockedPackage& p) { p.constrains = {"zlib-ng <0a0"}; }},
      {"category", [](LockedPlatform&, LockedPackage& p) { p.layer = "dev"; }},
      {"channel", [](LockedPlatform& pl, LockedPackage&) { pl.channels.insert(pl.channels.begin(), "https://mirror.example/conda-forge"); }},
      {"virtual_package", [](LockedPlatform& pl, LockedPackage&) { pl.virtual_packages[0].version = "2.28"; }},
      {"pypi_index", [](LockedPlatform& pl, LockedPackage&) { pl.pypi_indexes = {"https://evil.example/simple"}; }},
  };
  std::set<std::string> listed;
  for (const auto& f : shown_record_fields()) listed.insert(std::string(f.name));
  for (const auto& f : shown_platform_fields()) listed.insert(std::string(f.name));
  std::set<std::string> covered;
  for (const auto& [name, _] : edits) covered.insert(name);
  EXPECT_EQ(listed, covered);
  // Only what names the archive itself is compared by the archive rules rather than by the list.
  std::set<std::string> by_archive_rules;
  for (const auto& f : shown_record_fields())
    if (f.change == nullptr) by_archive_rules.insert(std::string(f.name));
  EXPECT_EQ(by_archive_rules, (std::set<std::string>{"md5", "url"}));
  RecordedFields all;  // every field held, conda-lock categories too
  all.categories = true;
  const std::string before = render_show(base, true);
  EXPECT_EQ(render_show(base, true), before);
  EXPECT_TRUE(diff_lockfiles(base, base, all, all).empty());
  for (const auto& [name, edit] : edits) {
    Lockfile changed = base;
    auto& cp = changed.environments["default"].platforms["linux-64"];
    edit(cp, cp.packages[0]);
    const LockDiff d = diff_lockfiles(base, changed, all, all);
    EXPECT_FALSE(d.empty()) << name << ": diff sees no change";
    // A field the list compares itself (its `change`) gives the package the field's kind and the
    // note `change` writes: diff's comparison is the list's, not a second copy of it.
    for (const auto& f : shown_record_fields()) {
      if (f.name != name || f.change == nullptr) continue;
      ASSERT_EQ(d.total, 1u) << name;
      const PackageChange& c = d.groups[0].changes[0];
      EXPECT_TRUE(c.has(f.kind)) << name;
      EXPECT_NE(std::find(c.notes.begin(), c.notes.end(), f.change(base.environments["default"].platforms["linux-64"].packages[0],
                                                                  cp.packages[0])),
                c.notes.end())
          << name;
    }
    const std::string after = render_show(changed, true);
    EXPECT_NE(after, before) << name << ": show prints no change";
    const std::string line = name == "channel" || name == "virtual_package" || name == "pypi_index"
                                 ? "default/linux-64  " + name + " "
                                 : "default/linux-64 zlib  " + name + " ";
    EXPECT_TRUE(after.starts_with(line) || after.find("\n" + line) != std::string::npos) << name << "\n" << after;
  }
}

namespace envlock {
namespace {

// The pip half of the one list (shown_pip_fields): each field diff compares through the list,
// changed alone, gives the entry the field's kind and the note its `change` writes, and is its own
// line in show; `editable` is compared as part of the source (PEP 610's dir_info.editable, as pip
// freeze prints `-e`), and the requirement text of a resolved pin installs nothing else (the
// version, URL and sha256 do), so it is a show line but no change. pixi compares a locked PyPI
// entry by its pinned source too (crates/pixi_record/src/pinned_source.rs).
TEST(Diff, ShowPrintsEveryPipFieldDiffCompares) {
  Lockfile base = make({{"python", "3.12.1", "h1_0"}});
  auto& plat = base.environments["default"].platforms["linux-64"];
  PipPackage lib;
  lib.name = "mylib";
  lib.version = "0.3";
  lib.url = "git+https://github.com/acme/mylib.git@0123456789abcdef0123456789abcdef01234567";
  lib.requirement = "mylib @ git+https://github.com/acme/mylib.git@0123456789abcdef0123456789abcdef01234567";
  lib.requires_dist = {"numpy>=1.26"};
  lib.requires_python = ">=3.10";
  lib.size = 4096;  // a pinned wheel's record (issue 20)
  lib.index = "https://pypi.org/simple";
  lib.required_by = {"(manifest)"};
  plat.pip = {lib};
  using Edit = void (*)(PipPackage&);
  const std::map<std::string, Edit> edits = {
      {"source",
       [](PipPackage& p) {
         p.url = "git+https://github.com/acme/mylib.git@fedcba9876543210fedcba9876543210fedcba98";
         p.requirement = "mylib @ " + p.url;
       }},
      {"editable", [](PipPackage& p) { p.editable = true; }},
      {"requirement", [](PipPackage& p) { p.requirement = "mylib"; }},
      {"requires_python", [](PipPackage& p) { p.requires_python = ">=3.11"; }},
      {"requires_dist", [](PipPackage& p) { p.requires_dist.push_back("evil"); }},
      {"size", [](PipPackage& p) { p.size = 8192; }},
      {"index", [](PipPackage& p) { p.index = "https://pypi.evil.example/simple"; }},
      {"required_by", [](PipPackage& p) { p.required_by.push_back("other"); }},
  };
  std::set<std::string> listed, not_by_list;
  for (const auto& f : shown_pip_fields()) {
    listed.insert(std::string(f.name));
    if (f.change == nullptr) not_by_list.insert(std::string(f.name));
  }
  std::set<std::string> covered;
  for (const auto& [name, _] : edits) covered.insert(name);
  EXPECT_EQ(listed, covered);
  EXPECT_EQ(not_by_list, (std::set<std::string>{"editable", "requirement", "required_by"}));
  RecordedFields all;
  const std::string before = render_show(base);
  EXPECT_TRUE(diff_lockfiles(base, base, all, all).empty());
  for (const auto& [name, edit] : edits) {
    Lockfile changed = base;
    auto& cp = changed.environments["default"].platforms["linux-64"];
    edit(cp.pip[0]);
    const std::string after = render_show(changed);
    EXPECT_NE(after, before) << name << ": show prints no change";
    EXPECT_NE(after.find("default/linux-64 pypi:mylib  " + name), std::string::npos) << name << "\n" << after;
    const LockDiff d = diff_lockfiles(base, changed, all, all);
    if (name == "requirement" || name == "required_by") {
      EXPECT_TRUE(d.empty()) << name;
      continue;
    }
    ASSERT_EQ(d.total, 1u) << name;
    const PackageChange& c = d.groups[0].changes[0];
    EXPECT_TRUE(c.pypi) << name;
    const std::string field = name == "editable" ? "source" : name;
    for (const auto& f : shown_pip_fields()) {
      if (f.name != field) continue;
      EXPECT_EQ(c.kind, f.kind) << name;
      EXPECT_EQ(c.notes, std::vector<std::string>{f.change(plat.pip[0], cp.pip[0])}) << name;
    }
  }
}

}  // namespace
}  // namespace envlock
