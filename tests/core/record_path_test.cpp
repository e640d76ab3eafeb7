// RECORD paths of pip-installed files (envlock/record_path.hpp).
#include <gtest/gtest.h>

#include "envlock/record_path.hpp"

namespace envlock {
namespace {

constexpr const char* kSite = "lib/python3.12/site-packages";

TEST(RecordPath, RelativeRowsJoinSitePackages) {
  EXPECT_EQ(record_path_in_prefix(kSite, "numpy/__init__.py", "/opt/env"), "lib/python3.12/site-packages/numpy/__init__.py");
  EXPECT_EQ(record_path_in_prefix(kSite, "../../../bin/f2py", "/opt/env"), "bin/f2py");
  EXPECT_EQ(record_path_in_prefix(kSite, "./a//b/../c.py", "/opt/env"), "lib/python3.12/site-packages/a/c.py");
  EXPECT_EQ(record_path_in_prefix(kSite, "../../../../etc/passwd", "/opt/env"), std::nullopt);
}

TEST(RecordPath, AbsoluteRowsInsideThePrefixBecomeRelative) {
  EXPECT_EQ(record_path_in_prefix(kSite, "/opt/env/bin/tool", "/opt/env"), "bin/tool");
  EXPECT_EQ(record_path_in_prefix(kSite, "/opt/env/bin/tool", "/opt/env/"), "bin/tool");
  EXPECT_EQ(record_path_in_prefix(kSite, "/opt/env/share/../bin/tool", "/opt/env"), "bin/tool");
  // Elsewhere, or a sibling whose name starts the same: outside.
  EXPECT_EQ(record_path_in_prefix(kSite, "/usr/local/bin/tool", "/opt/env"), std::nullopt);
  EXPECT_EQ(record_path_in_prefix(kSite, "/opt/env2/bin/tool", "/opt/env"), std::nullopt);
  EXPECT_EQ(record_path_in_prefix(kSite, "/opt/env", "/opt/env"), std::nullopt);
  EXPECT_EQ(record_path_in_prefix(kSite, "/opt/env/bin/tool", ""), std::nullopt);
}

TEST(RecordPath, NormalizeRelative) {
  EXPECT_EQ(normalize_relative("a/./b/../c"), "a/c");
  EXPECT_EQ(normalize_relative(""), "");
  EXPECT_EQ(normalize_relative(".."), std::nullopt);
}

}  // namespace
}  // namespace envlock
