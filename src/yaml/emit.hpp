#pragma once
// Internal: the one YAML emitter and its one quoting policy, for every YAML text envlock writes
// itself (envlock.lock, snapshot files) and every scalar it splices into a user's file (manifest
// edits). The envlock_yaml module (src/yaml).
//
// envlock writes its files in the small block subset block_yaml.hpp reads in one pass: two-space
// indentation, `key: value`, `- item`, list items that hold a map with their first key on the
// `- ` line, flow rows `[a, b, ~]`, empty collections as `key: []` / `key: {}`, whole-line
// comments. The bytes depend on this file alone (no library emitter), so the same model gives the
// same bytes on every machine and every yaml-cpp version.
//
// Quoting: a string is written plain only when every YAML reader reads it back as that string
// — YAML 1.2 (yaml-cpp, ruamel) and YAML 1.1 (PyYAML, which conda-lock uses) alike. So a string
// that starts with a digit (`1.10`, `2`, `0o7`, `1_000`, `12:30`: numbers or sexagesimals in
// one of them) or is a boolean/null word of either (`yes`, `off`, `y`, `null`, `~`, any case) is
// double-quoted, as is anything with a character outside a conservative set. Double-quoted text
// escapes `"`, `\` and the C0 controls and DEL (`\n`, `\t`, `\r`, `\xNN`, YAML 1.2 §5.7); every
// other byte is written as it is (UTF-8 is YAML's encoding).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace envlock::yaml {

/// Where a scalar is written: flow collections (`[a, b]`, `{k: v}`) also end plain scalars at
/// `,`, `[`, `]`, `{` and `}`.
enum class Context { Block, Flow };

/// True when `s` written plain reads back as the string `s` under YAML 1.1 and 1.2 readers.
bool plain_safe(std::string_view s, Context context = Context::Block);

/// `s` double-quoted, with `"`, `\`, C0 controls and DEL escaped (docs above). Any string.
std::string double_quoted(std::string_view s);

/// `s` single-quoted (`'` doubled), for a splice that keeps a file's own quoting style. A string
/// with a control byte or line break cannot be single-quoted faithfully: it is double-quoted.
std::string single_quoted(std::string_view s);

/// `s` plain when plain_safe(), else double_quoted(): the one policy for a string value or key.
std::string scalar(std::string_view s, Context context = Context::Block);

/// Writes one block-style YAML document into a string, tracking the indentation. Keys and
/// string values are quoted by scalar(); raw() tokens (numbers, `true`, `~`) are written as
/// given. Nesting: open()/close() for a `key:` holding a block, begin_item_map()/end_item_map()
/// for a `- ` list item holding a map, begin_item()/raw()/end_line() for a one-line item.
class BlockWriter {
 public:
  /// Reserves room for about `bytes` of text.
  void reserve(std::size_t bytes) { out_.reserve(bytes); }

  /// `# text` on a line of its own at the current indentation.
  void comment(std::string_view text);

  /// `key: value` with `value` quoted as a string.
  void kv(std::string_view key, std::string_view value);
  /// `key: value` when `value` is not empty; nothing otherwise.
  void kv_nonempty(std::string_view key, std::string_view value);
  /// `key: token` with `token` written as it is (a number, `true`, `~`, `[]`, a flow row).
  void kv_raw(std::string_view key, std::string_view token);
  void kv_num(std::string_view key, std::uint64_t value);
  void kv_num(std::string_view key, std::int64_t value);
  void kv_bool(std::string_view key, bool value);

  /// `key:` opening a nested block (two columns deeper) until close(); with `empty`, writes
  /// `key: <empty_token>` (`[]` or `{}`) instead, and the block it opens stays empty.
  void open(std::string_view key, bool empty = false, std::string_view empty_token = "{}");
  void close();

  /// `key:` and one `- value` line per string (quoted), or `key: []` when there is none.
  void list(std::string_view key, const std::vector<std::string>& values);

  /// A `- ` list item holding a map: its first key goes on the `- ` line, the others under it.
  void begin_item_map();
  void end_item_map();

  /// A one-line list item: `- ` at the current indentation, then what raw()/flow_scalar() append,
  /// then end_line().
  void begin_item();
  /// Appends `token` as it is.
  void raw(std::string_view token);
  /// Appends `s` quoted for a flow collection.
  void flow_scalar(std::string_view s) { raw(scalar(s, Context::Flow)); }
  /// Starts the value of `key` on the current line: indentation (or the pending `- `), `key: `.
  void begin_value(std::string_view key);
  void end_line() { out_ += '\n'; }

  /// The text written so far (the writer is left empty).
  std::string take() { return std::move(out_); }

 private:
  void key_line(std::string_view key);

  std::string out_;
  int indent_ = 0;
  bool dash_ = false;  ///< the next key opens a list item (`- key:`)
};

}  // namespace envlock::yaml
