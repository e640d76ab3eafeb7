// Hex and base64 (envlock/encoding.hpp): RFC 4648 section 10's test vectors, both alphabets,
// and the RECORD hash of PEP 376.
#include <gtest/gtest.h>

#include "envlock/encoding.hpp"

namespace envlock {
namespace {

TEST(Encoding, Hex) {
  EXPECT_EQ(hex_encode(std::string("\x00\x01\xab\xff", 4)), "0001abff");
  EXPECT_EQ(hex_encode(""), "");
  EXPECT_EQ(hex_decode("0001ABff"), std::string("\x00\x01\xab\xff", 4));
  EXPECT_FALSE(hex_decode("abc"));
  EXPECT_FALSE(hex_decode("zz"));
}

TEST(Encoding, Base64Rfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, coded] : vectors) {
    EXPECT_EQ(base64_encode(plain, Base64Alphabet::Standard, Base64Padding::Yes), coded);
    EXPECT_EQ(base64_decode(coded), plain) << coded;
    std::string bare(coded);
    while (!bare.empty() && bare.back() == '=') bare.pop_back();
    EXPECT_EQ(base64_encode(plain, Base64Alphabet::Standard, Base64Padding::No), bare);
    EXPECT_EQ(base64_decode(bare), plain) << bare;
  }
}

TEST(Encoding, Base64AlphabetsAndRefusals) {
  EXPECT_EQ(base64_encode("\xfb\xff", Base64Alphabet::UrlSafe, Base64Padding::No), "-_8");
  EXPECT_EQ(base64_encode("\xfb\xff", Base64Alphabet::Standard, Base64Padding::Yes), "+/8=");
  EXPECT_EQ(base64_decode("-_8"), "\xfb\xff");
  EXPECT_EQ(base64_decode("+/8="), "\xfb\xff");
  EXPECT_FALSE(base64_decode("Zm9v YmFy"));  // white space
  EXPECT_FALSE(base64_decode("Zg==Zg=="));   // padding inside
  EXPECT_FALSE(base64_decode("Zm9vY"));      // 4n+1 characters
  EXPECT_FALSE(base64_decode("Zg==="));
}

// pip's RECORD row for an empty file: sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU
// (PEP 376: urlsafe base64 of the digest without padding).
TEST(Encoding, RecordSha256) {
  const std::string empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  EXPECT_EQ(record_sha256_hex("sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"), empty);
  EXPECT_EQ(record_sha256_hex("sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU="), empty);
  EXPECT_EQ(record_sha256_hex("sha256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU"), empty);
  EXPECT_EQ(record_sha256_hex("md5=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"), "");
  EXPECT_EQ(record_sha256_hex("sha256=47DEQpj8HBSa"), "");  // not 32 bytes
  EXPECT_EQ(record_sha256_hex("sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFUAAAA"), "");
  EXPECT_EQ("sha256=" + base64_encode(*hex_decode(empty), Base64Alphabet::UrlSafe, Base64Padding::No),
            "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
}

}  // namespace
}  // namespace envlock
