// envlock.lock's pip entries for pinned wheels (issue 20 point 2; docs/lockfile.md, "Keys of a pip
// entry"): what uv.lock and pixi.lock record of a PyPI package — file name, url, sha256, size,
// index, requires_python, requires_dist — and what required it, in a fixed key order, read back
// equal; a find-links folder's wheels written relative to the lockfile, as a local channel's
// packages are, so a moved checkout keeps a valid lockfile.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>

#include "envlock/lockfile.hpp"
#include "envlock/url.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;

const std::string kSha1(64, '1');
const std::string kSha2(64, '2');

PipPackage wheel_pin(const std::string& name, const std::string& version, const std::string& file, const std::string& folder_url,
                     const std::string& sha) {
  PipPackage p;
  p.name = name;
  p.version = version;
  p.file_name = file;
  p.url = folder_url + "/" + percent_encode(file);
  p.sha256 = sha;
  p.size = 4096;
  p.index = folder_url;
  return p;
}

Lockfile pinned(const fs::path& project) {
  Lockfile lf;
  lf.manifest_hash = "sha256:" + std::string(64, 'c');
  LockedEnvironment env;
  env.name = "default";
  LockedPlatform lp;
  lp.platform = "linux-64";
  lp.channels = {"https://conda.anaconda.org/conda-forge"};
  const std::string wheels = file_url_from_path((project / "wheels").string());
  lf.relative_channels = {wheels};
  PipPackage torch = wheel_pin("torch", "2.4.1+cpu", "torch-2.4.1+cpu-cp311-cp311-linux_x86_64.whl", wheels, kSha1);
  torch.requires_python = ">=3.8.0";
  torch.requires_dist = {"filelock", "typing-extensions>=4.8.0", "sympy", "opt-einsum>=3.3; extra == \"opt-einsum\""};
  torch.required_by = {"(manifest)"};
  PipPackage req = wheel_pin("requests", "2.32.3", "requests-2.32.3-py3-none-any.whl", "https://pypi.org/simple", kSha2);
  req.url = "https://files.pythonhosted.org/packages/f9/9b/requests-2.32.3-py3-none-any.whl";
  req.size = 64928;
  req.requires_python = ">=3.8";
  req.requires_dist = {"charset-normalizer<4,>=2", "idna<4,>=2.5"};
  req.required_by = {"(manifest)", "torch"};
  lp.pip = {torch, req};
  env.platforms["linux-64"] = lp;
  lf.environments["default"] = env;
  return lf;
}

const char* const kPinnedYaml = R"yaml(# envlock.lock — written by `envlock lock`; do not edit by hand. Format: docs/lockfile.md
version: 1
manifest_hash: sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc
environments:
  default:
    requested: []
    platforms:
      linux-64:
        channels:
          - https://conda.anaconda.org/conda-forge
        virtual_packages: []
        packages: []
        pip:
          - name: requests
            version: "2.32.3"
            url: https://files.pythonhosted.org/packages/f9/9b/requests-2.32.3-py3-none-any.whl
            file_name: requests-2.32.3-py3-none-any.whl
            sha256: "2222222222222222222222222222222222222222222222222222222222222222"
            size: 64928
            index: https://pypi.org/simple
            requires_python: ">=3.8"
            requires_dist:
              - charset-normalizer<4,>=2
              - idna<4,>=2.5
            required_by:
              - "(manifest)"
              - torch
          - name: torch
            version: "2.4.1+cpu"
            url: "./wheels/torch-2.4.1+cpu-cp311-cp311-linux_x86_64.whl"
            file_name: torch-2.4.1+cpu-cp311-cp311-linux_x86_64.whl
            sha256: "1111111111111111111111111111111111111111111111111111111111111111"
            size: 4096
            index: "./wheels"
            requires_python: ">=3.8.0"
            requires_dist:
              - filelock
              - typing-extensions>=4.8.0
              - sympy
              - "opt-einsum>=3.3; extra == \"opt-einsum\""
            required_by:
              - "(manifest)"
)yaml";

TEST(LockfilePip, APinnedWheelRecordsWhatUvAndPixiRecordInAFixedOrder) {
  const fs::path project = "/srv/team/project";
  EXPECT_EQ(pinned(project).to_yaml(project), kPinnedYaml);
  // Shuffled entries: the same bytes (sorted by name); requires_dist keeps METADATA's order.
  std::mt19937 rng(7);
  for (int i = 0; i < 5; ++i) {
    Lockfile lf = pinned(project);
    auto& pip = lf.environments["default"].platforms["linux-64"].pip;
    std::shuffle(pip.begin(), pip.end(), rng);
    EXPECT_EQ(lf.to_yaml(project), kPinnedYaml);
  }
}

