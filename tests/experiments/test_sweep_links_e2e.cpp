// A sweep directory shared with others, where someone planted links: the sweep neither clears
// nor writes through them (2026-11-30 audit: a trial directory linked to another directory had
// that directory emptied before the trial trained there; a linked plots/ had its files replaced).
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/cli_runner.hpp"
#include "sweep_fixtures.hpp"

namespace fs = std::filesystem;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;
using namespace lbt::test::sweep_e2e;

BOOST_AUTO_TEST_CASE(a_linked_trial_directory_is_refused_untouched) {
  const fs::path cfg = write_config("links.toml", "val_loss<=0.14", 20);
  const fs::path dir = scratch() / "links", victim = scratch() / "links_victim";
  fs::remove_all(victim);
  fs::create_directories(victim / "sub");
  std::ofstream(victim / "precious.txt") << "mine";
  const std::string base = "sweep --config " + cfg.string() + " --no-plots --out " + dir.string();
  auto r = run_lbt(base + " --launcher slurm");  // the plan and trials/, nothing run
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  fs::create_directory_symlink(victim, dir / "trials" / "8_0");
  for (const std::string how : {" --trial 8_0", ""}) {  // an array task; a local run
    r = run_lbt(base + how);
    BOOST_TEST(r.code == 2, how << ": " << r.err);
    BOOST_TEST(r.err.find("8_0 is a symbolic link: the sweep clears a trial's directory") !=
                   std::string::npos,
               r.err);
    BOOST_TEST(r.err.find("waitid") == std::string::npos, r.err);  // it said "No child processes"
    BOOST_TEST(slurp(victim / "precious.txt") == "mine");
    BOOST_TEST(fs::is_directory(victim / "sub"));
  }
}

BOOST_AUTO_TEST_CASE(a_linked_plots_directory_is_not_written_through) {
  const fs::path cfg = write_config("plots_link.toml", "val_loss<=0.14", 20);
  const fs::path dir = scratch() / "plots_link", elsewhere = scratch() / "plots_elsewhere";
  fs::remove_all(elsewhere);
  fs::create_directories(elsewhere);
  std::ofstream(elsewhere / "steps_vs_batch.png") << "mine";
  auto r = run_lbt("sweep --config " + cfg.string() + " --no-plots --out " + dir.string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  fs::create_directory_symlink(elsewhere, dir / "plots");
  r = run_lbt("sweep --config " + cfg.string() + " --collect --out " + dir.string());
  BOOST_TEST(r.err.find("plots skipped: " + (dir / "plots").string() + " is a symbolic link") !=
                 std::string::npos,
             r.err);
  BOOST_TEST(slurp(elsewhere / "steps_vs_batch.png") == "mine");
}
