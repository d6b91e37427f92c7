// lbt-cuda: lbt's command line with the GPU's step registered (model.device = "cuda",
// experiments/cuda_training.hpp). lbt train execs it for such a run; it may be run directly.
#include "cli/commands.hpp"
#include "experiments/cuda_training.hpp"
#include "trainer/interrupt.hpp"

int main(int argc, char** argv) {
  lbt::trainer::take_signals_on_their_own_thread();  // before any other thread starts
  lbt::experiments::register_cuda_training();
  return lbt::cli::run_lbt(argc, argv);
}
