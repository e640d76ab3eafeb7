// Repodata parsing (real corpus files and small named cases) and loading from local directories
// and over HTTP (tests/support/http_server.py on 127.0.0.1), with the cache and --offline.
#include <gtest/gtest.h>
#include <zstd.h>

#include <nlohmann/json.hpp>

#include "channel/corpus_channel.hpp"
#include "envlock/repodata.hpp"
#include "support/http_server.hpp"

namespace envlock {
namespace {

using testing::slurp;
using testing::spit;
using testing::TempDir;

const RepoDataRecord* find(const SubdirRepodata& d, const std::string& file_name) {
  for (const auto& r : d.records)
    if (r.file_name == file_name) return &r;
  return nullptr;
}

std::string zstd_compress(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  std::size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
  out.resize(n);
  return out;
}

Channel local_channel(const std::filesystem::path& dir) {
  auto ch = resolve_channel(dir.string(), dir);
  EXPECT_TRUE(ch.ok());
  return *ch;
}

TEST(Repodata, ParsesTheCondaForgeSubset) {
  ENVLOCK_REQUIRE_CORPUS();
  auto text = slurp(testing::corpus_repodata_dir() / "jaimergp__conda-subchannel-demo/linux-64__repodata.json");
  auto d = parse_repodata(text, "cf/linux-64/repodata.json", "https://conda.anaconda.org/conda-forge", "linux-64");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->records.size(), 2709u);  // 2354 .tar.bz2 + 355 .conda, no package in both formats
  EXPECT_TRUE(d->warnings.empty());
  EXPECT_TRUE(d->content_hash.starts_with("sha256:"));
  EXPECT_EQ(d->content_hash.size(), 7u + 64u);
  const RepoDataRecord* r = find(*d, "_libgcc_mutex-0.1-conda_forge.tar.bz2");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->name, "_libgcc_mutex");
  EXPECT_EQ(r->version.to_string(), "0.1");
  EXPECT_EQ(r->build, "conda_forge");
  EXPECT_EQ(r->sha256, "fe51de6107f9edc7aa4f786a70f4a883943bc9d39b3bb7307c04c41410990726");
  EXPECT_EQ(r->md5, "d7c89558ba9fa0495403155b64376d81");
  EXPECT_EQ(r->size, 2562u);
  EXPECT_EQ(r->timestamp, 1578324546067u);
  EXPECT_EQ(r->license, "None");
  EXPECT_EQ(r->subdir, "linux-64");
  EXPECT_EQ(r->channel, "https://conda.anaconda.org/conda-forge");
  EXPECT_EQ(r->url, "https://conda.anaconda.org/conda-forge/linux-64/_libgcc_mutex-0.1-conda_forge.tar.bz2");
}

TEST(Repodata, PytorchChannelTrackFeaturesAndRemovedList) {
  ENVLOCK_REQUIRE_CORPUS();
  auto text = slurp(testing::corpus_repodata_dir() / "conda__rattler/test-data__channels__pytorch__linux-64__repodata.json");
  auto d = parse_repodata(text, "pytorch.json", "https://conda.anaconda.org/pytorch", "linux-64");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->records.size(), 2181u);
  const RepoDataRecord* r = find(*d, "cuda100-1.0-0.tar.bz2");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->track_features, std::vector<std::string>{"cuda100"});
  EXPECT_EQ(r->timestamp, 1544155153559u);
}

TEST(Repodata, CondaWinsOverTarBz2AndSecondsBecomeMilliseconds) {
  std::string json = R"({"info": {"subdir": "noarch"},
    "packages": {"six-1.16.0-pyh_0.tar.bz2": {"name": "six", "version": "1.16.0", "build": "pyh_0",
                   "build_number": 0, "depends": ["python"], "timestamp": 1620240208, "noarch": "python",
                   "track_features": "a b,c"}},
    "packages.conda": {"six-1.16.0-pyh_0.conda": {"name": "six", "version": "1.16.0", "build": "pyh_0",
                   "build_number": 0, "depends": ["python"], "timestamp": 1620240208, "noarch": "python"}}})";
  auto d = parse_repodata(json, "t.json", "https://example.org/chan", "noarch");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  ASSERT_EQ(d->records.size(), 1u);
  EXPECT_EQ(d->records[0].file_name, "six-1.16.0-pyh_0.conda");
  EXPECT_EQ(d->records[0].timestamp, 1620240208000u);
  EXPECT_EQ(d->records[0].noarch, NoArchKind::Python);

  json = R"({"packages": {"x-1-0.tar.bz2": {"name": "X", "version": "1", "build": "0", "track_features": "a b,c",
             "noarch": true}}})";
  d = parse_repodata(json, "t.json", "https://example.org/chan", "noarch");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->records[0].name, "x");
  EXPECT_EQ(d->records[0].track_features, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(d->records[0].noarch, NoArchKind::Generic);
}

