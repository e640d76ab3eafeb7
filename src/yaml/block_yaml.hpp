#pragma once
// Internal: the YAML tree the lockfile reader validates, and two ways to build it.
//
// envlock writes envlock.lock itself (emit.cpp) in a small block-style subset of YAML: two-space
// indentation, `key: value` maps, `- item` lists, `[]` / `{}`, plain or double-quoted scalars,
// whole-line comments. conda-lock and pixi write their lockfiles in nearly the same subset, plus
// one-line single-quoted scalars and `null` / `~`. parse_block_yaml() reads exactly that subset
// in one pass over the text (a lockfile of 1,000 packages x 5 platforms in milliseconds, where
// yaml-cpp takes seconds) and returns nullopt at the first construct outside it; from_yaml_cpp()
// converts what yaml-cpp parsed, so any other valid YAML (hand edits, other emitters) reads the
// same, only slower. Used by the envlock.lock parser (lockfile.cpp) and by the conda-lock and
// pixi.lock readers (src/readers).
// Both give 1-based line and column for every node, for file:line:col errors.
//
// The tree is flat: a Document holds every node in one array in document order (a container's
// children follow it, linked as siblings), and scalars are slices of the parsed text unless an
// escape had to be resolved. So a lockfile of megabytes is one allocation of nodes, not one per
// node and string; a Node is a handle (document, index) that is only valid while its Document
// and, for parse_block_yaml, the text it was parsed from are alive.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace envlock::block_yaml {

enum class Kind : std::uint8_t { Undefined, Null, Scalar, Sequence, Map };

class Document;

/// A node of a Document (or Undefined): cheap to copy.
class Node {
 public:
  Node() = default;
  Node(const Document* doc, std::uint32_t index) : doc_(doc), index_(index) {}

  [[nodiscard]] Kind kind() const;
  [[nodiscard]] bool IsScalar() const { return kind() == Kind::Scalar; }
  [[nodiscard]] bool IsSequence() const { return kind() == Kind::Sequence; }
  [[nodiscard]] bool IsMap() const { return kind() == Kind::Map; }
  [[nodiscard]] bool IsNull() const { return kind() == Kind::Null; }
  explicit operator bool() const { return kind() != Kind::Undefined; }
  /// Scalar: the text (quotes and escapes resolved); empty for other kinds.
  [[nodiscard]] std::string_view Scalar() const;
  /// 1-based; 0 for Undefined.
  [[nodiscard]] int line() const;
  [[nodiscard]] int column() const;
  /// Items of a sequence, entries of a map; 0 for other kinds.
  [[nodiscard]] std::size_t size() const;
  /// The value of `key` in a map (the first one), or an Undefined node.
  Node operator[](std::string_view key) const;
  /// The i-th item of a sequence (i < size()), walking from the first.
  [[nodiscard]] Node item(std::size_t i) const;
  /// A yaml-cpp mark (0-based) for yaml::Source::error_at.
  [[nodiscard]] YAML::Mark Mark() const;

  /// Children in order: for a sequence its items; for a map key, value, key, value...
  class Iterator {
   public:
    Iterator(const Document* doc, std::uint32_t index) : doc_(doc), index_(index) {}
    Node operator*() const { return {doc_, index_}; }
    Iterator& operator++();
    bool operator==(const Iterator& o) const { return index_ == o.index_; }

   private:
    const Document* doc_;
    std::uint32_t index_;
  };
  struct Range {
    Iterator b, e;
    [[nodiscard]] Iterator begin() const { return b; }
    [[nodiscard]] Iterator end() const { return e; }
  };
  /// Items of a sequence (empty for other kinds).
  [[nodiscard]] Range items() const;
  /// Entries of a map as (key, value) pairs.
  class EntryIterator {
   public:
    explicit EntryIterator(Iterator it) : it_(it) {}
    std::pair<Node, Node> operator*() const;
    EntryIterator& operator++();
    bool operator==(const EntryIterator& o) const { return it_ == o.it_; }

   private:
    Iterator it_;
  };
  struct EntryRange {
    EntryIterator b, e;
    [[nodiscard]] EntryIterator begin() const { return b; }
    [[nodiscard]] EntryIterator end() const { return e; }
  };
  /// Entries of a map (empty for other kinds).
  [[nodiscard]] EntryRange entries() const;

 private:
  [[nodiscard]] const struct Slot* slot() const;
  const Document* doc_ = nullptr;
  std::uint32_t index_ = 0;
};

/// One node's data inside a Document.
struct Slot {
  const char* data = nullptr;  ///< Scalar: the text
  std::uint32_t size = 0;      ///< Scalar: its length
  std::uint32_t line = 0;      ///< 1-based
  std::uint32_t column = 0;    ///< 1-based
  std::uint32_t count = 0;     ///< Sequence: items; Map: entries (the first child is the next slot)
  std::uint32_t next = 0;      ///< the next sibling (0: none)
  Kind kind = Kind::Undefined;
};

/// A parsed YAML document: node 0 is the root.
class Document {
 public:
  [[nodiscard]] Node root() const { return slots_.empty() ? Node() : Node(this, 0); }

 private:
  friend class Node;
  friend class Builder;
  std::vector<Slot> slots_;
  std::deque<std::string> owned_;  ///< scalar texts that are not slices of the parsed text
};

/// "a map", "a list", "a scalar 'x'", "nothing (null)", "nothing" — as yaml::kind_name.
std::string kind_name(const Node& node);

/// Parses text in envlock's block subset; nullopt when the text uses anything else (the caller
/// then parses it with yaml-cpp). The Document refers to `text`, which must outlive it.
std::optional<Document> parse_block_yaml(std::string_view text);

/// The same tree from a yaml-cpp document (owns its scalar texts).
Document from_yaml_cpp(const YAML::Node& node);

inline const Slot* Node::slot() const { return doc_ ? &doc_->slots_[index_] : nullptr; }
inline Kind Node::kind() const { return doc_ ? doc_->slots_[index_].kind : Kind::Undefined; }
inline std::string_view Node::Scalar() const {
  const Slot* s = slot();
  return s && s->kind == Kind::Scalar ? std::string_view(s->data, s->size) : std::string_view();
}
inline int Node::line() const { return doc_ ? static_cast<int>(slot()->line) : 0; }
inline int Node::column() const { return doc_ ? static_cast<int>(slot()->column) : 0; }
inline std::size_t Node::size() const {
  const Slot* s = slot();
  return s && (s->kind == Kind::Sequence || s->kind == Kind::Map) ? s->count : 0;
}
inline Node::Iterator& Node::Iterator::operator++() {
  index_ = doc_->slots_[index_].next;
  return *this;
}
inline std::pair<Node, Node> Node::EntryIterator::operator*() const {
  Iterator v = it_;
  ++v;
  return {*it_, *v};
}
inline Node::EntryIterator& Node::EntryIterator::operator++() {
  ++it_;
  ++it_;
  return *this;
}

}  // namespace envlock::block_yaml
