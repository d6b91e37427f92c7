// The `lbt` executable: subcommands over experiments/ and trainer/. The only place that
// catches lbt::Error: prints "error: ..." and "hint: ...", exits non-zero.
#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "core/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "lbt: large-batch training research toolkit.\n"
      "Batch-size sweeps, gradient noise scale, LR schedules and large-batch optimizers."};
  app.set_version_flag("--version", "lbt 0.1.0");
  app.require_subcommand(1);
  app.fallthrough();
  lbt::cli::add_train_command(app);
  lbt::cli::add_noise_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const lbt::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
