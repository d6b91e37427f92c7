// The plotting scripts lbt runs (notebooks/*.py; docs/DESIGN.md, Layout): `lbt schedule --plot`,
// `lbt noise`, `lbt scaling`, the sweep and `lbt fit` draw their figures with them. They are
// found as the Python module finds them (python/lbt/runs.py): $LBT_NOTEBOOKS_DIR, else
// $LBT_SOURCE_DIR/notebooks, else the notebooks/ of the tree lbt was built from; and run by
// /usr/bin/python3, which owns Debian's matplotlib (another python3 may come first on PATH).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace lbt::experiments {

// The script `name` (e.g. "lbt_plot.py") in the notebooks directory above; it may not exist.
std::filesystem::path plot_script(const std::string& name);

// Runs /usr/bin/python3 SCRIPT ARGS... as a child process, never through a shell (the arguments
// are paths a user chose), its output appended to `log`, or to this process's own output when
// `log` is empty. Returns "" when it exited 0, else one line saying why not.
std::string run_plot_script(const std::string& name, const std::vector<std::string>& args,
                            const std::filesystem::path& log = {});

// Where a plot script's `log` ends in Python's "ModuleNotFoundError: No module named 'M'", one
// line naming the module and its Debian package (python3-M: matplotlib is what a machine's
// Python most often lacks); otherwise "".
std::string missing_python_module(const std::filesystem::path& log);

}  // namespace lbt::experiments
