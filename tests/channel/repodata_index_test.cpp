// RepodataIndex: records by name equal an independent (nlohmann) reading of every corpus
// repodata file, field by field; names never asked are never parsed; the index cache reloads the
// same records and is rebuilt when stale or damaged; malformed JSON keeps its file:line:col.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "channel/corpus_channel.hpp"
#include "envlock/repodata.hpp"
#include "envlock/repodata_index.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using testing::slurp;
using testing::spit;
using testing::TempDir;

RepodataIndexOptions opts(const std::string& source, const fs::path& cache = {}) {
  RepodataIndexOptions o;
  o.source = source;
  o.channel_url = "https://conda.anaconda.org/conda-forge";
  o.subdir = "linux-64";
  o.cache_dir = cache;
  return o;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string stem(const std::string& fn) {
  if (fn.ends_with(".conda")) return fn.substr(0, fn.size() - 6);
  if (fn.ends_with(".tar.bz2")) return fn.substr(0, fn.size() - 8);
  return fn;
}

std::string file_name_package(const std::string& fn) {
  std::string s = stem(fn);
  auto last = s.rfind('-');
  if (last == std::string::npos || last == 0) return s;
  auto second = s.rfind('-', last - 1);
  return second == std::string::npos ? s : s.substr(0, second);
}

std::vector<std::string> strings(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key) && j[key].is_array())
    for (const auto& e : j[key])
      if (e.is_string()) out.push_back(e.get<std::string>());
  return out;
}