TEST(Repodata, BaseUrlFollowsCep15) {
  std::string json = R"({"info": {"subdir": "linux-64", "base_url": "https://cdn.example.org/pkgs/"},
    "repodata_version": 2, "packages.conda": {"a-1-0.conda": {"name": "a", "version": "1", "build": "0"}}})";
  auto d = parse_repodata(json, "t.json", "https://example.org/chan", "linux-64");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->records[0].url, "https://cdn.example.org/pkgs/a-1-0.conda");
  EXPECT_EQ(d->records[0].channel, "https://example.org/chan");

  json = R"({"info": {"base_url": "../../mirror/linux-64"}, "packages.conda": {"a-1-0.conda": {"name": "a", "version": "1", "build": "0"}}})";
  d = parse_repodata(json, "t.json", "https://example.org/chan", "linux-64");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->records[0].url, "https://example.org/chan/linux-64/../../mirror/linux-64/a-1-0.conda");
}

TEST(Repodata, MalformedJsonNamesFileLineAndColumn) {
  std::string json = "{\"packages\": {\n  \"a-1-0.conda\": {\"name\": \"a\",, \"version\": \"1\"}\n}}";
  auto d = parse_repodata(json, "chan/linux-64/repodata.json", "https://example.org/chan", "linux-64");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().kind, ErrorKind::Parse);
  EXPECT_EQ(d.error().where, "chan/linux-64/repodata.json:2:31");
  EXPECT_NE(d.error().detail.find("^"), std::string::npos);

  d = parse_repodata(R"({"packages": {"a-1-0.conda": {"version": "1"}}})", "r.json", "https://e.org/c", "linux-64");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().where.find("a-1-0.conda"), std::string::npos);
  EXPECT_NE(d.error().message.find("'name'"), std::string::npos);

  d = parse_repodata("[1, 2]", "r.json", "https://e.org/c", "linux-64");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().kind, ErrorKind::Parse);
}

TEST(Repodata, UnreadableVersionIsSkippedWithAWarning) {
  auto d = parse_repodata(R"({"packages": {"a-1-0.conda": {"name": "a", "version": "1..2", "build": "0"},
                                          "b-1-0.conda": {"name": "b", "version": "1", "build": "0"}}})",
                          "r.json", "https://e.org/c", "linux-64");
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->records.size(), 1u);
  EXPECT_EQ(d->records[0].name, "b");
  ASSERT_EQ(d->warnings.size(), 1u);
  EXPECT_NE(d->warnings[0].find("a-1-0.conda"), std::string::npos);
}

TEST(Zstd, RoundTripAndCorruptInput) {
  std::string text(100000, 'x');
  auto back = zstd_decompress(zstd_compress(text), "x.zst");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, text);
  auto bad = zstd_decompress("not zstd at all", "bad.zst");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where, "bad.zst");
  std::string truncated = zstd_compress(text);
  truncated.resize(truncated.size() / 2);
  EXPECT_FALSE(zstd_decompress(truncated, "t.zst").ok());
}

