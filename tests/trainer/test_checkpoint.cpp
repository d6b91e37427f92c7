// Checkpoint files: round trip, corruption detected by checksum, fallback, pruning; the
// Dropout stream state a checkpoint carries.
#include <boost/test/unit_test.hpp>

#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "nn/cpu/dropout.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/run_dir.hpp"

using namespace lbt;
namespace fs = std::filesystem;

namespace {

struct Dir {
  fs::path path = fs::temp_directory_path() / ("lbt_ckpt_" + std::to_string(::getpid()));
  Dir() { fs::remove_all(path), fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
};

void write_step(const fs::path& dir, std::int64_t step, std::vector<float>& params) {
  for (auto& p : params) p += 1.0f;
  trainer::write_checkpoint(trainer::checkpoint_path(dir, step), {{"step", step}},
                            {{"params", std::as_bytes(std::span<const float>(params))}});
}

void flip_byte(const fs::path& p, std::size_t offset) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x01));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(checkpoints)

BOOST_AUTO_TEST_CASE(round_trip_preserves_header_and_sections_bit_for_bit) {
  Dir dir;
  std::vector<float> params = {1.5f, -2.25f, 3e-38f, 7.0f};
  std::vector<double> state = {0.1, 0.2};
  auto path = trainer::checkpoint_path(dir.path, 42);
  trainer::write_checkpoint(path, {{"step", 42}, {"world_size", 2}},
                            {{"params", std::as_bytes(std::span<const float>(params))},
                             {"noise", std::as_bytes(std::span<const double>(state))}});
  auto ck = trainer::read_checkpoint(path);
  BOOST_TEST(ck.header["step"].get<int>() == 42);
  std::vector<float> back(4);
  ck.copy_to("params", std::span<float>(back));
  BOOST_TEST(back == params);
  std::vector<float> wrong(3);
  BOOST_CHECK_THROW(ck.copy_to("params", std::span<float>(wrong)), DataError);
  BOOST_CHECK_THROW(ck.copy_to("momentum", std::span<float>(back)), DataError);
  for (auto& e : fs::directory_iterator(dir.path)) {
    BOOST_TEST(e.path().filename().string().find(".tmp.") == std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(an_empty_section_round_trips) {
  // An empty std::vector's span has a null data pointer; zlib's crc32 of Z_NULL restarts the
  // checksum, which once made every checkpoint with an empty section read back as corrupt.
  Dir dir;
  std::vector<float> params = {1.0f, 2.0f};
  std::vector<double> none;
  auto path = trainer::checkpoint_path(dir.path, 1);
  trainer::write_checkpoint(path, {{"step", 1}},
                            {{"params", std::as_bytes(std::span<const float>(params))},
                             {"noise", std::as_bytes(std::span<const double>(none))},
                             {"after", std::as_bytes(std::span<const float>(params))}});
  auto ck = trainer::read_checkpoint(path);
  BOOST_TEST(ck.sections.at("noise").empty());
  BOOST_TEST(ck.sections.at("after").size() == 2 * sizeof(float));
}

BOOST_AUTO_TEST_CASE(flipped_byte_and_truncation_are_detected_by_the_checksum) {
  Dir dir;
  std::vector<float> params(100, 0.0f);
  write_step(dir.path, 1, params);
  auto path = trainer::checkpoint_path(dir.path, 1);
  const auto size = fs::file_size(path);
  flip_byte(path, size / 2);
  BOOST_CHECK_THROW(trainer::read_checkpoint(path), DataError);
  write_step(dir.path, 1, params);
  fs::resize_file(path, size - 10);
  BOOST_CHECK_THROW(trainer::read_checkpoint(path), DataError);
}

// A section name's length past the file, its checksum recomputed: refused before the name is
// allocated (0xFFFFFFF0 made a 4 GiB string of a 3 KB file; 2026-11-30 audit).
BOOST_AUTO_TEST_CASE(a_section_name_longer_than_the_file_is_refused_before_it_is_allocated) {
  Dir dir;
  std::vector<float> params(100, 0.0f);
  write_step(dir.path, 1, params);
  const auto path = trainer::checkpoint_path(dir.path, 1);
  std::ifstream in(path, std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), {});
  std::uint64_t header_bytes;
  std::memcpy(&header_bytes, raw.data() + 8 + 4, 8);  // after the magic and the version
  const std::uint32_t huge = 0xFFFFFFF0u;
  std::memcpy(raw.data() + 8 + 4 + 8 + header_bytes, &huge, 4);
  const auto crc = static_cast<std::uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(raw.data()), static_cast<uInt>(raw.size() - 4)));
  std::memcpy(raw.data() + raw.size() - 4, &crc, 4);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << raw;
  try {
    trainer::read_checkpoint(path);
    BOOST_FAIL("read");
  } catch (const DataError& e) {
    BOOST_TEST(std::string(e.what()).find("section name runs past the end") != std::string::npos,
               e.what());
  }
}

