// The dedicated repodata.json scanner (see repodata_scan.hpp): a strict scalar reader for the
// two top levels (the document object and the packages objects) and an AVX2 block scanner that
// finds where each record object ends — simdjson's stage-1 technique (quote and backslash
// masks, carry-less multiply for the in-string mask) without its structural index, whose
// 4 bytes per structural character are most of the cost of the generic pass.
#include "repodata_scan.hpp"

#include <cstring>
#include <system_error>
#include <simdjson.h>
#include <thread>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ENVLOCK_SCAN_X86 1
#define ENVLOCK_SCAN_TARGET __attribute__((target("avx2,pclmul")))
#endif

namespace envlock {

namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);
/// Deeper nesting is left to simdjson (its parser's limit is 1024 levels).
constexpr long kMaxDepth = 1000;

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

#ifdef ENVLOCK_SCAN_X86

ENVLOCK_SCAN_TARGET inline std::uint64_t eq_mask(__m256i lo, __m256i hi, char c) {
  const __m256i v = _mm256_set1_epi8(c);
  const auto a = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, v)));
  const auto b = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, v)));
  return a | (std::uint64_t{b} << 32);
}

/// Bytes 0x00-0x1f (control characters JSON strings must escape).
ENVLOCK_SCAN_TARGET inline std::uint64_t control_mask(__m256i lo, __m256i hi) {
  const __m256i v = _mm256_set1_epi8(0x1f);
  const auto a = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_max_epu8(lo, v), v)));
  const auto b = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_max_epu8(hi, v), v)));
  return a | (std::uint64_t{b} << 32);
}

/// Bit i set when bits 0..i of `m` hold an odd number of ones.
ENVLOCK_SCAN_TARGET inline std::uint64_t prefix_xor(std::uint64_t m) {
  const __m128i r = _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<long long>(m)), _mm_set1_epi8(-1), 0);
  return static_cast<std::uint64_t>(_mm_cvtsi128_si64(r));
}

/// The characters escaped by a backslash (simdjson's find_escaped); `carry` says whether the
/// first byte of this block is escaped and becomes the same for the next block.
inline std::uint64_t escaped_of(std::uint64_t backslash, std::uint64_t& carry) {
  backslash &= ~carry;
  const std::uint64_t follows_escape = backslash << 1 | carry;
  constexpr std::uint64_t even_bits = 0x5555555555555555ULL;
  const std::uint64_t odd_starts = backslash & ~even_bits & ~follows_escape;
  std::uint64_t even_sequences;
  carry = __builtin_add_overflow(odd_starts, backslash, &even_sequences) ? 1 : 0;
  const std::uint64_t invert = even_sequences << 1;
  return (even_bits ^ invert) & follows_escape;
}

/// The end (one past the matching bracket) of the object or array that starts at text[pos], or
/// kNone when it does not end before the text does, a string in it holds a raw control
/// character, or it nests deeper than kMaxDepth. Strings are skipped exactly as JSON defines them; brackets of either kind count
/// as one depth, as simdjson's skipping does.
ENVLOCK_SCAN_TARGET std::size_t skip_composite(const char* text, std::size_t size, std::size_t pos) {
  std::uint64_t in_carry = 0, esc_carry = 0;
  long depth = 0;
  alignas(32) char tail[64];
  for (std::size_t p = pos; p < size; p += 64) {
    const char* src = text + p;
    if (size - p < 64) {
      std::memset(tail, ' ', sizeof tail);
      std::memcpy(tail, src, size - p);
      src = tail;
    }
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32));
    std::uint64_t quote = eq_mask(lo, hi, '"');
    const std::uint64_t backslash = eq_mask(lo, hi, '\\');
    if ((backslash | esc_carry) != 0) quote &= ~escaped_of(backslash, esc_carry);
    const std::uint64_t in_string = prefix_xor(quote) ^ in_carry;
    in_carry = static_cast<std::uint64_t>(static_cast<std::int64_t>(in_string) >> 63);
    if ((control_mask(lo, hi) & in_string) != 0) return kNone;
    const std::uint64_t open = (eq_mask(lo, hi, '{') | eq_mask(lo, hi, '[')) & ~in_string;
    const std::uint64_t close = (eq_mask(lo, hi, '}') | eq_mask(lo, hi, ']')) & ~in_string;
    for (std::uint64_t s = open | close; s != 0; s &= s - 1) {
      const std::uint64_t bit = s & (0 - s);
      if ((open & bit) != 0) {
        if (++depth > kMaxDepth) return kNone;
      } else if (--depth == 0) {
        return p + static_cast<std::size_t>(__builtin_ctzll(bit)) + 1;
      }
    }
  }
  return kNone;
}

