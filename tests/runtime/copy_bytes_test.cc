// copy_bytes (runtime/datatype.h): the inlined small copy of the message paths gives
// memcpy's result for every size up to past its inline range, at every alignment, and
// writes nothing outside the destination.  whole_elements (runtime/request.h), which
// masks for power-of-two element sizes, agrees with the division for every size.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/datatype.h"
#include "runtime/request.h"

namespace {

TEST(CopyBytes, EqualsMemcpyForEverySizeAndAlignment) {
  constexpr size_t kGuard = 16;
  for (size_t n = 0; n <= 80; ++n) {
    for (size_t src_off = 0; src_off < 8; ++src_off) {
      for (size_t dst_off = 0; dst_off < 8; ++dst_off) {
        std::vector<uint8_t> src(n + 2 * kGuard), got(n + 2 * kGuard, 0xee),
            want(n + 2 * kGuard, 0xee);
        for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 37 + n);
        const uint8_t* s = src.data() + kGuard / 2 + src_off;
        ep::runtime::copy_bytes(got.data() + kGuard / 2 + dst_off, s, n);
        std::memcpy(want.data() + kGuard / 2 + dst_off, s, n);
        ASSERT_EQ(got, want) << "n " << n << ", source offset " << src_off
                             << ", destination offset " << dst_off;
      }
    }
  }
}

TEST(WholeElements, AgreesWithTheDivisionForEveryElementSize) {
  for (uint32_t elem = 1; elem <= 80; ++elem) {
    for (int64_t n = 0; n <= 300; ++n) {
      ASSERT_EQ(ep::runtime::whole_elements(n, elem), n - n % elem)
          << "n " << n << ", element " << elem;
    }
  }
  const int64_t big = (int64_t{1} << 40) + 13;
  for (uint32_t elem : {1u, 8u, 12u, 4096u, 1u << 20, 3u << 20, 0x80000000u}) {
    EXPECT_EQ(ep::runtime::whole_elements(big, elem), big - big % elem) << "element " << elem;
  }
}

}  // namespace
