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

// Raised on ranks other than 0 when rank 0 raises the same failure with the full message (e.g.
// ranks started with different configs): cli/main.cpp prints nothing for it and leaves ending
// the job to rank 0's abort, so the message appears once.
class ReportedByRankZero : public Error {
 public:
  using Error::Error;
  int exit_code() const override { return 2; }
};

// Work that ran to its end with part of it failed (a sweep whose trials crashed): exit 6.
class PartialFailure : public Error {
 public:
  using Error::Error;
  int exit_code() const override { return 6; }
};

// Stopped by SIGINT or SIGTERM after saving its state: exit 128 + the signal (130, 143), as
// a shell reports a process that a signal ended.
class Interrupted : public Error {
 public:
  Interrupted(int signal, std::string what, std::string hint = {})
      : Error(std::move(what), std::move(hint)), signal_(signal) {}
  int exit_code() const override { return 128 + signal_; }

 private:
  int signal_;
};

}  // namespace lbt
