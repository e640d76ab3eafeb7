// Unsatisfiable solves: libsolv's problem rules turned into a tree grouped by requested spec
// (and base pin), naming the packages in between and the versions that exist.
#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "solve_context.hpp"

namespace envlock {

namespace {

const char* kind_name(ProblemNode::Kind k) {
  switch (k) {
    case ProblemNode::Kind::Requested: return "requested";
    case ProblemNode::Kind::Pinned: return "pinned";
    case ProblemNode::Kind::Packages: return "packages";
    case ProblemNode::Kind::Requires: return "requires";
    case ProblemNode::Kind::Conflict: return "conflict";
    case ProblemNode::Kind::Missing: return "missing";
    case ProblemNode::Kind::Virtual: return "virtual";
  }
  return "packages";
}

std::string node_line(const ProblemNode& n) {
  switch (n.kind) {
    case ProblemNode::Kind::Requested:
      return n.text + " (requested" + (n.detail.empty() ? "" : " at " + n.detail) + ")";
    case ProblemNode::Kind::Pinned: return n.text + " (pinned by the base layer '" + n.detail + "')";
    case ProblemNode::Kind::Requires: return "requires " + n.text;
    case ProblemNode::Kind::Missing: return n.text + (n.detail.empty() ? "" : "; " + n.detail);
    case ProblemNode::Kind::Virtual:
      return n.text + " (virtual package" + (n.detail.empty() ? "" : ", " + n.detail) + ")";
    case ProblemNode::Kind::Packages:
    case ProblemNode::Kind::Conflict: return n.text + (n.detail.empty() ? "" : " (" + n.detail + ")");
  }
  return n.text;
}

void draw(const ProblemNode& n, const std::string& prefix, bool last, bool root, std::string& out) {
  if (root) {
    out += prefix + node_line(n) + "\n";
  } else {
    out += prefix + (last ? "└─ " : "├─ ") + node_line(n) + "\n";
  }
  std::string child_prefix = root ? prefix : prefix + (last ? "   " : "│  ");
  for (std::size_t i = 0; i < n.children.size(); ++i)
    draw(n.children[i], child_prefix, i + 1 == n.children.size(), false, out);
}

void node_json(const ProblemNode& n, nlohmann::json& j) {
  j = nlohmann::json::object();
  j["kind"] = kind_name(n.kind);
  j["text"] = n.text;
  if (!n.detail.empty()) j["detail"] = n.detail;
  if (!n.children.empty()) {
    j["children"] = nlohmann::json::array();
    for (const auto& c : n.children) {
      nlohmann::json cj;
      node_json(c, cj);
      j["children"].push_back(std::move(cj));
    }
  }
}

}  // namespace

std::string Explanation::to_text(const std::string& indent) const {
  std::string out;
  for (const auto& r : roots) draw(r, indent, true, true, out);
  return out;
}

void Explanation::to_json(nlohmann::json& j) const {
  j = nlohmann::json::object();
  j["conflicts"] = nlohmann::json::array();
  for (const auto& r : roots) {
    nlohmann::json rj;
    node_json(r, rj);
    j["conflicts"].push_back(std::move(rj));
  }
}

namespace solv {

std::string summarize_versions(const SolveContext& ctx, const std::vector<Id>& solvables,
                               std::size_t max_versions) {
  std::vector<const RepoDataRecord*> recs;
  for (Id p : solvables)
    if (const RepoDataRecord* r = ctx.record(p)) recs.push_back(r);
  std::sort(recs.begin(), recs.end(), [](const RepoDataRecord* a, const RepoDataRecord* b) {
    if (a->version != b->version) return a->version > b->version;
    return a->version.to_string() < b->version.to_string();
  });
  std::vector<std::string> versions;
  for (const auto* r : recs)
    if (versions.empty() || versions.back() != r->version.to_string()) versions.push_back(r->version.to_string());
  std::string out;
  for (std::size_t i = 0; i < versions.size() && i < max_versions; ++i) out += (i ? ", " : "") + versions[i];
  if (versions.size() > max_versions) out += ", ... (" + std::to_string(versions.size()) + " versions)";
  if (recs.size() > 1) out += " (" + std::to_string(recs.size()) + " builds)";
  return out;
}

namespace {

/// The facts of every problem rule, indexed for walking.
struct Facts {
  std::set<std::size_t> jobs;                              ///< job numbers in some problem
  std::map<Id, std::set<Id>> requires_of;                    ///< solvable -> deps in problem rules
  std::set<std::pair<Id, Id>> missing;                     ///< (solvable, dep) nothing provides
  std::map<Id, std::set<Id>> same_name;                    ///< both directions
  std::map<Id, std::vector<std::pair<Id, Id>>> constrained;  ///< target -> (source, dep)
  std::map<Id, std::vector<std::pair<Id, Id>>> constrains;   ///< source -> (target, dep)
  std::set<Id> strict_priority;                            ///< excluded by strict priority
  std::set<Id> not_installable;
  std::set<Id> involved;
  std::set<Id> job_missing_deps;                           ///< deps of jobs nothing provides
};

class Explainer {
 public:
  Explainer(SolveContext& ctx, Solver* solver) : ctx_(ctx), solver_(solver), pool_(ctx.pool.get()) {}

