// The --exec template's words (experiments/sweep/exec_command.hpp), checked against what a POSIX
// shell makes of the same line: /bin/sh itself prints the words of each template with the values
// pasted in by hand, quoted as a careful user would.
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "experiments/sweep/exec_command.hpp"

using lbt::experiments::build_exec_command;
using lbt::experiments::shell_line;

BOOST_AUTO_TEST_SUITE(exec_command)

namespace {

const std::map<std::string, std::string> kValues = {{"run_dir", "/tmp/a b/$(touch PWNED);`x`'\"\n"},
                                                    {"lr", "0.5"},
                                                    {"train.target", "val_loss<=0.1"}};

// What /bin/sh -c 'printf "%s\0" WORDS' prints for `line`, split at the NULs.
std::vector<std::string> shell_words(const std::string& line) {
  const std::string cmd = "printf '%s\\0' " + line;
  FILE* p = ::popen(("/bin/sh -c " + shell_line({cmd})).c_str(), "r");
  std::string out;
  for (int c; (c = std::fgetc(p)) != EOF;) out += static_cast<char>(c);
  ::pclose(p);
  std::vector<std::string> words;
  for (std::size_t from = 0, nul; (nul = out.find('\0', from)) != std::string::npos; from = nul + 1)
    words.push_back(out.substr(from, nul - from));
  return words;
}

}  // namespace

BOOST_AUTO_TEST_CASE(words_are_split_as_a_shell_splits_them_with_values_inside_words) {
  const auto c = build_exec_command(
      R"(python3 "train.py" --out={run_dir} 'lit {lr} $HOME' a\ b "x\"y\\z" {train.target})",
      kValues);
  BOOST_TEST(!c.via_shell);
  const std::string run_dir = kValues.at("run_dir");
  const std::vector<std::string> want = {"python3", "train.py", "--out=" + run_dir, "lit 0.5 $HOME",
                                         "a b",     "x\"y\\z",  "val_loss<=0.1"};
  BOOST_TEST(c.argv == want, boost::test_tools::per_element());
  // The same template, the values single-quoted by hand: the shell agrees word for word.
  const auto shell = shell_words(R"(python3 "train.py" --out=)" + shell_line({run_dir}) +
                                 R"( 'lit 0.5 $HOME' a\ b "x\"y\\z" 'val_loss<=0.1')");
  BOOST_TEST(shell == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(shell_syntax_runs_through_sh_with_values_as_positional_parameters) {
  const auto c = build_exec_command(
      R"(prog {run_dir} > "{run_dir}/log" && echo '{lr}' {lr} | tee x)", kValues);
  BOOST_TEST(c.via_shell);
  BOOST_TEST(c.argv.size() == 6u);
  BOOST_TEST(c.argv[2] == R"(prog "${1}" > "${1}/log" && echo ''"${2}"'' "${2}" | tee x)");
  BOOST_TEST(c.argv[3] == "sh");
  BOOST_TEST(c.argv[4] == kValues.at("run_dir"));
  BOOST_TEST(c.argv[5] == "0.5");
  for (const char* t : {"a; b", "a | b", "A=1 prog", "prog $X", "prog *.py", "cd x", "prog ~/x",
                        "prog \"$X\"", "a\nb"}) {
    BOOST_TEST(build_exec_command(t, kValues).via_shell, t);
  }
  for (const char* t : {"prog a=1", "prog 'a;b' \"c|d\" e\\;f", "prog '$X'"})
    BOOST_TEST(!build_exec_command(t, kValues).via_shell, t);
  // {{ and }} are literal braces, in any quoting (a brace started a placeholder even in '...').
  const auto awk = build_exec_command(R"(prog {lr} | awk '{{print $1}}' > ${{HOME}}/x)", kValues);
  BOOST_TEST(awk.argv[2] == R"(prog "${1}" | awk '{print $1}' > ${HOME}/x)");
  BOOST_TEST(build_exec_command("prog {{lr}}", kValues).argv[1] == "{lr}");
}

BOOST_AUTO_TEST_CASE(unterminated_quotes_unknown_placeholders_and_empty_commands_are_errors) {
  BOOST_CHECK_THROW(build_exec_command("prog 'a", kValues), lbt::ConfigError);
  BOOST_CHECK_THROW(build_exec_command("prog \"a", kValues), lbt::ConfigError);
  BOOST_CHECK_THROW(build_exec_command("prog {batch}", kValues), lbt::ConfigError);
  try {
    build_exec_command("prog {run_dir", kValues);
    BOOST_FAIL("no error");
  } catch (const lbt::ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find("a { with no closing }: {run_dir") != std::string::npos);
  }
  BOOST_CHECK_THROW(build_exec_command("  ", kValues), lbt::ConfigError);
}

// A value inside code another interpreter parses is code there: with --out "a$(touch PWNED)",
// bash -c 'prog {run_dir}' ran touch (2026-11-30 audit). Refused; a program's own -c FILE and
// the value passed as the inner shell's argument are not.
BOOST_AUTO_TEST_CASE(a_placeholder_inside_code_for_another_interpreter_is_refused) {
  for (const char* t : {"bash -c 'prog {run_dir}'", "srun bash -lc \"prog {lr}\"",
                        "/usr/bin/python3 -u -c 'run(\"{run_dir}\")'", "eval prog {run_dir}"}) {
    try {
      build_exec_command(t, kValues);
      BOOST_FAIL(t);
    } catch (const lbt::ConfigError& e) {
      BOOST_TEST(
          std::string(e.what()).find("its value would be read as code there") != std::string::npos,
          e.what());
    }
  }
  const auto argument = build_exec_command("bash -c 'prog \"$1\"' _ {run_dir}", kValues);
  BOOST_TEST(argument.argv.back() == kValues.at("run_dir"));
  BOOST_TEST(build_exec_command("python3 train.py -c {run_dir}/cfg.yaml", kValues).argv[3] ==
             kValues.at("run_dir") + "/cfg.yaml");
  // "eval" as a program's own argument is no eval (it refused wrap.sh eval {lr}).
  BOOST_TEST(build_exec_command("wrap.sh eval {lr}", kValues).argv[2] == "0.5");
}

BOOST_AUTO_TEST_SUITE_END()
