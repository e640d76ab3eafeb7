// RepodataIndex: one simdjson on-demand pass noting where each record lies, records grouped by
// the name in their file name, parsed per name on first use (simdjson DOM over the record's own
// span), and the binary index cache. See envlock/repodata_index.hpp.
#include "envlock/repodata_index.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <simdjson.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

#include "envlock/atomic_file.hpp"
#include "envlock/hash.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"
#include "repodata_detail.hpp"
#include "repodata_scan.hpp"

namespace envlock {

namespace {

namespace fs = std::filesystem;
using simdjson::dom::element;

// --- JSON errors ---------------------------------------------------------------------------

/// "line:col" (1-based) of byte `offset` in `text`.
std::string line_col(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
  std::size_t ls = offset == 0 ? std::string_view::npos : text.rfind('\n', offset - 1);
  std::size_t col = ls == std::string_view::npos ? offset + 1 : offset - ls;
  return std::to_string(line) + ":" + std::to_string(col);
}

// --- record fields (simdjson DOM over one record) --------------------------------------------

std::string get_string(element obj, const char* key) {
  std::string_view v;
  if (obj[key].get_string().get(v) == simdjson::SUCCESS) return std::string(v);
  return {};
}

std::optional<std::uint64_t> get_uint(element obj, const char* key) {
  element e;
  if (obj[key].get(e) != simdjson::SUCCESS) return std::nullopt;
  std::uint64_t u;
  if (e.get_uint64().get(u) == simdjson::SUCCESS) return u;
  double d;
  if (e.get_double().get(d) == simdjson::SUCCESS && d >= 0) return static_cast<std::uint64_t>(d);
  return std::nullopt;
}

std::vector<std::string> get_string_list(element obj, const char* key) {
  std::vector<std::string> out;
  simdjson::dom::array arr;
  if (obj[key].get_array().get(arr) != simdjson::SUCCESS) return out;
  for (element e : arr) {
    std::string_view v;
    if (e.get_string().get(v) == simdjson::SUCCESS) out.emplace_back(v);
  }
  return out;
}

/// The first field of a record whose JSON type is not the one repodata gives it ("'depends' is
/// not a list of strings"), or nothing. Read as they were, such fields would silently become
/// empty or 0 (a dependency gone, build number 0); rattler refuses the channel for them.
std::optional<std::string> wrong_field_type(element obj) {
  for (const char* key : {"depends", "constrains"}) {
    element e;
    if (obj[key].get(e) != simdjson::SUCCESS || e.is_null()) continue;
    simdjson::dom::array arr;
    if (e.get_array().get(arr) != simdjson::SUCCESS) return "'" + std::string(key) + "' is not a list of strings";
    for (element item : arr)
      if (!item.is_string()) return "'" + std::string(key) + "' holds a value that is not a string";
  }
  for (const char* key : {"build_number", "size", "timestamp"}) {
    element e;
    if (obj[key].get(e) != simdjson::SUCCESS || e.is_null()) continue;
    double d;
    if (!e.is_uint64() && !(e.get_double().get(d) == simdjson::SUCCESS && d >= 0))
      return "'" + std::string(key) + "' is not a non-negative number";
    // A build number is a whole number (rattler reads it as u64 and refuses 1.5; read as a
    // double it was truncated to 1).
    if (std::string_view(key) == "build_number" && !e.is_uint64())
      return "'build_number' is not a whole number";
  }
  for (const char* key : {"name", "version", "build", "md5", "sha256", "subdir", "license", "license_family"}) {
    element e;
    if (obj[key].get(e) == simdjson::SUCCESS && !e.is_null() && !e.is_string())
      return "'" + std::string(key) + "' is not a string";
  }
  // noarch: "python", "generic", or the legacy boolean (true = generic).
  if (element e; obj["noarch"].get(e) == simdjson::SUCCESS && !e.is_null() && !e.is_string() && !e.is_bool())
    return "'noarch' is not a string";
  return std::nullopt;
}

/// conda's track_features: a space/comma separated string, or (rarely) a list.
std::vector<std::string> get_features(element obj, const char* key) {
  std::vector<std::string> out;
  std::string_view v;
  if (obj[key].get_string().get(v) == simdjson::SUCCESS) {
    std::string cur;
    for (char c : v) {
      if (c == ' ' || c == ',' || c == '\t') {
        if (!cur.empty()) out.push_back(std::move(cur));
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) out.push_back(std::move(cur));
    return out;
  }
  return get_string_list(obj, key);
}

NoArchKind get_noarch(element obj) {
  element e;
  if (obj["noarch"].get(e) != simdjson::SUCCESS) return NoArchKind::None;
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS) {
    if (s == "python") return NoArchKind::Python;
    if (s == "generic") return NoArchKind::Generic;
    return NoArchKind::None;
  }
  bool b = false;
  if (e.get_bool().get(b) == simdjson::SUCCESS && b) return NoArchKind::Generic;
  return NoArchKind::None;
}

// --- the JSON text: a padded read-only mapping or an owned string -----------------------------

/// `size` bytes of a file mapped read-only into a reservation of size + SIMDJSON_PADDING (the
/// tail reads as zeros), as simdjson wants.
class JsonMapping {
 public:
  JsonMapping() = default;
  JsonMapping(const JsonMapping&) = delete;
  JsonMapping& operator=(const JsonMapping&) = delete;
  ~JsonMapping() {
    if (base_ != nullptr) ::munmap(base_, length_);
  }
  /// Maps `fd` (`size` bytes); `populate` pre-faults the pages (MAP_POPULATE).
  bool map(int fd, std::size_t size, bool populate) {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    length_ = (size + simdjson::SIMDJSON_PADDING + page - 1) / page * page;
    void* reserve = ::mmap(nullptr, length_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserve == MAP_FAILED) return false;
    base_ = static_cast<char*>(reserve);
    size_ = size;
    if (size > 0) {
      void* file = ::mmap(base_, size, PROT_READ, MAP_PRIVATE | MAP_FIXED | (populate ? MAP_POPULATE : 0), fd, 0);
      if (file == MAP_FAILED) return false;
    }
    return true;
  }
  void reset() {
    if (base_ != nullptr) ::munmap(base_, length_);
    base_ = nullptr;
    length_ = size_ = 0;
  }
  [[nodiscard]] const char* data() const { return base_; }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] std::size_t capacity() const { return length_; }

