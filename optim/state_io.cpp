// OptimizerState buffers and their binary save/load (checkpoints treat them like parameters).
// Format: "LBTOPT1\n", u64 count, then per buffer: u64 name length, name, u64 size, floats.
#include <cstdint>
#include <istream>
#include <ostream>

#include "core/error.hpp"
#include "optim/optimizer.hpp"

namespace lbt::optim {

AlignedBuffer& OptimizerState::add(const std::string& name, std::size_t size) {
  buffers_.emplace_back(name, AlignedBuffer(size));
  return buffers_.back().second;
}

AlignedBuffer& OptimizerState::get(const std::string& name) {
  for (auto& [n, buffer] : buffers_) {
    if (n == name) return buffer;
  }
  throw Error("optimizer state has no buffer '" + name + "'");
}

void OptimizerState::place_on(const Device& device) {
  for (auto& [name, buffer] : buffers_) {
    AlignedBuffer placed = device.allocate(buffer.size());
    device.copy(buffer.span(), placed.span());
    buffer = std::move(placed);
  }
}

bool OptimizerState::has(const std::string& name) const {
  for (const auto& [n, buffer] : buffers_)
    if (n == name) return true;
  return false;
}

namespace {

constexpr char kMagic[8] = {'L', 'B', 'T', 'O', 'P', 'T', '1', '\n'};

void put_u64(std::ostream& out, std::uint64_t x) {
  out.write(reinterpret_cast<const char*>(&x), 8);
}

struct Reader {
  std::istream& in;
  const std::string& source;
  std::uint64_t offset = 0;

  void read(void* dst, std::size_t bytes, const std::string& what) {
    in.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
    if (static_cast<std::size_t>(in.gcount()) != bytes)
      throw DataError(source + ": optimizer state truncated at byte " +
                          std::to_string(offset + in.gcount()) + " while reading " + what,
                      "the checkpoint was cut short; use an earlier one");
    offset += bytes;
  }
  std::uint64_t u64(const std::string& what) {
    std::uint64_t x = 0;
    read(&x, 8, what);
    return x;
  }
  [[noreturn]] void mismatch(const std::string& what, const std::string& expected,
                             const std::string& got) {
    throw DataError(
        source + ": optimizer state " + what + " at byte " + std::to_string(offset) +
            ": expected " + expected + ", got " + got,
        "the checkpoint was written by a different optimizer or model; check optimizer.name "
        "and the model spec");
  }
};

}  // namespace

void save_state(const OptimizerState& state, std::ostream& out) {
  out.write(kMagic, 8);
  put_u64(out, state.buffers().size());
  for (const auto& [name, buffer] : state.buffers()) {
    put_u64(out, name.size());
    out.write(name.data(), static_cast<std::streamsize>(name.size()));
    put_u64(out, buffer.size());
    out.write(reinterpret_cast<const char*>(buffer.data()),
              static_cast<std::streamsize>(buffer.size() * sizeof(float)));
  }
  if (!out) throw Error("writing optimizer state failed", "check disk space and permissions");
}

void load_state(OptimizerState& state, std::istream& in, const std::string& source) {
  Reader r{in, source};
  char magic[8];
  r.read(magic, 8, "the header");
  if (!std::equal(magic, magic + 8, kMagic)) r.mismatch("header", "LBTOPT1", "something else");
  const std::uint64_t count = r.u64("the buffer count");
  if (count != state.buffers().size())
    r.mismatch("buffer count", std::to_string(state.buffers().size()), std::to_string(count));
  for (auto& [name, buffer] : state.buffers()) {
    const std::uint64_t length = r.u64("a name length");
    if (length > 4096) r.mismatch("name length", "<= 4096", std::to_string(length));
    std::string got(length, '\0');
    r.read(got.data(), length, "a buffer name");
    if (got != name) r.mismatch("buffer name", "'" + name + "'", "'" + got + "'");
    const std::uint64_t size = r.u64("the size of '" + name + "'");
    if (size != buffer.size())
      r.mismatch("size of '" + name + "'", std::to_string(buffer.size()), std::to_string(size));
    r.read(buffer.data(), size * sizeof(float), "the values of '" + name + "'");
  }
}

}  // namespace lbt::optim
