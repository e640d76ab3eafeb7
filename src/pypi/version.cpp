// PEP 440 versions and specifiers, PEP 508 requirements and markers (envlock/pypi_version.hpp),
// following pypa/packaging 21.3 (the one pip 23.0 vendors).
#include "envlock/pypi_version.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

#include "envlock/pypi_name.hpp"
#include "envlock/text.hpp"

namespace envlock {

namespace {

std::uint64_t to_u64(const std::string& s) {
  std::uint64_t v = 0;
  for (char c : s) {
    if (v > (UINT64_MAX - 9) / 10) return UINT64_MAX;  // absurd; keeps ordering monotone
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

// packaging's VERSION_PATTERN, lower-cased input.
const std::regex& version_regex() {
  static const std::regex re(
      R"(^v?(?:([0-9]+)!)?([0-9]+(?:\.[0-9]+)*))"
      R"((?:[-_.]?(alpha|a|beta|b|preview|pre|c|rc)[-_.]?([0-9]+)?)?)"
      R"((?:(?:-([0-9]+))|(?:[-_.]?(post|rev|r)[-_.]?([0-9]+)?))?)"
      R"((?:[-_.]?(dev)[-_.]?([0-9]+)?)?)"
      R"((?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?$)");
  return re;
}

}  // namespace

Result<Pep440Version> Pep440Version::parse(std::string_view text) {
  const std::string t = ascii_lower(trim(text));
  std::smatch m;
  if (t.empty() || !std::regex_match(t, m, version_regex()))
    return Error{ErrorKind::Parse, "", "'" + std::string(text) + "' is not a PEP 440 version", "",
                 "a version is [N!]N(.N)*[{a|b|rc}N][.postN][.devN][+local], e.g. 2.4.1 or 1.0rc1"};
  Pep440Version v;
  if (m[1].matched) v.epoch_ = to_u64(m[1].str());
  v.release_.clear();
  const std::string rel = m[2].str();
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = rel.find('.', start);
    v.release_.push_back(to_u64(rel.substr(start, dot - start)));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (m[3].matched) {
    std::string l = m[3].str();
    if (l == "alpha") l = "a";
    else if (l == "beta") l = "b";
    else if (l == "c" || l == "pre" || l == "preview") l = "rc";
    v.pre_ = std::pair{l, m[4].matched ? to_u64(m[4].str()) : 0};
  }
  if (m[5].matched) v.post_ = to_u64(m[5].str());
  else if (m[6].matched) v.post_ = m[7].matched ? to_u64(m[7].str()) : 0;
  if (m[8].matched) v.dev_ = m[9].matched ? to_u64(m[9].str()) : 0;
  if (m[10].matched) {
    std::string local = m[10].str();
    std::size_t s = 0;
    while (s <= local.size()) {
      std::size_t e = local.find_first_of("-_.", s);
      if (e == std::string::npos) e = local.size();
      const std::string part = local.substr(s, e - s);
      if (std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        v.local_.emplace_back(to_u64(part));
      else
        v.local_.emplace_back(part);
      s = e + 1;
    }
  }
  return v;
}

std::string Pep440Version::to_string() const {
  std::string out;
  if (epoch_ != 0) out += std::to_string(epoch_) + "!";
  for (std::size_t i = 0; i < release_.size(); ++i) out += (i ? "." : "") + std::to_string(release_[i]);
  if (pre_) out += pre_->first + std::to_string(pre_->second);
  if (post_) out += ".post" + std::to_string(*post_);
  if (dev_) out += ".dev" + std::to_string(*dev_);
  if (!local_.empty()) {
    out += "+";
    for (std::size_t i = 0; i < local_.size(); ++i) {
      if (i) out += ".";
      if (const auto* n = std::get_if<std::uint64_t>(&local_[i])) out += std::to_string(*n);
      else out += std::get<std::string>(local_[i]);
    }
  }
  return out;
}

Pep440Version Pep440Version::public_version() const {
  Pep440Version v = *this;
  v.local_.clear();
  return v;
}

Pep440Version Pep440Version::base_version() const {
  Pep440Version v;
  v.epoch_ = epoch_;
  v.release_ = release_;
  return v;
}

std::strong_ordering operator<=>(const Pep440Version& a, const Pep440Version& b) {
  if (auto c = a.epoch_ <=> b.epoch_; c != 0) return c;
  // Release without trailing zeros.
  auto stripped = [](const std::vector<std::uint64_t>& r) {
    std::size_t n = r.size();
    while (n > 0 && r[n - 1] == 0) --n;
    return n;
  };
  const std::size_t na = stripped(a.release_), nb = stripped(b.release_);
  for (std::size_t i = 0; i < std::min(na, nb); ++i)
    if (auto c = a.release_[i] <=> b.release_[i]; c != 0) return c;
  if (auto c = na <=> nb; c != 0) return c;
  // _cmpkey: pre (a dev-only release sorts before any pre-release), post, dev, local.
  auto pre_key = [](const Pep440Version& v) -> std::tuple<int, int, std::uint64_t> {
    if (!v.pre_ && !v.post_ && v.dev_) return {0, 0, 0};  // -inf
    if (!v.pre_) return {2, 0, 0};                         // +inf
    const int kind = v.pre_->first == "a" ? 0 : v.pre_->first == "b" ? 1 : 2;
    return {1, kind, v.pre_->second};
  };
  if (auto c = pre_key(a) <=> pre_key(b); c != 0) return c;
  auto post_key = [](const Pep440Version& v) { return v.post_ ? std::pair{1, *v.post_} : std::pair{0, std::uint64_t{0}}; };
  if (auto c = post_key(a) <=> post_key(b); c != 0) return c;
  auto dev_key = [](const Pep440Version& v) { return v.dev_ ? std::pair{0, *v.dev_} : std::pair{1, std::uint64_t{0}}; };
  if (auto c = dev_key(a) <=> dev_key(b); c != 0) return c;
  // Local: none sorts first; numbers above strings; then by length.
  if (a.local_.empty() != b.local_.empty()) return a.local_.empty() ? std::strong_ordering::less : std::strong_ordering::greater;
  for (std::size_t i = 0; i < std::min(a.local_.size(), b.local_.size()); ++i) {
    const auto& x = a.local_[i];
    const auto& y = b.local_[i];
    if (x.index() != y.index()) return x.index() == 0 ? std::strong_ordering::greater : std::strong_ordering::less;
    if (x.index() == 0) {
      if (auto c = std::get<0>(x) <=> std::get<0>(y); c != 0) return c;
    } else if (auto c = std::get<1>(x).compare(std::get<1>(y)); c != 0) {
      return c < 0 ? std::strong_ordering::less : std::strong_ordering::greater;
    }
  }
  return a.local_.size() <=> b.local_.size();
}

// ---- specifiers ----

namespace {

// packaging's _version_split: "1.0rc1" -> ["1", "0", "rc1"]; an epoch "1!2.0" -> ["1!", "2", "0"]
// (packaging 21.3 keeps the epoch as its own item when written).
std::vector<std::string> version_split(const std::string& version) {
  std::vector<std::string> out;
  static const std::regex prefix(R"(^([0-9]+)((?:a|b|c|rc)[0-9]+)$)");
  std::size_t s = 0;
  while (s <= version.size()) {
    std::size_t e = version.find('.', s);
    if (e == std::string::npos) e = version.size();
    std::string item = version.substr(s, e - s);
    std::smatch m;
    if (std::regex_match(item, m, prefix)) {
      out.push_back(m[1].str());
      out.push_back(m[2].str());
    } else {
      out.push_back(item);
    }
    s = e + 1;
  }
  return out;
}

bool is_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// ==V.* : packaging's prefix match with the release padded by zeros.
bool prefix_match(const Pep440Version& prospective, const Pep440Version& spec_prefix) {
  std::vector<std::string> spec = version_split(spec_prefix.to_string());
  std::vector<std::string> cand = version_split(prospective.public_version().to_string());
  if (prospective.epoch() != 0 || spec_prefix.epoch() != 0) {
    // The epoch is the first item written "N!" only when non-zero; compare it apart.
    if (prospective.epoch() != spec_prefix.epoch()) return false;
    auto drop_epoch = [](std::vector<std::string>& v) {
      if (!v.empty()) {
        const auto bang = v[0].find('!');
        if (bang != std::string::npos) v[0] = v[0].substr(bang + 1);
      }
    };
    drop_epoch(spec);
    drop_epoch(cand);
  }
  // _pad_version: pad the leading numeric parts of the candidate to those of the spec.
  auto numeric_len = [](const std::vector<std::string>& v) {
    std::size_t n = 0;
    while (n < v.size() && is_digits(v[n])) ++n;
    return n;
  };
  const std::size_t sn = numeric_len(spec), cn = numeric_len(cand);
  if (cn < sn) cand.insert(cand.begin() + static_cast<std::ptrdiff_t>(cn), sn - cn, "0");
  if (cand.size() < spec.size()) return false;
  cand.resize(spec.size());
  return cand == spec;
}

}  // namespace

Result<Pep440Specifier> Pep440Specifier::parse(std::string_view text_in) {
  const std::string text = trim(text_in);
  static const std::regex re(R"(^(~=|===|==|!=|<=|>=|<|>)\s*([^\s;,]+)$)");
  std::smatch m;
  auto bad = [&](const std::string& why) {
    return Error{ErrorKind::Parse, "", "'" + text + "' is not a version specifier: " + why, "",
                 "write an operator (~=, ==, !=, <=, >=, <, >, ===) and a PEP 440 version, e.g. >=1.26"};
  };
  if (!std::regex_match(text, m, re)) return bad("no operator and version");
  Pep440Specifier s;
  s.op_ = m[1].str();
  s.version_ = m[2].str();
  if (s.op_ == "===") return s;  // arbitrary equality: compared as text
  std::string v = s.version_;
  if (v.ends_with(".*")) {
    if (s.op_ != "==" && s.op_ != "!=") return bad("'.*' only follows == or !=");
    s.wildcard_ = true;
    v.resize(v.size() - 2);
  }
  auto parsed = Pep440Version::parse(v);
  if (!parsed) return bad("'" + v + "' is not a PEP 440 version");
  // packaging 21.3 accepts `==1.0rc1.*` (its regex allows it); so does this.
  if (parsed->has_local() && s.op_ != "==" && s.op_ != "!=") return bad("a local version only follows == or !=");
  if (s.op_ == "~=" && parsed->release().size() < 2) return bad("~= needs at least two release numbers (~=1.4)");
  s.parsed_ = *parsed;
  return s;
}

bool Pep440Specifier::prereleases() const {
  if (op_ == "!=") return false;
  auto v = Pep440Version::parse(wildcard_ ? version_.substr(0, version_.size() - 2) : version_);
  return v && v->is_prerelease();
}

bool Pep440Specifier::contains_text(std::string_view text) const {
  if (op_ == "===") return ascii_lower(std::string(text)) == ascii_lower(version_);
  auto v = Pep440Version::parse(text);
  if (!v) return false;
  return contains(*v);
}

bool Pep440Specifier::contains(const Pep440Version& item, std::optional<bool> prereleases) const {
  const bool pre = prereleases.value_or(this->prereleases());
  if (item.is_prerelease() && !pre) return false;
  const Pep440Version& spec = parsed_;
  if (op_ == "===") return ascii_lower(item.to_string()) == ascii_lower(version_);
  if (op_ == "==" || op_ == "!=") {
    bool eq = false;
    if (wildcard_) eq = prefix_match(item, spec);
    else eq = (spec.has_local() ? item : item.public_version()) == spec;
    return op_ == "==" ? eq : !eq;
  }
  if (op_ == "~=") {
    std::vector<std::uint64_t> rel = spec.release();
    rel.pop_back();
    std::string prefix;
    if (spec.epoch() != 0) prefix = std::to_string(spec.epoch()) + "!";
    for (std::size_t i = 0; i < rel.size(); ++i) prefix += (i ? "." : "") + std::to_string(rel[i]);
    auto pv = Pep440Version::parse(prefix);
    return item.public_version() >= spec && pv && prefix_match(item, *pv);
  }
  if (op_ == "<=") return item.public_version() <= spec;
  if (op_ == ">=") return item.public_version() >= spec;
  if (op_ == "<") {
    if (!(item < spec)) return false;
    if (!spec.is_prerelease() && item.is_prerelease() && item.base_version() == spec.base_version()) return false;
    return true;
  }
  if (op_ == ">") {
    if (!(item > spec)) return false;
    if (!spec.is_postrelease() && item.is_postrelease() && item.base_version() == spec.base_version()) return false;
    if (item.has_local() && item.base_version() == spec.base_version()) return false;
    return true;
  }
  return false;
}

Result<Pep440SpecifierSet> Pep440SpecifierSet::parse(std::string_view text) {
  Pep440SpecifierSet set;
  std::size_t s = 0;
  const std::string t(text);
  if (trim(t).empty()) return set;
  while (s <= t.size()) {
    std::size_t e = t.find(',', s);
    if (e == std::string::npos) e = t.size();
    auto clause = Pep440Specifier::parse(t.substr(s, e - s));
    if (!clause) return clause.error();
    set.clauses_.push_back(std::move(*clause));
    s = e + 1;
  }
  return set;
}

std::string Pep440SpecifierSet::to_string() const {
  std::vector<std::string> parts;
  for (const auto& c : clauses_) parts.push_back(c.to_string());
  std::sort(parts.begin(), parts.end());
  parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

void Pep440SpecifierSet::add(const Pep440SpecifierSet& other) {
  for (const auto& c : other.clauses_) clauses_.push_back(c);
}

bool Pep440SpecifierSet::prereleases() const {
  return std::any_of(clauses_.begin(), clauses_.end(), [](const Pep440Specifier& c) { return c.prereleases(); });
}

bool Pep440SpecifierSet::contains(const Pep440Version& v, std::optional<bool> prereleases) const {
  const bool pre = prereleases.value_or(this->prereleases());
  if (!pre && v.is_prerelease()) return false;
  return std::all_of(clauses_.begin(), clauses_.end(), [&](const Pep440Specifier& c) { return c.contains(v, pre); });
}

std::vector<Pep440Version> Pep440SpecifierSet::filter(const std::vector<Pep440Version>& versions) const {
  std::vector<Pep440Version> out;
  if (!clauses_.empty()) {
    const bool pre = prereleases();
    for (const auto& v : versions)
      if (contains(v, pre)) out.push_back(v);
    return out;
  }
  std::vector<Pep440Version> found_pre;
  for (const auto& v : versions) (v.is_prerelease() ? found_pre : out).push_back(v);
  return out.empty() ? found_pre : out;
}

// ---- markers ----

struct Marker::Node {
  enum class Kind { And, Or, Compare } kind = Kind::Compare;
  std::shared_ptr<const Node> left, right;
  // Compare: each side a variable (is_var) or a literal.
  bool lhs_var = false, rhs_var = false;
  std::string lhs, rhs, op;
};

namespace {

const std::map<std::string, std::string>& marker_variables() {
  static const std::map<std::string, std::string> vars{
      {"implementation_version", "implementation_version"},
      {"platform_python_implementation", "platform_python_implementation"},
      {"implementation_name", "implementation_name"},
      {"python_full_version", "python_full_version"},
      {"platform_release", "platform_release"},
      {"platform_version", "platform_version"},
      {"platform_machine", "platform_machine"},
      {"platform_system", "platform_system"},
      {"python_version", "python_version"},
      {"sys_platform", "sys_platform"},
      {"os_name", "os_name"},
      {"extra", "extra"},
      // packaging 21.3's legacy spellings (PEP 345).
      {"os.name", "os_name"},
      {"sys.platform", "sys_platform"},
      {"platform.version", "platform_version"},
      {"platform.machine", "platform_machine"},
      {"platform.python_implementation", "platform_python_implementation"},
      {"python_implementation", "platform_python_implementation"},
  };
  return vars;
}

class MarkerParser {
 public:
  explicit MarkerParser(std::string_view t) : t_(t) {}
  Result<std::shared_ptr<const Marker::Node>> run() {
    auto n = or_expr();
    if (!n) return n;
    ws();
    if (i_ != t_.size()) return fail("expected 'and', 'or' or the end of the marker");
    return n;
  }

 private:
  Error fail(const std::string& rule) {
    return parse_error("environment marker", std::string(t_), i_, rule);
  }
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t')) ++i_;
  }
  bool word(std::string_view w) {
    ws();
    if (t_.substr(i_, w.size()) != w) return false;
    const std::size_t e = i_ + w.size();
    if (e < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[e])) || t_[e] == '_')) return false;
    i_ = e;
    return true;
  }
  Result<std::shared_ptr<const Marker::Node>> or_expr() {
    auto l = and_expr();
    if (!l) return l;
    std::shared_ptr<const Marker::Node> left = *l;
    while (word("or")) {
      auto r = and_expr();
      if (!r) return r;
      auto n = std::make_shared<Marker::Node>();
      n->kind = Marker::Node::Kind::Or;
      n->left = left;
      n->right = *r;
      left = n;
    }
    return left;
  }
  Result<std::shared_ptr<const Marker::Node>> and_expr() {
    auto l = atom();
    if (!l) return l;
    std::shared_ptr<const Marker::Node> left = *l;
    while (word("and")) {
      auto r = atom();
      if (!r) return r;
      auto n = std::make_shared<Marker::Node>();
      n->kind = Marker::Node::Kind::And;
      n->left = left;
      n->right = *r;
      left = n;
    }
    return left;
  }
  Result<std::pair<bool, std::string>> value() {
    ws();
    if (i_ < t_.size() && (t_[i_] == '"' || t_[i_] == '\'')) {
      const char q = t_[i_];
      const std::size_t e = t_.find(q, i_ + 1);
      if (e == std::string_view::npos) return fail("a string is not closed");
      std::string s(t_.substr(i_ + 1, e - i_ - 1));
      i_ = e + 1;
      return std::pair{false, s};
    }
    // The longest variable name that matches here.
    std::string best;
    for (const auto& [name, canonical] : marker_variables())
      if (t_.substr(i_, name.size()) == name && name.size() > best.size()) {
        const std::size_t e = i_ + name.size();
        if (e < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[e])) || t_[e] == '_' || t_[e] == '.')) continue;
        best = name;
      }
    if (best.empty()) return fail("expected a marker variable (python_version, sys_platform, extra, ...) or a quoted string");
    i_ += best.size();
    return std::pair{true, marker_variables().at(best)};
  }
  Result<std::shared_ptr<const Marker::Node>> atom() {
    ws();
    if (i_ < t_.size() && t_[i_] == '(') {
      ++i_;
      auto n = or_expr();
      if (!n) return n;
      ws();
      if (i_ >= t_.size() || t_[i_] != ')') return fail("expected ')'");
      ++i_;
      return n;
    }
    auto l = value();
    if (!l) return l.error();
    ws();
    std::string op;
    for (std::string_view o : {"===", "==", "!=", "<=", ">=", "~=", "<", ">"})
      if (t_.substr(i_, o.size()) == o) {
        op = o;
        i_ += o.size();
        break;
      }
    if (op.empty()) {
      if (word("in")) op = "in";
      else if (word("not")) {
        if (!word("in")) return fail("expected 'in' after 'not'");
        op = "not in";
      } else {
        return fail("expected a comparison (==, !=, <, <=, >, >=, ~=, ===, in, not in)");
      }
    }
    auto r = value();
    if (!r) return r.error();
    auto n = std::make_shared<Marker::Node>();
    n->lhs_var = l->first;
    n->lhs = l->second;
    n->rhs_var = r->first;
    n->rhs = r->second;
    n->op = op;
    return std::shared_ptr<const Marker::Node>(n);
  }

  std::string_view t_;
  std::size_t i_ = 0;
};

