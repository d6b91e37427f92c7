// optim/: special-case equivalences (LARS without trust ratio == momentum SGD, LAMB without
// trust ratio == AdamW, LARC with a huge trust coefficient == its base) and fused == reference
// over 100 random steps for every optimizer and variant.
#include <boost/test/unit_test.hpp>

#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>

#include "optim/flat_ops.hpp"
#include "optim_fixture.hpp"
#include "support/tolerance.hpp"

using namespace lbt;

namespace {

// A model-like table: a multi-chunk weight (exercises the threaded path), a bias, a weight
// that starts at zero (zero-norm rule) and a small weight.
struct RandomProblem {
  std::vector<Segment> segments;
  std::vector<float> w;
  std::mt19937 rng{1234};
  explicit RandomProblem(std::size_t big = 66000) {
    std::size_t offset = 0;
    auto add = [&](std::string name, std::size_t size, ParamKind kind) {
      segments.push_back(make_segment(std::move(name), offset, size, kind));
      offset += size;
    };
    add("fc1.weight", big, ParamKind::kWeight);
    add("fc1.bias", 33, ParamKind::kBias);
    add("zero.weight", 50, ParamKind::kWeight);
    add("fc2.weight", 300, ParamKind::kWeight);
    w.resize(offset);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    for (float& x : w) x = normal(rng);
    std::fill(w.begin() + segments[2].offset, w.begin() + segments[2].offset + 50, 0.0f);
  }
  // Cheap reproducible gradients: uniform in [-0.1, 0.1) from a 64-bit mix of (step, i).
  std::vector<float> grads(int step) {
    std::vector<float> g(w.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
      std::uint64_t z = (std::uint64_t(step) << 32) + i + 0x9E3779B97F4A7C15ull;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      g[i] = 0.2f * (float((z ^ (z >> 31)) >> 40) / float(1u << 24)) - 0.1f;
    }
    return g;
  }
};

double lr_at(int step, bool vary) {
  return vary ? 0.01 * (1.0 + 0.5 * std::sin(0.3 * step)) : 0.01;
}

// Runs both optimizers on the same problem for `steps` and compares parameters to atol + rtol|ref|.
void expect_same_run(const std::string& toml_a, const std::string& toml_b, bool reference_b,
                     bool vary_lr, bool trust_off, double atol, double rtol, int steps = 100,
                     std::size_t big = 66000) {
  RandomProblem pa(big), pb(big);
  if (trust_off)
    for (auto* p : {&pa, &pb})
      for (auto& s : p->segments) s.trust_ratio = false;
  auto a = test::build(toml_a, pa.w.size());
  auto b =
      reference_b ? test::build_reference(toml_b, pb.w.size()) : test::build(toml_b, pb.w.size());
  for (int t = 0; t < steps; ++t) {
    auto g = pa.grads(t);
    test::do_step(*a, pa.w, g, pa.segments, lr_at(t, vary_lr), t);
    test::do_step(*b, pb.w, g, pb.segments, lr_at(t, vary_lr), t);
  }
  std::size_t bad = 0;
  for (std::size_t i = 0; i < pa.w.size(); ++i) {
    if (!test::close(pa.w[i], pb.w[i], atol, rtol) && ++bad <= 5)
      BOOST_ERROR("param " << i << ": " << pa.w[i] << " vs " << pb.w[i]);
  }
  BOOST_TEST(bad == 0u, bad << " params differ: " << a->describe() << " vs " << b->describe());
}

}  // namespace

BOOST_AUTO_TEST_CASE(lars_with_trust_ratio_disabled_matches_momentum_sgd) {
  // Classic LARS (lr inside the momentum) equals SGD for a constant lr; popular for any lr.
  expect_same_run("[optimizer]\nname='lars'\nweight_decay=0.01\n",
                  "[optimizer]\nname='momentum'\nweight_decay=0.01\n", false, false, true, 1e-6,
                  1e-4);
  expect_same_run(
      "[optimizer]\nname='lars'\nweight_decay=0.01\n[optimizer.lars]\nlr_placement='after_momentum'"
      "\n",
      "[optimizer]\nname='momentum'\nweight_decay=0.01\n", false, true, true, 1e-6, 1e-5);
}

