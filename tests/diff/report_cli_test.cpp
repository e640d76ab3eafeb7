// `envlock diff` reports every change (issue 17): output options read strictly,
// locations shown as the file holds them, solve inputs (channels, channel names, virtual
// packages, PyPI indexes) compared, invisible characters and lookalike hosts shown for what they
// are. Exit codes and whole outputs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/run_command.hpp"

namespace fs = std::filesystem;
using envlock::testing::envlock_cmd;
using envlock::testing::run_command;

namespace {

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("envlock-truth-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& text) const {
    fs::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name, std::ios::binary) << text;
    return path_ / name;
  }

 private:
  fs::path path_;
  static inline int counter_ = 0;
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

const std::string kPad(34, ' ');  // the text renderer's column of notes
const std::string kSha(64, 'a');

// One @EXPLICIT line of zlib (the corpus's conda-forge zlib 1.3.1).
const std::string kExplicit = "# platform: linux-64\n@EXPLICIT\n"
                              "https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda#" +
                              std::string(64, '1') + "\n";

// An envlock.lock of one package `tool` from a relative local channel, as `envlock lock` writes
// one for a manifest naming `../chan-a` (docs/lockfile.md, "Local channels"), with a named channel
// and the virtual packages the solve assumed.
const std::string kLocalLock = "version: 1\n"
                               "environments:\n"
                               "  default:\n"
                               "    platforms:\n"
                               "      linux-64:\n"
                               "        channels: [\"../chan-a\", \"https://conda.anaconda.org/conda-forge\"]\n"
                               "        channel_names:\n"
                               "          \"../chan-a\": local\n"
                               "        virtual_packages: [\"__cuda=12.4=0\", \"__glibc=2.28=0\", \"__unix=0=0\"]\n"
                               "        packages:\n"
                               "          - name: tool\n"
                               "            version: \"1.2\"\n"
                               "            build: h0_0\n"
                               "            build_number: 0\n"
                               "            subdir: linux-64\n"
                               "            channel: \"../chan-a\"\n"
                               "            url: \"../chan-a/linux-64/tool-1.2-h0_0.conda\"\n"
                               "            sha256: \"" + kSha + "\"\n"
                               "            layer: default\n";

// A pixi.lock 6 of one PyPI wheel, as pixi writes it (the shape of the corpus's
// conda__conda-lock pixi.lock: `indexes` under the environment).
const std::string kSixUrl =
    "https://files.pythonhosted.org/packages/d9/5a/e7c31adbe875f2abbb91bd84cf2dc52d792b5a01506781dbcf25c91daf11/"
    "six-1.16.0-py2.py3-none-any.whl";
const std::string kPixiLock = "version: 6\n"
                              "environments:\n"
                              "  default:\n"
                              "    channels:\n"
                              "    - url: https://conda.anaconda.org/conda-forge/\n"
                              "    indexes:\n"
                              "    - https://pypi.org/simple\n"
                              "    packages:\n"
                              "      linux-64:\n"
                              "      - pypi: " + kSixUrl + "\n"
                              "packages:\n"
                              "- pypi: " + kSixUrl + "\n"
                              "  name: six\n"
                              "  version: 1.16.0\n"
                              "  sha256: 8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254\n"
                              "  requires_python: '>=2.7,!=3.0.*,!=3.1.*,!=3.2.*'\n";

}  // namespace