bool eval_node(const Marker::Node& n, const MarkerEnvironment& env, std::string_view extra) {
  using K = Marker::Node::Kind;
  if (n.kind == K::And) return eval_node(*n.left, env, extra) && eval_node(*n.right, env, extra);
  if (n.kind == K::Or) return eval_node(*n.left, env, extra) || eval_node(*n.right, env, extra);
  auto lookup = [&](const std::string& var) -> std::string {
    if (var == "extra") return std::string(extra);
    auto it = env.find(var);
    return it == env.end() ? std::string() : it->second;
  };
  std::string lhs = n.lhs_var ? lookup(n.lhs) : n.lhs;
  std::string rhs = n.rhs_var ? lookup(n.rhs) : n.rhs;
  if ((n.lhs_var && n.lhs == "extra") || (n.rhs_var && n.rhs == "extra")) {
    lhs = pep503_normalize(lhs);
    rhs = pep503_normalize(rhs);
  }
  // packaging 21.3 _eval_op: a valid specifier `op + rhs` compares as versions, else as text.
  if (n.op != "in" && n.op != "not in") {
    if (auto spec = Pep440Specifier::parse(n.op + rhs)) return spec->contains_text(lhs);
  }
  if (n.op == "in") return rhs.find(lhs) != std::string::npos;
  if (n.op == "not in") return rhs.find(lhs) == std::string::npos;
  if (n.op == "==") return lhs == rhs;
  if (n.op == "!=") return lhs != rhs;
  if (n.op == "<") return lhs < rhs;
  if (n.op == "<=") return lhs <= rhs;
  if (n.op == ">") return lhs > rhs;
  if (n.op == ">=") return lhs >= rhs;
  return false;  // ~=, === on text: undefined in packaging; not met
}

