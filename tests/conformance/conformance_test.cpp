// The conformance suite: version, VersionSpec, MatchSpec and solver facts transcribed from the
// peers' own test suites (conda, mamba, rattler), one data file per source under data/. Each
// fact names the upstream file and test it comes from (the '@test' line above it); a failure
// prints the data file and line, the upstream test and what envlock answered. The format is
// described in tests/conformance/README.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "channel/corpus_channel.hpp"
#include "envlock/match_spec.hpp"
#include "envlock/repodata.hpp"
#include "envlock/solver.hpp"
#include "envlock/version.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;

fs::path data_dir() { return fs::path(ENVLOCK_SOURCE_DIR) / "tests" / "conformance" / "data"; }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  return s.substr(i);
}

/// A dependency written without spaces (`c>=1,<2`), spelled as repodata does (`c >=1,<2`).
std::string spaced_dep(const std::string& d) {
  std::size_t i = d.find_first_of("<>=!~");
  return i == std::string::npos || i == 0 ? d : d.substr(0, i) + " " + d.substr(i);
}

/// A record written `key=value key=value ...` (set-valued keys take commas; depends and
/// constrains take '|' between entries, each written without spaces: `c>=1,<2`).
Result<RepoDataRecord> parse_record(const std::string& text, const std::string& default_channel,
                                    const std::string& default_subdir) {
  RepoDataRecord r;
  r.channel = default_channel;
  r.subdir = default_subdir;
  std::string version = "0";
  std::istringstream in(text);
  std::string field;
  while (in >> field) {
    auto eq = field.find('=');
    if (eq == std::string::npos) return Error{ErrorKind::Parse, field, "expected key=value", "", ""};
    std::string k = field.substr(0, eq), v = field.substr(eq + 1);
    if (k == "name") r.name = v;
    else if (k == "version") version = v;
    else if (k == "build") r.build = v;
    else if (k == "build_number") r.build_number = std::stoull(v);
    else if (k == "timestamp") r.timestamp = std::stoull(v);
    else if (k == "channel") r.channel = v;
    else if (k == "subdir") r.subdir = v;
    else if (k == "md5") r.md5 = v;
    else if (k == "sha256") r.sha256 = v;
    else if (k == "license") r.license = v;
    else if (k == "license_family") r.license_family = v;
    else if (k == "fn") r.file_name = v;
    else if (k == "url") r.url = v;
    else if (k == "track_features") r.track_features = split_features(v);
    else if (k == "features") r.features = v;
    else if (k == "depends" || k == "constrains") {
      auto& list = k == "depends" ? r.depends : r.constrains;
      for (const auto& d : split(v, '|')) list.push_back(spaced_dep(d));
    }
    else return Error{ErrorKind::Parse, k, "unknown record key", "", ""};
  }
  auto ver = Version::parse(version);
  if (!ver) return ver.error();
  r.version = *ver;
  if (r.file_name.empty()) r.file_name = r.name + "-" + version + "-" + r.build + ".conda";
  if (r.url.empty()) r.url = r.channel + "/" + r.subdir + "/" + r.file_name;
  return r;
}

/// The facts of one data file, checked one by one; failures are collected with their place.
class Checker {
 public:
  explicit Checker(const fs::path& file) : file_(file) {}

