"""Sorts a profile's samples by the kind of work they were doing, and by the task or thread that
did it (scripts/profile).

Reads folded stacks (`frame;frame;...;leaf count`, inferno-collapse-perf's output) on stdin and
prints each kind's share of the samples, then each task's. A sample taken in the kernel goes to
the first kernel kind whose rule matches its kernel frames (SQLite's file I/O first); one taken in
user space to the allocator or copies when its leaf is one, else to the innermost frame that names
a known library (walking from the leaf up): the code the CPU was running on behalf of.
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


# (task, pattern): a sample ran in the task or thread named by its outermost frame that matches
# one. A Tokio task's frames start at the future it was spawned with, so that frame is the task's
# own; a pattern further in is work the task started (a stream's call that spawns a write, a
# write's kick that spawns a step). A sample that matches none, but for the last, is the workers'.
TASKS = [
    ("the store's writer thread (SQLite's writes, in batches)", r"^askuser-writer|group_commit::\{impl#\d+\}::start"),
    ("the checkpoint thread", r"sqlite::checkpoint"),
    ("SQLite's reader threads (feeds' snapshots, listings)", r"sqlite::readers"),
    ("the runs' steps", r"executor::\{impl#\d+\}::(kick|drive)|Shared::drive"),
    ("writes (commit, then publish and kick)", r"runtime::writes"),
    ("the connections' tasks (HTTP/2 framing, socket reads and writes)", r"serve_connection"),
    ("the streams' tasks (RPC handlers and their frames)", r"H2Stream"),
    ("Tokio workers between tasks (parking, waking, the I/O driver)", r"tokio::runtime::"),
]
TASK_PATTERNS = [(task, re.compile(pattern)) for task, pattern in TASKS]


def task_of(frames):
    for frame in frames:
        for task, pattern in TASK_PATTERNS[:-1]:
            if pattern.search(frame):
                return task
    workers, pattern = TASK_PATTERNS[-1]
    return workers if any(pattern.search(frame) for frame in frames) else "other"


def shares(totals, samples):
    for name, count in sorted(totals.items(), key=lambda item: -item[1]):
        print(f"{100 * count / max(samples, 1):5.1f} %  {name}")


kinds = {}
tasks = {}
samples = 0
for line in sys.stdin:
    stack, _, count = line.rstrip("\n").rpartition(" ")
    if not count.isdigit():
        continue
    count = int(count)
    samples += count
    frames = stack.split(";")
    kind = kind_of(frames)
    kinds[kind] = kinds.get(kind, 0) + count
    task = task_of(frames)
    tasks[task] = tasks.get(task, 0) + count

shares(kinds, samples)
print()
print("the same samples by the task or thread they ran in:")
print()
shares(tasks, samples)

