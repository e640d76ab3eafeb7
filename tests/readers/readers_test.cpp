// Readers: conda-lock.yml, pixi.lock 1-7, @EXPLICIT, conda-meta prefixes, over the real corpus
// (../shared/corpus/lockfiles) and small inline inputs for the error paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "block_yaml.hpp"
#include "envlock/readers.hpp"
#include "support/files.hpp"
#include "support/lockfile_fixtures.hpp"
#include "support/pip_prefix.hpp"

namespace fs = std::filesystem;
using namespace envlock;
using envlock::testing::PipPrefix;
using envlock::testing::slurp;

namespace {

fs::path corpus() { return fs::path(ENVLOCK_SHARED_DIR) / "corpus"; }
fs::path lockfiles() { return corpus() / "lockfiles"; }

#define REQUIRE_CORPUS()                                                                      \
  if (!fs::is_directory(lockfiles()))                                                         \
  GTEST_SKIP() << "the shared corpus (" << lockfiles().string()                               \
               << ") is absent; the real-lockfile tests need ../shared/corpus/lockfiles"

Lockfile read_ok(const std::string& rel) {
  auto r = read_lockfile_path(lockfiles() / rel);
  EXPECT_TRUE(r.ok()) << rel << ": " << (r.ok() ? "" : r.error().to_string());
  return r.ok() ? r->lockfile : Lockfile{};
}

const LockedPackage* find(const LockedPlatform& p, const std::string& name) {
  for (const auto& pkg : p.packages) {
    if (pkg.name == name) return &pkg;
  }
  return nullptr;
}

std::size_t count_lines(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) n += line.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

// Files in corpus/lockfiles that are not lockfiles envlock reads, each with the reason the
// refusal must name. Every other file there must parse.
const std::map<std::string, std::string>& refused() {
  static const std::map<std::string, std::string> m = {
      // manifests, not lockfiles
      {"6cyc6__foundationpose_cpp/pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__constructor-minimal__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__cpp-sdl__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__detectron2-from-source__pyproject.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__docker__pyproject.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__jupyterlab__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__lightgbm__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__llama-index-inference__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__multi-machine__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__opencv__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__polarify__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__pypi__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__qgis__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__r__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__rerun_example__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__ros2-nav2__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__solve-groups__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__turtlesim__pixi.toml", "TOML table header"},
      {"prefix-dev__pixi/examples__wasm-jupyterlite__pixi.toml", "TOML table header"},
      // plain spec lists (environment files), not lockfiles
      {"mamba-org__mamba/libmamba__tests__data__env_file__apache_arrow_conda_env_sphinx.txt",
       "plain list of specs"},
      {"mamba-org__mamba/libmamba__tests__data__env_file__issue_4274.env.txt", "plain list of specs"},
      {"mamba-org__mamba/libmamba__tests__data__env_file__omni.env.txt", "plain list of specs"},
      // URL lists without @EXPLICIT (conda-lock's own negative fixtures)
      {"conda__conda-lock/tests__test-lockfile__no-auth.lock", "without an '@EXPLICIT' line"},
      {"conda__conda-lock/tests__test-lockfile__test.lock", "without an '@EXPLICIT' line"},
      {"conda__conda-lock/tests__test-lockfile-with-auth__test.lock", "without an '@EXPLICIT' line"},
      {"conda__conda-lock/tests__test-stripped-lockfile__test.lock", "without an '@EXPLICIT' line"},
      // versions from the future or damaged
      {"conda__rattler/test-data__conda-lock__forward-compatible-lock.yml",
       "format version 1000 in the conda-lock shape"},
      {"mamba-org__mamba/libmamba__tests__data__env_lockfile__bad_version-lock.yaml",
       "unknown lockfile format: `version: -1`"},
      // mamba's deliberately incomplete entry (hash and manager commented out)
      {"mamba-org__mamba/libmamba__tests__data__env_lockfile__bad_package-lock.yaml", "has no hash"},
      // a rattler fixture whose binary build/host packages carry no checksum
      {"conda__rattler/test-data__conda-lock__v7__conda-source-build-host-packages-lock.yml",
       "has no hash (neither sha256 nor md5)"},
      // rattler's pixi.lock 7 negative fixtures
      {"conda__rattler/test-data__lock_parse_fails__v7__duplicate_platform.yml", "duplicate key 'DUPLICATE'"},
      {"conda__rattler/test-data__lock_parse_fails__v7__duplicate_platform_definition.yml",
       "platform 'DUPLICATE' is defined twice"},
      {"conda__rattler/test-data__lock_parse_fails__v7__duplicate_platform_use.yml", "duplicate key 'DUPLICATE'"},
      {"conda__rattler/test-data__lock_parse_fails__v7__invalid_platform_name.yml",
       "invalid platform name 'linux 64 foobar'"},
      {"conda__rattler/test-data__lock_parse_fails__v7__invalid_platform_subdir.yml",
       "unknown platform subdir 'linux-XX'"},
      {"conda__rattler/test-data__lock_parse_fails__v7__missing_platform.yml",
       "which the `platforms` list does not define"},
      // mamba's hand-written fixture names `pkg_a` an archive whose file is pkg-a-1.0-0.tar.bz2:
      // a record that disagrees with its URL is refused (issue 17, M4; docs/review.md)
      {"mamba-org__mamba/libmamba__tests__data__env_lockfile__good_overlap_categories-lock.yaml",
       "`name` 'pkg_a' disagrees with the file its URL names, pkg-a-1.0-0.tar.bz2"},
  };
  return m;
}

bool is_json_lock(const std::string& rel) { return rel.find(".json") != std::string::npos; }

}  // namespace

