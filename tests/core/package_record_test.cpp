// PackageRecord / RepoDataRecord / PrefixRecord JSON, parse_archive_name and read_conda_meta,
// checked against real conda-meta records from ../shared/corpus/prefix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "envlock/match_spec.hpp"
#include "envlock/package_record.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;

// One splitter serves index.json, conda-meta (both readers) and MatchSpec's track_features.
TEST(SplitFeatures, SpacesOrCommasAsConda) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split_features("mkl blas"), (V{"mkl", "blas"}));
  EXPECT_EQ(split_features("a,b  c"), (V{"a", "b", "c"}));
  EXPECT_EQ(split_features(" mkl ,\tblas\n"), (V{"mkl", "blas"}));  // each name trimmed
  EXPECT_EQ(split_features("b a b"), (V{"b", "a", "b"}));           // order and repeats kept
  EXPECT_EQ(split_features(""), V{});
  EXPECT_EQ(split_features(" , ,"), V{});
  // MatchSpec keeps a set on top of it.
  EXPECT_EQ(MatchSpec::parse("numpy[track_features='b a,b']").value().track_features, (V{"a", "b"}));
}
using nlohmann::json;

const fs::path kPrefixCorpus = fs::path(ENVLOCK_SHARED_DIR) / "corpus" / "prefix";

json load(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// A scratch folder removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("envlock-core-test-" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(PackageRecord, ReadsRepodataEntryAndWritesItBack) {
  json j = json::parse(R"({
    "build": "py312h1234567_0", "build_number": 3, "depends": ["python >=3.12,<3.13.0a0", "libblas >=3.9.0"],
    "constrains": ["numpy-base <0a0"], "license": "BSD-3-Clause", "license_family": "BSD",
    "md5": "0123456789ABCDEF0123456789ABCDEF", "name": "NumPy", "sha256": "ab", "size": 7000000,
    "subdir": "linux-64", "timestamp": 1700000000, "track_features": "mkl blas", "version": "1.26.4",
    "noarch": null, "unknown_key": {"ignored": true}
  })");
  auto r = PackageRecord::from_json(j);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->name, "numpy");
  EXPECT_EQ(r->version.to_string(), "1.26.4");
  EXPECT_EQ(r->build, "py312h1234567_0");
  EXPECT_EQ(r->build_number, 3u);
  EXPECT_EQ(r->depends.size(), 2u);
  EXPECT_EQ(r->constrains, std::vector<std::string>{"numpy-base <0a0"});
  EXPECT_EQ(r->md5, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(*r->timestamp, 1700000000000u);  // seconds scaled to milliseconds
  EXPECT_EQ(r->track_features, (std::vector<std::string>{"mkl", "blas"}));
  EXPECT_EQ(r->noarch, NoArchKind::None);
  EXPECT_EQ(r->dist_name(), "numpy-1.26.4-py312h1234567_0");

  json out;
  r->to_json(out);
  EXPECT_EQ(out["timestamp"], 1700000000000u);
  EXPECT_EQ(out["track_features"], "mkl blas");
  EXPECT_FALSE(out.contains("noarch"));
  EXPECT_FALSE(out.contains("unknown_key"));
  auto back = PackageRecord::from_json(out);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, *r);
  // Keys are written sorted, so output is byte-stable.
  std::string dumped = out.dump();
  EXPECT_LT(dumped.find("\"build\""), dumped.find("\"version\""));
}

TEST(PackageRecord, NoarchSpellings) {
  auto with = [](json v) {
    json j = {{"name", "a"}, {"version", "1"}, {"build", "0"}, {"noarch", v}};
    return PackageRecord::from_json(j);
  };
  EXPECT_EQ(with("python")->noarch, NoArchKind::Python);
  EXPECT_EQ(with("generic")->noarch, NoArchKind::Generic);
  EXPECT_EQ(with(true)->noarch, NoArchKind::Generic);
  EXPECT_EQ(with(false)->noarch, NoArchKind::None);
  auto bad = with("perl");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("noarch"), std::string::npos);
}