BOOST_AUTO_TEST_CASE(lamb_with_trust_ratio_disabled_matches_adamw) {
  expect_same_run("[optimizer]\nname='lamb'\neps=1e-6\nweight_decay=0.05\n",
                  "[optimizer]\nname='adamw'\neps=1e-6\nweight_decay=0.05\n", false, true, true,
                  1e-6, 1e-5);
}

BOOST_AUTO_TEST_CASE(larc_with_huge_trust_coefficient_matches_its_base) {
  for (std::string base : {"sgd", "nesterov", "adamw"}) {
    BOOST_TEST_CONTEXT("clip, base " << base) {
      const std::string wd = base == "adamw" ? "0.0" : "0.01";  // LARC folds decay in as coupled L2
      expect_same_run("[optimizer]\nname='larc'\nweight_decay=" + wd +
                          "\n[optimizer.larc]\nmode='clip'\n"
                          "trust_coefficient=1e12\nbase='" +
                          base + "'\n",
                      "[optimizer]\nname='" + base + "'\nweight_decay=" + wd + "\n", false, true,
                      false, 1e-6, 1e-5);
    }
  }
  // Scale mode multiplies the gradient by local_lr; Adam with beta1 = beta2 = 0 ignores that.
  expect_same_run(
      "[optimizer]\nname='larc'\nbeta1=0.0\nbeta2=0.0\neps=1e-12\n[optimizer.larc]\nmode='scale'\n"
      "trust_coefficient=1e6\nbase='adam'\n",
      "[optimizer]\nname='adam'\nbeta1=0.0\nbeta2=0.0\neps=1e-12\n", false, true, false, 1e-6,
      1e-5);
}

// 100 steps; 30 under AddressSanitizer, where the reference loops ran 34 s of the sanitizer
// stage (the Release build keeps 100, and the round-off suite bounds the drift over 200).
#if defined(__SANITIZE_ADDRESS__)
constexpr int kRandomSteps = 30;
#else
constexpr int kRandomSteps = 100;
#endif

BOOST_AUTO_TEST_CASE(fused_matches_reference_over_random_steps_for_every_variant) {
  for (const auto& body : test::every_variant()) {
    BOOST_TEST_CONTEXT(body) {
      const std::string toml = "[optimizer]\n" + body + "\n";
      expect_same_run(toml, toml, true, true, false, 1e-5, 1e-4, kRandomSteps);
    }
  }
}

BOOST_AUTO_TEST_CASE(group_plan_cuts_segments_the_same_way_at_any_thread_count) {
  // Chunk boundaries (and so the order in which norms are summed) depend on sizes only; groups
  // hold whole segments. Sizes: tiny, below and above 16K, several chunks, not multiples of 16.
  std::vector<Segment> segments;
  std::size_t offset = 0;
  for (std::size_t size : {33u, 300u, 20000u, 66000u, 400000u, 7u}) {
    segments.push_back(
        make_segment("s" + std::to_string(offset), offset, size, ParamKind::kWeight));
    offset += size;
  }
  const auto one = optim::detail::plan_groups(segments, 1);
  for (int threads : {2, 3, 4}) {
    const auto plan = optim::detail::plan_groups(segments, threads);
    BOOST_TEST_REQUIRE(plan.chunks.size() == one.chunks.size());
    for (std::size_t i = 0; i < plan.chunks.size(); ++i) {
      BOOST_TEST(plan.chunks[i].segment == one.chunks[i].segment);
      BOOST_TEST(plan.chunks[i].begin == one.chunks[i].begin);
      BOOST_TEST(plan.chunks[i].end == one.chunks[i].end);
    }
    for (std::size_t g = 1; g + 1 < plan.group_begin.size(); ++g) {
      const auto& first = plan.chunks[plan.group_begin[g]];
      BOOST_TEST(first.begin == 0u, "group " << g << " starts inside a segment");
    }
  }
  // Chunks tile each segment, start on 16-element boundaries, and a segment of >= 16K elements
  // has a multiple of 4 chunks (2 or 4 threads split it evenly).
  for (std::size_t s = 0; s < segments.size(); ++s) {
    std::size_t covered = 0;
    const std::size_t count = one.segment_begin[s + 1] - one.segment_begin[s];
    for (std::size_t i = one.segment_begin[s]; i < one.segment_begin[s + 1]; ++i) {
      BOOST_TEST(one.chunks[i].begin == covered);
      BOOST_TEST(one.chunks[i].begin % 16 == 0u);
      covered = one.chunks[i].end;
    }
    BOOST_TEST(covered == segments[s].size);
    if (segments[s].size >= 16384) BOOST_TEST(count % 4 == 0u);
  }
}