// `--format markdown --json` asks for two outputs: a usage error naming both (exit 2, with --json
// the error as JSON on stdout), never one of them chosen silently; `--json --format json` agree.
TEST(DiffReport, TwoOutputFormatsAreAUsageError) {
  TempDir dir;
  const auto a = dir.write("a.txt", kExplicit);
  for (const std::string format : {"markdown", "text"}) {
    auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(a) + " --format " + format + " --json --fail-on any");
    EXPECT_EQ(r.exit_code, 2) << format;
    EXPECT_EQ(r.out, "{\n"
                     "  \"error\": {\n"
                     "    \"detail\": \"\",\n"
                     "    \"hint\": \"give one of them; --json is the same as --format json\",\n"
                     "    \"kind\": \"usage\",\n"
                     "    \"message\": \"two output formats asked for: --format " + format + " and --json (JSON)\",\n"
                     "    \"where\": \"--format " + format + " --json\"\n"
                     "  }\n"
                     "}\n");
    EXPECT_EQ(r.err, "error: --format " + format + " --json: two output formats asked for: --format " + format +
                         " and --json (JSON)\nhint: give one of them; --json is the same as --format json\n");
  }
  auto r = run_command(envlock_cmd() + " --json diff " + q(a) + " " + q(a) + " --format json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("{\n")) << r.out;
  EXPECT_EQ(r.err, "");
}

// --max-bytes is a decimal number: CLI11 alone read `0x10` as 16 and `010` as 8 (strtoull base 0).
TEST(DiffReport, MaxBytesIsDecimalDigitsOnly) {
  TempDir dir;
  const auto a = dir.write("a.txt", kExplicit);
  const std::string diff = envlock_cmd() + " diff " + q(a) + " " + q(a) + " --format markdown --max-bytes ";
  for (const std::string v : {"0x10", "0X10", "0b101", "1e3", "+5", " 5", "5 ", "1_000", "1,000", "0o17", ""}) {
    auto r = run_command(diff + "'" + v + "'");
    EXPECT_EQ(r.exit_code, 2) << "[" << v << "]";
    EXPECT_EQ(r.out, "") << "[" << v << "]";
    EXPECT_EQ(r.err, "error: diff: --max-bytes: '" + v + "' is not a whole number of bytes (decimal digits only)\n"
                     "hint: run `envlock diff --help` for its options\n");
  }
  auto r = run_command(diff + "-5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: diff: --max-bytes: Value -5 not in range 0 to 1099511627776\n"
                   "hint: run `envlock diff --help` for its options\n");
  // A leading zero is decimal: 0100 is one hundred bytes, which the "No changes" comment exceeds.
  r = run_command(diff + "0100");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "warning: the comment takes " + std::to_string(r.out.size()) +
                       " bytes, more than --max-bytes 100: its title and 'No changes' line are never left out\n");
}

// An empty diff under a tiny budget is the "No changes" comment, not "0 more changes not shown ()".
TEST(DiffReport, AnEmptyDiffIsNeverFolded) {
  TempDir dir;
  const auto a = dir.write("a.txt", kExplicit);
  auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(a) + " --format markdown --max-bytes 10 --fail-on any");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "### envlock diff: `" + a.string() + "` → `" + a.string() + "`\n\n"
                   "**No changes** — both sides lock the same packages (@EXPLICIT vs @EXPLICIT).\n");
  EXPECT_EQ(r.err, "warning: the comment takes " + std::to_string(r.out.size()) +
                       " bytes, more than --max-bytes 10: its title and 'No changes' line are never left out\n");
}

