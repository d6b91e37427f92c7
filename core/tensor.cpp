// Host tensors; see tensor.hpp.
#include "core/tensor.hpp"

#include <sys/mman.h>

namespace lbt {

void advise_huge_pages(void* p, std::size_t bytes) {
  // A hint: where transparent huge pages are off or unavailable, the buffer keeps 4 KiB pages.
  (void)madvise(p, bytes, MADV_HUGEPAGE);
}

}  // namespace lbt