std::string str(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

/// The record the documented rules expect, read with nlohmann (not simdjson); nullopt when the
/// record is to be skipped.
std::optional<RepoDataRecord> expected_record(const std::string& fn, const nlohmann::json& j, const std::string& base) {
  RepoDataRecord r;
  r.name = lower(str(j, "name"));
  auto v = Version::parse(str(j, "version"));
  if (r.name.empty() || !v || r.name != lower(file_name_package(fn))) return std::nullopt;
  r.version = *v;
  r.build = str(j, "build");
  if (j.contains("build_number") && j["build_number"].is_number()) r.build_number = j["build_number"].get<std::uint64_t>();
  r.subdir = "linux-64";
  r.depends = strings(j, "depends");
  r.constrains = strings(j, "constrains");
  if (j.contains("track_features") && j["track_features"].is_string()) {
    std::string cur;
    for (char c : j["track_features"].get<std::string>() + " ") {
      if (c == ' ' || c == ',' || c == '\t') {
        if (!cur.empty()) r.track_features.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
  } else {
    r.track_features = strings(j, "track_features");
  }
  r.features = str(j, "features");
  r.license = str(j, "license");
  r.license_family = str(j, "license_family");
  r.md5 = str(j, "md5");
  r.sha256 = str(j, "sha256");
  if (j.contains("size") && j["size"].is_number()) r.size = j["size"].get<std::uint64_t>();
  if (j.contains("timestamp") && j["timestamp"].is_number()) {
    auto ts = j["timestamp"].get<std::uint64_t>();
    r.timestamp = ts > 253402300799ULL ? ts : ts * 1000;
  }
  if (j.contains("noarch")) {
    if (j["noarch"] == "python") r.noarch = NoArchKind::Python;
    else if (j["noarch"] == "generic" || j["noarch"] == true) r.noarch = NoArchKind::Generic;
  }
  r.arch = str(j, "arch");
  r.platform = str(j, "platform");
  r.python_site_packages_path = str(j, "python_site_packages_path");
  r.file_name = fn;
  r.url = base + "/" + fn;
  r.channel = "https://conda.anaconda.org/conda-forge";
  return r;
}

std::vector<fs::path> corpus_repodata_files() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(testing::corpus_repodata_dir())) {
    if (!e.is_regular_file()) continue;
    std::string text = slurp(e.path());
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    if (!j.contains("packages") && !j.contains("packages.conda")) continue;
    bool objects = true;
    for (const char* s : {"packages", "packages.conda"})
      if (j.contains(s)) {
        if (!j[s].is_object()) objects = false;
        else
          for (const auto& [k, v] : j[s].items()) objects = objects && v.is_object();
      }
    if (objects) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(RepodataIndex, EveryRecordOfEveryCorpusFileEqualsAnIndependentReading) {
  ENVLOCK_REQUIRE_CORPUS();
  auto files = corpus_repodata_files();
  ASSERT_GE(files.size(), 10u);
  std::size_t total = 0;
  for (const auto& path : files) {
    SCOPED_TRACE(path.string());
    auto j = nlohmann::json::parse(slurp(path));
    if (j.contains("info") && j["info"].contains("base_url")) continue;  // CEP-15: tested below
    std::map<std::string, RepoDataRecord> expected;  // file name -> record
    std::set<std::string> stems;
    for (const char* section : {"packages.conda", "packages"}) {
      if (!j.contains(section)) continue;
      for (const auto& [fn, rec] : j[section].items()) {
        auto r = expected_record(fn, rec, "https://conda.anaconda.org/conda-forge/linux-64");
        if (!r || !stems.insert(stem(fn)).second) continue;
        expected.emplace(fn, *r);
      }
    }
    auto index = RepodataIndex::open_file(path, opts(path.string()));
    ASSERT_TRUE(index.ok()) << index.error().to_string();
    const RepodataIndex& ix = **index;
    EXPECT_TRUE(std::is_sorted(ix.names().begin(), ix.names().end()));
    std::size_t seen = 0;
    for (auto name : ix.names()) {
      for (const auto& r : ix.records(name)) {
        auto it = expected.find(r.file_name);
        ASSERT_NE(it, expected.end()) << r.file_name;
        EXPECT_EQ(r, it->second) << r.file_name;
        EXPECT_EQ(r.name, name);
        ++seen;
      }
    }
    EXPECT_EQ(seen, expected.size());
    total += seen;
    // parse_repodata reads the same records (file order: packages.conda first).
    auto eager = parse_repodata(slurp(path), path.string(), "https://conda.anaconda.org/conda-forge", "linux-64");
    if (eager.ok()) {
      EXPECT_EQ(eager->records.size(), expected.size());
      for (const auto& r : eager->records) EXPECT_EQ(r, expected.at(r.file_name));
    }
  }
  EXPECT_GT(total, 8000u);
}

TEST(RepodataIndex, NamesNeverAskedForAreNeverParsed) {
  ENVLOCK_REQUIRE_CORPUS();
  fs::path path = testing::corpus_repodata_dir() / "jaimergp__conda-subchannel-demo/linux-64__repodata.json";
  auto index = RepodataIndex::open_file(path, opts("cf/linux-64/repodata.json"));
  ASSERT_TRUE(index.ok()) << index.error().to_string();
  const RepodataIndex& ix = **index;
  EXPECT_EQ(ix.entry_count(), 2709u);
  EXPECT_GT(ix.names().size(), 50u);
  EXPECT_EQ(ix.parsed_names(), 0u);
  EXPECT_EQ(ix.parsed_records(), 0u);
  const auto& python = ix.records("python");
  ASSERT_FALSE(python.empty());
  EXPECT_EQ(ix.parsed_names(), 1u);
  EXPECT_EQ(ix.parsed_records(), python.size());
  // Asking again parses nothing and returns the same records at the same addresses.
  const RepoDataRecord* first = python.data();
  EXPECT_EQ(ix.records("python").data(), first);
  EXPECT_TRUE(ix.records("no-such-package").empty());
  EXPECT_EQ(ix.parsed_names(), 1u);
  EXPECT_TRUE(ix.contains("_libgcc_mutex"));
  EXPECT_FALSE(ix.contains("no-such-package"));
  // The content hash is the sha256 of the file, computed only on request.
  auto eager = parse_repodata(slurp(path), "x", "https://conda.anaconda.org/conda-forge", "linux-64");
  ASSERT_TRUE(eager.ok());
  EXPECT_EQ(ix.content_hash(), eager->content_hash);
}

TEST(RepodataIndex, CacheReloadGivesTheSameRecords) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("rdidx");
  fs::path json = tmp.path() / "repodata.json";
  spit(json, slurp(testing::corpus_repodata_dir() / "conda__rattler/test-data__channels__pytorch__linux-64__repodata.json"));
  fs::path cache = tmp.path() / "cache";
  auto first = RepodataIndex::open_file(json, opts("p.json", cache));
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  EXPECT_FALSE((*first)->from_cache());
  ASSERT_EQ(std::distance(fs::directory_iterator(cache), fs::directory_iterator()), 1);
  auto second = RepodataIndex::open_file(json, opts("p.json", cache));
  ASSERT_TRUE(second.ok()) << second.error().to_string();
  EXPECT_TRUE((*second)->from_cache());
  EXPECT_FALSE((*second)->scanned_fast());
  EXPECT_EQ((*second)->parsed_names(), 0u);
  ASSERT_EQ((*first)->names(), (*second)->names());
  EXPECT_EQ((*first)->entry_count(), (*second)->entry_count());
  std::size_t n = 0;
  for (auto name : (*first)->names()) {
    EXPECT_EQ((*first)->records(name), (*second)->records(name)) << name;
    n += (*second)->records(name).size();
  }
  EXPECT_EQ(n, 2181u);
}

TEST(RepodataIndex, StaleOrDamagedCacheIsRebuilt) {
  TempDir tmp("rdidx");
  fs::path json = tmp.path() / "repodata.json";
  fs::path cache = tmp.path() / "cache";
  spit(json, R"({"packages.conda": {"a-1-0.conda": {"name": "a", "version": "1", "build": "0"},
                                   "b-2-0.conda": {"name": "b", "version": "2", "build": "0"}}})");
  ASSERT_TRUE(RepodataIndex::open_file(json, opts("r.json", cache)).ok());
  ASSERT_TRUE((*RepodataIndex::open_file(json, opts("r.json", cache)))->from_cache());
  fs::path idx = fs::directory_iterator(cache)->path();

  // Stale: the JSON changes (size and mtime differ) -> rebuilt from the new text.
  spit(json, R"({"packages.conda": {"b-3-0.conda": {"name": "b", "version": "3", "build": "0"}}})");
  auto stale = RepodataIndex::open_file(json, opts("r.json", cache));
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE((*stale)->from_cache());
  EXPECT_EQ((*stale)->names(), std::vector<std::string_view>{"b"});
  ASSERT_EQ((*stale)->records("b").size(), 1u);
  EXPECT_EQ((*stale)->records("b")[0].version.to_string(), "3");
  ASSERT_TRUE((*RepodataIndex::open_file(json, opts("r.json", cache)))->from_cache());

  // Damaged: a flipped byte in the body, then a truncated file, then garbage.
  std::string bytes = slurp(idx);
  bytes[bytes.size() - 3] ^= 0x55;
  spit(idx, bytes);
  auto damaged = RepodataIndex::open_file(json, opts("r.json", cache));
  ASSERT_TRUE(damaged.ok());
  EXPECT_FALSE((*damaged)->from_cache());
  EXPECT_EQ((*damaged)->records("b").size(), 1u);
  spit(idx, slurp(idx).substr(0, 40));
  auto truncated = RepodataIndex::open_file(json, opts("r.json", cache));
  ASSERT_TRUE(truncated.ok());
  EXPECT_FALSE((*truncated)->from_cache());
  spit(idx, "not an index");
  auto garbage = RepodataIndex::open_file(json, opts("r.json", cache));
  ASSERT_TRUE(garbage.ok());
  EXPECT_FALSE((*garbage)->from_cache());
  EXPECT_EQ((*garbage)->records("b")[0].file_name, "b-3-0.conda");
  // ...and the rebuilt file is good again.
  EXPECT_TRUE((*RepodataIndex::open_file(json, opts("r.json", cache)))->from_cache());
}

