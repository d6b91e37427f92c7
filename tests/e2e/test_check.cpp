// `--check` that checks, through the real `lbt` binary: train and sweep --check build
// the model's layer shapes and stop on what a run would stop on at startup; the shipped presets
// still pass; a signal ends a long sweep --check at once with 130/143; range errors on the
// command line are lbt's one-line errors with the README's exit code 2. Each case failed on
// main 1b0bf4f.
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "support/cli_runner.hpp"
#include "support/processes.hpp"

namespace fs = std::filesystem;
using lbt::test::error_line;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;

namespace {

// Linear regression on synthetic data: no file to load, so a check takes milliseconds.
const char* kSyntheticRun =
    "[model]\nspec = \"linear:16-1\"\ninit = \"zero\"\n"
    "[data]\ndataset = \"synthetic-regression\"\nvalidation_size = 512\n"
    "[data.synthetic]\nexamples = 4096\ndim = 16\nnoise = 0.5\n"
    "[train]\nglobal_batch = 32\nsteps = 40\ntarget = \"val_loss<=0.2\"\nthreads = 1\n"
    "[optimizer]\nname = \"sgd\"\nlr = 0.05\n";

const char* kSweepSection =
    "[sweep]\nbatch_sizes = [16, 32]\nlr_multipliers = [0.5, 1.0]\nmax_steps = 40\n";

fs::path write_file(const std::string& name, const std::string& text) {
  const fs::path p = scratch() / name;
  std::ofstream(p) << text;
  return p;
}

// A NumPy .npy file (format 1.0): magic, header length, a dict padded to 64 bytes, the data.
void write_npy(const fs::path& path, const std::string& descr, const std::string& shape,
               const std::string& data) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out << "\x93NUMPY" << '\x01' << '\x00';
  out.put(static_cast<char>(header.size() & 0xff)).put(static_cast<char>(header.size() >> 8));
  out << header << data;
}

// 64 images [1, 28, 28] in 10 classes, as npy: an image model's check without Fashion-MNIST.
std::string tiny_image_data() {
  const fs::path x = scratch() / "x.npy", y = scratch() / "y.npy";
  if (!fs::exists(x)) {
    write_npy(x, "|u1", "(64, 1, 28, 28)", std::string(64 * 28 * 28, '\x07'));
    std::string labels;
    for (std::int64_t i = 0; i < 64; ++i) {
      const std::int64_t label = i % 10;
      labels.append(reinterpret_cast<const char*>(&label), sizeof label);
    }
    write_npy(y, "<i8", "(64,)", labels);
  }
  return "[data]\ndataset = \"tiny-images\"\nformat = \"npy\"\ntrain_features = \"" + x.string() +
         "\"\ntrain_labels = \"" + y.string() + "\"\nvalidation_size = 16\n" +
         "[train]\nglobal_batch = 16\nsteps = 40\ntarget = \"val_accuracy>=0.5\"\n" +
         "[optimizer]\nname = \"sgd\"\nlr = 0.05\n";
}

// A convolution whose kernel (100) is larger than the 28 x 28 images it is given.
std::string conv_kernel_100() {
  return "[model]\ninit = \"he\"\n"
         "[[model.layers]]\ntype = \"conv\"\nout_channels = 4\nkernel = 100\n"
         "[[model.layers]]\ntype = \"relu\"\n"
         "[[model.layers]]\ntype = \"linear\"\nout = 10\n" +
         tiny_image_data();
}

// "1,2,...,n": a sweep's batch sizes.
std::string batch_list(int n) {
  std::string sizes = "1";
  for (int b = 2; b <= n; ++b) {
    sizes += ',';
    sizes += std::to_string(b);
  }
  return sizes;
}

