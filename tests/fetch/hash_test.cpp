// Tests of envlock/hash.hpp against published test vectors (FIPS 180-4 examples, RFC 1321 §A.5)
// and the digests repodata records for real packages.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "envlock/hash.hpp"

namespace fs = std::filesystem;
using envlock::HashAlgorithm;

TEST(Hash, KnownVectors) {
  EXPECT_EQ(envlock::hash_bytes("abc", HashAlgorithm::Sha256),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(envlock::hash_bytes("", HashAlgorithm::Sha256),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(envlock::hash_bytes("abc", HashAlgorithm::Md5), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(envlock::hash_bytes("message digest", HashAlgorithm::Md5), "f96b697d7cb7938d525a2f31aaf161d0");
}

TEST(Hash, IncrementalEqualsOneShotAndResets) {
  envlock::Hasher h(HashAlgorithm::Sha256);
  h.update("a");
  h.update("");
  h.update("bc");
  EXPECT_EQ(h.bytes(), 3u);
  EXPECT_EQ(h.hex_digest(), envlock::hash_bytes("abc", HashAlgorithm::Sha256));
  EXPECT_EQ(h.bytes(), 0u);
  h.update("abc");
  EXPECT_EQ(h.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Hash, DigestHelpers) {
  EXPECT_TRUE(envlock::is_hex_digest("900150983CD24FB0D6963F7D28E17F72", HashAlgorithm::Md5));
  EXPECT_FALSE(envlock::is_hex_digest("900150983cd24fb0d6963f7d28e17f7", HashAlgorithm::Md5));
  EXPECT_FALSE(envlock::is_hex_digest("g00150983cd24fb0d6963f7d28e17f72", HashAlgorithm::Md5));
  EXPECT_FALSE(envlock::is_hex_digest("900150983cd24fb0d6963f7d28e17f72", HashAlgorithm::Sha256));
  EXPECT_TRUE(envlock::digest_equal("ABCdef", "abcDEF"));
  EXPECT_FALSE(envlock::digest_equal("abc", "abd"));
  EXPECT_FALSE(envlock::digest_equal("abc", "abcd"));
}

TEST(Hash, FileDigestsAndMissingFile) {
  fs::path p = fs::temp_directory_path() / ("envlock-hash-" + std::to_string(::getpid()));
  {
    std::ofstream f(p, std::ios::binary);
    std::string big(200000, 'x');
    f << big;
  }
  auto d = envlock::digest_file(p);
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->size, 200000u);
  EXPECT_EQ(d->sha256, envlock::hash_bytes(std::string(200000, 'x'), HashAlgorithm::Sha256));
  EXPECT_EQ(d->md5, envlock::hash_bytes(std::string(200000, 'x'), HashAlgorithm::Md5));
  auto one = envlock::hash_file(p, HashAlgorithm::Md5);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, d->md5);
  fs::remove(p);
  auto missing = envlock::digest_file(p);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, envlock::ErrorKind::Io);
  EXPECT_EQ(missing.error().where, p.string());
}

TEST(Hash, RealPackageMatchesRepodata) {
  const fs::path pkg = fs::path(ENVLOCK_SHARED_DIR) /
                       "corpus/packages/conda__conda/tests__data__conda_format_repo__linux-64__zlib-1.2.11-h7b6447c_3.conda";
  if (!fs::exists(pkg)) GTEST_SKIP() << "shared corpus absent: " << pkg;
  auto d = envlock::digest_file(pkg);
  ASSERT_TRUE(d.ok());
  // repodata.json of conda's conda_format_repo records this file with these digests.
  EXPECT_EQ(d->size, 105917u);
  EXPECT_EQ(d->sha256, "f33afff2144e1d6c4cf2e3e184937db8bf825b4537df74662aea5ee207b6a31b");
  EXPECT_EQ(d->md5, "cb23839f06da92ec92c6d2d2d5e0cb4a");
}