// A new-user attack (session 9): `"depends": "bar >=2"` was locked as no dependency at all and
// `"build_number": "7"` as build number 0, silently. Such a record is skipped with a warning
// naming the field, as a record that is not JSON is (rattler refuses the whole channel).
TEST(RepodataIndex, AFieldOfTheWrongTypeSkipsItsRecordNamingTheField) {
  struct Case {
    const char* record;
    const char* why;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"name": "f", "version": "1", "build": "0", "depends": "bar >=2"})", "'depends' is not a list of strings"},
           {R"({"name": "f", "version": "1", "build": "0", "depends": ["bar", 2]})",
            "'depends' holds a value that is not a string"},
           {R"({"name": "f", "version": "1", "build": "0", "constrains": {"a": 1}})", "'constrains' is not a list of strings"},
           {R"({"name": "f", "version": "1", "build": "0", "build_number": "7"})", "'build_number' is not a non-negative number"},
           {R"({"name": "f", "version": "1", "build": "0", "timestamp": -5})", "'timestamp' is not a non-negative number"},
           // A new-user attack (issue 15, #10): truncated to 1, or accepted silently.
           {R"({"name": "f", "version": "1", "build": "0", "build_number": 1.5})", "'build_number' is not a whole number"},
           {R"({"name": "f", "version": "1", "build": "0", "license": {"a": 1}})", "'license' is not a string"},
           {R"({"name": "f", "version": "1", "build": "0", "noarch": 5})", "'noarch' is not a string"},
           {R"({"name": "f", "version": "1", "build": 0})", "'build' is not a string"},
           {R"({"name": "f", "version": 1.5, "build": "0"})", "'version' is not a string"}}) {
    const std::string json = std::string("{\"packages\": {\"f-1-0.tar.bz2\": ") + c.record +
                             ", \"f-2-0.tar.bz2\": {\"name\": \"f\", \"version\": \"2\", \"build\": \"0\", "
                             "\"depends\": [\"bar\"], \"build_number\": 3}}}";
    auto index = RepodataIndex::from_text(json, opts("chan/linux-64/repodata.json"));
    ASSERT_TRUE(index.ok()) << index.error().to_string();
    const auto& records = (*index)->records("f");
    ASSERT_EQ(records.size(), 1u) << c.record;
    EXPECT_EQ(records[0].file_name, "f-2-0.tar.bz2");
    EXPECT_EQ(records[0].build_number, 3u);
    EXPECT_EQ(records[0].depends, std::vector<std::string>{"bar"});
    EXPECT_EQ((*index)->warnings(), std::vector<std::string>{"chan/linux-64/repodata.json: packages[\"f-1-0.tar.bz2\"]: "
                                                             "skipped, " + std::string(c.why)})
        << c.record;
  }
  // null stands for an absent field, as in conda's repodata.
  auto nulls = RepodataIndex::from_text(
      R"({"packages": {"f-1-0.tar.bz2": {"name": "f", "version": "1", "build": "0", "depends": null, "timestamp": null}}})",
      opts("chan/linux-64/repodata.json"));
  ASSERT_TRUE(nulls.ok());
  EXPECT_EQ((*nulls)->records("f").size(), 1u);
}