 private:
  char* base_ = nullptr;
  std::size_t length_ = 0;
  std::size_t size_ = 0;
};

/// A whole file mapped read-only (the index cache).
class FileMapping {
 public:
  FileMapping() = default;
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;
  ~FileMapping() {
    if (base_ != nullptr) ::munmap(base_, size_);
  }
  bool map(const fs::path& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    bool ok = ::fstat(fd, &st) == 0 && st.st_size > 0;
    if (ok) {
      void* p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      ok = p != MAP_FAILED;
      if (ok) {
        base_ = static_cast<char*>(p);
        size_ = static_cast<std::size_t>(st.st_size);
      }
    }
    ::close(fd);
    return ok;
  }
  void reset() {
    if (base_ != nullptr) ::munmap(base_, size_);
    base_ = nullptr;
    size_ = 0;
  }
  [[nodiscard]] const char* data() const { return base_; }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  char* base_ = nullptr;
  std::size_t size_ = 0;
};

// --- the index and its cache format -----------------------------------------------------------

using IndexEntry = RepodataSpan;
constexpr std::uint32_t kFromConda = kSpanFromConda;
constexpr std::uint32_t kEscaped = kSpanEscaped;
constexpr std::uint32_t kKeyLength = kSpanKeyLength;

/// One package name: its entries are order[first, first + count).
struct IndexName {
  std::uint32_t first;
  std::uint32_t count;
  std::uint32_t text_offset;  ///< in the name blob
  std::uint32_t text_length;
};
static_assert(sizeof(IndexName) == 16);

constexpr char kMagic[8] = {'E', 'L', 'R', 'D', 'I', 'D', 'X', '\0'};
constexpr std::uint32_t kFormat = 1;

/// The cache file's header; the body follows: IndexEntry[entries], uint32 order[entries],
/// IndexName[names], base_url bytes, name blob bytes.
struct CacheHeader {
  char magic[8];
  std::uint32_t format;
  std::uint32_t header_size;
  std::uint64_t identity_size, identity_mtime_ns, identity_inode, identity_device;
  std::uint64_t text_size;
  std::uint64_t fingerprint;
  std::uint64_t entries, names, base_url_length, blob_length;
  std::uint64_t checksum;  ///< of the body
};

/// A fast 64-bit checksum (not cryptographic: it detects damage, not tampering).
std::uint64_t checksum64(const char* p, std::size_t n) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdULL;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001b3ULL;
  return h ^ (h >> 31);
}

/// Fingerprint of the text: its size and its first and last 4 KiB.
std::uint64_t fingerprint_of(std::string_view text) {
  std::size_t n = std::min<std::size_t>(4096, text.size());
  return checksum64(text.data(), n) ^ (checksum64(text.data() + text.size() - n, n) * 31) ^ text.size();
}

struct Identity {
  std::uint64_t size = 0, mtime_ns = 0, inode = 0, device = 0;
};

std::optional<Identity> identity_of(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return std::nullopt;
  return Identity{static_cast<std::uint64_t>(st.st_size),
                  static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(st.st_mtim.tv_nsec),
                  static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_dev)};
}

fs::path cache_file_for(const fs::path& cache_dir, const fs::path& identity_file) {
  std::error_code ec;
  fs::path abs = fs::absolute(identity_file, ec);
  if (ec) abs = identity_file;
  return cache_dir / (hash_bytes(abs.lexically_normal().string(), HashAlgorithm::Sha256).substr(0, 24) + ".idx");
}

std::string unescape_key(std::string_view raw) {
  try {
    return nlohmann::json::parse("\"" + std::string(raw) + "\"").get<std::string>();
  } catch (const nlohmann::json::exception&) {
    return std::string(raw);
  }
}

}  // namespace

