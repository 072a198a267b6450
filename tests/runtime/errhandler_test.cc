// The reference counts of error handler objects (runtime/errhandler.h), with //runtime
// alone linked: what runtime/errhandler.h declares is implemented in runtime (no MPI).
// A handler's last holder deletes it; under --config=asan a leak or a second deletion
// fails the test.
#include "runtime/errhandler.h"

#include <gtest/gtest.h>

#include "base/types.h"

namespace {

using ep::Errhandler;
using ep::runtime::errhandler_assign;
using ep::runtime::errhandler_ref;
using ep::runtime::errhandler_unref;
using ep::runtime::is_user_errhandler;

void ignore_error(ep::CommHandle*, int*, ...) {}

Errhandler make_handler() {
  auto* h = new ep_errhandler_s;  // as EP_Comm_create_errhandler does: the handle's reference
  h->fn = ignore_error;
  return h;
}

TEST(Errhandler, EveryHolderKeepsAUserHandlerAliveUntilTheLastLetsGo) {
  Errhandler h = make_handler();
  Errhandler comm_slot = ep::errors_are_fatal(), request_slot = ep::errors_return();
  errhandler_assign(&comm_slot, h);
  EXPECT_EQ(comm_slot, h);
  EXPECT_EQ(h->refs.load(), 2);
  errhandler_assign(&request_slot, comm_slot);
  EXPECT_EQ(h->refs.load(), 3);

  errhandler_unref(h);  // EP_Errhandler_free: the user's handle lets go
  EXPECT_EQ(h->refs.load(), 2);
  EXPECT_EQ(h->magic, ep_errhandler_s::kMagic) << "still held by two slots";

  errhandler_assign(&request_slot, request_slot);  // the same handler again: no change
  EXPECT_EQ(h->refs.load(), 2);
  errhandler_assign(&comm_slot, ep::errors_return());
  EXPECT_EQ(comm_slot, ep::errors_return());
  EXPECT_EQ(h->refs.load(), 1);
  EXPECT_EQ(h->magic, ep_errhandler_s::kMagic);

  errhandler_ref(h);  // a request started on the communicator takes one more
  EXPECT_EQ(h->refs.load(), 2);
  errhandler_unref(h);
  errhandler_assign(&request_slot, ep::errors_are_fatal());  // the last reference: deleted
  EXPECT_EQ(request_slot, ep::errors_are_fatal());
}

TEST(Errhandler, PredefinedHandlersAreNeverCountedOrDereferenced) {
  for (Errhandler eh : {ep::errors_are_fatal(), ep::errors_return(), Errhandler{nullptr}}) {
    EXPECT_FALSE(is_user_errhandler(eh));
    errhandler_ref(eh);  // no-ops: the handles are small integers
    errhandler_unref(eh);
    Errhandler slot = ep::errors_return();
    errhandler_assign(&slot, eh);
    EXPECT_EQ(slot, eh);
  }
  EXPECT_TRUE(is_user_errhandler(reinterpret_cast<Errhandler>(4096)));
}

}  // namespace
