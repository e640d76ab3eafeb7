// A package's info/: index.json (PackageRecord::from_json), paths.json and link.json, read as
// install reads them (plan_package, src/install/link.hpp) and paths.json as the package cache
// checks an entry (lookup with CacheValidation::Hashes). The first byte picks the file (modulo 3:
// index.json, paths.json, link.json); the rest is its text.
#include <nlohmann/json.hpp>

#include "envlock/package_cache.hpp"
#include "envlock/package_record.hpp"
#include "fuzz_util.hpp"
#include "link.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text = envlock::fuzz::text_of(data + 1, size - 1);
  if (data[0] % 3 == 0) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_discarded()) {
      (void)envlock::PackageRecord::from_json(j);
      (void)envlock::RepoDataRecord::from_json(j);
      (void)envlock::PrefixRecord::from_json(j);
    }
    return 0;
  }
  const auto& dir = envlock::fuzz::scratch();
  const auto pkg = dir / "pkgs" / "fuzz-1.0-0";
  const bool link_json = data[0] % 3 == 2;
  envlock::fuzz::write_file(pkg / "info" / "paths.json", link_json ? R"({"paths_version":1,"paths":[]})" : text);
  if (link_json) envlock::fuzz::write_file(pkg / "info" / "link.json", text);
  envlock::fuzz::write_file(pkg / "info" / "index.json", R"({"name":"fuzz","version":"1.0","build":"0","build_number":0})");
  envlock::PackageToLink p;
  p.record.name = "fuzz";
  p.record.version = envlock::Version::parse("1.0").value();
  p.record.build = "0";
  p.record.file_name = "fuzz-1.0-0.conda";
  p.record.url = "https://conda.anaconda.org/fuzz/noarch/fuzz-1.0-0.conda";
  p.extracted_dir = pkg;
  envlock::detail::LinkContext ctx;
  ctx.stage = dir / "stage";
  ctx.target_prefix = (dir / "prefix").string();
  (void)envlock::detail::plan_package(ctx, p);
  // The cache's own check of the same folder (no marker: never valid, but paths.json is read
  // only after the marker; write one so the file check runs).
  envlock::fuzz::write_file(pkg / "info" / "envlock_cache.json",
                            R"({"format":2,"file_name":"fuzz-1.0-0.conda","archive_sha256":"","archive_md5":"","archive_size":0,"has_paths_json":true})");
  if (auto cache = envlock::PackageCache::open(dir / "pkgs")) {
    (void)cache->lookup(p.record, envlock::CacheValidation::Hashes);
  }
  return 0;
}