// The longest run of digits in `text`: a bound printed with 300 digits shows here.
std::size_t longest_number(const std::string& text) {
  std::size_t longest = 0, run = 0;
  for (char c : text) {
    run = (c >= '0' && c <= '9') ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

}  // namespace

BOOST_AUTO_TEST_CASE(train_and_sweep_check_refuse_a_bad_model_spec_naming_it) {
  const fs::path run = write_file("run.toml", kSyntheticRun);
  const fs::path sweep = write_file("sweep.toml", std::string(kSyntheticRun) + kSweepSection);
  for (const std::string spec :
       {"AAAA", "linear:\xef\xbc\x93\xef\xbc\x92-1"}) {  // "３２": full-width
    for (const std::string& command : {"train -c " + run.string(), "sweep -c " + sweep.string()}) {
      BOOST_TEST_CONTEXT(command << " with model.spec=" << spec) {
        const auto r = run_lbt(command + " --set 'model.spec=" + spec + "' --check");
        BOOST_TEST(r.code == 2);
        BOOST_TEST(r.err.find("error: model.spec '" + spec + "'") != std::string::npos, r.err);
        BOOST_TEST(r.out.empty());  // no "config valid", no resolved config
      }
    }
  }
}

// Keys that did nothing where set (a bucket without overlap_comm, flips of vectors) are refused.
BOOST_AUTO_TEST_CASE(check_refuses_keys_that_would_do_nothing) {
  const fs::path run = write_file("run.toml", kSyntheticRun);
  using Case = std::pair<std::string, std::string>;
  for (const auto& [set, says] : {Case{"train.bucket_mb=4", "bucket_mb is not used with"},
                                  Case{"data.augment.flip=true", "flip applies to images"},
                                  Case{"schedule.steps_per_epoch=-1", "must be >= 0"}}) {
    const auto r = run_lbt("train -c " + run.string() + " --set " + set + " --check");
    BOOST_TEST(r.code == 2, set);
    BOOST_TEST(error_line(r.err).find(says) != std::string::npos, r.err);
  }
}

BOOST_AUTO_TEST_CASE(train_and_sweep_check_refuse_a_layer_that_does_not_fit_the_data) {
  const fs::path run = write_file("conv.toml", conv_kernel_100());
  const fs::path sweep = write_file("conv_sweep.toml", conv_kernel_100() + kSweepSection);
  for (const std::string& command : {"train -c " + run.string(), "sweep -c " + sweep.string()}) {
    BOOST_TEST_CONTEXT(command) {
      const auto r = run_lbt(command + " --check");
      BOOST_TEST(r.code == 2);
      BOOST_TEST(
          r.err.find("error: model.layers[0] (conv): Conv2d(1->4, k100") != std::string::npos,
          r.err);
    }
  }
  // The same model with a kernel that fits passes.
  std::string fits = conv_kernel_100();
  fits.replace(fits.find("kernel = 100"), 12, "kernel = 3");
  const auto r = run_lbt("train -c " + write_file("conv3.toml", fits).string() + " --check");
  BOOST_TEST(r.code == 0, r.err);
}

BOOST_AUTO_TEST_CASE(sweep_check_refuses_a_batch_size_the_run_would_refuse_naming_the_trial) {
  // The 4096 - 512 training examples hold a batch of 16 but not one of 4096.
  const fs::path sweep = write_file("big_batch.toml", std::string(kSyntheticRun) + kSweepSection);
  const auto r = run_lbt("sweep -c " + sweep.string() + " -b 16,4096 --check");
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("error: trial 4096_0 (B=4096") != std::string::npos, r.err);
}

BOOST_AUTO_TEST_CASE(shipped_presets_pass_their_check) {
  const fs::path configs = fs::path(LBT_SOURCE_DIR) / "experiments" / "configs";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(configs)) {
    if (entry.path().extension() != ".toml") continue;
    const bool sweep = entry.path().stem().string().find("sweep") != std::string::npos;
    const auto r = run_lbt(std::string(sweep ? "sweep" : "train") + " -c " + entry.path().string() +
                           " --check");
    BOOST_TEST_CONTEXT(entry.path().filename()) {
      // A dataset this machine lacks (CIFAR-10, the npy files a script writes) stops a run
      // too, with a data error (exit 3): said, not counted.
      if (r.code == 3 && r.err.find("not found") != std::string::npos) {
        BOOST_TEST_MESSAGE("skipped " << entry.path().filename() << ": its data are not here");
        continue;
      }
      BOOST_TEST(r.code == 0, r.err);
      ++checked;
    }
  }
  BOOST_TEST(checked >= 10);
}

