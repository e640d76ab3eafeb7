// The one reader of /proc/driver/nvidia/version (envlock/probe.hpp parse_nvrm_version), which
// probe and snapshot capture both use. The lines are the driver's own (NVIDIA's kernel module,
// nv.c: "NVRM version: NVIDIA UNIX %s Kernel Module  %s  %s"), as in tests/probe and tests/snapshot.
#include <gtest/gtest.h>

#include "envlock/probe.hpp"

namespace envlock {
namespace {

TEST(NvrmVersion, TheNvrmLineAndItsRelease) {
  NvrmVersion v = parse_nvrm_version(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\nGCC version:  gcc 12\n");
  EXPECT_EQ(v.version, "535.104.05");
  EXPECT_EQ(v.line, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023");
  v = parse_nvrm_version("GCC version:  gcc 12\r\nNVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build\r\n");
  EXPECT_EQ(v.version, "550.54.14");
  EXPECT_EQ(v.line, "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build");
}

TEST(NvrmVersion, NoReleaseKeepsTheLineToQuote) {
  NvrmVersion v = parse_nvrm_version("NVRM version: \x1b[31mgarbage\r\n");
  EXPECT_EQ(v.version, "");
  EXPECT_EQ(v.line, "NVRM version: \x1b[31mgarbage");
  v = parse_nvrm_version("  something else  \nmore\n");
  EXPECT_EQ(v.version, "");
  EXPECT_EQ(v.line, "something else");
  v = parse_nvrm_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + std::string(50000, '9') + ".1.1\n");
  EXPECT_EQ(v.version, "");
  EXPECT_EQ(parse_nvrm_version("").line, "");
}

}  // namespace
}  // namespace envlock
