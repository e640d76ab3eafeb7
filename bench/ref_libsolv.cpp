// bench/ref_libsolv — the reference figures for the repodata benchmarks: libsolv itself.
//   ref_libsolv load-json REPODATA.json        repo_add_conda (libsolv's own JSON reader)
//   ref_libsolv write-solv REPODATA.json OUT   repo_add_conda, then repo_write to OUT
//   ref_libsolv load-solv FILE.solv            repo_add_solv
//   ref_libsolv solve-all REPODATA.json SPEC...  every record in the pool, then one solve
// Prints one JSON line: {"mode", "solvables", "seconds"} (in-process time of the step).
// This program links libsolv directly on purpose: it is the yardstick, not envlock.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

extern "C" {
#include <solv/pool.h>
#include <solv/poolarch.h>
#include <solv/repo.h>
#include <solv/repo_conda.h>
#include <solv/repo_solv.h>
#include <solv/repo_write.h>
#include <solv/solver.h>
#include <solv/conda.h>
}

namespace {
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
int usage() {
  std::fprintf(stderr, "usage: ref_libsolv load-json|write-solv|load-solv|solve-all FILE [OUT|SPEC...]\n");
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string mode = argv[1];
  Pool* pool = pool_create();
  pool_setdisttype(pool, DISTTYPE_CONDA);
  Repo* repo = repo_create(pool, "bench");
  FILE* fp = std::fopen(argv[2], "rb");
  if (fp == nullptr) {
    std::perror(argv[2]);
    return 1;
  }
  const double t0 = now();
  int rc = 0;
  if (mode == "load-solv") {
    rc = repo_add_solv(repo, fp, 0);
  } else {
    rc = repo_add_conda(repo, fp, 0);
  }
  std::fclose(fp);
  if (rc != 0) {
    std::fprintf(stderr, "libsolv: %s\n", pool_errstr(pool));
    return 1;
  }
  pool_addfileprovides(pool);
  pool_createwhatprovides(pool);
  double t1 = now();
  if (mode == "write-solv") {
    if (argc < 4) return usage();
    FILE* out = std::fopen(argv[3], "wb");
    if (out == nullptr || repo_write(repo, out) != 0) return 1;
    std::fclose(out);
    t1 = now();
  } else if (mode == "solve-all") {
    Queue job;
    queue_init(&job);
    for (int i = 3; i < argc; ++i) {
      Id dep = pool_conda_matchspec(pool, argv[i]);
      queue_push2(&job, SOLVER_INSTALL | SOLVER_SOLVABLE_PROVIDES, dep);
    }
    Solver* solver = solver_create(pool);
    const int problems = solver_solve(solver, &job);
    t1 = now();
    std::fprintf(stderr, "problems: %d\n", problems);
    solver_free(solver);
    queue_free(&job);
  }
  std::printf("{\"mode\":\"%s\",\"solvables\":%d,\"seconds\":%.6f}\n", mode.c_str(), repo->nsolvables, t1 - t0);
  pool_free(pool);
  return 0;
}
