#!/usr/bin/env python3
"""Writes the seed corpora under test/fuzz/corpus/<target>/: a few valid inputs per target, from
the formats documented in plugin/net/handshake.h, plugin/net/listen_handle.h and
docs/vroce-wire.md. The fuzzers mutate from there; run once, commit the files."""
import os
import struct

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    os.makedirs(os.path.join(root, target), exist_ok=True)
    with open(os.path.join(root, target, name), "wb") as f:
        f.write(data)


# Handshake: 12-byte header (magic, version, kind, body length), then the body.
def message(kind, body, version=4):
    return struct.pack("<IHHI", 0x53484352, version, kind, len(body)) + body


def endpoint(name=b"vroce0", qps=((0x11, 0x100),), tc=106, sl=3, mtu=5, more_members=()):
    gid = bytes(10) + b"\xff\xff" + bytes([10, 0, 0, 1])
    out = struct.pack("<IB", 0x000100, len(name)) + name + gid
    out += struct.pack("<BBHBB", 3, mtu, tc, sl, len(qps))
    for qpn, psn in qps:
        out += struct.pack("<II", qpn, psn)
    # Version 4: the member count, then GID, GID index and MTU of each member after the first.
    out += struct.pack("<B", 1 + len(more_members))
    for member_gid in more_members:
        out += member_gid + struct.pack("<BB", 3, mtu)
    return out


nonce = 0x0123456789ABCDEF
ring = struct.pack("<QIII", 0x7F0000001000, 0x1234, 64, 256)
# The request ends with max_recvs u32, the split mode u8 (version 2) and the ECE (version 3:
# supported u8, vendor id u32, options u32, comp_mask u32); the reply ends with its ECE.
ece = struct.pack("<BIII", 1, 0x15B3, 0x30000002, 0)
no_ece = bytes(13)
request = message(1, struct.pack("<Q", nonce) + endpoint() + ring + struct.pack("<IB", 8, 0) + ece)
write("handshake", "request", request)
write("handshake", "request_4qps",
      message(1, struct.pack("<Q", nonce) + endpoint(qps=((1, 2), (3, 4), (5, 6), (7, 8))) + ring +
              struct.pack("<IB", 1, 1) + no_ece))
# The reply ends with the count and the rkeys of the sizes area on the members after the first.
write("handshake", "reply",
      message(2, struct.pack("<Q", nonce) + endpoint(b"mlx5_0") +
              struct.pack("<QIII", 0x7F0000002000, 0x99, 32, 32) + ece + struct.pack("<B", 0)))
member_gid = bytes(10) + b"\xff\xff" + bytes([10, 0, 1, 1])
write("handshake", "request_two_members",
      message(1, struct.pack("<Q", nonce) +
              endpoint(qps=((1, 2), (3, 4)), more_members=(member_gid,)) + ring +
              struct.pack("<IB", 8, 0) + ece))
write("handshake", "reply_two_members",
      message(2, struct.pack("<Q", nonce) +
              endpoint(b"mlx5_0", qps=((1, 2), (3, 4)), more_members=(member_gid,)) +
              struct.pack("<QIII", 0x7F0000002000, 0x99, 32, 32) + ece + struct.pack("<BI", 1, 0x77)))
write("handshake", "ready", message(3, struct.pack("<Q", nonce)))
text = b"traffic class mismatch: 106 vs 0"
# A Reject ends with the listen nonce (version 3; 0 when the sender of the Reject does not know it).
write("handshake", "reject", message(4, struct.pack("<HH", 100, len(text)) + text +
                                     struct.pack("<Q", nonce)))
write("handshake", "future_version", message(1, request[12:], version=5))

# Recovery-epoch frames (plugin/net/epoch_frames.h), decoded by the same target: after the header,
# nonce u64 and epoch u32, then the kind's body.
def epoch_qps(qps):
    return struct.pack("<H", len(qps)) + b"".join(struct.pack("<BII", m, qpn, psn)
                                                 for m, qpn, psn in qps)