TEST(LoadLocal, ReadsSubdirAndNoarchAndPrefersZst) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("channel");
  auto dir = testing::make_conda_forge_subset(tmp.path() / "cf", {"linux-64"});
  // A .zst beside the .json wins: make it differ (one record) to see which was read.
  spit(dir / "noarch" / "repodata.json.zst",
       zstd_compress(R"({"packages.conda": {"z-1-0.conda": {"name": "z", "version": "1", "build": "0"}}})"));
  auto data = load_repodata({local_channel(dir)}, {"linux-64"});
  ASSERT_TRUE(data.ok()) << data.error().to_string();
  ASSERT_EQ(data->size(), 2u);
  EXPECT_EQ((*data)[0].subdir, "linux-64");
  EXPECT_EQ((*data)[0].records.size(), 2709u);
  EXPECT_EQ((*data)[1].subdir, "noarch");
  ASSERT_EQ((*data)[1].records.size(), 1u);
  EXPECT_EQ((*data)[1].records[0].url, "file://" + (dir / "noarch" / "z-1-0.conda").string());
}

TEST(LoadLocal, MissingDirectoryAndMissingSubdirs) {
  TempDir tmp("channel");
  auto missing = load_repodata({local_channel(tmp.path() / "nope")}, {"linux-64"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::Io);
  EXPECT_NE(missing.error().message.find("does not exist"), std::string::npos);

  std::filesystem::create_directories(tmp.path() / "empty");
  auto empty = load_repodata({local_channel(tmp.path() / "empty")}, {"linux-64"});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("channel not found"), std::string::npos);

  // Only noarch: the platform subdir is simply empty.
  spit(tmp.path() / "onlynoarch" / "noarch" / "repodata.json", R"({"packages": {}})");
  auto only = load_repodata({local_channel(tmp.path() / "onlynoarch")}, {"linux-64"});
  ASSERT_TRUE(only.ok());
  EXPECT_FALSE((*only)[0].present);
  EXPECT_TRUE((*only)[1].present);
}

TEST(LoadHttp, FetchesCachesRevalidatesAndWorksOffline) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("channel");
  auto root = tmp.path() / "www";
  testing::make_conda_forge_subset(root / "cf", {"linux-64"});
  spit(root / "cf" / "linux-64" / "repodata.json.zst", zstd_compress(slurp(root / "cf" / "linux-64" / "repodata.json")));
  testing::HttpServer server(root);
  ASSERT_TRUE(server.ok()) << server.error();
  auto ch = resolve_channel(server.url("/cf"), tmp.path());
  ASSERT_TRUE(ch.ok());
  RepodataOptions opts;
  opts.cache_dir = tmp.path() / "cache";
  auto first = load_repodata({*ch}, {"linux-64"}, opts);
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].records.size(), 2709u);
  EXPECT_EQ((*first)[0].source, server.url("/cf/linux-64/repodata.json.zst"));
  EXPECT_EQ((*first)[1].source, server.url("/cf/noarch/repodata.json"));  // no .zst there: fell back
  EXPECT_EQ(server.request_count("/cf/linux-64/repodata.json.zst"), 1);
  EXPECT_EQ(server.request_count("/cf/noarch/repodata.json.zst"), 1);
  EXPECT_EQ(server.request_count("/cf/noarch/repodata.json"), 1);
  const RepoDataRecord* r = find((*first)[0], "_libgcc_mutex-0.1-conda_forge.tar.bz2");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->url, server.url("/cf/linux-64/_libgcc_mutex-0.1-conda_forge.tar.bz2"));

  // The same content through the local loader gives the same records (apart from where they live).
  auto local = load_repodata({local_channel(root / "cf")}, {"linux-64"});
  ASSERT_TRUE(local.ok());
  EXPECT_EQ((*local)[0].content_hash, (*first)[0].content_hash);

  // Second load: conditional requests, answered 304, same records; the .zst is not asked for noarch.
  auto second = load_repodata({*ch}, {"linux-64"}, opts);
  ASSERT_TRUE(second.ok()) << second.error().to_string();
  EXPECT_EQ((*second)[0].content_hash, (*first)[0].content_hash);
  EXPECT_EQ((*second)[0].records.size(), 2709u);
  EXPECT_EQ(server.request_count("/cf/linux-64/repodata.json.zst"), 2);
  EXPECT_EQ(server.request_count("/cf/noarch/repodata.json.zst"), 1);
  EXPECT_EQ(server.request_count("/cf/noarch/repodata.json"), 2);

  // Offline: the cache alone.
  opts.offline = true;
  auto offline = load_repodata({*ch}, {"linux-64"}, opts);
  ASSERT_TRUE(offline.ok()) << offline.error().to_string();
  EXPECT_EQ((*offline)[0].records.size(), 2709u);
  EXPECT_EQ(server.request_count("/cf/linux-64/repodata.json.zst"), 2);
  // Offline with a platform never fetched: a clear error.
  auto never = load_repodata({*ch}, {"osx-64"}, opts);
  ASSERT_FALSE(never.ok());
  EXPECT_NE(never.error().message.find("--offline"), std::string::npos);
}

