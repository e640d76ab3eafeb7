// CEP-16 sharded repodata over HTTP (tests/support/http_server.py on 127.0.0.1): the conda
// project's own sharded test channel (tests/data/conda_format_repo), shards written by
// tests/support/shard_writer.hpp from real conda-forge repodata, the content-addressed shard
// cache, damaged shards and damaged repodata caches.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "channel/corpus_channel.hpp"
#include "envlock/hash.hpp"
#include "envlock/repodata.hpp"
#include "support/http_server.hpp"
#include "support/shard_writer.hpp"
#include "../../src/channel/shards.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using testing::slurp;
using testing::spit;
using testing::TempDir;

const fs::path kCondaRepo = fs::path(ENVLOCK_SHARED_DIR) / "corpus/packages/conda__conda";

/// conda's tests/data/conda_format_repo served as `<www>/repo`: linux-64 with its shard index,
/// its two shards (the corpus flattens their names) and repodata.json; noarch with repodata.json.
void make_conda_format_repo(const fs::path& www) {
  const std::string p = "tests__data__conda_format_repo__";
  for (const auto& e : fs::directory_iterator(kCondaRepo)) {
    std::string n = e.path().filename().string();
    if (!n.starts_with(p + "linux-64__") || !n.ends_with(".msgpack.zst")) continue;
    spit(www / "repo/linux-64" / n.substr((p + "linux-64__").size()), slurp(e.path()));
  }
  spit(www / "repo/linux-64/repodata.json", slurp(kCondaRepo / (p + "linux-64__repodata.json")));
  spit(www / "repo/noarch/repodata.json", slurp(kCondaRepo / (p + "noarch__repodata.json")));
}

RepodataOptions lazy_options(const fs::path& cache) {
  RepodataOptions o;
  o.lazy = true;
  o.cache_dir = cache;
  o.max_retries = 0;
  return o;
}

std::vector<std::string> names_of(const RepodataIndex& idx) { return {idx.names().begin(), idx.names().end()}; }

TEST(Shards, ReadsTheCondaProjectsShardedTestChannel) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("shards");
  make_conda_format_repo(tmp.path() / "www");
  testing::HttpServer server(tmp.path() / "www");
  ASSERT_TRUE(server.ok()) << server.error();
  auto ch = resolve_channel(server.url("/repo"), tmp.path());
  ASSERT_TRUE(ch.ok());
  auto data = load_repodata({*ch}, {"linux-64"}, lazy_options(tmp.path() / "cache"));
  ASSERT_TRUE(data.ok()) << data.error().to_string();
  const auto& linux = (*data)[0];
  ASSERT_TRUE(linux.index);
  EXPECT_TRUE(linux.index->sharded());
  EXPECT_FALSE((*data)[1].index->sharded());  // noarch has no shard index: repodata.json
  EXPECT_EQ(linux.source, server.url("/repo/linux-64/repodata_shards.msgpack.zst"));
  EXPECT_EQ(names_of(*linux.index), (std::vector<std::string>{"libgcc-ng", "zlib"}));
  EXPECT_EQ(linux.index->parsed_names(), 0u);  // nothing fetched before a name is asked for
  EXPECT_EQ(server.request_count("/repo/linux-64/repodata.json"), 0);
  EXPECT_EQ(server.request_count("/repo/linux-64/repodata.json.zst"), 0);

  // zlib's shard holds a .tar.bz2 and a .conda of one build: the .conda wins, as in repodata.json.
  const auto& zlib = linux.index->records("zlib");
  ASSERT_EQ(zlib.size(), 1u);
  EXPECT_EQ(zlib[0].file_name, "zlib-1.2.11-h7b6447c_3.conda");
  EXPECT_EQ(zlib[0].url, server.url("/repo/linux-64/zlib-1.2.11-h7b6447c_3.conda"));
  EXPECT_EQ(zlib[0].sha256, "f33afff2144e1d6c4cf2e3e184937db8bf825b4537df74662aea5ee207b6a31b");
  EXPECT_EQ(zlib[0].md5, "cb23839f06da92ec92c6d2d2d5e0cb4a");
  EXPECT_EQ(zlib[0].depends, (std::vector<std::string>{"libgcc-ng >=7.3.0"}));
  EXPECT_EQ(linux.index->parsed_names(), 1u);
  EXPECT_EQ(server.request_count("/repo/linux-64/56a0c19b47ba1a2d0f1390eda489b1c49a00d35814571057e6d81e0c93dfd157.msgpack.zst"), 1);
  EXPECT_EQ(server.request_count("/repo/linux-64/2dcdacf7009b4f1c21f452c5079384340257e0e1cbecb8ec484984d1fa85b115.msgpack.zst"), 0);

  // Every record equals the one the same channel's repodata.json gives.
  auto plain = parse_repodata(slurp(tmp.path() / "www/repo/linux-64/repodata.json"), "x", server.url("/repo"), "linux-64");
  ASSERT_TRUE(plain.ok());
  auto sharded = linux.index->all_records();
  ASSERT_TRUE(sharded.ok()) << sharded.error().to_string();
  auto by_file = [](std::vector<RepoDataRecord> v) {
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.file_name < b.file_name; });
    return v;
  };
  EXPECT_EQ(by_file(*sharded), by_file(plain->records));

  // A second load revalidates the index (304) and finds the shard in the content-addressed cache.
  auto again = load_repodata({*ch}, {"linux-64"}, lazy_options(tmp.path() / "cache"));
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ((*again)[0].index->records("zlib"), zlib);
  EXPECT_EQ(server.request_count("/repo/linux-64/repodata_shards.msgpack.zst"), 2);
  EXPECT_EQ(server.request_count("/repo/linux-64/56a0c19b47ba1a2d0f1390eda489b1c49a00d35814571057e6d81e0c93dfd157.msgpack.zst"), 1);
  EXPECT_EQ(server.request_count("/repo/linux-64/repodata.json"), 0);

  // An eager load (no solver asking for names) reads repodata.json instead.
  RepodataOptions eager;
  eager.cache_dir = tmp.path() / "cache-eager";
  auto full = load_repodata({*ch}, {"linux-64"}, eager);
  ASSERT_TRUE(full.ok()) << full.error().to_string();
  EXPECT_EQ((*full)[0].records.size(), 2u);
}