  Explanation run() {
    collect();
    Explanation e;
    for (std::size_t job : facts_.jobs) {
      if (job >= ctx_.job_origins.size()) continue;
      const JobOrigin& jo = ctx_.job_origins[job];
      if (jo.kind == JobOrigin::Kind::Spec) {
        const SolveSpec& s = ctx_.task.specs[jo.index];
        ProblemNode root{ProblemNode::Kind::Requested, s.text, s.origin, {}};
        std::vector<Id> cands;
        for (Id p : ctx_.spec_candidates[jo.index])
          if (facts_.involved.count(p)) cands.push_back(p);
        if (cands.empty()) cands = ctx_.spec_candidates[jo.index];
        add_package_groups(cands, root, 0, 0);
        e.roots.push_back(std::move(root));
      } else if (jo.kind == JobOrigin::Kind::Pin) {
        const PinnedRecord& pin = ctx_.task.pinned[jo.index];
        Id p = ctx_.pin_solvables[jo.index];
        ProblemNode root{ProblemNode::Kind::Pinned, ctx_.describe(p), pin.layer, {}};
        std::set<Id> group{p};
        add_reasons(group, root, 0, 0);
        e.roots.push_back(std::move(root));
      } else if (jo.kind == JobOrigin::Kind::Virtual) {
        Id p = ctx_.virtual_solvables[jo.index];
        ProblemNode root{ProblemNode::Kind::Virtual, ctx_.describe(p), ctx_.virtual_origin(p), {}};
        std::set<Id> group{p};
        add_reasons(group, root, 0, 0);
        e.roots.push_back(std::move(root));
      }
    }
    // Requested specs first, then pins, then virtual packages, each in manifest order (already,
    // by job number).
    auto rank = [](const ProblemNode& n) {
      return n.kind == ProblemNode::Kind::Requested ? 0 : n.kind == ProblemNode::Kind::Pinned ? 1 : 2;
    };
    std::stable_sort(e.roots.begin(), e.roots.end(),
                     [&](const ProblemNode& a, const ProblemNode& b) { return rank(a) < rank(b); });
    if (e.roots.empty()) {
      e.roots.push_back({ProblemNode::Kind::Conflict, "libsolv found no solution but reported no conflicting request",
                         "", {}});
    }
    return e;
  }

 private:
  // A tree is cut below kMaxDepth branching levels (a wide tree); a single chain (one package,
  // one failing dependency each step) goes on to its cause, up to kMaxChain levels (the stack).
  static constexpr int kMaxDepth = 8;
  static constexpr int kMaxChain = 1000;

