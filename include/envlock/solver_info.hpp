#pragma once
// envlock/solver_info.hpp — facts about the solver library envlock was built with.
#include <string>

namespace envlock {

/// libsolv's version string (e.g. "0.7.32"), as compiled in; envlock requires conda support.
std::string libsolv_version();

}  // namespace envlock
