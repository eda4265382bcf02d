"""Sorts a profile's samples by the kind of work they were doing (scripts/profile).

Reads folded stacks (`frame;frame;...;leaf count`, inferno-collapse-perf's output) on stdin and
prints each kind's share of the samples. A sample taken in the kernel goes to the first kernel
kind whose rule matches its kernel frames (SQLite's file I/O first); one taken in user space to
the allocator or copies when its leaf is one, else to the innermost frame that names a known
library (walking from the leaf up): the code the CPU was running on behalf of.
"""

import re
import sys

# (kind, where, pattern): "leaf" looks at the innermost frame, "kernel" at the kernel's frames of a
# sample taken in the kernel, "stack" at every frame. Kernel frames end in `_[k]`
# (inferno-collapse-perf --all).
RULES = [
    ("allocator (malloc, free)", "leaf", r"malloc|free|realloc|_int_|tcache|arena|^mi_|^je_"),
    ("memory copies (memmove, memcpy, memset)", "leaf", r"mem(move|cpy|set)"),
    ("kernel: SQLite's file writes and reads", "kernel-sqlite", r"."),
    ("kernel: scheduler, futex, wake-ups", "kernel", r"futex|schedule|wake_up|switch_to|task_switch|idle"),
    ("kernel: loopback TCP", "kernel", r"tcp_|sock_|skb|net_rx|ip_"),
    ("kernel: other (epoll, entry and exit)", "kernel", r"."),
    ("SQLite", "stack", r"^sqlite3|^pager|^btree|^wal|^pcache|^vdbe"),
    ("tracing (spans, events)", "stack", r"tracing(_core|_subscriber)?::"),
    ("protobuf encode/decode (prost)", "stack", r"prost::|encoded_len|merge_field"),
    ("HTTP/2 (h2, hyper)", "stack", r"\bh2::|hyper::|hyper_util::"),
    ("gRPC (tonic)", "stack", r"tonic::"),
    ("askuser's own code", "stack", r"askuser::"),
    ("tokio runtime", "stack", r"tokio::"),
]
COMPILED = [(kind, where, re.compile(pattern)) for kind, where, pattern in RULES]
SQLITE = re.compile(r"sqlite3")


def kind_of(frames):
    leaf = frames[-1]
    in_kernel = leaf.endswith("_[k]")
    kernel = ";".join(frame for frame in frames if frame.endswith("_[k]"))
    stack = ";".join(frames)
    for name, where, pattern in COMPILED:
        if where == "leaf":
            if not in_kernel and pattern.search(leaf):
                return name
        elif where == "kernel-sqlite":
            if in_kernel and SQLITE.search(stack):
                return name
        elif where == "kernel":
            if in_kernel and pattern.search(kernel):
                return name
    if in_kernel:
        return "other"
    user = [(name, pattern) for name, where, pattern in COMPILED if where == "stack"]
    for frame in reversed(frames):
        for name, pattern in user:
            if pattern.search(frame):
                return name
    return "other"


totals = {}
samples = 0
for line in sys.stdin:
    stack, _, count = line.rstrip("\n").rpartition(" ")
    if not count.isdigit():
        continue
    count = int(count)
    samples += count
    kind = kind_of(stack.split(";"))
    totals[kind] = totals.get(kind, 0) + count

for kind, count in sorted(totals.items(), key=lambda item: -item[1]):
    print(f"{100 * count / max(samples, 1):5.1f} %  {kind}")