  void collect() {
    int count = solver_problem_count(solver_);
    for (int problem = 1; problem <= count; ++problem) {
      OwnedQueue rules;
      solver_findallproblemrules(solver_, problem, rules.get());
      for (int i = 0; i < rules.size(); ++i) {
        Id rid = rules[i];
        Id source = 0, target = 0, dep = 0;
        SolverRuleinfo type = solver_ruleinfo(solver_, rid, &source, &target, &dep);
        if ((type & SOLVER_RULE_TYPEMASK) == SOLVER_RULE_JOB) {
          int idx = solver_rule2jobidx(solver_, rid);
          if (idx > 0) facts_.jobs.insert(static_cast<std::size_t>((idx - 1) / 2));
          if (type == SOLVER_RULE_JOB_NOTHING_PROVIDES_DEP) facts_.job_missing_deps.insert(dep);
          continue;
        }
        if (source > 0) facts_.involved.insert(source);
        if (target > 0) facts_.involved.insert(target);
        switch (type) {
          case SOLVER_RULE_PKG_REQUIRES: facts_.requires_of[source].insert(dep); break;
          case SOLVER_RULE_PKG_NOTHING_PROVIDES_DEP:
            facts_.requires_of[source].insert(dep);
            facts_.missing.insert({source, dep});
            break;
          case SOLVER_RULE_PKG_SAME_NAME:
            facts_.same_name[source].insert(target);
            facts_.same_name[target].insert(source);
            break;
          case SOLVER_RULE_PKG_CONSTRAINS:
          case SOLVER_RULE_PKG_CONFLICTS:  // a bracket constraint libsolv cannot read (solve.cpp)
            facts_.constrained[target].push_back({source, dep});
            facts_.constrains[source].push_back({target, dep});
            break;
          case SOLVER_RULE_STRICT_REPO_PRIORITY: facts_.strict_priority.insert(source); break;
          case SOLVER_RULE_PKG_NOT_INSTALLABLE: facts_.not_installable.insert(source); break;
          default: break;
        }
      }
    }
    // Who needs what: solvable -> the solvables whose problem deps it provides.
    for (const auto& [src, deps] : facts_.requires_of)
      for (Id dep : deps)
        for (Id p : providers(dep)) needed_by_[p].insert(src);
    for (std::size_t j = 0; j < ctx_.job_origins.size(); ++j) {
      const JobOrigin& jo = ctx_.job_origins[j];
      if (jo.kind == JobOrigin::Kind::Spec)
        for (Id p : ctx_.spec_candidates[jo.index]) requested_by_[p] = jo.index;
      else if (jo.kind == JobOrigin::Kind::Pin)
        pinned_as_[ctx_.pin_solvables[jo.index]] = jo.index;
    }
  }

  /// "__cuda 11.8 0 (CONDA_OVERRIDE_CUDA)" for the virtual solvables of one name.
  std::string assumed_virtual(const std::vector<Id>& solvables) const {
    std::string out;
    for (Id p : solvables) {
      std::string origin = ctx_.virtual_origin(p);
      out += (out.empty() ? "" : ", ") + ctx_.describe(p) + (origin.empty() ? "" : " (" + origin + ")");
    }
    return out;
  }

  /// A constraint as the record spells it (without the "!" of solve.cpp's conflict names).
  std::string constraint_text(Id dep) const {
    std::string text = ctx_.pool.dep_str(dep);
    return text.starts_with('!') ? text.substr(1) : text;
  }

  std::vector<Id> providers(Id dep) const {
    std::vector<Id> out;
    Id off = pool_whatprovides(pool_, dep);
    for (Id* pp = pool_->whatprovidesdata + off; *pp != 0; ++pp) out.push_back(*pp);
    return out;
  }

  /// Groups solvables by name and adds one Packages node per name, each with its reasons.
  void add_package_groups(const std::vector<Id>& solvables, ProblemNode& parent, int depth, int length) {
    std::map<std::string, std::set<Id>> groups;
    for (Id p : solvables)
      if (const RepoDataRecord* r = ctx_.record(p)) groups[r->name].insert(p);
    if (groups.size() > 1) ++depth;
    for (auto& [name, group] : groups) {
      std::vector<Id> v(group.begin(), group.end());
      ProblemNode node{ProblemNode::Kind::Packages, name + " " + summarize_versions(ctx_, v), "", {}};
      if (group.size() == 1) node.text = ctx_.describe(*group.begin());
      if (visited_.count(group) > 0) {
        node.detail = "see above";
      } else if (depth >= kMaxDepth || length >= kMaxChain) {
        node.detail = "chain continues";
      } else {
        visited_.insert(group);
        add_reasons(group, node, depth, length + 1);
      }
      parent.children.push_back(std::move(node));
    }
  }

  std::string role_of(Id other) const {
    if (const RepoDataRecord* r = ctx_.record(other); r != nullptr && r->channel == "@virtual") {
      std::string origin = ctx_.virtual_origin(other);
      return "virtual package" + (origin.empty() ? "" : ", " + origin);
    }
    if (auto it = pinned_as_.find(other); it != pinned_as_.end())
      return "pinned by the base layer '" + ctx_.task.pinned[it->second].layer + "'";
    if (auto it = requested_by_.find(other); it != requested_by_.end())
      return "requested as '" + ctx_.task.specs[it->second].text + "'";
    if (auto it = needed_by_.find(other); it != needed_by_.end() && !it->second.empty())
      return "needed by " + ctx_.describe(*it->second.begin());
    return "";
  }