TEST(PackageRecord, ErrorsNameThePackageAndKey) {
  auto missing = PackageRecord::from_json(json{{"name", "a"}, {"version", "1"}});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().where, "a-1");
  EXPECT_NE(missing.error().message.find("'build' is missing"), std::string::npos);

  auto mistyped = PackageRecord::from_json(json{{"name", "a"}, {"version", "1"}, {"build", "0"}, {"depends", "x"}});
  ASSERT_FALSE(mistyped);
  EXPECT_EQ(mistyped.error().where, "a-1-0");
  EXPECT_NE(mistyped.error().message.find("'depends' must be a list of strings"), std::string::npos);

  auto badversion = PackageRecord::from_json(json{{"name", "a"}, {"version", "1..0"}, {"build", "0"}});
  ASSERT_FALSE(badversion);
  EXPECT_NE(badversion.error().where.find("a-1..0-0"), std::string::npos);
  EXPECT_NE(badversion.error().message.find("empty version component"), std::string::npos);

  EXPECT_FALSE(PackageRecord::from_json(json::array()));
}

// conda/models/enums.py PathType: every spelling round-trips; paths.json may leave the type out.
TEST(PathEntryType, CondaSpellingsBothWays) {
  for (const char* name : {"hardlink", "softlink", "directory", "pyc_file", "unix_python_entry_point",
                           "windows_python_entry_point_script", "windows_python_entry_point_exe", "linked_package_record"}) {
    const auto type = path_type_from_string(name);
    ASSERT_TRUE(type) << name;
    EXPECT_EQ(to_string(*type), name);
  }
  EXPECT_EQ(path_type_from_string(""), PathEntry::Type::HardLink);
  EXPECT_FALSE(path_type_from_string("Hardlink"));
  EXPECT_EQ(placeholder_mode_from_string(""), PathEntry::PlaceholderMode::None);
  EXPECT_EQ(placeholder_mode_from_string("text"), PathEntry::PlaceholderMode::Text);
  EXPECT_EQ(placeholder_mode_from_string("binary"), PathEntry::PlaceholderMode::Binary);
  EXPECT_FALSE(placeholder_mode_from_string("TEXT"));
}

TEST(ArchiveName, Splits) {
  auto a = parse_archive_name("numpy-base-1.26.4-py312h1234567_0.conda");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->name, "numpy-base");
  EXPECT_EQ(a->version, "1.26.4");
  EXPECT_EQ(a->build, "py312h1234567_0");
  EXPECT_EQ(a->extension, ".conda");
  auto b = parse_archive_name("_r-mutex-1.0.1-anacondar_1.tar.bz2");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->name, "_r-mutex");
  EXPECT_EQ(b->extension, ".tar.bz2");
  EXPECT_FALSE(parse_archive_name("numpy-1.26.4.conda"));
  EXPECT_FALSE(parse_archive_name("numpy-1.26.4-0.zip"));
  EXPECT_FALSE(parse_archive_name("-1.0-0.conda"));
  EXPECT_FALSE(parse_archive_name("a--0.conda"));
  EXPECT_FALSE(parse_archive_name("dir/a-1-0.conda"));
}

TEST(PrefixRecord, RealCondaMetaRecord) {
  fs::path file = kPrefixCorpus / "conda__conda" /
                  "tests__data__env_metadata__envpy313tosx_whl__conda-meta__libffi-3.4.2-h3422bc3_5.json";
  if (!fs::exists(file)) GTEST_SKIP() << "corpus not available at " << file;
  auto r = PrefixRecord::from_json(load(file));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->name, "libffi");
  EXPECT_EQ(r->version.to_string(), "3.4.2");
  EXPECT_EQ(r->build, "h3422bc3_5");
  EXPECT_EQ(r->build_number, 5u);
  EXPECT_EQ(r->subdir, "osx-arm64");
  EXPECT_EQ(r->channel, "https://conda.anaconda.org/conda-forge/osx-arm64");
  EXPECT_EQ(r->file_name, "libffi-3.4.2-h3422bc3_5.tar.bz2");
  EXPECT_EQ(r->url, "https://conda.anaconda.org/conda-forge/osx-arm64/libffi-3.4.2-h3422bc3_5.tar.bz2");
  EXPECT_EQ(r->md5, "086914b672be056eb70fd4285b6783b6");
  EXPECT_EQ(r->sha256, "41b3d13efb775e340e4dba549ab5c029611ea6918703096b2eaa9c015c0750ca");
  EXPECT_EQ(*r->size, 39020u);
  EXPECT_EQ(*r->timestamp, 1636488587153u);
  EXPECT_EQ(r->license, "MIT");
  EXPECT_EQ(r->files.size(), 11u);
  EXPECT_EQ(r->files.front(), "include/ffi.h");
  ASSERT_EQ(r->paths.size(), 11u);
  EXPECT_EQ(r->paths[0].path, "include/ffi.h");
  EXPECT_EQ(r->paths[0].type, PathEntry::Type::HardLink);
  EXPECT_EQ(r->paths[0].sha256, "f85cf93bd8b40a0b48b76208fe0b0566186829c040959fd864977602716dcc8e");
  EXPECT_EQ(*r->paths[0].size_in_bytes, 14413u);
  EXPECT_EQ(r->link_type, "hardlink");
  EXPECT_EQ(r->requested_spec, "None");
  EXPECT_TRUE(MatchSpec::parse("conda-forge/osx-arm64::libffi 3.4.* h3422bc3_5")->matches(*r));

  json out;
  r->to_json(out);
  EXPECT_EQ(out["link"]["type"], 1);
  EXPECT_EQ(out["paths_data"]["paths_version"], 1);
  auto back = PrefixRecord::from_json(out);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, *r);
}

