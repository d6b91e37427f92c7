// A small on-disk cache of text by key, for what takes seconds to find and holds while its key
// does: the GPU's passed self-check (experiments/cuda_training.cpp) and cuDNN's vetted
// algorithm choices (nn/cuda/cudnn_choice.cu), per device and build, and a data file's print
// (experiments/rank_agreement.cpp), per version of the file. One file per key, KIND-HASH.txt in
// directory(), whose first line is the key itself, so a hash collision, a damaged file or another
// key reads as a miss. Written whole (temp file and rename): processes that find the same thing at
// once (a sweep's trials on one GPU) leave one intact file. Bounded: each kind keeps its most
// recently stored or found files (a rebuild gives the self-check a new key, and a file per build
// would pile up). A convenience: where the directory cannot be read or written, every lookup misses
// and nothing is thrown.
#pragma once
#include <cstddef>
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

// The value stored for `key`, or nothing; a hit marks its file as just used (its modification
// time), so the files store() keeps are the ones in use. Only a regular file is read (a FIFO
// planted under the name would block the reader).
std::optional<std::string> find(std::string_view kind, const std::string& key);

// Stores `value` for `key` (replacing any), then removes the kind's least recently used files
// past the newest `keep_files` (its own and left-over temporary ones); false where it could not
// be written.
bool store(std::string_view kind, const std::string& key, const std::string& value,
           std::size_t keep_files);

}  // namespace lbt::file_cache
