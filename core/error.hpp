// lbt error hierarchy: every error carries what went wrong and a hint saying how to fix it.
// Library code throws; only cli/main.cpp catches, prints "error: ..." / "hint: ...", exits.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>

namespace lbt {

class Error : public std::runtime_error {
 public:
  explicit Error(std::string what, std::string hint = {})
      : std::runtime_error(std::move(what)), hint_(std::move(hint)) {}
  const std::string& hint() const { return hint_; }
  virtual int exit_code() const { return 1; }

 private:
  std::string hint_;
};

// A bad config key, value or command-line option.
class ConfigError : public Error {
 public:
  using Error::Error;
  int exit_code() const override { return 2; }
};

// A missing, corrupt or truncated data file: name the path, byte offset, expected vs got.
class DataError : public Error {
 public:
  using Error::Error;
  int exit_code() const override { return 3; }
};

class DeviceError : public Error {
 public:
  using Error::Error;
  int exit_code() const override { return 4; }
};

class CommError : public Error {
 public:
  using Error::Error;
  int exit_code() const override { return 5; }
};

}  // namespace lbt