Error repodata_json_error(std::string_view whole, std::size_t base, std::string_view span, const std::string& source,
                          const std::string& simd_msg) {
  std::size_t byte = 0;
  std::string what = simd_msg;
  try {
    auto parsed = nlohmann::json::parse(span.begin(), span.end());
    (void)parsed.is_null();
  } catch (const nlohmann::json::parse_error& e) {
    byte = e.byte > 0 ? e.byte - 1 : 0;
    what = e.what();
    if (auto p = what.find("syntax error"); p != std::string::npos) what = what.substr(p);
  }
  byte = std::min(base + byte, whole.size());
  std::size_t ls = whole.rfind('\n', byte == 0 ? 0 : byte - 1);
  ls = (ls == std::string_view::npos || byte == 0) ? 0 : ls + 1;
  std::size_t le = whole.find('\n', byte);
  if (le == std::string_view::npos) le = whole.size();
  std::string line(whole.substr(ls, std::min<std::size_t>(le - ls, 200)));
  std::string caret(std::min<std::size_t>(byte - ls, 200), ' ');
  return Error{ErrorKind::Parse, source + ":" + line_col(whole, byte), "malformed repodata JSON: " + what,
               "  " + line + "\n  " + caret + "^",
               "the channel's repodata.json is damaged; re-index the channel or clear the repodata cache"};
}

struct ParsedName {
  std::vector<RepoDataRecord> records;
  std::vector<std::uint32_t> entries;  ///< the entry each record came from
};

struct RepodataIndex::Impl {
  std::string channel, subdir, source;
  std::string base;  ///< download base URL of the records
  std::string base_url_raw;

  JsonMapping mapping;
  std::string owned;
  std::string_view text;
  std::size_t capacity = 0;

  std::vector<IndexEntry> own_entries;
  std::vector<std::uint32_t> own_order;
  std::vector<IndexName> own_names;
  std::string own_blob;
  FileMapping cache;  ///< when loaded from the cache, the arrays point into it
  const IndexEntry* entries = nullptr;
  std::size_t n_entries = 0;
  const std::uint32_t* order = nullptr;
  const IndexName* slots = nullptr;
  std::size_t n_names = 0;
  const char* blob = nullptr;
  std::vector<std::string_view> names;
  bool from_cache = false;

  mutable std::mutex mu;
  mutable std::vector<std::unique_ptr<ParsedName>> parsed;  ///< by name slot
  mutable std::size_t parsed_names = 0, parsed_records = 0;
  mutable std::vector<std::pair<std::uint32_t, std::string>> warnings;
  mutable std::optional<std::pair<std::uint32_t, Error>> first_error;
  mutable std::optional<std::string> hash;
  mutable simdjson::dom::parser dom;

  // Sharded (from_shards): names are the shard index's, each shard becomes an index of its own.
  std::shared_ptr<const RepodataShardSource> shards;
  struct ShardSlot {
    std::unique_ptr<RepodataIndex> index;  ///< null when the shard could not be obtained
  };
  mutable std::map<std::string, ShardSlot, std::less<>> shard_slots;
  mutable std::vector<Error> shard_errors;
  /// Parses the shard of `name` (called with `mu` held).
  const ShardSlot& parse_shard(std::string_view name) const;

  [[nodiscard]] std::string file_name(const IndexEntry& e) const {
    std::string_view raw = text.substr(e.key_offset, e.key_meta & kKeyLength);
    return (e.key_meta & kEscaped) != 0 ? unescape_key(raw) : std::string(raw);
  }
  void finish_setup() {
    base = url_join(channel, subdir);
    if (!base_url_raw.empty()) {
      std::string b = redact_url(base_url_raw);
      base = b.find("://") != std::string::npos ? b : url_join(base, b);
      while (base.size() > 1 && base.back() == '/') base.pop_back();
    }
    names.clear();
    names.reserve(n_names);
    for (std::size_t i = 0; i < n_names; ++i) names.emplace_back(blob + slots[i].text_offset, slots[i].text_length);
    parsed.resize(n_names);
  }
  void use_own() {
    entries = own_entries.data();
    n_entries = own_entries.size();
    order = own_order.data();
    slots = own_names.data();
    n_names = own_names.size();
    blob = own_blob.data();
  }
  bool generic_scan = false;  ///< RepodataIndexOptions::generic_scan
  bool scanned_fast = false;  ///< the dedicated scanner built the index
  Status scan_generic();
  Status build();
  bool load_cache(const fs::path& path, const Identity& id);
  void write_cache(const fs::path& path, const Identity& id) const;
  void parse_name(std::size_t slot) const;
};

