#pragma once
// Reading a lockfile named on the command line, as `envlock diff` and `envlock show` accept it:
//   PATH      a file in any format readers.hpp reads, or an environment prefix directory;
//   -         standard input;
//   REV:PATH  the file as committed in git revision REV (`git show REV:PATH`, run in the current
//             directory), when no file of that name exists.
// Errors are values naming the argument; `git show` failures carry git's own message.

#include <string>

#include "envlock/readers.hpp"
#include "envlock/result.hpp"

namespace envlock::cli {

struct LockInput {
  ReadResult read;
  std::string label;  ///< the argument as given (for output headers)
};

/// Reads the lockfile that `arg` names (see the file comment).
Result<LockInput> read_lock_input(const std::string& arg);

}  // namespace envlock::cli