TEST(RepodataIndex, ProblemsOfOneRecordAreWarningsUntilParseRepodataMakesThemErrors) {
  std::string json =
      "{\"packages\": {\n  \"a-1-0.conda\": {\"name\": \"a\",, \"version\": \"1\"},\n"
      "  \"b-1-0.conda\": {\"name\": \"c\", \"version\": \"1\"},\n"
      "  \"d-1-0.conda\": {\"version\": \"1\"},\n"
      "  \"e-1-0.conda\": {\"name\": \"e\", \"version\": \"1\", \"build\": \"0\"}\n}}";
  auto index = RepodataIndex::from_text(json, opts("chan/linux-64/repodata.json"));
  ASSERT_TRUE(index.ok()) << index.error().to_string();
  const RepodataIndex& ix = **index;
  EXPECT_EQ(ix.names(), (std::vector<std::string_view>{"a", "b", "d", "e"}));
  EXPECT_EQ(ix.records("e").size(), 1u);
  EXPECT_TRUE(ix.warnings().empty());  // nothing else parsed yet
  EXPECT_TRUE(ix.records("a").empty());
  EXPECT_TRUE(ix.records("b").empty());
  EXPECT_TRUE(ix.records("d").empty());
  auto w = ix.warnings();
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NE(w[0].find("chan/linux-64/repodata.json:2:31"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("its name 'c' disagrees with the file name"), std::string::npos) << w[1];
  EXPECT_NE(w[2].find("lacks 'name' or 'version'"), std::string::npos) << w[2];
  ASSERT_TRUE(ix.first_error().has_value());
  EXPECT_EQ(ix.first_error()->where, "chan/linux-64/repodata.json:2:31");

  // parse_repodata: the same text is an error at the same position as ever.
  auto eager = parse_repodata(json, "chan/linux-64/repodata.json", "https://example.org/chan", "linux-64");
  ASSERT_FALSE(eager.ok());
  EXPECT_EQ(eager.error().where, "chan/linux-64/repodata.json:2:31");
  EXPECT_NE(eager.error().detail.find("^"), std::string::npos);

  // Broken structure is found by the index pass itself.
  auto broken = RepodataIndex::from_text("{\"packages\": {\n \"a-1-0.conda\": {\"name\": \"a\"", opts("r.json"));
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().kind, ErrorKind::Parse);
  EXPECT_TRUE(broken.error().where.starts_with("r.json:")) << broken.error().where;
  auto not_object = RepodataIndex::from_text(R"({"packages": {"a-1-0.conda": [1]}})", opts("r.json"));
  ASSERT_FALSE(not_object.ok());
  EXPECT_NE(not_object.error().where.find("a-1-0.conda"), std::string::npos);
}