/// The generic pass (simdjson on-demand): notes every record's spans in own_entries.
Status RepodataIndex::Impl::scan_generic() {
  using namespace simdjson;
  base_url_raw.clear();
  own_entries.clear();
  ondemand::parser parser;
  padded_string_view psv(text.data(), text.size(), capacity);
  auto fail = [&](error_code err) { return repodata_json_error(text, 0, text, source, error_message(err)); };
  ondemand::document doc;
  if (auto err = parser.iterate(psv).get(doc)) return fail(err);
  ondemand::object top;
  if (auto err = doc.get_object().get(top)) {
    if (err == INCORRECT_TYPE)
      return Error{ErrorKind::Parse, source + ":1:1", "repodata is not a JSON object", "",
                   "a repodata.json has the keys info, packages and packages.conda"};
    return fail(err);
  }
  for (auto field_result : top) {
    ondemand::field field;
    if (auto err = std::move(field_result).get(field)) return fail(err);
    std::string_view key;
    if (auto err = field.unescaped_key().get(key)) return fail(err);
    if (key == "info") {
      ondemand::object info;
      if (field.value().get_object().get(info) != SUCCESS) continue;
      for (auto info_field : info) {
        ondemand::field f;
        if (auto err = std::move(info_field).get(f)) return fail(err);
        std::string_view k;
        if (auto err = f.unescaped_key().get(k)) return fail(err);
        std::string_view v;
        if (k == "base_url" && f.value().get_string().get(v) == SUCCESS) base_url_raw = std::string(v);
      }
      continue;
    }
    const bool conda = key == "packages.conda";
    if (!conda && key != "packages") continue;
    const char* section = conda ? "packages.conda" : "packages";
    ondemand::object packages;
    if (field.value().get_object().get(packages) != SUCCESS) continue;
    for (auto record_field : packages) {
      ondemand::field r;
      if (auto err = std::move(record_field).get(r)) return fail(err);
      const char* k = r.key().raw();
      std::size_t klen = 0;
      bool escaped = false;
      while (k + klen < text.data() + text.size() && k[klen] != '"') {
        if (k[klen] == '\\') {
          escaped = true;
          ++klen;
        }
        ++klen;
      }
      std::string_view raw_key(k, klen);
      ondemand::object obj;
      if (auto err = r.value().get_object().get(obj)) {
        if (err == INCORRECT_TYPE)
          return Error{ErrorKind::Parse,
                       source + ": " + section + "[\"" + (escaped ? unescape_key(raw_key) : std::string(raw_key)) + "\"]",
                       "package record is not a JSON object", "",
                       "each entry of packages/packages.conda maps a file name to a record object"};
        return fail(err);
      }
      std::string_view raw;
      if (auto err = obj.raw_json().get(raw)) return fail(err);
      if (klen > kKeyLength || raw.size() > 0xffffffffULL)
        return Error{ErrorKind::Parse, source + ": " + section, "a package record or file name is too long", "", ""};
      IndexEntry e{static_cast<std::uint64_t>(raw.data() - text.data()),
                   static_cast<std::uint64_t>(k - text.data()), static_cast<std::uint32_t>(raw.size()),
                   static_cast<std::uint32_t>(klen) | (conda ? kFromConda : 0u) | (escaped ? kEscaped : 0u)};
      own_entries.push_back(e);
    }
  }
  return ok_status();
}

/// Notes every record's spans (the dedicated scanner, or simdjson's pass where it declines or
/// `generic_scan` asks for it) and groups them by name.
Status RepodataIndex::Impl::build() {
  own_entries.clear();
  std::vector<std::uint32_t> name_info;
  scanned_fast = !generic_scan && scan_repodata_fast(text, own_entries, name_info, base_url_raw);
  if (!scanned_fast) {
    if (auto scanned = scan_generic(); !scanned) return scanned;
    name_info.assign(own_entries.size(), 0);
    std::uint32_t previous = kNameOdd;
    for (std::size_t i = 0; i < own_entries.size(); ++i) {
      const IndexEntry& e = own_entries[i];
      previous = name_info_of(text.substr(e.key_offset, e.key_meta & kKeyLength), (e.key_meta & kEscaped) != 0,
                              i == 0 ? std::string_view{} : text.substr(own_entries[i - 1].key_offset),
                              previous);
      name_info[i] = previous;
    }
  }
  // Group: a name id per entry (written over its name info), names sorted, entries of one name
  // in file order. Names are views of the text; those of file names with escapes or capitals
  // (rare) are copies.
  std::vector<std::uint32_t>& id_of = name_info;
  std::deque<std::string> odd_names;
  std::unordered_map<std::string_view, std::uint32_t> ids;
  ids.reserve(own_entries.size() / 8 + 16);
  std::vector<std::string_view> by_id;
  std::vector<std::uint32_t> count;
  by_id.reserve(own_entries.size() / 8 + 16);
  count.reserve(own_entries.size() / 8 + 16);
  std::size_t name_bytes = 0;
  for (std::size_t i = 0; i < own_entries.size(); ++i) {
    const std::uint32_t info = name_info[i];
    if ((info & kNameSame) != 0) {  // the name of the entry before: no lookup
      id_of[i] = id_of[i - 1];
      ++count[id_of[i]];
      continue;
    }
    const IndexEntry& e = own_entries[i];
    std::string_view name;
    if ((info & kNameOdd) == 0) {
      name = text.substr(e.key_offset, info & kNameLength);
    } else {
      const std::string_view raw_key = text.substr(e.key_offset, e.key_meta & kKeyLength);
      std::string n(name_of_file((e.key_meta & kEscaped) != 0 ? unescape_key(raw_key) : std::string(raw_key)));
      name = odd_names.emplace_back(ascii_lower(std::move(n)));
    }
    auto [it, inserted] = ids.try_emplace(name, static_cast<std::uint32_t>(by_id.size()));
    if (inserted) {
      by_id.push_back(name);
      count.push_back(0);
      name_bytes += name.size();
    }
    id_of[i] = it->second;
    ++count[it->second];
  }
  // Sort by the first 8 bytes (big-endian, zero-padded: the same order) held in one array, and
  // only compare the texts, scattered over the JSON, on a tie.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> sorted(by_id.size());
  for (std::uint32_t i = 0; i < sorted.size(); ++i) {
    std::uint64_t prefix = 0;
    for (std::size_t k = 0; k < 8; ++k)
      prefix = prefix << 8 | (k < by_id[i].size() ? static_cast<unsigned char>(by_id[i][k]) : 0u);
    sorted[i] = {prefix, i};
  }
  std::sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : by_id[a.second] < by_id[b.second];
  });
  std::vector<std::uint32_t> start(by_id.size());
  own_names.resize(by_id.size());
  own_blob.reserve(name_bytes);
  std::uint32_t pos = 0;
  for (std::size_t s = 0; s < sorted.size(); ++s) {
    std::uint32_t id = sorted[s].second;
    start[id] = pos;
    own_names[s] = {pos, count[id], static_cast<std::uint32_t>(own_blob.size()),
                    static_cast<std::uint32_t>(by_id[id].size())};
    own_blob.append(by_id[id]);
    pos += count[id];
  }
  own_order.resize(own_entries.size());
  for (std::size_t i = 0; i < own_entries.size(); ++i) own_order[start[id_of[i]]++] = static_cast<std::uint32_t>(i);
  use_own();
  return ok_status();
}

