#pragma once
// Private to src/channel: the malformed-JSON error shared by the repodata index and its callers.
#include <cstddef>
#include <string>
#include <string_view>

#include "envlock/result.hpp"

namespace envlock {

/// A malformed-JSON error (ErrorKind::Parse) for the JSON value `span`, which starts at byte
/// `base` of `whole`: nlohmann's parser (run on failure only) finds the position in `span`; the
/// error names `source:line:col` of `whole` and shows the line with a caret.
Error repodata_json_error(std::string_view whole, std::size_t base, std::string_view span, const std::string& source,
                          const std::string& simd_msg);

}  // namespace envlock