/// The strict reader of the levels above the records. Every method returns false on anything
/// it does not expect; the caller then falls back to simdjson.
class TopReader {
 public:
  TopReader(std::string_view text, std::vector<RepodataSpan>& spans, std::vector<std::uint32_t>& names,
            std::string& base_url_raw)
      : t_(text.data()), n_(text.size()), spans_(spans), names_(names), base_url_raw_(base_url_raw) {}

  ENVLOCK_SCAN_TARGET bool run() {
    ws();
    if (!take('{')) return false;
    ws();
    if (p_ < n_ && t_[p_] == '}') {
      ++p_;
    } else {
      for (;;) {
        std::size_t key = 0, len = 0;
        bool escaped = false;
        if (!string(key, len, escaped) || escaped) return false;
        ws();
        if (!take(':')) return false;
        ws();
        const std::string_view k(t_ + key, len);
        const bool conda = k == "packages.conda";
        if ((conda || k == "packages") && p_ < n_ && t_[p_] == '{') {
          if (!packages(conda)) return false;
        } else if (k == "info" && p_ < n_ && t_[p_] == '{') {
          if (!info()) return false;
        } else if (!skip_value()) {
          return false;
        }
        ws();
        if (p_ < n_ && t_[p_] == ',') {
          ++p_;
          ws();
          continue;
        }
        if (!take('}')) return false;
        break;
      }
    }
    ws();
    return p_ == n_;
  }

