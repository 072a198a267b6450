#include "progress/mpi_count.h"

namespace ep::progress {

constinit thread_local uint64_t t_engine_mpi_calls EP_FAST_TLS = 0;

}  // namespace ep::progress
