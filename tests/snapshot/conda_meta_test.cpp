// PrefixRecordReader (simdjson) against the reference reader (nlohmann + PrefixRecord::from_json):
// every real conda-meta record of the corpus, and variants that exercise each key's odd values.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "envlock/snapshot.hpp"
#include "snapshot/fake_host.hpp"

namespace envlock {
namespace {

using testing::corpus_dir;
using testing::slurp;
namespace fs = std::filesystem;

// The reference: what capture reads when the fast reader is not sure.
std::optional<PrefixRecord> reference(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto r = PrefixRecord::from_json(j);
  if (!r) return std::nullopt;
  return *r;
}

std::vector<fs::path> corpus_records() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(corpus_dir() / "prefix")) {
    const std::string n = e.path().filename().string();
    if (e.is_regular_file() && n.ends_with(".json") && n.find("conda-meta") != std::string::npos) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(PrefixRecordReader, EveryCorpusRecordReadsAsTheReferenceReadsIt) {
  SKIP_WITHOUT_CORPUS();
  const auto files = corpus_records();
  ASSERT_GE(files.size(), 60u);
  PrefixRecordReader reader;
  std::size_t with_paths = 0;
  for (const auto& f : files) {
    const std::string text = slurp(f);
    const auto ref = reference(text);
    ASSERT_TRUE(ref.has_value()) << f;
    const auto fast = reader.read(text);
    ASSERT_TRUE(fast.has_value()) << f << ": a real record must not need the fallback";
    EXPECT_EQ(*fast, *ref) << f;
    // In place, with padding, as capture reads it.
    std::string padded = text;
    padded.resize(text.size() + PrefixRecordReader::padding());
    const auto in_place = reader.read(padded.data(), text.size(), padded.size());
    ASSERT_TRUE(in_place.has_value()) << f;
    EXPECT_EQ(*in_place, *ref) << f;
    if (!ref->paths.empty()) ++with_paths;
  }
  EXPECT_GE(with_paths, 30u);
}

// A variant either reads exactly as the reference does, or is left to the reference (nullopt);
// `expect_fast` says which the reader should do.
void check_variant(PrefixRecordReader& reader, const std::string& text, bool expect_fast, const std::string& what) {
  const auto ref = reference(text);
  const auto fast = reader.read(text);
  EXPECT_EQ(fast.has_value(), expect_fast) << what;
  if (fast) {
    ASSERT_TRUE(ref.has_value()) << what << ": the fast reader accepted what the reference refuses";
    EXPECT_EQ(*fast, *ref) << what;
  }
}

TEST(PrefixRecordReader, OddValuesReadAsTheReferenceOrFallBack) {
  SKIP_WITHOUT_CORPUS();
  const auto files = corpus_records();
  ASSERT_FALSE(files.empty());
  // A real record with paths_data.
  nlohmann::json base;
  for (const auto& f : files) {
    base = nlohmann::json::parse(slurp(f));
    if (base.contains("paths_data") && !base["paths_data"]["paths"].empty()) break;
  }
  ASSERT_TRUE(base.contains("paths_data"));
  PrefixRecordReader reader;
  auto variant = [&](const std::string& what, bool expect_fast, auto&& edit) {
    nlohmann::json j = base;
    edit(j);
    check_variant(reader, j.dump(), expect_fast, what);
  };
  variant("upper-case name and md5", true, [](auto& j) { j["name"] = "PyYAML"; j["md5"] = "ABCDEF"; });
  variant("timestamp in seconds", true, [](auto& j) { j["timestamp"] = 1700000000; });
  variant("timestamp in ms", true, [](auto& j) { j["timestamp"] = 1700000000123ULL; });
  variant("noarch true", true, [](auto& j) { j["noarch"] = true; });
  variant("noarch python", true, [](auto& j) { j["noarch"] = "python"; });
  variant("noarch empty", true, [](auto& j) { j["noarch"] = ""; });
  variant("noarch null", true, [](auto& j) { j["noarch"] = nullptr; });
  variant("track_features string", true, [](auto& j) { j["track_features"] = "a,b  c"; });
  variant("track_features list", true, [](auto& j) { j["track_features"] = {"a,b", " c", ""}; });
  variant("features list", true, [](auto& j) { j["features"] = {"x", "y"}; });
  variant("null strings", true, [](auto& j) { j["license"] = nullptr; j["subdir"] = nullptr; j["depends"] = nullptr; });
  variant("float sizes", true, [](auto& j) { j["size"] = 1000.0; j["build_number"] = 3.0; });
  variant("no fn: from the url", true, [](auto& j) { j.erase("fn"); j["url"] = "https://x/y/pkg-1-0.conda"; });
  variant("link copy, source as the folder", true, [](auto& j) { j["extracted_package_dir"] = ""; j["link"] = {{"source", "/pkgs/x"}, {"type", 3}}; });
  variant("link type null", true, [](auto& j) { j["link"] = {{"type", nullptr}}; });
  variant("link not an object", true, [](auto& j) { j["link"] = "x"; });
  variant("paths_data null", true, [](auto& j) { j["paths_data"] = nullptr; });
  variant("path entry extras", true, [](auto& j) {
    auto& e = j["paths_data"]["paths"][0];
    e["sha256_in_prefix"] = std::string(64, 'e');
    e["prefix_placeholder"] = "/opt/placeholder";
    e["file_mode"] = "binary";
    e["no_link"] = true;
    e["path_type"] = nullptr;
    e["size_in_bytes"] = nullptr;
  });
  // The reference refuses these (or reads them in a way only it knows): the fast reader steps aside.
  variant("name missing", false, [](auto& j) { j.erase("name"); });
  variant("version not a string", false, [](auto& j) { j["version"] = 1; });
  variant("bad version", false, [](auto& j) { j["version"] = "1..2"; });
  variant("negative size", false, [](auto& j) { j["size"] = -1; });
  variant("depends a string", false, [](auto& j) { j["depends"] = "python"; });
  variant("noarch other", false, [](auto& j) { j["noarch"] = "other"; });
  variant("link type 4", false, [](auto& j) { j["link"] = {{"type", 4}}; });
  variant("link type string", false, [](auto& j) { j["link"] = {{"type", "1"}}; });
  variant("paths_version 2", false, [](auto& j) { j["paths_data"]["paths_version"] = 2; });
  variant("paths not a list", false, [](auto& j) { j["paths_data"]["paths"] = nullptr; });
  variant("unknown path type", false, [](auto& j) { j["paths_data"]["paths"][0]["path_type"] = "weird"; });
  variant("unknown file mode", false, [](auto& j) { j["paths_data"]["paths"][0]["file_mode"] = "weird"; });
  variant("path entry without _path", false, [](auto& j) { j["paths_data"]["paths"][0].erase("_path"); });

  const std::string text = base.dump();
  // A repeated key: the last one counts, as in nlohmann's tree.
  check_variant(reader, text.substr(0, text.size() - 1) + R"(, "version": "9.9.9", "md5": null})", true, "repeated keys");
  // An escaped key is the same key.
  std::string escaped = text;
  escaped.replace(escaped.find("\"build\""), 7, R"("b\u0075ild")");
  check_variant(reader, escaped, true, "escaped key");
  check_variant(reader, text.substr(0, text.size() - 3), false, "truncated");
  check_variant(reader, "", false, "empty");
  check_variant(reader, "[]", false, "not an object");
  check_variant(reader, text.substr(0, text.size() - 1) + R"(, "extra": "\ud800"})", false, "lone surrogate");
  check_variant(reader, text.substr(0, text.size() - 1) + R"(, "size": 123456789012345678901234567890})", false, "huge number");
}

}  // namespace
}  // namespace envlock
