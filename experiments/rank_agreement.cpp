// check_ranks_agree; see rank_agreement.hpp.
#include "experiments/rank_agreement.hpp"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "core/file_cache.hpp"
#include "experiments/run_checkpoint.hpp"

namespace lbt::experiments {
namespace {

// Data files' prints kept in the cache: a sweep's files, with room for a few datasets.
constexpr std::size_t kPrintsKept = 64;

// What must agree, one "key = value" line per key, sorted: the config less train.threads (a
// rank's own affair: it changes no value across ranks) and the data paths (each host may read
// its own copy; check_data_agrees compares the contents) plus the layout.
std::string agreement_text(const std::string& resolved_toml, const WorldLayout& layout, int world) {
  auto keys = flatten_config(resolved_toml);
  std::erase_if(keys, [](const auto& kv) {
    return kv.first == "train.threads" || names_a_data_file(kv.first);
  });
  keys["world.size"] = std::to_string(world);
  keys["world.micro_batch"] = std::to_string(layout.micro_batch);
  keys["world.accum_steps"] = std::to_string(layout.accum_steps);
  keys["world.global_batch"] = std::to_string(layout.global_batch);
  std::string text;
  for (const auto& [k, v] : keys) text += k + " = " + v + "\n";
  return text;
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::map<std::string, std::string> parse_lines(const std::string& text) {
  std::map<std::string, std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    const std::string line = text.substr(pos, end - pos);
    const std::size_t eq = line.find(" = ");
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 3);
    pos = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

// Sends rank `root`'s text to every rank (length first).
std::string broadcast_text(comm::Communicator& comm, const std::string& mine, int root) {
  std::uint64_t n = mine.size();
  comm.broadcast(std::as_writable_bytes(std::span<std::uint64_t>(&n, 1)), root);
  std::string text = comm.rank() == root ? mine : std::string(n, '\0');
  comm.broadcast(std::as_writable_bytes(std::span<char>(text.data(), text.size())), root);
  return text;
}

// The ranks' texts where they differ: one group per distinct hash of `compared` (rank 0's
// first), each with its ranks and the `shown` text of its first rank. Empty when all agree.
struct Group {
  std::vector<int> ranks;
  std::string shown;
};

std::vector<Group> differing_groups(comm::Communicator& comm, const std::string& compared,
                                    const std::string& shown) {
  const int world = comm.size();
  // The hash as four 16-bit pieces: exact in a float, the type allgather carries.
  const std::uint64_t h = fnv1a(compared);
  float parts[4];
  for (int i = 0; i < 4; ++i) parts[i] = static_cast<float>((h >> (16 * i)) & 0xffffu);
  std::vector<float> all(4 * static_cast<std::size_t>(world));
  comm.allgather(std::span<const float>(parts, 4), all);
  auto hash_of = [&](int r) {
    std::uint64_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<std::uint64_t>(all[4 * r + i]) << (16 * i);
    return v;
  };
  bool agree = true;
  for (int r = 1; r < world; ++r) agree = agree && hash_of(r) == hash_of(0);
  if (agree) return {};
  // Rare path: each distinct text travels once, from the first rank holding it, so every rank
  // can name the differences.
  std::map<std::uint64_t, std::size_t> group_of;
  std::vector<Group> groups;
  for (int r = 0; r < world; ++r) {
    auto [it, added] = group_of.emplace(hash_of(r), groups.size());
    if (added) groups.push_back({});
    groups[it->second].ranks.push_back(r);
  }
  for (auto& g : groups) g.shown = broadcast_text(comm, shown, g.ranks.front());
  return groups;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string who;
  for (int r : ranks) {
    if (!who.empty()) who += ',';  // not ("" or ",") + to_string: GCC 12's false -Wrestrict
    who += std::to_string(r);
  }
  return "rank" + std::string(ranks.size() > 1 ? "s " : " ") + who;
}

// FNV-1a of the first and the last MiB and the size: what a print held until 2026-11-29, kept
// so that a checkpoint or sweep.json from before compares (DataPrint::same_contents).
std::uint64_t sampled_fingerprint(std::ifstream& in, std::uintmax_t size) {
  constexpr std::uintmax_t kMiB = 1 << 20;
  auto read_at = [&](std::uintmax_t offset, std::uintmax_t n) {
    std::string bytes(n, '\0');
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(bytes.data(), static_cast<std::streamsize>(n));
    return bytes;
  };
  const std::uintmax_t head = std::min(size, kMiB);
  std::string sample = read_at(0, head);
  if (size > kMiB)
    sample += read_at(size - std::min(size - head, kMiB), std::min(size - head, kMiB));
  return fnv1a(sample + "/" + std::to_string(size));
}

// CRC-32 of every byte (zlib's, ~1 GB/s: 50 ms for Fashion-MNIST): a copy edited or damaged
// anywhere differs; the sampled MiBs alone missed one that differs mid-file.
std::uint32_t whole_file_crc(std::ifstream& in) {
  in.clear();
  in.seekg(0);
  std::vector<char> block(1 << 20);
  uLong crc = crc32(0L, Z_NULL, 0);
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0)
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(block.data()),
                  static_cast<z_size_t>(in.gcount()));
  return static_cast<std::uint32_t>(crc);
}

// The file as the system knows it: device, inode, size, and the times of its last write and of
// its last status change. No one can set the change time back (a write, or putting the write
// time back, moves it), so a print stored under this key is the file's (key "" where stat
// fails). `settled`: the last change is 3 s old or more. A file changed again within its
// file system's time resolution (1 s on some, 2 s on FAT) keeps its times, so a print of a
// file changed that recently is not stored ("racily clean", as Git calls it).
struct FileIdentity {
  std::string key;
  bool settled = false;
};
FileIdentity file_identity(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  char text[200];
  std::snprintf(text, sizeof text, "%ju %ju %jd %jd.%09ld %jd.%09ld",
                static_cast<std::uintmax_t>(st.st_dev), static_cast<std::uintmax_t>(st.st_ino),
                static_cast<std::intmax_t>(st.st_size),
                static_cast<std::intmax_t>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec,
                static_cast<std::intmax_t>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec);
  const std::time_t now = std::time(nullptr);
  return {text, now - std::max(st.st_ctim.tv_sec, st.st_mtim.tv_sec) >= 3};
}

// "SAMPLED:CRC" (decimal, then 8 hex digits); a stored value of another form is not one.
bool is_print(const std::string& text) {
  const std::size_t colon = text.find(':');
  return colon != std::string::npos && colon > 0 && text.size() == colon + 9 &&
         text.find_first_not_of("0123456789") == colon &&
         text.find_first_not_of("0123456789abcdef", colon + 1) == std::string::npos;
}

// Read from every byte once per file version: each run start on each rank read them all (~1 s
// per GB; a sweep over tens of GB paid it per trial). The cache (core/file_cache.hpp) keys the
// print by file_identity, stored only where the file did not change while it was read and its
// last change is settled.
std::string file_fingerprint(const std::filesystem::path& path, std::uintmax_t size) {
  const FileIdentity identity = file_identity(path);
  if (!identity.key.empty()) {
    const std::optional<std::string> known = file_cache::find("data-print", identity.key);
    if (known && is_print(*known)) return *known;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError("cannot read data file " + path.string(), "check its permissions");
  char crc[16];
  std::snprintf(crc, sizeof crc, ":%08x", static_cast<unsigned>(whole_file_crc(in)));
  in.clear();
  const std::string print = std::to_string(sampled_fingerprint(in, size)) + crc;
  if (identity.settled && identity.key == file_identity(path).key)
    file_cache::store("data-print", identity.key, print, kPrintsKept);
  return print;
}

}  // namespace

void check_ranks_agree(comm::Communicator& comm, const std::string& resolved_toml,
                       const WorldLayout& layout) {
  if (comm.size() == 1) return;
  const std::string mine = agreement_text(resolved_toml, layout, comm.size());
  const std::vector<Group> groups = differing_groups(comm, mine, mine);
  if (groups.empty()) return;
  const auto reference = parse_lines(groups.front().shown);
  std::string message = "the ranks were started with different configs:";
  for (std::size_t g = 1; g < groups.size(); ++g) {
    const auto other = parse_lines(groups[g].shown);
    std::string diffs;
    auto add = [&](const std::string& key, const std::string& a, const std::string& b) {
      diffs += (diffs.empty() ? "" : ", ") + key + " = " + a + " on rank 0 but " + b;
    };
    for (const auto& [key, value] : reference) {
      auto it = other.find(key);
      const std::string theirs = it == other.end() ? "(unset)" : it->second;
      if (theirs != value) add(key, value, theirs);
    }
    for (const auto& [key, value] : other) {
      if (!reference.count(key)) add(key, "(unset)", value);
    }
    message += ' ';
    message += rank_list(groups[g].ranks) + ": " + diffs + ";";
  }
  message.pop_back();
  const std::string hint =
      "start every rank with the same --config and --set options (in an MPMD launch, the same "
      "arguments after each ':'); only train.threads and the data paths may differ";
  if (comm.rank() == 0) throw ConfigError(message, hint);
  throw ReportedByRankZero(message);
}

bool DataPrint::same_contents(const DataPrint& o) const {
  if (key != o.key || size != o.size) return false;
  const auto sampled = [](const std::string& f) { return f.substr(0, f.find(':')); };
  const bool both_whole =
      fingerprint.find(':') != std::string::npos && o.fingerprint.find(':') != std::string::npos;
  return both_whole ? fingerprint == o.fingerprint : sampled(fingerprint) == sampled(o.fingerprint);
}

DataPrint read_data_print(const std::string& line) {
  DataPrint p;
  std::istringstream in(line);
  in >> p.key >> p.size >> p.fingerprint;
  std::getline(in >> std::ws, p.path);
  return p;
}

std::string data_change(const DataPrint& then, const DataPrint& now) {
  if (then.size == now.size) return "the same size, other contents";
  const auto bytes = [](const std::string& size) {
    return size.empty() ? "none" : size + " bytes";
  };
  return bytes(then.size) + " then, " + bytes(now.size) + " now";
}

std::vector<std::string> data_fingerprints(const std::vector<data::DataFile>& files) {
  std::vector<std::string> lines;
  for (const auto& f : files) {
    std::error_code ec;
    const std::uintmax_t size = std::filesystem::file_size(f.path, ec);
    if (ec) throw DataError("data file not found: " + f.path.string(), "check " + f.key);
    lines.push_back(f.key + " " + std::to_string(size) + " " + file_fingerprint(f.path, size));
  }
  return lines;
}

void check_data_agrees(comm::Communicator& comm, const std::vector<data::DataFile>& files) {
  if (comm.size() == 1) return;
  // Per file, one line "key size fingerprint" to compare and the same plus the path to show.
  std::string compared, shown;
  const std::vector<std::string> prints = data_fingerprints(files);
  for (std::size_t i = 0; i < files.size(); ++i) {
    compared += prints[i] + "\n";
    shown += prints[i] + " " + files[i].path.string() + "\n";
  }
  const std::vector<Group> groups = differing_groups(comm, compared, shown);
  if (groups.empty()) return;
  auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    for (std::size_t pos = 0, end; pos < text.size(); pos = end + 1) {
      end = text.find('\n', pos);
      out.push_back(text.substr(pos, end - pos));
    }
    return out;
  };
  // "key size fingerprint path" -> "path (size bytes)"
  auto describe = [](const std::string& line) {
    const DataPrint p = read_data_print(line);
    return p.path + " (" + p.size + " bytes)";
  };
  const auto reference = lines(groups.front().shown);
  std::string message = "the ranks would train on different data:";
  for (std::size_t g = 1; g < groups.size(); ++g) {
    const auto other = lines(groups[g].shown);
    for (std::size_t i = 0; i < std::max(reference.size(), other.size()); ++i) {
      const std::string a = i < reference.size() ? reference[i] : "",
                        b = i < other.size() ? other[i] : "";
      if (read_data_print(a).same_contents(read_data_print(b))) continue;
      message += " rank 0 reads " + (a.empty() ? "no file" : describe(a)) + " but " +
                 rank_list(groups[g].ranks) + " reads " + (b.empty() ? "no file" : describe(b)) +
                 ", whose contents differ;";
      break;
    }
  }
  message.pop_back();
  const std::string hint =
      "give every rank the same data files (copy them again, e.g. rsync -c); only their paths "
      "may differ";
  if (comm.rank() == 0) throw DataError(message, hint);
  throw ReportedByRankZero(message);
}

}  // namespace lbt::experiments
