// check_lockfile: a fresh lock passes; each kind of staleness is found and explained, also over a
// real solved environment (a conda-lock.yml of ../shared/corpus).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <yaml-cpp/yaml.h>

#include "envlock/lock.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/manifest.hpp"

namespace envlock {
namespace {

const char* const kManifest =
    "name: proj\n"                      // 1
    "channels: [conda-forge]\n"         // 2
    "platforms: [linux-64]\n"           // 3
    "virtual-packages:\n"               // 4
    "  linux-64: [__glibc=2.28]\n"      // 5
    "environments:\n"                   // 6
    "  base:\n"                         // 7
    "    dependencies:\n"               // 8
    "      - numpy >=2\n"               // 9
    "  train:\n"                        // 10
    "    base: base\n"                  // 11
    "    dependencies: [torch]\n";      // 12

Manifest manifest(const std::string& text = kManifest) {
  auto m = parse_manifest(text, "envlock.yaml", "/proj");
  EXPECT_TRUE(m.ok()) << (m ? "" : m.error().to_string());
  return m ? std::move(*m) : Manifest{};
}

LockedPackage pkg(const std::string& name, const std::string& version, std::vector<std::string> depends,
                  const std::string& layer, std::vector<std::string> constrains = {}) {
  LockedPackage p;
  p.name = name;
  p.version = Version::parse(version).value();
  p.build = "h0_0";
  p.subdir = "linux-64";
  p.channel = "https://conda.anaconda.org/conda-forge";
  p.file_name = name + "-" + version + "-h0_0.conda";
  p.url = p.channel + "/linux-64/" + p.file_name;
  p.sha256 = std::string(64, '1');
  p.depends = std::move(depends);
  p.constrains = std::move(constrains);
  p.layer = layer;
  return p;
}

Lockfile fresh(const Manifest& m) {
  Lockfile lf;
  lf.manifest_hash = manifest_hash(m);
  LockedPlatform base;
  base.platform = "linux-64";
  base.channels = {"https://conda.anaconda.org/conda-forge"};
  // The lock adds defaults for undeclared virtual packages (__unix here); only declared ones count.
  base.virtual_packages = {VirtualPackage{"__glibc", "2.28", "0"}, VirtualPackage{"__unix", "0", "0"}};
  base.packages = {pkg("numpy", "2.1.0", {"python >=3.12,<3.13.0a0", "__glibc >=2.17"}, "base"),
                   pkg("python", "3.12.1", {}, "base", {"numpy >=1.20"})};
  LockedPlatform train = base;
  train.packages.push_back(pkg("torch", "2.4.0", {"numpy >=1.22", "python"}, "train"));
  lf.environments["base"] = LockedEnvironment{"base", "", {"numpy >=2"}, {{"linux-64", base}}, std::nullopt};
  lf.environments["train"] = LockedEnvironment{"train", "base", {"torch"}, {{"linux-64", train}}, std::nullopt};
  return lf;
}

LockedPackage& find(Lockfile& lf, const std::string& env, const std::string& name) {
  auto& pkgs = lf.environments[env].platforms["linux-64"].packages;
  return *std::find_if(pkgs.begin(), pkgs.end(), [&](const auto& p) { return p.name == name; });
}

std::vector<StaleReason::Kind> kinds(const std::vector<StaleReason>& rs) {
  std::vector<StaleReason::Kind> out;
  for (const auto& r : rs) out.push_back(r.kind);
  return out;
}

std::string dump(const std::vector<StaleReason>& rs) {
  std::string out;
  for (const auto& r : rs) out += std::string(to_string(r.kind)) + ": " + r.message + "\n";
  return out;
}

using K = StaleReason::Kind;

TEST(CheckLockfile, FreshLockPasses) {
  const Manifest m = manifest();
  auto rs = check_lockfile(m, fresh(m));
  EXPECT_TRUE(rs.empty()) << dump(rs);
}

TEST(CheckLockfile, FreshLockSurvivesAWriteReadCycle) {
  const Manifest m = manifest();
  auto back = Lockfile::parse(fresh(m).to_yaml(), "envlock.lock");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  auto rs = check_lockfile(m, *back);
  EXPECT_TRUE(rs.empty()) << dump(rs);
}

TEST(CheckLockfile, RequestedSpecNotSatisfied) {
  const Manifest m = manifest();
  Lockfile lf = fresh(m);
  find(lf, "base", "numpy").version = Version::parse("1.26.4").value();
  auto rs = check_lockfile(m, lf);
  ASSERT_FALSE(rs.empty());
  EXPECT_EQ(rs[0].kind, K::SpecNotSatisfied);
  EXPECT_EQ(rs[0].environment, "base");
  EXPECT_EQ(rs[0].platform, "linux-64");
  EXPECT_EQ(rs[0].package, "numpy");
  EXPECT_EQ(rs[0].message, "numpy >=2 (envlock.yaml line 9) is not satisfied by locked numpy 1.26.4 h0_0 (base/linux-64)");
  // The project layer pins numpy 2.1.0 still, so its pin moved relative to the base.
  EXPECT_NE(std::find(kinds(rs).begin(), kinds(rs).end(), K::BasePinMoved), kinds(rs).end()) << dump(rs);
}

TEST(CheckLockfile, RequestedSpecMissing) {
  const Manifest m = manifest();
  Lockfile lf = fresh(m);
  auto& pkgs = lf.environments["train"].platforms["linux-64"].packages;
  pkgs.erase(std::remove_if(pkgs.begin(), pkgs.end(), [](const auto& p) { return p.name == "torch"; }), pkgs.end());
  auto rs = check_lockfile(m, lf);
  ASSERT_EQ(rs.size(), 1u) << dump(rs);
  EXPECT_EQ(rs[0].kind, K::SpecNotSatisfied);
  EXPECT_EQ(rs[0].message, "torch (envlock.yaml line 12) is not satisfied: no torch is locked for train/linux-64");
}

TEST(CheckLockfile, ManifestHashChanged) {
  const Manifest m = manifest();
  Lockfile lf = fresh(m);
  lf.manifest_hash = "sha256:" + std::string(64, '0');
  auto rs = check_lockfile(m, lf);
  ASSERT_EQ(rs.size(), 1u) << dump(rs);
  EXPECT_EQ(rs[0].kind, K::ManifestHash);
  EXPECT_EQ(rs[0].message, "the manifest changed since the lock (lockfile has sha256:" + std::string(64, '0') +
                               ", the manifest now hashes to " + manifest_hash(m) +
                               "); every spec, channel, platform, virtual package and base the lockfile records is unchanged, so "
                               "the change is in the channel priority, a selector or a pip entry");
}

// A spec edited in a way the locked packages still satisfy changes only the hash: `lock --check`
// names the spec that changed (issue 17), not only two hashes.
TEST(CheckLockfile, AChangedSpecIsNamed) {
  const Manifest now = manifest(std::string(kManifest).replace(std::string(kManifest).find("numpy >=2"), 9, "numpy >=1.26"));
  Lockfile lf = fresh(manifest());
  auto rs = check_lockfile(now, lf);
  ASSERT_EQ(rs.size(), 2u) << dump(rs);
  EXPECT_EQ(rs[0].kind, K::ManifestHash);
  EXPECT_TRUE(rs[0].message.starts_with("the manifest changed since the lock (lockfile has " + manifest_hash(manifest()) +
                                        ", the manifest now hashes to " + manifest_hash(now) + ")"))
      << rs[0].message;
  EXPECT_EQ(rs[1].kind, K::ManifestHash);
  EXPECT_EQ(rs[1].environment, "base");
  EXPECT_EQ(rs[1].message, "environment 'base': specs changed since the lock: 'numpy >=1.26' added, 'numpy >=2' removed");
}

// Specs compare in MatchSpec's canonical form, as the manifest hash does: a re-spaced spec
// (`numpy >=2` -> `numpy>=2`) is the same spec and the lockfile stays fresh (a new-user attack,
// session 9: `--check` failed CI on the edit, while the hash and a re-lock changed nothing).
TEST(CheckLockfile, AReSpacedSpecIsTheSameSpec) {
  const Manifest now = manifest(std::string(kManifest).replace(std::string(kManifest).find("numpy >=2"), 9, "numpy>=2"));
  EXPECT_EQ(manifest_hash(now), manifest_hash(manifest()));
  auto rs = check_lockfile(now, fresh(manifest()));
  EXPECT_TRUE(rs.empty()) << dump(rs);
}

TEST(CheckLockfile, EnvironmentsAndPlatforms) {
  const Manifest m = manifest();
  Lockfile lf = fresh(m);
  lf.environments.erase("train");
  lf.environments["old"] = lf.environments["base"];
  lf.environments["old"].name = "old";
  lf.environments["base"].platforms["osx-64"] = lf.environments["base"].platforms["linux-64"];
  auto rs = check_lockfile(m, lf);
  std::vector<K> k = kinds(rs);
  EXPECT_NE(std::find(k.begin(), k.end(), K::MissingEnvironment), k.end()) << dump(rs);
  EXPECT_NE(std::find(k.begin(), k.end(), K::ExtraEnvironment), k.end()) << dump(rs);
  EXPECT_NE(std::find(k.begin(), k.end(), K::ExtraPlatform), k.end()) << dump(rs);

  Lockfile lf2 = fresh(m);
  lf2.environments["train"].platforms.clear();
  auto rs2 = check_lockfile(m, lf2);
  ASSERT_EQ(rs2.size(), 1u) << dump(rs2);
  EXPECT_EQ(rs2[0].kind, K::MissingPlatform);
  EXPECT_EQ(rs2[0].message, "environment 'train' is not locked for linux-64");
}

TEST(CheckLockfile, DependencyMissingAndNotSatisfied) {
  const Manifest m = manifest();
  Lockfile lf = fresh(m);
  find(lf, "train", "torch").depends.push_back("libtorch 2.4.0");
  find(lf, "train", "torch").depends[1] = "python >=3.13";
  auto rs = check_lockfile(m, lf);
  ASSERT_EQ(rs.size(), 2u) << dump(rs);
  EXPECT_EQ(rs[0].kind, K::DependencyNotSatisfied);
  EXPECT_EQ(rs[0].message,
            "train/linux-64: torch 2.4.0 h0_0 depends on 'python >=3.13', not satisfied by locked python 3.12.1 h0_0");
  EXPECT_EQ(rs[1].kind, K::DependencyMissing);
  EXPECT_EQ(rs[1].message, "train/linux-64: torch 2.4.0 h0_0 depends on 'libtorch 2.4.0' but no libtorch is locked");
}

TEST(CheckLockfile, VirtualPackageDependencies) {
  const Manifest m = manifest();
  Lockfile lf = fresh(m);
  find(lf, "base", "numpy").depends = {"python", "__glibc >=2.34", "__cuda >=12"};
  find(lf, "train", "numpy").depends = find(lf, "base", "numpy").depends;
  auto rs = check_lockfile(m, lf);
  ASSERT_EQ(rs.size(), 4u) << dump(rs);
  EXPECT_EQ(rs[0].kind, K::DependencyNotSatisfied);
  EXPECT_EQ(rs[0].message,
            "base/linux-64: numpy 2.1.0 h0_0 depends on '__glibc >=2.34', not satisfied by the assumed __glibc=2.28=0");
  EXPECT_EQ(rs[1].kind, K::DependencyMissing);
  EXPECT_EQ(rs[1].message,
            "base/linux-64: numpy 2.1.0 h0_0 depends on '__cuda >=12' but the lock assumes no __cuda virtual package");
}

// docs/solving.md rule 4: a `constrains` on a virtual package binds the one the lock assumed
// (mamba test_solver.cpp "Run constraints on virtual packages are enforced").
TEST(CheckLockfile, ConstraintOnAnAssumedVirtualPackage) {
  const Manifest m = manifest();
  Lockfile lf = fresh(m);
  find(lf, "base", "numpy").constrains = {"__glibc >=2.34", "__cuda >=12"};
  find(lf, "train", "numpy").constrains = find(lf, "base", "numpy").constrains;
  auto rs = check_lockfile(m, lf);
  // __glibc=2.28 is assumed: violated; no __cuda is assumed: nothing to bind.
  ASSERT_EQ(rs.size(), 2u) << dump(rs);
  EXPECT_EQ(rs[0].kind, K::ConstraintViolated);
  EXPECT_EQ(rs[0].message,
            "base/linux-64: numpy 2.1.0 h0_0 constrains '__glibc >=2.34', violated by the assumed virtual package "
            "__glibc=2.28=0");
  EXPECT_EQ(rs[1].message,
            "train/linux-64: numpy 2.1.0 h0_0 constrains '__glibc >=2.34', violated by the assumed virtual package "
            "__glibc=2.28=0");
  find(lf, "base", "numpy").constrains = {"__glibc >=2.17"};
  find(lf, "train", "numpy").constrains = {"__glibc >=2.17"};
  EXPECT_TRUE(check_lockfile(m, lf).empty()) << dump(check_lockfile(m, lf));
}

TEST(CheckLockfile, ConstraintViolated) {
  const Manifest m = manifest();
  Lockfile lf = fresh(m);
  find(lf, "train", "python").constrains = {"numpy <2", "absent-package >=1"};
  auto rs = check_lockfile(m, lf);
  ASSERT_FALSE(rs.empty());
  EXPECT_EQ(rs[0].kind, K::ConstraintViolated);
  EXPECT_EQ(rs[0].message, "train/linux-64: python 3.12.1 h0_0 constrains 'numpy <2', violated by locked numpy 2.1.0 h0_0");
}

TEST(CheckLockfile, BaseChangedAndPinMoved) {
  const Manifest m = manifest();
  Lockfile lf = fresh(m);
  find(lf, "train", "python").build = "h9_1";
  auto rs = check_lockfile(m, lf);
  ASSERT_EQ(rs.size(), 1u) << dump(rs);
  EXPECT_EQ(rs[0].kind, K::BasePinMoved);
  EXPECT_EQ(rs[0].package, "python");
  EXPECT_EQ(rs[0].message, "train/linux-64: base pin python 3.12.1 h0_0 (layer base) is python 3.12.1 h9_1 in the project layer");

  Lockfile lf2 = fresh(m);
  lf2.environments["train"].base = "";
  auto rs2 = check_lockfile(m, lf2);
  ASSERT_EQ(rs2.size(), 1u) << dump(rs2);
  EXPECT_EQ(rs2[0].kind, K::BaseChanged);
  EXPECT_EQ(rs2[0].message, "environment 'train' is built on 'base' in the manifest but on no base in the lockfile");
}

TEST(CheckLockfile, ChannelsAndVirtualPackagesChanged) {
  Manifest m = manifest(
      "channels: [conda-forge, bioconda]\nplatforms: [linux-64]\nvirtual-packages:\n  linux-64: [__glibc=2.17]\n"
      "environments:\n  base:\n    dependencies:\n      - numpy >=2\n  train:\n    base: base\n    dependencies: [torch]\n");
  Lockfile lf = fresh(manifest());
  auto rs = check_lockfile(m, lf);
  std::vector<K> k = kinds(rs);
  EXPECT_EQ(k, (std::vector<K>{K::ManifestHash, K::ChannelsChanged, K::VirtualPackagesChanged, K::ChannelsChanged,
                               K::VirtualPackagesChanged}))
      << dump(rs);
  EXPECT_EQ(rs[1].message,
            "base/linux-64: channels changed: the manifest has [https://conda.anaconda.org/conda-forge, "
            "https://conda.anaconda.org/bioconda], the lockfile [https://conda.anaconda.org/conda-forge]");
  EXPECT_EQ(rs[2].message,
            "base/linux-64: virtual packages changed: the manifest declares [__glibc=2.17=0], the lockfile assumed "
            "[__glibc=2.28=0, __unix=0=0]");
}

TEST(CheckLockfile, SelectorsLimitWhereASpecMustHold) {
  Manifest m = manifest(
      "channels: [conda-forge]\nplatforms: [linux-64]\ndependencies:\n  - numpy\n  - appnope  # [osx]\n");
  Lockfile lf;
  lf.manifest_hash = manifest_hash(m);
  LockedPlatform lp;
  lp.channels = {"https://conda.anaconda.org/conda-forge"};
  lp.packages = {pkg("numpy", "2.1.0", {}, "default")};
  lf.environments["default"] = LockedEnvironment{"default", "", {}, {{"linux-64", lp}}, std::nullopt};
  auto rs = check_lockfile(m, lf);
  EXPECT_TRUE(rs.empty()) << dump(rs);
}

TEST(CheckLockfile, KindNamesAreStable) {
  EXPECT_EQ(to_string(K::SpecNotSatisfied), "spec-not-satisfied");
  EXPECT_EQ(to_string(K::BasePinMoved), "base-pin-moved");
  EXPECT_EQ(to_string(K::ManifestHash), "manifest-hash");
}

namespace fs = std::filesystem;

// ---- check_lockfile over real solved environments -------------------------------------------

/// A real conda-lock.yml (v1: `package:` list with `dependencies: {name: spec}`) as a Lockfile,
/// so the staleness check runs over environments a real solver produced.
Lockfile from_conda_lock(const fs::path& file) {
  YAML::Node root = YAML::LoadFile(file.string());
  Lockfile lf;
  LockedEnvironment env;
  env.name = "default";
  for (const auto& n : root["package"]) {
    if (n["manager"].as<std::string>() != "conda") continue;
    const std::string platform = n["platform"].as<std::string>();
    LockedPlatform& lp = env.platforms[platform];
    lp.platform = platform;
    lp.channels = {"https://conda.anaconda.org/conda-forge"};
    LockedPackage p;
    p.name = n["name"].as<std::string>();
    p.version = Version::parse(n["version"].as<std::string>()).value();
    p.url = n["url"].as<std::string>();
    p.file_name = p.url.substr(p.url.find_last_of('/') + 1);
    auto an = parse_archive_name(p.file_name);
    p.build = an ? an->build : "";
    p.subdir = platform;
    p.channel = "https://conda.anaconda.org/conda-forge";
    p.sha256 = n["hash"]["sha256"] ? n["hash"]["sha256"].as<std::string>() : "";
    p.md5 = n["hash"]["md5"].as<std::string>();
    for (const auto& d : n["dependencies"]) {
      const std::string spec = d.second.as<std::string>();
      p.depends.push_back(d.first.as<std::string>() + (spec.empty() ? "" : " " + spec));
    }
    p.layer = "default";
    lp.packages.push_back(std::move(p));
  }
  // What the machines the lock was made for offer (generous, so only real gaps show).
  for (auto& [platform, lp] : env.platforms) {
    lp.virtual_packages = {{"__unix", "0", "0"}, {"__archspec", "1", "x86_64"}};
    if (platform.starts_with("linux")) {
      lp.virtual_packages.push_back({"__glibc", "2.35", "0"});
      lp.virtual_packages.push_back({"__linux", "6.1", "0"});
    } else {
      lp.virtual_packages.push_back({"__osx", "14.0", "0"});
    }
  }
  lf.environments["default"] = std::move(env);
  return lf;
}

TEST(CorpusCheck, RealSolvedEnvironmentIsConsistentAndDamageIsFound) {
  const fs::path file = fs::path(ENVLOCK_SHARED_DIR) / "corpus" / "lockfiles" / "pangeo-data__pangeo-docker-images" /
                        "pangeo-notebook__conda-lock.yml";
  if (!fs::exists(file)) GTEST_SKIP() << "corpus file not found: " << file << "; set ENVLOCK_SHARED_DIR to the folder holding corpus/";
  Lockfile lf = from_conda_lock(file);
  ASSERT_EQ(lf.environments["default"].platforms.size(), 4u);
  std::size_t total = 0;
  for (const auto& [p, lp] : lf.environments["default"].platforms) total += lp.packages.size();
  EXPECT_EQ(total, 3091u);

  auto m = parse_manifest(
      "channels: [conda-forge]\nplatforms: [linux-64, linux-aarch64, osx-64, osx-arm64]\n"
      "dependencies: [python >=3.10, dask, xarray, zarr]\n",
      "envlock.yaml", "/p");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  lf.manifest_hash = manifest_hash(*m);
  auto reasons = check_lockfile(*m, lf);
  std::string all;
  for (const auto& r : reasons) all += std::string(to_string(r.kind)) + ": " + r.message + "\n";
  EXPECT_TRUE(reasons.empty()) << all;

  // Through the envlock.lock format and back: still consistent, byte-stable.
  auto back = Lockfile::parse(lf.to_yaml(), "pangeo.lock");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->to_yaml(), lf.to_yaml());
  EXPECT_TRUE(check_lockfile(*m, *back).empty());

  // Remove python from linux-64: the request and every dependent on it are reported.
  auto& pk = lf.environments["default"].platforms["linux-64"].packages;
  std::size_t dependents = 0;
  for (const auto& p : pk)
    for (const auto& d : p.depends) dependents += (d == "python" || d.starts_with("python ")) ? 1 : 0;
  ASSERT_GT(dependents, 50u);
  pk.erase(std::remove_if(pk.begin(), pk.end(), [](const auto& p) { return p.name == "python"; }), pk.end());
  auto damaged = check_lockfile(*m, lf);
  std::size_t missing = 0, spec = 0;
  for (const auto& r : damaged) {
    EXPECT_EQ(r.platform, "linux-64") << r.message;
    if (r.kind == StaleReason::Kind::DependencyMissing) ++missing;
    if (r.kind == StaleReason::Kind::SpecNotSatisfied) ++spec;
  }
  EXPECT_EQ(spec, 1u);
  EXPECT_EQ(missing, dependents);
}

}  // namespace
}  // namespace envlock