bool RepodataIndex::Impl::load_cache(const fs::path& path, const Identity& id) {
  if (!cache.map(path) || cache.size() < sizeof(CacheHeader)) return false;
  CacheHeader h;
  std::memcpy(&h, cache.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.format != kFormat || h.header_size != sizeof h) return false;
  if (h.identity_size != id.size || h.identity_mtime_ns != id.mtime_ns || h.identity_inode != id.inode ||
      h.identity_device != id.device || h.text_size != text.size() || h.fingerprint != fingerprint_of(text))
    return false;
  const std::uint64_t body = h.entries * (sizeof(IndexEntry) + 4) + h.names * sizeof(IndexName) + h.base_url_length +
                             h.blob_length;
  if (h.entries > 0xffffffffULL || h.names > h.entries + 1 || body != cache.size() - sizeof h) return false;
  const char* p = cache.data() + sizeof h;
  if (checksum64(p, body) != h.checksum) return false;
  entries = reinterpret_cast<const IndexEntry*>(p);
  n_entries = h.entries;
  order = reinterpret_cast<const std::uint32_t*>(p + h.entries * sizeof(IndexEntry));
  slots = reinterpret_cast<const IndexName*>(p + h.entries * (sizeof(IndexEntry) + 4));
  n_names = h.names;
  const char* base_url = reinterpret_cast<const char*>(slots + n_names);
  base_url_raw.assign(base_url, h.base_url_length);
  blob = base_url + h.base_url_length;
  // Bounds: a damaged file that passed the checksum must still never read out of range.
  for (std::size_t i = 0; i < n_entries; ++i) {
    const IndexEntry& e = entries[i];
    if (e.record_offset + e.record_length > text.size() || e.key_offset + (e.key_meta & kKeyLength) > text.size() ||
        order[i] >= n_entries)
      return false;
  }
  std::uint64_t covered = 0;
  for (std::size_t i = 0; i < n_names; ++i) {
    const IndexName& s = slots[i];
    if (s.first != covered || std::uint64_t{s.first} + s.count > n_entries ||
        std::uint64_t{s.text_offset} + s.text_length > h.blob_length)
      return false;
    covered += s.count;
    if (i > 0 && std::string_view(blob + slots[i - 1].text_offset, slots[i - 1].text_length) >=
                     std::string_view(blob + s.text_offset, s.text_length))
      return false;
  }
  return covered == n_entries;
}

void RepodataIndex::Impl::write_cache(const fs::path& path, const Identity& id) const {
  CacheHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.format = kFormat;
  h.header_size = sizeof h;
  h.identity_size = id.size;
  h.identity_mtime_ns = id.mtime_ns;
  h.identity_inode = id.inode;
  h.identity_device = id.device;
  h.text_size = text.size();
  h.fingerprint = fingerprint_of(text);
  h.entries = n_entries;
  h.names = n_names;
  h.base_url_length = base_url_raw.size();
  h.blob_length = own_blob.size();
  std::string out(sizeof h, '\0');
  out.append(reinterpret_cast<const char*>(entries), n_entries * sizeof(IndexEntry));
  out.append(reinterpret_cast<const char*>(order), n_entries * 4);
  out.append(reinterpret_cast<const char*>(slots), n_names * sizeof(IndexName));
  out.append(base_url_raw);
  out.append(own_blob);
  h.checksum = checksum64(out.data() + sizeof h, out.size() - sizeof h);
  std::memcpy(out.data(), &h, sizeof h);

  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  // An unwritable cache only costs the next run a rebuild; a crash loses it the same way.
  (void)write_file_atomic(path, out, {.mode = 0644, .follow_symlink = false, .sync = false});
}

