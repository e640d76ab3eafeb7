// The one-pass reader of envlock's block YAML subset agrees with yaml-cpp, node for node (kind,
// text, line, column), on what envlock writes, and hands everything else back to yaml-cpp.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "block_yaml.hpp"
#include "envlock/lockfile.hpp"

namespace envlock {
namespace {

using block_yaml::Node;

void expect_same(const Node& a, const Node& b, const std::string& path) {
  ASSERT_EQ(static_cast<int>(a.kind()), static_cast<int>(b.kind())) << path;
  EXPECT_EQ(a.Scalar(), b.Scalar()) << path;
  if (a.kind() != block_yaml::Kind::Null) {
    EXPECT_EQ(a.line(), b.line()) << path;
    EXPECT_EQ(a.column(), b.column()) << path;
  }
  ASSERT_EQ(a.size(), b.size()) << path;
  if (a.IsSequence()) {
    std::size_t i = 0;
    auto bi = b.items().begin();
    for (Node item : a.items()) {
      expect_same(item, *bi, path + "/" + std::to_string(i++));
      ++bi;
    }
  }
  if (a.IsMap()) {
    std::size_t i = 0;
    auto bi = b.entries().begin();
    for (auto [k, v] : a.entries()) {
      auto [bk, bv] = *bi;
      expect_same(k, bk, path + "/key" + std::to_string(i++));
      expect_same(v, bv, path + "/" + std::string(k.Scalar()));
      ++bi;
    }
  }
}

void expect_agrees_with_yaml_cpp(const std::string& text) {
  auto fast = block_yaml::parse_block_yaml(text);
  ASSERT_TRUE(fast.has_value()) << text;
  const block_yaml::Document slow = block_yaml::from_yaml_cpp(YAML::Load(text));
  expect_same(fast->root(), slow.root(), "");
}

TEST(BlockYaml, AgreesWithYamlCppOnWhatEnvlockWrites) {
  LockedPackage p;
  p.name = "numpy";
  p.version = Version::parse("1.10").value();
  p.build = "py312h8753938_0";
  p.subdir = "linux-64";
  p.channel = "https://conda.anaconda.org/conda-forge";
  p.file_name = "numpy-1.10-py312h8753938_0.conda";
  p.url = p.channel + "/linux-64/" + p.file_name;
  p.sha256 = std::string(64, 'a');
  p.md5 = std::string(32, 'b');
  p.size = 7484186;
  p.depends = {"libblas >=3.9.0,<4.0a0", "python >=3.12,<3.13.0a0", "__glibc >=2.17"};
  p.license = "BSD-3-Clause AND \"quoted\" \\ back: slash #1";
  p.timestamp = 1707225380409;
  p.track_features = {"blas_mkl"};
  p.layer = "default";
  LockedPlatform lp;
  lp.platform = "linux-64";
  lp.channels = {"https://conda.anaconda.org/conda-forge"};
  lp.virtual_packages = {VirtualPackage::parse("__glibc=2.28=0").value()};
  lp.packages = {p};
  lp.pip = {PipPackage{"torch", "2.4.0+cu121", "", "", "torch==2.4.0+cu121"}};
  Lockfile lf;
  lf.manifest_hash = "sha256:" + std::string(64, 'c');
  LockedEnvironment env{"default", "", {"numpy >=1.26", "python 3.12.*"}, {{"linux-64", lp}}, std::nullopt};
  env.reference = ReferenceRun{"python -c 'print(1)'", "json:loss", 0.5, 1.25, {{"gpu", "none"}, {"yes", "no"}}};
  lf.environments["default"] = env;
  LockedEnvironment train{"train", "default", {}, {{"linux-64", LockedPlatform{"linux-64", {}, {}, {}, {}}}}, std::nullopt};
  lf.environments["train"] = train;
  expect_agrees_with_yaml_cpp(lf.to_yaml());

  auto back = Lockfile::parse(lf.to_yaml(), "envlock.lock");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->to_yaml(), lf.to_yaml());
  EXPECT_EQ(back->find("default", "linux-64")->packages[0].license, p.license);
}

TEST(BlockYaml, SameShapesWrittenByHand) {
  expect_agrees_with_yaml_cpp("a: 1\nb:\n- x\n- y: 2\n  z: \"\\x41\\u00e9\"\nc: {}\nd: []\n# comment\ne:\n    f: g\n");
  expect_agrees_with_yaml_cpp("list:\n  -   spaced: 1\n      more: 2\n");
  // What conda-lock and pixi write besides: single-quoted scalars ('' is one quote) and nulls.
  expect_agrees_with_yaml_cpp("version: '0.1'\ndeps:\n  python: '>=3.8'\n  q: 'it''s'\n  e: ''\n"
                              "t: null\nu: ~\nv: Null\nw: NULL\nl:\n- null\n- 'a # b: c'\n- ''''\n");
}

// Every YAML lockfile of the corpus (conda-lock, pixi.lock, envlock.lock): where the one-pass
// reader takes the file, it gives the tree yaml-cpp gives, node for node.
TEST(BlockYaml, AgreesWithYamlCppOnTheCorpusLockfiles) {
  const std::filesystem::path dir = std::filesystem::path(ENVLOCK_SHARED_DIR) / "corpus" / "lockfiles";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "the shared corpus (" << dir.string() << ") is absent";
  std::size_t taken = 0, left = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    if (text.find("@EXPLICIT") != std::string::npos || e.path().extension() == ".toml") continue;
    YAML::Node slow_node;
    try {
      slow_node = YAML::Load(text);
    } catch (const YAML::Exception&) {
      EXPECT_FALSE(block_yaml::parse_block_yaml(text).has_value()) << e.path();  // invalid YAML is never taken
      continue;
    }
    auto fast = block_yaml::parse_block_yaml(text);
    if (!fast) {
      ++left;
      continue;
    }
    ++taken;
    const block_yaml::Document slow = block_yaml::from_yaml_cpp(slow_node);
    expect_same(fast->root(), slow.root(), e.path().string());
  }
  std::cout << "block YAML: " << taken << " corpus lockfiles read in one pass, " << left << " left to yaml-cpp\n";
  EXPECT_GT(taken, 100u) << left << " left to yaml-cpp";
}

