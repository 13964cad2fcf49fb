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
/* Pod directories plus a margin; each entry is one value per possible CPU. */
#define GLEANER_MAX_CGROUPS 4096
/* How far above a task's own cgroup a tracked directory may be (container -> pod -> ...). */
#define GLEANER_MAX_CGROUP_DEPTH 6

/* Cumulative since load, per CPU; user space sums CPUs and takes deltas. */
struct gleaner_cgroup_stats {
  __u64 cpu_ns;      /* on-CPU time of tasks that switched out */
  __u64 runq_count;  /* waits recorded */
  __u64 runq_sum_ns; /* their total */
  __u64 runq_slots[GLEANER_RUNQ_SLOTS];
};

/* The task running on a CPU since `since_ns`, attributed to `cgroup_id` (0: untracked).
 * User space adds the time in flight when it reads, so a task that never switches out
 * (a lone spinner) is still measured. */
struct gleaner_cpu_slot {
  __u64 since_ns;
  __u64 cgroup_id;
};

#endif