/// The conda-forge subset (linux-64 + noarch), sharded by the test: `<www>/cf`.
void make_sharded_subset(const fs::path& www, const fs::path& scratch) {
  testing::make_conda_forge_subset(scratch, {"linux-64"});
  for (const char* s : {"linux-64", "noarch"}) testing::write_shards(slurp(scratch / s / "repodata.json"), www / "cf" / s, s);
}

TEST(Shards, PrefetchFetchesOnlyWhatTheRequestReaches) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("shards");
  make_sharded_subset(tmp.path() / "www", tmp.path() / "plain");
  testing::HttpServer server(tmp.path() / "www");
  ASSERT_TRUE(server.ok()) << server.error();
  auto ch = resolve_channel(server.url("/cf"), tmp.path());
  auto data = load_repodata({*ch}, {"linux-64"}, lazy_options(tmp.path() / "cache"));
  ASSERT_TRUE(data.ok()) << data.error().to_string();
  ASSERT_TRUE((*data)[0].index->sharded() && (*data)[1].index->sharded());
  ASSERT_TRUE(prefetch_shards(*data, {"zlib"}).ok());
  // zlib depends on libgcc-ng, which depends on _libgcc_mutex and _openmp_mutex (-> libgomp): the
  // shards of those names, in each subdir that has them, and no other.
  int shard_requests = 0;
  for (const auto& [path, n] : testing::counts_under(server.request_counts(), "/shards/")) shard_requests += n;
  std::size_t parsed = (*data)[0].index->parsed_names() + (*data)[1].index->parsed_names();
  EXPECT_EQ(static_cast<std::size_t>(shard_requests), parsed);
  // The closure computed here from the plain repodata.json files, independently: every name
  // reachable from zlib through `depends`, counted once per subdir that has it.
  std::map<std::string, std::map<std::string, std::set<std::string>>> deps;  // subdir -> name -> deps
  for (const char* sd : {"linux-64", "noarch"}) {
    auto doc = nlohmann::json::parse(slurp(tmp.path() / "plain" / sd / "repodata.json"));
    for (const char* section : {"packages", "packages.conda"})
      if (doc.contains(section))
        for (const auto& [fn, rec] : doc[section].items()) {
          auto& d = deps[sd][rec["name"].get<std::string>()];
          for (const auto& dep : rec.value("depends", nlohmann::json::array())) {
            std::string t = dep.get<std::string>();
            d.insert(t.substr(0, t.find_first_of(" =<>!~[")));
          }
        }
  }
  std::set<std::string> seen{"zlib"};
  std::vector<std::string> todo{"zlib"};
  while (!todo.empty()) {
    std::string n = todo.back();
    todo.pop_back();
    for (auto& [sd, names] : deps)
      if (auto it = names.find(n); it != names.end())
        for (const auto& d : it->second)
          if (seen.insert(d).second) todo.push_back(d);
  }
  std::size_t expected = 0;
  for (auto& [sd, names] : deps)
    for (const auto& n : seen) expected += names.count(n);
  EXPECT_EQ(parsed, expected);
  EXPECT_LT(parsed, deps["linux-64"].size() + deps["noarch"].size());
  EXPECT_FALSE((*data)[0].index->records("zlib").empty());
  EXPECT_FALSE((*data)[0].index->records("libgomp").empty());
  EXPECT_EQ(server.request_count("/cf/linux-64/repodata.json"), 0);
  EXPECT_EQ(server.request_count("/cf/linux-64/repodata.json.zst"), 0);
}

