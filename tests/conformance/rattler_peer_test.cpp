// The live peer: rattler's own solver (npm @conda-org/rattler, simpleSolve) and envlock's solve
// the same specs over the same real conda-forge repodata (../shared/corpus, the
// jaimergp/conda-subchannel-demo snapshot: linux-64, linux-aarch64, osx-64, osx-arm64, win-64 and
// noarch), rattler through a channel served on 127.0.0.1. The picks are compared record by
// record; a difference fails unless docs/solving.md lists it under "Documented disagreements
// with the live peer".
//
// Skipped, with a message, when node or the package is absent: `npm ci --prefix
// tests/conformance/peer` installs it (the test installs nothing itself).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "channel/corpus_channel.hpp"
#include "envlock/lock.hpp"
#include "envlock/repodata.hpp"
#include "envlock/solver.hpp"
#include "support/http_server.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;

const char* const kSource = "jaimergp__conda-subchannel-demo";
const char* const kPlatforms[] = {"linux-64", "linux-aarch64", "osx-64", "osx-arm64", "win-64"};
const std::vector<std::vector<std::string>> kSpecSets = {
    {"python 3.9.*", "pip"},
    {"python 3.9.* *_cpython", "setuptools", "wheel"},
    {"curl"},
    {"zstd", "xz", "bzip2"},
    {"sqlite", "openssl"},
    {"pypy3.9"},
};

fs::path peer_module() { return fs::path(ENVLOCK_SOURCE_DIR) / "tests/conformance/peer/node_modules/@conda-org/rattler"; }

/// "platform|package" pairs docs/solving.md lists as documented disagreements: the rows of the
/// table under the heading "Documented disagreements with the live peer" (`| platform | specs |
/// package | ... |`).
std::set<std::string> documented_disagreements() {
  std::string doc = testing::slurp(fs::path(ENVLOCK_SOURCE_DIR) / "docs/solving.md");
  std::set<std::string> out;
  auto at = doc.find("Documented disagreements with the live peer");
  if (at == std::string::npos) return out;
  std::istringstream in(doc.substr(at));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    if (line.starts_with("#")) break;
    if (!line.starts_with("| ") || line.starts_with("| platform") || line.starts_with("|---")) continue;
    std::vector<std::string> cells;
    std::string cell;
    for (char c : line.substr(1)) {
      if (c == '|') {
        while (!cell.empty() && cell.back() == ' ') cell.pop_back();
        while (!cell.empty() && cell.front() == ' ') cell.erase(cell.begin());
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += c;
      }
    }
    auto strip = [](std::string s) {
      s.erase(std::remove(s.begin(), s.end(), '`'), s.end());
      return s;
    };
    if (cells.size() >= 3) out.insert(strip(cells[0]) + "|" + strip(cells[1]) + "|" + strip(cells[2]));
  }
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