// A relative local channel is compared resolved (as install reads it) but shown as the lockfile
// holds it (`../chan-a`, never the folder the file sits in), a channel under the home folder as
// `~/…`; the channel list, a channel's name and the virtual packages assumed are solve inputs
// whose changes are changes (`inputs-changed`), counted by the summary and by --fail-on alike.
TEST(DiffReport, LocationsAsWrittenAndSolveInputsAreChanges) {
  TempDir dir;
  const fs::path home = dir.path() / "home";
  fs::create_directories(home);
  const auto old_lock = dir.write("proj/old.lock", kLocalLock);
  std::string moved = replace_all(kLocalLock, "../chan-a", "~/chan-b");
  moved = replace_all(moved, "\"__cuda=12.4=0\", \"__glibc=2.28=0\", \"__unix=0=0\"",
                      "\"__archspec=1=x86_64_v3\", \"__cuda=11.8=0\", \"__unix=0=0\"");
  const auto new_lock = dir.write("proj/new.lock", replace_all(moved, ": local\n", ": mine\n"));
  const std::string diff = "cd " + q(dir.path() / "proj") + " && HOME=" + q(home) + " " + envlock_cmd() + " diff old.lock new.lock";
  auto r = run_command(diff + " --fail-on any");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "6 changes: 1 channel-changed, 5 inputs-changed; size unknown\n"
                   "old: old.lock (envlock.lock v1)\n"
                   "new: new.lock (envlock.lock v1)\n\n"
                   "default / linux-64: 6 changes, size unknown (1 -> 1 packages)\n"
                   "    channel-changed               tool                        1.2 h0_0 -> 1.2 h0_0\n" +
                       kPad + "channel ../chan-a -> ~/chan-b\n" + kPad + "pulled by: tool\n"
                   "    inputs-changed                channel names\n" +
                       kPad + "../chan-a: name local -> (none)\n" + kPad + "~/chan-b: name (none) -> mine\n"
                   "    inputs-changed                channels\n" +
                       kPad + "channels ../chan-a, https://conda.anaconda.org/conda-forge -> ~/chan-b, https://conda.anaconda.org/conda-forge\n"
                   "    inputs-changed                virtual package __archspec  1 x86_64_v3\n" +
                       kPad + "added: the solve assumed the host has it\n"
                   "    inputs-changed                virtual package __cuda      12.4 -> 11.8\n" +
                       kPad + "lowered: the solve assumed less of the host\n"
                   "    inputs-changed                virtual package __glibc     2.28\n" +
                       kPad + "removed: the solve no longer assumed it\n");
  EXPECT_EQ(r.err, "envlock diff: failing on 6 changes (1 channel-changed, 5 inputs-changed) (--fail-on any)\n");
  r = run_command(diff + " --format markdown --fail-on inputs-changed");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "### envlock diff: `old.lock` → `new.lock`\n\n"
                   "**6 changes: 1 channel-changed, 5 inputs-changed; size unknown**\n\n"
                   "| environment | platform | channel-changed | inputs-changed | size |\n"
                   "|---|---|---:|---:|---:|\n"
                   "| `default` | `linux-64` | 1 | 5 | unknown |\n\n"
                   "<details><summary>default / linux-64: 6 changes, size unknown</summary>\n\n"
                   "| package | change | old | new | size | pulled by | notes |\n"
                   "|---|---|---|---|---:|---|---|\n"
                   "| `tool` | channel-changed | `1.2 h0_0` | `1.2 h0_0` |  | `tool` | `channel ../chan-a -> ~/chan-b` |\n"
                   "| `channel names` | inputs-changed |  |  |  |  | `../chan-a: name local -> (none)`; `~/chan-b: name (none) -> mine` |\n"
                   "| `channels` | inputs-changed |  |  |  |  | `channels ../chan-a, https://conda.anaconda.org/conda-forge -> "
                   "~/chan-b, https://conda.anaconda.org/conda-forge` |\n"
                   "| `virtual package __archspec` | inputs-changed |  | `1 x86_64_v3` |  |  | `added: the solve assumed the host has it` |\n"
                   "| `virtual package __cuda` | inputs-changed | `12.4` | `11.8` |  |  | `lowered: the solve assumed less of the host` |\n"
                   "| `virtual package __glibc` | inputs-changed | `2.28` |  |  |  | `removed: the solve no longer assumed it` |\n\n"
                   "</details>\n\n");
  EXPECT_EQ(r.err, "envlock diff: failing on 5 changes (5 inputs-changed) (--fail-on inputs-changed)\n");
  // JSON names the same locations; neither the project folder nor the home folder appears.
  r = run_command(diff + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find(dir.path().string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"url\": \"../chan-a/linux-64/tool-1.2-h0_0.conda\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"url\": \"~/chan-b/linux-64/tool-1.2-h0_0.conda\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"source\": \"input\""), std::string::npos) << r.out;
  // The same lockfile on both sides, read from two folders: no change of any kind.
  const auto copy = dir.write("elsewhere/deeper/old.lock", replace_all(kLocalLock, "../chan-a", "../../proj/../chan-a"));
  r = run_command("cd " + q(dir.path() / "proj") + " && " + envlock_cmd() + " diff old.lock " + q(copy) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(r.out.starts_with("no changes\n")) << r.out;
}

