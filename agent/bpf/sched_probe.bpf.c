// SPDX-License-Identifier: GPL-2.0
/* Per-cgroup on-CPU time and run-queue latency (wake-up, or preemption, to running),
 * aggregated in per-CPU maps; nothing is sent to user space per event. User space sums
 * the CPUs and takes deltas each sampling interval. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "sched_probe_abi.h"

/* Set by user space before load. */
const volatile bool track_all = false;         /* every cgroup, not only registered ones */
const volatile bool v1_cpu_controller = false; /* hybrid/v1: the cpu controller's cgroup */

/* Registered cgroup directories (kernfs node id == the directory's inode number). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, GLEANER_MAX_CGROUPS);
  __type(key, __u64);
  __type(value, __u8);
} tracked SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, GLEANER_MAX_CGROUPS);
  __type(key, __u64);
  __type(value, struct gleaner_cgroup_stats);
} stats SEC(".maps");

/* What runs on each CPU since when (one entry, per CPU). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct gleaner_cpu_slot);
} running SEC(".maps");

/* Events lost because `stats` was full. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} dropped SEC(".maps");

/* When a task became runnable; freed with the task, so exited tasks leave nothing. */
struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, __u64);
} runnable_since SEC(".maps");

/* Kernels before 5.14 named the field `state`. */
struct task_struct___pre514 {
  long state;
} __attribute__((preserve_access_index));

static __always_inline long task_state(struct task_struct *t) {
  if (bpf_core_field_exists(t->__state)) return BPF_CORE_READ(t, __state);
  return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

static __always_inline struct cgroup *task_cgroup(struct task_struct *t) {
  if (v1_cpu_controller) {
    /* The cpu controller's index differs between kernel configs: relocated, not assumed. */
    int idx = bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id);
    struct css_set *cset = BPF_CORE_READ(t, cgroups);
    struct cgroup_subsys_state *css = NULL;
    if (!cset || idx < 0 || idx >= 16) return NULL;
    bpf_core_read(&css, sizeof(css), &cset->subsys[idx]);
    return css ? BPF_CORE_READ(css, cgroup) : NULL;
  }
  return BPF_CORE_READ(t, cgroups, dfl_cgrp);
}

/* The registered cgroup a task belongs to: its own or the nearest registered ancestor
 * (tasks live in container cgroups, pods are registered by their pod directory). */
static __always_inline __u64 tracked_cgroup(struct task_struct *t) {
  struct cgroup *cg = task_cgroup(t);
  if (!cg) return 0;
  if (track_all) return BPF_CORE_READ(cg, kn, id);
  for (int depth = 0; depth < GLEANER_MAX_CGROUP_DEPTH && cg; depth++) {
    __u64 id = BPF_CORE_READ(cg, kn, id);
    if (bpf_map_lookup_elem(&tracked, &id)) return id;
    struct cgroup_subsys_state *parent = BPF_CORE_READ(cg, self.parent);
    cg = parent ? BPF_CORE_READ(parent, cgroup) : NULL;
  }
  return 0;
}

static __always_inline struct gleaner_cgroup_stats *stats_of(__u64 id) {
  struct gleaner_cgroup_stats *s = bpf_map_lookup_elem(&stats, &id);
  if (s) return s;
  struct gleaner_cgroup_stats zero;
  __builtin_memset(&zero, 0, sizeof(zero));
  bpf_map_update_elem(&stats, &id, &zero, BPF_NOEXIST);
  s = bpf_map_lookup_elem(&stats, &id);
  if (!s) {
    __u32 key = 0;
    __u64 *lost = bpf_map_lookup_elem(&dropped, &key);
    if (lost) *lost += 1;
  }
  return s;
}

static __always_inline __u32 log2_slot(__u64 v) {
  __u32 r = 0;
  if (v >> 32) { v >>= 32; r += 32; }
  if (v >> 16) { v >>= 16; r += 16; }
  if (v >> 8) { v >>= 8; r += 8; }
  if (v >> 4) { v >>= 4; r += 4; }
  if (v >> 2) { v >>= 2; r += 2; }
  if (v >> 1) { r += 1; }
  return r < GLEANER_RUNQ_SLOTS ? r : GLEANER_RUNQ_SLOTS - 1;
}

static __always_inline void mark_runnable(struct task_struct *p, __u64 now) {
  __u64 *since = bpf_task_storage_get(&runnable_since, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (since) *since = now;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(gleaner_wakeup, struct task_struct *p) {
  mark_runnable(p, bpf_ktime_get_ns());
  return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(gleaner_wakeup_new, struct task_struct *p) {
  mark_runnable(p, bpf_ktime_get_ns());
  return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(gleaner_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  __u64 now = bpf_ktime_get_ns();
  __u32 key = 0;
  struct gleaner_cpu_slot *slot = bpf_map_lookup_elem(&running, &key);
  if (!slot) return 0;

  /* prev leaves the CPU: charge its time to the cgroup resolved when it came on. */
  if (slot->cgroup_id && slot->since_ns && now > slot->since_ns) {
    struct gleaner_cgroup_stats *s = stats_of(slot->cgroup_id);
    if (s) s->cpu_ns += now - slot->since_ns;
  }
  /* Preempted while runnable: it waits in the run queue from now. */
  if (prev->pid != 0 && task_state(prev) == 0) mark_runnable(prev, now);

  slot->since_ns = now;
  slot->cgroup_id = 0;
  if (next->pid == 0) return 0; /* the idle task */
  __u64 id = tracked_cgroup(next);
  slot->cgroup_id = id;

  __u64 *since = bpf_task_storage_get(&runnable_since, next, 0, 0);
  if (!since || *since == 0) return 0;
  __u64 waited = now > *since ? now - *since : 0;
  *since = 0;
  if (!id) return 0;
  struct gleaner_cgroup_stats *s = stats_of(id);
  if (!s) return 0;
  s->runq_count += 1;
  s->runq_sum_ns += waited;
  __u32 slot_index = log2_slot(waited);
  if (slot_index < GLEANER_RUNQ_SLOTS) s->runq_slots[slot_index] += 1;
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
