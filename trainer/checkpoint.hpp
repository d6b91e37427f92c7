// Checkpoint files: one versioned file holding named binary sections (flat parameters,
// optimizer state buffers, layer buffers, estimator state) and a JSON header (step, layout,
// resolved config), sealed with a CRC-32 of everything before it. Written atomically
// (temp + fsync + rename), so a kill mid-write leaves the previous checkpoint intact.
//
// Layout: "LBTCKPT1" | u32 version | u64 header bytes | header JSON |
//         per section: u32 name bytes | name | u64 payload bytes | payload |
//         u32 crc32 of all preceding bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

namespace lbt::trainer {

struct CheckpointSection {
  std::string name;
  std::span<const std::byte> bytes;
};

struct LoadedCheckpoint {
  std::filesystem::path path;
  nlohmann::json header;
  std::map<std::string, std::vector<std::byte>> sections;

  // Copies section `name` into `dst`; throws DataError when it is missing or sized differently.
  void copy_to(const std::string& name, std::span<std::byte> dst) const;
  template <class T>
  void copy_to(const std::string& name, std::span<T> dst) const {
    copy_to(name, std::as_writable_bytes(dst));
  }
};

inline constexpr std::uint32_t kCheckpointVersion = 1;

void write_checkpoint(const std::filesystem::path& path, const nlohmann::json& header,
                      const std::vector<CheckpointSection>& sections);

// Throws DataError naming the path and what is wrong (magic, version, truncation, checksum).
LoadedCheckpoint read_checkpoint(const std::filesystem::path& path);

// The CRC-32 that seals a checkpoint (its last 4 bytes), read without the rest: the identity of
// its content, for telling a checkpoint from another written under the same name. Check the
// file with read_checkpoint first; throws DataError when it cannot be read.
std::uint32_t checkpoint_seal(const std::filesystem::path& path);

// checkpoints/step_00001234.ckpt, sorted oldest first.
std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& dir);
std::filesystem::path checkpoint_path(const std::filesystem::path& dir, std::int64_t step);
// Deletes all but the newest `keep` checkpoints up to the one just written at `written_step`.
// Later ones are left alone: a resumed run passed them over as damaged, and counting them (a
// damaged newest with keep = 1) deleted every intact checkpoint as the run wrote it.
void prune_checkpoints(const std::filesystem::path& dir, int keep, std::int64_t written_step);

// The newest checkpoint that reads back intact; corrupt ones are reported on stderr and
// skipped (falling back to the previous one). Returns false when none is usable.
bool load_latest_checkpoint(const std::filesystem::path& dir, LoadedCheckpoint& out);

}  // namespace lbt::trainer