/// Parses the records of one name (called with `mu` held).
void RepodataIndex::Impl::parse_name(std::size_t slot) const {
  auto out = std::make_unique<ParsedName>();
  const IndexName& s = slots[slot];
  const std::string_view name(blob + s.text_offset, s.text_length);
  std::vector<std::uint32_t> todo(order + s.first, order + s.first + s.count);
  // .conda first, each section in file order.
  std::stable_sort(todo.begin(), todo.end(), [&](std::uint32_t a, std::uint32_t b) {
    return (entries[a].key_meta & kFromConda) > (entries[b].key_meta & kFromConda);
  });
  std::set<std::string, std::less<>> stems;
  auto problem = [&](std::uint32_t ei, std::string text_, std::optional<Error> as_error) {
    warnings.emplace_back(ei, std::move(text_));
    if (as_error && (!first_error || first_error->first > ei)) first_error.emplace(ei, std::move(*as_error));
  };
  for (std::uint32_t ei : todo) {
    const IndexEntry& e = entries[ei];
    const std::string fn = file_name(e);
    const char* section = (e.key_meta & kFromConda) != 0 ? "packages.conda" : "packages";
    const std::string where = source + ": " + section + "[\"" + fn + "\"]";
    ++parsed_records;
    element obj;
    std::string_view span = text.substr(e.record_offset, e.record_length);
    if (auto err = dom.parse(span.data(), span.size(), false).get(obj); err != simdjson::SUCCESS) {
      Error bad = repodata_json_error(text, e.record_offset, span, source, simdjson::error_message(err));
      problem(ei, where + ": skipped, " + bad.message + " at " + bad.where, bad);
      continue;
    }
    if (auto why = wrong_field_type(obj)) {
      Error bad{ErrorKind::Parse, where, "package record " + *why, "",
                "fix the channel's repodata (conda and rattler read these fields with these types only)"};
      problem(ei, where + ": skipped, " + *why, bad);
      continue;
    }
    RepoDataRecord r;
    r.name = get_string(obj, "name");
    std::string version = get_string(obj, "version");
    if (r.name.empty() || version.empty()) {
      Error bad{ErrorKind::Parse, where, "package record lacks 'name' or 'version'", "",
                "every repodata record needs name, version and build"};
      problem(ei, where + ": skipped, the record lacks 'name' or 'version'", bad);
      continue;
    }
    r.name = ascii_lower(std::move(r.name));
    if (r.name != name) {
      problem(ei, where + ": skipped, its name '" + r.name + "' disagrees with the file name", std::nullopt);
      continue;
    }
    auto v = Version::parse(version);
    if (!v) {
      problem(ei, where + ": skipped, version '" + version + "' is not a conda version", std::nullopt);
      continue;
    }
    std::string stem(stem_of(fn));
    if (stems.count(stem) > 0) continue;  // the .conda of this package is already in
    stems.insert(std::move(stem));
    r.version = std::move(*v);
    r.build = get_string(obj, "build");
    r.build_number = get_uint(obj, "build_number").value_or(0);
    r.subdir = subdir;  // conda: the subdir's own name wins over the record's field
    r.depends = get_string_list(obj, "depends");
    r.constrains = get_string_list(obj, "constrains");
    r.track_features = get_features(obj, "track_features");
    r.features = get_string(obj, "features");
    r.license = get_string(obj, "license");
    r.license_family = get_string(obj, "license_family");
    r.md5 = get_string(obj, "md5");
    r.sha256 = get_string(obj, "sha256");
    r.size = get_uint(obj, "size");
    if (auto ts = get_uint(obj, "timestamp")) r.timestamp = *ts > 253402300799ULL ? *ts : *ts * 1000;
    r.noarch = get_noarch(obj);
    r.arch = get_string(obj, "arch");
    r.platform = get_string(obj, "platform");
    r.python_site_packages_path = get_string(obj, "python_site_packages_path");
    r.file_name = fn;
    r.url = url_join(base, fn);
    r.channel = channel;
    out->records.push_back(std::move(r));
    out->entries.push_back(ei);
  }
  parsed[slot] = std::move(out);
  ++parsed_names;
}

// --- RepodataIndex ----------------------------------------------------------------------------