  /// Why the solvables of `group` (one name) cannot be chosen.
  void add_reasons(const std::set<Id>& group, ProblemNode& node, int depth, int length) {
    // Failing dependencies, grouped by their spelling.
    std::map<std::string, std::pair<Id, bool>> deps;  // dep text -> (dep id, nothing provides)
    for (Id p : group) {
      auto it = facts_.requires_of.find(p);
      if (it == facts_.requires_of.end()) continue;
      for (Id dep : it->second) {
        bool none = facts_.missing.count({p, dep}) > 0;
        auto [d, inserted] = deps.emplace(ctx_.pool.dep_str(dep), std::make_pair(dep, none));
        if (!inserted) d->second.second = d->second.second && none;
      }
    }
    for (const auto& [text, info] : deps) {
      ProblemNode req{ProblemNode::Kind::Requires, text, "", {}};
      std::vector<Id> provs;
      for (Id p : providers(info.first))
        if (facts_.involved.count(p) > 0 && group.count(p) == 0) provs.push_back(p);
      if (provs.empty()) {
        std::string name = ctx_.pool.str(info.first);
        if (ISRELDEP(info.first)) name = ctx_.pool.str(GETRELDEP(pool_, info.first)->name);
        std::vector<Id> all = ctx_.all_named(name);
        ProblemNode miss{ProblemNode::Kind::Missing, "nothing provides " + text, "", {}};
        if (name.starts_with("__")) {
          miss.detail = all.empty() ? "the virtual package " + name + " is not assumed for this platform; declare it under "
                                                                    "virtual-packages in the manifest"
                                    : "assumed: " + assumed_virtual(all);
        } else {
          miss.detail = all.empty() ? "no package named '" + name + "' in the channels"
                                    : "versions that exist: " + summarize_versions(ctx_, all);
        }
        req.children.push_back(std::move(miss));
      } else {
        add_package_groups(provs, req, deps.size() > 1 ? depth + 1 : depth, length);
      }
      node.children.push_back(std::move(req));
    }
    // Same-name conflicts with records other requests or pins need.
    std::map<std::string, std::set<Id>> clashes;  // role -> solvables
    for (Id p : group) {
      auto it = facts_.same_name.find(p);
      if (it == facts_.same_name.end()) continue;
      for (Id other : it->second) {
        if (group.count(other) > 0) continue;
        std::string role = role_of(other);
        if (!role.empty()) clashes[role].insert(other);
      }
    }
    for (const auto& [role, others] : clashes) {
      std::vector<Id> v(others.begin(), others.end());
      std::string what = others.size() == 1 ? ctx_.describe(*others.begin())
                                            : ctx_.record(v.front())->name + " " + summarize_versions(ctx_, v);
      node.children.push_back({ProblemNode::Kind::Conflict, "conflicts with " + what, role, {}});
    }
    // Constraints (run_constrained) of other records.
    std::set<std::string> seen;
    for (Id p : group) {
      auto it = facts_.constrained.find(p);
      if (it == facts_.constrained.end()) continue;
      for (const auto& [source, dep] : it->second) {
        std::string text = "excluded by the constraint '" + constraint_text(dep) + "' of " + ctx_.describe(source);
        if (seen.insert(text).second) node.children.push_back({ProblemNode::Kind::Conflict, text, role_of(source), {}});
      }
    }
    // This group's own constraints that exclude something another request, pin or the
    // platform's virtual packages need.
    for (Id p : group) {
      auto it = facts_.constrains.find(p);
      if (it == facts_.constrains.end()) continue;
      for (const auto& [target, dep] : it->second) {
        std::string text = "constrains '" + constraint_text(dep) + "', which excludes " + ctx_.describe(target);
        if (seen.insert(text).second) node.children.push_back({ProblemNode::Kind::Conflict, text, role_of(target), {}});
      }
    }
    for (Id p : group) {
      if (facts_.strict_priority.count(p) > 0) {
        node.children.push_back({ProblemNode::Kind::Conflict,
                                 "excluded by strict channel priority: a higher-priority channel has '" +
                                     ctx_.record(p)->name + "'",
                                 "set channel-priority: flexible to allow it", {}});
        break;
      }
    }
  }

  SolveContext& ctx_;
  Solver* solver_;
  Pool* pool_;
  Facts facts_;
  std::map<Id, std::set<Id>> needed_by_;
  std::map<Id, std::size_t> requested_by_;
  std::map<Id, std::size_t> pinned_as_;
  std::set<std::set<Id>> visited_;
};

}  // namespace

Explanation explain_problems(SolveContext& ctx, Solver* solver) { return Explainer(ctx, solver).run(); }

}  // namespace solv
}  // namespace envlock
