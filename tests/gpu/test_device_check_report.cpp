// lbt doctor's report on a CPU machine (no GPU needed): which runs a disagreeing row refuses.
// A row that vouches for some layer types only (DeviceCheckRow::layers: the ResNet rows, the
// convolutions) refuses the runs that use one of them; an unscoped row (GEMMs, optimizers)
// refuses every run. The rows are written by hand; the GPU suite fills them from a real check.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "experiments/device_check.hpp"

using lbt::experiments::DeviceCheckReport;
using lbt::experiments::DeviceCheckRow;
using lbt::experiments::format_report;

namespace {

DeviceCheckRow row(const std::string& op, double relative_error,
                   std::vector<std::string> layers = {}) {
  return {op, relative_error, 1.0, 1e-5, "", std::move(layers)};
}

const std::vector<std::string> kMlp{"linear", "relu", "linear"};
const std::vector<std::string> kResnet{"conv",     "batchnorm",      "relu",
                                       "residual", "global_avgpool", "linear"};

}  // namespace

BOOST_AUTO_TEST_CASE(every_row_agreeing_lets_every_run_train) {
  const DeviceCheckReport r{"gpu", "libs", {row("gemm", 1e-7), row("resnet", 1e-6, {"residual"})}};
  BOOST_TEST(r.ok());
  BOOST_TEST(r.ok_for(kMlp));
  BOOST_TEST(r.ok_for(kResnet));
  BOOST_TEST(format_report(r).find("agrees with the CPU backend on every op") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_scoped_row_refuses_only_runs_with_its_layers) {
  const DeviceCheckReport r{
      "gpu", "libs", {row("gemm", 1e-7), row("resnet", 3e-3, {"batchnorm", "residual"})}};
  BOOST_TEST(!r.ok());  // lbt doctor still exits 4
  BOOST_TEST(r.ok_for(kMlp));
  BOOST_TEST(!r.ok_for(kResnet));
  BOOST_TEST(!r.ok_for({"linear", "batchnorm", "linear"}));
  const std::string text = format_report(r);
  BOOST_TEST(text.find("DISAGREES (refuses runs with batchnorm residual)") != std::string::npos);
  BOOST_TEST(text.find("runs using them are refused") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_unscoped_row_refuses_every_run) {
  const DeviceCheckReport r{"gpu", "libs", {row("gemm", 1e-3), row("resnet", 1e-6, {"residual"})}};
  BOOST_TEST(!r.ok_for(kMlp));
  BOOST_TEST(!r.ok_for(kResnet));
  BOOST_TEST(!r.ok_for({}));
  BOOST_TEST(format_report(r).find("do not train on it") != std::string::npos);
}

// A NaN error is no agreement, scoped or not.
BOOST_AUTO_TEST_CASE(a_nan_row_disagrees) {
  const DeviceCheckReport r{"gpu", "libs", {row("resnet", std::nan(""), {"residual"})}};
  BOOST_TEST(!r.ok());
  BOOST_TEST(!r.ok_for(kResnet));
  BOOST_TEST(r.ok_for(kMlp));
}