  void run() {
    std::string text = testing::slurp(file_);
    std::istringstream in(text);
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || line[0] == '#') continue;
      line_ = lineno;
      if (line.starts_with("@test ")) {
        test_ = line.substr(6);
        reset_block();
        continue;
      }
      auto f = split(line, '\t');
      check(f);
    }
  }

  int facts = 0;
  int skipped = 0;
  std::vector<std::string> failures;

 private:
  void fail(const std::string& what) {
    failures.push_back(file_.filename().string() + ":" + std::to_string(line_) + ": [" + test_ + "] " + what);
  }

  void reset_block() {
    records_.clear();
    channels_.clear();
    corpus_.clear();
    virtuals_.clear();
    priority_ = ChannelPriority::Strict;
  }

  static std::optional<Version> version(const std::string& s) {
    auto v = Version::parse(s);
    if (!v) return std::nullopt;
    return *v;
  }

  void check(const std::vector<std::string>& f) {
    if (f[0] == "disagree" && f.size() > 1) {
      // A fact of one peer that another peer (and envlock) answers the other way, as
      // docs/solving.md ("Conformance") lists: it must keep failing, else the docs are stale.
      std::vector<std::string> rest(f.begin() + 1, f.end());
      const std::size_t before = failures.size();
      const int skipped_before = skipped;
      check(rest);
      if (skipped != skipped_before) return;  // over the shared corpus, which is absent
      if (failures.size() == before)
        fail("'" + rest[0] + "' is marked as a peer disagreement but now holds: update the data and docs/solving.md");
      else
        failures.resize(before);
      return;
    }
    const std::string& kind = f[0];
    auto need = [&](std::size_t n) {
      if (f.size() < n) fail("malformed fact '" + kind + "': expected " + std::to_string(n - 1) + " fields");
      return f.size() >= n;
    };
    if (kind == "record" || kind == "corpus" || kind == "virtual" || kind == "option") {
      block_line(f);
      return;
    }
    ++facts;
    if (kind == "version-lt" || kind == "version-eq" || kind == "version-ne") {
      if (!need(3)) return;
      auto a = version(f[1]), b = version(f[2]);
      if (!a || !b) return fail(kind + " '" + f[1] + "' '" + f[2] + "': a version does not parse");
      bool ok = kind == "version-lt" ? (*a < *b && *b > *a) : kind == "version-eq" ? *a == *b : *a != *b;
      if (!ok) fail(kind + " '" + f[1] + "' '" + f[2] + "' does not hold");
    } else if (kind == "version-invalid") {
      if (!need(2)) return;
      if (Version::parse(f[1])) fail("version '" + f[1] + "' parses, conda rejects it");
    } else if (kind == "spec-match" || kind == "spec-nomatch") {
      if (!need(3)) return;
      auto s = VersionSpec::parse(f[1]);
      auto v = version(f[2]);
      if (!s) return fail("version spec '" + f[1] + "' does not parse: " + s.error().message);
      if (!v) return fail("version '" + f[2] + "' does not parse");
      if (s->matches(*v) != (kind == "spec-match"))
        fail("'" + f[1] + "' " + (kind == "spec-match" ? "does not match" : "matches") + " " + f[2]);
    } else if (kind == "spec-invalid") {
      if (!need(2)) return;
      if (VersionSpec::parse(f[1])) fail("version spec '" + f[1] + "' parses, the peer rejects it");
    } else if (kind == "spec-valid") {
      if (!need(2)) return;
      if (auto s = VersionSpec::parse(f[1]); !s) fail("version spec '" + f[1] + "' does not parse: " + s.error().message);
    } else if (kind == "spec-same") {
      if (!need(3)) return;
      auto a = VersionSpec::parse(f[1]), b = VersionSpec::parse(f[2]);
      if (!a || !b) return fail("spec-same: a spec does not parse");
      for (const char* probe : {"1.7", "1.7.1", "1.7.1.0", "1.7.10", "1.7.1.5", "1.8.1", "1.8.1.2", "1.8.10", "2.0"}) {
        auto v = *Version::parse(probe);
        if (a->matches(v) != b->matches(v)) return fail("'" + f[1] + "' and '" + f[2] + "' differ on " + probe);
      }
    } else if (kind == "ms-match" || kind == "ms-nomatch") {
      if (!need(3)) return;
      auto ms = MatchSpec::parse(f[1]);
      if (!ms) return fail("match spec '" + f[1] + "' does not parse: " + ms.error().message);
      auto r = parse_record(f[2], "https://conda.anaconda.org/test", "linux-64");
      if (!r) return fail("record does not parse: " + r.error().message);
      if (ms->matches(*r) != (kind == "ms-match"))
        fail("'" + f[1] + "' " + (kind == "ms-match" ? "does not match" : "matches") + " {" + f[2] + "}");
    } else if (kind == "ms-invalid") {
      if (!need(2)) return;
      if (MatchSpec::parse(f[1])) fail("match spec '" + f[1] + "' parses, the peer rejects it");
    } else if (kind == "ms-name") {
      if (!need(3)) return;
      auto ms = MatchSpec::parse(f[1]);
      if (!ms) return fail("match spec '" + f[1] + "' does not parse: " + ms.error().message);
      if (ms->exact_name() != f[2]) fail("'" + f[1] + "' names '" + ms->exact_name() + "', expected '" + f[2] + "'");
    } else if (kind == "solve") {
      if (!need(3)) return;
      solve_fact(f);
    } else {
      --facts;
      fail("unknown fact kind '" + kind + "'");
    }
  }

  void block_line(const std::vector<std::string>& f) {
    if (f[0] == "record" && f.size() >= 4) {
      const std::string channel = "https://conda.anaconda.org/" + f[1];
      auto r = parse_record(f[3], channel, f[2]);
      if (!r) return fail("record does not parse: " + r.error().message);
      records_[{channel, f[2]}].push_back(*r);
      if (std::find(channels_.begin(), channels_.end(), channel) == channels_.end()) channels_.push_back(channel);
    } else if (f[0] == "corpus" && f.size() >= 4) {
      corpus_.push_back({f[1], f[2], f[3]});
      if (std::find(channels_.begin(), channels_.end(), f[2]) == channels_.end()) channels_.push_back(f[2]);
    } else if (f[0] == "virtual" && f.size() >= 2) {
      auto vp = VirtualPackage::parse(f[1]);
      if (!vp) return fail("virtual package does not parse: " + vp.error().message);
      virtuals_.push_back(*vp);
    } else if (f[0] == "option" && f.size() >= 2) {
      priority_ = f[1] == "disabled" ? ChannelPriority::Disabled
                  : f[1] == "flexible" ? ChannelPriority::Flexible
                                       : ChannelPriority::Strict;
    } else {
      fail("malformed '" + f[0] + "' line");
    }
  }

  void solve_fact(const std::vector<std::string>& f) {
    std::vector<SubdirRepodata> loaded;
    loaded.reserve(corpus_.size());
    for (const auto& c : corpus_) {
      if (testing::corpus_repodata_dir().empty()) {
        ++skipped;
        return;
      }
      auto data = parse_repodata(testing::slurp(testing::corpus_repodata_dir() / c.file), c.file, c.channel, c.subdir);
      if (!data) return fail("corpus repodata " + c.file + ": " + data.error().message);
      loaded.push_back(std::move(*data));
    }
    SolveTask task;
    task.channel_priority = priority_;
    task.virtual_packages = virtuals_;
    auto rank = [&](const std::string& ch) {
      return static_cast<int>(std::find(channels_.begin(), channels_.end(), ch) - channels_.begin());
    };
    for (const auto& [key, recs] : records_) task.repos.push_back({key.first, key.second, rank(key.first), &recs});
    for (const auto& d : loaded) task.repos.push_back({d.channel, d.subdir, rank(d.channel), &d.records});
    for (const auto& s : split(f[1], ';')) {
      auto ms = MatchSpec::parse(s);
      if (!ms) return fail("spec '" + s + "' does not parse: " + ms.error().message);
      task.specs.push_back({*ms, s, "test"});
    }
    auto out = solve(task);
    if (!out) return fail("solve failed: " + out.error().message);
    if (f[2] == "unsat") {
      if (out->solved) return fail("solve '" + f[1] + "' succeeded; the peer finds it unsatisfiable");
      std::string text = out->explanation.to_text();
      if (f.size() >= 4)
        for (const auto& word : split(f[3], ','))
          if (text.find(word) == std::string::npos)
            fail("the explanation of '" + f[1] + "' does not name '" + word + "':\n" + text);
      return;
    }
    if (!out->solved) return fail("solve '" + f[1] + "' is unsatisfiable:\n" + out->explanation.to_text());
    for (const auto& want : split(f[2], ';')) {
      // name=version[=build] [key=value ...]: the chosen record of that name has these fields.
      auto words = split(trim(want), ' ');
      auto nvb = split(words[0], '=');
      const RepoDataRecord* got = nullptr;
      for (const auto& p : out->solution.packages)
        if (p.record->name == nvb[0]) got = p.record;
      if (got == nullptr) {
        fail("solve '" + f[1] + "': no " + nvb[0] + " in the answer");
        continue;
      }
      std::string have = got->version.to_string() + "=" + got->build + " build_number=" +
                         std::to_string(got->build_number) + " fn=" + got->file_name +
                         " timestamp=" + std::to_string(got->timestamp.value_or(0));
      bool ok = nvb.size() < 2 || got->version.to_string() == nvb[1];
      ok = ok && (nvb.size() < 3 || got->build == nvb[2]);
      for (std::size_t i = 1; i < words.size(); ++i) {
        auto kv = split(words[i], '=');
        if (kv.size() != 2) continue;
        if (kv[0] == "build_number") ok = ok && std::to_string(got->build_number) == kv[1];
        if (kv[0] == "fn") ok = ok && got->file_name == kv[1];
        if (kv[0] == "timestamp") ok = ok && std::to_string(got->timestamp.value_or(0)) == kv[1];
      }
      if (!ok) fail("solve '" + f[1] + "': expected " + want + ", got " + nvb[0] + "=" + have);
    }
  }

  struct CorpusRepo {
    std::string file, channel, subdir;
  };

  fs::path file_;
  int line_ = 0;
  std::string test_ = "(no @test yet)";
  std::map<std::pair<std::string, std::string>, std::vector<RepoDataRecord>> records_;
  std::vector<std::string> channels_;
  std::vector<CorpusRepo> corpus_;
  std::vector<VirtualPackage> virtuals_;
  ChannelPriority priority_ = ChannelPriority::Strict;
};

