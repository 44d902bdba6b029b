// vroce's own exported test hooks (version node VROCE_PRIVATE_1.0 of libibverbs.so.1). Not part
// of any verbs API: test programs declare or dlsym them to steer the emulated NIC.
#pragma once

extern "C" {

// Raises an asynchronous port event on every open context of the named device, as a NIC does
// when its link changes: IBV_EVENT_PORT_ERR (the port then reports DOWN), IBV_EVENT_PORT_ACTIVE
// (ACTIVE again), IBV_EVENT_LID_CHANGE, IBV_EVENT_PKEY_CHANGE, IBV_EVENT_SM_CHANGE,
// IBV_EVENT_CLIENT_REREGISTER, IBV_EVENT_GID_CHANGE, or IBV_EVENT_DEVICE_FATAL. Returns the
// number of contexts that received it, or -1 with errno ENODEV (no such device) or EINVAL (not a
// port or device event).
int vroce_inject_port_event(const char* device_name, int event_type);

}  // extern "C"