RepodataIndex::RepodataIndex(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RepodataIndex::~RepodataIndex() = default;

namespace {
std::unique_ptr<RepodataIndex::Impl> make_impl(const RepodataIndexOptions& o) {
  auto impl = std::make_unique<RepodataIndex::Impl>();
  impl->channel = redact_url(o.channel_url);
  impl->subdir = o.subdir;
  impl->source = redact_url(o.source);
  impl->generic_scan = o.generic_scan;
  return impl;
}
}  // namespace

Result<std::unique_ptr<RepodataIndex>> RepodataIndex::open_file(const fs::path& json_path,
                                                               const RepodataIndexOptions& options) {
  auto impl = make_impl(options);
  if (impl->source.empty()) impl->source = json_path.string();
  int fd = ::open(json_path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return Error{ErrorKind::Io, impl->source, "cannot read repodata: " + why, "",
                 "check that the file exists and is readable"};
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  Identity id{static_cast<std::uint64_t>(st.st_size),
              static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(st.st_mtim.tv_nsec),
              static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_dev)};
  fs::path cache_path = options.cache_dir.empty() ? fs::path{} : cache_file_for(options.cache_dir, json_path);
  // With a cache file present, map without reading ahead: a valid index needs few JSON pages.
  // The dedicated scanner's helper thread takes the page faults (repodata_scan.cpp); simdjson's
  // pass gets the pages mapped up front (MAP_POPULATE).
  std::error_code ec;
  bool try_cache = !cache_path.empty() && fs::exists(cache_path, ec);
  bool mapped = impl->mapping.map(fd, size, !try_cache && options.generic_scan);
  if (mapped) {
    impl->text = std::string_view(impl->mapping.data(), size);
    impl->capacity = impl->mapping.capacity();
    if (try_cache && impl->load_cache(cache_path, id)) {
      ::close(fd);
      impl->from_cache = true;
      impl->finish_setup();
      return std::unique_ptr<RepodataIndex>(new RepodataIndex(std::move(impl)));
    }
    if (try_cache) {  // stale or damaged: read the JSON in full after all
      impl->cache.reset();
      impl->mapping.reset();
      mapped = impl->mapping.map(fd, size, options.generic_scan);
      impl->text = std::string_view(impl->mapping.data(), size);
      impl->capacity = impl->mapping.capacity();
    }
  }
  ::close(fd);
  if (!mapped)
    return Error{ErrorKind::Io, impl->source, "cannot map repodata into memory: " + std::string(std::strerror(errno)), "",
                 "check free memory and the file"};
  if (auto built = impl->build(); !built) return built.error();
  if (!cache_path.empty()) impl->write_cache(cache_path, id);
  impl->finish_setup();
  return std::unique_ptr<RepodataIndex>(new RepodataIndex(std::move(impl)));
}

Result<std::unique_ptr<RepodataIndex>> RepodataIndex::from_text(std::string text, const RepodataIndexOptions& options) {
  auto impl = make_impl(options);
  impl->owned = std::move(text);
  impl->owned.reserve(impl->owned.size() + simdjson::SIMDJSON_PADDING);
  impl->text = impl->owned;
  impl->capacity = impl->owned.capacity();
  std::optional<Identity> id;
  fs::path cache_path;
  if (!options.cache_dir.empty() && !options.identity_file.empty()) {
    id = identity_of(options.identity_file);
    if (id) cache_path = cache_file_for(options.cache_dir, options.identity_file);
  }
  if (!cache_path.empty() && impl->load_cache(cache_path, *id)) {
    impl->from_cache = true;
  } else {
    impl->cache.reset();
    if (auto built = impl->build(); !built) return built.error();
    if (!cache_path.empty()) impl->write_cache(cache_path, *id);
  }
  impl->finish_setup();
  return std::unique_ptr<RepodataIndex>(new RepodataIndex(std::move(impl)));
}

const std::string& RepodataIndex::channel() const { return impl_->channel; }
const std::string& RepodataIndex::subdir() const { return impl_->subdir; }
const std::string& RepodataIndex::source() const { return impl_->source; }
const std::vector<std::string_view>& RepodataIndex::names() const { return impl_->names; }
std::size_t RepodataIndex::entry_count() const {
  if (!impl_->shards) return impl_->n_entries;
  std::lock_guard lock(impl_->mu);
  std::size_t n = 0;
  for (const auto& [name, slot] : impl_->shard_slots)
    if (slot.index) n += slot.index->entry_count();
  return n;
}
bool RepodataIndex::sharded() const { return impl_->shards != nullptr; }
bool RepodataIndex::from_cache() const { return impl_->from_cache; }
bool RepodataIndex::scanned_fast() const { return impl_->scanned_fast; }

bool RepodataIndex::contains(std::string_view name) const {
  return std::binary_search(impl_->names.begin(), impl_->names.end(), name);
}

const std::vector<RepoDataRecord>& RepodataIndex::records(std::string_view name) const {
  static const std::vector<RepoDataRecord> kNone;
  if (impl_->shards) {
    if (!contains(name)) return kNone;
    std::lock_guard lock(impl_->mu);
    const auto& slot = impl_->parse_shard(name);
    return slot.index ? slot.index->records(name) : kNone;
  }
  auto it = std::lower_bound(impl_->names.begin(), impl_->names.end(), name);
  if (it == impl_->names.end() || *it != name) return kNone;
  auto slot = static_cast<std::size_t>(it - impl_->names.begin());
  std::lock_guard lock(impl_->mu);
  if (!impl_->parsed[slot]) impl_->parse_name(slot);
  return impl_->parsed[slot]->records;
}

std::size_t RepodataIndex::parsed_names() const {
  std::lock_guard lock(impl_->mu);
  if (impl_->shards) return impl_->shard_slots.size();
  return impl_->parsed_names;
}

std::size_t RepodataIndex::parsed_records() const {
  std::lock_guard lock(impl_->mu);
  if (impl_->shards) {
    std::size_t n = 0;
    for (const auto& [name, slot] : impl_->shard_slots)
      if (slot.index) n += slot.index->parsed_records();
    return n;
  }
  return impl_->parsed_records;
}

std::vector<std::string> RepodataIndex::warnings() const {
  std::lock_guard lock(impl_->mu);
  if (impl_->shards) {  // by name, then each shard's own order
    std::vector<std::string> out;
    for (const auto& e : impl_->shard_errors) out.push_back(e.where + ": " + e.message);
    for (const auto& [name, slot] : impl_->shard_slots)
      if (slot.index)
        for (auto& w : slot.index->warnings()) out.push_back(std::move(w));
    return out;
  }
  auto w = impl_->warnings;
  std::stable_sort(w.begin(), w.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  out.reserve(w.size());
  for (auto& [ei, text] : w) out.push_back(std::move(text));
  return out;
}

std::optional<Error> RepodataIndex::first_error() const {
  std::lock_guard lock(impl_->mu);
  if (impl_->shards) {
    if (!impl_->shard_errors.empty()) return impl_->shard_errors.front();
    for (const auto& [name, slot] : impl_->shard_slots)
      if (slot.index)
        if (auto e = slot.index->first_error()) return e;
    return std::nullopt;
  }
  if (!impl_->first_error) return std::nullopt;
  return impl_->first_error->second;
}

std::string RepodataIndex::content_hash() const {
  if (impl_->shards) return impl_->shards->index_hash();
  std::lock_guard lock(impl_->mu);
  if (!impl_->hash) impl_->hash = "sha256:" + hash_bytes(impl_->text, HashAlgorithm::Sha256);
  return *impl_->hash;
}

Result<std::vector<RepoDataRecord>> RepodataIndex::all_records() const {
  if (impl_->shards) {
    std::vector<std::string> all(impl_->names.begin(), impl_->names.end());
    if (auto loaded = load_names(all); !loaded) return loaded.error();
    if (auto err = first_error()) return *err;
    std::vector<RepoDataRecord> out;
    for (auto name : impl_->names)
      for (const auto& r : records(name)) out.push_back(r);
    return out;
  }
  for (auto name : impl_->names) (void)records(name);
  if (auto err = first_error()) return *err;
  std::lock_guard lock(impl_->mu);
  struct Item {
    bool conda;
    std::uint32_t entry;
    const RepoDataRecord* record;
  };
  std::vector<Item> items;
  for (const auto& p : impl_->parsed)
    for (std::size_t i = 0; i < p->records.size(); ++i)
      items.push_back({(impl_->entries[p->entries[i]].key_meta & kFromConda) != 0, p->entries[i], &p->records[i]});
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.conda != b.conda ? a.conda : a.entry < b.entry;
  });
  std::vector<RepoDataRecord> out;
  out.reserve(items.size());
  for (const auto& it : items) out.push_back(*it.record);
  return out;
}

