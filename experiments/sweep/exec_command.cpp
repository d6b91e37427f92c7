// An --exec trial's command line; see exec_command.hpp.
#include "experiments/sweep/exec_command.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string_view>

#include "core/error.hpp"
#include "core/shortest_text.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

// Words the shell reads as syntax or runs itself (no program of that name would run).
bool shell_only_word(const std::string& w) {
  static const std::array<std::string_view, 30> kWords = {
      "if",     "then",   "else",  "elif", "fi",     "do",       "done",  "case",
      "esac",   "while",  "until", "for",  "in",     "function", "{",     "}",
      "!",      "cd",     "exec",  "eval", "export", "set",      "unset", ".",
      "source", "ulimit", "umask", "trap", "alias",  "readonly"};
  return std::find(kWords.begin(), kWords.end(), w) != kWords.end();
}

// Whether the next word is code another interpreter parses: after `sh -c`, `bash -lc`,
// `python3 -u -c` (a shell's or Python's -c, not a program's own -c FILE), or after `eval`.
bool takes_code(const std::vector<std::string>& words) {
  // eval as a command (first, or after an operator), not a program's own argument "eval".
  for (std::size_t i = 0; i < words.size(); ++i) {
    const bool command_word = i == 0 || words[i - 1] == ";" || words[i - 1] == "&&" ||
                              words[i - 1] == "||" || words[i - 1] == "|" ||
                              words[i - 1] == "then" || words[i - 1] == "do";
    if (command_word && words[i] == "eval") return true;
  }
  const auto is_option = [](const std::string& w) { return w.size() >= 2 && w[0] == '-'; };
  const std::string& flag = words.back();
  if (!is_option(flag) || flag[1] == '-' || flag.back() != 'c') return false;
  auto program = words.rbegin();
  while (program != words.rend() && is_option(*program)) ++program;
  if (program == words.rend()) return false;
  const std::string name = fs::path(*program).filename().string();
  for (const char* shell : {"sh", "bash", "dash", "zsh", "ksh"})
    if (name == shell) return true;
  return name.starts_with("python");  // python3, python3.11
}