BOOST_AUTO_TEST_CASE(a_signal_ends_a_long_sweep_check_within_a_second) {
  // 100,000 batch sizes: on main the checks took minutes and ignored SIGTERM.
  const std::string sizes = batch_list(100000);
  std::string config = kSyntheticRun;
  config.replace(config.find("examples = 4096"), 15, "examples = 204800");
  const fs::path sweep =
      write_file("long.toml", config + "[sweep]\nbatch_sizes = [" + sizes + "]\nmax_steps = 40\n");
  for (const auto& [signal, code] : {std::pair{SIGTERM, 143}, std::pair{SIGINT, 130}}) {
    const fs::path log = scratch() / "long.log";
    const pid_t pid = lbt::test::start_lbt("sweep -c " + sweep.string() + " --check", log);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    kill(pid, signal);
    const auto t0 = std::chrono::steady_clock::now();
    const int status = lbt::test::wait_for(pid, 5.0);
    BOOST_TEST_CONTEXT("signal " << signal << ": " << slurp(log)) {
      BOOST_TEST(lbt::test::seconds_since(t0) < 1.0);
      BOOST_TEST(WIFEXITED(status));
      BOOST_TEST(WEXITSTATUS(status) == code);
    }
  }
}

BOOST_AUTO_TEST_CASE(sweep_check_of_many_batch_sizes_is_linear) {
  // 20,000 batch sizes in the config: on main each trial's config copy carried the whole list
  // (about 100 s here); now a few seconds. The bound leaves room for a loaded machine.
  const std::string sizes = batch_list(20000);
  std::string config = kSyntheticRun;
  config.replace(config.find("examples = 4096"), 15, "examples = 40960");
  const fs::path sweep =
      write_file("many.toml", config + "[sweep]\nbatch_sizes = [" + sizes + "]\nmax_steps = 40\n");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_lbt("sweep -c " + sweep.string() + " --check");
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(lbt::test::seconds_since(t0) < 30.0);
}

BOOST_AUTO_TEST_CASE(range_errors_are_one_line_errors_with_exit_code_2) {
  const fs::path run = write_file("range.toml", kSyntheticRun);
  const fs::path sweep = write_file("range_sweep.toml", std::string(kSyntheticRun) + kSweepSection);
  const std::string t = "train -c " + run.string() + " ", s = "sweep -c " + sweep.string() + " ";
  const std::pair<std::string, std::string> cases[] = {
      {t + "--set optimizer.lr=1e999 --check", "optimizer.lr"},
      {t + "--set train.global_batch=99999999999999999999 --check", "train.global_batch"},
      {t + "--set train.steps=-5 --check", "train.steps must be >= 0"},
      {t + "--steps 1e400 --check", "--steps"},
      {s + "-b 99999999999999999999 --check", "--batch-sizes"},
      {s + "-b 16,-5 --check", "--batch-sizes"},
      {s + "--jobs 1e400 --check", "--jobs"},
      {s + "--lr-trials 99999999999999999999 --check", "--lr-trials"},
      {"memory -c " + run.string() + " -b 1e400", "--global-batch"},
      {"memory -c " + run.string() + " --tolerance 1e400", "--tolerance"},
      {"memory -c " + run.string() + " --memory 0GiB", "the memory must be positive"},
      {"fit " + scratch().string() + " --resamples -3", "--resamples"},
      // refused by the loop after the run directory existed; --check passed it
      {t + "--set train.overlap_comm=true --set noise.enabled=true --check", "train.overlap_comm"},
  };
  for (const auto& [args, names] : cases) {
    BOOST_TEST_CONTEXT(args) {
      const auto r = run_lbt(args);
      BOOST_TEST(r.code == 2);
      BOOST_TEST(r.err.rfind("error: ", 0) == 0, r.err);
      BOOST_TEST(r.err.find(names) != std::string::npos, r.err);
      BOOST_TEST(r.err.find("hint: ") != std::string::npos, r.err);
      BOOST_TEST(longest_number(r.err) <= 20, r.err);  // the value given, never a 300-digit bound
    }
  }
}

