#pragma once
// Private to solver/: RAII owners for libsolv's Pool, Queue and Solver, and strong ids.
// libsolv types never leave this folder; nothing here is part of the public headers.


#include <optional>
#include <string>
#include <utility>
#include <vector>

// libsolv names a Solvable member `requires`, a keyword since C++20: it is read here as
// `requires_` (the layout is unchanged), and the macro is dropped right after.
#define requires requires_
extern "C" {
#include <solv/bitmap.h>
#include <solv/conda.h>
#include <solv/pool.h>
#include <solv/poolarch.h>
#include <solv/problems.h>
#include <solv/queue.h>
#include <solv/repo.h>
#include <solv/repo_solv.h>
#include <solv/repo_write.h>
#include <solv/repodata.h>
#include <solv/rules.h>
#include <solv/selection.h>
#include <solv/solver.h>
#include <solv/transaction.h>
}
#undef requires

namespace envlock::solv {

/// A solvable id in the pool (never 0/1, which are libsolv's reserved solvables).
struct SolvableId {
  Id v = 0;
  friend bool operator==(SolvableId, SolvableId) = default;
  friend auto operator<=>(SolvableId, SolvableId) = default;
};

/// Owns a libsolv Queue.
class OwnedQueue {
 public:
  OwnedQueue() { queue_init(&q_); }
  ~OwnedQueue() { queue_free(&q_); }
  OwnedQueue(const OwnedQueue&) = delete;
  OwnedQueue& operator=(const OwnedQueue&) = delete;
  void push(Id v) { queue_push(&q_, v); }
  void push2(Id a, Id b) { queue_push2(&q_, a, b); }
  [[nodiscard]] int size() const { return q_.count; }
  [[nodiscard]] Id operator[](int i) const { return q_.elements[i]; }
  void clear() { queue_empty(&q_); }
  Queue* get() { return &q_; }
  [[nodiscard]] std::vector<Id> to_vector() const { return {q_.elements, q_.elements + q_.count}; }

 private:
  Queue q_;
};

/// Owns a libsolv Pool in conda mode.
class OwnedPool {
 public:
  OwnedPool() : pool_(pool_create()) { pool_setdisttype(pool_, DISTTYPE_CONDA); }
  ~OwnedPool() {
    if (considered_ != nullptr) {
      map_free(considered_);
      delete considered_;
      pool_->considered = nullptr;
    }
    pool_free(pool_);
  }
  OwnedPool(const OwnedPool&) = delete;
  OwnedPool& operator=(const OwnedPool&) = delete;
  Pool* get() const { return pool_; }

  /// Installs a "considered" map (solvables outside it are ignored by rule creation); the pool
  /// owns it from then on.
  void set_considered(std::vector<bool> keep) {
    if (considered_ == nullptr) {
      considered_ = new Map;
      map_init(considered_, pool_->nsolvables);
    } else {
      map_empty(considered_);
    }
    for (int i = 0; i < pool_->nsolvables && i < static_cast<int>(keep.size()); ++i)
      if (keep[static_cast<std::size_t>(i)]) MAPSET(considered_, i);
    pool_->considered = considered_;
  }

  /// The string of an id, copied at once (libsolv's temporary strings are reused).
  [[nodiscard]] std::string str(Id id) const { return pool_id2str(pool_, id); }
  [[nodiscard]] std::string dep_str(Id dep) const { return pool_dep2str(pool_, dep); }

 private:
  Pool* pool_;
  Map* considered_ = nullptr;
};

/// Owns a libsolv Solver over a pool.
class OwnedSolver {
 public:
  explicit OwnedSolver(Pool* pool) : solver_(solver_create(pool)) {}
  ~OwnedSolver() { solver_free(solver_); }
  OwnedSolver(const OwnedSolver&) = delete;
  OwnedSolver& operator=(const OwnedSolver&) = delete;
  Solver* get() const { return solver_; }

 private:
  Solver* solver_;
};

}  // namespace envlock::solv