bool is_name(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// One pass over the template that builds both forms: the argv words (values substituted) and
// the shell script (placeholders as positional parameters), and notes any shell syntax.
class TemplateScanner {
 public:
  TemplateScanner(const std::string& text, const std::map<std::string, std::string>& values)
      : text_(text), values_(values) {}

  ExecCommand scan() {
    for (i_ = 0; i_ < text_.size(); ++i_) {
      const char c = text_[i_];
      // {{ and }} are a literal brace (as in Python's str.format): awk '{{print $1}}', ${{HOME}}.
      const bool doubled = (c == '{' || c == '}') && i_ + 1 < text_.size() && text_[i_ + 1] == c;
      if (doubled) ++i_;
      if (c == '{' && !doubled) {
        placeholder();
      } else if (quote_ == '\'') {
        in_single(c);
      } else if (quote_ == '"') {
        in_double(c);
      } else {
        unquoted(c);
      }
    }
    if (quote_ != 0) {
      throw ConfigError(std::string("--exec: unterminated ") + quote_ + " quote in: " + text_,
                        "close the quote (write a literal quote as \\\" or \\')");
    }
    end_word();
    if (words_.empty())
      throw ConfigError("--exec: the command is empty",
                        "e.g. --exec 'python3 train.py {batch_size} {lr} {run_dir}'");
    if (shell_only_word(words_.front())) shell_ = true;
    if (!shell_) return {words_, false};
    std::vector<std::string> argv = {"/bin/sh", "-c", script_, "sh"};
    argv.insert(argv.end(), positional_.begin(), positional_.end());
    return {argv, true};
  }

 private:
  void add(char c) {
    word_ += c;
    in_word_ = true;
  }
  void end_word() {
    if (in_word_) words_.push_back(word_);
    word_.clear();
    in_word_ = false;
    first_word_plain_ = false;
  }

  void placeholder() {
    const auto close = text_.find('}', i_);
    const std::string name = text_.substr(i_ + 1, close == std::string::npos ? 0 : close - i_ - 1);
    const auto it = values_.find(name);
    if (close == std::string::npos || it == values_.end()) {
      std::string known;
      for (const auto& [k, v] : values_) known += (known.empty() ? "" : ", ") + ("{" + k + "}");
      const std::string what = close == std::string::npos
                                   ? "a { with no closing }: " + text_.substr(i_, 24)
                                   : "unknown placeholder {" + name + "}";
      throw ConfigError("--exec: " + what,
                        "use one of " + known + "; write a literal brace as {{ or }}");
    }
    // Substituted into code another interpreter parses (bash -c '... {run_dir}'), a value is
    // code there: a directory named $(cmd) ran cmd (2026-11-30 audit).
    if (!words_.empty() && takes_code(words_)) {
      const bool after_eval = std::find(words_.begin(), words_.end(), "eval") != words_.end();
      throw ConfigError("--exec: {" + name + "} is inside the code given to " +
                            (after_eval ? std::string("eval") : words_.back()) +
                            " (another shell or interpreter parses it): its value would be read "
                            "as code there",
                        "pass values as the inner command's arguments: bash -c 'prog \"$1\"' _ "
                        "{" +
                            name + "}");
    }
    word_ += it->second;
    in_word_ = true;
    first_word_plain_ = false;
    script_ += positional_reference(name);
    i_ = close;
  }

  // "${N}" read as one word in every quoting context of the template.
  std::string positional_reference(const std::string& name) {
    auto [it, added] = index_.try_emplace(name, static_cast<int>(positional_.size()) + 1);
    if (added) positional_.push_back(values_.at(name));
    const std::string ref = "${" + std::to_string(it->second) + "}";
    if (quote_ == '"') return ref;
    if (quote_ == '\'') return "'\"" + ref + "\"'";
    return "\"" + ref + "\"";
  }

  void in_single(char c) {
    script_ += c;
    if (c == '\'')
      quote_ = 0;
    else
      add(c);
  }

  void in_double(char c) {
    script_ += c;
    if (c == '"') {
      quote_ = 0;
    } else if (c == '\\' && i_ + 1 < text_.size() &&
               std::string_view("$`\"\\\n").find(text_[i_ + 1]) != std::string_view::npos) {
      script_ += text_[++i_];
      if (text_[i_] != '\n') add(text_[i_]);
    } else {
      if (c == '$' || c == '`') shell_ = true;  // an expansion: the shell's job
      add(c);
    }
  }

  void unquoted(char c) {
    script_ += c;
    if (c == ' ' || c == '\t') {
      end_word();
    } else if (c == '\'' || c == '"') {
      quote_ = c;
      in_word_ = true;
      first_word_plain_ = false;
    } else if (c == '\\') {
      if (i_ + 1 < text_.size()) {
        script_ += text_[++i_];
        if (text_[i_] != '\n') add(text_[i_]);  // backslash-newline continues the line
      } else {
        add(c);
      }
    } else {
      note_shell_syntax(c);
      add(c);
    }
  }

  // Operators, expansions, globs, a comment or ~ at a word's start, a NAME=value prefix.
  void note_shell_syntax(char c) {
    if (std::string_view("|&;<>()$`*?[\n").find(c) != std::string_view::npos) shell_ = true;
    if (!in_word_ && (c == '#' || c == '~')) shell_ = true;
    if (c == '=' && words_.empty() && first_word_plain_ && is_name(word_)) shell_ = true;
  }

  const std::string& text_;
  const std::map<std::string, std::string>& values_;
  std::size_t i_ = 0;
  char quote_ = 0;  // 0, '\'' or '"'
  std::vector<std::string> words_;
  std::string word_;
  bool in_word_ = false, first_word_plain_ = true, shell_ = false;
  std::string script_;
  std::vector<std::string> positional_;
  std::map<std::string, int> index_;
};

}  // namespace

std::map<std::string, std::string> placeholder_values(const Trial& t, std::int64_t base_seed,
                                                      const fs::path& run_dir, int threads) {
  std::map<std::string, std::string> v;
  for (const std::string& o : t.overrides) {  // every key the sweep sets: {section.key}
    const auto eq = o.find('=');
    v[o.substr(0, eq)] = o.substr(eq + 1);
  }
  v["batch_size"] = std::to_string(t.batch_size);
  v["lr"] = shortest_text(t.lr);  // as the sweep's CSVs write it (it was %.17g)
  v["seed"] = std::to_string(base_seed + t.seed);
  v["run_dir"] = run_dir.string();
  v["max_steps"] = std::to_string(t.steps);
  v["eval_every"] = std::to_string(t.eval_every);
  v["threads"] = std::to_string(threads);
  return v;
}

std::vector<std::string> exec_thread_environment(int threads) {
  std::vector<std::string> env{"LBT_THREADS=" + std::to_string(threads)};
  if (!std::getenv("OMP_NUM_THREADS")) env.push_back("OMP_NUM_THREADS=" + std::to_string(threads));
  return env;
}

ExecCommand build_exec_command(const std::string& command_template,
                               const std::map<std::string, std::string>& values) {
  return TemplateScanner(command_template, values).scan();
}

std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./=:,+@%") == std::string::npos) {
    return s;
  }
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string shell_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) {
    if (!line.empty()) line += ' ';
    line += shell_word(a);
  }
  return line;
}

}  // namespace lbt::experiments
