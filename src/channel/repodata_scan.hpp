#pragma once
// Private to src/channel: the pass over a repodata.json that notes where each record lies.
//
// Two implementations give the same spans: simdjson's on-demand API (any valid JSON; its errors
// are the ones users see) and a dedicated scanner for the shape of repodata.json (AVX2 on
// x86-64), which declines — and the caller then runs the simdjson pass — on anything it does not
// read exactly as simdjson would. Why the scanner exists and what it measured: docs/cache.md.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace envlock {

/// One record of `packages.conda` / `packages`: where its object and its file name key lie.
/// `record_offset`/`record_length`: from the record's '{' up to (not including) the ',' or '}'
/// that follows it (simdjson's raw_json()); `key_offset`: the first byte after the key's opening
/// quote.
struct RepodataSpan {
  std::uint64_t record_offset;
  std::uint64_t key_offset;
  std::uint32_t record_length;
  std::uint32_t key_meta;  ///< bit 31: from packages.conda; bit 30: the key has escapes; low 30: length
};
static_assert(sizeof(RepodataSpan) == 24);
constexpr std::uint32_t kSpanFromConda = 1u << 31;
constexpr std::uint32_t kSpanEscaped = 1u << 30;
constexpr std::uint32_t kSpanKeyLength = (1u << 30) - 1;

/// True when `s` ends with the literal `suffix` (compared inline: no memcmp call per key).
template <std::size_t N>
inline bool ends_with_literal(std::string_view s, const char (&suffix)[N]) {
  if (s.size() < N - 1) return false;
  const char* p = s.data() + s.size() - (N - 1);
  bool same = true;
  for (std::size_t i = 0; i + 1 < N; ++i) same &= p[i] == suffix[i];
  return same;
}

/// A file name without `.conda` / `.tar.bz2`.
inline std::string_view stem_of(std::string_view fn) {
  if (ends_with_literal(fn, ".conda")) return fn.substr(0, fn.size() - 6);
  if (ends_with_literal(fn, ".tar.bz2")) return fn.substr(0, fn.size() - 8);
  return fn;
}

/// The package name of a file name `<name>-<version>-<build>.<ext>`: the stem cut at its
/// second-to-last '-' (the whole stem when it has fewer than two). Always a prefix of `fn`.
inline std::string_view name_of_file(std::string_view fn) {
  std::string_view stem = stem_of(fn);
  auto last = stem.rfind('-');
  if (last == std::string_view::npos || last == 0) return stem;
  auto second = stem.rfind('-', last - 1);
  return second == std::string_view::npos ? stem : stem.substr(0, second);
}

/// Per span, how its package name is read from its raw key (RepodataNames::info):
/// kNameOdd: the key has escapes or the name capitals (the caller unescapes / lower-cases it);
/// otherwise the name is the key's first `info & kNameLength` bytes, and kNameSame says it equals
/// the name of the span before (keys are usually sorted, so most do).
constexpr std::uint32_t kNameSame = 1u << 31;
constexpr std::uint32_t kNameOdd = 1u << 30;
constexpr std::uint32_t kNameLength = (1u << 30) - 1;

/// The name info of `key` (raw, `escaped` when it has backslashes) after a span whose info is
/// `previous` and whose raw key is `previous_key` (previous = kNameOdd for the first span).
inline std::uint32_t name_info_of(std::string_view key, bool escaped, std::string_view previous_key,
                                  std::uint32_t previous) {
  if (escaped) return kNameOdd;
  const std::string_view name = name_of_file(key);
  for (char c : name)
    if (c >= 'A' && c <= 'Z') return kNameOdd;
  auto info = static_cast<std::uint32_t>(name.size());
  if ((previous & kNameOdd) != 0 || (previous & kNameLength) != name.size()) return info;
  // Names are short: compare inline, 8 bytes at a time, rather than call memcmp.
  const char* a = previous_key.data();
  const char* b = name.data();
  std::size_t n = name.size();
  for (; n >= 8; n -= 8, a += 8, b += 8) {
    std::uint64_t x, y;
    std::memcpy(&x, a, 8);
    std::memcpy(&y, b, 8);
    if (x != y) return info;
  }
  for (; n > 0; --n, ++a, ++b)
    if (*a != *b) return info;
  return info | kNameSame;
}

/// The dedicated scanner. `text` must be followed by readable memory only up to its size (the
/// scanner never reads past it). Appends to `spans` and sets `base_url_raw` (CEP-15's
/// `info.base_url`, unescaped; empty without one). Returns false — leaving `spans` and
/// `base_url_raw` in an unspecified state — when the text is not a repodata.json it reads exactly
/// as the simdjson pass does (invalid UTF-8, a control character in a string, an escaped
/// top-level key, a record that is not an object, unbalanced brackets, anything unexpected
/// between tokens, no AVX2 on this CPU, ...). Uses a second thread for UTF-8 validation on
/// large texts. `names` gets name_info_of() of each span, computed while its key is in cache.
bool scan_repodata_fast(std::string_view text, std::vector<RepodataSpan>& spans, std::vector<std::uint32_t>& names,
                        std::string& base_url_raw);

}  // namespace envlock
