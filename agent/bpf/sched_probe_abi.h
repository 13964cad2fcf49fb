/* Layout shared by sched_probe.bpf.c (kernel side, C) and the user-space reader (C++).
 * Kept in plain C types so both compilers agree on it byte for byte. */
#ifndef GLEANER_AGENT_BPF_SCHED_PROBE_ABI_H
#define GLEANER_AGENT_BPF_SCHED_PROBE_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Run-queue latency histogram: slot k counts waits in [2^k, 2^(k+1)) ns (slot 0 also
 * holds 0 and 1 ns); the last slot also holds everything longer. 2^35 ns is ~34 s. */
#define GLEANER_RUNQ_SLOTS 36
/* Accounted cgroups: pod directories plus a margin. Stats index 0 means "not accounted",
 * so at most GLEANER_MAX_CGROUPS - 1 cgroups; each index is one value per possible CPU. */
#define GLEANER_MAX_CGROUPS 4096
/* How many distinct levels (depths below the hierarchy's root) the registered cgroups may
 * sit at; a task below them is attributed at any depth (sched_probe.bpf.c, resolve_cgroup). */
#define GLEANER_MAX_TRACKED_LEVELS 8
/* Per-CPU cache of cgroup id -> stats index (direct-mapped; a power of two). */
#define GLEANER_CGROUP_CACHE 64
/* Per-thread wait bookkeeping, direct-mapped by thread id (a power of two). */
#define GLEANER_TASK_SLOTS 16384
/* A cache entry's index when the cgroup should be accounted but the table is full. */
#define GLEANER_INDEX_FULL 0xffffffffu

/* Cumulative since load, per CPU; user space sums CPUs and takes deltas. */
struct gleaner_cgroup_stats {
  __u64 cpu_ns;      /* on-CPU time, as update_curr() charges it */
  __u64 runq_count;  /* waits recorded */
  __u64 runq_sum_ns; /* their total */
  __u64 runq_slots[GLEANER_RUNQ_SLOTS];
  /* The subset of those waits that ended by taking the CPU from a BE task (be_cgroup_id). */
  __u64 be_runq_count;
  __u64 be_runq_sum_ns;
  __u64 be_runq_slots[GLEANER_RUNQ_SLOTS];
};

/* Signals that wake the agent between samples, sent through the `wakeups` ring buffer
 * (see sched_probe.bpf.c). */
#define GLEANER_WAKE_RUNQ_WAIT 1 /* a registered cgroup's task waited >= the wait bound */
#define GLEANER_WAKE_LS_DEMAND 2 /* registered cgroups ran >= the demand bound in a window */
/* The demand signal's measure: registered cgroups' CPU time summed over all CPUs in slots
 * of GLEANER_DEMAND_SLOT_NS (aligned to CLOCK_MONOTONIC), over the current slot and the
 * ones before it, GLEANER_DEMAND_SPAN_SLOTS in all (a sliding window of 7.5 to 10 ms). */
#define GLEANER_DEMAND_SLOT_NS 2500000ull
#define GLEANER_DEMAND_SLOTS 8
#define GLEANER_DEMAND_SPAN_SLOTS 4
/* Each CPU adds its share to the slots once it holds this much (or more). */
#define GLEANER_DEMAND_FLUSH_NS 1000000ull

struct gleaner_wakeup {
  __u64 at_ns;     /* CLOCK_MONOTONIC */
  __u64 value_ns;  /* the wait (runq wait); CPU time within the span (demand) */
  __u64 span_ns;   /* the sliding window's length at the signal (demand) */
  __u64 cgroup_id; /* the waiting task's registered cgroup (runq wait); 0 (demand) */
  __u32 kind;      /* GLEANER_WAKE_* */
  __u32 cpu;
  __u32 be_caused; /* runq wait: 1 if it ended by taking the CPU from a BE task */
  __u32 reserved;
};

#endif
