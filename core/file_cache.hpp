// A small on-disk cache of text by key, for what takes seconds to find and holds for one device
// and build: the GPU's passed self-check (experiments/cuda_training.cpp) and cuDNN's vetted
// algorithm choices (nn/cuda/cudnn_choice.cu). One file per key, KIND-HASH.txt in directory(),
// whose first line is the key itself, so a hash collision, a damaged file or another key reads
// as a miss. Written whole (temp file and rename): processes that find the same thing at once (a
// sweep's trials on one GPU) leave one intact file. A convenience: where the directory cannot be
// read or written, every lookup misses and nothing is thrown.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace lbt::file_cache {

// $XDG_CACHE_HOME/lbt, else $HOME/.cache/lbt; empty (no cache) where neither is set to an
// absolute path.
std::filesystem::path directory();

// The file that holds `key`'s value (empty where there is no directory()). `kind` names what is
// cached ("cudnn-algos"): letters, digits and '-'.
std::filesystem::path file_for(std::string_view kind, const std::string& key);

// The value stored for `key`, or nothing.
std::optional<std::string> find(std::string_view kind, const std::string& key);

// Stores `value` for `key` (replacing any); false where it could not be written.
bool store(std::string_view kind, const std::string& key, const std::string& value);

}  // namespace lbt::file_cache
