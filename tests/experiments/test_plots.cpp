// The plot scripts' failure reasons (experiments/plots.hpp): a Python without a module the
// script imports is named with its Debian package, from a real interpreter's traceback.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "experiments/plots.hpp"

namespace fs = std::filesystem;
using lbt::experiments::missing_python_module;

namespace {

// The log of /usr/bin/python3 -c CODE, stdout and stderr, as run_plot_script writes one.
fs::path python_log(const std::string& code, const std::string& name) {
  const fs::path log = fs::temp_directory_path() / ("lbt_test_plots_" + name + ".log");
  fs::remove(log);
  const std::string command = "/usr/bin/python3 -c \"" + code + "\" >" + log.string() + " 2>&1";
  BOOST_TEST_REQUIRE(std::system(command.c_str()) != 0);  // the import fails
  return log;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(plots)

BOOST_AUTO_TEST_CASE(a_missing_module_is_named_with_its_debian_package) {
  const fs::path log = python_log("import lbt_absent_module", "top");
  BOOST_TEST(missing_python_module(log) ==
             "/usr/bin/python3 has no module lbt_absent_module (apt-get install "
             "python3-lbt_absent_module), so the figures were skipped");
  fs::remove(log);
}

BOOST_AUTO_TEST_CASE(a_submodule_names_its_package) {
  const fs::path log = python_log("import json.lbt_absent_part", "sub");
  BOOST_TEST(missing_python_module(log).find("has no module json (apt-get install python3-json)") !=
             std::string::npos);
  fs::remove(log);
}

BOOST_AUTO_TEST_CASE(another_failure_names_no_module) {
  const fs::path log = python_log("raise SystemExit(3)", "other");
  BOOST_TEST(missing_python_module(log).empty());
  BOOST_TEST(missing_python_module(log.string() + ".absent").empty());
  fs::remove(log);
}

BOOST_AUTO_TEST_SUITE_END()
