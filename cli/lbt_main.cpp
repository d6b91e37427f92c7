// lbt: the command line on the CPU backend. A run with model.device = "cuda" goes on in
// lbt-cuda beside it (cli/cmd_train.cpp), which alone loads the CUDA libraries.
#include "cli/commands.hpp"
#include "trainer/interrupt.hpp"

int main(int argc, char** argv) {
  lbt::trainer::take_signals_on_their_own_thread();  // before any other thread starts
  return lbt::cli::run_lbt(argc, argv);
}
