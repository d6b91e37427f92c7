// Checkpoint files; see checkpoint.hpp.
#include "trainer/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <utility>

#include "core/error.hpp"
#include "core/io.hpp"

namespace lbt::trainer {
namespace {

constexpr char kMagic[8] = {'L', 'B', 'T', 'C', 'K', 'P', 'T', '1'};

// Buffered writer that keeps a running CRC-32 of everything written.
class CrcWriter {
 public:
  CrcWriter(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  void write(const void* data, std::size_t n) {
    // zlib: crc32_z(crc, Z_NULL, 0) returns the *initial* CRC, so an empty section (whose
    // span may have a null data pointer) must not reach it.
    if (n == 0) return;
    crc_ = crc32_z(crc_, static_cast<const Bytef*>(data), n);
    raw(data, n);
  }
  void raw(const void* data, std::size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        throw Error("cannot write checkpoint " + path_.string() + ": " + std::strerror(err),
                    io::write_failure_hint(err));
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }
  template <class T>
  void put(T value) {
    write(&value, sizeof value);
  }
  std::uint32_t crc() const { return static_cast<std::uint32_t>(crc_); }

 private:
  int fd_;
  std::filesystem::path path_;
  uLong crc_ = crc32(0L, Z_NULL, 0);
};

}  // namespace

// A resume compares the config before it copies a section (experiments/run_checkpoint.cpp), so a
// section missing or of another size under the same config is a file edited with its checksum
// recomputed (or another program's), not a changed model.
constexpr const char* kNotThisModelsHint =
    "it was edited or written by another program: move it out of checkpoints/ (a resume then "
    "takes the one before it), or start a fresh run if the model or optimizer changed";

void LoadedCheckpoint::copy_to(const std::string& name, std::span<std::byte> dst) const {
  auto it = sections.find(name);
  if (it == sections.end()) {
    throw DataError(path.string() + ": checkpoint has no section '" + name + "'",
                    kNotThisModelsHint);
  }
  if (it->second.size() != dst.size()) {
    throw DataError(path.string() + ": section '" + name + "' holds " +
                        std::to_string(it->second.size()) + " bytes, expected " +
                        std::to_string(dst.size()),
                    kNotThisModelsHint);
  }
  if (!dst.empty()) std::memcpy(dst.data(), it->second.data(), dst.size());
}

void write_checkpoint(const std::filesystem::path& path, const nlohmann::json& header,
                      const std::vector<CheckpointSection>& sections) {
  io::create_directories(path.parent_path(), "checkpoint directory");
  const auto tmp = io::temporary_twin(path);
  int fd = io::open_own_file(tmp, O_WRONLY | O_CREAT | O_TRUNC);
  if (fd < 0) {  // named as the checkpoint: the temporary file beside it is ours
    const int err = errno;
    throw Error("cannot write checkpoint " + path.string() + ": " + std::strerror(err),
                io::file_error_hint(err, "check that the run directory is writable"));
  }
  try {
    CrcWriter out(fd, path);
    out.write(kMagic, sizeof kMagic);
    out.put<std::uint32_t>(kCheckpointVersion);
    const std::string text = header.dump();
    out.put<std::uint64_t>(text.size());
    out.write(text.data(), text.size());
    for (const auto& s : sections) {
      out.put<std::uint32_t>(static_cast<std::uint32_t>(s.name.size()));
      out.write(s.name.data(), s.name.size());
      out.put<std::uint64_t>(s.bytes.size());
      out.write(s.bytes.data(), s.bytes.size());
    }
    const std::uint32_t crc = out.crc();
    out.raw(&crc, sizeof crc);
    // fsync and close report what a network file system or a quota refused late.
    if (::fsync(fd) != 0 || ::close(std::exchange(fd, -1)) != 0) {
      const int err = errno;
      throw Error("cannot write checkpoint " + path.string() + ": " + std::strerror(err),
                  io::write_failure_hint(err));
    }
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error("cannot replace checkpoint " + path.string() + ": " + std::strerror(err),
                io::file_error_hint(err, "move away what is at " + path.string()));
  }
}

std::uint32_t checkpoint_seal(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::uint32_t seal = 0;
  if (!in || in.tellg() < 4 || !in.seekg(-4, std::ios::end) ||
      !in.read(reinterpret_cast<char*>(&seal), sizeof seal))
    throw DataError("cannot read the end of checkpoint " + path.string());
  return seal;
}

LoadedCheckpoint read_checkpoint(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError("cannot open checkpoint " + path.string());
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto fail = [&](const std::string& what, std::size_t offset) -> DataError {
    return DataError(path.string() + ": " + what + " at byte " + std::to_string(offset),
                     "the checkpoint is damaged; delete it to fall back to an older one");
  };
  if (raw.size() < sizeof kMagic + 4 + 8 + 4)
    throw fail("truncated checkpoint (" + std::to_string(raw.size()) + " bytes)", 0);
  if (std::memcmp(raw.data(), kMagic, sizeof kMagic) != 0)
    throw fail("not an lbt checkpoint (bad magic)", 0);
  std::uint32_t stored_crc;
  std::memcpy(&stored_crc, raw.data() + raw.size() - 4, 4);
  const auto crc = static_cast<std::uint32_t>(
      crc32_z(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(raw.data()), raw.size() - 4));
  if (crc != stored_crc) throw fail("checksum mismatch (corrupt or truncated)", raw.size() - 4);

  std::size_t pos = sizeof kMagic;
  const std::size_t end = raw.size() - 4;
  auto take = [&](void* dst, std::size_t n) {
    if (pos + n > end) throw fail("truncated section", pos);
    if (n == 0) return;  // an empty vector's data() may be null, which memcpy forbids
    std::memcpy(dst, raw.data() + pos, n);
    pos += n;
  };
  std::uint32_t version;
  take(&version, 4);
  if (version != kCheckpointVersion) {
    throw fail("unsupported checkpoint version " + std::to_string(version), sizeof kMagic);
  }
  std::uint64_t header_bytes;
  take(&header_bytes, 8);
  if (header_bytes > end - pos) throw fail("header length past the end", pos);
  LoadedCheckpoint ck;
  ck.path = path;
  ck.header = nlohmann::json::parse(raw.begin() + static_cast<std::ptrdiff_t>(pos),
                                    raw.begin() + static_cast<std::ptrdiff_t>(pos + header_bytes),
                                    nullptr, /*allow_exceptions=*/false);
  if (ck.header.is_discarded()) throw fail("header is not valid JSON", pos);
  pos += header_bytes;
  while (pos < end) {
    std::uint32_t name_bytes;
    take(&name_bytes, 4);
    // Before the name is allocated: 0xFFFFFFF0 made a 4 GiB string of a 3 KB file (2026-11-30).
    if (name_bytes > end - pos) throw fail("section name runs past the end", pos);
    std::string name(name_bytes, '\0');
    take(name.data(), name_bytes);
    std::uint64_t payload;
    take(&payload, 8);
    if (payload > end - pos) throw fail("section '" + name + "' runs past the end", pos);
    // lbt writes each once: a second (an edit) silently replaced the first (2026-11-30 audit).
    if (ck.sections.contains(name)) throw fail("section '" + name + "' appears twice", pos);
    auto& bytes = ck.sections[name];
    bytes.resize(payload);
    take(bytes.data(), payload);
  }
  return ck;
}

std::filesystem::path checkpoint_path(const std::filesystem::path& dir, std::int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "step_%010lld.ckpt", static_cast<long long>(step));
  return dir / name;
}

std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("step_") && name.ends_with(".ckpt")) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());  // zero-padded step numbers sort by step
  return out;
}

void prune_checkpoints(const std::filesystem::path& dir, int keep, std::int64_t written_step) {
  auto all = list_checkpoints(dir);
  // Zero-padded names sort as their steps.
  const auto written = checkpoint_path(dir, written_step);
  std::erase_if(all, [&](const std::filesystem::path& p) { return p > written; });
  for (std::size_t i = 0; i + static_cast<std::size_t>(std::max(keep, 1)) < all.size(); ++i) {
    std::filesystem::remove(all[i]);
  }
}

bool load_latest_checkpoint(const std::filesystem::path& dir, LoadedCheckpoint& out) {
  auto all = list_checkpoints(dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      out = read_checkpoint(*it);
      return true;
    } catch (const std::exception& e) {
      // read_checkpoint's errors name the file already ("PATH: checksum mismatch ...").
      const std::string why = e.what();
      std::fprintf(
          stderr, "warning: skipping checkpoint %s\n",
          why.rfind(it->string(), 0) == 0 ? why.c_str() : (it->string() + ": " + why).c_str());
    }
  }
  return false;
}

}  // namespace lbt::trainer