const RepodataIndex::Impl::ShardSlot& RepodataIndex::Impl::parse_shard(std::string_view name) const {
  auto it = shard_slots.find(name);
  if (it != shard_slots.end()) return it->second;
  ShardSlot slot;
  auto json = shards->shard_json(name);
  if (json) {
    RepodataIndexOptions o;
    o.source = shards->source() + " (shard of " + std::string(name) + ")";
    o.channel_url = channel;
    o.subdir = subdir;
    auto idx = RepodataIndex::from_text(std::move(*json), o);
    if (idx) slot.index = std::move(*idx);
    else shard_errors.push_back(idx.error());
  } else {
    shard_errors.push_back(json.error());
  }
  return shard_slots.emplace(std::string(name), std::move(slot)).first->second;
}

std::unique_ptr<RepodataIndex> RepodataIndex::from_shards(std::shared_ptr<const RepodataShardSource> shards,
                                                         const RepodataIndexOptions& options) {
  auto impl = make_impl(options);
  if (impl->source.empty()) impl->source = shards->source();
  impl->names = shards->names();
  impl->shards = std::move(shards);
  return std::unique_ptr<RepodataIndex>(new RepodataIndex(std::move(impl)));
}

namespace {
/// The package name a `depends` entry asks for, as the solver reads it (solver/solve.cpp).
std::string dependency_name(std::string_view dep) {
  std::size_t start = 0;
  if (auto colons = dep.rfind("::"); colons != std::string_view::npos) start = colons + 2;
  std::size_t end = start;
  while (end < dep.size() && std::string_view(" =<>!~[").find(dep[end]) == std::string_view::npos) ++end;
  return ascii_lower(std::string(dep.substr(start, end - start)));
}
}  // namespace

Result<std::vector<std::string>> RepodataIndex::load_names(const std::vector<std::string>& names) const {
  if (impl_->shards) {
    std::vector<std::string> todo;
    {
      std::lock_guard lock(impl_->mu);
      for (const auto& n : names)
        if (contains(n) && impl_->shard_slots.find(n) == impl_->shard_slots.end()) todo.push_back(n);
    }
    if (!todo.empty())
      if (auto st = impl_->shards->prefetch(todo); !st) return st.error();
  }
  std::set<std::string> deps;
  for (const auto& n : names)
    for (const auto& r : records(n))
      for (const auto& d : r.depends) deps.insert(dependency_name(d));
  if (impl_->shards) {
    std::lock_guard lock(impl_->mu);
    if (!impl_->shard_errors.empty()) return impl_->shard_errors.front();
  }
  return std::vector<std::string>(deps.begin(), deps.end());
}

}  // namespace envlock
