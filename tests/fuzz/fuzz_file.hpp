// Fuzz-target helper: the input bytes as a file path, via an anonymous in-memory file
// (/proc/self/fd/N), since the readers under test take paths.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace lbt::fuzz {

class MemoryFile {
 public:
  MemoryFile(const std::uint8_t* data, std::size_t size) : fd_(memfd_create("fuzz", 0)) {
    if (fd_ >= 0 && write(fd_, data, size) != static_cast<ssize_t>(size)) close_fd();
  }
  ~MemoryFile() { close_fd(); }
  bool ok() const { return fd_ >= 0; }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  void close_fd() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  int fd_;
};

}  // namespace lbt::fuzz
