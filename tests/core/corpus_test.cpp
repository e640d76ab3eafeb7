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
#include "envlock/package_record.hpp"
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

// Repodata records that conda rejects too, by file and record: envlock must refuse them.
const std::map<std::string, std::string> kRejectedRecords = {
    {"test-data__channels__dummy-noarch-str-not-empty__linux-64__repodata.json: bar-1-xxx",
     "rattler's own negative test: noarch \"notempty-this-should-fail\" (conda's NoarchType "
     "accepts only python, generic or a boolean)"},
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
  std::vector<std::string> record_failures;  // "file: key: error" for records that did not read
  std::size_t records_round_tripped = 0;   // or, for kRejectedRecords, rejected as expected
  std::set<std::string> rejected_records;
};

Strings collect() {
  Strings s;
  for (const char* top : {"repodata", "packages"}) {
    if (!fs::exists(kCorpus / top)) continue;
    for (const auto& e : fs::recursive_directory_iterator(kCorpus / top)) {
      if (!e.is_regular_file() || e.path().extension() != ".json") continue;
      std::ifstream in(e.path(), std::ios::binary);
      json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
      // channeldata.json lists packages by name (no records); it is not repodata.
      if (j.is_discarded() || e.path().filename().string().find("channeldata") != std::string::npos) continue;
      auto recs = records_of(j);
      const bool named_repodata = e.path().filename().string().find("repodata") != std::string::npos;
      if (recs.empty() && !named_repodata) continue;
      ++s.files;
      // patch_instructions.json files hold partial records (only the patched keys).
      const bool partial = e.path().filename().string().find("patch_instructions") != std::string::npos;
      for (const json* r : recs) {
        ++s.records;
        // Every record reads as a RepoDataRecord and survives a JSON round trip.
        if (partial) {
          ++s.records_round_tripped;
        } else if (auto rec = RepoDataRecord::from_json(*r); !rec) {
          const std::string key = e.path().filename().string() + ": " + rec.error().where;
          if (kRejectedRecords.count(key)) {
            ++s.records_round_tripped;
            s.rejected_records.insert(key);
          } else {
            s.record_failures.push_back(key + ": " + rec.error().to_string());
          }
        } else {
          json out;
          rec->to_json(out);
          auto back = RepoDataRecord::from_json(out);
          if (back && *back == *rec) {
            ++s.records_round_tripped;
          } else {
            s.record_failures.push_back(e.path().filename().string() + ": " + rec->dist_name() +
                                        ": JSON round trip changed the record");
          }
        }
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

TEST(Corpus, EveryRepodataRecordReadsAndRoundTrips) {
  if (!fs::exists(kCorpus / "repodata")) GTEST_SKIP() << "corpus not available at " << kCorpus;
  const Strings& s = corpus();
  std::string failures;
  for (const auto& f : s.record_failures) failures += "  " + f + "\n";
  EXPECT_TRUE(s.record_failures.empty()) << s.record_failures.size() << " records failed:\n" << failures;
  EXPECT_EQ(s.records_round_tripped, s.records);
  for (const auto& [key, reason] : kRejectedRecords) {
    EXPECT_TRUE(s.rejected_records.count(key)) << "listed as rejected (" << reason << ") but read: " << key;
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