// Every lockfile in the corpus parses, or is refused with the listed reason.
TEST(CorpusLockfiles, EveryFileParsesOrIsRefusedWithItsReason) {
  REQUIRE_CORPUS();
  std::size_t parsed = 0, refused_n = 0, packages = 0;
  std::set<std::string> seen;
  for (const auto& dir : fs::directory_iterator(lockfiles())) {
    for (const auto& f : fs::directory_iterator(dir.path())) {
      const std::string rel = dir.path().filename().string() + "/" + f.path().filename().string();
      seen.insert(rel);
      auto r = read_lockfile_path(f.path());
      auto it = refused().find(rel);
      if (is_json_lock(rel)) {
        // mambajs / emscripten-forge JSON lockfiles: refused by name.
        ASSERT_FALSE(r.ok()) << rel;
        EXPECT_NE(r.error().message.find("unsupported lockfile format"), std::string::npos)
            << rel << ": " << r.error().to_string();
        EXPECT_EQ(r.error().where, f.path().string());
        ++refused_n;
        continue;
      }
      if (it != refused().end()) {
        ASSERT_FALSE(r.ok()) << rel << " was expected to be refused (" << it->second << ")";
        EXPECT_NE(r.error().to_string().find(it->second), std::string::npos)
            << rel << ": got " << r.error().to_string();
        EXPECT_TRUE(r.error().where.starts_with(f.path().string())) << r.error().where;
        ++refused_n;
        continue;
      }
      ASSERT_TRUE(r.ok()) << rel << ": " << r.error().to_string();
      ++parsed;
      for (const auto& [_, env] : r->lockfile.environments) {
        for (const auto& [__, plat] : env.platforms) {
          packages += plat.packages.size() + plat.pip.size();
          for (const auto& p : plat.packages) {
            EXPECT_FALSE(p.name.empty()) << rel;
            EXPECT_FALSE(p.url.empty()) << rel << " " << p.name;
          }
          EXPECT_TRUE(std::is_sorted(plat.packages.begin(), plat.packages.end(),
                                     [](const auto& a, const auto& b) { return a.name < b.name; }))
              << rel;
        }
      }
    }
  }
  for (const auto& [rel, _] : refused()) EXPECT_TRUE(seen.contains(rel)) << "listed but absent: " << rel;
  EXPECT_GT(parsed, 150u);
  EXPECT_GT(packages, 50000u);
  EXPECT_EQ(parsed + refused_n, seen.size());
}

// envlock.lock is read by envlock's one-pass reader of the block YAML subset it writes
// (src/yaml/block_yaml.cpp), with yaml-cpp as the fallback for any other YAML. Both paths
// must give exactly the same records: checked on the envlock.lock of every lockfile of the corpus
// (thousands of real records), read once as written and once with a `---` document marker in
// front, which the one-pass reader leaves to yaml-cpp.
TEST(CorpusLockfiles, EnvlockLockReadsTheSameRecordsWithoutYamlCpp) {
  REQUIRE_CORPUS();
  std::size_t files = 0, packages = 0, refused = 0;
  for (const auto& dir : fs::directory_iterator(lockfiles())) {
    for (const auto& f : fs::directory_iterator(dir.path())) {
      auto r = read_lockfile_path(f.path());
      if (!r.ok()) continue;  // refused files: the test above
      const std::string rel = dir.path().filename().string() + "/" + f.path().filename().string();
      const std::string text = r->lockfile.to_yaml();
      ASSERT_TRUE(block_yaml::parse_block_yaml(text).has_value()) << rel << ": envlock.lock outside the block subset";
      auto fast = Lockfile::parse(text, "envlock.lock");
      auto slow = Lockfile::parse("---\n" + text, "envlock.lock");
      if (!fast.ok()) {  // refused either way, for the same reason
        ASSERT_FALSE(slow.ok()) << rel << ": only the one-pass reader refuses: " << fast.error().to_string();
        EXPECT_EQ(fast.error().message, slow.error().message) << rel;
        ++refused;
        continue;
      }
      ASSERT_TRUE(slow.ok()) << rel << ": " << slow.error().to_string();
      ASSERT_EQ(fast->environments.size(), slow->environments.size()) << rel;
      EXPECT_EQ(fast->manifest_hash, slow->manifest_hash) << rel;
      for (const auto& [name, env] : fast->environments) {
        const auto& other = slow->environments.at(name);
        EXPECT_EQ(env.base, other.base) << rel;
        EXPECT_EQ(env.requested, other.requested) << rel;
        ASSERT_EQ(env.platforms.size(), other.platforms.size()) << rel;
        for (const auto& [key, plat] : env.platforms) {
          const auto& o = other.platforms.at(key);
          EXPECT_EQ(plat.channels, o.channels) << rel << " " << key;
          ASSERT_EQ(plat.packages.size(), o.packages.size()) << rel << " " << key;
          for (std::size_t i = 0; i < plat.packages.size(); ++i) {
            EXPECT_TRUE(plat.packages[i] == o.packages[i]) << rel << " " << key << " " << plat.packages[i].name;
            EXPECT_EQ(plat.packages[i].version.to_string(), o.packages[i].version.to_string()) << rel;
          }
          EXPECT_TRUE(plat.pip == o.pip) << rel << " " << key;
          packages += plat.packages.size();
        }
      }
      EXPECT_EQ(fast->to_yaml(), text) << rel;  // and both give back the text they read
      EXPECT_EQ(slow->to_yaml(), text) << rel;
      ++files;
    }
  }
  // Some records of other formats make an envlock.lock that envlock refuses (a pixi record
  // without a layer, a pip hash that is not sha256); those are refused the same way by both paths.
  EXPECT_GT(files, 100u) << refused << " refused";
  EXPECT_GT(packages, 30000u);
}

