// The anchor of the tests' shared precompiled header (tests/CMakeLists.txt, LBT_TEST_PCH).
int main() {
  return 0;
}
