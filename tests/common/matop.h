// matop.h - a non-commutative MPI_Op for tests: 2x2 integer matrix product mod a prime.
//
// Reductions with it are correct only if the op is applied in rank order, so tests of
// collectives compare against a product they compute themselves in that order.
#ifndef EP_TESTS_COMMON_MATOP_H_
#define EP_TESTS_COMMON_MATOP_H_

#include <mpi.h>

#include <array>

namespace ep_test {

constexpr int kPrime = 10007;
using Mat = std::array<int, 4>;  // row-major 2x2

inline Mat mat_mul(const Mat& a, const Mat& b) {
  auto m = [](long long x) { return static_cast<int>(((x % kPrime) + kPrime) % kPrime); };
  return {m(1LL * a[0] * b[0] + 1LL * a[1] * b[2]), m(1LL * a[0] * b[1] + 1LL * a[1] * b[3]),
          m(1LL * a[2] * b[0] + 1LL * a[3] * b[2]), m(1LL * a[2] * b[1] + 1LL * a[3] * b[3])};
}

// MPI user function: inoutvec[i] = invec[i] * inoutvec[i] (invec holds the lower ranks).
inline void mat_mul_fn(void* invec, void* inoutvec, int* len, MPI_Datatype* dt) {
  int tsize = 0;
  MPI_Type_size(*dt, &tsize);
  const long long n = 1LL * tsize * (*len) / static_cast<long long>(sizeof(Mat));
  Mat* in = static_cast<Mat*>(invec);
  Mat* io = static_cast<Mat*>(inoutvec);
  for (long long i = 0; i < n; ++i) io[i] = mat_mul(in[i], io[i]);
}

// Create on the main thread (MPI_Op_create is not per endpoint); not commutative.
struct MatOp {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  MatOp() {
    MPI_Type_contiguous(4, MPI_INT, &type);
    MPI_Type_commit(&type);
    MPI_Op_create(&mat_mul_fn, 0, &op);
  }
  ~MatOp() {
    MPI_Op_free(&op);
    MPI_Type_free(&type);
  }
  MatOp(const MatOp&) = delete;
  MatOp& operator=(const MatOp&) = delete;
};

}  // namespace ep_test

#endif  // EP_TESTS_COMMON_MATOP_H_