std::vector<fs::path> data_files() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(data_dir()))
    if (e.path().extension() == ".txt") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

class Conformance : public ::testing::TestWithParam<fs::path> {};

TEST_P(Conformance, EveryFactHolds) {
  Checker c(GetParam());
  c.run();
  std::string all;
  for (const auto& f : c.failures) all += f + "\n";
  EXPECT_TRUE(c.failures.empty()) << c.failures.size() << " of " << c.facts << " facts fail:\n" << all;
  EXPECT_GT(c.facts, 0);
  if (c.skipped > 0)
    std::cout << "note: " << c.skipped << " solver facts over the shared corpus were skipped (corpus absent)\n";
}

INSTANTIATE_TEST_SUITE_P(Data, Conformance, ::testing::ValuesIn(data_files()),
                         [](const ::testing::TestParamInfo<fs::path>& p) {
                           std::string n = p.param.stem().string();
                           for (auto& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// The floor: at least 300 facts across the sources, each under an '@test' line.
TEST(ConformanceSuite, HoldsAtLeast300FactsEachNamingItsUpstreamTest) {
  int total = 0;
  for (const auto& f : data_files()) {
    Checker c(f);
    c.run();
    total += c.facts;
    std::string text = testing::slurp(f);
    EXPECT_NE(text.find("\n@test "), std::string::npos) << f;
  }
  EXPECT_GE(total, 300);
}

}  // namespace
}  // namespace envlock
