// Which PDs, MRs, CQs, QPs and completion channels each context owns, so that ibv_close_device
// can release what a program did not destroy. rdma-core's ibv_close_device always returns 0 and
// the kernel reclaims the children when the command fd closes; vroce does the same in user
// space, after one warning that names what was left.
#pragma once

#include <string>

namespace vroce::device {
struct Context;
}  // namespace vroce::device

namespace vroce::core {

enum class ContextObject { Qp, Mr, Cq, CompChannel, Pd };

// Records (or forgets) an object of `ctx`. Thread-safe.
void track_context_object(const device::Context* ctx, ContextObject kind, void* object);
void untrack_context_object(const device::Context* ctx, ContextObject kind, void* object);

// Destroys every object `ctx` still owns, children before parents (QPs, MRs, CQs, channels,
// PDs), and returns a description of what was released ("1 QP (qpn 0x1a2b3c), 2 CQs, 1 PD"),
// empty when nothing was left. Events the program can no longer acknowledge are treated as
// acknowledged. Called by ibv_close_device, when no other thread may use the context.
std::string release_context_objects(device::Context& ctx);

}  // namespace vroce::core