 private:
  void ws() {
    while (p_ < n_ && is_ws(t_[p_])) ++p_;
  }
  bool take(char c) {
    if (p_ >= n_ || t_[p_] != c) return false;
    ++p_;
    return true;
  }
  /// A string at p_: its raw contents [key, key + len); `escaped` when it holds a backslash.
  ENVLOCK_SCAN_TARGET bool string(std::size_t& key, std::size_t& len, bool& escaped) {
    if (!take('"')) return false;
    key = p_;
    escaped = false;
    // 32 bytes at a time to the first quote, backslash or control character.
    const __m256i quote = _mm256_set1_epi8('"'), backslash = _mm256_set1_epi8('\\'), control = _mm256_set1_epi8(0x1f);
    while (p_ + 32 <= n_) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t_ + p_));
      const __m256i hit = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash)),
                                          _mm256_cmpeq_epi8(_mm256_max_epu8(v, control), control));
      const auto m = static_cast<std::uint32_t>(_mm256_movemask_epi8(hit));
      if (m == 0) {
        p_ += 32;
        continue;
      }
      p_ += static_cast<std::size_t>(__builtin_ctz(m));
      const char c = t_[p_];
      if (c == '"') {
        len = p_ - key;
        ++p_;
        return true;
      }
      if (c != '\\') return false;
      escaped = true;
      if (p_ + 1 < n_ && static_cast<unsigned char>(t_[p_ + 1]) < 0x20) return false;
      p_ += 2;
    }
    while (p_ < n_) {
      const auto c = static_cast<unsigned char>(t_[p_]);
      if (c == '"') {
        len = p_ - key;
        ++p_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        escaped = true;
        ++p_;
        if (p_ < n_ && static_cast<unsigned char>(t_[p_]) < 0x20) return false;
      }
      ++p_;
    }
    return false;
  }
  ENVLOCK_SCAN_TARGET bool skip_value() {
    if (p_ >= n_) return false;
    const char c = t_[p_];
    if (c == '{' || c == '[') {
      const std::size_t end = skip_composite(t_, n_, p_);
      if (end == kNone) return false;
      p_ = end;
      return true;
    }
    if (c == '"') {
      std::size_t k = 0, l = 0;
      bool e = false;
      return string(k, l, e);
    }
    const std::size_t start = p_;
    while (p_ < n_ && ((t_[p_] >= '0' && t_[p_] <= '9') || (t_[p_] >= 'a' && t_[p_] <= 'z') ||
                       (t_[p_] >= 'A' && t_[p_] <= 'Z') || t_[p_] == '-' || t_[p_] == '+' || t_[p_] == '.'))
      ++p_;
    return p_ > start;
  }
  /// `info`: its base_url read by simdjson's DOM parser from the object's own span (the last
  /// string-valued `base_url`, as the on-demand pass keeps).
  ENVLOCK_SCAN_TARGET bool info() {
    const std::size_t start = p_;
    const std::size_t end = skip_composite(t_, n_, p_);
    if (end == kNone) return false;
    p_ = end;
    simdjson::dom::parser parser;
    simdjson::dom::object obj;
    if (parser.parse(t_ + start, end - start, true).get_object().get(obj) != simdjson::SUCCESS) return false;
    for (auto field : obj) {
      std::string_view v;
      if (field.key == "base_url" && field.value.get_string().get(v) == simdjson::SUCCESS) base_url_raw_.assign(v);
    }
    return true;
  }
  /// One `packages` / `packages.conda` object at p_.
  ENVLOCK_SCAN_TARGET bool packages(bool conda) {
    ++p_;
    ws();
    if (p_ < n_ && t_[p_] == '}') {
      ++p_;
      return true;
    }
    for (;;) {
      std::size_t key = 0, len = 0;
      bool escaped = false;
      if (!string(key, len, escaped)) return false;
      ws();
      if (!take(':')) return false;
      ws();
      if (p_ >= n_ || t_[p_] != '{') return false;
      const std::size_t start = p_;
      const std::size_t end = skip_composite(t_, n_, p_);
      if (end == kNone) return false;
      p_ = end;
      ws();
      if (len > kSpanKeyLength || p_ - start > 0xffffffffULL) return false;
      spans_.push_back({start, key, static_cast<std::uint32_t>(p_ - start),
                        static_cast<std::uint32_t>(len) | (conda ? kSpanFromConda : 0u) | (escaped ? kSpanEscaped : 0u)});
      const std::string_view raw_key(t_ + key, len);
      previous_ = name_info_of(raw_key, escaped, previous_key_, previous_);
      previous_key_ = raw_key;
      names_.push_back(previous_);
      if (p_ < n_ && t_[p_] == ',') {
        ++p_;
        ws();
        continue;
      }
      return take('}');
    }
  }

  const char* t_;
  std::size_t n_;
  std::size_t p_ = 0;
  std::vector<RepodataSpan>& spans_;
  std::vector<std::uint32_t>& names_;
  std::string& base_url_raw_;
  std::string_view previous_key_;
  std::uint32_t previous_ = kNameOdd;
};

#endif  // ENVLOCK_SCAN_X86

}  // namespace

bool scan_repodata_fast(std::string_view text, std::vector<RepodataSpan>& spans, std::vector<std::uint32_t>& names,
                        std::string& base_url_raw) {
#ifdef ENVLOCK_SCAN_X86
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("pclmul")) return false;
  base_url_raw.clear();
  // simdjson validates UTF-8 in its first stage; so does this pass, on a second thread for
  // large texts (it reads the same pages as the scanner, at several GB/s).
  constexpr std::size_t kThreadFrom = std::size_t{4} << 20;
  // The validation runs ahead of the scanner (it is several times faster), so it also takes the
  // page faults of a file mapping: the scanner finds its pages mapped.
  bool utf8 = true;
  std::thread validator;
  if (text.size() >= kThreadFrom) {
    try {
      validator = std::thread([&] { utf8 = simdjson::validate_utf8(text.data(), text.size()); });
    } catch (const std::system_error&) {  // no thread to spare: validate here
    }
  }
  if (!validator.joinable()) utf8 = simdjson::validate_utf8(text.data(), text.size());
  spans.reserve(spans.size() + text.size() / 256);
  names.reserve(names.size() + text.size() / 256);
  const bool read = TopReader(text, spans, names, base_url_raw).run();
  if (validator.joinable()) validator.join();
  return read && utf8;
#else
  (void)text;
  (void)spans;
  (void)names;
  (void)base_url_raw;
  return false;
#endif
}

}  // namespace envlock
