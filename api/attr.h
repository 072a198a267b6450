// attr.h - attribute caching on communicators (MPI 3.1 section 6.7), as the other entry
// points of api/ use it: dup and idup copy a handle's attributes, free deletes them.
//
// What it is: keyvals are process objects in one registry (attr.cc, under a mutex),
// reference-counted: the user's keyval holds one reference (EP_Comm_free_keyval drops
// it and marks the keyval freed: the user may not name it any more) and every attribute
// that uses it holds one, so a freed keyval's callbacks still run for the attributes
// set before.  Each endpoint handle has its own attribute values (Endpoint::attrs, an
// AttrList owned by this layer), in the order they were first set; only the thread
// inside a call on the endpoint touches them (api/entry.h's Entry).
//
// Callbacks run in the calling thread, with the endpoint marked for re-entry
// (api/entry.h, Reentry): a callback may call libep on the communicator it is given.
// Copy callbacks run in set order; delete callbacks at EP_Comm_free in reverse set order.
//
// Threading: the registry is thread-safe; an endpoint's list is its thread's.
//
// Memory ordering: the registry's mutex orders keyval creation before any use by
// another thread (the keyval's value reaches it through the user's own
// synchronization).
#ifndef EP_API_ATTR_H_
#define EP_API_ATTR_H_

#include "api/entry.h"

namespace ep::api {

// Copies from's attributes for a new handle (EP_Comm_dup, EP_Comm_idup): runs the copy
// callbacks in set order.  On success *out is the new list (nullptr: nothing to copy),
// owned by the caller until attrs_install.  On a callback's failure the values copied so
// far are deleted again (delete callbacks, given `from`), *out is nullptr and the
// callback's code is returned (recorded for `call`).
int attrs_copy(Endpoint* from, void** out, const char* call);
// Gives `list` (from attrs_copy) to endpoint `to`, which has none yet.
void attrs_install(Endpoint* to, void* list);
// Deletes every attribute of ep in reverse set order (EP_Comm_free), running the delete
// callbacks.  On a callback's failure the attributes not yet deleted stay (the failing
// one too) and its code is returned.
int attrs_delete_all(Endpoint* ep, const char* call);

}  // namespace ep::api

#endif  // EP_API_ATTR_H_
