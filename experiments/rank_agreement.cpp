// check_ranks_agree; see rank_agreement.hpp.
#include "experiments/rank_agreement.hpp"

#include <map>
#include <vector>

#include "core/error.hpp"
#include "experiments/run_checkpoint.hpp"

namespace lbt::experiments {
namespace {

// What must agree, one "key = value" line per key, sorted: the config less train.threads (a
// rank's own affair: it changes no value across ranks) plus the layout.
std::string agreement_text(const std::string& resolved_toml, const WorldLayout& layout, int world) {
  auto keys = flatten_config(resolved_toml);
  keys.erase("train.threads");
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

}  // namespace

void check_ranks_agree(comm::Communicator& comm, const std::string& resolved_toml,
                       const WorldLayout& layout) {
  const int world = comm.size();
  if (world == 1) return;
  const std::string mine = agreement_text(resolved_toml, layout, world);
  // The hash as four 16-bit pieces: exact in a float, the type allgather carries.
  const std::uint64_t h = fnv1a(mine);
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
  if (agree) return;

  // Rare path: each distinct config travels once, from the first rank holding it, so every
  // rank can name the differences.
  std::map<std::uint64_t, std::vector<int>> ranks_by_hash;
  std::vector<std::uint64_t> order;  // distinct hashes by first rank
  for (int r = 0; r < world; ++r) {
    auto& ranks = ranks_by_hash[hash_of(r)];
    if (ranks.empty()) order.push_back(hash_of(r));
    ranks.push_back(r);
  }
  std::map<std::uint64_t, std::string> text_of;
  for (std::uint64_t hash : order)
    text_of[hash] = broadcast_text(comm, mine, ranks_by_hash[hash].front());
  const auto reference = parse_lines(text_of[hash_of(0)]);
  std::string message = "the ranks were started with different configs:";
  for (std::uint64_t hash : order) {
    if (hash == hash_of(0)) continue;
    const auto& ranks = ranks_by_hash[hash];
    std::string who;
    for (int r : ranks) who += (who.empty() ? "" : ",") + std::to_string(r);
    const auto other = parse_lines(text_of[hash]);
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
    message += " rank" + std::string(ranks.size() > 1 ? "s " : " ") + who + ": " + diffs + ";";
  }
  message.pop_back();
  const std::string hint =
      "start every rank with the same --config and --set options (in an MPMD launch, the same "
      "arguments after each ':'); only train.threads may differ";
  if (comm.rank() == 0) throw ConfigError(message, hint);
  throw ReportedByRankZero(message);
}

}  // namespace lbt::experiments