TEST(PrefixRecord, EveryCorpusCondaMetaRecordReadsAndRoundTrips) {
  if (!fs::exists(kPrefixCorpus)) GTEST_SKIP() << "corpus not available at " << kPrefixCorpus;
  std::size_t n = 0, relocated = 0;
  for (const auto& e : fs::recursive_directory_iterator(kPrefixCorpus)) {
    const std::string name = e.path().filename().string();
    if (name.find("conda-meta__") == std::string::npos || !name.ends_with(".json")) continue;
    auto r = PrefixRecord::from_json(load(e.path()));
    ASSERT_TRUE(r) << e.path() << ": " << r.error().to_string();
    EXPECT_FALSE(r->name.empty());
    EXPECT_EQ(r->files.size(), r->paths.size()) << e.path();
    for (const auto& p : r->paths) relocated += !p.prefix_placeholder.empty();
    json out;
    r->to_json(out);
    auto back = PrefixRecord::from_json(out);
    ASSERT_TRUE(back) << e.path();
    EXPECT_EQ(*back, *r) << e.path();
    ++n;
  }
  EXPECT_GE(n, 40u);
  EXPECT_GT(relocated, 0u);  // the corpus has text-relocated files (python, openssl, ...)
}

TEST(ReadCondaMeta, ReadsAPrefixSortedByName) {
  fs::path dir = kPrefixCorpus / "conda__conda";
  if (!fs::exists(dir)) GTEST_SKIP() << "corpus not available at " << dir;
  TempDir tmp;
  fs::create_directories(tmp.path / "conda-meta");
  std::size_t copied = 0;
  const std::string marker = "envpy313tosx_whl__conda-meta__";
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    auto at = name.find(marker);
    if (at == std::string::npos || !name.ends_with(".json")) continue;
    fs::copy_file(e.path(), tmp.path / "conda-meta" / name.substr(at + marker.size()));
    ++copied;
  }
  ASSERT_GT(copied, 5u);
  std::ofstream(tmp.path / "conda-meta" / "history") << "==> 2025-01-01 <==\n";  // not a record
  auto recs = read_conda_meta(tmp.path);
  ASSERT_TRUE(recs) << recs.error().to_string();
  ASSERT_EQ(recs->size(), copied);
  for (std::size_t i = 1; i < recs->size(); ++i) EXPECT_LE((*recs)[i - 1].name, (*recs)[i].name);
  bool has_python = std::any_of(recs->begin(), recs->end(), [](const PrefixRecord& r) {
    return r.name == "python" && r.version.to_string() == "3.13.2";
  });
  EXPECT_TRUE(has_python);

  std::ofstream(tmp.path / "conda-meta" / "broken-1-0.json") << "{\n  \"name\": \"broken\",\n  oops\n}\n";
  auto bad = read_conda_meta(tmp.path);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::Parse);
  EXPECT_NE(bad.error().where.find("broken-1-0.json:3:"), std::string::npos) << bad.error().where;

  auto none = read_conda_meta(tmp.path / "nope");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, ErrorKind::Io);
}

}  // namespace
}  // namespace envlock