BOOST_AUTO_TEST_CASE(a_section_written_twice_is_refused) {
  Dir dir;
  const std::vector<float> a(4, 1.0f), b(4, 2.0f);
  const auto path = trainer::checkpoint_path(dir.path, 1);
  trainer::write_checkpoint(path, {{"step", 1}},
                            {{"params", std::as_bytes(std::span<const float>(a))},
                             {"params", std::as_bytes(std::span<const float>(b))}});
  try {
    trainer::read_checkpoint(path);
    BOOST_FAIL("read");
  } catch (const DataError& e) {
    BOOST_TEST(std::string(e.what()).find("section 'params' appears twice") != std::string::npos,
               e.what());
  }
}

BOOST_AUTO_TEST_CASE(a_corrupt_newest_checkpoint_falls_back_to_the_previous_one) {
  Dir dir;
  std::vector<float> params(8, 0.0f);
  write_step(dir.path, 10, params);
  write_step(dir.path, 20, params);
  flip_byte(trainer::checkpoint_path(dir.path, 20), 40);
  trainer::LoadedCheckpoint ck;
  BOOST_REQUIRE(trainer::load_latest_checkpoint(dir.path, ck));
  BOOST_TEST(ck.header["step"].get<int>() == 10);
  std::vector<float> back(8);
  ck.copy_to("params", std::span<float>(back));
  BOOST_TEST(back[0] == 1.0f);  // the step-10 values
}

BOOST_AUTO_TEST_CASE(pruning_keeps_the_newest_k) {
  Dir dir;
  std::vector<float> params(4, 0.0f);
  for (int step : {5, 100, 15, 2000}) write_step(dir.path, step, params);
  trainer::prune_checkpoints(dir.path, 2, 2000);
  auto left = trainer::list_checkpoints(dir.path);
  BOOST_REQUIRE_EQUAL(left.size(), 2u);
  BOOST_TEST(left[0] == trainer::checkpoint_path(dir.path, 100));
  BOOST_TEST(left[1] == trainer::checkpoint_path(dir.path, 2000));
}

// A run resumed from 450 past a damaged 522 writes 460 with checkpoint_keep = 1: it keeps 460
// and leaves 522 (which it will overwrite or pass); counting 522 as the newest deleted 450 and
// then each checkpoint the run wrote, and a kill then left nothing to resume.
BOOST_AUTO_TEST_CASE(pruning_counts_only_checkpoints_up_to_the_one_written) {
  Dir dir;
  std::vector<float> params(4, 0.0f);
  for (int step : {450, 522, 460}) write_step(dir.path, step, params);
  trainer::prune_checkpoints(dir.path, 1, 460);
  auto left = trainer::list_checkpoints(dir.path);
  BOOST_REQUIRE_EQUAL(left.size(), 2u);
  BOOST_TEST(left[0] == trainer::checkpoint_path(dir.path, 460));
  BOOST_TEST(left[1] == trainer::checkpoint_path(dir.path, 522));
}

// eval.jsonl as a run killed after checkpoint 150 left it: coarse evaluations at 100 and 200,
// the crossing at 200 refined at 105..115 (written after 200's line), then 300. A resume from 150
// keeps what was written before the checkpoint, 100 only: the refinement lines (steps before
// 150) were written after it and the resumed run writes them again.
BOOST_AUTO_TEST_CASE(a_resume_drops_every_log_line_written_after_its_checkpoint) {
  Dir dir;
  std::ofstream(dir.path / "eval.jsonl")
      << "{\"step\":100}\n{\"step\":200}\n{\"step\":105,\"refinement\":true}\n"
         "{\"step\":110,\"refinement\":true}\n{\"step\":300}\n";
  std::ofstream(dir.path / "metrics.jsonl") << "{\"step\":140}\n{\"step\":150}\n{\"step\":160}\n";
  { trainer::RunDirectory::resume(dir.path, 150); }
  std::ifstream eval(dir.path / "eval.jsonl"), metrics(dir.path / "metrics.jsonl");
  const std::string eval_text{std::istreambuf_iterator<char>(eval), {}};
  const std::string metrics_text{std::istreambuf_iterator<char>(metrics), {}};
  BOOST_TEST(eval_text == "{\"step\":100}\n");
  BOOST_TEST(metrics_text == "{\"step\":140}\n{\"step\":150}\n");
}

BOOST_AUTO_TEST_CASE(dropout_stream_state_restores_the_masks_still_to_come) {
  // What a checkpoint saves: a copy seeded differently, given the saved state, draws the same
  // masks as the original from that point on.
  nn::Dropout original(64, 0.5), resumed(64, 0.5);
  std::uint64_t index = 0;
  original.seed_streams(3, 1, index);
  std::vector<float> x(128, 1.0f), y1(128), y2(128);
  original.forward(x.data(), y1.data(), 2, true);  // advance past the start
  const std::string saved = original.stream_state();
  BOOST_TEST(!saved.empty());
  resumed.set_stream_state(saved);
  for (int draw = 0; draw < 3; ++draw) {
    original.forward(x.data(), y1.data(), 2, true);
    resumed.forward(x.data(), y2.data(), 2, true);
    BOOST_TEST(y1 == y2);
  }
  BOOST_CHECK_THROW(resumed.set_stream_state("not a state"), DataError);
}

BOOST_AUTO_TEST_SUITE_END()
