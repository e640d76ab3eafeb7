// Hex and base64 (envlock/encoding.hpp), base64 through OpenSSL's EVP_EncodeBlock/EVP_DecodeBlock.
#include "envlock/encoding.hpp"

#include <openssl/evp.h>

namespace envlock {

std::string hex_encode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(bytes.size() * 2, '0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    out[2 * i] = kDigits[b >> 4];
    out[2 * i + 1] = kDigits[b & 0xf];
  }
  return out;
}

std::optional<std::string> hex_decode(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi << 4 | lo);
  }
  return out;
}

std::string base64_encode(std::string_view bytes, Base64Alphabet alphabet, Base64Padding padding) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  if (padding == Base64Padding::No) {
    while (!out.empty() && out.back() == '=') out.pop_back();
  }
  if (alphabet == Base64Alphabet::UrlSafe) {
    for (char& c : out) {
      if (c == '+') c = '-';
      else if (c == '/') c = '_';
    }
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::string standard(text);
  std::size_t pad = 0;
  for (std::size_t i = 0; i < standard.size(); ++i) {
    char& c = standard[i];
    if (c == '-') c = '+';
    else if (c == '_') c = '/';
    else if (c == '=') ++pad;
    else if (pad != 0) return std::nullopt;  // padding inside the text
    else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/'))
      return std::nullopt;  // EVP_DecodeBlock would skip white space at the ends; base64 has none
  }
  if (pad > 2 || (pad != 0 && standard.size() % 4 != 0)) return std::nullopt;
  standard.resize(standard.size() - pad);
  if (standard.size() % 4 == 1) return std::nullopt;
  const std::size_t data = standard.size() / 4 * 3 + (standard.size() % 4 == 0 ? 0 : standard.size() % 4 - 1);
  while (standard.size() % 4 != 0) standard += '=';
  std::string out(standard.size() / 4 * 3, '\0');
  if (EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(standard.data()),
                      static_cast<int>(standard.size())) < 0)
    return std::nullopt;
  out.resize(data);  // EVP_DecodeBlock counts the bytes of the padding too
  return out;
}

std::string record_sha256_hex(std::string_view field) {
  if (!field.starts_with("sha256=")) return "";
  const auto raw = base64_decode(field.substr(7));
  return raw && raw->size() == 32 ? hex_encode(*raw) : "";
}

std::string record_sha256_field(std::string_view hex) {
  return "sha256=" + base64_encode(hex_decode(hex).value_or(""), Base64Alphabet::UrlSafe, Base64Padding::No);
}

}  // namespace envlock
