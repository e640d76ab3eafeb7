// Every version and every depends/constrains spec written by real packagers in the repodata of
// ../shared/corpus (repodata/ and packages/: standard repodata.json files and the non-standard
// {file name: record} index files) must parse, and re-parse from to_string() to an equal value —
// except the strings listed below, which conda itself rejects.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "envlock/match_spec.hpp"
#include "envlock/version.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kCorpus = fs::path(ENVLOCK_SHARED_DIR) / "corpus";

// Spec strings in the corpus that conda rejects, and why. envlock must reject them too.
const std::map<std::string, std::string> kCondaRejects = {
    {"linux-dependency[when=\"__linux\"]",
     "rattler's conditional dependency; conda: \"Cannot match on field(s): when\""},
    {"osx-dependency[when=\"__osx\"]", "rattler's conditional dependency; conda: \"Cannot match on field(s): when\""},
    {"win-dependency[when=\"__win\"]", "rattler's conditional dependency; conda: \"Cannot match on field(s): when\""},
    {"package[when=\"side-dependency=0.2\"]",
     "rattler's conditional dependency; conda: \"Cannot match on field(s): when\""},
};

// The records of one file: `packages` + `packages.conda` of a repodata.json, or every value of
// a {file name: record} index; empty for other JSON files.
std::vector<const json*> records_of(const json& j) {
  std::vector<const json*> out;
  if (!j.is_object()) return out;
  if (j.contains("packages") || j.contains("packages.conda")) {
    for (const char* key : {"packages", "packages.conda"}) {
      auto it = j.find(key);
      if (it == j.end() || !it->is_object()) continue;
      for (const auto& [fn, rec] : it->items()) out.push_back(&rec);
    }
    return out;
  }
  for (const auto& [fn, rec] : j.items()) {
    if (!rec.is_object() || !rec.contains("version") || !rec.contains("build")) return {};
    out.push_back(&rec);
  }
  return out;
}

struct Strings {
  std::set<std::string> versions, specs;
  std::size_t files = 0, records = 0;
};

Strings collect() {
  Strings s;
  for (const char* top : {"repodata", "packages"}) {
    if (!fs::exists(kCorpus / top)) continue;
    for (const auto& e : fs::recursive_directory_iterator(kCorpus / top)) {
      if (!e.is_regular_file() || e.path().extension() != ".json") continue;
      std::ifstream in(e.path(), std::ios::binary);
      json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) continue;
      auto recs = records_of(j);
      const bool named_repodata = e.path().filename().string().find("repodata") != std::string::npos;
      if (recs.empty() && !named_repodata) continue;
      ++s.files;
      for (const json* r : recs) {
        ++s.records;
        if (auto v = r->find("version"); v != r->end() && v->is_string()) s.versions.insert(v->get<std::string>());
        for (const char* key : {"depends", "constrains"}) {
          auto it = r->find(key);
          if (it == r->end() || !it->is_array()) continue;
          for (const auto& d : *it) {
            if (d.is_string()) s.specs.insert(d.get<std::string>());
          }
        }
      }
    }
  }
  return s;
}

const Strings& corpus() {
  static const Strings s = collect();
  return s;
}

TEST(Corpus, EveryVersionParsesAndRoundTrips) {
  if (!fs::exists(kCorpus / "repodata")) GTEST_SKIP() << "corpus not available at " << kCorpus;
  const Strings& s = corpus();
  EXPECT_GE(s.files, 100u);
  EXPECT_GE(s.records, 30000u);
  EXPECT_GE(s.versions.size(), 2000u);
  for (const auto& text : s.versions) {
    auto v = Version::parse(text);
    ASSERT_TRUE(v) << v.error().to_string();
    EXPECT_EQ(v->to_string(), text);
    auto back = Version::parse(v->to_string());
    ASSERT_TRUE(back) << text;
    EXPECT_EQ(*back, *v) << text;
    EXPECT_EQ(back->compare(*v), std::strong_ordering::equal) << text;
  }
}

TEST(Corpus, EverySpecParsesAndRoundTripsExceptWhatCondaRejects) {
  if (!fs::exists(kCorpus / "repodata")) GTEST_SKIP() << "corpus not available at " << kCorpus;
  const Strings& s = corpus();
  EXPECT_GE(s.specs.size(), 5000u);
  std::set<std::string> rejected;
  for (const auto& text : s.specs) {
    auto m = MatchSpec::parse(text);
    if (!m) {
      rejected.insert(text);
      EXPECT_TRUE(kCondaRejects.count(text)) << "conda accepts this spec, envlock does not:\n"
                                             << m.error().to_string();
      continue;
    }
    const std::string canonical = m->to_string();
    auto back = MatchSpec::parse(canonical);
    ASSERT_TRUE(back) << text << " -> " << canonical << ": " << back.error().to_string();
    EXPECT_EQ(*back, *m) << text << " -> " << canonical;
    EXPECT_EQ(back->to_string(), canonical) << text;
    if (m->version) {
      auto vs = VersionSpec::parse(m->version->to_string());
      ASSERT_TRUE(vs) << text;
      EXPECT_EQ(*vs, *m->version) << text;
    }
  }
  // Every listed exception is still in the corpus and still rejected: the list stays honest.
  for (const auto& [text, reason] : kCondaRejects) {
    EXPECT_TRUE(rejected.count(text)) << "listed as rejected by conda (" << reason << ") but "
                                      << (s.specs.count(text) ? "envlock accepts it: " : "not in the corpus: ") << text;
  }
}

}  // namespace
}  // namespace envlock
