# Cross-compiling lbt for 64-bit ARM Linux on a Debian x86-64 machine (scripts/check_aarch64.sh):
# Debian's g++-aarch64-linux-gnu, the libraries from Debian's arm64 packages (multiarch, in
# /usr/lib/aarch64-linux-gnu), and the test programs run under qemu-user.
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# The cross toolchain's own libc, libstdc++ and libgomp live under /usr/aarch64-linux-gnu; the
# arm64 packages (Boost.Test, zlib, toml++) under /usr/lib/aarch64-linux-gnu, which CMake
# searches as <prefix>/lib/${CMAKE_LIBRARY_ARCHITECTURE} from the host prefix /usr; the
# header-only packages (Eigen, nlohmann-json, CLI11) are architecture-independent in /usr. So
# libraries, headers and packages are looked for in both; programs on the host only.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# Only arm64 .pc files (toml++): the host's would hand x86-64 libraries to the linker.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# CTest (and CMake's try_run) run the aarch64 programs through qemu-user. No -L prefix: the
# arm64 packages bring Debian's arm64 libc6, libstdc++6 and libgomp1, whose loader
# /lib/ld-linux-aarch64.so.1 then finds them all through /etc/ld.so.cache. With
# -L /usr/aarch64-linux-gnu the cross toolchain's loader (glibc 2.36-8cross1) took libc.so.6
# from that cache (the arm64 package's, another build of 2.36): a mismatched pair, and every
# program that started a second thread hung at 100% CPU.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