// conda-lock.yml and pixi.lock are read the same way: in one pass when the text is in the block
// subset (most real files are), else through yaml-cpp. Every YAML lockfile of the corpus is read
// as written and again with a `...` document end marker after it, which the one-pass reader
// leaves to yaml-cpp: both give the same lockfile, or the same error at the same place.
TEST(CorpusLockfiles, CondaLockAndPixiReadTheSameWithoutYamlCpp) {
  REQUIRE_CORPUS();
  std::size_t fast_files = 0, refused = 0;
  for (const auto& dir : fs::directory_iterator(lockfiles())) {
    for (const auto& f : fs::directory_iterator(dir.path())) {
      const std::string text = slurp(f.path());
      const std::string rel = dir.path().filename().string() + "/" + f.path().filename().string();
      auto format = detect_lock_format(text, rel);
      if (!format.ok() || format->format == LockFormat::Explicit || format->format == LockFormat::Envlock) continue;
      if (!block_yaml::parse_block_yaml(text).has_value()) continue;  // yaml-cpp either way
      ++fast_files;
      auto fast = read_lockfile_text(text, rel);
      auto slow = read_lockfile_text(text + "\n...\n", rel);
      ASSERT_EQ(fast.ok(), slow.ok()) << rel << ": " << (fast.ok() ? slow.error() : fast.error()).to_string();
      if (!fast.ok()) {
        EXPECT_EQ(fast.error().to_string(), slow.error().to_string()) << rel;
        ++refused;
        continue;
      }
      EXPECT_EQ(fast->format.to_string(), slow->format.to_string()) << rel;
      EXPECT_EQ(fast->lockfile.to_yaml(), slow->lockfile.to_yaml()) << rel;
    }
  }
  EXPECT_GT(fast_files, 100u) << refused << " refused";
}

TEST(CondaLock, PangeoMlNotebookRecordsMatchTheFile) {
  REQUIRE_CORPUS();
  const std::string rel = "pangeo-data__pangeo-docker-images/ml-notebook__conda-lock.yml";
  auto r = read_lockfile_path(lockfiles() / rel);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->format.to_string(), "conda-lock v1");
  const Lockfile& lock = r->lockfile;
  ASSERT_EQ(lock.environments.size(), 1u);
  const auto& env = lock.environments.at("default");
  ASSERT_EQ(env.platforms.size(), 1u);
  const auto& plat = env.platforms.at("linux-64");
  const std::string text = slurp(lockfiles() / rel);
  EXPECT_EQ(plat.packages.size(), count_lines(text, "manager: conda"));
  EXPECT_EQ(plat.pip.size(), count_lines(text, "manager: pip"));
  EXPECT_EQ(plat.channels, std::vector<std::string>{"conda-forge"});
  const LockedPackage* omp = find(plat, "_openmp_mutex");
  ASSERT_NE(omp, nullptr);
  EXPECT_EQ(omp->version.to_string(), "4.5");
  EXPECT_EQ(omp->build, "2_gnu");  // from the URL's file name: conda-lock does not record it
  EXPECT_EQ(omp->subdir, "linux-64");
  EXPECT_EQ(omp->channel, "https://conda.anaconda.org/conda-forge");
  EXPECT_EQ(omp->file_name, "_openmp_mutex-4.5-2_gnu.tar.bz2");
  EXPECT_EQ(omp->md5, "73aaf86a425cc6e73fcf236a5a46396d");
  EXPECT_EQ(omp->sha256, "fbe2c5e56a653bebb982eda4876a9178aedfc2b545f25d0ce9c4c0b508253d22");
  EXPECT_NE(std::find(omp->depends.begin(), omp->depends.end(), "libgomp >=7.5.0"), omp->depends.end());
  EXPECT_NE(std::find(omp->depends.begin(), omp->depends.end(), "_libgcc_mutex 0.1"), omp->depends.end());
  EXPECT_EQ(omp->layer, "main");
  const LockedPackage* abi = find(plat, "_python_abi3_support");
  ASSERT_NE(abi, nullptr);
  EXPECT_EQ(abi->subdir, "noarch");
  // An empty spec in the dependency map is the bare name.
  EXPECT_NE(std::find(abi->depends.begin(), abi->depends.end(), "cpython"), abi->depends.end());
}