TEST(LoadHttp, NotFoundAndServerErrors) {
  TempDir tmp("channel");
  auto root = tmp.path() / "www";
  spit(root / "ok" / "noarch" / "repodata.json", R"({"packages": {}})");
  spit(root / "broken" / "noarch" / "repodata.json", R"({"packages": {)");
  testing::HttpServer server(root, {"--fail", "/err/noarch/repodata.json.zst=500"});
  ASSERT_TRUE(server.ok()) << server.error();
  RepodataOptions opts;
  opts.cache_dir = tmp.path() / "cache";
  opts.max_retries = 0;

  auto missing = load_repodata({*resolve_channel(server.url("/nothing"), tmp.path())}, {"linux-64"}, opts);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::Network);
  EXPECT_NE(missing.error().message.find("channel not found"), std::string::npos);
  EXPECT_EQ(missing.error().where, server.url("/nothing"));

  auto err = load_repodata({*resolve_channel(server.url("/err"), tmp.path())}, {"linux-64"}, opts);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().kind, ErrorKind::Network);
  EXPECT_NE(err.error().message.find("HTTP 500"), std::string::npos) << err.error().to_string();

  auto broken = load_repodata({*resolve_channel(server.url("/broken"), tmp.path())}, {"linux-64"}, opts);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().kind, ErrorKind::Parse);
  EXPECT_TRUE(broken.error().where.starts_with(server.url("/broken/noarch/repodata.json:"))) << broken.error().where;

  auto ok = load_repodata({*resolve_channel(server.url("/ok"), tmp.path())}, {"linux-64"}, opts);
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_FALSE((*ok)[0].present);
}

TEST(LoadHttp, CredentialsNeverLeaveMemory) {
  TempDir tmp("channel");
  auto root = tmp.path() / "www";
  // anaconda.org-style token path, served as a plain folder, behind basic auth as well.
  spit(root / "t" / "tk-SECRET-42" / "private" / "noarch" / "repodata.json",
       R"({"packages.conda": {"a-1-0.conda": {"name": "a", "version": "1", "build": "0"}}})");
  testing::HttpServer server(root, {"--auth", "alice:pw-SECRET-7"});
  ASSERT_TRUE(server.ok()) << server.error();
  std::string url = "http://alice:pw-SECRET-7@127.0.0.1:" + std::to_string(server.port()) + "/t/tk-SECRET-42/private";
  auto ch = resolve_channel(url, tmp.path());
  ASSERT_TRUE(ch.ok());
  RepodataOptions opts;
  opts.cache_dir = tmp.path() / "cache";
  auto data = load_repodata({*ch}, {"linux-64"}, opts);
  ASSERT_TRUE(data.ok()) << data.error().to_string();
  const auto& rec = (*data)[1].records.at(0);
  EXPECT_EQ(rec.channel, server.url("/private"));
  EXPECT_EQ(rec.url, server.url("/private/noarch/a-1-0.conda"));
  for (const auto& d : *data) EXPECT_EQ(d.source.find("SECRET"), std::string::npos) << d.source;
  for (const auto& e : std::filesystem::directory_iterator(opts.cache_dir)) {
    if (e.path().string().ends_with(".state.json")) {
      EXPECT_EQ(slurp(e.path()).find("SECRET"), std::string::npos) << e.path();
    }
  }
  // Without the password: 401, and the error carries no secret either.
  auto anon = resolve_channel(server.url("/t/tk-SECRET-42/private"), tmp.path());
  opts.cache_dir = tmp.path() / "cache2";
  opts.max_retries = 0;
  auto denied = load_repodata({*anon}, {"linux-64"}, opts);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().to_string().find("SECRET"), std::string::npos) << denied.error().to_string();
}

}  // namespace
}  // namespace envlock
