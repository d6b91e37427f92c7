// The sharded step's pure pieces (trainer/sharded_step.hpp): rank ranges tile the flat buffer
// in 64-byte-aligned pieces, and clipping the segment table keeps offsets and flags. The step
// itself is checked under mpirun (tests/comm/test_comm_equivalence.cpp).
#include <boost/test/unit_test.hpp>

#include "trainer/sharded_step.hpp"

using namespace lbt;

BOOST_AUTO_TEST_CASE(rank_ranges_tile_the_buffer_in_aligned_pieces) {
  for (std::size_t n : {0, 1, 17, 669706, 1000003}) {
    for (int world : {1, 2, 3, 4, 7}) {
      std::size_t next = 0;
      for (int r = 0; r < world; ++r) {
        const trainer::ParamRange range = trainer::rank_range(n, world, r);
        BOOST_TEST(range.begin == next, "n " << n << " world " << world << " rank " << r);
        BOOST_TEST(range.end >= range.begin);
        BOOST_TEST((range.begin % 16 == 0 || range.begin == n));
        next = range.end;
      }
      BOOST_TEST(next == n, "n " << n << " world " << world);
    }
  }
  // Two ranks split 669,706 floats at ceil(n / 2) rounded up to 16: 334,864.
  BOOST_TEST(trainer::rank_range(669706, 2, 0).end == 334864u);
}

BOOST_AUTO_TEST_CASE(clipped_segments_keep_absolute_offsets_and_flags) {
  std::vector<Segment> table = {make_segment("fc1.weight", 0, 100, ParamKind::kWeight),
                                make_segment("fc1.bias", 112, 10, ParamKind::kBias),
                                make_segment("fc2.weight", 128, 50, ParamKind::kWeight)};
  const auto clipped = trainer::clip_segments(table, {96, 140});
  BOOST_REQUIRE_EQUAL(clipped.size(), 3u);
  BOOST_TEST(clipped[0].offset == 96u);
  BOOST_TEST(clipped[0].size == 4u);
  BOOST_TEST(clipped[1].offset == 112u);
  BOOST_TEST(clipped[1].size == 10u);
  BOOST_TEST(!clipped[1].weight_decay);  // a bias stays excluded from decay
  BOOST_TEST(clipped[2].offset == 128u);
  BOOST_TEST(clipped[2].size == 12u);
  BOOST_TEST(clipped[2].name == "fc2.weight");
  BOOST_TEST(trainer::clip_segments(table, {100, 112}).empty());  // only padding between them
}