TEST(CondaLock, CategoriesAreKeptAsLayers) {
  REQUIRE_CORPUS();
  auto lock = read_ok("mamba-org__mamba/libmamba__tests__data__env_lockfile__good_multiple_categories-lock.yaml");
  const auto& plat = lock.environments.at("default").platforms.at("linux-64");
  std::set<std::string> layers;
  for (const auto& p : plat.packages) layers.insert(p.layer);
  EXPECT_TRUE(layers.contains("main"));
  EXPECT_TRUE(layers.contains("dev"));
}

TEST(CondaLock, PipEntriesBecomePipPackages) {
  REQUIRE_CORPUS();
  auto lock = read_ok("conda__conda-lock/tests__test-v2-to-v3-upgrade__conda-lock-v3.0.3.yml");
  const auto& plat = lock.environments.at("default").platforms.at("linux-64");
  auto it = std::find_if(plat.pip.begin(), plat.pip.end(), [](const PipPackage& p) { return p.name == "anyio"; });
  ASSERT_NE(it, plat.pip.end());
  EXPECT_EQ(it->version, "4.9.0");
  EXPECT_EQ(it->sha256, "9f76d541cad6e36af7beb62e978876f3b41e3e04f2c1fbf0884604c0a9c4d93c");
  EXPECT_TRUE(it->url.ends_with("anyio-4.9.0-py3-none-any.whl"));
}

TEST(PixiLock, Version6NamesVersionBuildFromTheUrl) {
  REQUIRE_CORPUS();
  auto r = read_lockfile_path(lockfiles() / "conda__rattler/pixi.lock@253b323a");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->format.to_string(), "pixi.lock v6");
  const auto& plat = r->lockfile.environments.at("default").platforms.at("linux-64");
  const LockedPackage* omp = find(plat, "_openmp_mutex");
  ASSERT_NE(omp, nullptr);
  EXPECT_EQ(omp->build, "2_gnu");
  EXPECT_EQ(omp->version.to_string(), "4.5");
  EXPECT_EQ(omp->build_number, 16u);  // the record's own build number, not the build string's
  EXPECT_EQ(omp->channel, "https://prefix.dev/conda-forge");
  EXPECT_EQ(omp->size, std::optional<std::uint64_t>(23621));
}

// pixi writes the top-level `packages` list last (`packages: []` when empty): a file cut short
// before it is named as incomplete, whichever YAML reader takes it (the second text is not in
// the block subset: a truncated key yaml-cpp reads as part of the URL before it).
TEST(PixiLock, TruncatedBeforeThePackageListIsIncomplete) {
  for (const std::string text : {"version: 6\nenvironments:\n  default:\n    channels:\n      - url: https://x/\n    packages: {}\n",
                                 "version: 6\nenvironments:\n  default:\n    channels:\n      - url: https://x/\n    pac"}) {
    auto r = read_lockfile_text(text, "pixi.lock");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().where, "pixi.lock:1:1") << text;
    EXPECT_EQ(r.error().message, "pixi.lock without a top-level `packages` list: the file is incomplete (truncated?)");
  }
  auto empty = read_lockfile_text("version: 6\nenvironments:\n  default:\n    channels: []\n    packages: {}\npackages: []\n",
                                  "pixi.lock");
  ASSERT_TRUE(empty.ok()) << empty.error().to_string();
  EXPECT_EQ(empty->lockfile.environments.size(), 1u);
}

TEST(PixiLock, Version7PlatformsCarryVirtualPackages) {
  REQUIRE_CORPUS();
  auto r = read_lockfile_path(lockfiles() / "conda__rattler/pixi.lock");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->format.to_string(), "pixi.lock v7");
  const auto& plat = r->lockfile.environments.at("default").platforms.at("linux-64");
  EXPECT_EQ(plat.platform, "linux-64");
  auto glibc = std::find_if(plat.virtual_packages.begin(), plat.virtual_packages.end(),
                            [](const VirtualPackage& v) { return v.name == "__glibc"; });
  ASSERT_NE(glibc, plat.virtual_packages.end());
  EXPECT_EQ(glibc->version, "2.28");
  // Custom platform names map to their subdir.
  auto named = read_ok("conda__rattler/test-data__conda-lock__v7__conda-path-lock.yml");
  const auto& foobar = named.environments.at("default").platforms.at("linux-64-foobar");
  EXPECT_EQ(foobar.platform, "linux-64");
  ASSERT_EQ(foobar.packages.size(), 1u);
  EXPECT_EQ(foobar.packages[0].name, "minimal-project");
  EXPECT_EQ(foobar.packages[0].build, "first");
}

TEST(PixiLock, PypiEntriesAndEnvironments) {
  REQUIRE_CORPUS();
  auto r = read_lockfile_path(lockfiles() / "prefix-dev__pixi/examples__pypi__pixi.lock@eddac34c_version4");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->format.to_string(), "pixi.lock v4");
  std::size_t pip = 0;
  for (const auto& [_, env] : r->lockfile.environments) {
    for (const auto& [__, plat] : env.platforms) {
      pip += plat.pip.size();
      for (const auto& p : plat.pip) {
        EXPECT_FALSE(p.version.empty()) << p.name;
        EXPECT_EQ(p.sha256.size(), 64u) << p.name;
      }
    }
  }
  EXPECT_GT(pip, 10u);
}