TEST(Shards, TheWalkKeepsItsConnectionsFromStepToStep) {
  // Each step of the walk is a batch; the index requests and every batch share one session, so
  // the whole load opens at most FetchOptions::parallel connections (8), however many steps and
  // shards it takes. Without the session each step of each subdir opened its own.
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("shards");
  make_sharded_subset(tmp.path() / "www", tmp.path() / "plain");
  testing::HttpServer server(tmp.path() / "www");
  ASSERT_TRUE(server.ok()) << server.error();
  auto ch = resolve_channel(server.url("/cf"), tmp.path());
  auto data = load_repodata({*ch}, {"linux-64"}, lazy_options(tmp.path() / "cache"));
  ASSERT_TRUE(data.ok()) << data.error().to_string();
  ASSERT_TRUE(prefetch_shards(*data, {"python"}).ok());
  int shard_requests = 0;
  for (const auto& [path, n] : testing::counts_under(server.request_counts(), "/shards/")) shard_requests += n;
  ASSERT_GT(shard_requests, 40);  // several steps of several shards each
  EXPECT_LE(server.connection_count(), 8) << shard_requests << " shard requests";
  EXPECT_GE(server.connection_count(), 1);
}

TEST(Shards, DamagedShardsAreRefetchedOrRefused) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("shards");
  make_sharded_subset(tmp.path() / "www", tmp.path() / "plain");
  auto set = testing::write_shards(slurp(tmp.path() / "plain/linux-64/repodata.json"), tmp.path() / "www/cf/linux-64",
                                   "linux-64");
  testing::HttpServer server(tmp.path() / "www");
  ASSERT_TRUE(server.ok()) << server.error();
  auto ch = resolve_channel(server.url("/cf"), tmp.path());
  const std::string hex = set.hash_by_name.at("zlib");
  const std::string shard_path = "/cf/linux-64/shards/" + hex + ".msgpack.zst";
  {
    auto data = load_repodata({*ch}, {"linux-64"}, lazy_options(tmp.path() / "cache"));
    ASSERT_TRUE(data.ok());
    ASSERT_FALSE((*data)[0].index->records("zlib").empty());
  }
  // A cached shard whose bytes no longer hash to its name is fetched again.
  fs::path cached = tmp.path() / "cache/shards" / (hex + ".msgpack.zst");
  ASSERT_TRUE(fs::exists(cached));
  spit(cached, "garbage");
  {
    auto data = load_repodata({*ch}, {"linux-64"}, lazy_options(tmp.path() / "cache"));
    ASSERT_TRUE(data.ok());
    EXPECT_FALSE((*data)[0].index->records("zlib").empty());
    EXPECT_EQ(server.request_count(shard_path), 2);
    EXPECT_EQ(envlock::hash_file(cached, HashAlgorithm::Sha256).value(), hex);
  }
  // A server whose shard does not match its hash: an integrity error naming the shard's URL, and
  // the name gets no records (never the bytes of a wrong shard).
  spit(tmp.path() / "www" / shard_path.substr(1), testing::zstd_bytes("not msgpack"));
  auto data = load_repodata({*ch}, {"linux-64"}, lazy_options(tmp.path() / "cache2"));
  ASSERT_TRUE(data.ok());
  auto st = prefetch_shards(*data, {"zlib"});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::Integrity);
  EXPECT_EQ(st.error().where, server.url(shard_path));
  EXPECT_TRUE((*data)[0].index->records("zlib").empty());
  ASSERT_TRUE((*data)[0].index->first_error().has_value());
}