// Two lockfiles in different folders that hold the same relative locations (`../chan-a`, a
// find-links wheel `./wheels/...`): compared resolved against each file's folder, as install
// reads them (a conda channel and a pip source alike), so another folder is channel-changed and
// source-changed; a note never prints two sides that read the same, it says why they differ; the
// swapped sha256 is the red flag (attack 23, F18).
TEST(DiffReport, TheSameRelativeLocationsInTwoFoldersSayWhyTheyDiffer) {
  TempDir dir;
  const std::string pip = "        pip:\n"
                          "          - name: goodpkg\n"
                          "            version: \"1.0\"\n"
                          "            url: \"./wheels/goodpkg-1.0-py3-none-any.whl\"\n"
                          "            sha256: " + std::string(64, 'c') + "\n"
                          "            index: ./wheels\n";
  dir.write("proj/envlock.lock", kLocalLock + pip);
  dir.write("proj/pr/envlock.lock", kLocalLock + replace_all(pip, std::string(64, 'c'), std::string(64, 'd')));
  auto r = run_command("cd " + q(dir.path() / "proj") + " && " + envlock_cmd() +
                       " diff envlock.lock pr/envlock.lock --fail-on hash-changed");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out,
            "4 changes: 1 hash-changed, 1 channel-changed, 2 inputs-changed; size unknown; 1 red flag\n"
            "old: envlock.lock (envlock.lock v1)\n"
            "new: pr/envlock.lock (envlock.lock v1)\n"
            "\n"
            "default / linux-64: 4 changes, size unknown (2 -> 2 packages)\n"
            "  ! hash-changed+channel-changed+source-changed pypi:goodpkg   1.0 -> 1.0\n"
            "                                  same file goodpkg-1.0-py3-none-any.whl, sha256 cccccccccccc… -> dddddddddddd…\n"
            "                                  source path ./wheels/goodpkg-1.0-py3-none-any.whl in both files, resolved "
            "against each file's folder to another location\n"
            "                                  index ./wheels in both files, resolved against each file's folder to another "
            "location\n"
            "    channel-changed               tool           1.2 h0_0 -> 1.2 h0_0\n"
            "                                  channel ../chan-a in both files, resolved against each file's folder to another "
            "location\n"
            "                                  pulled by: tool\n"
            "    inputs-changed                channel names\n"
            "                                  ../chan-a: name local -> (none)\n"
            "                                  ../chan-a: name (none) -> local\n"
            "    inputs-changed                channels\n"
            "                                  channels ../chan-a, https://conda.anaconda.org/conda-forge in both files, "
            "resolved against each file's folder to another location\n");
  EXPECT_EQ(r.err, "envlock diff: failing on 1 change (1 hash-changed) (--fail-on hash-changed)\n");
}

// pixi.lock's PyPI `indexes` are where every pip package is resolved from: another index is a
// change, not "no changes".
TEST(DiffReport, APixiIndexesChangeIsAChange) {
  TempDir dir;
  const auto a = dir.write("a/pixi.lock", kPixiLock);
  const auto b = dir.write("b/pixi.lock", replace_all(kPixiLock, "    - https://pypi.org/simple\n",
                                                      "    - https://pypi.example.com/simple\n"
                                                      "    - https://download.pytorch.org/whl/cpu\n"));
  auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "1 change: 1 inputs-changed; size unknown\n"
                   "old: " + a.string() + " (pixi.lock v6)\n"
                   "new: " + b.string() + " (pixi.lock v6)\n\n"
                   "default / linux-64: 1 change, size unknown (1 -> 1 packages)\n"
                   "    inputs-changed                pypi indexes\n" +
                       kPad + "indexes https://pypi.org/simple -> https://pypi.example.com/simple, https://download.pytorch.org/whl/cpu\n");
  EXPECT_EQ(r.err, "envlock diff: failing on 1 change (1 inputs-changed) (--fail-on any)\n");
  r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(a) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// Invisible characters (a soft hyphen and tag characters in a channel path) are shown as
