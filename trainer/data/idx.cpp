// IDX reader through zlib's gzread, which reads gzip and plain files alike.
#include "trainer/data/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <memory>
#include <string>

#include "core/error.hpp"

namespace lbt::data {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// One IDX file read front to back: the header on construction, then the payload in pieces; the
// errors name the path, the byte offset and expected against got.
class IdxReader {
 public:
  explicit IdxReader(const std::filesystem::path& path);

  const std::vector<std::int64_t>& dims() const { return dims_; }
  std::int64_t payload_bytes() const { return payload_bytes_; }

  // The payload in pieces of at most 1 MiB, each handed to consume(data, bytes) in order; a
  // payload shorter than the header says, corrupt data or trailing bytes throw.
  template <typename Consume>
  void read_payload(Consume&& consume);

 private:
  void read_exact(void* dst, std::size_t bytes, const char* what, std::int64_t section_start,
                  std::size_t section_bytes, std::size_t section_done);

  std::filesystem::path path_;
  std::unique_ptr<gzFile_s, GzCloser> file_;
  std::int64_t offset_ = 0;
  std::vector<std::int64_t> dims_;
  std::int64_t payload_bytes_ = 1;
};

IdxReader::IdxReader(const std::filesystem::path& path) : path_(path) {
  require_regular_file(path,
                       "install Debian's dataset-fashion-mnist (scripts/setup.sh does) or set "
                       "data.path to the directory holding the IDX files");
  file_.reset(gzopen(path.c_str(), "rb"));
  if (!file_) throw DataError("cannot open " + path.string(), "check file permissions");
  // A large buffer for dataset files, a small one for tiny files (fuzzing, tests).
  std::error_code size_error;
  const auto file_size = std::filesystem::file_size(path, size_error);
  gzbuffer(file_.get(), size_error ? 1u << 16
                                   : static_cast<unsigned>(
                                         std::clamp<std::uintmax_t>(file_size, 8192, 1u << 20)));
  unsigned char magic[4];
  read_exact(magic, 4, "header", offset_, 4, 0);
  const std::uint32_t magic_value = (std::uint32_t(magic[0]) << 24) |
                                    (std::uint32_t(magic[1]) << 16) |
                                    (std::uint32_t(magic[2]) << 8) | magic[3];
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] < 1 || magic[3] > 4) {
    throw DataError(path.string() + ": not an unsigned-byte IDX file: magic at byte 0 is " +
                        hex(magic_value) + ", expected 0x0000080N (N = 1..4 dimensions)",
                    "check that data.path points at MNIST-format IDX files");
  }
  for (int d = 0; d < magic[3]; ++d) {
    unsigned char b[4];
    read_exact(b, 4, "dimension sizes", offset_, 4, 0);
    std::int64_t size =
        (std::int64_t(b[0]) << 24) | (std::int64_t(b[1]) << 16) | (std::int64_t(b[2]) << 8) | b[3];
    if (size == 0 && d == 0) {  // the count of images or labels: an empty file, named so
      throw DataError(path.string() + ": holds no examples (its header counts 0)",
                      "restore the file: an IDX file lbt trains on holds at least one example");
    }
    if (size <= 0 || size > (1ll << 31)) {
      throw DataError(path.string() + ": implausible dimension " + std::to_string(d) + " = " +
                          std::to_string(size) + " at byte " + std::to_string(offset_ - 4),
                      "the file is damaged or not IDX: restore it");
    }
    dims_.push_back(size);
    payload_bytes_ *= size;
    if (payload_bytes_ > (1ll << 34))
      throw DataError(path.string() + ": header describes over 16 GiB");
  }
}

// Reads `bytes` bytes, part `section_done` onwards of a section of `section_bytes` bytes that
// starts at byte `section_start`: a short file reports the whole section's expected and got.
void IdxReader::read_exact(void* dst, std::size_t bytes, const char* what,
                           std::int64_t section_start, std::size_t section_bytes,
                           std::size_t section_done) {
  std::size_t done = 0;
  while (done < bytes) {
    int chunk = static_cast<int>(std::min<std::size_t>(bytes - done, 1 << 30));
    int n = gzread(file_.get(), static_cast<char*>(dst) + done, chunk);
    if (n < 0) {
      int err = 0;
      // The count is of the data read before, not the compressed file's offset: zlib reads
      // ahead, so a damaged stream read "at byte 0" wherever it was (2026-11-30 audit).
      throw DataError(path_.string() + ": corrupt compressed data after " +
                          std::to_string(offset_ + done) + " bytes of data read (" +
                          gzerror(file_.get(), &err) + ")",
                      "the file is damaged: reinstall or re-download it");
    }
    if (n == 0) {
      throw DataError(path_.string() + ": truncated " + what + ": expected " +
                          std::to_string(section_bytes) + " bytes at offset " +
                          std::to_string(section_start) + ", got " +
                          std::to_string(section_done + done),
                      "the file is incomplete: reinstall or re-download it");
    }
    done += static_cast<std::size_t>(n);
  }
  offset_ += static_cast<std::int64_t>(bytes);
}