TEST(BlockYaml, EverythingElseIsLeftToYamlCpp) {
  for (const char* text : {"a: [1, 2]\n", "a: 'open\n  single'\n", "a: 'x' y\n", "'k': v\n", "a: &x 1\nb: *x\n",
                           "a: |\n  text\n", "a: 1 # note\n", "null: 1\n", "---\na: 1\n", "a: \"open\n  quote\"\n", "a:\n  - - nested\n",
                           "a: plain\n  continued\n", "\ta: 1\n", "? complex\n: key\n", "a: b: c\n", ""}) {
    EXPECT_FALSE(block_yaml::parse_block_yaml(text).has_value()) << text;
  }
}

TEST(BlockYaml, ErrorsPointAtTheSamePlaceEitherWay) {
  const std::string bad = "version: 1\nenvironments:\n  default:\n    platforms:\n      linux-64:\n        channels: []\n"
                          "        packages:\n          - name: x\n            version: \"1\"\n            build: b\n"
                          "            build_number: -1\n";
  auto fast = Lockfile::parse(bad, "f.lock");
  ASSERT_FALSE(fast.ok());
  EXPECT_EQ(fast.error().where, "f.lock:8:13");  // the package entry, missing `subdir`
  // The same file with a flow list (not in the subset) goes through yaml-cpp: same place.
  std::string slow_text = bad;
  slow_text.replace(slow_text.find("channels: []"), 12, "channels: [ ]");
  auto slow = Lockfile::parse(slow_text, "f.lock");
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.error().where, fast.error().where);
  EXPECT_EQ(slow.error().message, fast.error().message);
}

}  // namespace
}  // namespace envlock