// \u{...} in text and markdown and \uXXXX in JSON; a host with a lookalike letter (Cyrillic `о`
// in `anaconda.оrg`) as its A-label `xn--rg-emc`.
TEST(DiffReport, InvisibleCharactersAndLookalikeHostsAreShown) {
  TempDir dir;
  const std::string zlib = "https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda#" + std::string(64, '1') + "\n";
  const auto a = dir.write("a.txt", "# platform: linux-64\n@EXPLICIT\n" + zlib);
  const auto b = dir.write("b.txt", "# platform: linux-64\n@EXPLICIT\n" +
                                        replace_all(zlib, "https://conda.anaconda.org/conda-forge",
                                                    "https://conda.anaconda.\u043erg/conda\u00ad-forge\U000E0041"));
  auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 change: 1 channel-changed; size unknown\n"
                   "old: " + a.string() + " (@EXPLICIT)\n"
                   "new: " + b.string() + " (@EXPLICIT)\n\n"
                   "default / linux-64: 1 change, size unknown (1 -> 1 packages)\n"
                   "    channel-changed               zlib  1.3.1 hb9d3cd8_2 -> 1.3.1 hb9d3cd8_2\n" +
                       kPad + "channel https://conda.anaconda.org/conda-forge -> https://conda.anaconda.xn--rg-emc/conda\\u{00ad}-forge\\u{e0041}\n" +
                       kPad + "pulled by: zlib\n");
  EXPECT_EQ(r.err, "");
  r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b) + " --format markdown");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| `zlib` | channel-changed | `1.3.1 hb9d3cd8_2` | `1.3.1 hb9d3cd8_2` |  | `zlib` | `channel "
                       "https://conda.anaconda.org/conda-forge -> https://conda.anaconda.xn--rg-emc/conda\\u{00ad}-forge\\u{e0041}` |\n"),
            std::string::npos)
      << r.out;
  for (const char* raw : {"\u043e", "\u00ad", "\U000E0041"}) EXPECT_EQ(r.out.find(raw), std::string::npos) << r.out;
  r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b) + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"channel\": \"https://conda.anaconda.\u043erg/conda\\u00ad-forge\\udb40\\udc41\""), std::string::npos) << r.out;
  for (const char* raw : {"\u00ad", "\U000E0041"}) EXPECT_EQ(r.out.find(raw), std::string::npos) << r.out;
  // `show` (git's textconv) shows them the same way.
  r = run_command(envlock_cmd() + " show " + q(b));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "default/linux-64  channel https://conda.anaconda.xn--rg-emc/conda\\u{00ad}-forge\\u{e0041}\n"
                   "default/linux-64 zlib 1.3.1 hb9d3cd8_2 https://conda.anaconda.xn--rg-emc/conda\\u{00ad}-forge\\u{e0041} sha256:" +
                       std::string(64, '1') + "\n");
}

// Finding M5, end to end: `show` prints every field `diff` compares (envlock/diff.hpp,
// shown_record_fields and shown_platform_fields), so a change the gate fails on is a line in
// `git diff` through show's textconv: the platform's channels and PyPI indexes, and each record's
// size, license and (as pixi writes it where the build string does not give it) build_number.
// Before, show printed none of them, and a size, license or index change was an empty textconv diff.
const std::string kPixiShown =
                               "version: 6\n"
                               "environments:\n"
                               "  default:\n"
                               "    channels:\n"
                               "    - url: https://conda.anaconda.org/conda-forge/\n"
                               "    indexes:\n"
                               "    - https://pypi.org/simple\n"
                               "    packages:\n"
                               "      linux-64:\n"
                               "      - conda: https://conda.anaconda.org/conda-forge/noarch/tzdata-2024b-hc8b5060_0.conda\n"
                               "      - conda: https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda\n"
                               "packages:\n"
                               "- conda: https://conda.anaconda.org/conda-forge/noarch/tzdata-2024b-hc8b5060_0.conda\n"
                               "  sha256: 4fde5c3008bf5d2db82f2b50204464314cc3c91c1d953652f7bd01d9e52aefdf\n"
                               "  md5: 8ac3367aafb1cc0a068483c580af8015\n"
                               "  license: LicenseRef-Public-Domain\n"
                               "  size: 122354\n"
                               "  timestamp: 1728047496079\n"
                               "- conda: https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda\n"
                               "  sha256: 5d7c0e5f0005f74112a34a7425179f4eb6e73c92f5d109e6af4ddeca407c92ab\n"
                               "  md5: c9f075ab2f33b3bbee9e62d4ad0a6cd8\n"
                               "  build_number: 3\n"
                               "  depends:\n"
                               "  - __glibc >=2.17,<3.0.a0\n"
                               "  license: Zlib\n"
                               "  license_family: Other\n"
                               "  size: 92286\n";