template <typename Consume>
void IdxReader::read_payload(Consume&& consume) {
  constexpr std::size_t piece = std::size_t{1} << 20;
  const std::int64_t start = offset_;
  const auto total = static_cast<std::size_t>(payload_bytes_);
  std::vector<std::uint8_t> buffer(std::min(piece, total));
  for (std::size_t done = 0; done < total;) {
    const std::size_t bytes = std::min(piece, total - done);
    read_exact(buffer.data(), bytes, "payload", start, total, done);
    consume(buffer.data(), bytes);
    done += bytes;
  }
  unsigned char extra;
  if (gzread(file_.get(), &extra, 1) > 0) {
    throw DataError(path_.string() + ": " + std::to_string(offset_) +
                        " bytes expected from the header, but the file is longer",
                    "the header and payload disagree: the file is damaged");
  }
}

}  // namespace

std::vector<std::int64_t> idx_shape(const std::filesystem::path& path) {
  return IdxReader(path).dims();
}

IdxArray read_idx(const std::filesystem::path& path) {
  IdxReader reader(path);
  IdxArray out;
  out.dims = reader.dims();
  out.bytes.reserve(static_cast<std::size_t>(reader.payload_bytes()));
  reader.read_payload([&](const std::uint8_t* data, std::size_t bytes) {
    out.bytes.insert(out.bytes.end(), data, data + bytes);
  });
  return out;
}

Dataset load_idx_pair(const std::filesystem::path& images, const std::filesystem::path& labels,
                      std::int64_t num_classes, const std::string& name,
                      std::int64_t max_examples) {
  // Both headers before either payload: a label count or an image shape that disagrees is
  // refused before gigabytes of a small gzip are read (2026-11-30 audit).
  IdxReader img(images), lab_reader(labels);
  IdxArray lab{lab_reader.dims(), {}};
  if (img.dims().size() < 2) {
    throw DataError(images.string() + ": expected an images file with >= 2 dimensions, got " +
                    std::to_string(img.dims().size()));
  }
  if (lab.dims.size() != 1) {
    throw DataError(labels.string() + ": expected a 1-dimensional labels file, got " +
                    std::to_string(lab.dims.size()) + " dimensions");
  }
  const std::int64_t n = img.dims()[0];
  if (n != lab.dims[0]) {
    throw DataError(images.string() + " holds " + std::to_string(n) + " images but " +
                        labels.string() + " holds " + std::to_string(lab.dims[0]) + " labels",
                    "the two files must come from the same split (train or t10k)");
  }
  lab.bytes.reserve(static_cast<std::size_t>(n));
  lab_reader.read_payload([&](const std::uint8_t* data, std::size_t bytes) {
    lab.bytes.insert(lab.bytes.end(), data, data + bytes);
  });
  for (std::int64_t i = 0; i < n; ++i) {
    if (lab.bytes[i] >= num_classes) {
      throw DataError(labels.string() + ": label " + std::to_string(lab.bytes[i]) + " at index " +
                          std::to_string(i) + " (byte " + std::to_string(8 + i) + ") is not < " +
                          std::to_string(num_classes),
                      "check data.num_classes or the labels file");
    }
  }
  Dataset d;
  d.name = name;
  d.n = max_examples > 0 ? std::min(n, max_examples) : n;
  d.dim = 1;
  d.shape = {1};
  for (std::size_t i = 1; i < img.dims().size(); ++i)
    d.dim *= img.dims()[i], d.shape.push_back(img.dims()[i]);
  d.num_classes = num_classes;
  d.labels.assign(lab.bytes.begin(), lab.bytes.begin() + d.n);
  // The kept images' pixels are converted piece by piece into untouched memory (no byte copy of
  // the file, no zeroed floats); the rest is still read, so a damaged file fails the same way.
  const auto kept_bytes = static_cast<std::size_t>(d.n * d.dim);
  reserve_untouched(d.x, kept_bytes);
  img.read_payload([&](const std::uint8_t* data, std::size_t bytes) {
    const std::size_t from = d.x.size();
    d.x.insert(d.x.end(), data, data + std::min(bytes, kept_bytes - from));
    for (std::size_t i = from; i < d.x.size(); ++i) d.x[i] *= 1.0f / 255.0f;
  });
  return d;
}

}  // namespace lbt::data
