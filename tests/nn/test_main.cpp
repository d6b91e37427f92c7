// nn/: layers, losses, models and their CPU kernels, built and linked without the trainer
// (the suite links lbt_nn alone, so a dependency on trainer/ fails to link).
#define BOOST_TEST_MODULE nn
#include <boost/test/unit_test.hpp>
