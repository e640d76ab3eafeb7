// envlock remove -p PREFIX — deletes an environment that envlock made (conda-meta/envlock), and
// nothing else.
#include <iostream>
#include <nlohmann/json.hpp>

#include "envlock/install.hpp"
#include "registry.hpp"

namespace envlock::cli {
namespace {

void setup(CLI::App& sub, Context& ctx) {
  auto prefix = std::make_shared<std::string>();
  sub.add_option("-p,--prefix", *prefix, "the environment to delete")->required();
  sub.callback([&ctx, prefix] {
    if (auto st = remove_environment(*prefix); !st) {
      ctx.exit_code = report_error(ctx, st.error());
      return;
    }
    if (ctx.json) std::cout << nlohmann::json{{"removed", *prefix}}.dump(2) << "\n";
    else std::cout << "removed " << *prefix << "\n";
    ctx.exit_code = 0;
  });
}

const RegisterCommand reg{"remove", "delete an environment that envlock made", &setup};

}  // namespace
}  // namespace envlock::cli
