#pragma once
// tests/support/shard_writer.hpp — turns a repodata.json into CEP-16 sharded repodata, written
// with msgpack-cxx (the library envlock reads it with) and libzstd, the way conda-index's
// `sharded.py` writes it: one shard per package name holding that name's `packages` and
// `packages.conda` (sha256 and md5 as raw bytes, `pack_record`), named by the sha256 of its
// compressed bytes; an index `repodata_shards.msgpack.zst` mapping names to those hashes.
// Header-only; the including target needs msgpack.hpp on its include path and MSGPACK_NO_BOOST.
//
//   write_shards(repodata_json_text, channel / "linux-64", "linux-64");  // ./shards/<hex>.msgpack.zst

#include <msgpack.hpp>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "envlock/hash.hpp"

namespace envlock::testing {

inline void pack_json(msgpack::packer<msgpack::sbuffer>& pk, const nlohmann::json& j, const std::string& key = {}) {
  if ((key == "sha256" || key == "md5") && j.is_string()) {  // CEP-16: hex digests as bytes
    std::string hex = j.get<std::string>(), bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    pk.pack_bin(static_cast<std::uint32_t>(bytes.size()));
    pk.pack_bin_body(bytes.data(), static_cast<std::uint32_t>(bytes.size()));
    return;
  }
  switch (j.type()) {
    case nlohmann::json::value_t::null: pk.pack_nil(); break;
    case nlohmann::json::value_t::boolean: j.get<bool>() ? pk.pack_true() : pk.pack_false(); break;
    case nlohmann::json::value_t::number_unsigned: pk.pack_uint64(j.get<std::uint64_t>()); break;
    case nlohmann::json::value_t::number_integer: pk.pack_int64(j.get<std::int64_t>()); break;
    case nlohmann::json::value_t::number_float: pk.pack_double(j.get<double>()); break;
    case nlohmann::json::value_t::string: pk.pack(j.get<std::string>()); break;
    case nlohmann::json::value_t::array:
      pk.pack_array(static_cast<std::uint32_t>(j.size()));
      for (const auto& v : j) pack_json(pk, v);
      break;
    case nlohmann::json::value_t::object:
      pk.pack_map(static_cast<std::uint32_t>(j.size()));
      for (const auto& [k, v] : j.items()) {
        pk.pack(k);
        pack_json(pk, v, k);
      }
      break;
    default: throw std::runtime_error("pack_json: unsupported JSON value");
  }
}

inline std::string zstd_bytes(const std::string& plain, int level = 3) {
  std::string out(ZSTD_compressBound(plain.size()), '\0');
  std::size_t n = ZSTD_compress(out.data(), out.size(), plain.data(), plain.size(), level);
  if (ZSTD_isError(n)) throw std::runtime_error(ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

inline void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

/// Requests per path, for the paths of `counts` (HttpServer::request_counts()) that contain
/// `part` (e.g. "/shards/").
inline std::map<std::string, int> counts_under(const nlohmann::json& counts, const std::string& part) {
  std::map<std::string, int> out;
  for (auto it = counts.begin(); it != counts.end(); ++it)
    if (it.key().find(part) != std::string::npos && it.value().is_number()) out[it.key()] = it.value().get<int>();
  return out;
}

/// What write_shards() wrote.
struct ShardSet {
  std::map<std::string, std::string> hash_by_name;  ///< name -> hex sha256 of its shard
  std::uint64_t shard_bytes = 0;                     ///< total compressed size of the shards
};

/// Writes `subdir_dir/repodata_shards.msgpack.zst` and `subdir_dir/<shards_dir>/<hex>.msgpack.zst`
/// from the records of `repodata_json`, grouped by their `name` field.
inline ShardSet write_shards(const std::string& repodata_json, const std::filesystem::path& subdir_dir,
                             const std::string& subdir, const std::string& shards_dir = "shards",
                             const std::string& base_url = "") {
  const auto doc = nlohmann::json::parse(repodata_json);
  std::map<std::string, nlohmann::json> by_name;
  for (const char* section : {"packages", "packages.conda"}) {
    if (!doc.contains(section)) continue;
    for (const auto& [fn, rec] : doc[section].items()) {
      auto& shard = by_name[rec.at("name").get<std::string>()];
      if (shard.is_null()) shard = {{"packages", nlohmann::json::object()}, {"packages.conda", nlohmann::json::object()}};
      shard[section][fn] = rec;
    }
  }
  ShardSet out;
  msgpack::sbuffer index_buf;
  msgpack::packer<msgpack::sbuffer> ipk(index_buf);
  ipk.pack_map(3);
  ipk.pack(std::string("info"));
  ipk.pack_map(3);
  ipk.pack(std::string("base_url"));
  ipk.pack(base_url);
  ipk.pack(std::string("shards_base_url"));
  ipk.pack(shards_dir.empty() ? std::string() : "./" + shards_dir + "/");
  ipk.pack(std::string("subdir"));
  ipk.pack(subdir);
  ipk.pack(std::string("version"));
  ipk.pack(1);
  ipk.pack(std::string("shards"));
  ipk.pack_map(static_cast<std::uint32_t>(by_name.size()));
  for (auto& [name, shard] : by_name) {
    shard["removed"] = nlohmann::json::array();
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(buf);
    pack_json(pk, shard);
    const std::string compressed = zstd_bytes(std::string(buf.data(), buf.size()));
    const std::string hex = hash_bytes(compressed, HashAlgorithm::Sha256);
    write_bytes(subdir_dir / shards_dir / (hex + ".msgpack.zst"), compressed);
    out.hash_by_name[name] = hex;
    out.shard_bytes += compressed.size();
    std::string raw;
    for (std::size_t i = 0; i < 64; i += 2) raw.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    ipk.pack(name);
    ipk.pack_bin(32);
    ipk.pack_bin_body(raw.data(), 32);
  }
  write_bytes(subdir_dir / "repodata_shards.msgpack.zst", zstd_bytes(std::string(index_buf.data(), index_buf.size())));
  return out;
}

}  // namespace envlock::testing
