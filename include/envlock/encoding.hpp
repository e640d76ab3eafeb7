#pragma once
// envlock/encoding.hpp — the one hex and base64 codec every module uses: lower-case hexadecimal
// (conda's digests, repodata `sha256`/`md5`, CEP-16 shard names) and base64 (RFC 4648 section 4,
// and section 5's URL-safe alphabet that PEP 376/427 RECORD files write their hashes in), through
// OpenSSL's EVP_EncodeBlock / EVP_DecodeBlock.

#include <optional>
#include <string>
#include <string_view>

namespace envlock {

/// `bytes` as lower-case hexadecimal, two digits a byte ("\x01\xab" -> "01ab").
std::string hex_encode(std::string_view bytes);

/// The bytes of hexadecimal `hex` (either case); nullopt when its length is odd or a character
/// is not a hex digit.
std::optional<std::string> hex_decode(std::string_view hex);

/// The base64 alphabets of RFC 4648: section 4 (`+`, `/`) and section 5 (URL-safe: `-`, `_`).
enum class Base64Alphabet : bool { Standard, UrlSafe };

/// Whether base64_encode() writes the `=` padding to a multiple of four characters.
enum class Base64Padding : bool { No, Yes };

/// `bytes` in base64 (RFC 4648), in the alphabet asked, with or without padding.
std::string base64_encode(std::string_view bytes, Base64Alphabet alphabet, Base64Padding padding);

/// The bytes of base64 `text` (RFC 4648). Both alphabets are read (`+`/`-` and `/`/`_`), the
/// `=` padding may be left out (as RECORD files do); nullopt for any other character (white
/// space included), padding anywhere but at the end, or a length no encoding has (4n+1).
std::optional<std::string> base64_decode(std::string_view text);

/// A PEP 376 RECORD hash field `sha256=<URL-safe base64, no padding>` as lower-case hex; empty
/// when it is not `sha256=` followed by the base64 of exactly 32 bytes.
std::string record_sha256_hex(std::string_view field);
/// The other way: a lower-case hex sha256 digest as a RECORD hash field (`sha256=` and the
/// URL-safe base64 of its bytes, no padding); `sha256=` alone when `hex` is not hex.
std::string record_sha256_field(std::string_view hex);

}  // namespace envlock
