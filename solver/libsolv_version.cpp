// libsolv's version, kept here so that no libsolv header leaves solver/.
#include <solv/solvversion.h>

#include "envlock/solver_info.hpp"

namespace envlock {

std::string libsolv_version() { return solv_version; }

}  // namespace envlock