TEST(RepodataIndex, UnusualFileNamesAndBaseUrl) {
  auto index = RepodataIndex::from_text(
      R"({"info": {"base_url": "https://cdn.example.org/pkgs/"},
          "packages": {"Py-Lib-1.0-0.tar.bz2": {"name": "py-lib", "version": "1.0", "build": "0"},
                       "x\u002dy-1-0.tar.bz2": {"name": "x-y", "version": "1", "build": "0"},
                       "x-y-1-0.tar.bz2": {"name": "x-y", "version": "1", "build": "0"}},
          "packages.conda": {"x-y-1-0.conda": {"name": "x-y", "version": "1", "build": "0"}}})",
      opts("t.json"));
  ASSERT_TRUE(index.ok()) << index.error().to_string();
  EXPECT_EQ((*index)->names(), (std::vector<std::string_view>{"py-lib", "x-y"}));
  ASSERT_EQ((*index)->records("py-lib").size(), 1u);
  EXPECT_EQ((*index)->records("py-lib")[0].url, "https://cdn.example.org/pkgs/Py-Lib-1.0-0.tar.bz2");
  ASSERT_EQ((*index)->records("x-y").size(), 1u);  // the .conda wins; the escaped key is the same stem
  EXPECT_EQ((*index)->records("x-y")[0].file_name, "x-y-1-0.conda");
}

/// What open_file makes of `json` with the dedicated scanner or with simdjson's generic pass:
/// the error, or the index cache file it writes (every span, name and the base URL, as bytes).
struct Indexed {
  bool ok = false;
  bool fast = false;
  std::string error;
  std::string idx;
};