TEST(Explicit, AllThreeHashFragmentForms) {
  const std::string text =
      "# platform: linux-64\n"
      "@EXPLICIT\n"
      "https://conda.anaconda.org/conda-forge/linux-64/_libgcc_mutex-0.1-conda_forge.tar.bz2#d7c89558ba9fa0495403155b64376d81\n"
      "https://conda.anaconda.org/conda-forge/linux-64/_openmp_mutex-4.5-2_gnu.tar.bz2#sha256:fbe2c5e56a653bebb982eda4876a9178aedfc2b545f25d0ce9c4c0b508253d22\n"
      "https://conda.anaconda.org/conda-forge/noarch/_python_abi3_support-1.0-hd8ed1ab_2.conda#a3967b937b9abf0f2a99f3173fa4630293979bd1644709d89580e7c62a544661\n";
  auto r = read_lockfile_text(text, "env.txt");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->format.to_string(), "@EXPLICIT");
  const auto& plat = r->lockfile.environments.at("default").platforms.at("linux-64");
  ASSERT_EQ(plat.packages.size(), 3u);
  EXPECT_EQ(find(plat, "_libgcc_mutex")->md5, "d7c89558ba9fa0495403155b64376d81");
  EXPECT_EQ(find(plat, "_libgcc_mutex")->sha256, "");
  EXPECT_EQ(find(plat, "_openmp_mutex")->sha256,
            "fbe2c5e56a653bebb982eda4876a9178aedfc2b545f25d0ce9c4c0b508253d22");
  EXPECT_EQ(find(plat, "_python_abi3_support")->sha256,
            "a3967b937b9abf0f2a99f3173fa4630293979bd1644709d89580e7c62a544661");
  EXPECT_EQ(find(plat, "_python_abi3_support")->build, "hd8ed1ab_2");
  EXPECT_EQ(find(plat, "_python_abi3_support")->subdir, "noarch");
}