BOOST_AUTO_TEST_CASE(chunks_go_to_threads_in_contiguous_shares_within_a_chunk_of_even) {
  // The MLP 784-512-512-10's table (OpenMP's static schedule gave its 2 threads 401,920 and
  // 267,786 elements) and 10 equal segments of a long and a short chunk each.
  std::vector<std::vector<std::size_t>> tables = {{401408, 512, 262144, 512, 5120, 10}};
  tables.emplace_back(10, 66970);
  for (const auto& sizes : tables) {
    std::vector<Segment> segments;
    std::size_t offset = 0, total = 0;
    for (std::size_t size : sizes) {
      segments.push_back(
          make_segment("s" + std::to_string(offset), offset, size, ParamKind::kWeight));
      offset += size;
      total += size;
    }
    const auto plan = optim::detail::plan_chunks(segments);
    for (int threads : {2, 3, 4}) {
      const std::vector<int> owner = optim::detail::assign_chunks(plan, threads);
      std::vector<double> load(static_cast<std::size_t>(threads), 0.0);
      for (std::size_t i = 0; i < plan.size(); ++i) {
        if (i > 0) BOOST_TEST(owner[i] >= owner[i - 1], "chunk " << i << " out of order");
        load[static_cast<std::size_t>(owner[i])] +=
            static_cast<double>(plan[i].end - plan[i].begin);
      }
      // Each of the threads - 1 cuts moves a share's end by at most half a chunk.
      const double even = static_cast<double>(total) / threads;
      const double bound = (threads == 2 ? 0.5 : 1.0) * optim::detail::kChunk;
      for (double l : load) BOOST_TEST(std::abs(l - even) <= bound, l << " vs " << even);
    }
  }
}

BOOST_AUTO_TEST_CASE(layer_wise_steps_are_bitwise_identical_at_any_thread_count) {
  // Norms are summed per chunk and combined in chunk order: 1 and 3 threads give the same bits
  // (a resumed run may change train.threads).
  for (const std::string body : {"name='lars'\nweight_decay=0.01", "name='lamb'\nweight_decay=0.01",
                                 "name='larc'\n[optimizer.larc]\nbase='adamw'"}) {
    BOOST_TEST_CONTEXT(body) {
      std::vector<std::vector<float>> results;
      for (int threads : {1, 3}) {
        omp_set_num_threads(threads);
        RandomProblem p(400000);
        auto opt = test::build("[optimizer]\n" + body + "\n", p.w.size());
        for (int t = 0; t < 5; ++t) test::do_step(*opt, p.w, p.grads(t), p.segments, 0.01, t);
        results.push_back(p.w);
      }
      omp_set_num_threads(2);
      BOOST_TEST(std::memcmp(results[0].data(), results[1].data(),
                             results[0].size() * sizeof(float)) == 0);
    }
  }
}