Indexed index_with(const fs::path& json, bool generic, const fs::path& cache) {
  fs::remove_all(cache);
  auto o = opts("t.json", cache);
  o.generic_scan = generic;
  auto ix = RepodataIndex::open_file(json, o);
  Indexed out;
  if (!ix) {
    out.error = ix.error().to_string();
    return out;
  }
  out.ok = true;
  out.fast = (*ix)->scanned_fast();
  EXPECT_FALSE(generic && out.fast);
  out.idx = slurp(fs::directory_iterator(cache)->path());
  return out;
}

/// The scanner and simdjson's pass agree on `text` (same index, or same error); returns whether
/// the scanner read it (rather than declining).
bool scanner_agrees(const std::string& text, const fs::path& dir) {
  fs::path json = dir / "repodata.json";
  spit(json, text);
  Indexed fast = index_with(json, false, dir / "fast");
  Indexed generic = index_with(json, true, dir / "generic");
  EXPECT_EQ(fast.ok, generic.ok);
  EXPECT_EQ(fast.error, generic.error);
  EXPECT_TRUE(fast.idx == generic.idx) << "the index caches differ";
  return fast.fast;
}

TEST(RepodataScanner, EveryCorpusFileIndexesAsSimdjsonsPassDoes) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("rdscan");
  std::size_t files = 0, fast = 0;
  for (const auto& e : fs::recursive_directory_iterator(testing::corpus_repodata_dir())) {
    if (!e.is_regular_file() || e.path().extension() != ".json") continue;
    SCOPED_TRACE(e.path().string());
    ++files;
    if (scanner_agrees(slurp(e.path()), tmp.path())) ++fast;
  }
  EXPECT_GE(files, 10u);
  EXPECT_GE(fast, 10u);  // the scanner reads real repodata itself, it does not just decline
}