// --check of a GPU run checks what the run checks before its first step: a regression is refused
// (classifiers only; in a build without CUDA, no lbt-cuda) by train and sweep --check alike, and
// with no GPU visible --check stops where a one-step run stops, with the same error line. Before,
// --check passed both (exit 0) and the run, or every trial of the sweep, failed.
BOOST_AUTO_TEST_CASE(check_of_a_gpu_run_stops_where_the_run_stops) {
  const fs::path train = write_file("gpu_regression.toml", kSyntheticRun);
  const fs::path sweep = write_file("gpu_sweep.toml", std::string(kSyntheticRun) + kSweepSection);
  for (const std::string command : {"train", "sweep"}) {
    const auto r =
        run_lbt(command + " --check --config " + (command == "train" ? train : sweep).string() +
                " --set model.device=cuda");
    BOOST_TEST(r.code == 2, command << ": " << r.err);
    BOOST_TEST(r.err.find("model.device=cuda") != std::string::npos, command << ": " << r.err);
  }
  // lbt noise goes on in lbt-cuda as lbt train does: the regression refused at --check as at
  // the start, with the same line, nothing written; so is the B_noise probe at --at-steps,
  // which the GPU has not (on any machine, before the GPU is looked for). Without lbt-cuda the
  // line says the build has no CUDA.
  const bool cuda_build = fs::exists(fs::path(LBT_BINARY).parent_path() / "lbt-cuda");
  for (const std::string at : {"", " --at-steps 0,5"}) {
    const std::string config =
        at.empty() ? train.string()
                   : std::string(LBT_SOURCE_DIR) + "/experiments/configs/fmnist_mlp.toml";
    const auto noise_check =
        run_lbt("noise --check --config " + config + " --set model.device=cuda" + at);
    const auto noise_run =
        run_lbt("noise --no-plot --config " + config + " --set model.device=cuda" + at + " --out " +
                (scratch() / "gpu_noise").string());
    BOOST_TEST_CONTEXT("lbt noise" << at) {
      BOOST_TEST(noise_check.code == 2, noise_check.err);
      BOOST_TEST(noise_run.code == 2, noise_run.err);
      const std::string expected = !cuda_build  ? "this lbt was built without CUDA"
                                   : at.empty() ? "model.device=cuda trains classifiers only"
                                                : "model.device=cuda has no B_noise probe";
      BOOST_TEST(error_line(noise_check.err).find(expected) != std::string::npos, noise_check.err);
      BOOST_TEST(error_line(noise_run.err) == error_line(noise_check.err));
      BOOST_TEST(!fs::exists(scratch() / "gpu_noise"));
    }
  }
  setenv("CUDA_VISIBLE_DEVICES", "-1", 1);
  for (const std::string command : {"train", "noise --no-plot"}) {
    const std::string mlp = command + " --config " + std::string(LBT_SOURCE_DIR) +
                            "/experiments/configs/fmnist_mlp.toml --set model.device=cuda";
    const auto checked = run_lbt(mlp + " --check");
    const auto ran = run_lbt(mlp + " --set train.steps=1 --quiet --out " +
                             (scratch() / "gpu_run").string() + " --overwrite");
    BOOST_TEST_CONTEXT(command) {
      BOOST_TEST(ran.code == 2, ran.err);
      BOOST_TEST(checked.code == ran.code, checked.err);
      BOOST_TEST(!error_line(ran.err).empty(), ran.err);
      BOOST_TEST(error_line(checked.err) == error_line(ran.err));
    }
  }
  unsetenv("CUDA_VISIBLE_DEVICES");
}

// A batch whose activations pass the machine's memory (RAM + swap, read here with sysinfo as
// lbt reads it) is refused by --check as by the run, with the same error line, before anything
// is allocated; a sweep --check names the trial whose batch it is. Before, --check passed
// (exit 0) and the run stopped after allocating the model, at its first step; a sweep's trial
// at that batch stopped the whole sweep as if every trial shared the failure.
BOOST_AUTO_TEST_CASE(check_refuses_a_batch_whose_activations_pass_the_machines_memory) {
  struct sysinfo info {};
  BOOST_REQUIRE(sysinfo(&info) == 0);
  const double memory = (static_cast<double>(info.totalram) + static_cast<double>(info.totalswap)) *
                        static_cast<double>(info.mem_unit);
  // Hidden width W: each example's hidden output and ReLU with their gradients take 16 W bytes,
  // so batch 16 takes memory / 4 and batch 1024 sixteen times the memory; the parameters
  // (about 68 W bytes) take 1/15 of it.
  const auto width = static_cast<std::int64_t>(memory / 1024.0);
  BOOST_REQUIRE(width < (std::int64_t{1} << 31));
  const std::string model = "mlp:16-" + std::to_string(width) + "-1";
  const fs::path train = write_file("wide.toml", kSyntheticRun);
  const std::string wide = " --set model.spec=" + model + " --set train.eval_batch=16";
  const auto checked =
      run_lbt("train --check -c " + train.string() + wide + " --set train.global_batch=1024");
  const auto ran = run_lbt("train -c " + train.string() + wide +
                           " --set train.global_batch=1024 --quiet --out " +
                           (scratch() / "wide_run").string() + " --overwrite");
  BOOST_TEST(checked.code == 2, checked.err);
  BOOST_TEST(ran.code == 2, ran.err);
  BOOST_TEST(checked.err.find("at batch 1024 its output and gradient take") != std::string::npos,
             checked.err);
  BOOST_TEST(error_line(ran.err) == error_line(checked.err));
  BOOST_TEST(
      run_lbt("train --check -c " + train.string() + wide + " --set train.global_batch=16").code ==
      0);
  const fs::path sweep = write_file("wide_sweep.toml", std::string(kSyntheticRun) + kSweepSection);
  const auto swept = run_lbt("sweep --check -c " + sweep.string() + wide + " -b 16,1024");
  BOOST_TEST(swept.code == 2, swept.err);
  BOOST_TEST(swept.err.find("error: trial 1024_0 (B=1024") != std::string::npos, swept.err);
}