TEST(DiffReport, ShowPrintsEveryFieldDiffCompares) {
  TempDir dir;
  const auto a = dir.write("a/pixi.lock", kPixiShown);
  std::string changed = kPixiShown;
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"size: 92286", "size: 92287"},
                                 {"license: Zlib", "license: MIT"},
                                 {"- https://pypi.org/simple", "- https://evil.example/simple"}})
    changed.replace(changed.find(from), from.size(), to);
  const auto b = dir.write("b/pixi.lock", changed);
  auto r = run_command(envlock_cmd() + " show " + q(a));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "default/linux-64  channel https://conda.anaconda.org/conda-forge/\n"
                   "default/linux-64  pypi_index https://pypi.org/simple\n"
                   "default/linux-64 tzdata 2024b hc8b5060_0 https://conda.anaconda.org/conda-forge sha256:"
                   "4fde5c3008bf5d2db82f2b50204464314cc3c91c1d953652f7bd01d9e52aefdf\n"
                   "default/linux-64 tzdata  md5 8ac3367aafb1cc0a068483c580af8015\n"
                   "default/linux-64 tzdata  size 122354\n"
                   "default/linux-64 tzdata  license LicenseRef-Public-Domain\n"
                   "default/linux-64 zlib 1.3.1 hb9d3cd8_2 https://conda.anaconda.org/conda-forge sha256:"
                   "5d7c0e5f0005f74112a34a7425179f4eb6e73c92f5d109e6af4ddeca407c92ab\n"
                   "default/linux-64 zlib  md5 c9f075ab2f33b3bbee9e62d4ad0a6cd8\n"
                   "default/linux-64 zlib  build_number 3\n"
                   "default/linux-64 zlib  size 92286\n"
                   "default/linux-64 zlib  license Zlib\n"
                   "default/linux-64 zlib  depends __glibc >=2.17,<3.0.a0\n");
  EXPECT_EQ(r.err, "");
  r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "2 changes: 1 metadata-changed, 1 inputs-changed; size +1 B\n"
                   "old: " + a.string() + " (pixi.lock v6)\nnew: " + b.string() + " (pixi.lock v6)\n\n"
                   "default / linux-64: 2 changes, size +1 B (2 -> 2 packages)\n"
                   "    metadata-changed+license-changed zlib          1.3.1 hb9d3cd8_2 -> 1.3.1 hb9d3cd8_2  +1 B\n" +
                       kPad + "size 92286 -> 92287\n" + kPad + "license Zlib -> MIT\n" + kPad + "pulled by: zlib\n"
                   "    inputs-changed                pypi indexes\n" +
                       kPad + "indexes https://pypi.org/simple -> https://evil.example/simple\n");
  EXPECT_EQ(r.err, "envlock diff: failing on 2 changes (1 metadata-changed, 1 license-changed, 1 inputs-changed; a change "
                   "counts under its kind and each of its flags) (--fail-on any)\n");
  // Each of the three is its own line of the textconv.
  r = run_command(envlock_cmd() + " show " + q(b));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"default/linux-64  pypi_index https://evil.example/simple\n", "default/linux-64 zlib  size 92287\n",
                           "default/linux-64 zlib  license MIT\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << r.out;
}