write("handshake", "epoch_wanted", message(7, struct.pack("<QIBB", nonce, 0, 0b01, 0)))
write("handshake", "epoch_start", message(8, struct.pack("<QIQBI", nonce, 2, 1000, 0b10, 0x5eed) +
                                          epoch_qps([(1, 0x123, 5), (1, 0x124, 6)])))
write("handshake", "epoch_ready", message(9, struct.pack("<QIQQQB", nonce, 2, 990, 1000, 0b110, 0b10) +
                                          epoch_qps([(1, 0x555, 7), (1, 0x556, 8)]) +
                                          struct.pack("<H", 2) + bytes(range(32)) * 2))
write("handshake", "epoch_go", message(10, struct.pack("<QI", nonce, 2)))

# Listen handle: 48 bytes.
def handle(family, port, addr, stage=0):
    return struct.pack("<IBBBBHH16sIQ8s", 0x48436F52, 1, family, stage, 0, port, 0,
                       addr.ljust(16, b"\0"), 0, nonce, bytes(8))


write("listen_handle", "ipv4", handle(4, 40001, bytes([10, 0, 0, 1])))
write("listen_handle", "ipv6", handle(6, 40002, bytes([0xfd] + [0] * 14 + [1]), stage=2))
write("listen_handle", "nccl_buffer", handle(4, 5000, bytes([127, 0, 0, 1])) + bytes(80))

# Configuration: NAME=VALUE lines.
write("config", "typical", b"NCCL_IB_TC=106\nNCCL_IB_TIMEOUT=18\nNCCL_IB_RETRY_CNT=7\n"
      b"NCCL_IB_HCA=^mlx5_1:1,mlx5_0\nNCCL_IB_GID_INDEX=3\n")
write("config", "roce", b"NCCL_ROCE_DSCP=26\nNCCL_ROCE_TC=104\nNCCL_IB_ADDR_RANGE=10.0.0.0/8\n"
      b"NCCL_IB_ADDR_FAMILY=AF_INET\nNCCL_ROCE_CONNECT_TIMEOUT_MS=5000\n")
write("config", "registry_indexed", b"#\x00=1\n#\x05=-1\n#\x09=\n#\x10=yes\n")
write("config", "ipv6", b"NCCL_IB_ADDR_FAMILY=AF_INET6\nNCCL_IB_ADDR_RANGE=fd00::/8\n")


# RoCEv2 packets (UDP payload): BTH, extension headers, payload, ICRC (zero: the structural
# parse skips it, the verified parse refuses it, both are paths worth reaching).
def bth(opcode, qpn, psn, pad=0, ack=0):
    return struct.pack(">BBHII", opcode, (pad & 3) << 4, 0xFFFF, qpn & 0xFFFFFF,
                       (ack << 31) | (psn & 0xFFFFFF))


icrc = bytes(4)
write("packet", "send_only", bth(0x04, 0x11, 5) + b"hello world!" + icrc)
write("packet", "write_only_imm",
      bth(0x0B, 0x11, 6) + struct.pack(">QII", 0x7F0000001000, 0x1234, 8) +
      struct.pack(">I", 42) + b"ABCDEFGH" + icrc)
write("packet", "write_first", bth(0x06, 0x12, 7) +
      struct.pack(">QII", 0x1000, 0x55, 512) + bytes(256) + icrc)
write("packet", "read_request",
      bth(0x0C, 0x13, 8, ack=1) + struct.pack(">QII", 0x2000, 0x66, 4096) + icrc)
write("packet", "ack", bth(0x11, 0x14, 9) + struct.pack(">I", 0x1F000003) + icrc)
write("packet", "nak_seq", bth(0x11, 0x14, 10) + struct.pack(">I", 0x60000004) + icrc)
write("packet", "read_response_only",
      bth(0x10, 0x15, 11, pad=2) + struct.pack(">I", 0x1F000001) + b"xy\0\0" + icrc)
write("packet", "cnp", bth(0x81, 0x16, 0) + bytes(16) + icrc)