bool node_mentions_extra(const Marker::Node& n) {
  if (n.kind != Marker::Node::Kind::Compare) return node_mentions_extra(*n.left) || node_mentions_extra(*n.right);
  return (n.lhs_var && n.lhs == "extra") || (n.rhs_var && n.rhs == "extra");
}

}  // namespace

Result<Marker> Marker::parse(std::string_view text) {
  MarkerParser p(text);
  auto root = p.run();
  if (!root) return root.error();
  Marker m;
  m.root_ = *root;
  m.text_ = trim(text);
  return m;
}

bool Marker::evaluate(const MarkerEnvironment& env, std::string_view extra) const {
  return root_ == nullptr || eval_node(*root_, env, pep503_normalize(extra));
}

bool Marker::mentions_extra() const { return root_ != nullptr && node_mentions_extra(*root_); }

// ---- requirements ----

Result<Pep508Requirement> Pep508Requirement::parse(std::string_view text_in) {
  const std::string text(text_in);
  std::size_t i = 0;
  auto ws = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  };
  auto fail = [&](const std::string& rule) { return parse_error("PEP 508 requirement", text, i, rule); };
  ws();
  const std::size_t name_start = i;
  while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '-' || text[i] == '_' || text[i] == '.'))
    ++i;
  Pep508Requirement r;
  r.name = text.substr(name_start, i - name_start);
  if (r.name.empty() || !std::isalnum(static_cast<unsigned char>(r.name.front())) ||
      !std::isalnum(static_cast<unsigned char>(r.name.back()))) {
    i = name_start;
    return fail("a requirement starts with a project name (letters, digits, '-', '_', '.'), e.g. requests>=2.31");
  }
  ws();
  if (i < text.size() && text[i] == '[') {
    ++i;
    std::set<std::string> extras;
    while (true) {
      ws();
      const std::size_t s = i;
      while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '-' || text[i] == '_' || text[i] == '.'))
        ++i;
      if (i > s) {
        // PEP 508's identifier: a letter or digit at both ends (`_` alone, `-x`, `x.` are none;
        // normalised they would print as an extra no parser reads back).
        if (!std::isalnum(static_cast<unsigned char>(text[s])) || !std::isalnum(static_cast<unsigned char>(text[i - 1]))) {
          i = s;
          return fail("an extra's name is letters, digits, '-', '_', '.', starting and ending with a letter or digit");
        }
        extras.insert(pep503_normalize(text.substr(s, i - s)));
      }
      ws();
      if (i < text.size() && text[i] == ',' && i > s) {
        ++i;
        continue;
      }
      if (i < text.size() && text[i] == ']') {
        ++i;
        break;
      }
      return fail("expected an extra's name, ',' or ']'");
    }
    r.extras.assign(extras.begin(), extras.end());
  }
  ws();
  const std::size_t semi = text.find(';', i);
  if (i < text.size() && text[i] == '@') {
    ++i;
    ws();
    const std::size_t s = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    r.url = text.substr(s, i - s);
    if (r.url.empty()) return fail("expected a URL after '@'");
    ws();
    if (i < text.size() && text[i] != ';') return fail("a direct reference's URL is followed by white space, then ';' and a marker");
  } else {
    std::string spec = text.substr(i, (semi == std::string::npos ? text.size() : semi) - i);
    spec = trim(spec);
    if (spec.starts_with('(')) {
      if (!spec.ends_with(')')) return fail("a '(' around the version specifier is not closed");
      spec = trim(spec.substr(1, spec.size() - 2));
    }
    auto set = Pep440SpecifierSet::parse(spec);
    if (!set) return fail(set.error().message);
    r.specifier = std::move(*set);
    i = semi == std::string::npos ? text.size() : semi;
  }
  if (i < text.size() && text[i] == ';') {
    ++i;
    auto m = Marker::parse(text.substr(i));
    if (!m) {
      Error e = m.error();
      e.message = "'" + text + "': " + e.message;
      return e;
    }
    if (trim(m->to_string()).empty()) return fail("expected an environment marker after ';'");
    r.marker = std::move(*m);
  }
  return r;
}

std::string Pep508Requirement::normalized_name() const { return pep503_normalize(name); }

std::string Pep508Requirement::to_string() const {
  std::string out = name;
  if (!extras.empty()) {
    out += "[";
    for (std::size_t k = 0; k < extras.size(); ++k) out += (k ? "," : "") + extras[k];
    out += "]";
  }
  if (!url.empty()) out += " @ " + url + (marker ? " " : "");
  else out += specifier.to_string();
  if (marker) out += "; " + marker->to_string();
  return out;
}

bool Pep508Requirement::applies(const MarkerEnvironment& env, std::string_view extra) const {
  return !marker || marker->evaluate(env, extra);
}

}  // namespace envlock
