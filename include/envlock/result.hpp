#pragma once
// envlock/result.hpp — the one error style of envlock.
//
// Expected failures (bad input, missing files, unsatisfiable requests, network errors) are values:
// functions return `Result<T>`, holding either a T or an `Error`. Exceptions are kept for broken
// invariants (programming errors). GCC 12 lacks std::expected, hence this small class.
//
// Error messages follow one shape everywhere, so users learn to read them once:
//     <where>: <what went wrong>
//       <the offending text, and a caret under the column when there is one>
//     hint: <what to do>
// `where` is `file:line:col`, a package name, a URL (credentials stripped), or empty.

#include <cstddef>
#include <string>
#include <utility>
#include <variant>

namespace envlock {

/// Broad classes of failure; CLI commands map them to exit codes (usage -> 2, others -> 1).
enum class ErrorKind {
  Parse,        ///< malformed input text (version, spec, YAML, JSON, archive entry)
  Io,           ///< filesystem failure (missing file, permission, no space)
  Network,      ///< transfer failure (HTTP status, connection dropped, DNS)
  Integrity,    ///< hash or size mismatch, corrupt archive, unsafe archive entry
  Unsatisfiable,///< the solver found no solution
  Incompatible, ///< host cannot run what is asked (glibc, driver, platform)
  Usage,        ///< the user asked for something inconsistent (bad flag combination)
  Stale,        ///< a lockfile does not match its manifest
  Internal,     ///< a bug in envlock
};

/// A failure with a place and a reason. `message` is the primary line without `where`;
/// `detail` holds further lines (context, caret); `hint` says what to do.
struct Error {
  ErrorKind kind = ErrorKind::Internal;
  std::string where;    ///< "file:line:col", package, URL; may be empty
  std::string message;  ///< what went wrong, one line
  std::string detail;   ///< optional extra lines (no trailing newline)
  std::string hint;     ///< optional: what the user can do
  long http_status = 0; ///< ErrorKind::Network from an HTTP answer: its status (404, 503, ...);
                        ///< 0 for every other error (see envlock/fetch.hpp)

  /// Renders the error in envlock's one style (see the file comment). No trailing newline.
  [[nodiscard]] std::string to_string() const;

  /// Returns a copy with `outer` prepended to `where` ("outer: where") or set when empty.
  [[nodiscard]] Error with_context(const std::string& outer) const;
};

/// Builds a parse error for `input` failing at character `pos` (0-based) because of `rule`.
/// The rendered detail shows the input with a caret under `pos`.
Error parse_error(const std::string& what, const std::string& input, std::size_t pos,
                  const std::string& rule);

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT(implicit)
  Result(Error error) : v_(std::move(error)) {}      // NOLINT(implicit)

  [[nodiscard]] bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const Error& error() const { return std::get<1>(v_); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> v_;
};

/// Result of an operation with no value.
struct Unit {};
using Status = Result<Unit>;
inline Status ok_status() { return Unit{}; }

}  // namespace envlock