TEST(LockfilePip, ReadBackEqualAndTheMovedCheckoutStillNamesItsWheels) {
  const fs::path project = "/srv/team/project";
  auto back = Lockfile::parse(kPinnedYaml, "envlock.lock", project);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  Lockfile want = pinned(project);
  std::sort(want.environments["default"].platforms["linux-64"].pip.begin(),
            want.environments["default"].platforms["linux-64"].pip.end(),
            [](const PipPackage& a, const PipPackage& b) { return a.name < b.name; });
  EXPECT_EQ(back->find("default", "linux-64")->pip, want.find("default", "linux-64")->pip);
  EXPECT_EQ(back->relative_channels, want.relative_channels);
  EXPECT_EQ(back->to_yaml(project), kPinnedYaml);

  // The same text read in another folder (a moved checkout, CI's clone) names that folder's
  // wheels, encoded as a URL (`+` is %2B), and is written there byte for byte as it was.
  const fs::path moved = "/tmp/elsewhere/my project";
  auto there = Lockfile::parse(kPinnedYaml, "envlock.lock", moved);
  ASSERT_TRUE(there.ok()) << there.error().to_string();
  const PipPackage& torch = there->find("default", "linux-64")->pip[1];
  EXPECT_EQ(torch.url, "file:///tmp/elsewhere/my%20project/wheels/torch-2.4.1%2Bcpu-cp311-cp311-linux_x86_64.whl");
  EXPECT_EQ(torch.index, "file:///tmp/elsewhere/my%20project/wheels");
  EXPECT_EQ(there->to_yaml(moved), kPinnedYaml);

  // Kept as written when no folder is given (`envlock show`).
  auto shown = Lockfile::parse(kPinnedYaml, "envlock.lock");
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ(shown->find("default", "linux-64")->pip[1].url, "./wheels/torch-2.4.1+cpu-cp311-cp311-linux_x86_64.whl");
  EXPECT_EQ(shown->to_yaml(), kPinnedYaml);

  // A relative wheel URL without an index (written by hand) is resolved and written back alike.
  std::string bare = kPinnedYaml;
  const std::string index_line = "            index: \"./wheels\"\n";
  bare.erase(bare.find(index_line), index_line.size());
  auto hand = Lockfile::parse(bare, "envlock.lock", moved);
  ASSERT_TRUE(hand.ok()) << hand.error().to_string();
  EXPECT_EQ(hand->find("default", "linux-64")->pip[1].url, torch.url);
  EXPECT_EQ(hand->to_yaml(moved), bare);
}

TEST(LockfilePip, AFileNameThatIsNotTheUrlsFileIsRefusedAtItsLine) {
  std::string text = kPinnedYaml;
  const std::string from = "file_name: requests-2.32.3-py3-none-any.whl";
  text.replace(text.find(from), from.size(), "file_name: requests-2.99.0-py3-none-any.whl");
  auto r = Lockfile::parse(text, "envlock.lock");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "envlock.lock:17:24");
  EXPECT_EQ(r.error().message,
            "pip package 'requests': `file_name` 'requests-2.99.0-py3-none-any.whl' is not the file its URL names, "
            "requests-2.32.3-py3-none-any.whl");
  EXPECT_EQ(r.error().hint,
            "an installer downloads the URL, so the entry would be shown as one wheel and installed as another; "
            "re-create the lockfile with `envlock lock`, or fix the entry or its URL");

  // A size that is no number is named too.
  text = kPinnedYaml;
  text.replace(text.find("size: 64928"), 11, "size: big");
  r = Lockfile::parse(text, "envlock.lock");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "envlock.lock:19:19");
  EXPECT_EQ(r.error().message, "pip size must be a non-negative integer, found a scalar 'big'");
}

// Issue 20: the PyPI indexes a platform's pins were resolved against are written as
// `pypi_indexes` (pixi.lock writes them as an environment's `indexes`), in priority order after
// `virtual_packages`, credential-free, a local index folder relative to the lockfile as a local
// channel is; read back equal. A lockfile without them (an older envlock, or no PyPI pins) reads
// as before and is written byte for byte as it was.
TEST(LockfilePip, TheIndexesThePinsWereResolvedAgainstAreWrittenAndReadBack) {
  const fs::path project = "/srv/team/project";
  // Old text: no key, no index read, the same bytes written.
  auto old = Lockfile::parse(kPinnedYaml, "envlock.lock", project);
  ASSERT_TRUE(old.ok()) << old.error().to_string();
  EXPECT_EQ(old->find("default", "linux-64")->pypi_indexes, std::vector<std::string>{});
  EXPECT_EQ(old->to_yaml(project), kPinnedYaml);

  Lockfile lf = pinned(project);
  lf.environments["default"].platforms["linux-64"].pypi_indexes = {
      "https://user:s3cr3t@pypi.corp.example.com/simple", "https://pypi.org/simple",
      file_url_from_path((project / "simple").string())};
  lf.relative_channels.push_back(file_url_from_path((project / "simple").string()));
  std::sort(lf.relative_channels.begin(), lf.relative_channels.end());
  std::string want = kPinnedYaml;
  const std::string after = "        virtual_packages: []\n";
  want.insert(want.find(after) + after.size(),
              "        pypi_indexes:\n"
              "          - https://pypi.corp.example.com/simple\n"
              "          - https://pypi.org/simple\n"
              "          - \"./simple\"\n");
  const std::string text = lf.to_yaml(project);
  EXPECT_EQ(text, want);
  EXPECT_EQ(text.find("s3cr3t"), std::string::npos);
  auto back = Lockfile::parse(text, "envlock.lock", project);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->find("default", "linux-64")->pypi_indexes,
            (std::vector<std::string>{"https://pypi.corp.example.com/simple", "https://pypi.org/simple", "file:///srv/team/project/simple"}));
  EXPECT_EQ(back->to_yaml(project), want);

  // Credentials in the file are refused as in every other URL of it; a non-list is named.
  std::string token = want;
  token.replace(token.find("https://pypi.org/simple\n"), 24, "https://u:tok@pypi.org/simple\n");
  auto refused = Lockfile::parse(token, "envlock.lock", project);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "a PyPI index of platform linux-64 carries credentials");
  std::string scalar = kPinnedYaml;
  scalar.insert(scalar.find(after) + after.size(), "        pypi_indexes: https://pypi.org/simple\n");
  auto bad = Lockfile::parse(scalar, "envlock.lock", project);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "pypi_indexes of platform linux-64 must be a list, found a scalar 'https://pypi.org/simple'");
}

}  // namespace
}  // namespace envlock