TEST(Shards, IndexThatIsNotCep16IsAParseErrorNamingIt) {
  auto bad = detail::parse_shard_index(testing::zstd_bytes("\x93\x01\x02\x03"), "https://h/c/linux-64/repodata_shards.msgpack.zst");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().to_string(),
            "https://h/c/linux-64/repodata_shards.msgpack.zst: not CEP-16 sharded repodata: the top level is not a map\n"
            "hint: the channel serves a damaged file; report it to the channel's maintainers");
  auto corrupt = detail::parse_shard_index("\x28\xb5\x2f\xfd garbage", "u");
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.error().kind, ErrorKind::Parse);
}

TEST(Shards, RelativeUrlsResolveAgainstTheIndex) {
  const std::string idx = "https://h/c/linux-64/repodata_shards.msgpack.zst";
  EXPECT_EQ(detail::resolve_shard_url(idx, ""), "https://h/c/linux-64/");
  EXPECT_EQ(detail::resolve_shard_url(idx, "./shards/"), "https://h/c/linux-64/shards/");
  EXPECT_EQ(detail::resolve_shard_url(idx, "../shards/"), "https://h/c/shards/");
  EXPECT_EQ(detail::resolve_shard_url(idx, "/other/"), "https://h/other/");
  EXPECT_EQ(detail::resolve_shard_url(idx, "https://cdn/x/"), "https://cdn/x/");
  EXPECT_EQ(detail::resolve_shard_url(idx, "../../../../x"), "https://h/x");
}

TEST(RepodataCache, DamagedCopyIsFetchedAgainWhateverA304Says) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("shards");
  testing::make_conda_forge_subset(tmp.path() / "www/cf", {"linux-64"});
  testing::HttpServer server(tmp.path() / "www");
  ASSERT_TRUE(server.ok()) << server.error();
  auto ch = resolve_channel(server.url("/cf"), tmp.path());
  auto opts = lazy_options(tmp.path() / "cache");
  auto first = load_repodata({*ch}, {"linux-64"}, opts);
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  const auto python = (*first)[0].index->records("python");
  ASSERT_FALSE(python.empty());
  // Damage the cached JSON in place (same size): it no longer hashes to its state's record.
  fs::path json;
  for (const auto& e : fs::directory_iterator(opts.cache_dir))
    if (e.path().extension() == ".json" && !e.path().string().ends_with(".state.json") &&
        slurp(e.path()).find("\"_libgcc_mutex") != std::string::npos)
      json = e.path();
  ASSERT_FALSE(json.empty());
  std::string text = slurp(json);
  text.replace(text.find("\"packages\""), 10, "\"pack{ges\"");
  spit(json, text);
  auto second = load_repodata({*ch}, {"linux-64"}, opts);
  ASSERT_TRUE(second.ok()) << second.error().to_string();  // never "malformed repodata" for the cache's fault
  EXPECT_EQ((*second)[0].index->records("python"), python);
  EXPECT_EQ(server.request_count("/cf/linux-64/repodata.json"), 2);
  EXPECT_NE(slurp(json).find("\"packages\""), std::string::npos);
  // Offline, a damaged copy is named as such.
  spit(json, "{");
  opts.offline = true;
  auto offline = load_repodata({*ch}, {"linux-64"}, opts);
  ASSERT_FALSE(offline.ok());
  EXPECT_EQ(offline.error().to_string(),
            server.url("/cf/linux-64") +
                ": the cached repodata is damaged: its bytes no longer match the hash in its state file (--offline)\n"
                "hint: run once without --offline to fill the repodata cache");
}

}  // namespace
}  // namespace envlock
