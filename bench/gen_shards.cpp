// gen_shards: writes CEP-16 sharded repodata next to a generated repodata.json, for
// bench/scenarios/14-shards.sh — the same writer the tests use (tests/support/shard_writer.hpp,
// msgpack-cxx + libzstd).
//
// usage: gen_shards REPODATA_JSON OUT_SUBDIR_DIR SUBDIR
//   writes OUT_SUBDIR_DIR/repodata_shards.msgpack.zst and OUT_SUBDIR_DIR/shards/<sha256>.msgpack.zst
#include <cstdio>
#include <fstream>
#include <sstream>

#include "support/shard_writer.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: gen_shards REPODATA_JSON OUT_SUBDIR_DIR SUBDIR\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "gen_shards: cannot read %s\n", argv[1]);
    return 1;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  auto set = envlock::testing::write_shards(ss.str(), argv[2], argv[3]);
  std::printf("{\"shards\": %zu, \"shard_bytes\": %llu}\n", set.hash_by_name.size(),
              static_cast<unsigned long long>(set.shard_bytes));
  return 0;
}