// --check refuses what the run refuses of its directory, with the run's error line, writing
// nothing: a directory already holding a run (without --overwrite), a parent that is a file,
// --resume of a directory with no checkpoint or with another config, and a sweep directory
// planned with other settings. Before, --check passed (exit 0) each of them.
BOOST_AUTO_TEST_CASE(check_refuses_the_directories_the_run_refuses) {
  const fs::path train = write_file("dir_run.toml", kSyntheticRun);
  const fs::path done = scratch() / "dir_done", file = scratch() / "dir_file";
  std::ofstream(file) << "not a directory\n";
  BOOST_REQUIRE(run_lbt("train -c " + train.string() + " --quiet --out " + done.string()).code ==
                0);
  const std::string base = "train -c " + train.string() + " --quiet";
  for (const std::string& where : {" --out " + done.string(), " --out " + (file / "run").string(),
                                   " --resume " + (scratch() / "dir_none").string()}) {
    BOOST_TEST_CONTEXT(where) {
      const auto checked = run_lbt(base + " --check" + where);
      const auto ran = run_lbt(base + where);
      BOOST_TEST(ran.code != 0, ran.err);
      BOOST_TEST(checked.code == ran.code, checked.err);
      BOOST_TEST(!error_line(ran.err).empty(), ran.err);
      BOOST_TEST(error_line(checked.err) == error_line(ran.err));
    }
  }
  BOOST_TEST(!fs::exists(scratch() / "dir_none"));
  BOOST_TEST(run_lbt(base + " --check --overwrite --out " + done.string()).code == 0);
  // A resume whose config changed: refused by both with the same line; one that keeps it passes.
  const std::string resume = "train --quiet --resume " + done.string();
  const auto changed_check = run_lbt(resume + " --check --set optimizer.lr=0.2");
  const auto changed_run = run_lbt(resume + " --set optimizer.lr=0.2");
  BOOST_TEST(changed_run.code == 2, changed_run.err);
  BOOST_TEST(changed_check.code == 2, changed_check.err);
  BOOST_TEST(
      error_line(changed_check.err).find("the config changed (optimizer.lr") != std::string::npos,
      changed_check.err);
  BOOST_TEST(error_line(changed_check.err) == error_line(changed_run.err));
  BOOST_TEST(run_lbt(resume + " --check --set train.log_every=7").code == 0);

  const fs::path sweep = write_file("dir_sweep.toml", std::string(kSyntheticRun) + kSweepSection);
  const std::string swept =
      "sweep -c " + sweep.string() + " --out " + (scratch() / "dir_sweep").string();
  BOOST_REQUIRE(run_lbt(swept + " --jobs 2 --no-plots").code == 0);
  const auto checked = run_lbt(swept + " --check --set optimizer.momentum=0.5");
  const auto ran = run_lbt(swept + " --set optimizer.momentum=0.5");
  BOOST_TEST(ran.code == 2, ran.err);
  BOOST_TEST(checked.code == 2, checked.err);
  BOOST_TEST(error_line(checked.err).find("holds a sweep planned with other settings") !=
                 std::string::npos,
             checked.err);
  BOOST_TEST(error_line(checked.err) == error_line(ran.err));
  BOOST_TEST(run_lbt(swept + " --check").code == 0);  // the same plan: it would resume
}