TEST(RattlerPeer, SameRecordsAsRattlerOnRealCondaForgeRepodata) {
  ENVLOCK_REQUIRE_CORPUS();
  auto node = testing::run_command("node --version");
  if (node.exit_code != 0) GTEST_SKIP() << "node is not on PATH; the live rattler comparison needs node >= 18";
  if (!fs::exists(peer_module() / "package.json"))
    GTEST_SKIP() << "@conda-org/rattler is not installed; run `npm ci --prefix tests/conformance/peer` to compare "
                    "envlock's solves with rattler's";

  // The channel: the corpus snapshot laid out as <channel>/<subdir>/repodata.json.
  testing::TempDir tmp("rattler-peer");
  const fs::path chan = tmp.path() / "root" / "conda-forge";
  const fs::path corpus = testing::corpus_repodata_dir() / kSource;
  std::vector<std::string> subdirs(std::begin(kPlatforms), std::end(kPlatforms));
  subdirs.push_back("noarch");
  std::map<std::string, std::vector<RepoDataRecord>> records;
  for (const auto& sd : subdirs) {
    const fs::path src = corpus / (sd + "__repodata.json");
    ASSERT_TRUE(fs::exists(src)) << src;
    fs::create_directories(chan / sd);
    fs::copy_file(src, chan / sd / "repodata.json");
    auto data = parse_repodata(testing::slurp(src), src.string(), "https://conda.anaconda.org/conda-forge", sd);
    ASSERT_TRUE(data.ok()) << data.error().to_string();
    records[sd] = std::move(data->records);
  }
  testing::HttpServer server(tmp.path() / "root");
  ASSERT_TRUE(server.ok()) << server.error();

  // rattler: one node process solves every case and prints one JSON line per case.
  nlohmann::json cases = nlohmann::json::array();
  for (const char* platform : kPlatforms)
    for (const auto& specs : kSpecSets) cases.push_back({{"platform", platform}, {"specs", specs}});
  testing::spit(tmp.path() / "cases.json", cases.dump());
  testing::spit(tmp.path() / "solve.cjs",
                "const { simpleSolve } = require(process.argv[2]);\n"
                "const cases = require(process.argv[3]);\n"
                "(async () => {\n"
                "  for (const c of cases) {\n"
                "    let out = { platform: c.platform, specs: c.specs };\n"
                "    try {\n"
                "      const r = await simpleSolve(c.specs, [process.argv[4]], [c.platform, 'noarch'], []);\n"
                "      out.packages = r.map(p => ({ name: p.packageName, version: p.version, build: p.build, url: p.url }));\n"
                "    } catch (e) { out.error = String(e); }\n"
                "    console.log(JSON.stringify(out));\n"
                "  }\n"
                "})();\n");
  auto peer = testing::run_command("node '" + (tmp.path() / "solve.cjs").string() + "' '" +
                                   (peer_module() / "dist/rattler.node.cjs").string() + "' '" +
                                   (tmp.path() / "cases.json").string() + "' '" + server.url("/conda-forge") + "'");
  ASSERT_EQ(peer.exit_code, 0) << peer.err << peer.out;

  const auto allowed = documented_disagreements();
  std::istringstream lines(peer.out);
  std::string line;
  int compared = 0;
  std::vector<std::string> differences;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    const std::string platform = j["platform"];
    std::vector<std::string> spec_texts = j["specs"];
    const std::string key_specs = join(spec_texts, "; ");

    SolveTask task;
    task.repos.push_back({"https://conda.anaconda.org/conda-forge", platform, 0, &records[platform]});
    task.repos.push_back({"https://conda.anaconda.org/conda-forge", "noarch", 0, &records["noarch"]});
    task.virtual_packages = default_virtual_packages(platform);
    for (const auto& s : spec_texts) task.specs.push_back({*MatchSpec::parse(s), s, "peer"});
    auto ours = solve(task);
    ASSERT_TRUE(ours.ok()) << ours.error().to_string();

    if (j.contains("error")) {
      if (ours->solved) differences.push_back(platform + " [" + key_specs + "]: rattler fails (" + j["error"].get<std::string>() + "), envlock solves");
      continue;
    }
    if (!ours->solved) {
      differences.push_back(platform + " [" + key_specs + "]: rattler solves, envlock does not:\n" +
                            ours->explanation.to_text());
      continue;
    }
    std::map<std::string, std::string> theirs, mine;
    for (const auto& p : j["packages"])
      theirs[p["name"].get<std::string>()] = p["version"].get<std::string>() + " " + p["build"].get<std::string>();
    for (const auto& p : ours->solution.packages)
      mine[p.record->name] = p.record->version.to_string() + " " + p.record->build;
    std::set<std::string> names;
    for (const auto& [n, v] : theirs) names.insert(n);
    for (const auto& [n, v] : mine) names.insert(n);
    for (const auto& n : names) {
      ++compared;
      std::string a = theirs.count(n) ? theirs[n] : "(absent)";
      std::string b = mine.count(n) ? mine[n] : "(absent)";
      if (a == b) continue;
      if (allowed.count(platform + "|" + key_specs + "|" + n)) continue;
      differences.push_back(platform + " [" + key_specs + "] " + n + ": rattler " + a + ", envlock " + b);
    }
  }
  EXPECT_GT(compared, 100) << peer.out;
  EXPECT_TRUE(differences.empty()) << "undocumented differences from rattler (add a row to docs/solving.md, "
                                      "\"Documented disagreements with the live peer\", only with the reason):\n"
                                   << join(differences, "\n");
}

}  // namespace
}  // namespace envlock