TEST(RepodataScanner, UnusualButValidShapesAreReadAsSimdjsonReadsThem) {
  TempDir tmp("rdscan");
  const std::string rec = R"({"name": "a", "version": "1", "build": "0"})";
  const std::vector<std::string> read = {
      "{}",
      R"({"packages": {}, "packages.conda": {}})",
      // minified, CRLF and tabs
      R"({"packages":{"a-1-0.tar.bz2":{"name":"a","version":"1","build":"0","depends":["b >=1"]}}})",
      "{\r\n\t\"packages\" :\r\n\t{ \"a-1-0.tar.bz2\" :\t" + rec + "\r\n ,\r\n \"a-2-0.tar.bz2\": " + rec + " \r\n}\r\n}\r\n",
      // brackets, escaped quotes and backslashes inside strings; nested objects and arrays
      R"({"packages": {"a-1-0.conda": {"name": "a", "version": "1", "license": "{x} [y] \"q\" \\\\ \\\" }]",
          "extra": {"k": [1, {"c": "}"}, [[]], "]"], "e": {}}, "depends": []}}})",
      // escaped and capitalised file names, unicode
      R"({"packages": {"x\u002dy-1-0.tar.bz2": {"name": "x-y", "version": "1"},
                       "Py-Lib-1.0-0.tar.bz2": {"name": "py-lib", "version": "1.0", "summary": "√ © ☃ 𝄞"},
                       "\u00e9t\u00e9-1-0.tar.bz2": {"name": "été", "version": "1"}}})",
      // info: base_url escaped, repeated, not a string; other top-level values of every kind
      R"({"info": {"subdir": "linux-64", "base_url": "https:\/\/cdn.example.org\/a", "base_url": "../b/"},
          "repodata_version": 2, "removed": ["a-1-0.tar.bz2", "{", "]"], "signatures": {"a": {"b": [true]}},
          "n": null, "t": true, "f": false, "x": -1.5e+3, "s": "}",
          "packages": {"a-1-0.tar.bz2": )" + rec + "}}",
      R"({"info": {"base_url": 7}, "packages": {"a-1-0.tar.bz2": )" + rec + "}}",
      R"({"info": [], "packages": [], "packages.conda": "x"})",
      // the same section twice; records the lazy parse will reject (never looked at now)
      R"({"packages": {"a-1-0.tar.bz2": )" + rec + R"(}, "packages": {"b-1-0.tar.bz2": {"name": "b",, 1}},
          "packages.conda": {"c-1-0.conda": {"version": "1"}, "d-1-0.conda": {"name": "e", "version": "1"}}})",
  };
  for (const auto& text : read) {
    SCOPED_TRACE(text);
    EXPECT_TRUE(scanner_agrees(text, tmp.path()));
  }
  // Backslash runs of every length ending at every offset of a 64-byte block (the scanner's
  // carries between blocks), inside strings of records and of keys.
  for (int shift = 0; shift < 70; ++shift) {
    std::string text = R"({"packages": {)";
    for (int run = 0; run < 6; ++run) {
      if (run > 0) text += ",\n";
      text += "\"k" + std::string(static_cast<std::size_t>(shift), 'p') + std::string(static_cast<std::size_t>(run * 2), '\\') +
              "-1-" + std::to_string(run) + ".conda\": {\"name\": \"k\", \"version\": \"1\", \"s\": \"" +
              std::string(static_cast<std::size_t>(shift), 'z') + std::string(static_cast<std::size_t>(run * 2), '\\') +
              "\\\"}\", \"t\": \"" + std::string(static_cast<std::size_t>(run * 2 + 1), '\\') + "\"\"}";
    }
    text += "}}";
    SCOPED_TRACE(text);
    EXPECT_TRUE(scanner_agrees(text, tmp.path()));
  }
  // What the scanner leaves to simdjson: the same index or the same error either way.
  const std::vector<std::string> declined = {
      "",
      "[1]",
      R"({"packages": {"a-1-0.conda": [1]}})",
      R"({"packages": {"a-1-0.conda": {"name": "a"})",
      R"({"packages": {"a-1-0.conda": {"name": "a\)" + std::string("\x01") + R"("}}})",
      R"({"packages": {"a-1-0.conda": {"name": "a)" + std::string("\xff\xfe") + R"("}}})",
      R"({"p\u0061ckages": {"a-1-0.conda": )" + rec + "}}",
      R"({"packages": {"a-1-0.conda": )" + rec + "}} trailing",
      R"({"packages": {"a-1-0.conda": )" + rec + " \"b-1-0.conda\": " + rec + "}}",
      R"({"info": {"base_url": "x",}, "packages": {}})",
      R"({"x": tru e})",
      "{\"packages\": {\"a\\\x01-1-0.conda\": " + rec + "}}",
      R"({"packages": {"a-1-0.conda": {"deep": )" + std::string(1100, '[') + std::string(1100, ']') + "}}}",
  };
  for (const auto& text : declined) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(scanner_agrees(text, tmp.path()));
  }
}

TEST(LoadLazy, LocalChannelLoadsAnIndexAndReloadsItsCache) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("rdidx");
  testing::make_conda_forge_subset(tmp.path() / "cf", {"linux-64"});
  auto ch = resolve_channel((tmp.path() / "cf").string(), tmp.path());
  ASSERT_TRUE(ch.ok());
  RepodataOptions o;
  o.lazy = true;
  o.cache_dir = tmp.path() / "cache";
  auto first = load_repodata({*ch}, {"linux-64"}, o);
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  ASSERT_EQ(first->size(), 2u);
  const SubdirRepodata& linux = (*first)[0];
  ASSERT_TRUE(linux.index);
  EXPECT_TRUE(linux.records.empty());
  EXPECT_FALSE(linux.index->from_cache());
  auto second = load_repodata({*ch}, {"linux-64"}, o);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE((*second)[0].index->from_cache());
  auto eager = load_repodata({*ch}, {"linux-64"});
  ASSERT_TRUE(eager.ok());
  std::size_t n = 0;
  for (auto name : (*second)[0].index->names()) n += (*second)[0].index->records(name).size();
  EXPECT_EQ(n, (*eager)[0].records.size());
  EXPECT_EQ((*second)[0].index->content_hash(), (*eager)[0].content_hash);
}

}  // namespace
}  // namespace envlock