TEST(Explicit, BadFragmentNamesLineAndColumn) {
  const std::string text =
      "@EXPLICIT\n"
      "https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda#sha256:abc\n";
  auto r = read_lockfile_text(text, "env.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "env.txt:2:84");
  EXPECT_NE(r.error().message.find("64 hexadecimal digits"), std::string::npos);
}

TEST(Explicit, CorpusPangeoMatchesItsCondaLock) {
  REQUIRE_CORPUS();
  auto ex = read_ok("pangeo-data__pangeo-docker-images/ml-notebook__conda-linux-64.lock");
  auto cl = read_ok("pangeo-data__pangeo-docker-images/ml-notebook__conda-lock.yml");
  const auto& a = ex.environments.at("default").platforms.at("linux-64");
  const auto& b = cl.environments.at("default").platforms.at("linux-64");
  ASSERT_EQ(a.packages.size(), b.packages.size());
  for (std::size_t i = 0; i < a.packages.size(); ++i) {
    EXPECT_EQ(a.packages[i].name, b.packages[i].name);
    EXPECT_EQ(a.packages[i].version, b.packages[i].version);
    EXPECT_EQ(a.packages[i].build, b.packages[i].build);
    EXPECT_EQ(a.packages[i].url, b.packages[i].url);
  }
}

TEST(BadInput, TruncatedYamlNamesTheLine) {
  REQUIRE_CORPUS();
  std::string text = slurp(lockfiles() / "pangeo-data__pangeo-docker-images/ml-notebook__conda-lock.yml");
  // Cut inside a flow value: an unterminated quoted scalar is a YAML syntax error.
  text = text.substr(0, text.find("version: '0.1'") + 11);
  auto r = read_lockfile_text(text, "conda-lock.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().where.starts_with("conda-lock.yml:")) << r.error().where;
  EXPECT_NE(r.error().message.find("YAML syntax error"), std::string::npos) << r.error().to_string();
}

TEST(BadInput, EntryWithoutUrl) {
  const std::string text =
      "version: 1\nmetadata:\n  platforms: [linux-64]\npackage:\n"
      "- name: zlib\n  version: 1.3.1\n  manager: conda\n  platform: linux-64\n"
      "  hash:\n    md5: 0123456789abcdef0123456789abcdef\n";
  auto r = read_lockfile_text(text, "conda-lock.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "conda-lock.yml:5:3");
  EXPECT_EQ(r.error().message, "package 'zlib' has no `url`");
}

TEST(BadInput, DuplicatedPackageNamesBothPlaces) {
  const std::string text =
      "version: 1\nmetadata:\n  platforms: [linux-64]\npackage:\n"
      "- name: zlib\n  version: 1.3.1\n  manager: conda\n  platform: linux-64\n"
      "  url: https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda\n"
      "  hash:\n    md5: 0123456789abcdef0123456789abcdef\n"
      "- name: zlib\n  version: 1.2.13\n  manager: conda\n  platform: linux-64\n"
      "  url: https://conda.anaconda.org/conda-forge/linux-64/zlib-1.2.13-hd590300_5.conda\n"
      "  hash:\n    md5: fedcba9876543210fedcba9876543210\n";
  auto r = read_lockfile_text(text, "conda-lock.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "conda-lock.yml:12:3");
  EXPECT_NE(r.error().message.find("duplicated package 'zlib'"), std::string::npos);
  EXPECT_NE(r.error().message.find("first listed at conda-lock.yml:5:3"), std::string::npos);
}

namespace {
std::string conda_lock_entry(const std::string& name, const std::string& version, const std::string& url,
                             const std::string& category, const std::string& manager = "conda") {
  return "- name: " + name + "\n  version: " + version + "\n  manager: " + manager +
         "\n  platform: linux-64\n  url: " + url + "\n  hash:\n    md5: 0123456789abcdef0123456789abcdef\n" +
         (category.empty() ? "" : "  category: " + category + "\n");
}
const std::string kZlibUrl = "https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda";
const std::string kHead = "version: 1\nmetadata:\n  platforms: [linux-64]\npackage:\n";
}  // namespace

TEST(BadInput, DuplicateWithTheSameUrlIsRefused) {
  // The entry repeated as it is (same category): before, merged silently ("no changes").
  auto r = read_lockfile_text(kHead + conda_lock_entry("zlib", "1.3.1", kZlibUrl, "main") +
                                  conda_lock_entry("zlib", "1.3.1", kZlibUrl, "main"),
                              "conda-lock.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "conda-lock.yml:13:3");
  EXPECT_NE(r.error().message.find("duplicated package 'zlib'"), std::string::npos);
  // Another md5, same URL.
  std::string other_md5 = conda_lock_entry("zlib", "1.3.1", kZlibUrl, "dev");
  other_md5.replace(other_md5.find("0123456789abcdef0123456789abcdef"), 32, "fedcba9876543210fedcba9876543210");
  r = read_lockfile_text(kHead + conda_lock_entry("zlib", "1.3.1", kZlibUrl, "main") + other_md5, "conda-lock.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "conda-lock.yml:13:3");
  EXPECT_NE(r.error().message.find("differ in other fields"), std::string::npos);
  // Another version, same URL: the version disagrees with the URL's file name, refused at it
  // (issue 17, M4).
  r = read_lockfile_text(kHead + conda_lock_entry("zlib", "1.3.1", kZlibUrl, "main") +
                             conda_lock_entry("zlib", "1.2.13", kZlibUrl, "dev"),
                         "conda-lock.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "conda-lock.yml:14:12");
  EXPECT_NE(r.error().message.find("`version` '1.2.13' disagrees with the file its URL names"), std::string::npos);
  // Pip entries too.
  const std::string whl = "https://files.pythonhosted.org/packages/x/requests-2.31.0-py3-none-any.whl";
  r = read_lockfile_text(kHead + conda_lock_entry("requests", "2.31.0", whl, "main", "pip") +
                             conda_lock_entry("requests", "2.31.0", whl, "main", "pip"),
                         "conda-lock.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("duplicated package 'requests'"), std::string::npos);
  // An @EXPLICIT line repeated: line 4 names the second.
  r = read_lockfile_text("# platform: linux-64\n@EXPLICIT\n" + kZlibUrl + "#0123456789abcdef0123456789abcdef\n" +
                             kZlibUrl + "#0123456789abcdef0123456789abcdef\n",
                         "env.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().where.find("env.txt:4"), std::string::npos) << r.error().where;
  EXPECT_NE(r.error().message.find("duplicated package 'zlib'"), std::string::npos);
}

TEST(CondaLock, SameRecordInTwoCategoriesIsOnePackage) {
  // How conda-lock lists a package of main and dev (the corpus has such files: see
  // conda__conda-lock/tests__test-multiple-categories__conda-lock.yml).
  auto r = read_lockfile_text(kHead + conda_lock_entry("zlib", "1.3.1", kZlibUrl, "main") +
                                  conda_lock_entry("zlib", "1.3.1", kZlibUrl, "dev"),
                              "conda-lock.yml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& pkgs = r->lockfile.environments.at("default").platforms.at("linux-64").packages;
  ASSERT_EQ(pkgs.size(), 1u);
  EXPECT_EQ(pkgs[0].layer, "dev,main");
}

TEST(BadInput, InvalidPackageNamesAreRefusedWithTheirPlace) {
  for (const std::string name : {"\"zz\\nno changes\\n\\e[2J\"", "\"ev|il</details><img src=x onerror=alert(1)>\"",
                                 "\"two words\"", "\"tab\\tname\""}) {
    auto r = read_lockfile_text(kHead + conda_lock_entry(name, "1.3.1", kZlibUrl, "main"), "conda-lock.yml");
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().where, "conda-lock.yml:5:3") << name;
    EXPECT_NE(r.error().message.find("package name"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("is not valid"), std::string::npos);
    for (char c : r.error().message) EXPECT_GE(static_cast<unsigned char>(c), 0x20u) << name;
  }
  auto r = read_lockfile_text(kHead + conda_lock_entry("\"a<b\"", "1.0", "https://files.pythonhosted.org/a-1.0.tar.gz",
                                                       "main", "pip"),
                              "conda-lock.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("PyPI package name 'a<b' is not valid"), std::string::npos);
}

TEST(BadInput, PackageArchiveIsNotALockfile) {
  for (const auto& [bytes, what] : {std::pair<std::string, std::string>{std::string("PK\x03\x04\x14\0\0\0", 8), "package archive"},
                                    {std::string("BZh91AY&SY\x12\0", 12), "package archive"},
                                    {std::string("\x1f\x8b\x08\0", 4), "gzip"},
                                    {std::string("abc\0def", 7), "binary file"}}) {
    auto r = read_lockfile_text(bytes, "numpy-2.0.0-py312_0.conda");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find(what), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("not a lockfile"), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find("YAML"), std::string::npos);
  }
}

TEST(Envlock, RelativeLocalChannelsResolveAgainstTheLockfileFolder) {
  // `envlock diff LOCKFILE PREFIX` compared `../channel` with the prefix's `file:///.../channel`
  // and reported channel-changed for every package; read from a path, the lockfile's relative
  // channels resolve as `install` resolves them.
  const fs::path dir = fs::temp_directory_path() / ("envlock-readers-relchan-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "project");
  const std::string channel = "file://" + (dir / "channel").lexically_normal().string();
  Lockfile lf = envlock::testing::one_package_lockfile(channel);
  lf.relative_channels = {channel};
  ASSERT_TRUE(lf.write(dir / "project" / "envlock.lock").ok());
  ASSERT_NE(slurp(dir / "project" / "envlock.lock").find("../channel"), std::string::npos);
  auto r = read_lockfile_path(dir / "project" / "envlock.lock");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const auto* plat = r->lockfile.find("default", "linux-64");
  ASSERT_NE(plat, nullptr);
  EXPECT_EQ(plat->channels, std::vector<std::string>{channel});
  EXPECT_EQ(plat->packages.at(0).channel, channel);
  EXPECT_EQ(plat->packages.at(0).url, channel + "/linux-64/tool-1.2-h0_0.conda");
  fs::remove_all(dir);
}

TEST(BadInput, NewerPixiVersionIsRefusedNamingBoth) {
  const std::string text = "version: 8\nenvironments: {}\npackages: []\n";
  auto r = read_lockfile_text(text, "pixi.lock");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "pixi.lock:1:10");
  EXPECT_EQ(r.error().message, "pixi.lock format version 8 is newer than this envlock reads (1-7)");
}

TEST(Prefix, CondaMetaOfARealEnvironment) {
  REQUIRE_CORPUS();
  // Rebuild the prefix's conda-meta/ from the corpus's flattened file names.
  const fs::path src = corpus() / "prefix" / "conda__conda";
  const std::string stem = "tests__data__env_metadata__envpy313tosx_whl__conda-meta__";
  const fs::path prefix = fs::temp_directory_path() / ("envlock-readers-prefix-" + std::to_string(::getpid()));
  fs::remove_all(prefix);
  fs::create_directories(prefix / "conda-meta");
  std::size_t records = 0;
  const std::string env_stem = "tests__data__env_metadata__envpy313tosx_whl__";
  for (const auto& f : fs::directory_iterator(src)) {
    const std::string name = f.path().filename().string();
    if (name.starts_with(env_stem + "lib__")) {  // the dist-info files that survive in the corpus
      std::string rel = name.substr(env_stem.size());
      for (std::size_t at; (at = rel.find("__")) != std::string::npos;) rel.replace(at, 2, "/");
      fs::create_directories((prefix / rel).parent_path());
      fs::copy_file(f.path(), prefix / rel);
    }
    if (!name.starts_with(stem)) continue;
    fs::copy_file(f.path(), prefix / "conda-meta" / name.substr(stem.size()));
    records += name.ends_with(".json") ? 1 : 0;
  }
  auto r = read_lockfile_path(prefix);
  fs::remove_all(prefix);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->format.to_string(), "conda-meta prefix");
  const auto& env = r->lockfile.environments.at("default");
  ASSERT_EQ(env.platforms.size(), 1u);
  const auto& plat = env.platforms.begin()->second;
  EXPECT_EQ(plat.platform, "osx-arm64");
  EXPECT_EQ(plat.packages.size(), records);
  const LockedPackage* openssl = find(plat, "openssl");
  ASSERT_NE(openssl, nullptr);
  EXPECT_EQ(openssl->version.to_string(), "3.4.1");
  EXPECT_EQ(openssl->build, "h81ee809_0");
  // pip's dist-info belongs to the conda package pip (its record lists it, no INSTALLER survives);
  // imagesize was installed by pip and is the one pip package, as `conda list` shows it (pypi).
  ASSERT_EQ(plat.pip.size(), 1u);
  EXPECT_EQ(plat.pip[0].name, "imagesize");
  EXPECT_EQ(plat.pip[0].version, "1.4.1");
  EXPECT_TRUE(plat.pip[0].url.empty());
  EXPECT_TRUE(r->warnings.empty());
}

// The pip side of a prefix: pip-installed dist-info folders become pip packages, a conda
// package's own dist-info does not, direct_url installs keep their URL, damaged ones are named.
TEST(Prefix, PipDistInfoFoldersArePipPackages) {
  envlock::testing::PipPrefix prefix;
  prefix.dist_info("Foo_Bar", "1.2.0", "pip");
  prefix.dist_info("fastapi", "0.110.0", "uv");
  const auto editable = prefix.dist_info("mylib", "0.1.dev0", "pip");
  prefix.write(editable / "direct_url.json", R"({"url": "file:///home/src/mylib", "dir_info": {"editable": true}})");
  const auto vcs = prefix.dist_info("tool", "2.0", "pip");
  prefix.write(vcs / "direct_url.json",
               R"({"url": "https://github.com/o/tool", "vcs_info": {"vcs": "git", "commit_id": "0123abc"}})");
  // A dist-info with INSTALLER conda is conda's even when no record lists it.
  prefix.dist_info("stray", "1.0", "conda");
  // Damaged: no METADATA (left out, named); a bad RECORD does not matter (RECORD is not read).
  const auto broken = prefix.dist_info("broken", "3.0", "pip");
  fs::remove(broken / "METADATA");
  const auto bad_record = prefix.dist_info("badrecord", "1.5", "pip");
  prefix.write(bad_record / "RECORD", "\"unterminated,,\n");

  auto r = read_lockfile_path(prefix.path());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const auto& plat = r->lockfile.environments.at("default").platforms.at("linux-64");
  ASSERT_EQ(plat.packages.size(), 2u);  // python, six
  std::vector<std::string> names;
  for (const auto& p : plat.pip) names.push_back(p.name + " " + p.version);
  EXPECT_EQ(names, (std::vector<std::string>{"Foo_Bar 1.2.0", "badrecord 1.5", "fastapi 0.110.0", "mylib 0.1.dev0",
                                             "tool 2.0"}));
  EXPECT_TRUE(plat.pip[0].requirement.empty());  // index install: a plain pin
  EXPECT_EQ(plat.pip[3].url, "file:///home/src/mylib");
  EXPECT_EQ(plat.pip[3].requirement, "mylib @ file:///home/src/mylib");
  EXPECT_EQ(plat.pip[4].requirement, "tool @ git+https://github.com/o/tool@0123abc");
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find((prefix.path() / PipPrefix::kSite / "broken-3.0.dist-info/METADATA").string()),
            std::string::npos)
      << r->warnings[0];
  EXPECT_NE(r->warnings[0].find("left out of the pip packages"), std::string::npos) << r->warnings[0];
}

// A manifest passed where a lockfile is expected (`envlock diff envlock.yaml good.lock`) is named
// as a manifest, not as "envlock.lock format version 0" that an upgrade would fix.
TEST(DetectFormat, ManifestIsNotALockfileOfUnknownVersion) {
  const std::string manifest =
      "channels: [conda-forge]\nplatforms: [linux-64]\nenvironments:\n  default:\n    dependencies: [python]\n";
  auto r = detect_lock_format(manifest, "envlock.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not a lockfile: this looks like a manifest"), std::string::npos)
      << r.error().to_string();
  EXPECT_EQ(r.error().message.find("format version"), std::string::npos) << r.error().to_string();
  EXPECT_NE(r.error().hint.find("envlock lock -f"), std::string::npos);
}

// Every reader that fills a pip package's url or requirement leaves credentials behind: userinfo
// and secret query values of conda-lock, pixi.lock and @EXPLICIT pip URLs, and a prefix's
// direct_url.json (whose `name @ url` requirement is built from the redacted URL).
TEST(PipEntries, EveryReaderDropsCredentials) {
  const std::string h(64, 'a');
  const std::string whl = "requests-2.31.0-py3-none-any.whl";
  auto conda_lock = read_lockfile_text(
      kHead + conda_lock_entry("requests", "2.31.0", "https://u:CL_SECRET@pypi.example.com/p/" + whl + "?token=QTOK", "main", "pip"),
      "conda-lock.yml");
  auto pixi = read_lockfile_text("version: 6\nenvironments:\n  default:\n    channels:\n"
                                 "    - url: https://conda.anaconda.org/conda-forge/\n    packages:\n      linux-64:\n"
                                 "      - pypi: https://u:PIXI_SECRET@pypi.example.com/p/" + whl + "\n"
                                 "packages:\n- pypi: https://u:PIXI_SECRET@pypi.example.com/p/" + whl + "\n"
                                 "  name: requests\n  version: 2.31.0\n  sha256: " + h + "\n",
                                 "pixi.lock");
  auto explicit_file = read_lockfile_text("# platform: linux-64\n@EXPLICIT\n# pip requests @ https://u:EX_SECRET@pypi.example.com/p/" +
                                              whl + "#sha256=" + h + "\n",
                                          "env.txt");
  PipPrefix prefix;
  const auto vcs = prefix.dist_info("mypkg", "0.3", "pip");
  prefix.write(vcs / "direct_url.json",
               R"({"url": "https://alice:PREFIX_SECRET@github.com/acme/mypkg.git", "vcs_info": {"vcs": "git", "commit_id": "0123abc"}})");
  auto installed = read_prefix(prefix.path());
  for (const auto* r : {&conda_lock, &pixi, &explicit_file}) {
    ASSERT_TRUE(r->ok()) << r->error().to_string();
    const auto& pip = (*r)->lockfile.environments.begin()->second.platforms.at("linux-64").pip;
    ASSERT_EQ(pip.size(), 1u);
    EXPECT_EQ(pip[0].name, "requests");
    EXPECT_TRUE(pip[0].url.starts_with("https://pypi.example.com/p/" + whl)) << pip[0].url;
    EXPECT_EQ(pip[0].url.find("SECRET"), std::string::npos) << pip[0].url;
    EXPECT_EQ(pip[0].url.find("QTOK"), std::string::npos) << pip[0].url;
  }
  ASSERT_TRUE(installed.ok()) << installed.error().to_string();
  const auto& pip = installed->environments.at("default").platforms.at("linux-64").pip;
  ASSERT_EQ(pip.size(), 1u);
  EXPECT_EQ(pip[0].url, "https://github.com/acme/mypkg.git");
  EXPECT_EQ(pip[0].requirement, "mypkg @ git+https://github.com/acme/mypkg.git@0123abc");
}
